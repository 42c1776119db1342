/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Unit tests for hist: every percentile is checked against the exact
 * nearest-rank value of a sorted copy of the inserted data.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <cmocka.h>

#include "hist.h"

#ifndef __maybe_unused
#define __maybe_unused __attribute__((unused))
#endif

/* Fixed-seed xorshift64*: reproducible across runs and libcs. */
static uint64_t rng_state;

static void rng_seed(uint64_t s)
{
	rng_state = s ? s : 0x9e3779b97f4a7c15ull;
}

static uint64_t rng_next(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545f4914f6cdd1dull;
}

/* uniform in (0, 1], never 0 so log() and pow() stay finite */
static double rng_unit(void)
{
	return ((rng_next() >> 11) + 1) * 0x1p-53;
}

/* Percentiles in units of 0.01 (per-myriad) so the reference rank is integer math. */
static const unsigned pct_list[] = {
	0, 10, 100, 1000, 2500, 5000, 7500, 9000, 9900, 9990, 9999, 10000,
};

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Exact nearest rank: k = ceil(pm / 10000 * n), at least 1; sorted[] ascending. */
static uint64_t exact_pct(const uint64_t *sorted, size_t n, unsigned pm)
{
	uint64_t k = ((uint64_t)pm * n + 9999) / 10000;

	if (k < 1)
		k = 1;
	return sorted[k - 1];
}

/* Accept: exact below 2^SUB_BITS, else within 1 % of the true value. */
static int pct_ok(uint64_t got, uint64_t exact)
{
	uint64_t diff = got > exact ? got - exact : exact - got;

	if (exact < NT_HIST_SUB)
		return diff == 0;
	return (unsigned __int128)diff * 100 <= exact;
}

static void build(struct nt_hist *h, const uint64_t *v, size_t n)
{
	size_t i;

	nt_hist_init(h);
	for (i = 0; i < n; i++)
		assert_int_equal(nt_hist_add(h, v[i]), 0);
}

/* Check every percentile of pct_list, plus any extra ones, on data v[0..n). */
static void check_dataset(const char *name, const uint64_t *v, size_t n,
			  const unsigned *extra, size_t nextra)
{
	struct nt_hist h;
	uint64_t *s = malloc(n * sizeof(*s));
	size_t i, total = sizeof(pct_list) / sizeof(pct_list[0]) + nextra;

	assert_non_null(s);
	memcpy(s, v, n * sizeof(*s));
	qsort(s, n, sizeof(*s), cmp_u64);
	build(&h, v, n);
	assert_int_equal(h.count, n);
	assert_true(h.min == s[0]);
	assert_true(h.max == s[n - 1]);

	for (i = 0; i < total; i++) {
		unsigned pm = i < nextra ? extra[i] : pct_list[i - nextra];
		uint64_t want = exact_pct(s, n, pm);
		uint64_t got = nt_hist_percentile(&h, pm / 100.0);

		if (!pct_ok(got, want))
			fail_msg("%s: p%u.%02u got %llu want %llu", name,
				 pm / 100, pm % 100, (unsigned long long)got,
				 (unsigned long long)want);
	}
	nt_hist_free(&h);
	free(s);
}

#define N_BIG 100000

static void test_checker_catches_errors(void **state __maybe_unused)
{
	static const uint64_t exacts[] = {
		128, 1000, 10000, 123456789, 1ull << 40, UINT64_MAX / 2,
	};
	size_t i;

	/* A deliberately wrong percentile (2 % off either way) must be rejected... */
	for (i = 0; i < sizeof(exacts) / sizeof(exacts[0]); i++) {
		uint64_t x = exacts[i];

		assert_false(pct_ok(x + x / 50, x));
		assert_false(pct_ok(x - x / 50, x));
		/* ... while the boundary (1 %) and exact answers pass. */
		assert_true(pct_ok(x + x / 100, x));
		assert_true(pct_ok(x, x));
	}
	/* small values must be exact: off-by-one is an error */
	assert_false(pct_ok(11, 10));
	assert_false(pct_ok(0, 1));
	assert_true(pct_ok(127, 127));

	/* the reference rank: p90 of 10 values is the 9th, p91 the 10th */
	{
		uint64_t s[10] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10 };

		assert_true(exact_pct(s, 10, 0) == 1);
		assert_true(exact_pct(s, 10, 9000) == 9);
		assert_true(exact_pct(s, 10, 9100) == 10);
		assert_true(exact_pct(s, 10, 10000) == 10);
	}
}

static void test_empty(void **state __maybe_unused)
{
	struct nt_hist h, z;

	nt_hist_init(&h);
	assert_true(nt_hist_percentile(&h, 0) == 0);
	assert_true(nt_hist_percentile(&h, 50) == 0);
	assert_true(nt_hist_percentile(&h, 100) == 0);
	assert_true(nt_hist_mean(&h) == 0.0);
	/* merging two empties stays empty and allocates nothing */
	nt_hist_init(&z);
	assert_int_equal(nt_hist_merge(&h, &z), 0);
	assert_int_equal(h.count, 0);
	assert_null(h.buckets);
	nt_hist_free(&h);
	nt_hist_free(&h);	/* free is idempotent */
}

static void test_zeroed_struct(void **state __maybe_unused)
{
	struct nt_hist h;

	/* a memset/calloc'ed struct has min = 0: the first add must reseed it */
	memset(&h, 0, sizeof(h));
	assert_int_equal(nt_hist_add(&h, 5000), 0);
	assert_int_equal(nt_hist_add(&h, 7000), 0);
	assert_true(h.min == 5000);
	assert_true(h.max == 7000);
	assert_true(nt_hist_percentile(&h, 0) == 5000);
	nt_hist_free(&h);
}

static void test_uniform(void **state __maybe_unused)
{
	uint64_t *v = malloc(N_BIG * sizeof(*v));
	size_t i;

	assert_non_null(v);
	rng_seed(1);
	for (i = 0; i < N_BIG; i++)
		v[i] = rng_next() % 1000000000ull;	/* 0 .. 1 s */
	check_dataset("uniform", v, N_BIG, NULL, 0);
	free(v);
}

static void test_exponential(void **state __maybe_unused)
{
	uint64_t *v = malloc(N_BIG * sizeof(*v));
	size_t i;

	assert_non_null(v);
	rng_seed(2);
	for (i = 0; i < N_BIG; i++)
		v[i] = (uint64_t)(-100000.0 * log(rng_unit()));	/* mean 100 us */
	check_dataset("exponential", v, N_BIG, NULL, 0);
	free(v);
}

static void test_bimodal(void **state __maybe_unused)
{
	static const unsigned extra[] = { 5000, 9000, 9100, 9900 };
	uint64_t *v = malloc(N_BIG * sizeof(*v));
	struct nt_hist h;
	size_t i;

	assert_non_null(v);
	rng_seed(3);
	/* 90 % around 10 us, 10 % around 5 ms, interleaved */
	for (i = 0; i < N_BIG; i++) {
		uint64_t jitter = rng_next() % 1000;

		v[i] = (rng_next() % 10 ? 10000 : 5000000) + jitter;
	}
	check_dataset("bimodal", v, N_BIG, extra, 4);

	/* exact 90/10 split: p90 must be the low mode, p91 the high one */
	nt_hist_init(&h);
	for (i = 0; i < 1000; i++)
		assert_int_equal(nt_hist_add(&h, i % 10 == 9 ? 5000000 : 10000), 0);
	assert_true(pct_ok(nt_hist_percentile(&h, 50), 10000));
	assert_true(pct_ok(nt_hist_percentile(&h, 90), 10000));
	assert_true(pct_ok(nt_hist_percentile(&h, 90.1), 5000000));
	assert_true(pct_ok(nt_hist_percentile(&h, 91), 5000000));
	assert_true(pct_ok(nt_hist_percentile(&h, 99), 5000000));
	/* the extreme ranks are min and max, which are kept exactly */
	assert_true(nt_hist_percentile(&h, 0.1) == 10000);
	assert_true(nt_hist_percentile(&h, 99.95) == 5000000);
	nt_hist_free(&h);
	free(v);
}

static void test_pareto(void **state __maybe_unused)
{
	uint64_t *v = malloc(N_BIG * sizeof(*v));
	size_t i;

	assert_non_null(v);
	rng_seed(4);
	/* alpha 1.2, x_m 1 us: heavy tail up to ~1e16 ns (u >= 2^-53) */
	for (i = 0; i < N_BIG; i++)
		v[i] = (uint64_t)(1000.0 * pow(rng_unit(), -1.0 / 1.2));
	check_dataset("pareto", v, N_BIG, NULL, 0);
	free(v);
}

static void test_all_percentiles(void **state __maybe_unused)
{
	enum { N = 20000 };
	uint64_t *v = malloc(N * sizeof(*v));
	unsigned *pm = malloc(10001 * sizeof(*pm));
	size_t i;

	assert_non_null(v);
	assert_non_null(pm);
	rng_seed(5);
	/* log-uniform over 1 ns .. 2^40 ns: exercises every octave */
	for (i = 0; i < N; i++)
		v[i] = rng_next() >> (24 + rng_next() % 40);
	for (i = 0; i <= 10000; i++)
		pm[i] = i;
	check_dataset("log-uniform/all", v, N, pm, 10001);
	free(pm);
	free(v);
}

static void test_constant(void **state __maybe_unused)
{
	struct nt_hist h;
	size_t i, j;

	nt_hist_init(&h);
	for (i = 0; i < 1000; i++)
		assert_int_equal(nt_hist_add(&h, 12345678), 0);
	/* clamping into [min, max] makes a constant come back exactly */
	for (j = 0; j < sizeof(pct_list) / sizeof(pct_list[0]); j++)
		assert_true(nt_hist_percentile(&h, pct_list[j] / 100.0) == 12345678);
	assert_true(nt_hist_mean(&h) == 12345678.0);
	nt_hist_free(&h);
}

static void test_single(void **state __maybe_unused)
{
	static const uint64_t vals[] = { 0, 1, 127, 128, 987654321, UINT64_MAX };
	struct nt_hist h;
	size_t i, j;

	for (i = 0; i < sizeof(vals) / sizeof(vals[0]); i++) {
		nt_hist_init(&h);
		assert_int_equal(nt_hist_add(&h, vals[i]), 0);
		for (j = 0; j < sizeof(pct_list) / sizeof(pct_list[0]); j++)
			assert_true(nt_hist_percentile(&h, pct_list[j] / 100.0) == vals[i]);
		nt_hist_free(&h);
	}
}

static void test_edges(void **state __maybe_unused)
{
	uint64_t v[3 + 64 * 5];
	size_t n = 0;
	unsigned k, pm[10001];
	struct nt_hist h;

	v[n++] = 0;
	v[n++] = 1;
	v[n++] = UINT64_MAX;
	for (k = 1; k < 64; k++) {
		uint64_t p = 1ull << k;

		v[n++] = p - 1;
		v[n++] = p;
		v[n++] = p + 1;
		v[n++] = p - p / 256;	/* just under a sub-bucket edge */
		v[n++] = p + p / 256;
	}
	for (k = 0; k <= 10000; k++)
		pm[k] = k;
	check_dataset("edges", v, n, pm, 10001);

	/* sum saturates instead of wrapping */
	nt_hist_init(&h);
	assert_int_equal(nt_hist_add(&h, UINT64_MAX), 0);
	assert_int_equal(nt_hist_add(&h, UINT64_MAX), 0);
	assert_int_equal(nt_hist_add(&h, 1), 0);
	assert_true(h.sum == UINT64_MAX);
	assert_true(pct_ok(nt_hist_percentile(&h, 50), UINT64_MAX));
	assert_true(nt_hist_percentile(&h, 100) == UINT64_MAX);
	assert_true(nt_hist_percentile(&h, 0) == 1);
	nt_hist_free(&h);
}

static void test_small_exact(void **state __maybe_unused)
{
	enum { N = 10000 };
	uint64_t v[N], s[N];
	struct nt_hist h;
	size_t i;

	rng_seed(6);
	for (i = 0; i < N; i++)
		v[i] = rng_next() % 200;	/* all below the exact limit */
	memcpy(s, v, sizeof(s));
	qsort(s, N, sizeof(*s), cmp_u64);
	build(&h, v, N);
	for (i = 0; i <= 10000; i++)
		assert_true(nt_hist_percentile(&h, i / 100.0) == exact_pct(s, N, i));
	nt_hist_free(&h);
}

static void test_mean(void **state __maybe_unused)
{
	struct nt_hist h;
	uint64_t i;

	nt_hist_init(&h);
	for (i = 1; i <= 1000; i++)
		assert_int_equal(nt_hist_add(&h, i), 0);
	assert_true(h.sum == 500500);
	assert_true(fabs(nt_hist_mean(&h) - 500.5) < 1e-9);
	nt_hist_free(&h);
}

static void test_merge(void **state __maybe_unused)
{
	uint64_t *v = malloc(N_BIG * sizeof(*v));
	struct nt_hist all, a, b, empty;
	struct nt_hist *m[] = { &a, &empty };
	size_t i;

	assert_non_null(v);
	rng_seed(7);
	for (i = 0; i < N_BIG; i++)
		v[i] = (uint64_t)(-1e6 * log(rng_unit()));
	build(&all, v, N_BIG);
	build(&a, v, N_BIG / 2);
	build(&b, v + N_BIG / 2, N_BIG - N_BIG / 2);

	/* dst without buckets: merge must allocate */
	nt_hist_init(&empty);
	assert_int_equal(nt_hist_merge(&empty, &a), 0);
	assert_int_equal(nt_hist_merge(&empty, &b), 0);
	assert_int_equal(nt_hist_merge(&a, &b), 0);

	for (i = 0; i < 2; i++) {
		size_t j;

		assert_true(m[i]->count == all.count);
		assert_true(m[i]->sum == all.sum);
		assert_true(m[i]->min == all.min);
		assert_true(m[i]->max == all.max);
		assert_memory_equal(m[i]->buckets, all.buckets,
				    NT_HIST_NBUCKETS * sizeof(uint64_t));
		for (j = 0; j <= 1000; j++)
			assert_true(nt_hist_percentile(m[i], j / 10.0) ==
				    nt_hist_percentile(&all, j / 10.0));
	}

	/* merging an empty source changes nothing */
	nt_hist_free(&b);
	assert_int_equal(nt_hist_merge(&a, &b), 0);
	assert_true(a.count == all.count);

	nt_hist_free(&all);
	nt_hist_free(&a);
	nt_hist_free(&empty);
	free(v);
}

/* |bucket_value(bucket(v)) - v| <= v / 256 (the proven bound), exact below 256. */
static void check_bucket(uint64_t v, uint32_t *prev_b, uint64_t *prev_v)
{
	uint32_t b = nt_hist_bucket(v);
	uint64_t r = nt_hist_bucket_value(b);
	uint64_t d = r > v ? r - v : v - r;

	assert_true(b < NT_HIST_NBUCKETS);
	if (v >= *prev_v)
		assert_true(b >= *prev_b);
	if (v < 2 * NT_HIST_SUB)
		assert_true(r == v);
	else if ((unsigned __int128)d * 2 * NT_HIST_SUB > v)
		fail_msg("bucket_value(bucket(%llu)) = %llu", (unsigned long long)v,
			 (unsigned long long)r);
	*prev_b = b;
	*prev_v = v;
}

static void test_buckets(void **state __maybe_unused)
{
	uint32_t b, pb = 0;
	uint64_t v, pv = 0, prev = 0;
	unsigned k;
	int d;

	/* dense sweep of the low range */
	for (v = 0; v < (1u << 18); v++)
		check_bucket(v, &pb, &pv);
	/* around every power of two */
	for (k = 18; k < 64; k++)
		for (d = -300; d <= 300; d++)
			check_bucket((1ull << k) + d, &pb, &pv);
	check_bucket(UINT64_MAX - 1, &pb, &pv);
	check_bucket(UINT64_MAX, &pb, &pv);
	assert_int_equal(nt_hist_bucket(0), 0);
	assert_int_equal(nt_hist_bucket(UINT64_MAX), NT_HIST_NBUCKETS - 1);
	/* geometric sweep: v *= 1.001 */
	pb = 0;
	pv = 0;
	for (v = 1; v < UINT64_MAX / 1002 * 1000; v += v / 1000 + 1)
		check_bucket(v, &pb, &pv);

	/* representatives strictly increase and map back to their bucket */
	for (b = 0; b < NT_HIST_NBUCKETS; b++) {
		uint64_t r = nt_hist_bucket_value(b);

		if (b)
			assert_true(r > prev);
		assert_int_equal(nt_hist_bucket(r), b);
		prev = r;
	}
}

/* biolatency's bins: [2^i, 2^(i+1) - 1] us, bin 0 holding 0 and 1 us; truncated to whole us */
static void test_log2_us(void **state)
{
	/* each value more than 0.4 % inside its bin: a bucket's midpoint cannot leave it */
	static const struct { uint64_t ns; int bin; } v[] = {
		{ 0, 0 }, { 500, 0 }, { 1500, 0 }, { 1990, 0 }, { 2010, 1 }, { 3980, 1 }, { 4020, 2 },
		{ 100500, 6 }, { 1005000, 9 }, { 1030000, 10 }, { 5000000000ull, 22 },
	};
	struct nt_hist h;
	uint64_t bins[NT_LOG2_BINS], want[NT_LOG2_BINS] = { 0 };
	int n;

	nt_hist_init(&h);
	assert_int_equal(nt_hist_log2_us(&h, bins), 0);
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		assert_int_equal(nt_hist_add(&h, v[i].ns), 0);
		assert_int_equal(nt_hist_add(&h, v[i].ns), 0);
		want[v[i].bin] += 2;
	}
	n = nt_hist_log2_us(&h, bins);
	assert_int_equal(n, 23);
	for (int i = 0; i < NT_LOG2_BINS; i++)
		assert_int_equal(bins[i], want[i]);
	nt_hist_free(&h);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_checker_catches_errors),
		cmocka_unit_test(test_empty),
		cmocka_unit_test(test_zeroed_struct),
		cmocka_unit_test(test_uniform),
		cmocka_unit_test(test_exponential),
		cmocka_unit_test(test_bimodal),
		cmocka_unit_test(test_pareto),
		cmocka_unit_test(test_all_percentiles),
		cmocka_unit_test(test_constant),
		cmocka_unit_test(test_single),
		cmocka_unit_test(test_edges),
		cmocka_unit_test(test_small_exact),
		cmocka_unit_test(test_mean),
		cmocka_unit_test(test_merge),
		cmocka_unit_test(test_buckets),
		cmocka_unit_test(test_log2_us),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
