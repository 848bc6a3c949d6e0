#!/usr/bin/python3
"""Check a run's summary.json and print what it measured.

Usage: summary.py OUTDIR [--expect 'MODE:STEP:FIELD<op>VALUE' ...]

Fails (exit 1) with one line naming the step if any step failed, if a
host-level error was recorded, or if an --expect does not hold.  FIELD is a
key of the step's per_io figures (exits, kicks, guest_irqs, ...), 'iops',
or SECTION.KEY (e.g. poller.vq_work); FIELD/ios divides it by the step's
I/O count (a share that does not depend on how fast the machine ran).
"""
import json
import operator
import os
import re
import sys

OPS = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge}


def main():
    out = sys.argv[1]
    expects = []
    args = sys.argv[2:]
    while args:
        if args[0] != "--expect" or len(args) < 2:
            sys.exit(f"usage: {__doc__.splitlines()[2]}")
        expects.append(args[1])
        args = args[2:]
    try:
        with open(f"{out}/summary.json") as f:
            s = json.load(f)
    except (OSError, ValueError) as e:
        print(f"FAIL: no summary from the run ({e}); see {out}/run_plan.log and {out}/l1-console.log")
        return 1
    rc = 0
    if s.get("partial"):
        print(f"FAIL: the run stopped before the end (partial summary); see {out}/l1-console.log")
        rc = 1
    if "error" in s["host"]:
        print(f"FAIL: host: {s['host']['error']} (see {out}/host-commands.log)")
        rc = 1
    for st in s["steps"]:
        line = f"{st['guest']:<12} {st['step']:<28} {'ok' if st['ok'] else 'FAILED'}"
        if "iops" in st:
            line += f"  iops={st['iops']:.0f} ios={st['ios']}"
        for k, v in st.get("per_io", {}).items():
            if not isinstance(v, dict):
                line += f" {k}/IO={v:.3f}"
        pl = st.get("poller", {})
        if pl.get("pollers"):
            line += (f"  poller: work={pl.get('vq_work', 0)} kicks={pl.get('vq_kicks', 0)} "
                     f"inline={pl.get('vq_inline_kicks', 0)} sleeps={pl.get('sleeps', 0)} "
                     f"wakeups={pl.get('wakeups', 0)} cpu={pl.get('cpu_pct', 0)}%")
        gp = st.get("guest_poller", {})
        if gp.get("pollers"):
            line += (f"  cq: reaped={gp.get('vq_reaped', 0)} irqs={gp.get('vq_irqs', 0)} "
                     f"inline={gp.get('vq_irqs_inline', 0)} sleeps={gp.get('sleeps', 0)} "
                     f"wakeups={gp.get('wakeups', 0)} cpu={gp.get('cpu_pct', 0)}%")
        print(line)
        if st.get("warning"):
            print(f"note: {st['guest']}/{st['step']}: {st['warning']}")
            # ... and on the test's TAP line (tests/run.sh; it drops duplicates)
            if os.environ.get("SQCQ_TEST_OUT"):
                with open(os.path.join(os.environ["SQCQ_TEST_OUT"], "warnings"), "a") as f:
                    f.write(f"{st['guest']}/{st['step']}: {st['warning']}\n")
        if not st["ok"]:
            print(f"FAIL: {st['guest']}/{st['step']}: {st.get('error', '?')}")
            rc = 1
    for e in expects:
        m = re.fullmatch(r"([\w-]+):([\w-]+):([\w.]+(?:/ios)?)(<=|>=|<|>)([\d.]+)", e)
        if not m:
            print(f"FAIL: bad --expect '{e}'")
            return 1
        g, step, field, op, val = m.groups()
        st = next((x for x in s["steps"] if x["guest"] == g and x["step"] == step), None)
        if st is None:
            print(f"FAIL: expectation {e}: no step {g}/{step} in the summary")
            rc = 1
            continue
        name, per_io = (field[:-len("/ios")], True) if field.endswith("/ios") else (field, False)
        if "." in name:
            sect, key = name.split(".", 1)
            v = st.get(sect, {}).get(key)
        else:
            v = st.get(name, st.get("per_io", {}).get(name))
        if per_io and v is not None:
            v = v / st["ios"] if st.get("ios") else None
        if v is None:
            print(f"FAIL: expectation {e}: {g}/{step} has no '{field}'")
            rc = 1
        elif not OPS[op](v, float(val)):
            print(f"FAIL: expectation {e} does not hold: {field} = {v:.4f}")
            rc = 1
        else:
            print(f"holds: {e} ({field} = {v:.4f})")
    return rc


if __name__ == "__main__":
    sys.exit(main())
