/* SPDX-License-Identifier: GPL-2.0 */
/*
 * vhost SQ polling for VIRTIO_F_SQCQ_POLL: the interface between a vhost
 * device (vhost-scsi) and the polling kick work in sqcq_host.c.
 */
#ifndef _VHOST_SQCQ_HOST_H
#define _VHOST_SQCQ_HOST_H

#include <linux/types.h>
#include <linux/virtio_sqcq_policy.h>

struct dentry;
struct vhost_dev;
struct vhost_virtqueue;

/**
 * struct vhost_sqcq_vq - per-virtqueue polling state, embedded by the device
 * @on: poll this vq; written by vhost_sqcq_sync() under vq->mutex, read
 *	by the vq's worker
 * @runs: runs of the kick work begun since the vq's last run ended: 1, a
 *	run in progress; more, runs came meanwhile (requeue when it ends).
 *	Written by every run, on two workers while VHOST_ATTACH_VRING_WORKER
 *	moves the vq (sqcq_enter()).
 *
 * Every other field belongs to the run of the vq's kick work, one at a
 * time (sqcq_enter()); the counters are also read, racily, by debugfs.
 *
 * @active: the worker is polling this vq (it saw @on and has not handed
 *	the vq back to the kick path yet)
 * @notify_off: guest notifications were left disabled by a polled service
 * @asleep: the spin ended with NEED_WAKEUP; the next run is a kick
 * @requeued: this run was queued by the poll itself, not by a kick
 * @busy_cpu: CPU counted as running a poll (completion steering), or -1
 * @steer_cursor: round-robin position of the completion-CPU picker
 * @worker_pid: the worker that last ran the poll
 * @worker: vq->worker when this run started, compared only (a move to
 *	another worker ends the spin: VHOST_ATTACH_VRING_WORKER waits for it)
 * @empty_since: when the ring ran empty (0: not empty), for the policy
 * @deadline: end of the current spin window (0: no window)
 * @t_transition: last busy<->asleep transition, for @busy_ns and @idle_ns
 * @policy: the adaptive spin budget (include/linux/virtio_sqcq_policy.h)
 * @params: the policy's parameters, read when a spin window starts
 * @work: requests serviced by the poll
 * @kicks: runs started by a guest kick while polled
 * @wakeups: of those, kicks after NEED_WAKEUP
 * @inline_kicks: spin windows the policy gave no budget; a kick that
 *	finds none is serviced as upstream's kick handler does (sqcq_inline())
 * @sleeps: spin windows with a budget that ended with NEED_WAKEUP
 * @empty_polls: emptiness peeks that found nothing
 * @yields: runs that stopped for other work (on the worker, or another
 *	task on the CPU: @gave_way, @naps) and requeued
 * @gave_way: the current spin window gave the CPU to another task
 *	(need_resched(), or a nap for one waiting beside it) at @gave_at,
 *	and goes on when the worker is back unless it ran out meanwhile
 *	(sqcq_back())
 * @gave_ways: times a spin window gave way at need_resched()
 * @contended: spin windows that ran out while another task kept the CPU
 *	for more than a turn (the budget drops)
 * @naps: naps the spin took for a task waiting beside it (sqcq_crowded())
 * @crowded: a peek saw another task runnable beside the spin since the
 *	wait last started again, or the last nap ended (sqcq_crowded())
 * @nap_due: a nap was due when the run yielded to other work on the
 *	worker: the next run takes it first, if the window still waits and
 *	a task still waits beside it
 * @kick_ns: when the guest first kicked after NEED_WAKEUP
 *	(ktime_get_mono_fast_ns(), 0: not since); set by the kick's waker
 *	on any CPU, cleared by the run that takes it and before arming
 * @kicked_at: the kick that woke this run, for the gap it ends (0: none)
 * @spun: the current spin window has a budget (for @caught)
 * @caught: spin windows that found a request (the share of windows that
 *	paid: caught / (caught + sleeps); a contended window is a sleep)
 * @spin_ns: time spinning on an empty ring while not preempted (an
 *	interval between two peeks with an involuntary switch is left out)
 * @steer: the commands of the current service may be steered (decided
 *	before it, vhost_sqcq_steer_cpu())
 * @steered: commands given TARGET_SCF_USE_CPUID with another CPU (LIO
 *	honours it unless the target's cmd_compl_affinity says otherwise)
 * @busy_ns: time from a kick to NEED_WAKEUP, summed
 * @idle_ns: time from NEED_WAKEUP to the next kick, summed
 */
struct vhost_sqcq_vq {
	bool on;
	atomic_t runs;
	bool active, notify_off, asleep, requeued, spun, steer, gave_way;
	bool nap_due, crowded;
	int busy_cpu;
	unsigned int steer_cursor;
	pid_t worker_pid;
	const void *worker;
	u64 empty_since, deadline, t_transition, kicked_at, gave_at;
	struct sqcq_policy policy;
	struct sqcq_policy_params params;
	u64 work, kicks, wakeups, inline_kicks, sleeps, empty_polls, yields, contended;
	u64 caught, steered, gave_ways, spin_ns, naps;
	atomic64_t kick_ns;
	u64 busy_ns, idle_ns;
};

/**
 * struct vhost_sqcq_ops - what polling needs from the device
 * @service: handle the requests on @vq, taking vq->mutex.  With @polled,
 *	leave guest notifications disabled when the ring runs empty; return
 *	the number handled, or a negative errno when the vq cannot be
 *	serviced now (no backend, or a broken ring: wait for the next kick).
 *	Without, do exactly what the device's own kick handler does (enable
 *	them at empty and re-check; past dev->weight, requeue the kick work
 *	with them disabled); return the handler's count of passes (requests
 *	and retries, dev->weight exactly when it requeued), or -ENODEV with
 *	no backend.
 * @vq_state: the vhost_sqcq_vq embedded with @vq
 * @other_work: is other work of the device queued on @vq's worker and not
 *	run yet, also work the worker already took off its list?
 */
struct vhost_sqcq_ops {
	int (*service)(struct vhost_virtqueue *vq, bool polled);
	struct vhost_sqcq_vq *(*vq_state)(struct vhost_virtqueue *vq);
	bool (*other_work)(struct vhost_virtqueue *vq);
};

/**
 * struct vhost_sqcq_dev - per-device polling state, embedded by the device
 * @dev: the vhost device
 * @ops: device callbacks
 * @first_vq: index of the first request virtqueue
 * @features: what the device offers (VIRTIO_F_SQCQ_POLL or 0), fixed at
 *	open so that a device keeps accepting what it offered
 * @closing: released: never poll again
 * @owner_pid: the process that started polling (debugfs)
 * @dbg: debugfs directory while a vq is polled
 */
struct vhost_sqcq_dev {
	struct vhost_dev *dev;
	const struct vhost_sqcq_ops *ops;
	unsigned int first_vq;
	u64 features;
	bool closing;
	pid_t owner_pid;
	struct dentry *dbg;
};

void vhost_sqcq_dev_init(struct vhost_sqcq_dev *sd, struct vhost_dev *dev,
			 unsigned int first_vq, const struct vhost_sqcq_ops *ops);
void vhost_sqcq_sync(struct vhost_sqcq_dev *sd, bool want);
void vhost_sqcq_release(struct vhost_sqcq_dev *sd);
void vhost_sqcq_dev_cleanup(struct vhost_sqcq_dev *sd);
bool vhost_sqcq_handle_kick(struct vhost_sqcq_dev *sd,
			    struct vhost_sqcq_vq *sv,
			    struct vhost_virtqueue *vq);
int vhost_sqcq_steer_cpu(struct vhost_sqcq_vq *sv);
int vhost_sqcq_init(void);
void vhost_sqcq_exit(void);

#endif /* _VHOST_SQCQ_HOST_H */
