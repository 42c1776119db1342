/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * colcodec.c - a chunk of records as bit-packed columns, and back.
 *
 * A chunk stores its records column by column (docs/record-format.md,
 * "Chunk").  Each column holds one value per record (per stored event for
 * the ev[] columns): a field as it is (dev, bytes, qid, ...) or a difference
 * -- t0 from the previous record's t0, sector from where the previous
 * record's I/O ended, an event from the record's previous stored event --
 * or, in another mode, another prediction (below).  A column is written as
 *
 *   mode        which prediction (columns that have several)
 *   base        a reference value, usually the smallest
 *   b           bits per value: (value - base) mod 2^width in b bits, LSB first
 *   exceptions  values whose offset does not fit (offset >= 2^b - 1, the
 *               all-ones escape): offset - (2^b - 1) as a varint
 *
 * The writer picks mode, base and b per column and chunk for the fewest
 * bits.  A field that does not change takes no bits at all; latencies take
 * about their entropy plus a bit or two.  Decoding is a branch-free loop per
 * column (exceptions aside), with nothing per value to look up.
 *
 * The raw chunk is three parts: the column directory, the exceptions, the
 * packed bits.  The container (recfile.c) deflates the first two and stores
 * the packed bits: they are near-random, and Huffman coding would gain a few
 * per cent on them for ~8 ns per byte to decode on the development VM, where
 * stored blocks cost ~0.6.
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

#define REC_SIZE	sizeof(struct ntbpf_rec)
#define REC_PREFIX	offsetof(struct ntbpf_rec, ev)	/* fixed forever */

/*
 * The columns, in file order: the fields up to ev[], one per event slot,
 * then port, gen (cid's high bits) and depth, then any a later writer adds.
 */
enum col_id {
	C_T0, C_DEV, C_BYTES, C_SECTOR, C_MASK, C_CTRL, C_QID, C_CID, C_OP,
	C_OPCODE, C_FLAGS, C_ROLE, C_STATUS, C_XMASK,
	C_EV0,			/* then one column per event slot, then port, gen, depth */
};

/*
 * port, the first column after the ev[] ones (C_EV0 + the file's nev).  A
 * per-queue value: a chunk has a few distinct ports, anywhere in 1..65535,
 * so the column is a dictionary, not the ports themselves (2 ports 20000
 * apart would cost 15 bits each): value x < d, the number of distinct ports
 * so far in the chunk, is the port first seen as the x-th; x >= d is a new
 * port, x - d.  So a record costs about log2(distinct ports + 1) bits, all
 * ports 0 (no port known) nothing, and each distinct port once a varint.
 *
 * cid is two columns: its low 12 bits (C_CID, the blk-mq tag) and its high
 * 4 bits (gen, right after port: the generation counter Linux's nvme driver
 * puts there), which can be predicted from the previous command of the same
 * queue and tag.
 */
#define C_PORT		(C_EV0 + NTBPF_MAX_EV)	/* what we write */
#define C_GEN		(C_PORT + 1)
#define C_DEPTH		(C_GEN + 1)	/* depth: the value itself (a few bits: the queue's depth) */
#define NCOLS		(C_DEPTH + 1)
#define MAX_B		56u	/* bits per value; + 7 bits of shift fits a u64 read */
#define MAX_EXTRA	16u	/* columns after gen: depth, and those a later writer may add */
#define MAX_COLS	(C_EV0 + NT_COLS_MAX_NEV + 2 + MAX_EXTRA)

/*
 * Modes: the descriptor's first byte is mode << 6 | b.  M_ALT chooses the
 * column's other prediction:
 *
 *   C_SECTOR, M_ALT   the sector itself (random I/O: no better than the
 *                     previous I/O's end, and that difference spans twice
 *                     as much)
 *   ev[k], M_ALT      (t0 + ev[k]) - (t0 + ev[k] of the previous record with
 *                     slot k; the first: the chunk's first t0), mod 2^32
 *                     (from the first t0, the first value is small and
 *                     positive like the others): events that happen together for
 *                     several I/Os (responses arriving in one skb) are
 *                     close in absolute time, not to their own record's
 *                     previous event
 *   ev[k], M_T0       ev[k] itself (from t0): for an event that comes before
 *                     the one in the slot below (the initiator's queue_rq
 *                     and blk_issue), which gives a negative, wide delta
 *   C_GEN, M_ALT      cid >> 12 minus the gen predicted for the record's
 *                     (qid, tag): 1 + the previous one, mod 16
 *
 * The writer computes each column every way and keeps the fewest bits.
 */
#define M_ALT		1u		/* the column's other prediction */
#define M_T0		2u		/* ev[] columns: the value itself */
#define MODE_SHIFT	6		/* descriptor byte: mode << 6 | b */
#define TAG_BITS	12
#define TAG_MASK	((1u << TAG_BITS) - 1)
#define GEN_TBL		4096		/* (qid, tag) -> predicted gen */

_Static_assert(NT_CHUNK_RECS < 65535, "port dictionary index in a u16");

static inline unsigned int gen_slot(uint16_t qid, uint16_t tag)
{
	return (tag + ((unsigned int)qid << 7)) & (GEN_TBL - 1);
}

/*
 * Value width in bits (values are taken mod 2^width); later columns: 64.
 * nk: the port column (C_EV0 + the file's nev).
 */
static unsigned int col_width(unsigned int col, unsigned int nk)
{
	static const uint8_t w[C_EV0] = {
		[C_T0] = 64, [C_DEV] = 32, [C_BYTES] = 32, [C_SECTOR] = 64,
		[C_MASK] = 32, [C_CTRL] = 16, [C_QID] = 16, [C_CID] = TAG_BITS,
		[C_OP] = 8, [C_OPCODE] = 8, [C_FLAGS] = 8, [C_ROLE] = 8,
		[C_STATUS] = 16, [C_XMASK] = 32,
	};

	if (col < C_EV0)
		return w[col];
	if (col <= nk)
		return 32;	/* ev[] slots and port */
	return col == nk + 1 ? 16 - TAG_BITS : col == nk + 2 ? 16 : 64;	/* gen, depth */
}

/* Modes a column may have: sector and gen two, the ev[] slots three. */
static unsigned int col_modes(unsigned int col, unsigned int nk)
{
	if (col >= C_EV0 && col < nk)
		return 3;
	return col == C_SECTOR || col == nk + 1 ? 2 : 1;
}

static inline uint64_t width_mask(unsigned int w)
{
	return w >= 64 ? ~0ull : (1ull << w) - 1;
}

/* ---- encoding ----------------------------------------------------------- */

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

/* ---- decoding ----------------------------------------------------------- */

struct dcol {	/* a column being decoded */
	unsigned int b, w, mode;
	uint64_t base;
	const uint8_t *p;	/* packed bits */
	uint32_t n, next;	/* values in the column, values unpacked */
	struct cur exc;		/* exceptions not used yet */
};

/* 8 bytes little endian, one load (the packed bits of the hot loops). */
static inline __attribute__((always_inline)) uint64_t ld64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return le64toh(v);
}

/* An escape: the offset is esc + the next exception; false if bad. */
static bool dec_exception(struct dcol *c, uint64_t *off)
{
	uint64_t x, mw = width_mask(c->w);

	uint64_t y = ld64(c->exc.p), stop = ~y & 0x8080808080808080ull;

	/*
	 * Up to 8 bytes at once (the exceptions are followed by the packed bits
	 * and NT_COLS_SLACK bytes, so the load stays in the buffer); longer ones,
	 * and any that runs past the column's exceptions, byte by byte.
	 */
	if (stop && (size_t)(__builtin_ctzll(stop) >> 3) < c->exc.len) {
		unsigned int bits = __builtin_ctzll(stop), len = (bits >> 3) + 1;

		y &= bits == 63 ? ~0ull : (2ull << bits) - 1;
		y &= 0x7f7f7f7f7f7f7f7full;
		y = (y & 0x007f007f007f007full) | (y & 0x7f007f007f007f00ull) >> 1;
		y = (y & 0x00003fff00003fffull) | (y & 0x3fff00003fff0000ull) >> 2;
		x = (y & 0x0fffffffull) | (y & 0x0fffffff00000000ull) >> 4;
		c->exc.p += len;
		c->exc.len -= len;
	} else {
		x = cur_uv(&c->exc);
		if (c->exc.bad)
			return false;
	}
	if (x > mw - *off)
		return false;
	*off += x;
	return true;
}

/*
 * Walk the next cnt values of column col (the caller's cols[]): val is each
 * value in turn, base + offset, for body to store (mod 2^width: into a field
 * of that width, or a u32 for ev[]).  A column with b = 0 has no escape (esc
 * can never match) and reads no bits.  The raw buffer has NT_COLS_SLACK zero
 * bytes after its end for the 8-byte reads of the last values.  Returns from
 * the caller on a short column or a bad exception.
 */
#define COL_FOR(col, cnt, val, body)	do {					\
		struct dcol *c_ = &cols[col];					\
		const uint8_t *p_ = c_->p;					\
		unsigned int b_ = c_->b;					\
		uint64_t at_ = (uint64_t)c_->next * b_;				\
		uint64_t emask_ = (1ull << b_) - 1, esc_ = b_ ? emask_ : ~0ull;	\
		uint64_t base_ = c_->base, val;					\
		uint32_t n_ = (cnt), i;						\
										\
		if (n_ > c_->n - c_->next)					\
			return "bad record encoding: column too short";	\
		c_->next += n_;							\
		if (!b_) {	/* every value is base: no bits to read */	\
			for (i = 0; i < n_; i++) {				\
				val = base_;					\
				body;						\
			}							\
			break;							\
		}								\
		for (i = 0; i < n_; i++, at_ += b_) {				\
			uint64_t off_ = ld64(p_ + (at_ >> 3)) >> (at_ & 7) & emask_;	\
										\
			if (__builtin_expect(off_ == esc_, 0)) {		\
				uint64_t o_ = off_;	/* off_ stays in a register */	\
										\
				if (!dec_exception(c_, &o_))			\
					return "bad record encoding: bad exception";	\
				off_ = o_;					\
			}							\
			val = base_ + off_;					\
			body;							\
		}								\
	} while (0)

/* Give a column of n values its packed bits, the next ones of *bits. */
static bool col_place(struct dcol *c, uint32_t n, struct cur *bits)
{
	c->n = n;
	c->next = 0;
	c->p = cur_take(bits, ((uint64_t)n * c->b + 7) / 8);
	return c->p != NULL;
}

/*
 * A record starts as the template (zero after its prefix), in seven 16-byte
 * copies written out: a memset of the tail compiled to rep stos, whose
 * start-up cost per record was a fifth of decoding.
 */
static inline __attribute__((always_inline)) void rec_from(struct ntbpf_rec *d, const struct ntbpf_rec *tmpl)
{
	_Static_assert(REC_SIZE == 7 * 16, "rec_from copies 7 x 16 bytes");
	uint8_t *p = (uint8_t *)d;
	const uint8_t *q = (const uint8_t *)tmpl;

	memcpy(p, q, 16);
	memcpy(p + 16, q + 16, 16);
	memcpy(p + 32, q + 32, 16);
	memcpy(p + 48, q + 48, 16);
	memcpy(p + 64, q + 64, 16);
	memcpy(p + 80, q + 80, 16);
	memcpy(p + 96, q + 96, 16);
}

/* Scratch space of the decoder, cap entries each. */
struct nt_coldec {
	uint32_t *last, *slots, *mask;
	uint16_t *ports;	/* the port dictionary */
	size_t cap;
	uint8_t gen[GEN_TBL];	/* (qid, tag) -> predicted gen */
};

struct nt_coldec *nt_coldec_new(void)
{
	return calloc(1, sizeof(struct nt_coldec));
}

void nt_coldec_free(struct nt_coldec *s)
{
	if (!s)
		return;
	free(s->last);
	free(s->slots);
	free(s->mask);
	free(s->ports);
	free(s);
}

int nt_coldec_reserve(struct nt_coldec *s, uint32_t nrec)
{
	size_t cap;

	if (nrec <= s->cap)
		return 0;
	cap = s->cap;
	if (grow((void **)&s->last, &cap, nrec, sizeof(*s->last)))
		return -1;
	cap = s->cap;
	if (grow((void **)&s->slots, &cap, nrec, sizeof(*s->slots)))
		return -1;
	cap = s->cap;
	if (grow((void **)&s->mask, &cap, nrec, sizeof(*s->mask)))
		return -1;
	cap = s->cap;
	if (grow((void **)&s->ports, &cap, nrec, sizeof(*s->ports)))
		return -1;
	s->cap = nrec;
	return 0;
}

#define BLOCK	128	/* records decoded together: 13 KiB, stays in L1 */

/*
 * nt_cols_decode's first part: the chunk's column directory into cols (*ncols of them), each
 * column's exceptions and packed bits placed, and every record's stored event slots in
 * s->slots (*any: the slots some record stores, *all: those every record stores).  NULL, or why not.
 */
static inline __attribute__((always_inline)) const char *
dec_directory(struct nt_coldec *s, struct dcol *cols, const uint8_t *raw, size_t len, uint32_t nrec,
	      uint32_t file_nev, uint32_t *ncolsp, uint32_t *anyp, uint32_t *allp)
{
	uint32_t fslots = (uint32_t)((1ull << file_nev) - 1);	/* the file's */
	struct cur c = { raw, len, false }, bits;
	uint32_t ncols, nk = C_EV0 + file_nev, k, i, any = 0, all = ~0u;
	uint64_t exc_len = 0;
	const uint8_t *exc;

	if (file_nev > NT_COLS_MAX_NEV)
		return "bad record encoding: event slots";
	if (nrec > s->cap)
		return "decoder scratch not reserved";
	if (cur_u32(&c) != nrec)
		return "bad record encoding: record count";
	ncols = cur_u32(&c);
	/* port and gen are required */
	if (c.bad || ncols < nk + 2 || ncols > nk + 2 + MAX_EXTRA)
		return "bad record encoding: column count";
	for (k = 0; k < ncols; k++) {
		struct dcol *d = &cols[k];
		uint64_t el;
		uint8_t bm;

		d->w = col_width(k, nk);
		bm = cur_u8(&c);
		d->b = bm & ((1u << MODE_SHIFT) - 1);
		d->mode = bm >> MODE_SHIFT;
		d->base = cur_uv(&c);
		el = cur_uv(&c);
		if (c.bad || d->b > MAX_B || d->b > d->w || d->base > width_mask(d->w) ||
		    el > len || (!d->b && el) || d->mode >= col_modes(k, nk))
			return "bad record encoding: column directory";
		d->exc.len = el;
		exc_len += el;
	}
	exc = cur_take(&c, exc_len);
	if (!exc)
		return "bad record encoding: column directory";
	for (k = 0; k < ncols; k++) {
		cols[k].exc = (struct cur){ exc, cols[k].exc.len, false };
		exc += cols[k].exc.len;
	}
	bits = c;

	for (k = 0; k < C_EV0; k++)
		if (!col_place(&cols[k], nrec, &bits))
			return "bad record encoding: packed bits overrun";
	COL_FOR(C_MASK, nrec, x, s->mask[i] = x);
	COL_FOR(C_XMASK, nrec, x, s->slots[i] = x);
	for (i = 0; i < nrec; i++) {
		uint32_t xm = s->slots[i], m = s->mask[i];

		/* extra slots: none in ev_mask, all the file's */
		if ((xm & m) || (xm & ~fslots))
			return "bad record encoding: extra event slots";
		s->slots[i] = (m & fslots) | xm;
		any |= s->slots[i];
		all &= s->slots[i];
	}
	memset(s->last, 0, (size_t)nrec * sizeof(*s->last));	/* each record's previous event */
	for (k = 0; k < file_nev; k++) {
		uint32_t n = 0;

		if (all >> k & 1)
			n = nrec;
		else if (any >> k & 1)
			for (i = 0; i < nrec; i++)
				n += s->slots[i] >> k & 1;
		if (!col_place(&cols[C_EV0 + k], n, &bits))
			return "bad record encoding: packed bits overrun";
	}
	for (k = nk; k < ncols; k++)	/* port, gen, then a later writer's fields */
		if (!col_place(&cols[k], nrec, &bits))
			return "bad record encoding: packed bits overrun";
	if (bits.len)
		return "bad record encoding: packed bits not used up";

	*ncolsp = ncols;
	*anyp = any;
	*allp = all;
	return NULL;
}

/*
 * nt_cols_decode's events of one block of m records r (their stored slots, their previous
 * event's values last): slot by slot, the previous stored slot's value plus this one, or
 * (M_T0) the value itself, or (M_ALT) from t0 + ev[k] of the last record (at[k]).  NULL, or why not.
 */
static inline __attribute__((always_inline)) const char *
dec_events(struct dcol *cols, struct ntbpf_rec *r, uint32_t m, const uint32_t *slots, uint32_t *last,
	   uint32_t *at, uint32_t file_nev, uint32_t any, uint32_t all)
{
	uint32_t k, i;

	for (k = 0; k < file_nev; k++) {
		uint32_t n = 0, j = 0;

		if (!(any >> k & 1))
			continue;
		if (cols[C_EV0 + k].mode == M_T0) {	/* the values */
			if (all >> k & 1) {
				COL_FOR(C_EV0 + k, m, x, last[i] = x);
			} else {
				uint32_t idx[BLOCK];

				for (i = 0; i < m; i++) {
					idx[j] = i;
					j += slots[i] >> k & 1;
				}
				COL_FOR(C_EV0 + k, j, x, last[idx[i]] = x);
			}
			if (k < NTBPF_MAX_EV)
				for (i = 0; i < m; i++)
					if (slots[i] >> k & 1)
						r[i].ev[k] = last[i];
			continue;
		}
		if (cols[C_EV0 + k].mode) {	/* M_ALT: from t0 + ev[k] */
			uint32_t a = at[k];

			if (all >> k & 1) {
				COL_FOR(C_EV0 + k, m, x, {
					a += x;
					last[i] = a - (uint32_t)r[i].t0;
				});
			} else {
				uint32_t idx[BLOCK];

				for (i = 0; i < m; i++) {
					idx[j] = i;
					j += slots[i] >> k & 1;
				}
				COL_FOR(C_EV0 + k, j, x, {
					a += x;
					last[idx[i]] = a - (uint32_t)r[idx[i]].t0;
				});
				n = j;
			}
			at[k] = a;
			if (k < NTBPF_MAX_EV) {
				if (all >> k & 1)
					for (i = 0; i < m; i++)
						r[i].ev[k] = last[i];
				else
					for (i = 0; i < m; i++)
						if (slots[i] >> k & 1)
							r[i].ev[k] = last[i];
			}
			continue;
		}
		if (all >> k & 1) {
			if (k < NTBPF_MAX_EV && !(any >> k >> 1))	/* the last slot */
				COL_FOR(C_EV0 + k, m, x, r[i].ev[k] = last[i] + x);
			else if (k < NTBPF_MAX_EV)
				COL_FOR(C_EV0 + k, m, x, r[i].ev[k] = last[i] += x);
			else
				COL_FOR(C_EV0 + k, m, x, last[i] += x);
			continue;
		}
		for (i = 0; i < m; i++)
			n += slots[i] >> k & 1;
		{
			uint32_t idx[BLOCK];

			for (i = 0; i < m; i++) {
				idx[j] = i;
				j += slots[i] >> k & 1;
			}
			COL_FOR(C_EV0 + k, n, x, last[idx[i]] += x);
			if (k < NTBPF_MAX_EV)
				for (i = 0; i < n; i++)
					r[idx[i]].ev[k] = last[idx[i]];
		}
	}
	return NULL;
}

/*
 * Every read is bounds-checked; every part of the chunk must be used up
 * exactly.
 *
 * First the column directory, then ev_mask and the extra-slot mask of every
 * record (they tell how many values each ev[] column has, hence where the
 * packed bits of each column start), then the records in blocks of BLOCK,
 * column by column.
 */
const char *nt_cols_decode(struct nt_coldec *s, struct ntbpf_rec *recs, const uint8_t *raw,
			   size_t len, uint32_t nrec, uint32_t file_nev)
{
	uint32_t nslots = file_nev < NTBPF_MAX_EV ? file_nev : NTBPF_MAX_EV;
	uint32_t ours = (uint32_t)((1ull << nslots) - 1);
	struct dcol cols[MAX_COLS];
	uint32_t ncols, nk = C_EV0 + file_nev, k, i, i0, any, all, nports = 0;
	uint32_t at[NT_COLS_MAX_NEV];	/* M_ALT ev[]: t0 + ev[k] of the last, mod 2^32 */
	uint64_t t = 0, next = 0;
	struct ntbpf_rec tmpl;
	const char *err;
	bool const_mask, port, gen;

	if ((err = dec_directory(s, cols, raw, len, nrec, file_nev, &ncols, &any, &all)))
		return err;

	/*
	 * A column with b = 0 holds one value: it goes into a template record
	 * that starts every record, and the column is only counted.
	 */
	memset(&tmpl, 0, sizeof(tmpl));
	tmpl.dev = cols[C_DEV].base;
	tmpl.bytes = cols[C_BYTES].base;
	tmpl.ev_mask = cols[C_MASK].base;
	tmpl.ctrl = cols[C_CTRL].base;
	tmpl.qid = cols[C_QID].base;
	tmpl.cid = cols[C_CID].base;
	tmpl.op = cols[C_OP].base;
	tmpl.opcode = cols[C_OPCODE].base;
	tmpl.flags = cols[C_FLAGS].base;
	tmpl.role = cols[C_ROLE].base;
	tmpl.status = cols[C_STATUS].base;
	const_mask = !cols[C_MASK].b;
	/* the port column, unless every port is 0 (then in the template) */
	port = cols[nk].b || cols[nk].base;
	if (!port)
		cols[nk].next = cols[nk].n;
	/* cid's high bits, unless all 0 */
	gen = cols[nk + 1].b || cols[nk + 1].base || cols[nk + 1].mode;
	if (!gen)
		cols[nk + 1].next = cols[nk + 1].n;
	if (gen && cols[nk + 1].mode)
		memset(s->gen, 0, sizeof(s->gen));

#define COL_FIELD(col, field)	do {					\
		if (!cols[col].b)					\
			cols[col].next += m;	/* in the template */	\
		else							\
			COL_FOR(col, m, x, r[i].field = x);		\
	} while (0)

	for (i0 = 0; i0 < nrec; i0 += BLOCK) {
		uint32_t m = nrec - i0 < BLOCK ? nrec - i0 : BLOCK;
		uint32_t *slots = s->slots + i0, *last = s->last + i0, *mask = s->mask + i0;
		struct ntbpf_rec *r = recs + i0;

		if (const_mask) {
			COL_FOR(C_T0, m, x, {
				rec_from(&r[i], &tmpl);
				r[i].t0 = t += x;
			});
		} else {
			COL_FOR(C_T0, m, x, {
				rec_from(&r[i], &tmpl);
				r[i].t0 = t += x;
				r[i].ev_mask = mask[i];
			});
		}
		if (!i0)	/* M_ALT ev[]: the first from the chunk's first t0 */
			for (k = 0; k < NT_COLS_MAX_NEV; k++)
				at[k] = (uint32_t)r[0].t0;
		COL_FIELD(C_DEV, dev);
		COL_FIELD(C_BYTES, bytes);
		if (cols[C_SECTOR].mode)	/* M_ALT: the sector itself */
			COL_FOR(C_SECTOR, m, x, r[i].sector = x);
		else
			COL_FOR(C_SECTOR, m, x, {
				r[i].sector = next + x;
				next = r[i].sector + (r[i].bytes >> 9);
			});
		COL_FIELD(C_CTRL, ctrl);
		COL_FIELD(C_QID, qid);
		if (!cols[C_CID].b)
			cols[C_CID].next += m;	/* in the template (below 2^12) */
		else
			COL_FOR(C_CID, m, x, r[i].cid = x & TAG_MASK);
		if (gen && cols[nk + 1].mode && !cols[nk + 1].b) {	/* all as predicted */
			uint8_t *g = s->gen;
			unsigned int base = cols[nk + 1].base;

			cols[nk + 1].next += m;
			for (i = 0; i < m; i++) {
				uint8_t *p = &g[gen_slot(r[i].qid, r[i].cid)];
				unsigned int v = (base + *p) & 15;

				*p = (v + 1) & 15;
				r[i].cid |= v << TAG_BITS;
			}
		} else if (gen && cols[nk + 1].mode) {	/* predicted per (qid, tag) */
			uint8_t *g = s->gen;

			COL_FOR(nk + 1, m, x, {
				uint8_t *p = &g[gen_slot(r[i].qid, r[i].cid)];
				unsigned int v = (x + *p) & 15;

				*p = (v + 1) & 15;
				r[i].cid |= v << TAG_BITS;
			});
		} else if (gen) {
			COL_FOR(nk + 1, m, x, r[i].cid |= (x & 15) << TAG_BITS);
		}
		COL_FIELD(C_OP, op);
		COL_FIELD(C_OPCODE, opcode);
		COL_FIELD(C_FLAGS, flags);
		COL_FIELD(C_ROLE, role);
		COL_FIELD(C_STATUS, status);
		if (port)	/* the dictionary (C_PORT) */
			COL_FOR(nk, m, x, {
				if (x < nports) {
					r[i].port = s->ports[x];
				} else {
					if (x - nports > UINT16_MAX)
						return "bad record encoding: port";
					r[i].port = s->ports[nports] = x - nports;
					nports++;
				}
			});
		if ((err = dec_events(cols, r, m, slots, last, at, file_nev, any, all)))
			return err;
		if (ncols > nk + 2)	/* depth (files before it have none: 0) */
			COL_FOR(nk + 2, m, x, r[i].depth = x);
		for (k = nk + 3; k < ncols; k++)
			COL_FOR(k, m, x, (void)x);
	}
#undef COL_FIELD
	for (k = 0; k < ncols; k++)
		if (cols[k].next != cols[k].n || cols[k].exc.len)
			return "bad record encoding: column not used up";
	if (file_nev != NTBPF_MAX_EV)	/* ev_mask bits of slots we lack */
		for (i = 0; i < nrec; i++)
			recs[i].ev_mask &= ours;
	return NULL;
}
