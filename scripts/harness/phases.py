#!/usr/bin/python3
"""Where a QD1 I/O's time goes on the host, from a function trace.

The host role runs this file on the trace (stdin) after a fio step and
prints one JSON object; scripts/phases.py puts the steps in a plan and
tabulates their output.  Five functions are traced (ftrace's function
tracer, entries only, so nothing runs per instruction):

  vhost_poll_wakeup             the guest's kick (ioeventfd -> vhost)
  vhost_scsi_handle_kick        the vq's worker runs the kick work
  target_complete_cmd           LIO (the backstore) finished the command
  vhost_scsi_complete_cmd_work  vhost-scsi's completion work on the worker
  irqfd_wakeup                  the completion interrupt (irqfd -> KVM)

At QD1 the I/Os follow one another, so each interval between two
interrupts is one I/O's cycle, cut into phases:

  guest   interrupt -> next kick: the guest takes the completion, fio
          reaps it and submits the next (the host waits)
  wake    kick -> kick work running (the worker's wakeup)
  lio     kick work -> LIO's completion (submission and the read)
  cwork   LIO's completion -> vhost-scsi's completion work
  signal  completion work -> interrupt

A cycle whose request the host found without a kick (a polling window)
has no guest/wake phase: 'unkicked' counts them.  No VM here: it reads
a text trace (tests/t16-phases-unit.py feeds it one).
"""
import json
import re
import sys

FUNCS = ("vhost_poll_wakeup", "vhost_scsi_handle_kick", "target_complete_cmd",
         "vhost_scsi_complete_cmd_work", "irqfd_wakeup")
PHASES = ("guest", "wake", "lio", "cwork", "signal", "cycle")
TRACING = "/sys/kernel/tracing"

# "<comm>-<pid> [cpu] <flags> <seconds>: <function> <-<caller>"; the comm
# may hold spaces and dashes ("CPU 0/KVM"), the flags column is optional.
LINE = re.compile(r"^\s*(.*?)-(\d+)\s+\[(\d+)\]\s+(?:\S+\s+)?(\d+\.\d+):\s+(\w+)")


def parse(lines):
    """[(t_us, function)] of the traced functions, in trace order."""
    out = []
    for line in lines:
        m = LINE.match(line)
        if m and m.group(5) in FUNCS:
            out.append((float(m.group(4)) * 1e6, m.group(5)))
    return out


def cycles(events):
    """Phases of each I/O cycle: a dict of phase -> [us], and counts."""
    ph = {k: [] for k in PHASES}
    seen = {}       # function -> its first time in the current cycle
    unkicked = incomplete = 0
    for t, fn in events:
        if fn != "irqfd_wakeup":
            seen.setdefault(fn, t)
            continue
        irq = seen.get("irqfd_wakeup")
        if irq is not None:
            k, h = seen.get("vhost_poll_wakeup"), seen.get("vhost_scsi_handle_kick")
            d, c = seen.get("target_complete_cmd"), seen.get("vhost_scsi_complete_cmd_work")
            if h is None or d is None or c is None or not h <= d <= c:
                incomplete += 1
            else:
                ph["cycle"].append(t - irq)
                ph["lio"].append(d - h)
                ph["cwork"].append(c - d)
                ph["signal"].append(t - c)
                if k is not None and k <= h:
                    ph["guest"].append(k - irq)
                    ph["wake"].append(h - k)
                else:
                    unkicked += 1
        seen = {"irqfd_wakeup": t}
    return ph, {"cycles": len(ph["cycle"]), "unkicked": unkicked, "incomplete": incomplete}


def pct(values, p):
    v = sorted(values)
    return round(v[min(len(v) - 1, int(len(v) * p))]) if v else None


def summarize(lines):
    ph, counts = cycles(parse(lines))
    out = dict(counts)
    for k, v in ph.items():
        out[k] = {"n": len(v), "p10": pct(v, .1), "p50": pct(v, .5), "p90": pct(v, .9),
                  "mean": round(sum(v) / len(v)) if v else None}
    return out


def start_cmd():
    """Host command: trace FUNCS from now on (root, tracefs)."""
    t = TRACING
    return (f"T={t}; [ -e $T/trace ] || mount -t tracefs none $T || exit 1; "
            "echo 0 > $T/tracing_on; echo nop > $T/current_tracer; "
            f"echo '{' '.join(FUNCS)}' > $T/set_ftrace_filter || "
            "{ echo 'cannot trace the functions (module not loaded, or inlined)'; exit 1; }; "
            "echo 16384 > $T/buffer_size_kb; echo > $T/trace; echo function > $T/current_tracer; "
            "echo 1 > $T/tracing_on; echo tracing: $(cat $T/set_ftrace_filter)")


def stop_cmd(python="/usr/bin/python3"):
    """Host command: stop, print this file's JSON of the trace, clean up."""
    return (f"T={TRACING}; echo 0 > $T/tracing_on; "
            f"grep -q 'overrun: [1-9]' $T/per_cpu/cpu*/stats && echo 'trace buffer overrun: events lost' >&2; "
            f"{python} {__file__} < $T/trace; rc=$?; "
            "echo nop > $T/current_tracer; echo > $T/set_ftrace_filter; echo > $T/trace; exit $rc")


if __name__ == "__main__":
    print(json.dumps(summarize(sys.stdin), separators=(",", ":")))
