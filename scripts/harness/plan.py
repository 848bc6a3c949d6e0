"""Build plans (the JSON that scripts/host/run_plan.py executes).

A plan names the host module, the LIO backstore, and a list of nested
guests, each with its mode's setup and a list of steps (fio or shell).
"""
import functools
import json
import os
import subprocess
import sys
import tomllib

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
DISK = "/dev/sda"
# The peers (bench/modes.toml 'peer'): QEMU's own devices on the file or
# device that LIO exports; LIO's ramdisk has none outside LIO.
PEER_BACKSTORES = ("fileio", "null_blk", "block")
BACKSTORES = ("fileio", "rd_mcp", "null_blk", "block:/dev/...")
STOCK_QEMU = "/usr/bin/qemu-system-x86_64"  # Debian's, for the peers


# Knobs that are not module parameters but debugfs files of the poller
# modules (vhost-sqcq/ on the host, virtio-sqcq/ in the guest): tests and
# experiments set them as "debugfs:NAME=VALUE" among the parameters.
DEBUGFS_KNOBS = ("spin_min_us", "idle_timeout_us")


# The largest spin ceiling either module accepts, in us
# (SQCQ_SPIN_MAX_US_LIMIT in include/linux/virtio_sqcq_policy.h).
SPIN_MAX_US_LIMIT = 1000000


def split_params(params, debugfs_dir):
    """'a=1 debugfs:b=2' -> ('a=1', shell that writes 2 to DEBUGFS_DIR/b).

    The shell part is '' when there is no debugfs knob; raise ValueError
    naming a knob that does not exist or a value that is not an integer.
    """
    mod, writes = [], []
    for tok in params.split():
        if not tok.startswith("debugfs:"):
            mod.append(tok)
            continue
        name, _, val = tok[len("debugfs:"):].partition("=")
        if name not in DEBUGFS_KNOBS:
            raise ValueError(f"{tok}: no such debugfs knob (there are: {', '.join(DEBUGFS_KNOBS)})")
        if not val.isdigit():
            raise ValueError(f"{tok}: the value must be a non-negative integer")
        writes.append(f"echo {val} > {debugfs_dir}/{name}")
    return " ".join(mod), " && ".join(writes)


def params_error(host_params, guest_params):
    """The first bad debugfs knob of --host-params/--guest-params, or None."""
    for params, what in ((host_params, "--host-params"), (guest_params, "--guest-params")):
        try:
            split_params(params, "")
        except ValueError as e:
            return f"{what}: {e}"
    return None


def disk(mode, modes):
    """The guest's disk in MODE: virtio-blk's first disk, else the SCSI disk."""
    return "/dev/vda" if modes["modes"][mode].get("peer") == "virtio-blk" else DISK


def load_modes(path=os.path.join(TOP, "bench", "modes.toml")):
    with open(path, "rb") as f:
        return tomllib.load(f)


def parse_backstore(text):
    """'fileio' | 'rd_mcp' | 'null_blk' | 'block:/dev/X' -> (kind, dev); ValueError if neither."""
    kind, _, dev = text.partition(":")
    if kind == "block" and dev.startswith("/dev/"):
        return kind, dev
    if kind in ("fileio", "rd_mcp", "null_blk") and not dev:
        return kind, ""
    raise ValueError(f"backstore '{text}' is none of {', '.join(BACKSTORES)}")


def qemu_error(qemu, need_sqcq, need_wpv=False):
    """Why QEMU cannot run the nested guests (None if it can): SQCQ_QEMU
    must be an executable with vhost-scsi-pci and, for the sqcq modes,
    the qemu/ series' sqcq_poll property (worker_per_virtqueue for a
    worker-per-vq mode)."""
    if not (os.path.isfile(qemu) and os.access(qemu, os.X_OK)):
        return f"SQCQ_QEMU={qemu} is not an executable"
    try:
        p = subprocess.run([qemu, "-nodefaults", "-machine", "none", "-device", "vhost-scsi-pci,help"],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"SQCQ_QEMU={qemu} did not list vhost-scsi-pci's properties: {e}"
    if p.returncode or "wwpn" not in p.stdout:
        return f"SQCQ_QEMU={qemu} has no vhost-scsi-pci device: {' '.join(p.stdout.split())[:200]}"
    if need_sqcq and "sqcq_poll" not in p.stdout:
        return (f"SQCQ_QEMU={qemu} lacks vhost-scsi-pci's sqcq_poll property (the qemu/ series), "
                "which the sqcq modes need: apply qemu/*.patch to it, or leave those modes out")
    if need_wpv and "worker_per_virtqueue" not in p.stdout:
        return (f"SQCQ_QEMU={qemu} lacks vhost-scsi-pci's worker_per_virtqueue property "
                "(qemu/0002), which the worker-per-vq modes need")
    return None


def guest_kernel(name_or_dir):
    """A kernel of 'make kernel' for the nested guests: a configuration
    name (guest, debug, host), built here if it is not yet
    (scripts/build-kernel.sh, 15-20 min the first time), or a directory
    it built.  Returns its directory; exits with the reason when there is
    none."""
    configs = os.path.join(TOP, "linux", "configs")
    if "/" in name_or_dir or not os.path.isfile(os.path.join(configs, name_or_dir + ".config")):
        if not os.path.isdir(name_or_dir):
            names = " ".join(sorted(f[:-len(".config")] for f in os.listdir(configs) if f.endswith(".config")))
            sys.exit(f"--guest-kernel {name_or_dir}: neither a configuration of linux/configs/ ({names}) "
                     "nor a directory")
        if not os.path.isfile(os.path.join(name_or_dir, ".done")):
            sys.exit(f"--guest-kernel {name_or_dir}: not a kernel built by 'make kernel' (no .done)")
        return os.path.abspath(name_or_dir)
    p = subprocess.run([os.path.join(TOP, "scripts", "build-kernel.sh"), "--config", name_or_dir],
                       stdout=subprocess.PIPE, text=True)
    if p.returncode != 0:
        sys.exit(f"--guest-kernel {name_or_dir}: scripts/build-kernel.sh failed (its message is above)")
    return p.stdout.strip().splitlines()[-1]


class BuiltinGuest(ValueError):
    """A plan asks for what a guest with the series built in cannot do."""


def guest_builtin():
    """True when the nested guests' kernel (SQCQ_GUEST_KERNEL) has
    virtio_scsi built in (make kernel KERNEL=guest): nothing to load, and
    the guest's module parameters go on its kernel command line."""
    kdir = os.environ.get("SQCQ_GUEST_KERNEL")
    return bool(kdir) and _builtin_in(kdir)


@functools.lru_cache(maxsize=None)
def _builtin_in(kdir):
    """Does the kernel of 'make kernel' in KDIR have virtio_scsi built in?"""
    try:
        with open(os.path.join(kdir, "release")) as f:
            rel = f.read().strip()
        with open(os.path.join(kdir, "lib", "modules", rel, "modules.builtin")) as f:
            return "kernel/drivers/scsi/virtio_scsi.ko" in f.read().split()
    except OSError:
        return False


def build_paths():
    """Build (or reuse) QEMU, the modules and the guest initramfs; return paths.

    SQCQ_QEMU: the nested guests run on that QEMU instead of the one built
    here (see qemu_error for what it needs).
    """
    def out(cmd):
        return subprocess.run(cmd, check=True, stdout=subprocess.PIPE, text=True).stdout.strip().splitlines()[-1]
    kver = versions()["SQCQ_KVER"]
    subprocess.run([os.path.join(TOP, "scripts", "build-modules.sh")], check=True)
    return {
        "qemu": (os.environ["SQCQ_QEMU"] if os.environ.get("SQCQ_QEMU")
                 else out([os.path.join(TOP, "scripts", "build-qemu.sh"), "--print-path"])),
        "initrd": out([os.path.join(TOP, "scripts", "guest", "mkinitramfs.sh"), "--print-path"]),
        # SQCQ_GUEST_KERNEL: the nested guest boots a kernel of 'make kernel'.
        "kernel": (os.path.join(os.environ["SQCQ_GUEST_KERNEL"], "vmlinuz")
                   if os.environ.get("SQCQ_GUEST_KERNEL") else f"/boot/vmlinuz-{kver}"),
        "vhost_scsi_ko": os.path.join(os.environ.get("SQCQ_BUILD", os.path.join(TOP, "build")),
                                      "kmod", "drivers", "vhost", "vhost_scsi.ko"),
        # Under KASAN the ACPI interpreter is so slow that QEMU's _PRT
        # loop hits its 30 s timeout (twice, at boot); virtio uses MSI-X.
        # no5lvl: see scripts/vm/host-vm.sh.
        "kernel_cmdline": "acpi=noirq no5lvl" if os.environ.get("SQCQ_GUEST_KERNEL") else "",
    }


def versions():
    v = {}
    with open(os.path.join(TOP, "scripts", "versions.env")) as f:
        for line in f:
            if "=" in line and not line.startswith("#"):
                k, val = line.strip().split("=", 1)
                v[k] = val
    return v


def new_plan(name, paths, backstore="fileio", size_mb=1024, host_module="project", allow_writes=False):
    """BACKSTORE: as parse_backstore; a block device is read-only unless ALLOW_WRITES."""
    kind, dev = parse_backstore(backstore)
    lio = {"backstore": kind, "size_mb": size_mb}
    if kind == "block":
        lio.update(dev=dev, allow_writes=bool(allow_writes))
    return {
        "name": name,
        "qemu": paths["qemu"], "kernel": paths["kernel"], "initrd": paths["initrd"],
        "stock_qemu": STOCK_QEMU,
        "kernel_cmdline": paths.get("kernel_cmdline", ""),
        "host": {"vhost_scsi": host_module, "vhost_scsi_ko": paths["vhost_scsi_ko"]},
        "lio": lio,
        "guests": [],
    }


def guest(name, mode, modes, steps, guest_module="project", guest_params=""):
    """A guest set up for a mode: its module load and disk wait come first."""
    m = modes["modes"][mode]
    g = modes["guest"]
    params = f"virtscsi_poll_queues={m['poll_queues']}" if m.get("poll_queues") else ""
    guest_params = " ".join(x for x in (m.get("guest_params", ""), guest_params) if x)
    cmdline = ""
    if m.get("peer") == "virtio-blk":
        # (built into the kernel of 'make kernel': nothing to load)
        load = "insmod /lib/stock/virtio_blk.ko 2>/dev/null || [ -d /sys/module/virtio_blk ]"
    elif guest_builtin():
        # The series built in (make kernel KERNEL=guest): the parameters
        # are on the command line, probe-time ones included.  The debugfs
        # knobs are written after boot, and the device is bound again so
        # that its pollers start without history under them.
        if guest_module != "project":
            raise BuiltinGuest(f"guest {name}: the guest kernel ({os.environ['SQCQ_GUEST_KERNEL']}) has the "
                             "project's virtio_scsi built in; there is no stock module to load")
        mod, knobs = split_params(guest_params, "/sys/kernel/debug/virtio-sqcq")
        cmdline = " ".join([f"virtio_scsi.{p}" for p in params.split()] + [f"virtio_sqcq.{p}" for p in mod.split()])
        drv = "/sys/bus/virtio/drivers/virtio_scsi"
        rebind = (f"d=$(basename \"$(readlink -f {drv}/virtio*)\") && echo $d > {drv}/unbind && "
                  f"echo $d > {drv}/bind" if knobs else "")
        load = " && ".join(filter(None, (
            "[ -d /sys/module/virtio_scsi ] && [ -d /sys/module/virtio_sqcq ] || "
            "{ echo 'virtio_scsi or virtio_sqcq is not built into this kernel'; exit 1; }",
            "! grep . /proc/modules || { echo 'modules loaded in a built-in guest'; exit 1; }", knobs, rebind)))
        params = ""
    elif guest_module == "project" and not m.get("peer"):
        mod, knobs = split_params(guest_params, "/sys/kernel/debug/virtio-sqcq")
        load = " && ".join(filter(None, (f"insmod /lib/sqcq/virtio_sqcq.ko {mod}", knobs,
                                         "insmod /lib/sqcq/virtio_scsi.ko")))
    else:
        load = "insmod /lib/stock/virtio_scsi.ko"
    props = ",".join(p for p, on in (("sqcq_poll=on", m.get("sqcq_poll")),
                                      ("worker_per_virtqueue=on", m.get("worker_per_vq"))) if on)
    dev = disk(mode, modes)
    setup = [
        {"name": "load-virtio_scsi", "type": "sh", "setup": True,
         "cmd": f"for m in $(cat /lib/deps); do insmod /lib/stock/$m.ko || exit 1; done; {load} {params}"},
        {"name": "wait-disk", "type": "sh", "timeout": 60, "setup": True,
         "cmd": f"for i in $(seq 300); do [ -b {dev} ] && exit 0; sleep 0.1; done; "
                f"echo 'no {dev} after 30s'; cat /proc/partitions; exit 1"},
    ]
    return {"name": name, "mode": mode, "smp": g["smp"], "num_queues": g["num_queues"],
            "mem_mb": g["mem_mb"], "device_props": props, "steps": setup + steps,
            **({"peer": m["peer"]} if m.get("peer") else {}),
            **({"cmdline": cmdline} if cmdline else {})}


def builtin_step(mode, modes):
    """In a guest on the guest kernel (the series built in): no module is
    loaded; every virtio_scsi./virtio_sqcq. parameter on the kernel
    command line is the one in effect; the device negotiated
    VIRTIO_F_SQCQ_POLL (bit 50) exactly when QEMU offers it (the mode) and
    the driver takes it (virtio_sqcq.sqcq_enable); the CQ pollers are
    there exactly when they run (sqcq_cq too); a poll-queue mode's disk
    has a poll queue."""
    m = modes["modes"][mode]
    par = "/sys/module/virtio_sqcq/parameters"
    sh = ("fail() { echo \"FAIL: $*\"; exit 1; }; "
          "echo \"kernel $(uname -r); command line: $(cat /proc/cmdline)\"; "
          "[ -z \"$(cat /proc/modules)\" ] || fail \"modules loaded: $(cat /proc/modules)\"; "
          "for t in $(cat /proc/cmdline); do case $t in virtio_scsi.*=*|virtio_sqcq.*=*) "
          "mod=${t%%.*}; kv=${t#*.}; k=${kv%%=*}; v=${kv#*=}; "
          "got=$(cat /sys/module/$mod/parameters/$k) || fail \"no parameter $mod.$k\"; "
          "case $v:$got in 0:N|1:Y|n:N|y:Y) ;; *) [ \"$got\" = \"$v\" ] || "
          "fail \"$mod.$k is $got, the command line says $v\" ;; esac; "
          "echo \"$mod.$k=$got, from the command line\" ;; esac; done; "
          "d=; for x in /sys/bus/virtio/devices/*; do "
          "[ \"$(basename \"$(readlink $x/driver)\")\" = virtio_scsi ] && d=$x; done; "
          "[ -n \"$d\" ] || fail 'no virtio device is bound to virtio_scsi'; "
          f"want=0; [ {'Y' if m.get('sqcq_poll') else 'N'} = Y ] && [ \"$(cat {par}/sqcq_enable)\" = Y ] && want=1; "
          "b=$(cut -c51 $d/features); "
          "[ \"$b\" = $want ] || fail \"VIRTIO_F_SQCQ_POLL (bit 50) is $b in $d/features, expected $want\"; "
          "echo \"VIRTIO_F_SQCQ_POLL (bit 50): $b\"; "
          f"if [ $want = 1 ] && [ \"$(cat {par}/sqcq_cq)\" = Y ]; then "
          f"ls -d {CQ_DIR} || fail 'no CQ poller in debugfs'; "
          f"elif ls -d {CQ_DIR} 2>/dev/null; then fail 'a CQ poller that should not run'; fi")
    if m.get("poll_queues"):
        q = f"/sys/block/{os.path.basename(disk(mode, modes))}/queue/io_poll"
        sh += f"; [ \"$(cat {q})\" = 1 ] || fail '{q} is not 1: no poll queue'; echo '{q}: 1'"
    return {"name": "builtin", "type": "sh", "timeout": 60, "cmd": sh}


def fio_args(mode, modes, rw, bs="4k", iodepth=1, numjobs=1, runtime=10, size="512M", extra=()):
    m = modes["modes"][mode]
    a = [f"--name={rw}", f"--filename={disk(mode, modes)}", "--direct=1", f"--rw={rw}", f"--bs={bs}",
         f"--iodepth={iodepth}", f"--numjobs={numjobs}", f"--ioengine={m['ioengine']}",
         f"--size={size}", "--group_reporting"]
    if runtime:
        a += [f"--runtime={runtime}", "--time_based"]
    if m.get("hipri"):
        a.append("--hipri")
    return a + list(extra)


def verify_mb():
    """The verified writes' size in MiB: SQCQ_VERIFY_MB, 128 unless set.
    Under 'make reliability' 16: on a slow machine the debug host VM
    served about 13-20 LIO commands/s, so t46's 128 MiB ran past its
    30 min and t44's writes would have needed an hour (2026-12-04, parts
    5 and 6 of results.md); KASAN, lockdep and kmemleak see the same code
    paths in an eighth of the data."""
    raw = os.environ.get("SQCQ_VERIFY_MB", "128")
    if not raw.isdigit() or not 8 <= int(raw) <= 128:
        sys.exit(f"SQCQ_VERIFY_MB={raw!r} is invalid: whole MiB from 8 to 128")
    return int(raw)


def verify_steps(mode, modes, size=None):
    """Write with crc32c checksums and verify; re-verify from a second pass;
    then prove verification can fail by corrupting one block.  SIZE: fio's
    --size, verify_mb() MiB unless given."""
    size = size or f"{verify_mb()}M"
    base = fio_args(mode, modes, "write", bs="4k", iodepth=16, runtime=0, size=size,
                    extra=["--verify=crc32c", "--verify_fatal=1", "--bsrange=4k-64k"])
    base = [a for a in base if not a.startswith("--bs=")]
    return [
        {"name": "verify-write", "type": "fio", "args": base, "timeout": 600},
        {"name": "verify-reread", "type": "fio", "args": base + ["--verify_only"], "timeout": 600},
        {"name": "corrupt-one-block", "type": "sh",
         "cmd": f"dd if=/dev/urandom of={disk(mode, modes)} bs=4k seek=256 count=1 conv=notrunc,fsync 2>&1"},
        {"name": "verify-detects-corruption", "type": "fio", "args": base + ["--verify_only"],
         "timeout": 600, "expect_rc": "nonzero"},
    ]


def scale_timeouts(node, scale):
    """Multiply every 'timeout' and 'boot_timeout' in a plan by SCALE."""
    if isinstance(node, dict):
        for k, v in node.items():
            if k in ("timeout", "boot_timeout") and isinstance(v, (int, float)):
                node[k] = int(v * scale)
            else:
                scale_timeouts(v, scale)
    elif isinstance(node, list):
        for v in node:
            scale_timeouts(v, scale)


def env_scale(name, most):
    """The factor in environment variable NAME (default 1), from 1 to MOST;
    anything else ends the run naming it."""
    raw = os.environ.get(name, "1")
    try:
        v = float(raw)
        if not 1 <= v <= most:
            raise ValueError
    except ValueError:
        sys.exit(f"{name}={raw!r} is invalid: a number from 1 to {most}")
    return v


def write(plan, path):
    """Write PLAN; its timeouts times SQCQ_TIMEOUT_SCALE (e.g. 2 on the
    debug kernel, where the host VM is 5-10 times slower)."""
    scale = env_scale("SQCQ_TIMEOUT_SCALE", 20)
    # SQCQ_BOOT_SCALE: the nested guests' boot limit once more (the debug
    # host VM: a boot took 6.5 min of the 9 the timeout scale gave it, on
    # 2026-12-03 both boots of a t20 ran out; nothing of the project runs
    # before the guest's init, and its QEMU's CPU time, logged each minute,
    # shows a slow boot from a stuck one).
    boot_scale = env_scale("SQCQ_BOOT_SCALE", 10)
    # SQCQ_SHUTDOWN_TRACE=0: the host role does not record KVM's shutdown
    # exits (KvmCounters.setup), so a triple fault is located from QEMU's
    # reset log only.  For telling the trace apart from what it watches.
    trace = os.environ.get("SQCQ_SHUTDOWN_TRACE", "1")
    if trace not in ("0", "1"):
        sys.exit(f"SQCQ_SHUTDOWN_TRACE={trace!r} is invalid: 1 (the default) records KVM's "
                 "shutdown exits, 0 does not")
    if "host" in plan:
        plan["host"]["shutdown_trace"] = trace == "1"
    if boot_scale != 1:
        for g in plan.get("guests", []):
            g["boot_timeout"] = int(g.get("boot_timeout", 180) * boot_scale)
    if scale != 1:
        for g in plan.get("guests", []):
            g.setdefault("boot_timeout", 180)
        if "lio" in plan:
            plan["lio"].setdefault("timeout", 120)  # each targetcli command
        scale_timeouts(plan, scale)
        # The nested guests' own watchdogs too (Debian's defaults: RCU
        # stall 21 s, hung task 120 s): on the debug host VM a guest's
        # vCPUs and timers go unserved for 20-30 s now and then while
        # its I/O still moves (t21 at 21:00: RCU stall reports, "timer
        # wakeup didn't happen", from a guest with no poller).  A spin
        # that never yields still trips them.
        plan["kernel_cmdline"] = " ".join(filter(None, (
            plan.get("kernel_cmdline", ""), f"rcupdate.rcu_cpu_stall_timeout={round(21 * scale)}",
            f"sysctl.kernel.hung_task_timeout_secs={round(120 * scale)}")))
    with open(path, "w") as f:
        json.dump(plan, f, indent=1)


def bad_param_checks(ko):
    """Host checks: invalid vhost_scsi parameters are refused, by name."""
    cases = [("sqcq_spin_max_us", "5000000"), ("sqcq_spin_max_us", "-1"),
             ("sqcq_steer", "abc"), ("sqcq_enable", "2")]
    out = []
    for i, (name, val) in enumerate(cases):
        # the kernel's words (kernel/params.c): `VAL' invalid for parameter `NAME'
        out.append({"name": f"bad-param-{i}", "expect_rc": "nonzero",
                    "expect_output": [f"`{val}' invalid for parameter `{name}'"],
                    "cmd": f"echo sqcq-check-{i} >/dev/kmsg; insmod {ko} {name}={val}; rc=$?; "
                           f"dmesg | sed -n '/sqcq-check-{i}/,$p'; exit $rc"})
    return out


def guest_bad_param_check():
    """Guest step: invalid virtio_sqcq parameters are refused, by name."""
    if guest_builtin():
        raise BuiltinGuest("the guest kernel has virtio_sqcq built in: there is no module to load "
                         "with bad parameters")
    cases = [("sqcq_spin_max_us", "5000000"), ("sqcq_cq", "2")]
    tries = "; ".join(f"insmod /lib/sqcq/virtio_sqcq.ko {n}={v} && {{ echo 'accepted {n}={v}'; exit 1; }}"
                      for n, v in cases)
    # (. for the quotes of the kernel's `VAL' invalid for parameter `NAME')
    greps = " && ".join(f"dmesg | grep -q '.{v}. invalid for parameter .{n}.'" for n, v in cases)
    return {"name": "bad-guest-params", "type": "sh", "setup": True,
            "cmd": f"{tries}; {greps} || {{ echo 'a refusal message is missing:'; dmesg | tail -8; exit 1; }}"}


def unbind_rebind_step():
    """Guest step: unbind virtio_scsi from its device while fio writes, bind again.

    fio runs against a scratch region beyond what the verify steps wrote;
    its failure after the unbind is expected (the disk vanished).  The
    rebound disk must come back and its CQ poller must be running again.
    """
    drv = "/sys/bus/virtio/drivers/virtio_scsi"
    return {"name": "unbind-rebind", "type": "sh", "timeout": 180, "cmd": (
        f"dev=$(basename $(readlink -f {drv}/virtio*)); "
        f"fio --name=inflight --filename={DISK} --direct=1 --rw=randwrite --bs=4k --iodepth=32 "
        f"--ioengine=libaio --offset=256M --size=64M --time_based --runtime=30 >$TMPDIR/inflight.log 2>&1 & "
        f"sleep 3; echo $dev > {drv}/unbind || exit 1; wait; "
        f"echo $dev > {drv}/bind || exit 1; "
        f"for i in $(seq 300); do [ -b {DISK} ] && break; sleep 0.1; done; [ -b {DISK} ] || exit 1; "
        f"ls /sys/kernel/debug/virtio-sqcq/$dev >/dev/null || {{ echo 'no CQ poller after rebind'; exit 1; }}")}


def suspend_step():
    """Guest step: a suspend/resume cycle (virtio freeze/restore) under I/O.

    pm_test=devices runs the real device suspend and resume callbacks
    (virtio-pci's freeze/restore, so virtio_scsi's) and comes back after
    5 s without a wakeup source.  fio writes and verifies a scratch region
    across it; the CQ poller must be a new thread afterwards (stopped on
    freeze, started on restore) and the kernel must say it suspended.
    """
    stats = "/sys/kernel/debug/virtio-sqcq/*/stats"
    return {"name": "suspend-resume", "type": "sh", "timeout": 240, "cmd": (
        "[ -w /sys/power/pm_test ] || { echo 'no /sys/power/pm_test in the guest (CONFIG_PM_DEBUG)'; exit 1; }; "
        "grep -qw freeze /sys/power/state || { echo \"no s2idle in /sys/power/state: $(cat /sys/power/state)\"; exit 1; }; "
        f"pid0=$(cat {stats} | awk '$1==\"pid\"{{print $2}}'); [ -n \"$pid0\" ] || {{ echo 'no CQ poller before suspend'; exit 1; }}; "
        f"fio --name=inflight --filename={DISK} --direct=1 --rw=randwrite --bs=4k --iodepth=32 "
        f"--ioengine=libaio --offset=256M --size=96M --verify=crc32c --do_verify=1 >$TMPDIR/susp.log 2>&1 & "
        "f=$!; sleep 2; echo devices > /sys/power/pm_test || exit 1; "
        "echo freeze > /sys/power/state; rc=$?; echo none > /sys/power/pm_test; "
        "[ $rc = 0 ] || { echo \"suspend failed ($rc)\"; dmesg | tail -20; exit 1; }; "
        "wait $f || { echo 'fio verify across the suspend failed:'; tail -20 $TMPDIR/susp.log; exit 1; }; "
        "dmesg | grep -q 'PM: suspend entry' || { echo 'the kernel did not suspend'; exit 1; }; "
        f"pid1=$(cat {stats} | awk '$1==\"pid\"{{print $2}}'); "
        "[ -n \"$pid1\" ] && [ \"$pid1\" != \"$pid0\" ] || "
        "{ echo \"CQ poller not restarted by freeze/restore (pid $pid0 -> '$pid1')\"; exit 1; }; "
        "echo \"suspend/resume ok; CQ poller pid $pid0 -> $pid1\"")}


# The guest's CQ pollers: one debugfs file per request queue (q<hctx>).
CQ_DIR = "/sys/kernel/debug/virtio-sqcq/virtio*"
# Shell helpers for the CQ steps: a poller file's field, a CPU list in
# canonical form ("0, 2-3" and "0,2-3" -> "0 2 3"), fio's I/O count.
_CQ_SH = ("field() { awk -v k=$2 '$1 == k {print $2}' $1; }; "
          "cpus() { echo \"$1\" | tr -d ' ' | tr ',' '\\n' | awk -F- '{e = $2 == \"\" ? $1 : $2; "
          "for (c = $1; c <= e; c++) print c}' | sort -n | tr '\\n' ' '; }; "
          "ios() { grep -m1 '\"total_ios\"' $1 | tr -dc 0-9; }; ")


def _cq_fio(cpu, name, seconds):
    return (f"fio --name={name} --filename={DISK} --direct=1 --rw=randread --bs=4k --iodepth=1 "
            f"--ioengine=libaio --size=256M --time_based --runtime={seconds} --cpus_allowed={cpu} "
            f"--output-format=json >$TMPDIR/{name}.json 2>$TMPDIR/{name}.err || "
            f"{{ echo 'fio failed:'; cat $TMPDIR/{name}.err; exit 1; }}; ")


def cq_per_queue_step(nq):
    """Guest step: one CQ poller per request queue, SCHED_IDLE, allowed on
    exactly the CPUs that blk-mq maps to its queue (/sys/block/sdX/mq/N)."""
    return {"name": "cq-per-queue", "type": "sh", "timeout": 60, "cmd": _CQ_SH + (
        f"d=$(echo {CQ_DIR}); [ -d \"$d\" ] || {{ echo 'no CQ pollers in debugfs'; exit 1; }}; "
        f"mq=/sys/block/{os.path.basename(DISK)}/mq; n=$(ls -d $d/q* 2>/dev/null | wc -l); "
        f"[ $n -eq {nq} ] && [ $(ls $mq | wc -l) -eq {nq} ] || "
        f"{{ echo \"$n CQ pollers and $(ls $mq | wc -l) blk-mq queues, expected {nq} of each\"; exit 1; }}; "
        "out=''; for f in $d/q*; do i=${f##*/q}; pid=$(field $f pid); "
        "want=$(cpus \"$(cat $mq/$i/cpu_list)\"); has=$(cpus \"$(field $f cpus)\"); "
        "allowed=$(cpus \"$(awk '$1 == \"Cpus_allowed_list:\" {print $2}' /proc/$pid/status)\"); "
        "pol=$(cut -d')' -f2 /proc/$pid/stat | awk '{print $39}'); "
        "[ \"$has\" = \"$want\" ] && [ \"$allowed\" = \"$want\" ] || { echo \"queue $i: blk-mq CPUs '$want', "
        "poller $pid reports '$has' and may run on '$allowed'\"; exit 1; }; "
        "[ \"$pol\" = 5 ] || { echo \"queue $i: poller $pid has scheduling policy $pol, not SCHED_IDLE (5)\"; exit 1; }; "
        "out=\"$out q$i=pid$pid@cpus:$want\"; done; "
        f"echo \"{nq} CQ pollers, SCHED_IDLE, each on its queue's CPUs:$out\"")}


def cq_local_step(smp):
    """Guest step: fio pinned to each vCPU in turn (randread QD1): the
    poller of the queue that CPU maps to reaps a share of the completions,
    every other queue's poller reaps none: completions happen where the
    submitter waits."""
    loop = (f"for c in $(seq 0 {smp - 1}); do "
            "for f in $d/q*; do eval r0_${f##*/q}=$(field $f reaped); done; i0=$(field $d/stats irqs); " +
            _cq_fio("$c", "cq-local-$c", 3) +
            "n=$(ios $TMPDIR/cq-local-$c.json); line=\"cpu$c: $n I/Os, $(( $(field $d/stats irqs) - i0 )) interrupts;\"; "
            "for f in $d/q*; do i=${f##*/q}; eval r0=\\$r0_$i; r=$(( $(field $f reaped) - r0 )); "
            "line=\"$line q$i reaped $r\"; "
            "if echo \" $(cpus \"$(cat $mq/$i/cpu_list)\")\" | grep -q \" $c \"; then "
            "[ $((4 * r)) -ge $n ] && [ $n -gt 0 ] || { echo \"$line: the local queue's poller reaped under a quarter\"; exit 1; }; "
            "else [ $r -eq 0 ] || { echo \"$line: a poller of another queue reaped\"; exit 1; }; fi; done; "
            "echo \"$line\"; done")
    return {"name": "cq-local", "type": "sh", "timeout": 30 + 20 * smp, "cmd": _CQ_SH + (
        f"d=$(echo {CQ_DIR}); mq=/sys/block/{os.path.basename(DISK)}/mq; " + loop)}


def cq_hog_step():
    """Guest step: fio (randread QD1) pinned to CPU 0 beside a CPU hog pinned
    there.  The SCHED_IDLE poller of CPU 0's queue then never runs, so the
    completions must come by interrupt: at least one per four I/Os (a poller
    that kept the interrupt off while preempted strands them instead)."""
    return {"name": "cq-hog", "type": "sh", "timeout": 60, "cmd": _CQ_SH + (
        f"st=$(echo {CQ_DIR}/stats); irqs() {{ field $st irqs; }}; "
        "taskset -c 0 sh -c 'while :; do :; done' & hog=$!; sleep 0.5; i0=$(irqs); " +
        _cq_fio(0, "cq-hog", 5).replace("|| {", "|| { kill $hog;", 1) +
        "i1=$(irqs); kill $hog; n=$(ios $TMPDIR/cq-hog.json); "
        "lat=$(grep -m1 -A4 '\"clat_ns\"' $TMPDIR/cq-hog.json | awk -F: '/\"max\"/ {print int($2 / 1000000)}'); "
        "echo \"beside a CPU hog: $n I/Os in 5 s, clat max ${lat} ms, $((i1 - i0)) interrupts\"; "
        "[ $n -gt 0 ] && [ $((4 * (i1 - i0))) -ge $n ] || "
        "{ echo 'completions did not come by interrupt while the poller was kept off its CPU'; exit 1; }")}


def cq_param_step():
    """Guest step: virtio_sqcq.sqcq_spin_max_us changed while the pollers
    run takes effect (it is read at each window and wakeup decision): at 0
    the pollers reap none of a QD1 fio's completions, the interrupt does;
    at 1000000 (windows of the idle timeout) they reap a quarter or more.
    The value the guest booted with is put back after."""
    prm = "/sys/module/virtio_sqcq/parameters/sqcq_spin_max_us"
    phase = ("for v in 0 1000000; do echo $v > " + prm + " || { echo \"cannot set sqcq_spin_max_us=$v\"; exit 1; }; "
             "sleep 0.2; r0=$(field $st reaped); " + _cq_fio(0, "cq-param-$v", 3) +
             "n=$(ios $TMPDIR/cq-param-$v.json); r=$(( $(field $st reaped) - r0 )); "
             "line=\"$line sqcq_spin_max_us=$v: $n I/Os, pollers reaped $r;\"; "
             "if [ $v = 0 ]; then bad=$([ $((20 * r)) -le $n ] || echo 'at 0 the pollers reaped over 1/20'); "
             "else bad=$([ $((4 * r)) -ge $n ] && [ $n -gt 0 ] || echo 'at 1000000 the pollers reaped under a quarter'); fi; "
             "[ -z \"$bad\" ] || { echo $old > " + prm + "; echo \"$line $bad: the parameter did not take effect "
             "while the pollers ran\"; exit 1; }; done; ")
    return {"name": "cq-param", "type": "sh", "timeout": 60, "cmd": _CQ_SH + (
        f"st=$(echo {CQ_DIR}/stats); old=$(cat {prm}); line=''; " + phase +
        f"echo $old > {prm}; echo \"$line back to $old\"")}


def _bg_fio(name, verify):
    """Guest command: fio on the scratch region (beyond what 'write' wrote),
    in the background; its exit code lands in $TMPDIR/NAME.rc (the role's scratch directory)."""
    v = "--verify=crc32c --verify_fatal=1 --do_verify=1" if verify else "--time_based --runtime=60"
    return (f"(fio --name={name} --filename={DISK} --direct=1 --rw=randwrite --bs=4k --iodepth=32 "
            f"--ioengine=libaio --offset=256M --size=96M {v} >$TMPDIR/{name}.log 2>&1; "
            f"echo $? >$TMPDIR/{name}.rc) >/dev/null 2>&1 &")


def _bg_wait(name, what):
    return {"name": f"{name}-verify", "type": "sh", "timeout": 300, "cmd": (
        f"for i in $(seq 2400); do [ -f $TMPDIR/{name}.rc ] && break; sleep 0.1; done; "
        f"[ \"$(cat $TMPDIR/{name}.rc 2>/dev/null)\" = 0 ] || "
        f"{{ echo 'fio verify across {what} failed:'; grep -m5 -iE 'verify|bad|err=' $TMPDIR/{name}.log; "
        f"tail -8 $TMPDIR/{name}.log; exit 1; }}; "
        f"echo 'fio write+verify across {what}: ok'")}


def worker_steps(nq):
    """Worker-per-vq placement (worker_per_virtqueue=on), with I/O on every
    request queue: one polling worker per queue, each pinned with taskset
    to a CPU and found there, each in QEMU's cgroups; then, 2 s after the
    I/O ends, every worker asleep at 0% CPU."""
    stats = "$(ls /sys/kernel/debug/vhost-sqcq/$QEMU_PID-*/stats 2>/dev/null | head -1)"
    # 96 MiB in all (3/4 of verify_mb(): 12 under 'make reliability',
    # where 96 MiB of 4 KiB writes would take the debug host VM an hour)
    per = max(1, verify_mb() * 3 // 4 // nq)
    workers = ("ws=$(for t in /proc/$QEMU_PID/task/*; do [ \"$(cat $t/comm 2>/dev/null)\" = vhost-$QEMU_PID ] "
               "&& echo ${t##*/}; done); ")
    polling = ("pw=$(awk '$1 ~ /^vq/ { for (i = 2; i < NF; i++) if ($i == \"worker\" && $(i+1) > 0) print $(i+1) }' "
               "\"$st\" | sort -u); ")
    ticks = "ticks() { s=0; for t in $ws; do set -- $(cut -d')' -f2 /proc/$QEMU_PID/task/$t/stat); s=$((s + ${12} + ${13})); done; echo $s; }; "
    start = {"name": "workers-start-io", "type": "sh", "cmd": (
        f"(fio --name=workers --filename={DISK} --direct=1 --rw=randwrite --bs=4k --iodepth=8 "
        f"--ioengine=libaio --offset=256M --size={per}M --offset_increment={per}M "
        f"--numjobs={nq} --cpus_allowed=0-{nq - 1} "
        "--cpus_allowed_policy=split --verify=crc32c --verify_fatal=1 --do_verify=1 "
        ">$TMPDIR/workers.log 2>&1; echo $? >$TMPDIR/workers.rc) >/dev/null 2>&1 & sleep 3")}
    place = {"name": "workers-pinned", "type": "host", "expect_rc": 0, "timeout": 120, "cmd": (
        f"st={stats}; [ -f \"$st\" ] || {{ echo 'no poll stats for this QEMU'; exit 1; }}; " + workers +
        "n=$(echo $ws | wc -w); "
        f"[ $n -eq {nq + 1} ] || {{ echo \"expected {nq + 1} vhost workers (the default one and one per "
        "request queue), found $n\"; exit 1; }; "
        "ncpu=$(nproc); i=0; for t in $ws; do taskset -pc $((i % ncpu)) $t >/dev/null || exit 1; i=$((i + 1)); done; "
        "sleep 3; " + polling +
        f"[ $(echo $pw | wc -w) -eq {nq} ] || {{ echo \"expected {nq} polling workers, one per request queue; "
        "the stats name: $pw\"; cat \"$st\"; exit 1; }; "
        "out=''; for t in $pw; do echo $ws | tr ' ' '\\n' | grep -qx $t || { echo \"polling worker $t is not a vhost "
        "worker of QEMU\"; exit 1; }; "
        "want=$(taskset -pc $t | sed 's/.*: //'); cpu=$(cut -d')' -f2 /proc/$QEMU_PID/task/$t/stat | awk '{print $37}'); "
        "[ \"$cpu\" = \"$want\" ] || { echo \"worker $t pinned to $want runs on CPU $cpu\"; exit 1; }; "
        "cmp -s /proc/$QEMU_PID/task/$t/cgroup /proc/$QEMU_PID/cgroup || { echo \"worker $t is not in QEMU's "
        "cgroups: $(cat /proc/$QEMU_PID/task/$t/cgroup)\"; exit 1; }; out=\"$out $t@cpu$cpu\"; done; "
        f"echo \"{nq} polling workers, each pinned and found on its CPU, in QEMU's cgroups:$out\"")}
    idle = {"name": "workers-asleep", "type": "host", "expect_rc": 0, "timeout": 120, "cmd": (
        f"st={stats}; " + workers + ticks +
        "sleep 2; t0=$(ticks); sleep 1; t1=$(ticks); "
        "state=$(awk '$1 == \"state\" {print $2}' \"$st\"); "
        "[ \"$state\" = asleep ] && [ $((t1 - t0)) -le 1 ] || "
        "{ echo \"2 s after the I/O: poll state $state, workers used $((t1 - t0)) ticks in 1 s\"; exit 1; }; "
        "echo \"2 s after the I/O: all asleep, workers used $((t1 - t0)) ticks in 1 s\"")}
    return [dict(st, group="workers") for st in (start, place, _bg_wait("workers", "worker pinning"), idle)]


def pin_step():
    """Pin the guest's threads in the host (matrix.py --pin): vCPU N
    ("CPU N/KVM": the guest's QEMU runs with debug-threads=on) to the
    host's CPU N modulo its CPUs, the I/O threads (vhost workers
    "vhost-PID", QEMU iothreads "IO ID", and the peers' thread-pool
    "worker"s, which aio=threads uses on a file) to the host's last CPU,
    where the guest's last vCPU idles (a one-job fio runs on vCPU 0).
    A setup step: it runs again on each boot of the guest.  It removes
    one variable (where the scheduler puts the worker), not the noise
    of this emulated machine: pinned, baseline against baseline still
    moved 0.97-2.06x per round (docs/results.md, "The measuring stick").
    Every vCPU and at least one I/O thread must be found, or the step
    fails and says what it saw."""
    return {"name": "pin", "type": "host", "expect_rc": 0, "timeout": 60, "setup": True, "cmd": (
        "ncpu=$(nproc); io=$((ncpu - 1)); out=''; nv=0; ni=0; "
        "for t in /proc/$QEMU_PID/task/*; do c=$(cat $t/comm 2>/dev/null) || continue; "
        "case $c in 'CPU '*/*) n=${c#CPU }; n=${n%%/*}; cpu=$((n % ncpu)); nv=$((nv + 1)) ;; "
        "vhost-*|'IO '*) cpu=$io; ni=$((ni + 1)) ;; worker) cpu=$io ;; *) continue ;; esac; "
        "taskset -pc $cpu ${t##*/} >/dev/null || { echo \"taskset -pc $cpu ${t##*/} ($c) failed\"; exit 1; }; "
        "out=\"$out, $c@$cpu\"; done; "
        "smp=$(tr '\\0' '\\n' </proc/$QEMU_PID/cmdline | grep -A1 -x -- -smp | tail -1); smp=${smp%%,*}; "
        "[ $nv -ge ${smp:-1} ] && [ $ni -ge 1 ] || "
        "{ echo \"found $nv vCPU threads (-smp ${smp:-?}) and $ni I/O threads:${out#,}\"; exit 1; }; "
        "echo \"pinned:${out#,}\"")}


def fault_steps(kind):
    """The steps of _fault_steps(KIND), each marked "group": KIND."""
    return [dict(st, group=kind) for st in _fault_steps(kind)]


def _fault_steps(kind):
    """Fault injection with I/O in flight (host commands get $QEMU_PID).

    Each fault's steps carry "group": KIND, so that a nested guest that
    triple-faults in any of them runs the whole group again (start the
    I/O, inject the fault, verify), not just the step it died in
    (hostrole.run_guest).

    rmmod-busy   rmmod vhost_scsi while a guest does verified I/O: refused,
                 the module stays, the I/O verifies
    cpu-offline  the host's CPU 1 offline for 3 s and back, under verified I/O
    kill-qemu    SIGKILL the guest's QEMU mid-I/O: the poller thread and its
                 debugfs entry must be gone within 10 s (ends the guest)
    guest-reset  the guest resets itself (sysrq b) mid-I/O in the same QEMU:
                 the device is reset under the poller, the guest boots again
                 and exactly one poller serves it afterwards
    lun-relink   unlink the LUN from the vhost TPG mid-I/O and link it again
                 3 s later: the guest's fio may fail (seen: commands fail with
                 sense Data Protect, the disk stays) but must end; the disk is
                 there after the relink (else a rescan) and verified I/O on
                 it passes, the poller still serving
    """
    start = {"name": f"{kind}-start-io", "type": "sh",
             "cmd": _bg_fio(kind, kind not in ("kill-qemu", "lun-relink", "guest-reset")) + " sleep 3"}
    if kind == "rmmod-busy":
        return [start,
                {"name": "rmmod-refused", "type": "host", "expect_rc": 0, "cmd": (
                    "if rmmod vhost_scsi 2>\"$TMPDIR/rmmod.err\"; then echo 'rmmod vhost_scsi succeeded "
                    "while a guest uses it'; exit 1; fi; [ -d /sys/module/vhost_scsi ] || exit 1; "
                    "echo \"refused: $(cat \"$TMPDIR/rmmod.err\")\"")},
                _bg_wait(kind, "a refused rmmod")]
    if kind == "cpu-offline":
        cpu = "/sys/devices/system/cpu/cpu1/online"
        return [start,
                {"name": "cpu1-offline-online", "type": "host", "expect_rc": 0,
                 "destructive": "takes the host's CPU 1 offline", "cmd": (
                    f"[ -w {cpu} ] || {{ echo 'no hotpluggable CPU 1 in the host'; exit 1; }}; "
                    f"echo 0 > {cpu} || exit 1; sleep 3; echo 1 > {cpu} || exit 1; "
                    "grep -h . /sys/kernel/debug/vhost-sqcq/*/stats | grep -E '^(state|pid)' | tr '\\n' ' '")},
                _bg_wait(kind, "CPU 1 going offline and back")]
    if kind == "kill-qemu":
        return [start,
                {"name": "sigkill-qemu", "type": "host", "expect_rc": 0, "ends_guest": True,
                 "destructive": "SIGKILLs a QEMU", "cmd": (
                    # The poller's debugfs goes first in the release path
                    # (vhost_sqcq_release()), the workers later, once the
                    # endpoint's in-flight commands are done
                    # (vhost_dev_cleanup()): wait for both, 10 s in all.
                    "dbg() { ls -d /sys/kernel/debug/vhost-sqcq/$QEMU_PID-* >/dev/null 2>&1; }; "
                    "wk() { grep -qsx vhost-$QEMU_PID /proc/[0-9]*/task/*/comm; }; "
                    "dbg || { echo 'no poller before the kill'; exit 1; }; "
                    "wk || { echo 'no vhost worker before the kill'; exit 1; }; kill -9 $QEMU_PID; "
                    "d=; w=; for i in $(seq 100); do [ -z \"$d\" ] && ! dbg && d=$i; "
                    "[ -z \"$w\" ] && ! wk && w=$i; [ -n \"$d\" ] && [ -n \"$w\" ] && break; sleep 0.1; done; "
                    "[ -n \"$d\" ] || { echo 'poller of the killed QEMU still there after 10 s'; exit 1; }; "
                    "[ -n \"$w\" ] || { echo \"a vhost worker of the killed QEMU survives 10 s (its poll debugfs went "
                    "after $(((d - 1) * 100)) ms): $(grep -lsx vhost-$QEMU_PID /proc/[0-9]*/task/*/comm | tr '\\n' ' ')\"; exit 1; }; "
                    "echo \"QEMU killed with I/O in flight; poll debugfs gone after $(((d - 1) * 100)) ms, "
                    "its vhost workers after $(((w - 1) * 100)) ms\"")}]
    if kind == "guest-reset":
        return [start, {"name": "guest-reset", "type": "reboot", "timeout": 300}]
    if kind == "lun-relink":
        stats = "/sys/kernel/debug/vhost-sqcq/$QEMU_PID-*/stats"
        return [start,
                {"name": "lun-unlink-relink", "type": "host", "expect_rc": 0, "timeout": 240, "cmd": (
                    f"w0=$(awk '$1==\"wakeups\"{{print $2}}' {stats} | head -1); "
                    "targetcli $SQCQ_LIO_TPG/luns delete lun0 >\"$TMPDIR/relink.log\" 2>&1 || "
                    "{ echo 'cannot unlink lun0:'; cat \"$TMPDIR/relink.log\"; exit 1; }; sleep 3; "
                    "targetcli $SQCQ_LIO_TPG/luns create $SQCQ_LIO_BACKSTORE >>\"$TMPDIR/relink.log\" 2>&1 || "
                    "{ echo 'cannot link the LUN again:'; cat \"$TMPDIR/relink.log\"; exit 1; }; "
                    f"ls {stats} >/dev/null 2>&1 || {{ echo 'the poller is gone after the relink'; exit 1; }}; "
                    "echo \"LUN unlinked 3 s and linked again; poller alive (wakeups $w0 before)\"")},
                {"name": "lun-back-verify", "type": "sh", "timeout": 300, "cmd": (
                    f"for i in $(seq 900); do [ -f $TMPDIR/{kind}.rc ] && break; sleep 0.1; done; "
                    f"[ -f $TMPDIR/{kind}.rc ] || {{ echo 'fio (60 s, time-based) did not end within 90 s of the relink'; exit 1; }}; "
                    f"echo \"fio across the unlink ended with $(cat $TMPDIR/{kind}.rc)\"; "
                    "for i in $(seq 100); do [ -b /dev/sda ] && break; sleep 0.1; done; "
                    "n=$(dmesg | grep -c 'Attached SCSI disk'); how=\"stayed\"; [ $n -gt 1 ] && how=\"re-attached (hotplug)\"; "
                    "if [ ! -b /dev/sda ]; then how=\"re-attached (rescan)\"; "
                    "for h in /sys/class/scsi_host/host*/scan; do echo '- - -' > $h; done; "
                    "for i in $(seq 100); do [ -b /dev/sda ] && break; sleep 0.1; done; fi; "
                    "[ -b /dev/sda ] || { echo 'the disk did not come back'; dmesg | tail -15; exit 1; }; "
                    f"fio --name=back --filename={DISK} --direct=1 --rw=randwrite --bs=4k --iodepth=16 "
                    "--ioengine=libaio --offset=384M --size=32M --verify=crc32c --verify_fatal=1 "
                    ">$TMPDIR/back.log 2>&1 || { echo 'verified I/O on the relinked LUN failed:'; tail -15 $TMPDIR/back.log; exit 1; }; "
                    "echo \"$(dmesg | grep -c 'FAILED Result') commands failed while the LUN was gone; disk $how; "
                    "32 MiB written and verified after the relink\"")}]
    raise ValueError(f"unknown fault '{kind}'")
