"""Per-I/O counters measured by the hypervisor and the guest kernel.

Pure parsing and arithmetic live here (unit-tested without VMs); the code that
reads /sys and tracefs is in KvmCounters and only runs on the host role.
"""
import json
import os
import re

# Exit codes that matter for notification accounting, by vendor.
# AMD SVM (arch/x86/include/uapi/asm/svm.h) and Intel VMX basic exit reasons.
SVM_EXITS = {0x400: "NPF", 0x78: "HLT", 0x60: "INTR", 0x7c: "MSR", 0x64: "VINTR",
             0x61: "NMI", 0x72: "CPUID", 0x77: "PAUSE", 0x7b: "IOIO",
             0x81: "VMMCALL", 0x6e: "RDTSC", 0x401: "AVIC_INCOMPLETE_IPI",
             0x402: "AVIC_UNACCELERATED_ACCESS", 0x403: "VMGEXIT"}
VMX_EXITS = {0: "EXCEPTION_NMI", 1: "EXTERNAL_INTERRUPT", 7: "INTERRUPT_WINDOW",
             10: "CPUID", 12: "HLT", 30: "IO_INSTRUCTION", 31: "MSR_READ",
             32: "MSR_WRITE", 40: "PAUSE", 44: "APIC_ACCESS", 45: "EOI_INDUCED",
             48: "EPT_VIOLATION", 49: "EPT_MISCONFIG", 52: "PREEMPTION_TIMER",
             56: "APIC_WRITE"}
# A virtio-pci kick is a guest write to the notify BAR: an MMIO exit.  On
# AMD it is a nested page fault (NPF); on Intel an EPT misconfiguration
# (KVM's fast-MMIO path) or violation.  Nothing else does MMIO while a fio
# cell is being measured (the control channel is silent then).
NOTIFY_EXITS = {"svm": {"NPF"}, "vmx": {"EPT_MISCONFIG", "EPT_VIOLATION"}}
HLT_EXITS = {"svm": {"HLT"}, "vmx": {"HLT"}}

_HIST_RE = re.compile(r"\{\s*exit_reason:\s*(\d+)\s*\}\s*hitcount:\s*(\d+)")


def parse_exit_hist(text, vendor):
    """tracefs kvm_exit histogram (keys=exit_reason) -> {name: count}."""
    names = SVM_EXITS if vendor == "svm" else VMX_EXITS
    out = {}
    for code, hits in _HIST_RE.findall(text):
        code = int(code)
        name = names.get(code, f"0x{code:x}")
        out[name] = out.get(name, 0) + int(hits)
    return out


def parse_hist_hits(text):
    """Total hits of any tracefs histogram (its 'Hits:' totals line)."""
    m = re.search(r"^\s*Hits:\s*(\d+)", text, re.M)
    return int(m.group(1)) if m else 0


# The guest's request-queue interrupts in /proc/interrupts: virtio-scsi's
# "virtio<N>-request" (one name for all its request queues), virtio-blk's
# "virtio<N>-req.<Q>" (the blk-iothread peer).
REQUEST_IRQ = re.compile(r"^virtio\d+-(request|req\.\d+)$")


def parse_interrupts(text):
    """/proc/interrupts -> {name: count summed over CPUs} for MSI/virtio lines."""
    lines = text.splitlines()
    if not lines:
        return {}
    ncpu = len(lines[0].split())
    out = {}
    for line in lines[1:]:
        parts = line.split()
        if not parts or not parts[0].rstrip(":").isdigit():
            continue
        counts = parts[1:1 + ncpu]
        if not all(c.isdigit() for c in counts):
            continue
        name = parts[-1]
        out[name] = out.get(name, 0) + sum(int(c) for c in counts)
    return out


def diff(after, before):
    return {k: after.get(k, 0) - before.get(k, 0) for k in set(after) | set(before)}


def fio_totals(fio_json):
    """fio JSON -> (ios, iops, bw_kib) summed over all jobs and directions."""
    ios = iops = bw = 0
    for job in fio_json.get("jobs", []):
        for d in ("read", "write"):
            s = job.get(d, {})
            ios += s.get("total_ios", 0)
            iops += s.get("iops", 0.0)
            bw += s.get("bw", 0)
    return ios, iops, bw


def fio_result(text):
    """fio's --output-format=json text (anything before the JSON is skipped)
    -> the step fields (ios, iops, bw_kib, fio_job_errors, fio), or None."""
    try:
        fj = json.loads(text[text.index("{"):])
    except ValueError:
        return None
    ios, iops, bw = fio_totals(fj)
    return {"ios": ios, "iops": round(iops, 1), "bw_kib": bw,
            "fio_job_errors": sum(j.get("error", 0) != 0 for j in fj.get("jobs", [])),
            "fio": fio_detail(fj)}


def fio_detail(fio_json):
    """fio JSON -> completion latency percentiles (us) and fio's CPU use.

    Latency is that of the direction with the most I/Os (the cells are
    pure reads or pure writes); usr/sys are fio's own CPU percentages,
    summed over jobs (one job per fio process reported).
    """
    best, lat = -1, {}
    usr = sys_ = 0.0
    for job in fio_json.get("jobs", []):
        usr += job.get("usr_cpu", 0.0)
        sys_ += job.get("sys_cpu", 0.0)
        for d in ("read", "write"):
            s = job.get(d, {})
            pct = s.get("clat_ns", {}).get("percentile", {})
            if s.get("total_ios", 0) > best and pct:
                best = s["total_ios"]
                lat = {k: round(pct[p] / 1000.0, 1) for k, p in
                       (("p50_us", "50.000000"), ("p99_us", "99.000000"), ("p99.9_us", "99.900000"))
                       if p in pct}
    return dict(lat, usr_pct=round(usr, 1), sys_pct=round(sys_, 1))


def per_io(kvm, irqs, ios, vendor):
    """Per-I/O figures from counter deltas.

    kvm: {"stats": debugfs deltas, "exits": by-reason deltas, "fast_mmio": n}
    irqs: guest interrupt deltas by name
    """
    if ios <= 0:
        return {}
    by = kvm.get("exits", {})
    stats = kvm.get("stats", {})
    # The kvm_fast_mmio event fires on the same exit as the NPF/EPT exit
    # that carried the kick, so it is reported beside, never added.
    notify = sum(v for k, v in by.items() if k in NOTIFY_EXITS[vendor])
    req_irqs = sum(v for k, v in irqs.items() if REQUEST_IRQ.search(k))
    return {
        "exits": stats.get("exits", 0) / ios,
        "kicks": notify / ios,
        "irq_injections": stats.get("irq_injections", 0) / ios,
        "halt_exits": stats.get("halt_exits", 0) / ios,
        "guest_irqs": req_irqs / ios,
        "fast_mmio": kvm.get("fast_mmio", 0) / ios,
        "exits_by_reason": {k: v / ios for k, v in sorted(by.items())},
    }


class KvmCounters:
    """Snapshots of the host KVM's statistics around a measured interval."""

    DEBUGFS = "/sys/kernel/debug/kvm"
    TRACEFS = "/sys/kernel/tracing/events/kvm"
    EXIT_TRIGGER = "hist:keys=exit_reason:sort=hitcount:size=256"
    MMIO_TRIGGER = "hist:keys=common_pid"

    def __init__(self):
        if not os.path.isdir(self.DEBUGFS):
            raise RuntimeError(f"{self.DEBUGFS} missing: mount debugfs and load kvm")
        self.vendor = "svm" if os.path.isdir("/sys/module/kvm_amd") else "vmx"
        self.tracing = os.path.isfile(f"{self.TRACEFS}/kvm_exit/trigger")
        self.shutdown_trace = False  # recording shutdown exits (setup)
        self._before = None

    def _stats(self):
        out = {}
        for name in os.listdir(self.DEBUGFS):
            p = os.path.join(self.DEBUGFS, name)
            if os.path.isfile(p):
                try:
                    with open(p) as f:
                        out[name] = int(f.read().strip())
                except (OSError, ValueError):
                    pass
        return out

    def _trigger(self, event, spec):
        # Append: opening a trigger file with O_TRUNC ("w") removes every
        # trigger already on the event.
        with open(f"{self.TRACEFS}/{event}/trigger", "a") as f:
            f.write(spec)

    def _hists(self):
        if not self.tracing:
            return {}, 0
        with open(f"{self.TRACEFS}/kvm_exit/hist") as f:
            exits = parse_exit_hist(f.read(), self.vendor)
        with open(f"{self.TRACEFS}/kvm_fast_mmio/hist") as f:
            mmio = parse_hist_hits(f.read())
        return exits, mmio

    def setup(self, shutdown_trace=True):
        """Attach the histograms once, before any guest runs; with
        SHUTDOWN_TRACE also record the vCPUs' shutdown exits.

        Attaching enables the tracepoints, which live-patches kernel text
        (static keys).  Under TCG a vCPU running the patched KVM code at
        that moment can execute a stale int3 and oops, so this never
        happens while a guest runs: the histograms stay attached for the
        whole run and each measurement is a difference of two readings.
        """
        if self.tracing:
            # What a real host's own tracing had there, for teardown().
            self.saved = {}
            for f in ("filter", "enable"):
                with open(f"{self.TRACEFS}/kvm_exit/{f}") as fh:
                    self.saved[f] = fh.read().strip()
            self._trigger("kvm_exit", self.EXIT_TRIGGER)
            self._trigger("kvm_fast_mmio", self.MMIO_TRIGGER)
            # Record a vCPU's shutdown exits (triple faults) in the trace
            # buffer, nothing else: Guest.kvm_shutdown names their RIPs.
            # With the event filter every other exit takes the same
            # per-CPU scratch record the histogram already uses and is
            # dropped (recording all exits put the ring buffer's page
            # switching on every exit: the debug host VM oopsed in
            # rb_move_tail, docs/results.md).  The histograms see every
            # exit (their triggers run before the filter).  The
            # tracepoint is live already, so this patches nothing.
            self.shutdown_trace = shutdown_trace
            if not shutdown_trace:
                return
            with open(f"{self.TRACEFS}/kvm_exit/filter", "w") as f:
                f.write(f"exit_reason == {self.shutdown_reason()}")
            with open(f"{self.TRACEFS}/kvm_exit/enable", "w") as f:
                f.write("1")

    def shutdown_reason(self):
        # SVM_EXIT_SHUTDOWN, EXIT_REASON_TRIPLE_FAULT
        return 0x7f if self.vendor == "svm" else 2

    def teardown(self):
        """Detach the histograms; the event's filter and enable as found."""
        if self.tracing:
            if self.shutdown_trace:
                saved = getattr(self, "saved", {})
                enable = saved.get("enable", "0")[:1]  # ("0*": soft-disabled)
                with open(f"{self.TRACEFS}/kvm_exit/enable", "w") as f:
                    f.write(enable if enable in ("0", "1") else "0")
                with open(f"{self.TRACEFS}/kvm_exit/filter", "w") as f:
                    # ("none": no filter; "0" clears one)
                    f.write("0" if saved.get("filter", "none") == "none" else saved["filter"])
            self._trigger("kvm_exit", "!" + self.EXIT_TRIGGER)
            self._trigger("kvm_fast_mmio", "!" + self.MMIO_TRIGGER)

    def begin(self):
        self._before = (self._stats(),) + self._hists()

    def end(self):
        stats, exits, mmio = (self._stats(),) + self._hists()
        s0, e0, m0 = self._before
        return {"stats": diff(stats, s0),
                "exits": {k: v for k, v in diff(exits, e0).items() if v},
                "fast_mmio": mmio - m0, "vendor": self.vendor}


# --- the project's own poller counters and the pollers' CPU time -------------

SQCQ_DEBUGFS = "/sys/kernel/debug/vhost-sqcq"
# The policy's state in the pollers' stats (the value at the end of a step,
# not a counter to take a difference of): budget, gap EMA, measured sleep
# cost, what a paid probe saved per gap, the spin window a poller would
# open now, what probes compare with (the gaps without probes: their
# EMA and mean deviation), and the last probe's mean gap and what it was
# compared with.
POLICY = ("budget_ns", "ema_ns", "cost_ns", "probed_ns", "window_ns",
          "slept_ns", "slept_dev_ns", "probe_mean_ns", "probe_base_ns")
GAUGES = POLICY + ("pid",)


def parse_poller_stats(text):
    """One vhost-sqcq stats file -> {field: int} (vq lines summed as vq_*)."""
    out = {}
    for line in text.splitlines():
        parts = line.split()
        if not parts:
            continue
        if parts[0].startswith("vq") and len(parts) >= 3:
            for k, v in zip(parts[1::2], parts[2::2]):
                out["vq_" + k] = out.get("vq_" + k, 0) + int(v)
        elif len(parts) == 2 and parts[1].lstrip("-").isdigit():
            out[parts[0]] = int(parts[1])
    return out


def poller_stats(root=SQCQ_DEBUGFS):
    """Sum of the counters of every running host poller ({} if none)."""
    total = {"pollers": 0}
    try:
        dirs = os.listdir(root)
    except OSError:
        return total
    for d in dirs:
        try:
            with open(os.path.join(root, d, "stats")) as f:
                st = parse_poller_stats(f.read())
        except OSError:
            continue
        total["pollers"] += 1
        for k, v in st.items():
            if k not in GAUGES + ("owner_pid", "vq_worker"):
                total[k] = total.get(k, 0) + v
            else:
                total[k] = v
    return total


def thread_totals(prefix, proc="/proc"):
    """(CPU clock ticks, voluntary context switches) summed over the threads
    whose comm starts with prefix: utime+stime, and each sleep (then a
    wakeup), in one walk of /proc."""
    ticks = wakeups = 0
    for pid in os.listdir(proc):
        if not pid.isdigit():
            continue
        try:
            tasks = os.listdir(f"{proc}/{pid}/task")
        except OSError:
            continue
        for tid in tasks:
            d = f"{proc}/{pid}/task/{tid}"
            try:
                with open(f"{d}/stat") as f:
                    st = f.read()
                if not st[st.index("(") + 1:st.rindex(")")].startswith(prefix):
                    continue
                with open(f"{d}/status") as f:
                    status = f.read()
            except OSError:
                continue
            fields = st[st.rindex(")") + 2:].split()
            ticks += int(fields[11]) + int(fields[12])
            for ln in status.splitlines():
                if ln.startswith("voluntary_ctxt_switches:"):
                    wakeups += int(ln.split(":", 1)[1])
    return ticks, wakeups


GUEST_POLLER_CMD = ("for f in /sys/kernel/debug/virtio-sqcq/*/stats; do [ -f $f ] && cat $f && echo @@NEXT; done; "
                    "echo @@CPU; cat /proc/[0-9]*/task/*/stat 2>/dev/null | grep '(virtio-sqcq' || true")


def parse_guest_pollers(text):
    """Output of GUEST_POLLER_CMD -> summed CQ poller counters and CPU ticks."""
    stats_part, _, cpu_part = text.partition("@@CPU")
    total = {"pollers": 0}
    for chunk in stats_part.split("@@NEXT"):
        st = parse_poller_stats(chunk)
        if not st:
            continue
        # (a device's file says how many pollers it has: one per queue)
        total["pollers"] += st.pop("pollers", 1)
        for k, v in st.items():
            if k in GAUGES:
                total[k] = v
            else:
                total[k] = total.get(k, 0) + v
    ticks = 0
    for line in cpu_part.splitlines():
        if "(" in line and ")" in line:
            fields = line[line.rindex(")") + 2:].split()
            if len(fields) > 12:
                ticks += int(fields[11]) + int(fields[12])
    total["cpu_ticks"] = ticks
    return total
