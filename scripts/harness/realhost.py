"""What the harness may touch on a host that is not its own.

In the host VM (role "vm") everything is the harness's: the VM boots for
one plan and is thrown away.  On a real KVM host (role "local") other VMs
and other LIO users may be there, so the harness keeps to what it made:

- LIO: only its own objects, by name (OWN_*); it refuses to start when one
  of those names exists already, deletes them by name at the end (never
  `targetcli clearconfig`), and checks that every other object is as it
  found it.
- vhost_scsi: a loaded module is replaced only when nothing uses it, and
  Debian's module is loaded again afterwards if that is what was there.
- Destructive steps (a host CPU offline, SIGKILL of a QEMU) need
  SQCQ_ALLOW_DESTRUCTIVE=1.
- A user's block device is exported read-only; a plan that writes is
  refused unless it allows writes (matrix.py --allow-writes).
- Other VMs running: the exit and injection counters are host-wide, so
  they are named in the summary and the report.
"""
import os
import re
import stat
import subprocess

CFG = "/sys/kernel/config/target"
# The harness's LIO names: WWNs naa.50014050000000xx (the guest's target,
# the loopback export of the host ceiling, the second guest's; tests make
# more in that range) and backstores sqcq_* under any backstore type.
OWN_WWN_PREFIX = "naa.50014050000000"
OWN_BACKSTORE_PREFIX = "sqcq_"
OWN_VHOST = ("naa.5001405000000001", "naa.5001405000000003")
OWN_LOOPBACK = ("naa.5001405000000002",)
OWN_BACKSTORES = ("sqcq_disk0", "sqcq_disk1")
# configfs HBA directory -> targetcli's backstore type.
HBA_TYPES = {"fileio": "fileio", "iblock": "block", "rd_mcp": "ramdisk", "pscsi": "pscsi", "user": "user"}
HBA = re.compile(r"^(%s)_\d+$" % "|".join(HBA_TYPES))
ALLOW_DESTRUCTIVE = "SQCQ_ALLOW_DESTRUCTIVE"
# What a step's fio arguments or shell command look like when they write.
WRITES = re.compile(r"--rw=\S*(write|rw|trim)|\brw=(\S*write|rw|randrw|readwrite|trim)|\bdd\b[^;|&]*\bof=|\bmkfs")


def lio_objects(cfg=None):
    """Every LIO object configfs shows: "<fabric>/<wwn>" for each fabric's
    targets (vhost, loopback, iscsi, ...) and "core/<hba>/<name>" for each
    backstore."""
    cfg = cfg or CFG
    out = set()
    if not os.path.isdir(cfg):
        return out
    for top in os.listdir(cfg):
        d = os.path.join(cfg, top)
        if not os.path.isdir(d):
            continue
        if top == "core":
            for hba in os.listdir(d):
                hd = os.path.join(d, hba)
                if HBA.match(hba) and os.path.isdir(hd):
                    out |= {f"core/{hba}/{x}" for x in os.listdir(hd) if os.path.isdir(os.path.join(hd, x))}
        else:
            out |= {f"{top}/{x}" for x in os.listdir(d)
                    if os.path.isdir(os.path.join(d, x)) and x != "discovery_auth"}
    return out


def is_own(obj):
    kind, _, rest = obj.partition("/")
    if kind in ("vhost", "loopback"):
        return re.fullmatch(re.escape(OWN_WWN_PREFIX) + r"[0-9a-f]{2}", rest) is not None
    if kind == "core":
        return rest.split("/", 1)[-1].startswith(OWN_BACKSTORE_PREFIX)
    return False


def own_objects(objs):
    """The harness's objects among OBJS, in the order they can be deleted:
    targets before backstores (a LUN pins its backstore)."""
    return sorted((o for o in objs if is_own(o)), key=lambda o: (o.startswith("core/"), o))


def delete_args(obj):
    """targetcli's arguments that delete one object of lio_objects()."""
    kind, _, rest = obj.partition("/")
    if kind == "core":
        hba, name = rest.split("/", 1)
        return f"/backstores/{HBA_TYPES[hba.rsplit('_', 1)[0]]} delete {name}"
    return f"/{kind} delete {rest}"


def delete_cmd(obj):
    return "targetcli " + delete_args(obj)


def names_taken(objs):
    """An error if LIO already has objects under the harness's names."""
    taken = own_objects(objs)
    if not taken:
        return None
    return ("LIO already has objects under the names this harness creates, and it does not touch "
            f"what it did not make: {', '.join(taken)}.  If an earlier run of the harness left them "
            "(it was killed), delete them: " + "; ".join(delete_cmd(o) for o in taken))


def foreign_changes(before, after):
    """What changed among the objects the harness does not own."""
    b = {o for o in before if not is_own(o)}
    a = {o for o in after if not is_own(o)}
    gone, new = sorted(b - a), sorted(a - b)
    if not gone and not new:
        return None  # (the caller decides whether that fails: a user may change LIO meanwhile)
    return "; ".join(x for x in (f"gone: {', '.join(gone)}" if gone else "",
                                 f"appeared: {', '.join(new)}" if new else "") if x)


def vhost_scsi_users(cfg=None, sysmod="/sys/module/vhost_scsi"):
    """Why the loaded vhost_scsi must stay (None if nothing uses it)."""
    if not os.path.isdir(sysmod):
        return None
    targets = sorted(o.split("/", 1)[1] for o in lio_objects(cfg) if o.startswith("vhost/"))
    if targets:  # (each target, TPG and LUN holds references of its own)
        return f"vhost-scsi targets {', '.join(targets)}"
    try:
        with open(os.path.join(sysmod, "refcnt")) as f:
            refs = int(f.read().strip() or 0)
    except (OSError, ValueError):
        refs = 0
    # The vhost fabric's configfs directory holds one reference of its
    # own, also once its last target is gone (the harness removes it);
    # with no target, any other is an open /dev/vhost-scsi.
    if os.path.isdir(os.path.join(cfg or CFG, "vhost")):
        refs -= 1
    if refs > 0:
        return f"{refs} module reference{'s' if refs > 1 else ''} with no target: an open /dev/vhost-scsi (a VM)"
    return None


def open_files(proc="/proc", exclude=()):
    """(pid, fd path) of every open file of every process but EXCLUDE's
    and their children's."""
    for pid in os.listdir(proc):
        if not pid.isdigit() or int(pid) in exclude:
            continue
        try:
            with open(os.path.join(proc, pid, "stat")) as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            fds = os.listdir(os.path.join(proc, pid, "fd"))
        except (OSError, ValueError, IndexError):
            continue
        if ppid in exclude:
            continue
        for fd in fds:
            yield int(pid), os.path.join(proc, pid, "fd", fd)


def comm(pid, proc="/proc"):
    try:
        with open(os.path.join(proc, str(pid), "comm")) as f:
            return f.read().strip()
    except OSError:
        return "?"


def other_vms(exclude=(), proc="/proc"):
    """KVM VMs of other processes: [(pid, comm)], from their kvm-vm fds.

    EXCLUDE: pids whose VMs (and whose children's) are the harness's own.
    """
    found = set()
    for pid, fd in open_files(proc, exclude):
        try:
            if pid not in found and os.readlink(fd) == "anon_inode:kvm-vm":
                found.add(pid)
        except OSError:
            continue
    return sorted((pid, comm(pid, proc)) for pid in found)


def destructive_refusal(step, role, env=os.environ):
    """Why a destructive step may not run here (None if it may)."""
    what = step.get("destructive")
    if not what or role != "local" or env.get(ALLOW_DESTRUCTIVE) == "1":
        return None
    return (f"step '{step['name']}' {what}; on a real host that needs {ALLOW_DESTRUCTIVE}=1 "
            "(not set: the step did not run)")


def writing_steps(plan):
    """Names of the plan's steps that write to the disk."""
    out = []
    for t in plan.get("host", {}).get("ceiling", []):
        if WRITES.search(" ".join(t.get("args", []))):
            out.append(f"host ceiling {t['name']}")
    for g in plan.get("guests", []):
        for s in g.get("steps", []):
            text = " ".join(s.get("args", [])) + " " + s.get("cmd", "")
            # (a second guest writes to a disk of its own, sqcq_disk1, and
            # the first guest meanwhile to its disk)
            if WRITES.search(text) or s.get("type") == "second-guest":
                out.append(f"{g.get('name', '?')}: {s['name']}")
    return out


def device_opener(rdev, proc="/proc"):
    """(pid, comm) of a process with block device RDEV open, or None."""
    for pid, fd in open_files(proc, exclude={os.getpid()}):
        try:
            st = os.stat(fd)
        except OSError:
            continue
        if stat.S_ISBLK(st.st_mode) and st.st_rdev == rdev:
            return pid, comm(pid, proc)
    return None


def check_block_device(dev, mounts="/proc/mounts", swaps="/proc/swaps", sysdev="/sys/dev/block"):
    """An error if DEV is not a block device the harness may export whole."""
    try:
        st = os.stat(dev)
    except OSError as e:
        return f"backstore block:{dev}: {e.strerror}"
    if not stat.S_ISBLK(st.st_mode):
        return f"backstore block:{dev} is not a block device"
    # An exclusive open fails while a filesystem, dm, md or swap holds it.
    try:
        os.close(os.open(dev, os.O_RDONLY | os.O_EXCL))
    except OSError as e:
        return f"backstore block:{dev} is in use ({e.strerror}: mounted, swap, or held by dm/md or another exclusive user)"
    opener = device_opener(st.st_rdev)
    if opener:
        return f"backstore block:{dev} is open in process {opener[0]} ({opener[1]}): another VM's disk?"
    majmin = f"{os.major(st.st_rdev)}:{os.minor(st.st_rdev)}"
    # The device and its partitions, as major:minor.
    devs = {majmin}
    base = os.path.join(sysdev, majmin)
    try:
        for x in os.listdir(base):
            p = os.path.join(base, x, "dev")
            if os.path.exists(os.path.join(base, x, "partition")) and os.path.exists(p):
                with open(p) as f:
                    devs.add(f.read().strip())
    except OSError:
        pass
    for d in devs:
        try:
            holders = os.listdir(os.path.join(sysdev, d, "holders"))
        except OSError:
            holders = []
        if holders:
            return f"backstore block:{dev} is in use ({d} is held by {', '.join(holders)}: device mapper, md or similar)"
    for table in (mounts, swaps):
        try:
            with open(table) as f:
                lines = f.read().splitlines()
        except OSError:
            continue
        for line in lines:
            src = line.split()[0] if line.split() else ""
            if not src.startswith("/dev/"):
                continue
            try:
                r = os.stat(src).st_rdev
            except OSError:
                continue
            if f"{os.major(r)}:{os.minor(r)}" in devs:
                return f"backstore block:{dev} is in use: {src} is {'swap' if table == swaps else 'mounted'} ({table})"
    return None


def local_role_error(plan, release=None, kvm="/dev/kvm"):
    """Why this machine cannot be the host role (None if it can): a KVM
    host running the kernel the project's vhost_scsi was built for."""
    try:
        if not stat.S_ISCHR(os.stat(kvm).st_mode):
            raise OSError
    except OSError:
        return (f"{kvm} missing or not a device: this is not a KVM host (load kvm_intel or kvm_amd), or run the "
                "harness in its host VM (--role vm)")
    release = release or os.uname().release
    host = plan.get("host", {})
    if host.get("vhost_scsi", "project") != "project":
        return None
    ko = host.get("vhost_scsi_ko", "")
    try:
        p = subprocess.run(["modinfo", "-F", "vermagic", ko], stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"cannot read the vermagic of {ko}: {e}"
    built = p.stdout.split()[0] if p.returncode == 0 and p.stdout.split() else None
    if not built:
        return f"cannot read the vermagic of {ko} (make modules): {' '.join(p.stdout.split())[:200]}"
    if built != release:
        return (f"{ko} was built for kernel {built}, but this host runs {release}: build the modules "
                f"for the running kernel (make modules KDIR=/lib/modules/{release}/build) or boot {built}")
    return None
