/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * recsum.c - the checks of the record file's uncoded chunks: Fletcher's sums
 * over little-endian 64-bit words (two SSE2 lanes where there is SSE2, the
 * plain loop as the reference), folded for a RECS chunk and mixed for a RECP
 * one.  docs/record-format.md, `RECS` and `RECP`.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
#include <zlib.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "recfile_int.h"

/* Fletcher's sums over the body's little-endian 64-bit words: a = sum of words, b = sum of a after each */
static void fletcher64_scalar(const uint8_t *p, size_t len, uint64_t *pa, uint64_t *pb)
{
	uint64_t a = *pa, b = *pb, v;
	size_t i;

	/* unrolled: a load and two adds a word, the loop's own three every four words */
#pragma GCC unroll 4
	for (i = 0; i + 8 <= len; i += 8) {
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
		memcpy(&v, p + i, 8);
#else
		v = get64(p + i);
#endif
		a += v;
		b += a;
	}
	*pa = a;
	*pb = b;
}

#if defined(__SSE2__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
/*
 * The same sums two words at a time (SSE2, which every x86-64 has): lane 0
 * sums the even words, lane 1 the odd ones, each with its own b.  After m
 * pairs, A0 = sum w[2i], A1 = sum w[2i+1], B0 = sum (m - i) w[2i] and
 * B1 = sum (m - i) w[2i+1], while Fletcher's b = sum (n - j) w[j] over the
 * n = 2m words: n - 2i = 2 (m - i), n - 2i - 1 = 2 (m - i) - 1, so
 * b = 2 B0 + 2 B1 - A1 and a = A0 + A1 (all mod 2^64).  A load and two adds
 * per two words where the scalar loop takes three instructions a word
 * (~15 fewer a packed record on the lab's clock).
 */
static void fletcher64(const uint8_t *p, size_t len, uint64_t *pa, uint64_t *pb)
{
	__m128i A = _mm_setzero_si128(), B = _mm_setzero_si128();
	const uint8_t *q = p, *end4 = p + len / 64 * 64, *end = p + len / 16 * 16;
	uint64_t a0, a1, b0, b1;
	size_t i;

	/* the writer's chunk is malloc'd, so aligned: each load folds into its add */
	if (!((uintptr_t)p & 15)) {
		for (; q < end4; q += 64) {
			A = _mm_add_epi64(A, *(const __m128i *)q);
			B = _mm_add_epi64(B, A);
			A = _mm_add_epi64(A, *(const __m128i *)(q + 16));
			B = _mm_add_epi64(B, A);
			A = _mm_add_epi64(A, *(const __m128i *)(q + 32));
			B = _mm_add_epi64(B, A);
			A = _mm_add_epi64(A, *(const __m128i *)(q + 48));
			B = _mm_add_epi64(B, A);
		}
		for (; q < end; q += 16) {
			A = _mm_add_epi64(A, *(const __m128i *)q);
			B = _mm_add_epi64(B, A);
		}
	} else {
		for (; q < end; q += 16) {
			A = _mm_add_epi64(A, _mm_loadu_si128((const __m128i *)q));
			B = _mm_add_epi64(B, A);
		}
	}
	i = (size_t)(q - p);
	a0 = (uint64_t)_mm_cvtsi128_si64(A);
	a1 = (uint64_t)_mm_cvtsi128_si64(_mm_unpackhi_epi64(A, A));
	b0 = (uint64_t)_mm_cvtsi128_si64(B);
	b1 = (uint64_t)_mm_cvtsi128_si64(_mm_unpackhi_epi64(B, B));
	*pa = a0 + a1;
	*pb = 2 * b0 + 2 * b1 - a1;
	/* an odd word last */
	fletcher64_scalar(p + i, len - i, pa, pb);
}
#else
static void fletcher64(const uint8_t *p, size_t len, uint64_t *pa, uint64_t *pb)
{
	*pa = *pb = 0;
	fletcher64_scalar(p, len, pa, pb);
}
#endif

/* the scalar loop alone, for the tests that hold the two to one answer */
void nt_fletcher64_ref(const uint8_t *p, size_t len, uint64_t *pa, uint64_t *pb)
{
	*pa = *pb = 0;
	fletcher64_scalar(p, len, pa, pb);
}

void nt_fletcher64(const uint8_t *p, size_t len, uint64_t *pa, uint64_t *pb)
{
	fletcher64(p, len, pa, pb);
}

/*
 * The check of a RECS chunk (version 4's uncoded records): the sums folded
 * to 32 bits.  ~3 instructions per word where zlib's CRC32 takes ~4 per
 * byte.  Its fold is weak: a change in a word's top bytes reaches only the
 * check's top bits, and ~1.6 % of single bit flips go unseen.  Read only;
 * RECP chunks have nt_pack_check.
 */
uint32_t nt_raw_check(const uint8_t *p, size_t len)
{
	uint64_t a, b;

	fletcher64(p, len, &a, &b);
	a ^= b * 0x9e3779b97f4a7c15ull;
	return (uint32_t)(a ^ a >> 32);
}

/* MurmurHash3's finaliser: a bijection whose every output bit depends on every input bit */
static uint64_t fmix64(uint64_t k)
{
	k ^= k >> 33;
	k *= 0xff51afd7ed558ccdull;
	k ^= k >> 33;
	k *= 0xc4ceb9fe1a85ec53ull;
	k ^= k >> 33;
	return k;
}

/*
 * The check of a RECP chunk: the same sums, mixed before the fold, so that
 * any change of a word (which changes a) or swap of two different words
 * (which changes b) changes the check but with probability 2^-32.  The
 * mixing is ~15 instructions a chunk.
 */
uint32_t nt_pack_check(const uint8_t *p, size_t len)
{
	uint64_t a, b, x;

	fletcher64(p, len, &a, &b);
	x = fmix64(a + fmix64(b));
	return (uint32_t)(x ^ x >> 32);
}
