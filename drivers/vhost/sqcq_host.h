/* SPDX-License-Identifier: GPL-2.0 */
/*
 * vhost SQ poller for VIRTIO_F_SQCQ_POLL: the interface between a vhost
 * device (vhost-scsi) and the poller in sqcq_host.c.
 */
#ifndef _VHOST_SQCQ_HOST_H
#define _VHOST_SQCQ_HOST_H

#include <linux/types.h>

struct vhost_dev;
struct vhost_virtqueue;
struct vhost_sqcq_poller;

/**
 * struct vhost_sqcq_vq - per-virtqueue poller state, embedded by the device
 * @poller: the poller that owns this vq, or NULL; written under vq->mutex
 * @work: requests the poller found on this vq
 * @kicks: guest kicks received while the vq was polled
 * @inline_kicks: of those, kicks serviced in the kick handler because the
 *	policy predicted that spinning would not pay
 */
struct vhost_sqcq_vq {
	struct vhost_sqcq_poller *poller;
	u64 work;
	u64 kicks;
	u64 inline_kicks;
};

/**
 * struct vhost_sqcq_ops - what the poller needs from the device
 * @service: handle the requests on @vq without re-enabling guest
 *	notifications when it runs empty; return the number handled.
 *	Takes vq->mutex itself.
 * @vq_state: the vhost_sqcq_vq embedded with @vq
 */
struct vhost_sqcq_ops {
	int (*service)(struct vhost_virtqueue *vq);
	struct vhost_sqcq_vq *(*vq_state)(struct vhost_virtqueue *vq);
};

u64 vhost_sqcq_features(void);
int vhost_sqcq_sync(struct vhost_dev *dev, unsigned int first_vq, bool want,
		    const struct vhost_sqcq_ops *ops,
		    struct vhost_sqcq_poller **pp);
bool vhost_sqcq_kick(struct vhost_sqcq_vq *sv, struct vhost_virtqueue *vq);
void vhost_sqcq_kick_done(struct vhost_sqcq_vq *sv, struct vhost_virtqueue *vq);
int vhost_sqcq_steer_cpu(struct vhost_sqcq_vq *sv);
int vhost_sqcq_init(void);
void vhost_sqcq_exit(void);

#endif /* _VHOST_SQCQ_HOST_H */
