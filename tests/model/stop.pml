/*
 * Promela model of stopping the host SQ poller (drivers/vhost/sqcq_host.c)
 * while it runs: the vhost_task loop (kernel/vhost_task.c) calling
 * vhost_sqcq_fn(), and sqcq_destroy() calling vhost_task_stop().  Checked
 * with spin (tests/t04-model.sh).
 *
 * vhost_task_fn() sets TASK_INTERRUPTIBLE, checks its STOP flag, calls the
 * poller's fn and, if that returns false, schedule()s.  vhost_sqcq_fn()
 * makes itself TASK_RUNNING on entry (it takes mutexes), so a wakeup that
 * lands while it runs is spent on a running task; before it returns false
 * it sets TASK_INTERRUPTIBLE again and must find a reason not to sleep.
 * The property: the stopper never waits forever for the poller to exit.
 * Built with -DNO_STOPPING (no SQCQ_STOPPING flag: the stop's wakeup can
 * be lost, as t40's feature toggles once showed) spin must find that
 * deadlock.  set_current_state() and wake_up_process() are taken as
 * correct (full barriers, atomic here).
 */
#define RUNNING 0
#define INTERRUPTIBLE 1

byte state = RUNNING;
bool stop = false;		/* VHOST_TASK_FLAGS_STOP */
bool stopping = false;		/* SQCQ_STOPPING */
bool exited = false;

active proctype poller()
{
loop:
	state = INTERRUPTIBLE;					/* set_current_state */
	if
	:: stop -> state = RUNNING; goto out			/* vhost_task_fn exits */
	:: else -> skip
	fi;
	state = RUNNING;					/* vhost_sqcq_fn() entry */
#ifndef NO_STOPPING
	if
	:: stopping -> goto loop				/* stay runnable */
	:: else -> skip
	fi;
#endif
	if
	:: goto loop						/* work, or spinning */
	:: skip							/* budget spent: sleep */
	fi;
	atomic {						/* set_current_state */
		state = INTERRUPTIBLE;
		if
#ifndef NO_STOPPING
		:: stopping -> state = RUNNING
#endif
		:: else -> skip
		fi
	};
	if
	:: state == RUNNING -> goto loop			/* return true */
	:: else -> skip
	fi;
end_sleep:
	(state == RUNNING);					/* schedule() */
	goto loop;
out:
	exited = true
}

active proctype stopper()
{
#ifndef NO_STOPPING
	stopping = true;					/* sqcq_destroy() */
#endif
	stop = true;						/* vhost_task_stop() */
	atomic { if :: state == INTERRUPTIBLE -> state = RUNNING :: else -> skip fi };	/* wake */
	(exited)						/* wait_for_completion */
}
