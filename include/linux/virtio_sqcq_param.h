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
#include <linux/virtio_sqcq_policy.h>

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

/*
 * The spin-policy tunables, the same on both sides.  Include this header
 * from exactly one file per module (sqcq_host.c in vhost_scsi,
 * virtio_sqcq.c in virtio_sqcq): each module gets its own set.
 */
static struct sqcq_uint_param sqcq_spin_min_us = { 0, 0, 1000000 };
module_param_cb(sqcq_spin_min_us, &sqcq_uint_ops, &sqcq_spin_min_us, 0644);
MODULE_PARM_DESC(sqcq_spin_min_us,
		 "Spin budget floor in us (0-1000000, default 0)");

static struct sqcq_uint_param sqcq_spin_max_us = { 200, 0, 1000000 };
module_param_cb(sqcq_spin_max_us, &sqcq_uint_ops, &sqcq_spin_max_us, 0644);
MODULE_PARM_DESC(sqcq_spin_max_us,
		 "Spin budget ceiling in us; longer predicted gaps are not spun for (0-1000000, default 200)");

static struct sqcq_uint_param sqcq_ema_shift = { 3, 0, SQCQ_WEIGHT_SHIFT_MAX };
module_param_cb(sqcq_ema_shift, &sqcq_uint_ops, &sqcq_ema_shift, 0644);
MODULE_PARM_DESC(sqcq_ema_shift,
		 "The newest gap sample weighs 1/2^shift in the EMA (0-8, default 3)");

static struct sqcq_uint_param sqcq_spin_mult = { 2, 1, SQCQ_MULT_MAX };
module_param_cb(sqcq_spin_mult, &sqcq_uint_ops, &sqcq_spin_mult, 0644);
MODULE_PARM_DESC(sqcq_spin_mult,
		 "Spin budget = mult x EMA of the gap (1-16, default 2)");

static struct sqcq_uint_param sqcq_idle_timeout_us = { 1000, 1, 1000000 };
module_param_cb(sqcq_idle_timeout_us, &sqcq_uint_ops, &sqcq_idle_timeout_us, 0644);
MODULE_PARM_DESC(sqcq_idle_timeout_us,
		 "Hard limit in us on spinning without work before NEED_WAKEUP (1-1000000, default 1000)");

static bool sqcq_read_params(struct sqcq_policy_params *c)
{
	c->spin_min_ns = READ_ONCE(sqcq_spin_min_us.val) * NSEC_PER_USEC;
	c->spin_max_ns = READ_ONCE(sqcq_spin_max_us.val) * NSEC_PER_USEC;
	c->weight_shift = READ_ONCE(sqcq_ema_shift.val);
	c->mult = READ_ONCE(sqcq_spin_mult.val);
	return sqcq_params_valid(c);
}

#endif /* _LINUX_VIRTIO_SQCQ_PARAM_H */
