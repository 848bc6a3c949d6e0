"""Turn a run's summary.json into tables (pure: testable on recorded data)."""
import re

CELL = re.compile(r"^\w+-qd\d+-nj\d+(#\d+)?$")

COLS = [("iops", "IOPS", "{:,.0f}"), ("p99_us", "p99 us", "{:,.0f}"),
        ("exits", "exits/IO", "{:.2f}"), ("kicks", "kicks/IO", "{:.2f}"),
        ("irq_injections", "inj/IO", "{:.2f}"), ("guest_irqs", "irqs/IO", "{:.2f}"),
        ("poller_cpu", "SQ CPU%", "{:.0f}"), ("guest_poller_cpu", "CQ CPU%", "{:.0f}")]

# Every per-cell figure of the per-test tables: (field, label, format).
METRICS = [("iops", "IOPS (best)", "{:,.0f}"), ("iops_median", "IOPS (median)", "{:,.0f}"),
           ("bw_mib", "bandwidth MiB/s", "{:,.1f}"),
           ("p50_us", "clat p50 us", "{:,.0f}"), ("p99_us", "clat p99 us", "{:,.0f}"),
           ("p99.9_us", "clat p99.9 us", "{:,.0f}"),
           ("usr_pct", "fio usr CPU %", "{:.0f}"), ("sys_pct", "fio sys CPU %", "{:.0f}"),
           ("exits", "VM exits/IO", "{:.2f}"), ("kicks", "kicks (notify exits)/IO", "{:.3f}"),
           ("irq_injections", "interrupt injections/IO", "{:.3f}"),
           ("halt_exits", "HLT exits/IO", "{:.3f}"), ("guest_irqs", "guest interrupts/IO", "{:.3f}"),
           ("poller_cpu", "host SQ poller CPU %", "{:.0f}"),
           ("sq_wakeups", "SQ poller wakeups/IO", "{:.3f}"), ("sq_sleeps", "SQ poller sleeps/IO", "{:.3f}"),
           ("guest_poller_cpu", "guest CQ poller CPU %", "{:.0f}"),
           ("cq_wakeups", "CQ poller wakeups/IO", "{:.3f}"), ("cq_sleeps", "CQ poller sleeps/IO", "{:.3f}")]

HOST = "host"  # the guest name of the host-ceiling cells (fio in the host, no VM)


def cells(summary):
    """{(test, mode): best repeat's step} for measured fio steps.

    Measured steps are named '<test>#<repeat>' (or just '<test>'); best
    means highest IOPS.  Failed steps are kept (marked) only if no repeat
    of that cell succeeded.  The best step gets 'iops_median' and
    'repeats' (successful repeats) added.
    """
    out, runs = {}, {}
    for st in summary.get("steps", []):
        if not CELL.match(st["step"]):
            continue
        test = st["step"].split("#")[0]
        key = (test, st["guest"])
        if st["ok"] and st.get("iops") is not None:
            runs.setdefault(key, []).append(st["iops"])
        cur = out.get(key)
        if cur is None or (st["ok"] and (not cur["ok"] or st.get("iops", 0) > cur.get("iops", 0))):
            out[key] = st
    for key, st in out.items():
        xs = sorted(runs.get(key, []))
        if xs:
            mid = len(xs) // 2
            med = xs[mid] if len(xs) % 2 else (xs[mid - 1] + xs[mid]) / 2
            out[key] = dict(st, iops_median=med, repeats=len(xs))
    return out


def value(st, field):
    if field in ("iops", "iops_median"):
        return st.get(field)
    if field == "bw_mib":
        return st["bw_kib"] / 1024.0 if "bw_kib" in st else None
    if field in ("p50_us", "p99_us", "p99.9_us", "usr_pct", "sys_pct"):
        return st.get("fio", {}).get(field)
    if field in ("poller_cpu", "guest_poller_cpu"):
        p = st.get(field[:-4], {})
        return p.get("cpu_pct") if p.get("pollers") else None
    if field in ("sq_wakeups", "sq_sleeps", "cq_wakeups", "cq_sleeps"):
        p = st.get("poller" if field[0] == "s" else "guest_poller", {})
        ios = st.get("ios")
        if not p.get("pollers") or not ios:
            return None
        return p.get(field[3:], 0) / ios
    return st.get("per_io", {}).get(field)


def table(summary, modes, tests, ref="baseline"):
    """Rows of (test, mode, {field: formatted}) with IOPS ratios to ref and to the host."""
    c = cells(summary)
    rows = []
    for t in tests:
        base = c.get((t, ref))
        host = c.get((t, HOST))
        for m in modes:
            st = c.get((t, m))
            if st is None:
                rows.append((t, m, None))
                continue
            if not st["ok"]:
                rows.append((t, m, {"failed": st.get("error", "failed")}))
                continue
            vals = {}
            for f, _, fmt in COLS:
                v = value(st, f)
                vals[f] = "-" if v is None else fmt.format(v)
            for k, r in (("ratio", base), ("vs_host", host)):
                if r and r["ok"] and r.get("iops") and st.get("iops") is not None:
                    vals[k] = f"{st['iops'] / r['iops']:.2f}x"
                else:
                    vals[k] = "-"
            rows.append((t, m, vals))
    return rows


def test_tables_markdown(summary, modes, tests, ref="baseline"):
    """One table per test: figures as rows, modes as columns, each figure
    with its ratio to ref beside it; a host column holds the ceiling (fio on
    the same backstore in the host)."""
    c = cells(summary)
    out = []
    for t in tests:
        host = c.get((t, HOST))
        base = c.get((t, ref))
        cols = ([HOST] if host else []) + list(modes)
        out.append(f"### {t}\n")
        out.append("| figure | " + " | ".join("host ceiling" if m == HOST else m for m in cols) + " |")
        out.append("|---|" + "---:|" * len(cols))
        status = []
        for m in cols:
            st = c.get((t, m))
            status.append("not run" if st is None else "ok" if st["ok"]
                          else "FAILED: " + st.get("error", "failed")[:60])
        if any(x != "ok" for x in status):
            out.append("| status | " + " | ".join(status) + " |")
        multi = any(c.get((t, m), {}).get("repeats", 0) > 1 for m in cols)
        for f, label, fmt in METRICS:
            if f == "iops_median" and not multi:
                continue
            cells_txt, any_val = [], False
            b = value(base, f) if base and base["ok"] else None
            for m in cols:
                st = c.get((t, m))
                v = value(st, f) if st and st["ok"] else None
                if v is None:
                    cells_txt.append("-")
                    continue
                any_val = True
                txt = fmt.format(v)
                if m not in (HOST, ref) and b:
                    txt += f" ({v / b:.2f}x)"
                cells_txt.append(txt)
            if any_val:
                out.append(f"| {label} | " + " | ".join(cells_txt) + " |")
        if host and host["ok"] and host.get("iops"):
            out.append("| IOPS / host ceiling | " + " | ".join(
                "1.00x" if m == HOST else
                (f"{c[(t, m)]['iops'] / host['iops']:.2f}x" if c.get((t, m)) and c[(t, m)]["ok"] else "-")
                for m in cols) + " |")
        out.append("")
    return "\n".join(out)


def render_text(rows):
    hdr = ["test", "mode", "IOPS", "vs base", "vs host"] + [h for f, h, _ in COLS[1:]]
    lines = []
    for t, m, v in rows:
        if v is None:
            lines.append([t, m, "not run"] + [""] * (len(hdr) - 3))
        elif "failed" in v:
            lines.append([t, m, "FAILED"] + [""] * (len(hdr) - 3))
        else:
            lines.append([t, m, v["iops"], v["ratio"], v["vs_host"]] + [v[f] for f, _, _ in COLS[1:]])
    w = [max(len(str(r[i])) for r in [hdr] + lines) for i in range(len(hdr))]
    fmt = lambda r: "  ".join(str(x).rjust(w[i]) if i >= 2 else str(x).ljust(w[i]) for i, x in enumerate(r))  # noqa: E731
    return "\n".join([fmt(hdr), fmt(["-" * x for x in w])] + [fmt(r) for r in lines])


def render_markdown(rows):
    hdr = ["test", "mode", "IOPS", "vs baseline", "vs host"] + [h for f, h, _ in COLS[1:]]
    out = ["| " + " | ".join(hdr) + " |", "|" + "---|" * len(hdr)]
    for t, m, v in rows:
        if v is None:
            out.append(f"| {t} | {m} | not run |" + " |" * (len(hdr) - 3))
        elif "failed" in v:
            out.append(f"| {t} | {m} | FAILED: {v['failed'][:80]} |" + " |" * (len(hdr) - 3))
        else:
            out.append("| " + " | ".join([t, m, v["iops"], v["ratio"], v["vs_host"]]
                                         + [v[f] for f, _, _ in COLS[1:]]) + " |")
    return "\n".join(out)


def idle_lines(summary):
    """'mode: poller CPU x% (n pollers)' for each mode's idle step."""
    out = []
    for st in summary.get("steps", []):
        if st["step"] == "idle-after-io" and "poller" in st:
            p = st["poller"]
            gp = st.get("guest_poller", {})
            out.append(f"{st['guest']}: host SQ pollers {p['cpu_pct']:.1f}% CPU "
                       f"({p['pollers']} running, {p.get('wakeups', 0)} wakeups), guest CQ pollers "
                       f"{gp.get('cpu_pct', 0):.1f}% ({gp.get('pollers', 0)} running, "
                       f"{gp.get('wakeups', 0)} wakeups), over {p['seconds']:.0f} s "
                       f"starting 2 s after I/O stopped")
    return out


def anchor_markdown(summary, modes, tests, anchors, ref="baseline"):
    """Our IOPS ratios (mode / baseline) beside the proposal's, per test."""
    c = cells(summary)
    hdr = "| test | mode | ours | " + " | ".join(f"{a} (source)" for a in anchors) + " |"
    out = [hdr, "|" + "---|" * (3 + len(anchors))]
    for t in tests:
        base = c.get((t, ref))
        for m in modes:
            if m == ref:
                continue
            st = c.get((t, m))
            ours = "-"
            if st and st["ok"] and base and base["ok"] and base.get("iops"):
                ours = f"{st['iops'] / base['iops']:.2f}x"
            theirs = []
            for a in anchors.values():
                row = a.get(t, {})
                theirs.append(f"{row[m] / row[ref]:.2f}x" if m in row and ref in row else "-")
            out.append(f"| {t} | {m} | {ours} | " + " | ".join(theirs) + " |")
    return "\n".join(out)


def plots(summary, modes, tests, outdir):
    """PNG plots: IOPS by mode and test; exits/IO and interrupts/IO by mode."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    c = cells(summary)
    files = []
    figs = [("iops.png", "IOPS", lambda st: st.get("iops")),
            ("exits_per_io.png", "VM exits per I/O", lambda st: value(st, "exits")),
            ("kicks_per_io.png", "notification exits (kicks) per I/O", lambda st: value(st, "kicks")),
            ("irqs_per_io.png", "guest request interrupts per I/O", lambda st: value(st, "guest_irqs"))]
    width = 0.8 / max(1, len(modes))
    for name, title, get in figs:
        fig, ax = plt.subplots(figsize=(max(6, 1.6 * len(tests)), 4))
        for i, m in enumerate(modes):
            ys = []
            for t in tests:
                st = c.get((t, m))
                v = get(st) if st and st["ok"] else None
                ys.append(v or 0)
            ax.bar([x + i * width for x in range(len(tests))], ys, width, label=m)
        ax.set_xticks([x + width * (len(modes) - 1) / 2 for x in range(len(tests))])
        ax.set_xticklabels(tests, rotation=15, fontsize=8)
        ax.set_title(title)
        ax.legend(fontsize=7)
        fig.tight_layout()
        path = f"{outdir}/{name}"
        fig.savefig(path, dpi=90)
        plt.close(fig)
        files.append(path)
    return files
