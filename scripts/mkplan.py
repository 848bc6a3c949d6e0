#!/usr/bin/python3
"""Write a plan for scripts/run-plan.sh: one nested guest per mode.

Usage: mkplan.py -o PLAN.json --modes baseline,poll-queue --steps verify,qd1 \
                 [--backstore fileio|rd_mcp|null_blk] [--runtime S]
                 [--host-module project|stock] [--guest-module project|stock]

Steps: verify     fio write with crc32c checksums, re-read and verify, then
                  corrupt a block and require verify to catch it
       qd1        4 KiB randread QD1, measured (IOPS, exits/IO, interrupts/IO)
       rw:RW:QD   measured cell, e.g. rw:randwrite:32
       idle:PCT   guest idle 2 s, then host pollers must use <= PCT% CPU for 2 s
       pollers:N  exactly N host pollers must be running
       host-param:NAME=VALUE  set a parameter of the project's vhost_scsi
                  for the rest of the plan, later guests included (e.g.
                  host-param:sqcq_spin_max_us=0: the host never spins)
       write      only the first verify step: write with checksums, verify
       unbind-rebind  unbind virtio_scsi with fio running, bind it again
       suspend    suspend/resume (pm_test=devices) with fio verify running
       rmmod-busy, cpu-offline, kill-qemu, lun-relink, guest-reset
                  faults with I/O in flight (scripts/harness/plan.py fault_steps)
       two-guests a second guest on its own target and disk; both write and
                  verify at once, each with its own poller
       reverify   re-read and verify what verify wrote
       cq-per-queue  one SCHED_IDLE guest CQ poller per request queue, each
                  allowed on exactly its queue's CPUs (plan.py cq_per_queue_step)
       cq-local   fio pinned to each vCPU: only that CPU's queue poller reaps
       cq-hog     fio beside a CPU hog on CPU 0: completions come by interrupt
       cq-param   virtio_sqcq.sqcq_spin_max_us changed while the pollers run
                  takes effect: at 0 they reap nothing, at 1000000 a quarter
       builtin    on the guest kernel (SQCQ_GUEST_KERNEL, the series built in):
                  no module loaded, the command line's parameters in effect,
                  bit 50 negotiated as the mode says (plan.py builtin_step)
       workers    worker_per_virtqueue placement under I/O on every queue:
                  pinned polling workers found on their CPUs, in QEMU's
                  cgroups, asleep at 0% CPU 2 s after (plan.py worker_steps)
Builds what is missing (modules, QEMU, initramfs) first.
"""
import argparse
import os
import re
import shlex
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import plan as P  # noqa: E402


# The project's vhost_scsi parameters a host-param step may set.
HOST_PARAMS = ("sqcq_enable", "sqcq_spin_max_us", "sqcq_steer")
# Exit status: the plan needs what a guest with the series built in
# (SQCQ_GUEST_KERNEL) does not have.
EXIT_BUILTIN = 3


def steps_for(names, mode, modes, runtime):
    out = []
    for s in names:
        if s == "verify":
            out += P.verify_steps(mode, modes)
        elif s == "write":
            out.append(P.verify_steps(mode, modes)[0])
        elif s == "unbind-rebind":
            out.append(P.unbind_rebind_step())
        elif s == "suspend":
            out.append(P.suspend_step())
        elif s in ("rmmod-busy", "cpu-offline", "kill-qemu", "lun-relink", "guest-reset"):
            if s == "kill-qemu" and s != names[-1]:
                sys.exit("mkplan: kill-qemu ends the guest: it must be the last step (use --then)")
            out += P.fault_steps(s)
        elif s == "builtin":
            out.append(P.builtin_step(mode, modes))
        elif s == "cq-per-queue":
            out.append(P.cq_per_queue_step(modes["guest"]["num_queues"]))
        elif s == "cq-local":
            out.append(P.cq_local_step(modes["guest"]["smp"]))
        elif s == "cq-hog":
            out.append(P.cq_hog_step())
        elif s == "cq-param":
            out.append(P.cq_param_step())
        elif s == "workers":
            out += P.worker_steps(modes["guest"]["num_queues"])
        elif s == "two-guests":
            out.append({"name": "two-guests", "type": "second-guest", "timeout": 600,
                        "write_mb": P.verify_mb() // 2})
        elif s == "reverify":
            out.append(dict(P.verify_steps(mode, modes)[1], name=f"reverify-{len(out)}"))
        elif s.startswith("idle:"):
            out.append({"name": f"idle-{len(out)}", "type": "idle", "settle": 2, "seconds": 2,
                        "max_cpu_pct": float(s.split(":")[1])})
        elif s.startswith("host-param:"):
            name, _, val = s[len("host-param:"):].partition("=")
            if name not in HOST_PARAMS or not re.fullmatch(r"[0-9A-Za-z]+", val):
                sys.exit(f"mkplan: step '{s}': host-param:NAME=VALUE, NAME one of {', '.join(HOST_PARAMS)}, "
                         "VALUE letters and digits")
            f = shlex.quote(f"/sys/module/vhost_scsi/parameters/{name}")
            out.append({"name": f"host-param-{len(out)}", "type": "host", "expect_rc": 0, "timeout": 30,
                        "cmd": f"echo {shlex.quote(val)} > {f} && echo \"vhost_scsi.{name}=$(cat {f})\""})
        elif s.startswith("pollers:"):
            out.append({"name": f"pollers-{len(out)}", "type": "pollers", "count": int(s.split(":")[1])})
        elif s == "qd1" or s.startswith("rw:"):
            rw, qd = ("randread", 1) if s == "qd1" else (s.split(":")[1], int(s.split(":")[2]))
            out.append({"name": f"{rw}-qd{qd}-{len(out)}", "type": "fio", "measure": True,
                        "timeout": runtime + 120,
                        "args": P.fio_args(mode, modes, rw, iodepth=qd, runtime=runtime)})
        else:
            sys.exit(f"mkplan: unknown step '{s}' (verify, qd1, rw:RW:QD)")
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-o", "--output", required=True)
    ap.add_argument("--modes", default="baseline", help="modes to boot a guest for, or 'none'")
    ap.add_argument("--steps", default="verify")
    ap.add_argument("--backstore", default="fileio", choices=["fileio", "rd_mcp", "null_blk"])
    ap.add_argument("--runtime", type=int, default=10)
    ap.add_argument("--host-module", default="project", choices=["project", "stock"])
    ap.add_argument("--guest-module", default="project", choices=["project", "stock"])
    ap.add_argument("--host-params", default="", help="vhost_scsi module parameters")
    ap.add_argument("--guest-params", default="", help="the guest's virtio_sqcq module parameters")
    ap.add_argument("--check-guest-bad-params", action="store_true",
                    help="first check in the guest that invalid virtio_sqcq parameters are refused")
    ap.add_argument("--sqcq-poll", choices=["on", "off"], help="override the mode's QEMU property")
    ap.add_argument("--then", help="steps of a second guest of each mode, booted after the first "
                    "(same disk), e.g. reverify after kill-qemu")
    ap.add_argument("--host-check", action="append", default=[],
                    help="host command run once LIO is up, before the guests; must exit 0 (repeatable)")
    ap.add_argument("--host-pre", action="append", default=[],
                    help="host command run before vhost_scsi and LIO are set up; must exit 0 "
                    "(repeatable; timeout 1800 s)")
    ap.add_argument("--check-bad-params", action="store_true",
                    help="first check that invalid vhost_scsi parameters are refused")
    a = ap.parse_args()
    modes = P.load_modes()
    err = P.params_error(a.host_params, a.guest_params)
    if err:
        sys.exit(f"mkplan: {err}")
    names = a.steps.split(",")
    if a.host_module == "stock" and any(x.startswith("host-param:") for x in names + (a.then or "").split(",")):
        sys.exit("mkplan: host-param steps set the project's vhost_scsi parameters; --host-module stock has none")
    if "verify" in names and a.backstore == "null_blk":
        sys.exit("mkplan: null_blk keeps no data; verify needs fileio or rd_mcp")
    plan = P.new_plan(os.path.basename(a.output), P.build_paths(), a.backstore,
                      host_module=a.host_module)
    plan["host"]["vhost_scsi_params"] = a.host_params
    if a.check_bad_params:
        plan["host"]["pre"] = P.bad_param_checks(plan["host"]["vhost_scsi_ko"])
    plan["host"]["pre"] = plan["host"].get("pre", []) + [
        {"name": f"host-pre-{i + 1}", "cmd": c, "timeout": 1800} for i, c in enumerate(a.host_pre)]
    plan["host"]["checks"] = [{"name": f"host-check-{i + 1}", "cmd": c, "timeout": 600}
                              for i, c in enumerate(a.host_check)]
    try:
        add_guests(a, plan, modes, names)
    except P.BuiltinGuest as e:
        # (tests/lib/vm.sh: a test the built-in guest cannot run is skipped)
        print(f"mkplan: {e}", file=sys.stderr)
        sys.exit(EXIT_BUILTIN)
    except ValueError as e:
        sys.exit(f"mkplan: {e}")
    P.write(plan, a.output)


def add_guests(a, plan, modes, names):
    for mode in a.modes.split(",") if a.modes != "none" else []:
        if mode not in modes["modes"]:
            sys.exit(f"mkplan: unknown mode '{mode}' (known: {', '.join(modes['modes'])})")
        if modes["modes"][mode].get("peer"):
            sys.exit(f"mkplan: mode '{mode}' is a peer (QEMU's own {modes['modes'][mode]['peer']}): "
                     "the matrix measures it (scripts/matrix.py); the tests' steps need vhost-scsi")
        g = P.guest(mode, mode, modes, steps_for(names, mode, modes, a.runtime),
                    guest_module=a.guest_module, guest_params=a.guest_params)
        if a.check_guest_bad_params:
            g["steps"].insert(0, P.guest_bad_param_check())
        if a.sqcq_poll:
            g["device_props"] = "sqcq_poll=on" if a.sqcq_poll == "on" else ""
        plan["guests"].append(g)
        if a.then:
            g2 = P.guest(f"{mode}-after", mode, modes, steps_for(a.then.split(","), mode, modes, a.runtime),
                         guest_module=a.guest_module, guest_params=a.guest_params)
            g2["device_props"] = g["device_props"]
            plan["guests"].append(g2)


if __name__ == "__main__":
    main()
