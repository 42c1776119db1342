// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * test_drainprio - record --nice (src/drainprio.c): the drain loop's nice
 * while it keeps up, and the nice it catches up at once a ring is half full,
 * until a round finds the fullest ring below an eighth.  The thread's own
 * nice is checked in a thread of its own (Linux keeps nice per thread).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdbool.h>
#include <string.h>
#include <pthread.h>
#include <linux/capability.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "drainprio.h"

static void test_policy(void **state)
{
	(void)state;
	/* cur, idle, busy, backlog, cap -> next */
	assert_int_equal(nt_drain_prio_next(19, 19, 0, 0, 8192), 19);
	assert_int_equal(nt_drain_prio_next(19, 19, 0, 4200, 8192), 19);	/* woken at half: in time */
	assert_int_equal(nt_drain_prio_next(19, 19, 0, 6143, 8192), 19);
	assert_int_equal(nt_drain_prio_next(19, 19, 0, 6144, 8192), 0);	/* 3/4: late, behind */
	assert_int_equal(nt_drain_prio_next(0, 19, 0, 5200, 8192), 0);	/* between: as it was */
	assert_int_equal(nt_drain_prio_next(19, 19, 0, 5200, 8192), 19);
	assert_int_equal(nt_drain_prio_next(0, 19, 0, 5120, 8192), 19);	/* 5/8: caught up */
	assert_int_equal(nt_drain_prio_next(0, 19, 0, 8192, 8192), 0);
	assert_int_equal(nt_drain_prio_next(0, 19, 0, 0, 0), 19);		/* no ring known: keeps up */
}

static int thread_nice(void)
{
	errno = 0;
	return getpriority(PRIO_PROCESS, 0);	/* 0: this thread */
}

/* this thread's effective capabilities: CAP_SYS_NICE (23) in them, and dropped */
static bool sys_nice(bool drop)
{
	struct __user_cap_header_struct hdr = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct data[2];

	if (syscall(SYS_capget, &hdr, data))
		return false;
	if (drop) {
		data[0].effective &= ~(1u << 23);
		return !syscall(SYS_capset, &hdr, data);
	}
	return data[0].effective & (1u << 23);
}

/* RLIMIT_NICE lets an unprivileged thread back down to nice 0 */
static bool rlimit_allows(void)
{
	struct rlimit rl;

	return !getrlimit(RLIMIT_NICE, &rl) && (rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur >= 20);
}

struct seen {
	bool drop, allowed;
	int base, after_start, behind, caught_up, ok;
	unsigned long catchups;
	int idle, busy;
};

static void *drain_thread(void *arg)
{
	struct seen *s = arg;
	struct nt_drain_prio p;

	if (s->drop && !sys_nice(true))
		return NULL;
	s->allowed = sys_nice(false) || rlimit_allows();
	s->base = thread_nice();
	nt_drain_prio_start(&p, 19);
	s->after_start = thread_nice();
	nt_drain_prio_round(&p, 100, 8192);
	nt_drain_prio_round(&p, 7000, 8192);
	s->behind = thread_nice();
	nt_drain_prio_round(&p, 5500, 8192);	/* still behind: 5/8 is the way back */
	nt_drain_prio_round(&p, 10, 8192);
	s->caught_up = thread_nice();
	s->ok = p.ok;
	s->catchups = (unsigned long)p.catchups;
	s->idle = p.idle;
	s->busy = p.busy;
	return NULL;
}

static void run_thread(struct seen *s)
{
	pthread_t t;

	assert_int_equal(pthread_create(&t, NULL, drain_thread, s), 0);
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_true(s->ok);
}

static void test_thread_nice(void **state)
{
	struct seen s = { 0 };
	int main_before = thread_nice();

	(void)state;
	run_thread(&s);
	assert_int_equal(s.busy, s.base);
	if (s.allowed) {
		/* root (CAP_SYS_NICE): 19 while it keeps up, the nice it started with while behind */
		assert_int_equal(s.after_start, 19);
		assert_int_equal(s.idle, 19);
		assert_int_equal(s.behind, s.base);
		assert_int_equal(s.caught_up, 19);
		assert_int_equal(s.catchups, 1);
	}
	/* a thread that could not come back down stays where it started */
	memset(&s, 0, sizeof(s));
	s.drop = true;
	run_thread(&s);
	if (!s.allowed) {
		assert_int_equal(s.idle, s.base);
		assert_int_equal(s.after_start, s.base);
		assert_int_equal(s.behind, s.base);
		assert_int_equal(s.caught_up, s.base);
		assert_int_equal(s.catchups, 0);
	}
	/* the other threads keep theirs */
	assert_int_equal(thread_nice(), main_before);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_policy),
		cmocka_unit_test(test_thread_nice),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
