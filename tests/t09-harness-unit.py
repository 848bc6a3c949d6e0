#!/usr/bin/python3
# Description: the harness's verdict on a nested guest that did not boot
# (scripts/harness/hostrole.py boot_env_failure): an int3 oops before the
# init answered, any crash before it after which the guest reset and
# booted, or a stall before it (silent, or a hung-task report) with
# none of QEMU's own threads in vhost, is the emulator's (booted once
# more); a stall with a QEMU thread inside vhost or an SQ poller among the
# busiest threads, any report after the init's first line, or no
# post-mortem is not.  Kernel tasks in
# QEMU's thread group (vhost workers, KVM's NX huge page recovery thread)
# sleep in vhost_task_fn and do not count.  A guest that reset itself
# mid-command (Guest.rebooted, on a recorded QEMU reset log: the Debian
# host VM's t21, 14:28) is the emulator's, run once more, only when a vCPU
# was in its INIT state and the console has no kernel report (a silent
# triple fault), or when the console's first report shows a CPU state no
# x86 CPU can be in (the debug host VM's t21 at 19:37: a double fault with
# reserved EFLAGS bits set; the same dump with real EFLAGS fails), and
# not when KVM saw the shutdown in the kernel's own emergency restart.
# After such a reset in a fault group's step (debug host VM's t43, 17:05:
# the guest died while the LUN was relinked), the whole group runs again,
# not just the step that met the reset; outside a group, only that step.  Also the monitor echo filter, and scripts/reliability.py --resume
# --again: a finished test run again keeps its earlier result, listed in
# the table with its verdict; a test cut off midway is moved aside.  And
# where KVM saw a triple fault, from the kvm_exit trace (Guest.kvm_shutdown);
# a one-vCPU guest's silent triple fault is known from that shutdown exit
# alone; and the two-guests step's second guest follows the first's rules
# (a boot stall before its init is the emulator's) and loses its target on
# every path.  And reliability.py --save, then --resume of that archive on
# a fresh checkout, gives back the same run.  And a silent boot says every
# so often that it is still booting and how much CPU its QEMU used (the
# host VM's watchdog sees this host alive), and times out at its bound.
# And SQCQ_VERIFY_MB's sizes; and matrix --pin's step on a real (TCG) QEMU.
import contextlib
import glob
import io
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time

sys.dont_write_bytecode = True
TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.join(TOP, "scripts"))
from harness.guest import Guest, GuestError, GuestTimeout  # noqa: E402
from harness import plan as P  # noqa: E402
from harness.hostrole import boot_env_failure, rerun_after_emulator_reset  # noqa: E402
import reliability  # noqa: E402

VCPU = ("qemu-system-x86", "[<0>] vcpu_enter_guest.constprop.0+0x19bf/0x2360 [kvm]\n[<0>] kvm_vcpu_ioctl+0x4cf/0xc90 [kvm]")
WORKER = ("vhost-869", "[<0>] vhost_task_fn+0x1f0/0x230\n[<0>] ret_from_fork+0x2f/0x50")
NX = ("kvm-nx-lpage-re", "[<0>] vhost_task_fn+0x1f0/0x230\n[<0>] ret_from_fork+0x2f/0x50")
IN_VHOST = ("qemu-system-x86", "[<0>] vhost_dev_ioctl+0x1a/0x300 [vhost]\n[<0>] vhost_scsi_ioctl+0x90/0x200 [vhost_scsi]")


class FakeGuest:
    def __init__(self, console, threads, busy=()):
        f = tempfile.NamedTemporaryFile("w", suffix="-console.log", delete=False)
        f.write(console)
        f.close()
        self.console = f.name
        self.hang = {"threads": threads, "busy": list(busy), "summary": "post-mortem"} if threads is not None else None


cases = [
    ("silent, QEMU's threads outside vhost (workers and NX recovery asleep)", "", [VCPU, WORKER, NX], True),
    ("silent, a QEMU thread inside vhost", "", [VCPU, IN_VHOST, WORKER], False),
    ("int3 oops before the init answered", "[ 3.1] Oops: int3: 0000 [#1] PREEMPT SMP\n", [VCPU], True),
    ("int3 oops after the init answered", "SQCQ-L2: up after 9.1s\n[ 30.0] Oops: int3: 0000 [#1]\n", [VCPU], False),
    ("a hung-task report while booting (debug host VM's t21, 12:37)",
     "[ 261.1] INFO: task kworker/u8:0:55 blocked for more than 120 seconds.\n", [VCPU, WORKER, NX], True),
    ("a hung-task report after the init answered", "SQCQ-L2: up after 67.2s\n"
     "[ 261.1] INFO: task kworker/u8:0:55 blocked for more than 120 seconds.\n", [VCPU, WORKER, NX], False),
    ("a stall while an SQ poller thread is busy", "[ 261.1] INFO: task kworker/u8:0:55 blocked for more than 120 seconds.\n",
     [VCPU, WORKER, NX], False, ["qemu-system-x86 (422/431) 180", "vhost-sqcq-246 (250/250) 20"]),
    ("a double fault before the init ran, reset and booted (debug host VM's t43, 17:05)",
     "[ 57.0] Oops: double fault: 0000 [#1] PREEMPT SMP NOPTI\nSQCQ-L2: up after 61.2s\n", None, True),
    ("silent, no post-mortem (QEMU gone)", "", None, False),
]
RESETS = os.path.join(TOP, "tests", "fixtures", "qemu-resets-triple-fault.log")
# t44's one-vCPU second guest (2026-12-01 05:53): no reset dump shows it in the kernel.
ONE_VCPU_RESETS = os.path.join(TOP, "tests", "fixtures", "qemu-resets-one-vcpu.log")
DOUBLE_FAULT = open(os.path.join(TOP, "tests", "fixtures", "guest-console-double-fault.log")).read()
tf_cases = [
    ("silent triple fault: run again", "SQCQ-L2: up after 12.18s\nSQCQ-L2: up after 13.84s\n", RESETS, True),
    ("triple fault after a panic: a failure",
     "SQCQ-L2: up after 12.18s\n[ 40.1] Kernel panic - not syncing: hung_task: blocked tasks\nSQCQ-L2: up after 9.1s\n",
     RESETS, False),
    ("reset with no vCPU in INIT state: a failure", "SQCQ-L2: up\nSQCQ-L2: up\n", None, False),
    ("double fault in an impossible CPU state, then a reset (debug host VM's t21, 19:37): run again",
     DOUBLE_FAULT, None, True),
    ("the same double fault with real EFLAGS: a failure", DOUBLE_FAULT.replace("EFLAGS: 3fc246a6", "EFLAGS: 00010246"),
     None, False),
    ("silent triple fault where KVM saw the kernel's own restart (a panic the console missed): a failure",
     "SQCQ-L2: up after 12.18s\nSQCQ-L2: up after 13.84s\n", RESETS, False,
     "vCPU 1 at native_machine_emergency_restart+0xa9 (intr_info 0x80000403, error_code 0x00000000)"),
    ("silent triple fault where KVM saw it elsewhere: run again",
     "SQCQ-L2: up after 12.18s\nSQCQ-L2: up after 13.84s\n", RESETS, True,
     "vCPU 0 at ffffffffc0a41b2e (intr_info 0x80000b08, error_code 0x00000000)"),
    ("one-vCPU guest, no vCPU in the kernel at its resets, KVM saw the shutdown, console silent "
     "(t44's second guest, 2026-12-01 05:53): run again",
     "SQCQ-L2: up after 13.47s\nSQCQ-L2: up after 12.9s\n", ONE_VCPU_RESETS, True,
     "vCPU 0 at iowrite16+0x10 (intr_info 0x800000ec, error_code 0x00000000)"),
    ("the same with a report on the console: a failure",
     "SQCQ-L2: up after 13.47s\n[ 80.2] BUG: kernel NULL pointer dereference, address: 0000000000000008\n",
     ONE_VCPU_RESETS, False, "vCPU 0 at iowrite16+0x10 (intr_info 0x800000ec, error_code 0x00000000)"),
    ("one-vCPU guest reset with no shutdown exit (a reset it asked for): a failure",
     "SQCQ-L2: up after 13.47s\nSQCQ-L2: up after 12.9s\n", ONE_VCPU_RESETS, False),
]
print(f"1..{len(cases) + len(tf_cases) + 13}")
fails = 0
for i, (name, console, threads, env, *busy) in enumerate(cases, 1):
    g = FakeGuest(console, threads, *busy)
    why = boot_env_failure(g)
    os.unlink(g.console)
    ok = bool(why) == env
    fails += not ok
    print(f"{'ok' if ok else 'not ok'} {i} - {name}: {'emulator, boot again' if why else 'a failure'}"
          + ("" if ok else f" (expected {'emulator' if env else 'a failure'}; got {why!r})"))
for j, (name, console, resets, want_tf, *shutdown) in enumerate(tf_cases, len(cases) + 1):
    g = Guest.__new__(Guest)
    g.kernel = "/nonexistent/vmlinuz"
    g.kvm_shutdown = lambda: shutdown[0] if shutdown else None
    with tempfile.NamedTemporaryFile("w", suffix="-console.log", delete=False) as f:
        f.write(console)
    g.console = f.name
    if resets is None:
        # (both vCPUs in the kernel at the reset: a reset the guest asked for)
        text = open(RESETS).read().replace("EIP=0000fff0", "RIP=ffffffff81000000")
        with tempfile.NamedTemporaryFile("w", suffix="-resets.log", delete=False) as f:
            f.write(text)
        resets = f.name
    g.reset_log = resets
    err = g.rebooted("command 'fio'")
    os.unlink(g.console)
    got = getattr(err, "emulator", None)
    ok = (bool(got) == want_tf and "during command 'fio'" in str(err)
          and (not shutdown or f"KVM's shutdown exit: {shutdown[0]}" in str(err)))
    fails += not ok
    print(f"{'ok' if ok else 'not ok'} {j} - {name}" + ("" if ok else f" (emulator={got!r}; {err})"))
echoed = ("QEMU 7.2.22 monitor\n(qemu) i\x1b[K\x1b[Din\x1b[K\x1b[D\x1b[Dinfo status\x1b[K\nVM status: running\n"
          "(qemu) x\x1b[K\x1b[Dx/8xb $pc\x1b[K\nffffffffc0232070: 0x0f 0x30\n")
want = "QEMU 7.2.22 monitor\n(qemu) info status\nVM status: running\n(qemu) x/8xb $pc\nffffffffc0232070: 0x0f 0x30\n"
got = Guest._unecho(echoed)
fails += got != want
print(f"{'ok' if got == want else 'not ok'} {len(cases) + len(tf_cases) + 1} - monitor echo filtered" + ("" if got == want else f": {got!r}"))

# The t43 boot: verify-write ok, then the lun-relink group; the host step
# failed (the poller went away with the guest's reset), the verify met it.
todo = [{"name": "verify-write"}] + P.fault_steps("lun-relink")
res = [{"step": "verify-write", "ok": True}, {"step": "lun-relink-start-io", "ok": True},
       {"step": "lun-unlink-relink", "ok": False, "error": "the poller is gone after the relink"},
       {"step": "lun-back-verify", "ok": False, "error": "the guest reset itself",
        "emulator": "nothing on the guest's console"}]
rerun_after_emulator_reset(res, todo)
left = [s["name"] for s in todo if s["name"] not in {r["step"] for r in res}]
ok = (left == ["lun-relink-start-io", "lun-unlink-relink", "lun-back-verify"] and all(r["ok"] for r in res)
      and "failed (the poller is gone" in res[2].get("warning", "") and "warning" not in res[0])
fails += not ok
print(f"{'ok' if ok else 'not ok'} {len(cases) + len(tf_cases) + 2} - an emulator's reset in a fault group runs the group again"
      + ("" if ok else f": to do again {left}; {res}"))
todo = P.verify_steps("sqcq-poll", P.load_modes())
res = [{"step": todo[0]["name"], "ok": True}, {"step": todo[1]["name"], "ok": False, "error": "reset",
                                                  "emulator": "nothing on the guest's console"}]
rerun_after_emulator_reset(res, todo)
left = [s["name"] for s in todo if s["name"] not in {r["step"] for r in res}]
ok = left == [todo[1]["name"]] + [s["name"] for s in todo[2:]] and res[0]["step"] == todo[0]["name"]
fails += not ok
print(f"{'ok' if ok else 'not ok'} {len(cases) + len(tf_cases) + 3} - outside a group only the step that met the reset runs again"
      + ("" if ok else f": to do again {left}; {res}"))

# --resume RUN --again t21 on a recorded-looking run: t10 kept, t21 (failed)
# moved aside and run again, t41 (no result) moved aside, t42 not yet run.
run = tempfile.mkdtemp(prefix="sqcq-t09-run-")
for name, tap in (("t10-baseline-verify", "ok 1 - t10-baseline-verify (682s)"),
                  ("t21-sqcq-fallback", "not ok 3 - t21-sqcq-fallback (1592s)"), ("t41-faults", None)):
    os.makedirs(os.path.join(run, name))
    if tap:
        with open(os.path.join(run, name, "tap"), "w") as f:
            f.write(tap + "\n")
with open(os.path.join(run, "kernel"), "w") as f:
    f.write("K\n")
with contextlib.redirect_stdout(io.StringIO()):
    todo = reliability.resume_tests(run, ["t10", "t21", "t41", "t42"], "K", ["t21"])
    os.makedirs(os.path.join(run, "t21-sqcq-fallback"))
    with open(os.path.join(run, "t21-sqcq-fallback", "tap"), "w") as f:
        f.write("ok 3 - t21-sqcq-fallback (1100s)\n")
    text, all_ok = reliability.table(run)
left = sorted(os.listdir(run))
shutil.rmtree(run)
want = ["t21-sqcq-fallback", "t41-faults", "t42-load"]
ok = (todo == want and any(x.startswith("t21-sqcq-fallback.earlier-") for x in left)
      and any(x.startswith("t41-faults.interrupted-") for x in left) and "t10-baseline-verify" in left
      and "not ok 3 - t21-sqcq-fallback (1592s)" in text and "| **t21-sqcq-fallback** | ok |" in text)
fails += not ok
print(f"{'ok' if ok else 'not ok'} {len(cases) + len(tf_cases) + 4} - reliability --resume --again keeps the earlier result in view"
      + ("" if ok else f": todo {todo}, dir {left}\n{text}"))

# Where KVM saw a triple fault: from the shutdown exits the host role
# records (other lines are ignored); each call names only the shutdowns
# since the last one.
EXIT = ("qemu-system-x86-{tid}  [001] d..2.  {t}: kvm_exit: vcpu {cpu} reason {why} rip 0x{rip} "
        "info1 0x0000000000000000 info2 0x0000000000000000 intr_info 0x{ii} error_code 0x00000000\n")
trace = [EXIT.format(tid=431, t="66.10", cpu=1, why="hlt", rip="ffffffff81e6a3cf", ii="00000000"),
         EXIT.format(tid=430, t="66.20", cpu=0, why="shutdown", rip="ffffffffc0a41b2e", ii="80000b08")]
g = Guest.__new__(Guest)
g.kernel = "/nonexistent/vmlinuz"
first = g.kvm_shutdown(trace)
again = g.kvm_shutdown(trace)
later = g.kvm_shutdown(trace + [EXIT.format(tid=431, t="99.0", cpu=1, why="shutdown", rip="ffffffff81000010", ii="00000000")])
ok = (first == "vCPU 0 at ffffffffc0a41b2e (intr_info 0x80000b08, error_code 0x00000000)" and again is None
      and later.startswith("vCPU 1 at ffffffff81000010"))
fails += not ok
print(f"{'ok' if ok else 'not ok'} {len(cases) + len(tf_cases) + 5} - KVM's shutdown exit named from the kvm_exit trace, once"
      + ("" if ok else f": {first!r}, {again!r}, {later!r}"))

# SQCQ_SHUTDOWN_TRACE reaches the host role through the plan (on by
# default, off with 0); anything else is refused by name.
got = []
d = tempfile.mkdtemp(prefix="sqcq-t09-plan-")
for val in (None, "0", "yes"):
    os.environ.pop("SQCQ_SHUTDOWN_TRACE", None)
    if val is not None:
        os.environ["SQCQ_SHUTDOWN_TRACE"] = val
    try:
        P.write({"host": {}, "guests": []}, os.path.join(d, "plan.json"))
        with open(os.path.join(d, "plan.json")) as f:
            got.append(json.load(f)["host"].get("shutdown_trace"))
    except SystemExit as e:
        got.append(str(e))
os.environ.pop("SQCQ_SHUTDOWN_TRACE", None)
# and SQCQ_TIMEOUT_SCALE reaches each targetcli command of the LIO setup
os.environ["SQCQ_TIMEOUT_SCALE"] = "3"
P.write({"host": {}, "lio": {"backstore": "fileio"}, "guests": [{}]}, os.path.join(d, "plan.json"))
with open(os.path.join(d, "plan.json")) as f:
    scaled = json.load(f)
got += [scaled["lio"].get("timeout"), scaled["guests"][0].get("boot_timeout")]
# SQCQ_BOOT_SCALE: the boot limit once more (the debug kernel's 2: 1,080 s)
for val in ("2", "0.5"):
    os.environ["SQCQ_BOOT_SCALE"] = val
    try:
        P.write({"host": {}, "guests": [{}]}, os.path.join(d, "plan.json"))
        with open(os.path.join(d, "plan.json")) as f:
            got.append(json.load(f)["guests"][0].get("boot_timeout"))
    except SystemExit as e:
        got.append(str(e))
del os.environ["SQCQ_TIMEOUT_SCALE"], os.environ["SQCQ_BOOT_SCALE"]
shutil.rmtree(d)
ok = (got[:2] == [True, False] and "SQCQ_SHUTDOWN_TRACE='yes' is invalid" in str(got[2])
      and got[3:5] == [360, 540] and got[5] == 1080 and "SQCQ_BOOT_SCALE='0.5' is invalid" in str(got[6]))
fails += not ok
print(f"{'ok' if ok else 'not ok'} {len(cases) + len(tf_cases) + 6} - SQCQ_SHUTDOWN_TRACE switches the shutdown "
      "recording through the plan, a bad value is refused; SQCQ_TIMEOUT_SCALE scales the targetcli timeout, "
      "SQCQ_BOOT_SCALE the boot limit again"
      + ("" if ok else f": {got}"))
# The two-guests step's second guest (hostrole.run_second_guest): a boot
# that stopped before its init ran carries the emulator's verdict out of
# the step (so the step runs again) and its QEMU is killed; the second
# target is removed on that path and when its creation failed (a rerun met
# "already exists: disk1", 2026-12-01 06:01), and left in place, named,
# when the second QEMU cannot be stopped.
from harness import hostrole as H  # noqa: E402


class SecondGuest(FakeGuest):
    stuck = False

    def __init__(self, *a, **kw):
        super().__init__("[ 4.6] BUG: kernel NULL pointer dereference, address: 0000000000000000\n",
                         [VCPU, WORKER, NX])

    def start(self):
        raise H.GuestError("guest did not answer within 180s (boot)")

    def kill(self):
        calls.append("kill")
        if self.stuck:
            raise H.GuestError("QEMU still there 120 s after SIGKILL")


def second(lio_fails=None, stuck=False):
    """run_second_guest on fakes: (exception, calls)."""
    calls.clear()
    SecondGuest.stuck = stuck

    def lio(cmd):
        calls.append(" ".join(cmd.split()[:2]))
        if lio_fails and cmd.startswith(lio_fails):
            raise H.HostError(f"targetcli {cmd}: failed")
    saved = (H.Guest, H.lio, H.remove_second_target, H.counters.poller_stats)
    H.Guest, H.lio = SecondGuest, lio
    H.remove_second_target = lambda img: calls.append("remove")
    H.counters.poller_stats = lambda: {"pollers": 1}
    d = tempfile.mkdtemp(prefix="sqcq-t09-second-")
    try:
        H.run_second_guest({}, None, d, {"name": "g", "steps": [], "_boot": ("qemu", "k", "i", "vm")})
        return None, list(calls)
    except (H.GuestError, H.HostError) as e:
        return e, list(calls)
    finally:
        H.Guest, H.lio, H.remove_second_target, H.counters.poller_stats = saved
        shutil.rmtree(d)


calls = []
n = len(cases) + len(tf_cases) + 7
e, c = second()
why = getattr(e, "emulator", None)
ok = bool(why) and "stalled at boot" in why and c[-2:] == ["kill", "remove"]
e2, c2 = second(lio_fails="/vhost/")
ok2 = e2 is not None and "failed" in str(e2) and c2[-1] == "remove" and "kill" not in c2
e3, c3 = second(stuck=True)
ok3 = (e3 is not None and "left in place" in str(e3) and "remove" not in c3
       and str(e3).startswith("guest did not answer"))
for i, (good, name, detail) in enumerate([
        (ok, "the second guest's boot stall is the emulator's, its QEMU killed and its target removed",
         f"emulator={why!r}, calls {c}, {e}"),
        (ok2, "a failed target creation still removes what was created", f"calls {c2}, {e2}"),
        (ok3, "a second QEMU that cannot be stopped keeps its target, and says so", f"calls {c3}, {e3}")]):
    fails += not good
    print(f"{'ok' if good else 'not ok'} {n + i} - {name}" + ("" if good else f": {detail}"))

# reliability.py --save / --resume ARCHIVE: a run survives the machine.
# The unpacked run gives the same table; the host VM's kallsyms stay out;
# a second unpack and a file that is no archive are refused by name.
top = tempfile.mkdtemp(prefix="sqcq-t09-save-")
run = os.path.join(top, "results", "reliability-20261201-000000")
os.makedirs(os.path.join(run, "t10-baseline-verify", "run"))
for rel, text in (("kernel", "K\n"), ("parts", "2026-12-01 00:00 commit x: t10\n"),
                  ("t10-baseline-verify/tap", "ok 1 - t10-baseline-verify (662s)\n"),
                  ("t10-baseline-verify/run/l1-dmesg.txt", "[ 1.0] booted\n"),
                  ("t10-baseline-verify/run/host-kallsyms.gz", "symbols")):
    with open(os.path.join(run, rel), "w") as f:
        f.write(text)
saved_top, saved_dir = reliability.TOP, reliability.SAVED
reliability.TOP, reliability.SAVED = top, os.path.join(top, "docs", "reliability")
errs = []
try:
    before, _ = reliability.table(run)
    arch = reliability.save(run)
    shutil.move(run, run + ".gone")
    with contextlib.redirect_stdout(io.StringIO()):
        back = reliability.unpack(arch)
    after, _ = reliability.table(back)
    kept_syms = os.path.exists(os.path.join(back, "t10-baseline-verify", "run", "host-kallsyms.gz"))
    for bad in (arch, os.path.join(top, "kernel")):
        if bad != arch:
            with open(bad, "w") as f:
                f.write("not an archive\n")
        try:
            reliability.unpack(bad)
            errs.append(f"{bad} unpacked")
        except SystemExit as e:
            errs.append(str(e))
finally:
    reliability.TOP, reliability.SAVED = saved_top, saved_dir
    shutil.rmtree(top)
ok = (before == after and "| **t10-baseline-verify** | ok |" in after and not kept_syms
      and "exists already" in errs[0] and "cannot read" in errs[1])
fails += not ok
print(f"{'ok' if ok else 'not ok'} {n + 3} - reliability --save, then --resume of the archive, gives the same run"
      + ("" if ok else f": kallsyms kept {kept_syms}, errors {errs}\n{before}\n{after}"))


def silent_boot(answer_after=None):
    """Guest._boot_wait() on a QEMU stand-in (a sleeping process) whose
    control channel answers @@READY after ANSWER_AFTER seconds, or never:
    (its return or error, the lines of channel.log)."""
    d = tempfile.mkdtemp()
    g = object.__new__(Guest)
    g.outdir, g.console, g.boot_timeout, g.buf = d, os.path.join(d, "console.log"), 2.5, b""
    open(g.console, "w").close()
    g.proc = subprocess.Popen(["sleep", "30"])
    g.sock, peer = socket.socketpair()
    if answer_after is not None:
        threading.Timer(answer_after, peer.sendall, (b"@@READY\n",)).start()
    try:
        got = g._boot_wait(every=1)
    except GuestError as e:
        got = e
    finally:
        g.proc.kill()
        g.proc.wait()
        g.sock.close()
        peer.close()
    with open(os.path.join(d, "channel.log")) if os.path.exists(os.path.join(d, "channel.log")) else io.StringIO() as f:
        lines = f.read().splitlines()
    shutil.rmtree(d)
    return got, lines


t0 = time.time()
never, never_log = silent_boot()
late, late_log = silent_boot(answer_after=1.5)
ok = (isinstance(never, GuestTimeout) and "within 2.5s (boot; QEMU used" in str(never)
      and len(never_log) == 2 and all("booting for" in ln and "s of CPU meanwhile" in ln for ln in never_log)
      and late == "@@READY" and len(late_log) == 1 and time.time() - t0 < 10)
fails += not ok
print(f"{'ok' if ok else 'not ok'} {n + 4} - a silent boot logs its progress every interval and fails at its bound"
      + ("" if ok else f": {never!r} {never_log} / {late!r} {late_log}"))

# SQCQ_VERIFY_MB (16 under 'make reliability'): the verified writes' size
# reaches fio and the two-guests step (half each); a bad value is refused.
import mkplan  # noqa: E402
got = []
for val in (None, "32", "256", "x"):
    os.environ.pop("SQCQ_VERIFY_MB", None)
    if val:
        os.environ["SQCQ_VERIFY_MB"] = val
    try:
        st = mkplan.steps_for(["write", "two-guests"], "sqcq-poll", P.load_modes(), 10)
        got.append(([a for a in st[0]["args"] if a.startswith("--size=")], st[1]["write_mb"]))
    except SystemExit as e:
        got.append(str(e))
os.environ.pop("SQCQ_VERIFY_MB", None)
ok = (got[0] == (["--size=128M"], 64) and got[1] == (["--size=32M"], 16)
      and all("SQCQ_VERIFY_MB=" in str(g) and "invalid" in str(g) for g in got[2:]))
fails += not ok
print(f"{'ok' if ok else 'not ok'} {n + 5} - SQCQ_VERIFY_MB sizes the verified writes and the two guests' half, "
      "a bad value is refused" + ("" if ok else f": {got}"))

# matrix.py --pin (plan.pin_step) on a real QEMU (Debian's, TCG, stopped
# before its first instruction): vCPU N on CPU N, the iothread on the last
# CPU; a QEMU with no I/O thread fails the step, saying what it found.
def pinned(extra):
    q = subprocess.Popen(["qemu-system-x86_64", "-name", "t09,debug-threads=on", "-accel", "tcg", "-smp", "2",
                          "-m", "64", "-nodefaults", "-display", "none", "-S", "-L", "/usr/share/seabios",
                          "-L", "/usr/share/qemu"] + extra, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    try:
        for _ in range(100):
            names = [open(t).read().strip() for t in glob.glob(f"/proc/{q.pid}/task/*/comm")]
            if sum(n.startswith("CPU ") for n in names) == 2:
                break
            time.sleep(0.1)
        p = subprocess.run(["bash", "-c", P.pin_step()["cmd"]], env=dict(os.environ, QEMU_PID=str(q.pid)),
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=60)
        aff = {}
        for t in glob.glob(f"/proc/{q.pid}/task/*"):
            aff[open(f"{t}/comm").read().strip()] = sorted(os.sched_getaffinity(int(t.rsplit("/", 1)[1])))
        return p.returncode, p.stdout.strip(), aff
    finally:
        q.kill()
        q.wait()


last = os.cpu_count() - 1
try:
    rc1, out1, aff1 = pinned(["-object", "iothread,id=iot0"])
    rc2, out2, _ = pinned([])
    ok = (rc1 == 0 and aff1.get("CPU 0/TCG") == [0] and aff1.get("CPU 1/TCG") == [1 % (last + 1)]
          and aff1.get("IO iot0") == [last] and rc2 != 0 and "found 2 vCPU threads" in out2
          and "0 I/O threads" in out2)
    detail = f"{rc1} {out1!r} {aff1} / {rc2} {out2!r}"
except FileNotFoundError:
    ok, detail = False, "no qemu-system-x86_64: install Debian's qemu-system-x86 (make deps)"
fails += not ok
print(f"{'ok' if ok else 'not ok'} {n + 6} - matrix --pin: a QEMU's vCPU N pinned to CPU N, its iothread to the "
      "last CPU; with no I/O thread the step fails and says what it found" + ("" if ok else f": {detail}"))
sys.exit(1 if fails else 0)
