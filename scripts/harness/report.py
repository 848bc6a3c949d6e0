"""Turn a run's summary.json into tables and plots (pure: testable on
recorded data).  Every figure is a median over the run's interleaved
rounds with its min and max; ratios to baseline are paired per round
(scripts/harness/rounds.py)."""
from . import rounds as RD
from .rounds import AGAIN, CEILING_STEP, GUEST_CEILING_STEP, HOST, NOISE, REF  # noqa: F401 (used by callers)

# The main table's per-I/O and CPU columns (medians over rounds).
COLS = [("p99_us", "p99 us", "{:,.0f}"),
        ("exits", "exits/IO", "{:.2f}"), ("kicks", "kicks/IO", "{:.2f}"),
        ("irq_injections", "inj/IO", "{:.2f}"), ("guest_irqs", "irqs/IO", "{:.2f}"),
        ("poller_cpu", "SQ CPU%", "{:.0f}"), ("guest_poller_cpu", "CQ CPU%", "{:.0f}")]

# Every per-cell figure of the per-test tables: (field, label, format).
METRICS = [("iops", "IOPS", "{:,.0f}"), ("bw_mib", "bandwidth MiB/s", "{:,.1f}"),
           ("p50_us", "clat p50 us", "{:,.0f}"), ("p99_us", "clat p99 us", "{:,.0f}"),
           ("p99.9_us", "clat p99.9 us", "{:,.0f}"),
           ("usr_pct", "fio usr CPU %", "{:.0f}"), ("sys_pct", "fio sys CPU %", "{:.0f}"),
           ("exits", "VM exits/IO", "{:.2f}"), ("kicks", "kicks (notify exits)/IO", "{:.3f}"),
           ("irq_injections", "interrupt injections/IO", "{:.3f}"),
           ("halt_exits", "HLT exits/IO", "{:.3f}"), ("guest_irqs", "guest interrupts/IO", "{:.3f}"),
           ("host_wakeups", "host vhost thread wakeups/IO", "{:.3f}"),
           ("poller_cpu", "host SQ poll CPU % (vhost workers)", "{:.0f}"),
           ("sq_wakeups", "SQ poller wakeups/IO", "{:.3f}"), ("sq_sleeps", "SQ poller sleeps/IO", "{:.3f}"),
           ("guest_poller_cpu", "guest CQ poller CPU %", "{:.0f}"),
           ("cq_wakeups", "CQ poller wakeups/IO", "{:.3f}"), ("cq_sleeps", "CQ poller sleeps/IO", "{:.3f}"),
           ("sq_budget_us", "SQ spin budget at the end, us", "{:,.0f}"),
           ("sq_window_us", "SQ spin window at the end (the budget as applied; 0: no spin), us", "{:,.0f}"),
           ("sq_cost_us", "SQ measured sleep cost (kick to service), us", "{:,.0f}"),
           ("sq_caught", "SQ spin windows that caught work", "{:.2f}"),
           ("sq_spin_pct", "SQ spin CPU % (time spinning on an empty ring)", "{:.1f}"),
           ("sq_probes", "SQ probes from the floor (in the cell)", "{:,.0f}"),
           ("sq_probes_paid", "SQ probes that paid (then a 1 ms ceiling)", "{:,.0f}"),
           ("sq_probe_contended", "SQ probe windows that contention ended", "{:,.0f}"),
           ("sq_probed_share", "SQ share of the gaps under the hard cap as ceiling (a probe, a paid one; 0 at a fixed ceiling)", "{:.2f}"),
           ("sq_naps", "SQ naps for a task waiting beside the spin", "{:,.0f}"),
           ("sq_probe_mean_us", "SQ last probe's mean gap, us", "{:,.0f}"),
           ("sq_probe_base_us", "SQ gaps it was compared with, us", "{:,.0f}"),
           ("cq_budget_us", "CQ spin budget at the end, us", "{:,.0f}"),
           ("cq_window_us", "CQ spin window at the end (the budget as applied; 0: no spin), us", "{:,.0f}"),
           ("cq_cost_us", "CQ measured sleep cost (interrupt to poller), us", "{:,.0f}"),
           ("cq_caught", "CQ spin windows that caught work", "{:.2f}"),
           ("cq_spin_pct", "CQ spin CPU % (time spinning on an empty ring)", "{:.1f}"),
           ("cq_probes", "CQ probes from the floor (in the cell)", "{:,.0f}"),
           ("cq_probes_paid", "CQ probes that paid (then a 1 ms ceiling)", "{:,.0f}"),
           ("cq_probed_share", "CQ share of the gaps under the hard cap as ceiling (a probe, a paid one; 0 at a fixed ceiling)", "{:.2f}"),
           ("cq_probe_mean_us", "CQ last probe's mean gap, us", "{:,.0f}"),
           ("cq_probe_base_us", "CQ gaps it was compared with, us", "{:,.0f}")]


def value(st, field):
    if field == "iops":
        return st.get("iops")
    if field == "bw_mib":
        return st["bw_kib"] / 1024.0 if "bw_kib" in st else None
    if field in ("p50_us", "p99_us", "p99.9_us", "usr_pct", "sys_pct"):
        return st.get("fio", {}).get(field)
    if field in ("poller_cpu", "guest_poller_cpu"):
        p = st.get(field[:-4], {})
        return p.get("cpu_pct") if p.get("pollers") else None
    if field in ("sq_budget_us", "cq_budget_us", "sq_window_us", "cq_window_us", "sq_cost_us", "cq_cost_us",
                 "sq_probe_mean_us", "cq_probe_mean_us", "sq_probe_base_us", "cq_probe_base_us",
                 "sq_caught", "cq_caught"):
        # The budget a cell ended with (the largest of its vqs), and the
        # share of spin windows that found work before the poller slept.
        p = st.get("poller" if field[0] == "s" else "guest_poller", {})
        if not p.get("pollers"):
            return None
        if field.endswith("_us"):
            k = field[3:-3] + "_ns"
            # (a probe's figures: none until one ended; older modules: none)
            if "probe_" in k and not p.get(k):
                return None
            return p[k] / 1000.0 if k in p else None
        windows = p.get("caught", 0) + p.get("sleeps", 0)
        return p.get("caught", 0) / windows if "caught" in p and windows else None
    if field in ("sq_spin_pct", "cq_spin_pct"):
        # The pollers' spin_ns over the cell (older modules: none).
        p = st.get("poller" if field[0] == "s" else "guest_poller", {})
        if not p.get("pollers") or "spin_ns" not in p or not p.get("seconds"):
            return None
        return 100.0 * p["spin_ns"] / 1e9 / p["seconds"]
    if field in ("sq_probes", "cq_probes", "sq_probes_paid", "cq_probes_paid", "sq_probe_contended",
                 "sq_naps"):
        # Probes the policy started from its floor, those that paid, the
        # host's probe windows that contention ended, and its naps for a
        # task waiting beside the spin (older modules: none).
        p = st.get("poller" if field[0] == "s" else "guest_poller", {})
        return p.get(field[3:]) if p.get("pollers") else None
    if field in ("sq_probed_share", "cq_probed_share"):
        # The share of the cell's gaps learnt in a probe or under a paid
        # probe's ceiling (older modules: none; a poller that handed back
        # during the cell reset its counters: none either).
        p = st.get("poller" if field[0] == "s" else "guest_poller", {})
        if not p.get("pollers") or p.get("gaps", 0) <= 0 or p.get("gaps_probed", 0) < 0:
            return None
        return p.get("gaps_probed", 0) / p["gaps"]
    if field in ("sq_wakeups", "sq_sleeps", "cq_wakeups", "cq_sleeps"):
        p = st.get("poller" if field[0] == "s" else "guest_poller", {})
        ios = st.get("ios")
        if not p.get("pollers") or not ios:
            return None
        return p.get(field[3:], 0) / ios
    return st.get("per_io", {}).get(field)


def cell_stats(summary):
    """{(test, mode): rounds.stats(...)} for every cell of the run."""
    samp = RD.samples(summary)
    return {k: RD.stats(samp, k[0], k[1], value) for k in samp}


def _rng(s, fmt):
    return f"{fmt.format(s[1])}-{fmt.format(s[2])}" if s else "-"


def table(summary, modes, tests, ref=REF):
    """Rows of (test, mode, {column: text}), None for a cell not run, or
    {"failed": error} for one that failed in every round."""
    samp = RD.samples(summary)
    rows = []
    for t in tests:
        for m in modes:
            s = RD.stats(samp, t, m, value, ref)
            if s is None:
                rows.append((t, m, None))
                continue
            if s["status"] != "ok":
                rows.append((t, m, {"failed": s["error"] or "failed"}))
                continue
            v = {"iops": f"{s['iops'][0]:,.0f}", "iops_range": _rng(s["iops"], "{:,.0f}"),
                 "rounds": f"{s['rounds']}/{s['of']}" if s["rounds"] < s["of"] else str(s["rounds"]),
                 "ratio": f"{s['ratio'][0]:.2f}x" if s["ratio"] else "-",
                 "ratio_range": _rng(s["ratio"], "{:.2f}") if s["ratio"] and m != ref else "-",
                 "vs_host": f"{s['vs_host']:.2f}x" if s["vs_host"] else "-"}
            for f, _, fmt in COLS:
                x = s["fig"][f]
                v[f] = "-" if x is None else fmt.format(x[0])
            rows.append((t, m, v))
    return rows


HDR = [("iops", "IOPS"), ("iops_range", "min-max"), ("rounds", "n"), ("ratio", "vs base"),
       ("ratio_range", "min-max"), ("vs_host", "vs host")] + [(f, h) for f, h, _ in COLS]


def render_text(rows):
    hdr = ["test", "mode"] + [h for _, h in HDR]
    lines = []
    for t, m, v in rows:
        if v is None:
            lines.append([t, m, "not run"] + [""] * (len(hdr) - 3))
        elif "failed" in v:
            lines.append([t, m, "FAILED"] + [""] * (len(hdr) - 3))
        else:
            lines.append([t, m] + [v[k] for k, _ in HDR])
    w = [max(len(str(r[i])) for r in [hdr] + lines) for i in range(len(hdr))]
    fmt = lambda r: "  ".join(str(x).rjust(w[i]) if i >= 2 else str(x).ljust(w[i]) for i, x in enumerate(r))  # noqa: E731
    return "\n".join([fmt(hdr), fmt(["-" * x for x in w])] + [fmt(r) for r in lines])


def render_markdown(rows):
    hdr = ["test", "mode"] + [h for _, h in HDR]
    out = ["| " + " | ".join(hdr) + " |", "|" + "---|" * len(hdr)]
    for t, m, v in rows:
        if v is None:
            out.append(f"| {t} | {m} | not run |" + " |" * (len(hdr) - 3))
        elif "failed" in v:
            out.append(f"| {t} | {m} | FAILED: {v['failed'][:80]} |" + " |" * (len(hdr) - 3))
        else:
            out.append("| " + " | ".join([t, m] + [v[k] for k, _ in HDR]) + " |")
    return "\n".join(out)


def verdict_lines(summary, modes, tests, ref=REF):
    """The verdict rule, one 'never below baseline' line per mode, then
    the noise line."""
    samp = RD.samples(summary)
    return ([RD.VERDICT_RULE + ":"] + [f"  {RD.verdict_line(samp, m, tests, ref)}" for m in modes
                                       if m != ref and not m.endswith(RD.AGAIN)]
            + [RD.noise_line(samp, tests, ref)])


def untuned_lines(summary, tests, ref=REF):
    """With matrix.py --fixed-ceiling: the rule, then one line per polling
    mode against the better of baseline and its fixed-ceiling variant."""
    variants = summary.get("variants") or {}
    if not variants or summary.get("host_ab_us") is not None:
        return []
    samp = RD.samples(summary)
    rule = RD.UNTUNED_RULE + (RD.UNTUNED_AB if summary.get("ab_us") is not None else "")
    return [rule + ":"] + [f"  {RD.untuned_line(samp, m, v, tests, ref)}" for m, v in variants.items()]


def ab_lines(summary, tests):
    """With matrix.py --host-ab: the rule, then one line per host-polling
    mode: its IOPS over its variant's in the same guest, paired per round."""
    variants = summary.get("variants") or {}
    both = summary.get("ab_us") is not None
    if (summary.get("host_ab_us") is None and not both) or not variants:
        return []
    samp = RD.samples(summary)
    again = [f"  {RD.ab_line(samp, REF, REF + RD.AGAIN, tests)}"] if any(
        (t, REF + RD.AGAIN) in samp for t in tests) else []
    rule = RD.AB_RULE_BOTH if both else RD.AB_RULE
    return [rule + ":"] + [f"  {RD.ab_line(samp, m, v, tests)}" for m, v in variants.items()] + again


def test_tables_markdown(summary, modes, tests, ref=REF):
    """One table per test: figures as rows, modes as columns; each figure
    is the median over rounds with [min-max]; IOPS also has its paired
    ratio to REF, every other figure the ratio of medians.  A host column
    holds the ceiling (fio on the same backstore in the host)."""
    samp = RD.samples(summary)
    out = []
    for t in tests:
        cols = ([HOST] if (t, HOST) in samp else []) + list(modes)
        st = {m: RD.stats(samp, t, m, value, ref) for m in cols}
        base = st.get(ref) if st.get(ref) and st[ref]["status"] == "ok" else None
        out.append(f"### {t}\n")
        out.append("| figure | " + " | ".join("host ceiling" if m == HOST else m for m in cols) + " |")
        out.append("|---|" + "---:|" * len(cols))
        status = []
        for m in cols:
            s = st[m]
            status.append("not run" if s is None else
                          "FAILED: " + (s["error"] or "failed")[:60] if s["status"] != "ok" else
                          f"{s['rounds']} of {s['of']} rounds ok; first failure: {(s['error'] or '')[:50]}"
                          if s["rounds"] < s["of"] else "ok")
        if any(x != "ok" for x in status):
            out.append("| status | " + " | ".join(status) + " |")
        out.append("| rounds | " + " | ".join(str(st[m]["rounds"]) if st[m] else "-" for m in cols) + " |")
        for f, label, fmt in METRICS:
            txt, any_val = [], False
            b = base["fig"][f] if base else None
            for m in cols:
                s = st[m]
                v = s["fig"][f] if s and s["status"] == "ok" else None
                if v is None:
                    txt.append("-")
                    continue
                any_val = True
                x = fmt.format(v[0]) + (f" [{fmt.format(v[1])}-{fmt.format(v[2])}]" if v[1] != v[2] else "")
                if m not in (HOST, ref):
                    if f == "iops":
                        if s["ratio"]:
                            x += f" ({s['ratio'][0]:.2f}x paired, {s['ratio'][1]:.2f}-{s['ratio'][2]:.2f})"
                    elif b and b[0]:
                        x += f" ({v[0] / b[0]:.2f}x)"
                txt.append(x)
            if any_val:
                out.append(f"| {label} | " + " | ".join(txt) + " |")
        if (t, HOST) in samp:
            out.append("| IOPS / host ceiling | " + " | ".join(
                "1.00x" if m == HOST else f"{st[m]['vs_host']:.2f}x" if st[m] and st[m].get("vs_host") else "-"
                for m in cols) + " |")
        out.append("")
    return "\n".join(out)


# The compact per-cell table of what the pollers settled on.
BUDGETS = [("sq_budget_us", "SQ budget us"), ("sq_window_us", "SQ window us"), ("sq_cost_us", "SQ cost us"),
           ("sq_caught", "SQ caught"), ("sq_spin_pct", "SQ spin CPU %"), ("sq_probes", "SQ probes"), ("sq_probes_paid", "SQ paid"),
           ("sq_probe_contended", "SQ probe windows contended"), ("sq_probed_share", "SQ probed"),
           ("sq_naps", "SQ naps"),
           ("cq_budget_us", "CQ budget us"),
           ("cq_window_us", "CQ window us"), ("cq_cost_us", "CQ cost us"), ("cq_caught", "CQ caught"),
           ("cq_spin_pct", "CQ spin CPU %"), ("cq_probes", "CQ probes"), ("cq_probes_paid", "CQ paid"),
           ("cq_probed_share", "CQ probed")]


def budget_markdown(summary, modes, tests):
    """One row per test x polling mode: the spin budget each side ended
    with, the window it would open, the measured sleep cost and the share
    of windows that caught work, median [min-max] over rounds; empty when
    no cell ran a poller."""
    samp = RD.samples(summary)
    out = []
    for t in tests:
        for m in modes:
            s = RD.stats(samp, t, m, value) if (t, m) in samp else None
            if not s or s["status"] != "ok":
                continue
            figs = [s["fig"][f] for f, _ in BUDGETS]
            if all(v is None for v in figs):
                continue
            txt = []
            for (f, _), v in zip(BUDGETS, figs):
                fmt = ("{:.2f}" if f.endswith(("caught", "share")) else "{:.1f}" if f.endswith("pct")
                       else "{:,.0f}")
                txt.append("-" if v is None else fmt.format(v[0])
                           + (f" [{fmt.format(v[1])}-{fmt.format(v[2])}]" if v[1] != v[2] else ""))
            out.append(f"| {t} | {m} | " + " | ".join(txt) + " |")
    if not out:
        return ""
    return "\n".join(["| test | mode | " + " | ".join(lab for _, lab in BUDGETS) + " |",
                      "|---|---|" + "---:|" * len(BUDGETS)] + out)


def idle_lines(summary):
    """'guest: poller CPU x% (n pollers)' for each guest's idle step."""
    out = []
    for st in summary.get("steps", []):
        if st["step"] == "idle-after-io" and "poller" in st:
            p = st["poller"]
            gp = st.get("guest_poller", {})
            if not p.get("pollers") and not gp.get("pollers"):
                continue  # a mode without pollers costs nothing idle
            out.append(f"{st['guest']}: host SQ pollers {p['cpu_pct']:.1f}% CPU "
                       f"({p['pollers']} running, {p.get('wakeups', 0)} wakeups), guest CQ pollers "
                       f"{gp.get('cpu_pct', 0):.1f}% ({gp.get('pollers', 0)} running, "
                       f"{gp.get('wakeups', 0)} wakeups), over {p['seconds']:.0f} s "
                       f"starting 2 s after I/O stopped")
    return out


def anchor_markdown(summary, modes, tests, anchors, ref=REF):
    """Our median paired IOPS ratios (mode / baseline) beside the proposal's."""
    samp = RD.samples(summary)
    hdr = "| test | mode | ours (median paired) | " + " | ".join(f"{a} (source)" for a in anchors) + " |"
    out = [hdr, "|" + "---|" * (3 + len(anchors))]
    for t in tests:
        for m in modes:
            if m == ref:
                continue
            r = RD.ratio(samp, t, m, ref)
            ours = f"{r[0]:.2f}x" if r else "-"
            theirs = []
            for a in anchors.values():
                row = a.get(t, {})
                theirs.append(f"{row[m] / row[ref]:.2f}x" if m in row and ref in row else "-")
            out.append(f"| {t} | {m} | {ours} | " + " | ".join(theirs) + " |")
    return "\n".join(out)


def result_cells(summary, modes, tests, backstore, ref=REF):
    """summary.json's flat 'cells' list: one object per test x mode (the
    stable, machine-readable result; fields documented in the README)."""
    samp = RD.samples(summary)
    out = []
    for t in tests:
        for m in list(modes) + ([NOISE] if any((x, NOISE) in samp for x in tests) else []):
            s = RD.stats(samp, t, m, value, ref)
            c = {"test": t, "mode": m, "backstore": backstore,
                 "status": "not run" if s is None else s["status"],
                 "rounds": s["rounds"] if s else 0, "rounds_run": s["of"] if s else 0}
            if s and s["error"]:
                c["error"] = s["error"]
            if s and s["status"] == "ok":
                c.update(iops_median=s["iops"][0], iops_min=s["iops"][1], iops_max=s["iops"][2])
                if s["ratio"]:
                    c.update(ratio_median=round(s["ratio"][0], 4), ratio_min=round(s["ratio"][1], 4),
                             ratio_max=round(s["ratio"][2], 4))
                else:
                    c.update(ratio_median=None, ratio_min=None, ratio_max=None)
                for k, f in (("kicks_per_io", "kicks"), ("irqs_per_io", "guest_irqs"),
                             ("exits_per_io", "exits"), ("injections_per_io", "irq_injections"),
                             ("p99_us", "p99_us"), ("sq_cpu_pct", "poller_cpu"),
                             ("cq_cpu_pct", "guest_poller_cpu"), ("sq_budget_us", "sq_budget_us"),
                             ("cq_budget_us", "cq_budget_us"), ("sq_window_us", "sq_window_us"),
                             ("cq_window_us", "cq_window_us"), ("sq_cost_us", "sq_cost_us"), ("cq_cost_us", "cq_cost_us"),
                             ("sq_caught", "sq_caught"), ("cq_caught", "cq_caught"),
                             ("sq_spin_pct", "sq_spin_pct"), ("cq_spin_pct", "cq_spin_pct")):
                    v = s["fig"][f]
                    c[k] = round(v[0], 4) if v else None
                c["vs_host"] = round(s["vs_host"], 4) if s["vs_host"] else None
            out.append(c)
    return out


def plots(summary, modes, tests, outdir, title=""):
    """PNG plots: the median paired ratio to baseline per mode and test
    with min-max bars and a line at 1.0x; VM exits/IO and guest
    interrupts/IO (medians, min-max bars).  TITLE (backstore, rounds,
    host role) goes under each plot's own title."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    samp = RD.samples(summary)
    files = []
    figs = [("ratio_to_baseline.png", "IOPS / baseline of the same round (median, min-max)",
             "IOPS ratio to baseline", None, [m for m in modes if m != REF]),
            ("exits_per_io.png", "VM exits per I/O (median, min-max)", "exits per I/O", "exits", modes),
            ("irqs_per_io.png", "guest request interrupts per I/O (median, min-max)",
             "interrupts per I/O", "guest_irqs", modes)]
    for name, head, ylabel, field, ms in figs:
        fig, ax = plt.subplots(figsize=(max(7, 1.7 * len(tests) + 1.5), 4.2))
        width = 0.8 / max(1, len(ms))
        for i, m in enumerate(ms):
            med, lo, hi = [], [], []
            for t in tests:
                if field is None:
                    r = RD.ratio(samp, t, m)
                else:
                    s = RD.stats(samp, t, m, value)
                    r = s["fig"][field] if s and s["status"] == "ok" else None
                med.append(r[0] if r else 0)
                lo.append(r[0] - r[1] if r else 0)
                hi.append(r[2] - r[0] if r else 0)
            # (one colour per mode in every plot, baseline's included)
            ax.bar([x + i * width for x in range(len(tests))], med, width, label=m,
                   color=f"C{list(modes).index(m) % 10}",
                   yerr=[lo, hi], capsize=2, error_kw={"elinewidth": 0.8})
        if field is None:
            ax.axhline(1.0, color="black", linewidth=0.8, linestyle="--")
        ax.set_xticks([x + width * (len(ms) - 1) / 2 for x in range(len(tests))])
        ax.set_xticklabels(tests, rotation=15, fontsize=8)
        ax.set_xlabel("fio test")
        ax.set_ylabel(ylabel)
        ax.set_title(f"{head}\n{title}" if title else head, fontsize=9)
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
        fig.tight_layout()
        path = f"{outdir}/{name}"
        fig.savefig(path, dpi=90)
        plt.close(fig)
        files.append(path)
    return files
