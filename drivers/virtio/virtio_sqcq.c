// SPDX-License-Identifier: GPL-2.0
/*
 * virtio CQ poller: reaps a device's used rings by reading the used index
 * from memory, so the device need not interrupt (an injected interrupt, its
 * EOI and the halt/wakeup around it are most of a virtualised I/O's exits)
 * while completions keep coming.
 *
 * One poller per request queue (virtio-sqcq<index>/<queue>), allowed only on
 * the CPUs that blk-mq maps to that queue.  Its submitters run there, so it
 * completes their requests where they wait: the woken task needs no IPI and
 * the queue's managed interrupt affinity still holds.  The poller is
 * SCHED_IDLE: it runs when its CPU would otherwise idle (a libaio task
 * sleeping in io_getevents(), say) and gives the CPU up as soon as anything
 * else is runnable.
 *
 * One invariant keeps completions from being stranded: a ring's interrupt
 * is suppressed only while its poller spins on its CPU with preemption
 * disabled (SQCQ_SPINNING).  Before the poller gives the CPU away
 * (need_resched(), kthread_should_stop()) it re-enables the interrupt,
 * reaping until the ring is empty (sqcq_yield()); before it sleeps it
 * announces NEED_WAKEUP the same way (sqcq_arm()).  In every other state
 * the driver's interrupt handler reaps, as upstream does.
 *
 * The spin budget comes from include/linux/virtio_sqcq_policy.h, shared
 * with the host; each queue learns its own.  An interrupt to a sleeping
 * poller wakes it only if the policy predicts that the completions which
 * follow come soon enough for spinning to pay, or, at most every 100 ms,
 * to measure what a sleep costs (the auto ceiling).
 *
 * Not used on PREEMPT_RT, where the driver's ring lock is a sleeping lock
 * and cannot be taken with preemption disabled.
 */
#define pr_fmt(fmt) "virtio_sqcq: " fmt

#include <linux/cpumask.h>
#include <linux/debugfs.h>
#include <linux/kthread.h>
#include <linux/module.h>
#include <linux/sched.h>
#include <linux/sched/clock.h>
#include <linux/sched/isolation.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/timekeeping.h>
#include <linux/virtio.h>
#include <linux/virtio_config.h>
#include <linux/virtio_ring.h>
#include <linux/virtio_sqcq.h>
#include <linux/virtio_sqcq_cq.h>
#include <linux/virtio_sqcq_policy.h>
#include <uapi/linux/sched/types.h>

static bool sqcq_enable = true;
module_param(sqcq_enable, bool, 0644);
MODULE_PARM_DESC(sqcq_enable,
		 "Accept VIRTIO_F_SQCQ_POLL from devices; N behaves as upstream (default Y)");

static bool sqcq_cq = true;
module_param(sqcq_cq, bool, 0644);
MODULE_PARM_DESC(sqcq_cq,
		 "Run the CQ pollers; N negotiates the feature but takes completions by interrupt, to measure the host poller alone (default Y)");

static unsigned int sqcq_spin_max_us = SQCQ_SPIN_MAX_AUTO;

/* "auto" (the default), or a fixed ceiling 0-1000000 */
static int sqcq_spin_max_set(const char *val, const struct kernel_param *kp)
{
	if (sysfs_streq(val, "auto")) {
		WRITE_ONCE(*(unsigned int *)kp->arg, SQCQ_SPIN_MAX_AUTO);
		return 0;
	}
	return param_set_uint_minmax(val, kp, 0, SQCQ_SPIN_MAX_US_LIMIT);
}

static int sqcq_spin_max_get(char *buf, const struct kernel_param *kp)
{
	if (READ_ONCE(*(unsigned int *)kp->arg) == SQCQ_SPIN_MAX_AUTO)
		return sysfs_emit(buf, "auto\n");
	return param_get_uint(buf, kp);
}

static const struct kernel_param_ops sqcq_spin_max_ops = {
	.set = sqcq_spin_max_set,
	.get = sqcq_spin_max_get,
};

module_param_cb(sqcq_spin_max_us, &sqcq_spin_max_ops, &sqcq_spin_max_us, 0644);
MODULE_PARM_DESC(sqcq_spin_max_us,
		 "Spin budget ceiling in us, read at each spin window and each wakeup decision: auto (default: what a sleep costs, twice what is measured from each interrupt that wakes a poller to the poller running, or the 1 ms hard cap while a probe from the floor found that spinning shortens the gaps) or a fixed 0-1000000, which overrides the measurement and the probes");

/*
 * A poller whose policy does not spin is still woken by an interrupt at
 * most this often, to measure what a sleep costs (auto ceiling): without
 * a sample the ceiling would stay 0 and the poller asleep for good.
 */
#define SQCQ_COST_EVERY_NS	(100 * NSEC_PER_MSEC)

/*
 * Debugfs only, for tests and experiments (virtio-sqcq/spin_min_us,
 * virtio-sqcq/idle_timeout_us), read as sqcq_spin_max_us is: a budget
 * floor, and the longest spin window without work.
 */
static u32 sqcq_spin_min_us;
static u32 sqcq_idle_timeout_us = SQCQ_IDLE_TIMEOUT_NS / NSEC_PER_USEC;

/*
 * The parameters as they are now, and the longest window without work (in
 * ns), read as the host's are: a user's change applies from the next
 * window or wakeup decision on, not only when a device's pollers start.
 */
static void sqcq_read_params(struct sqcq_policy_params *c, u32 *idle_timeout_ns)
{
	*idle_timeout_ns = min(READ_ONCE(sqcq_idle_timeout_us),
			       SQCQ_SPIN_MAX_US_LIMIT) * NSEC_PER_USEC;
	sqcq_params_set(c, READ_ONCE(sqcq_spin_min_us),
			READ_ONCE(sqcq_spin_max_us));
	sqcq_params_cap(c, *idle_timeout_ns);
}

/* Completions reaped per hold of the ring's lock (interrupts off). */
#define SQCQ_REAP_BATCH		64

enum { SQCQ_WAKE_PENDING = 0 };

/* Who reaps the ring; changed under the ring's lock. */
enum sqcq_state {
	SQCQ_ASLEEP,	/* interrupt armed, poller off CPU: the driver reaps */
	SQCQ_SPINNING,	/* interrupt suppressed, poller on CPU: it reaps */
	SQCQ_YIELDED,	/* interrupt armed, poller preempted: the driver reaps */
};

struct virtio_sqcq_poller {
	struct virtio_sqcq_cq *cq;
	struct virtio_sqcq_ring *ring;
	struct task_struct *task;
	cpumask_var_t cpus;		/* where the poller may run */
	/* The (split) ring's used->idx, for the lock-free peek. */
	const __virtio16 *used_idx;

	/* Under the ring's lock, shared with the interrupt path. */
	enum sqcq_state state;
	unsigned long flags;		/* SQCQ_WAKE_PENDING */

	/*
	 * The poller's while it spins, the interrupt path's while it sleeps:
	 * the state change under the ring's lock hands them over.  The
	 * parameters are read again by whichever owns them (sqcq_read_params())
	 * at each window and each wakeup decision.
	 */
	struct sqcq_policy policy;
	struct sqcq_policy_params params;
	u32 idle_timeout_ns;
	u64 empty_since;		/* the ring was found empty then (0: not) */

	/*
	 * Under the ring's lock, in ktime_get_mono_fast_ns() (the interrupt's
	 * CPU need not be the poller's): when the interrupt that woke the
	 * poller came (0: none), and when the last sleep cost was learnt.
	 */
	u64 woken_at;
	u64 cost_at;
	/* Poller thread only: its run-queue wait before it last slept. */
	u64 run_delay;

	/* Poller thread only. */
	bool must_reap;			/* the peek's index may be stale */
	u16 seen;			/* used->idx at the last reap */
	u64 spin_deadline;

	/* Counters (one writer each). */
	u64 polls, empty_polls, sleeps, wakeups, wakeups_by_irq, yields;
	u64 cost_wakeups;		/* of those by irq: to measure the cost only */
	u64 caught;			/* spin windows that found a completion */
	u64 spin_ns;
};

struct virtio_sqcq_cq {
	struct virtio_device *vdev;
	const struct virtio_sqcq_cq_ops *ops;
	void *priv;
	struct dentry *dbg;
	unsigned int npollers;
	struct virtio_sqcq_poller pollers[] __counted_by(npollers);
};

static struct dentry *sqcq_debugfs;

/**
 * virtio_sqcq_validate - drop VIRTIO_F_SQCQ_POLL if polling is disabled
 * @vdev: the device, from the driver's validate callback
 *
 * Return: true if the feature stays offered for negotiation.
 */
bool virtio_sqcq_validate(struct virtio_device *vdev)
{
	if (READ_ONCE(sqcq_enable))
		return true;
	__virtio_clear_bit(vdev, VIRTIO_F_SQCQ_POLL);
	return false;
}
EXPORT_SYMBOL_GPL(virtio_sqcq_validate);

/* One gap ends at @now; clock skew between CPUs makes no negative gap. */
static void sqcq_sample(struct virtio_sqcq_poller *p, u64 now)
{
	if (!p->empty_since)
		return;
	sqcq_policy_sample(&p->policy, &p->params,
			   now > p->empty_since ? now - p->empty_since : 0);
}

/*
 * Lock-free peek: might the ring hold completions?  Only false positives:
 * the last reap consumed at least up to seen (read under the lock before
 * it), so used->idx == seen means the ring is empty.  Until the poller has
 * reaped once since the driver last could (must_reap), seen proves nothing.
 * No barrier: virtqueue_get_buf() orders its own reads.
 */
static bool sqcq_peek(struct virtio_sqcq_poller *p)
{
	if (p->must_reap)
		return true;
	return virtio16_to_cpu(p->cq->vdev, READ_ONCE(*p->used_idx)) != p->seen;
}

/*
 * Complete what the ring holds and re-arm its interrupt; lock held, bottom
 * halves disabled (as in sqcq_reap()).
 */
static unsigned int sqcq_drain_locked(struct virtio_sqcq_cq *cq,
				      struct virtio_sqcq_ring *r)
{
	unsigned int n = 0, len;
	void *buf;

	do {
		virtqueue_disable_cb(r->vq);
		while ((buf = virtqueue_get_buf(r->vq, &len))) {
			cq->ops->complete(cq->priv, buf);
			n++;
		}
	} while (!virtqueue_enable_cb(r->vq));
	return n;
}

/* Reap up to SQCQ_REAP_BATCH completions; the interrupt stays suppressed. */
static unsigned int sqcq_reap(struct virtio_sqcq_poller *p)
{
	struct virtio_sqcq_ring *r = p->ring;
	struct virtio_sqcq_cq *cq = p->cq;
	unsigned int n = 0, len;
	unsigned long flags;
	void *buf;

	/*
	 * A completion may raise a softirq (blk-mq completes a single-queue
	 * device's requests in BLOCK_SOFTIRQ): run it here at
	 * local_bh_enable() instead of waking ksoftirqd, which would end
	 * the spin at once.
	 */
	local_bh_disable();
	spin_lock_irqsave(r->lock, flags);
	p->seen = virtio16_to_cpu(cq->vdev, READ_ONCE(*p->used_idx));
	while (n < SQCQ_REAP_BATCH && (buf = virtqueue_get_buf(r->vq, &len))) {
		cq->ops->complete(cq->priv, buf);
		n++;
	}
	spin_unlock_irqrestore(r->lock, flags);
	local_bh_enable();
	/* A full batch may have stopped short of seen. */
	p->must_reap = n == SQCQ_REAP_BATCH;
	WRITE_ONCE(p->polls, p->polls + 1);
	if (n)
		WRITE_ONCE(r->reaped, r->reaped + n);
	return n;
}

/* The poller's total wait on a run queue (KVM's steal time reads it too). */
static u64 sqcq_run_delay(void)
{
#ifdef CONFIG_SCHED_INFO
	return READ_ONCE(current->sched_info.run_delay);
#else
	return 0;
#endif
}

/*
 * What a sleep cost: from the interrupt that woke the poller to the poller
 * taking the ring, less the time it waited on the run queue behind other
 * tasks (SCHED_IDLE: the submitter this interrupt completed, usually),
 * which is work a spin would have waited for too.  What is left is the
 * wakeup itself (the driver's inline reap before it when both share a
 * CPU), the guest's side of the host's kick-to-service cost.  At most the
 * longest spin window: a ceiling beyond it would only distort the policy.
 * Ring lock held, the state just changed to SQCQ_SPINNING: the policy is
 * the poller's from here.
 */
static void sqcq_learn_cost(struct virtio_sqcq_poller *p)
{
	u64 now, cost, queued;

	if (!p->woken_at)
		return;
	now = ktime_get_mono_fast_ns();
	queued = sqcq_run_delay() - p->run_delay;
	if ((s64)(now - p->woken_at) > 0) {
		cost = now - p->woken_at;
		cost = cost > queued ? cost - queued : 0;
		sqcq_policy_cost(&p->policy, &p->params,
				 min_t(u64, cost, p->idle_timeout_ns));
		p->cost_at = now;
	}
	p->woken_at = 0;
}

/* Take the ring from its interrupt: called with preemption disabled. */
static void sqcq_suppress(struct virtio_sqcq_poller *p)
{
	struct virtio_sqcq_ring *r = p->ring;
	unsigned long flags;

	spin_lock_irqsave(r->lock, flags);
	WRITE_ONCE(p->state, SQCQ_SPINNING);
	/* Spinning now answers any wakeup still pending. */
	clear_bit(SQCQ_WAKE_PENDING, &p->flags);
	virtqueue_disable_cb(r->vq);
	sqcq_learn_cost(p);
	spin_unlock_irqrestore(r->lock, flags);
	/* The driver may have reaped since the last peek. */
	p->must_reap = true;
}

/*
 * NEED_WAKEUP.  virtqueue_enable_cb_prepare() re-enables the interrupt
 * (clears VRING_AVAIL_F_NO_INTERRUPT or writes used_event);
 * virtqueue_poll() then issues virtio_mb() and re-reads used->idx.  That
 * barrier pairs with the device's full barrier between its store of
 * used->idx and its load of used_event/flags (vhost_notify()'s smp_mb()):
 * either we see the new completion here, or the device sees the interrupt
 * enabled and sends it.  Return: true if the ring is empty and armed (the
 * poller is SQCQ_ASLEEP from here), false if it must be reaped first.
 */
static bool sqcq_arm(struct virtio_sqcq_poller *p)
{
	struct virtio_sqcq_ring *r = p->ring;
	unsigned long flags;
	unsigned int opaque;
	bool empty;

	spin_lock_irqsave(r->lock, flags);
	opaque = virtqueue_enable_cb_prepare(r->vq);
	empty = !virtqueue_poll(r->vq, opaque);
	if (empty)
		WRITE_ONCE(p->state, SQCQ_ASLEEP);
	else
		virtqueue_disable_cb(r->vq);
	spin_unlock_irqrestore(r->lock, flags);
	p->must_reap = !empty;
	/* Either way the window is over: the next one starts afresh. */
	p->spin_deadline = 0;
	return empty;
}

/*
 * Spin with preemption disabled, reaping.  need_resched() bounds it: any
 * runnable task, the scheduler tick and RCU (a grace period held up asks
 * for a reschedule) end it; so does the spin window running out with no
 * work.  Return: true when the window ran out with the ring empty and
 * armed, false when the CPU is wanted or the thread must stop (the ring is
 * still suppressed).
 */
static bool sqcq_spin(struct virtio_sqcq_poller *p)
{
	u64 start = local_clock(), now;
	bool armed = false;
	unsigned int n;

	for (;;) {
		n = sqcq_peek(p) ? sqcq_reap(p) : 0;
		now = local_clock();
		if (n) {
			if (p->spin_deadline)
				WRITE_ONCE(p->caught, p->caught + 1);
			sqcq_sample(p, now);
			p->empty_since = 0;
			p->spin_deadline = 0;
		}
		/*
		 * SCHED_IDLE: any normal task runnable here preempts us at
		 * once (need_resched()), which is KVM's single-task rule for
		 * everything but another SCHED_IDLE task; testing
		 * single_task_running() too would have two such pollers on
		 * one CPU yield to each other for ever without sleeping.
		 */
		if (kthread_should_stop() || need_resched())
			break;
		if (n)
			continue;
		if (!p->spin_deadline) {
			if (!p->empty_since)
				p->empty_since = now;
			sqcq_read_params(&p->params, &p->idle_timeout_ns);
			p->spin_deadline = now +
				sqcq_policy_window(&p->policy, &p->params,
						   p->idle_timeout_ns);
		}
		if (now >= p->spin_deadline) {
			armed = sqcq_arm(p);
			if (armed)
				break;
			continue;
		}
		WRITE_ONCE(p->empty_polls, p->empty_polls + 1);
		cpu_relax();
	}
	WRITE_ONCE(p->spin_ns, p->spin_ns + (local_clock() - start));
	return armed;
}

/*
 * Give the CPU away: re-arm the interrupt with the ring empty first, so
 * that the driver reaps while the poller is off CPU.  Time off CPU is not
 * a gap between completions, and the spin window starts again.  Ends the
 * preemption-disabled section.
 */
static void sqcq_yield(struct virtio_sqcq_poller *p)
{
	struct virtio_sqcq_ring *r = p->ring;
	unsigned long flags;
	unsigned int n;

	local_bh_disable();
	spin_lock_irqsave(r->lock, flags);
	WRITE_ONCE(p->state, SQCQ_YIELDED);
	n = sqcq_drain_locked(p->cq, r);
	spin_unlock_irqrestore(r->lock, flags);
	local_bh_enable();
	p->empty_since = 0;
	p->spin_deadline = 0;
	if (n)
		WRITE_ONCE(r->reaped, r->reaped + n);
	WRITE_ONCE(p->yields, p->yields + 1);
	preempt_enable();
	cond_resched();
}

/*
 * Back onto the queue's CPUs: when they all went offline the scheduler
 * moved the poller elsewhere and widened its mask; they may be back.
 */
static void sqcq_place(struct virtio_sqcq_poller *p)
{
	if (likely(cpumask_equal(current->cpus_ptr, p->cpus)))
		return;
	if (cpumask_intersects(p->cpus, cpu_online_mask))
		set_cpus_allowed_ptr(current, p->cpus);
}

static void sqcq_sleep(struct virtio_sqcq_poller *p)
{
	/*
	 * An interrupt after the ring was armed sets WAKE_PENDING before
	 * wake_up_process(); kthread_stop() sets its flag before waking too.
	 * set_current_state() orders our state store before those loads:
	 * either we see a flag here, or the wakeup finds us
	 * TASK_INTERRUPTIBLE.
	 */
	set_current_state(TASK_INTERRUPTIBLE);
	if (test_and_clear_bit(SQCQ_WAKE_PENDING, &p->flags) ||
	    kthread_should_stop()) {
		__set_current_state(TASK_RUNNING);
		return;
	}
	WRITE_ONCE(p->sleeps, p->sleeps + 1);
	p->run_delay = sqcq_run_delay();
	schedule();
	clear_bit(SQCQ_WAKE_PENDING, &p->flags);
	WRITE_ONCE(p->wakeups, p->wakeups + 1);
	sqcq_place(p);
}

static int sqcq_thread(void *data)
{
	struct virtio_sqcq_poller *p = data;

	while (!kthread_should_stop()) {
		preempt_disable();
		sqcq_suppress(p);
		if (sqcq_spin(p)) {
			preempt_enable();
			sqcq_sleep(p);
		} else {
			sqcq_yield(p);
		}
	}
	return 0;
}

/*
 * An interrupt while the poller sleeps: the driver reaps it, so the ring is
 * empty from now on.  Learn the gap and wake the poller if spinning for
 * the next completions pays or is worth a probe, or (auto ceiling) for a
 * cost sample when the last is SQCQ_COST_EVERY_NS old.  Ring lock held.
 * Return: true if this interrupt woke the poller.
 */
static bool sqcq_irq_wake(struct virtio_sqcq_poller *p)
{
	u64 now = local_clock();
	bool measured, spins;
	u64 t;

	/*
	 * A probe's gaps are those its windows see, not one that ended
	 * before the poller it woke took the ring (woken_at, cleared then,
	 * under the ring lock as here: sqcq_learn_cost()).
	 */
	if (!p->policy.probe || !p->woken_at)
		sqcq_sample(p, now);
	p->empty_since = now;
	/* (the gap learnt above ran under the parameters of its window) */
	sqcq_read_params(&p->params, &p->idle_timeout_ns);
	measured = p->params.measured;
	t = measured ? ktime_get_mono_fast_ns() : 0;
	/*
	 * At the floor, the next gaps may still come close enough if this
	 * poller spun for them: probe now and then (auto ceiling only).
	 */
	spins = sqcq_policy_spins(&p->policy, &p->params) ||
		(measured && sqcq_policy_probe(&p->policy, &p->params, t));
	/* (signed: a stamp from a CPU whose clock is ahead is recent) */
	if (!spins && (!measured ||
		       (s64)(t - p->cost_at) < (s64)SQCQ_COST_EVERY_NS))
		return false;
	/* Pairs with set_current_state() in sqcq_sleep(). */
	if (test_and_set_bit(SQCQ_WAKE_PENDING, &p->flags))
		return false;
	/* Only a poller that slept has a sleep to measure. */
	if (!wake_up_process(p->task))
		return false;
	if (measured && !p->woken_at)
		p->woken_at = t;
	WRITE_ONCE(p->wakeups_by_irq, p->wakeups_by_irq + 1);
	if (!spins)
		WRITE_ONCE(p->cost_wakeups, p->cost_wakeups + 1);
	return true;
}

/**
 * virtio_sqcq_irq - an interrupt on a polled ring
 * @ring: the ring
 *
 * Called from the driver's virtqueue callback, before it reaps.
 * Return: true if the poller spins on the ring and reaps it (the driver
 * must not), false if the driver should reap as upstream does.
 */
bool virtio_sqcq_irq(struct virtio_sqcq_ring *ring)
{
	struct virtio_sqcq_poller *p;
	unsigned long flags;
	bool taken = false;

	/*
	 * Not polled (the common case without the feature; @ring may not even
	 * be set up): no lock needed.  A poller being started or stopped
	 * concurrently is re-checked under the lock.
	 */
	if (!READ_ONCE(ring->poller))
		return false;
	spin_lock_irqsave(ring->lock, flags);
	p = ring->poller;
	if (!p)
		goto out;
	WRITE_ONCE(ring->irqs, ring->irqs + 1);
	if (p->state == SQCQ_SPINNING) {
		/* It reaps before it re-arms (sqcq_arm(), sqcq_yield()). */
		virtqueue_disable_cb(ring->vq);
		taken = true;
	} else if (p->state == SQCQ_YIELDED || !sqcq_irq_wake(p)) {
		WRITE_ONCE(ring->irqs_inline, ring->irqs_inline + 1);
	}
out:
	spin_unlock_irqrestore(ring->lock, flags);
	return taken;
}
EXPORT_SYMBOL_GPL(virtio_sqcq_irq);

static const char * const sqcq_state_names[] = {
	[SQCQ_ASLEEP] = "asleep",
	[SQCQ_SPINNING] = "spinning",
	[SQCQ_YIELDED] = "yielded",
};

struct sqcq_counts {
	u64 reaped, irqs, irqs_inline, polls, empty_polls;
	u64 sleeps, wakeups, wakeups_by_irq, cost_wakeups, yields, caught, spin_ns;
	u64 probes, probes_paid, gaps, gaps_probed;
};

static void sqcq_counts_add(struct sqcq_counts *c,
			    const struct virtio_sqcq_poller *p)
{
	c->reaped += READ_ONCE(p->ring->reaped);
	c->irqs += READ_ONCE(p->ring->irqs);
	c->irqs_inline += READ_ONCE(p->ring->irqs_inline);
	c->polls += READ_ONCE(p->polls);
	c->empty_polls += READ_ONCE(p->empty_polls);
	c->sleeps += READ_ONCE(p->sleeps);
	c->wakeups += READ_ONCE(p->wakeups);
	c->wakeups_by_irq += READ_ONCE(p->wakeups_by_irq);
	c->cost_wakeups += READ_ONCE(p->cost_wakeups);
	c->yields += READ_ONCE(p->yields);
	c->caught += READ_ONCE(p->caught);
	c->spin_ns += READ_ONCE(p->spin_ns);
	c->probes += READ_ONCE(p->policy.probes);
	c->probes_paid += READ_ONCE(p->policy.probes_paid);
	c->gaps += READ_ONCE(p->policy.gaps);
	c->gaps_probed += READ_ONCE(p->policy.gaps_probed);
}

static void sqcq_counts_show(struct seq_file *m, const struct sqcq_counts *c)
{
	seq_printf(m, "reaped %llu\nirqs %llu\nirqs_inline %llu\n",
		   c->reaped, c->irqs, c->irqs_inline);
	seq_printf(m, "polls %llu\nempty_polls %llu\nsleeps %llu\n",
		   c->polls, c->empty_polls, c->sleeps);
	seq_printf(m, "wakeups %llu\nwakeups_by_irq %llu\ncost_wakeups %llu\n",
		   c->wakeups, c->wakeups_by_irq, c->cost_wakeups);
	seq_printf(m, "yields %llu\ncaught %llu\nspin_ns %llu\nprobes %llu\nprobes_paid %llu\n",
		   c->yields, c->caught, c->spin_ns, c->probes, c->probes_paid);
	seq_printf(m, "gaps %llu\ngaps_probed %llu\n", c->gaps, c->gaps_probed);
}

/*
 * The window @p would open now, under the parameters as they are now (racy
 * while it spins: a moving value).
 */
static u32 sqcq_window_now(struct virtio_sqcq_poller *p)
{
	struct sqcq_policy_params params;
	u32 idle_timeout_ns;
	struct sqcq_policy policy = {
		.ema_ns = READ_ONCE(p->policy.ema_ns),
		.budget_ns = READ_ONCE(p->policy.budget_ns),
		.cost_ns = READ_ONCE(p->policy.cost_ns),
		.probe = READ_ONCE(p->policy.probe),
		.probed_ns = READ_ONCE(p->policy.probed_ns),
	};

	sqcq_read_params(&params, &idle_timeout_ns);
	return sqcq_policy_window(&policy, &params, idle_timeout_ns);
}

/* One poller: where it may run, its state, policy and counters. */
static int sqcq_poller_show(struct seq_file *m, void *v)
{
	struct virtio_sqcq_poller *p = m->private;
	struct sqcq_counts c = {};
	struct sqcq_policy_params params;
	struct sqcq_policy policy;
	enum sqcq_state state;
	unsigned long flags;
	u32 idle_timeout_ns;

	/* (exact while the poller sleeps; while it spins, a moving value) */
	spin_lock_irqsave(p->ring->lock, flags);
	state = p->state;
	policy = p->policy;
	spin_unlock_irqrestore(p->ring->lock, flags);
	sqcq_read_params(&params, &idle_timeout_ns);
	seq_printf(m, "pid %d\nvq %u\ncpus %*pbl\nstate %s\n",
		   task_pid_nr(p->task), p->ring->vq->index,
		   cpumask_pr_args(p->cpus), sqcq_state_names[state]);
	seq_printf(m, "budget_ns %u\nema_ns %llu\ncost_ns %u\nprobed_ns %u\nwindow_ns %u\n",
		   policy.budget_ns, policy.ema_ns, policy.cost_ns, policy.probed_ns,
		   sqcq_policy_window(&policy, &params, idle_timeout_ns));
	seq_printf(m, "slept_ns %u\nslept_dev_ns %u\n", policy.slept_ns,
		   policy.slept_dev_ns);
	seq_printf(m, "probe_mean_ns %u\nprobe_base_ns %u\n",
		   policy.probe_mean_ns, policy.probe_base_ns);
	sqcq_counts_add(&c, p);
	sqcq_counts_show(m, &c);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(sqcq_poller);

/*
 * The device: its totals, a pid line per poller and a vqN line per ring
 * (tests and the benchmark read this file).
 */
static int sqcq_stats_show(struct seq_file *m, void *v)
{
	struct virtio_sqcq_cq *cq = m->private;
	struct sqcq_counts c = {};
	u32 budget = 0, cost = 0, window = 0, probed = 0, b;
	u32 slept = 0, dev = 0, pmean = 0, pbase = 0;
	u64 ema = 0;
	unsigned int i;

	seq_printf(m, "pollers %u\n", cq->npollers);
	for (i = 0; i < cq->npollers; i++) {
		sqcq_counts_add(&c, &cq->pollers[i]);
		/* (racy while it spins: a moving value) */
		b = READ_ONCE(cq->pollers[i].policy.budget_ns);
		if (b >= budget) {
			budget = b;
			ema = READ_ONCE(cq->pollers[i].policy.ema_ns);
			pmean = READ_ONCE(cq->pollers[i].policy.probe_mean_ns);
			pbase = READ_ONCE(cq->pollers[i].policy.probe_base_ns);
		}
		cost = max(cost, READ_ONCE(cq->pollers[i].policy.cost_ns));
		probed = max(probed, READ_ONCE(cq->pollers[i].policy.probed_ns));
		slept = max(slept, READ_ONCE(cq->pollers[i].policy.slept_ns));
		dev = max(dev, READ_ONCE(cq->pollers[i].policy.slept_dev_ns));
		window = max(window, sqcq_window_now(&cq->pollers[i]));
	}
	/*
	 * The largest budget of the device's pollers and its gap EMA; the
	 * largest measured sleep cost, the largest saving a paid probe measured
	 * and the longest window a poller would open now.
	 */
	seq_printf(m, "budget_ns %u\nema_ns %llu\ncost_ns %u\nprobed_ns %u\nwindow_ns %u\n",
		   budget, ema, cost, probed, window);
	/* What the probes compare with: the largest of the pollers'. */
	seq_printf(m, "slept_ns %u\nslept_dev_ns %u\n", slept, dev);
	/* That poller's last probe: its mean gap, and what it was against. */
	seq_printf(m, "probe_mean_ns %u\nprobe_base_ns %u\n", pmean, pbase);
	sqcq_counts_show(m, &c);
	for (i = 0; i < cq->npollers; i++)
		seq_printf(m, "pid %d\n", task_pid_nr(cq->pollers[i].task));
	for (i = 0; i < cq->npollers; i++) {
		struct virtio_sqcq_poller *p = &cq->pollers[i];
		struct virtio_sqcq_ring *r = p->ring;

		seq_printf(m, "vq%u reaped %llu irqs %llu irqs_inline %llu caught %llu\n",
			   r->vq->index, READ_ONCE(r->reaped),
			   READ_ONCE(r->irqs), READ_ONCE(r->irqs_inline),
			   READ_ONCE(p->caught));
		/* Not a counter: readers that sum vq lines skip it. */
		seq_printf(m, "policy vq%u budget_ns %u ema_ns %llu cost_ns %u window_ns %u\n",
			   r->vq->index, READ_ONCE(p->policy.budget_ns),
			   READ_ONCE(p->policy.ema_ns),
			   READ_ONCE(p->policy.cost_ns), sqcq_window_now(p));
	}
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(sqcq_stats);

static void sqcq_debugfs_add(struct virtio_sqcq_cq *cq)
{
	char name[16];
	unsigned int i;

	cq->dbg = debugfs_create_dir(dev_name(&cq->vdev->dev), sqcq_debugfs);
	debugfs_create_file("stats", 0444, cq->dbg, cq, &sqcq_stats_fops);
	for (i = 0; i < cq->npollers; i++) {
		snprintf(name, sizeof(name), "q%u", i);
		debugfs_create_file(name, 0444, cq->dbg, &cq->pollers[i],
				    &sqcq_poller_fops);
	}
}

/*
 * Stop the first @n pollers.  A SCHED_IDLE thread behind a busy task may
 * wait long for its CPU: each is made normal first, so that it runs to its
 * exit at once.
 */
static void sqcq_destroy(struct virtio_sqcq_cq *cq, unsigned int n)
{
	unsigned int i;

	for (i = 0; i < n; i++) {
		sched_set_normal(cq->pollers[i].task, 0);
		kthread_stop(cq->pollers[i].task);
		free_cpumask_var(cq->pollers[i].cpus);
	}
}

/* A poller for the i-th ring, created but not running yet. */
static int sqcq_create(struct virtio_sqcq_cq *cq, unsigned int i)
{
	struct virtio_sqcq_poller *p = &cq->pollers[i];
	struct sched_attr attr = {
		.size = sizeof(attr),
		.sched_policy = SCHED_IDLE,
	};
	int err;

	p->cq = cq;
	p->ring = cq->ops->ring(cq->priv, i);
	p->state = SQCQ_ASLEEP;
	sqcq_read_params(&p->params, &p->idle_timeout_ns);
	sqcq_policy_init(&p->policy, &p->params);
	p->used_idx = &virtqueue_get_vring(p->ring->vq)->used->idx;
	if (!zalloc_cpumask_var(&p->cpus, GFP_KERNEL))
		return -ENOMEM;
	cq->ops->cpus(cq->priv, i, p->cpus);
	/* Not on CPUs isolated from kernel threads, unless the queue has no other. */
	if (cpumask_intersects(p->cpus, housekeeping_cpumask(HK_TYPE_KTHREAD)))
		cpumask_and(p->cpus, p->cpus, housekeeping_cpumask(HK_TYPE_KTHREAD));
	if (cpumask_empty(p->cpus))
		cpumask_copy(p->cpus, cpu_possible_mask);

	/* (virtio-sqcq<device index>/<queue>: fits the 15 characters of comm) */
	p->task = kthread_create(sqcq_thread, p, "virtio-sqcq%d/%u",
				 cq->vdev->index, i);
	if (IS_ERR(p->task)) {
		err = PTR_ERR(p->task);
		goto fail;
	}
	/*
	 * No CPU of the queue online (now): anywhere for the time being;
	 * sqcq_place() moves it back once one is.
	 */
	err = set_cpus_allowed_ptr(p->task, p->cpus);
	if (err == -EINVAL)
		err = set_cpus_allowed_ptr(p->task, cpu_possible_mask);
	if (!err)
		err = sched_setattr_nocheck(p->task, &attr);
	if (err) {
		kthread_stop(p->task);
		goto fail;
	}
	return 0;
fail:
	free_cpumask_var(p->cpus);
	return err;
}

/**
 * virtio_sqcq_start - start polling a device's rings
 * @vdev: the device (VIRTIO_F_SQCQ_POLL negotiated, DRIVER_OK set)
 * @nrings: number of rings, one poller each
 * @ops: driver callbacks
 * @priv: passed to @ops
 *
 * Return: the pollers, or NULL if polling is not negotiated, disabled or
 * could not start (the driver then works interrupt-driven, as upstream).
 */
struct virtio_sqcq_cq *virtio_sqcq_start(struct virtio_device *vdev,
					 unsigned int nrings,
					 const struct virtio_sqcq_cq_ops *ops,
					 void *priv)
{
	struct virtio_sqcq_cq *cq;
	struct virtio_sqcq_ring *r;
	unsigned long flags;
	unsigned int i;
	int err = -ENOMEM;

	if (!nrings || !virtio_has_feature(vdev, VIRTIO_F_SQCQ_POLL) ||
	    !READ_ONCE(sqcq_enable) || !READ_ONCE(sqcq_cq))
		return NULL;
	if (IS_ENABLED(CONFIG_PREEMPT_RT)) {
		dev_info_once(&vdev->dev, "PREEMPT_RT: no CQ pollers, completions use interrupts\n");
		return NULL;
	}
	/* The lock-free peek reads a split ring's used->idx. */
	if (virtio_has_feature(vdev, VIRTIO_F_RING_PACKED)) {
		dev_info_once(&vdev->dev, "packed rings: no CQ pollers, completions use interrupts\n");
		return NULL;
	}
	cq = kzalloc(struct_size(cq, pollers, nrings), GFP_KERNEL);
	if (!cq)
		goto fail;
	cq->npollers = nrings;
	cq->vdev = vdev;
	cq->ops = ops;
	cq->priv = priv;
	for (i = 0; i < nrings; i++) {
		err = sqcq_create(cq, i);
		if (err) {
			sqcq_destroy(cq, i);
			goto fail;
		}
	}
	/* The pollers are set up before the interrupt path can see them. */
	for (i = 0; i < nrings; i++) {
		r = cq->pollers[i].ring;
		spin_lock_irqsave(r->lock, flags);
		WRITE_ONCE(r->poller, &cq->pollers[i]);
		spin_unlock_irqrestore(r->lock, flags);
	}
	sqcq_debugfs_add(cq);
	for (i = 0; i < nrings; i++)
		wake_up_process(cq->pollers[i].task);
	return cq;

fail:
	dev_warn(&vdev->dev, "cannot start the CQ pollers (%d): completions will use interrupts\n",
		 err);
	kfree(cq);
	return NULL;
}
EXPORT_SYMBOL_GPL(virtio_sqcq_start);

/**
 * virtio_sqcq_stop - stop polling and hand the rings back to interrupts
 * @cq: the pollers (NULL is allowed)
 *
 * Completions that arrived meanwhile are reaped here, so none is stranded
 * between a poller's exit and the next interrupt.
 */
void virtio_sqcq_stop(struct virtio_sqcq_cq *cq)
{
	struct virtio_sqcq_ring *r;
	unsigned long flags;
	unsigned int i;

	if (!cq)
		return;
	for (i = 0; i < cq->npollers; i++) {
		r = cq->pollers[i].ring;
		spin_lock_irqsave(r->lock, flags);
		WRITE_ONCE(r->poller, NULL);
		spin_unlock_irqrestore(r->lock, flags);
	}
	/* Waits for readers: none touches a poller after this. */
	debugfs_remove_recursive(cq->dbg);
	sqcq_destroy(cq, cq->npollers);
	for (i = 0; i < cq->npollers; i++) {
		r = cq->pollers[i].ring;
		local_bh_disable();
		spin_lock_irqsave(r->lock, flags);
		sqcq_drain_locked(cq, r);
		spin_unlock_irqrestore(r->lock, flags);
		local_bh_enable();
	}
	kfree(cq);
}
EXPORT_SYMBOL_GPL(virtio_sqcq_stop);

static int __init virtio_sqcq_init(void)
{
	sqcq_debugfs = debugfs_create_dir("virtio-sqcq", NULL);
	debugfs_create_u32("spin_min_us", 0600, sqcq_debugfs, &sqcq_spin_min_us);
	debugfs_create_u32("idle_timeout_us", 0600, sqcq_debugfs,
			   &sqcq_idle_timeout_us);
	return 0;
}

static void __exit virtio_sqcq_exit(void)
{
	debugfs_remove_recursive(sqcq_debugfs);
}

module_init(virtio_sqcq_init);
module_exit(virtio_sqcq_exit);
MODULE_DESCRIPTION("virtio CQ pollers for VIRTIO_F_SQCQ_POLL");
MODULE_LICENSE("GPL");
