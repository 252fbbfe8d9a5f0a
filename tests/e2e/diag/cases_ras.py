"""smddp-diag ras against a fake RAS service (fake_ras.py): status in JSON
and text, monitor events, stuck ranks, silent and foreign servers, bad
options; and the exporter's --ras collector."""

import json
import os
import re
import subprocess

import fake_ras
from fake_ras import FakeRas
from harness import ARGS, case, check, diag, equal, free_port, http_get, wait_for

DEAD_LINE = "SMDDP-RAS-PEER-DEAD (replace): process 7203 on node 10.1.0.2 managing GPU 1"


def one_line(p, what):
    lines = p.stderr.strip().splitlines()
    equal(len(lines), 1, f"{what}: one line on stderr ({p.stderr!r})")
    return lines[0]


def promtool_clean(text, what):
    lint = subprocess.run([ARGS.promtool, "check", "metrics"], input=text, capture_output=True, text=True)
    equal((lint.returncode, lint.stdout + lint.stderr), (0, ""), f"promtool check metrics: {what}")


@case
def ras_status(tmp):
    healthy = FakeRas(statuses=[fake_ras.HEALTHY])
    dead = FakeRas(statuses=[fake_ras.ONE_DEAD])
    try:
        p = diag("ras", "--address", healthy.address(), check_rc=0)
        check("NCCL 2.29.1): 1 communicators, 4 ranks, 0 missing, 0 RAS timeouts; no failures" in p.stdout, "healthy summary", p.stdout)
        equal(healthy.commands, ["CLIENT PROTOCOL 2", "TIMEOUT 5", "SET FORMAT json", "STATUS"], "the conversation")

        textfile = os.path.join(tmp, "ras.prom")
        p = diag("ras", "--address", dead.address(), "--timeout", "7", "--prom-textfile", textfile, check_rc=1)
        check(DEAD_LINE + ", rank 3 of communicator 0x7ab1e5eed0c0ffee: considered dead" in p.stdout, "dead peer code", p.stdout)
        check("4 ranks, 1 missing, 2 RAS timeouts" in p.stdout, "dead summary", p.stdout)
        equal(dead.commands[1], "TIMEOUT 7", "--timeout sent")
        text = open(textfile).read()
        promtool_clean(text, "ras --prom-textfile")
        check('smddp_ras_failure{action="replace",code="SMDDP-RAS-PEER-DEAD",host="10.1.0.2",pid="7203",rank="3"} 1' in text,
              "failure series", text)
        check('smddp_ras_failures_total{action="replace",code="SMDDP-RAS-PEER-DEAD"} 1' in text, "failure counter", text)
        check(re.search(r"^smddp_ras_up 1$", text, re.M) and re.search(r"^smddp_ras_missing_ranks 1$", text, re.M), "status gauges", text)

        p = diag("ras", "--address", dead.address(), "--json", "-v", check_rc=1)
        doc = json.loads(p.stdout)
        equal([(f["code"], f["action"], f["host"], f["pid"], f["rank"]) for f in doc["failures"]],
              [("SMDDP-RAS-PEER-DEAD", "replace", "10.1.0.2", 7203, 3)], "--json failures")
        equal(dead.commands[-1], "VERBOSE STATUS", "-v asks for VERBOSE STATUS")

        # An async error on a rank: re-run.
        err = FakeRas(statuses=[fake_ras.status_json([fake_ras.rank(0, "10.1.0.1", 7100, 0, 5, async_error=6),
                                                      fake_ras.rank(1, "10.1.0.1", 7101, 1, 5)])])
        p = diag("ras", "--address", err.address(), check_rc=1)
        check("SMDDP-RAS-COMM-ERROR (re-run): process 7100 on node 10.1.0.1 managing GPU 0, rank 0" in p.stdout, "comm error", p.stdout)
        err.stop()
    finally:
        healthy.stop()
        dead.stop()


@case
def ras_status_text(tmp):
    # An NCCL before 2.28.7 refuses JSON: the text status is read instead.
    old = FakeRas(text_status=fake_ras.TEXT_DEAD, json_format=False)
    try:
        p = diag("ras", "--address", old.address(), "--raw", check_rc=1)
        check(p.stdout.startswith("NCCL version 2.27.3"), "--raw prints RAS's answer first", p.stdout)
        check("1 communicators, 4 ranks, 0 missing" in p.stdout, "text summary", p.stdout)
        check(DEAD_LINE + ": considered dead" in p.stdout, "dead peer from the DEAD block", p.stdout)
        p = diag("ras", "--address", old.address(), "--text", check_rc=1)
        equal(old.commands[-2:], ["TIMEOUT 5", "STATUS"], "--text asks no format")
        p = diag("ras", "--address", old.address(), "--stuck-after", "0.1", check_rc=69)
        check("needs RAS's JSON status" in one_line(p, "--stuck-after on text"), "stuck needs JSON", p.stderr)
    finally:
        old.stop()


@case
def ras_stuck(tmp):
    before = fake_ras.status_json([fake_ras.rank(i, "10.1.0.1", 7100 + i, i, 40 if i == 1 else 41) for i in range(4)])
    after = fake_ras.status_json([fake_ras.rank(i, "10.1.0.1", 7100 + i, i, 40 if i == 1 else 41) for i in range(4)])
    moving = fake_ras.status_json([fake_ras.rank(i, "10.1.0.1", 7100 + i, i, 60 if i == 1 else 61) for i in range(4)])
    srv = FakeRas(statuses=[before, after])
    ok = FakeRas(statuses=[before, moving])
    try:
        p = diag("ras", "--address", srv.address(), "--stuck-after", "0.2", check_rc=1)
        check("SMDDP-RAS-RANK-STUCK (reboot): process 7101 on node 10.1.0.1 managing GPU 1, rank 1 of communicator "
              "0x7ab1e5eed0c0ffee: at collective 40 while others are at 41" in p.stdout, "stuck rank", p.stdout)
        equal(srv.commands.count("STATUS"), 2, "two queries")
        diag("ras", "--address", ok.address(), "--stuck-after", "0.2", check_rc=0)
    finally:
        srv.stop()
        ok.stop()


@case
def ras_monitor(tmp):
    srv = FakeRas(events=fake_ras.MONITOR_JSON)
    text = FakeRas(events=fake_ras.MONITOR_TEXT)
    old = FakeRas(monitor=False)
    try:
        textfile = os.path.join(tmp, "monitor.prom")
        p = diag("ras", "--address", srv.address(), "--monitor", "--prom-textfile", textfile, check_rc=1)
        equal(srv.commands, ["CLIENT PROTOCOL 2", "SET FORMAT json", "MONITOR"], "monitor conversation")
        check("2026-01-05 10:00:01 PEER_NEW: process 7300 on node 10.1.0.3 managing GPU 0" in p.stdout, "PEER_NEW line", p.stdout)
        check(DEAD_LINE + ": PEER_DEAD at 2026-01-05 10:01:02" in p.stdout, "PEER_DEAD -> code", p.stdout)
        check("closed the connection (the job ended)" in p.stderr, "end of the job said", p.stderr)
        metrics = open(textfile).read()
        promtool_clean(metrics, "monitor textfile")
        check('smddp_ras_events_total{event="PEER_DEAD"} 1' in metrics and 'smddp_ras_events_total{event="PEER_NEW"} 1' in metrics,
              "event counters", metrics)
        check('smddp_ras_failure{action="replace",code="SMDDP-RAS-PEER-DEAD",host="10.1.0.2",pid="7203",rank="none"} 1' in metrics,
              "failure from the event", metrics)

        p = diag("ras", "--address", text.address(), "--monitor", "--text", "--json", check_rc=1)
        events = [json.loads(l) for l in p.stdout.splitlines()]
        equal([(e["event"], e["pid"], e.get("failure", {}).get("code")) for e in events],
              [("PEER_NEW", 7300, None), ("PEER_DEAD", 7203, "SMDDP-RAS-PEER-DEAD")], "text events as JSON lines")

        # A quiet job: --duration ends the watch, no failure.
        quiet = FakeRas(events=[], close_monitor=False)
        diag("ras", "--address", quiet.address(), "--monitor", "--duration", "0.5", check_rc=0)
        quiet.stop()

        p = diag("ras", "--address", old.address(), "--monitor", check_rc=69)
        check("has no RAS monitor mode" in one_line(p, "no monitor mode"), "no monitor mode before 2.29", p.stderr)
    finally:
        srv.stop()
        text.stop()
        old.stop()


@case
def ras_unreachable(tmp):
    silent = FakeRas(mode="silent")
    garbage = FakeRas(mode="garbage")
    newer = FakeRas(statuses=[fake_ras.HEALTHY], version="3")
    try:
        p = diag("ras", "--address", silent.address(), "--connect-timeout", "1", timeout=30, check_rc=3)
        check(silent.address() in one_line(p, "silent server") and "no answer" in p.stderr, "silent server named", p.stderr)
        equal(p.stdout, "", "nothing on stdout")
        p = diag("ras", "--address", silent.address(), "--monitor", "--connect-timeout", "1", timeout=30, check_rc=3)
        check(silent.address() in one_line(p, "silent server, monitor"), "silent server named (monitor)", p.stderr)

        p = diag("ras", "--address", garbage.address(), check_rc=3)
        check("is not an NCCL RAS service" in one_line(p, "not RAS"), "foreign server", p.stderr)

        p = diag("ras", "--address", newer.address(), check_rc=0)
        check("speaks RAS protocol 3, this client 2; going on" in one_line(p, "another version"), "version warning", p.stderr)

        port = free_port()  # nothing listens there
        p = diag("ras", "--address", f"127.0.0.1:{port}", check_rc=3)
        check(f"cannot connect to 127.0.0.1:{port}" in one_line(p, "refused"), "refused connection", p.stderr)
    finally:
        silent.stop()
        garbage.stop()
        newer.stop()


@case
def ras_bad_input(tmp):
    for args, what in [
        (["ras", "--address", "host:0"], "--address 'host:0' is not HOST"),
        (["ras", "--address", "a:b:c"], "--address 'a:b:c'"),
        (["ras", "--address", "[::1"], "--address '[::1'"),
        (["ras", "--timeout", "0"], "--timeout must be 1..3600"),
        (["ras", "--connect-timeout", "0"], "--connect-timeout"),
        (["ras", "--duration", "5"], "--duration needs --monitor"),
        (["ras", "--monitor", "--stuck-after", "1"], "--stuck-after is for a status query"),
        (["ras", "--prom-textfile", "/nonexistent-dir/x.prom"], "--prom-textfile"),
        (["exporter", "--ras", "host:99999"], "--ras 'host:99999'"),
        (["exporter", "--ras-timeout", "0"], "--ras-timeout must be 1..3600"),
        (["exporter", "--ras-interval", "0"], "--ras-interval"),
        (["exporter", "--inspector", "/dev/null"], "--inspector '/dev/null': cannot read: not a regular file"),
    ]:
        p = diag(*args, timeout=30, check_rc=64)
        check(what in one_line(p, " ".join(args)), f"{args}: names the problem", p.stderr)
        equal(p.stdout, "", f"{args}: nothing on stdout")


def metric_lines(body, name):
    return sorted(l for l in body.splitlines() if l.startswith(name + "{") or l.startswith(name + " "))


@case
def exporter_ras(tmp):
    from cases_exporter import start_exporter
    srv = FakeRas(statuses=[fake_ras.ONE_DEAD], events=fake_ras.MONITOR_JSON[1:], close_monitor=False)
    silent = FakeRas(mode="silent")
    servers = []
    try:
        exp, port = start_exporter(tmp, "ras", ["--interval", "0.2", "--ras", srv.address(), "--ras-interval", "0.3"])
        servers.append(exp)

        def scrape():
            return http_get(f"http://127.0.0.1:{port}/metrics")[1]
        body = wait_for("RAS series", lambda: (lambda b: b if "smddp_ras_up 1" in b and 'event="PEER_DEAD"' in b else None)(scrape()))
        promtool_clean(body, "exporter with --ras")
        equal(metric_lines(body, "smddp_ras_failure"),
              ['smddp_ras_failure{action="replace",code="SMDDP-RAS-PEER-DEAD",host="10.1.0.2",pid="7203",rank="3"} 1'],
              "the dead peer, once (status and event agree)")
        check('smddp_ras_failures_total{action="replace",code="SMDDP-RAS-PEER-DEAD"} 1' in body, "counted once", body)
        check("smddp_ras_timeouts 2" in body and "smddp_ras_ranks 4" in body, "status gauges", body)
        check("MONITOR" in srv.commands, "the collector follows monitor events", str(srv.commands))

        quiet, qport = start_exporter(tmp, "silent", ["--interval", "0.2", "--ras", silent.address(), "--ras-interval", "0.3"])
        servers.append(quiet)
        wait_for("a silent RAS is down", lambda: "smddp_ras_up 0" in http_get(f"http://127.0.0.1:{qport}/metrics")[1])
        wait_for("the warning", lambda: silent.address() in open(os.path.join(tmp, "silent.log")).read())
    finally:
        codes = [s.stop() for s in servers]
        srv.stop()
        silent.stop()
    equal(codes, [0, 0], "exporters exit 0 on SIGTERM")
    log = open(os.path.join(tmp, "silent.log")).read()
    equal(len([l for l in log.splitlines() if "warning: RAS at" in l]), 1, "one warning for a server that stays silent")
