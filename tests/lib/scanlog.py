#!/usr/bin/python3
"""Scan kernel logs for reports (BUG, WARNING, Oops, KASAN, lockdep, ...).

Usage: scanlog.py FILE...

Prints one line per report: 'UNKNOWN file:line:text' for a report that
fails the test, 'KNOWN name' for one that tests/known-reports.toml
recognises (a whole report block must match every regex of an entry),
'EMULATOR file:line:text' for one whose CPU state no x86 CPU can be in
(reserved EFLAGS bits in its register dump: harness.guest.impossible_frame).
"""
import os
import re
import sys
import tomllib

BAD = re.compile(r"BUG:|WARNING:|Oops|KASAN|kernel BUG|general protection fault|possible circular locking|"
                 r"possible recursive locking|inconsistent lock state|suspicious RCU usage|"
                 r"INFO: task .* blocked for more than|sleeping function called from invalid context|"
                 r"do not call blocking ops|unreferenced object|rcu: INFO: .*stall|NMI backtrace for|Call Trace:")
END = re.compile(r"---\[ end trace|</TASK>")
START = re.compile(r"BUG:|WARNING:|Oops:|unreferenced object|general protection fault|rcu: INFO: .*stall")
KNOWN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "known-reports.toml")
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))
sys.dont_write_bytecode = True
from harness.guest import impossible_frame  # noqa: E402


def blocks(lines):
    """(first line index, block text) of every report in a log."""
    i = 0
    while i < len(lines):
        if BAD.search(lines[i]):
            j = i + 1
            # A report runs until its end marker (end of trace, end of
            # the task's stack), the next report or 200 lines.
            while j < len(lines) and j - i < 200 and not END.search(lines[j]):
                if START.search(lines[j]):  # the next report begins
                    j -= 1
                    break
                j += 1
            yield i, "\n".join(lines[max(0, i - 2):j + 1])
            i = j + 1
        else:
            i += 1


def main():
    with open(KNOWN, "rb") as f:
        known = tomllib.load(f).get("report", [])
    for path in sys.argv[1:]:
        try:
            lines = open(path, errors="replace").read().splitlines()
        except OSError:
            continue
        for i, text in blocks(lines):
            k = next((k for k in known if all(re.search(r, text, re.M) for r in k["all"])), None)
            flags = impossible_frame(text)
            if k:
                print(f"KNOWN {k['name']}")
            elif flags:
                print(f"EMULATOR {path}:{i + 1}:{lines[i]} (EFLAGS {flags})")
            else:
                print(f"UNKNOWN {path}:{i + 1}:{lines[i]}")


if __name__ == "__main__":
    main()
