"""A stand-in for NCCL's RAS service on loopback, speaking the client
protocol as NCCL documents it (docs/userguide troubleshooting/ras.rst and
src/ras/client_support.cc): lines of text; "CLIENT PROTOCOL n" is answered
"SERVER PROTOCOL <version>", TIMEOUT / SET FORMAT / MONITOR with "OK" or
"ERROR: ...", [VERBOSE] STATUS with the status, after which the connection
closes; in monitor mode the events are written as they happen.
The documents it serves are the tests' own (ras_documents below)."""

import json
import socket
import threading


class FakeRas:
    def __init__(self, statuses=None, text_status="", events=(), version="2", json_format=True,
                 monitor=True, mode="normal", close_monitor=True):
        """statuses: JSON status documents, served in turn (the last one
        repeats); text_status: the text answer; events: monitor items (str,
        written as they are); mode: normal, silent (accept, never answer),
        garbage (not RAS)."""
        self.statuses = list(statuses or [{}])
        self.text_status = text_status
        self.events = list(events)
        self.version = version
        self.json_format = json_format
        self.monitor = monitor
        self.mode = mode
        self.close_monitor = close_monitor
        self.commands = []  # every line received, in order
        self.served = 0
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.stopped = threading.Event()
        self.conns = []
        threading.Thread(target=self._accept, daemon=True).start()

    def address(self):
        return f"127.0.0.1:{self.port}"

    def stop(self):
        self.stopped.set()
        self.sock.close()
        for c in self.conns:
            try:
                c.close()
            except OSError:
                pass

    def _accept(self):
        while not self.stopped.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.conns.append(conn)
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn):
        if self.mode == "silent":
            self.stopped.wait()
            return
        fmt = "text"
        buf = b""
        try:
            while True:
                data = conn.recv(4096)
                if not data:
                    return
                buf += data
                while b"\n" in buf:
                    line, buf = buf.split(b"\n", 1)
                    cmd = line.decode().strip()
                    self.commands.append(cmd)
                    upper = cmd.upper()
                    if self.mode == "garbage":
                        conn.sendall(b"HTTP/1.0 400 Bad Request\r\n\r\n")
                        conn.close()
                        return
                    if upper.startswith("CLIENT PROTOCOL "):
                        conn.sendall(f"SERVER PROTOCOL {self.version}\n".encode())
                    elif upper.startswith("TIMEOUT "):
                        conn.sendall(b"OK\n")
                    elif upper.startswith("SET FORMAT "):
                        want = cmd[len("SET FORMAT "):].strip().lower()
                        if want == "json" and not self.json_format:
                            conn.sendall(f"ERROR: Invalid format {want}\n".encode())
                        else:
                            fmt = want
                            conn.sendall(b"OK\n")
                    elif upper in ("STATUS", "VERBOSE STATUS"):
                        if fmt == "json":
                            doc = self.statuses[min(self.served, len(self.statuses) - 1)]
                            self.served += 1
                            conn.sendall(json.dumps(doc, indent=2).encode() + b"\n")
                        else:
                            conn.sendall(self.text_status.encode())
                        conn.close()
                        return
                    elif upper == "MONITOR" or upper.startswith("MONITOR "):
                        if not self.monitor:
                            conn.sendall(b"ERROR: Unknown command MONITOR\n")
                            continue
                        conn.sendall(b"OK\n")
                        for item in self.events:
                            conn.sendall(item.encode())
                        if self.close_monitor:
                            conn.close()
                            return
                        self.stopped.wait()
                        return
                    else:
                        conn.sendall(f"ERROR: Unknown command {cmd}\n".encode())
        except OSError:
            return


# The tests' documents, in the layout NCCL documents (our own values).

def rank(r, host, pid, gpu, ops, **status):
    st = {"init_state": 0, "async_error": 0, "finalize_called": False, "destroy_flag": False, "abort_flag": False}
    st.update(status)
    return {"rank": r, "host": host, "pid": pid, "cuda_dev": gpu, "nvml_dev": gpu, "status": st,
            "collective_counts": {"Broadcast": 0, "Reduce": 0, "AllGather": ops // 2, "ReduceScatter": 0, "AllReduce": ops - ops // 2}}


def status_json(ranks, missing=(), comm_hash="0x7ab1e5eed0c0ffee", timeouts=0, extra_comms=()):
    comm = {"hash": comm_hash, "secondary_hash": "0x1:0x2", "size": len(ranks) + len(missing), "ranks_count": len(ranks),
            "missing_ranks_count": len(missing), "ranks": list(ranks), "missing_ranks": list(missing)}
    return {"nccl_version": "2.29.1", "cuda_runtime_version": 12080, "cuda_driver_version": 12080,
            "timestamp": "2026-01-05 10:00:00", "communicators_count": 1 + len(extra_comms),
            "communicators": [comm, *extra_comms], "ras": {"collection_time_sec": 0.004, "timeouts_count": timeouts}}


def missing(r, host, pid, gpu, dead):
    return {"rank": r, "host": host, "pid": pid, "cuda_dev": gpu, "nvml_dev": gpu,
            "status": {"unresponsive": True, "considered_dead": dead}}


HEALTHY = status_json([rank(i, "10.1.0.1" if i < 2 else "10.1.0.2", 7100 + i, i % 2, 900) for i in range(4)])
ONE_DEAD = status_json([rank(i, "10.1.0.1", 7100 + i, i, 900) for i in range(3)], [missing(3, "10.1.0.2", 7203, 1, True)],
                       timeouts=2)

TEXT_DEAD = """NCCL version 2.27.3 compiled with CUDA 12.8
CUDA runtime version 12080, driver version 12080

Job summary
===========

  Nodes  Processes         GPUs  Processes     GPUs
(total)   per node  per process    (total)  (total)
      2          2            1          4        4

Communicators... (1.02s)
=============

Group     Comms     Nodes     Ranks     Ranks     Ranks    Status  Errors
    #  in group  per comm  per node  per comm  in group
    0         1         2       1-2         4         4   RUNNING  INCOMPLETE

Errors
======

DEAD
  1 job process is considered dead (unreachable via the RAS network)
  Process 7203 on node 10.1.0.2 managing GPU 1

#0-0 (7ab1e5eed0c0ffee) INCOMPLETE
  Missing communicator data from 1 rank
  The missing rank: 3
"""

MONITOR_JSON = [
    '{\n  "timestamp": "2026-01-05 10:00:01",\n  "group": "LIFECYCLE",\n  "event": "PEER_NEW",\n  "peer": {\n'
    '    "host": "10.1.0.3",\n    "pid": 7300,\n    "cuda_devs": [0],\n    "nvml_devs": [0]\n  },\n  "details": ""\n}\n',
    '{\n  "timestamp": "2026-01-05 10:01:02",\n  "group": "LIFECYCLE",\n  "event": "PEER_DEAD",\n  "peer": {\n'
    '    "host": "10.1.0.2",\n    "pid": 7203,\n    "cuda_devs": [1],\n    "nvml_devs": [1]\n  },\n  "details": ""\n}\n',
]
MONITOR_TEXT = [
    "[2026-01-05 10:00:01] PEER_NEW: Process 7300 on node 10.1.0.3 managing GPU 0 \n",
    "[2026-01-05 10:01:02] PEER_DEAD: Process 7203 on node 10.1.0.2 managing GPU 1 \n",
]
