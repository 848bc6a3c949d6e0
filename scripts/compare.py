#!/usr/bin/python3
"""Put two matrix results side by side (e.g. before/after a change).

Usage: compare.py RESULTS_A RESULTS_B

Each argument is a results directory from matrix.py (or its run/ folder).
Prints, per test and mode present in both: IOPS in A and B as the median
over rounds with its min and max, B/A of the medians, each run's paired
ratio to its own baseline (median and spread), and the medians of the
per-I/O exits, kicks, guest interrupts and host vhost thread wakeups
(workers and, before issue 18, the poll thread) of each.
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


def med(s, field):
    v = s["fig"][field] if s and s["status"] == "ok" else None
    return "-" if v is None else f"{v[0]:.2f}"


def main():
    if len(sys.argv) != 3 or sys.argv[1] in ("-h", "--help"):
        print(__doc__)
        return 0 if len(sys.argv) == 2 else 2
    a, b = load(sys.argv[1]), load(sys.argv[2])
    ca, cb = R.cell_stats(a), R.cell_stats(b)
    keys = sorted(k for k in set(ca) & set(cb) if k[1] != R.HOST)
    if not keys:
        sys.exit("compare: the two runs have no (test, mode) cell in common")
    hdr = ["test", "mode", "IOPS A [min-max] n", "IOPS B [min-max] n", "B/A", "vs base A", "vs base B",
           "exits/IO A>B", "kicks/IO A>B", "irqs/IO A>B", "vhost wakeups/IO A>B"]
    rows = []
    for t, m in keys:
        x, y = ca[(t, m)], cb[(t, m)]

        def iops(s):
            if s["status"] != "ok":
                return "FAILED"
            i = s["iops"]
            return f"{i[0]:,.0f} [{i[1]:,.0f}-{i[2]:,.0f}] {s['rounds']}"

        def ratio(s):
            r = s.get("ratio") if s["status"] == "ok" else None
            return "-" if not r or m == R.REF else f"{r[0]:.2f}x [{r[1]:.2f}-{r[2]:.2f}]"
        both = x["status"] == y["status"] == "ok" and x["iops"][0] > 0
        rows.append([t, m, iops(x), iops(y), f"{y['iops'][0] / x['iops'][0]:.2f}x" if both else "-",
                     ratio(x), ratio(y), f"{med(x, 'exits')}>{med(y, 'exits')}",
                     f"{med(x, 'kicks')}>{med(y, 'kicks')}", f"{med(x, 'guest_irqs')}>{med(y, 'guest_irqs')}",
                     f"{med(x, 'host_wakeups')}>{med(y, 'host_wakeups')}"])
    w = [max(len(str(r[i])) for r in [hdr] + rows) for i in range(len(hdr))]
    for r in [hdr, ["-" * x for x in w]] + rows:
        print("  ".join(str(v).ljust(w[i]) if i < 2 else str(v).rjust(w[i]) for i, v in enumerate(r)))
    print("\nIOPS: median over rounds [min-max] and rounds; B/A: ratio of the medians; vs base: "
          "median of the ratios to the baseline of the same round [min-max], within each run "
          "(a run from before interleaved rounds pairs its k-th repeats instead)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
