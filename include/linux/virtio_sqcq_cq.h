/* SPDX-License-Identifier: GPL-2.0 */
/*
 * virtio CQ pollers (VIRTIO_F_SQCQ_POLL, driver side): a SCHED_IDLE thread
 * per interrupt-driven request queue, on that queue's CPUs, that reaps its
 * used ring while completions keep coming, keeps its interrupt suppressed
 * only while it spins on CPU, and re-arms it (NEED_WAKEUP) before it gives
 * the CPU away or sleeps.  Library in drivers/virtio/virtio_sqcq.c; used
 * by virtio_scsi.
 */
#ifndef _LINUX_VIRTIO_SQCQ_CQ_H
#define _LINUX_VIRTIO_SQCQ_CQ_H

#include <linux/spinlock.h>
#include <linux/types.h>

struct cpumask;
struct virtqueue;
struct virtio_device;
struct virtio_sqcq_cq;
struct virtio_sqcq_poller;

/**
 * struct virtio_sqcq_ring - one used ring reaped by the CQ poller
 * @vq: the virtqueue
 * @lock: the driver's lock serialising @vq (taken with irqsave)
 * @poller: the poller reaping @vq, or NULL; written under @lock
 * @reaped: completions the poller reaped
 * @irqs: interrupts taken while the poller owned @vq
 * @irqs_inline: of those, interrupts whose completions the driver reaped
 *	without waking the poller: it was preempted, or the policy predicted
 *	that spinning would not pay
 */
struct virtio_sqcq_ring {
	struct virtqueue *vq;
	spinlock_t *lock;	/* the driver's, not ours: see @lock above */
	struct virtio_sqcq_poller *poller;
	u64 reaped;
	u64 irqs;
	u64 irqs_inline;
};

/**
 * struct virtio_sqcq_cq_ops - what the poller needs from the driver
 * @ring: the i-th ring to reap
 * @cpus: set in @mask the CPUs whose submissions go to the i-th ring (its
 *	poller runs only there)
 * @complete: complete one buffer from virtqueue_get_buf(); called with the
 *	ring's lock held, as the driver's own interrupt path does
 */
struct virtio_sqcq_cq_ops {
	struct virtio_sqcq_ring *(*ring)(void *priv, unsigned int i);
	void (*cpus)(void *priv, unsigned int i, struct cpumask *mask);
	void (*complete)(void *priv, void *buf);
};

bool virtio_sqcq_validate(struct virtio_device *vdev);
struct virtio_sqcq_cq *virtio_sqcq_start(struct virtio_device *vdev,
					 unsigned int nrings,
					 const struct virtio_sqcq_cq_ops *ops,
					 void *priv);
void virtio_sqcq_stop(struct virtio_sqcq_cq *cq);
bool virtio_sqcq_irq(struct virtio_sqcq_ring *ring);

#endif /* _LINUX_VIRTIO_SQCQ_CQ_H */
