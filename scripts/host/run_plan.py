#!/usr/bin/python3
"""Run a plan (JSON) on the host role: modules, LIO, nested guests, fio.

Usage: run_plan.py [--role vm|local] PLAN.json OUTDIR

Runs inside the host VM (booted by scripts/vm/host-vm.sh) or, on a real
KVM host, directly (scripts/run-plan.sh picks).  Writes OUTDIR/summary.json
and per-guest fio JSON and logs; exits non-zero if any step failed.
"""
import argparse
import json
import os
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from harness.hostrole import run_plan  # noqa: E402
from harness.realhost import local_role_error  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--role", choices=["vm", "local"], default="local")
    ap.add_argument("plan")
    ap.add_argument("out")
    a = ap.parse_args()
    with open(a.plan) as f:
        plan = json.load(f)
    if a.role == "local":
        err = local_role_error(plan)
        if err:
            # (a summary too, for the caller's report)
            os.makedirs(a.out, exist_ok=True)
            with open(os.path.join(a.out, "summary.json"), "w") as f:
                json.dump({"role": a.role, "plan": plan.get("name", ""), "steps": [], "partial": False,
                           "host": {"error": f"the local host role cannot run here: {err}"}}, f, indent=1)
            sys.exit(f"run_plan: the local host role cannot run here: {err}")
    sys.exit(run_plan(plan, a.out, a.role))


if __name__ == "__main__":
    main()
