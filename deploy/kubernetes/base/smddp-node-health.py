#!/usr/bin/env python3
"""Records a node's smddp-diag preflight result on its Kubernetes Node object.

  smddp-node-health.py run   [OPTIONS] [--expire] -- PREFLIGHT_COMMAND...
  smddp-node-health.py label [OPTIONS] [--expire] --exit-code N
  smddp-node-health.py expire [OPTIONS]

run     runs the preflight command (e.g. smddp-diag preflight -p p5.48xlarge
        --json FILE), then labels --node with its result.
label   labels --node from a preflight that already ran (its exit code and
        --report).
expire  removes the result labels of every node whose validity has passed.

On --node (default $NODE_NAME), as GCP's cluster-health-scanner does:
  labels  smddp.io/preflight-result          pass | fail | error
          smddp.io/preflight-valid-till-sec  now + --ttl (Unix seconds)
          smddp.io/preflight-profile         the report's profile
          smddp.io/preflight-failed-checks   failed check names, joined by '.'
          smddp.io/preflight-code            on fail: the primary failure's code
          smddp.io/preflight-action          on fail: its action class
  annotation smddp.io/preflight-reason       the failed checks' reasons
  taint   KEY=CODE:NoSchedule on fail, KEY by the action: `smddp-diag codes
          --json` maps each action to its taint (docs/diag.md, "Failure
          codes": reboot smddp.io/pending-reboot, replace
          smddp.io/pending-replacement, none no taint, the others
          smddp.io/preflight). The latest result decides: a fail leaves the
          one taint of its action, a pass removes all of them.
The primary failure is the failed check whose action goes furthest (the
order of the tool's actions); a check without a code (an older report, or
no readable report) is SMDDP-UNCLASSIFIED. The table comes from --diag
(default: the smddp-diag that `run` runs, else the one on PATH), so the
script keeps no copy of it.
Preflight exit 0 is pass, 1 is fail; any other code (lost peer or transport
failure 3, bad profile 64, missing device 69, runtime error 70, a signal) means the check itself could not run:
"error", and the taints are left as they were, as the Slurm prolog never drains
for those. Expired labels are removed; a taint stays until a pass clears it.

The API server, token and CA are the pod's in-cluster ones
(KUBERNETES_SERVICE_HOST/PORT, /var/run/secrets/kubernetes.io/serviceaccount);
--api-server, --token-file and --ca-file override them (tests). Requests:
GET and PATCH (merge patch) on nodes, and LIST with a label selector for
expire: the RBAC of deploy/kubernetes/base/node-preflight.yaml.

Exit: 0 the node was labelled (whatever its health); 64 bad usage, an
unreadable token/CA or no smddp-diag; 70 the API server refused (401, 403,
...), timed out or could not be reached, or `smddp-diag codes --json`
failed (nothing is patched then). Python 3 standard library and smddp's smddp_safeio
(installed with smddp under lib/smddp/python; the image has it).
"""
import argparse
import json
import os
import re
import shutil
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request

PROG = "smddp-node-health"
_HERE = os.path.dirname(os.path.realpath(__file__))
# The ConfigMap holds this file alone: smddp_safeio comes from the image's
# install (/usr/local), $SMDDP_PYTHON_DIR, or the source tree (tests).
sys.path[:0] = [d for d in (os.environ.get("SMDDP_PYTHON_DIR"), _HERE, "/usr/local/lib/smddp/python",
                            os.path.join(_HERE, "..", "..", "..", "common", "python")) if d]
try:
    from smddp_safeio import (MAX_SECONDS, UsageError, decimal_arg, integer_arg, load_json, parse_json,  # noqa: E402
                              read_text, run_main)
except ImportError:
    print(f"{PROG}: smddp_safeio.py not found (install smddp with scripts/build.sh --install, or set "
          "SMDDP_PYTHON_DIR)", file=sys.stderr)
    sys.exit(70)

PREFIX = "smddp.io/"
RESULT = PREFIX + "preflight-result"
VALID_TILL = PREFIX + "preflight-valid-till-sec"
PROFILE = PREFIX + "preflight-profile"
FAILED = PREFIX + "preflight-failed-checks"
REASON = PREFIX + "preflight-reason"
CODE = PREFIX + "preflight-code"
ACTION = PREFIX + "preflight-action"
UNCLASSIFIED = "SMDDP-UNCLASSIFIED"  # a failure without a code (docs/diag.md, "Failure codes")
LABELS = (RESULT, VALID_TILL, PROFILE, FAILED, CODE, ACTION)
SA_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"
CONFLICT_ATTEMPTS = 3  # 409: another writer changed the node between GET and PATCH
MAX_TTL = 10 * 365 * 86400  # valid-till stays a 10-digit label value
MAX_SECRET_BYTES = 1 << 20  # a token or CA bundle is a few KiB
MAX_ANSWER_BYTES = 64 << 20  # a node list of a large cluster
DIAG_SECONDS = 60  # smddp-diag codes prints a table: seconds at most


class Parser(argparse.ArgumentParser):
    def error(self, message):  # one line and exit 64, not argparse's usage block and 2
        raise UsageError(message)


class ApiError(Exception):
    pass


class Conflict(ApiError):
    pass


class Codes:
    """`smddp-diag codes --json`: each code's action and each action's taint,
    the actions ordered by how far they go. The tool is the one place for
    them; this reads, never keeps, the table."""

    def __init__(self, doc, what):
        def bad(why):
            return ApiError(f"{what}: {why}")
        if not isinstance(doc, dict) or not isinstance(doc.get("actions"), list) or \
                not isinstance(doc.get("codes"), list):
            raise bad("not the JSON of smddp-diag codes (no actions and codes)")
        self.order, self.taint = [], {}
        for a in doc["actions"]:
            if not isinstance(a, dict) or not isinstance(a.get("action"), str) or \
                    not (a.get("taint") is None or isinstance(a.get("taint"), str) and a["taint"]):
                raise bad(f"an action that is not {{action, taint}}: {a!r:.200}")
            self.order.append(a["action"])
            self.taint[a["action"]] = a["taint"]
        self.action_of = {}
        for c in doc["codes"]:
            if not isinstance(c, dict) or not isinstance(c.get("code"), str) or c.get("action") not in self.taint:
                raise bad(f"a code that is not {{code, action}} of a listed action: {c!r:.200}")
            self.action_of[c["code"]] = c["action"]
        if UNCLASSIFIED not in self.action_of:
            raise bad(f"no {UNCLASSIFIED}")
        self.keys = sorted({k for k in self.taint.values() if k})  # every taint of ours

    @classmethod
    def load(cls, diag):
        what = f"{diag} codes --json"
        try:
            r = subprocess.run([diag, "codes", "--json"], capture_output=True, text=True, timeout=DIAG_SECONDS)
        except subprocess.TimeoutExpired:
            raise ApiError(f"{what}: no answer within {DIAG_SECONDS} s") from None
        except OSError as e:
            raise ApiError(f"{what}: {e.strerror or e}") from None
        if r.returncode != 0:
            line = (r.stderr.strip().splitlines() or [""])[-1][:300]
            raise ApiError(f"{what}: exit {r.returncode}" + (f": {line}" if line else ""))
        try:
            doc = parse_json(r.stdout, what)
        except UsageError as e:
            raise ApiError(str(e)) from None
        return cls(doc, what)

    def resolve(self, code, action):
        """(code, action) of a failed check: a code of the table takes the
        table's action (the deployed tool's word); a code it does not know (a
        newer report) keeps the report's action when that is one of ours;
        anything else is SMDDP-UNCLASSIFIED."""
        code = label_value(code) if isinstance(code, str) else ""
        if code in self.action_of:
            return code, self.action_of[code]
        if code.startswith("SMDDP-") and action in self.taint:
            return code, action
        return UNCLASSIFIED, self.action_of[UNCLASSIFIED]

    def primary(self, failed):
        """The (code, action) whose action goes furthest among failed checks'
        (code, action) pairs, the first of equals; SMDDP-UNCLASSIFIED for none."""
        best = None
        for code, action in failed or [(None, None)]:
            c = self.resolve(code, action)
            if best is None or self.order.index(c[1]) > self.order.index(best[1]):
                best = c
        return best

    def taint_for(self, code, action):
        key = self.taint[action]
        return {"key": key, "value": code, "effect": "NoSchedule"} if key else None


def label_value(text):
    """A valid label value: [A-Za-z0-9._-], at most 63, alphanumeric at both ends."""
    value = re.sub(r"[^A-Za-z0-9._-]", "_", text)[:63]
    return re.sub(r"^[^A-Za-z0-9]+|[^A-Za-z0-9]+$", "", value)


class Api:
    def __init__(self, args):
        if args.api_server:
            self.base = args.api_server.rstrip("/")
        else:
            host = os.environ.get("KUBERNETES_SERVICE_HOST")
            port = os.environ.get("KUBERNETES_SERVICE_PORT", "443")
            if not host:
                raise UsageError("not in a cluster: KUBERNETES_SERVICE_HOST is not set (or pass --api-server URL)")
            self.base = f"https://[{host}]:{port}" if ":" in host else f"https://{host}:{port}"
        if not re.match(r"^https?://[^/]+$", self.base):
            raise UsageError(f"--api-server '{self.base}': expected http(s)://HOST[:PORT]")
        self.token = read_text(args.token_file, "service-account token", MAX_SECRET_BYTES).strip()
        if not self.token or not self.token.isprintable():
            raise UsageError(f"service-account token {args.token_file}: empty or not one line of text")
        self.context = None
        if self.base.startswith("https://"):
            ca = read_text(args.ca_file, "CA", MAX_SECRET_BYTES)
            try:
                self.context = ssl.create_default_context(cadata=ca)
            except (ssl.SSLError, ValueError) as e:
                raise UsageError(f"CA {args.ca_file}: no usable PEM certificate ({e})") from None
        self.timeout = args.timeout

    def request(self, method, path, body=None, query=None):
        url = self.base + path + ("?" + urllib.parse.urlencode(query) if query else "")
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(url, data=data, method=method)
        req.add_header("Authorization", "Bearer " + self.token)
        req.add_header("Accept", "application/json")
        if data is not None:
            req.add_header("Content-Type", "application/merge-patch+json")
        what = f"{method} {path}"
        try:
            with urllib.request.urlopen(req, timeout=self.timeout, context=self.context) as resp:
                answer = resp.read(MAX_ANSWER_BYTES + 1)
            if len(answer) > MAX_ANSWER_BYTES:
                raise ApiError(f"{what}: an answer larger than {MAX_ANSWER_BYTES >> 20} MiB")
            doc = parse_json(answer.decode("utf-8", "replace") or "{}", f"{what}: the answer")
            if not isinstance(doc, dict):
                raise ApiError(f"{what}: the answer is not a JSON object")
            return doc
        except UsageError as e:
            raise ApiError(str(e)) from None
        except urllib.error.HTTPError as e:
            message = e.reason
            try:
                body = parse_json(e.read(1 << 16).decode("utf-8", "replace"), "status")
                if isinstance(body, dict) and isinstance(body.get("message"), str):
                    message = body["message"]
            except (UsageError, OSError):
                pass
            hint = {401: " (the service-account token was rejected)",
                    403: " (the service account's RBAC does not allow this)"}.get(e.code, "")
            err = Conflict if e.code == 409 else ApiError
            raise err(f"{what}: HTTP {e.code}{hint}: {message}") from None
        except TimeoutError:
            raise ApiError(f"{what}: no answer from {self.base} within {self.timeout:g} s") from None
        except urllib.error.URLError as e:
            if isinstance(e.reason, TimeoutError):
                raise ApiError(f"{what}: no answer from {self.base} within {self.timeout:g} s") from None
            raise ApiError(f"{what}: cannot reach {self.base}: {e.reason}") from None
        except (OSError, ValueError) as e:
            raise ApiError(f"{what}: {e}") from None


def _items(obj, key):
    """obj[key] when obj is an object and that is a list of objects, else []."""
    value = obj.get(key) if isinstance(obj, dict) else None
    return [x for x in value if isinstance(x, dict)] if isinstance(value, list) else []


def read_report(path):
    """(profile, [(check, reason, code, action)] of failed checks) from a
    smddp-diag JSON report, or (None, None) when there is none usable (a
    FIFO, a directory, not JSON, ...): the exit code alone then says pass or
    fail. code and action are the report's (None where it has none)."""
    try:
        report = load_json(path, "preflight report")
    except UsageError:
        return None, None
    if not isinstance(report, dict):
        return None, None
    def text(c, key):
        return c.get(key) if isinstance(c.get(key), str) else None
    failed = [(c["name"], text(c, "reason") or "", text(c, "code"), text(c, "action"))
              for node in _items(report, "nodes") for c in _items(node, "checks")
              if c.get("status") == "fail" and isinstance(c.get("name"), str)]
    profile = report.get("profile")
    return (profile if isinstance(profile, str) else None), failed


def outcome(exit_code, report_path, codes=None):
    """result, labels, reason and the taint (None: no taint) for a preflight
    that ended with exit_code. codes (a Codes) names the failure's code,
    action and taint; without it (a reader that only checks labels) the
    labels carry no code."""
    profile, failed = read_report(report_path)
    code = action = taint = None
    if exit_code == 0:
        result, reason = "pass", None
    elif exit_code == 1:
        result = "fail"
        reason = "; ".join(f"{n}: {r}" for n, r, _, _ in failed) if failed else \
            f"unhealthy (no readable report {report_path})"
        if codes:
            code, action = codes.primary([(c, a) for _, _, c, a in failed or []])
            taint = codes.taint_for(code, action)
    else:
        result, reason = "error", f"preflight could not run (exit {exit_code}); the node's health is unknown"
    labels = {RESULT: result, PROFILE: label_value(profile) if profile else None,
              FAILED: label_value(".".join(f[0] for f in failed)) if result == "fail" and failed else None,
              CODE: code, ACTION: action}
    return result, {k: v or None for k, v in labels.items()}, reason[:4096] if reason else None, taint


def label_node(api, node, exit_code, report, ttl, diag):
    # The table before any request: a tool that fails patches nothing.
    # "error" changes no taint and names no code: it needs none.
    codes = Codes.load(diag()) if exit_code in (0, 1) else None
    result, labels, reason, taint = outcome(exit_code, report, codes)
    path = "/api/v1/nodes/" + urllib.parse.quote(node, safe="")
    for attempt in range(CONFLICT_ATTEMPTS):
        current = api.request("GET", path)
        now = int(time.time())
        meta = {"labels": dict(labels, **{VALID_TILL: str(now + ttl)}), "annotations": {REASON: reason}}
        body = {"metadata": meta}
        taints = (current.get("spec") or {}).get("taints") or []
        taints = [t for t in taints if isinstance(t, dict)] if isinstance(taints, list) else []
        # The latest result decides: of our taints a fail keeps only its
        # action's (with its code), a pass none; others' taints stay.
        # A merge patch replaces the whole taint list, so it carries the
        # resourceVersion it was computed from: the server refuses (409) if
        # another writer changed the node meanwhile, and we start again.
        if codes:
            wanted = [t for t in taints if t.get("key") not in codes.keys] + ([taint] if taint else [])
            if wanted != taints:
                body["spec"] = {"taints": wanted}
        if "spec" in body:
            meta["resourceVersion"] = (current.get("metadata") or {}).get("resourceVersion")
        try:
            api.request("PATCH", path, body)
        except Conflict:
            if attempt + 1 == CONFLICT_ATTEMPTS:
                raise
            continue
        change = ""
        if "spec" in body:
            change = f", tainted {taint['key']}={taint['value']}:NoSchedule" if taint else ", untainted"
        code = f" {labels[CODE]} ({labels[ACTION]})" if labels.get(CODE) else ""
        print(f"{PROG}: {node}: {result}{code}" + (f" ({reason})" if reason else "") +
              f", valid till {now + ttl}{change}")
        return


def expire(api):
    """Removes the result labels of nodes whose valid-till has passed (the taint stays)."""
    nodes = _items(api.request("GET", "/api/v1/nodes", query={"labelSelector": VALID_TILL}), "items")
    now = int(time.time())
    for item in nodes:
        meta = item.get("metadata") if isinstance(item.get("metadata"), dict) else {}
        labels = meta.get("labels") if isinstance(meta.get("labels"), dict) else {}
        till = labels.get(VALID_TILL, "")
        till = till if isinstance(till, str) else ""
        if not isinstance(meta.get("name"), str):
            continue
        if till.isdigit() and len(till) <= 12 and int(till) > now:
            continue
        body = {"metadata": {"resourceVersion": meta.get("resourceVersion"),
                             "labels": {k: None for k in LABELS}, "annotations": {REASON: None}}}
        try:
            # The resourceVersion: a node relabelled since the list keeps its fresh result.
            api.request("PATCH", "/api/v1/nodes/" + urllib.parse.quote(meta["name"], safe=""), body)
            print(f"{PROG}: {meta.get('name')}: preflight result expired (valid till {till or '?'}), labels removed")
        except Conflict:
            pass


def parse(argv):
    p = Parser(prog=PROG, description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="command", required=True)
    common = Parser(add_help=False)
    common.add_argument("--api-server", help="API server URL (default https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT)")
    common.add_argument("--token-file", default=f"{SA_DIR}/token")
    common.add_argument("--ca-file", default=f"{SA_DIR}/ca.crt")
    common.add_argument("--timeout", type=decimal_arg("--timeout", 0, 3600, "seconds"), default=10.0,
                        help="seconds per API request (default 10)")
    node = Parser(add_help=False)
    node.add_argument("--node", default=os.environ.get("NODE_NAME"), help="node to label (default $NODE_NAME)")
    node.add_argument("--report", default="/var/lib/smddp/preflight.json", help="smddp-diag preflight --json report")
    node.add_argument("--ttl", type=integer_arg("--ttl", 1, MAX_TTL), default=86400,
                      help="seconds the result stays valid (default 86400)")
    node.add_argument("--expire", action="store_true", help="then remove expired results of every node")
    node.add_argument("--diag", help="the smddp-diag whose `codes --json` maps actions to taints (default: the one "
                      "`run` runs, else smddp-diag on PATH)")
    run = sub.add_parser("run", parents=[common, node], help="run the preflight, then label the node")
    run.add_argument("--preflight-timeout", type=decimal_arg("--preflight-timeout", 0, MAX_SECONDS, "seconds"),
                     default=3600.0)
    run.add_argument("preflight", nargs=argparse.REMAINDER, help="-- PREFLIGHT_COMMAND...")
    lab = sub.add_parser("label", parents=[common, node], help="label the node from a finished preflight")
    lab.add_argument("--exit-code", type=integer_arg("--exit-code", 0, 255), required=True,
                     help="the preflight's exit code")
    sub.add_parser("expire", parents=[common], help="remove expired results")
    args = p.parse_args(argv)
    if args.command == "run":
        args.preflight = args.preflight[1:] if args.preflight[:1] == ["--"] else args.preflight
        if not args.preflight:
            raise UsageError("run: no preflight command after --")
    if args.command != "expire":
        if not args.node:
            raise UsageError(f"{args.command}: no node: pass --node or set NODE_NAME")
        if len(args.node) > 253 or not re.fullmatch(r"[a-z0-9]([a-z0-9.-]*[a-z0-9])?", args.node):
            raise UsageError(f"--node {args.node[:300]!r}: not a Kubernetes node name")
    for flag, value in (("--timeout", args.timeout), ("--preflight-timeout", getattr(args, "preflight_timeout", 1))):
        if value <= 0:
            raise UsageError(f"{flag} {value:g}: must be positive")
    return args


def diag_path(args):
    """--diag, else the smddp-diag that `run` runs (the writer of the report),
    else the one on PATH; a usage error when there is none."""
    if args.diag:
        return args.diag
    first = (getattr(args, "preflight", None) or [""])[0]
    if os.path.basename(first) == "smddp-diag" and (os.sep in first or shutil.which(first)):
        return first if os.sep in first else shutil.which(first)
    found = shutil.which("smddp-diag")
    if not found:
        raise UsageError("no smddp-diag on PATH: pass --diag PATH (its `codes --json` maps actions to taints)")
    return found


def main(argv):
    args = parse(argv)
    api = Api(args)
    try:
        if args.command == "run":
            try:
                code = subprocess.run(args.preflight, timeout=args.preflight_timeout).returncode
            except FileNotFoundError:
                code = 127
            except OSError:  # not executable, as a shell says it
                code = 126
            except subprocess.TimeoutExpired:
                code = 124
            label_node(api, args.node, code, args.report, args.ttl, lambda: diag_path(args))
        elif args.command == "label":
            label_node(api, args.node, args.exit_code, args.report, args.ttl, lambda: diag_path(args))
        if args.command == "expire" or args.expire:
            expire(api)
    except ApiError as e:
        print(f"{PROG}: {e}", file=sys.stderr)
        return 70
    return 0


if __name__ == "__main__":
    sys.exit(run_main(PROG, main))
