#!/usr/bin/python3
# Description: the kernels of 'make kernel' and the built-in guest path,
# without building or booting one.  scripts/build-kernel.sh --settings:
# debug is host plus the debug options, the later word winning
# (LOCALVERSION, KVM_INTEL), the guest starts from kvm_guest.config with
# virtio_scsi built in, an unknown name is refused with the list.  The
# plans for a guest kernel with virtio_scsi built in (SQCQ_GUEST_KERNEL):
# nothing is insmod'ed, each mode's parameters go on the guest's command
# line (virtio_scsi.virtscsi_poll_queues=, virtio_sqcq.sqcq_cq=), a debugfs
# knob is still written, the stock guest module and the bad-parameter
# insmods are refused by name; the builtin step wants bit 50 exactly
# where the mode offers it and parses as busybox sh.  Without a guest
# kernel the plans load the modules as before.  No VM.
import os
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True
TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.join(TOP, "scripts"))
from harness import plan as P  # noqa: E402

n = 0
failed = 0


def check(ok, what, detail=""):
    global n, failed
    n += 1
    print(f"{'ok' if ok else 'not ok'} {n} - {what}" + ("" if ok or not detail else f": {detail}"))
    failed += not ok


def settings(name):
    p = subprocess.run([os.path.join(TOP, "scripts", "build-kernel.sh"), "--config", name, "--settings"],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    return p.returncode, p.stdout.splitlines(), p.stderr


rc, debug, err = settings("debug")
_, host, _ = settings("host")
_, guest, _ = settings("guest")
check(rc == 0 and 'CONFIG_LOCALVERSION="-sqcq-debug"' in debug and
      'CONFIG_LOCALVERSION="-sqcq-host"' not in debug, "debug's LOCALVERSION overrides host's", err)
check("# CONFIG_KVM_INTEL is not set" in debug and "CONFIG_KVM_INTEL=m" in host,
      "debug drops KVM_INTEL, the host kernel has it")
check(all(x in debug for x in ("CONFIG_KASAN=y", "CONFIG_PROVE_LOCKING=y", "CONFIG_VHOST_SCSI=m")) and
      not any(x.startswith(("CONFIG_KASAN", "CONFIG_PROVE")) for x in host),
      "debug = host's settings plus the debug options; host has none of them")
with open(os.path.join(TOP, "linux", "configs", "debug.config")) as f:
    own = f.read()
sym = lambda line: line.split("=")[0] if line.startswith("CONFIG_") else line.split()[1]  # noqa: E731
check(all(line in debug for line in host if sym(line) + "=" not in own and f"# {sym(line)} is not set" not in own),
      "every host setting debug.config does not name is in debug",
      str(sorted(set(host) - set(debug))))
check(guest[0] == "# base: x86_64_defconfig kvm_guest.config" and "CONFIG_SCSI_VIRTIO=y" in guest and
      "CONFIG_VIRTIO_SQCQ=y" in guest, "the guest kernel: kvm_guest.config, virtio_scsi built in", guest[0])
rc, _, err = settings("nosuch")
check(rc != 0 and "no configuration 'nosuch'" in err and "debug guest host" in err,
      "an unknown configuration is refused with the list", err.strip())

modes = P.load_modes()
steps = []
os.environ.pop("SQCQ_GUEST_KERNEL", None)
g = P.guest("pq", "poll-queue", modes, steps, guest_params="sqcq_spin_max_us=300")
load = g["steps"][0]["cmd"]
check("cmdline" not in g and "insmod /lib/sqcq/virtio_sqcq.ko sqcq_spin_max_us=300" in load and
      load.rstrip().endswith("insmod /lib/sqcq/virtio_scsi.ko virtscsi_poll_queues=1"),
      "Debian's guest kernel: the modules are loaded with their parameters", load)

with tempfile.TemporaryDirectory() as kdir:
    rel = "6.12.117-sqcq-guest"
    os.makedirs(os.path.join(kdir, "lib", "modules", rel))
    with open(os.path.join(kdir, "release"), "w") as f:
        f.write(rel + "\n")
    with open(os.path.join(kdir, "lib", "modules", rel, "modules.builtin"), "w") as f:
        f.write("kernel/drivers/scsi/virtio_scsi.ko\nkernel/drivers/virtio/virtio_sqcq.ko\n")
    os.environ["SQCQ_GUEST_KERNEL"] = kdir
    check(P.guest_builtin(), "modules.builtin with virtio_scsi: a built-in guest")
    g = P.guest("pq", "poll-queue", modes, steps, guest_params="sqcq_spin_max_us=300 debugfs:spin_min_us=2")
    load = g["steps"][0]["cmd"]
    check(g.get("cmdline") == "virtio_scsi.virtscsi_poll_queues=1 virtio_sqcq.sqcq_spin_max_us=300",
          "poll-queue: its parameters on the command line", g.get("cmdline"))
    check("insmod /lib/sqcq" not in load and "insmod /lib/stock/virtio_scsi" not in load and
          "echo 2 > /sys/kernel/debug/virtio-sqcq/spin_min_us" in load and "/proc/modules" in load,
          "nothing insmod'ed; the debugfs knob written; no module may be loaded", load)
    g = P.guest("sh", "sqcq-host", modes, steps)
    check(g.get("cmdline") == "virtio_sqcq.sqcq_cq=0", "sqcq-host: the mode's own sqcq_cq=0 too",
          g.get("cmdline"))
    g = P.guest("b", "baseline", modes, steps)
    check("cmdline" not in g, "baseline with no parameters: nothing on the command line")
    g = P.guest("blk", "blk-iothread", modes, steps) if "blk-iothread" in modes["modes"] else None
    check(g is None or "insmod /lib/stock/virtio_blk.ko" in g["steps"][0]["cmd"],
          "the virtio-blk peer keeps its own load (built into this kernel: nothing to do)")
    for what, call in (("the stock guest module",
                        lambda: P.guest("s", "baseline", modes, steps, guest_module="stock")),
                       ("the bad-parameter insmods", P.guest_bad_param_check)):
        try:
            call()
            check(False, f"{what} refused on a built-in guest", "accepted")
        except ValueError as e:
            check("built in" in str(e), f"{what} refused on a built-in guest: {e}")
    check("/sys/bus/virtio/drivers/virtio_scsi/unbind" in load and load.index("spin_min_us") < load.index("unbind"),
          "a debugfs knob is read at probe: the device is bound again after it is written", load)
    for mode in ("baseline", "sqcq-poll", "poll-queue", "sqcq-host"):
        cmd = P.builtin_step(mode, modes)["cmd"]
        p = subprocess.run(["busybox", "sh", "-n", "-c", cmd], stderr=subprocess.PIPE, text=True)
        check(p.returncode == 0, f"builtin step of {mode} parses as busybox sh", p.stderr)
    check("io_poll" in P.builtin_step("poll-queue", modes)["cmd"] and
          "io_poll" not in P.builtin_step("sqcq-poll", modes)["cmd"], "poll-queue: its disk's poll queue checked")
    os.environ.pop("SQCQ_GUEST_KERNEL")


def run_step(mode, bit, cq_dir=True, params=None, cmdline="virtio_sqcq.sqcq_spin_max_us=1000", modules=""):
    """The builtin step of MODE on a fake /proc and /sys: (rc, output)."""
    with tempfile.TemporaryDirectory() as root:
        def put(path, text):
            os.makedirs(os.path.dirname(root + path), exist_ok=True)
            with open(root + path, "w") as f:
                f.write(text)
        put("/proc/cmdline", f"console=ttyS0 {cmdline}\n")
        put("/proc/modules", modules)
        for k, v in dict({"sqcq_spin_max_us": "1000", "sqcq_enable": "Y", "sqcq_cq": "Y"}, **(params or {})).items():
            put(f"/sys/module/virtio_sqcq/parameters/{k}", v + "\n")
        feats = ["0"] * 64
        feats[50] = bit
        put("/sys/bus/virtio/devices/virtio1/features", "".join(feats) + "\n")
        os.makedirs(root + "/sys/bus/virtio/drivers/virtio_scsi")
        os.symlink("../../drivers/virtio_scsi", root + "/sys/bus/virtio/devices/virtio1/driver")
        if cq_dir:
            os.makedirs(root + "/sys/kernel/debug/virtio-sqcq/virtio1")
        cmd = P.builtin_step(mode, modes)["cmd"].replace("/sys/", root + "/sys/").replace("/proc/", root + "/proc/")
        p = subprocess.run(["busybox", "sh", "-c", cmd], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        return p.returncode, p.stdout.replace(root, "")


for name, args, ok, says in (
        ("sqcq-poll, bit 50 and the CQ poller", ("sqcq-poll", "1"), True, "(bit 50): 1"),
        ("sqcq-poll without bit 50", ("sqcq-poll", "0"), False, "is 0 in"),
        ("sqcq-poll without its CQ poller", ("sqcq-poll", "1", False), False, "no CQ poller"),
        ("sqcq-poll with sqcq_cq=N: no CQ poller wanted", ("sqcq-poll", "1", False, {"sqcq_cq": "N"}), True, ""),
        ("sqcq-poll with sqcq_enable=N: bit 50 not wanted", ("sqcq-poll", "0", False, {"sqcq_enable": "N"}), True, ""),
        ("baseline, no bit, no poller", ("baseline", "0", False), True, ""),
        ("baseline with bit 50", ("baseline", "1", False), False, "expected 0"),
        ("baseline with a CQ poller", ("baseline", "0", True), False, "should not run"),
        ("a parameter not in effect", ("baseline", "0", False, {"sqcq_spin_max_us": "200"}), False,
         "sqcq_spin_max_us is 200, the command line says 1000"),
        ("a bool parameter given as 0", ("baseline", "0", False, {"sqcq_cq": "N"},
                                         "virtio_sqcq.sqcq_cq=0"), True, "sqcq_cq=N"),
        ("a module loaded", ("baseline", "0", False, None, "", "virtio_scsi 1 0 - Live\n"), False,
         "modules loaded")):
    rc, text = run_step(*args)
    check((rc == 0) == ok and says in text, f"builtin step on a fake sysfs: {name}: {'passes' if ok else 'fails'}",
          f"rc {rc}: {text.strip()}")

print(f"1..{n}")
sys.exit(1 if failed else 0)
