#!/usr/bin/python3
"""Run the fio matrix on nested VMs and print a table (the main job).

Usage: matrix.py [--profile quick|full] [--modes M,M] [--tests T,T]
                 [--runtime S] [--repeats N] [--noise|--no-noise]
                 [--backstore fileio|rd_mcp|null_blk|block:/dev/X] [--allow-writes]
                 [--role auto|vm|local] [--host-params P] [--guest-params P]
                 [--vcpus N] [--host-vcpus N] [--no-ceiling] [--fixed-ceiling US] [--host-ab US] [--ab US] [--pin]
                 [--guest-kernel NAME|DIR] [--out DIR]
       matrix.py --report DIR

--report DIR renders DIR's report.md, plots, table and summary.json's
cells list again from its recorded steps, running nothing.

--repeats N runs N interleaved rounds: each round runs every mode once, in
turn; each figure is the median over rounds with its min and max, and a
mode's ratio to baseline is the median of its per-round ratios to the
baseline of the same round.  Each round starts one mode further on.

--pin gives every guest the same placement: its vCPU N on the host's CPU
N, its I/O threads (vhost workers, QEMU iothreads) on the host's last
CPU, a one-job fio on the guest's vCPU 0.

--fixed-ceiling US runs every polling mode a second time in each round as
MODE@USus, with the spin ceiling fixed at US on both sides
(sqcq_spin_max_us=US in the host's vhost_scsi and the guest's
virtio_sqcq), against the default policy in the same rounds: the
'untuned' lines say how close each default cell came to the better of
baseline and the fixed ceiling.

--host-ab US runs each test of every mode with a host poller twice in the
same guest, back to back: once with the host's ceiling as the run sets
it (auto, or --host-params), once with it at US (MODE@hostUSus; the
module parameter is read at each spin window).  Which goes first
alternates from test to test and round to round.  The pair is seconds
apart in one guest, so neither a guest's boot nor the machine's drift
between guests (minutes apart) comes between them; the 'in-guest A/B'
lines give MODE over MODE@hostUSus per round.  Baseline's guest runs each
test twice too (baseline@again): the same cell back to back, the noise
such a pair sees.  --host-ab 0 is the policy against no host spinning at
all (every kick runs upstream's handler).

--ab US is --host-ab US on both sides: before each arm the guest's
virtio_sqcq ceiling is set too (read at each window, as the host's is),
so the variant (MODE@USus) is --fixed-ceiling's, run in the same guest
seconds apart.  The 'untuned' lines then pair each default cell with the
baseline of its round and with its own guest's other arm: a guest's boot
moved a mode's IOPS by up to a third here, more than the rule's 10%.

Profiles and tests live in bench/matrix.toml, modes in bench/modes.toml.
A test is named RW-qdQD-njNJ (e.g. randread-qd1-nj1), with -burst when
it pauses between bursts (thinktime_us, thinktime_blocks).  Results go to
results/matrix-<time>/ (fio JSON, logs, summary.json, report.md).
Before the guests, every test also runs with fio directly in the host on
the same backstore (exported through LIO's loopback fabric): the ceiling
each mode is compared with.

--backstore block:/dev/X exports a block device of yours (not mounted,
not held by dm/md, not open elsewhere), on the local role only:
read-only, and a plan with write tests is refused unless --allow-writes
is given (which destroys the device's data).  It has no host ceiling (a
loopback export would show the device twice to the host).  SQCQ_QEMU=/path runs the nested guests on your own QEMU (it needs
the qemu/ series for the sqcq modes; checked).  On a real KVM host
(--role local) the harness touches only the LIO objects it creates, and
warns when other VMs run (README, "Run it on your own KVM host").
--guest-kernel NAME|DIR boots the nested guests on a kernel of 'make
kernel' (guest: the series built in, the parameters on its command line),
building it first if needed.
"""
import argparse
import json
import os
import subprocess
import sys
import time
import tomllib

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import plan as P  # noqa: E402
from harness import realhost  # noqa: E402
from harness import report as R  # noqa: E402


def test_name(t):
    """RW-qdQD-njNJ, plus -burst for a bursty test (think time)."""
    return f"{t['rw']}-qd{t['iodepth']}-nj{t['numjobs']}" + ("-burst" if t.get("thinktime_us") else "")


def test_extra(t):
    """fio options of a bursty test: thinktime_blocks I/Os, then a pause
    of thinktime_us with nothing in flight (spin in the bursts, sleep
    between them)."""
    if not t.get("thinktime_us"):
        return []
    return [f"--thinktime={t['thinktime_us']}", f"--thinktime_blocks={t.get('thinktime_blocks', 1)}"]


def fio_cpus(t, smp):
    """--pin: fio's own CPUs in the guest: vCPU 0 for one job (where the
    guest's vCPU 0 is pinned: plan.pin_step), one vCPU each for more (fio
    splits only a mask it was given)."""
    if t["numjobs"] == 1:
        return ["--cpus_allowed=0"]
    return [f"--cpus_allowed=0-{smp - 1}", "--cpus_allowed_policy=split"]


def follow(proc, path, cells):
    """Print each cell as it starts, with an estimate of the time left."""
    t_start = time.time()
    seen = n = 0
    while True:
        done = proc.poll() is not None
        try:
            with open(path) as f:
                lines = f.read().splitlines()
        except OSError:
            lines = []
        for line in lines[seen:]:
            msg = line.split(" ", 1)[-1]
            if msg.startswith("warning: "):
                print(f"matrix: {msg}", flush=True)
            if msg.startswith("ceiling "):
                print(f"[host ceiling] {msg[8:]} (fio in the host, same backstore)", flush=True)
            if not msg.startswith("step "):
                continue
            if msg.endswith(" " + WARMUP):
                print(f"[warm-up] {msg[5:]}", flush=True)
                continue
            n += 1
            el = time.time() - t_start
            eta = f", about {el / (n - 1) * (cells - n + 1) / 60:.0f} min left" if n > 1 else ""
            print(f"[cell {n}/{cells}] {msg[5:]} (elapsed {el / 60:.1f} min{eta})", flush=True)
        seen = len(lines)
        if done:
            return
        time.sleep(2)


def launch(role, env, plan, out, sub, cells, runtime):
    """Run a plan on the host role into OUT/SUB; return (rc, its summary)."""
    path = os.path.join(out, f"plan-{sub}.json" if sub != "run" else "plan.json")
    P.write(plan, path)
    proc = subprocess.Popen([os.path.join(P.TOP, "scripts", "run-plan.sh"), "--role", role,
                             "--timeout", str(600 + cells * (runtime + 60)),
                             path, os.path.join(out, sub)], env=env)
    follow(proc, os.path.join(out, sub, "progress.log"), cells)
    rc = proc.wait()
    try:
        with open(os.path.join(out, sub, "summary.json")) as f:
            return rc, json.load(f)
    except (OSError, ValueError):
        if any(os.path.exists(os.path.join(out, sub, f)) for f in ("l1-hung", "l1-died")):
            return rc, {"partial": True, "steps": [], "host": {}}  # ended before any guest did
        sys.exit(f"matrix: the run left no summary (exit {rc}); see {out}/{sub}/l1-console.log")


def check_args(a, matrix, modes):
    """Every choice checked before anything builds or boots: a one-line
    error naming the value and the valid choices."""
    if a.profile not in matrix["profiles"]:
        sys.exit(f"matrix: unknown profile '{a.profile}' (known: {', '.join(matrix['profiles'])})")
    prof = matrix["profiles"][a.profile]
    if getattr(a, "warmup", 0) < 0:
        sys.exit(f"matrix: --warmup {a.warmup}: seconds, 0 or more (0: no warm-up)")
    mode_list = [m for m in a.modes.split(",") if m] if a.modes else list(prof["modes"])
    for m in mode_list:
        if m not in modes["modes"]:
            sys.exit(f"matrix: unknown mode '{m}' (known: {', '.join(modes['modes'])})")
    dup = sorted({m for m in mode_list if mode_list.count(m) > 1})
    if dup:
        sys.exit(f"matrix: mode {', '.join(dup)} listed more than once; use --repeats N for "
                 f"interleaved rounds of every mode")
    if "baseline" not in mode_list:
        sys.exit("matrix: the modes must include baseline (every ratio is to the baseline of "
                 f"the same round); got {','.join(mode_list)}")
    tests = prof["tests"]
    if a.tests:
        want = a.tests.split(",")
        missing = [w for w in want if w not in {test_name(t) for t in tests}]
        if missing:
            sys.exit(f"matrix: unknown test '{missing[0]}' in profile {a.profile} "
                     f"(known: {', '.join(test_name(t) for t in prof['tests'])})")
        tests = [t for t in tests if test_name(t) in want]
    err = P.params_error(a.host_params, a.guest_params)
    if err:
        sys.exit(f"matrix: {err}")
    for n, what in ((a.vcpus, "--vcpus"), (a.host_vcpus, "--host-vcpus")):
        if n is not None and not 1 <= n <= 64:
            sys.exit(f"matrix: {what} {n} out of range (1..64)")
    repeats = a.repeats if a.repeats is not None else prof["repeats"]
    if repeats < 1:
        sys.exit(f"matrix: --repeats {repeats} is invalid: the number of interleaved rounds, 1 or more")
    runtime = a.runtime if a.runtime is not None else prof["runtime"]
    if runtime < 1:
        sys.exit(f"matrix: --runtime {runtime} is invalid: seconds per cell, 1 or more")
    noise = prof.get("noise", False) if a.noise is None else a.noise
    a.backstore = a.backstore or prof.get("backstore", "fileio")
    try:
        kind, dev = P.parse_backstore(a.backstore)
    except ValueError as e:
        sys.exit(f"matrix: --backstore: {e}")
    if kind == "block" and not a.allow_writes:
        writes = [test_name(t) for t in tests if realhost.WRITES.search(f"--rw={t['rw']}")]
        if writes:
            sys.exit(f"matrix: --backstore {a.backstore} is exported read-only and tests "
                     f"{', '.join(writes)} write: choose read tests (--tests "
                     f"{','.join(test_name(t) for t in tests if test_name(t) not in writes) or 'randread-qd1-nj1'}) "
                     f"or give --allow-writes (the data on {dev} is lost)")
    if kind == "block":
        if a.role == "auto":
            a.role = "local"  # a device of this machine: never the host VM's namesake
        if a.role == "vm":
            sys.exit(f"matrix: --backstore {a.backstore} is a device of this machine: it needs the "
                     "local role (a real KVM host), not the host VM")
        err = realhost.check_block_device(dev)
        if err:
            sys.exit(f"matrix: {err}")
    variants = {}
    ab = getattr(a, "ab", None)
    if ab is not None and (a.fixed_ceiling is not None or getattr(a, "host_ab", None) is not None):
        sys.exit("matrix: --ab adds a variant of each polling mode, as --fixed-ceiling and --host-ab do: "
                 "give one of them")

    def both_sides(flag, us, lo, what_for):
        """--fixed-ceiling and --ab: US in range, no sqcq_spin_max_us of
        the run's own on either side, and {mode: MODE@USus}."""
        if not lo <= us <= P.SPIN_MAX_US_LIMIT:
            sys.exit(f"matrix: {flag} {us} out of range ({lo}..{P.SPIN_MAX_US_LIMIT} us)")
        for params, what in ((a.host_params, "--host-params"), (a.guest_params, "--guest-params")):
            if "sqcq_spin_max_us=" in params:
                sys.exit(f"matrix: {flag} sets sqcq_spin_max_us for {what_for}; {what} "
                         f"'{params}' sets it for every mode: give one or the other")
        out = {m: f"{m}@{us}us" for m in mode_list if modes["modes"][m].get("sqcq_poll")}
        if not out:
            sys.exit(f"matrix: {flag}: none of the modes {','.join(mode_list)} polls")
        return out
    if a.fixed_ceiling is not None:
        variants = both_sides("--fixed-ceiling", a.fixed_ceiling, 1, "its variants")
    if ab is not None:
        variants = both_sides("--ab", ab, 0, "its arms, and auto for the others")
    host_ab = getattr(a, "host_ab", None)
    if host_ab is not None:
        if a.fixed_ceiling is not None:
            sys.exit("matrix: --host-ab and --fixed-ceiling both add a variant of each polling mode: "
                     "give one or the other")
        if not 0 <= host_ab <= P.SPIN_MAX_US_LIMIT:
            sys.exit(f"matrix: --host-ab {host_ab} out of range (0..{P.SPIN_MAX_US_LIMIT} us)")
        if f"sqcq_spin_max_us={host_ab}" in a.host_params.split():
            sys.exit(f"matrix: --host-ab {host_ab} is the ceiling --host-params '{a.host_params}' sets "
                     "for the run: the two arms would be the same")
        variants = {m: f"{m}@host{host_ab}us" for m in mode_list if modes["modes"][m].get("sqcq_poll")}
        if not variants:
            sys.exit(f"matrix: --host-ab: none of the modes {','.join(mode_list)} has a host poller")
    if a.allow_writes and kind != "block":
        sys.exit("matrix: --allow-writes is for --backstore block:/dev/X only")
    for m in mode_list:
        peer = modes["modes"][m].get("peer")
        if peer and kind not in P.PEER_BACKSTORES:
            sys.exit(f"matrix: mode {m} (QEMU's own {peer}) cannot open backstore '{a.backstore}' "
                     f"(LIO's ramdisk has no file or device outside LIO); use --backstore "
                     f"{' or '.join(P.PEER_BACKSTORES)}, or leave {m} out")
    return mode_list, tests, runtime, repeats, noise, variants


def guest_release():
    """The nested guests' kernel release, and how the guest driver got in."""
    kdir = os.environ.get("SQCQ_GUEST_KERNEL")
    if not kdir:
        return f"{P.versions()['SQCQ_KVER']} (Debian's; the project's modules loaded)"
    with open(os.path.join(kdir, "release")) as f:
        rel = f.read().strip()
    return f"{rel} ({'the series built in' if P.guest_builtin() else 'the series as modules'})"


def write_report(out, summary):
    """OUT/report.md, the plots, and the table on stdout, from a run's
    summary.json (matrix.py --report DIR renders an earlier run again)."""
    mode_list, names, noise = summary["modes"], summary["tests"], summary.get("noise")
    rows = R.table(summary, mode_list, names)
    verdicts = (R.verdict_lines(summary, mode_list, names) + R.untuned_lines(summary, names)
                + R.ab_lines(summary, names))
    idle = R.idle_lines(summary)
    with open(os.path.join(P.TOP, "bench", "anchors.toml"), "rb") as f:
        anchors = tomllib.load(f)
    n = summary["rounds"]
    shape = (f"backstore {summary['backstore']}, {n} interleaved round{'s' if n > 1 else ''}, "
             f"host role {summary['role']}")
    try:
        pngs = R.plots(summary, mode_list, names, out, title=shape)
    except ImportError as e:
        pngs = []
        print(f"matrix: no plots ({e}); install python3-matplotlib (make deps)")
    with open(os.path.join(out, "report.md"), "w") as f:
        f.write(f"# fio matrix ({summary['profile']})\n\n{len(mode_list)} modes, {shape}, runtime "
                f"{summary['runtime']}s per cell, guest vCPUs {summary.get('guest_vcpus') or '-'}"
                + (f", guest kernel {summary['guest_kernel']}" if summary.get("guest_kernel") else "")
                + ", host "
                f"parameters '{summary.get('host_params') or 'defaults'}', guest parameters "
                f"'{summary.get('guest_params') or 'defaults'}'"
                + (f", every polling mode also with its spin ceiling fixed at {summary['fixed_ceiling_us']} us "
                   f"on both sides (MODE@{summary['fixed_ceiling_us']}us, in the same rounds)"
                   if summary.get("fixed_ceiling_us") else "")
                + (f", every mode with a host poller also ran each test with the host's ceiling at "
                   f"{summary['host_ab_us']} us in the same guest, back to back, which first alternating "
                   f"(MODE@host{summary['host_ab_us']}us)" if summary.get("host_ab_us") is not None else "")
                + (f", every polling mode also ran each test with its spin ceiling at {summary['ab_us']} us "
                   f"on both sides in the same guest, back to back, which first alternating "
                   f"(MODE@{summary['ab_us']}us)" if summary.get("ab_us") is not None else "")
                + f"{', baseline run twice per round (noise)' if noise else ''}"
                + (", each guest's vCPU N pinned to the host's CPU N, its I/O threads to the host's last CPU, "
                   "one-job fio to the guest's vCPU 0 (--pin)" if summary.get("pinned") else "")
                + ("; each round starts one mode further on" if summary.get("rotated") else "") + "\n\n"
                f"Reproduce: `{' '.join(summary.get('argv', []))}`\n\n"
                f"Each figure is the median over the rounds (n: rounds it rests on) with its "
                f"min-max; 'vs base' is the median of the per-round ratios to the baseline of the "
                f"same round, with their min-max.  Per-I/O counts: exits = all VM exits of the "
                f"guest (host KVM), kicks = notification (MMIO) exits, inj = interrupt injections, "
                f"irqs = the guest's request-queue interrupts; SQ/CQ CPU% = host SQ / guest CQ "
                f"poller threads; vs host = IOPS / fio in the host on the same backstore (no VM).\n\n"
                f"{R.render_markdown(rows)}\n\n## Verdict and noise\n\n"
                + "".join(f"  - {v.strip()}\n" if v.startswith("  ") else f"- {v}\n" for v in verdicts)
                + "\n## Per test\n\n"
                "Medians over rounds [min-max]; the IOPS ratio is paired per round, the other "
                "ratios are of medians; latency is fio's completion latency in the guest; fio "
                "usr/sys is fio's own CPU use.\n\n"
                f"{R.test_tables_markdown(summary, mode_list + ([R.NOISE] if noise else []), names)}")
        for w in summary.get("warnings", []):
            f.write(f"\n**Warning**: {w}.\n")
        budgets = R.budget_markdown(summary, mode_list, names)
        if budgets:
            f.write("\n## Spin budgets per cell\n\n"
                    "What the pollers ended each cell with, median [min-max] over rounds: the budget "
                    "(the largest of the device's queues), the window it would open (capped by the "
                    "ceiling and the idle timeout; 0: the poller sleeps at once), the measured cost of "
                    "a sleep's timed half (the `auto` ceiling is twice it), the share of windows "
                    "that caught work, the CPU spent spinning on an empty ring (% of one CPU, "
                    "all queues), and the probes started from the floor in the cell (a few gaps "
                    "at the ceiling, to see whether spinning shortens them), of which paid (then spun up "
                    "to 1 ms), the host's probe windows that contention ended, the share of the cell's "
                    "gaps learnt with the hard cap as the ceiling ('probed': in a probe or under a paid "
                    "one; 0 under a fixed ceiling, which allows no probes), "
                    "and the host's naps for a task waiting beside the spin.  SQ: the host's pollers; "
                    "CQ: the guest's.\n\n" + budgets + "\n")
        if idle:
            f.write("\n## Idle cost\n\n" + "".join(f"- {x}\n" for x in idle))
        f.write("\n## Ratios to baseline beside the proposal's\n\n"
                "Source: bench/anchors.toml (the RFC authors' tables; 16 vCPUs, NVMe). "
                "Absolute IOPS are not comparable (nested, 2 cores); ratios are.\n\n"
                + R.anchor_markdown(summary, mode_list, names, anchors) + "\n")
        if pngs:
            f.write("\n## Plots\n\n" + "".join(f"![{os.path.basename(p)}]({os.path.basename(p)})\n"
                                                for p in pngs))
        if summary.get("partial"):
            f.write("\n**Incomplete run**: the host role stopped before the end; cells shown as "
                    "not run are missing. Logs: run/l1-console.log (and run2/).\n")
    print()
    print(f"{shape}; medians over rounds, 'vs base' paired per round")
    print(R.render_text(rows))
    print()
    for v in verdicts:
        print(v)
    for x in idle:
        print("idle: " + x)
    print(f"\nreport: {out}/report.md")


def host_ceiling_step(value, tag):
    """A host step setting vhost_scsi's spin ceiling (read at each window),
    and reading it back: an arm after a ceiling that failed fails too
    (rounds.samples())."""
    f = "/sys/module/vhost_scsi/parameters/sqcq_spin_max_us"
    return {"name": f"{R.CEILING_STEP}{value}-{tag}", "type": "host", "expect_rc": 0, "timeout": 30,
            "cmd": f'echo {value} > {f} && test "$(cat {f})" = {value}'}


def guest_ceiling_step(value, tag):
    """A guest step setting virtio_sqcq's spin ceiling (read at each
    window and wakeup decision), and reading it back (matrix.py --ab)."""
    f = "/sys/module/virtio_sqcq/parameters/sqcq_spin_max_us"
    return {"name": f"{R.GUEST_CEILING_STEP}{value}-{tag}", "type": "sh", "timeout": 30,
            "cmd": f'echo {value} > {f} && test "$(cat {f})" = {value}'}


def ab_steps(steps, ceiling, ab_us, rnd, guest=False):
    """--host-ab: each fio step twice, back to back, once at the run's host
    ceiling (CEILING) and once at AB_US (the step named TEST@hostUSus,
    rounds.samples() files it under MODE@hostUSus); the arm that goes
    first alternates per test and per round, and the run's ceiling is set
    again after the last.  GUEST (--ab): the guest's ceiling is set with
    the host's, and the arm is TEST@USus.  An arm and the ceilings set
    for it are a group: an arm the emulator's reset spoils runs again on
    a fresh boot with them (hostrole.rerun_after_emulator_reset()), which
    matters for the guest's, lost with the guest."""
    def ceiling_steps(value, tag):
        return [host_ceiling_step(value, tag)] + ([guest_ceiling_step(value, tag)] if guest else [])
    out = []
    for i, st in enumerate(steps):
        arms = [(ceiling, st), (str(ab_us), dict(st, name=f"{st['name']}@{'' if guest else 'host'}{ab_us}us"))]
        if (rnd + i) % 2 == 0:
            arms.reverse()
        for value, fio in arms:
            out += [dict(x, group=f"ab-{i}-{value}") for x in ceiling_steps(value, i) + [fio]]
    return out + ceiling_steps(ceiling, "end")


def again_steps(steps):
    """--host-ab's in-guest noise: baseline's guest runs each fio step
    twice, back to back (the second named TEST@again)."""
    return [x for st in steps for x in (st, dict(st, name=f"{st['name']}@again"))]


# The unmeasured fio step each guest runs first (matrix.py --warmup).
WARMUP = "warmup"


def warmup_step(a, setup, modes, t, smp):
    """The run's first test for a.warmup seconds, not measured: a guest's
    first seconds of I/O after boot are not its steady state.  Baseline's
    first QD1 cell ran 1.38-1.47x its second, back to back in the same
    guest, in all three rounds of the --host-ab 0 run of 2026-12-05
    (docs/results.md); the sqcq-host pairs did not, so without it the
    cell that runs first after boot favoured baseline."""
    return {"name": WARMUP, "type": "fio", "timeout": a.warmup + 180,
            "args": P.fio_args(setup, modes, t["rw"], bs=t["bs"], iodepth=t["iodepth"],
                               numjobs=t["numjobs"], runtime=a.warmup,
                               extra=test_extra(t) + (fio_cpus(t, smp) if a.pin else []))}


def round_guests(a, modes, mode_list, variants, tests, runtime, repeats, noise):
    """The plan's guests: (the modes in run order, the guests, {guest:
    {mode, round}}).

    Interleaved rounds: round 1 runs every mode once, in turn, then round
    2 the same again, so that slow drift of this shared machine hits every
    mode alike and each mode pairs with the baseline of its own round.
    Each round starts one mode further on (round 2 with the second mode,
    baseline last but one...), so that no mode always runs first after
    the host's setup or right after the same neighbour.
    With --noise (the profile's default) baseline runs a second time in
    each round, half a round after the first: baseline against baseline
    (right after it, the pair would see no drift).  A --fixed-ceiling
    variant runs right after its mode; with variants, every guest sets the
    host's ceiling before it boots, the variant's or the run's (the module
    parameter is read at each spin window, so it changes between guests).
    """
    ab = getattr(a, "ab", None)
    host_ab = ab if ab is not None else getattr(a, "host_ab", None)
    groups = [[m, variants[m]] if m in variants else [m] for m in mode_list]
    run_modes = [x for grp in groups for x in grp]
    if host_ab is not None:
        # the variant's cells run in its mode's guest (ab_steps()), the
        # in-guest noise in baseline's (again_steps())
        groups = [[m] for m in mode_list]
        run_modes.insert(run_modes.index(R.REF) + 1, R.REF + R.AGAIN)
    base_of = {v: m for m, v in variants.items()}
    host_ceiling = next((t.split("=", 1)[1] for t in a.host_params.split()
                         if t.startswith("sqcq_spin_max_us=")), "auto")
    smp = a.vcpus or modes["guest"]["smp"]
    guests, guests_map = [], {}
    for r in range(1, repeats + 1):
        k = (r - 1) % len(groups)
        order = [x for grp in groups[k:] + groups[:k] for x in grp]
        if noise:
            # the second baseline half a round after the first, in every
            # round (right after it, it would measure no drift at all)
            at = (order.index(R.REF) + (len(order) + 1) // 2) % len(order) + 1
            order.insert(at, R.NOISE)
        for m in order:
            setup = "baseline" if m == R.NOISE else base_of.get(m, m)
            steps = [{"name": test_name(t), "type": "fio", "measure": True, "timeout": runtime + 180,
                      "args": P.fio_args(setup, modes, t["rw"], bs=t["bs"], iodepth=t["iodepth"],
                                         numjobs=t["numjobs"], runtime=runtime,
                                         extra=test_extra(t) + (fio_cpus(t, smp) if a.pin else []))}
                     for t in tests]
            if host_ab is not None and m in variants:
                steps = ab_steps(steps, host_ceiling, host_ab, r, guest=ab is not None)
            elif host_ab is not None and m == R.REF:
                steps = again_steps(steps)
            if getattr(a, "warmup", 0):
                steps.insert(0, warmup_step(a, setup, modes, tests[0], smp))
            if a.pin:
                steps.insert(0, P.pin_step())
            steps.append({"name": "idle-after-io", "type": "idle", "settle": 2, "seconds": 2})
            name = f"r{r}-{m}"
            fixed = f"sqcq_spin_max_us={a.fixed_ceiling}" if m in base_of else ""
            g = P.guest(name, setup, modes, steps, guest_params=" ".join(filter(None, (a.guest_params, fixed))))
            g["continue_after_failure"] = True
            if variants:
                # (--host-ab: every guest starts from the run's ceiling)
                g["vhost_scsi_set"] = {"sqcq_spin_max_us": str(a.fixed_ceiling) if fixed else host_ceiling}
            if a.vcpus:
                g["smp"] = a.vcpus
                g["num_queues"] = max(2, a.vcpus)  # poll queues need a queue left for interrupts
            guests.append(g)
            guests_map[name] = {"mode": m, "round": r}
    return run_modes, guests, guests_map


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="\n".join(__doc__.splitlines()[1:]))
    ap.add_argument("--profile", default="quick")
    ap.add_argument("--modes")
    ap.add_argument("--tests")
    ap.add_argument("--runtime", type=int)
    ap.add_argument("--repeats", type=int)
    ap.add_argument("--backstore", metavar="|".join(P.BACKSTORES),
                    help="LIO backstore (and the peers' disk); default: the profile's")
    ap.add_argument("--allow-writes", action="store_true",
                    help="with --backstore block:/dev/X: let write tests write to it (its data is lost)")
    ap.add_argument("--role", default="auto", choices=["auto", "vm", "local"])
    ap.add_argument("--host-params", default="",
                    help="vhost_scsi module parameters, e.g. 'sqcq_spin_max_us=400'")
    ap.add_argument("--guest-params", default="",
                    help="the guest's virtio_sqcq parameters, e.g. 'sqcq_spin_max_us=1000'")
    ap.add_argument("--host-setup", action="append", default=[],
                    help="shell command run in the host role before the guests (repeatable)")
    ap.add_argument("--vcpus", type=int, help="vCPUs (and request queues) of each nested guest "
                    "(default: bench/modes.toml [guest])")
    ap.add_argument("--host-vcpus", type=int, help="vCPUs of the host VM (vm role only; default 2)")
    ap.add_argument("--pin", action="store_true",
                    help="pin each guest's threads before its cells: vCPU N to the host's CPU N, the I/O "
                    "threads (vhost workers, QEMU iothreads) to the host's last CPU, and a one-job fio to "
                    "the guest's vCPU 0 (plan.pin_step): the same placement for every mode and round")
    ap.add_argument("--warmup", type=int, default=10, metavar="S",
                    help="seconds of the run's first test in every guest before its cells, not measured "
                    "(default 10; 0: none): the first seconds of I/O after a guest boots ran faster")
    ap.add_argument("--no-ceiling", action="store_true",
                    help="skip the host ceiling (fio in the host on the same backstore)")
    ap.add_argument("--no-retry", action="store_true",
                    help="do not run the modes a hung host VM left in a second host VM")
    ap.add_argument("--noise", dest="noise", action="store_true", default=None,
                    help="run baseline a second time in every round, half a round after the first (baseline against "
                    "baseline: the noise line); the profile says whether by default")
    ap.add_argument("--no-noise", dest="noise", action="store_false",
                    help="no second baseline run: the noise line uses the spread of baseline's rounds")
    ap.add_argument("--fixed-ceiling", type=int, metavar="US",
                    help="also run every polling mode as MODE@USus, its spin ceiling fixed at US on both "
                    "sides, in the same rounds (the default policy against a hand-tuned ceiling)")
    ap.add_argument("--host-ab", type=int, metavar="US",
                    help="run each test of every host-polling mode twice in the same guest, back to back: "
                    "at the run's host ceiling and at US (MODE@hostUSus), which first alternating")
    ap.add_argument("--ab", type=int, metavar="US",
                    help="--host-ab US with the guest's ceiling set too: each test of every polling mode at "
                    "auto and at US on both sides (MODE@USus), in the same guest, which first alternating")
    ap.add_argument("--guest-kernel", metavar="NAME|DIR",
                    help="boot the nested guests on a kernel of 'make kernel' (guest: the series "
                    "built in, no module loading), built first if it is not; default Debian's")
    ap.add_argument("--out")
    ap.add_argument("--report", metavar="DIR",
                    help="render DIR's report.md, plots and table again from its summary.json; run nothing")
    a = ap.parse_args()
    if a.report:
        try:
            with open(os.path.join(a.report, "summary.json")) as f:
                summary = json.load(f)
        except (OSError, ValueError) as e:
            sys.exit(f"matrix: --report {a.report}: no readable summary.json ({e})")
        if "modes" not in summary:
            sys.exit(f"matrix: --report {a.report}: summary.json is from a matrix.py without "
                     "interleaved rounds; run the matrix again")
        # The cells list too, from the same steps (a report fix reaches
        # summary.json's machine-readable cells as well as report.md).
        summary["cells"] = R.result_cells(summary, summary["modes"], summary["tests"], summary.get("backstore"))
        with open(os.path.join(a.report, "summary.json"), "w") as f:
            json.dump(summary, f, indent=1)
        write_report(os.path.abspath(a.report), summary)
        return 0

    with open(os.path.join(P.TOP, "bench", "matrix.toml"), "rb") as f:
        matrix = tomllib.load(f)
    modes = P.load_modes()
    mode_list, tests, runtime, repeats, noise, variants = check_args(a, matrix, modes)
    out = os.path.abspath(a.out or os.path.join(P.TOP, "results", f"matrix-{time.strftime('%Y%m%d-%H%M%S')}"))
    os.makedirs(out, exist_ok=True)

    if os.environ.get("SQCQ_QEMU"):
        err = P.qemu_error(os.environ["SQCQ_QEMU"], any(modes["modes"][m].get("sqcq_poll") for m in mode_list),
                           any(modes["modes"][m].get("worker_per_vq") for m in mode_list))
        if err:
            sys.exit(f"matrix: {err}")
    if a.guest_kernel:
        os.environ["SQCQ_GUEST_KERNEL"] = P.guest_kernel(a.guest_kernel)
    plan = P.new_plan(f"matrix-{a.profile}", P.build_paths(), a.backstore, allow_writes=a.allow_writes)
    plan["host"]["vhost_scsi_params"] = a.host_params
    plan["host"]["setup"] = a.host_setup
    # (no ceiling on a device of yours: hostrole.measure_ceiling)
    if not a.no_ceiling and plan["lio"]["backstore"] != "block":
        plan["host"]["ceiling"] = [
            {"name": test_name(t), "timeout": runtime + 120,
             "args": [x for x in P.fio_args("baseline", modes, t["rw"], bs=t["bs"], iodepth=t["iodepth"],
                                            numjobs=t["numjobs"], runtime=runtime, extra=test_extra(t))
                      if not x.startswith("--filename=")]}
            for t in tests]
    run_modes, plan["guests"], guests_map = round_guests(a, modes, mode_list, variants, tests, runtime,
                                                         repeats, noise)
    cells = sum(1 for g in plan["guests"] for st in g["steps"] if st.get("measure"))
    print(f"matrix: profile {a.profile}, {repeats} interleaved round{'s' if repeats > 1 else ''} x ({len(run_modes)} modes"
          f"{' + baseline again' if noise else ''}) x {len(tests)} tests = {cells} cells of {runtime}s, "
          f"backstore {a.backstore}; results in {out}", flush=True)
    env = dict(os.environ)
    if a.host_vcpus:
        env["SQCQ_HOST_SMP"] = str(a.host_vcpus)
    rc, summary = launch(a.role, env, plan, out, "run", cells, runtime)
    warnings = []
    hung = os.path.join(out, "run", "l1-hung")
    died = os.path.join(out, "run", "l1-died")
    ended = summary.get("partial") and (os.path.exists(hung) or os.path.exists(died))
    # (a guest's steps reach the summary when it ends: the one the host VM
    # hung in is the first not there)
    done = {st["guest"] for st in summary["steps"]}
    left = [g for g in plan["guests"] if g["name"] not in done]
    if ended and not left:
        # It ended after the last guest (teardown, a kmemleak scan): every
        # cell is in; nothing to run again.
        warnings.append("the host VM hung or died after its last guest (run/l1-console.log); every cell ran")
        print(f"matrix: warning: {warnings[-1]}", flush=True)
        summary["partial"] = False
    elif ended and not a.no_retry:
        # The host VM hangs now and then under TCG (docs/design.md); the
        # guests it finished are kept, the others run once more in a new
        # host VM, and the report says so.
        why = (f"hung during mode {left[0]['name']} (evidence: run/l1-hang-dump.txt, run/l0-backtraces.txt)"
               if os.path.exists(hung) else
               f"died during mode {left[0]['name']} (evidence: run/l1-died, run/l1-console.log)")
        msg = (f"the host VM {why}; modes {', '.join(g['name'] for g in left)} ran again in a "
               f"second host VM (run2/): their ratios compare cells of two host VM boots")
        print(f"matrix: warning: {msg}", flush=True)
        warnings.append(msg)
        # The guest the host VM hung in runs last, so that hanging there
        # again costs no other guest; the host ceiling runs again only if
        # the first host VM ended before it was measured.
        ceiling_done = any(st["guest"] == R.HOST for st in summary["steps"])
        plan2 = dict(plan, guests=left[1:] + left[:1],
                     host=dict(plan["host"], ceiling=[] if ceiling_done else plan["host"].get("ceiling", [])))
        n2 = sum(1 for g in left for st in g["steps"] if st.get("measure"))
        rc, s2 = launch(a.role, env, plan2, out, "run2", n2, runtime)
        vms = {v["pid"]: v for v in summary.get("host", {}).get("other_vms", []) + s2.get("host", {}).get("other_vms", [])}
        summary = dict(s2, steps=summary["steps"] + s2["steps"])
        summary.setdefault("host", {})["other_vms"] = sorted(vms.values(), key=lambda v: v["pid"])
    for sub in ("run", "run2"):
        # A host VM that oopsed on a stray int3 while booting, booted again
        # by scripts/vm/host-vm.sh, is named in the report too.
        retried = os.path.join(out, sub, "l1-boot-retries")
        if os.path.exists(retried):
            warnings.append(f"{open(retried).readline().strip()} ({sub}/l1-console.boot-crash.log)")
            print(f"matrix: warning: {warnings[-1]}", flush=True)
    for st in summary.get("steps", []):
        if st["step"] == "pin" and not st.get("ok"):
            warnings.append(f"{st['guest']}: its threads were not pinned ({st.get('error', 'failed')}): "
                            "its cells ran where the scheduler put them")
            print(f"matrix: warning: {warnings[-1]}", flush=True)
    others = summary.get("host", {}).get("other_vms")
    if others:
        warnings.append(f"{len(others)} other VM{'s' if len(others) > 1 else ''} ran on this host during the "
                        f"run ({', '.join('pid %d %s' % (v['pid'], v['comm']) for v in others)}): exits and "
                        "interrupt injections are host-wide counters and include theirs")
        print(f"matrix: warning: {warnings[-1]}", flush=True)
    names = [test_name(t) for t in tests]
    g0 = plan["guests"][0] if plan["guests"] else {}
    summary.update(guests=guests_map, backstore=a.backstore, rounds=repeats, profile=a.profile,
                   runtime=runtime, role=summary.get("role", a.role), modes=run_modes, tests=names,
                   variants=variants, fixed_ceiling_us=a.fixed_ceiling, host_ab_us=a.host_ab, ab_us=a.ab, pinned=a.pin, rotated=True,
                   noise=noise, warnings=warnings, guest_vcpus=g0.get("smp"), guest_kernel=guest_release(),
                   host_params=a.host_params, guest_params=a.guest_params, argv=sys.argv)
    summary["cells"] = R.result_cells(summary, run_modes, names, a.backstore)
    with open(os.path.join(out, "summary.json"), "w") as f:
        json.dump(summary, f, indent=1)
    write_report(out, summary)
    if summary.get("partial"):
        print(f"matrix: the host role stopped before the end (exit {rc}); cells after the last "
              f"finished guest are missing; see {out}/run/l1-console.log")
        return 1
    if "error" in summary.get("host", {}):
        print(f"matrix: host error: {summary['host']['error']}")
        return 1
    return 0 if rc == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
