/*
 * Promela model of the VIRTIO_F_SQCQ_POLL NEED_WAKEUP handshake (SQ side)
 * with the poll in the vq's kick work (drivers/vhost/sqcq_host.c), and of
 * stopping it with a kick pending.  Checked with spin (tests/t04-model.sh).
 *
 * Processes: the guest driver publishing requests and kicking when the
 * host asks for it; the vq's vhost worker running the kick work whenever
 * it is queued; the device's ioctls stopping the poll once, at any moment:
 * VHOST_SET_FEATURES without the bit, or the VM stopped, the endpoint
 * cleared (a flush) and set again, the VM continued (a reboot, stop/cont);
 * and other work (LIO completions) landing on the same worker at any
 * moment.
 *
 * Memory model: each CPU's store goes to a store buffer and becomes visible
 * to the other CPU at a nondeterministic later time (x86-TSO allows exactly
 * this store->load reordering); a full barrier drains the buffer.  The
 * worker's queue (VHOST_WORK_QUEUED, llist) and sleep/wake are taken as
 * correct and atomic: a queued work runs at least once after it is queued.
 *
 * The code modelled:
 *   guest   virtqueue_add + virtqueue_kick_prepare:
 *             avail->idx = new; virtio_mb(); if (notifications on) kick
 *   kick    vhost_poll_queue(): queue the kick work
 *   work    vhost_sqcq_handle_kick(): polled (on):
 *             service: vhost_disable_notify(), consume the ring;
 *             empty: spin; other work queued: requeue ourselves, return;
 *             budget spent: vhost_enable_notify() (early return if already
 *             on; else enable, smp_mb(), re-read avail->idx): found ->
 *             disable, poll on; else return.
 *           not polled: vhost_scsi_handle_vq(), the upstream kick path:
 *             disable, consume, at empty enable + re-check as above.
 *   stop    vhost_sqcq_sync(want=false): on = false; queue the kick work.
 *   hand back (the first run after a stop, sqcq_hand_back()): re-enable
 *             notifications, then the upstream path; with -DOLD_HAND_BACK
 *             only when there is no backend (the bug a review found: the
 *             backend can go between the two, and the upstream path then
 *             returns at once, leaving the ring silenced for the next
 *             set-endpoint).
 *
 * The properties, when nothing can move any more: every published request
 * has been consumed (no stranded request), unless upstream's own code
 * dropped it (no_backend_loss()); and a stop has handed the vq back
 * (!polling) without a further guest kick.  Mutations, each of which must
 * give a counterexample: -DNO_GUEST_MB, -DNO_HOST_MB (one side's barrier),
 * -DNO_RECHECK (no re-read after enabling), -DNO_YIELD_REQUEUE (the poll
 * gives way to other work without requeueing itself), -DOLD_HAND_BACK,
 * -DNO_STOP_REQUEUE (the stop does not queue the kick work: a poll asleep
 * at the stop keeps its polled state until a kick that may never come).
 * With -DDELIVERY_ONLY (the first property alone) -DNO_STOP_REQUEUE must
 * NOT give one: a run of the kick work either requeues itself or ends with
 * notifications on, so delivery never depends on the stop's requeue.
 */
#define N 3

byte avail = 0;			/* avail->idx in memory */
bool notify = true;		/* notifications on, in memory (used flags) */

byte g_avail_buf;		/* guest store buffer: avail->idx */
bool g_avail_pending = false;
bool h_notify_buf;		/* host store buffer: the flag */
bool h_notify_pending = false;

bool no_notify = false;		/* host's vq->used_flags & NO_NOTIFY */
bool queued = false;		/* the kick work is queued on the worker */
bool on = true;			/* sv->on */
bool polling = false;		/* sv->active: polled since the last hand back */
bool backend = true;		/* the endpoint is set */
bool paused = false;		/* the VM is stopped (its vCPUs do not run) */
bool running = false;		/* the worker runs the kick work */
byte consumed = 0;		/* last_avail_idx */
bool upstream_loss = false;	/* a run found requests and no backend */

inline h_drain() {
	atomic { if :: h_notify_pending -> notify = h_notify_buf; h_notify_pending = false :: else -> skip fi }
}
inline h_store_notify(v) {
	atomic { h_notify_buf = v; h_notify_pending = true }
}

/* vhost_disable_notify(): writes only if notifications were on. */
inline disable_notify() {
	if
	:: !no_notify -> no_notify = true; h_store_notify(false)
	:: else -> skip
	fi
}

/*
 * vhost_enable_notify(): returns false at once if notifications are on
 * already; else enables, smp_mb(), re-reads avail->idx.  found is the
 * return value.
 */
inline enable_notify(found) {
	if
	:: !no_notify -> found = false
	:: else ->
		no_notify = false;
		h_store_notify(true);
#ifndef NO_HOST_MB
		h_drain();
#endif
#ifndef NO_RECHECK
		found = (avail != consumed)
#else
		found = false
#endif
	fi
}

/*
 * Upstream vhost-scsi drops a kick whose work runs after clear-endpoint
 * took the backend (the request stays in the ring; nothing looks at it
 * after set-endpoint until the next kick).  That is not this code's to
 * fix: such a run is recorded, and the property excuses it.
 */
inline no_backend_loss() {
	if
	:: avail != consumed -> upstream_loss = true
	:: else -> skip
	fi
}

/* Store buffers drain whenever the hardware likes. */
active proctype memory()
{
end:	do
	:: atomic { g_avail_pending -> avail = g_avail_buf; g_avail_pending = false }
	:: atomic { h_notify_pending -> notify = h_notify_buf; h_notify_pending = false }
	od
}

active proctype guest()
{
	byte idx = 0;

	/* Each step runs only while the VM runs (vm stop waits for vCPUs). */
	do
	:: idx < N ->
		atomic { !paused -> idx++; g_avail_buf = idx; g_avail_pending = true };	/* avail->idx */
#ifndef NO_GUEST_MB
		atomic { avail = g_avail_buf; g_avail_pending = false };	/* virtio_mb() */
#endif
		if
		:: atomic { !paused && notify -> queued = true }		/* kick */
		:: atomic { !paused && !notify -> skip }
		fi
	:: else -> break
	od
}

/* One stop at any moment (or none). */
active proctype stopper()
{
	if
	:: atomic {					/* SET_FEATURES, no bit */
		on = false;
#ifndef NO_STOP_REQUEUE
		queued = true
#endif
	   }
	:: paused = true;				/* vm stop */
		atomic {				/* clear-endpoint: stop */
			on = false;
#ifndef NO_STOP_REQUEUE
			queued = true
#endif
		};
		backend = false;
		(!queued && !running);			/* the flush */
		atomic { backend = true; on = true };	/* set-endpoint */
		paused = false				/* cont */
	:: skip
	fi
}

active proctype worker()
{
	bool found;

end_idle:
	do
	:: atomic { queued -> queued = false; running = true };
		if
		:: on -> polling = true; goto polled
		:: !on && polling -> goto hand_back
		:: else -> goto upstream
		fi;
polled:
		if
		:: !backend ->					/* -ENODEV */
			no_backend_loss();
			enable_notify(found); goto next
		:: else -> skip
		fi;
		disable_notify();				/* service */
		consumed = avail;
		do
		:: avail != consumed -> goto polled		/* the peek */
		:: break					/* budget spent */
		:: atomic {					/* other work */
#ifndef NO_YIELD_REQUEUE
			queued = true;
#endif
			goto next }
		od;
		enable_notify(found);				/* NEED_WAKEUP */
		if
		:: found -> goto polled				/* (disabled again) */
		:: else -> goto next
		fi;
hand_back:
		polling = false;
#ifdef OLD_HAND_BACK
		if
		:: !backend -> enable_notify(found)
		:: else -> skip
		fi;
#else
		enable_notify(found);
#endif
upstream:
		if
		:: !backend -> no_backend_loss(); goto next	/* vhost_scsi_handle_vq */
		:: else -> skip
		fi;
		disable_notify();
		consumed = avail;
		enable_notify(found);
		if
		:: found -> goto upstream
		:: else -> skip
		fi;
next:
		running = false
	od
}

/*
 * When nothing can move, no published request may be left behind; and a
 * stop has handed the vq back by itself (the polled state is gone without
 * waiting for a guest kick that may never come).
 */
active proctype watchdog()
{
	timeout ->
		assert(consumed == N || upstream_loss);
#ifndef DELIVERY_ONLY
		assert(on || !polling)
#endif
}
