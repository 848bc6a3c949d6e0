#!/usr/bin/python3
# Description: host and guest commands write scratch files under the
# role's scratch directory ($TMPDIR), never under a literal /tmp path: in
# a host VM booted from a checkout under /tmp, /tmp is the read-only
# shared root (scripts/vm/l1-init.sh), and the LUN-relink step's
# '/tmp/relink.log' failed there (issue 16).  Scans every step mkplan.py
# can put in a plan (host steps, host checks, guest commands) and every
# string literal of the host role's code that builds commands; and checks
# that hostrole.run_plan gives the plan a scratch directory of its own
# inside the role's temporary directory, as $TMPDIR, and removes it.
# No VM.  (The VM side: t43 runs from a copy of the tree under /tmp.)
import ast
import os
import re
import sys
import tempfile

sys.dont_write_bytecode = True
TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.join(TOP, "scripts"))
from harness import plan as P  # noqa: E402
from harness import hostrole  # noqa: E402
import mkplan  # noqa: E402

# A path that starts at /tmp: '/tmp/x', '/tmp' alone, not '$TMPDIR/tmp'
# or '/run/tmp'.
LITERAL_TMP = re.compile(r"(?<![\w$}/.-])/tmp(?=/|\b)")
failed = 0


def check(what, ok, detail=""):
    global failed
    print(f"{'ok' if ok else 'not ok'} - {what}{'' if ok else ': ' + detail}")
    failed += not ok


def commands(node, where):
    """Every 'cmd' in a plan fragment, with where it sits."""
    if isinstance(node, dict):
        for k, v in node.items():
            if k == "cmd" and isinstance(v, str):
                yield where + f"/{node.get('name', '?')}", node.get("type", "host"), v
            else:
                yield from commands(v, where + (f"/{node['name']}" if "name" in node and k == "steps" else ""))
    elif isinstance(node, list):
        for v in node:
            yield from commands(v, where)


modes = P.load_modes()
steps = ["verify", "write", "reverify", "unbind-rebind", "suspend", "rmmod-busy", "cpu-offline",
         "lun-relink", "guest-reset", "two-guests", "idle:1", "pollers:1", "qd1", "rw:randwrite:32",
         "kill-qemu"]
plan = {"host": {"pre": P.bad_param_checks("/x/vhost_scsi.ko")}, "guests": []}
for mode in modes["modes"]:
    plan["guests"].append(P.guest(mode, mode, modes, mkplan.steps_for(steps, mode, modes, 10)))
    plan["guests"][-1]["steps"].insert(0, P.guest_bad_param_check())
found = list(commands(plan, "plan"))
check("the plan has host steps, host checks and guest commands to scan",
      {t for _, t, _ in found} >= {"host", "sh"} and len(found) > 50, f"{len(found)} commands")
bad = [(w, t, m.group(0), c[max(0, m.start() - 40):m.end() + 20])
       for w, t, c in found for m in LITERAL_TMP.finditer(c)]
check("no plan command names a literal /tmp path", not bad,
      "; ".join(f"{w} ({t}): ...{ctx}..." for w, t, _, ctx in bad[:4]))
relink = [c for w, t, c in found if w.endswith("lun-unlink-relink")]
check("the LUN relink writes its log under $TMPDIR", relink and "$TMPDIR/relink.log" in relink[0],
      (relink or ["no lun-unlink-relink step"])[0][:200])

# The host role's own command strings (guest commands the harness sends
# at run time: fio's JSON, the two-guests step's logs), docstrings and
# comments aside.
for rel in ("scripts/harness/hostrole.py", "scripts/harness/guest.py", "scripts/harness/counters.py",
            "scripts/harness/plan.py"):
    tree = ast.parse(open(os.path.join(TOP, rel)).read())
    docs = {id(n.body[0].value) for n in ast.walk(tree)
            if isinstance(n, (ast.Module, ast.FunctionDef, ast.ClassDef)) and n.body
            and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)}
    hits = [f"line {n.lineno}: {n.value[:80]!r}" for n in ast.walk(tree)
            if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docs
            and LITERAL_TMP.search(n.value)]
    check(f"{rel}: no string literal names a /tmp path", not hits, "; ".join(hits[:4]))

# run_plan: $TMPDIR is a fresh directory inside the role's temporary
# directory while the plan runs, removed afterwards, the old value back.
seen = {}


def fake_run_plan(plan, out, role):
    d = os.environ.get("TMPDIR", "")
    seen.update(dir=d, exists=os.path.isdir(d), gettempdir=tempfile.gettempdir())
    open(os.path.join(d, "relink.log"), "w").write("x")
    return 7


with tempfile.TemporaryDirectory() as role_tmp:
    saved = os.environ.get("TMPDIR")
    os.environ["TMPDIR"] = role_tmp
    tempfile.tempdir = None
    real = getattr(hostrole, "_run_plan", None)
    hostrole._run_plan = fake_run_plan
    try:
        rc = hostrole.run_plan({}, role_tmp, "local") if real else None
    finally:
        hostrole._run_plan = real
        after = os.environ.get("TMPDIR")
        os.environ.pop("TMPDIR") if saved is None else os.environ.update(TMPDIR=saved)
        tempfile.tempdir = None
    d = seen.get("dir", "")
    check("run_plan returns the plan's result", rc == 7, str(rc))
    check("run_plan's $TMPDIR is a new directory inside the role's", seen.get("exists") and
          os.path.dirname(d) == role_tmp and d != role_tmp, f"TMPDIR={d!r} (role's: {role_tmp})")
    check("tempfile.gettempdir() follows it (the fileio image, targetcli's HOME)",
          seen.get("gettempdir") == d, f"{seen.get('gettempdir')!r}")
    check("the scratch directory is removed and $TMPDIR restored afterwards",
          not os.path.exists(d) and after == role_tmp, f"exists={os.path.exists(d)}, TMPDIR={after!r}")

print("FAIL: see 'not ok' above" if failed else "all scratch-path checks passed")
sys.exit(1 if failed else 0)
