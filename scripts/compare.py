#!/usr/bin/python3
"""Put two matrix results side by side (e.g. before/after a change).

Usage: compare.py RESULTS_A RESULTS_B

Each argument is a results directory from matrix.py (or its run/ folder).
Prints, per test and mode present in both, IOPS in A and B, B/A, and the
per-I/O exits, kicks and guest interrupts of each.
"""
import json
import os
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import report as R  # noqa: E402


def load(d):
    # A matrix directory's own summary.json merges run/ and run2/ (a retried hang).
    for p in (os.path.join(d, "summary.json"), os.path.join(d, "run", "summary.json")):
        if os.path.isfile(p):
            with open(p) as f:
                return json.load(f)
    sys.exit(f"compare: no summary.json in {d} or {d}/run (is it a matrix results directory?)")


def main():
    if len(sys.argv) != 3 or sys.argv[1] in ("-h", "--help"):
        print(__doc__)
        return 0 if len(sys.argv) == 2 else 2
    a, b = load(sys.argv[1]), load(sys.argv[2])
    ca, cb = R.cells(a), R.cells(b)
    keys = sorted(set(ca) & set(cb))
    if not keys:
        sys.exit("compare: the two runs have no (test, mode) cell in common")
    hdr = ["test", "mode", "IOPS A", "IOPS B", "B/A", "exits/IO A>B", "kicks/IO A>B", "irqs/IO A>B"]
    rows = []
    for t, m in keys:
        x, y = ca[(t, m)], cb[(t, m)]

        def f(st, k):
            v = R.value(st, k)
            return "-" if v is None or not st["ok"] else f"{v:.2f}"
        ia = x.get("iops") if x["ok"] else None
        ib = y.get("iops") if y["ok"] else None
        ratio = f"{ib / ia:.2f}x" if ia and ib else "-"
        rows.append([t, m, f"{ia:,.0f}" if ia else "FAILED", f"{ib:,.0f}" if ib else "FAILED", ratio,
                     f"{f(x, 'exits')}>{f(y, 'exits')}", f"{f(x, 'kicks')}>{f(y, 'kicks')}",
                     f"{f(x, 'guest_irqs')}>{f(y, 'guest_irqs')}"])
    w = [max(len(str(r[i])) for r in [hdr] + rows) for i in range(len(hdr))]
    for r in [hdr, ["-" * x for x in w]] + rows:
        print("  ".join(str(v).ljust(w[i]) if i < 2 else str(v).rjust(w[i]) for i, v in enumerate(r)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
