// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* test_sampling - the windows of "record --sample N --sample-by time" (src/sampling.c) */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include "sampling.h"

#define MS 1000000ull

static void test_windows_of(void **state)
{
	struct nt_windows w = nt_windows_of(100, 20);

	assert_int_equal(w.w_ns, 20 * MS);
	assert_int_equal(w.p_ns, 2000 * MS);
	assert_int_equal(w.lead_ns, 50 * MS);
	w = nt_windows_of(2, 40);		/* the lead is at most a quarter of the gap */
	assert_int_equal(w.lead_ns, 10 * MS);
}

/*
 * Tracepoints are detached between windows only where the gap leaves time
 * for an RCU grace period: the cost model's (20 ms in 2 s, 2 ms in 2 s) and
 * the default of --sample 100 (100 ms in 10 s) do; 10 ms in 100 ms only
 * pauses.  Function hooks too from a gap of 10 s: --sample 1000's 100 ms
 * in 100 s, with a lead of 1 s (attaching them took up to 600 ms on a busy
 * lab guest).
 */
static void test_windows_detach(void **state)
{
	struct nt_windows w = nt_windows_of(1000, 100);

	assert_int_equal(nt_windows_detach(&w), NT_DETACH_ALL);
	assert_int_equal(w.lead_ns, 1000 * MS);
	w = nt_windows_of(100, 100);		/* a gap of 9.9 s */
	assert_int_equal(nt_windows_detach(&w), NT_DETACH_TP);
	assert_int_equal(w.lead_ns, 50 * MS);
	w = nt_windows_of(1000, 20);		/* the cost model's period of 20 s */
	assert_int_equal(nt_windows_detach(&w), NT_DETACH_ALL);
	w = nt_windows_of(100, 20);
	assert_int_equal(nt_windows_detach(&w), NT_DETACH_TP);
	w = nt_windows_of(1000, 2);
	assert_int_equal(nt_windows_detach(&w), NT_DETACH_TP);
	w = nt_windows_of(10, 10);
	assert_int_equal(nt_windows_detach(&w), NT_DETACH_NONE);
	w = nt_windows_of(2, 999);		/* a gap of 999 ms */
	assert_int_equal(nt_windows_detach(&w), NT_DETACH_NONE);
	w = nt_windows_of(2, 1000);		/* exactly the threshold */
	assert_int_equal(nt_windows_detach(&w), NT_DETACH_TP);
	w = nt_windows_of(2, 10000);		/* exactly the functions' threshold */
	assert_int_equal(nt_windows_detach(&w), NT_DETACH_ALL);
	/* the test knob: from 1.5 s; never under the tracepoints' 1 s */
	w = nt_windows_with(20, 100, 1500 * MS);
	assert_int_equal(nt_windows_detach(&w), NT_DETACH_ALL);
	assert_int_equal(w.lead_ns, 475 * MS);	/* a quarter of the 1.9 s gap */
	w = nt_windows_with(10, 10, 0);
	assert_int_equal(nt_windows_detach(&w), NT_DETACH_NONE);
}

/*
 * The default window: 100 ms below --sample 100; from there on as long as
 * makes windows 100 s apart, so that every hook is detached between them,
 * and never shorter than 100 ms.
 */
static void test_default_window(void **state)
{
	struct nt_windows w;

	assert_int_equal(nt_sample_window_ms(2), 100);
	assert_int_equal(nt_sample_window_ms(10), 100);
	assert_int_equal(nt_sample_window_ms(99), 100);	/* 9.9 s apart */
	assert_int_equal(nt_sample_window_ms(100), 1000);
	assert_int_equal(nt_sample_window_ms(200), 500);
	assert_int_equal(nt_sample_window_ms(1000), 100);
	assert_int_equal(nt_sample_window_ms(5000), 100);	/* 500 s apart, not 20 ms windows */
	assert_int_equal(nt_sample_window_ms(UINT32_MAX), 100);
	w = nt_windows_of(100, nt_sample_window_ms(100));
	assert_int_equal(w.p_ns, 100000 * MS);
	assert_int_equal(nt_windows_detach(&w), NT_DETACH_ALL);
	w = nt_windows_of(99, nt_sample_window_ms(99));
	assert_int_equal(nt_windows_detach(&w), NT_DETACH_TP);
}

/*
 * Windows are aligned to the epoch: two hosts with agreeing clocks choose the
 * same ones.  The programs are armed a lead before each and paused a lead
 * after it (the BPF side keeps the window's exact edges).
 */
static void test_window_at(void **state)
{
	struct nt_windows w = nt_windows_of(10, 100);	/* 100 ms in every second, leads of 50 ms */
	uint64_t start, next, t = 1764000000ull * 1000000000ull;	/* a whole second */

	assert_true(nt_window_at(&w, t, &start, &next));
	assert_int_equal(start, t);
	assert_int_equal(next, t + 150 * MS);		/* paused a lead after the window */
	assert_true(nt_window_at(&w, t + 150 * MS - 1, &start, &next));
	assert_int_equal(next, t + 150 * MS);
	assert_false(nt_window_at(&w, t + 150 * MS, &start, &next));
	assert_int_equal(start, t + 1000 * MS);		/* the next window ... */
	assert_int_equal(next, t + 950 * MS);		/* ... is armed 50 ms before it */
	assert_false(nt_window_at(&w, t + 950 * MS - 1, &start, &next));
	assert_true(nt_window_at(&w, t + 950 * MS, &start, &next));
	assert_int_equal(start, t + 1000 * MS);		/* armed: the window that comes */
	assert_int_equal(next, t + 1150 * MS);
	assert_true(nt_window_at(&w, t + 1000 * MS + 5, &start, &next));
	assert_int_equal(start, t + 1000 * MS);
}

/* over whole periods the windows hold 1/N of the time, the armed part W + 2 leads, wherever it starts */
static void test_fraction(void **state)
{
	struct nt_windows w = nt_windows_of(9, 4);
	uint64_t in = 0, inside = 0, start, next, t0 = 123456789ull * 1000;

	assert_int_equal(w.lead_ns, 8 * MS);
	for (uint64_t t = t0; t < t0 + 10 * w.p_ns; t += MS / 2)
		if (nt_window_at(&w, t, &start, &next)) {
			in++;
			inside += t >= start && t < start + w.w_ns;
		}
	assert_int_equal(inside, 10 * 4 * 2);
	assert_int_equal(in, 10 * (4 + 2 * 8) * 2);
	/* n < 2 counts as 2: still a schedule, never a division by zero */
	w = nt_windows_of(1, 5);
	assert_int_equal(w.p_ns, 10 * MS);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_windows_of),
		cmocka_unit_test(test_windows_detach),
		cmocka_unit_test(test_default_window),
		cmocka_unit_test(test_window_at),
		cmocka_unit_test(test_fraction),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
