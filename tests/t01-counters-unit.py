#!/usr/bin/python3
# Description: the counter parsers and per-I/O arithmetic on recorded input
# (tracefs histogram, /proc/interrupts, fio JSON).
# timeout: 60
import json
import os
import sys
import unittest

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scripts"))
from harness import counters as C  # noqa: E402

HIST = """# event histogram
#
# trigger info: hist:keys=exit_reason:vals=hitcount:sort=hitcount:size=256 [active]
#

{ exit_reason:        100 } hitcount:       6580
{ exit_reason:         96 } hitcount:       9940
{ exit_reason:       1024 } hitcount:      14001
{ exit_reason:        120 } hitcount:      14130

Totals:
    Hits: 44651
    Entries: 4
    Dropped: 0
"""

IRQS = """           CPU0       CPU1
  0:         23          0   IO-APIC   2-edge      timer
 24:          0          0   PCI-MSI-0000:00:03.0   0-edge      virtio1-config
 25:          0          0   PCI-MSI-0000:00:03.0   1-edge      virtio1-control
 26:          0          0   PCI-MSI-0000:00:03.0   2-edge      virtio1-event
 27:       7000         12   PCI-MSI-0000:00:03.0   3-edge      virtio1-request
 28:          5       6990   PCI-MSI-0000:00:03.0   4-edge      virtio1-request
NMI:          0          0   Non-maskable interrupts
LOC:       1234       2345   Local timer interrupts
"""

FIO = {"jobs": [{"read": {"total_ios": 14000, "iops": 1400.5, "bw": 5602},
                 "write": {"total_ios": 0, "iops": 0.0, "bw": 0}, "error": 0}]}


class T(unittest.TestCase):
    def test_hist(self):
        h = C.parse_exit_hist(HIST, "svm")
        self.assertEqual(h, {"VINTR": 6580, "INTR": 9940, "NPF": 14001, "HLT": 14130})
        self.assertEqual(C.parse_hist_hits(HIST), 44651)
        self.assertEqual(C.parse_hist_hits(""), 0)

    def test_unknown_exit_code_kept(self):
        h = C.parse_exit_hist("{ exit_reason:  7777 } hitcount: 3\n", "svm")
        self.assertEqual(h, {"0x1e61": 3})

    def test_interrupts(self):
        i = C.parse_interrupts(IRQS)
        self.assertEqual(i["virtio1-request"], 14007)
        self.assertEqual(i["timer"], 23)
        self.assertNotIn("NMI", i)  # named rows are not device interrupts

    def test_fio_totals(self):
        self.assertEqual(C.fio_totals(FIO), (14000, 1400.5, 5602))

    def test_fio_detail(self):
        # A recorded fio 3.33 run (randwrite QD1 in the nested guest).
        with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures",
                               "fio-randwrite-qd1.json")) as f:
            d = C.fio_detail(json.load(f))
        self.assertEqual(d["p99.9_us"], 3063.8)
        self.assertEqual((d["usr_pct"], d["sys_pct"]), (17.1, 82.8))
        self.assertLess(d["p50_us"], d["p99_us"])
        # No latency percentiles at all (fio without I/O): only CPU.
        self.assertEqual(C.fio_detail({"jobs": [{"usr_cpu": 1.0, "sys_cpu": 2.0}]}),
                         {"usr_pct": 1.0, "sys_pct": 2.0})

    def test_fio_result(self):
        with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures",
                               "fio-randwrite-qd1.json")) as f:
            text = f.read()
        r = C.fio_result("fio: some warning first\n" + text)
        self.assertEqual(r["fio_job_errors"], 0)
        self.assertEqual(r["fio"]["p99.9_us"], 3063.8)
        self.assertEqual((r["ios"], r["bw_kib"]), C.fio_totals(json.loads(text))[0::2])
        self.assertIsNone(C.fio_result("fio: no JSON at all"))

    def test_per_io(self):
        kvm = {"stats": {"exits": 44651, "irq_injections": 14000, "halt_exits": 14130},
               "exits": C.parse_exit_hist(HIST, "svm"), "fast_mmio": 0}
        irqs = C.diff(C.parse_interrupts(IRQS), {"virtio1-request": 7})
        p = C.per_io(kvm, irqs, 14000, "svm")
        self.assertAlmostEqual(p["exits"], 44651 / 14000)
        self.assertAlmostEqual(p["kicks"], 14001 / 14000)
        self.assertAlmostEqual(p["guest_irqs"], 1.0)
        self.assertAlmostEqual(p["halt_exits"], 14130 / 14000)
        self.assertEqual(C.per_io(kvm, irqs, 0, "svm"), {})

    def test_vmx_kicks(self):
        kvm = {"stats": {}, "exits": {"EPT_MISCONFIG": 50, "HLT": 10}, "fast_mmio": 50}
        p = C.per_io(kvm, {}, 100, "vmx")
        self.assertAlmostEqual(p["kicks"], 0.5)  # fast_mmio is the same exit
        self.assertAlmostEqual(p["fast_mmio"], 0.5)


class Pollers(unittest.TestCase):
    HOST = "owner_pid 200\npid 210\nstate asleep\nbudget_ns 4000\nema_ns 90000\n" \
           "sleeps 7\nwakeups 7\ncaught 30\nvq2 work 100 kicks 8 inline_kicks 1 caught 20 worker 5\n" \
           "policy vq2 budget_ns 4000 ema_ns 1000\nvq3 work 50 kicks 2 inline_kicks 0 caught 10 worker 5\n" \
           "policy vq3 budget_ns 0 ema_ns 2000\n"

    def test_host_stats(self):
        st = C.parse_poller_stats(self.HOST)
        self.assertEqual(st["vq_work"], 150)
        self.assertEqual(st["vq_kicks"], 10)
        self.assertEqual(st["sleeps"], 7)
        self.assertEqual((st["caught"], st["vq_caught"]), (30, 30))
        self.assertNotIn("state", st)
        # the per-vq policy lines are values, not counters: never summed
        self.assertNotIn("vq_budget_ns", st)
        self.assertEqual(st["budget_ns"], 4000)

    def test_guest_stats_and_cpu(self):
        # Two devices: one with a poller per queue (its file says how many),
        # one as an older module wrote it (no 'pollers' line: one poller).
        out = ("pollers 2\nsleeps 2\npid 55\npid 57\nvq2 reaped 10 irqs 3 irqs_inline 1\n"
               "vq3 reaped 4 irqs 1 irqs_inline 0\n@@NEXT\n"
               "pid 56\nsleeps 1\nvq2 reaped 5 irqs 0 irqs_inline 0\n@@NEXT\n@@CPU\n"
               "55 (virtio-sqcq-virtio1/0) S 2 0 0 0 -1 2129984 0 0 0 0 7 9 0 0\n"
               "57 (virtio-sqcq-virtio1/1) S 2 0 0 0 -1 2129984 0 0 0 0 1 0 0 0\n")
        g = C.parse_guest_pollers(out)
        self.assertEqual((g["pollers"], g["vq_reaped"], g["sleeps"], g["cpu_ticks"]), (3, 19, 3, 17))
        self.assertEqual(C.parse_guest_pollers("@@CPU\n"), {"pollers": 0, "cpu_ticks": 0})


    def test_vhost_thread_cpu_and_wakeups(self):
        import tempfile
        with tempfile.TemporaryDirectory() as proc:
            for pid, tid, comm, ut, st, vcsw in ((100, 100, "qemu-system-x86", 50, 5, 9),
                                                 (100, 104, "vhost-100", 7, 9, 30),
                                                 (100, 105, "vhost-100", 1, 2, 12),
                                                 (200, 200, "bash", 3, 3, 4)):
                d = os.path.join(proc, str(pid), "task", str(tid))
                os.makedirs(d)
                with open(os.path.join(d, "stat"), "w") as f:
                    f.write(f"{tid} ({comm}) S 2 0 0 0 -1 0 0 0 0 0 {ut} {st} 0 0\n")
                with open(os.path.join(d, "status"), "w") as f:
                    f.write(f"Name:\t{comm}\nState:\tS (sleeping)\nvoluntary_ctxt_switches:\t{vcsw}\n")
            os.makedirs(os.path.join(proc, "self"))
            self.assertEqual(C.thread_totals("vhost-", proc)[0], 19)
            self.assertEqual(C.thread_totals("vhost-", proc)[1], 42)
            self.assertEqual(C.thread_totals("nothing", proc)[1], 0)

if __name__ == "__main__":
    sys.exit(0 if unittest.main(exit=False).result.wasSuccessful() else 1)
