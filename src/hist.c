/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * hist - streaming log-linear latency histogram (HdrHistogram-style).
 *
 * Layout, with S = NT_HIST_SUB_BITS (7) and N = NT_HIST_SUB (128):
 *
 *   v < 2N          bucket b = v                      (exact, width 1)
 *   v >= 2N         s = msb(v) - S, b = s*N + (v >> s) (width 2^s)
 *
 * For v in [2^m, 2^(m+1)) with m >= S, v >> s lies in [N, 2N), so each power
 * of two gets N linear sub-buckets and consecutive powers tile without gaps:
 * s = m - S gives b in [(s+1)N, (s+2)N).  m = S (v in [128, 256)) has s = 0
 * and continues the exact range, so buckets 0..2N-1 are all exact.  The top,
 * m = 63, ends at b = 56N + 255 = 58N - 1 = NT_HIST_NBUCKETS - 1.
 *
 * Error bound (why the midpoint is the representative value):
 * a bucket b >= 2N with shift s >= 1 holds [L, L + 2^s - 1] where
 * L = q * 2^s and q = b - s*N is in [N, 2N).  We return r = L + 2^(s-1).
 * For any x in the bucket, |r - x| <= 2^(s-1), and x >= L >= N * 2^s, so
 *
 *   |r - x| / x <= 2^(s-1) / (N * 2^s) = 1 / (2N) = 1/256 < 0.4 %.
 *
 * (Returning the lower bound L would give 1/N = 0.79 %, which is the figure
 * in hist.h; the midpoint halves it.)  Buckets are ordered by value, so the
 * bucket where the cumulative count first reaches the nearest rank k is the
 * bucket holding the true k-th smallest value x; hence the percentile is
 * within 1/256 of x.  Clamping r into [min, max] cannot increase the error
 * because x itself lies in [min, max].  Below 2N the result is exact.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "hist.h"

_Static_assert(NT_HIST_NBUCKETS == (64 - NT_HIST_SUB_BITS + 1) * NT_HIST_SUB,
	       "bucket layout assumes (64 - S + 1) * N buckets");

void nt_hist_init(struct nt_hist *h)
{
	h->count = 0;
	h->sum = 0;
	h->min = UINT64_MAX;
	h->max = 0;
	h->buckets = NULL;
}

void nt_hist_free(struct nt_hist *h)
{
	free(h->buckets);
	nt_hist_init(h);
}

uint32_t nt_hist_bucket(uint64_t v)
{
	return nt_hist_bucket_of(v);
}

uint64_t nt_hist_bucket_value(uint32_t b)
{
	uint32_t s;
	uint64_t q;

	if (b >= NT_HIST_NBUCKETS)
		b = NT_HIST_NBUCKETS - 1;
	if (b < 2 * NT_HIST_SUB)
		return b;			/* exact buckets */
	s = (b >> NT_HIST_SUB_BITS) - 1;
	q = b - ((uint64_t)s << NT_HIST_SUB_BITS);	/* in [N, 2N) */
	/* midpoint; max is 255 << 56 | 1 << 55, no overflow */
	return (q << s) + (1ull << (s - 1));
}

static int alloc_buckets(struct nt_hist *h)
{
	h->buckets = calloc(NT_HIST_NBUCKETS, sizeof(*h->buckets));
	return h->buckets ? 0 : -1;
}

static inline uint64_t sat_add(uint64_t a, uint64_t b)
{
	uint64_t r;

	return __builtin_add_overflow(a, b, &r) ? UINT64_MAX : r;
}

int nt_hist_first(struct nt_hist *h, uint64_t v)
{
	/*
	 * First value: allocate and seed min/max.  Keyed on count rather than
	 * on buckets == NULL so a zero-filled struct (min = 0) also works.
	 */
	if (!h->buckets && alloc_buckets(h))
		return -1;
	h->min = v;
	h->max = v;
	h->buckets[nt_hist_bucket_of(v)]++;
	h->count++;
	h->sum = sat_add(h->sum, v);
	return 0;
}

int nt_hist_add_n(struct nt_hist *h, uint64_t v, uint64_t n, uint64_t sum)
{
	if (!n)
		return 0;
	if (h->count == 0) {
		if (!h->buckets && alloc_buckets(h))
			return -1;
		h->min = v;
		h->max = v;
	}
	h->buckets[nt_hist_bucket_of(v)] += n;
	h->count += n;
	h->sum = sat_add(h->sum, sum);
	if (v < h->min)
		h->min = v;
	if (v > h->max)
		h->max = v;
	return 0;
}

int nt_hist_merge(struct nt_hist *dst, const struct nt_hist *src)
{
	uint32_t i;

	if (!src->count || !src->buckets)
		return 0;
	if (!dst->buckets && alloc_buckets(dst))
		return -1;
	for (i = 0; i < NT_HIST_NBUCKETS; i++)
		dst->buckets[i] += src->buckets[i];
	if (!dst->count || src->min < dst->min)
		dst->min = src->min;
	if (!dst->count || src->max > dst->max)
		dst->max = src->max;
	dst->count += src->count;
	dst->sum = sat_add(dst->sum, src->sum);
	return 0;
}

/*
 * Nearest rank k = ceil(p/100 * count), in [1, count].  p is usually a
 * decimal (99.9) that binary cannot hold exactly, so p * count may land an
 * ulp or two above an integer and ceil() would skip a whole rank (visible
 * with bimodal data: p90 of a 90/10 split).  Computing p * count first keeps
 * integer p exact; shaving 2^-50 relative absorbs the representation error
 * of p without moving any genuine fractional rank.
 */
static uint64_t nearest_rank(uint64_t count, double p)
{
	double x = p * (double)count / 100.0;
	uint64_t k;

	x -= x * 0x1p-50;
	if (x >= (double)count)
		return count;
	k = (uint64_t)ceil(x);
	if (k < 1)
		k = 1;
	if (k > count)
		k = count;
	return k;
}

uint64_t nt_hist_percentile(const struct nt_hist *h, double p)
{
	uint64_t k, cum = 0, r;
	uint32_t b, last;

	if (!h->count || !h->buckets)
		return 0;
	if (!(p > 0))			/* also catches NaN */
		return h->min;
	if (p >= 100)
		return h->max;
	k = nearest_rank(h->count, p);
	/* the extreme ranks are kept exactly */
	if (k == 1)
		return h->min;
	if (k == h->count)
		return h->max;
	/* nothing lives outside [bucket(min), bucket(max)] */
	last = nt_hist_bucket_of(h->max);
	for (b = nt_hist_bucket_of(h->min); b < last; b++) {
		cum += h->buckets[b];
		if (cum >= k)
			break;
	}
	r = nt_hist_bucket_value(b);
	if (r < h->min)
		r = h->min;
	if (r > h->max)
		r = h->max;
	return r;
}

/* Mean of the values; underestimates once sum has saturated (> 584 years). */
double nt_hist_mean(const struct nt_hist *h)
{
	return h->count ? (double)h->sum / (double)h->count : 0.0;
}

int nt_hist_log2_us(const struct nt_hist *h, uint64_t bins[NT_LOG2_BINS])
{
	uint32_t b, last;
	int n = 0;

	memset(bins, 0, NT_LOG2_BINS * sizeof(*bins));
	if (!h->count || !h->buckets)
		return 0;
	last = nt_hist_bucket_of(h->max);
	for (b = nt_hist_bucket_of(h->min); b <= last; b++) {
		uint64_t v, us;
		int i;

		if (!h->buckets[b])
			continue;
		v = nt_hist_bucket_value(b);
		/* the extreme buckets hold min and max exactly */
		v = v < h->min ? h->min : v > h->max ? h->max : v;
		us = v / 1000;
		i = us > 1 ? 63 - __builtin_clzll(us) : 0;
		if (i >= NT_LOG2_BINS)
			i = NT_LOG2_BINS - 1;
		bins[i] += h->buckets[b];
		if (i + 1 > n)
			n = i + 1;
	}
	return n;
}
