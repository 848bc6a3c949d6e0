#!/usr/bin/python3
# Description: the fallback matrix.  Every combination of {project guest
# virtio_scsi, stock guest virtio_scsi} x {QEMU sqcq_poll on, off} x
# {project host vhost_scsi, stock host vhost_scsi} does verified I/O (fio
# verify=crc32c), and the pollers (host SQ, guest CQ) run only where all
# three agree.
# timeout: 1500
# vm: yes
import os
import subprocess
import sys

sys.dont_write_bytecode = True
TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.join(TOP, "scripts"))
from harness import plan as P  # noqa: E402

out = os.environ["SQCQ_TEST_OUT"]
modes = P.load_modes()
paths = P.build_paths()
verify = P.verify_steps("sqcq-poll", modes, size="64M")[:2]


def guest(guest_module, prop, host_module):
    agree = guest_module == "project" and prop == "on" and host_module == "project"
    n = 1 if agree else 0
    # (a host poller per device; a guest poller per request queue)
    g = P.guest(f"{guest_module}-guest-{prop}", "sqcq-poll", modes,
                [{"name": "host-pollers", "type": "pollers", "count": n},
                 {"name": "guest-pollers", "type": "guest_pollers", "count": n * modes["guest"]["num_queues"]}] + verify,
                guest_module=guest_module)
    g["device_props"] = "sqcq_poll=on" if prop == "on" else ""
    return g


rc = 0
# A host VM on the kernel of 'make kernel' (SQCQ_L1_KERNEL) has only the
# project's vhost_scsi: the stock host half needs Debian's kernel.
hosts = ("project",) if os.environ.get("SQCQ_L1_KERNEL") else ("project", "stock")
if len(hosts) == 1:
    print("# SQCQ_L1_KERNEL set: the stock-host half runs on Debian's kernel only", flush=True)
if os.environ.get("SQCQ_GUEST_KERNEL"):
    print("# SQCQ_GUEST_KERNEL set: the stock-guest half runs on Debian's kernel only", flush=True)
for host_module in hosts:
    plan = P.new_plan(f"{host_module}-host", paths, "fileio", size_mb=256, host_module=host_module)
    # A guest on the kernel of 'make kernel' (SQCQ_GUEST_KERNEL) has only
    # the project's virtio_scsi.
    gmods = ("project",) if os.environ.get("SQCQ_GUEST_KERNEL") else ("project", "stock")
    plan["guests"] = [guest(gm, prop, host_module) for gm in gmods for prop in ("on", "off")]
    d = os.path.join(out, f"{host_module}-host")
    os.makedirs(d, exist_ok=True)
    P.write(plan, os.path.join(d, "plan.json"))
    print(f"# host vhost_scsi: {host_module}", flush=True)
    # An emulator hang or death runs once more, loudly (tests/lib/run-plan-retry.sh).
    subprocess.run([os.path.join(TOP, "tests", "lib", "run-plan-retry.sh"), os.path.join(d, "plan.json"),
                    os.path.join(d, "run"), os.path.join(out, "warnings")], env=dict(os.environ, PLAN_TIMEOUT=os.environ.get("PLAN_TIMEOUT", "900")))
    r = subprocess.run([sys.executable, os.path.join(TOP, "tests", "lib", "summary.py"),
                        os.path.join(d, "run")])
    rc |= r.returncode
sys.exit(1 if rc else 0)
