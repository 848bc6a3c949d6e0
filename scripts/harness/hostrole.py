"""The host role: everything that runs where vhost-scsi runs.

Here that is the host VM (L1); on real hardware it is the machine itself.
Loads the modules, configures LIO with targetcli-fb, runs the nested guests
of a plan one after another, measures each fio step with the hypervisor's
counters, and writes the results under the output directory.
"""
import glob
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time

from . import counters
from . import plan as plan_lib
from . import realhost
from .guest import INIT_UP, REPORT, Guest, GuestError

# The harness's own LIO objects (realhost: nothing else is touched).
WWPN, WWPN2 = realhost.OWN_VHOST  # the guest's target; the second guest's (two-guests step)
LOOP_WWN = realhost.OWN_LOOPBACK[0]  # tcm_loop export for the host ceiling
DISK0, DISK1 = realhost.OWN_BACKSTORES
TARGETCLI_BATCH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "host", "targetcli_batch.py")


class HostError(Exception):
    pass


def rc_ok(rc, expect):
    """Does exit code rc meet a step's expect_rc (a number, or "nonzero")?"""
    return rc != 0 if expect == "nonzero" else rc == expect


class Host:
    def __init__(self, plan, out, role):
        global LIO_TIMEOUT
        self.plan = plan
        LIO_TIMEOUT = plan.get("lio", {}).get("timeout", 120)
        self.out = out
        self.role = role
        self.log_path = os.path.join(out, "host-commands.log")
        self.lio_before = set()  # LIO objects found before setup_lio
        self.found_vhost_scsi = None  # "stock" or "project": what was loaded
        self.loaded_null_blk = False
        self.backstore_path = None
        # Set once the harness may clean up after itself: its LIO names were
        # free (a refused run deletes nothing), its vhost_scsi loaded.
        self.owns_lio = False
        self.loaded_vhost_scsi = False

    def sh(self, cmd, timeout=120, check=True):
        with open(self.log_path, "a") as log:
            log.write(f"{time.strftime('%H:%M:%S')} $ {cmd}\n")
            log.flush()
            t0 = time.time()
            try:
                p = subprocess.run(cmd, shell=True, stdout=subprocess.PIPE,
                                   stderr=subprocess.STDOUT, timeout=timeout, text=True)
            except subprocess.TimeoutExpired:
                log.write(f"(timed out after {timeout}s)\n")
                raise HostError(f"'{cmd}' timed out after {timeout}s")
            log.write(p.stdout)
            log.write(f"(exit {p.returncode}, {time.time() - t0:.1f} s)\n")
        if check and p.returncode != 0:
            raise HostError(f"'{cmd}' failed ({p.returncode}): {' '.join(p.stdout.split())[:300]}")
        return p

    # -- modules ---------------------------------------------------------
    keeper = None

    def load_modules(self):
        if self.role == "vm":
            # Nested guests crashed (double fault at the syscall entry) in
            # runs where the host VM's THP was on and its CPUs were busy;
            # none have with THP off.  Under TCG, collapsing huge pages
            # changes the nested page tables while the guest runs.
            thp = "/sys/kernel/mm/transparent_hugepage/enabled"
            if os.path.exists(thp):  # not in every kernel (make kernel's has none)
                self.sh(f"echo never > {thp}")
            # Nor compaction: it migrates the nested guests' locked RAM
            # (guest_extra()) unless told not to.
            self.sh("echo 0 > /proc/sys/vm/compact_unevictable_allowed")
            self.sh("modprobe kvm_amd nested=1")
            self.start_keeper()
        elif not os.path.exists("/dev/kvm"):
            raise HostError("/dev/kvm missing: load kvm_intel or kvm_amd on this host")
        self.sh("modprobe -a vhost target_core_mod target_core_file target_core_iblock")
        self.lio_before = realhost.lio_objects()
        taken = realhost.names_taken(self.lio_before)
        if taken and self.role == "local":
            raise HostError(taken)
        self.owns_lio = True
        if os.path.exists("/sys/kernel/debug/kmemleak") and self.role == "vm":
            # Leaks from boot are not the plan's: forget what a scan finds now.
            self.sh("echo scan > /sys/kernel/debug/kmemleak; echo clear > /sys/kernel/debug/kmemleak",
                    timeout=900, check=False)

    def load_vhost_scsi(self):
        h = self.plan["host"]
        if os.path.isdir("/sys/module/vhost_scsi"):
            users = realhost.vhost_scsi_users()
            if users and self.role == "local":
                raise HostError(f"vhost_scsi is loaded and in use here ({users}): the harness replaces "
                                "it with the project's module only when no other vhost-scsi device "
                                "uses it; stop those VMs and delete those targets first, or run the "
                                "harness in its host VM (--role vm)")
            self.found_vhost_scsi = ("project" if os.path.exists("/sys/module/vhost_scsi/parameters/sqcq_enable")
                                     else "stock")
            self.unload_modules()
            if os.path.isdir("/sys/module/vhost_scsi"):
                raise HostError("vhost_scsi is loaded and in use; stop its users first")
        params, knobs = plan_lib.split_params(h.get("vhost_scsi_params", ""),
                                              "/sys/kernel/debug/vhost-sqcq")
        self.loaded_vhost_scsi = True
        if h.get("vhost_scsi", "project") == "project":
            self.sh(f"insmod {shlex.quote(h['vhost_scsi_ko'])} {params}")
        else:
            self.sh(f"modprobe vhost_scsi {params}")
        if knobs:
            self.sh(knobs)
        if self.role == "vm":
            # Text symbols, for naming a hung CPU's RIP (scripts/vm/hang-dump.py).
            dst = shlex.quote(os.path.join(self.out, "host-kallsyms.gz"))
            self.sh(f"grep -i ' t ' /proc/kallsyms | gzip -1 > {dst}", check=False)

    def start_keeper(self):
        """An idle VM for the whole run (see scripts/host/kvm_keeper.py)."""
        path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "host", "kvm_keeper.py")
        self.keeper = subprocess.Popen([sys.executable, path], stdout=subprocess.PIPE, text=True)
        line = self.keeper.stdout.readline().strip()
        if not line.startswith("ready"):
            raise HostError(f"the KVM keeper VM did not start ({self.keeper.wait(10)}): {line}")

    def stop_keeper(self):
        if self.keeper and self.keeper.poll() is None:
            self.keeper.terminate()
            self.keeper.wait(10)

    def unload_modules(self):
        """rmmod vhost_scsi once QEMU is gone: must succeed (no leaked refs).

        The fabric's configfs directory pins the module; LIO teardown
        (deleting the targets) leaves it, so it goes first.
        """
        if os.path.isdir("/sys/kernel/config/target/vhost"):
            self.sh("rmdir /sys/kernel/config/target/vhost", check=False)
        p = self.sh("rmmod vhost_scsi", check=False, timeout=60)
        return p.returncode == 0, p.stdout.strip()

    # -- LIO ---------------------------------------------------------------
    def targetcli(self, *cmds):
        """Run targetcli command lines, in order, in one targetcli process
        (scripts/host/targetcli_batch.py: targetcli-fb's own shell; a
        process per command cost 2.5-3.5 s each in the host VM)."""
        # (each command's timeout scaled by plan.write: creating the 1 GB
        # fileio backstore on tmpfs took over 120 s on the debug host VM,
        # 2026-12-01 03:29)
        tmo = LIO_TIMEOUT * len(cmds)
        self.sh(" ".join([shlex.quote(sys.executable), shlex.quote(TARGETCLI_BATCH)]
                         + [shlex.quote(c) for c in cmds]), timeout=tmo)

    def setup_lio(self):
        lio = self.plan["lio"]
        size = int(lio.get("size_mb", 1024))
        if self.role == "vm":
            # (the host VM has no D-Bus of its own; a real host keeps its own)
            os.makedirs("/run/dbus", exist_ok=True)
            if not os.path.exists("/run/dbus/system_bus_socket"):
                self.sh("dbus-daemon --system --fork --nopidfile")
        os.environ.setdefault("HOME", tempfile.gettempdir())
        kind = lio.get("backstore", "fileio")
        # self.backing: the file or device under the backstore, which the
        # peers' QEMU opens itself (peer_device); LIO's ramdisk has none.
        self.backing = None
        if kind == "fileio":
            img = lio.get("file", os.path.join(tempfile.gettempdir(), "sqcq-disk0.img"))
            create = f"/backstores/fileio create name={DISK0} file_or_dev={img} size={size}M"
            bs, self.backing = f"/backstores/fileio/{DISK0}", img
        elif kind == "rd_mcp":
            create = f"/backstores/ramdisk create name={DISK0} size={size}M"
            bs = f"/backstores/ramdisk/{DISK0}"
        elif kind == "null_blk":
            if os.path.isdir("/sys/module/null_blk"):
                raise HostError("null_blk is loaded already (someone else's /dev/nullb*): the harness "
                                "loads it with its own parameters and unloads it afterwards; use another "
                                "backstore or unload it")
            self.sh(f"modprobe null_blk nr_devices=1 gb={max(1, size // 1024)} queue_mode=2 irqmode=0")
            self.loaded_null_blk = True
            create = f"/backstores/block create name={DISK0} dev=/dev/nullb0"
            bs, self.backing = f"/backstores/block/{DISK0}", "/dev/nullb0"
        elif kind == "block":
            # A user's own device: unused, and read-only unless the plan
            # allows writes (matrix.py --allow-writes); a real host's only.
            dev = lio.get("dev", "")
            if self.role != "local":
                raise HostError(f"backstore block:{dev} is a device of a real host: it needs the local role")
            err = realhost.check_block_device(dev)
            if err:
                raise HostError(err)
            writes = realhost.writing_steps(self.plan)
            if writes and not lio.get("allow_writes"):
                raise HostError(f"backstore block:{dev} is a device of yours, exported read-only; these "
                                f"steps write to it: {', '.join(writes[:6])}{' ...' if len(writes) > 6 else ''}; "
                                "give --allow-writes to let them (its data is lost) or choose read tests")
            ro = "false" if lio.get("allow_writes") else "true"
            create = f"/backstores/block create name={DISK0} dev={dev} readonly={ro}"
            bs, self.backing = f"/backstores/block/{DISK0}", dev
        else:
            raise HostError(f"unknown backstore '{kind}' (fileio, rd_mcp, null_blk, block)")
        self.backstore_path = bs
        # For host steps that relink the LUN (plan.py fault_steps).
        os.environ.update(SQCQ_LIO_TPG=f"/vhost/{WWPN}/tpg1", SQCQ_LIO_BACKSTORE=bs)
        self.targetcli("set global auto_save_on_exit=false", create,
                       f"/vhost create {WWPN}", f"/vhost/{WWPN}/tpg1/luns create {bs}")
        self.sh("ls /sys/kernel/config/target/vhost")

    def measure_ceiling(self, tests):
        """fio on the same backstore in the host, no virtualization.

        The backstore is exported a second time through LIO's loopback
        fabric (tcm_loop), so the host's fio goes through the same target
        core and backstore as the guest's requests, minus vhost and the VM.
        One result per test ({"name", "args"}; args without a filename).
        """
        bs = self.backstore_path
        if self.plan["lio"].get("backstore") == "block":
            # A loopback LUN would show the user's disk a second time (LVM,
            # md and udev would see duplicate signatures).
            raise HostError("not measured on a device of yours (block backstore): the loopback "
                            "export would show it twice to this host")
        before = set(os.listdir("/sys/block"))
        # No udev in the host VM: load the disk driver ourselves.
        self.sh("modprobe -a tcm_loop sd_mod")
        self.targetcli(f"/loopback create {LOOP_WWN}", f"/loopback/{LOOP_WWN}/luns create {bs}")
        dev = None
        for _ in range(100):
            # (only a disk under tcm_loop's adapter: not one hot-plugged meanwhile)
            new = [d for d in set(os.listdir("/sys/block")) - before if d.startswith("sd")
                   and "tcm_loop" in os.path.realpath(f"/sys/block/{d}")]
            if new:
                dev = "/dev/" + sorted(new)[0]
                if os.path.exists(dev):
                    break
            time.sleep(0.1)
        results = []
        try:
            if not dev or not os.path.exists(dev):
                raise HostError("the loopback LUN gave no /dev/sd* within 10 s "
                                "(tcm_loop; see host-commands.log)")
            for t in tests:
                progress(self.out, f"ceiling {t['name']}")
                args = " ".join(shlex.quote(a) for a in t["args"])
                jpath = os.path.join(self.out, f"ceiling-{t['name']}.fio.json")
                r = {"guest": "host", "step": t["name"], "ok": False}
                p = self.sh(f"fio --output-format=json --output={shlex.quote(jpath)} "
                            f"--filename={dev} {args}", timeout=t.get("timeout", 300), check=False)
                try:
                    with open(jpath) as f:
                        fr = counters.fio_result(f.read())
                except OSError:
                    fr = None
                if fr:
                    r.update(fr, ok=p.returncode == 0 and not fr["fio_job_errors"])
                if not r["ok"]:
                    r["error"] = f"host fio exited {p.returncode}: {' '.join(p.stdout.split())[-300:]}"
                results.append(r)
        finally:
            self.sh(f"targetcli /loopback delete {LOOP_WWN}", check=False)
        return results

    def teardown_lio(self):
        """Delete the harness's own LIO objects, by name, and check the rest.

        Never `targetcli clearconfig`: on a real host other VMs' disks are
        LIO objects too.  Returns the "lio-cleanup" step: ok when none of
        the harness's objects is left and every other one is as found.
        """
        # One targetcli process for all (a failure is seen below, by what is left).
        own = realhost.own_objects(realhost.lio_objects())
        if own:
            try:
                self.targetcli(*map(realhost.delete_args, own))
            except HostError:
                # The batch stops at its first failure: the rest one by one.
                for obj in realhost.own_objects(realhost.lio_objects()):
                    self.sh(realhost.delete_cmd(obj), check=False)
        if self.loaded_null_blk:
            self.sh("rmmod null_blk", check=False)
            self.loaded_null_blk = False
        after = realhost.lio_objects()
        left = realhost.own_objects(after)
        changed = realhost.foreign_changes(self.lio_before, after)
        others = len([o for o in after if not realhost.is_own(o)])
        # In the host VM nobody else changes LIO: a change is the harness's
        # bug.  On a real host its user may have changed their own objects
        # meanwhile: a warning.
        fails = bool(left) or bool(changed and self.role == "vm")
        res = {"guest": "-", "step": "lio-cleanup", "ok": not fails,
               "output": f"the harness's LIO objects deleted by name; {others} other LIO object"
                         f"{'' if others == 1 else 's'} "
                         + (f"changed meanwhile ({changed})" if changed else "as found")}
        if fails:
            res["error"] = "; ".join(x for x in (f"left behind: {', '.join(left)}" if left else "",
                                                  f"LIO objects not the harness's changed: {changed}"
                                                  if changed else "") if x)
        elif changed:
            res["warning"] = f"LIO objects not the harness's changed during the run: {changed}"
        return res

    def restore_vhost_scsi(self):
        """On a real host: load Debian's vhost_scsi again if it was there."""
        if self.role != "local" or self.found_vhost_scsi is None:
            return []
        if self.found_vhost_scsi == "project":
            return [{"guest": "-", "step": "vhost_scsi-restored", "ok": True,
                     "output": "the vhost_scsi found loaded was a build of this project; left unloaded"}]
        p = self.sh("modprobe vhost_scsi", check=False)
        return [{"guest": "-", "step": "vhost_scsi-restored", "ok": p.returncode == 0,
                 "output": "Debian's vhost_scsi, found loaded, loaded again",
                 **({} if p.returncode == 0 else {"error": f"modprobe vhost_scsi: {p.stdout.strip()[-200:]}"})}]


def run_steps(g, gdir, guest_plan, counter_src):
    results = []
    for step in guest_plan["steps"]:
        name = step["name"]
        res = {"guest": guest_plan["name"], "step": name, "ok": False}
        if step["type"] == "fio":
            progress(os.path.dirname(gdir), f"step {guest_plan['name']} {name}")
        t0 = time.time()
        refused = realhost.destructive_refusal(step, guest_plan.get("_role"))
        if refused:
            res["error"] = refused
            results.append(res)
            continue
        try:
            if step["type"] == "sh":
                rc, text = g.run(step["cmd"], timeout=step.get("timeout", 120))
                res["rc"] = rc
                res["output"] = text[-4000:]
                exp = step.get("expect_rc", 0)
                res["ok"] = rc_ok(rc, exp)
                if not res["ok"]:
                    res["error"] = f"'{step['cmd']}' exited {rc}, expected {exp}: {' '.join(text.split())[-300:]}"
            elif step["type"] == "host":
                # A host command during the guest's session (fault injection).
                env = dict(os.environ, QEMU_PID=str(g.proc.pid))
                p = subprocess.run(step["cmd"], shell=True, env=env, stdout=subprocess.PIPE,
                                   stderr=subprocess.STDOUT, text=True,
                                   timeout=step.get("timeout", 120))
                res["rc"], res["output"] = p.returncode, p.stdout[-4000:]
                exp = step.get("expect_rc", 0)
                res["ok"] = rc_ok(p.returncode, exp)
                if not res["ok"]:
                    res["error"] = f"host: '{step['cmd'][:80]}...' exited {p.returncode}: {' '.join(p.stdout.split())[-300:]}"
                if res["ok"] and step.get("ends_guest"):
                    res["seconds"] = round(time.time() - t0, 1)
                    results.append(res)
                    return results
            elif step["type"] == "fio":
                res.update(run_fio(g, gdir, step, counter_src))
            elif step["type"] == "idle":
                res.update(run_idle(step, g))
            elif step["type"] == "guest_pollers":
                _, text = g.run(counters.GUEST_POLLER_CMD)
                n = counters.parse_guest_pollers(text)["pollers"]
                res["guest_pollers"] = n
                res["ok"] = n == step["count"]
                if not res["ok"]:
                    res["error"] = f"{n} guest CQ pollers running, expected {step['count']}"
            elif step["type"] == "reboot":
                res.update(run_reboot(g, gdir, guest_plan))
            elif step["type"] == "second-guest":
                res.update(run_second_guest(step, g, gdir, guest_plan))
            elif step["type"] == "pollers":
                n = counters.poller_stats()["pollers"]
                res["pollers"] = n
                res["ok"] = n == step["count"]
                if not res["ok"]:
                    res["error"] = f"{n} host pollers running, expected {step['count']}"
            else:
                raise HostError(f"unknown step type {step['type']}")
        except (GuestError, HostError, ValueError, OSError, subprocess.TimeoutExpired) as e:
            res["error"] = str(e)
            if getattr(e, "emulator", None):
                res["emulator"] = e.emulator
            results.append(res)
            res["seconds"] = round(time.time() - t0, 1)
            raise StepAbort(results)
        res["seconds"] = round(time.time() - t0, 1)
        results.append(res)
    return results


def run_reboot(g, gdir, gplan):
    """Reset the guest from inside while it writes, in the same QEMU.

    The device is reset under the running poller (QEMU stops vhost: the
    endpoint is cleared with requests in flight), the guest boots again
    and its driver starts the device anew: exactly one poller must serve
    it afterwards.
    """
    before = counters.poller_stats()["pollers"]
    secs = g.reboot()
    for r in run_steps(g, gdir, dict(gplan, steps=[x for x in gplan["steps"] if x.get("setup")]), None):
        if not r["ok"]:
            raise HostError(f"after the reset: {r['step']}: {r.get('error', '?')}")
    for _ in range(100):
        after = counters.poller_stats()["pollers"]
        if after == before:
            break
        time.sleep(0.1)
    if after != before:
        raise HostError(f"host pollers: {before} before the guest reset, {after} after it came back")
    return {"ok": True, "pollers": after,
            "output": f"guest reset (sysrq b) with fio writing; serving again after {secs:.0f} s; "
                      f"host pollers {before} -> {after}"}


# Each targetcli command's limit: the plan's (scaled by plan.write with
# SQCQ_TIMEOUT_SCALE; set by Host.__init__ from the plan).  The second
# guest's target creation on the debug host VM took over 120 s (t44,
# 2026-12-04 19:40).
LIO_TIMEOUT = 120


def lio(cmd):
    try:
        p = subprocess.run(f"targetcli {cmd}", shell=True, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True, timeout=LIO_TIMEOUT)
    except subprocess.TimeoutExpired:
        raise HostError(f"targetcli {cmd}: no answer in {LIO_TIMEOUT} s") from None
    if p.returncode:
        raise HostError(f"targetcli {cmd}: {' '.join(p.stdout.split())[-200:]}")


def then(err, more):
    """A HostError for MORE after the first failure ERR (None if none)."""
    return HostError(f"{err}; then: {more}" if err else str(more))


def remove_second_target(img):
    """Delete run_second_guest's target, backstore and image if present."""
    if os.path.isdir(f"/sys/kernel/config/target/vhost/{WWPN2}"):
        lio(f"/vhost delete {WWPN2}")
    if glob.glob(f"/sys/kernel/config/target/core/fileio_*/{DISK1}"):
        lio(f"/backstores/fileio delete {DISK1}")
    if os.path.exists(img):
        os.unlink(img)


def run_second_guest(step, g, gdir, gplan):
    """Two guests at once: a second one on its own target and disk.

    The second guest boots with the same mode and modules, both write and
    verify (crc32c) at the same time, each through its own poller; the
    second one then shuts down and its poller must go while the first
    guest's stays.  Its target goes on every path (a step that is run
    again, the first guest reset by the emulator mid-step, creates it
    anew), except when its QEMU cannot be stopped: then it is in use.
    """
    qemu, kernel, initrd, role = gplan["_boot"]
    img = os.path.join(tempfile.gettempdir(), "sqcq-disk1.img")
    n0 = counters.poller_stats()["pollers"]
    bdir = os.path.join(gdir, "second")
    os.makedirs(bdir, exist_ok=True)
    dev = f"vhost-scsi-pci,wwpn={WWPN2},num_queues=1"
    if gplan.get("device_props"):
        dev += "," + gplan["device_props"]
    fio = ("fio --name={n} --filename=/dev/sda --direct=1 --rw=randwrite --bs=4k --iodepth=16 "
           "--ioengine=libaio --offset={o} --size={mb}M --verify=crc32c --verify_fatal=1 --do_verify=1")
    tmo = step.get("timeout", 600)  # scaled with the plan (plan.write)
    mb = int(step.get("write_mb", 64))  # half of plan.verify_mb()
    err = b = None
    started = False
    try:
        lio(f"/backstores/fileio create name={DISK1} file_or_dev={img} size={step.get('size_mb', 256)}M")
        lio(f"/vhost create {WWPN2}")
        lio(f"/vhost/{WWPN2}/tpg1/luns create /backstores/fileio/{DISK1}")
        b = Guest(gplan["name"] + "-second", qemu, kernel, initrd, bdir, smp=1, mem_mb=512,
                  device=dev, boot_timeout=gplan.get("boot_timeout", 180), cpu=guest_cpu(role),
                  extra=guest_extra(role), cmdline=gplan.get("_cmdline", ""))
        try:
            b.start()
        except GuestError as e:
            # The first guest's rule (run_guest): a boot that stopped before
            # the guest's init ran is the emulator's, and the step runs again.
            e.emulator = boot_env_failure(b)
            raise
        started = True
        for r in run_steps(b, bdir, dict(gplan, steps=[x for x in gplan["steps"] if x.get("setup")]), None):
            if not r["ok"]:
                raise HostError(f"second guest: {r['step']}: {r.get('error', '?')}")
        both = counters.poller_stats()["pollers"]
        b.run(f"({fio.format(n='second', o='0', mb=mb)} >$TMPDIR/second.log 2>&1; "
              "echo $? >$TMPDIR/second.rc) >/dev/null 2>&1 &")
        rc_a, out_a = g.run(fio.format(n="first", o="384M", mb=mb) + " --output-format=terse --terse-version=3"
                            " >$TMPDIR/first.log 2>&1; rc=$?; tail -3 $TMPDIR/first.log; exit $rc", timeout=tmo)
        if rc_a:
            raise HostError(f"the first guest's fio verify failed while the second ran: {out_a[-300:]}")
        rc_b, out_b = b.run(f"for i in $(seq {tmo * 10}); do [ -f $TMPDIR/second.rc ] && break; sleep 0.1; done; "
                            "cat $TMPDIR/second.rc 2>/dev/null; tail -3 $TMPDIR/second.log", timeout=tmo + 30)
        if out_b.split()[:1] != ["0"]:
            raise HostError(f"the second guest's fio verify failed or did not end: {out_b[-300:]}")
        _, dm = b.run("dmesg", timeout=30)
        with open(b.dmesg, "w") as f:
            f.write(dm)
    except (GuestError, HostError, OSError) as e:
        err = e
    # Stopping the second guest can fail too (a QEMU that does not exit):
    # that is reported after the first failure, not instead of it, and its
    # target stays (QEMU still holds it; deleting it could block).
    try:
        if b is not None:
            b.stop() if started else b.kill()
    except GuestError as e:
        raise then(err, f"{e}; its target {WWPN2} is left in place") from None
    for _ in range(100):
        left = counters.poller_stats()["pollers"]
        if left == n0:
            break
        time.sleep(0.1)
    want = n0 + (1 if "sqcq_poll=on" in gplan.get("device_props", "") else 0)
    if err is None and (both != want or left != n0):
        err = HostError(f"host pollers: {n0} before, {both} with both guests (expected {want}), "
                        f"{left} after the second shut down (expected {n0})")
    try:
        remove_second_target(img)
    except (HostError, OSError) as e:
        err = then(err, e)
    if err:
        raise err
    return {"ok": True, "pollers": both,
            "output": f"two guests wrote and verified {mb} MiB each at once; host pollers {n0} -> {both} "
                      f"-> {left} after the second shut down"}


class StepAbort(Exception):
    def __init__(self, results):
        super().__init__("guest session aborted")
        self.results = results


def run_fio(g, gdir, step, counter_src):
    name = step["name"]
    timeout = step.get("timeout", 300)
    jpath = f"$TMPDIR/fio-{name}.json"
    args = " ".join(shlex.quote(a) for a in step["args"])
    res = {}
    measure = step.get("measure", False) and counter_src is not None
    _, gp0 = g.run(counters.GUEST_POLLER_CMD)
    if measure:
        rc, irq0 = g.run("cat /proc/interrupts")
        counter_src.begin()
    p0, t0 = PollerSample.take()
    cid, rc = g.cmd(f"fio --output-format=json --output={jpath} {args}", timeout)
    res["poller"] = PollerSample.since(p0, t0)
    if measure:
        kvm = counter_src.end()
        _, irq1 = g.run("cat /proc/interrupts")
    _, gp1 = g.run(counters.GUEST_POLLER_CMD)
    res["guest_poller"] = guest_poller_delta(gp0, gp1, res["poller"]["seconds"])
    _, ftext = g.run(f"cat {jpath}")
    _, log = g.run(f"cat $TMPDIR/o.{cid}")
    with open(os.path.join(gdir, f"{name}.fio.json"), "w") as f:
        f.write(ftext)
    with open(os.path.join(gdir, f"{name}.fio.log"), "w") as f:
        f.write(log)
    res["rc"] = rc
    fr = counters.fio_result(ftext)
    exp = step.get("expect_rc", 0)
    if fr is None:
        res["error"] = f"fio produced no JSON (rc {rc}): {' '.join(log.split())[-300:]}"
        res["ok"] = exp == "nonzero" and rc != 0
        return res
    res.update(fr)
    ios, errs = fr["ios"], fr["fio_job_errors"]
    if ios and res["guest_poller"].get("pollers"):
        # (the share of the completions the CQ pollers reaped)
        res["guest_poller"]["reaped_per_io"] = round(res["guest_poller"].get("vq_reaped", 0) / ios, 3)
    if measure:
        irqs = counters.diff(counters.parse_interrupts(irq1), counters.parse_interrupts(irq0))
        res["counters"] = {"kvm": kvm, "guest_irqs": {k: v for k, v in irqs.items() if v}}
        res["per_io"] = counters.per_io(kvm, irqs, ios, kvm["vendor"])
        if ios:
            res["per_io"]["host_wakeups"] = res["poller"].get("wakeups_vhost", 0) / ios
    res["ok"] = rc_ok(rc, exp) and (errs == 0 or exp == "nonzero")
    if not res["ok"]:
        res["error"] = f"fio exited {rc} (expected {exp}), {errs} job errors: {' '.join(log.split())[-300:]}"
    return res


def guest_extra(role):
    """More QEMU options for the nested guest.

    In the host VM its RAM is locked (and the host VM's compaction told
    to leave locked pages alone, see load_modules()): pages migrated under
    a running nested guest change its nested page tables, and under TCG
    that went with nested guests dying (a double fault with THP collapsing
    pages; triple faults on the debug host VM, docs/design.md).
    """
    return ["-overcommit", "mem-lock=on"] if emulated(role) else []


def emulated(role):
    """Is the host role running in the host VM (TCG)?  Also for the local
    role when the test of it runs there (t47 sets SQCQ_IN_HOST_VM=1)."""
    return role == "vm" or os.environ.get("SQCQ_IN_HOST_VM") == "1"


def guest_cpu(role):
    """CPU model of the nested guest.

    In the host VM, KVM runs on TCG's '-cpu max', and the XSAVE leaf it
    passes on is inconsistent: the nested kernel warns at boot ("XSAVE
    consistency problem", fpu__init_system_xstate) and, with AVX hidden too,
    breaks signal frames.  Hiding XSAVE (FXSAVE only) and PKU gives a clean
    guest.  Real hosts pass the CPU through as is.
    """
    return "host,pku=off,xsave=off" if emulated(role) else "host"


class PollerSample:
    """Host poll counters and the vhost workers' CPU time around an interval.

    The poll runs in the request vqs' kick work on the vhost workers
    ("vhost-<QEMU pid>"), so their CPU time is what polling costs, on top of
    the servicing the kick path does anyway.
    """

    @staticmethod
    def take():
        st = counters.poller_stats()
        # Sleeps (and so wakeups) of the vhost threads: the completion
        # path's thread wakeups (the old poller thread was "vhost-sqcq-*").
        st["cpu_ticks"], st["wakeups_vhost"] = counters.thread_totals("vhost-")
        return st, time.monotonic()

    @staticmethod
    def since(before, t0):
        after, t1 = PollerSample.take()
        d = {k: v for k, v in counters.diff(after, before).items()
             if k not in counters.GAUGES + ("owner_pid", "pollers", "vq_worker")}
        d["pollers"] = after["pollers"]
        for k in counters.POLICY:
            if k in after:
                d[k] = after[k]
        d["cpu_pct"] = round(100.0 * d.pop("cpu_ticks") / os.sysconf("SC_CLK_TCK") / (t1 - t0), 2)
        d["seconds"] = round(t1 - t0, 2)
        return d


def guest_poller_delta(before, after, seconds):
    """CQ poller counters and CPU between two GUEST_POLLER_CMD outputs."""
    b, a = counters.parse_guest_pollers(before), counters.parse_guest_pollers(after)
    d = {k: v for k, v in counters.diff(a, b).items()
         if k not in counters.GAUGES + ("pollers",)}
    d["pollers"] = a["pollers"]
    for k in counters.POLICY:
        if k in a:
            d[k] = a[k]
    # The guest's USER_HZ is 100 on x86.
    d["cpu_pct"] = round(100.0 * d.pop("cpu_ticks") / 100 / seconds, 2) if seconds else 0.0
    d["seconds"] = seconds
    return d


def run_idle(step, g):
    """Let the guest idle, then measure what the pollers (both sides) cost."""
    time.sleep(step.get("settle", 2))
    _, gp0 = g.run(counters.GUEST_POLLER_CMD)
    p0, t0 = PollerSample.take()
    time.sleep(step.get("seconds", 2))
    d = PollerSample.since(p0, t0)
    _, gp1 = g.run(counters.GUEST_POLLER_CMD)
    gd = guest_poller_delta(gp0, gp1, d["seconds"])
    res = {"poller": d, "guest_poller": gd, "ok": True}
    limit = step.get("max_cpu_pct")
    for side, x in (("host SQ", d), ("guest CQ", gd)):
        if limit is not None and x["cpu_pct"] > limit:
            res["ok"] = False
            res["error"] = f"{side} pollers used {x['cpu_pct']}% CPU while the guest was idle (limit {limit}%)"
    return res


def run_host_checks(host, checks):
    """Host commands with expected exit codes (before the modules load, or once LIO is up)."""
    out = []
    for c in checks:
        p = host.sh(c["cmd"], check=False, timeout=c.get("timeout", 120))
        exp = c.get("expect_rc", 0)
        ok = rc_ok(p.returncode, exp)
        for pat in c.get("expect_output", []):
            ok = ok and pat in p.stdout
        r = {"guest": "-", "step": c["name"], "ok": ok, "rc": p.returncode,
             "output": p.stdout[-c.get("keep_output", 8000):]}
        if not ok:
            r["error"] = (f"'{c['cmd']}' exited {p.returncode} (expected {exp}) "
                          f"or lacks {c.get('expect_output', [])}: {' '.join(p.stdout.split())[-300:]}")
        out.append(r)
    return out


def progress(out, msg):
    """One line per guest and per fio step, for the caller to follow."""
    with open(os.path.join(out, "progress.log"), "a") as f:
        f.write(f"{time.time():.0f} {msg}\n")


def boot_env_failure(g):
    """Why a guest that did not boot is no fault of the project's, or None.

    Nothing of ours runs in the guest before its init answers (our
    modules are loaded by a step afterwards), and the host's vhost-scsi
    has no endpoint, hence no poller, until the guest's driver sets
    DRIVER_OK.  So a boot that stopped before the guest's init printed
    its first line is the emulator's: an oops on a leftover int3 of kernel
    live patching, any other crash before that line after which the guest
    reset and booted (a double fault with a pointer for EFLAGS, debug host
    VM's t43), or a kernel that stalled (silent, or with a hung-task
    or RCU stall report) while none of QEMU's own threads (its vhost
    workers aside) is inside vhost and no SQ poller thread of an earlier
    guest is among this kernel's busiest (both seen on the debug host VM;
    Guest.post_mortem() keeps where the vCPUs were).  A report after the
    init's first line, or a post-mortem that shows vhost, is a failure.
    """
    try:
        with open(g.console, errors="replace") as f:
            text = f.read()
    except OSError:
        text = ""
    before = text.split(INIT_UP)[0]
    report = re.search(rf"[^\n]*({REPORT})[^\n]*", before)
    if "Oops: int3" in before:
        return "the nested guest oopsed on a stray int3 while booting (TCG live-patching race)"
    if report and INIT_UP in text:
        # It crashed, reset (panic=-1) and booted again (Guest.start()).
        return f"the nested guest crashed before its init ran ('{' '.join(report.group(0).split())}') and reset"
    if INIT_UP in text or not g.hang or not g.hang["threads"]:
        return None
    # QEMU's own threads, not the kernel tasks in its thread group (its
    # vhost workers "vhost-<pid>" and, since 6.12.y, KVM's NX huge page
    # recovery thread "kvm-nx-lpage-recovery"): both sleep in vhost_task_fn.
    if any(re.search(r"\bvhost_(?!task_fn)", stack) for comm, stack in g.hang["threads"]
           if not comm.startswith(("vhost-", "kvm-"))):
        return None
    if any(b.startswith("vhost-") for b in g.hang.get("busy", [])):
        return None
    what = f"stalled at boot ('{' '.join(report.group(0).split())}')" if report else \
        "printed nothing within its boot timeout"
    return f"the nested guest {what} before its init ran ({g.hang['summary']})"


def rerun_after_emulator_reset(results, todo):
    """Mark the steps an emulator's reset of the guest spoiled.

    RESULTS are one boot's, the last the step the guest died in, with
    why the reset is the emulator's (Guest.rebooted: a silent triple
    fault, or a crash in an impossible CPU state); TODO the plan's steps.
    That step runs once more on a fresh boot, with a warning, and so do
    the steps of its fault group this boot ran (plan.fault_steps: the
    I/O it verifies was started there, and a fault step may have failed
    because the guest was going down): each is renamed
    <step>-emulator-reset, so the caller keeps it to do.
    """
    last = results[-1]
    died = last["step"]
    group = next((s.get("group") for s in todo if s["name"] == died), None)
    mates = {s["name"] for s in todo if group and s.get("group") == group}
    last.update(ok=True, step=f"{died}-emulator-reset",
                warning=f"{last.pop('error')}; {last['emulator']}, so the emulator's: "
                        "step run again on a fresh boot, once")
    for r in results[:-1]:
        if r["step"] in mates:
            was = "" if r["ok"] else f"failed ({r.pop('error', '?')}), "
            r.update(ok=True, step=f"{r['step']}-emulator-reset",
                     warning=f"{was}then the emulator reset the guest in {died} of the same fault group: "
                             "the group runs again on a fresh boot, once")


def run_guest(plan, gp, out, role, counter_src):
    """Boot one nested guest and run its steps.

    If the guest dies or hangs in a step and the plan asks to go on
    ("continue_after_failure", as the matrix does), that step stays failed
    and a fresh guest runs the steps not yet run (after the setup steps
    again); otherwise the remaining steps are not run.
    """
    gdir = os.path.join(out, gp["name"])
    os.makedirs(gdir, exist_ok=True)
    qemu, peer = plan["qemu"], []
    dev = f"vhost-scsi-pci,wwpn={WWPN},num_queues={gp.get('num_queues', 1)}"
    if gp.get("device_props"):
        dev += "," + gp["device_props"]
    if gp.get("peer"):
        try:
            qemu, dev, peer = plan.get("stock_qemu", "qemu-system-x86_64"), "", peer_device(gp, plan)
        except HostError as e:
            return [{"guest": gp["name"], "step": "boot", "ok": False, "error": str(e)}]
    # The host's module parameters this guest runs with (matrix.py
    # --fixed-ceiling: each is read at every spin window).
    for k, v in gp.get("vhost_scsi_set", {}).items():
        try:
            with open(f"/sys/module/vhost_scsi/parameters/{k}", "w") as f:
                f.write(v)
        except OSError as e:
            return [{"guest": gp["name"], "step": "boot", "ok": False,
                     "error": f"could not set vhost_scsi's {k}={v} before the guest: {e}"}]
    setup = [s for s in gp["steps"] if s.get("setup")]
    todo = [s for s in gp["steps"] if not s.get("setup")]
    # (the guest's own part: module parameters of a built-in guest driver)
    cmdline = " ".join(filter(None, (plan.get("kernel_cmdline", ""), gp.get("cmdline", ""))))
    results = []
    boot = 0
    retried = False
    while True:
        boot += 1
        g = Guest(gp["name"], qemu, plan["kernel"], plan["initrd"], gdir,
                  smp=gp.get("smp", 2), mem_mb=gp.get("mem_mb", 1024), device=dev,
                  cmdline=cmdline, boot_timeout=gp.get("boot_timeout", 180),
                  cpu=guest_cpu(role), extra=guest_extra(role) + peer, boot=boot)
        step_name = "boot" if boot == 1 else f"boot{boot}"
        t0 = time.time()
        try:
            g.start()
        except GuestError as e:
            why = boot_env_failure(g) if boot == 1 else None
            if not end_guest(g, gp, results, kill=True):
                why = None
            if why:
                os.replace(g.console, os.path.join(gdir, "guest-console.boot-crash.log"))
                results.append({"guest": gp["name"], "step": "boot-crash", "ok": True,
                                "warning": f"{why}, before any project module was loaded "
                                           f"(console: {gdir}/guest-console.boot-crash.log); booted it again, once"})
                continue
            results.append({"guest": gp["name"], "step": step_name, "ok": False, "error": str(e)})
            return results
        results.append({"guest": gp["name"], "step": step_name, "ok": True,
                        "seconds": round(time.time() - t0, 1)})
        more = False
        try:
            results += run_steps(g, gdir, dict(gp, steps=setup + todo, _role=role,
                                               _boot=(plan["qemu"], plan["kernel"], plan["initrd"], role),
                                               _cmdline=cmdline),
                                 counter_src)
        except StepAbort as e:
            last = e.results[-1]
            again = last.get("emulator") and not retried
            if again:
                retried = True
                rerun_after_emulator_reset(e.results, todo)
            results += e.results
            # (steps run again were renamed above, so they stay to do)
            ran = {r["step"] for r in e.results}
            todo = [s for s in todo if s["name"] not in ran]
            more = bool((again or gp.get("continue_after_failure")) and todo)
        finally:
            try:
                _, dm = g.run("dmesg", timeout=30)
                with open(g.dmesg, "w") as f:
                    f.write(dm)
            except (GuestError, OSError):
                pass
            more = end_guest(g, gp, results) and more
        if not more:
            return results


def peer_device(gp, plan):
    """QEMU arguments of a peer mode (bench/modes.toml 'peer'): QEMU's own
    virtio-scsi (a scsi-hd) or virtio-blk on an iothread with QEMU's
    adaptive polling at its default ceiling (poll-max-ns=32768), on the
    file or device that LIO exports.  A block device is opened as LIO's
    iblock opens it (O_DIRECT, native AIO); a file as LIO's fileio uses it
    (through the page cache: targetcli's fileio default is write_back, and
    the image may sit on tmpfs, which has no O_DIRECT)."""
    back = plan.get("_backing")
    if not back:
        raise HostError(f"mode {gp['mode']} (QEMU's {gp['peer']}) needs a backstore with a file or "
                        f"device (fileio or null_blk), not '{plan.get('lio', {}).get('backstore')}'")
    cache = "cache=none,aio=native" if back.startswith("/dev/") else "cache=writeback,aio=threads"
    lio = plan.get("lio", {})
    if lio.get("backstore") == "block" and not lio.get("allow_writes"):
        cache += ",readonly=on"  # a user's device, as LIO exports it (realhost)
    n = gp.get("num_queues", 1)
    args = ["-object", "iothread,id=iot0,poll-max-ns=32768",
            "-drive", f"if=none,id=disk0,file={back},format=raw,{cache}"]
    if gp["peer"] == "virtio-blk":
        return args + ["-device", f"virtio-blk-pci,drive=disk0,iothread=iot0,num-queues={n}"]
    return args + ["-device", f"virtio-scsi-pci,id=scsi0,iothread=iot0,num_queues={n}",
                   "-device", "scsi-hd,drive=disk0,bus=scsi0.0"]


def end_guest(g, gp, results, kill=False):
    """Stop (or kill) a guest's QEMU; a QEMU that does not go away is a
    failed step of its own ("qemu-exit", with where it is stuck)."""
    try:
        g.kill() if kill else g.stop()
        return True
    except GuestError as e:
        results.append({"guest": gp["name"], "step": "qemu-exit", "ok": False, "error": str(e)})
        return False


def write_summary(out, summary, partial=False):
    summary["partial"] = partial
    with open(os.path.join(out, "summary.json.tmp"), "w") as f:
        json.dump(summary, f, indent=1)
    os.replace(os.path.join(out, "summary.json.tmp"), os.path.join(out, "summary.json"))


def own_kernel(plan):
    """The plan for a host VM booted on a kernel of 'make kernel'.

    scripts/vm/host-vm.sh passes that kernel's directory as sqcq_kernel
    (PID 1's environment); its tree carries the series, so the project's
    vhost_scsi is the one in its module directory, not the out-of-tree
    build for Debian's kernel the plan names.
    """
    if not os.environ.get("sqcq_kernel"):
        return plan
    if plan["host"].get("vhost_scsi", "project") != "project":
        raise HostError("this host VM runs the kernel of 'make kernel', which carries only the "
                        "project's vhost_scsi: a plan with the stock host module needs Debian's kernel "
                        "(unset SQCQ_L1_KERNEL)")
    ko = f"/lib/modules/{os.uname().release}/kernel/drivers/vhost/vhost_scsi.ko"
    if not os.path.exists(ko):
        raise HostError(f"{ko} missing: the kernel's modules are not mounted (scripts/vm/l1-init.sh)")
    return json.loads(json.dumps(plan).replace(json.dumps(plan["host"]["vhost_scsi_ko"])[1:-1], ko))


def lockdep_step():
    """On a kernel with lockdep: was it still checking at the end?

    Lockdep turns itself off after its first report (any report fails
    the test through the log scan); this shows it did not go quiet.
    """
    try:
        with open("/proc/lockdep_stats") as f:
            stats = dict(x.split(":", 1) for x in f.read().splitlines() if ":" in x)
    except OSError:
        return []
    on = stats.get(" debug_locks", stats.get("debug_locks", "")).strip()
    chains = stats.get(" lock-classes", "").strip()
    return [{"guest": "-", "step": "lockdep", "ok": on == "1",
             "output": f"lockdep still checking at the end (debug_locks {on}, lock classes {chains})",
             **({} if on == "1" else {"error": f"lockdep turned itself off (debug_locks {on}): see the log"})}]


def kmemleak_step(host):
    """On a kernel with kmemleak: scan once everything is torn down."""
    path = "/sys/kernel/debug/kmemleak"
    if not os.path.exists(path):
        return []
    # Objects younger than 5 s are not reported; the second scan confirms.
    time.sleep(6)
    host.sh(f"echo scan > {path}", timeout=900, check=False)
    host.sh(f"echo scan > {path}", timeout=900, check=False)
    with open(path) as f:
        report = f.read()
    with open(os.path.join(host.out, "l1-kmemleak.txt"), "w") as f:
        f.write(report)
    n = report.count("unreferenced object")
    return [{"guest": "-", "step": "kmemleak", "ok": n == 0,
             "output": f"{n} unreferenced objects",
             **({} if n == 0 else {"error": f"kmemleak: {n} unreferenced objects (l1-kmemleak.txt): "
                                            + report.strip().splitlines()[0]})}]


def run_plan(plan, out, role):
    """Run PLAN with a scratch directory of its own as $TMPDIR.

    Host commands (the plan's host steps and checks, targetcli, the
    fileio image) write their scratch files under $TMPDIR, never under a
    literal /tmp: in a host VM booted from a checkout under /tmp, /tmp is
    the read-only shared root (scripts/vm/l1-init.sh).  The directory is
    made inside the role's own temporary directory (the host VM's
    /run/tmp, the user's $TMPDIR or /tmp on a real host) and removed at
    the end.
    """
    old = {k: os.environ.get(k) for k in ("TMPDIR", "HOME", "TARGETCLI_HOME")}  # (setup_lio may set HOME)
    scratch = tempfile.mkdtemp(prefix="sqcq-host-")
    os.environ["TMPDIR"] = scratch
    # targetcli's preferences (the harness sets auto_save_on_exit=false)
    # go to the scratch directory, not to the user's ~/.targetcli.
    os.environ["TARGETCLI_HOME"] = os.path.join(scratch, "targetcli")
    tempfile.tempdir = None  # gettempdir() reads $TMPDIR again
    # SIGTERM (run-plan.sh's timeout) ends the plan like Ctrl-C: on a real
    # host the harness still removes what it made (_run_plan).
    old_term = signal.signal(signal.SIGTERM, _terminated)
    try:
        return _run_plan(plan, out, role)
    finally:
        signal.signal(signal.SIGTERM, old_term)
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        tempfile.tempdir = None
        shutil.rmtree(scratch, ignore_errors=True)


def _terminated(signum, frame):
    raise KeyboardInterrupt(f"signal {signum}")


def clean_up_local(host, counter_src, summary):
    """After a failed or interrupted run on a real host: remove what the
    harness made (never what it found) and load what it unloaded."""
    errs = []
    try:
        if counter_src:
            counter_src.teardown()
    except OSError as e:
        errs.append(f"tracing: {e}")
    try:
        if host.owns_lio:
            summary["steps"].append(host.teardown_lio())
        if host.loaded_vhost_scsi and os.path.isdir("/sys/module/vhost_scsi"):
            host.unload_modules()
        if not os.path.isdir("/sys/module/vhost_scsi"):
            summary["steps"] += host.restore_vhost_scsi()
    except (HostError, OSError) as e:
        errs.append(str(e))
    if errs:
        summary["host"]["error"] += "; then, cleaning up: " + "; ".join(errs)


def note_other_vms(seen, summary, out, exclude=()):
    """Record KVM VMs not run by this plan (realhost.other_vms) in SEEN,
    summary["host"]["other_vms"] and the progress log."""
    for pid, comm in realhost.other_vms(exclude=set(exclude) | {os.getpid()}):
        if pid not in seen:
            seen[pid] = comm
            progress(out, f"warning: another VM runs on this host (pid {pid}, {comm}): exits and "
                          "interrupt injections are host-wide counters and include theirs")
    summary["host"]["other_vms"] = [{"pid": p, "comm": c} for p, c in sorted(seen.items())]


def _run_plan(plan, out, role):
    os.makedirs(out, exist_ok=True)
    summary = {"role": role, "plan": plan.get("name", ""), "steps": [], "host": {}}
    try:
        plan = own_kernel(plan)
    except HostError as e:
        summary["host"]["error"] = str(e)
        write_summary(out, summary)
        return 1
    summary["host"]["kernel"] = os.uname().release
    host = Host(plan, out, role)
    counter_src = None
    # Other VMs on this host count in the host-wide exit and injection
    # counters: named in the summary (the report warns), looked for at the
    # start and at the end.
    others = {}
    note_other_vms(others, summary, out)
    torn_down = False
    bug = None
    try:
        host.load_modules()
        summary["steps"] += run_host_checks(host, plan["host"].get("pre", []))
        for c in plan["host"].get("setup", []):
            host.sh(c)
        host.load_vhost_scsi()
        host.setup_lio()
        plan = dict(plan, _backing=host.backing)
        try:
            counter_src = counters.KvmCounters()
            counter_src.setup(plan["host"].get("shutdown_trace", True))
        except (RuntimeError, OSError) as e:
            summary["host"]["counters_error"] = str(e)
        summary["steps"] += run_host_checks(host, plan["host"].get("checks", []))
        if plan["host"].get("ceiling"):
            try:
                summary["steps"] += host.measure_ceiling(plan["host"]["ceiling"])
            except HostError as e:
                # The guests still run; the report shows the ceiling failed.
                summary["steps"] += [{"guest": "host", "step": t["name"], "ok": False,
                                      "error": f"host ceiling: {e}"} for t in plan["host"]["ceiling"]]
            write_summary(out, summary, partial=True)
        for i, gp in enumerate(plan["guests"]):
            progress(out, f"guest {i + 1}/{len(plan['guests'])}: {gp['name']}")
            summary["steps"] += run_guest(plan, gp, out, role, counter_src)
            # Written after every guest, so a host that dies later keeps these.
            write_summary(out, summary, partial=True)
        # Removing the histograms unregisters tracepoints, i.e. live-patches
        # kernel text; under TCG that oopsed the host VM on a stray int3
        # once all cells were done (docs/design.md).  The host VM is thrown
        # away after the plan, so it keeps them (also t47's local role run
        # inside it); a real host cleans up.
        if counter_src and not emulated(role):
            counter_src.teardown()
        note_other_vms(others, summary, out, exclude=(host.keeper.pid,) if host.keeper else ())
        torn_down = True
        summary["steps"].append(host.teardown_lio())
        # The keeper VM stays too: destroying it disables the preempt
        # notifier key, which live-patches __schedule() while the other
        # CPU may be in it (the int3 oops above).
        if role != "vm":
            host.stop_keeper()
        ok, msg = host.unload_modules()
        summary["steps"].append({"guest": "-", "step": "rmmod-vhost_scsi", "ok": ok,
                                 **({} if ok else {"error": f"rmmod vhost_scsi failed: {msg}"})})
        if ok:
            summary["steps"] += host.restore_vhost_scsi()
        summary["steps"] += kmemleak_step(host) + lockdep_step()
    except HostError as e:
        summary["host"]["error"] = str(e)
    except (Exception, KeyboardInterrupt) as e:  # a bug; Ctrl-C or SIGTERM
        summary["host"]["error"] = f"stopped by {type(e).__name__}: {e}"
        if not isinstance(e, KeyboardInterrupt):
            bug = e
    if "error" in summary["host"] and role == "local" and not torn_down:
        # A real host keeps running: what the harness made goes even
        # after a failure (a guest whose QEMU did not exit was reported
        # by its step; deleting its target may fail, and says so).
        clean_up_local(host, counter_src, summary)
    write_summary(out, summary)
    if bug is not None:
        raise bug  # with its traceback, after the cleanup
    failed = "error" in summary["host"] or not all(s["ok"] for s in summary["steps"])
    return 1 if failed else 0
