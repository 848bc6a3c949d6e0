/*
 * Promela model of the VIRTIO_F_SQCQ_POLL NEED_WAKEUP handshake, CQ side:
 * the device (vhost) publishing completions and deciding whether to
 * interrupt, and the guest's CQ poller reaping them and going to sleep.
 * Same memory model as sq.pml: stores sit in a per-CPU store buffer until
 * drained; a full barrier drains it.  Checked by tests/t04-model.sh.
 *
 * The code modelled:
 *   device  vhost_add_used(): used->idx = new;
 *           vhost_notify(): smp_mb(); read used_event / flags;
 *           interrupt if enabled                       (vhost_signal)
 *   guest   sqcq_thread (drivers/virtio/virtio_sqcq.c):
 *           reap used ring; ...; budget spent:
 *           virtqueue_enable_cb_prepare(): enable interrupts;
 *           virtqueue_poll(): virtio_mb(); re-read used->idx;
 *           if empty: set_current_state(); check WAKE_PENDING; schedule()
 *   irq     virtio_sqcq_irq(): disable cb; set WAKE_PENDING; wake_up_process()
 *
 * Mutations: -DNO_DEVICE_MB, -DNO_GUEST_MB, -DNO_WAKE_PENDING must each
 * produce a counterexample (a completion left unreaped with the poller
 * asleep).
 */
#define N 3

byte used = 0;			/* used->idx in memory */
bool irq_on = false;		/* guest wants interrupts (NEED_WAKEUP), in memory */

byte d_used_buf;		/* device store buffer: used->idx */
bool d_used_pending = false;
bool g_irq_buf;			/* guest store buffer: interrupt enable */
bool g_irq_pending = false;

bool wake_pending = false;
bool sleeping = false;
byte reaped = 0;

inline d_drain() {
	atomic { if :: d_used_pending -> used = d_used_buf; d_used_pending = false :: else -> skip fi }
}
inline g_drain() {
	atomic { if :: g_irq_pending -> irq_on = g_irq_buf; g_irq_pending = false :: else -> skip fi }
}
inline g_store_irq(v) {
	atomic { g_irq_buf = v; g_irq_pending = true }
}

active proctype memory()
{
end:	do
	:: atomic { d_used_pending -> used = d_used_buf; d_used_pending = false }
	:: atomic { g_irq_pending -> irq_on = g_irq_buf; g_irq_pending = false }
	od
}

active proctype device()
{
	byte idx = 0;

	do
	:: idx < N ->
		idx++;
		atomic { d_used_buf = idx; d_used_pending = true };	/* used->idx = idx */
#ifndef NO_DEVICE_MB
		d_drain();						/* smp_mb() in vhost_notify */
#endif
		if
		:: irq_on ->						/* interrupt */
			atomic { wake_pending = true; sleeping = false }
		:: else -> skip
		fi
	:: else -> break
	od
}

active proctype poller()
{
	byte seen = 0;		/* last_used_idx */

poll:
	if
	:: used != seen ->					/* reap */
		g_store_irq(false);				/* virtqueue_disable_cb */
		seen = used;
		reaped = seen;
		goto poll
	:: else -> skip
	fi;
	if
	:: goto poll						/* budget left: spin */
	:: skip
	fi;
	g_store_irq(true);					/* enable_cb_prepare */
#ifndef NO_GUEST_MB
	g_drain();						/* virtio_mb() in virtqueue_poll */
#endif
	if
	:: used != seen -> g_store_irq(false); goto poll	/* virtqueue_poll true */
	:: else -> skip
	fi;
	atomic {
		if
#ifndef NO_WAKE_PENDING
		:: wake_pending -> wake_pending = false
#endif
		:: else -> sleeping = true
		fi
	};
end:	(!sleeping);
	goto poll
}

active proctype watchdog()
{
	timeout -> assert(reaped == N)
}
