"""The nested guest (L2): its QEMU process and the command channel to it.

The guest's init (scripts/guest/init) serves commands on a virtio-serial
port; see that file for the protocol.
"""
import glob
import os
import re
import socket
import subprocess
import tempfile
import time


# The first line scripts/guest/init prints: the guest's kernel booted.
INIT_UP = "SQCQ-L2: up"
# Kernel reports on a guest's console (any of them rules out a silent triple fault).
REPORT = r"Kernel panic|Oops|BUG:|WARNING:|general protection|double fault|Call Trace|INFO: task|stall"
# Where x86 Linux's emergency restart triple-faults on purpose (its last
# resort, after the keyboard controller and ACPI resets it asked for).
RESTART = "machine_emergency_restart+"
# RFLAGS bits no x86 CPU ever holds set, nor lets software set (3, 5, 15
# and 22-63; bit 1 always reads 1): Intel SDM vol. 1, 3.4.3.
RFLAGS_RESERVED = 0xffffffffffc08028


def impossible_frame(text):
    """The EFLAGS of the first register dump after TEXT's first kernel
    report, if no x86 CPU can be in that state, else None.

    The frame of an exception is pushed by the CPU (here the emulated
    one: TCG's nested SVM under the host VM's KVM), so reserved RFLAGS
    bits in it are a made-up CPU state, which no bug in a driver can
    produce: the nested guest's double faults on the debug host VM (t43
    at boot with no module loaded, t21 in fork) had 04b78752 and 3fc246a6.
    """
    m = re.search(REPORT, text)
    f = m and re.search(r"EFLAGS: ([0-9a-f]+)", text[m.start():])
    flags = int(f.group(1), 16) if f else 2
    return f.group(1) if flags & RFLAGS_RESERVED or not flags & 2 else None


class GuestError(Exception):
    pass


class GuestTimeout(GuestError):
    """The guest said nothing within the time given."""


class Guest:
    def __init__(self, name, qemu, kernel, initrd, outdir, smp=2, mem_mb=1024,
                 device="", cmdline="", boot_timeout=180, cpu="host", boot=1, extra=()):
        self.name = name
        self.kernel = kernel
        self.outdir = outdir
        self.boot_timeout = boot_timeout
        self.sock_path = os.path.join(tempfile.gettempdir(), f"sqcq-{name}-{os.getpid()}.sock")
        sfx = "" if boot == 1 else f"-boot{boot}"
        self.console = os.path.join(outdir, f"guest-console{sfx}.log")
        self.qemu_log = os.path.join(outdir, f"qemu{sfx}.log")
        self.reset_log = os.path.join(outdir, f"qemu-resets{sfx}.log")
        self.exits_log = os.path.join(outdir, f"kvm-exits{sfx}.txt")
        self.dmesg = os.path.join(outdir, f"guest-dmesg{sfx}.txt")
        self.mon_path = self.sock_path[:-len(".sock")] + ".mon"
        self.argv = [
            # debug-threads: the vCPU threads are "CPU N/KVM" and the
            # iothreads "IO ID" (plan.pin_step finds them by name).
            qemu, "-name", f"{name.replace(',', '_')},debug-threads=on", "-enable-kvm", "-cpu", cpu, "-smp", str(smp),
            "-m", f"{mem_mb}M", "-L", "/usr/share/seabios", "-L", "/usr/share/qemu", "-nodefaults", "-display", "none",
            "-serial", f"file:{self.console}",
            "-kernel", kernel, "-initrd", initrd,
            # nokaslr: the RIPs of a post-mortem resolve with System.map.
            # hung_task_panic: a task blocked for 120 s is already a failure
            # (tests/lib/scanlog.py); with it the kernel turns the console
            # verbose first, so the blocked task's stack and held locks reach
            # the console (loglevel=4 hides them), then panics and resets.
            "-append", f"console=ttyS0 loglevel=4 panic=-1 nokaslr hung_task_panic=1 {cmdline}".strip(),
            "-chardev", f"socket,id=ctl,path={self.sock_path},server=on,wait=on",
            "-device", "virtio-serial-pci",
            "-device", "virtserialport,chardev=ctl,name=sqcq.ctl",
            # For post_mortem() only.
            "-monitor", f"unix:{self.mon_path},server=on,wait=off",
            # Every vCPU's registers at each reset.  A guest that resets
            # itself (a triple fault, a panic: panic=-1) boots again and its
            # init says @@READY, which cmd() takes as a failure: the log
            # then has where each vCPU was (a silent exit under -no-reboot
            # had nothing).
            "-d", "cpu_reset", "-D", self.reset_log,
        ]
        self.argv += list(extra)
        if device:
            self.argv += ["-device", device]
        self.proc = None
        self.hang = None  # post_mortem(): {"threads": [(comm, stack)], "summary": str}
        self.sock = None
        self.buf = b""
        self.seq = 0

    def _log(self, msg):
        with open(os.path.join(self.outdir, "channel.log"), "a") as f:
            f.write(f"{time.strftime('%H:%M:%S')} {msg}\n")

    def start(self):
        with open(os.path.join(self.outdir, "qemu-cmdline.txt"), "w") as f:
            f.write(" ".join(self.argv) + "\n")
        self.proc = subprocess.Popen(self.argv, stdout=open(self.qemu_log, "w"),
                                     stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        deadline = time.time() + 30
        while True:
            if self.proc.poll() is not None:
                raise GuestError(f"QEMU exited with {self.proc.returncode} before the guest booted: "
                                 f"{self._tail(self.qemu_log)} (log: {self.qemu_log})")
            try:
                self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                self.sock.connect(self.sock_path)
                break
            except OSError:
                self.sock.close()
                if time.time() > deadline:
                    raise GuestError(f"QEMU never opened its control socket (log: {self.qemu_log})")
                time.sleep(0.2)
        try:
            line = self._boot_wait()
        except GuestError as e:
            raise GuestError(f"{e}; {self.post_mortem('boot')}") from None
        if line != "@@READY":
            raise GuestError(f"unexpected first line from guest: {line!r}")
        # A kernel that crashed while booting resets (panic=-1) and boots
        # again: that boot failed, though its second try answered.
        before = self._tail(self.console, 1 << 20).split(INIT_UP)[0]
        crash = re.search(r"(Oops|BUG|Kernel panic|general protection fault)[^\[]*", before)
        if crash:
            raise GuestError(f"the guest crashed while booting and reset itself: {crash.group(0).strip()} "
                             f"(console: {self.console})")
        # A later reset is judged by the shutdown exits after this point.
        self.kvm_shutdown()

    def _boot_wait(self, every=60):
        """The guest's first line, within boot_timeout.  Its console is
        silent until init (loglevel=4), and a boot on the debug host VM
        takes minutes: every EVERY seconds channel.log says how long it
        has booted and how much CPU its QEMU used meanwhile, which shows
        the host VM's watchdog (scripts/vm/host-vm.sh) that this host is
        alive, and the reader that the guest ran (not only waited)."""
        t0, cpu0 = time.time(), self._cpu_s()
        while True:
            left = self.boot_timeout - (time.time() - t0)
            try:
                return self._readline(max(min(every, left), 0.01), "boot")
            except GuestTimeout:
                if time.time() - t0 >= self.boot_timeout:
                    raise GuestTimeout(f"guest did not answer within {self.boot_timeout}s (boot; QEMU used "
                                       f"{self._cpu_s() - cpu0:.0f}s of CPU meanwhile); "
                                       f"console tail: {self._tail(self.console)} (log: {self.console})") from None
                self._log(f"booting for {time.time() - t0:.0f}s of {self.boot_timeout}s; "
                          f"QEMU used {self._cpu_s() - cpu0:.0f}s of CPU meanwhile")

    def _cpu_s(self):
        """CPU seconds QEMU (every thread) has used."""
        try:
            f = open(f"/proc/{self.proc.pid}/stat").read().rsplit(")", 1)[1].split()
            return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")
        except (OSError, IndexError, ValueError):
            return 0.0

    def _monitor(self, commands, timeout=10):
        """Answers of QEMU's human monitor to COMMANDS ('' if it is silent)."""
        out = b""
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as m:
                m.settimeout(timeout)
                m.connect(self.mon_path)
                for c in commands:
                    m.sendall(c.encode() + b"\n")
                m.sendall(b"info version\n")  # its answer ends the read
                end = time.time() + timeout
                while time.time() < end and out.count(b"(qemu)") <= len(commands) + 1:
                    data = m.recv(65536)
                    if not data:
                        break
                    out += data
        except OSError as e:
            out += f"\n(monitor: {e})".encode()
        return self._unecho(out.decode(errors="replace").replace("\r", ""))

    @staticmethod
    def _unecho(text):
        """The monitor echoes each keystroke with cursor moves (ESC [K,
        ESC [D): keep the command as finally typed."""
        def line(m):
            typed = re.split(r"\x1b\[[0-9;]*[A-Za-z]", m.group(0))
            return "(qemu) " + next((t for t in reversed(typed) if t.strip()), "")
        return re.sub(r"\(qemu\) [^\n]*\x1b[^\n]*", line, text)

    @staticmethod
    def _thread_ticks():
        """{(pid/tid, comm): utime+stime} of every thread on this kernel."""
        ticks = {}
        for task in glob.glob("/proc/[0-9]*/task/[0-9]*/stat"):
            try:
                head, rest = open(task).read().rsplit(")", 1)
            except OSError:
                continue
            f = rest.split()
            ticks[(task.split("/")[2] + "/" + task.split("/")[4], head.split("(", 1)[1])] = int(f[11]) + int(f[12])
        return ticks

    @staticmethod
    def _busiest(t0, t1, n=8):
        """Threads that ran most between two _thread_ticks() samples."""
        d = sorted(((t1[k] - t0.get(k, 0), k) for k in t1), reverse=True)
        return [f"{comm} ({tid}) {ticks}" for ticks, (tid, comm) in d[:n] if ticks > 0]

    def post_mortem(self, what):
        """Where a guest that stopped answering is: QEMU's threads (state,
        wait channel, kernel stack) and, if QEMU's monitor still answers,
        the run state and every vCPU's registers.  Written to
        guest-hang-<what>.txt and kept in self.hang; returns a one-line
        summary for the error."""
        path = os.path.join(self.outdir, f"guest-hang-{what}.txt")
        lines, states, threads = [], [], []
        pid = self.proc.pid if self.proc else None
        for tid in sorted(os.listdir(f"/proc/{pid}/task")) if pid and self.proc.poll() is None else []:
            t = f"/proc/{pid}/task/{tid}"
            try:
                comm = open(f"{t}/comm").read().strip()
                state = open(f"{t}/stat").read().rsplit(")", 1)[1].split()[0]
                wchan = open(f"{t}/wchan").read().strip()
                stack = open(f"{t}/stack").read().strip() if os.access(f"{t}/stack", os.R_OK) else "?"
            except OSError:
                continue
            states.append(f"{comm}:{state}{'/' + wchan if wchan not in ('', '0') else ''}")
            lines.append(f"--- thread {tid} {comm} state {state} wchan {wchan}\n{stack}")
            threads.append((comm, stack))
        mon = self._monitor(["info status", "info registers -a"]) if states else ""
        busiest, busy = "", []
        rips = re.findall(r"[ER]IP=([0-9a-f]+)", mon)
        if rips:
            # Each vCPU's next instruction bytes (this QEMU is built
            # without a disassembler) and local APIC (pending and in-service
            # vectors), then the registers again 2 s later: a RIP that does
            # not move is stuck, not slow.
            per_cpu = []
            for i in range(len(rips)):
                per_cpu += [f"cpu {i}", "x/8xb $pc", "info lapic"]
            more = self._monitor(per_cpu)
            mon += more
            # The bytes at each RIP for the summary (0f 30 is wrmsr, f4
            # hlt), with the address they were read at, a moment after the
            # registers: "ffffffff81164795: 0x31 0xc0 ..." -> "ffffffff81164795: 31 c0 ...".
            dumps = re.findall(r"\(qemu\) x/8xb \$pc\n0*([0-9a-f]+): ([^\n]*)", more)
            rips = [f"{r} [{at}: {b.replace('0x', '')}]" for r, (at, b) in zip(rips, dumps)] + rips[len(dumps):]
            busy0 = self._thread_ticks()
            time.sleep(2)
            mon += self._monitor(["info registers -a"])
            busy = self._busiest(busy0, self._thread_ticks())
            mon += "\n--- this kernel's busiest threads in those 2 s (CPU ticks)\n" + "\n".join(busy)
            busiest = f"; busiest threads here {', '.join(busy[:3]) or 'none'}"
        status = re.search(r"VM status: (\S+)", mon)
        with open(path, "w") as f:
            f.write("\n".join(lines) + "\n--- monitor\n" + mon + "\n")
        summary = (f"QEMU threads {' '.join(states) or 'gone'}; VM status "
                   f"{status.group(1) if status else '(monitor silent)'}; vCPU RIPs {' '.join(rips) or '?'}{busiest} "
                   f"(post-mortem: {path})")
        self.hang = {"threads": threads, "busy": busy, "summary": summary}
        return summary

    @staticmethod
    def _tail(path, n=300):
        try:
            with open(path, errors="replace") as f:
                return " ".join(f.read()[-n:].split())
        except OSError:
            return ""

    def _readline(self, timeout, what):
        deadline = time.time() + timeout
        while b"\n" not in self.buf:
            left = deadline - time.time()
            if left <= 0:
                raise GuestTimeout(f"guest did not answer within {timeout}s ({what}); "
                                 f"console tail: {self._tail(self.console)} (log: {self.console})")
            if self.proc.poll() is not None:
                raise GuestError(f"QEMU exited with {self.proc.returncode} during {what}: "
                                 f"{self._tail(self.qemu_log)} (logs: {self.qemu_log}, {self.console})")
            self.sock.settimeout(min(left, 1.0))
            try:
                data = self.sock.recv(65536)
            except socket.timeout:
                continue
            if not data:
                raise GuestError(f"control channel closed during {what}; {self._gone()}")
            self.buf += data
        line, self.buf = self.buf.split(b"\n", 1)
        return line.decode(errors="replace").strip()

    def _gone(self):
        """Why QEMU closed the control channel: it exits; say how."""
        try:
            rc = self.proc.wait(5)
        except subprocess.TimeoutExpired:
            rc = None
        how = "QEMU still running" if rc is None else f"QEMU exited with {rc}"
        return f"{how} (logs: {self.console}, {self.qemu_log})"

    def symbol(self, rip):
        """'func+0xoff' for a guest kernel address, else the address.  The
        guest runs nokaslr; its symbols come from the System.map beside
        its image (a kernel of 'make kernel') or, for Debian's kernel
        (whose System.map is a stub), from this host's /proc/kallsyms when
        the host runs that same kernel nokaslr (the host VM does)."""
        maps = [self.kernel.replace("vmlinuz", "System.map")]
        try:
            if os.uname().release in self.kernel and "nokaslr" in open("/proc/cmdline").read():
                maps.append("/proc/kallsyms")
        except OSError:
            pass
        addr = int(rip, 16)
        for smap in maps:
            best = None
            try:
                with open(smap) as f:
                    for line in f:
                        parts = line.split()
                        if len(parts) < 3 or parts[1] not in ("t", "T", "w", "W"):
                            continue
                        a = int(parts[0], 16)
                        if a <= addr and (best is None or a > best[0]):
                            best = (a, parts[2])
            except (OSError, ValueError):
                continue
            if best and addr - best[0] < 0x10000:
                return f"{best[1]}+{addr - best[0]:#x}"
        return rip

    TRACE = "/sys/kernel/tracing/trace"
    # A vCPU's shutdown exit: SVM's "shutdown", VMX's "TRIPLE_FAULT".
    SHUTDOWN = re.compile(r"kvm_exit: vcpu (\d+) reason (?:shutdown|TRIPLE_FAULT) rip 0x([0-9a-f]+)"
                          r".*? intr_info (0x[0-9a-f]+) error_code (0x[0-9a-f]+)")

    def kvm_shutdown(self, trace=None):
        """Where KVM saw this guest's vCPUs shut down (triple fault), from
        the shutdown exits the host role records (KvmCounters.setup):
        'vCPU n at RIP (symbol) (intr_info, error_code)' for each, or None
        when the trace has none.
        This QEMU's recorded exits (by thread id) go to self.exits_log."""
        if trace is None:
            try:
                tids = set(os.listdir(f"/proc/{self.proc.pid}/task"))
                with open(self.TRACE, errors="replace") as f:
                    trace = [ln for ln in f if (m := re.search(r"-(\d+)\s+\[", ln)) and m.group(1) in tids]
            except (OSError, AttributeError):
                return None
            with open(self.exits_log, "w") as f:
                f.writelines(trace)
        # Only shutdowns since the last call: the trace spans the run.
        shutdowns = [m for m in map(self.SHUTDOWN.search, trace) if m]
        seen, self.shutdowns_seen = getattr(self, "shutdowns_seen", 0), len(shutdowns)
        # intr_info: the event being delivered when it shut down (bit 31
        # valid, bits 0-7 the vector: 0x80000b08 is a #DF).
        return ", ".join(f"vCPU {m.group(1)} at {self.symbol(m.group(2))} "
                         f"(intr_info {m.group(3)}, error_code {m.group(4)})"
                         for m in shutdowns[seen:]) or None

    def rebooted(self, what):
        """The error for a guest that reset itself during WHAT, with where
        each vCPU was at that reset (QEMU logs every vCPU at each reset,
        CPU 0 first).  A vCPU already in its INIT state (EIP fff0) then is
        the one that triple-faulted: KVM reinitialises a vCPU on a
        shutdown intercept before it tells QEMU."""
        try:
            text = open(self.reset_log, errors="replace").read()
        except OSError:
            text = ""
        resets = re.findall(r"CPU Reset \(CPU (\d+)\)\n(.*?)(?=CPU Reset|\Z)", text, re.S)
        ncpu = len({c for c, _ in resets})
        kernel = [i for i, (_, body) in enumerate(resets) if "RIP=" in body]
        where = "no vCPU was in the kernel at any reset"
        if kernel:
            first = max(i for i in range(kernel[-1] + 1) if resets[i][0] == "0")
            desc = []
            for cpu, body in resets[first:first + ncpu]:
                rip = re.search(r"RIP=([0-9a-f]+)", body)
                if rip:
                    desc.append(f"vCPU {cpu} at {self.symbol(rip.group(1))}")
                elif "EIP=0000fff0" in body:
                    desc.append(f"vCPU {cpu} already in its INIT state (it triple-faulted)")
                else:
                    desc.append(f"vCPU {cpu} not in long mode")
            where = ", ".join(desc)
        shutdown = self.kvm_shutdown()
        # The kernel's own restart (panic=-1, sysrq b) ends in a triple
        # fault when the reset it asked for comes too late: a guest that
        # died of a report the console never showed.
        restart = bool(shutdown) and RESTART in shutdown
        if shutdown:
            where += f"; KVM's shutdown exit: {shutdown}"
        err = GuestError(f"the guest reset itself during {what} (triple fault or panic; it booted "
                         f"again): {where} (registers: {self.reset_log}; console: {self.console})"
                         + ("; the guest's kernel restarted itself (a panic the console did not show, "
                            "or a reboot it was asked for)" if restart else ""))
        err.emulator = None
        if restart:
            return err
        # A triple fault with nothing on the guest's console (no panic, oops
        # or other report: a kernel that can still run says why it dies), or
        # a crash whose report shows a CPU state no CPU can be in, is the
        # emulator's, like the other TCG failures (docs/design.md);
        # hostrole runs the step once more on a fresh boot, loudly.
        try:
            console = open(self.console, errors="replace").read()
        except OSError:
            console = ""
        # A triple fault: a vCPU found in its INIT state at the reset, or
        # KVM's shutdown exit itself (the only evidence for a one-vCPU
        # guest, whose reset dump shows no vCPU left in the kernel).
        triple = "(it triple-faulted)" in where or bool(shutdown)
        if triple and not re.search(REPORT, console):
            err.emulator = "nothing on the guest's console"
        elif flags := impossible_frame(console):
            err.emulator = (f"the console's first report shows EFLAGS {flags}, which has bits set "
                            "that no x86 CPU sets (an emulated CPU state)")
        return err

    def _send(self, text):
        try:
            self.sock.sendall(text.encode() + b"\n")
        except OSError as e:
            raise GuestError(f"cannot write to the guest's control channel ({e}); {self._gone()}") from None

    def cmd(self, command, timeout=60):
        """Run a shell command in the guest; return its exit code (output kept there)."""
        if "\n" in command:
            raise ValueError("guest commands are single lines")
        self.seq += 1
        cid = self.seq
        self._log(f"CMD {cid} {command}")
        self._send(f"CMD {cid} {command}")
        while True:
            line = self._readline(timeout, f"command {command[:60]!r}")
            if line == "@@READY":
                raise self.rebooted(f"command {command[:60]!r}")
            if line.startswith(f"@@RC {cid} "):
                rc = int(line.split()[2])
                self._log(f"RC {cid} {rc}")
                return cid, rc

    def output(self, cid, timeout=60):
        self._send(f"GET {cid}")
        while (line := self._readline(timeout, "output")) != f"@@OUT {cid}":
            if line == "@@READY":
                raise self.rebooted("output")
        lines = []
        while True:
            line = self._readline(timeout, "output")
            if line == f"@@END {cid}":
                return "\n".join(lines).rstrip("\n") + "\n"
            lines.append(line)

    def reboot(self, timeout=None):
        """Reset the guest from inside (sysrq b: no shutdown, I/O in flight)
        and wait until its init serves commands again; return the seconds."""
        t0 = time.time()
        self.seq += 1
        self._log(f"CMD {self.seq} (reset)")
        self._send(f"CMD {self.seq} echo b > /proc/sysrq-trigger")
        while self._readline(timeout or self.boot_timeout, "the reboot") != "@@READY":
            pass
        self.kvm_shutdown()  # (that reset's own exits do not count later)
        return time.time() - t0

    def run(self, command, timeout=60):
        cid, rc = self.cmd(command, timeout)
        return rc, self.output(cid)

    def stop(self, timeout=60):
        if self.proc is None:
            return
        try:
            if self.sock and self.proc.poll() is None:
                self._send("OFF")
            self.proc.wait(timeout)
        except (OSError, GuestError, subprocess.TimeoutExpired):
            self.kill()
        finally:
            if self.sock:
                self.sock.close()

    def kill(self, timeout=120):
        """SIGKILL QEMU and reap it.  Its exit tears down the VM and its
        vhost device in the kernel (slow on a debug kernel); one that is
        still there after TIMEOUT is stuck there: say where."""
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                raise GuestError(f"QEMU (pid {self.proc.pid}) still there {timeout}s after SIGKILL; "
                                 f"{self.post_mortem('kill')}") from None
