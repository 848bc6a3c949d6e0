#!/usr/bin/python3
# Description: the matrix report generator on a recorded run
# (tests/fixtures/matrix-summary.json, one cell marked failed): cell
# selection, medians and spreads of repeats, ratios to baseline and to the
# host ceiling, per-test tables, the failed cell shown as FAILED, ratios
# beside the proposal's, idle cost, plots written, and compare.  And the
# interleaved rounds (scripts/harness/rounds.py) on recorded rounds: the
# ratio to baseline is paired per round (a test that fails if the pairing
# is wrong: the unpaired ratio of medians differs), the verdict line
# (median >= 0.97x and best round >= 1.0x in every test), the noise line
# (baseline run twice per round, or baseline's spread over rounds), and
# summary.json's flat 'cells' list; matrix.py --host-ab's plan (both arms
# in one guest, which first alternating) and its in-guest A/B lines.
# timeout: 120
import json
import os
import subprocess
import sys
import tempfile
import tomllib
import unittest

sys.dont_write_bytecode = True
TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.join(TOP, "scripts"))
from harness import report as R  # noqa: E402
from harness import rounds as RD  # noqa: E402

with open(os.path.join(TOP, "tests", "fixtures", "matrix-summary.json")) as f:
    S = json.load(f)
MODES = ["baseline", "sqcq-poll"]
TESTS = ["randread-qd1-nj1", "randread-qd32-nj1", "randwrite-qd32-nj1"]


class Report(unittest.TestCase):
    def test_cells_and_ratio(self):
        rows = {(t, m): v for t, m, v in R.table(S, MODES, TESTS)}
        b = next(x for x in S["steps"] if x["guest"] == "baseline" and x["step"] == TESTS[1])
        p = next(x for x in S["steps"] if x["guest"] == "sqcq-poll" and x["step"] == TESTS[1])
        self.assertEqual(rows[(TESTS[1], "sqcq-poll")]["ratio"], f"{p['iops'] / b['iops']:.2f}x")
        self.assertEqual(rows[(TESTS[1], "baseline")]["ratio"], "1.00x")
        self.assertEqual(rows[(TESTS[1], "sqcq-poll")]["kicks"], f"{p['per_io']['kicks']:.2f}")

    def test_failed_cell(self):
        rows = {(t, m): v for t, m, v in R.table(S, MODES, TESTS)}
        self.assertIn("failed", rows[(TESTS[2], "sqcq-poll")])
        self.assertIn("FAILED", R.render_text(R.table(S, MODES, TESTS)))
        self.assertIn("FAILED: control channel closed", R.render_markdown(R.table(S, MODES, TESTS)))

    def test_missing_cell(self):
        rows = {(t, m): v for t, m, v in R.table(S, ["baseline", "poll-queue"], TESTS)}
        self.assertIsNone(rows[(TESTS[0], "poll-queue")])
        self.assertIn("not run", R.render_text(R.table(S, ["baseline", "poll-queue"], TESTS)))

    def test_anchors(self):
        with open(os.path.join(TOP, "bench", "anchors.toml"), "rb") as f:
            a = tomllib.load(f)
        md = R.anchor_markdown(S, MODES, TESTS, a)
        # The proposal's x86_64 randread QD1: 9,533 / 8,316.
        self.assertIn(f"{9533 / 8316:.2f}x", md)
        self.assertIn("| randwrite-qd32-nj1 | sqcq-poll | - |", md)  # failed cell: no ratio

    def test_idle_line(self):
        lines = R.idle_lines(S)
        self.assertTrue(any(x.startswith("sqcq-poll: host SQ pollers 0.0% CPU") for x in lines), lines)

    def with_extras(self):
        """The fixture plus a host ceiling cell and two more baseline repeats."""
        s = json.loads(json.dumps(S))
        b = next(x for x in s["steps"] if x["guest"] == "baseline" and x["step"] == TESTS[1])
        b["fio"] = {"p50_us": 6000.0, "p99_us": 9000.0, "p99.9_us": 12000.0, "usr_pct": 5.0, "sys_pct": 40.0}
        s["steps"] += [dict(b, step=TESTS[1] + "#2", iops=1000.0),
                       dict(b, step=TESTS[1] + "#3", iops=2000.0),
                       {"guest": "host", "step": TESTS[1], "ok": True, "ios": 100000,
                        "iops": 10000.0, "bw_kib": 40000, "fio": {"p50_us": 3.0}}]
        return s, b

    def test_median_and_ceiling(self):
        s, b = self.with_extras()
        c = R.cell_stats(s)
        self.assertEqual(c[(TESTS[1], "baseline")]["iops"], (2000.0, 1000.0, b["iops"]))  # median, min, max
        self.assertEqual(c[(TESTS[1], "baseline")]["rounds"], 3)
        rows = {(t, m): v for t, m, v in R.table(s, MODES, TESTS)}
        p = next(x for x in S["steps"] if x["guest"] == "sqcq-poll" and x["step"] == TESTS[1])
        self.assertEqual(rows[(TESTS[1], "sqcq-poll")]["vs_host"], f"{p['iops'] / 10000:.2f}x")
        # sqcq-poll ran round 1 only: its paired ratio is to baseline's round 1
        self.assertEqual(rows[(TESTS[1], "sqcq-poll")]["ratio"], f"{p['iops'] / b['iops']:.2f}x")
        self.assertEqual(rows[(TESTS[0], "sqcq-poll")]["vs_host"], "-")  # no ceiling measured

    def test_per_test_tables(self):
        s, b = self.with_extras()
        md = R.test_tables_markdown(s, MODES, TESTS)
        self.assertEqual(md.count("### "), len(TESTS))
        self.assertIn("| figure | host ceiling | baseline | sqcq-poll |", md)
        self.assertIn("| clat p99 us | - | 9,000 | - |", md)
        p = next(x for x in S["steps"] if x["guest"] == "sqcq-poll" and x["step"] == TESTS[1])
        r = p["iops"] / b["iops"]
        self.assertIn(f"{p['iops']:,.0f} ({r:.2f}x paired, {r:.2f}-{r:.2f})", md)
        # other figures: the ratio of medians (baseline's kicks are the same in all 3 repeats)
        self.assertIn(f"{p['per_io']['kicks']:.3f} ({p['per_io']['kicks'] / b['per_io']['kicks']:.2f}x)", md)
        self.assertIn("| IOPS / host ceiling | 1.00x |", md)
        self.assertIn("| status | ok | FAILED: control channel closed", R.test_tables_markdown(S, MODES, TESTS))

    def test_plots(self):
        with tempfile.TemporaryDirectory() as d:
            files = R.plots(S, MODES, TESTS, d, title="backstore fileio, 1 round, host role vm")
            self.assertEqual([os.path.basename(p) for p in files],
                             ["ratio_to_baseline.png", "exits_per_io.png", "irqs_per_io.png"])
            for p in files:
                with open(p, "rb") as f:
                    self.assertEqual(f.read(8), b"\x89PNG\r\n\x1a\n")

    def test_compare(self):
        with tempfile.TemporaryDirectory() as d:
            for x in ("a", "b"):
                os.makedirs(f"{d}/{x}/run")
                with open(f"{d}/{x}/run/summary.json", "w") as f:
                    json.dump(S, f)
            out = subprocess.run([os.path.join(TOP, "scripts", "compare.py"), f"{d}/a", f"{d}/b"],
                                 capture_output=True, text=True)
            self.assertEqual(out.returncode, 0, out.stderr)
            self.assertIn("1.00x", out.stdout)
            self.assertIn("FAILED", out.stdout)
            bad = subprocess.run([os.path.join(TOP, "scripts", "compare.py"), d, d],
                                 capture_output=True, text=True)
            self.assertNotEqual(bad.returncode, 0)
            self.assertIn("no summary.json", bad.stderr)


def rounds_run(iops, noise=None):
    """A summary of interleaved rounds as matrix.py writes it: IOPS
    {mode: [round 1, round 2, ...]} for one test; NOISE: the second
    baseline run of each round."""
    t = TESTS[0]
    steps, guests = [], {}
    for r in range(len(iops["baseline"])):
        for m, xs in list(iops.items()) + ([(RD.NOISE, noise)] if noise else []):
            g = f"r{r + 1}-{m}"
            guests[g] = {"mode": m, "round": r + 1}
            ok = xs[r] is not None
            steps.append({"guest": g, "step": t, "ok": ok, "ios": 1000, **({"iops": float(xs[r]), "per_io": {
                "kicks": 1.0 / (r + 1), "guest_irqs": 0.5, "exits": 2.0 + r}} if ok else {"error": "fio exited 1"})})
    return {"steps": steps, "guests": guests}


class Rounds(unittest.TestCase):
    def test_paired_not_pooled(self):
        # Baseline drifts 100 -> 200 between rounds; the mode is 1.5x and
        # 1.1x of the baseline of its own round: paired median 1.30x.  A
        # ratio of medians would say 185 / 150 = 1.23x, a cross pairing
        # (round 1 with round 2) 0.75x and 2.2x.
        s = rounds_run({"baseline": [100, 200], "sqcq-host": [150, 220]})
        st = RD.stats(RD.samples(s), TESTS[0], "sqcq-host", R.value)
        self.assertAlmostEqual(st["ratio"][0], 1.30)
        self.assertAlmostEqual(st["ratio"][1], 1.10)
        self.assertAlmostEqual(st["ratio"][2], 1.50)
        self.assertEqual(st["iops"], (185.0, 150.0, 220.0))
        rows = {(t, m): v for t, m, v in R.table(s, ["baseline", "sqcq-host"], TESTS[:1])}
        self.assertEqual(rows[(TESTS[0], "sqcq-host")]["ratio"], "1.30x")
        self.assertEqual(rows[(TESTS[0], "sqcq-host")]["ratio_range"], "1.10-1.50")
        self.assertEqual(rows[(TESTS[0], "sqcq-host")]["iops_range"], "150-220")
        self.assertEqual(rows[(TESTS[0], "sqcq-host")]["rounds"], "2")

    def test_failed_round_unpaired(self):
        # Round 2 of baseline failed: only round 1 pairs; the mode's own
        # round 2 still counts for its IOPS, and the table says 1 of 2.
        s = rounds_run({"baseline": [100, None], "sqcq-host": [120, 300]})
        samp = RD.samples(s)
        self.assertEqual(RD.paired(samp, TESTS[0], "sqcq-host"), {1: 1.2})
        rows = {(t, m): v for t, m, v in R.table(s, ["baseline", "sqcq-host"], TESTS[:1])}
        self.assertEqual(rows[(TESTS[0], "baseline")]["rounds"], "1/2")
        self.assertEqual(rows[(TESTS[0], "sqcq-host")]["ratio"], "1.20x")

    def test_verdict(self):
        s = rounds_run({"baseline": [100, 100, 100], "good": [99, 101, 98], "lowbest": [98, 99, 99],
                        "lowmed": [90, 101, 95]})
        samp = RD.samples(s)
        self.assertEqual(RD.verdict(samp, "good", TESTS[:1])[0], "holds")   # median 0.99, best 1.01
        self.assertEqual(RD.verdict(samp, "lowbest", TESTS[:1])[0], "fails")  # median 0.99, best 0.99
        self.assertEqual(RD.verdict(samp, "lowmed", TESTS[:1])[0], "fails")  # median 0.95, best 1.01
        self.assertEqual(RD.verdict(samp, "good", TESTS[:2]), ("undecided", [], [TESTS[1]]))
        lines = R.verdict_lines(s, ["baseline", "good", "lowmed"], TESTS[:1])
        self.assertIn("median paired ratio >= 0.97x and best round >= 1.00x", lines[0])
        self.assertEqual(lines[1], "  good: HOLDS")
        self.assertEqual(lines[2], f"  lowmed: FAILS in {TESTS[0]} (median 0.950x, best 1.010x)")
        self.assertTrue(lines[3].startswith("noise"), lines[3])

    def test_noise_paired(self):
        s = rounds_run({"baseline": [100, 200], "sqcq-host": [150, 220]}, noise=[104, 180])
        per, how = RD.noise(RD.samples(s), TESTS[:1])
        self.assertEqual(how, "paired")
        self.assertAlmostEqual(per[TESTS[0]][1], 0.90)
        self.assertAlmostEqual(per[TESTS[0]][2], 1.04)
        line = RD.noise_line(RD.samples(s), TESTS[:1])
        self.assertIn("baseline run twice per round", line)
        self.assertIn("0.97x [0.90-1.04]", line)
        self.assertIn("within 10% of 1.00x are noise", line)
        # The second baseline is not a mode of the table, but is a cell of summary.json.
        cells = R.result_cells(s, ["baseline", "sqcq-host"], TESTS[:1], "fileio")
        self.assertEqual([c["mode"] for c in cells], ["baseline", "sqcq-host", RD.NOISE])

    def test_noise_from_rounds(self):
        s = rounds_run({"baseline": [100, 80], "sqcq-host": [150, 220]})
        line = RD.noise_line(RD.samples(s), TESTS[:1])
        self.assertIn("baseline's slowest round / fastest", line)
        self.assertIn("0.80x", line)
        one = rounds_run({"baseline": [100], "sqcq-host": [150]})
        self.assertIn("not measured", RD.noise_line(RD.samples(one), TESTS[:1]))

    def test_result_cells(self):
        s = rounds_run({"baseline": [100, 200], "sqcq-host": [150, 220], "poll-queue": [None, None]})
        cells = {c["mode"]: c for c in R.result_cells(s, ["baseline", "sqcq-host", "poll-queue", "peer"],
                                                       TESTS[:1], "null_blk")}
        c = cells["sqcq-host"]
        for k in ("test", "mode", "rounds", "iops_median", "iops_min", "iops_max", "ratio_median", "ratio_min",
                  "ratio_max", "kicks_per_io", "irqs_per_io", "exits_per_io", "backstore"):
            self.assertIn(k, c)
        self.assertEqual((c["test"], c["rounds"], c["backstore"]), (TESTS[0], 2, "null_blk"))
        self.assertEqual((c["iops_median"], c["ratio_median"], c["ratio_min"]), (185.0, 1.3, 1.1))
        self.assertEqual(c["kicks_per_io"], 0.75)  # median of 1.0 and 0.5
        self.assertEqual(c["exits_per_io"], 2.5)
        self.assertEqual(cells["baseline"]["ratio_median"], 1.0)
        self.assertEqual((cells["poll-queue"]["status"], cells["poll-queue"]["error"]), ("failed", "fio exited 1"))
        self.assertEqual(cells["peer"]["status"], "not run")

    def test_host_role_summary(self):
        # run/summary.json (the host role's own) has no guests map: the
        # guest names r<N>-<mode> give mode and round.
        s = rounds_run({"baseline": [100, 200], "sqcq-host": [150, 220]}, noise=[100, 210])
        del s["guests"]
        samp = RD.samples(s)
        self.assertEqual(RD.paired(samp, TESTS[0], "sqcq-host"), {1: 1.5, 2: 1.1})
        self.assertEqual(RD.noise(samp, TESTS[:1])[1], "paired")

    def test_boot_failure_fails_cells(self):
        # A guest that never booted fails its round of every test, with
        # the boot's error (not "not run").
        s = rounds_run({"baseline": [100, 200], "sqcq-host": [150, 220]})
        s["steps"] = [x for x in s["steps"] if x["guest"] != "r2-sqcq-host"]
        s["steps"].append({"guest": "r2-sqcq-host", "step": "boot", "ok": False, "error": "QEMU exited with 1"})
        s["tests"] = TESTS[:2]
        st = RD.stats(RD.samples(s), TESTS[0], "sqcq-host", R.value)
        self.assertEqual((st["status"], st["rounds"], st["of"]), ("ok", 1, 2))
        self.assertEqual(st["error"], "boot: QEMU exited with 1")
        st2 = RD.stats(RD.samples(s), TESTS[1], "sqcq-host", R.value)
        self.assertEqual(st2["status"], "failed")
        rows = {(t, m): v for t, m, v in R.table(s, ["baseline", "sqcq-host"], TESTS[:2])}
        self.assertEqual(rows[(TESTS[1], "sqcq-host")], {"failed": "boot: QEMU exited with 1"})

    def test_old_repeats_are_rounds(self):
        # A run without the guests map: repeats 'test#k' of one guest per mode.
        s = {"steps": [{"guest": m, "step": f"{TESTS[0]}#{k}", "ok": True, "iops": v}
                       for m, vs in (("baseline", (100, 200)), ("sqcq-host", (150, 220)))
                       for k, v in enumerate(vs, 1)]}
        self.assertEqual(RD.paired(RD.samples(s), TESTS[0], "sqcq-host"), {1: 1.5, 2: 1.1})


class MatrixArgs(unittest.TestCase):
    """Bad input: one line naming the value and the choices, before anything
    builds or boots (check_args runs first; nothing here reaches a build)."""
    cases = [(["--modes", "baseline,nope"], "unknown mode 'nope' (known: baseline,"),
             (["--modes", "baseline,sqcq-host,baseline"], "mode baseline listed more than once"),
             (["--modes", "sqcq-host"], "the modes must include baseline"),
             (["--repeats", "0"], "--repeats 0 is invalid"),
             (["--runtime", "0"], "--runtime 0 is invalid"),
             (["--tests", "randread-qd7-nj1"], "unknown test 'randread-qd7-nj1' in profile quick (known: "),
             (["--profile", "huge"], "unknown profile 'huge' (known: quick, full)"),
             (["--backstore", "rd_mcp"], "mode qemu-iothread (QEMU's own virtio-scsi) cannot open backstore 'rd_mcp'"),
             (["--backstore", "rd_mcp", "--modes", "baseline,blk-iothread"], "mode blk-iothread"),
             (["--host-params", "debugfs:spin_mult=3"],
              "--host-params: debugfs:spin_mult=3: no such debugfs knob (there are: spin_min_us, idle_timeout_us)"),
             (["--guest-params", "debugfs:idle_timeout_us=1ms"],
              "--guest-params: debugfs:idle_timeout_us=1ms: the value must be a non-negative integer"),
             (["--backstore", "nvme"], "--backstore: backstore 'nvme' is none of fileio, rd_mcp, null_blk, block:/dev/..."),
             (["--backstore", "block:/dev/sdz"], "is exported read-only and tests randwrite-qd1-nj1, "
              "randwrite-qd32-nj1 write: choose read tests (--tests randread-qd1-nj1,randread-qd32-nj1,randread-qd1-nj1-burst)"),
             (["--backstore", "block:/dev/sqcq-none", "--tests", "randread-qd1-nj1"],
              "backstore block:/dev/sqcq-none: No such file or directory"),
             (["--backstore", "block:/dev/sdz", "--tests", "randread-qd1-nj1", "--role", "vm"],
              "it needs the local role (a real KVM host), not the host VM"),
             (["--allow-writes", "yes"], "--allow-writes is for --backstore block:/dev/X only"),
             (["--fixed-ceiling", "0"], "--fixed-ceiling 0 out of range (1..1000000 us)"),
             (["--fixed-ceiling", "1000", "--guest-params", "sqcq_spin_max_us=50"],
              "--guest-params 'sqcq_spin_max_us=50' sets it for every mode: give one or the other"),
             (["--fixed-ceiling", "1000", "--modes", "baseline,poll-queue"],
              "--fixed-ceiling: none of the modes baseline,poll-queue polls"),
             (["--host-ab", "-1"], "--host-ab -1 out of range (0..1000000 us)"),
             (["--host-ab", "0", "--fixed-ceiling", "1000"],
              "--host-ab and --fixed-ceiling both add a variant of each polling mode: give one or the other"),
             (["--host-ab", "300", "--host-params", "sqcq_spin_max_us=300"],
              "--host-ab 300 is the ceiling --host-params 'sqcq_spin_max_us=300' sets for the run"),
             (["--host-ab", "0", "--modes", "baseline,poll-queue"],
              "--host-ab: none of the modes baseline,poll-queue has a host poller"),
             (["--ab", "1000", "--fixed-ceiling", "1000"],
              "--ab adds a variant of each polling mode, as --fixed-ceiling and --host-ab do: give one of them"),
             (["--ab", "5", "--fixed-ceiling", "0"],
              "--ab adds a variant of each polling mode, as --fixed-ceiling and --host-ab do: give one of them"),
             (["--ab", "1000", "--host-ab", "0"],
              "--ab adds a variant of each polling mode, as --fixed-ceiling and --host-ab do: give one of them"),
             (["--ab", "2000000"], "--ab 2000000 out of range (0..1000000 us)"),
             (["--ab", "1000", "--guest-params", "sqcq_spin_max_us=50"],
              "--ab sets sqcq_spin_max_us for its arms, and auto for the others; --guest-params "
              "'sqcq_spin_max_us=50' sets it for every mode"),
             (["--ab", "1000", "--modes", "baseline,poll-queue"],
              "--ab: none of the modes baseline,poll-queue polls")]

    def test_bad_args(self):
        import argparse
        import tomllib as T
        sys.path.insert(0, os.path.join(TOP, "scripts"))
        import matrix
        from harness import plan as P
        with open(os.path.join(TOP, "bench", "matrix.toml"), "rb") as f:
            mx = T.load(f)
        for argv, msg in self.cases:
            a = argparse.Namespace(profile="quick", modes=None, tests=None, vcpus=None, host_vcpus=None,
                                   repeats=None, runtime=None, noise=None, backstore=None,
                                   host_params="", guest_params="", allow_writes=False, role="auto",
                                   fixed_ceiling=None)
            for k, v in zip(argv[::2], argv[1::2]):
                setattr(a, k[2:].replace("-", "_"),
                        int(v) if k in ("--repeats", "--runtime", "--fixed-ceiling", "--host-ab", "--ab") else v)
            with self.assertRaises(SystemExit, msg=argv) as e:
                matrix.check_args(a, mx, P.load_modes())
            self.assertIn(msg, str(e.exception), argv)
            self.assertEqual(len(str(e.exception).splitlines()), 1)
        a = argparse.Namespace(profile="quick", modes="baseline,sqcq-host", tests=None, vcpus=None,
                               host_vcpus=None, repeats=3, runtime=None, noise=None, backstore=None,
                               host_params="sqcq_spin_max_us=1000 debugfs:idle_timeout_us=200",
                               guest_params="", allow_writes=False, role="auto", fixed_ceiling=None)
        modes, tests, runtime, repeats, noise, variants = matrix.check_args(a, mx, P.load_modes())
        self.assertEqual(variants, {})
        self.assertEqual((modes, len(tests), runtime, repeats, noise, a.backstore),
                         (["baseline", "sqcq-host"], 5, 10, 3, True, "fileio"))
        # the bursty test: its name and fio's think time (issue 20)
        burst = [x for x in tests if matrix.test_name(x).endswith("-burst")]
        self.assertEqual([matrix.test_name(x) for x in burst], ["randread-qd1-nj1-burst"])
        self.assertEqual(matrix.test_extra(burst[0]), ["--thinktime=5000", "--thinktime_blocks=16"])
        self.assertEqual(matrix.test_extra(tests[0]), [])

    def test_fixed_ceiling_plan(self):
        import argparse
        import tomllib as T
        import matrix
        from harness import plan as P
        with open(os.path.join(TOP, "bench", "matrix.toml"), "rb") as f:
            mx = T.load(f)
        a = argparse.Namespace(profile="quick", modes="baseline,sqcq-host,qemu-iothread",
                               tests="randread-qd1-nj1", vcpus=None, host_vcpus=None, repeats=2,
                               runtime=None, noise=None, backstore=None, host_params="sqcq_steer=0",
                               guest_params="sqcq_cq=1", allow_writes=False, role="auto", fixed_ceiling=1000,
                               pin=False)
        md = P.load_modes()
        modes, tests, runtime, repeats, noise, variants = matrix.check_args(a, mx, md)
        self.assertEqual(variants, {"sqcq-host": "sqcq-host@1000us"})
        run, guests, where = matrix.round_guests(a, md, modes, variants, tests, runtime, repeats, noise)
        self.assertEqual(run, ["baseline", "sqcq-host", "sqcq-host@1000us", "qemu-iothread"])
        self.assertEqual([g["name"] for g in guests][:5], ["r1-baseline", "r1-sqcq-host", "r1-sqcq-host@1000us",
                                                           "r1-" + RD.NOISE, "r1-qemu-iothread"])
        self.assertEqual(where["r2-sqcq-host@1000us"], {"mode": "sqcq-host@1000us", "round": 2})
        # round 2 starts one mode further on, a variant still right after
        # its mode; the noise baseline half a round after baseline in both
        self.assertEqual([g["name"] for g in guests][5:], ["r2-sqcq-host", "r2-sqcq-host@1000us",
                                                           "r2-" + RD.NOISE, "r2-qemu-iothread", "r2-baseline"])
        self.assertFalse(any(st["name"] == "pin" for g in guests for st in g["steps"]))
        by = {g["name"]: g for g in guests}
        v, d = by["r1-sqcq-host@1000us"], by["r1-sqcq-host"]
        self.assertEqual(v["vhost_scsi_set"], {"sqcq_spin_max_us": "1000"})
        self.assertEqual(d["vhost_scsi_set"], {"sqcq_spin_max_us": "auto"})
        self.assertEqual(by["r1-baseline"]["vhost_scsi_set"], {"sqcq_spin_max_us": "auto"})
        load = lambda g: next(st["cmd"] for st in g["steps"] if st["name"] == "load-virtio_scsi")  # noqa: E731
        self.assertIn("virtio_sqcq.ko sqcq_cq=0 sqcq_cq=1 sqcq_spin_max_us=1000", load(v))
        self.assertNotIn("sqcq_spin_max_us", load(d))
        self.assertEqual(v["device_props"], d["device_props"])
        a.host_params = "sqcq_spin_max_us=300"
        a.fixed_ceiling = 500
        _, guests, _ = matrix.round_guests(a, md, modes, {"sqcq-host": "sqcq-host@500us"}, tests, runtime, 1, False)
        self.assertEqual([g["vhost_scsi_set"]["sqcq_spin_max_us"] for g in guests], ["300", "300", "500", "300"])
        # --pin: each guest pins its threads first; one-job fio on vCPU 0
        a.pin = True
        _, guests, _ = matrix.round_guests(a, md, modes, {}, tests, runtime, 1, False)
        for g in guests:
            names = [st["name"] for st in g["steps"]]
            self.assertEqual(names[names.index("pin") + 1], "randread-qd1-nj1")
            self.assertIn("--cpus_allowed=0", g["steps"][names.index("pin") + 1]["args"])
            self.assertTrue(g["steps"][names.index("pin")].get("setup"))  # again on every boot
        self.assertEqual(matrix.fio_cpus({"numjobs": 4}, 2), ["--cpus_allowed=0-1", "--cpus_allowed_policy=split"])
        # --warmup: the first test, unmeasured, after the pinning and
        # before the cells; the rest of the plan unchanged
        a.warmup = 7
        _, warm, _ = matrix.round_guests(a, md, modes, {}, tests, runtime, 1, False)
        for g, w in zip(guests, warm):
            names = [st["name"] for st in w["steps"]]
            self.assertEqual(names[names.index("pin") + 1], matrix.WARMUP)
            st = w["steps"][names.index(matrix.WARMUP)]
            self.assertFalse(st.get("measure"))
            self.assertIn("--runtime=7", st["args"])
            self.assertIn("--cpus_allowed=0", st["args"])
            self.assertEqual([x for x in w["steps"] if x["name"] != matrix.WARMUP], g["steps"])
            self.assertFalse(RD.CELL.match(matrix.WARMUP))  # never a cell of the report

    @staticmethod
    def ab_plan(**kw):
        """matrix.check_args() and round_guests() for 2 rounds without
        noise: (a, modes, variants, run modes, guests, where)."""
        import argparse
        import tomllib as T
        import matrix
        from harness import plan as P
        with open(os.path.join(TOP, "bench", "matrix.toml"), "rb") as f:
            mx = T.load(f)
        a = argparse.Namespace(profile="quick", vcpus=None, host_vcpus=None, repeats=2, runtime=None, noise=False,
                               backstore=None, host_params="", guest_params="", allow_writes=False, role="auto",
                               fixed_ceiling=None, **kw)
        md = P.load_modes()
        modes, tests, runtime, repeats, noise, variants = matrix.check_args(a, mx, md)
        return (variants,) + matrix.round_guests(a, md, modes, variants, tests, runtime, repeats, noise)

    def test_host_ab_plan(self):
        # --host-ab: no guest of its own for the variant; each test runs
        # twice in the mode's guest, the host's ceiling set before each
        # arm, which arm first alternating per test and per round.
        variants, run, guests, where = self.ab_plan(modes="baseline,sqcq-host",
                                                    tests="randread-qd1-nj1,randread-qd32-nj1", host_ab=0, pin=True)
        self.assertEqual(variants, {"sqcq-host": "sqcq-host@host0us"})
        self.assertEqual(run, ["baseline", "baseline@again", "sqcq-host", "sqcq-host@host0us"])
        self.assertEqual([g["name"] for g in guests], ["r1-baseline", "r1-sqcq-host", "r2-sqcq-host", "r2-baseline"])
        by = {g["name"]: g for g in guests}
        names = lambda g: [st["name"] for st in g["steps"] if not st.get("setup")]  # noqa: E731
        # baseline's guest runs each cell twice: the in-guest noise
        self.assertEqual(names(by["r1-baseline"]), ["randread-qd1-nj1", "randread-qd1-nj1@again", "randread-qd32-nj1",
                                                    "randread-qd32-nj1@again", "idle-after-io"])
        self.assertEqual(names(by["r1-sqcq-host"]), [
            "host-ceiling-auto-0", "randread-qd1-nj1", "host-ceiling-0-0", "randread-qd1-nj1@host0us",
            "host-ceiling-0-1", "randread-qd32-nj1@host0us", "host-ceiling-auto-1", "randread-qd32-nj1",
            "host-ceiling-auto-end", "idle-after-io"])
        self.assertEqual(names(by["r2-sqcq-host"])[:4], [
            "host-ceiling-0-0", "randread-qd1-nj1@host0us", "host-ceiling-auto-0", "randread-qd1-nj1"])
        st = by["r2-sqcq-host"]["steps"]
        self.assertEqual(next(x for x in st if x["name"] == "host-ceiling-0-0")["cmd"],
                         "echo 0 > /sys/module/vhost_scsi/parameters/sqcq_spin_max_us && "
                         'test "$(cat /sys/module/vhost_scsi/parameters/sqcq_spin_max_us)" = 0')
        fio = [x for x in st if x["type"] == "fio"]
        self.assertEqual(fio[0]["args"], fio[1]["args"])  # the same job in both arms
        self.assertTrue(all(x.get("measure") for x in fio))
        self.assertEqual({g["vhost_scsi_set"]["sqcq_spin_max_us"] for g in guests}, {"auto"})
        # the recorded arms: the variant's cells, paired with the mode's
        steps = []
        for g in guests:
            for x in g["steps"]:
                if x["type"] == "fio":
                    r = where[g["name"]]["round"]
                    iops = (100.0 + ("@" in x["name"]) * 10 * r if g["name"].endswith("baseline")
                            else 120.0 if "@" not in x["name"] else 100.0 * r)
                    steps.append({"guest": g["name"], "step": x["name"], "ok": True, "ios": 1000, "iops": iops})
                else:
                    steps.append({"guest": g["name"], "step": x["name"], "ok": True})
        s = {"steps": steps, "guests": where, "variants": variants, "host_ab_us": 0,
             "tests": ["randread-qd1-nj1", "randread-qd32-nj1"]}
        samp = RD.samples(s)
        self.assertEqual(sorted(samp), sorted((t, m) for t in s["tests"] for m in run))
        r = RD.ratio(samp, "randread-qd1-nj1", "sqcq-host", "sqcq-host@host0us")
        self.assertEqual([round(x, 6) for x in r], [0.9, 0.6, 1.2])
        self.assertEqual(R.ab_lines(s, s["tests"][:1]), [
            RD.AB_RULE + ":", "  sqcq-host / sqcq-host@host0us: randread-qd1-nj1 0.90x [0.60-1.20]",
            "  in-guest noise, baseline / baseline@again (the same cell twice): randread-qd1-nj1 0.87x [0.83-0.91]"])
        self.assertEqual(R.untuned_lines(s, s["tests"]), [])
        self.assertFalse(any("@again" in x for x in R.verdict_lines(s, run, s["tests"])))
        # an arm after a ceiling that was not set fails, saying why
        bad = json.loads(json.dumps(s))
        st = next(x for x in bad["steps"] if x["guest"] == "r1-sqcq-host" and x["step"] == "host-ceiling-0-0")
        st.update(ok=False, error="exited 1")
        cell = RD.samples(bad)[("randread-qd1-nj1", "sqcq-host@host0us")][1]
        self.assertFalse(cell["ok"])
        self.assertIn("the host's ceiling was not set for it (host-ceiling-0-0: exited 1)", cell["error"])
        self.assertTrue(RD.samples(bad)[("randread-qd32-nj1", "sqcq-host@host0us")][1]["ok"])  # set again after
        self.assertTrue(RD.samples(bad)[("randread-qd1-nj1", "sqcq-host")][1]["ok"])  # set before it
        # a guest that did not boot fails its variant's cells too, also
        # in the host role's own summary (no host_ab_us, no variants)
        del s["host_ab_us"], s["variants"]
        s["steps"].append({"guest": "r2-sqcq-host", "step": "boot", "ok": False, "error": "no login"})
        s["steps"] = [x for x in s["steps"] if not (x["guest"] == "r2-sqcq-host" and x["step"] != "boot")]
        self.assertFalse(RD.samples(s)[("randread-qd32-nj1", "sqcq-host@host0us")][2]["ok"])

    def test_ab_plan(self):
        # --ab: --host-ab with the guest's ceiling set after the host's
        # before each arm; the arm is MODE@USus, and the untuned rule
        # pairs the default with it (in its own guest) and with baseline.
        variants, run, guests, where = self.ab_plan(modes="baseline,sqcq-poll", tests="randread-qd1-nj1",
                                                    host_ab=None, ab=1000, pin=False)
        self.assertEqual(variants, {"sqcq-poll": "sqcq-poll@1000us"})
        self.assertEqual(run, ["baseline", "baseline@again", "sqcq-poll", "sqcq-poll@1000us"])
        by = {g["name"]: g for g in guests}
        names = [st["name"] for st in by["r1-sqcq-poll"]["steps"] if not st.get("setup")]
        self.assertEqual(names, ["host-ceiling-auto-0", "guest-ceiling-auto-0", "randread-qd1-nj1",
                                 "host-ceiling-1000-0", "guest-ceiling-1000-0", "randread-qd1-nj1@1000us",
                                 "host-ceiling-auto-end", "guest-ceiling-auto-end", "idle-after-io"])
        st = {x["name"]: x for x in by["r1-sqcq-poll"]["steps"]}
        self.assertEqual(st["guest-ceiling-1000-0"]["type"], "sh")  # in the guest
        self.assertEqual(st["guest-ceiling-1000-0"]["cmd"],
                         "echo 1000 > /sys/module/virtio_sqcq/parameters/sqcq_spin_max_us && "
                         'test "$(cat /sys/module/virtio_sqcq/parameters/sqcq_spin_max_us)" = 1000')
        self.assertEqual({g["vhost_scsi_set"]["sqcq_spin_max_us"] for g in guests}, {"auto"})
        self.assertFalse(any("sqcq_spin_max_us" in (g.get("guest_params") or "") for g in guests))
        # an arm and its ceilings are a group: an emulator's reset in the
        # arm runs them again on the fresh boot, the guest's ceiling too
        self.assertEqual([st[n].get("group") for n in ("host-ceiling-1000-0", "guest-ceiling-1000-0",
                                                       "randread-qd1-nj1@1000us", "randread-qd1-nj1")],
                         ["ab-0-1000", "ab-0-1000", "ab-0-1000", "ab-0-auto"])
        from harness import hostrole
        todo = [x for x in by["r1-sqcq-poll"]["steps"] if not x.get("setup")]
        done = [{"step": x["name"], "ok": True} for x in todo[:5]]
        done.append({"step": "randread-qd1-nj1@1000us", "ok": False, "error": "reset", "emulator": "a triple fault"})
        hostrole.rerun_after_emulator_reset(done, todo)
        self.assertEqual([x["step"] for x in done[3:]], ["host-ceiling-1000-0-emulator-reset",
                                                        "guest-ceiling-1000-0-emulator-reset",
                                                        "randread-qd1-nj1@1000us-emulator-reset"])
        steps = []
        for g in guests:
            for x in g["steps"]:
                ok = {"guest": g["name"], "step": x["name"], "ok": True}
                if x["type"] == "fio":
                    r = where[g["name"]]["round"]
                    ok.update(ios=1000, iops=100.0 if g["name"].endswith("baseline")
                              else 180.0 if "@" not in x["name"] else 200.0 * r)
                steps.append(ok)
        s = {"steps": steps, "guests": where, "variants": variants, "host_ab_us": None, "ab_us": 1000,
             "tests": ["randread-qd1-nj1"]}
        samp = RD.samples(s)
        self.assertEqual(sorted(samp), sorted(("randread-qd1-nj1", m) for m in run))
        u = R.untuned_lines(s, s["tests"])
        self.assertEqual(u[0], RD.UNTUNED_RULE + RD.UNTUNED_AB + ":")
        # round 1: 180 / max(100, 200), round 2: 180 / max(100, 400)
        self.assertEqual(u[1], "  sqcq-poll against max(baseline, sqcq-poll@1000us): FAILS in randread-qd1-nj1: "
                         "randread-qd1-nj1 0.68x [0.45-0.90]")
        self.assertEqual(R.ab_lines(s, s["tests"])[:2], [
            RD.AB_RULE_BOTH + ":", "  sqcq-poll / sqcq-poll@1000us: randread-qd1-nj1 0.68x [0.45-0.90]"])
        # a guest ceiling that was not set fails the arm after it
        bad = json.loads(json.dumps(s))
        x = next(x for x in bad["steps"] if x["guest"] == "r1-sqcq-poll" and x["step"] == "guest-ceiling-1000-0")
        x.update(ok=False, error="exited 1")
        cell = RD.samples(bad)[("randread-qd1-nj1", "sqcq-poll@1000us")][1]
        self.assertFalse(cell["ok"])
        self.assertEqual("the guest's ceiling was not set for it (guest-ceiling-1000-0: exited 1)", cell["error"])
        x = next(x for x in bad["steps"] if x["guest"] == "r1-sqcq-poll" and x["step"] == "host-ceiling-1000-0")
        x.update(ok=False, error="exited 2")  # both sides: both named
        self.assertEqual(RD.samples(bad)[("randread-qd1-nj1", "sqcq-poll@1000us")][1]["error"],
                         "the host's ceiling was not set for it (host-ceiling-1000-0: exited 2); "
                         "the guest's ceiling was not set for it (guest-ceiling-1000-0: exited 1)")
        self.assertTrue(RD.samples(bad)[("randread-qd1-nj1", "sqcq-poll")][1]["ok"])  # set before it

    def test_burst_cells_counted(self):
        # The bursty test's cells are measured cells like the others (the
        # first quick run with it showed them all as 'not run').
        s = rounds_run({"baseline": [100, 150], "sqcq-host": [120, 160]})
        for st in s["steps"]:
            st["step"] = "randread-qd1-nj1-burst"
        samp = RD.samples(s)
        self.assertIn(("randread-qd1-nj1-burst", "sqcq-host"), samp)
        self.assertEqual(RD.verdict(samp, "sqcq-host", ["randread-qd1-nj1-burst"])[0], "holds")

    def test_untuned_line(self):
        # Round 1: the variant is better than baseline, round 2 baseline
        # is: the default mode pairs with 200 and then 150.
        s = rounds_run({"baseline": [100, 150], "sqcq-host": [190, 120], "sqcq-host@1000us": [200, 100]})
        samp = RD.samples(s)
        r = RD.untuned(samp, TESTS[0], "sqcq-host", "sqcq-host@1000us")
        self.assertAlmostEqual(r[1], 0.80)
        self.assertAlmostEqual(r[2], 0.95)
        s["variants"] = {"sqcq-host": "sqcq-host@1000us"}
        lines = R.untuned_lines(s, TESTS[:1])
        self.assertIn("within 10% of the better of baseline and the fixed ceiling", lines[0])
        self.assertEqual(lines[1], f"  sqcq-host against max(baseline, sqcq-host@1000us): FAILS in {TESTS[0]}: "
                         f"{TESTS[0]} 0.88x [0.80-0.95]")
        ok = rounds_run({"baseline": [100, 150], "sqcq-host": [198, 150], "sqcq-host@1000us": [200, 100]})
        ok["variants"] = s["variants"]
        self.assertIn(": HOLDS: ", R.untuned_lines(ok, TESTS[:1])[1])
        self.assertIn("UNDECIDED", R.untuned_lines(ok, TESTS[:2])[1])
        self.assertEqual(R.untuned_lines({"steps": []}, TESTS[:1]), [])

    def test_budget_table(self):
        # One row per polling cell, the median [min-max] of its rounds;
        # cells without a poller (baseline) have none.
        s = rounds_run({"baseline": [100, 150], "sqcq-poll": [120, 160]})
        for i, st in enumerate(x for x in s["steps"] if x["guest"].endswith("sqcq-poll")):
            st["poller"] = {"pollers": 1, "budget_ns": 250000 * (i + 1), "window_ns": 250000,
                            "cost_ns": 400000, "caught": 3 * (i + 1), "sleeps": 1, "probes": 2,
                            "probes_paid": 1, "probe_contended": i, "naps": 3 * i,
                            "gaps": 100, "gaps_probed": 25 * (i + 1),
                            "spin_ns": 500000000 * (i + 1), "seconds": 10.0}
            # (a guest module without spin_ns: no figure)
            st["guest_poller"] = {"pollers": 2, "budget_ns": 0, "window_ns": 0, "caught": 0, "sleeps": 4,
                                  "seconds": 10.0}
        md = R.budget_markdown(s, ["baseline", "sqcq-poll"], TESTS[:1])
        lines = md.splitlines()
        self.assertEqual(len(lines), 3, md)
        self.assertTrue(lines[0].startswith("| test | mode | SQ budget us | SQ window us |"))
        self.assertEqual(lines[2], f"| {TESTS[0]} | sqcq-poll | 375 [250-500] | 250 | 400 | 0.80 [0.75-0.86] "
                         "| 7.5 [5.0-10.0] | 2 | 1 | 0 [0-1] | 0.38 [0.25-0.50] | 2 [0-3] | 0 | 0 | - | 0.00 | - | - "
                         "| - | - |")
        self.assertEqual(R.budget_markdown(rounds_run({"baseline": [100]}), ["baseline"], TESTS[:1]), "")


if __name__ == "__main__":
    sys.exit(0 if unittest.main(exit=False).result.wasSuccessful() else 1)
