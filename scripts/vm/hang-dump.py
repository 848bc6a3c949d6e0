#!/usr/bin/python3
"""Post-mortem of a hung host VM through its QEMU monitor.

Usage: hang-dump.py MONITOR.sock KALLSYMS.gz OUT.txt

Reads every vCPU's registers twice, 5 s apart, and names the kernel
function each one is in (the text symbols of /proc/kallsyms as the host VM
saw them once its modules were loaded; it boots with nokaslr): a CPU whose RIP does
not move and sits in the idle loop with interrupts enabled waits for an
interrupt that never comes; one that moves is spinning (a lock, a poller).
Then injects an NMI, which a live kernel answers on its console.
"""
import bisect
import gzip
import re
import socket
import sys
import time


def hmp(path, cmds):
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(10)
    s.connect(path)
    out = []

    def until_prompt():
        buf = b""
        while not buf.endswith(b"(qemu) "):
            chunk = s.recv(65536)
            if not chunk:
                break
            buf += chunk
        return buf.decode(errors="replace")

    until_prompt()
    for c in cmds:
        s.sendall(c.encode() + b"\n")
        text = until_prompt()
        # The monitor echoes the command (redrawn as typed) on the first line.
        text = text.replace("\r", "").replace("(qemu) ", "")
        text = text.split("\n", 1)[1] if "\n" in text else ""
        out.append((c, text.strip()))
    s.close()
    return out


class Symbols:
    def __init__(self, kallsyms):
        entries = []
        try:
            with gzip.open(kallsyms, "rt") as f:
                for line in f:
                    p = line.split()
                    if len(p) >= 3 and p[1] in "tT" and int(p[0], 16):
                        entries.append((int(p[0], 16), " ".join(p[2:])))
        except (OSError, ValueError) as e:
            print(f"hang-dump: no symbols from {kallsyms} ({e})", file=sys.stderr)
        entries.sort()
        self.addrs = [a for a, _ in entries]
        self.names = [n for _, n in entries]

    def name(self, addr):
        i = bisect.bisect_right(self.addrs, addr) - 1
        if i < 0:
            return "?"
        return f"{self.names[i]}+{addr - self.addrs[i]:#x}"


def summarize(regs_text, syms):
    lines = []
    for cpu, block in re.findall(r"CPU#(\d+)\n(.*?)(?=CPU#\d+\n|\Z)", regs_text, re.S):
        rip = re.search(r"RIP=([0-9a-f]+)", block)
        efl = re.search(r"RFL=([0-9a-f]+)", block)
        hlt = re.search(r"HLT=(\d)", block)
        if not rip:
            continue
        ip = int(rip.group(1), 16)
        flags = int(efl.group(1), 16) if efl else 0
        lines.append(f"CPU{cpu}: RIP {ip:#x} {syms.name(ip)} IF={(flags >> 9) & 1}"
                     f" HLT={hlt.group(1) if hlt else '?'}")
    return lines


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    mon, kallsyms, out = sys.argv[1:]
    syms = Symbols(kallsyms)
    report = []
    try:
        for rnd in range(2):
            if rnd:
                time.sleep(5)
            res = hmp(mon, ["info cpus", "info registers -a", "info lapic 0", "info lapic 1",
                            "info irq"])
            report.append(f"== reading {rnd + 1} ==")
            report += summarize(res[1][1], syms)
            report += [f"--- {c} ---\n{t}" for c, t in res]
        hmp(mon, ["nmi"])
        report.append("== NMI injected; see the console log for the kernel's answer ==")
    except OSError as e:
        report.append(f"hang-dump: monitor not usable: {e}")
    with open(out, "w") as f:
        f.write("\n".join(report) + "\n")
    for line in report:
        if line.startswith(("CPU", "hang-dump")):
            print("  " + line, file=sys.stderr)


if __name__ == "__main__":
    main()
