/* SPDX-License-Identifier: GPL-2.0 */
/*
 * SQ/CQ doorbell polling: the spin-budget policy and the completion-CPU
 * picker, shared by the host SQ poller (vhost-scsi) and the guest CQ poller
 * (virtio_scsi).
 *
 * Pure integer arithmetic with no kernel dependencies, so that userspace
 * unit tests compile this header as it is.  Callers do their own locking
 * and time keeping; nothing here sleeps, allocates or reads a clock.
 *
 * The policy learns the *gap*: the time from a poller finding its ring empty
 * to the next piece of work arriving.  It keeps an exponential moving
 * average of the gap (EMA, newest sample weighted 1/2^weight_shift) and sets
 * the spin budget to mult x EMA, clamped to [spin_min, spin_max] (and above
 * spin_min, the floor, which does not spin, while spinning pays).  When the
 * predicted gap is longer than spin_max, spinning would rarely catch the
 * next request and would only take CPU from the vCPUs and the backend, so
 * the budget drops to spin_min: the poller then sleeps almost at once and
 * the device behaves as without polling.  Like KVM's halt polling, the
 * budget moves gradually: at most doubling or halving per sample, and a
 * budget halved below its first step (SQCQ_GROW_START_NS) drops to the
 * target at once.  When the EMA says spinning does not pay at all, the
 * budget drops to the floor at once (QEMU's default poll-shrink): the EMA
 * has smoothed that verdict already.
 *
 * The ceiling is configured, or measured (sqcq_policy_ceiling()): what a
 * sleep costs here, learnt on each wakeup (sqcq_policy_cost()).  Each
 * side times only the receiving half of a sleep's notification (from the
 * kick or the interrupt to the woken poller at its ring); the sending half
 * (the guest's kick is a VM exit, the host's interrupt an injection into
 * a vCPU) happens across the wire, where it cannot be timed, and is taken
 * as costing as much (SQCQ_COST_HALVES).
 *
 * A gap longer than the ceiling C is learnt as C + C/8 (SQCQ_MISS_SHIFT): it
 * says "a spin would not have caught this one", which is all the policy
 * needs to know, and one long idle between bursts does not hold the EMA
 * above the ceiling for the next burst's first requests.  The eighth sets
 * when spinning stops: with a share s of the gaps caught, of mean g, the
 * EMA is s g + (1 - s) 9/8 C, so windows open while about one gap in eight
 * (g small) to one in five (g = C/2) is caught.  Spinning also needs that
 * share itself to be an eighth or more (@hit, an EMA of "this gap was
 * within the ceiling"): a measured ceiling moves with every sleep it
 * measures, and against an EMA of misses learnt at 9/8 of it, it crosses
 * above the EMA about as often as below, which alone would open windows
 * that catch nothing.  Learnt as 2 C, it would take one in two to two in
 * three: the break-even point if a microsecond of spin weighs as much as
 * a microsecond of sleep.  The eighth weighs a
 * missed window's CPU at an eighth of a sleep's latency, on purpose: a
 * window only spins on a CPU nothing else wants (a window that another
 * task keeps the CPU from ends), and a sleep costs more than its
 * measurement (the guest's kick, a VM exit, is not in it).  The price:
 * with a fifth of the gaps catchable, the poller spins most of a ceiling
 * per gap.
 *
 * Contention (the poller's CPU wanted by another task for longer than a
 * turn: the host's window ran out while the task it gave way to had the
 * CPU) ends the window and quarters the budget: a poller never competes
 * for its CPU, and windows contended in a row bring the budget to the
 * floor.  A task that takes a turn and leaves (LIO's completion kworker)
 * contends nothing: the window goes on.
 *
 * What a sleep costs is more than either half that can be timed: at QD1
 * a gap slept through is a whole round trip with a kick, an interrupt,
 * the halt around it and two wakeups in it, and each side's timed half is
 * a fraction of that.  A poller at its floor learns only such gaps, too
 * long to spin for under the measured ceiling, so neither side ever sees
 * the shorter gaps it would find if it spun.  So with a measured ceiling
 * a poller at its floor probes (sqcq_policy_probe()): the caller offers a
 * probe on a wakeup, at most every SQCQ_PROBE_EVERY_NS, and the window is
 * the hard cap (the longest window) for the next SQCQ_PROBE_GAPS gaps.
 * Their mean against the mean of the gaps learnt without probes (@slept,
 * both capped at SQCQ_PROBE_GAP_CAPS hard caps) is what spinning saved
 * per gap: a sleep's cost measured end to end, whatever part of it
 * neither side can time.  (On the host a gap slept through ends at the
 * kick, and the request then waits for the woken worker: that measured
 * half is saved too, @cost_on_path.)  If it saved an eighth of the gaps
 * or more, and 7/16 of their mean deviation (@slept_dev, so that noise
 * alone seldom pays), the probe paid: the ceiling is the hard cap until
 * the probe expires,
 * after SQCQ_PROBE_KEEP_NS (twice that for each paid probe in a row
 * before it, up to 8 times), and the rules go on from what the probe
 * learnt; the other side, its gaps now shorter, follows.  This spins
 * beyond what ski rental allows (windows longer than the sleep they
 * save) on the evidence that it shortens the round trip, and only on a
 * CPU nothing else wants.  A poller that the rules bring back to its
 * floor meanwhile keeps the probe's ceiling, and spins again when its
 * gaps fit.  An expired ceiling is checked by the next probe against
 * fresh gaps.  A probe that saved less failed: the budget goes back to
 * the floor under the measured ceiling, and each failed probe in a row
 * doubles the time to the next, up to 2^SQCQ_PROBE_BACKOFF_MAX times.
 * Gaps that do not depend on the poller (a workload's own pauses) save
 * nothing when spun through, so their probes fail; failing for ever
 * costs at most SQCQ_PROBE_GAPS windows of the idle timeout every 3.2 s,
 * only while requests flow, on a CPU nothing else wants: contention ends
 * a probe's window on the host, and the gap slept through then counts as
 * such; the guest's poller, SCHED_IDLE, yields to the submitter it
 * completed for, which ends a window, not a probe.  KVM's
 * halt polling grows its window from any block shorter than its ceiling,
 * which finds the same state by never sitting at 0, and pays for it on
 * every block.
 */
#ifndef _LINUX_VIRTIO_SQCQ_POLICY_H
#define _LINUX_VIRTIO_SQCQ_POLICY_H

#ifdef __KERNEL__
#include <linux/build_bug.h>
#include <linux/types.h>
#else
#include <assert.h>	/* static_assert */
#include <stdbool.h>
#include <linux/types.h>	/* the uapi __u64 and __u32 */
typedef __u64 u64;
typedef __u32 u32;
typedef __s64 s64;
#endif

/* Samples are capped so that mult x EMA cannot overflow (4.29 s). */
#define SQCQ_GAP_CAP_NS		0xffffffffULL
#define SQCQ_MULT_MAX		16	/* the largest mult that cannot overflow */
/* A budget growing from zero starts here (or at spin_min if larger). */
#define SQCQ_GROW_START_NS	1000U

struct sqcq_policy_params {
	u32 spin_min_ns;	/* budget floor */
	u32 spin_max_ns;	/* budget ceiling, or its hard cap if measured */
	u32 weight_shift;	/* newest sample weighs 1/2^weight_shift */
	u32 mult;		/* budget target = mult x EMA of the gap */
	bool measured;		/* ceiling = measured cost of a sleep */
	/*
	 * The measured half of a sleep delays the work itself, after the
	 * gap: the host's request waits for the woken worker.  (The
	 * guest's driver reaps in the interrupt: its poller's wakeup
	 * delays no completion.)  A probe counts it as saved.
	 */
	bool cost_on_path;
};

struct sqcq_policy {
	u64 ema_ns;		/* EMA of the gap, <= SQCQ_GAP_CAP_NS */
	u32 budget_ns;		/* current spin budget */
	u32 cost_ns;		/* EMA of a sleep's measured half (0: none) */
	u32 hit;		/* EMA share of gaps within the ceiling, of SQCQ_HIT_ONE */
	u32 probe;		/* gaps left in a probe (0: none) */
	u32 probe_fails;	/* failed probes in a row, <= SQCQ_PROBE_BACKOFF_MAX */
	u64 probe_at;		/* when the last probe started (caller's clock) */
	u64 probe_sum;		/* the probe's gaps so far, each capped */
	u32 slept_ns;		/* EMA of the gaps without probes, capped (0: none) */
	u32 slept_dev_ns;	/* EMA of their deviation from slept_ns */
	u32 slept_n;		/* gaps in slept_ns, <= SQCQ_PROBE_GAPS */
	u32 probed_ns;		/* what the last paid probe saved per gap (0: none) */
	u32 probe_pays;		/* paid probes in a row, <= SQCQ_PROBE_BACKOFF_MAX */
	u64 probed_left_ns;	/* gap time left before probed_ns expires */
	u64 gaps;		/* gaps learnt (a counter, for debugfs) */
	u64 gaps_probed;	/* of those, in a probe or under a paid one */
	u32 probes;		/* probes started (a counter, for debugfs) */
	u32 probes_paid;	/* of those, that paid (probed_ns) */
	u32 probe_contended;	/* probe windows that contention ended */
	bool probe_slept;	/* the probe's current gap is slept through */
	bool probe_late;	/* ... caught: as it is (sqcq_policy_late()) */
	u32 probe_mean_ns;	/* the last finished probe's mean gap (0: none) */
	u32 probe_base_ns;	/* what that mean was compared with */
};

/*
 * The policy's fixed shape, the same on both sides: the newest gap weighs
 * 1/8 in the EMA and the budget aims at twice the EMA.  A spin window
 * without work ends after SQCQ_IDLE_TIMEOUT_NS at most, whatever the budget.
 */
#define SQCQ_WEIGHT_SHIFT	3
#define SQCQ_MULT		2
#define SQCQ_IDLE_TIMEOUT_NS	1000000U
/* The largest ceiling a module parameter accepts, in us (1 s). */
#define SQCQ_SPIN_MAX_US_LIMIT	1000000U
/* A contended window divides the budget by 2^this. */
#define SQCQ_CONTENDED_SHIFT	2
/* A gap beyond the ceiling is learnt as the ceiling and 1/2^this of it. */
#define SQCQ_MISS_SHIFT		3
/* ... and that must fit (with the EMA's resolution, sqcq_policy_sample()). */
static_assert(SQCQ_SPIN_MAX_US_LIMIT * 1000ULL +
	      ((SQCQ_SPIN_MAX_US_LIMIT * 1000ULL) >> SQCQ_MISS_SHIFT) +
	      (1U << SQCQ_WEIGHT_SHIFT) <= SQCQ_GAP_CAP_NS);
/* sqcq_spin_max_us=auto: the ceiling is measured (sqcq_policy_cost()). */
#define SQCQ_SPIN_MAX_AUTO	0xffffffffU
/* The newest cost sample weighs 1/4 (QEMU's AioContext polling EMA). */
#define SQCQ_COST_SHIFT		2
/* A sleep costs this many times its measured (receiving) half. */
#define SQCQ_COST_HALVES	2
/*
 * The share of gaps a window could have caught (within the ceiling), in
 * 1/SQCQ_HIT_ONE; spinning starts only while it is at least
 * 1/2^SQCQ_HIT_MIN_SHIFT.
 */
#define SQCQ_HIT_ONE		65536U	/* 2^16 */
#define SQCQ_HIT_MIN_SHIFT	3
/*
 * A probe (sqcq_policy_probe()) holds the window at the hard cap for this
 * many gaps: enough for the EMA to fall from its misses (9/8 of the
 * ceiling) to 2/3 of it when they are all caught at half of it, for the
 * share caught to pass 1/2^SQCQ_HIT_MIN_SHIFT at the first, and for
 * their mean to vary little: a probe compares it with the mean of about
 * as many gaps learnt without probes just before, and their difference
 * varies by 0.18 of the gaps' standard deviation (sqrt(2/64)).
 */
#define SQCQ_PROBE_GAPS		64U
#define SQCQ_PROBE_SHIFT	6	/* their mean: a shift */
/*
 * The gaps without probes weigh 1/2^this: about as many in their EMA (an
 * EMA of weight w weighs as a mean of (2 - w) / w samples).
 */
#define SQCQ_SLEPT_SHIFT	5
static_assert(SQCQ_PROBE_GAPS >> SQCQ_PROBE_SHIFT == 1 &&
	      !(SQCQ_PROBE_GAPS & (SQCQ_PROBE_GAPS - 1)) &&
	      SQCQ_PROBE_SHIFT - SQCQ_SLEPT_SHIFT == 1);
/*
 * Gaps are compared capped at this many hard caps: a pause of the
 * workload's own (fio's think time) is as long spun through as slept
 * through and would only add noise to the means.
 */
#define SQCQ_PROBE_GAP_CAPS	2
/* (so a capped gap fits the u32 fields, sqcq_policy_sample()) */
static_assert(SQCQ_SPIN_MAX_US_LIMIT * 1000ULL * SQCQ_PROBE_GAP_CAPS <=
	      SQCQ_GAP_CAP_NS);
/* Probes start at most this often (200 ms) ... */
#define SQCQ_PROBE_EVERY_NS	200000000ULL
/* ... and 2^(failed probes in a row) times less often, up to 2^this. */
#define SQCQ_PROBE_BACKOFF_MAX	4
/*
 * A probe pays when spinning shortened the gaps by at least 1/2^this of
 * them (a QD1 round trip an eighth shorter), and by 7/16 of their mean
 * deviation (about 0.35 standard deviations): two standard deviations of
 * the difference of the means, so that noise alone pays about one probe
 * in 40.
 */
#define SQCQ_PROBE_PAY_SHIFT	3
#define SQCQ_PROBE_DEV_NUM	7
#define SQCQ_PROBE_DEV_SHIFT	4	/* 7/16 */
/*
 * A paid probe's ceiling is kept for this much gap time (1.6 s: the sum
 * of the gaps learnt since, whether spun or slept through, each capped
 * at SQCQ_PROBE_GAP_CAPS hard caps), twice as long for each paid probe
 * in a row before it, up to 2^(SQCQ_PROBE_BACKOFF_MAX-1) times; then the
 * next probe checks it against fresh gaps learnt without probes.
 */
#define SQCQ_PROBE_KEEP_NS	1600000000ULL
static_assert(SQCQ_PROBE_KEEP_NS << (SQCQ_PROBE_BACKOFF_MAX - 1) < (1ULL << 63));

/**
 * sqcq_params_set - the parameters for a budget floor and ceiling
 * @c: the parameters to fill
 * @min_us: budget floor in us; above @max_us it is taken as @max_us
 * @max_us: budget ceiling in us, at most SQCQ_SPIN_MAX_US_LIMIT; or
 *	SQCQ_SPIN_MAX_AUTO: the ceiling is what a sleep costs, as measured
 *	(capped at SQCQ_SPIN_MAX_US_LIMIT)
 */
static inline void sqcq_params_set(struct sqcq_policy_params *c,
				   u32 min_us, u32 max_us)
{
	c->measured = max_us == SQCQ_SPIN_MAX_AUTO;
	c->cost_on_path = false;
	if (max_us > SQCQ_SPIN_MAX_US_LIMIT)
		max_us = SQCQ_SPIN_MAX_US_LIMIT;
	if (min_us > max_us)
		min_us = max_us;
	c->spin_min_ns = min_us * 1000U;	/* <= 10^9: fits */
	c->spin_max_ns = max_us * 1000U;
	c->weight_shift = SQCQ_WEIGHT_SHIFT;
	c->mult = SQCQ_MULT;
}

/**
 * sqcq_params_cap - a measured ceiling no longer than the longest window
 * @c: the parameters
 * @idle_timeout_ns: the longest spin window without work
 *
 * No window outlasts @idle_timeout_ns, so a gap beyond it is a miss
 * whatever a sleep costs: with a sleep measured above it (here twice a
 * half of 0.8 ms, say), gaps of 1.2 ms would count as catchable and open
 * windows of the timeout that catch none of them.  A configured ceiling
 * is left as set: above the timeout it means "spin for the timeout
 * whatever the gaps", which tests use.
 */
static inline void sqcq_params_cap(struct sqcq_policy_params *c,
				   u32 idle_timeout_ns)
{
	if (!c->measured || c->spin_max_ns <= idle_timeout_ns)
		return;
	c->spin_max_ns = idle_timeout_ns;
	if (c->spin_min_ns > c->spin_max_ns)
		c->spin_min_ns = c->spin_max_ns;
}

/**
 * sqcq_policy_init - start with no history
 * @p: policy state
 * @c: parameters
 *
 * With no history the EMA starts at spin_max (spinning is neither
 * predicted to pay nor ruled out) and the budget at spin_min.
 */
static inline void sqcq_policy_init(struct sqcq_policy *p,
				    const struct sqcq_policy_params *c)
{
	p->ema_ns = c->spin_max_ns;
	p->budget_ns = c->spin_min_ns;
	p->cost_ns = 0;
	p->hit = 0;
	p->probe = 0;
	p->probe_fails = 0;
	p->probe_at = 0;
	p->probe_sum = 0;
	p->slept_ns = 0;
	p->slept_dev_ns = 0;
	p->slept_n = 0;
	p->probed_ns = 0;
	p->probe_pays = 0;
	p->probed_left_ns = 0;
	p->probes = 0;
	p->probes_paid = 0;
	p->probe_contended = 0;
	p->gaps = 0;
	p->gaps_probed = 0;
	p->probe_slept = false;
	p->probe_late = false;
	p->probe_mean_ns = 0;
	p->probe_base_ns = 0;
}

/* EMA step without overflow or signed arithmetic. */
static inline u64 sqcq_ema_step(u64 ema, u64 sample, u32 shift)
{
	if (sample >= ema)
		return ema + ((sample - ema) >> shift);
	return ema - ((ema - sample) >> shift);
}

/**
 * sqcq_policy_ceiling - the longest spin window
 * @p: policy state
 * @c: parameters
 *
 * Ski rental: spinning for as long as a sleep costs, then sleeping, is
 * never worse than twice the best offline choice.  So with a measured
 * ceiling a spin lasts at most what a sleep costs here: its measured half
 * and the other side's (SQCQ_COST_HALVES; no spinning before the first
 * measurement).  The hard cap during a probe, and after one that paid
 * until it expires (sqcq_policy_probe()); otherwise the configured
 * ceiling.
 */
static inline u32 sqcq_policy_ceiling(const struct sqcq_policy *p,
				      const struct sqcq_policy_params *c)
{
	u64 cost = (u64)p->cost_ns * SQCQ_COST_HALVES;	/* no overflow */

	if (!c->measured || p->probe || p->probed_ns)
		return c->spin_max_ns;
	return cost < c->spin_max_ns ? (u32)cost : c->spin_max_ns;
}

/* Where the budget is heading for the current EMA. */
static inline u32 sqcq_policy_target(const struct sqcq_policy *p,
				     const struct sqcq_policy_params *c)
{
	u32 max = sqcq_policy_ceiling(p, c);
	u64 t;

	/*
	 * Spinning does not pay: the gaps are predicted too long, or too few
	 * of them would have been caught (a ceiling that moves with every
	 * cost sample can drop below an EMA of misses, learnt at 9/8 of it,
	 * about as often as it rises above it: not a reason to spin).
	 */
	if (p->ema_ns > max || p->hit < (SQCQ_HIT_ONE >> SQCQ_HIT_MIN_SHIFT))
		return c->spin_min_ns;
	/* No room above the floor: a floor at the ceiling turns spinning off. */
	if (max <= c->spin_min_ns)
		return c->spin_min_ns;
	t = p->ema_ns * c->mult;	/* <= 2^32 * 16: no overflow */
	/*
	 * Gaps this short pay most: the shortest budget that spins (one at
	 * the floor does not, sqcq_policy_spins()).
	 */
	if (t <= c->spin_min_ns)
		return c->spin_min_ns + 1;
	if (t > max)
		return max;
	return (u32)t;
}

/*
 * Move the budget towards @target: at most x2 up, /2 down per step; down
 * to @target at once when it is the floor, or from below
 * SQCQ_GROW_START_NS.
 */
static inline void sqcq_policy_move(struct sqcq_policy *p,
				    const struct sqcq_policy_params *c,
				    u32 target)
{
	u32 b = p->budget_ns;

	if (target > b) {
		u64 grown = b ? (u64)b * 2 : SQCQ_GROW_START_NS;

		if (grown < c->spin_min_ns)
			grown = c->spin_min_ns;
		b = grown < target ? (u32)grown : target;
	} else if (target == c->spin_min_ns) {
		/*
		 * Spinning is predicted not to pay (sqcq_policy_target()).
		 * The EMA has already smoothed that verdict (one long gap
		 * moves it by 1/2^weight_shift, never to the floor alone),
		 * so halving on top of it only spends windows on gaps that
		 * are known to be too long, about ten of them from a 1 ms
		 * budget.  QEMU's AioContext polling does the same with its
		 * default poll-shrink of 0: a block beyond poll-max-ns resets
		 * the window.
		 */
		b = target;
	} else if (target < b) {
		b = b / 2 > target ? b / 2 : target;
		/*
		 * A budget halved below its first step is a window that
		 * catches nothing a sleep would not, and still costs a polled
		 * pass: straight to the target (KVM's halt polling drops
		 * such a window to 0).  Halving alone took ten more gaps to
		 * get from 1 us to 0, and opened a window at each.
		 */
		if (b < SQCQ_GROW_START_NS)
			b = target;
	}
	p->budget_ns = b;
}

/**
 * sqcq_policy_spins - is spinning worth starting at all?
 * @p: policy state
 * @c: parameters
 *
 * Return: false when the budget is at its floor, i.e. the policy predicts
 * that the next request comes too late for a spin to catch it.
 */
static inline bool sqcq_policy_spins(const struct sqcq_policy *p,
				     const struct sqcq_policy_params *c)
{
	return p->budget_ns > c->spin_min_ns;
}

/*
 * A configured ceiling is the user's choice: a probe ends, and a paid
 * probe's ceiling is forgotten (it would not age under a ceiling of 0,
 * its gaps capped at 0, and would come back with "auto").  So are the
 * gaps a probe compares with and its back-off: back at "auto", the next
 * probe waits for gaps learnt without probes since, not those from before
 * the user's ceiling, which may have changed the workload or the machine.
 */
static inline void sqcq_probe_unconfigured(struct sqcq_policy *p,
					   const struct sqcq_policy_params *c)
{
	if (c->measured)
		return;
	p->probe = 0;
	p->probed_ns = 0;
	p->probed_left_ns = 0;
	p->probe_pays = 0;
	p->slept_ns = 0;
	p->slept_dev_ns = 0;
	p->slept_n = 0;
	p->probe_fails = 0;
}

/* A time in ns as the u32 fields keep it: capped at SQCQ_GAP_CAP_NS. */
static inline u32 sqcq_cap32(u64 ns)
{
	return ns < SQCQ_GAP_CAP_NS ? (u32)ns : (u32)SQCQ_GAP_CAP_NS;
}

/* A gap without probes: its EMA and mean deviation (TCP's srtt, rttvar). */
static inline void sqcq_learn_slept(struct sqcq_policy *p, u32 gap_ns)
{
	u32 dev;

	if (p->slept_n < SQCQ_PROBE_GAPS)
		p->slept_n++;
	if (!p->slept_ns) {
		p->slept_ns = gap_ns ? gap_ns : 1;	/* 0 means "none" */
		p->slept_dev_ns = gap_ns / 2;
		return;
	}
	dev = gap_ns > p->slept_ns ? gap_ns - p->slept_ns : p->slept_ns - gap_ns;
	p->slept_dev_ns = (u32)sqcq_ema_step(p->slept_dev_ns, dev,
					     SQCQ_SLEPT_SHIFT);
	/* (from 1 or more it stays there: the step is less than the EMA) */
	p->slept_ns = (u32)sqcq_ema_step(p->slept_ns, gap_ns, SQCQ_SLEPT_SHIFT);
}

/*
 * A probe's last gap: what spinning saved per gap (the gaps without probes
 * against the probe's, each capped) is a sleep's cost measured end to
 * end.  An eighth of the gaps or more, and more than noise would:
 * spinning pays, on a CPU nothing else wants, even beyond what ski rental
 * allows (a window longer than the sleep it saves), so the ceiling is the
 * hard cap until the probe expires, and the rules go on from what the
 * probe learnt.  Otherwise the probe failed: back to the floor with the
 * measured ceiling (its catches taught nothing), and the next probe
 * waits longer.
 */
static inline void sqcq_probe_end(struct sqcq_policy *p,
				  const struct sqcq_policy_params *c)
{
	u64 mean = p->probe_sum >> SQCQ_PROBE_SHIFT;
	/* A gap slept through, and the wait after it (cost_on_path). */
	u64 slept = p->slept_ns + (c->cost_on_path ? (u64)p->cost_ns : 0);
	u64 saved = slept > mean ? slept - mean : 0;

	p->probe_sum = 0;
	/* (for debugfs: why the probe paid or failed) */
	p->probe_mean_ns = sqcq_cap32(mean);
	p->probe_base_ns = sqcq_cap32(slept);
	if (saved && saved >= slept >> SQCQ_PROBE_PAY_SHIFT &&
	    saved << SQCQ_PROBE_DEV_SHIFT >=
	    (u64)p->slept_dev_ns * SQCQ_PROBE_DEV_NUM) {
		p->probed_ns = sqcq_cap32(saved);
		p->probe_fails = 0;
		if (p->probe_pays < SQCQ_PROBE_BACKOFF_MAX)
			p->probe_pays++;
		p->probed_left_ns = SQCQ_PROBE_KEEP_NS << (p->probe_pays - 1);
		p->probes_paid++;
		return;
	}
	p->probed_ns = 0;
	p->probe_pays = 0;
	p->hit = 0;
	p->budget_ns = c->spin_min_ns;
	if (p->probe_fails < SQCQ_PROBE_BACKOFF_MAX)
		p->probe_fails++;
}

/*
 * A paid probe's ceiling ages with the gaps learnt under it, spun or
 * slept through (a poller whose windows catch every gap never wakes, so
 * a wakeup cannot be what retires it), each capped as the probe compared
 * them (@gap_ns): a pause with no requests at all tells nothing about
 * spinning, and uncapped, the second or two between two fio jobs retired
 * the ceiling that the first had paid for, so that the second started
 * asleep.  So it lasts SQCQ_PROBE_KEEP_NS / (SQCQ_PROBE_GAP_CAPS hard
 * caps) gaps or more (800 with the default 1 ms idle timeout), however
 * far apart: traffic, not wall time, retires it.  What it can cost is
 * bounded as before: a window spins for a gap's length at most, and only
 * the hard cap of it, so no more than SQCQ_PROBE_KEEP_NS of spinning per
 * paid probe (up to 8 times that in a row).  Expired: back to the
 * measured ceiling; the next probe compares with fresh gaps, learnt
 * without it.
 */
static inline void sqcq_probed_age(struct sqcq_policy *p, u64 gap_ns)
{
	if (gap_ns < p->probed_left_ns) {
		p->probed_left_ns -= gap_ns;
		return;
	}
	p->probed_left_ns = 0;
	p->probed_ns = 0;
	p->slept_ns = 0;
	p->slept_n = 0;
}

/**
 * sqcq_policy_sample - learn from one observed gap
 * @p: policy state
 * @c: parameters
 * @gap_ns: time from finding the ring empty to the next work
 *
 * Call once per empty->work transition, whether the work was caught while
 * spinning or arrived after the poller slept.
 */
static inline void sqcq_policy_sample(struct sqcq_policy *p,
				      const struct sqcq_policy_params *c,
				      u64 gap_ns)
{
	u32 max = sqcq_policy_ceiling(p, c);
	u64 cap = (u64)c->spin_max_ns * SQCQ_PROBE_GAP_CAPS;	/* < 2^32 */
	u64 capped = gap_ns < cap ? gap_ns : cap;

	sqcq_probe_unconfigured(p, c);
	/* (how many gaps a probe, or a paid one's ceiling, saw) */
	p->gaps++;
	if (p->probe || p->probed_ns)
		p->gaps_probed++;
	if (p->probe) {
		/*
		 * Longer than the probe's window (the hard cap), or its
		 * window ended by contention: slept through, and the wait
		 * after it counts as for the gaps it is compared with
		 * (cost_on_path); unless the window, ended, still caught it
		 * (sqcq_policy_late()).
		 */
		bool slept = !p->probe_late &&
			     (gap_ns > c->spin_max_ns || p->probe_slept);

		p->probe_sum += capped + (c->cost_on_path && slept ?
					  p->cost_ns : 0);
		p->probe_slept = false;
		p->probe_late = false;
	} else if (p->probed_ns) {
		sqcq_probed_age(p, capped);
	} else if (c->measured) {
		sqcq_learn_slept(p, (u32)capped);
	}
	p->hit = (u32)sqcq_ema_step(p->hit, gap_ns <= max ? SQCQ_HIT_ONE : 0,
				    c->weight_shift);
	/*
	 * Too long to catch: how much longer does not matter.  (Plus the
	 * EMA's resolution, 2^weight_shift ns, or under a ceiling of a few
	 * ns the EMA could never rise above it.)
	 */
	if (max && gap_ns > max)
		gap_ns = (u64)max + (max >> SQCQ_MISS_SHIFT) +
			 (1U << c->weight_shift);
	if (gap_ns > SQCQ_GAP_CAP_NS)
		gap_ns = SQCQ_GAP_CAP_NS;
	p->ema_ns = sqcq_ema_step(p->ema_ns, gap_ns, c->weight_shift);
	if (p->probe) {
		if (--p->probe) {
			p->budget_ns = max;	/* the probe goes on */
			return;
		}
		sqcq_probe_end(p, c);
	}
	sqcq_policy_move(p, c, sqcq_policy_target(p, c));
}

/**
 * sqcq_policy_cost - learn what the measured half of one sleep cost
 * @p: policy state
 * @c: parameters
 * @cost_ns: from the wakeup's cause (a kick) to the ring being serviced
 *	by the woken side
 *
 * Call on a wakeup only, never per spin iteration.  The first sample is
 * taken as it is; later ones weigh 1/2^SQCQ_COST_SHIFT.  A budget above
 * the new ceiling drops to it.
 */
static inline void sqcq_policy_cost(struct sqcq_policy *p,
				    const struct sqcq_policy_params *c,
				    u64 cost_ns)
{
	if (cost_ns > SQCQ_GAP_CAP_NS)
		cost_ns = SQCQ_GAP_CAP_NS;
	if (!cost_ns)
		cost_ns = 1;	/* 0 means "not measured" */
	if (!p->cost_ns) {
		p->cost_ns = (u32)cost_ns;
		/*
		 * The EMA started at the hard cap (1 s): start it at the
		 * first ceiling instead, or it takes ~70 gaps to come down.
		 */
		if (c->measured && p->ema_ns > sqcq_policy_ceiling(p, c))
			p->ema_ns = sqcq_policy_ceiling(p, c);
	} else {
		p->cost_ns = (u32)sqcq_ema_step(p->cost_ns, cost_ns,
						SQCQ_COST_SHIFT);
	}
	/* A cheaper sleep caps the budget at once. */
	if (p->budget_ns > sqcq_policy_ceiling(p, c))
		p->budget_ns = sqcq_policy_ceiling(p, c) > c->spin_min_ns ?
			       sqcq_policy_ceiling(p, c) : c->spin_min_ns;
}

/**
 * sqcq_policy_contended - the poller's CPU was wanted by another task
 * @p: policy state
 * @c: parameters
 *
 * Another task on the poller's CPU (a vCPU, the backend) kept it for more
 * than a turn, to the end of the window the poller gave way in: spinning
 * would take CPU from it, so the window has ended.  During a probe, that
 * is all (see below); otherwise the budget drops to a quarter
 * (SQCQ_CONTENDED_SHIFT), faster than short gaps grow it (x2 each), and
 * to the floor from under a budget's first step: on a CPU contended at
 * every window it stays within a microsecond or two of the floor, so the
 * device runs on notifications; after a burst of other work it is back
 * within two short gaps.
 */
static inline void sqcq_policy_contended(struct sqcq_policy *p,
					 const struct sqcq_policy_params *c)
{
	u32 b = p->budget_ns >> SQCQ_CONTENDED_SHIFT;

	sqcq_probe_unconfigured(p, c);
	/*
	 * A probe's window ended (the caller sleeps), not the probe: its
	 * gap is slept through and counts the wait after it as the gaps it
	 * is compared with do, unless the caller finds requests waiting
	 * (sqcq_policy_late()).  A probe whose windows are all contended
	 * pays only if the gaps themselves came shorter; one window
	 * contended now and then (an idle vCPU's slice on the worker's
	 * CPU) does not throw away what the others measured.  The budget
	 * stays the probe's.
	 */
	if (p->probe) {
		p->probe_slept = true;
		p->probe_contended++;
		return;
	}
	/* Under a budget's first step: the floor (sqcq_policy_move()). */
	if (b < SQCQ_GROW_START_NS)
		b = 0;
	p->budget_ns = b > c->spin_min_ns ? b : c->spin_min_ns;
}

/**
 * sqcq_policy_late - the next gap learnt was caught, not ended by a wakeup
 * @p: policy state
 *
 * Call right before sqcq_policy_sample() for a gap that no wakeup ended:
 * the poller, spinning or back on its CPU (after a give-way, a preemption
 * or contention, sqcq_policy_contended(), even after its window's end),
 * found the work itself.  The gap ends at that catch, so it shows all the
 * work's wait: during a probe it counts as it is, however long, not as
 * slept through (a gap slept through ends at the wakeup's cause, before
 * the wait for the woken side, which is why that one counts the wait on
 * top, cost_on_path).
 */
static inline void sqcq_policy_late(struct sqcq_policy *p)
{
	if (p->probe)
		p->probe_late = true;
}

/**
 * sqcq_policy_probe - spin for a few gaps although spinning is not predicted
 *	to pay, to see whether it shortens them
 * @p: policy state
 * @c: parameters
 * @now_ns: the caller's clock (its unit ns; only differences are used)
 *
 * Call on a wakeup of a sleeping poller, from the context that owns @p
 * then, once the gap that the wakeup ended was learnt.  A probe starts
 * only at the floor, with a measured ceiling (a configured one is the
 * user's choice), without a paid probe's ceiling, once a sleep and
 * SQCQ_PROBE_GAPS gaps without probes were measured, and at most every
 * SQCQ_PROBE_EVERY_NS, backed off after failed probes.  Return:
 * true if a probe starts: the window is the hard cap for the next
 * SQCQ_PROBE_GAPS gaps (sqcq_policy_sample()).
 */
static inline bool sqcq_policy_probe(struct sqcq_policy *p,
				     const struct sqcq_policy_params *c,
				     u64 now_ns)
{
	u64 every = SQCQ_PROBE_EVERY_NS << p->probe_fails;

	if (!c->measured || p->probe || p->probed_ns || !p->cost_ns ||
	    p->slept_n < SQCQ_PROBE_GAPS || sqcq_policy_spins(p, c) ||
	    c->spin_max_ns <= c->spin_min_ns)
		return false;
	/* (signed: a stamp from a clock that is ahead is recent) */
	if (p->probe_at && (s64)(now_ns - p->probe_at) < (s64)every)
		return false;
	p->probe_at = now_ns ? now_ns : 1;	/* 0 means "never" */
	p->probe = SQCQ_PROBE_GAPS;
	p->probe_sum = 0;
	p->probe_slept = false;
	p->probe_late = false;
	p->probes++;
	p->budget_ns = sqcq_policy_ceiling(p, c);	/* the hard cap */
	return true;
}

/**
 * sqcq_policy_window - the spin window a poller opens now
 * @p: policy state
 * @c: parameters
 * @idle_timeout_ns: the longest window without work
 *
 * The budget as applied: capped by the ceiling (a budget learnt under a
 * higher one) and by @idle_timeout_ns.  Return: 0 when the policy does
 * not spin (the poller sleeps at once).
 */
static inline u32 sqcq_policy_window(const struct sqcq_policy *p,
				     const struct sqcq_policy_params *c,
				     u32 idle_timeout_ns)
{
	u32 w = p->budget_ns;

	if (!sqcq_policy_spins(p, c))
		return 0;
	if (w > sqcq_policy_ceiling(p, c))
		w = sqcq_policy_ceiling(p, c);
	return w < idle_timeout_ns ? w : idle_timeout_ns;
}

/**
 * sqcq_policy_steers - will the poller keep its CPU busy after this work?
 * @p: policy state
 * @c: parameters
 * @idle_timeout_ns: the longest window without work
 *
 * Only then is its completion work worth sending to another CPU: a poller
 * that sleeps once the ring is empty leaves its CPU free, and the
 * completion runs best where it was submitted.  A window shorter than a
 * budget's first step (SQCQ_GROW_START_NS) is over long before the
 * completion comes, so it does not count.
 */
static inline bool sqcq_policy_steers(const struct sqcq_policy *p,
				      const struct sqcq_policy_params *c,
				      u32 idle_timeout_ns)
{
	return sqcq_policy_window(p, c, idle_timeout_ns) >= SQCQ_GROW_START_NS;
}

/*
 * Completion-CPU picker.  LIO runs a command's completion work on the CPU
 * named by se_cmd->cpuid; by default that is the submitting CPU, which for
 * commands found by the SQ poller is the poller's own busy CPU.
 */
#define SQCQ_BITS_PER_WORD	(8 * sizeof(unsigned long))

static inline bool sqcq_bit(const unsigned long *map, unsigned int bit)
{
	return (map[bit / SQCQ_BITS_PER_WORD] >> (bit % SQCQ_BITS_PER_WORD)) & 1;
}

/**
 * sqcq_steer_pick - choose the CPU for a command's completion work
 * @free: CPUs that are online, mostly idle and not running a busy poller
 * @nbits: number of CPUs described by the bitmaps
 * @self: CPU the poller runs on now
 * @cursor: round-robin position, kept by the caller between calls
 *
 * Picks free CPUs other than @self in turn.  Return: a CPU number, or -1
 * for "do not steer" (LIO then uses the submitting CPU).
 */
static inline int sqcq_steer_pick(const unsigned long *free,
				  unsigned int nbits, unsigned int self,
				  unsigned int *cursor)
{
	unsigned int i, cpu;

	if (!nbits)
		return -1;
	for (i = 1; i <= nbits; i++) {
		cpu = (*cursor + i) % nbits;
		if (cpu != self && sqcq_bit(free, cpu)) {
			*cursor = cpu;
			return (int)cpu;
		}
	}
	return -1;
}

#endif /* _LINUX_VIRTIO_SQCQ_POLICY_H */
