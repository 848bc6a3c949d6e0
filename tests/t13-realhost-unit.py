#!/usr/bin/python3
# Description: on a real KVM host the harness touches only what it made
# (scripts/harness/realhost.py, issue 21).  LIO teardown deletes the
# harness's own objects by name, targets before backstores, and never
# runs `targetcli clearconfig` (the old teardown did: it wiped every LIO
# object of the host, other VMs' disks included); an object of someone
# else's stays, and one that changed fails the cleanup step; a name of
# the harness's already taken refuses the run with the delete commands.
# A vhost_scsi in use (targets, references) is not replaced.  Destructive
# steps (CPU offline, SIGKILL of a QEMU) need SQCQ_ALLOW_DESTRUCTIVE=1 on
# the local role.  A user's block device: the plan's write steps are
# found, a mounted or held device is refused.  Other VMs are found by
# their kvm-vm fds, the harness's own children not.  The local role
# refuses a host without /dev/kvm or whose kernel is not the modules'.
# No VM: a configfs tree and a /proc of files stand in.
# timeout: 60
import os
import sys
import tempfile
import unittest

sys.dont_write_bytecode = True
TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.join(TOP, "scripts"))
from harness import hostrole  # noqa: E402
from harness import plan as P  # noqa: E402
from harness import realhost  # noqa: E402


def mkdirs(root, *paths):
    for p in paths:
        os.makedirs(os.path.join(root, p), exist_ok=True)


class FakeConfigfs:
    """A configfs of LIO with the harness's objects and someone else's."""

    def __init__(self, root):
        self.root = root
        mkdirs(root, "vhost/naa.5001405000000001/tpg1/lun/lun_0",
               "vhost/naa.5001405000000003/tpg1",
               "loopback/naa.5001405000000002/tpg1",
               "core/fileio_0/sqcq_disk0", "core/fileio_1/sqcq_disk1",
               # someone else's: an iSCSI target, a vhost target and its backstores
               "iscsi/iqn.2003-01.org.linux-iscsi.other:vm7/tpgt_1", "iscsi/discovery_auth",
               "vhost/naa.500140512345678a/tpg1",
               "core/iblock_0/vm7-disk", "core/fileio_2/disk0", "core/alua/x")
        open(os.path.join(root, "vhost", "version"), "w").close()


class Lio(unittest.TestCase):
    def setUp(self):
        self.d = tempfile.mkdtemp()
        self.cfg = FakeConfigfs(os.path.join(self.d, "target"))
        realhost.CFG = self.cfg.root

    def test_inventory_and_ownership(self):
        objs = realhost.lio_objects()
        self.assertIn("iscsi/iqn.2003-01.org.linux-iscsi.other:vm7", objs)
        self.assertNotIn("iscsi/discovery_auth", objs)
        self.assertNotIn("vhost/version", objs)
        self.assertNotIn("core/alua/x", objs)
        own = sorted(o for o in objs if realhost.is_own(o))
        self.assertEqual(own, ["core/fileio_0/sqcq_disk0", "core/fileio_1/sqcq_disk1",
                               "loopback/naa.5001405000000002", "vhost/naa.5001405000000001",
                               "vhost/naa.5001405000000003"])
        # 'disk0', the old backstore name, is anybody's; so is a WWN outside the range
        self.assertFalse(realhost.is_own("core/fileio_2/disk0"))
        self.assertFalse(realhost.is_own("vhost/naa.500140512345678a"))
        self.assertEqual(realhost.delete_cmd("core/iblock_0/vm7-disk"), "targetcli /backstores/block delete vm7-disk")
        self.assertEqual(realhost.delete_cmd("vhost/naa.5001405000000001"),
                         "targetcli /vhost delete naa.5001405000000001")

    def test_names_taken_refuses_with_commands(self):
        msg = realhost.names_taken(realhost.lio_objects())
        self.assertIn("does not touch what it did not make", msg)
        self.assertIn("targetcli /backstores/fileio delete sqcq_disk0", msg)
        self.assertIsNone(realhost.names_taken({"core/fileio_2/disk0", "iscsi/iqn.x"}))

    def teardown(self, change_foreign=False, role="local"):
        before = realhost.lio_objects()
        h = hostrole.Host({"host": {}, "lio": {}}, self.d, role)
        h.lio_before = before
        ran = []
        foreign = [change_foreign]

        def targetcli(*cmds):
            for c in cmds:
                sh("targetcli " + c)

        def sh(cmd, timeout=120, check=True):
            ran.append(cmd)
            # targetcli deleting what it names, nothing else
            obj = [o for o in realhost.lio_objects() if realhost.delete_cmd(o) == cmd]
            for o in obj:
                kind, _, rest = o.partition("/")
                path = os.path.join(self.cfg.root, "core" if kind == "core" else kind,
                                    *rest.split("/"))
                for top, dirs, _files in os.walk(path, topdown=False):
                    os.rmdir(top)
            if foreign[0]:  # someone else deletes their disk meanwhile
                os.rmdir(os.path.join(self.cfg.root, "core/iblock_0/vm7-disk"))
                foreign[0] = False
            return type("P", (), {"returncode": 0, "stdout": ""})()
        h.sh, h.targetcli = sh, targetcli
        return h.teardown_lio(), ran, before

    def test_teardown_deletes_only_its_own(self):
        res, ran, before = self.teardown()
        self.assertFalse([c for c in ran if "clearconfig" in c], ran)
        self.assertTrue(res["ok"], res)
        self.assertEqual(len(ran), 5, ran)
        # targets (vhost, loopback) before backstores
        self.assertTrue(all("backstores" in c for c in ran[3:]) and
                        not any("backstores" in c for c in ran[:3]), ran)
        after = realhost.lio_objects()
        self.assertEqual(after, {o for o in before if not realhost.is_own(o)})
        self.assertIn("4 other LIO objects as found", res["output"])

    def test_teardown_notices_a_foreign_change(self):
        # On a real host its user may change their own objects: a warning.
        res, _, _ = self.teardown(change_foreign=True)
        self.assertTrue(res["ok"], res)
        self.assertIn("gone: core/iblock_0/vm7-disk", res["warning"])

    def test_teardown_in_the_host_vm_fails_on_any_change(self):
        self.cfg = FakeConfigfs(self.cfg.root)
        res, _, _ = self.teardown(change_foreign=True, role="vm")
        self.assertFalse(res["ok"])
        self.assertIn("gone: core/iblock_0/vm7-disk", res["error"])

    def test_vhost_scsi_in_use(self):
        mod = os.path.join(self.d, "module")
        os.makedirs(mod)
        with open(os.path.join(mod, "refcnt"), "w") as f:
            f.write("9\n")
        why = realhost.vhost_scsi_users(sysmod=mod)
        self.assertEqual(why, "vhost-scsi targets naa.5001405000000001, naa.5001405000000003, naa.500140512345678a")
        self.assertIsNone(realhost.vhost_scsi_users(sysmod=os.path.join(self.d, "absent")))
        # an empty fabric directory left by someone's last target: unused
        for w in os.listdir(os.path.join(self.cfg.root, "vhost")):
            if w.startswith("naa."):
                for top, _d, _f in os.walk(os.path.join(self.cfg.root, "vhost", w), topdown=False):
                    os.rmdir(top)
        with open(os.path.join(mod, "refcnt"), "w") as f:
            f.write("1\n")
        self.assertIsNone(realhost.vhost_scsi_users(sysmod=mod))
        # no target, but one more reference: an open /dev/vhost-scsi
        with open(os.path.join(mod, "refcnt"), "w") as f:
            f.write("2\n")
        self.assertEqual(realhost.vhost_scsi_users(sysmod=mod),
                         "1 module reference with no target: an open /dev/vhost-scsi (a VM)")


class Steps(unittest.TestCase):
    def test_destructive_steps_need_the_flag_on_a_real_host(self):
        steps = {s["name"]: s for k in ("cpu-offline", "kill-qemu") for s in P.fault_steps(k)}
        for name in ("cpu1-offline-online", "sigkill-qemu"):
            st = steps[name]
            self.assertIn(realhost.ALLOW_DESTRUCTIVE, realhost.destructive_refusal(st, "local", env={}))
            self.assertIsNone(realhost.destructive_refusal(st, "local", env={realhost.ALLOW_DESTRUCTIVE: "1"}))
            self.assertIsNone(realhost.destructive_refusal(st, "vm", env={}))
        self.assertIsNone(realhost.destructive_refusal(steps["cpu-offline-start-io"], "local", env={}))

    def test_writing_steps(self):
        modes = P.load_modes()
        reads = [{"name": "r", "type": "fio", "args": P.fio_args("baseline", modes, "randread")}]
        writes = [{"name": "w", "type": "fio", "args": P.fio_args("baseline", modes, "randwrite")},
                  {"name": "dd", "type": "sh", "cmd": "dd if=/dev/zero of=/dev/sda bs=4k count=1"},
                  {"name": "second", "type": "second-guest"}]
        plan = {"guests": [{"name": "g", "steps": reads + writes + P.verify_steps("baseline", modes)}]}
        got = realhost.writing_steps(plan)
        self.assertEqual(got, ["g: w", "g: dd", "g: second", "g: verify-write", "g: verify-reread",
                               "g: corrupt-one-block", "g: verify-detects-corruption"])
        self.assertEqual(realhost.writing_steps({"guests": [{"name": "g", "steps": reads}]}), [])

    def test_block_device_checks(self):
        d = tempfile.mkdtemp()
        f = os.path.join(d, "file")
        open(f, "w").close()
        self.assertIn("is not a block device", realhost.check_block_device(f))
        self.assertIn("No such file", realhost.check_block_device(os.path.join(d, "none")))
        with open("/proc/mounts") as f:
            mounts = f.read().splitlines()
        for line in mounts:
            src = line.split()[0]
            if src.startswith("/dev/") and os.path.exists(src):
                import stat
                if stat.S_ISBLK(os.stat(src).st_mode):
                    self.assertIn("in use", realhost.check_block_device(src))
                    break

    def test_backstore_argument(self):
        self.assertEqual(P.parse_backstore("block:/dev/nvme0n1"), ("block", "/dev/nvme0n1"))
        self.assertEqual(P.parse_backstore("fileio"), ("fileio", ""))
        for bad in ("block", "block:nvme0n1", "fileio:/dev/x", "nvme"):
            self.assertRaises(ValueError, P.parse_backstore, bad)
        plan = P.new_plan("x", {"qemu": "q", "kernel": "k", "initrd": "i", "vhost_scsi_ko": "v"},
                          "block:/dev/sdz")
        self.assertEqual(plan["lio"], {"backstore": "block", "size_mb": 1024, "dev": "/dev/sdz",
                                       "allow_writes": False})


class Host(unittest.TestCase):
    def test_other_vms(self):
        proc = tempfile.mkdtemp()
        for pid, ppid, comm, link in ((100, 1, "qemu-system-x86", "anon_inode:kvm-vm"),
                                      (200, os.getpid(), "qemu-system-x86", "anon_inode:kvm-vm"),
                                      (300, 1, "bash", "/dev/pts/0")):
            mkdirs(proc, f"{pid}/fd")
            os.symlink(link, os.path.join(proc, str(pid), "fd", "3"))
            with open(os.path.join(proc, str(pid), "stat"), "w") as f:
                f.write(f"{pid} ({comm}) S {ppid} 0 0\n")
            with open(os.path.join(proc, str(pid), "comm"), "w") as f:
                f.write(comm + "\n")
        self.assertEqual(realhost.other_vms(exclude={os.getpid()}, proc=proc), [(100, "qemu-system-x86")])

    def test_local_role_refusals(self):
        d = tempfile.mkdtemp()
        nokvm = os.path.join(d, "kvm")
        open(nokvm, "w").close()
        plan = {"host": {"vhost_scsi_ko": os.path.join(d, "none.ko")}}
        self.assertIn("missing or not a device", realhost.local_role_error(plan, kvm=nokvm))
        self.assertIn("cannot read the vermagic", realhost.local_role_error(plan, kvm="/dev/null"))
        ko = os.path.join(TOP, "build", "kmod", "drivers", "vhost", "vhost_scsi.ko")
        if os.path.exists(ko):
            built = os.popen(f"modinfo -F vermagic {ko}").read().split()[0]
            plan = {"host": {"vhost_scsi_ko": ko}}
            self.assertIsNone(realhost.local_role_error(plan, release=built, kvm="/dev/null"))
            self.assertIn(f"was built for kernel {built}, but this host runs 1.2.3",
                          realhost.local_role_error(plan, release="1.2.3", kvm="/dev/null"))


if __name__ == "__main__":
    unittest.main(verbosity=2)
