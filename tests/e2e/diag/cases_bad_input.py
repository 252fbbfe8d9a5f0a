"""Bad input: one line on stderr, exit 64, nothing on stdout."""

import os
import signal
import socket
import subprocess

import fixtures
from harness import ARGS, Server, case, check, diag, http_get, wait_for


@case
def bad_input(tmp):
    bad = os.path.join(tmp, "bad")
    os.makedirs(bad)

    def write(name, text):
        path = os.path.join(bad, name)
        with open(path, "w") as f:
            f.write(text)
        return path

    hw = os.path.join(tmp, "good.xml")
    fixtures.write_hwloc_xml(hw)
    truncated = write("truncated.xml", open(hw).read()[:5000])
    fifo = os.path.join(bad, "fifo")
    os.mkfifo(fifo)  # no writer: a blocking open would hang the tool
    cases = [
        # Special files where a file is read: refused at once, never read (tools::read_input_file).
        (["preflight", "--profile", fifo], "not a regular file"),
        (["preflight", "--profile", "/dev/zero"], "not a regular file"),
        (["topo", "--hwloc-xml", fifo], "not a regular file"),
        (["topo", "--nccl-topo", "/dev/zero"], "not a regular file"),
        (["topo", "--nccl-topo", tmp], "a directory"),
        (["preflight", "--profile", write("malformed.yaml", "name: x\nchecks: [memlock: {min: 1\n")], "malformed YAML"),
        (["preflight", "--profile", write("unknown.yaml", "checks:\n  gpu_temp: {max_celsius: 80}\n")], "unknown check 'gpu_temp'"),
        (["preflight", "--profile", write("param.yaml", "checks:\n  memlock: {minimum: 1MiB}\n")], "unknown parameter 'minimum'"),
        (["preflight", "--profile", write("type.yaml", "checks:\n  gpu_temperature: {max_celsius: hot}\n")],
         "line 2: checks.gpu_temperature.max_celsius: expected a number, got 'hot'"),
        (["preflight", "--profile", write("int.yaml", "checks:\n  gpu_count: {expected: 8.5}\n")], "expected a count or 'any', got '8.5'"),
        (["preflight", "--profile", write("bool.yaml", "checks:\n  efa_count: {expected: 4, require_active: maybe}\n")], "expected true or false"),
        (["preflight", "--profile", write("size.yaml", "checks:\n  shm_size: {min: lots}\n")], "expected a size"),
        (["preflight", "--profile", write("list.yaml", "checks:\n  gpu_throttle: {reasons: hw_slowdown}\n")], "expected a list of strings"),
        (["preflight", "--profile", write("reason.yaml", "checks:\n  gpu_throttle: {reasons: [too_hot]}\n")], "unknown throttle reason 'too_hot'"),
        (["preflight", "--profile", write("required.yaml", "checks:\n  gpu_count: {}\n")], "missing required parameter 'expected'"),
        (["preflight", "--profile", write("negative.yaml", "checks:\n  clock_skew: {max_ms: 1, samples: 0}\n")], "must be at least 1"),
        (["preflight", "--profile", write("nochecks.yaml", "name: x\n")], "no 'checks' mapping"),
        # Bounds and decimal numbers (docs/diag.md#checks): an overflowing deadline would report a healthy node unreachable.
        (["preflight", "--profile", write("huge_timeout.yaml", "checks:\n  rank_reachability: {timeout_s: 1e300}\n")],
         "checks.rank_reachability.timeout_s: must be at most 10000000, got '1e300'"),
        (["preflight", "--profile", write("inf_timeout.yaml", "checks:\n  clock_skew: {max_ms: 1, timeout_s: .inf}\n")],
         "checks.clock_skew.timeout_s: expected a number, got '.inf'"),
        (["preflight", "--profile", write("hex_timeout.yaml", "checks:\n  rank_reachability: {timeout_s: 0x10}\n")],
         "checks.rank_reachability.timeout_s: expected a number, got '0x10'"),
        (["preflight", "--profile", write("hex_count.yaml", "checks:\n  clock_skew: {max_ms: 1, samples: 0x10}\n")],
         "checks.clock_skew.samples: expected an integer, got '0x10'"),
        (["preflight", "--profile", write("many_iterations.yaml", "checks:\n  allreduce_busbw: {min_gbytes_per_s: 1, iterations: 10000000000}\n")],
         "checks.allreduce_busbw.iterations: must be at most 1000000"),
        (["preflight", "--profile", write("huge_bytes.yaml", "checks:\n  allreduce_busbw: {min_gbytes_per_s: 1, bytes: 1TiB}\n")],
         "checks.allreduce_busbw.bytes: must be at most 4 GiB"),
        (["preflight", "--profile", write("pairs.yaml", "checks:\n  link_bandwidth: {provider: tcp, all_pairs_max: 4294967298}\n")],
         "checks.link_bandwidth.all_pairs_max: must be at most 100000"),
        (["preflight", "--profile", write("window.yaml", "checks:\n  link_bandwidth: {provider: tcp, window: 129}\n")],
         "checks.link_bandwidth.window: must be at most 128"),
        (["preflight", "--profile", write("selfalias.yaml", "checks: &c\n  memlock: *c\n")], "nested deeper than 32 levels"),
        (["preflight", "--profile", write("topkey.yaml", "name: x\nchecks: {memlock: {min: 1}}\nextra: 1\n")], "unknown key 'extra'"),
        (["preflight", "--profile", "no-such-profile"], "unknown profile 'no-such-profile' (known: g4dn, g5, g5.48xlarge, g6, g6.48xlarge, g6e, g6e.48xlarge, local, p3, p3dn.24xlarge, p4d.24xlarge, p4de.24xlarge, p5.48xlarge, p5e.48xlarge"),
        (["preflight", "--profile", os.path.join(tmp, "missing.yaml")], "cannot read"),
        (["preflight", "--profile", "local", "--checks", "memlock,bogus"], "--checks: unknown check 'bogus'"),
        (["preflight", "--profile", "local", "--skip", "gpu_model"], "--skip: profile 'local' has no check 'gpu_model'"),
        (["preflight", "--profile", "local", "--json", "/nonexistent/dir/r.json"], "does not exist"),
        (["preflight"], "--profile is required"),
        (["topo", "--hwloc-xml", os.path.join(tmp, "nope.xml")], "cannot read"),
        (["topo", "--hwloc-xml", tmp], "a directory"),
        (["topo", "--hwloc-xml", write("garbage.xml", "this is not xml\n")], "not a valid hwloc XML topology"),
        (["topo", "--hwloc-xml", truncated], "not a valid hwloc XML topology"),
        (["topo", "--nccl-topo", os.path.join(tmp, "nope.xml")], "cannot read"),
        (["topo", "--nccl-topo", write("unclosed.xml", '<system version="1">\n  <cpu numaid="0">\n    <pci busid="0000:10:00.0">\n</system>\n')],
         "line 4: malformed XML: </system> closes <pci> opened on line 3"),
        (["topo", "--nccl-topo", write("root.xml", "<topology/>\n")], "root element is <topology>"),
        (["topo", "--nccl-topo", write("numaid.xml", '<system>\n<cpu numaid="zero"/>\n</system>\n')], 'line 2: <cpu numaid="zero"> is not an integer'),
        (["topo", "--nccl-topo", write("busid.xml", '<system><cpu numaid="0"><pci busid="10-1c"/></cpu></system>\n')], "busid '10-1c' is not a PCI bus id"),
        (["topo", "--nccl-topo", write("attr.xml", '<system><cpu numaid=0/></system>\n')], "is not quoted"),
        (["topo", "--hwloc-xml", hw, "--nccl-topo", hw], "exclude each other"),
        (["topo", "--bogus"], "The following argument was not expected: --bogus"),
        (["frobnicate"], "unknown subcommand 'frobnicate': use topo, fabric, preflight, exporter, isolate, baseline or golden"),
        ([], "a subcommand is required"),
        (["fabric", "--bw-bytes", "0"], "--bw-bytes '0' is not a positive size"),
        (["fabric", "--window", "1000"], "--window must be 1..128"),
        (["fabric", "--slow-factor", "0.5"], "--slow-factor must be 0 (off) or at least 1"),
        (["fabric", "--timeout", "abc"], "--timeout 'abc': not a decimal number"),
        (["fabric", "--timeout", "0x10"], "--timeout '0x10': hexadecimal; expected a decimal number"),
        (["fabric", "--timeout", "1e300"], "--timeout '1e300': more than 10000000 seconds"),
        (["fabric", "--timeout", "1e999"], "--timeout '1e999': out of range"),
        (["fabric", "--timeout", "99999999999"], "more than 10000000 seconds"),
        (["fabric", "--timeout", "nan"], "--timeout 'nan': not finite"),
        (["fabric", "--window", "0x10"], "--window '0x10': hexadecimal"),
        (["fabric", "--bw-iters", "1e3"], "--bw-iters '1e3': not a whole number"),
        (["fabric", "--min-bw", "inf"], "--min-bw 'inf': not finite"),
        (["fabric", "--bw-bytes", "2G"], "--bw-bytes '2G': more than 1 GiB"),
        (["isolate", "--round-timeout", "1e300"], "--round-timeout '1e300': more than 10000000 seconds"),
        (["isolate", "--stream-bytes", "4G"], "--stream-bytes '4G': more than 1 GiB"),
        (["isolate", "--bytes", "1T"], "--bytes '1T': more than 4 GiB"),
        (["isolate", "--window", "1000"], "--window must be 1..128"),
        (["exporter", "--exit-after", "0x10"], "--exit-after '0x10': hexadecimal"),
        (["exporter", "--interval", "1e999"], "--interval '1e999': out of range"),
        (["exporter", "--listen", "nonsense"], "--listen 'nonsense' is not ADDRESS:PORT"),
        (["exporter", "--listen", "127.0.0.1:70000"], "port must be 0..65535"),
        (["exporter", "--interval", "0"], "--interval '0': not above 0"),
        (["exporter", "--interval", "0.01"], "--interval must be at least 0.05 seconds"),
        (["--sysfs-root", os.path.join(tmp, "nope"), "topo"], "is not a directory"),
        (["--nvml-library", os.path.join(tmp, "nope.so"), "topo"], "cannot be read"),
        # Every other file a user names goes through the same bounded reader (issue 36).
        (["exporter", "--preflight-report", fifo, "--exit-after", "5"], "--preflight-report '" + fifo + "': cannot read: not a regular file"),
        (["exporter", "--preflight-report", "/dev/zero", "--exit-after", "5"], "not a regular file"),
        (["exporter", "--preflight-report", tmp, "--exit-after", "5"], "a directory"),
        (["baseline", "learn", fifo, "-o", os.path.join(tmp, "never.yaml")], "not a regular file"),
        (["baseline", "learn", "/dev/zero", "-o", os.path.join(tmp, "never.yaml")], "not a regular file"),
        (["baseline", "learn", tmp, "-o", os.path.join(tmp, "never.yaml")], "a directory"),
        (["baseline", "learn", write("hyper.json", '{"args": ["./hypercube_perf"], "results": [{"size": 8, "type": "float", '
                                                  '"in_place": {"bus_bw": 1.0}}]}'), "-o", os.path.join(tmp, "never.yaml")],
         "row 0: unknown collective 'hypercube'; valid: allreduce"),
        (["baseline", "learn", write("dtype.json", '{"rows": [{"row": 4, "collective": "allreduce", "dtype": "flaot", '
                                                  '"bytes": 8, "busbw_gbps": 1}]}'), "-o", os.path.join(tmp, "never.yaml")],
         "row 4: unknown dtype 'flaot'"),
        (["preflight", "--profile", "local", "--model", fifo], "not a regular file"),
        (["preflight", "--profile", "local", "--model", "/dev/zero"], "not a regular file"),
        (["isolate", "--model", fifo], "not a regular file"),
        (["isolate", "--model", tmp], "a directory"),
        # A profile's baseline section: its names are the engine's.
        (["preflight", "--profile", write("baseline.yaml", "checks:\n  memlock: {min: 1}\nbaseline:\n  entries:\n"
                                          "    - {collective: allreduce, busbw_gbps: 1}\n"
                                          "    - {collective: allreduc, busbw_gbps: 1}\n")],
         "line 6: entry 2: unknown collective 'allreduc'; valid: allreduce"),
    ]
    for args, want in cases:
        p = diag(*args)
        err = p.stderr.strip().splitlines()
        check(p.returncode == 64 and len(err) == 1 and want in err[0] and p.stdout == "",
              f"smddp-diag {' '.join(args)}: exit 64 and one line with {want!r}",
              f"exit {p.returncode}\nstdout: {p.stdout}\nstderr: {p.stderr}")
    p = diag("preflight", "--profile", "local", env={"SMDDP_DIAG_FAULT": "meteor"})
    check(p.returncode == 64 and "unknown fault 'meteor'" in p.stderr, "unknown fault", p.stderr)
    p = diag("topo", env={"SMDDP_SYSFS_ROOT": os.path.join(tmp, "nope")})
    check(p.returncode == 64 and "SMDDP_SYSFS_ROOT" in p.stderr, "bad SMDDP_SYSFS_ROOT", p.stderr)
    # A port in use is a usage error too, before the exporter serves anything.
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(1)
        port = s.getsockname()[1]
        p = diag("exporter", "--listen", f"127.0.0.1:{port}", "--exit-after", "5", timeout=30)
        err = p.stderr.strip().splitlines()
        check(p.returncode == 64 and len(err) == 1 and "Address already in use" in err[0] and p.stdout == "",
              "exporter on a busy port", f"{p.returncode}\n{p.stdout}\n{p.stderr}")
    check(not os.path.exists(os.path.join(tmp, "never.yaml")), "no baseline written by a refused learn", os.listdir(tmp))
    # The exporter's --port-file is written once it serves (after a line on
    # NVML where there is none): into a FIFO that no process reads, one line, 64.
    p = diag("exporter", "--listen", "127.0.0.1:0", "--port-file", fifo, "--exit-after", "5", timeout=60)
    err = p.stderr.strip().splitlines()
    check(p.returncode == 64 and err and "a FIFO with no reader" in err[-1] and p.stdout == "" and
          all("NVML" in line for line in err[:-1]), "exporter --port-file into a FIFO with no reader",
          f"{p.returncode}\n{p.stdout}\n{p.stderr}")
    # preflight's --json is written once the checks ran: into a FIFO that no
    # process reads it fails with one line (64) instead of hanging.
    p = diag("preflight", "--profile", "local", "--checks", "memlock", "--json", fifo, timeout=60)
    err = p.stderr.strip().splitlines()
    check(p.returncode == 64 and len(err) == 1 and "a FIFO with no reader" in err[0],
          "preflight --json into a FIFO with no reader", f"{p.returncode}\n{p.stdout}\n{p.stderr}")


@case
def exporter_report_fifo(tmp):
    """--preflight-report becomes a FIFO while the exporter runs: each interval
    skips it without waiting, and SIGTERM still ends the exporter at once."""
    report = os.path.join(tmp, "report.json")
    port_file = os.path.join(tmp, "port")
    server = Server([ARGS.bin, "exporter", "--listen", "127.0.0.1:0", "--interval", "0.1", "--preflight-report", report,
                     "--port-file", port_file, "--exit-after", "120"], log=os.path.join(tmp, "exporter.log"))
    try:
        wait_for("the port file", lambda: os.path.exists(port_file) and open(port_file).read().strip())
        os.mkfifo(report)  # no writer: a blocking open in the sampler would never return
        port = int(open(port_file).read())
        # Scrapes are served after samples that met the FIFO (a sampler stuck in open() would leave them stale, not failed,
        # so SIGTERM below is the check that counts).
        for _ in range(3):
            status, _ = http_get(f"http://127.0.0.1:{port}/metrics")
            check(status == 200, "a scrape while the report is a FIFO", status)
        server.proc.send_signal(signal.SIGTERM)
        try:
            code = server.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            code = None
        check(code == 0, "SIGTERM ends the exporter while its --preflight-report is a FIFO", f"exit {code}")
    finally:
        server.stop()
