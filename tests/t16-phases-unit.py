#!/usr/bin/python3
# Description: the QD1 phase trace (scripts/harness/phases.py,
# scripts/phases.py) cuts a function trace into each I/O's phases: a
# kicked cycle gives guest, wake, lio, cwork and signal, which add up to
# the cycle; a cycle the host found by polling (no kick) counts as
# unkicked with no guest/wake phase; a cycle missing a function is not
# measured; comm names with spaces and dashes, and traces without the
# flags column, parse; the table pairs each repeat with the first mode's.
# No VM.
import json
import os
import sys

sys.dont_write_bytecode = True
TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.join(TOP, "scripts"))
from harness import phases as PH  # noqa: E402
import phases as DRV  # noqa: E402

n = 0
fails = 0


def check(ok, what):
    global n, fails
    n += 1
    print(f"{'ok' if ok else 'not ok'} {n} - {what}")
    fails += not ok


def line(comm, cpu, us, fn, flags=True):
    return f"  {comm} [{cpu:03d}] {'d..1. ' if flags else ''} {us / 1e6:.6f}: {fn} <-caller\n"


def cycle(t0, kick=True, flags=True):
    """One I/O from the interrupt at t0: 300 us guest, 100 wake, 200 lio,
    50 cwork, 20 signal (the next interrupt at t0 + 670)."""
    out = [line("vhost-12-13", 1, t0, "irqfd_wakeup", flags)]
    if kick:
        out.append(line("CPU 0/KVM-55", 0, t0 + 300, "vhost_poll_wakeup", flags))
    out += [line("vhost-12-13", 1, t0 + 400, "vhost_scsi_handle_kick", flags),
            line("kworker/1:1-7", 1, t0 + 600, "target_complete_cmd", flags),
            line("vhost-12-13", 1, t0 + 650, "vhost_scsi_complete_cmd_work", flags)]
    return out


trace = ["# tracer: function\n"]
for i in range(10):
    trace += cycle(100000 + 670 * i, kick=i % 5 != 4, flags=i % 2 == 0)
trace.append(line("vhost-12-13", 1, 100000 + 6700, "irqfd_wakeup"))
s = PH.summarize(trace)
check(s["cycles"] == 10 and s["unkicked"] == 2 and s["incomplete"] == 0,
      f"10 cycles, 2 unkicked: {s['cycles']}, {s['unkicked']}, incomplete {s['incomplete']}")
check((s["guest"]["p50"], s["wake"]["p50"], s["lio"]["p50"], s["cwork"]["p50"], s["signal"]["p50"])
      == (300, 100, 200, 50, 20), f"phases 300/100/200/50/20: {[s[k]['p50'] for k in PH.PHASES]}")
check(s["cycle"]["p50"] == 670 and s["guest"]["n"] == 8 and s["lio"]["n"] == 10,
      f"cycle 670 us, guest phase only where kicked: {s['cycle']['p50']}, n {s['guest']['n']}")
# A cycle without LIO's completion (a lost event) is not measured.
bad = cycle(0) + [line("vhost-12-13", 1, 670, "irqfd_wakeup")]
bad = [x for x in bad if "target_complete_cmd" not in x] + cycle(670)[1:] + [line("v-1", 1, 1340, "irqfd_wakeup")]
s = PH.summarize(bad)
check(s["incomplete"] == 1 and s["cycles"] == 1, f"a cycle without LIO's completion is not measured: {s}")
check(PH.summarize(["garbage\n", "\n"])["cycles"] == 0 and PH.summarize([])["guest"]["p50"] is None,
      "no cycles from a trace without events")
for fn in PH.FUNCS:
    check(fn in PH.start_cmd(), f"start_cmd traces {fn}")
check(PH.__file__ in PH.stop_cmd() or os.path.basename(PH.__file__) in PH.stop_cmd(),
      "stop_cmd runs the analyser on the trace")

# The table: repeat r of each mode against the first mode's repeat r.
def ph(p50):
    return {"cycles": 100, "unkicked": 0, **{k: {"p50": p50, "n": 100} for k in PH.PHASES}}


steps = []
for mode, iops in (("baseline", (600, 700)), ("sqcq-host", (660, 630))):
    for r in range(2):
        steps += [{"guest": f"{mode}-{r}", "step": "randread-qd1", "ok": True, "iops": iops[r]},
                  {"guest": f"{mode}-{r}", "step": "trace-stop", "ok": True,
                   "output": "tracing\n" + json.dumps(ph(100 + r))}]
t = DRV.table({"steps": steps}, ["baseline", "sqcq-host"])
print(t)
check("| sqcq-host | 645 | 1.10, 0.90 |" in t, "sqcq-host's repeats paired with baseline's: 1.10, 0.90")
t = DRV.table({"steps": steps[:4]}, ["baseline", "sqcq-host"])
check("| sqcq-host | failed" in t, "a mode without results says so")
steps[-1] = dict(steps[-1], output="trace buffer overrun: events lost\nTraceback ...")
t = DRV.table({"steps": steps}, ["baseline", "sqcq-host"])
check("| sqcq-host | 660 | 1.10, 0.90 |" in t, "a repeat whose analysis printed no summary is left out, not fatal")
print(f"1..{n}")
sys.exit(1 if fails else 0)
