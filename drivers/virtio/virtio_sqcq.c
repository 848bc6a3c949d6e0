// SPDX-License-Identifier: GPL-2.0
/*
 * virtio CQ poller: reaps a device's used rings by reading the used index
 * from memory, so the device need not interrupt (an injected interrupt, its
 * EOI and the halt/wakeup around it are most of a virtualised I/O's exits)
 * while completions keep coming.
 *
 * One kernel thread per device (virtio-sqcq-<dev>), not per queue: a guest
 * with as many queues as vCPUs cannot afford a spinning thread on each.
 * It is not bound to a CPU; the scheduler places it, and it gives way as
 * soon as another task wants its CPU (need_resched ends the spin).
 *
 * While awake the poller keeps the rings' interrupts disabled.  When its
 * spin budget (include/linux/virtio_sqcq_policy.h, shared with the host)
 * runs out it announces NEED_WAKEUP by re-enabling them
 * (virtqueue_enable_cb_prepare()), re-checks each ring after a full barrier
 * (virtqueue_poll()) and sleeps only if all are empty.  An interrupt then
 * wakes it, unless the policy predicts that completions come too far apart
 * for spinning to pay: the driver then reaps them in its interrupt handler
 * as it always did.
 */
#define pr_fmt(fmt) "virtio_sqcq: " fmt

#include <linux/debugfs.h>
#include <linux/kthread.h>
#include <linux/module.h>
#include <linux/sched.h>
#include <linux/sched/clock.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/virtio.h>
#include <linux/virtio_config.h>
#include <linux/virtio_sqcq.h>
#include <linux/virtio_sqcq_cq.h>
#include <linux/virtio_sqcq_policy.h>

static bool sqcq_enable = true;
module_param(sqcq_enable, bool, 0644);
MODULE_PARM_DESC(sqcq_enable,
		 "Accept VIRTIO_F_SQCQ_POLL from devices; N behaves as upstream (default Y)");

static bool sqcq_cq = true;
module_param(sqcq_cq, bool, 0644);
MODULE_PARM_DESC(sqcq_cq,
		 "Run the CQ poller; N negotiates the feature but takes completions by interrupt, to measure the host poller alone (default Y)");

static unsigned int sqcq_spin_max_us = 200;

static int sqcq_spin_max_set(const char *val, const struct kernel_param *kp)
{
	return param_set_uint_minmax(val, kp, 0, SQCQ_SPIN_MAX_US_LIMIT);
}

static const struct kernel_param_ops sqcq_spin_max_ops = {
	.set = sqcq_spin_max_set,
	.get = param_get_uint,
};

module_param_cb(sqcq_spin_max_us, &sqcq_spin_max_ops, &sqcq_spin_max_us, 0644);
MODULE_PARM_DESC(sqcq_spin_max_us,
		 "Spin budget ceiling in us; longer predicted gaps are not spun for (0-1000000, default 200)");

/*
 * Debugfs only, for tests and experiments (virtio-sqcq/spin_min_us,
 * virtio-sqcq/idle_timeout_us), read when a poller starts: a budget floor,
 * and the longest spin window without work.
 */
static u32 sqcq_spin_min_us;
static u32 sqcq_idle_timeout_us = SQCQ_IDLE_TIMEOUT_NS / NSEC_PER_USEC;

enum { SQCQ_WAKE_PENDING = 0 };

struct virtio_sqcq_cq {
	struct virtio_device *vdev;
	const struct virtio_sqcq_cq_ops *ops;
	void *priv;
	struct task_struct *task;
	unsigned int nrings;
	struct virtio_sqcq_ring **rings;

	/* Policy and sleep state, shared with the interrupt path. */
	spinlock_t lock;
	struct sqcq_policy policy;
	struct sqcq_policy_params params;
	bool asleep;
	u64 empty_since;
	unsigned long flags;		/* SQCQ_WAKE_PENDING */

	/* Poller thread only. */
	u64 spin_deadline;
	u64 t_transition;
	u32 idle_timeout_ns;

	/* Counters (one writer each). */
	u64 empty_polls, sleeps, wakeups, wakeups_by_irq, contended;
	u64 busy_ns, idle_ns;

	struct dentry *dbg;
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

/* Reap one ring; return the number of completions. */
static int sqcq_reap(struct virtio_sqcq_cq *cq, struct virtio_sqcq_ring *r)
{
	unsigned long flags;
	unsigned int len;
	void *buf;
	int n = 0;

	spin_lock_irqsave(r->lock, flags);
	virtqueue_disable_cb(r->vq);
	while ((buf = virtqueue_get_buf(r->vq, &len))) {
		cq->ops->complete(cq->priv, buf);
		n++;
	}
	spin_unlock_irqrestore(r->lock, flags);
	if (n)
		WRITE_ONCE(r->reaped, r->reaped + n);
	return n;
}

/*
 * NEED_WAKEUP.  virtqueue_enable_cb_prepare() re-enables the interrupt
 * (clears VRING_AVAIL_F_NO_INTERRUPT or writes used_event);
 * virtqueue_poll() then issues virtio_mb() and re-reads used->idx.  That
 * barrier pairs with the device's full barrier between its store of
 * used->idx and its load of used_event/flags (vhost_notify()'s smp_mb()):
 * either we see the new completion here, or the device sees the interrupt
 * enabled and sends it.  Return true if a ring is not empty.
 */
static bool sqcq_arm_all(struct virtio_sqcq_cq *cq)
{
	struct virtio_sqcq_ring *r;
	unsigned long flags;
	bool found = false;
	unsigned int i, opaque;

	for (i = 0; i < cq->nrings; i++) {
		r = cq->rings[i];
		spin_lock_irqsave(r->lock, flags);
		opaque = virtqueue_enable_cb_prepare(r->vq);
		if (virtqueue_poll(r->vq, opaque)) {
			virtqueue_disable_cb(r->vq);
			found = true;
		}
		spin_unlock_irqrestore(r->lock, flags);
	}
	return found;
}

static void sqcq_transition(struct virtio_sqcq_cq *cq, u64 *acc)
{
	u64 now = local_clock();

	WRITE_ONCE(*acc, *acc + (now - cq->t_transition));
	cq->t_transition = now;
}

static int sqcq_thread(void *data)
{
	struct virtio_sqcq_cq *cq = data;
	unsigned long flags;
	unsigned int i;
	u64 now;
	int n;

	cq->t_transition = local_clock();
	while (!kthread_should_stop()) {
		if (cq->asleep) {
			spin_lock_irqsave(&cq->lock, flags);
			cq->asleep = false;
			spin_unlock_irqrestore(&cq->lock, flags);
			clear_bit(SQCQ_WAKE_PENDING, &cq->flags);
			sqcq_transition(cq, &cq->idle_ns);
			WRITE_ONCE(cq->wakeups, cq->wakeups + 1);
		}

		for (n = 0, i = 0; i < cq->nrings; i++)
			n += sqcq_reap(cq, cq->rings[i]);
		if (n) {
			now = local_clock();
			spin_lock_irqsave(&cq->lock, flags);
			if (cq->empty_since) {
				sqcq_policy_sample(&cq->policy, &cq->params,
						   now - cq->empty_since);
				cq->empty_since = 0;
			}
			spin_unlock_irqrestore(&cq->lock, flags);
			cq->spin_deadline = 0;
			cond_resched();
			continue;
		}

		now = local_clock();
		if (!cq->spin_deadline) {
			u32 budget = READ_ONCE(cq->policy.budget_ns);

			spin_lock_irqsave(&cq->lock, flags);
			if (!cq->empty_since)
				cq->empty_since = now;
			spin_unlock_irqrestore(&cq->lock, flags);
			cq->spin_deadline = now + min(budget, cq->idle_timeout_ns);
		}
		if (need_resched()) {
			/* Another task (fio, a vCPU's only other job) wants the CPU. */
			spin_lock_irqsave(&cq->lock, flags);
			sqcq_policy_contended(&cq->policy, &cq->params);
			spin_unlock_irqrestore(&cq->lock, flags);
			WRITE_ONCE(cq->contended, cq->contended + 1);
		} else if (now < cq->spin_deadline) {
			WRITE_ONCE(cq->empty_polls, cq->empty_polls + 1);
			cpu_relax();
			continue;
		}

		if (sqcq_arm_all(cq)) {
			cq->spin_deadline = 0;
			continue;
		}
		cq->spin_deadline = 0;
		spin_lock_irqsave(&cq->lock, flags);
		cq->asleep = true;
		spin_unlock_irqrestore(&cq->lock, flags);

		/*
		 * An interrupt after the rings were armed sets WAKE_PENDING
		 * before wake_up_process(); kthread_stop() sets its flag
		 * before waking too.  set_current_state() orders our state
		 * store before those loads: either we see a flag here, or
		 * the wakeup finds us TASK_INTERRUPTIBLE.
		 */
		set_current_state(TASK_INTERRUPTIBLE);
		if (test_and_clear_bit(SQCQ_WAKE_PENDING, &cq->flags) ||
		    kthread_should_stop()) {
			__set_current_state(TASK_RUNNING);
			continue;
		}
		WRITE_ONCE(cq->sleeps, cq->sleeps + 1);
		sqcq_transition(cq, &cq->busy_ns);
		schedule();
	}
	return 0;
}

/**
 * virtio_sqcq_irq - an interrupt on a polled ring
 * @ring: the ring
 *
 * Called from the driver's virtqueue callback.  Return: true if the poller
 * took it (the driver must not reap), false if the driver should reap as
 * upstream does: no poller, or it sleeps and the policy predicts that
 * spinning would not pay.
 */
bool virtio_sqcq_irq(struct virtio_sqcq_ring *ring)
{
	struct virtio_sqcq_cq *cq;
	unsigned long flags, f2;
	bool taken = false;

	/*
	 * Not polled (the common case without the feature; @ring may not even
	 * be set up): no lock needed.  A poller being started or stopped
	 * concurrently is re-checked under the lock.
	 */
	if (!READ_ONCE(ring->poller))
		return false;
	spin_lock_irqsave(ring->lock, flags);
	cq = ring->poller;
	if (!cq)
		goto out;
	WRITE_ONCE(ring->irqs, ring->irqs + 1);
	spin_lock_irqsave(&cq->lock, f2);
	if (cq->asleep && !sqcq_policy_spins(&cq->policy, &cq->params)) {
		u64 now = local_clock();

		if (cq->empty_since)
			sqcq_policy_sample(&cq->policy, &cq->params,
					   now - cq->empty_since);
		/* The driver reaps now, quickly: the ring is empty from here. */
		cq->empty_since = now;
		WRITE_ONCE(ring->irqs_inline, ring->irqs_inline + 1);
	} else {
		virtqueue_disable_cb(ring->vq);
		set_bit(SQCQ_WAKE_PENDING, &cq->flags);
		/* Pairs with set_current_state() in sqcq_thread(). */
		wake_up_process(cq->task);
		if (cq->asleep)
			WRITE_ONCE(cq->wakeups_by_irq, cq->wakeups_by_irq + 1);
		taken = true;
	}
	spin_unlock_irqrestore(&cq->lock, f2);
out:
	spin_unlock_irqrestore(ring->lock, flags);
	return taken;
}
EXPORT_SYMBOL_GPL(virtio_sqcq_irq);

static int sqcq_stats_show(struct seq_file *m, void *v)
{
	struct virtio_sqcq_cq *cq = m->private;
	unsigned int i;

	seq_printf(m, "pid %d\nstate %s\nbudget_ns %u\nema_ns %llu\n",
		   task_pid_nr(cq->task), READ_ONCE(cq->asleep) ? "asleep" : "awake",
		   READ_ONCE(cq->policy.budget_ns), READ_ONCE(cq->policy.ema_ns));
	seq_printf(m, "empty_polls %llu\nsleeps %llu\nwakeups %llu\nwakeups_by_irq %llu\n",
		   READ_ONCE(cq->empty_polls), READ_ONCE(cq->sleeps),
		   READ_ONCE(cq->wakeups), READ_ONCE(cq->wakeups_by_irq));
	seq_printf(m, "contended %llu\nbusy_ns %llu\nidle_ns %llu\n",
		   READ_ONCE(cq->contended), READ_ONCE(cq->busy_ns),
		   READ_ONCE(cq->idle_ns));
	for (i = 0; i < cq->nrings; i++) {
		struct virtio_sqcq_ring *r = cq->rings[i];

		seq_printf(m, "vq%u reaped %llu irqs %llu irqs_inline %llu\n",
			   r->vq->index, READ_ONCE(r->reaped),
			   READ_ONCE(r->irqs), READ_ONCE(r->irqs_inline));
	}
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(sqcq_stats);

/**
 * virtio_sqcq_start - start polling a device's rings
 * @vdev: the device (VIRTIO_F_SQCQ_POLL negotiated, DRIVER_OK set)
 * @nrings: number of rings
 * @ops: driver callbacks
 * @priv: passed to @ops
 *
 * Return: the poller, or NULL if polling is not negotiated, disabled or
 * could not start (the driver then works interrupt-driven, as upstream).
 */
struct virtio_sqcq_cq *virtio_sqcq_start(struct virtio_device *vdev,
					 unsigned int nrings,
					 const struct virtio_sqcq_cq_ops *ops,
					 void *priv)
{
	struct virtio_sqcq_cq *cq;
	unsigned long flags;
	unsigned int i;

	if (!nrings || !virtio_has_feature(vdev, VIRTIO_F_SQCQ_POLL) ||
	    !READ_ONCE(sqcq_enable) || !READ_ONCE(sqcq_cq))
		return NULL;
	cq = kzalloc(sizeof(*cq), GFP_KERNEL);
	if (!cq)
		goto fail;
	cq->rings = kcalloc(nrings, sizeof(*cq->rings), GFP_KERNEL);
	if (!cq->rings)
		goto fail;
	sqcq_params_set(&cq->params, READ_ONCE(sqcq_spin_min_us),
			READ_ONCE(sqcq_spin_max_us));
	cq->vdev = vdev;
	cq->ops = ops;
	cq->priv = priv;
	cq->nrings = nrings;
	spin_lock_init(&cq->lock);
	sqcq_policy_init(&cq->policy, &cq->params);
	cq->idle_timeout_ns = min(READ_ONCE(sqcq_idle_timeout_us),
				  SQCQ_SPIN_MAX_US_LIMIT) * NSEC_PER_USEC;
	for (i = 0; i < nrings; i++)
		cq->rings[i] = ops->ring(priv, i);

	cq->task = kthread_create(sqcq_thread, cq, "virtio-sqcq-%s", dev_name(&vdev->dev));
	if (IS_ERR(cq->task))
		goto fail;
	cq->dbg = debugfs_create_dir(dev_name(&vdev->dev), sqcq_debugfs);
	debugfs_create_file("stats", 0444, cq->dbg, cq, &sqcq_stats_fops);
	for (i = 0; i < nrings; i++) {
		spin_lock_irqsave(cq->rings[i]->lock, flags);
		WRITE_ONCE(cq->rings[i]->poller, cq);
		spin_unlock_irqrestore(cq->rings[i]->lock, flags);
	}
	wake_up_process(cq->task);
	return cq;

fail:
	dev_warn(&vdev->dev, "cannot start the CQ poller: completions will use interrupts\n");
	if (cq)
		kfree(cq->rings);
	kfree(cq);
	return NULL;
}
EXPORT_SYMBOL_GPL(virtio_sqcq_start);

/**
 * virtio_sqcq_stop - stop polling and hand the rings back to interrupts
 * @cq: the poller (NULL is allowed)
 *
 * Completions that arrived meanwhile are reaped here, so none is stranded
 * between the poller's exit and the next interrupt.
 */
void virtio_sqcq_stop(struct virtio_sqcq_cq *cq)
{
	struct virtio_sqcq_ring *r;
	unsigned long flags;
	unsigned int i;

	if (!cq)
		return;
	for (i = 0; i < cq->nrings; i++) {
		r = cq->rings[i];
		spin_lock_irqsave(r->lock, flags);
		WRITE_ONCE(r->poller, NULL);
		spin_unlock_irqrestore(r->lock, flags);
	}
	kthread_stop(cq->task);
	debugfs_remove_recursive(cq->dbg);
	for (i = 0; i < cq->nrings; i++) {
		void *buf;
		unsigned int len;

		r = cq->rings[i];
		spin_lock_irqsave(r->lock, flags);
		do {
			virtqueue_disable_cb(r->vq);
			while ((buf = virtqueue_get_buf(r->vq, &len)))
				cq->ops->complete(cq->priv, buf);
		} while (!virtqueue_enable_cb(r->vq));
		spin_unlock_irqrestore(r->lock, flags);
	}
	kfree(cq->rings);
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
MODULE_DESCRIPTION("virtio CQ poller for VIRTIO_F_SQCQ_POLL");
MODULE_LICENSE("GPL");
