#!/usr/bin/env python3
# Description: fallback to upstream behaviour.  With sqcq_poll=off, with the
# stock guest virtio_scsi (which does not know the bit), and with the stock
# host vhost_scsi (QEMU then masks the bit), I/O passes fio verify=crc32c
# and no host poller runs; with all three agreeing a poller does run.
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


def guest(name, guest_module, props, pollers):
    g = P.guest(name, "sqcq-poll", modes,
                [{"name": "pollers", "type": "pollers", "count": pollers}] + verify,
                guest_module=guest_module)
    g["device_props"] = props
    return g


runs = {
    "project-host": ("project", [guest("all-agree", "project", "sqcq_poll=on", 1),
                                 guest("property-off", "project", "", 0),
                                 guest("stock-guest", "stock", "sqcq_poll=on", 0)]),
    "stock-host": ("stock", [guest("stock-host", "project", "sqcq_poll=on", 0)]),
}
rc = 0
for name, (host_module, guests) in runs.items():
    plan = P.new_plan(name, paths, "fileio", size_mb=256, host_module=host_module)
    plan["guests"] = guests
    d = os.path.join(out, name)
    os.makedirs(d, exist_ok=True)
    P.write(plan, os.path.join(d, "plan.json"))
    subprocess.run([os.path.join(TOP, "scripts", "run-plan.sh"), "--timeout", "700",
                    os.path.join(d, "plan.json"), os.path.join(d, "run")])
    r = subprocess.run([sys.executable, os.path.join(TOP, "tests", "lib", "summary.py"),
                        os.path.join(d, "run")])
    rc |= r.returncode
sys.exit(1 if rc else 0)
