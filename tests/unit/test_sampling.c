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
}

/* windows are aligned to the epoch: two hosts with agreeing clocks choose the same ones */
static void test_window_at(void **state)
{
	struct nt_windows w = nt_windows_of(10, 100);	/* 100 ms in every second */
	uint64_t next, t = 1764000000ull * 1000000000ull;	/* a whole second */

	assert_true(nt_window_at(&w, t, &next));
	assert_int_equal(next, t + 100 * MS);		/* the window closes */
	assert_true(nt_window_at(&w, t + 100 * MS - 1, &next));
	assert_int_equal(next, t + 100 * MS);
	assert_false(nt_window_at(&w, t + 100 * MS, &next));
	assert_int_equal(next, t + 1000 * MS);		/* the next one opens */
	assert_false(nt_window_at(&w, t + 999 * MS, &next));
	assert_int_equal(next, t + 1000 * MS);
	assert_true(nt_window_at(&w, t + 1000 * MS + 5, &next));
	assert_int_equal(next, t + 1100 * MS);
}

/* over any whole number of periods the windows hold 1/N of the time, wherever it starts */
static void test_fraction(void **state)
{
	struct nt_windows w = nt_windows_of(7, 3);
	uint64_t in = 0, next, start = 123456789ull * 1000;

	for (uint64_t t = start; t < start + 10 * w.p_ns; t += MS / 2)
		in += nt_window_at(&w, t, &next);
	assert_int_equal(in, 10 * 3 * 2);
	/* n < 2 is no sampling: still a valid schedule, never a division by zero */
	w = nt_windows_of(1, 5);
	assert_int_equal(w.p_ns, 10 * MS);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_windows_of),
		cmocka_unit_test(test_window_at),
		cmocka_unit_test(test_fraction),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
