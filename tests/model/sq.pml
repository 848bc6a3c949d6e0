/*
 * Promela model of the VIRTIO_F_SQCQ_POLL NEED_WAKEUP handshake (SQ side):
 * the guest driver publishing requests, the host SQ poller consuming them
 * and going to sleep.  Checked with spin (tests/t04-model.sh).
 *
 * Memory model: each CPU's store goes to a store buffer and becomes visible
 * to the other CPU at a nondeterministic later time (x86-TSO allows exactly
 * this store->load reordering); a full barrier drains the buffer.  The
 * property: when nothing can move any more, every published request has
 * been consumed (no lost wakeup).  Built with -DNO_GUEST_MB or
 * -DNO_HOST_MB, one side's barrier is removed; with -DNO_WAKE_PENDING the
 * poller ignores a kick that arrived before it set its task state: spin
 * must find a counterexample for each.
 *
 * The code modelled:
 *   guest  virtqueue_add + virtqueue_kick_prepare:
 *            avail->idx = new; virtio_mb(); if (notifications enabled) kick
 *   host   vhost_sqcq_fn (drivers/vhost/sqcq_host.c):
 *            poll avail; ...; budget spent:
 *            vhost_enable_notify(): enable; smp_mb(); re-read avail->idx;
 *            if empty: set_current_state(); check WAKE_PENDING; schedule()
 *   kick   vhost_sqcq_kick(): set WAKE_PENDING; vhost_task_wake()
 * The sleep/wake primitives themselves (set_current_state/wake_up_process)
 * are taken as correct and modelled atomically.
 */
#define N 3

byte avail = 0;			/* avail->idx in memory */
bool notify = false;		/* host wants kicks (NEED_WAKEUP), in memory */

byte g_avail_buf;		/* guest store buffer: avail->idx */
bool g_avail_pending = false;
bool h_notify_buf;		/* host store buffer: notify flag */
bool h_notify_pending = false;

bool wake_pending = false;	/* SQCQ_WAKE_PENDING */
bool sleeping = false;		/* poller in schedule() */
byte consumed = 0;
byte kicks = 0;

inline g_drain() {
	atomic { if :: g_avail_pending -> avail = g_avail_buf; g_avail_pending = false :: else -> skip fi }
}
inline h_drain() {
	atomic { if :: h_notify_pending -> notify = h_notify_buf; h_notify_pending = false :: else -> skip fi }
}
inline h_store_notify(v) {
	atomic { h_notify_buf = v; h_notify_pending = true }
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

	do
	:: idx < N ->
		idx++;
		atomic { g_avail_buf = idx; g_avail_pending = true };	/* avail->idx = idx */
#ifndef NO_GUEST_MB
		g_drain();						/* virtio_mb() */
#endif
		if
		:: notify ->						/* kick */
			atomic { kicks++; wake_pending = true; sleeping = false }
		:: else -> skip
		fi
	:: else -> break
	od
}

active proctype poller()
{
	byte seen = 0;		/* last_avail_idx */

poll:
	if
	:: avail != seen ->					/* work */
		h_store_notify(false);				/* vhost_disable_notify */
		seen = avail;
		consumed = seen;
		goto poll
	:: else -> skip
	fi;
	if
	:: goto poll						/* budget left: spin */
	:: skip							/* budget spent */
	fi;
	h_store_notify(true);					/* vhost_enable_notify */
#ifndef NO_HOST_MB
	h_drain();						/* smp_mb() */
#endif
	if
	:: avail != seen -> h_store_notify(false); goto poll	/* slipped in */
	:: else -> skip
	fi;
	atomic {						/* set_current_state */
		if
#ifndef NO_WAKE_PENDING
		:: wake_pending -> wake_pending = false		/* kick raced us */
#endif
		:: else -> sleeping = true
		fi
	};
end:	(!sleeping);						/* schedule() */
	goto poll
}

/* When nothing can move, no published request may be left behind. */
active proctype watchdog()
{
	timeout -> assert(consumed == N)
}
