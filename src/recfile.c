/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * recfile.c - write and read the ntbpf record file.
 *
 * The byte-level format is specified in docs/record-format.md.  Every
 * multi-byte integer on disk is little endian and is encoded with shifts, never
 * by copying host memory, so a file moves between hosts of any byte order.
 *
 * Records travel in chunks of up to NT_CHUNK_RECS records.  Version 3 (what
 * we write) stores a chunk as bit-packed columns, one per field and per ev[]
 * slot, of values or differences (see "version 2 chunks" below), with the
 * prediction of some columns chosen per chunk (version 3, below) and cid in
 * two columns: about the entropy of the records, decoded by one branch-free
 * loop per column.  Version 2, the same with one prediction per column, is
 * still read (and written when asked for).
 * Version 1 (still read, and written when asked for) stores the records
 * "byte-shuffled": byte k of every record together (out[k * nrec + i] =
 * rec_i[k]) before zlib, so that deflate finds long runs.  Its shuffle is
 * done field by field from a table (rec_fields) so encode and decode are also
 * the little-endian conversion, in tight loops with no per-record calls.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <endian.h>
#include <zlib.h>

#include "recfile.h"

#define FILE_MAGIC	"NTBPFREC"
#define CHUNK_MAGIC	"CHNK"
#define TRAILER_MAGIC	"TRLR"

#define HDR_FIXED	16	/* magic 8, version 2, flags 2, payload length 4 */
#define CHUNK_HDR	20	/* magic 4, nrec 4, raw 4, comp 4, crc 4 */
#define REC_SIZE	sizeof(struct ntbpf_rec)
#define REC_PREFIX	offsetof(struct ntbpf_rec, ev)	/* fixed forever */
#define EV_SIZE		sizeof(((struct ntbpf_rec *)0)->ev[0])

/*
 * Reader limits: a corrupt length must not make us allocate gigabytes.  Our
 * writer stays far below them (chunks of 4096 records, headers of a few KiB).
 */
#define MAX_HDR_PAYLOAD	(16u << 20)
/*
 * Records per chunk: what our writer writes at most, and no more than
 * CHUNK_RECS_PER_BYTE per byte the chunk takes in the file.  A column that
 * does not change costs no bits, so without the second bound a crafted file
 * of a few KB whose columns are constant decoded into hundreds of MB; an
 * honest chunk takes 10-40 bytes per record (docs/record-format.md), but one
 * of 4096 identical records only ~60 (our writer splits those: write_recs).
 * So memory follows the file's size: at most 16 records (1.8 KB decoded) per
 * byte.
 */
#define MAX_CHUNK_NREC	NT_CHUNK_RECS
/* deflate cannot expand more than 1032:1 (258-byte matches in 2 bits) */
#define DEFLATE_MAX_RATIO 1032u
#define CHUNK_RECS_PER_BYTE 16u
/*
 * Items in the header.  A hook or a controller takes a few bytes in the file
 * and hundreds in memory: the counts are bounded so that a 16 MiB header
 * cannot become gigabytes.  Far above any real host (a host has tens of
 * hooks, controllers are numbered by a u16 instance).
 */
#define MAX_HOOKS	4096u
#define MAX_CTRLS	65536u
#define MAX_QUEUES	(1u << 18)	/* over all controllers */
#define MAX_CHUNK_RAW	(128u << 20)
#define MAX_REC_SIZE	4096u
#define MAX_NEV		32u	/* ev_mask is 32 bits */
#define MAX_NSTATS	4096u
#define TRAILER_MIN	28u	/* records 8, nstats 4, lost_user 8, end 8 */

/*
 * zlib level: measured on realistic records (docs/record-format.md): level 1
 * gives ~27 B/record; 6 and 9 save only ~7 % for 2x and 8x the CPU time.
 * The recorder runs next to the workload, so speed wins.
 */
#define ZLEVEL_V1	1
/*
 * Version 2: the level of the column descriptors and exceptions (the packed
 * bits are stored, level 0).  Level 6 gives the same size for more CPU;
 * level 0 adds ~0.7 B/record (docs/record-format.md).
 */
#define ZLEVEL		1

#define UNSHUFFLE_BLOCK	128	/* records: 13 KiB of decoded records */

enum nt_tag {
	TAG_NTBPF_VERSION = 1,
	TAG_ROLE = 2,
	TAG_RECORD_LAYOUT = 3,
	TAG_HOSTNAME = 4,
	TAG_KERNEL = 5,
	TAG_BOOT_ID = 6,
	TAG_CMDLINE = 7,
	TAG_CLOCKS = 8,
	TAG_SAMPLE = 9,
	TAG_DEV = 10,
	TAG_HOOK = 11,
	TAG_CTRL = 12,
};

_Static_assert(sizeof(struct ntbpf_rec) == 112, "record layout changed");
_Static_assert(offsetof(struct ntbpf_rec, ev) == 40, "record prefix changed");
_Static_assert(offsetof(struct ntbpf_rec, port) == 104 &&
	       offsetof(struct ntbpf_rec, reserved) == 106, "fields after ev[] moved");

/* The record layout, written into the header and driving (un)shuffling. */
struct rec_field {
	const char *name;
	uint16_t off;		/* byte offset in the record */
	uint16_t size;		/* bytes per element: 1, 2, 4 or 8 */
	uint16_t count;		/* elements (1 for scalars) */
};

#define FLD(m) { #m, offsetof(struct ntbpf_rec, m), \
		 sizeof(((struct ntbpf_rec *)0)->m), 1 }
#define ARR(m, n) { #m, offsetof(struct ntbpf_rec, m), \
		    sizeof(((struct ntbpf_rec *)0)->m[0]), n }

/*
 * Every byte of the record, so a version-1 chunk (byte-shuffled whole
 * records) has no uninitialised bytes.  The fields after ev[] are not taken
 * from a file by offset (its layout may differ, unshuffle): port by the
 * file's RECORD_LAYOUT, reserved always 0 (the writer zeroes it too).
 */
static const struct rec_field rec_fields[] = {
	FLD(t0), FLD(sector), FLD(dev), FLD(bytes), FLD(ev_mask),
	FLD(ctrl), FLD(qid), FLD(cid), FLD(op), FLD(opcode), FLD(flags),
	FLD(role), FLD(status), ARR(ev, NTBPF_MAX_EV),
	FLD(port), ARR(reserved, 3),
};

#define NFIELDS (sizeof(rec_fields) / sizeof(rec_fields[0]))
#define NFIXED	14	/* rec_fields up to ev[]: the fixed prefix and the slots */
#define TAIL_SIZE	(REC_SIZE - offsetof(struct ntbpf_rec, port))	/* port, reserved */

/* ---- little-endian helpers ---------------------------------------------- */

static inline void put16(uint8_t *p, uint16_t v)
{
	p[0] = v;
	p[1] = v >> 8;
}

static inline void put32(uint8_t *p, uint32_t v)
{
	p[0] = v;
	p[1] = v >> 8;
	p[2] = v >> 16;
	p[3] = v >> 24;
}

static inline void put64(uint8_t *p, uint64_t v)
{
	put32(p, v);
	put32(p + 4, v >> 32);
}

static inline uint16_t get16(const uint8_t *p)
{
	return p[0] | (uint16_t)p[1] << 8;
}

static inline uint32_t get32(const uint8_t *p)
{
	return p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

static inline uint64_t get64(const uint8_t *p)
{
	return get32(p) | (uint64_t)get32(p + 4) << 32;
}

/* Make room for need elements (no shrinking). */
static int grow(void **p, size_t *cap, size_t need, size_t elsize)
{
	void *np;

	if (need <= *cap)
		return 0;
	np = realloc(*p, need * elsize);
	if (!np)
		return -1;
	*p = np;
	*cap = need;
	return 0;
}

/*
 * fread n bytes into *p, growing it as the bytes arrive (at most doubling),
 * so that a length read from a damaged or crafted file costs memory only
 * for the bytes really there.  *got: bytes read; -1: out of memory.
 */
static int fread_grow(FILE *f, uint8_t **p, size_t *cap, size_t at, size_t n, size_t *got)
{
	size_t end = at + n;

	*got = 0;
	while (at < end) {
		size_t want = end - at, step = at > 65536 ? at : 65536, r;

		if (want > step)
			want = step;
		if (grow((void **)p, cap, at + want, 1))
			return -1;
		r = fread(*p + at, 1, want, f);
		at += r;
		*got += r;
		if (r < want)
			break;
	}
	return 0;
}

/* ---- byte shuffle ------------------------------------------------------- */

/* Column k of a shuffled chunk holds byte k of each of the n records. */
static void col_put(uint8_t *col, size_t n, const uint8_t *src, unsigned int size)
{
	size_t i;
	unsigned int k;

	for (i = 0; i < n; i++, src += REC_SIZE) {
		uint64_t v;

		switch (size) {
		case 1:
			col[i] = *src;
			continue;
		case 2: {
			uint16_t x;

			memcpy(&x, src, 2);
			v = x;
			break;
		}
		case 4: {
			uint32_t x;

			memcpy(&x, src, 4);
			v = x;
			break;
		}
		default:
			memcpy(&v, src, 8);
		}
		for (k = 0; k < size; k++)
			col[k * n + i] = v >> (8 * k);
	}
}

/*
 * Gather m records' values of one field from its byte columns (column k at
 * col + k * stride).  One loop per width so the gathers unroll; this is the
 * reader's hot path (about 30 stores per record, no calls).
 */
static void col_get(uint8_t *dst, const uint8_t *col, size_t stride, size_t m,
		    unsigned int size)
{
	size_t i;

	switch (size) {
	case 1:
		for (i = 0; i < m; i++)
			dst[i * REC_SIZE] = col[i];
		break;
	case 2:
		for (i = 0; i < m; i++) {
			uint16_t v = col[i] | (uint16_t)col[stride + i] << 8;

			memcpy(dst + i * REC_SIZE, &v, 2);
		}
		break;
	case 4:
		for (i = 0; i < m; i++) {
			uint32_t v = col[i] | (uint32_t)col[stride + i] << 8 |
				     (uint32_t)col[2 * stride + i] << 16 |
				     (uint32_t)col[3 * stride + i] << 24;

			memcpy(dst + i * REC_SIZE, &v, 4);
		}
		break;
	default:
		for (i = 0; i < m; i++) {
			const uint8_t *c = col + i;
			uint64_t v = c[0] | (uint64_t)c[stride] << 8 |
				     (uint64_t)c[2 * stride] << 16 |
				     (uint64_t)c[3 * stride] << 24 |
				     (uint64_t)c[4 * stride] << 32 |
				     (uint64_t)c[5 * stride] << 40 |
				     (uint64_t)c[6 * stride] << 48 |
				     (uint64_t)c[7 * stride] << 56;

			memcpy(dst + i * REC_SIZE, &v, 8);
		}
	}
}

static void shuffle(uint8_t *out, const struct ntbpf_rec *recs, size_t n)
{
	const uint8_t *base = (const uint8_t *)recs;
	size_t f, e;

	for (f = 0; f < NFIELDS; f++) {
		const struct rec_field *fd = &rec_fields[f];

		for (e = 0; e < fd->count; e++) {
			size_t at = fd->off + e * fd->size;

			col_put(out + at * n, n, base + at, fd->size);
		}
	}
}

/*
 * Decode n records from a chunk written with the file's layout.  The first
 * REC_PREFIX bytes never change; after them come nev 32-bit ev[] slots.  We
 * take the slots we have room for (nslots) and zero the others.  After the
 * file's ev[], only port is taken, from where the file's RECORD_LAYOUT puts
 * it (port_off, 0 = the file has none); the rest is zero.  Column k of the
 * file starts at raw + k * n whatever the file's record size.
 */
static void unshuffle_block(struct ntbpf_rec *recs, const uint8_t *raw, size_t n,
			    size_t m, uint32_t nslots, uint32_t port_off)
{
	uint8_t *base = (uint8_t *)recs;
	size_t f, e, i;

	for (f = 0; f < NFIXED; f++) {
		const struct rec_field *fd = &rec_fields[f];
		size_t count = fd->off == REC_PREFIX ? nslots : fd->count;

		for (e = 0; e < count; e++) {
			size_t at = fd->off + e * fd->size;

			col_get(base + at, raw + at * n, n, m, fd->size);
		}
	}
	for (i = 0; i < m; i++)
		memset(&recs[i].port, 0, TAIL_SIZE);
	if (port_off)
		col_get(base + offsetof(struct ntbpf_rec, port), raw + (size_t)port_off * n,
			n, m, sizeof(recs->port));
}

static void unshuffle(struct ntbpf_rec *recs, const uint8_t *raw, size_t n,
		      uint32_t file_nev, uint32_t port_off)
{
	uint32_t nslots = file_nev < NTBPF_MAX_EV ? file_nev : NTBPF_MAX_EV;
	size_t b, i;

	/* in blocks that stay in L1 while every field is filled in */
	for (b = 0; b < n; b += UNSHUFFLE_BLOCK)
		unshuffle_block(recs + b, raw + b, n,
				n - b < UNSHUFFLE_BLOCK ? n - b : UNSHUFFLE_BLOCK,
				nslots, port_off);
	if (file_nev == NTBPF_MAX_EV)
		return;
	/* Another layout: slots we lack are zero and marked invalid. */
	for (i = 0; i < n; i++) {
		memset(&recs[i].ev[nslots], 0, (NTBPF_MAX_EV - nslots) * EV_SIZE);
		recs[i].ev_mask &= (uint32_t)((1ull << nslots) - 1);
	}
}

/* ---- header helpers ----------------------------------------------------- */

/*
 * Append one zeroed element to a dynamic array.  Capacity is implicit (the
 * next power of two >= n, at least 4), so the structs need no extra field.
 */
static void *array_add(void **arr, uint32_t *n, size_t elsize)
{
	uint32_t cnt = *n;
	uint8_t *p = *arr;

	if (cnt == UINT32_MAX)
		return NULL;
	if (cnt == 0 || (cnt >= 4 && !(cnt & (cnt - 1)))) {
		size_t cap = cnt ? (size_t)cnt * 2 : 4;

		p = realloc(p, cap * elsize);
		if (!p)
			return NULL;
		*arr = p;
	}
	memset(p + cnt * elsize, 0, elsize);
	*n = cnt + 1;
	return p + cnt * elsize;
}

void nt_header_init(struct nt_header *h, uint8_t role)
{
	memset(h, 0, sizeof(*h));
	h->version = NT_FILE_VERSION;
	h->role = role;
	h->rec_size = REC_SIZE;
	h->nev = NTBPF_MAX_EV;
	h->sample = 1;
#ifdef NTBPF_VERSION
	snprintf(h->ntbpf_version, sizeof(h->ntbpf_version), "%s", NTBPF_VERSION);
#endif
}

struct nt_hook_info *nt_header_add_hook(struct nt_header *h)
{
	return array_add((void **)&h->hooks, &h->nhooks, sizeof(*h->hooks));
}

/*
 * Two open-addressing tables of 2^bits slots (at least twice the
 * controllers), linear probing, each slot 1 + a controller's index or 0:
 * by instance (the first controller of each instance >= 0 that fits a u16)
 * and by cntlid (the first initiator controller of each cntlid, with how
 * many share it and whether their instances differ).  Keys are at most 16
 * bits and distinct within a table, so a crafted header cannot make long
 * probe chains beyond what the load factor allows.
 */
struct nt_ctrl_index {
	uint32_t n;			/* nctrls when built: stale otherwise */
	unsigned int bits;
	uint32_t *by_inst, *by_cntlid;
	uint32_t *cnt;			/* by_cntlid's slot: controllers with the cntlid */
	uint8_t *distinct;		/* ... with more than one instance among them */
};

static inline uint32_t idx_slot(uint32_t key, unsigned int bits)
{
	return (uint32_t)(key * 0x9e3779b1u) >> (32 - bits);
}

static void index_free(struct nt_header *h)
{
	struct nt_ctrl_index *x = h->ctrl_index;

	if (!x)
		return;
	free(x->by_inst);
	free(x->by_cntlid);
	free(x->cnt);
	free(x->distinct);
	free(x);
	h->ctrl_index = NULL;
}

int nt_header_index(struct nt_header *h)
{
	struct nt_ctrl_index *x;
	uint32_t size, mask, k;
	unsigned int bits = 4;

	index_free(h);
	while ((1u << bits) < 2 * (uint64_t)h->nctrls)
		bits++;
	size = 1u << bits;
	mask = size - 1;
	x = calloc(1, sizeof(*x));
	if (!x)
		return -1;
	x->bits = bits;
	x->by_inst = calloc(size, sizeof(*x->by_inst));
	x->by_cntlid = calloc(size, sizeof(*x->by_cntlid));
	x->cnt = calloc(size, sizeof(*x->cnt));
	x->distinct = calloc(size, 1);
	h->ctrl_index = x;
	if (!x->by_inst || !x->by_cntlid || !x->cnt || !x->distinct) {
		index_free(h);
		return -1;
	}
	for (k = 0; k < h->nctrls; k++) {
		const struct nt_ctrl_info *c = &h->ctrls[k];
		uint32_t s;

		if (c->instance < 0)
			continue;
		if (c->instance <= UINT16_MAX) {
			for (s = idx_slot(c->instance, bits); x->by_inst[s]; s = (s + 1) & mask)
				if (h->ctrls[x->by_inst[s] - 1].instance == c->instance)
					break;
			if (!x->by_inst[s])
				x->by_inst[s] = k + 1;
		}
		for (s = idx_slot(c->cntlid, bits); x->by_cntlid[s]; s = (s + 1) & mask)
			if (h->ctrls[x->by_cntlid[s] - 1].cntlid == c->cntlid)
				break;
		if (!x->by_cntlid[s])
			x->by_cntlid[s] = k + 1;
		else if (h->ctrls[x->by_cntlid[s] - 1].instance != c->instance)
			x->distinct[s] = 1;
		x->cnt[s]++;
	}
	x->n = h->nctrls;
	return 0;
}

static const struct nt_ctrl_index *index_of(const struct nt_header *h)
{
	return h->ctrl_index && h->ctrl_index->n == h->nctrls ? h->ctrl_index : NULL;
}

const struct nt_ctrl_info *nt_header_ctrl(const struct nt_header *h, uint16_t instance)
{
	const struct nt_ctrl_index *x = index_of(h);
	uint32_t k, s;

	if (!x) {
		for (k = 0; k < h->nctrls; k++)
			if (h->ctrls[k].instance == instance)
				return &h->ctrls[k];
		return NULL;
	}
	for (s = idx_slot(instance, x->bits); x->by_inst[s]; s = (s + 1) & ((1u << x->bits) - 1))
		if (h->ctrls[x->by_inst[s] - 1].instance == instance)
			return &h->ctrls[x->by_inst[s] - 1];
	return NULL;
}

uint32_t nt_header_cntlid_ctrls(const struct nt_header *h, uint16_t cntlid, uint16_t instance, bool *other)
{
	const struct nt_ctrl_index *x = index_of(h);
	uint32_t k, s, n = 0;
	bool o = false;

	if (!x) {
		for (k = 0; k < h->nctrls; k++)
			if (h->ctrls[k].instance >= 0 && h->ctrls[k].cntlid == cntlid) {
				n++;
				o |= h->ctrls[k].instance != instance;
			}
	} else {
		for (s = idx_slot(cntlid, x->bits); x->by_cntlid[s]; s = (s + 1) & ((1u << x->bits) - 1))
			if (h->ctrls[x->by_cntlid[s] - 1].cntlid == cntlid) {
				n = x->cnt[s];
				o = x->distinct[s] || h->ctrls[x->by_cntlid[s] - 1].instance != instance;
				break;
			}
	}
	if (other)
		*other = o;
	return n;
}

struct nt_ctrl_info *nt_header_add_ctrl(struct nt_header *h)
{
	struct nt_ctrl_info *c;

	c = array_add((void **)&h->ctrls, &h->nctrls, sizeof(*h->ctrls));
	if (c)
		c->instance = -1;
	return c;
}

struct nt_queue_info *nt_ctrl_add_queue(struct nt_ctrl_info *c)
{
	struct nt_queue_info *q;

	q = array_add((void **)&c->queues, &c->nqueues, sizeof(*c->queues));
	if (q)
		q->io_cpu = -1;
	return q;
}

void nt_header_free(struct nt_header *h)
{
	uint32_t i;

	if (!h)
		return;
	for (i = 0; i < h->nctrls && h->ctrls; i++)
		free(h->ctrls[i].queues);
	free(h->ctrls);
	free(h->hooks);
	index_free(h);
	h->ctrls = NULL;
	h->hooks = NULL;
	h->nctrls = 0;
	h->nhooks = 0;
}

const char *nt_role_name(uint8_t role)
{
	switch (role) {
	case NTBPF_ROLE_INITIATOR:
		return "initiator";
	case NTBPF_ROLE_TARGET:
		return "target";
	default:
		return "unknown";
	}
}

int nt_role_parse(const char *s)
{
	if (!s)
		return -1;
	if (!strcasecmp(s, "initiator"))
		return NTBPF_ROLE_INITIATOR;
	if (!strcasecmp(s, "target"))
		return NTBPF_ROLE_TARGET;
	return -1;
}

/* ---- header encoding ---------------------------------------------------- */

/* Growable byte buffer; an allocation failure is sticky and checked once. */
struct buf {
	uint8_t *p;
	size_t len, cap;
	bool oom;
};

static uint8_t *buf_room(struct buf *b, size_t n)
{
	uint8_t *p;

	if (b->oom)
		return NULL;
	if (b->len + n > b->cap) {
		size_t cap = b->cap ? b->cap * 2 : 4096;

		while (cap < b->len + n)
			cap *= 2;
		p = realloc(b->p, cap);
		if (!p) {
			b->oom = true;
			return NULL;
		}
		b->p = p;
		b->cap = cap;
	}
	p = b->p + b->len;
	b->len += n;
	return p;
}

static void buf_u8(struct buf *b, uint8_t v)
{
	uint8_t *p = buf_room(b, 1);

	if (p)
		*p = v;
}

static void buf_u16(struct buf *b, uint16_t v)
{
	uint8_t *p = buf_room(b, 2);

	if (p)
		put16(p, v);
}

static void buf_u32(struct buf *b, uint32_t v)
{
	uint8_t *p = buf_room(b, 4);

	if (p)
		put32(p, v);
}

static void buf_u64(struct buf *b, uint64_t v)
{
	uint8_t *p = buf_room(b, 8);

	if (p)
		put64(p, v);
}

/* u16 length + bytes; the in-memory field may lack its NUL when full. */
static void buf_str(struct buf *b, const char *s, size_t size)
{
	size_t len = strnlen(s, size);
	uint8_t *p;

	if (len > UINT16_MAX)
		len = UINT16_MAX;
	buf_u16(b, len);
	p = buf_room(b, len);
	if (p)
		memcpy(p, s, len);
}

#define BUF_STR(b, field) buf_str(b, field, sizeof(field))

static size_t tlv_begin(struct buf *b, uint16_t tag)
{
	buf_u16(b, tag);
	buf_u16(b, 0);
	buf_u32(b, 0);		/* length, patched by tlv_end */
	return b->len;
}

static void tlv_end(struct buf *b, size_t start)
{
	if (!b->oom)
		put32(b->p + start - 4, b->len - start);
}

static void tlv_str(struct buf *b, uint16_t tag, const char *s, size_t size)
{
	size_t at = tlv_begin(b, tag);

	buf_str(b, s, size);
	tlv_end(b, at);
}

static void enc_layout(struct buf *b)
{
	size_t at = tlv_begin(b, TAG_RECORD_LAYOUT), f;

	buf_u32(b, REC_SIZE);
	buf_u32(b, NTBPF_MAX_EV);
	buf_u32(b, NFIELDS);
	for (f = 0; f < NFIELDS; f++) {
		buf_str(b, rec_fields[f].name, strlen(rec_fields[f].name));
		buf_u32(b, rec_fields[f].off);
		buf_u32(b, rec_fields[f].size);
		buf_u32(b, rec_fields[f].count);
	}
	tlv_end(b, at);
}

static void enc_hook(struct buf *b, const struct nt_hook_info *k)
{
	size_t at = tlv_begin(b, TAG_HOOK);

	BUF_STR(b, k->name);
	BUF_STR(b, k->attach);
	BUF_STR(b, k->status);
	BUF_STR(b, k->boundary);
	tlv_end(b, at);
}

static void enc_ctrl(struct buf *b, const struct nt_ctrl_info *c)
{
	size_t at = tlv_begin(b, TAG_CTRL);
	uint32_t i;

	buf_u32(b, (uint32_t)c->instance);
	buf_u16(b, c->cntlid);
	BUF_STR(b, c->transport);
	BUF_STR(b, c->subsysnqn);
	BUF_STR(b, c->hostnqn);
	BUF_STR(b, c->address);
	buf_u32(b, c->queues ? c->nqueues : 0);
	for (i = 0; c->queues && i < c->nqueues; i++) {
		const struct nt_queue_info *q = &c->queues[i];

		buf_u16(b, q->qid);
		buf_u32(b, (uint32_t)q->io_cpu);
		BUF_STR(b, q->saddr);
		buf_u16(b, q->sport);
		BUF_STR(b, q->daddr);
		buf_u16(b, q->dport);
	}
	tlv_end(b, at);
}

static void enc_items(struct buf *b, const struct nt_header *h)
{
	uint32_t i, ndevs = h->ndevs < NTBPF_MAX_DEVS ? h->ndevs : NTBPF_MAX_DEVS;
	size_t at;

	tlv_str(b, TAG_NTBPF_VERSION, h->ntbpf_version, sizeof(h->ntbpf_version));
	at = tlv_begin(b, TAG_ROLE);
	buf_u8(b, h->role);
	tlv_end(b, at);
	enc_layout(b);
	tlv_str(b, TAG_HOSTNAME, h->hostname, sizeof(h->hostname));
	tlv_str(b, TAG_KERNEL, h->kernel, sizeof(h->kernel));
	tlv_str(b, TAG_BOOT_ID, h->boot_id, sizeof(h->boot_id));
	tlv_str(b, TAG_CMDLINE, h->cmdline, sizeof(h->cmdline));
	at = tlv_begin(b, TAG_CLOCKS);
	buf_u64(b, h->mono_ns);
	buf_u64(b, h->real_ns);
	buf_u64(b, h->boot_ns);
	tlv_end(b, at);
	at = tlv_begin(b, TAG_SAMPLE);
	buf_u32(b, h->sample);
	if (h->sample_window_ms)	/* a reader that does not know it reads the first word only */
		buf_u32(b, h->sample_window_ms);
	tlv_end(b, at);
	for (i = 0; i < ndevs; i++)
		tlv_str(b, TAG_DEV, h->devs[i], sizeof(h->devs[i]));
	for (i = 0; h->hooks && i < h->nhooks; i++)
		enc_hook(b, &h->hooks[i]);
	for (i = 0; h->ctrls && i < h->nctrls; i++)
		enc_ctrl(b, &h->ctrls[i]);
}

/* Whole header: fixed part, TLV payload, CRC32 of both. */
static int enc_header(struct buf *b, const struct nt_header *h, uint16_t version)
{
	uint8_t *p;

	buf_room(b, HDR_FIXED);
	enc_items(b, h);
	if (b->oom)
		return -ENOMEM;
	if (b->len - HDR_FIXED > MAX_HDR_PAYLOAD)
		return -E2BIG;
	p = b->p;
	memcpy(p, FILE_MAGIC, 8);
	put16(p + 8, version);
	put16(p + 10, 0);
	put32(p + 12, b->len - HDR_FIXED);
	buf_u32(b, crc32(0, b->p, b->len));
	return b->oom ? -ENOMEM : 0;
}

/* ---- version 2 chunks: bit-packed columns ------------------------------- */

/*
 * A version-2 chunk stores its records column by column (docs/record-format.md,
 * "Version 2 chunk").  Each column holds one value per record (per stored
 * event for the ev[] columns): a field as it is (dev, bytes, qid, cid, ...)
 * or a difference -- t0 from the previous record's t0, sector from where the
 * previous record's I/O ended, an event from the record's previous stored
 * event.  A column is written as
 *
 *   base        a reference value, usually the smallest
 *   b           bits per value: (value - base) mod 2^width in b bits, LSB first
 *   exceptions  values whose offset does not fit (offset >= 2^b - 1, the
 *               all-ones escape): offset - (2^b - 1) as a varint
 *
 * The writer picks base and b per column and chunk for the fewest bits.  A
 * field that does not change takes no bits at all; latencies take about
 * their entropy plus a bit or two.  Decoding is a branch-free loop per
 * column (exceptions aside), with nothing per value to look up.
 *
 * The descriptors and exceptions are deflated at level ZLEVEL; the packed bits
 * are near-random and go into stored deflate blocks (level 0): Huffman
 * coding would gain a few per cent on them and costs ~8 ns per byte to
 * decode on the development VM, where stored blocks cost ~0.6.
 */
enum v2_col {
	C_T0, C_DEV, C_BYTES, C_SECTOR, C_MASK, C_CTRL, C_QID, C_CID, C_OP,
	C_OPCODE, C_FLAGS, C_ROLE, C_STATUS, C_XMASK,
	C_EV0,			/* then one column per event slot, then port */
};

/*
 * port, the first column after the ev[] ones (C_EV0 + the file's nev; files
 * written before it have none, and read port 0).  A per-queue value: a
 * chunk has a few distinct ports, anywhere in 1..65535, so the column is a
 * dictionary, not the ports themselves (2 ports 20000 apart would cost 15
 * bits each): value x < d, the number of distinct ports so far in the
 * chunk, is the port first seen as the x-th; x >= d is a new port, x - d.
 * So a record costs about log2(distinct ports + 1) bits, all ports 0 (no
 * port known) nothing, and each distinct port once a varint.
 */
#define C_PORT		(C_EV0 + NTBPF_MAX_EV)	/* what we write */
#define V2_NCOLS	(C_PORT + 1)
#define V2_MAX_B	56u	/* bits per value; + 7 bits of shift fits a u64 read */
#define V2_MAX_EXTRA	16u	/* columns after the ev[] ones a later writer may add */
/* zeroed bytes after the raw chunk: an unpack reads 8 bytes at its last value */
#define V2_SLACK	16
/* stored blocks and a level switch: compressed may exceed compressBound a bit */
#define V2_CLEN_SLACK	64
/* reader limits on the raw size, before allocating: far above what we write */
#define V2_LIMIT_DIR	4096u
#define V2_LIMIT_REC	1024u

/*
 * Version 3 (what we write) is version 2 with three changes: the column
 * descriptor's first byte also holds a mode, which chooses another
 * prediction for some columns (M_ALT below); cid is split into its low 12
 * bits (column C_CID, the blk-mq tag) and its high 4 bits (a column after
 * port, the generation counter Linux's nvme driver puts there), which can be
 * predicted from the previous command of the same queue and tag.
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
#define C_GEN		(C_PORT + 1)	/* version 3: cid >> 12 */
#define V3_NCOLS	(C_GEN + 1)
#define M_ALT		1u		/* the column's other prediction */
#define M_T0		2u		/* ev[] columns: the value itself */
#define V3_MODE_SHIFT	6		/* descriptor byte: mode << 6 | b */
#define V3_TAG_BITS	12
#define V3_GEN_TBL	4096		/* (qid, tag) -> predicted gen */

static inline unsigned int gen_slot(uint16_t qid, uint16_t tag)
{
	return (tag + ((unsigned int)qid << 7)) & (V3_GEN_TBL - 1);
}

/*
 * Value width in bits (values are taken mod 2^width); later columns: 64.
 * nk: the port column (C_EV0 + the file's nev); v3: a version-3 chunk.
 */
static unsigned int col_width(unsigned int col, unsigned int nk, bool v3)
{
	static const uint8_t w[C_EV0] = {
		[C_T0] = 64, [C_DEV] = 32, [C_BYTES] = 32, [C_SECTOR] = 64,
		[C_MASK] = 32, [C_CTRL] = 16, [C_QID] = 16, [C_CID] = 16,
		[C_OP] = 8, [C_OPCODE] = 8, [C_FLAGS] = 8, [C_ROLE] = 8,
		[C_STATUS] = 16, [C_XMASK] = 32,
	};

	if (col < C_EV0)
		return v3 && col == C_CID ? V3_TAG_BITS : w[col];
	if (col <= nk)
		return 32;	/* ev[] slots and port */
	return v3 && col == nk + 1 ? 16 - V3_TAG_BITS : 64;
}

/* Modes a column may have: version 3's M_ALT columns have two. */
static unsigned int col_modes(unsigned int col, unsigned int nk, bool v3)
{
	if (!v3)
		return 1;
	if (col >= C_EV0 && col < nk)
		return 3;
	return col == C_SECTOR || col == nk + 1 ? 2 : 1;
}

static inline uint64_t width_mask(unsigned int w)
{
	return w >= 64 ? ~0ull : (1ull << w) - 1;
}

/* LEB128: 7 bits per byte, low first, high bit set on all but the last. */
static void buf_uv(struct buf *b, uint64_t v)
{
	uint8_t *p = buf_room(b, 10), *q = p;

	if (!p)
		return;
	while (v >= 0x80) {
		*q++ = v | 0x80;
		v >>= 7;
	}
	*q++ = v;
	b->len -= 10 - (q - p);
}

static inline unsigned int uv_len(unsigned int bits)
{
	return bits ? (bits + 6) / 7 : 1;
}

static inline unsigned int bitlen(uint64_t v)
{
	return v ? 64 - __builtin_clzll(v) : 0;
}

/* Slots with a value in the chunk: ev_mask, and any other slot not zero. */
static inline uint32_t stored_slots(const struct ntbpf_rec *r, uint32_t *xmask)
{
	uint32_t all = (uint32_t)((1ull << NTBPF_MAX_EV) - 1), m = ~r->ev_mask & all, xm = 0;

	while (m) {		/* only the slots outside ev_mask */
		unsigned int k = __builtin_ctz(m);

		m &= m - 1;
		if (r->ev[k])
			xm |= 1u << k;
	}
	if (xmask)
		*xmask = xm;
	return (r->ev_mask | xm) & all;
}

/*
 * The values of column col (of C_EV0 + nev ev[] columns, for the ev[] and
 * fixed columns) in mode for the n records into v[]; returns how many.
 * slots[] and xmask[]: each record's stored slots and extra-slot mask.
 */
static uint32_t v2_values(const struct ntbpf_rec *r, uint32_t n, unsigned int col,
			  unsigned int mode, bool v3, const uint32_t *slots,
			  const uint32_t *xmask, uint64_t *v)
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
		if (v3)
			EACH(r[i].cid & ((1u << V3_TAG_BITS) - 1));
		EACH(r[i].cid);
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

/* Version 3, the gen column (cid >> 12), as is or from its prediction. */
static uint32_t v3_gen_values(const struct ntbpf_rec *r, uint32_t n, unsigned int mode,
			      uint8_t *tbl, uint64_t *v)
{
	uint32_t i;

	if (mode != M_ALT) {
		for (i = 0; i < n; i++)
			v[i] = r[i].cid >> V3_TAG_BITS;
		return n;
	}
	memset(tbl, 0, V3_GEN_TBL);
	for (i = 0; i < n; i++) {
		unsigned int g = r[i].cid >> V3_TAG_BITS;
		uint8_t *p = &tbl[gen_slot(r[i].qid, r[i].cid & ((1u << V3_TAG_BITS) - 1))];

		v[i] = (g - *p) & 15;
		*p = (g + 1) & 15;
	}
	return n;
}

/*
 * Bits per value for the fewest bits in all, exceptions counted with their
 * varint and V2_EXC_COST more: an exception is a mispredicted branch and a
 * varint to decode, worth a byte of file to avoid.  hist[l]: offsets of
 * bit length l; ones[l]: offsets equal to 2^l - 1 (escapes at b = l).
 */
#define V2_EXC_COST	8	/* bits */

static unsigned int v2_pick_b(const uint32_t *hist, const uint32_t *ones, uint32_t n,
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
	for (b = 1; b <= V2_MAX_B && b <= w; b++) {
		cost = (uint64_t)n * b + (uint64_t)ones[b] * (8 + V2_EXC_COST);
		for (l = b + 1; l <= maxl; l++)
			cost += (uint64_t)hist[l] * (8 * uv_len(l) + V2_EXC_COST);
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
 * reserved for the whole column (bitw_begin), a byte at a time, unchecked.
 */
struct bitw {
	struct buf *b;
	uint8_t *p;		/* next byte; NULL: out of memory */
	uint64_t acc;
	unsigned int n;
};

static inline void bitw_begin(struct bitw *bw, struct buf *b, uint64_t nbits)
{
	size_t at = b->len;

	bw->b = b;
	bw->acc = 0;
	bw->n = 0;
	bw->p = buf_room(b, (nbits + 7) / 8);
	b->len = at;	/* what bitw_end wrote counts */
}

static inline void bitw_put(struct bitw *bw, uint64_t v, unsigned int bits)
{
	bw->acc |= v << bw->n;
	bw->n += bits;
	while (bw->n >= 8) {
		*bw->p++ = (uint8_t)bw->acc;
		bw->acc >>= 8;
		bw->n -= 8;
	}
}

static void bitw_end(struct bitw *bw)
{
	if (bw->n)
		*bw->p++ = (uint8_t)bw->acc;
	bw->b->len = bw->p - bw->b->p;
	bw->acc = 0;
	bw->n = 0;
}

struct v2enc {
	struct buf dir, exc, bits;	/* the three parts of the raw chunk */
	bool v3;			/* version 3 (else 2) */
	uint64_t *v, *v2;		/* one column's values, in two modes */
	uint8_t *gen_tbl;		/* version 3: V3_GEN_TBL predicted gens */
	uint32_t *slots, *xmask;	/* per record: stored ev[] slots, extra ones */
	uint16_t *port_idx;		/* port -> 1 + its dictionary index, 0: not seen */
	uint16_t *ports;		/* the chunk's distinct ports, in order */
};

_Static_assert(NT_CHUNK_RECS < 65535, "port dictionary index in a u16");

/* The port column's values (see C_PORT): dictionary indexes or new ports. */
static uint32_t v2_port_values(struct v2enc *e, const struct ntbpf_rec *r, uint32_t n)
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
struct v2plan {
	uint64_t *v;		/* values, then offsets from base */
	uint32_t cnt;
	uint64_t base, cost;
	unsigned int b;
};

static void v2_plan(struct v2plan *p, unsigned int w)
{
	uint64_t mw = width_mask(w), umin = ~0ull, umax = 0, *v = p->v;
	int64_t smin = INT64_MAX, smax = INT64_MIN;
	uint32_t hist[65] = { 0 }, ones[65] = { 0 }, i, n = p->cnt;
	unsigned int sh = 64 - w;

	/*
	 * One pass: the values to the column's width, and the base: the
	 * smallest value, unsigned or signed, whichever spans less.
	 */
	for (i = 0; i < n; i++) {
		uint64_t x = v[i] & mw;
		int64_t sx = (int64_t)(x << sh) >> sh;	/* sign-extended */

		v[i] = x;
		umin = x < umin ? x : umin;
		umax = x > umax ? x : umax;
		smin = sx < smin ? sx : smin;
		smax = sx > smax ? sx : smax;
	}
	p->base = !n ? 0 : ((uint64_t)smax - (uint64_t)smin) < umax - umin ? (uint64_t)smin & mw : umin;
	if (umin == umax) {
		/* a constant column (the common case): no bits (v[] is not read) */
		p->b = 0;
		p->cost = 8 * uv_len(bitlen(p->base));
		return;
	}
	for (i = 0; i < n; i++) {
		uint64_t off = (v[i] - p->base) & mw;
		unsigned int l = bitlen(off);

		v[i] = off;
		hist[l]++;
		ones[l] += !(off & (off + 1));	/* 2^l - 1; ones[0] is never read */
	}
	p->b = v2_pick_b(hist, ones, n, w, &p->cost);
	p->cost += 8 * uv_len(bitlen(p->base));
}

static uint32_t v2_col_values(struct v2enc *e, const struct ntbpf_rec *recs, uint32_t n,
			      unsigned int col, unsigned int mode, uint64_t *v)
{
	if (col == C_PORT)
		return v2_port_values(e, recs, n);	/* into e->v */
	if (col == C_GEN)
		return v3_gen_values(recs, n, mode, e->gen_tbl, v);
	return v2_values(recs, n, col, mode, e->v3, e->slots, e->xmask, v);
}

#define V3_PICK_RECS 512	/* a large chunk's mode is chosen on this many records */

/*
 * Encode one column: descriptor into dir, exceptions, packed bits.  In
 * version 3, a column with two modes is computed both ways, and the mode
 * with fewer bits is written (the first on a tie: it decodes faster).
 */
static void v2_column(struct v2enc *e, const struct ntbpf_rec *recs, uint32_t n,
		      unsigned int col)
{
	unsigned int w = col_width(col, C_PORT, e->v3), nm = col_modes(col, C_PORT, e->v3), mode = 0, m, b;
	struct v2plan p = { e->v, 0, 0, 0, 0 }, q = { e->v2, 0, 0, 0, 0 };
	size_t exc_at = e->exc.len;
	struct bitw bw;
	uint64_t esc;
	uint32_t i;

	if (nm > 1 && n >= 2 * V3_PICK_RECS) {
		/*
		 * A large chunk: the mode is chosen on its first V3_PICK_RECS
		 * records (records of one chunk are alike), and only that
		 * mode is computed for all of them.  Same file format, a
		 * fraction of the writer's work: it runs on the host it
		 * measures, the reader does not care how a mode was chosen.
		 */
		uint64_t best = ~0ull;

		for (m = 0; m < nm; m++) {
			q.cnt = v2_col_values(e, recs, V3_PICK_RECS, col, m, q.v);
			v2_plan(&q, w);
			if (q.cost < best) {
				best = q.cost;
				mode = m;
			}
		}
		p.cnt = v2_col_values(e, recs, n, col, mode, p.v);
		v2_plan(&p, w);
	} else {
		p.cnt = v2_col_values(e, recs, n, col, 0, p.v);
		v2_plan(&p, w);
		for (m = 1; m < nm; m++) {
			q.cnt = v2_col_values(e, recs, n, col, m, q.v);
			v2_plan(&q, w);
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
	if (b) {
		bitw_begin(&bw, &e->bits, (uint64_t)p.cnt * b);
		for (i = 0; bw.p && i < p.cnt; i++) {
			uint64_t off = p.v[i];

			if (off >= esc) {
				buf_uv(&e->exc, off - esc);
				off = esc;
			}
			bitw_put(&bw, off, b);
		}
		if (bw.p)
			bitw_end(&bw);
	}
	buf_u8(&e->dir, b | mode << V3_MODE_SHIFT);
	buf_uv(&e->dir, p.base);
	buf_uv(&e->dir, e->exc.len - exc_at);
}

/* The raw chunk in three parts: column directory, exceptions, packed bits. */
static int v2_encode(struct v2enc *e, const struct ntbpf_rec *recs, uint32_t n)
{
	unsigned int col;
	uint32_t i;

	for (i = 0; i < n; i++)
		e->slots[i] = stored_slots(&recs[i], &e->xmask[i]);
	e->dir.len = e->exc.len = e->bits.len = 0;
	buf_u32(&e->dir, n);	/* under the CRC: a column of b = 0 has no count */
	buf_u32(&e->dir, e->v3 ? V3_NCOLS : V2_NCOLS);
	for (col = 0; col < (e->v3 ? V3_NCOLS : V2_NCOLS); col++)
		v2_column(e, recs, n, col);
	return e->dir.oom || e->exc.oom || e->bits.oom ? -ENOMEM : 0;
}

/* ---- writer ------------------------------------------------------------- */

struct nt_writer {
	FILE *f;
	int err;			/* sticky: first failure, -errno */
	uint16_t version;		/* of the chunks written */
	z_stream zs;
	uint32_t n;			/* pending records */
	uint64_t records;		/* records in written chunks */
	uint64_t bytes;
	uint8_t *out;			/* chunk header + compressed bytes */
	size_t out_cap;
	struct ntbpf_rec *recs;		/* pending records */
	uint8_t *raw;			/* version 1: shuffled */
	struct v2enc enc;		/* version 2: the raw chunk in parts */
};

static void writer_free(struct nt_writer *w)
{
	deflateEnd(&w->zs);
	free(w->out);
	free(w->enc.dir.p);
	free(w->enc.exc.p);
	free(w->enc.bits.p);
	free(w->enc.v);
	free(w->enc.v2);
	free(w->enc.gen_tbl);
	free(w->enc.slots);
	free(w->enc.xmask);
	free(w->enc.port_idx);
	free(w->enc.ports);
	free(w->recs);
	free(w->raw);
	free(w);
}

static int w_write(struct nt_writer *w, const void *p, size_t n)
{
	if (w->err)
		return w->err;
	if (fwrite(p, 1, n, w->f) != n) {
		w->err = errno ? -errno : -EIO;
		return w->err;
	}
	w->bytes += n;
	return 0;
}

struct nt_writer *nt_writer_open(FILE *f, const struct nt_header *h)
{
	struct buf b = { 0 };
	struct nt_writer *w;
	int err;

	w = calloc(1, sizeof(*w));
	if (!w)
		return NULL;
	w->f = f;
	w->version = h->version == 1 || h->version == 2 ? h->version : NT_FILE_VERSION;
	if (deflateInit(&w->zs, w->version == 1 ? ZLEVEL_V1 : ZLEVEL) != Z_OK) {
		free(w);
		errno = ENOMEM;
		return NULL;
	}
	w->recs = malloc(NT_CHUNK_RECS * REC_SIZE);
	if (w->version == 1) {
		w->raw = malloc(NT_CHUNK_RECS * REC_SIZE);
		w->out_cap = CHUNK_HDR + deflateBound(&w->zs, NT_CHUNK_RECS * REC_SIZE);
		w->out = malloc(w->out_cap);
		err = w->recs && w->raw && w->out ? 0 : -ENOMEM;
	} else {
		w->enc.v3 = w->version >= 3;
		w->enc.v = malloc(NT_CHUNK_RECS * sizeof(*w->enc.v));
		w->enc.v2 = malloc(NT_CHUNK_RECS * sizeof(*w->enc.v2));
		w->enc.gen_tbl = malloc(V3_GEN_TBL);
		w->enc.slots = malloc(NT_CHUNK_RECS * sizeof(*w->enc.slots));
		w->enc.xmask = malloc(NT_CHUNK_RECS * sizeof(*w->enc.xmask));
		w->enc.port_idx = calloc(65536, sizeof(*w->enc.port_idx));
		w->enc.ports = malloc(NT_CHUNK_RECS * sizeof(*w->enc.ports));
		err = w->recs && w->enc.v && w->enc.v2 && w->enc.gen_tbl &&
		      w->enc.slots && w->enc.xmask &&
		      w->enc.port_idx && w->enc.ports ? 0 : -ENOMEM;
		/* w->out: grown for each chunk */
	}
	if (!err)
		err = enc_header(&b, h, w->version);
	if (!err)
		err = w_write(w, b.p, b.len);
	free(b.p);
	if (err) {
		writer_free(w);
		errno = -err;
		return NULL;
	}
	return w;
}

/* Feed one piece of the chunk's raw bytes to deflate; last: finish. */
static int w_deflate(struct nt_writer *w, const uint8_t *p, size_t n, bool last)
{
	if (!n && !last)
		return 0;	/* deflate would say Z_BUF_ERROR: no progress */
	w->zs.next_in = (uint8_t *)p;
	w->zs.avail_in = n;
	if (deflate(&w->zs, last ? Z_FINISH : Z_NO_FLUSH) != (last ? Z_STREAM_END : Z_OK) ||
	    w->zs.avail_in) {
		w->err = -EIO;
		return w->err;
	}
	return 0;
}

/*
 * The raw bytes of a chunk, deflated into w->out: version 1, the shuffled
 * records; version 2, the column directory and the exceptions at level
 * ZLEVEL, then the packed bits in stored blocks (level 0).
 */
static int deflate_chunk(struct nt_writer *w, const struct ntbpf_rec *recs, uint32_t n,
			 uint32_t *raw_len)
{
	struct v2enc *e = &w->enc;
	size_t len, need;

	deflateReset(&w->zs);
	if (w->version == 1) {
		*raw_len = n * REC_SIZE;
		shuffle(w->raw, recs, n);
		w->zs.next_out = w->out + CHUNK_HDR;
		w->zs.avail_out = w->out_cap - CHUNK_HDR;
		return w_deflate(w, w->raw, *raw_len, true);
	}
	if (v2_encode(e, recs, n)) {
		w->err = -ENOMEM;
		return w->err;
	}
	len = e->dir.len + e->exc.len + e->bits.len;
	need = CHUNK_HDR + compressBound(len) + V2_CLEN_SLACK;
	if (grow((void **)&w->out, &w->out_cap, need, 1)) {
		w->err = -ENOMEM;
		return w->err;
	}
	*raw_len = len;
	w->zs.next_out = w->out + CHUNK_HDR;
	w->zs.avail_out = w->out_cap - CHUNK_HDR;
	if (deflateParams(&w->zs, ZLEVEL, Z_DEFAULT_STRATEGY) != Z_OK ||
	    w_deflate(w, e->dir.p, e->dir.len, false) ||
	    w_deflate(w, e->exc.p, e->exc.len, false) ||
	    deflateParams(&w->zs, 0, Z_DEFAULT_STRATEGY) != Z_OK ||
	    w_deflate(w, e->bits.p, e->bits.len, true)) {
		w->err = -EIO;
		return w->err;
	}
	return 0;
}

/*
 * deflateReset on one long-lived stream instead of compress2(): a zlib
 * stream as compress2() makes (default window) without allocating the
 * ~270 KiB deflate state for every chunk.
 */
static int write_recs(struct nt_writer *w, const struct ntbpf_rec *recs, uint32_t n)
{
	uint8_t *o;
	uint32_t clen, raw_len;

	if (deflate_chunk(w, recs, n, &raw_len))
		return w->err;
	o = w->out;
	clen = w->zs.total_out;
	/*
	 * Records so alike that they take less than the reader's bound
	 * (CHUNK_RECS_PER_BYTE per byte: identical records cost no bits) go in
	 * two chunks, each with its own descriptors: every chunk we write is
	 * one a reader accepts.
	 */
	if (n > 1 && n > CHUNK_RECS_PER_BYTE * ((uint64_t)CHUNK_HDR + clen))
		return write_recs(w, recs, n / 2) || write_recs(w, recs + n / 2, n - n / 2) ? w->err : 0;
	memcpy(o, CHUNK_MAGIC, 4);
	put32(o + 4, n);
	put32(o + 8, raw_len);
	put32(o + 12, clen);
	put32(o + 16, crc32(0, o + CHUNK_HDR, clen));
	if (w_write(w, o, CHUNK_HDR + clen))
		return w->err;
	w->records += n;
	return 0;
}

static int write_chunk(struct nt_writer *w)
{
	if (write_recs(w, w->recs, w->n))
		return w->err;
	w->n = 0;
	return 0;
}

int nt_writer_add(struct nt_writer *w, const struct ntbpf_rec *r)
{
	if (w->err)
		return w->err;
	w->recs[w->n] = *r;
	/* written as 0 (version 1), or not at all (version 2) */
	memset(w->recs[w->n].reserved, 0, sizeof(r->reserved));
	if (++w->n == NT_CHUNK_RECS)
		return write_chunk(w);
	return 0;
}

int nt_writer_flush(struct nt_writer *w)
{
	if (w->n && write_chunk(w))
		return w->err;
	if (!w->err && fflush(w->f))
		w->err = errno ? -errno : -EIO;
	return w->err;
}

/* The trailer's record count is the writer's own: what the file holds. */
static int write_trailer(struct nt_writer *w, const struct nt_trailer *t)
{
	uint8_t o[8 + 8 + 4 + 8 * ST_NR + 8 + 8 + 4], *p = o;
	unsigned int i;

	memcpy(p, TRAILER_MAGIC, 4);
	put32(p + 4, sizeof(o) - 12);
	put64(p + 8, w->records);
	put32(p + 16, ST_NR);
	p += 20;
	for (i = 0; i < ST_NR; i++, p += 8)
		put64(p, t ? t->stats[i] : 0);
	put64(p, t ? t->lost_user : 0);
	put64(p + 8, t ? t->end_mono_ns : 0);
	put32(p + 16, crc32(0, o, p + 16 - o));
	return w_write(w, o, sizeof(o));
}

int nt_writer_close(struct nt_writer *w, const struct nt_trailer *t)
{
	int err;

	if (!w)
		return -EINVAL;
	if (w->n)
		write_chunk(w);
	write_trailer(w, t);
	nt_writer_flush(w);
	err = w->err;
	writer_free(w);
	return err;
}

void nt_writer_recover(struct nt_writer *w)
{
	w->err = 0;
	w->n = 0;
	clearerr(w->f);
}

uint64_t nt_writer_bytes(const struct nt_writer *w)
{
	return w->bytes;
}

/* ---- header decoding ---------------------------------------------------- */

/* Bounds-checked cursor: any overrun sets bad and yields zeroes. */
struct cur {
	const uint8_t *p;
	size_t len;
	bool bad;
};

static const uint8_t *cur_take(struct cur *c, size_t n)
{
	const uint8_t *p = c->p;

	if (c->bad || c->len < n) {
		c->bad = true;
		return NULL;
	}
	c->p += n;
	c->len -= n;
	return p;
}

static uint8_t cur_u8(struct cur *c)
{
	const uint8_t *p = cur_take(c, 1);

	return p ? *p : 0;
}

static uint16_t cur_u16(struct cur *c)
{
	const uint8_t *p = cur_take(c, 2);

	return p ? get16(p) : 0;
}

static uint32_t cur_u32(struct cur *c)
{
	const uint8_t *p = cur_take(c, 4);

	return p ? get32(p) : 0;
}

static uint64_t cur_u64(struct cur *c)
{
	const uint8_t *p = cur_take(c, 8);

	return p ? get64(p) : 0;
}

/* Strings longer than the field are cut (and always NUL terminated). */
static void cur_str(struct cur *c, char *dst, size_t size)
{
	uint16_t len = cur_u16(c);
	const uint8_t *p = cur_take(c, len);
	size_t n = len < size - 1 ? len : size - 1;

	if (!p)
		n = 0;
	memcpy(dst, p ? p : (const uint8_t *)"", n);
	dst[n] = '\0';
}

#define CUR_STR(c, field) cur_str(c, field, sizeof(field))

static int dec_ctrl(struct nt_header *h, struct cur *v, uint32_t *nqueues)
{
	struct nt_ctrl_info *c;
	uint32_t nq, i;

	if (h->nctrls >= MAX_CTRLS)
		return -E2BIG;
	c = nt_header_add_ctrl(h);
	if (!c)
		return -ENOMEM;
	c->instance = (int32_t)cur_u32(v);
	c->cntlid = cur_u16(v);
	CUR_STR(v, c->transport);
	CUR_STR(v, c->subsysnqn);
	CUR_STR(v, c->hostnqn);
	CUR_STR(v, c->address);
	nq = cur_u32(v);
	if (nq > v->len / 14)	/* 14: the smallest queue entry */
		v->bad = true;
	else if (nq > MAX_QUEUES - *nqueues)
		return -E2BIG;
	else
		*nqueues += nq;
	for (i = 0; i < nq && !v->bad; i++) {
		struct nt_queue_info *q = nt_ctrl_add_queue(c);

		if (!q)
			return -ENOMEM;
		q->qid = cur_u16(v);
		q->io_cpu = (int32_t)cur_u32(v);
		CUR_STR(v, q->saddr);
		q->sport = cur_u16(v);
		CUR_STR(v, q->daddr);
		q->dport = cur_u16(v);
	}
	return 0;
}

static int dec_hook(struct nt_header *h, struct cur *v)
{
	struct nt_hook_info *k;

	if (h->nhooks >= MAX_HOOKS)
		return -E2BIG;
	k = nt_header_add_hook(h);
	if (!k)
		return -ENOMEM;
	CUR_STR(v, k->name);
	CUR_STR(v, k->attach);
	CUR_STR(v, k->status);
	CUR_STR(v, k->boundary);
	return 0;
}

/*
 * Where a version-1 record of the file holds port: the RECORD_LAYOUT field
 * "port", one u16 after the file's ev[] and inside its record; 0 when the
 * file has none (written before it; port reads 0).  A field list that does
 * not parse is not an error: readers never needed it (docs/record-format.md).
 */
static uint32_t layout_port_off(struct cur v, uint32_t rec_size, uint32_t nev)
{
	uint32_t nf = cur_u32(&v), i;

	for (i = 0; i < nf && !v.bad; i++) {
		uint16_t len = cur_u16(&v);
		const uint8_t *name = cur_take(&v, len);
		uint32_t off = cur_u32(&v), size = cur_u32(&v), count = cur_u32(&v);

		if (v.bad || len != 4 || memcmp(name, "port", 4))
			continue;
		if (size == 2 && count == 1 && off >= REC_PREFIX + (uint64_t)nev * EV_SIZE &&
		    (uint64_t)off + 2 <= rec_size)
			return off;
		return 0;
	}
	return 0;
}

/*
 * One item.  Unknown tags are skipped, and bytes after the fields we know are
 * ignored, so later versions may add items or append to existing ones.  Of
 * the RECORD_LAYOUT field list our reader only uses port's offset (version
 * 1); the rest follows the fixed prefix rule (unshuffle).
 */
static int dec_item(struct nt_header *h, uint16_t tag, struct cur *v, uint32_t *port_off,
		    uint32_t *nqueues)
{
	switch (tag) {
	case TAG_NTBPF_VERSION:
		CUR_STR(v, h->ntbpf_version);
		break;
	case TAG_ROLE:
		h->role = cur_u8(v);
		break;
	case TAG_RECORD_LAYOUT:
		h->rec_size = cur_u32(v);
		h->nev = cur_u32(v);
		*port_off = v->bad ? 0 : layout_port_off(*v, h->rec_size, h->nev);
		break;
	case TAG_HOSTNAME:
		CUR_STR(v, h->hostname);
		break;
	case TAG_KERNEL:
		CUR_STR(v, h->kernel);
		break;
	case TAG_BOOT_ID:
		CUR_STR(v, h->boot_id);
		break;
	case TAG_CMDLINE:
		CUR_STR(v, h->cmdline);
		break;
	case TAG_CLOCKS:
		h->mono_ns = cur_u64(v);
		h->real_ns = cur_u64(v);
		h->boot_ns = cur_u64(v);
		break;
	case TAG_SAMPLE:
		h->sample = cur_u32(v);
		if (v->len >= 4)
			h->sample_window_ms = cur_u32(v);
		break;
	case TAG_DEV:
		if (h->ndevs < NTBPF_MAX_DEVS)	/* more: ignored */
			CUR_STR(v, h->devs[h->ndevs++]);
		break;
	case TAG_HOOK:
		return dec_hook(h, v);
	case TAG_CTRL:
		return dec_ctrl(h, v, nqueues);
	}
	return 0;
}

static int dec_items(struct nt_header *h, const uint8_t *p, size_t len,
		     uint32_t *port_off, char *err, size_t errlen)
{
	struct cur c = { p, len, false };
	uint32_t nqueues = 0;

	while (c.len) {
		uint16_t tag = cur_u16(&c);
		uint32_t ilen, rsv = cur_u16(&c);
		const uint8_t *val;
		struct cur v;

		(void)rsv;
		ilen = cur_u32(&c);
		val = cur_take(&c, ilen);
		if (!val) {
			snprintf(err, errlen, "header corrupt (item runs past its end)");
			return -1;
		}
		v = (struct cur){ val, ilen, false };
		switch (dec_item(h, tag, &v, port_off, &nqueues)) {
		case 0:
			break;
		case -E2BIG:
			snprintf(err, errlen, "header corrupt (more than %u %s)",
				 tag == TAG_HOOK ? MAX_HOOKS : h->nctrls >= MAX_CTRLS ? MAX_CTRLS : MAX_QUEUES,
				 tag == TAG_HOOK ? "hooks" : h->nctrls >= MAX_CTRLS ? "controllers" : "queues");
			return -1;
		default:
			snprintf(err, errlen, "out of memory reading the header");
			return -1;
		}
		if (v.bad) {
			snprintf(err, errlen, "header corrupt (item %u too short)", tag);
			return -1;
		}
	}
	return 0;
}

static int check_layout(const struct nt_header *h, char *err, size_t errlen)
{
	if (!h->rec_size) {
		snprintf(err, errlen, "header corrupt (no record layout)");
		return -1;
	}
	if (h->rec_size < REC_PREFIX || h->rec_size > MAX_REC_SIZE ||
	    h->nev > MAX_NEV || REC_PREFIX + h->nev * EV_SIZE > h->rec_size) {
		snprintf(err, errlen,
			 "unsupported record layout (%u bytes, %u event slots)",
			 h->rec_size, h->nev);
		return -1;
	}
	return 0;
}

/* ---- version 2 decoding ------------------------------------------------- */

static uint64_t cur_uv(struct cur *c)
{
	uint64_t v = 0;
	unsigned int i;

	for (i = 0; i < 10; i++) {
		uint8_t b = cur_u8(c);

		v |= (uint64_t)(b & 0x7f) << (7 * i);
		if (!(b & 0x80)) {
			if (i == 9 && b > 1)	/* past 64 bits */
				c->bad = true;
			return v;
		}
	}
	c->bad = true;		/* more than 10 bytes */
	return 0;
}

struct v2col {
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
static bool v2_exception(struct v2col *c, uint64_t *off)
{
	uint64_t x, mw = width_mask(c->w);

	uint64_t y = ld64(c->exc.p), stop = ~y & 0x8080808080808080ull;

	/*
	 * Up to 8 bytes at once (the exceptions are followed by the packed bits
	 * and V2_SLACK bytes, so the load stays in the buffer); longer ones, and
	 * any that runs past the column's exceptions, byte by byte.
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
 * can never match) and reads no bits.  The raw buffer has
 * V2_SLACK zero bytes after its end for the 8-byte reads of the last values.
 * Needs bool bad and const char *err in scope; returns on a short column or
 * a bad exception.
 */
#define V2_FOR(col, cnt, val, body)	do {					\
		struct v2col *c_ = &cols[col];					\
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
			if (__builtin_expect(off_ == esc_, 0) &&		\
			    !v2_exception(c_, &off_))				\
				return "bad record encoding: bad exception";	\
			val = base_ + off_;					\
			body;							\
		}								\
	} while (0)

/* Give a column of n values its packed bits, the next ones of *bits. */
static bool v2_place(struct v2col *c, uint32_t n, struct cur *bits)
{
	c->n = n;
	c->next = 0;
	c->p = cur_take(bits, ((uint64_t)n * c->b + 7) / 8);
	return c->p != NULL;
}

/* Scratch space of the decoder, nrec entries each. */
struct v2scratch {
	uint32_t *last, *slots, *mask;
	uint16_t *ports;	/* the port dictionary */
	size_t cap;
	uint8_t gen[V3_GEN_TBL];	/* version 3: (qid, tag) -> predicted gen */
};

static int v2_scratch(struct v2scratch *s, uint32_t nrec)
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

#define V2_BLOCK	128	/* records decoded together: 13 KiB, stays in L1 */

/*
 * Decode a version-2 chunk of nrec records from raw[0..len) into recs.  NULL
 * when good, else what was wrong.  Every read is bounds-checked; every part
 * of the chunk must be used up exactly.
 *
 * First the column directory, then ev_mask and the extra-slot mask of every
 * record (they tell how many values each ev[] column has, hence where the
 * packed bits of each column start), then the records in blocks of
 * V2_BLOCK, column by column.
 */
static const char *v2_decode(struct ntbpf_rec *recs, const uint8_t *raw, size_t len,
			     uint32_t nrec, uint32_t file_nev, bool v3, struct v2scratch *s)
{
	uint32_t nslots = file_nev < NTBPF_MAX_EV ? file_nev : NTBPF_MAX_EV;
	uint32_t ours = (uint32_t)((1ull << nslots) - 1);
	uint32_t fslots = (uint32_t)((1ull << file_nev) - 1);	/* the file's */
	struct v2col cols[C_EV0 + MAX_NEV + V2_MAX_EXTRA];
	struct cur c = { raw, len, false }, bits;
	uint32_t ncols, nk = C_EV0 + file_nev, k, i, i0, any = 0, all = ~0u, nports = 0;
	uint32_t at[MAX_NEV];	/* version 3, M_ALT ev[]: t0 + ev[k] of the last, mod 2^32 */
	uint64_t exc_len = 0, t = 0, next = 0;
	struct ntbpf_rec tmpl;
	const uint8_t *exc;
	bool const_mask, port, gen;

	if (cur_u32(&c) != nrec)
		return "bad record encoding: record count";
	ncols = cur_u32(&c);
	/* version 3: port and gen are required */
	if (c.bad || ncols < nk + (v3 ? 2 : 0) || ncols > nk + V2_MAX_EXTRA + (v3 ? 2 : 0))
		return "bad record encoding: column count";
	for (k = 0; k < ncols; k++) {
		struct v2col *d = &cols[k];
		uint64_t el;
		uint8_t bm;

		d->w = col_width(k, nk, v3);
		bm = cur_u8(&c);
		d->b = v3 ? bm & ((1u << V3_MODE_SHIFT) - 1) : bm;
		d->mode = v3 ? bm >> V3_MODE_SHIFT : 0;
		d->base = cur_uv(&c);
		el = cur_uv(&c);
		if (c.bad || d->b > V2_MAX_B || d->b > d->w || d->base > width_mask(d->w) ||
		    el > len || (!d->b && el) || d->mode >= col_modes(k, nk, v3))
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
		if (!v2_place(&cols[k], nrec, &bits))
			return "bad record encoding: packed bits overrun";
	V2_FOR(C_MASK, nrec, x, s->mask[i] = x);
	V2_FOR(C_XMASK, nrec, x, s->slots[i] = x);
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
		if (!v2_place(&cols[C_EV0 + k], n, &bits))
			return "bad record encoding: packed bits overrun";
	}
	for (k = nk; k < ncols; k++)	/* port, (3:) gen, then a later writer's fields */
		if (!v2_place(&cols[k], nrec, &bits))
			return "bad record encoding: packed bits overrun";
	if (bits.len)
		return "bad record encoding: packed bits not used up";

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
	port = ncols > nk && (cols[nk].b || cols[nk].base);
	if (ncols > nk && !port)
		cols[nk].next = cols[nk].n;
	/* version 3: cid's high bits, unless all 0 */
	gen = v3 && (cols[nk + 1].b || cols[nk + 1].base || cols[nk + 1].mode);
	if (v3 && !gen)
		cols[nk + 1].next = cols[nk + 1].n;
	if (gen && cols[nk + 1].mode)
		memset(s->gen, 0, sizeof(s->gen));

#define V2_FIELD(col, field)	do {					\
		if (!cols[col].b)					\
			cols[col].next += m;	/* in the template */	\
		else							\
			V2_FOR(col, m, x, r[i].field = x);		\
	} while (0)

	for (i0 = 0; i0 < nrec; i0 += V2_BLOCK) {
		uint32_t m = nrec - i0 < V2_BLOCK ? nrec - i0 : V2_BLOCK;
		uint32_t *slots = s->slots + i0, *last = s->last + i0, *mask = s->mask + i0;
		struct ntbpf_rec *r = recs + i0;

		/* two fixed-size copies: gcc inlines them (not rep movs) */
		if (const_mask) {
			V2_FOR(C_T0, m, x, {
				memcpy(&r[i], &tmpl, REC_PREFIX);
				memset((uint8_t *)&r[i] + REC_PREFIX, 0, REC_SIZE - REC_PREFIX);
				r[i].t0 = t += x;
			});
		} else {
			V2_FOR(C_T0, m, x, {
				memcpy(&r[i], &tmpl, REC_PREFIX);
				memset((uint8_t *)&r[i] + REC_PREFIX, 0, REC_SIZE - REC_PREFIX);
				r[i].t0 = t += x;
				r[i].ev_mask = mask[i];
			});
		}
		if (!i0)	/* M_ALT ev[]: the first from the chunk's first t0 */
			for (k = 0; k < MAX_NEV; k++)
				at[k] = (uint32_t)r[0].t0;
		V2_FIELD(C_DEV, dev);
		V2_FIELD(C_BYTES, bytes);
		if (cols[C_SECTOR].mode)	/* version 3, M_ALT: the sector itself */
			V2_FOR(C_SECTOR, m, x, r[i].sector = x);
		else
			V2_FOR(C_SECTOR, m, x, {
				r[i].sector = next + x;
				next = r[i].sector + (r[i].bytes >> 9);
			});
		V2_FIELD(C_CTRL, ctrl);
		V2_FIELD(C_QID, qid);
		if (!v3)
			V2_FIELD(C_CID, cid);
		else if (!cols[C_CID].b)
			cols[C_CID].next += m;	/* in the template (below 2^12) */
		else
			V2_FOR(C_CID, m, x, r[i].cid = x & ((1u << V3_TAG_BITS) - 1));
		if (gen && cols[nk + 1].mode && !cols[nk + 1].b) {	/* all as predicted */
			uint8_t *g = s->gen;
			unsigned int base = cols[nk + 1].base;

			cols[nk + 1].next += m;
			for (i = 0; i < m; i++) {
				uint8_t *p = &g[gen_slot(r[i].qid, r[i].cid)];
				unsigned int v = (base + *p) & 15;

				*p = (v + 1) & 15;
				r[i].cid |= v << V3_TAG_BITS;
			}
		} else if (gen && cols[nk + 1].mode) {	/* predicted per (qid, tag) */
			uint8_t *g = s->gen;

			V2_FOR(nk + 1, m, x, {
				uint8_t *p = &g[gen_slot(r[i].qid, r[i].cid)];
				unsigned int v = (x + *p) & 15;

				*p = (v + 1) & 15;
				r[i].cid |= v << V3_TAG_BITS;
			});
		} else if (gen) {
			V2_FOR(nk + 1, m, x, r[i].cid |= (x & 15) << V3_TAG_BITS);
		}
		V2_FIELD(C_OP, op);
		V2_FIELD(C_OPCODE, opcode);
		V2_FIELD(C_FLAGS, flags);
		V2_FIELD(C_ROLE, role);
		V2_FIELD(C_STATUS, status);
		if (port)	/* the dictionary (C_PORT) */
			V2_FOR(nk, m, x, {
				if (x < nports) {
					r[i].port = s->ports[x];
				} else {
					if (x - nports > UINT16_MAX)
						return "bad record encoding: port";
					r[i].port = s->ports[nports] = x - nports;
					nports++;
				}
			});
		/* slot by slot: the previous stored slot's value plus this one */
		for (k = 0; k < file_nev; k++) {
			uint32_t n = 0, j = 0;

			if (!(any >> k & 1))
				continue;
			if (cols[C_EV0 + k].mode == M_T0) {	/* version 3: the values */
				if (all >> k & 1) {
					V2_FOR(C_EV0 + k, m, x, last[i] = x);
				} else {
					uint32_t idx[V2_BLOCK];

					for (i = 0; i < m; i++) {
						idx[j] = i;
						j += slots[i] >> k & 1;
					}
					V2_FOR(C_EV0 + k, j, x, last[idx[i]] = x);
				}
				if (k < NTBPF_MAX_EV)
					for (i = 0; i < m; i++)
						if (slots[i] >> k & 1)
							r[i].ev[k] = last[i];
				continue;
			}
			if (cols[C_EV0 + k].mode) {	/* version 3, M_ALT: from t0 + ev[k] */
				uint32_t a = at[k];

				if (all >> k & 1) {
					V2_FOR(C_EV0 + k, m, x, {
						a += x;
						last[i] = a - (uint32_t)r[i].t0;
					});
				} else {
					uint32_t idx[V2_BLOCK];

					for (i = 0; i < m; i++) {
						idx[j] = i;
						j += slots[i] >> k & 1;
					}
					V2_FOR(C_EV0 + k, j, x, {
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
					V2_FOR(C_EV0 + k, m, x, r[i].ev[k] = last[i] + x);
				else if (k < NTBPF_MAX_EV)
					V2_FOR(C_EV0 + k, m, x, r[i].ev[k] = last[i] += x);
				else
					V2_FOR(C_EV0 + k, m, x, last[i] += x);
				continue;
			}
			for (i = 0; i < m; i++)
				n += slots[i] >> k & 1;
			{
				uint32_t idx[V2_BLOCK];

				for (i = 0; i < m; i++) {
					idx[j] = i;
					j += slots[i] >> k & 1;
				}
				V2_FOR(C_EV0 + k, n, x, last[idx[i]] += x);
				if (k < NTBPF_MAX_EV)
					for (i = 0; i < n; i++)
						r[idx[i]].ev[k] = last[idx[i]];
			}
		}
		for (k = nk + 1 + v3; k < ncols; k++)
			V2_FOR(k, m, x, (void)x);
	}
#undef V2_FIELD
	for (k = 0; k < ncols; k++)
		if (cols[k].next != cols[k].n || cols[k].exc.len)
			return "bad record encoding: column not used up";
	if (file_nev != NTBPF_MAX_EV)	/* as in version 1: bits of slots we lack */
		for (i = 0; i < nrec; i++)
			recs[i].ev_mask &= ours;
	return NULL;
}

/* ---- reader ------------------------------------------------------------- */

struct nt_reader {
	FILE *f;
	z_stream zs;
	uint16_t version;
	uint32_t rec_size, nev;
	uint32_t port_off;		/* version 1: port's offset in a record, 0 none */
	uint64_t off;			/* file offset of the next byte */
	uint64_t records;		/* records in the chunks decoded */
	uint64_t chunks;
	struct ntbpf_rec *recs;		/* the current chunk, decoded */
	uint32_t n, pos;
	size_t recs_cap;		/* in records */
	uint8_t *comp, *raw;
	size_t comp_cap, raw_cap;
	struct v2scratch v2;
	bool done, have_trailer;
	enum nt_read_status status;
	struct nt_trailer trailer;
	char msg[200];
};

static int hdr_fail(struct nt_header *h, uint8_t *buf, char *err, size_t errlen,
		    const char *msg)
{
	if (msg)
		snprintf(err, errlen, "%s", msg);
	free(buf);
	nt_header_free(h);
	return -1;
}

/*
 * Fixed part, then payload and CRC.  The version is checked before anything
 * else: a newer major version may have changed everything after it.
 */
static int read_header(FILE *f, struct nt_header *h, uint64_t *off, uint32_t *port_off,
		       char *err, size_t errlen)
{
	uint8_t fx[HDR_FIXED], *buf;
	size_t got = fread(fx, 1, HDR_FIXED, f), cap;
	uint32_t plen, total;

	if (got == 0 && ferror(f)) {
		if (errno == EISDIR)
			snprintf(err, errlen, "is a directory, not a record file");
		else
			snprintf(err, errlen, "cannot read: %s", strerror(errno));
		return hdr_fail(h, NULL, err, errlen, NULL);
	}
	if (got == 0)
		return hdr_fail(h, NULL, err, errlen, "file is empty");
	if (memcmp(fx, FILE_MAGIC, got < 8 ? got : 8))
		return hdr_fail(h, NULL, err, errlen,
				"not an ntbpf record file (bad magic)");
	if (got < HDR_FIXED)
		return hdr_fail(h, NULL, err, errlen, "file ends inside the header");
	h->version = get16(fx + 8);
	if (h->version > NT_FILE_VERSION || h->version == 0) {
		snprintf(err, errlen, "record file version %u is %s this ntbpf (%u)",
			 h->version, h->version ? "newer than" : "not supported by",
			 NT_FILE_VERSION);
		return hdr_fail(h, NULL, err, errlen, NULL);
	}
	plen = get32(fx + 12);
	if (plen > MAX_HDR_PAYLOAD)
		return hdr_fail(h, NULL, err, errlen,
				"header corrupt (payload length too large)");
	total = HDR_FIXED + plen + 4;
	buf = malloc(HDR_FIXED);
	cap = HDR_FIXED;
	if (!buf)
		return hdr_fail(h, NULL, err, errlen, "out of memory reading the header");
	memcpy(buf, fx, HDR_FIXED);
	/* grown as the payload arrives: a length alone allocates nothing */
	if (fread_grow(f, &buf, &cap, HDR_FIXED, plen + 4, &got))
		return hdr_fail(h, buf, err, errlen, "out of memory reading the header");
	if (got != plen + 4)
		return hdr_fail(h, buf, err, errlen, "file ends inside the header");
	if (crc32(0, buf, HDR_FIXED + plen) != get32(buf + HDR_FIXED + plen))
		return hdr_fail(h, buf, err, errlen, "header corrupt (CRC mismatch)");
	if (dec_items(h, buf + HDR_FIXED, plen, port_off, err, errlen) ||
	    check_layout(h, err, errlen))
		return hdr_fail(h, buf, err, errlen, NULL);
	if (nt_header_index(h))
		return hdr_fail(h, buf, err, errlen, "out of memory reading the header");
	free(buf);
	*off = total;
	return 0;
}

struct nt_reader *nt_reader_open(FILE *f, struct nt_header *h, char *err, size_t errlen)
{
	struct nt_reader *rd;
	char dummy[1];

	if (!err || !errlen) {
		err = dummy;
		errlen = sizeof(dummy);
	}
	err[0] = '\0';
	nt_header_init(h, 0);
	h->rec_size = 0;	/* must come from the file */
	h->nev = 0;
	h->sample = 0;
	h->ntbpf_version[0] = '\0';
	rd = calloc(1, sizeof(*rd));
	if (!rd) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	if (read_header(f, h, &rd->off, &rd->port_off, err, errlen)) {
		free(rd);
		return NULL;
	}
	if (inflateInit2(&rd->zs, -MAX_WBITS) != Z_OK) {	/* raw: inflate_chunk */
		snprintf(err, errlen, "out of memory (zlib)");
		nt_header_free(h);
		free(rd);
		return NULL;
	}
	rd->f = f;
	rd->version = h->version;
	rd->rec_size = h->rec_size;
	rd->nev = h->nev;
	return rd;
}

static void stop(struct nt_reader *rd, enum nt_read_status st, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(rd->msg, sizeof(rd->msg), fmt, ap);
	va_end(ap);
	rd->status = st;
	rd->done = true;
}

static void stop_truncated(struct nt_reader *rd, const char *where)
{
	stop(rd, NT_READ_TRUNCATED,
	     "truncated after %llu records (%s): the recording was interrupted",
	     (unsigned long long)rd->records, where);
}

/* 0: read; otherwise the reader is stopped (end of file or read error). */
static int rd_read(struct nt_reader *rd, void *p, size_t n, const char *where)
{
	size_t got = fread(p, 1, n, rd->f);

	rd->off += got;
	if (got == n)
		return 0;
	if (ferror(rd->f))
		stop(rd, NT_READ_CORRUPT, "read error at offset %llu: %s",
		     (unsigned long long)rd->off, strerror(errno));
	else
		stop_truncated(rd, where);
	return -1;
}

static void read_trailer(struct nt_reader *rd)
{
	uint8_t hd[8], *p;
	uint32_t len, nstats, i;
	uint64_t at = rd->off - 4;

	memcpy(hd, TRAILER_MAGIC, 4);
	if (rd_read(rd, hd + 4, 4, "inside the trailer"))
		return;
	len = get32(hd + 4);
	if (len < TRAILER_MIN || len > TRAILER_MIN + 8 * MAX_NSTATS ||
	    (len - TRAILER_MIN) % 8) {
		stop(rd, NT_READ_CORRUPT, "trailer at offset %llu corrupt (length %u)",
		     (unsigned long long)at, len);
		return;
	}
	p = malloc(len + 4);
	if (!p) {
		stop(rd, NT_READ_CORRUPT, "out of memory reading the trailer");
		return;
	}
	if (rd_read(rd, p, len + 4, "inside the trailer"))
		goto out;
	if (crc32(crc32(0, hd, 8), p, len) != get32(p + len)) {
		stop(rd, NT_READ_CORRUPT, "trailer at offset %llu corrupt (CRC mismatch)",
		     (unsigned long long)at);
		goto out;
	}
	nstats = get32(p + 8);
	if (len != TRAILER_MIN + 8ull * nstats) {	/* 64 bits: 8 * 2^29 is 0 in 32 */
		stop(rd, NT_READ_CORRUPT, "trailer at offset %llu corrupt (%u counters)",
		     (unsigned long long)at, nstats);
		goto out;
	}
	rd->trailer.records = get64(p);
	for (i = 0; i < nstats && i < ST_NR; i++)
		rd->trailer.stats[i] = get64(p + 12 + 8 * i);
	rd->trailer.lost_user = get64(p + 12 + 8 * nstats);
	rd->trailer.end_mono_ns = get64(p + 20 + 8 * nstats);
	rd->have_trailer = true;
	if (rd->trailer.records != rd->records)
		stop(rd, NT_READ_CORRUPT, "trailer counts %llu records but the file holds %llu",
		     (unsigned long long)rd->trailer.records,
		     (unsigned long long)rd->records);
	else
		stop(rd, NT_READ_OK, "%s", "");
out:
	free(p);
}

/* Chunk header fields checked before any allocation sized by them. */
static bool chunk_sane(const struct nt_reader *rd, uint32_t nrec, uint32_t raw,
		       uint32_t clen)
{
	if (rd->version == 1)
		return nrec && nrec <= MAX_CHUNK_NREC && raw <= MAX_CHUNK_RAW &&
		       nrec <= CHUNK_RECS_PER_BYTE * ((uint64_t)CHUNK_HDR + clen) &&
		       (uint64_t)nrec * rd->rec_size == raw &&
		       clen && clen <= compressBound(raw);
	return nrec && nrec <= MAX_CHUNK_NREC && raw <= MAX_CHUNK_RAW &&
	       nrec <= CHUNK_RECS_PER_BYTE * ((uint64_t)CHUNK_HDR + clen) &&
	       raw <= DEFLATE_MAX_RATIO * (uint64_t)clen &&
	       raw <= V2_LIMIT_DIR + (uint64_t)nrec * V2_LIMIT_REC &&
	       clen && clen <= compressBound(raw) + V2_CLEN_SLACK;
}

/*
 * The chunk is a zlib stream (RFC 1950): 2-byte header, deflate data,
 * Adler-32 of the output.  We check the header ourselves and inflate the raw
 * deflate data: zlib's Adler-32 costs about a quarter of the decoding time,
 * and the CRC32 over the compressed bytes, checked before, already covers
 * every bit of the stream (a wrong byte cannot reach inflate).
 */
static int inflate_chunk(struct nt_reader *rd, uint32_t clen, uint32_t raw)
{
	const uint8_t *c = rd->comp;
	int ret;

	if (clen < 2 + 4 || (c[0] & 0x0f) != Z_DEFLATED || (c[0] >> 4) > 7 ||
	    (c[1] & 0x20) || ((c[0] << 8) | c[1]) % 31)
		return -1;	/* not zlib, or needs a preset dictionary */
	inflateReset(&rd->zs);
	rd->zs.next_in = (uint8_t *)c + 2;
	rd->zs.avail_in = clen - 2;
	rd->zs.next_out = rd->raw;
	rd->zs.avail_out = raw;
	ret = inflate(&rd->zs, Z_FINISH);
	/* exactly raw bytes out, exactly the Adler-32 left over */
	if (ret == Z_STREAM_END && rd->zs.avail_out == 0 && rd->zs.avail_in == 4)
		return 0;
	return -1;
}

/*
 * Read and decode the next chunk; false when the file ended (status set).
 * Not inlined: nt_reader_next stays a short function for every record.
 */
static __attribute__((noinline)) bool load_chunk(struct nt_reader *rd)
{
	uint8_t hd[CHUNK_HDR];
	uint64_t at = rd->off;
	uint32_t nrec, raw, clen;
	const char *bad = NULL;

	if (rd_read(rd, hd, 4, "no trailer"))
		return false;
	if (!memcmp(hd, TRAILER_MAGIC, 4)) {
		read_trailer(rd);
		return false;
	}
	if (memcmp(hd, CHUNK_MAGIC, 4)) {
		stop(rd, NT_READ_CORRUPT, "corrupt after %llu records: no chunk at offset %llu",
		     (unsigned long long)rd->records, (unsigned long long)at);
		return false;
	}
	if (rd_read(rd, hd + 4, CHUNK_HDR - 4, "no trailer"))
		return false;
	nrec = get32(hd + 4);
	raw = get32(hd + 8);
	clen = get32(hd + 12);
	if (!chunk_sane(rd, nrec, raw, clen)) {
		stop(rd, NT_READ_CORRUPT,
		     "corrupt after %llu records: chunk at offset %llu has bad sizes (%u records, %u/%u bytes)",
		     (unsigned long long)rd->records, (unsigned long long)at,
		     nrec, raw, clen);
		return false;
	}
	/* the compressed bytes first, memory as they arrive; then what they inflate to */
	{
		size_t got;

		if (fread_grow(rd->f, &rd->comp, &rd->comp_cap, 0, clen, &got)) {
			stop(rd, NT_READ_CORRUPT, "out of memory for a chunk of %u bytes", clen);
			return false;
		}
		rd->off += got;
		if (got != clen) {
			if (ferror(rd->f))
				stop(rd, NT_READ_CORRUPT, "read error at offset %llu: %s",
				     (unsigned long long)rd->off, strerror(errno));
			else
				stop_truncated(rd, "no trailer");
			return false;
		}
	}
	if (grow((void **)&rd->raw, &rd->raw_cap, (size_t)raw + V2_SLACK, 1) ||
	    (rd->version > 1 && v2_scratch(&rd->v2, nrec)) ||
	    grow((void **)&rd->recs, &rd->recs_cap, nrec, REC_SIZE)) {
		stop(rd, NT_READ_CORRUPT, "out of memory for a chunk of %u records", nrec);
		return false;
	}
	if (crc32(0, rd->comp, clen) != get32(hd + 16))
		bad = "CRC mismatch";
	else if (inflate_chunk(rd, clen, raw))
		bad = "decompression failed";
	else if (rd->version == 1)
		unshuffle(rd->recs, rd->raw, nrec, rd->nev, rd->port_off);
	else {
		memset(rd->raw + raw, 0, V2_SLACK);
		bad = v2_decode(rd->recs, rd->raw, raw, nrec, rd->nev, rd->version >= 3, &rd->v2);
	}
	if (bad) {
		stop(rd, NT_READ_CORRUPT, "corrupt after %llu records: chunk at offset %llu (%s)",
		     (unsigned long long)rd->records, (unsigned long long)at, bad);
		return false;
	}
	rd->n = nrec;
	rd->pos = 0;
	rd->records += nrec;
	rd->chunks++;
	return true;
}

int nt_reader_next(struct nt_reader *rd, struct ntbpf_rec *r)
{
	if (rd->pos == rd->n) {
		if (rd->done || !load_chunk(rd))
			return 0;
	}
	*r = rd->recs[rd->pos++];
	return 1;
}

size_t nt_reader_chunk(struct nt_reader *rd, const struct ntbpf_rec **recs)
{
	size_t n;

	while (rd->pos == rd->n)
		if (rd->done || !load_chunk(rd))
			return 0;
	*recs = rd->recs + rd->pos;
	n = rd->n - rd->pos;
	rd->pos = rd->n;
	return n;
}

enum nt_read_status nt_reader_status(const struct nt_reader *rd, char *err, size_t errlen)
{
	if (err && errlen)
		snprintf(err, errlen, "%s", rd->msg);
	return rd->status;
}

const struct nt_trailer *nt_reader_trailer(const struct nt_reader *rd)
{
	return rd->have_trailer ? &rd->trailer : NULL;
}

void nt_reader_close(struct nt_reader *rd)
{
	if (!rd)
		return;
	inflateEnd(&rd->zs);
	free(rd->comp);
	free(rd->raw);
	free(rd->recs);
	free(rd->v2.last);
	free(rd->v2.slots);
	free(rd->v2.mask);
	free(rd->v2.ports);
	free(rd);
}
