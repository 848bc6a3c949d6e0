#!/usr/bin/python3
"""Where a QD1 I/O's time goes on the host, mode against mode.

Usage: phases.py [--modes baseline,sqcq-host] [--repeats N] [--runtime S]
                 [--host-params P] [--out DIR]

Boots a nested guest per mode and repeat (the order alternates from
repeat to repeat), pinned as matrix.py --pin pins them (fio on vCPU 0,
the vhost worker on the host's last CPU), and runs a 4 KiB
randread at QD1 after a 5 s warm-up, with the host tracing five
functions (scripts/harness/phases.py).  Prints, per mode, the median over
repeats of each phase's p50 in us (guest: interrupt to next kick; wake:
kick to the worker's kick work; lio: to LIO's completion; cwork: to
vhost-scsi's completion work; signal: to the interrupt), IOPS, and each
repeat's IOPS against the first mode's in the same repeat.  The trace
slows the host: compare modes within a run, not with the matrix.
"""
import argparse
import copy
import json
import os
import statistics
import subprocess
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import phases as PH  # noqa: E402
from harness import plan as P  # noqa: E402

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# fio on the guest's vCPU 0, as matrix.py --pin runs a one-job test: the
# host's last CPU then has the vhost worker and an idle vCPU.
PIN_FIO = ("--cpus_allowed=0",)


def make_plan(modes, mode_list, repeats, runtime, host_params):
    plan = P.new_plan("phases", P.build_paths())
    plan["host"]["vhost_scsi_params"] = host_params
    for r in range(repeats):
        for mode in (mode_list if r % 2 == 0 else mode_list[::-1]):
            fio = {"name": "randread-qd1", "type": "fio", "measure": True, "timeout": 60 + 6 * runtime,
                   "args": P.fio_args(mode, modes, "randread", runtime=runtime, extra=PIN_FIO)}
            warm = dict(copy.deepcopy(fio), name="warmup", measure=False,
                        args=P.fio_args(mode, modes, "randread", runtime=5, extra=PIN_FIO))
            steps = [P.pin_step(), warm,
                     {"name": "trace-start", "type": "host", "expect_rc": 0, "timeout": 60,
                      "cmd": PH.start_cmd()},
                     fio,
                     {"name": "trace-stop", "type": "host", "expect_rc": 0, "timeout": 300,
                      "cmd": PH.stop_cmd()}]
            plan["guests"].append(P.guest(f"{mode}-{r}", mode, modes, steps))
    return plan


def table(summary, mode_list):
    rows = {}       # (mode, repeat) -> {"iops":, "phases":}
    for s in summary["steps"]:
        g = s.get("guest", "")
        mode, _, r = g.rpartition("-")
        if mode not in mode_list:
            continue
        cell = rows.setdefault((mode, int(r)), {})
        if s.get("step") == "randread-qd1" and s.get("ok"):
            cell["iops"] = s.get("iops")
        elif s.get("step") == "trace-stop" and s.get("ok"):
            try:
                cell["phases"] = json.loads((s.get("output") or "").strip().splitlines()[-1])
            except (ValueError, IndexError):
                pass    # (no summary: the mode's row says it failed)
    out = ["| mode | IOPS | vs first | " + " | ".join(f"{k} p50 us" for k in PH.PHASES) + " | unkicked |",
           "|---|---:|---|" + "---:|" * (len(PH.PHASES) + 1)]
    for mode in mode_list:
        cells = [c for (m, _), c in sorted(rows.items()) if m == mode and "phases" in c and c.get("iops")]
        if not cells:
            out.append(f"| {mode} | failed: see the run's summary.json |")
            continue
        ratios = [c["iops"] / rows[(mode_list[0], r)]["iops"] for (m, r), c in sorted(rows.items())
                  if m == mode and c.get("iops") and rows.get((mode_list[0], r), {}).get("iops")]
        med = [round(statistics.median(c["phases"][k]["p50"] for c in cells)) for k in PH.PHASES]
        unk = sum(c["phases"]["unkicked"] for c in cells) / max(1, sum(c["phases"]["cycles"] for c in cells))
        out.append(f"| {mode} | {statistics.median(c['iops'] for c in cells):,.0f} | "
                   + ", ".join(f"{x:.2f}" for x in ratios) + " | "
                   + " | ".join(str(x) for x in med) + f" | {unk:.0%} |")
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--modes", default="baseline,sqcq-host")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--runtime", type=int, default=10)
    ap.add_argument("--host-params", default="")
    ap.add_argument("--out")
    a = ap.parse_args()
    modes = P.load_modes()
    mode_list = a.modes.split(",")
    for m in mode_list:
        if m not in modes["modes"] or modes["modes"][m].get("peer"):
            sys.exit(f"phases: '{m}' is not a vhost-scsi mode (known: "
                     f"{', '.join(k for k, v in modes['modes'].items() if not v.get('peer'))})")
    if not 1 <= a.repeats <= 20 or not 1 <= a.runtime <= 600:
        sys.exit("phases: --repeats 1..20, --runtime 1..600 s")
    err = P.params_error(a.host_params, "")
    if err:
        sys.exit(f"phases: {err}")
    out = a.out or os.path.join(TOP, "results", "phases-" + subprocess.run(
        ["date", "+%Y%m%d-%H%M%S"], stdout=subprocess.PIPE, text=True).stdout.strip())
    os.makedirs(out, exist_ok=True)
    P.write(make_plan(modes, mode_list, a.repeats, a.runtime, a.host_params), os.path.join(out, "plan.json"))
    rc = subprocess.run([os.path.join(TOP, "scripts", "run-plan.sh"), os.path.join(out, "plan.json"),
                         os.path.join(out, "run")]).returncode
    try:
        with open(os.path.join(out, "run", "summary.json")) as f:
            summary = json.load(f)
    except (OSError, ValueError) as e:
        sys.exit(f"phases: no summary from the run ({e}); run-plan exited {rc}, see {out}/run")
    text = table(summary, mode_list)
    with open(os.path.join(out, "phases.md"), "w") as f:
        f.write(text + "\n")
    print(text)
    print(f"results: {out}")
    sys.exit(0 if rc == 0 else 1)


if __name__ == "__main__":
    main()
