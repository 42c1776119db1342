// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * colenc.c - the column codec's encoder: a chunk of records as bit-packed
 * columns (src/colcodec_int.h says how a column is written; coldec.c reads
 * it back).  The writer picks mode, base and b per column and chunk for the
 * fewest bits.
 */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <endian.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "bytebuf.h"
#include "chunk.h"
#include "colcodec.h"
#include "colcodec_int.h"

static inline unsigned int uv_len(unsigned int bits)
{
	return bits ? (bits + 6) / 7 : 1;
}

static inline unsigned int bitlen(uint64_t v)
{
	return v ? 64 - __builtin_clzll(v) : 0;
}

/* Bit k set: ev[k] is not zero (SSE2, which every x86-64 has: 4 compares and a movemask). */
static inline uint32_t ev_nonzero(const struct ntbpf_rec *r)
{
#if defined(__SSE2__) && NTBPF_MAX_EV == 16
	const __m128i z = _mm_setzero_si128();
	__m128i a = _mm_cmpeq_epi32(_mm_loadu_si128((const __m128i *)&r->ev[0]), z);
	__m128i b = _mm_cmpeq_epi32(_mm_loadu_si128((const __m128i *)&r->ev[4]), z);
	__m128i c = _mm_cmpeq_epi32(_mm_loadu_si128((const __m128i *)&r->ev[8]), z);
	__m128i d = _mm_cmpeq_epi32(_mm_loadu_si128((const __m128i *)&r->ev[12]), z);

	/* each word's all-ones or zero to a byte, in order; movemask: a bit per byte */
	return ~(uint32_t)_mm_movemask_epi8(_mm_packs_epi16(_mm_packs_epi32(a, b), _mm_packs_epi32(c, d))) & 0xffff;
#else
	uint32_t nz = 0;

	for (unsigned int k = 0; k < NTBPF_MAX_EV; k++)
		nz |= (uint32_t)(r->ev[k] != 0) << k;
	return nz;
#endif
}

/* Slots with a value in the chunk: ev_mask, and any other slot not zero. */
static inline uint32_t stored_slots(const struct ntbpf_rec *r, uint32_t *xmask)
{
	uint32_t all = (uint32_t)((1ull << NTBPF_MAX_EV) - 1), xm = ev_nonzero(r) & ~r->ev_mask & all;

	if (xmask)
		*xmask = xm;
	return (r->ev_mask | xm) & all;
}

/*
 * The values of column col (of the fixed and ev[] columns) in mode for the
 * n records into v[]; returns how many.  slots[] and xmask[]: each record's
 * stored slots and extra-slot mask.
 */
static uint32_t field_values(const struct ntbpf_rec *r, uint32_t n, unsigned int col,
			     unsigned int mode, const uint32_t *slots, const uint32_t *xmask,
			     uint64_t *v)
{
	uint32_t i, cnt = 0, prev = n ? (uint32_t)r[0].t0 : 0;

#define EACH(expr)	do {			\
		for (i = 0; i < n; i++)		\
			v[i] = (expr);		\
		return n;			\
	} while (0)

	switch (col) {
	case C_T0:
		EACH(r[i].t0 - (i ? r[i - 1].t0 : 0));
	case C_DEV:
		EACH(r[i].dev);
	case C_BYTES:
		EACH(r[i].bytes);
	case C_SECTOR:
		if (mode == M_ALT)
			EACH(r[i].sector);
		EACH(r[i].sector - (i ? r[i - 1].sector + (r[i - 1].bytes >> 9) : 0));
	case C_MASK:
		EACH(r[i].ev_mask);
	case C_CTRL:
		EACH(r[i].ctrl);
	case C_QID:
		EACH(r[i].qid);
	case C_CID:
		EACH(r[i].cid & TAG_MASK);
	case C_OP:
		EACH(r[i].op);
	case C_OPCODE:
		EACH(r[i].opcode);
	case C_FLAGS:
		EACH(r[i].flags);
	case C_ROLE:
		EACH(r[i].role);
	case C_STATUS:
		EACH(r[i].status);
	case C_XMASK:
		EACH(xmask[i]);
	}
#undef EACH
	col -= C_EV0;
	if (mode == M_T0) {
		for (i = 0; i < n; i++)
			if (slots[i] >> col & 1)
				v[cnt++] = r[i].ev[col];
		return cnt;
	}
	if (mode == M_ALT) {	/* from the previous record's, in absolute time */
		for (i = 0; i < n; i++) {
			uint32_t at = (uint32_t)r[i].t0 + r[i].ev[col];

			if (slots[i] >> col & 1) {
				v[cnt++] = (uint32_t)(at - prev);
				prev = at;
			}
		}
		return cnt;
	}
	for (i = 0; i < n; i++) {
		uint32_t below = slots[i] & ((1u << col) - 1);

		if (slots[i] >> col & 1)	/* from the previous stored slot, or 0 */
			v[cnt++] = (uint32_t)(r[i].ev[col] -
				   (below ? r[i].ev[31 - __builtin_clz(below)] : 0));
	}
	return cnt;
}

/* The gen column (cid >> 12), as is or from its prediction. */
static uint32_t gen_values(const struct ntbpf_rec *r, uint32_t n, unsigned int mode,
			   uint8_t *tbl, uint64_t *v)
{
	uint32_t i;

	if (mode != M_ALT) {
		for (i = 0; i < n; i++)
			v[i] = r[i].cid >> TAG_BITS;
		return n;
	}
	memset(tbl, 0, GEN_TBL);
	for (i = 0; i < n; i++) {
		unsigned int g = r[i].cid >> TAG_BITS;
		uint8_t *p = &tbl[gen_slot(r[i].qid, r[i].cid & TAG_MASK)];

		v[i] = (g - *p) & 15;
		*p = (g + 1) & 15;
	}
	return n;
}

/*
 * Bits per value for the fewest bits in all, exceptions counted with their
 * varint and EXC_COST more: an exception is a mispredicted branch and a
 * varint to decode, worth a byte of file to avoid.  hist[l]: offsets of
 * bit length l; ones[l]: offsets equal to 2^l - 1 (escapes at b = l).
 */
#define EXC_COST	8	/* bits */

static unsigned int pick_b(const uint32_t *hist, const uint32_t *ones, uint32_t n,
			   unsigned int w, uint64_t *costp)
{
	unsigned int b, l, best = 0, maxl = 0;
	uint64_t cost, best_cost = ~0ull;

	for (l = 0; l <= 64; l++)
		if (hist[l])
			maxl = l;
	*costp = 0;
	if (!maxl)
		return 0;	/* all equal to base: no bits, no escape */
	for (b = 1; b <= MAX_B && b <= w; b++) {
		cost = (uint64_t)n * b + (uint64_t)ones[b] * (8 + EXC_COST);
		for (l = b + 1; l <= maxl; l++)
			cost += (uint64_t)hist[l] * (8 * uv_len(l) + EXC_COST);
		if (cost < best_cost) {
			best_cost = cost;
			best = b;
		}
		if (b > maxl)	/* maxl + 1: no escape among the values */
			break;
	}
	*costp = best_cost;
	return best;
}

/*
 * Packed bits, LSB first, each column from a byte boundary: into room
 * reserved for the whole column and 8 bytes more (bitw_begin), unchecked.
 * The accumulator is stored 8 bytes at a time when the next value would
 * not fit: once per 64 / b values, not once per byte.
 */
struct bitw {
	struct buf *b;
	uint8_t *p;		/* next byte; NULL: out of memory */
	uint64_t acc;
	unsigned int n;		/* bits in acc */
};

static inline void bitw_begin(struct bitw *bw, struct buf *b, uint64_t nbits)
{
	size_t at = b->len;

	bw->b = b;
	bw->acc = 0;
	bw->n = 0;
	bw->p = buf_room(b, (nbits + 7) / 8 + 8);
	b->len = at;	/* what bitw_end wrote counts */
}

/* bits <= MAX_B: after a flush at most 7 bits wait, and 7 + 56 < 64 */
static inline void bitw_put(struct bitw *bw, uint64_t v, unsigned int bits)
{
	if (bw->n + bits > 64) {
		uint64_t le = htole64(bw->acc);

		memcpy(bw->p, &le, 8);
		bw->p += bw->n >> 3;
		bw->acc = bw->n >= 64 ? 0 : bw->acc >> (bw->n & ~7u);
		bw->n &= 7;
	}
	bw->acc |= v << bw->n;	/* n < 64 here */
	bw->n += bits;
}

static void bitw_end(struct bitw *bw)
{
	uint64_t le = htole64(bw->acc);

	memcpy(bw->p, &le, 8);
	bw->p += (bw->n + 7) >> 3;
	bw->b->len = bw->p - bw->b->p;
	bw->acc = 0;
	bw->n = 0;
}

struct nt_colenc {
	struct buf dir, exc, bits;	/* the three parts of the raw chunk */
	uint64_t *v, *v2;		/* one column's values, in two modes */
	uint8_t *gen_tbl;		/* GEN_TBL predicted gens */
	uint32_t *slots, *xmask;	/* per record: stored ev[] slots, extra ones */
	uint16_t *port_idx;		/* port -> 1 + its dictionary index, 0: not seen */
	uint16_t *ports;		/* the chunk's distinct ports, in order */
};

struct nt_colenc *nt_colenc_new(void)
{
	struct nt_colenc *e = calloc(1, sizeof(*e));

	if (!e)
		return NULL;
	e->v = malloc(NT_CHUNK_RECS * sizeof(*e->v));
	e->v2 = malloc(NT_CHUNK_RECS * sizeof(*e->v2));
	e->gen_tbl = malloc(GEN_TBL);
	e->slots = malloc(NT_CHUNK_RECS * sizeof(*e->slots));
	e->xmask = malloc(NT_CHUNK_RECS * sizeof(*e->xmask));
	e->port_idx = calloc(65536, sizeof(*e->port_idx));
	e->ports = malloc(NT_CHUNK_RECS * sizeof(*e->ports));
	if (!e->v || !e->v2 || !e->gen_tbl || !e->slots || !e->xmask || !e->port_idx || !e->ports) {
		nt_colenc_free(e);
		return NULL;
	}
	return e;
}

void nt_colenc_free(struct nt_colenc *e)
{
	if (!e)
		return;
	free(e->dir.p);
	free(e->exc.p);
	free(e->bits.p);
	free(e->v);
	free(e->v2);
	free(e->gen_tbl);
	free(e->slots);
	free(e->xmask);
	free(e->port_idx);
	free(e->ports);
	free(e);
}

/* The port column's values (see C_PORT): dictionary indexes or new ports. */
static uint32_t port_values(struct nt_colenc *e, const struct ntbpf_rec *r, uint32_t n)
{
	uint32_t i, d = 0;

	for (i = 0; i < n; i++) {
		uint16_t p = r[i].port, x = e->port_idx[p];

		if (x) {
			e->v[i] = x - 1;
		} else {
			e->v[i] = (uint64_t)d + p;
			e->ports[d++] = p;
			e->port_idx[p] = d;	/* n <= NT_CHUNK_RECS: fits */
		}
	}
	for (i = 0; i < d; i++)
		e->port_idx[e->ports[i]] = 0;
	return n;
}

/* A column's values in one mode: base, offsets, b and the cost in bits. */
struct plan {
	uint64_t *v;		/* values, then offsets from base */
	uint32_t cnt;
	uint64_t base, cost;
	unsigned int b;
};

/*
 * The k-th value of a sample of one in step: anywhere in the k-th step, not
 * at a fixed place in it, lest a sample of one in 8 of a column that repeats
 * every 4 values (I/O spread over 4 queues) see a constant.
 */
#define SAMPLE_AT(k, step)	((k) * (step) + (step > 1 ? (uint32_t)(((k) * 0x9E3779B97F4A7C15ull) >> 40) % (step) : 0))

/*
 * nh: the plan is made on about nh values spread over the column (all of
 * them where nh >= cnt; SAMPLE_AT): whether the base is the smallest value unsigned or
 * signed (whichever spans less), and b, for those values; base is then the
 * smallest of all values in that order, and those that do not fit in b
 * bits become exceptions like any other.  A column that is not constant
 * gets at least one bit: b = 0 means "every value is base".  exact false (a
 * mode's trial): base and the cost from the sample alone.
 */
static void plan(struct plan *p, unsigned int w, uint32_t nh, bool exact)
{
	uint64_t mw = width_mask(w), sb = 1ull << (w - 1), umin = ~0ull, umax = 0, ymin = ~0ull, ymax = 0;
	uint64_t flip, mn, mx, *v = p->v;
	uint32_t hist[65] = { 0 }, ones[65] = { 0 }, i, k, n = p->cnt, step = nh < n ? n / nh : 1, ns = n / step;

	if (!n) {
		p->base = 0;
		p->b = 0;
		p->cost = 8;
		return;
	}
	/* y = x ^ sb orders the values as signed numbers of w bits */
	for (k = 0; k < ns; k++) {
		uint64_t x = v[SAMPLE_AT(k, step)] & mw, y = x ^ sb;

		umin = x < umin ? x : umin;
		umax = x > umax ? x : umax;
		ymin = y < ymin ? y : ymin;
		ymax = y > ymax ? y : ymax;
	}
	flip = ymax - ymin < umax - umin ? sb : 0;
	mn = flip ? ymin : umin;
	mx = flip ? ymax : umax;
	if (step > 1 && exact) {	/* the rest of the values: the smallest and largest in that order */
		for (i = 0; i < n; i++) {
			uint64_t y = (v[i] & mw) ^ flip;

			mn = y < mn ? y : mn;
			mx = y > mx ? y : mx;
		}
	}
	p->base = (mn ^ flip) & mw;
	if (mn == mx) {
		/* a constant column: no bits (v[] is not read) */
		p->b = 0;
		p->cost = 8 * uv_len(bitlen(p->base));
		return;
	}
	for (k = 0; k < ns; k++) {
		uint64_t off = (v[SAMPLE_AT(k, step)] - p->base) & mw;
		unsigned int l = bitlen(off);

		hist[l]++;
		ones[l] += !(off & (off + 1));	/* 2^l - 1; ones[0] is never read */
	}
	p->b = pick_b(hist, ones, ns, w, &p->cost);
	if (!p->b)
		p->b = 1;
	p->cost += 8 * uv_len(bitlen(p->base));
}

static uint32_t col_values(struct nt_colenc *e, const struct ntbpf_rec *recs, uint32_t n,
			   unsigned int col, unsigned int mode, uint64_t *v)
{
	if (col == C_PORT)
		return port_values(e, recs, n);	/* into e->v */
	if (col == C_GEN)
		return gen_values(recs, n, mode, e->gen_tbl, v);
	if (col == C_DEPTH) {
		for (uint32_t i = 0; i < n; i++)
			v[i] = recs[i].depth;
		return n;
	}
	return field_values(recs, n, col, mode, e->slots, e->xmask, v);
}

#define PICK_RECS 512	/* a large chunk's b is chosen on this many of its values */
#define PICK_MODE_RECS 512	/* and its mode on its first this many records, */
#define PICK_MODE_SAMPLE 128	/* costed on this many of their values */

/*
 * Encode one column: descriptor into dir, exceptions, packed bits.  A
 * column with two or three modes is computed each way, and the mode with
 * fewer bits is written (the first on a tie: it decodes faster).  A large
 * chunk (2 * PICK_RECS records or more) is planned on samples: its mode on
 * its first PICK_MODE_RECS records, and b on PICK_RECS of its values spread
 * over the chunk (base is the smallest of all of them).  Records of one
 * chunk are alike, and the writer runs on the host it measures: the same
 * format for a fraction of the work (the reader does not care how a mode
 * or b was chosen; docs/record-format.md has the measurements).
 */
static void enc_column(struct nt_colenc *e, const struct ntbpf_rec *recs, uint32_t n,
		       unsigned int col)
{
	unsigned int w = col_width(col, C_PORT), nm = col_modes(col, C_PORT), mode = 0, m, b;
	struct plan p = { e->v, 0, 0, 0, 0 }, q = { e->v2, 0, 0, 0, 0 };
	uint64_t esc, base, mw = width_mask(w);
	size_t exc_at = e->exc.len;
	struct bitw bw;
	uint32_t i;

	if (n >= 2 * PICK_RECS) {
		uint64_t best = ~0ull;

		for (m = 0; nm > 1 && m < nm; m++) {
			q.cnt = col_values(e, recs, PICK_MODE_RECS, col, m, q.v);
			plan(&q, w, PICK_MODE_SAMPLE, false);
			if (q.cost < best) {
				best = q.cost;
				mode = m;
			}
		}
		p.cnt = col_values(e, recs, n, col, mode, p.v);
		plan(&p, w, PICK_RECS, true);
	} else {
		p.cnt = col_values(e, recs, n, col, 0, p.v);
		plan(&p, w, n, true);
		for (m = 1; m < nm; m++) {
			q.cnt = col_values(e, recs, n, col, m, q.v);
			plan(&q, w, n, true);
			if (q.cost < p.cost) {	/* swap: the other buffer for the next mode */
				uint64_t *v = p.v;

				p = q;
				q.v = v;
				mode = m;
			}
		}
	}
	b = p.b;
	esc = (1ull << b) - 1;
	base = p.base;
	if (b) {
		bitw_begin(&bw, &e->bits, (uint64_t)p.cnt * b);
		for (i = 0; bw.p && i < p.cnt; i++) {
			uint64_t off = (p.v[i] - base) & mw;

			if (off >= esc) {
				buf_uv(&e->exc, off - esc);
				off = esc;
			}
			bitw_put(&bw, off, b);
		}
		if (bw.p)
			bitw_end(&bw);
	}
	buf_u8(&e->dir, b | mode << MODE_SHIFT);
	buf_uv(&e->dir, base);
	buf_uv(&e->dir, e->exc.len - exc_at);
}

/*
 * The columns of fields that have one value in every record of the chunk
 * (most of them, most of the time), found in one pass over the fixed fields
 * of the records: bit col set, val[col] that value.  They are written
 * without computing their values: as plan() would, base the value, no bits.
 */
#define FIX_AT	offsetof(struct ntbpf_rec, dev)
#define FIX_LEN	(offsetof(struct ntbpf_rec, status) + sizeof(((struct ntbpf_rec *)0)->status) - FIX_AT)
_Static_assert(FIX_LEN == 24, "const_cols: dev .. status are three words");

static uint64_t const_cols(const struct ntbpf_rec *r, uint32_t n, const uint32_t *xmask, uint64_t *val)
{
	const uint8_t *p0 = (const uint8_t *)r + FIX_AT;
	uint64_t w0, w1, w2, d0 = 0, d1 = 0, d2 = 0, k = 0;
	uint32_t dx = 0, i;
	uint16_t dd = 0;
	struct ntbpf_rec d;

	if (!n)
		return 0;
	memcpy(&w0, p0, 8);
	memcpy(&w1, p0 + 8, 8);
	memcpy(&w2, p0 + 16, 8);
	for (i = 1; i < n; i++) {
		const uint8_t *q = (const uint8_t *)&r[i] + FIX_AT;
		uint64_t x0, x1, x2;

		memcpy(&x0, q, 8);
		memcpy(&x1, q + 8, 8);
		memcpy(&x2, q + 16, 8);
		d0 |= x0 ^ w0;
		d1 |= x1 ^ w1;
		d2 |= x2 ^ w2;
		dx |= xmask[i] ^ xmask[0];
		dd |= r[i].depth ^ r[0].depth;
	}
	/* the differing bits, laid out as the fields they belong to */
	memset(&d, 0, sizeof(d));
	memcpy((uint8_t *)&d + FIX_AT, &d0, 8);
	memcpy((uint8_t *)&d + FIX_AT + 8, &d1, 8);
	memcpy((uint8_t *)&d + FIX_AT + 16, &d2, 8);
#define K(col, diff, v)	do { if (!(diff)) { k |= 1ull << (col); val[col] = (v); } } while (0)
	K(C_DEV, d.dev, r[0].dev);
	K(C_BYTES, d.bytes, r[0].bytes);
	K(C_MASK, d.ev_mask, r[0].ev_mask);
	K(C_CTRL, d.ctrl, r[0].ctrl);
	K(C_QID, d.qid, r[0].qid);
	K(C_CID, d.cid & TAG_MASK, r[0].cid & TAG_MASK);
	K(C_OP, d.op, r[0].op);
	K(C_OPCODE, d.opcode, r[0].opcode);
	K(C_FLAGS, d.flags, r[0].flags);
	K(C_ROLE, d.role, r[0].role);
	K(C_STATUS, d.status, r[0].status);
	K(C_XMASK, dx, xmask[0]);
	K(C_GEN, d.cid >> TAG_BITS, r[0].cid >> TAG_BITS);
	K(C_DEPTH, dd, r[0].depth);
#undef K
	return k;
}

int nt_cols_encode(struct nt_colenc *e, const struct ntbpf_rec *recs, uint32_t n,
		   struct nt_cols_raw *out)
{
	uint64_t konst, val[NCOLS];
	uint32_t i, used = 0;
	unsigned int col;

	_Static_assert(NCOLS <= 64, "const_cols: a bit per column");
	for (i = 0; i < n; i++)
		used |= e->slots[i] = stored_slots(&recs[i], &e->xmask[i]);
	konst = const_cols(recs, n, e->xmask, val);
	/* an event slot no record of the chunk stored: an empty column, as plan() makes it */
	for (col = C_EV0; col < C_PORT; col++) {
		if (!(used >> (col - C_EV0) & 1)) {
			konst |= 1ull << col;
			val[col] = 0;
		}
	}
	e->dir.len = e->exc.len = e->bits.len = 0;
	buf_u32(&e->dir, n);	/* under the CRC: a column of b = 0 has no count */
	buf_u32(&e->dir, NCOLS);
	for (col = 0; col < NCOLS; col++) {
		if (konst >> col & 1) {
			buf_u8(&e->dir, 0);	/* mode 0, b = 0 */
			buf_uv(&e->dir, val[col] & width_mask(col_width(col, C_PORT)));
			buf_uv(&e->dir, 0);
		} else {
			enc_column(e, recs, n, col);
		}
	}
	if (e->dir.oom || e->exc.oom || e->bits.oom)
		return -ENOMEM;
	*out = (struct nt_cols_raw){ e->dir.p, e->exc.p, e->bits.p, e->dir.len, e->exc.len, e->bits.len };
	return 0;
}
