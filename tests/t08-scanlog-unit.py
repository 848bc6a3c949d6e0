#!/usr/bin/python3
# Description: the kernel-log scanner (tests/lib/scanlog.py) on recorded
# logs: the upstream vhost-scsi lockdep report (recorded on the debug
# kernel) is recognised as known; the same report about another lock, a
# BUG, a KASAN report and a trace after a known report all fail; a clean
# log gives nothing.  A report whose register dump has EFLAGS bits set that
# no x86 CPU sets (a nested guest's double fault on the debug host VM) is
# the emulator's; the same dump with real EFLAGS fails, and so does a real
# report before an impossible one.
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
known = open(os.path.join(HERE, "fixtures", "lockdep-vhost-scsi-configfs.txt")).read()
df = open(os.path.join(HERE, "fixtures", "guest-console-double-fault.log")).read()
warn = ("[ 9.0] WARNING: CPU: 1 PID: 7 at drivers/scsi/virtio_sqcq.c:10 x+0x1\n[ 9.0] RIP: 0010:x+0x1\n"
        "[ 9.0] RSP: 0018:ffa0000000483700 EFLAGS: 00010246\n[ 9.0] ---[ end trace 0000000000000000 ]---\n")
cases = [
    ("known upstream lockdep report", known, ["KNOWN"]),
    ("same report about another lock", known.replace("tv_tpg_mutex", "sqcq_mutex"), ["UNKNOWN"]),
    ("same report from project code", known.replace("configfs_depend_item+", "vhost_sqcq_start+"), ["UNKNOWN"]),
    ("BUG", "[ 1.0] BUG: kernel NULL pointer dereference, address: 0000000000000008\n", ["UNKNOWN"]),
    ("KASAN", "[ 1.0] ==================\n[ 1.0] BUG: KASAN: slab-use-after-free in sqcq_poll+0x1\n", ["UNKNOWN"]),
    ("a report after a known one", known + "[ 9.0] WARNING: CPU: 1 PID: 7 at drivers/vhost/sqcq_host.c:10\n",
     ["KNOWN", "UNKNOWN"]),
    ("RCU stall with its stack dump: one report", "[ 42.0] rcu: INFO: rcu_preempt detected stalls on CPUs/tasks:\n"
     "[ 42.1] rcu: RCU grace-period kthread stack dump:\n[ 42.2] task:rcu_preempt state:I\n"
     "[ 42.3] Call Trace:\n[ 42.3]  <TASK>\n[ 42.4]  __schedule+0x1\n[ 42.4]  </TASK>\n", ["UNKNOWN"]),
    ("double fault in an impossible CPU state", df, ["EMULATOR"]),
    ("the same double fault with real EFLAGS", df.replace("EFLAGS: 3fc246a6", "EFLAGS: 00010246"), ["UNKNOWN"]),
    ("a real report before an impossible one", warn + df, ["UNKNOWN", "EMULATOR"]),
    ("clean log", "[ 1.0] virtio-fs: ok\n[ 2.0] sd 0:0:0:0: [sda] Attached SCSI disk\n", []),
]
fails = 0
print(f"1..{len(cases)}")
for i, (name, text, want) in enumerate(cases, 1):
    with tempfile.NamedTemporaryFile("w", suffix="-dmesg.txt", delete=False) as f:
        f.write(text)
    out = subprocess.run([sys.executable, os.path.join(HERE, "lib", "scanlog.py"), f.name],
                         stdout=subprocess.PIPE, text=True, check=True).stdout.split("\n")
    os.unlink(f.name)
    got = [x.split()[0] for x in out if x]
    ok = got == want
    fails += not ok
    print(f"{'ok' if ok else 'not ok'} {i} - {name}" + ("" if ok else f" # got {got}, want {want}"))
sys.exit(1 if fails else 0)
