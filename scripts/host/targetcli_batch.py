#!/usr/bin/python3
"""Run several targetcli command lines in one targetcli process.

Usage: targetcli_batch.py 'CMD' ['CMD'...]

Each CMD is what 'targetcli CMD' would run (e.g. '/vhost create naa.x'),
run in order by targetcli-fb's own shell (/usr/bin/targetcli's TargetCLI
and UIRoot, under its lock file), so that LIO is set up exactly as by
the targetcli command, without starting Python and loading rtslib once
per command (2.5-3.5 s each in the host VM under TCG).  The first command
that fails ends the run: its error on stderr, exit status 1.
"""
import fcntl
import importlib.machinery
import importlib.util
import os
import sys

TARGETCLI = "/usr/bin/targetcli"


def load_targetcli():
    loader = importlib.machinery.SourceFileLoader("targetcli_main", TARGETCLI)
    spec = importlib.util.spec_from_loader("targetcli_main", loader)
    mod = importlib.util.module_from_spec(spec)
    loader.exec_module(mod)
    return mod


def main():
    cmds = sys.argv[1:]
    if not cmds or cmds[0] in ("-h", "--help"):
        print(__doc__)
        return 0 if cmds else 2
    if not os.path.exists(TARGETCLI):
        print(f"targetcli_batch: {TARGETCLI} missing: install targetcli-fb (make deps)", file=sys.stderr)
        return 1
    tc = load_targetcli()
    shell = tc.TargetCLI(os.getenv("TARGETCLI_HOME", "~/.targetcli"))
    with open(tc.lock_file, "w+") as lk:
        # As targetcli does (try_op_lock): one configuration change at a time.
        fcntl.flock(lk, fcntl.LOCK_EX)
        root = tc.UIRoot(shell, as_root=os.getuid() == 0)
        root.refresh()
        for cmd in cmds:
            print(f"targetcli {cmd}", flush=True)
            try:
                shell.run_cmdline(cmd)
            except Exception as e:  # what 'targetcli CMD' reports and exits 1 on
                print(f"targetcli_batch: '{cmd}' failed: {e}", file=sys.stderr)
                return 1
            sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
