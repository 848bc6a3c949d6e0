"""Interleaved rounds of the matrix: medians, spreads and paired ratios.

A matrix run has R rounds; each round runs every mode once, in turn, so
that slow drift of a shared machine hits every mode alike.  A mode's ratio
to baseline is taken per round (the mode and the baseline of the same
round) and reported as the median of those paired ratios with their min
and max.  Pure functions of a run's summary.json, testable on recorded
data.
"""
import re
from statistics import median

# Measured cells: '<rw>-qd<QD>-nj<NJ>', '-burst' for a bursty one (an older
# run's repeats: '#<k>').
# matrix.py --host-ab runs a second arm of a cell in the same guest: one
# ending in '@host<US>us' is the cell of the variant MODE@host<US>us (with
# --ab, '@<US>us': MODE@<US>us, the ceiling at US on both sides); one
# ending in '@again' (baseline's guest) is baseline's cell run again,
# BASELINE@again, the in-guest noise.
CELL = re.compile(r"^\w+-qd\d+-nj\d+(-burst)?(@host\d+us|@\d+us|@again)?(#\d+)?$")
AGAIN = "@again"
# ... and sets the host's ceiling before each arm in a step named so (and
# with --ab the guest's, in a step named so).
CEILING_STEP = "host-ceiling-"
GUEST_CEILING_STEP = "guest-ceiling-"
REF = "baseline"
# The second baseline run of each round (matrix.py --noise): baseline
# against baseline shows how big a difference must be to mean anything.
NOISE = "baseline-again"
HOST = "host"  # the host ceiling's cells (fio in the host, no VM)

# "Never below baseline" holds for a mode when, in every test, its median
# paired ratio is at least VERDICT_MEDIAN and its best round at least
# VERDICT_BEST.
VERDICT_MEDIAN = 0.97
VERDICT_BEST = 1.0


# A matrix guest's name: r<round>-<mode> (matrix.py).
GUEST = re.compile(r"^r(\d+)-(.+)$")
# Steps after which a guest ran none of its cells: they fail its cells.
GUEST_FAILURES = ("boot", "boot2", "qemu-exit")


def samples(summary):
    """{(test, mode): {round: step}} for the measured fio steps.

    matrix.py records each guest's mode and round in summary["guests"];
    without that map (the host role's own run/summary.json) a guest named
    'r<N>-<mode>' is round N of that mode, and any other name (an older
    run: one guest per mode, repeats named 'test#k') is the mode, repeat k
    counted as round k.  A guest that failed to boot (or whose QEMU did
    not go away) fails each of the run's tests it did not run, with that
    error, so that the cell reads FAILED, not "not run".
    """
    guests = summary.get("guests", {})

    def where(name, rep=""):
        g = guests.get(name)
        if g:
            return g["mode"], g["round"]
        m = GUEST.match(name)
        return (m.group(2), int(m.group(1))) if m else (name, int(rep or 1))
    out, broken, tests = {}, {}, list(summary.get("tests", []))
    # {mode: {"@host0us", ...}}; {(guest, side): its failed ceiling step}
    arms, unset = {}, {}
    for st in summary.get("steps", []):
        for side, prefix in (("host", CEILING_STEP), ("guest", GUEST_CEILING_STEP)):
            if st["step"].startswith(prefix):
                # An arm after a ceiling that was not set ran at another one.
                unset[st["guest"], side] = None if st.get("ok") else f"{st['step']}: {st.get('error', 'failed')}"
        if not CELL.match(st["step"]):
            if st["step"] in GUEST_FAILURES and not st.get("ok") and st.get("guest") not in ("-", HOST):
                broken.setdefault(st["guest"], f"{st['step']}: {st.get('error', 'failed')}")
            continue
        test, _, rep = st["step"].partition("#")
        test, at, arm = test.partition("@")
        if test not in tests:
            tests.append(test)
        mode, rnd = where(st["guest"], rep)
        if at:
            arms.setdefault(mode, set()).add(at + arm)
        why = [f"the {side}'s ceiling was not set for it ({unset[st['guest'], side]})"
               for side in ("host", "guest") if unset.get((st["guest"], side))]
        if why:
            st = dict(st, ok=False, error="; ".join(why))
        out.setdefault((test, mode + at + arm), {})[rnd] = st
    # (--host-ab: a broken guest's second arms fail with it)
    for name, err in broken.items():
        mode, rnd = where(name)
        for m in [mode] + sorted(mode + x for x in arms.get(mode, ())):
            for t in tests:
                out.setdefault((t, m), {}).setdefault(rnd, {"guest": name, "step": t, "ok": False, "error": err})
    return out


def ok(st):
    return bool(st and st.get("ok") and st.get("iops") is not None)


def spread(xs):
    """(median, min, max) of xs, or None when there is none."""
    xs = [x for x in xs if x is not None]
    return (median(xs), min(xs), max(xs)) if xs else None


def paired(samp, test, mode, ref=REF):
    """{round: IOPS of MODE / IOPS of REF in that round} over the rounds
    in which both ran successfully."""
    a, b = samp.get((test, mode), {}), samp.get((test, ref), {})
    return {r: a[r]["iops"] / b[r]["iops"] for r in sorted(a)
            if ok(a[r]) and ok(b.get(r)) and b[r]["iops"] > 0}


def ratio(samp, test, mode, ref=REF):
    """The paired ratio of MODE to REF in TEST: (median, min, max) over
    rounds, or None when no round paired."""
    return spread(paired(samp, test, mode, ref).values())


def stats(samp, test, mode, value, ref=REF):
    """One cell's figures over its rounds, or None if it never ran.

    Returns {"status": "ok"|"failed", "rounds": successful rounds,
    "of": rounds run, "error": first failure, "iops": (med, min, max),
    "ratio": paired (med, min, max) or None, "vs_host": median IOPS /
    host ceiling, "fig": {field: (med, min, max)} of VALUE(step, field)}.
    """
    runs = samp.get((test, mode))
    if not runs:
        return None
    good = [st for _, st in sorted(runs.items()) if ok(st)]
    bad = [st for _, st in sorted(runs.items()) if not ok(st)]
    out = {"status": "ok" if good else "failed", "rounds": len(good), "of": len(runs),
           "error": bad[0].get("error", "failed") if bad else None}
    if not good:
        return out
    out["iops"] = spread([st["iops"] for st in good])
    out["ratio"] = ratio(samp, test, mode, ref) if mode != ref else (1.0, 1.0, 1.0)
    host = [st for st in samp.get((test, HOST), {}).values() if ok(st)]
    out["vs_host"] = out["iops"][0] / host[0]["iops"] if host and host[0]["iops"] else None
    out["fig"] = _Figures(good, value)
    return out


class _Figures(dict):
    """field -> (median, min, max) over a cell's rounds, computed on use."""

    def __init__(self, steps, value):
        super().__init__()
        self.steps, self.value = steps, value

    def __missing__(self, field):
        v = spread([self.value(st, field) for st in self.steps])
        self[field] = v
        return v


def verdict(samp, mode, tests, ref=REF):
    """("holds"|"fails"|"undecided", [cells that fail], [cells missing])."""
    failing, missing = [], []
    for t in tests:
        r = ratio(samp, t, mode, ref)
        if r is None:
            missing.append(t)
        elif r[0] < VERDICT_MEDIAN or r[2] < VERDICT_BEST:
            failing.append((t, r))
    return ("fails" if failing else "undecided" if missing else "holds"), failing, missing


VERDICT_RULE = (f"never below baseline: in every test, median paired ratio >= {VERDICT_MEDIAN:.2f}x "
                f"and best round >= {VERDICT_BEST:.2f}x")


def verdict_line(samp, mode, tests, ref=REF):
    """'MODE: HOLDS', or 'MODE: FAILS in <cells>' (ratios to 3 places, so
    that a best round of 0.998x does not read as 1.00x)."""
    v, failing, missing = verdict(samp, mode, tests, ref)
    if v == "holds":
        return f"{mode}: HOLDS"
    parts = [f"{t} (median {r[0]:.3f}x, best {r[2]:.3f}x)" for t, r in failing]
    parts += [f"{t} (no paired round)" for t in missing]
    return f"{mode}: {'FAILS' if v == 'fails' else 'UNDECIDED'} in {', '.join(parts)}"


# "Untuned" (matrix.py --fixed-ceiling): a mode's default policy holds
# when, in every test, its median paired ratio to the better of baseline
# and its fixed-ceiling variant (the better of the two in each round) is
# at least UNTUNED_MIN.
UNTUNED_MIN = 0.90
UNTUNED_RULE = (f"untuned: the default policy within {1 - UNTUNED_MIN:.0%} of the better of baseline and "
                f"the fixed ceiling, per round (median ratio >= {UNTUNED_MIN:.2f}x in every test)")


def untuned(samp, test, mode, variant, ref=REF):
    """MODE's IOPS over the better of REF's and VARIANT's, paired per
    round: (median, min, max), or None when no round has all three."""
    a, b, v = (samp.get((test, x), {}) for x in (mode, ref, variant))
    return spread([a[r]["iops"] / max(b[r]["iops"], v[r]["iops"]) for r in sorted(a)
                   if ok(a[r]) and ok(b.get(r)) and ok(v.get(r)) and max(b[r]["iops"], v[r]["iops"]) > 0])


def untuned_line(samp, mode, variant, tests, ref=REF):
    """'MODE: HOLDS (cells)' or 'MODE: FAILS in <cells>', every cell's
    ratio with its spread."""
    per = {t: untuned(samp, t, mode, variant, ref) for t in tests}
    cells = ", ".join(f"{t} {r[0]:.2f}x [{r[1]:.2f}-{r[2]:.2f}]" if r else f"{t} (no paired round)"
                      for t, r in per.items())
    failing = [t for t, r in per.items() if r and r[0] < UNTUNED_MIN]
    verdict = ("FAILS in " + ", ".join(failing) if failing
               else "UNDECIDED" if any(r is None for r in per.values()) else "HOLDS")
    return f"{mode} against max(baseline, {variant}): {verdict}: {cells}"


# matrix.py --host-ab: MODE over MODE@host<US>us, each pair seconds apart
# in one guest, paired per round (--ab: MODE over MODE@<US>us, both sides).
AB_RULE = ("in-guest A/B: each host-polling mode over its variant at the other host ceiling, "
           "the two cells back to back in the same guest, median paired ratio [min-max] over rounds")
AB_RULE_BOTH = ("in-guest A/B: each polling mode over its variant at the other ceiling on both sides "
                "(the guest's where it polls), the two cells back to back in the same guest, "
                "median paired ratio [min-max] over rounds")
# (matrix.py --ab: the fixed ceiling's cells are the other arm in each
# default guest, not a guest of their own)
UNTUNED_AB = "; the fixed ceiling run in the same guest as the default, back to back (--ab)"


def ab_line(samp, mode, variant, tests):
    """'MODE / VARIANT: test med [min-max], ...' (for REF over REF@again:
    the in-guest noise)."""
    cells = []
    for t in tests:
        r = ratio(samp, t, mode, variant)
        cells.append(f"{t} {r[0]:.2f}x [{r[1]:.2f}-{r[2]:.2f}]" if r else f"{t} (no paired round)")
    if variant == mode + AGAIN:
        return f"in-guest noise, {mode} / {variant} (the same cell twice): " + ", ".join(cells)
    return f"{mode} / {variant}: " + ", ".join(cells)


def noise(samp, tests, ref=REF):
    """Baseline against baseline, per test: {test: (med, min, max)} and
    how it was measured ("paired": the second baseline run of each round
    over the first; "rounds": baseline's slowest round over its fastest,
    when there is no second run)."""
    per, how = {}, "paired"
    if any((t, NOISE) in samp for t in tests):
        for t in tests:
            per[t] = ratio(samp, t, NOISE, ref)
    else:
        how = "rounds"
        for t in tests:
            xs = [st["iops"] for st in samp.get((t, ref), {}).values() if ok(st)]
            per[t] = (min(xs) / max(xs),) * 3 if len(xs) > 1 and max(xs) > 0 else None
    return per, how


def noise_line(samp, tests, ref=REF):
    per, how = noise(samp, tests, ref)
    have = {t: v for t, v in per.items() if v}
    if not have:
        why = ("the second baseline run paired with no round" if how == "paired"
               else "one round, no second baseline run")
        return f"noise: not measured ({why}); a difference cannot be told from drift"
    dev = max(max(abs(1 - v[1]), abs(1 - v[2])) for v in have.values())
    if how == "paired":
        cells = ", ".join(f"{t} {v[0]:.2f}x [{v[1]:.2f}-{v[2]:.2f}]" for t, v in have.items())
        return (f"noise (baseline run twice per round, second / first): {cells}; "
                f"differences within {dev:.0%} of 1.00x are noise")
    cells = ", ".join(f"{t} {v[0]:.2f}x" for t, v in have.items())
    return (f"noise (baseline's slowest round / fastest; no second baseline run): {cells}; "
            f"differences within {dev:.0%} are noise")
