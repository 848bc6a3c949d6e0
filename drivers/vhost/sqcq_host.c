// SPDX-License-Identifier: GPL-2.0
/*
 * vhost SQ poller: services a vhost device's request virtqueues by reading
 * the guest's avail index from guest memory, so the guest need not kick
 * (an MMIO write, i.e. a VM exit) while requests keep coming.
 *
 * One poller per device (not per vq): one thread spinning per guest disk is
 * the most a host can afford, and it keeps the CPU cost independent of the
 * number of queues.  It is a vhost_task of the device owner (QEMU), so it
 * shares the owner's mm and cgroup and shows up as vhost-sqcq-<owner pid>.
 *
 * Life cycle: the device calls vhost_sqcq_sync() from its ioctls (owner
 * context) whenever the endpoint or the features change; the poller runs
 * while VIRTIO_F_SQCQ_POLL is negotiated and the endpoint is set, and is
 * stopped on every other path (clear endpoint, release, feature change).
 *
 * While awake the poller keeps guest notifications disabled.  When its spin
 * budget (include/linux/virtio_sqcq_policy.h) runs out it announces
 * NEED_WAKEUP by re-enabling them, re-checks every ring after a full
 * barrier, and sleeps only if all are still empty.  A kick then wakes it,
 * unless the policy predicts that the next request will come too late for
 * spinning to catch: the kick is then serviced in the kick handler exactly
 * as upstream does, so a device with long gaps (QD1 on a slow backend)
 * behaves as if there were no poller.
 */
#define pr_fmt(fmt) "vhost_scsi sqcq: " fmt

#include <linux/cpumask.h>
#include <linux/debugfs.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/sched.h>
#include <linux/sched/clock.h>
#include <linux/sched/vhost_task.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/tick.h>
#include <linux/virtio_sqcq.h>
#include <linux/virtio_sqcq_param.h>
#include <linux/virtio_sqcq_policy.h>

#include "vhost.h"
#include "sqcq_host.h"

/* --- tunables --------------------------------------------------------- */

static struct sqcq_uint_param sqcq_enable = { 1, 0, 1 };
module_param_cb(sqcq_enable, &sqcq_uint_ops, &sqcq_enable, 0644);
MODULE_PARM_DESC(sqcq_enable,
		 "Offer VIRTIO_F_SQCQ_POLL to guests; 0 behaves as upstream (0-1, default 1)");

static struct sqcq_uint_param sqcq_poller_cpu = { 0, 0, 8192 };
module_param_cb(sqcq_poller_cpu, &sqcq_uint_ops, &sqcq_poller_cpu, 0644);
MODULE_PARM_DESC(sqcq_poller_cpu,
		 "Bind the poller to CPU n-1; 0 does not bind (0-8192, default 0)");

static struct sqcq_uint_param sqcq_steer = { 1, 0, 1 };
module_param_cb(sqcq_steer, &sqcq_uint_ops, &sqcq_steer, 0644);
MODULE_PARM_DESC(sqcq_steer,
		 "Run LIO completions of polled commands on a free CPU (0-1, default 1)");

static struct sqcq_uint_param sqcq_steer_fallback = { SQCQ_STEER_FALLBACK_NONE, 0, 1 };
module_param_cb(sqcq_steer_fallback, &sqcq_uint_ops, &sqcq_steer_fallback, 0644);
MODULE_PARM_DESC(sqcq_steer_fallback,
		 "When no CPU is free: 0 do not steer, 1 use the next online CPU (default 0)");

/* --- the poller --------------------------------------------------------- */

/* CPUs on which a poller is spinning right now (completion steering). */
static struct cpumask sqcq_busy_cpus;
static struct dentry *sqcq_debugfs;
static atomic_t sqcq_seq = ATOMIC_INIT(0);

/* The free-CPU estimate is refreshed at most this often. */
#define SQCQ_FREE_REFRESH_NS	(10 * NSEC_PER_MSEC)
/* A CPU idle at least this share of the last window (percent) is free. */
#define SQCQ_FREE_IDLE_PCT	50

enum { SQCQ_WAKE_PENDING = 0, SQCQ_STOPPING = 1 };

struct vhost_sqcq_poller {
	struct vhost_dev *dev;
	const struct vhost_sqcq_ops *ops;
	struct vhost_task *vtsk;
	unsigned int nvqs;
	struct vhost_virtqueue **vqs;
	u16 *vq_index;		/* index of vqs[i] in the device */

	/* Policy and sleep state, shared with the kick handler. */
	spinlock_t lock;
	struct sqcq_policy policy;
	struct sqcq_policy_params params;
	bool asleep;		/* past the NEED_WAKEUP re-check */
	bool killed;		/* owner got SIGKILL: never wake the task */
	u64 empty_since;	/* local_clock() when the rings ran empty */
	unsigned long flags;	/* SQCQ_WAKE_PENDING, SQCQ_STOPPING */

	/* Poller thread only. */
	u64 spin_deadline;
	u64 t_transition;	/* last busy<->idle transition */
	int busy_cpu;		/* CPU set in sqcq_busy_cpus, or -1 */
	int bind_cpu;
	bool started;
	u32 idle_timeout_ns;
	unsigned int steer, steer_fallback;
	unsigned int steer_cursor;
	u64 free_stamp;
	struct cpumask free;
	u64 *prev_idle_us, *prev_wall_us;

	/* Counters (one writer each; read by debugfs). */
	u64 empty_polls, sleeps, wakeups, wakeups_by_kick, contended;
	u64 busy_ns, idle_ns;
	pid_t owner_pid, pid;

	struct dentry *dbg;
};

static void sqcq_set_busy_cpu(struct vhost_sqcq_poller *p, int cpu)
{
	if (p->busy_cpu == cpu)
		return;
	if (p->busy_cpu >= 0)
		cpumask_clear_cpu(p->busy_cpu, &sqcq_busy_cpus);
	if (cpu >= 0)
		cpumask_set_cpu(cpu, &sqcq_busy_cpus);
	p->busy_cpu = cpu;
}

/*
 * Refresh the set of CPUs that can take completion work: online, idle for
 * most of the last window (so not running a vCPU or the backend flat out)
 * and not running a busy poller.  Called from the poller, rate limited.
 */
static void sqcq_refresh_free(struct vhost_sqcq_poller *p, u64 now)
{
	int cpu;

	if (now - p->free_stamp < SQCQ_FREE_REFRESH_NS)
		return;
	p->free_stamp = now;
	cpumask_clear(&p->free);
	for_each_online_cpu(cpu) {
		u64 wall, idle = get_cpu_idle_time_us(cpu, &wall);
		u64 d_idle, d_wall;

		if (cpumask_test_cpu(cpu, &sqcq_busy_cpus))
			continue;
		if (idle == -1ULL) {	/* no NOHZ idle accounting */
			cpumask_set_cpu(cpu, &p->free);
			continue;
		}
		d_idle = idle - p->prev_idle_us[cpu];
		d_wall = wall - p->prev_wall_us[cpu];
		p->prev_idle_us[cpu] = idle;
		p->prev_wall_us[cpu] = wall;
		if (d_wall && d_idle * 100 >= d_wall * SQCQ_FREE_IDLE_PCT)
			cpumask_set_cpu(cpu, &p->free);
	}
}

/**
 * vhost_sqcq_steer_cpu - CPU for the completion of a command the poller found
 * @sv: the vq the command came from
 *
 * Called from the poller's service callback.  Return: a CPU for
 * se_cmd->cpuid, or -1 to leave LIO's default (the submitting CPU).
 */
int vhost_sqcq_steer_cpu(struct vhost_sqcq_vq *sv)
{
	struct vhost_sqcq_poller *p = sv->poller;

	if (!p || !p->steer)
		return -1;
	sqcq_refresh_free(p, local_clock());
	return sqcq_steer_pick(cpumask_bits(&p->free),
			       cpumask_bits(cpu_online_mask), nr_cpu_ids,
			       raw_smp_processor_id(), &p->steer_cursor,
			       p->steer_fallback);
}

/* Service every ring once; return the number of requests found. */
static int sqcq_service_all(struct vhost_sqcq_poller *p)
{
	unsigned int i;
	int n, total = 0;

	for (i = 0; i < p->nvqs; i++) {
		n = p->ops->service(p->vqs[i]);
		if (n > 0) {
			struct vhost_sqcq_vq *sv = p->ops->vq_state(p->vqs[i]);

			WRITE_ONCE(sv->work, sv->work + n);
			total += n;
		}
	}
	return total;
}

/*
 * NEED_WAKEUP.  Re-enable guest notifications on every ring; each
 * vhost_enable_notify() writes the flag (or avail_event), issues smp_mb()
 * and re-reads avail->idx.  That barrier pairs with the guest's
 * virtio_mb() between its store of avail->idx and its load of the flags in
 * virtqueue_kick_prepare(): either we see the new index here, or the guest
 * sees notifications enabled and kicks.  Return true if a ring is not
 * empty (notifications are then disabled again and polling continues).
 */
static bool sqcq_arm_all(struct vhost_sqcq_poller *p)
{
	struct vhost_virtqueue *vq;
	bool found = false;
	unsigned int i;

	for (i = 0; i < p->nvqs; i++) {
		vq = p->vqs[i];
		mutex_lock(&vq->mutex);
		if (vhost_vq_get_backend(vq) && vhost_enable_notify(p->dev, vq)) {
			vhost_disable_notify(p->dev, vq);
			found = true;
		}
		mutex_unlock(&vq->mutex);
	}
	return found;
}

/* Account a busy->idle or idle->busy transition (the only clock reads). */
static u64 sqcq_transition(struct vhost_sqcq_poller *p, u64 *acc)
{
	u64 now = local_clock();

	WRITE_ONCE(*acc, *acc + (now - p->t_transition));
	p->t_transition = now;
	return now;
}

/*
 * One iteration of the poll loop, called by the vhost_task loop with the
 * task state already TASK_INTERRUPTIBLE; returning false makes it schedule().
 */
static bool vhost_sqcq_fn(void *data)
{
	struct vhost_sqcq_poller *p = data;
	unsigned long flags;
	u64 now;
	int n;

	/*
	 * We touch guest memory and take mutexes: be runnable first.  That
	 * loses a wakeup that comes before our own set_current_state() below:
	 * kicks leave SQCQ_WAKE_PENDING for it, sqcq_destroy() SQCQ_STOPPING.
	 */
	__set_current_state(TASK_RUNNING);

	/* Being stopped: stay runnable until the vhost_task loop sees it. */
	if (unlikely(test_bit(SQCQ_STOPPING, &p->flags))) {
		cond_resched();
		return true;
	}

	if (unlikely(!p->started)) {
		p->started = true;
		p->pid = task_pid_nr(current);
		if (p->bind_cpu >= 0)
			set_cpus_allowed_ptr(current, cpumask_of(p->bind_cpu));
		p->t_transition = local_clock();
	}

	if (p->asleep) {
		spin_lock_irqsave(&p->lock, flags);
		p->asleep = false;
		spin_unlock_irqrestore(&p->lock, flags);
		/* Awake now: the kick that woke us has been delivered. */
		clear_bit(SQCQ_WAKE_PENDING, &p->flags);
		sqcq_transition(p, &p->idle_ns);
		WRITE_ONCE(p->wakeups, p->wakeups + 1);
	}
	sqcq_set_busy_cpu(p, raw_smp_processor_id());

	n = sqcq_service_all(p);
	if (n) {
		now = local_clock();
		spin_lock_irqsave(&p->lock, flags);
		if (p->empty_since) {
			sqcq_policy_sample(&p->policy, &p->params,
					   now - p->empty_since);
			p->empty_since = 0;
		}
		spin_unlock_irqrestore(&p->lock, flags);
		p->spin_deadline = 0;
		cond_resched();
		return true;
	}

	/* Empty.  Start, continue or end the spin window. */
	now = local_clock();
	if (!p->spin_deadline) {
		u32 budget = READ_ONCE(p->policy.budget_ns);

		spin_lock_irqsave(&p->lock, flags);
		if (!p->empty_since)
			p->empty_since = now;
		spin_unlock_irqrestore(&p->lock, flags);
		p->spin_deadline = now + min(budget, p->idle_timeout_ns);
	}
	if (need_resched()) {
		/* Someone else wants this CPU: stop spinning, let them run. */
		spin_lock_irqsave(&p->lock, flags);
		sqcq_policy_contended(&p->policy, &p->params);
		spin_unlock_irqrestore(&p->lock, flags);
		WRITE_ONCE(p->contended, p->contended + 1);
	} else if (now < p->spin_deadline) {
		WRITE_ONCE(p->empty_polls, p->empty_polls + 1);
		cpu_relax();
		return true;
	}

	/* Budget spent: announce NEED_WAKEUP, then re-check. */
	if (sqcq_arm_all(p)) {
		p->spin_deadline = 0;
		return true;
	}
	sqcq_set_busy_cpu(p, -1);
	p->spin_deadline = 0;
	spin_lock_irqsave(&p->lock, flags);
	p->asleep = true;
	spin_unlock_irqrestore(&p->lock, flags);

	/*
	 * A kick that came after the rings were armed has set WAKE_PENDING
	 * before calling vhost_task_wake(), and sqcq_destroy() sets STOPPING
	 * before vhost_task_stop() wakes us.  set_current_state() orders our
	 * state store before the flag loads; wake_up_process() orders the
	 * flag store before its state load: either we see a flag here, or
	 * the wakeup finds us TASK_INTERRUPTIBLE and schedule() returns.
	 */
	set_current_state(TASK_INTERRUPTIBLE);
	if (test_and_clear_bit(SQCQ_WAKE_PENDING, &p->flags) ||
	    test_bit(SQCQ_STOPPING, &p->flags)) {
		__set_current_state(TASK_RUNNING);
		return true;	/* p->asleep: accounted as a wakeup */
	}
	WRITE_ONCE(p->sleeps, p->sleeps + 1);
	sqcq_transition(p, &p->busy_ns);
	return false;
}

static void vhost_sqcq_killed(void *data)
{
	struct vhost_sqcq_poller *p = data;
	unsigned long flags;

	/* The owner is dying: from now on kicks are handled inline. */
	spin_lock_irqsave(&p->lock, flags);
	p->killed = true;
	spin_unlock_irqrestore(&p->lock, flags);
}

/**
 * vhost_sqcq_kick - a guest kick on a polled vq
 * @sv: the vq's poller state
 * @vq: the vq
 *
 * Called from the device's kick handler.  Return: true if the poller took
 * the kick (the caller must not service the vq), false if the caller
 * should service it as upstream does: no poller, the owner is dying, or
 * the poller sleeps and the policy predicts that spinning does not pay.
 */
bool vhost_sqcq_kick(struct vhost_sqcq_vq *sv, struct vhost_virtqueue *vq)
{
	struct vhost_sqcq_poller *p;
	unsigned long flags;
	bool taken = false;

	mutex_lock(&vq->mutex);
	p = sv->poller;
	if (!p)
		goto out;
	WRITE_ONCE(sv->kicks, sv->kicks + 1);
	spin_lock_irqsave(&p->lock, flags);
	if (p->killed) {
		taken = false;
	} else if (p->asleep && !sqcq_policy_spins(&p->policy, &p->params)) {
		u64 now = local_clock();

		if (p->empty_since)
			sqcq_policy_sample(&p->policy, &p->params,
					   now - p->empty_since);
		/* vhost_sqcq_kick_done() stamps the end of the inline service. */
		p->empty_since = 0;
		WRITE_ONCE(sv->inline_kicks, sv->inline_kicks + 1);
	} else {
		set_bit(SQCQ_WAKE_PENDING, &p->flags);
		/* Pairs with set_current_state() in vhost_sqcq_fn(). */
		vhost_task_wake(p->vtsk);
		if (p->asleep)
			WRITE_ONCE(p->wakeups_by_kick, p->wakeups_by_kick + 1);
		taken = true;
	}
	spin_unlock_irqrestore(&p->lock, flags);
out:
	mutex_unlock(&vq->mutex);
	return taken;
}

/**
 * vhost_sqcq_kick_done - the kick handler serviced a polled vq itself
 * @sv: the vq's poller state
 * @vq: the vq
 *
 * Called after the device serviced @vq because vhost_sqcq_kick() returned
 * false.  The ring is empty now: the next kick measures the gap from here.
 */
void vhost_sqcq_kick_done(struct vhost_sqcq_vq *sv, struct vhost_virtqueue *vq)
{
	struct vhost_sqcq_poller *p;
	unsigned long flags;

	mutex_lock(&vq->mutex);
	p = sv->poller;
	if (p) {
		spin_lock_irqsave(&p->lock, flags);
		if (p->asleep && !p->empty_since)
			p->empty_since = local_clock();
		spin_unlock_irqrestore(&p->lock, flags);
	}
	mutex_unlock(&vq->mutex);
}

/* --- debugfs --------------------------------------------------------- */

static int sqcq_stats_show(struct seq_file *m, void *v)
{
	struct vhost_sqcq_poller *p = m->private;
	unsigned int i;

	seq_printf(m, "owner_pid %d\npid %d\nstate %s\nbudget_ns %u\nema_ns %llu\n",
		   p->owner_pid, READ_ONCE(p->pid),
		   READ_ONCE(p->asleep) ? "asleep" : "awake",
		   READ_ONCE(p->policy.budget_ns), READ_ONCE(p->policy.ema_ns));
	seq_printf(m, "empty_polls %llu\nsleeps %llu\nwakeups %llu\nwakeups_by_kick %llu\n",
		   READ_ONCE(p->empty_polls), READ_ONCE(p->sleeps),
		   READ_ONCE(p->wakeups), READ_ONCE(p->wakeups_by_kick));
	seq_printf(m, "contended %llu\nbusy_ns %llu\nidle_ns %llu\n",
		   READ_ONCE(p->contended), READ_ONCE(p->busy_ns),
		   READ_ONCE(p->idle_ns));
	for (i = 0; i < p->nvqs; i++) {
		struct vhost_sqcq_vq *sv = p->ops->vq_state(p->vqs[i]);

		seq_printf(m, "vq%u work %llu kicks %llu inline_kicks %llu\n",
			   p->vq_index[i],
			   READ_ONCE(sv->work), READ_ONCE(sv->kicks),
			   READ_ONCE(sv->inline_kicks));
	}
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(sqcq_stats);

/* --- start / stop ------------------------------------------------------ */

static void sqcq_free(struct vhost_sqcq_poller *p)
{
	kfree(p->prev_idle_us);
	kfree(p->prev_wall_us);
	kfree(p->vq_index);
	kfree(p->vqs);
	kfree(p);
}

static struct vhost_sqcq_poller *
sqcq_create(struct vhost_dev *dev, unsigned int first_vq,
	    const struct vhost_sqcq_ops *ops)
{
	struct vhost_sqcq_poller *p;
	char name[TASK_COMM_LEN];
	unsigned int i, bind;
	int seq;

	p = kzalloc(sizeof(*p), GFP_KERNEL);
	if (!p)
		return ERR_PTR(-ENOMEM);
	p->dev = dev;
	p->ops = ops;
	spin_lock_init(&p->lock);
	p->busy_cpu = -1;
	if (!sqcq_read_params(&p->params)) {
		pr_err("sqcq_spin_min_us=%u exceeds sqcq_spin_max_us=%u: not polling\n",
		       sqcq_spin_min_us.val, sqcq_spin_max_us.val);
		kfree(p);
		return ERR_PTR(-EINVAL);
	}
	sqcq_policy_init(&p->policy, &p->params);
	p->idle_timeout_ns = READ_ONCE(sqcq_idle_timeout_us.val) * NSEC_PER_USEC;
	p->steer = READ_ONCE(sqcq_steer.val);
	p->steer_fallback = READ_ONCE(sqcq_steer_fallback.val);
	bind = READ_ONCE(sqcq_poller_cpu.val);
	p->bind_cpu = bind && bind - 1 < nr_cpu_ids && cpu_online(bind - 1) ?
		      (int)bind - 1 : -1;
	if (bind && p->bind_cpu < 0)
		pr_warn("sqcq_poller_cpu=%u names no online CPU: not binding\n", bind);

	p->vqs = kcalloc(dev->nvqs, sizeof(*p->vqs), GFP_KERNEL);
	p->vq_index = kcalloc(dev->nvqs, sizeof(*p->vq_index), GFP_KERNEL);
	p->prev_idle_us = kcalloc(nr_cpu_ids, sizeof(u64), GFP_KERNEL);
	p->prev_wall_us = kcalloc(nr_cpu_ids, sizeof(u64), GFP_KERNEL);
	if (!p->vqs || !p->vq_index || !p->prev_idle_us || !p->prev_wall_us) {
		sqcq_free(p);
		return ERR_PTR(-ENOMEM);
	}
	/* Only rings the guest has set up (QEMU sets num_queues of them). */
	for (i = first_vq; i < dev->nvqs; i++) {
		if (!vhost_vq_is_setup(dev->vqs[i]))
			continue;
		p->vq_index[p->nvqs] = i;
		p->vqs[p->nvqs++] = dev->vqs[i];
	}

	/* The process (QEMU), not the vCPU thread that happened to ask. */
	p->owner_pid = task_tgid_nr(current);
	snprintf(name, sizeof(name), "vhost-sqcq-%d", p->owner_pid);
	p->vtsk = vhost_task_create(vhost_sqcq_fn, vhost_sqcq_killed, p, name);
	if (IS_ERR(p->vtsk)) {
		int err = PTR_ERR(p->vtsk);

		sqcq_free(p);
		return ERR_PTR(err);
	}
	seq = atomic_inc_return(&sqcq_seq);
	snprintf(name, sizeof(name), "%d-%d", p->owner_pid, seq);
	p->dbg = debugfs_create_dir(name, sqcq_debugfs);
	debugfs_create_file("stats", 0444, p->dbg, p, &sqcq_stats_fops);
	return p;
}

static void sqcq_destroy(struct vhost_sqcq_poller *p)
{
	struct vhost_virtqueue *vq;
	unsigned int i;

	/* No kick handler can reach the poller after this. */
	for (i = 0; i < p->nvqs; i++) {
		vq = p->vqs[i];
		mutex_lock(&vq->mutex);
		p->ops->vq_state(vq)->poller = NULL;
		mutex_unlock(&vq->mutex);
	}
	/*
	 * Waits for the thread to leave vhost_sqcq_fn() and exit.  The flag
	 * first: vhost_task_stop()'s wakeup is lost if it lands while
	 * vhost_sqcq_fn() runs (see there), and the flag keeps it from going
	 * to sleep again; pairs with set_current_state() in vhost_sqcq_fn().
	 */
	set_bit(SQCQ_STOPPING, &p->flags);
	vhost_task_stop(p->vtsk);
	sqcq_set_busy_cpu(p, -1);
	debugfs_remove_recursive(p->dbg);

	/*
	 * The rings may have notifications disabled.  Hand them back to the
	 * kick-driven path: re-enable, and queue the handler for anything
	 * that slipped in (the same re-check as NEED_WAKEUP).
	 */
	for (i = 0; i < p->nvqs; i++) {
		vq = p->vqs[i];
		mutex_lock(&vq->mutex);
		if (vhost_vq_get_backend(vq) && vhost_enable_notify(p->dev, vq))
			vhost_poll_queue(&vq->poll);
		mutex_unlock(&vq->mutex);
	}
	sqcq_free(p);
}

/**
 * vhost_sqcq_sync - start or stop a device's poller
 * @dev: the device; its mutex is held by the caller
 * @first_vq: index of the first request virtqueue
 * @want: whether the device should be polled now (feature negotiated,
 *	endpoint set)
 * @ops: device callbacks
 * @pp: the device's poller pointer
 *
 * Must be called from the owner's context (an ioctl) when starting.
 * Return: 0, or a negative errno if a wanted poller could not start (the
 * device then works as upstream).
 */
int vhost_sqcq_sync(struct vhost_dev *dev, unsigned int first_vq, bool want,
		    const struct vhost_sqcq_ops *ops,
		    struct vhost_sqcq_poller **pp)
{
	struct vhost_sqcq_poller *p = *pp;
	unsigned int i;

	if (!want || !READ_ONCE(sqcq_enable.val)) {
		if (p) {
			*pp = NULL;
			sqcq_destroy(p);
		}
		return 0;
	}
	if (p)
		return 0;
	/*
	 * The poller runs on the caller's mm: only the owner may start it
	 * (vhost-scsi's SET_FEATURES and SET_ENDPOINT do not check).
	 */
	if (vhost_dev_check_owner(dev)) {
		pr_warn_ratelimited("not starting the SQ poller for a task that does not own the device\n");
		return -EPERM;
	}
	p = sqcq_create(dev, first_vq, ops);
	if (IS_ERR(p)) {
		pr_warn_ratelimited("cannot start the SQ poller (%ld): guest kicks will be used\n",
				    PTR_ERR(p));
		return PTR_ERR(p);
	}
	for (i = 0; i < p->nvqs; i++) {
		mutex_lock(&p->vqs[i]->mutex);
		ops->vq_state(p->vqs[i])->poller = p;
		mutex_unlock(&p->vqs[i]->mutex);
	}
	*pp = p;
	vhost_task_start(p->vtsk);
	return 0;
}

/**
 * vhost_sqcq_features - feature bits the poller adds to the device's offer
 *
 * Return: VIRTIO_F_SQCQ_POLL unless disabled by sqcq_enable=0.
 */
u64 vhost_sqcq_features(void)
{
	return READ_ONCE(sqcq_enable.val) ? BIT_ULL(VIRTIO_F_SQCQ_POLL) : 0;
}

int vhost_sqcq_init(void)
{
	struct sqcq_policy_params c;

	if (!sqcq_read_params(&c)) {
		pr_err("sqcq_spin_min_us=%u exceeds sqcq_spin_max_us=%u\n",
		       sqcq_spin_min_us.val, sqcq_spin_max_us.val);
		return -EINVAL;
	}
	sqcq_debugfs = debugfs_create_dir("vhost-sqcq", NULL);
	return 0;
}

void vhost_sqcq_exit(void)
{
	debugfs_remove_recursive(sqcq_debugfs);
}
