#!/usr/bin/python3
"""Run the reliability suite on the debug kernel and print its table.

Usage: reliability.py [--stock-kernel] [--tests t20,t41,...]
       reliability.py --resume RUN_DIR|ARCHIVE [--again t21,t32]
       reliability.py --table RUN_DIR
       reliability.py --save RUN_DIR

Builds (or reuses) the debug kernel of 'make kernel' (the series in tree,
lockdep/PROVE_RCU, KASAN, kmemleak, DEBUG_ATOMIC_SLEEP, DEBUG_OBJECTS),
boots the host VM on it (SQCQ_L1_KERNEL: vhost-scsi, the host poller,
LIO and KVM run under the debug options; the nested guests keep Debian's
kernel, see --guest-kernel) and runs the suite's VM tests
with tests/run.sh into results/reliability-<time>/: verified I/O, the host
and guest pollers, the fallback matrix, the userspace vhost driver's
protocol and hostile-ring checks, faults with I/O in flight, the LUN
relink, load, worker-per-vq placement.  Every host VM run ends with a
kmemleak scan; every kernel log is scanned for BUG/WARNING/KASAN/lockdep
reports.  Then prints one
table, scenario | result | evidence, also written to RUN_DIR/table.md.

--stock-kernel runs the same on Debian's kernel (no debug options).
--guest-kernel boots the nested guests on the debug kernel too
(SQCQ_GUEST_KERNEL); here that guest stops in early boot (a KASAN
wild-memory-access in the interrupt entry during cpu_detect, before any
project code) under nested SVM on TCG.
--resume RUN_DIR finishes a run that was interrupted (the whole suite
takes hours on the debug kernel): the tests with a result in RUN_DIR are
kept as they are, failures included; a test cut off midway is moved
aside to <test>.interrupted-<time>/ and runs again with the ones not yet
run, on the same kernel (checked).  RUN_DIR/parts records each part's
time, commit and tests; the table says how many parts there were.
--again TESTS (with --resume) runs finished tests of RUN_DIR again: their
earlier results are moved aside to <test>.earlier-<time>/ and the table
lists them with their verdicts, so a rerun never hides a failure.
--table RUN_DIR prints the table of a finished run again.
--save RUN_DIR keeps a run beyond this machine: its logs, summaries and
verdicts (not the host VM's kallsyms) in docs/reliability/<run>.tar.xz,
to commit.  --resume accepts such an archive too: it is unpacked into
results/ and the run goes on from there (on a new machine: the debug
kernel is rebuilt first, and must be the same build, which is checked).
Exits 1 if any scenario failed.
"""
import argparse
import glob
import json
import os
import re
import subprocess
import sys
import tarfile
import time

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
SUITE = ["t10", "t20", "t21", "t30", "t31", "t32", "t40", "t41", "t42", "t43", "t44", "t45", "t46"]
# Plumbing steps that prove nothing on their own.
QUIET = re.compile(r"^(boot|load-virtio_scsi|wait-disk|.*-start-io)$")
TAP = re.compile(r"^(not ok|ok) \d+ - (.*)$")
DEBUG_OPTS = ["PROVE_LOCKING", "PROVE_RCU", "DEBUG_ATOMIC_SLEEP", "KASAN", "DEBUG_KMEMLEAK",
              "DEBUG_OBJECTS", "DEBUG_LIST", "DEBUG_PREEMPT"]


def cell(text, n=150):
    text = " ".join(str(text).split()).replace("|", "/")
    return text if len(text) <= n else text[:n - 3] + "..."


def split_paren(text):
    """'check (evidence)' -> (check, evidence): the final balanced group."""
    if text.endswith(")"):
        depth = 0
        for i in range(len(text) - 1, -1, -1):
            depth += {")": 1, "(": -1}.get(text[i], 0)
            if depth == 0:
                if i > 0:
                    return text[:i].rstrip(), text[i + 1:-1]
                break
    return text, text


def step_evidence(st):
    if not st.get("ok"):
        # A command's own last words, not the command (the error quotes it).
        said = [x for x in str(st.get("output", "")).splitlines() if x.strip()]
        if said and "rc" in st:
            return f"exited {st['rc']}: {said[-1]}"
        return st.get("error", "failed")
    if st.get("warning"):
        return f"warning: {st['warning']}"
    out = [x for x in str(st.get("output", "")).splitlines() if x.strip()]
    if out:
        return out[-1]
    ev = []
    if "ios" in st:
        ev.append(f"{st['ios']} I/Os verified" if "verif" in st["step"] else f"{st['ios']} I/Os")
    for key, who in (("poller", "host"), ("guest_poller", "guest")):
        pl = st.get(key)
        if isinstance(pl, dict) and pl.get("pollers"):
            if who == "host":
                work = f"{pl.get('vq_work', 0)} rounds polled, {pl.get('vq_inline_kicks', 0)} kicks inline"
            else:
                work = f"{pl.get('vq_reaped', 0)} reaped, {pl.get('vq_irqs_inline', 0)} interrupts inline"
            ev.append(f"{who} poller: {work}, {pl.get('wakeups', 0)} wakeups, {pl.get('cpu_pct', 0)}% CPU")
    if "pollers" in st and "poller" not in st:
        ev.append(f"{st['pollers']} host pollers")
    if "guest_pollers" in st:
        ev.append(f"{st['guest_pollers']} guest pollers")
    if st["step"] == "rmmod-vhost_scsi" and st.get("ok"):
        ev.append("rmmod vhost_scsi succeeded once idle")
    return "; ".join(ev)


def test_rows(tdir):
    """(scenario, result, evidence) rows of one test's directory."""
    name = os.path.basename(tdir)
    short = name.split("-", 1)[0]
    rows = []
    log = os.path.join(tdir, "test.log")
    lines = open(log, errors="replace").read().splitlines() if os.path.exists(log) else []
    # Checks the test printed as TAP itself (the userspace vhost driver).
    for x in lines:
        m = TAP.match(x)
        if m:
            scen, ev = split_paren(m.group(2))
            rows.append((f"{short} {scen}", "ok" if m.group(1) == "ok" else "FAILED", ev))
    # Steps of every plan the test ran (a host VM that hung or died and was
    # run again is in run.hung/: its warning is on the test's line).
    for sp in sorted(glob.glob(os.path.join(tdir, "**", "summary.json"), recursive=True)):
        if "/run.hung/" in sp:
            continue
        try:
            s = json.load(open(sp))
        except (OSError, ValueError):
            continue
        if "error" in s.get("host", {}):
            rows.append((f"{short} host role", "FAILED", s["host"]["error"]))
        for st in s.get("steps", []):
            if st.get("ok") and (QUIET.match(st["step"]) or (st["step"].startswith("host-check") and rows)):
                continue
            # Tests with several plans (t21) keep each in its own directory.
            sub = os.path.relpath(os.path.dirname(os.path.dirname(sp)), tdir)
            where = ("" if sub == "." else f"{sub}: ") + \
                ("" if st["guest"] in ("-", "host") else f"{st['guest']}/")
            rows.append((f"{short} {where}{st['step']}", "ok" if st.get("ok") else "FAILED",
                         step_evidence(st)))
    tap = open(os.path.join(tdir, "tap")).read().strip() if os.path.exists(os.path.join(tdir, "tap")) else ""
    logs = [p for p in glob.glob(os.path.join(tdir, "**", "*"), recursive=True)
            if os.path.isfile(p) and re.search(r"(dmesg|console)", os.path.basename(p))
            and "boot-crash" not in p and "/run.hung/" not in p]
    if "kernel log:" in tap:
        rows.append((f"{short} kernel logs", "FAILED", tap.split("kernel log:", 1)[1]))
    else:
        known = re.findall(r"known report \(tests/known-reports.toml\): ([^;]*)", tap)
        emu = re.findall(r"the emulator's report \(impossible CPU state\): ([^;]*)", tap)
        rows.append((f"{short} kernel logs", "ok" if tap.startswith("ok") else "-",
                     f"no BUG/WARNING/KASAN/lockdep/kmemleak report in {len(logs)} host and guest logs"
                     + (f" but the known upstream one{'s' if len(known) > 1 else ''}: {'; '.join(known)}"
                        if known else "")
                     + (f"{' and' if known else ' but'} the emulator's (impossible CPU state): {'; '.join(emu)}"
                        if emu else "")))
    if not tap:
        # (cut off midway: --resume runs it again)
        rows[-1:] = [(f"**{name}**", "not finished", "no result: the run was stopped during this test")]
        return rows
    ok = tap.startswith("ok")
    warn = tap.split("# warning:", 1)[1] if "# warning:" in tap else ""
    rows.append((f"**{name}**", "ok" if ok else ("SKIP" if "# SKIP" in tap else "FAILED"),
                 warn or (tap.split(" # ", 1)[1] if " # " in tap else re.sub(r"^.* \((\d+s)\).*$", r"\1", tap))))
    return rows


def kernel_line(run_dir):
    for sp in glob.glob(os.path.join(run_dir, "*", "**", "summary.json"), recursive=True):
        try:
            k = json.load(open(sp)).get("host", {}).get("kernel")
        except (OSError, ValueError):
            continue
        if k:
            return k
    return "?"


def read(path, default=""):
    return open(path).read().strip() if os.path.exists(path) else default


def table(run_dir):
    rows = []
    # (not the <test>.interrupted-<time>/ or .earlier-<time>/ a resumed run moved aside)
    tdirs = [t for t in sorted(glob.glob(os.path.join(run_dir, "t[0-9]*-*"))) if "." not in os.path.basename(t)]
    for tdir in tdirs:
        rows += test_rows(tdir)
    kinfo = read(os.path.join(run_dir, "kernel"))
    parts = read(os.path.join(run_dir, "parts")).splitlines()
    out = [f"# Reliability suite: {run_dir}", "",
           f"Host VM kernel: {kernel_line(run_dir)}{'; ' + kinfo if kinfo else ''}", ""]
    if len(parts) > 1:
        out += [f"Run in {len(parts)} parts (scripts/reliability.py --resume):", ""]
        out += [f"- {x}" for x in parts] + [""]
    earlier = sorted(glob.glob(os.path.join(run_dir, "t[0-9]*-*.earlier-*")))
    if earlier:
        out += ["Earlier results of tests run again (--again), moved aside:", ""]
        out += [f"- {os.path.basename(t)}: {read(os.path.join(t, 'tap'), 'no result')}" for t in earlier] + [""]
    out += ["| scenario | result | evidence |", "|---|---|---|"]
    out += [f"| {cell(a, 90)} | {b} | {cell(c)} |" for a, b, c in rows]
    failed = [a for a, b, _ in rows if b == "FAILED"]
    done = {os.path.basename(t).split("-", 1)[0] for t in tdirs if os.path.exists(os.path.join(t, "tap"))}
    missing = [t for t in SUITE if t not in done]
    out += ["", f"{len(rows)} rows, {len(failed)} failed" + (f": {', '.join(failed[:8])}" if failed else "")
            + (f"; not run (or not finished) of the suite: {', '.join(missing)}" if missing else "")]
    text = "\n".join(out) + "\n"
    with open(os.path.join(run_dir, "table.md"), "w") as f:
        f.write(text)
    return text, not failed


def test_names(patterns):
    names = subprocess.run([os.path.join(TOP, "tests", "run.sh"), "--list"] + patterns,
                           stdout=subprocess.PIPE, text=True, check=True).stdout.split()
    return [os.path.splitext(x)[0] for x in names]


def resume_tests(run_dir, patterns, kinfo, again=()):
    """The tests of @patterns that @run_dir has no result for, and those of
    @again (their results moved aside)."""
    was = read(os.path.join(run_dir, "kernel"))
    if was != kinfo:
        sys.exit(f"reliability: {run_dir} ran on another kernel or options:\n  then: {was}\n  now:  {kinfo}\n"
                 "resume it with the same kernel and options, or start a new run")
    rerun = set(test_names(list(again))) if again else set()
    todo = []
    for n in test_names(patterns):
        tdir = os.path.join(run_dir, n)
        done = os.path.exists(os.path.join(tdir, "tap"))
        if done and n in rerun:
            aside = f"{tdir}.earlier-{time.strftime('%H%M%S')}"
            os.rename(tdir, aside)
            print(f"reliability: {n} runs again (--again); its earlier result, "
                  f"{read(os.path.join(aside, 'tap'))}, moved to {aside}")
        elif done:
            print(f"reliability: kept {n}: {read(os.path.join(tdir, 'tap'))}")
            continue
        if os.path.isdir(tdir):
            aside = f"{tdir}.interrupted-{time.strftime('%H%M%S')}"
            os.rename(tdir, aside)
            print(f"reliability: {n} was cut off midway; moved to {aside}, runs again")
        todo.append(n)
    return todo


SAVED = os.path.join(TOP, "docs", "reliability")


def check_run(run_dir):
    """@run_dir as an absolute path, if it is a run of this script."""
    run_dir = os.path.abspath(run_dir)
    if not os.path.isfile(os.path.join(run_dir, "kernel")):
        sys.exit(f"reliability: {run_dir} is not a run of this script (no 'kernel' file in it)")
    return run_dir


def save(run_dir):
    """Pack @run_dir into docs/reliability/<run>.tar.xz; return its path."""
    run_dir = check_run(run_dir)
    os.makedirs(SAVED, exist_ok=True)
    dest = os.path.join(SAVED, os.path.basename(run_dir) + ".tar.xz")

    def keep(ti):
        # The host VM's symbols (1 MB a boot) are rebuilt with the kernel.
        return None if ti.name.endswith("host-kallsyms.gz") else ti
    with tarfile.open(dest + ".tmp", "w:xz") as tf:
        tf.add(run_dir, arcname=os.path.basename(run_dir), filter=keep)
    os.replace(dest + ".tmp", dest)
    return dest


def unpack(archive):
    """Unpack a --save archive into results/; return the run directory."""
    try:
        tf = tarfile.open(archive)
        names = tf.getnames()
    except (tarfile.TarError, EOFError, OSError) as e:
        sys.exit(f"reliability: cannot read {archive} ({e.__class__.__name__}); expected an archive of --save")
    with tf:
        tops = {n.split("/", 1)[0] for n in names}
        if len(tops) != 1 or not re.fullmatch(r"reliability-[0-9-]+", next(iter(tops))) or \
                any(n.startswith("/") or ".." in n.split("/") for n in names):
            sys.exit(f"reliability: {archive} is not an archive of --save (one reliability-<time>/ in it)")
        run_dir = os.path.join(TOP, "results", next(iter(tops)))
        if os.path.exists(run_dir):
            sys.exit(f"reliability: {run_dir} exists already: resume it, or move it away to unpack {archive}")
        # (the "data" filter, where Python has it, refuses links out of the tree)
        if hasattr(tarfile, "data_filter"):
            tf.extractall(os.path.join(TOP, "results"), filter="data")
        else:
            tf.extractall(os.path.join(TOP, "results"))
    print(f"reliability: unpacked {archive} into {run_dir}")
    return run_dir


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--stock-kernel", action="store_true", help="Debian's kernel, no debug options")
    ap.add_argument("--guest-kernel", action="store_true",
                    help="the nested guests boot the debug kernel too (does not boot here yet)")
    ap.add_argument("--tests", default=",".join(SUITE), help="comma-separated test name patterns")
    ap.add_argument("--resume", metavar="RUN_DIR", help="run the tests an interrupted run did not finish")
    ap.add_argument("--again", metavar="TESTS",
                    help="with --resume: comma-separated patterns of finished tests to run again")
    ap.add_argument("--table", metavar="RUN_DIR", help="print the table of a finished run")
    ap.add_argument("--save", metavar="RUN_DIR", help="keep a run in docs/reliability/<run>.tar.xz")
    a = ap.parse_args()
    if a.table:
        text, ok = table(a.table)
        print(text, end="")
        return 0 if ok else 1
    if a.save:
        print(f"reliability: saved {a.save} in {save(a.save)}")
        return 0
    if a.again and not a.resume:
        ap.error("--again needs --resume RUN_DIR (the run whose tests to run again)")
    env = dict(os.environ)
    if a.resume:
        if a.resume.endswith(".tar.xz") and os.path.isfile(a.resume):
            run_dir = check_run(unpack(a.resume))
        else:
            run_dir = check_run(a.resume)
    else:
        run_dir = os.path.join(TOP, "results", f"reliability-{time.strftime('%Y%m%d-%H%M%S')}")
        os.makedirs(run_dir)
    kinfo = "Debian's kernel, no debug options"
    if not a.stock_kernel:
        p = subprocess.run([os.path.join(TOP, "scripts", "build-kernel.sh")], stdout=subprocess.PIPE, text=True)
        if p.returncode:
            sys.exit("reliability: the debug kernel did not build (see the error above)")
        kdir = p.stdout.strip().splitlines()[-1]
        env["SQCQ_L1_KERNEL"] = kdir
        # The debug kernel boots as the host VM: on a real KVM host too
        # (where the automatic role would be the local one).
        env["SQCQ_ROLE"] = "vm"
        if a.guest_kernel:
            env["SQCQ_GUEST_KERNEL"] = kdir
        # KASAN, lockdep and kmemleak under TCG: give every test three
        # times its time, unless the caller chose otherwise (twice was not
        # enough for t41: every step passed and its host VM powered off at
        # 1,793 s of 1,800, 2026-11-30 16:30).
        env.setdefault("SQCQ_TIMEOUT_SCALE", "3")
        # And a nested guest's boot twice that (6.5 min seen of 9).
        env.setdefault("SQCQ_BOOT_SCALE", "2")
        # Verified writes of 16 MiB, not 128 (plan.verify_mb: t44 and t46
        # ran past their limits at 13-20 LIO commands/s, 2026-12-04; with
        # 32, t44's two guests' 16 MiB each took 22 min and the test ran
        # out of its 45 min in its teardown).
        env.setdefault("SQCQ_VERIFY_MB", "16")
        env.setdefault("PLAN_TIMEOUT", "2700")
        with open(os.path.join(kdir, "config")) as f:
            conf = f.read()
        on = [o for o in DEBUG_OPTS if re.search(rf"^CONFIG_{o}=y", conf, re.M)]
        kinfo = (f"built by 'make kernel' ({kdir}) with {', '.join(on)}; nested guests on "
                 + ("it too" if a.guest_kernel else "Debian's kernel")
                 + f"; verified writes of {env['SQCQ_VERIFY_MB']} MiB (SQCQ_VERIFY_MB)")
    if os.environ.get("SQCQ_L1_CMDLINE"):
        kinfo += f"; host VM booted with {os.environ['SQCQ_L1_CMDLINE']} (SQCQ_L1_CMDLINE)"
    tests = a.tests.split(",")
    if a.resume:
        tests = resume_tests(run_dir, tests, kinfo, a.again.split(",") if a.again else ())
        if not tests:
            print(f"reliability: every test of {run_dir} has its result; nothing to run")
    else:
        with open(os.path.join(run_dir, "kernel"), "w") as f:
            f.write(kinfo + "\n")
    env["SQCQ_RUN_DIR"] = run_dir
    if tests:
        commit = subprocess.run(["git", "-C", TOP, "describe", "--always", "--dirty"],
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True).stdout.strip()
        with open(os.path.join(run_dir, "parts"), "a") as f:
            f.write(f"{time.strftime('%Y-%m-%d %H:%M')} commit {commit or '?'}: {' '.join(tests)}\n")
        print(f"reliability: {kinfo}; results in {run_dir}", flush=True)
        subprocess.run([os.path.join(TOP, "tests", "run.sh")] + tests, env=env)
    text, ok = table(run_dir)
    print()
    print(text, end="")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
