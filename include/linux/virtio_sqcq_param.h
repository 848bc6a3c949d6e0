/* SPDX-License-Identifier: GPL-2.0 */
/*
 * SQ/CQ doorbell polling: range-checked unsigned module parameters, shared by
 * the host poller (vhost_scsi) and the guest poller (virtio_sqcq).  An
 * out-of-range value is refused with a message naming the parameter and
 * its range, at load time and on writes to /sys/module/.../parameters.
 */
#ifndef _LINUX_VIRTIO_SQCQ_PARAM_H
#define _LINUX_VIRTIO_SQCQ_PARAM_H

#include <linux/kernel.h>
#include <linux/moduleparam.h>
#include <linux/printk.h>
#include <linux/sysfs.h>

struct sqcq_uint_param {
	unsigned int val, min, max;
};

static inline int sqcq_param_set(const char *s, const struct kernel_param *kp)
{
	struct sqcq_uint_param *p = kp->arg;
	unsigned int v;

	if (kstrtouint(s, 0, &v) || v < p->min || v > p->max) {
		pr_err("%s=%s is invalid: must be an integer in [%u, %u]\n",
		       kp->name, s, p->min, p->max);
		return -EINVAL;
	}
	WRITE_ONCE(p->val, v);
	return 0;
}

static inline int sqcq_param_get(char *buf, const struct kernel_param *kp)
{
	struct sqcq_uint_param *p = kp->arg;

	return sysfs_emit(buf, "%u\n", READ_ONCE(p->val));
}

static const struct kernel_param_ops sqcq_uint_ops = {
	.set = sqcq_param_set,
	.get = sqcq_param_get,
};

#endif /* _LINUX_VIRTIO_SQCQ_PARAM_H */
