#!/usr/bin/python3
# Description: the matrix report generator on a recorded run
# (tests/fixtures/matrix-summary.json, one cell marked failed): cell
# selection, best and median of repeats, ratios to baseline and to the
# host ceiling, per-test tables, the failed cell shown as FAILED, ratios
# beside the proposal's, idle cost, plots written, and compare.
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
        c = R.cells(s)
        self.assertEqual(c[(TESTS[1], "baseline")]["iops"], b["iops"])  # best of 3
        self.assertEqual(c[(TESTS[1], "baseline")]["iops_median"], 2000.0)
        self.assertEqual(c[(TESTS[1], "baseline")]["repeats"], 3)
        rows = {(t, m): v for t, m, v in R.table(s, MODES, TESTS)}
        p = next(x for x in S["steps"] if x["guest"] == "sqcq-poll" and x["step"] == TESTS[1])
        self.assertEqual(rows[(TESTS[1], "sqcq-poll")]["vs_host"], f"{p['iops'] / 10000:.2f}x")
        self.assertEqual(rows[(TESTS[0], "sqcq-poll")]["vs_host"], "-")  # no ceiling measured

    def test_per_test_tables(self):
        s, b = self.with_extras()
        md = R.test_tables_markdown(s, MODES, TESTS)
        self.assertEqual(md.count("### "), len(TESTS))
        self.assertIn("| figure | host ceiling | baseline | sqcq-poll |", md)
        self.assertIn("| clat p99 us | - | 9,000 | - |", md)
        p = next(x for x in S["steps"] if x["guest"] == "sqcq-poll" and x["step"] == TESTS[1])
        self.assertIn(f"{p['iops']:,.0f} ({p['iops'] / b['iops']:.2f}x)", md)
        self.assertIn(f"{p['per_io']['kicks']:.3f} ({p['per_io']['kicks'] / b['per_io']['kicks']:.2f}x)", md)
        self.assertIn("| IOPS / host ceiling | 1.00x |", md)
        self.assertIn("| status | ok | FAILED: control channel closed", R.test_tables_markdown(S, MODES, TESTS))

    def test_plots(self):
        with tempfile.TemporaryDirectory() as d:
            files = R.plots(S, MODES, TESTS, d)
            self.assertEqual(len(files), 4)
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


if __name__ == "__main__":
    sys.exit(0 if unittest.main(exit=False).result.wasSuccessful() else 1)
