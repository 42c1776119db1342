/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * hist - streaming log-linear latency histogram.
 *
 * Values are nanoseconds (uint64).  Buckets are exact below 2^NT_HIST_SUB_BITS
 * and log-linear above (2^NT_HIST_SUB_BITS linear sub-buckets per power of two),
 * so a percentile read back is within 1 % of the true sample value, whatever
 * the number of values; memory is fixed.  Mergeable (two hosts, per-CPU, ...).
 */
#ifndef NTBPF_HIST_H
#define NTBPF_HIST_H

#include <stdint.h>

#define NT_HIST_SUB_BITS 7			/* 128 sub-buckets: <= 0.79 % error */
#define NT_HIST_SUB (1u << NT_HIST_SUB_BITS)
#define NT_HIST_NBUCKETS ((64 - NT_HIST_SUB_BITS + 1) * NT_HIST_SUB)

struct nt_hist {
	uint64_t count;
	uint64_t sum;		/* for the average (saturating) */
	uint64_t min, max;	/* exact */
	uint64_t *buckets;	/* NT_HIST_NBUCKETS counters, allocated on first add */
};

void nt_hist_init(struct nt_hist *h);
void nt_hist_free(struct nt_hist *h);
/* the first value (allocates the buckets): 0, or -1 on allocation failure */
int nt_hist_first(struct nt_hist *h, uint64_t v);

/*
 * The bucket of v, without a branch on the value range.  OR-ing in N makes
 * the msb at least S, so small values get shift 0 and land in bucket v; it
 * also keeps the clz argument non-zero (clz(0) is undefined).
 */
static inline uint32_t nt_hist_bucket_of(uint64_t v)
{
	uint32_t s = 63 - __builtin_clzll(v | NT_HIST_SUB) - NT_HIST_SUB_BITS;

	return (s << NT_HIST_SUB_BITS) + (uint32_t)(v >> s);
}

/* add one value: 0, or -1 on allocation failure.  Inline: the report adds ~10 per I/O */
static inline int nt_hist_add(struct nt_hist *h, uint64_t v)
{
	uint64_t sum;

	if (__builtin_expect(h->count == 0, 0))
		return nt_hist_first(h, v);
	h->buckets[nt_hist_bucket_of(v)]++;
	h->count++;
	h->sum = __builtin_add_overflow(h->sum, v, &sum) ? UINT64_MAX : sum;	/* saturating */
	h->min = v < h->min ? v : h->min;
	h->max = v > h->max ? v : h->max;
	return 0;
}
/* n values of about v (an in-kernel bucket's midpoint) whose exact total is sum */
int nt_hist_add_n(struct nt_hist *h, uint64_t v, uint64_t n, uint64_t sum);
int nt_hist_merge(struct nt_hist *dst, const struct nt_hist *src);
/* p in [0, 100]; nearest-rank percentile; 0 for an empty histogram.  p=0 gives min, p=100 max. */
uint64_t nt_hist_percentile(const struct nt_hist *h, double p);
double nt_hist_mean(const struct nt_hist *h);

/*
 * biolatency's log2 histogram of the values in microseconds: bins[i] counts
 * values of [2^i, 2^(i+1) - 1] us (bins[0]: 0 and 1 us), each bucket taken
 * at its representative value (within 0.4 %).  Returns the number of bins
 * up to the last non-empty one (0: empty).
 */
#define NT_LOG2_BINS 48
int nt_hist_log2_us(const struct nt_hist *h, uint64_t bins[NT_LOG2_BINS]);

/* bucket index of v and the representative value of a bucket (exposed for tests) */
uint32_t nt_hist_bucket(uint64_t v);
uint64_t nt_hist_bucket_value(uint32_t b);

#endif
