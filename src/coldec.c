// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * coldec.c - the column codec's decoder: a chunk's bit-packed columns back
 * into records (src/colcodec_int.h says how a column is written; colenc.c
 * writes it).  A branch-free loop per column (exceptions aside), with
 * nothing per value to look up; every length is checked against the chunk.
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
 * A column with b = 0 holds one value: it goes into a template record that
 * starts every record, and the column is only counted.
 */
static void dec_template(const struct dcol *cols, struct ntbpf_rec *tmpl)
{
	memset(tmpl, 0, sizeof(*tmpl));
	tmpl->dev = cols[C_DEV].base;
	tmpl->bytes = cols[C_BYTES].base;
	tmpl->ev_mask = cols[C_MASK].base;
	tmpl->ctrl = cols[C_CTRL].base;
	tmpl->qid = cols[C_QID].base;
	tmpl->cid = cols[C_CID].base;
	tmpl->op = cols[C_OP].base;
	tmpl->opcode = cols[C_OPCODE].base;
	tmpl->flags = cols[C_FLAGS].base;
	tmpl->role = cols[C_ROLE].base;
	tmpl->status = cols[C_STATUS].base;
}

/*
 * Whether the port column (nk) and cid's high bits (nk + 1) are read at all
 * (*portp, *genp); one that is not counts as used up now, so the final check
 * holds.  Predicted gens start at 0 in every chunk.
 */
static void dec_port_gen(struct nt_coldec *s, struct dcol *cols, uint32_t nk, bool *portp, bool *genp)
{
	bool port, gen;

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
	*portp = port;
	*genp = gen;
}

/*
 * One field of a block's m records r from column col (both named cols, m and
 * r in the caller, as COL_FOR's cols): nothing to read when the template has
 * it.
 */
#define COL_FIELD(col, field)	do {					\
		if (!cols[col].b)					\
			cols[col].next += m;	/* in the template */	\
		else							\
			COL_FOR(col, m, x, r[i].field = x);		\
	} while (0)

/*
 * The block's m records r start as the template, with their t0 (the running
 * sum *tp) and, unless the chunk's ev_mask is one value, their ev_mask.
 * This and the block's other steps are always inlined: the block loop is the
 * decoder's hot path, and their running state (*tp, *nextp, *nportsp) then
 * stays in registers.
 */
static inline __attribute__((always_inline)) const char *
dec_block_t0(struct dcol *cols, struct ntbpf_rec *r, uint32_t m, const struct ntbpf_rec *tmpl,
	     const uint32_t *mask, bool const_mask, uint64_t *tp)
{
	uint64_t t = *tp;

	if (const_mask) {
		COL_FOR(C_T0, m, x, {
			rec_from(&r[i], tmpl);
			r[i].t0 = t += x;
		});
	} else {
		COL_FOR(C_T0, m, x, {
			rec_from(&r[i], tmpl);
			r[i].t0 = t += x;
			r[i].ev_mask = mask[i];
		});
	}
	*tp = t;
	return NULL;
}

/*
 * The block's dev, bytes, sector (*nextp: where the previous I/O ended, for
 * a sector that follows on), ctrl, qid and cid's tag bits.
 */
static inline __attribute__((always_inline)) const char *
dec_block_head(struct dcol *cols, struct ntbpf_rec *r, uint32_t m, uint64_t *nextp)
{
	uint64_t next = *nextp;

	COL_FIELD(C_DEV, dev);
	COL_FIELD(C_BYTES, bytes);
	if (cols[C_SECTOR].mode)	/* M_ALT: the sector itself */
		COL_FOR(C_SECTOR, m, x, r[i].sector = x);
	else
		COL_FOR(C_SECTOR, m, x, {
			r[i].sector = next + x;
			next = r[i].sector + (r[i].bytes >> 9);
		});
	*nextp = next;
	COL_FIELD(C_CTRL, ctrl);
	COL_FIELD(C_QID, qid);
	if (!cols[C_CID].b)
		cols[C_CID].next += m;	/* in the template (below 2^12) */
	else
		COL_FOR(C_CID, m, x, r[i].cid = x & TAG_MASK);
	return NULL;
}

/*
 * cid's high bits (column nk + 1, when gen): as predicted per (qid, tag)
 * (s->gen) plus the column's value, or the value itself.
 */
static inline __attribute__((always_inline)) const char *
dec_block_gen(struct nt_coldec *s, struct dcol *cols, struct ntbpf_rec *r, uint32_t m, uint32_t nk,
	      bool gen)
{
	uint32_t i;

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
	return NULL;
}

/* The block's op, opcode, flags, role and status. */
static inline __attribute__((always_inline)) const char *
dec_block_tail(struct dcol *cols, struct ntbpf_rec *r, uint32_t m)
{
	COL_FIELD(C_OP, op);
	COL_FIELD(C_OPCODE, opcode);
	COL_FIELD(C_FLAGS, flags);
	COL_FIELD(C_ROLE, role);
	COL_FIELD(C_STATUS, status);
	return NULL;
}
#undef COL_FIELD

/*
 * The block's ports (column nk, when port), through the chunk's dictionary
 * s->ports of *nportsp: an index into it, or past it a new port.
 */
static inline __attribute__((always_inline)) const char *
dec_block_ports(struct nt_coldec *s, struct dcol *cols, struct ntbpf_rec *r, uint32_t m, uint32_t nk,
		bool port, uint32_t *nportsp)
{
	uint32_t nports = *nportsp;

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
	*nportsp = nports;
	return NULL;
}

/* The block's depth (files before it have none: 0), then a later writer's columns, skipped. */
static inline __attribute__((always_inline)) const char *
dec_block_extra(struct dcol *cols, struct ntbpf_rec *r, uint32_t m, uint32_t nk, uint32_t ncols)
{
	uint32_t k;

	if (ncols > nk + 2)
		COL_FOR(nk + 2, m, x, r[i].depth = x);
	for (k = nk + 3; k < ncols; k++)
		COL_FOR(k, m, x, (void)x);
	return NULL;
}

/*
 * After the last block: every column used up exactly, and the ev_mask bits
 * of slots the file has and a record cannot hold cleared.
 */
static const char *dec_finish(const struct dcol *cols, uint32_t ncols, struct ntbpf_rec *recs,
			      uint32_t nrec, uint32_t file_nev)
{
	uint32_t nslots = file_nev < NTBPF_MAX_EV ? file_nev : NTBPF_MAX_EV;
	uint32_t ours = (uint32_t)((1ull << nslots) - 1);
	uint32_t k, i;

	for (k = 0; k < ncols; k++)
		if (cols[k].next != cols[k].n || cols[k].exc.len)
			return "bad record encoding: column not used up";
	if (file_nev != NTBPF_MAX_EV)	/* ev_mask bits of slots we lack */
		for (i = 0; i < nrec; i++)
			recs[i].ev_mask &= ours;
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
	struct dcol cols[MAX_COLS];
	uint32_t ncols, nk = C_EV0 + file_nev, k, i0, any, all, nports = 0;
	uint32_t at[NT_COLS_MAX_NEV];	/* M_ALT ev[]: t0 + ev[k] of the last, mod 2^32 */
	uint64_t t = 0, next = 0;
	struct ntbpf_rec tmpl;
	const char *err;
	bool const_mask, port, gen;

	if ((err = dec_directory(s, cols, raw, len, nrec, file_nev, &ncols, &any, &all)))
		return err;
	dec_template(cols, &tmpl);
	const_mask = !cols[C_MASK].b;
	dec_port_gen(s, cols, nk, &port, &gen);

	for (i0 = 0; i0 < nrec; i0 += BLOCK) {
		uint32_t m = nrec - i0 < BLOCK ? nrec - i0 : BLOCK;
		uint32_t *slots = s->slots + i0, *last = s->last + i0, *mask = s->mask + i0;
		struct ntbpf_rec *r = recs + i0;

		if ((err = dec_block_t0(cols, r, m, &tmpl, mask, const_mask, &t)))
			return err;
		if (!i0)	/* M_ALT ev[]: the first from the chunk's first t0 */
			for (k = 0; k < NT_COLS_MAX_NEV; k++)
				at[k] = (uint32_t)r[0].t0;
		if ((err = dec_block_head(cols, r, m, &next)) ||
		    (err = dec_block_gen(s, cols, r, m, nk, gen)) ||
		    (err = dec_block_tail(cols, r, m)) ||
		    (err = dec_block_ports(s, cols, r, m, nk, port, &nports)) ||
		    (err = dec_events(cols, r, m, slots, last, at, file_nev, any, all)) ||
		    (err = dec_block_extra(cols, r, m, nk, ncols)))
			return err;
	}
	return dec_finish(cols, ncols, recs, nrec, file_nev);
}
