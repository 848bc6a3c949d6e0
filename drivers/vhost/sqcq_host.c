// SPDX-License-Identifier: GPL-2.0
/*
 * vhost SQ polling: a vhost device's request virtqueues are serviced by
 * reading the guest's avail index from guest memory, so the guest need not
 * kick (an MMIO write, i.e. a VM exit) while requests keep coming.
 *
 * The poll runs in the vq's kick work, on the vq's vhost worker, as
 * vhost-net's busy polling does: no thread of its own.  When
 * VIRTIO_F_SQCQ_POLL is negotiated and the endpoint is set, the kick work
 * services the ring with guest notifications disabled and, when the ring
 * runs empty, keeps them disabled and spins for the adaptive budget
 * (include/linux/virtio_sqcq_policy.h) with a lock-free peek at the
 * guest's avail index, taking vq->mutex only to service.  The spin gives
 * way to other work queued on the same worker (LIO's completion work, a
 * flush, another vq's kick): the kick work requeues itself behind it and
 * resumes, still with notifications disabled, so no kick is needed.  It
 * gives way to another task that wants the CPU (need_resched()) the same
 * way; the window ends if it ran out meanwhile, as contended if that task
 * kept the CPU for more than a turn.  A task that waits beside the spin
 * instead (the scheduler keeps the worker on for its slice) is given the
 * CPU by a nap at the second peek that sees it, judged the same way
 * (sqcq_crowded(): KVM's single-task rule).  It ends on a signal, or when the
 * budget is spent: it then announces NEED_WAKEUP with
 * vhost_enable_notify() and its re-check, and returns; the next kick runs
 * it again.  A policy that predicts that a spin would not catch the next
 * request gives a budget of zero: the kick
 * work then runs upstream's handler, and only learns the gap and the
 * sleep's cost (sqcq_inline()).
 *
 * Placement is the worker's: one worker per device (the default) polls
 * all its vqs in turn, on one CPU at most; with a worker per vq
 * (VHOST_NEW_WORKER, VHOST_ATTACH_VRING_WORKER) each worker polls its own.
 * Workers are created at VHOST_SET_OWNER in the owner's cgroups and can be
 * pinned as any vhost worker.
 *
 * Stopping (feature dropped, endpoint cleared, release) clears the vq's
 * flag under vq->mutex and queues the kick work: the worker hands the vq
 * back to the kick path there, in the owner's mm, so nothing touches guest
 * memory from ioctl or release context and a kick taken just before the
 * stop is serviced.
 */
#define pr_fmt(fmt) "vhost_scsi sqcq: " fmt

#include <linux/atomic.h>
#include <linux/cpumask.h>
#include <linux/debugfs.h>
#include <linux/delay.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/sched.h>
#include <linux/sched/isolation.h>
#include <linux/sched/signal.h>
#include <linux/sched/stat.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/string.h>
#include <linux/sysfs.h>
#include <linux/tick.h>
#include <linux/timekeeping.h>
#include <linux/uaccess.h>
#include <linux/virtio_sqcq.h>
#include <linux/virtio_sqcq_policy.h>

#include "vhost.h"
#include "sqcq_host.h"

/* --- tunables --------------------------------------------------------- */

static bool sqcq_enable = true;
module_param(sqcq_enable, bool, 0644);
MODULE_PARM_DESC(sqcq_enable,
		 "Offer VIRTIO_F_SQCQ_POLL to devices opened from now on; N behaves as upstream (default Y)");

static bool sqcq_steer = true;
module_param(sqcq_steer, bool, 0644);
MODULE_PARM_DESC(sqcq_steer,
		 "Run LIO completions of polled commands on a free CPU while the vq's spin windows have a budget (default Y)");

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
		 "Spin budget ceiling in us: auto (default: what a sleep costs, twice what is measured from each kick to its service, or the 1 ms hard cap while a probe from the floor found that spinning shortens the gaps) or a fixed 0-1000000, which overrides the measurement and the probes");

/*
 * Debugfs only, for tests and experiments (vhost-sqcq/spin_min_us,
 * vhost-sqcq/idle_timeout_us): a budget floor, and the longest spin window
 * without work.
 */
static u32 sqcq_spin_min_us;
static u32 sqcq_idle_timeout_us = SQCQ_IDLE_TIMEOUT_NS / NSEC_PER_USEC;

/* The longest spin window without work, in ns. */
static u32 sqcq_idle_timeout_ns(void)
{
	return min(READ_ONCE(sqcq_idle_timeout_us), SQCQ_SPIN_MAX_US_LIMIT) *
	       NSEC_PER_USEC;
}

static void sqcq_read_params(struct sqcq_policy_params *c)
{
	sqcq_params_set(c, READ_ONCE(sqcq_spin_min_us),
			READ_ONCE(sqcq_spin_max_us));
	sqcq_params_cap(c, sqcq_idle_timeout_ns());
	/* A request that came while we slept waits for our wakeup. */
	c->cost_on_path = true;
}

/* --- completion steering ------------------------------------------------ */

/* The free-CPU estimate is refreshed at most this often. */
#define SQCQ_FREE_REFRESH_NS	(10 * NSEC_PER_MSEC)
/* A CPU idle at least this share of the last window (percent) is free. */
#define SQCQ_FREE_IDLE_PCT	50

/* Number of polls running on each CPU. */
static atomic_t *sqcq_polls_on;

/*
 * CPUs that can take completion work: online, housekeeping for workqueues
 * (not isolated or nohz_full), idle for most of the last window (so not
 * running a vCPU or the backend flat out) and running no poll.  When no
 * CPU is free, completions are not steered.  One estimate for the host,
 * refreshed by whichever poll finds it stale; @free is read without the
 * lock (a word may be a window old).
 */
static struct {
	spinlock_t lock;	/* one refresh at a time; readers take none */
	u64 stamp;
	struct cpumask free, next, allowed;
	u64 *prev_idle_us, *prev_wall_us;
} sqcq_cpus = { .lock = __SPIN_LOCK_UNLOCKED(sqcq_cpus.lock) };

static void sqcq_set_busy_cpu(struct vhost_sqcq_vq *sv, int cpu)
{
	if (sv->busy_cpu == cpu)
		return;
	if (sv->busy_cpu >= 0)
		atomic_dec(&sqcq_polls_on[sv->busy_cpu]);
	if (cpu >= 0)
		atomic_inc(&sqcq_polls_on[cpu]);
	sv->busy_cpu = cpu;
}

static void sqcq_refresh_free(u64 now)
{
	int cpu;

	if (now - READ_ONCE(sqcq_cpus.stamp) < SQCQ_FREE_REFRESH_NS ||
	    !spin_trylock(&sqcq_cpus.lock))
		return;
	WRITE_ONCE(sqcq_cpus.stamp, now);
	cpumask_clear(&sqcq_cpus.next);
	/* Not isolated: isolcpus= (domain) and nohz_full= (workqueues). */
	cpumask_and(&sqcq_cpus.allowed, cpu_online_mask,
		    housekeeping_cpumask(HK_TYPE_WQ));
	cpumask_and(&sqcq_cpus.allowed, &sqcq_cpus.allowed,
		    housekeeping_cpumask(HK_TYPE_DOMAIN));
	for_each_cpu(cpu, &sqcq_cpus.allowed) {
		u64 wall, idle = get_cpu_idle_time_us(cpu, &wall);
		u64 d_idle, d_wall;

		if (atomic_read(&sqcq_polls_on[cpu]))
			continue;
		if (idle == -1ULL) {	/* no NOHZ idle accounting */
			cpumask_set_cpu(cpu, &sqcq_cpus.next);
			continue;
		}
		d_idle = idle - sqcq_cpus.prev_idle_us[cpu];
		d_wall = wall - sqcq_cpus.prev_wall_us[cpu];
		sqcq_cpus.prev_idle_us[cpu] = idle;
		sqcq_cpus.prev_wall_us[cpu] = wall;
		if (d_wall && d_idle * 100 >= d_wall * SQCQ_FREE_IDLE_PCT)
			cpumask_set_cpu(cpu, &sqcq_cpus.next);
	}
	cpumask_copy(&sqcq_cpus.free, &sqcq_cpus.next);
	spin_unlock(&sqcq_cpus.lock);
}

/*
 * Before a service: may its commands be steered?  Only while the vq's spin
 * windows keep the worker's CPU busy (sqcq_policy_steers()).  When the
 * policy gives them no budget, the worker sleeps once the ring is empty,
 * and serves a busy ring no differently from upstream's handler: LIO's
 * completion runs best where it was submitted (no cross-CPU wakeup), as
 * without polling.  Reads the parameters into a copy: sv->params stays
 * those of the window the current gap belongs to.
 */
static bool sqcq_steers_now(const struct vhost_sqcq_vq *sv)
{
	struct sqcq_policy_params c;

	if (!READ_ONCE(sqcq_steer))
		return false;
	sqcq_read_params(&c);
	return sqcq_policy_steers(&sv->policy, &c, sqcq_idle_timeout_ns());
}

/**
 * vhost_sqcq_steer_cpu - CPU for the completion of a command found by a poll
 * @sv: the vq the command came from
 *
 * Context: the vq's polled run (sqcq_poll()), from the device's service
 * with vq->mutex held.  Steers only if the run decided so before the
 * service (sqcq_steers_now()).
 * Return: a CPU for se_cmd->cpuid, or -1 to leave LIO's default (the
 * submitting CPU).
 */
int vhost_sqcq_steer_cpu(struct vhost_sqcq_vq *sv)
{
	int cpu;

	if (!sv->steer)
		return -1;
	sqcq_refresh_free(ktime_get_mono_fast_ns());
	cpu = sqcq_steer_pick(cpumask_bits(&sqcq_cpus.free), nr_cpu_ids,
			      raw_smp_processor_id(), &sv->steer_cursor);
	if (cpu >= 0)
		WRITE_ONCE(sv->steered, sv->steered + 1);
	return cpu;
}

/* --- the poll, in the vq's kick work ------------------------------------- */

/*
 * Has the guest posted requests we have not taken?  A hint, read without
 * vq->mutex: only this vq's worker (us) moves last_avail_idx and
 * avail_idx, and the vq cannot lose its rings while its backend is set;
 * clearing the backend flushes the worker, which ends the spin
 * (sqcq_worker_wanted()) before the rings can go.  A concurrent
 * VHOST_SET_VRING_ADDR (allowed while running, to toggle logging) can make
 * one read stale, never invalid: the answer is acted on under vq->mutex.
 * vhost-scsi has no IOTLB, so avail is a plain user address in our mm.
 */
static bool sqcq_avail_pending(struct vhost_virtqueue *vq)
{
	vring_avail_t __user *avail = READ_ONCE(vq->avail);
	__virtio16 idx;

	/* Ours; READ_ONCE for a run overlapping a worker move. */
	if (READ_ONCE(vq->avail_idx) != READ_ONCE(vq->last_avail_idx))
		return true;
	if (unlikely(get_user(idx, &avail->idx)))
		return true;	/* the service reports the fault */
	return vhost16_to_cpu(vq, idx) != READ_ONCE(vq->last_avail_idx);
}

/*
 * Should the run give the worker back?  Other work on its list, other work
 * of the device in the batch the worker is running (not on the list any
 * more), or the vq moved to another worker (VHOST_ATTACH_VRING_WORKER then
 * flushes the old one: us).
 */
static bool sqcq_worker_wanted(struct vhost_sqcq_dev *sd,
			       struct vhost_sqcq_vq *sv,
			       struct vhost_virtqueue *vq)
{
	return vhost_vq_has_work(vq) || sd->ops->other_work(vq) ||
	       rcu_access_pointer(vq->worker) != sv->worker;
}

/*
 * What a sleep costs: from the guest's kick to its service on the worker
 * (the wakeup of a worker that may be idle on another CPU, its scheduling,
 * work queued before ours).  The kick's time is taken in vhost's own
 * wakeup of the kick eventfd, vhost_poll_wakeup(), wrapped at open
 * (upstream this is one store in that function).  The waker is the
 * eventfd's signaller, on any CPU: hence a global clock.
 */
static wait_queue_func_t sqcq_vhost_poll_wakeup;
static const struct vhost_sqcq_ops *sqcq_kick_ops;

static int sqcq_kick_wakeup(struct wait_queue_entry *wait, unsigned int mode,
			    int sync, void *key)
{
	struct vhost_poll *poll = container_of(wait, struct vhost_poll, wait);

	/*
	 * The first kick after NEED_WAKEUP is the one that wakes the
	 * worker (the run takes the stamp and clears it; arming clears it).
	 */
	if (key_to_poll(key) & poll->mask)
		atomic64_cmpxchg(&sqcq_kick_ops->vq_state(poll->vq)->kick_ns,
				 0, ktime_get_mono_fast_ns());
	return sqcq_vhost_poll_wakeup(wait, mode, sync, key);
}

/* At open, before any kick file is set: time the request vqs' kicks. */
static void sqcq_time_kicks(struct vhost_sqcq_dev *sd)
{
	struct vhost_virtqueue *vq;
	unsigned int i;

	sqcq_kick_ops = sd->ops;
	for (i = sd->first_vq; i < sd->dev->nvqs; i++) {
		vq = sd->dev->vqs[i];
		/* Every vq's is vhost_poll_wakeup(): the same each open. */
		if (!vq->poll.wait.func)
			continue;
		if (!sqcq_vhost_poll_wakeup)
			sqcq_vhost_poll_wakeup = vq->poll.wait.func;
		if (!WARN_ON_ONCE(vq->poll.wait.func != sqcq_vhost_poll_wakeup))
			vq->poll.wait.func = sqcq_kick_wakeup;
	}
}

/* No history: the policy starts again from the current parameters. */
static void sqcq_forget(struct vhost_sqcq_vq *sv)
{
	sqcq_read_params(&sv->params);
	sqcq_policy_init(&sv->policy, &sv->params);
}

/* Account a busy<->asleep transition. */
static void sqcq_transition(struct vhost_sqcq_vq *sv, u64 now, u64 *acc)
{
	if (sv->t_transition)
		WRITE_ONCE(*acc, *acc + (now - sv->t_transition));
	sv->t_transition = now;
}

/* The budget of a spin window starting now (0: do not spin). */
static u64 sqcq_window_budget(struct vhost_sqcq_vq *sv)
{
	sqcq_read_params(&sv->params);
	return sqcq_policy_window(&sv->policy, &sv->params,
				  sqcq_idle_timeout_ns());
}

/*
 * NEED_WAKEUP.  vhost_enable_notify() writes the used flags (or
 * avail_event), issues smp_mb() and re-reads avail->idx.  That barrier
 * pairs with the guest's virtio_mb() between its store of avail->idx and
 * its load of the flags in virtqueue_kick_prepare(): either we see the new
 * index here, or the guest sees notifications enabled and kicks.  With
 * @recheck, return true if a request slipped in (notifications are then
 * disabled again); without, leave them enabled whatever the ring holds
 * (a ring the service refused: wait for the next kick, as upstream).
 */
static bool sqcq_arm(struct vhost_sqcq_vq *sv, struct vhost_virtqueue *vq,
		     bool recheck)
{
	bool found = false;

	mutex_lock(&vq->mutex);
	if (vhost_enable_notify(vq->dev, vq) && recheck &&
	    vhost_vq_get_backend(vq)) {
		vhost_disable_notify(vq->dev, vq);
		found = true;
	} else {
		sv->notify_off = false;
	}
	mutex_unlock(&vq->mutex);
	return found;
}

/* The run ends with notifications enabled: the next run is a kick. */
static void sqcq_sleep(struct vhost_sqcq_vq *sv, bool need_wakeup)
{
	sv->deadline = 0;
	sv->asleep = true;
	sqcq_set_busy_cpu(sv, -1);
	if (need_wakeup && sv->spun)
		WRITE_ONCE(sv->sleeps, sv->sleeps + 1);
	sqcq_transition(sv, ktime_get_mono_fast_ns(), &sv->busy_ns);
}

/*
 * Requests found on a ring that had run empty: learn the gap, only on that
 * empty->work transition.  After a sleep the request came with its kick:
 * the gap ends there, not after the wakeup (which would add the sleep's
 * own cost to every gap, and with the measured ceiling make each one too
 * long to spin for).  Any other gap the poll caught itself, in its window
 * or late, back from a give-way after the window's end: it ends now and
 * shows all the wait (a probe counts it as it is, sqcq_policy_late()).
 */
static void sqcq_work_found(struct vhost_sqcq_vq *sv)
{
	if (sv->empty_since) {
		u64 at = sv->kicked_at;

		if (!at) {
			at = ktime_get_mono_fast_ns();
			sqcq_policy_late(&sv->policy);
		}
		sqcq_policy_sample(&sv->policy, &sv->params,
				   at > sv->empty_since ? at - sv->empty_since : 0);
	}
	sv->empty_since = 0;
	sv->kicked_at = 0;
}

/*
 * A kick when the policy would not spin: service the ring as upstream's
 * kick handler does, in one pass that re-enables notifications at empty
 * and re-checks, and nothing of the poll around it (no second look at the
 * ring, no NEED_WAKEUP of our own, no yield, no steering).  The gap the
 * kick ended and the sleep it cost are learnt all the same, so windows
 * open again when requests come closer.
 */
static void sqcq_inline(struct vhost_sqcq_dev *sd, struct vhost_sqcq_vq *sv,
			struct vhost_virtqueue *vq)
{
	int n;

	WRITE_ONCE(sv->inline_kicks, sv->inline_kicks + 1);
	n = sd->ops->service(vq, false);
	/*
	 * A kick stamped since this run took its own came while the handler
	 * was at work, nearly always before it re-enabled notifications: it
	 * ends no gap, and its wakeup is this run (as the poll clears the
	 * stamp before arming).  One that came in the few instructions after
	 * the handler's re-check loses its stamp: its run learns no cost, and
	 * a gap that ends at its wakeup instead of its kick.
	 */
	atomic64_set(&sv->kick_ns, 0);
	if (n > 0)
		sqcq_work_found(sv);	/* (unless the wakeup learnt it) */
	sv->kicked_at = 0;	/* (a kick that brought nothing ends no gap) */
	if (n >= vq->dev->weight) {
		/*
		 * Past the weight (vhost_exceeds_weight(), the only exit with
		 * n == weight): the handler left notifications disabled with
		 * requests on the ring and queued this work again.  That run
		 * is no wakeup: it polls on, as after a yield.
		 */
		sv->notify_off = true;
		sv->requeued = true;
		return;
	}
	/* The ring is empty, notifications are on: a gap opens (or goes on). */
	if (n > 0 || !sv->empty_since)
		sv->empty_since = ktime_get_mono_fast_ns();
	sqcq_sleep(sv, false);
}

/* Other work is queued on our worker: run it, then resume with no kick. */
static void sqcq_yield(struct vhost_sqcq_vq *sv, struct vhost_virtqueue *vq)
{
	sv->requeued = true;
	WRITE_ONCE(sv->yields, sv->yields + 1);
	vhost_poll_queue(&vq->poll);
}

/*
 * Another task kept the CPU longer than this: it wanted more than a turn.
 * A CPU-bound task keeps it for a slice once it runs (EEVDF's base slice:
 * 0.75 ms x (1 + log2 CPUs), 1.5 ms on this project's 2-CPU host VM);
 * LIO's completion kworker takes tens of microseconds (on that emulated
 * host, the worker's absences took 157-236 us at the median).
 */
#define SQCQ_TURN_NS	(500 * NSEC_PER_USEC)

/*
 * Back on the CPU after @away ns off it (a give-way or a preemption), at
 * @now: did the window run out meanwhile?  Then it is over; and if the
 * other task kept the CPU for more than a turn, the CPU is contended:
 * the budget drops (or, during a probe, the probe's gap counts as slept
 * through: sqcq_policy_contended()).  A window that ran out during a
 * turn, as short windows do, ends as if spent.  (A task that waits beside
 * a window with time left gets naps: sqcq_crowded().)
 */
static bool sqcq_window_lost(struct vhost_sqcq_vq *sv, u64 now, u64 away)
{
	if (now < sv->deadline)
		return false;
	if (away > SQCQ_TURN_NS) {
		sqcq_policy_contended(&sv->policy, &sv->params);
		WRITE_ONCE(sv->contended, sv->contended + 1);
	}
	return true;
}

/*
 * A run after giving way, before anything is serviced.  With requests
 * waiting, the window caught them, late (their gap shows the wait): it
 * is serviced, the budget dropped if the window was contended.
 */
static void sqcq_back(struct vhost_sqcq_vq *sv, struct vhost_virtqueue *vq)
{
	u64 now = ktime_get_mono_fast_ns();

	sv->gave_way = false;
	/*
	 * (Judged with requests waiting too: beside a CPU-bound task they
	 * nearly always are.  Their gap ends at this late catch and shows
	 * their wait: sqcq_work_found().)
	 */
	if (sv->deadline && sqcq_window_lost(sv, now, now - sv->gave_at) &&
	    !sqcq_avail_pending(vq))
		sv->deadline = now;	/* (spent: NEED_WAKEUP next) */
}

/*
 * Another task runnable beside the spin at two peeks: the spin holds it
 * off, and naps.  A task whose wakeup preempts the spin shows in
 * need_resched() first; one the scheduler makes wait is a CPU-bound task,
 * or a short one (LIO's completion kworker, a vCPU thread taking an
 * interrupt) held back while the worker, just picked, runs out its slice
 * (EEVDF's RUN_TO_PARITY: 1.5 ms on a 2-CPU host).  Giving way at
 * need_resched() cannot reach it: none is set, and the worker, still
 * protected, would be picked again.  The nap asks for 10-20 us; beside a
 * CPU-bound task it lasts until the scheduler gives the worker the CPU
 * back, and sqcq_back() judges it as any give-way.
 *
 * No grace: the nap comes at the second peek that sees the task, as
 * KVM's halt polling stops at once.  A 50 us grace kept LIO's
 * completion kworker waiting that long beside a window at QD1, once per
 * request (sqcq-host 0.88x baseline at randread QD1 with it, 1.19x
 * without, in docs/results.md, "No grace before the nap").
 */
#define SQCQ_CROWDED_NAP_US	10

/*
 * KVM's single-task rule (halt polling stops while !single_task_running()):
 * another task waits beside the spin, and an earlier peek saw one too since
 * the wait last started again, or the last nap came since?  Then nap, so
 * that it runs; the window goes on after.  The wait starts again when a
 * peek finds the worker alone, when the spin gave the CPU away at
 * need_resched() or was preempted during a window, and with each run
 * after a kick.
 *
 * Not the end of the window, as in KVM: with DELAY_DEQUEUE a task that
 * slept while not eligible stays counted in the runqueue until a pick
 * removes it, so after a short task's turn single_task_running() stays
 * false until the worker schedules, and KVM's rule ended nearly every
 * window here.  The nap's pick removes such a task.  A short task that
 * waited runs in the nap.  Beside a CPU-bound task the worker, having
 * spun, is not eligible: the nap lasts until the scheduler gives it the
 * CPU back, a slice later, and sqcq_back() judges it as any give-way (a
 * window that ran out meanwhile is contended).
 */
static bool sqcq_crowded(struct vhost_sqcq_vq *sv)
{
	if (single_task_running()) {
		sv->crowded = false;
		return false;
	}
	if (sv->crowded)
		return true;
	sv->crowded = true;
	return false;
}

enum sqcq_spin { SQCQ_FOUND, SQCQ_SPENT, SQCQ_YIELD, SQCQ_NAP };

/* Services (of up to VHOST_SCSI_WEIGHT requests) before a run yields. */
#define SQCQ_BATCHES	16

/*
 * A nap for a task waiting beside the spin: a give-way (sqcq_back()), the
 * kick work requeued first, so that the worker loop runs it again after
 * the nap with no kick.  TASK_IDLE, so that naps are no load.  A task
 * still runnable beside the spin at the next peek gets the next nap.
 */
static void sqcq_nap(struct vhost_sqcq_vq *sv, struct vhost_virtqueue *vq)
{
	sv->gave_way = true;
	sv->gave_at = ktime_get_mono_fast_ns();
	WRITE_ONCE(sv->naps, sv->naps + 1);
	sqcq_yield(sv, vq);
	usleep_idle_range(SQCQ_CROWDED_NAP_US, 2 * SQCQ_CROWDED_NAP_US);
	sv->crowded = true;
}

/* Spin on the empty ring until a request, the deadline, or other work. */
static enum sqcq_spin sqcq_spin(struct vhost_sqcq_dev *sd,
				struct vhost_sqcq_vq *sv,
				struct vhost_virtqueue *vq, u64 now)
{
	unsigned long switches = current->nivcsw, sw;
	u64 prev = now;

	for (;;) {
		bool found = sqcq_avail_pending(vq);

		/*
		 * Preempted since the last look (full or lazy preemption
		 * switches before the check below can give way): as after a
		 * give-way, judged by the time off the CPU, requests waiting
		 * or not.  (A switch counted, so not time the hypervisor took
		 * from this vCPU.)
		 */
		sw = READ_ONCE(current->nivcsw);
		now = ktime_get_mono_fast_ns();
		if (sw != switches) {
			sqcq_window_lost(sv, now, now - prev);
			sv->crowded = false;	/* (the other task ran) */
		} else {	/* (not preempted since the last look) */
			WRITE_ONCE(sv->spin_ns, sv->spin_ns + (now - prev));
		}
		if (found)
			return SQCQ_FOUND;
		if (now >= sv->deadline)
			return SQCQ_SPENT;
		switches = sw;
		prev = now;
		/*
		 * A stop re-reads sv->on at the next run: no barrier here.
		 * (Two vqs spinning on one worker take turns, each run a peek:
		 * a nap due for a task waiting beside them is taken when the
		 * other work has run, sqcq_poll().)
		 */
		if (sqcq_worker_wanted(sd, sv, vq) || !READ_ONCE(sv->on)) {
			sv->nap_due = sqcq_crowded(sv);
			return SQCQ_YIELD;
		}
		/*
		 * Another task wants this CPU: it gets it at once (the worker
		 * loop's cond_resched() after this run), and the window goes
		 * on when the worker is back, unless it ran out meanwhile
		 * (sqcq_back()).  LIO's completion kworker for the request
		 * just serviced takes a turn on this CPU when no other CPU is
		 * free; ending the window there, as
		 * vhost-net's busy poll does, ended every probe on this
		 * project's 2-CPU host VM (docs/results.md, "Probes cut by
		 * contention").  KVM's halt polling stops while
		 * !single_task_running(), which here meets the same kworkers.
		 */
		if (need_resched()) {
			sv->gave_way = true;
			sv->gave_at = now;
			sv->crowded = false;	/* (it gets the CPU) */
			WRITE_ONCE(sv->gave_ways, sv->gave_ways + 1);
			return SQCQ_YIELD;
		}
		/* The owner is going away (SIGKILL): stop, learn nothing. */
		if (signal_pending(current))
			return SQCQ_SPENT;
		/* Another task waits beside the spin: a nap gives it the CPU. */
		if (sqcq_crowded(sv))
			return SQCQ_NAP;
		WRITE_ONCE(sv->empty_polls, sv->empty_polls + 1);
		cpu_relax();
		sqcq_set_busy_cpu(sv, raw_smp_processor_id());
	}
}

/* A polled run of the kick work. */
static void sqcq_poll(struct vhost_sqcq_dev *sd, struct vhost_sqcq_vq *sv,
		      struct vhost_virtqueue *vq)
{
	unsigned int batches = 0;
	u64 now, budget, kick;
	bool woken = sv->asleep, learnt;
	int n;

	if (!sv->requeued) {
		WRITE_ONCE(sv->kicks, sv->kicks + 1);
		sv->crowded = false;
		sv->nap_due = false;
	}
	sv->requeued = false;
	sv->active = true;
	sv->worker_pid = task_pid_nr(current);
	sv->worker = rcu_access_pointer(vq->worker);
	if (!sv->t_transition)
		sv->t_transition = ktime_get_mono_fast_ns();
	if (woken) {
		sv->asleep = false;
		WRITE_ONCE(sv->wakeups, sv->wakeups + 1);
		now = ktime_get_mono_fast_ns();
		/* The kick that woke us (a guest may also wake us without). */
		kick = atomic64_xchg(&sv->kick_ns, 0);
		if (kick && kick <= now) {
			sqcq_policy_cost(&sv->policy, &sv->params,
					 now - kick);
			sv->kicked_at = kick;
		}
		sqcq_transition(sv, now, &sv->idle_ns);
		/*
		 * A kick with requests behind it ended a gap slept through:
		 * learn it now, so that a probe's gaps are all ones its
		 * windows saw.  (Without a stamp, or without requests, the
		 * run learns as before, and offers no probe.)
		 */
		learnt = sv->kicked_at && sqcq_avail_pending(vq);
		if (learnt)
			sqcq_work_found(sv);
		/*
		 * No window: now and then poll anyway, at the hard cap for a
		 * few gaps, in case requests come closer while we spin
		 * (sqcq_policy_probe()).
		 */
		if (!sqcq_window_budget(sv) &&
		    !(learnt &&
		      sqcq_policy_probe(&sv->policy, &sv->params, now))) {
			sqcq_inline(sd, sv, vq);
			return;
		}
	}
	sqcq_set_busy_cpu(sv, raw_smp_processor_id());
	/*
	 * A nap put off behind other work, if the window still waits and a
	 * task still waits beside it (sqcq_crowded(), which also restarts the
	 * wait if it has gone); otherwise sqcq_back() and the loop go on as
	 * after a give-way.
	 */
	if (sv->nap_due) {
		sv->nap_due = false;
		if (sv->deadline &&
		    ktime_get_mono_fast_ns() < sv->deadline &&
		    sqcq_crowded(sv) && !sqcq_avail_pending(vq)) {
			sqcq_nap(sv, vq);
			return;
		}
	}
	if (sv->gave_way)
		sqcq_back(sv, vq);

	for (;;) {
		/* Back from a yield to an empty ring: no need to service. */
		if (sv->deadline && !sqcq_avail_pending(vq)) {
			n = 0;
		} else {
			sv->steer = sqcq_steers_now(sv);
			n = sd->ops->service(vq, true);
			/* It disabled notifications, unless it had no backend. */
			if (n != -ENODEV)
				sv->notify_off = true;
		}
		if (n < 0) {
			/* No backend or a broken ring: wait for a kick. */
			atomic64_set(&sv->kick_ns, 0);
			if (sv->notify_off)
				sqcq_arm(sv, vq, false);
			sqcq_sleep(sv, false);
			return;
		}
		if (n) {
			WRITE_ONCE(sv->work, sv->work + n);
			sqcq_work_found(sv);
			sv->deadline = 0;
			/*
			 * Give the worker loop its turn now and then, for
			 * other work, the scheduler, signals and the freezer
			 * (vhost_task_fn()), and to notice a stop.
			 */
			if (sqcq_worker_wanted(sd, sv, vq) || need_resched() ||
			    signal_pending(current) || !READ_ONCE(sv->on) ||
			    ++batches >= SQCQ_BATCHES) {
				sqcq_yield(sv, vq);
				return;
			}
			continue;
		}

		/* Empty: start or go on with the spin window. */
		now = ktime_get_mono_fast_ns();
		if (!sv->empty_since)
			sv->empty_since = now;
		if (!sv->deadline) {
			/* (a kick that brought nothing ends no gap) */
			sv->kicked_at = 0;
			budget = sqcq_window_budget(sv);
			if (!budget)
				WRITE_ONCE(sv->inline_kicks, sv->inline_kicks + 1);
			sv->deadline = now + budget;
			sv->spun = budget;
		}
		switch (sqcq_spin(sd, sv, vq, now)) {
		case SQCQ_FOUND:
			/* (a window without budget caught nothing) */
			if (sv->spun)
				WRITE_ONCE(sv->caught, sv->caught + 1);
			continue;
		case SQCQ_YIELD:
			sqcq_yield(sv, vq);
			return;
		case SQCQ_NAP:
			sqcq_nap(sv, vq);
			return;
		case SQCQ_SPENT:
			break;
		}

		/* Budget spent: announce NEED_WAKEUP, then re-check. */
		sv->deadline = 0;
		atomic64_set(&sv->kick_ns, 0);
		if (sqcq_arm(sv, vq, true))
			continue;
		sqcq_sleep(sv, true);
		return;
	}
}

/*
 * Polling stopped (vhost_sqcq_sync()).  Forget the history, and if a
 * polled service left guest notifications disabled, give the ring back to
 * the kick path: re-enable them; the device's own handler runs next and
 * services whatever is there, as upstream.
 */
static void sqcq_hand_back(struct vhost_sqcq_vq *sv, struct vhost_virtqueue *vq)
{
	sv->active = false;
	sv->asleep = false;
	sv->requeued = false;
	sv->empty_since = 0;
	sv->kicked_at = 0;
	sv->deadline = 0;
	sv->gave_way = false;
	sv->crowded = false;
	sv->nap_due = false;
	sv->t_transition = 0;
	atomic64_set(&sv->kick_ns, 0);
	sqcq_set_busy_cpu(sv, -1);
	sqcq_forget(sv);
	if (!sv->notify_off)
		return;
	/*
	 * Whatever the backend: clear-endpoint may remove it between here and
	 * the device's handler, which then returns at once.  With a backend
	 * the handler disables them again and re-enables them at empty.
	 */
	mutex_lock(&vq->mutex);
	vhost_enable_notify(vq->dev, vq);
	mutex_unlock(&vq->mutex);
	sv->notify_off = false;
}

/*
 * One run per vq at a time.  Runs are serialised by the worker, except
 * while VHOST_ATTACH_VRING_WORKER moves the vq: a run on the old worker can
 * overlap one queued on the new worker.  Each run counts itself in
 * sv->runs; the first goes ahead, a later one returns, and the run in
 * progress, when it ends, takes the count back to 0 and requeues the work
 * (on the vq's worker of then) if any came meanwhile.  (A count, not a
 * flag: a run that starts just as another ends cannot take back the mark
 * a third left.)  A run that started before the move sees it through
 * vq->worker (sqcq_worker_wanted()) and gives way to the old worker's
 * flush; one dequeued on the old worker after the move sees it only
 * through its deadline (one spin window).
 */
static bool sqcq_enter(struct vhost_sqcq_vq *sv)
{
	/* Fully ordered; pairs with atomic_xchg() in sqcq_leave(). */
	return atomic_inc_return(&sv->runs) == 1;
}

static void sqcq_leave(struct vhost_sqcq_vq *sv, struct vhost_virtqueue *vq)
{
	/*
	 * Fully ordered; pairs with atomic_inc_return() in sqcq_enter():
	 * either that run counted itself first and we requeue for it, or it
	 * sees 0 and goes ahead, after all that this run did.
	 */
	if (atomic_xchg(&sv->runs, 0) > 1)
		vhost_poll_queue(&vq->poll);
}

/**
 * vhost_sqcq_handle_kick - the kick work of a request vq
 * @sd: the device's polling state
 * @sv: the vq's polling state
 * @vq: the vq
 *
 * Called first thing by the device's kick handler, on the vq's worker.
 * Return: true if the vq was polled (the caller must not service it),
 * false if the caller should service it as upstream does.
 */
bool vhost_sqcq_handle_kick(struct vhost_sqcq_dev *sd,
			    struct vhost_sqcq_vq *sv,
			    struct vhost_virtqueue *vq)
{
	bool polled;

	/*
	 * vhost_sqcq_sync() stores sv->on, then queues this work.  Without a
	 * barrier a run may still read the old value if it was dequeued
	 * before that queueing; it re-reads sv->on at every iteration
	 * (sqcq_poll()), so a stop is seen within one service or peek.
	 */
	if (!READ_ONCE(sv->on) && likely(!sv->active))
		return false;
	if (!sqcq_enter(sv))
		return true;
	polled = READ_ONCE(sv->on);
	if (polled)
		sqcq_poll(sd, sv, vq);
	else
		sqcq_hand_back(sv, vq);
	sqcq_leave(sv, vq);
	return polled;
}

/* --- debugfs --------------------------------------------------------- */

/*
 * The window a vq's next spin would open (racy while it runs: a moving
 * value); the parameters as they are now, the vq's own left alone.
 */
static u32 sqcq_window_now(struct vhost_sqcq_vq *sv)
{
	struct sqcq_policy policy = {
		.ema_ns = READ_ONCE(sv->policy.ema_ns),
		.budget_ns = READ_ONCE(sv->policy.budget_ns),
		.cost_ns = READ_ONCE(sv->policy.cost_ns),
		.probe = READ_ONCE(sv->policy.probe),
		.probed_ns = READ_ONCE(sv->policy.probed_ns),
	};
	struct sqcq_policy_params c;

	sqcq_read_params(&c);
	return sqcq_policy_window(&policy, &c, sqcq_idle_timeout_ns());
}

static int sqcq_stats_show(struct seq_file *m, void *v)
{
	struct vhost_sqcq_dev *sd = m->private;
	u64 sum[17] = {}, ema = 0, most = 0, work;
	u32 cost = 0, window = 0, probed = 0, slept = 0, dev = 0;
	u32 pmean = 0, pbase = 0;
	struct vhost_sqcq_vq *sv;
	bool awake = false;
	u32 budget = 0;
	unsigned int i;

	for (i = sd->first_vq; i < sd->dev->nvqs; i++) {
		sv = sd->ops->vq_state(sd->dev->vqs[i]);
		sum[0] += READ_ONCE(sv->empty_polls);
		sum[1] += READ_ONCE(sv->sleeps);
		sum[2] += READ_ONCE(sv->wakeups);
		sum[3] += READ_ONCE(sv->contended);
		sum[4] += READ_ONCE(sv->busy_ns);
		sum[5] += READ_ONCE(sv->idle_ns);
		sum[6] += READ_ONCE(sv->yields);
		sum[7] += READ_ONCE(sv->caught);
		sum[8] += READ_ONCE(sv->steered);
		sum[9] += READ_ONCE(sv->policy.probes);
		sum[10] += READ_ONCE(sv->policy.probes_paid);
		sum[11] += READ_ONCE(sv->policy.probe_contended);
		sum[12] += READ_ONCE(sv->gave_ways);
		sum[13] += READ_ONCE(sv->spin_ns);
		sum[14] += READ_ONCE(sv->naps);
		sum[15] += READ_ONCE(sv->policy.gaps);
		sum[16] += READ_ONCE(sv->policy.gaps_probed);
		awake |= READ_ONCE(sv->active) && !READ_ONCE(sv->asleep);
		work = READ_ONCE(sv->work);
		if (work >= most) {
			most = work;
			budget = READ_ONCE(sv->policy.budget_ns);
			ema = READ_ONCE(sv->policy.ema_ns);
			pmean = READ_ONCE(sv->policy.probe_mean_ns);
			pbase = READ_ONCE(sv->policy.probe_base_ns);
		}
		/* (the largest: a vq never kicked has measured nothing) */
		cost = max(cost, READ_ONCE(sv->policy.cost_ns));
		probed = max(probed, READ_ONCE(sv->policy.probed_ns));
		slept = max(slept, READ_ONCE(sv->policy.slept_ns));
		dev = max(dev, READ_ONCE(sv->policy.slept_dev_ns));
		window = max(window, sqcq_window_now(sv));
	}
	/*
	 * budget_ns is the policy's (of the vq that served the most since
	 * open, with its gap EMA: a vq never used shows its initial state);
	 * probed_ns the largest saving a paid probe measured (0: none; while it
	 * is set, that vq's ceiling is the hard cap), window_ns
	 * the longest spin the vqs would open now.
	 */
	seq_printf(m, "owner_pid %d\nstate %s\nbudget_ns %u\nema_ns %llu\ncost_ns %u\nprobed_ns %u\nwindow_ns %u\n",
		   sd->owner_pid, awake ? "awake" : "asleep", budget, ema, cost,
		   probed, window);
	/* What the probes compare with: the largest of the vqs'. */
	seq_printf(m, "slept_ns %u\nslept_dev_ns %u\n", slept, dev);
	/* The busiest vq's last probe: its mean gap, and what it was against. */
	seq_printf(m, "probe_mean_ns %u\nprobe_base_ns %u\n", pmean, pbase);
	/* Every wakeup is by a kick now; wakeups_by_kick stays for readers. */
	seq_printf(m, "empty_polls %llu\nsleeps %llu\nwakeups %llu\nwakeups_by_kick %llu\n",
		   sum[0], sum[1], sum[2], sum[2]);
	seq_printf(m, "gave_way %llu\nspin_ns %llu\nnaps %llu\n", sum[12],
		   sum[13], sum[14]);
	/* Gaps learnt, and of those at the hard cap (a probe, a paid one). */
	seq_printf(m, "gaps %llu\ngaps_probed %llu\n", sum[15], sum[16]);
	seq_printf(m, "contended %llu\nbusy_ns %llu\nidle_ns %llu\nyields %llu\ncaught %llu\nsteered %llu\nprobes %llu\nprobes_paid %llu\nprobe_contended %llu\n",
		   sum[3], sum[4], sum[5], sum[6], sum[7], sum[8], sum[9], sum[10],
		   sum[11]);
	for (i = sd->first_vq; i < sd->dev->nvqs; i++) {
		if (!vhost_vq_is_setup(sd->dev->vqs[i]))
			continue;
		sv = sd->ops->vq_state(sd->dev->vqs[i]);
		seq_printf(m, "vq%u work %llu kicks %llu inline_kicks %llu yields %llu caught %llu sleeps %llu spin_ns %llu worker %d\n",
			   i, READ_ONCE(sv->work), READ_ONCE(sv->kicks),
			   READ_ONCE(sv->inline_kicks), READ_ONCE(sv->yields),
			   READ_ONCE(sv->caught), READ_ONCE(sv->sleeps),
			   READ_ONCE(sv->spin_ns), READ_ONCE(sv->worker_pid));
		/* Not a counter: readers that sum vq lines skip it. */
		seq_printf(m, "policy vq%u budget_ns %u ema_ns %llu cost_ns %u window_ns %u\n",
			   i, READ_ONCE(sv->policy.budget_ns),
			   READ_ONCE(sv->policy.ema_ns),
			   READ_ONCE(sv->policy.cost_ns), sqcq_window_now(sv));
	}
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(sqcq_stats);

static struct dentry *sqcq_debugfs;
static atomic_t sqcq_seq = ATOMIC_INIT(0);

/* --- start / stop ------------------------------------------------------ */

/**
 * vhost_sqcq_dev_init - set up a device's polling state at open
 * @sd: the state, embedded in the device
 * @dev: the vhost device, after vhost_dev_init()
 * @first_vq: index of the first request virtqueue
 * @ops: device callbacks
 *
 * The offer is fixed here: sqcq_enable decides whether devices opened from
 * now on poll; a device keeps accepting what it offered.
 */
void vhost_sqcq_dev_init(struct vhost_sqcq_dev *sd, struct vhost_dev *dev,
			 unsigned int first_vq, const struct vhost_sqcq_ops *ops)
{
	struct vhost_sqcq_vq *sv;
	unsigned int i;

	sd->dev = dev;
	sd->ops = ops;
	sd->first_vq = first_vq;
	sd->features = READ_ONCE(sqcq_enable) ?
		       BIT_ULL(VIRTIO_F_SQCQ_POLL) : 0;
	for (i = first_vq; i < dev->nvqs; i++) {
		sv = ops->vq_state(dev->vqs[i]);
		sv->busy_cpu = -1;
		atomic_set(&sv->runs, 0);
		sqcq_forget(sv);
	}
	if (sd->features)
		sqcq_time_kicks(sd);
}

/**
 * vhost_sqcq_sync - start or stop polling a device's request vqs
 * @sd: the device's polling state
 * @want: whether the device should be polled now (VIRTIO_F_SQCQ_POLL
 *	negotiated, endpoint set)
 *
 * Called with the device mutex held, from any task: it only flips each
 * vq's flag under vq->mutex and, when stopping, queues the vq's kick work
 * so that its worker hands the ring back (sqcq_hand_back()).  Starting
 * needs nothing queued: the next kick polls.
 */
void vhost_sqcq_sync(struct vhost_sqcq_dev *sd, bool want)
{
	struct vhost_dev *dev = sd->dev;
	struct vhost_virtqueue *vq;
	char name[24];
	unsigned int i;

	lockdep_assert_held(&dev->mutex);
	want = want && sd->features && !sd->closing;
	for (i = sd->first_vq; i < dev->nvqs; i++) {
		vq = dev->vqs[i];
		mutex_lock(&vq->mutex);
		if (READ_ONCE(sd->ops->vq_state(vq)->on) != want) {
			/*
			 * No barrier: a run that misses this store re-reads
			 * sv->on at every spin iteration and service, and the
			 * kick work queued below runs after it.
			 */
			WRITE_ONCE(sd->ops->vq_state(vq)->on, want);
			/* Only a vq with a kick eventfd has kick work to run. */
			if (!want && vq->kick)
				vhost_poll_queue(&vq->poll);
		}
		mutex_unlock(&vq->mutex);
	}
	if (want && !sd->dbg) {
		/* The process (QEMU), not the thread that happened to ask. */
		sd->owner_pid = task_tgid_nr(current);
		snprintf(name, sizeof(name), "%d-%d", sd->owner_pid,
			 atomic_inc_return(&sqcq_seq));
		sd->dbg = debugfs_create_dir(name, sqcq_debugfs);
		debugfs_create_file("stats", 0444, sd->dbg, sd, &sqcq_stats_fops);
	} else if (!want && sd->dbg) {
		debugfs_remove_recursive(sd->dbg);
		sd->dbg = NULL;
	}
}

/**
 * vhost_sqcq_release - the device is being released: stop polling for good
 * @sd: the device's polling state
 *
 * Call first in the release path, before the endpoint is cleared: a
 * clear-endpoint that fails part way then cannot leave a vq polled.
 */
void vhost_sqcq_release(struct vhost_sqcq_dev *sd)
{
	mutex_lock(&sd->dev->mutex);
	sd->closing = true;
	vhost_sqcq_sync(sd, false);
	mutex_unlock(&sd->dev->mutex);
}

/**
 * vhost_sqcq_dev_cleanup - after vhost_dev_cleanup(): no worker runs
 * @sd: the device's polling state
 */
void vhost_sqcq_dev_cleanup(struct vhost_sqcq_dev *sd)
{
	struct vhost_sqcq_vq *sv;
	unsigned int i;

	debugfs_remove_recursive(sd->dbg);
	sd->dbg = NULL;
	for (i = sd->first_vq; i < sd->dev->nvqs; i++) {
		sv = sd->ops->vq_state(sd->dev->vqs[i]);
		/* A poll that never ran again (owner killed) drops its CPU. */
		sqcq_set_busy_cpu(sv, -1);
	}
}

int vhost_sqcq_init(void)
{
	sqcq_polls_on = kcalloc(nr_cpu_ids, sizeof(*sqcq_polls_on), GFP_KERNEL);
	sqcq_cpus.prev_idle_us = kcalloc(nr_cpu_ids, sizeof(u64), GFP_KERNEL);
	sqcq_cpus.prev_wall_us = kcalloc(nr_cpu_ids, sizeof(u64), GFP_KERNEL);
	if (!sqcq_polls_on || !sqcq_cpus.prev_idle_us ||
	    !sqcq_cpus.prev_wall_us) {
		vhost_sqcq_exit();
		return -ENOMEM;
	}
	sqcq_debugfs = debugfs_create_dir("vhost-sqcq", NULL);
	debugfs_create_u32("spin_min_us", 0600, sqcq_debugfs, &sqcq_spin_min_us);
	debugfs_create_u32("idle_timeout_us", 0600, sqcq_debugfs,
			   &sqcq_idle_timeout_us);
	return 0;
}

void vhost_sqcq_exit(void)
{
	debugfs_remove_recursive(sqcq_debugfs);
	sqcq_debugfs = NULL;
	kfree(sqcq_cpus.prev_wall_us);
	kfree(sqcq_cpus.prev_idle_us);
	kfree(sqcq_polls_on);
}
