#!/usr/bin/env python3
"""deploy/kubernetes/base/smddp-node-health.py against a fake API server.

Usage: node_health_e2e.py --root REPO --diag SMDDP_DIAG TEST

The fake server (127.0.0.1, an ephemeral port, a thread of this process)
keeps Node objects, applies merge patches (RFC 7386) with the API server's
resourceVersion check (409 on a stale one), records every request, and can
answer 401, 403 or nothing at all. Each test asserts on the requests (method,
path, headers, PATCH bodies), the resulting labels, taints and expiry
timestamps, the script's exit code and its stderr line. The failure codes
and their taints come from the real `smddp-diag codes --json` (--diag).
"""
import argparse
import copy
import http.server
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse

import yaml

ARGS = None
TOKEN = "test-token-123"
P = "smddp.io/"
# The taint each action class gives, as docs/diag.md ("Failure codes") and
# docs/deploy.md promise it: the test's own word, so that a script or a
# table that strays from it fails here.
TAINT_OF_ACTION = {"none": None, "re-run": P + "preflight", "config": P + "preflight", "escalate": P + "preflight",
                   "reboot": P + "pending-reboot", "replace": P + "pending-replacement"}
OUR_KEYS = {k for k in TAINT_OF_ACTION.values() if k}
# Before failure codes the script set this one; a pass or a fail now replaces it.
TAINT = {"key": P + "preflight", "value": "failed", "effect": "NoSchedule"}
OTHER_TAINT = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def merge(target, patch):
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = dict(target) if isinstance(target, dict) else {}
    for k, v in patch.items():
        if v is None:
            out.pop(k, None)
        else:
            out[k] = merge(out.get(k), v)
    return out


class Fake:
    def __init__(self, nodes, mode="ok", conflicts=0):
        self.nodes = {n["metadata"]["name"]: n for n in nodes}
        self.mode, self.conflicts, self.requests = mode, conflicts, []
        self.release = threading.Event()
        fake = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def reply(self, code, obj):
                data = json.dumps(obj).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def status(self, code, reason, message):
                self.reply(code, {"kind": "Status", "apiVersion": "v1", "status": "Failure", "message": message,
                                  "reason": reason, "code": code})

            def handle_any(self):
                body = None
                if self.headers.get("Content-Length"):
                    body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                url = urllib.parse.urlsplit(self.path)
                fake.requests.append({"method": self.command, "path": url.path,
                                      "query": urllib.parse.parse_qs(url.query), "body": body,
                                      "auth": self.headers.get("Authorization"),
                                      "type": self.headers.get("Content-Type")})
                if len(fake.requests) > 50:  # a runaway client: stop answering
                    return self.status(429, "TooManyRequests", "test: too many requests")
                if fake.mode == "hang":
                    fake.release.wait(30)  # hang guard: never longer than this
                    return
                if self.headers.get("Authorization") != "Bearer " + TOKEN or fake.mode == "401":
                    return self.status(401, "Unauthorized", "Unauthorized")
                if fake.mode == "403":
                    return self.status(403, "Forbidden", 'nodes "n1" is forbidden: User '
                                       '"system:serviceaccount:smddp:smddp-node-health" cannot patch resource "nodes"')
                if url.path == "/api/v1/nodes" and self.command == "GET":
                    sel = fake.requests[-1]["query"].get("labelSelector", [""])[0]
                    items = [n for n in fake.nodes.values() if not sel or sel in n["metadata"].get("labels", {})]
                    return self.reply(200, {"kind": "NodeList", "items": items})
                name = urllib.parse.unquote(url.path.rsplit("/", 1)[-1])
                if not url.path.startswith("/api/v1/nodes/") or name not in fake.nodes:
                    return self.status(404, "NotFound", f'nodes "{name}" not found')
                node = fake.nodes[name]
                if self.command == "GET":
                    return self.reply(200, node)
                if self.command != "PATCH" or self.headers.get("Content-Type") != "application/merge-patch+json":
                    return self.status(415, "UnsupportedMediaType", "test: merge patches only")
                rv = (body.get("metadata") or {}).get("resourceVersion")
                if fake.conflicts > 0 or (rv is not None and rv != node["metadata"]["resourceVersion"]):
                    fake.conflicts -= 1
                    node["metadata"]["resourceVersion"] = str(int(node["metadata"]["resourceVersion"]) + 1)
                    return self.status(409, "Conflict", "the object has been modified")
                patch = copy.deepcopy(body)
                patch.get("metadata", {}).pop("resourceVersion", None)
                new = merge(node, patch)
                new["metadata"]["resourceVersion"] = str(int(node["metadata"]["resourceVersion"]) + 1)
                fake.nodes[name] = new
                return self.reply(200, new)

            do_GET = do_PATCH = do_PUT = do_POST = do_DELETE = handle_any

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        # A short poll: close() waits for the loop to see the shutdown, once per fake.
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    def close(self):
        self.release.set()
        self.server.shutdown()
        self.server.server_close()

    def patches(self):
        return [r for r in self.requests if r["method"] == "PATCH"]


def node(name, labels=None, taints=None, rv="100"):
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "resourceVersion": rv, "labels": dict(labels or {}), "annotations": {}},
            "spec": {"taints": list(taints)} if taints else {}}


def taint(key, code):
    return {"key": key, "value": code, "effect": "NoSchedule"}


def report(d, healthy, failed=()):
    """failed: (check, reason) of a report before codes, or (check, reason, code, action)."""
    checks = [{"name": "gpu_count", "status": "pass", "healthy": True, "reason": "8 GPUs"}]
    for n, r, *coded in failed:
        checks.append({"name": n, "status": "fail", "healthy": False, "reason": r})
        if coded:
            checks[-1].update(code=coded[0], action=coded[1])
    checks.append({"name": "clock_skew", "status": "skip", "healthy": True, "reason": "needs mpirun"})
    path = os.path.join(d, "preflight.json")
    with open(path, "w") as f:
        json.dump({"profile": "p4d.24xlarge", "healthy": healthy, "timestamp_ms": 1,
                   "nodes": [{"host": "ip-10-0-0-1", "label": "ip-10-0-0-1", "healthy": healthy, "checks": checks}]}, f)
    return path


def script(fake, d, *args, timeout=5, env=None):
    token = os.path.join(d, "token")
    with open(token, "w") as f:
        f.write(TOKEN + "\n")
    cmd = [sys.executable, os.path.join(ARGS.root, "deploy/kubernetes/base/smddp-node-health.py"), *args]
    if fake:
        cmd[3:3] = ["--api-server", fake.url, "--token-file", token, "--timeout", str(timeout)]
        if args[0] in ("label", "run") and "--diag" not in args and not (env and "SMDDP_TEST_NO_DIAG" in env):
            cmd[3:3] = ["--diag", ARGS.diag]
    before = int(time.time())
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=60,
                       env=env or {k: v for k, v in os.environ.items() if not k.startswith(("KUBERNETES_", "NODE_"))})
    return r, before, int(time.time())


def expect_exit(r, code, stderr_has=None):
    if r.returncode != code:
        fail(f"exit {r.returncode}, want {code}: stdout {r.stdout!r} stderr {r.stderr!r}")
    if stderr_has is not None:
        lines = r.stderr.strip().splitlines()
        if len(lines) != 1 or stderr_has not in lines[0]:
            fail(f"stderr {r.stderr!r}: want one line with {stderr_has!r}")


def check_valid_till(labels, before, after, ttl):
    till = int(labels[P + "preflight-valid-till-sec"])
    if not before + ttl <= till <= after + ttl:
        fail(f"valid-till {till} not within [{before + ttl}, {after + ttl}]")
    return till


def run_label(exit_code, nodes, failed=(), ttl="3600", extra=(), **kw):
    fake = Fake(nodes, **kw)
    d = tempfile.mkdtemp()
    try:
        path = report(d, exit_code == 0, failed)
        r, before, after = script(fake, d, "label", "--node", "n1", "--report", path, "--exit-code", str(exit_code),
                                  "--ttl", ttl, *extra)
    finally:
        fake.close()
    return fake, r, before, after


def test_pass():
    """A healthy node: GET then one PATCH of labels; no taint change, no resourceVersion needed."""
    fake, r, before, after = run_label(0, [node("n1", {"keep": "me", P + "preflight-failed-checks": "old"})])
    expect_exit(r, 0)
    if [(q["method"], q["path"]) for q in fake.requests] != [("GET", "/api/v1/nodes/n1"), ("PATCH", "/api/v1/nodes/n1")]:
        fail(f"requests {[(q['method'], q['path']) for q in fake.requests]}")
    if {q["auth"] for q in fake.requests} != {"Bearer " + TOKEN}:
        fail("the token was not sent as a bearer token")
    body = fake.patches()[0]["body"]
    till = check_valid_till(body["metadata"]["labels"], before, after, 3600)
    want = {"metadata": {"labels": {P + "preflight-result": "pass", P + "preflight-profile": "p4d.24xlarge",
                                    P + "preflight-failed-checks": None, P + "preflight-valid-till-sec": str(till),
                                    P + "preflight-code": None, P + "preflight-action": None},
                         "annotations": {P + "preflight-reason": None}}}
    if body != want:
        fail(f"PATCH body {body}\n want {want}")
    labels = fake.nodes["n1"]["metadata"]["labels"]
    if labels.get("keep") != "me" or P + "preflight-failed-checks" in labels:
        fail(f"labels after {labels}")


def test_fail_taints():
    """A failing node: result fail, the failed checks, their reasons, the
    code and action of the furthest-going failure (reboot before escalate,
    whatever the order), and its action's taint beside the others'."""
    failed = [("gpu_temperature", "GPU 3 at 95 C (max 85 C)", "SMDDP-PREFLIGHT-GPU-TEMPERATURE", "escalate"),
              ("efa_count", "rdmap32s27 port 1 is DOWN", "SMDDP-PREFLIGHT-EFA-COUNT", "reboot")]
    want_taint = taint(P + "pending-reboot", "SMDDP-PREFLIGHT-EFA-COUNT")
    fake, r, before, after = run_label(1, [node("n1", taints=[OTHER_TAINT], rv="7")], failed)
    expect_exit(r, 0)
    body = fake.patches()[0]["body"]
    till = check_valid_till(body["metadata"]["labels"], before, after, 3600)
    want = {"metadata": {"resourceVersion": "7",
                         "labels": {P + "preflight-result": "fail", P + "preflight-profile": "p4d.24xlarge",
                                    P + "preflight-failed-checks": "gpu_temperature.efa_count",
                                    P + "preflight-valid-till-sec": str(till),
                                    P + "preflight-code": "SMDDP-PREFLIGHT-EFA-COUNT",
                                    P + "preflight-action": "reboot"},
                         "annotations": {P + "preflight-reason": "gpu_temperature: GPU 3 at 95 C (max 85 C); "
                                                                 "efa_count: rdmap32s27 port 1 is DOWN"}},
            "spec": {"taints": [OTHER_TAINT, want_taint]}}
    if body != want:
        fail(f"PATCH body {body}\n want {want}")
    if fake.nodes["n1"]["spec"]["taints"] != [OTHER_TAINT, want_taint]:
        fail(f"taints after {fake.nodes['n1']['spec']}")
    if "SMDDP-PREFLIGHT-EFA-COUNT (reboot)" not in r.stdout or "tainted smddp.io/pending-reboot=" not in r.stdout:
        fail(f"stdout {r.stdout!r}")
    # The same failure again: nothing to change in the taints, no resourceVersion needed.
    fake2 = Fake([node("n1", taints=[OTHER_TAINT, want_taint])])
    d = tempfile.mkdtemp()
    try:
        r, _, _ = script(fake2, d, "label", "--node", "n1", "--report", report(d, False, failed), "--exit-code", "1")
    finally:
        fake2.close()
    expect_exit(r, 0)
    if "spec" in fake2.patches()[0]["body"] or fake2.nodes["n1"]["spec"]["taints"] != [OTHER_TAINT, want_taint]:
        fail(f"a repeated failure changed the taints: {fake2.patches()[0]['body']}")


def test_pass_untaints():
    """A pass on a tainted node removes every taint of ours (each action's,
    and the one before codes) and the code labels, others' taints stay;
    guarded by the resourceVersion."""
    ours = [TAINT, taint(P + "pending-reboot", "SMDDP-PREFLIGHT-GPU-ECC"),
            taint(P + "pending-replacement", "SMDDP-BENCH-BITWISE")]
    labels = {P + "preflight-result": "fail", P + "preflight-code": "SMDDP-PREFLIGHT-GPU-ECC",
              P + "preflight-action": "reboot"}
    fake, r, _, _ = run_label(0, [node("n1", labels, ours[:1] + [OTHER_TAINT] + ours[1:], rv="41")])
    expect_exit(r, 0)
    if {P + "preflight-code", P + "preflight-action"} & set(fake.nodes["n1"]["metadata"]["labels"]):
        fail(f"code labels left: {fake.nodes['n1']['metadata']['labels']}")
    body = fake.patches()[0]["body"]
    if body["spec"] != {"taints": [OTHER_TAINT]} or body["metadata"]["resourceVersion"] != "41":
        fail(f"PATCH body {body}")
    if fake.nodes["n1"]["spec"]["taints"] != [OTHER_TAINT] or \
            fake.nodes["n1"]["metadata"]["labels"][P + "preflight-result"] != "pass":
        fail(f"node after {fake.nodes['n1']}")


def test_error_keeps_taint():
    """Preflight exit 70 (could not run): result error, the taints left as
    they were (none added, none removed); it needs no table, so a broken
    smddp-diag does not keep the node from being labelled."""
    for taints in ([], [TAINT], [taint(P + "pending-reboot", "SMDDP-PREFLIGHT-GPU-ECC")]):
        fake, r, _, _ = run_label(70, [node("n1", taints=taints)], extra=("--diag", "/nonexistent/smddp-diag"))
        expect_exit(r, 0)
        body = fake.patches()[0]["body"]
        if "spec" in body or body["metadata"]["labels"][P + "preflight-result"] != "error" or \
                "exit 70" not in body["metadata"]["annotations"][P + "preflight-reason"]:
            fail(f"PATCH body {body}")
        if fake.nodes["n1"]["spec"].get("taints", []) != taints:
            fail(f"taints changed: {fake.nodes['n1']['spec']}")


def test_conflict_retry():
    """409 on the taint patch: read the node again and patch with the new resourceVersion."""
    fake, r, _, _ = run_label(1, [node("n1", rv="5")], [("gpu_ecc", "2 uncorrectable")], conflicts=1)
    expect_exit(r, 0)
    seq = [(q["method"], (q["body"] or {}).get("metadata", {}).get("resourceVersion")) for q in fake.requests]
    if seq != [("GET", None), ("PATCH", "5"), ("GET", None), ("PATCH", "6")]:
        fail(f"requests {seq}")
    # A report without codes (written before them): SMDDP-UNCLASSIFIED, escalate.
    if fake.nodes["n1"]["spec"]["taints"] != [taint(P + "preflight", "SMDDP-UNCLASSIFIED")]:
        fail(f"taints {fake.nodes['n1']['spec']}")
    # Conflicts that never end: bounded attempts, then exit 70.
    fake, r, _, _ = run_label(1, [node("n1")], [("gpu_ecc", "2")], conflicts=99)
    expect_exit(r, 70, "HTTP 409")
    if len(fake.patches()) != 3:
        fail(f"{len(fake.patches())} PATCH attempts, want 3")


def test_unauthorized():
    """401: one line naming the rejected token, exit 70, no retry, nothing patched."""
    fake, r, _, _ = run_label(1, [node("n1")], [("gpu_ecc", "2")], mode="401")
    expect_exit(r, 70, "HTTP 401 (the service-account token was rejected)")
    if len(fake.requests) != 1 or fake.nodes["n1"]["metadata"]["labels"]:
        fail(f"requests {fake.requests}")


def test_forbidden():
    """403: one line with the server's RBAC message, exit 70, no retry."""
    fake, r, _, _ = run_label(0, [node("n1")], mode="403")
    expect_exit(r, 70, 'cannot patch resource "nodes"')
    if "HTTP 403" not in r.stderr or len(fake.requests) != 1:
        fail(f"stderr {r.stderr!r}, {len(fake.requests)} requests")


def test_timeout():
    """A server that never answers: the request's --timeout ends it, exit 70, one line."""
    fake = Fake([node("n1")], mode="hang")
    d = tempfile.mkdtemp()
    try:
        r, _, _ = script(fake, d, "label", "--node", "n1", "--report", report(d, True), "--exit-code", "0",
                         timeout=1)
    finally:
        fake.close()
    expect_exit(r, 70, "no answer from")
    if "within 1 s" not in r.stderr or len(fake.requests) != 1:
        fail(f"stderr {r.stderr!r}, {len(fake.requests)} requests")


def test_expire():
    """expire: LIST by label; only nodes past valid-till lose the result labels (their taint stays)."""
    now = int(time.time())
    old = {P + "preflight-result": "pass", P + "preflight-valid-till-sec": str(now - 10), P + "preflight-profile": "x",
           "keep": "me"}
    fresh = {P + "preflight-result": "fail", P + "preflight-valid-till-sec": str(now + 100000)}
    fake = Fake([node("old", old, [TAINT], rv="3"), node("fresh", fresh), node("never", {"keep": "me"})])
    d = tempfile.mkdtemp()
    try:
        r, _, _ = script(fake, d, "expire")
    finally:
        fake.close()
    expect_exit(r, 0)
    first = fake.requests[0]
    if (first["method"], first["path"], first["query"]) != (
            "GET", "/api/v1/nodes", {"labelSelector": [P + "preflight-valid-till-sec"]}):
        fail(f"list request {first}")
    patches = fake.patches()
    if [p["path"] for p in patches] != ["/api/v1/nodes/old"]:
        fail(f"patched {[p['path'] for p in patches]}")
    want = {"metadata": {"resourceVersion": "3", "annotations": {P + "preflight-reason": None},
                         "labels": {P + k: None for k in ("preflight-result", "preflight-valid-till-sec",
                                                          "preflight-profile", "preflight-failed-checks",
                                                          "preflight-code", "preflight-action")}}}
    if patches[0]["body"] != want:
        fail(f"expire PATCH {patches[0]['body']}\n want {want}")
    n = fake.nodes
    if n["old"]["metadata"]["labels"] != {"keep": "me"} or n["old"]["spec"]["taints"] != [TAINT] or \
            n["fresh"]["metadata"]["labels"] != fresh:
        fail(f"nodes after {n}")


def test_run():
    """run: the preflight command's exit code and report decide; then --expire sweeps."""
    fake = Fake([node("n1")])
    d = tempfile.mkdtemp()
    try:
        path = report(d, False, [("memlock", "64 KiB (min unlimited)", "SMDDP-PREFLIGHT-MEMLOCK", "config")])
        os.rename(path, path + ".fixture")
        # A stand-in for smddp-diag: writes its report, exits 1 (unhealthy).
        cmd = [sys.executable, "-c", f"import shutil,sys; shutil.copy({path + '.fixture'!r}, {path!r}); sys.exit(1)"]
        # No --diag: the smddp-diag on PATH gives the table.
        env = {k: v for k, v in os.environ.items() if not k.startswith(("KUBERNETES_", "NODE_"))}
        env.update(PATH=os.path.dirname(os.path.abspath(ARGS.diag)) + os.pathsep + env.get("PATH", ""),
                   SMDDP_TEST_NO_DIAG="1")
        r, _, _ = script(fake, d, "run", "--node", "n1", "--report", path, "--expire", "--", *cmd, env=env)
    finally:
        fake.close()
    expect_exit(r, 0)
    seq = [(q["method"], q["path"]) for q in fake.requests]
    if seq != [("GET", "/api/v1/nodes/n1"), ("PATCH", "/api/v1/nodes/n1"), ("GET", "/api/v1/nodes")]:
        fail(f"requests {seq}")
    labels = fake.nodes["n1"]["metadata"]["labels"]
    if labels[P + "preflight-result"] != "fail" or labels[P + "preflight-failed-checks"] != "memlock" or \
            labels[P + "preflight-code"] != "SMDDP-PREFLIGHT-MEMLOCK" or labels[P + "preflight-action"] != "config":
        fail(f"labels {labels}")
    if fake.nodes["n1"]["spec"]["taints"] != [taint(P + "preflight", "SMDDP-PREFLIGHT-MEMLOCK")]:
        fail(f"taints {fake.nodes['n1']['spec']}")


def test_rbac_covers_requests():
    """Every request the script makes is allowed by the ClusterRole, and nothing more is granted."""
    role = [d for d in yaml.safe_load_all(open(os.path.join(ARGS.root, "deploy/kubernetes/base/node-preflight.yaml")))
            if d["kind"] == "ClusterRole"][0]
    granted = {v for rule in role["rules"] for v in rule["verbs"]}
    used = set()
    for test in (test_fail_taints, test_pass_untaints, test_expire):
        fake_requests = []
        orig = Fake.close

        def close(self, orig=orig, sink=fake_requests):
            sink.extend(self.requests)
            orig(self)
        Fake.close = close
        try:
            test()
        finally:
            Fake.close = orig
        for q in fake_requests:
            used.add({"PATCH": "patch"}.get(q["method"]) or ("list" if q["path"] == "/api/v1/nodes" else "get"))
    if used != granted:
        fail(f"verbs used {sorted(used)}, granted {sorted(granted)}")


def test_usage():
    """Bad usage: exit 64, one line; no in-cluster environment and no --api-server is bad usage too."""
    d = tempfile.mkdtemp()
    for args, needle in ((["label", "--node", "n1"], "--exit-code"),
                         (["label", "--exit-code", "0"], "no node"),
                         (["label", "--node", "n1", "--exit-code", "0", "--ttl", "0"], "--ttl"),
                         (["run", "--node", "n1"], "no preflight command"),
                         (["label", "--node", "n1", "--exit-code", "0"], "KUBERNETES_SERVICE_HOST"),
                         (["expire", "--token-file", os.path.join(d, "absent"), "--api-server", "http://127.0.0.1:9"],
                          "service-account token")):
        r, _, _ = script(None, d, *args)
        expect_exit(r, 64, needle)
    # In-cluster defaults: the URL from KUBERNETES_SERVICE_HOST/PORT (reached, here refused), token read.
    env = {"PATH": os.environ["PATH"], "KUBERNETES_SERVICE_HOST": "127.0.0.1", "KUBERNETES_SERVICE_PORT": "9",
           "NODE_NAME": "n1"}
    r, _, _ = script(None, d, "label", "--exit-code", "0", "--token-file", os.path.join(d, "token"),
                     "--ca-file", "/etc/ssl/certs/ca-certificates.crt", "--diag", ARGS.diag, env=env)
    expect_exit(r, 70, "https://127.0.0.1:9")


def test_hostile_input():
    """issue 36: overflowing, non-finite and hex numbers, special files as the
    token, CA and report: one line and 64 (or, for the report, a label from
    the exit code alone), never a traceback or a wait."""
    d = tempfile.mkdtemp()
    fifo = os.path.join(d, "fifo")
    os.mkfifo(fifo)
    base = ["label", "--node", "n1", "--exit-code", "0", "--api-server", "http://127.0.0.1:9"]
    for extra, needle in ((["--ttl", "99999999999999999999999"], "--ttl"), (["--ttl", "0x10"], "--ttl"),
                          (["--timeout", "nan"], "--timeout"), (["--timeout", "inf"], "--timeout"),
                          (["--timeout", "1e999"], "--timeout"), (["--timeout", "0x10"], "--timeout"),
                          (["--exit-code", "1e3"], "--exit-code"), (["--exit-code", "256"], "--exit-code"),
                          (["--node", "N 1"], "--node"), (["--token-file", fifo], "not a regular file"),
                          (["--token-file", d], "a directory"), (["--token-file", "/dev/zero"], "not a regular file")):
        r, _, _ = script(None, d, *base, *extra)
        expect_exit(r, 64, needle)
        if "Traceback" in r.stderr:
            fail(f"{extra}: a traceback")
    r, _, _ = script(None, d, "run", "--node", "n1", "--preflight-timeout", "inf", "--", "true")
    expect_exit(r, 64, "--preflight-timeout")
    ca = os.path.join(d, "ca.crt")
    with open(ca, "w") as f:
        f.write("not a certificate\n")
    r, _, _ = script(None, d, "expire", "--token-file", os.path.join(d, "token"), "--ca-file", ca,
                     "--api-server", "https://127.0.0.1:9")
    expect_exit(r, 64, "no usable PEM certificate")
    r, _, _ = script(None, d, "expire", "--token-file", os.path.join(d, "token"), "--ca-file", fifo,
                     "--api-server", "https://127.0.0.1:9")
    expect_exit(r, 64, "not a regular file")
    # A report that is a FIFO, deep, non-finite or mistyped: the exit code alone decides.
    bad = {"fifo": None, "deep": "[" * 5000 + "]" * 5000, "nan": '{"nodes": [{"checks": [{"name": NaN}]}]}',
           "types": '{"profile": ["x"], "nodes": {"checks": 1}}'}
    for name, text in bad.items():
        path = fifo if text is None else os.path.join(d, name + ".json")
        if text is not None:
            with open(path, "w") as f:
                f.write(text)
        fake = Fake([node("n1")])
        try:
            r, _, _ = script(fake, d, "label", "--node", "n1", "--report", path, "--exit-code", "1")
        finally:
            fake.close()
        expect_exit(r, 0)
        patch = fake.patches()[-1]["body"]["metadata"]["labels"]
        if patch.get(P + "preflight-result") != "fail" or patch.get(P + "preflight-code") != "SMDDP-UNCLASSIFIED" or \
                "Traceback" in r.stderr:
            fail(f"report {name}: labels {patch} stderr {r.stderr!r}")


def diag_codes():
    r = subprocess.run([ARGS.diag, "codes", "--json"], capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        fail(f"smddp-diag codes --json: exit {r.returncode}: {r.stderr!r}")
    return json.loads(r.stdout)


def test_every_code():
    """issue 38's "Done when": EVERY code of `smddp-diag codes --json`, as
    the primary failure of a report, gives the node its code and action
    labels and its action's taint (TAINT_OF_ACTION: none none, reboot and
    replace their pending-* taint, the rest smddp.io/preflight), with the
    code as the taint's value; a stale taint of ours is replaced, others'
    stay; the next pass removes our taints and the code labels. The drain
    reason and the metric label of each code: diag's FailureCodes unit test."""
    doc = diag_codes()
    table = {a["action"]: a["taint"] for a in doc["actions"]}
    if table != TAINT_OF_ACTION:
        fail(f"smddp-diag codes --json maps actions to {table}, docs/deploy.md promises {TAINT_OF_ACTION}")
    stale = taint(P + "pending-replacement", "SMDDP-OLD")
    n, passed = 0, set()
    for row in doc["codes"]:
        code, action = row["code"], row["action"]
        # Beside a config failure, which it outranks or (config) precedes; a
        # none or re-run failure alone, as config would lead.
        failed = [("x", "evidence", code, action), ("memlock", "limit 64 KiB", "SMDDP-PREFLIGHT-MEMLOCK", "config")]
        if action in ("none", "re-run"):
            failed = failed[:1]
        fake, r, _, _ = run_label(1, [node("n1", taints=[stale, OTHER_TAINT])], failed)
        expect_exit(r, 0)
        got = fake.nodes["n1"]
        labels, taints = got["metadata"]["labels"], got["spec"].get("taints", [])
        key = TAINT_OF_ACTION[action]
        want = [OTHER_TAINT] + ([taint(key, code)] if key else [])
        if labels.get(P + "preflight-code") != code or labels.get(P + "preflight-action") != action or \
                taints != want:
            fail(f"{code} ({action}): labels {labels}, taints {taints}; want taints {want}")
        if row.get("taint") != key:
            fail(f"{code}: codes --json says taint {row.get('taint')!r}, want {key!r}")
        # Then a pass (once per action: its taint is what differs): none of
        # our taints, no code labels.
        if action in passed:
            n += 1
            continue
        passed.add(action)
        fake2 = Fake([got])
        d = tempfile.mkdtemp()
        try:
            r, _, _ = script(fake2, d, "label", "--node", "n1", "--report", report(d, True), "--exit-code", "0")
        finally:
            fake2.close()
        expect_exit(r, 0)
        after = fake2.nodes["n1"]
        if after["spec"].get("taints") != [OTHER_TAINT] or \
                {P + "preflight-code", P + "preflight-action"} & set(after["metadata"]["labels"]):
            fail(f"{code}: after a pass {after}")
        n += 1
    if n < 30 or passed != set(TAINT_OF_ACTION) or "SMDDP-UNCLASSIFIED" not in {c["code"] for c in doc["codes"]}:
        fail(f"{n} codes: the table is not the whole one")
    print(f"{n} codes: labels and taints as their actions say")


def test_unknown_code():
    """A code this smddp-diag does not know (a newer report): its text on the
    label and the taint, the report's action when it is one of ours, else
    SMDDP-UNCLASSIFIED."""
    for failed, code, action in (([("x", "r", "SMDDP-NEW-THING", "replace")], "SMDDP-NEW-THING", "replace"),
                                 ([("x", "r", "SMDDP-NEW-THING", "melt")], "SMDDP-UNCLASSIFIED", "escalate"),
                                 ([("x", "r", "not a code", "reboot")], "SMDDP-UNCLASSIFIED", "escalate")):
        fake, r, _, _ = run_label(1, [node("n1")], failed)
        expect_exit(r, 0)
        labels, taints = fake.nodes["n1"]["metadata"]["labels"], fake.nodes["n1"]["spec"]["taints"]
        if (labels[P + "preflight-code"], labels[P + "preflight-action"]) != (code, action) or \
                taints != [taint(TAINT_OF_ACTION[action], code)]:
            fail(f"{failed}: labels {labels} taints {taints}")


def test_diag_fails():
    """smddp-diag missing, failing or printing something else: one line, exit
    70 (64: none on PATH), and the node untouched."""
    d = tempfile.mkdtemp()
    liar = os.path.join(d, "liar")
    with open(liar, "w") as f:
        f.write("#!/bin/sh\necho '{\"codes\": 1}'\n")
    os.chmod(liar, 0o755)
    for diag, code, needle in (("/nonexistent/smddp-diag", 70, "codes --json"), ("/bin/false", 70, "exit 1"),
                               (liar, 70, "not the JSON of smddp-diag codes")):
        fake, r, _, _ = run_label(1, [node("n1")], [("gpu_ecc", "2")], extra=("--diag", diag))
        expect_exit(r, code, needle)
        if fake.requests:
            fail(f"--diag {diag}: {len(fake.requests)} requests, want none")
    fake = Fake([node("n1")])
    try:
        env = {"PATH": "/nonexistent", "SMDDP_TEST_NO_DIAG": "1"}
        r, _, _ = script(fake, d, "label", "--node", "n1", "--report", report(d, True), "--exit-code", "0", env=env)
    finally:
        fake.close()
    expect_exit(r, 64, "no smddp-diag on PATH")


def main():
    global ARGS
    p = argparse.ArgumentParser()
    p.add_argument("--root", required=True)
    p.add_argument("--diag", required=True, help="smddp-diag: its codes --json")
    p.add_argument("test")
    ARGS = p.parse_args()
    fn = globals().get("test_" + ARGS.test)
    if not fn:
        fail(f"unknown test {ARGS.test}")
    fn()
    print(f"{ARGS.test}: ok")


if __name__ == "__main__":
    main()
