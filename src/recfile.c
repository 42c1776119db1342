/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * recfile.c - the ntbpf record file's container: the header (TLV items),
 * the chunk framing (sizes, zlib, CRC32), the trailer, and the writer and
 * reader over them.  What a chunk's bytes hold -- records as bit-packed
 * columns -- is the column codec's (colcodec.c).
 *
 * The byte-level format is specified in docs/record-format.md.  Every
 * multi-byte integer on disk is little endian and is encoded with shifts
 * (bytebuf.h), never by copying host memory, so a file moves between hosts
 * of any byte order.  One format version is written, NT_FILE_VERSION; it
 * and NT_FILE_VERSION_MIN are read; others are refused with a one-line
 * cause.
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

#include "bytebuf.h"
#include "colcodec.h"
#include "recfile.h"

#define FILE_MAGIC	"NTBPFREC"
#define CHUNK_MAGIC	"CHNK"
#define RAWCHUNK_MAGIC	"RECS"	/* records as they are, uncoded (record's default in version 4) */
#define PACKCHUNK_MAGIC	"RECP"	/* records packed, uncoded: only the events they have (record's default) */
#define TRAILER_MAGIC	"TRLR"

#define HDR_FIXED	16	/* magic 8, version 2, flags 2, payload length 4 */
#define CHUNK_HDR	20	/* magic 4, nrec 4, raw 4, comp 4, crc 4 */
#define REC_SIZE	sizeof(struct ntbpf_rec)
#define REC_PREFIX	offsetof(struct ntbpf_rec, ev)	/* fixed forever */
#define EV_SIZE		sizeof(((struct ntbpf_rec *)0)->ev[0])
/* a packed record (RECP): the 40 fixed bytes, port and depth, then its events */
#define PACK_FIXED	(REC_PREFIX + 4)
#define PACK_MAX	(PACK_FIXED + NTBPF_MAX_EV * EV_SIZE)
_Static_assert(offsetof(struct ntbpf_rec, depth) == offsetof(struct ntbpf_rec, port) + 2,
	       "struct ntbpf_rec: port and depth are packed as one word");

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
#define MAX_NSTATS	4096u
#define TRAILER_MIN	28u	/* records 8, nstats 4, lost_user 8, end 8 */

/*
 * The zlib level of the column directory and exceptions; the packed bits
 * are stored (level 0).  Level 6 gives the same size for more CPU; level 0
 * adds ~0.7 B/record (docs/record-format.md).
 */
#define ZLEVEL		1
/* stored blocks and a level switch: compressed may exceed compressBound a bit */
#define CLEN_SLACK	64

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
	TAG_PAD = 13,		/* zeros: room for a header rewritten at the end (queues) */
	TAG_CNTLID_CHANGE = 14,	/* initiator: a controller's new cntlid after a reconnect, and since when */
};

_Static_assert(sizeof(struct ntbpf_rec) == 112, "record layout changed");
_Static_assert(offsetof(struct ntbpf_rec, ev) == 40, "record prefix changed");
_Static_assert(offsetof(struct ntbpf_rec, port) == 104 &&
	       offsetof(struct ntbpf_rec, depth) == 106 && offsetof(struct ntbpf_rec, reserved) == 108, "fields after ev[] moved");

/* The record layout, written into the header (RECORD_LAYOUT) for other tools. */
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
 * Every byte of the record.  Our reader takes only rec_size and nev from a
 * file's layout: the chunk's columns say the rest (reserved has none: 0).
 */
static const struct rec_field rec_fields[] = {
	FLD(t0), FLD(sector), FLD(dev), FLD(bytes), FLD(ev_mask),
	FLD(ctrl), FLD(qid), FLD(cid), FLD(op), FLD(opcode), FLD(flags),
	FLD(role), FLD(status), ARR(ev, NTBPF_MAX_EV),
	FLD(port), FLD(depth), ARR(reserved, 2),
};

#define NFIELDS (sizeof(rec_fields) / sizeof(rec_fields[0]))

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
		q->io_cpu = q->rx_queue = q->tx_queue = -1;
	return q;
}

bool nt_header_cntlid_at(const struct nt_header *h, uint16_t instance, uint64_t mono_ns, uint16_t *cntlid)
{
	const struct nt_ctrl_info *c;

	for (uint32_t k = h->ncchanges < NT_MAX_CNTLID_CHANGES ? h->ncchanges : NT_MAX_CNTLID_CHANGES; k--;)
		if (h->cchanges[k].instance == instance && h->cchanges[k].from_mono_ns <= mono_ns) {
			*cntlid = h->cchanges[k].cntlid;
			return true;
		}
	c = nt_header_ctrl(h, instance);
	if (c)
		*cntlid = c->cntlid;
	return c != NULL;
}

void nt_header_add_cntlid_change(struct nt_header *h, int32_t instance, uint16_t cntlid, uint64_t from_mono_ns)
{
	uint16_t now;
	uint32_t k;

	if (instance < 0 || instance > 0xffff || h->ncchanges >= NT_MAX_CNTLID_CHANGES)
		return;
	/* the cntlid in force then already: nothing changed (a connection's first I/O notes it too) */
	if (nt_header_cntlid_at(h, (uint16_t)instance, from_mono_ns, &now) && now == cntlid)
		return;
	for (k = h->ncchanges; k && h->cchanges[k - 1].from_mono_ns > from_mono_ns; k--)
		h->cchanges[k] = h->cchanges[k - 1];
	h->cchanges[k] = (struct nt_cntlid_change){ .from_mono_ns = from_mono_ns, .instance = instance, .cntlid = cntlid };
	h->ncchanges++;
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
	h->ncchanges = 0;
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
	/* appended after the list: each queue's NIC RX queue */
	buf_u32(b, c->queues ? c->nqueues : 0);
	for (i = 0; c->queues && i < c->nqueues; i++)
		buf_u32(b, (uint32_t)c->queues[i].rx_queue);
	/* and after that: each queue's NIC TX queue */
	buf_u32(b, c->queues ? c->nqueues : 0);
	for (i = 0; c->queues && i < c->nqueues; i++)
		buf_u32(b, (uint32_t)c->queues[i].tx_queue);
	/* and then the controller's namespaces: block device and nsid */
	buf_u32(b, c->nns < NT_CTRL_NS ? c->nns : NT_CTRL_NS);
	for (i = 0; i < c->nns && i < NT_CTRL_NS; i++) {
		buf_u32(b, c->ns[i].dev);
		buf_u32(b, c->ns[i].nsid);
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
	for (i = 0; i < h->ncchanges && i < NT_MAX_CNTLID_CHANGES; i++) {
		at = tlv_begin(b, TAG_CNTLID_CHANGE);
		buf_u32(b, (uint32_t)h->cchanges[i].instance);
		buf_u16(b, h->cchanges[i].cntlid);
		buf_u64(b, h->cchanges[i].from_mono_ns);
		tlv_end(b, at);
	}
	if (h->reserve) {
		uint8_t *z;

		at = tlv_begin(b, TAG_PAD);
		z = buf_room(b, h->reserve);
		if (z)
			memset(z, 0, h->reserve);
		tlv_end(b, at);
	}
}

/* Whole header: fixed part, TLV payload, CRC32 of both. */
static int enc_header(struct buf *b, const struct nt_header *h)
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
	put16(p + 8, NT_FILE_VERSION);
	put16(p + 10, 0);
	put32(p + 12, b->len - HDR_FIXED);
	buf_u32(b, crc32(0, b->p, b->len));
	return b->oom ? -ENOMEM : 0;
}

int nt_header_rewrite(FILE *f, const struct nt_header *h, uint64_t len)
{
	struct nt_header t = *h;
	struct buf b = { 0 };
	uint64_t bare;
	int err;

	t.reserve = 0;
	err = enc_header(&b, &t);
	bare = b.len;
	free(b.p);
	if (err)
		return err;
	/* the padding item: its own 8 bytes and zeros */
	if (bare != len && (bare + 8 > len || len - bare - 8 > UINT32_MAX))
		return -E2BIG;
	t.reserve = bare == len ? 0 : (uint32_t)(len - bare - 8);
	b = (struct buf){ 0 };
	err = enc_header(&b, &t);
	if (!err && b.len != len)
		err = -EINVAL;
	if (!err && fflush(f))
		err = errno ? -errno : -EIO;
	if (!err && pwrite(fileno(f), b.p, b.len, 0) != (ssize_t)b.len)
		err = errno ? -errno : -EIO;
	free(b.p);
	return err;
}

/* ---- writer ------------------------------------------------------------- */

struct nt_writer {
	FILE *f;
	int err;			/* sticky: first failure, -errno */
	z_stream zs;
	uint32_t n;			/* pending records */
	uint64_t records;		/* records in written chunks */
	uint64_t bytes;
	uint8_t *out;			/* chunk header + compressed bytes */
	size_t out_cap;
	struct ntbpf_rec *recs;		/* pending records (coded chunks) */
	struct nt_colenc *enc;		/* the column codec's scratch */
	bool raw;			/* chunks of packed uncoded records (nt_writer_set_raw) */
	uint8_t *pk;			/* pending packed records (raw) */
	size_t pk_len;
};

static void writer_free(struct nt_writer *w)
{
	deflateEnd(&w->zs);
	free(w->out);
	nt_colenc_free(w->enc);
	free(w->recs);
	free(w->pk);
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
	if (deflateInit(&w->zs, ZLEVEL) != Z_OK) {
		free(w);
		errno = ENOMEM;
		return NULL;
	}
	w->recs = malloc(NT_CHUNK_RECS * REC_SIZE);
	w->pk = malloc(NT_CHUNK_RECS * PACK_MAX + 8);
	w->enc = nt_colenc_new();
	err = w->recs && w->pk && w->enc ? 0 : -ENOMEM;	/* w->out: grown for each chunk */
	if (!err)
		err = enc_header(&b, h);
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
 * The records of a chunk through the column codec, deflated into w->out:
 * the column directory and the exceptions at level ZLEVEL, then the packed
 * bits in stored blocks (level 0).
 */
static int deflate_chunk(struct nt_writer *w, const struct ntbpf_rec *recs, uint32_t n,
			 uint32_t *raw_len)
{
	struct nt_cols_raw c;
	size_t len, need;

	deflateReset(&w->zs);
	if (nt_cols_encode(w->enc, recs, n, &c)) {
		w->err = -ENOMEM;
		return w->err;
	}
	len = c.dir_len + c.exc_len + c.bits_len;
	need = CHUNK_HDR + compressBound(len) + CLEN_SLACK;
	if (grow((void **)&w->out, &w->out_cap, need, 1)) {
		w->err = -ENOMEM;
		return w->err;
	}
	*raw_len = len;
	w->zs.next_out = w->out + CHUNK_HDR;
	w->zs.avail_out = w->out_cap - CHUNK_HDR;
	if (deflateParams(&w->zs, ZLEVEL, Z_DEFAULT_STRATEGY) != Z_OK ||
	    w_deflate(w, c.dir, c.dir_len, false) ||
	    w_deflate(w, c.exc, c.exc_len, false) ||
	    deflateParams(&w->zs, 0, Z_DEFAULT_STRATEGY) != Z_OK ||
	    w_deflate(w, c.bits, c.bits_len, true)) {
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

/* One record as the file's record layout has it, little endian, into p (a RECS chunk on a big-endian host). */
void nt_rec_put(uint8_t *p, const struct ntbpf_rec *r)
{
	unsigned int i;

	put64(p, r->t0);
	put64(p + 8, r->sector);
	put32(p + 16, r->dev);
	put32(p + 20, r->bytes);
	put32(p + 24, r->ev_mask);
	put16(p + 28, r->ctrl);
	put16(p + 30, r->qid);
	put16(p + 32, r->cid);
	p[34] = r->op;
	p[35] = r->opcode;
	p[36] = r->flags;
	p[37] = r->role;
	put16(p + 38, r->status);
	for (i = 0; i < NTBPF_MAX_EV; i++)
		put32(p + REC_PREFIX + 4 * i, r->ev[i]);
	put16(p + 104, r->port);
	put16(p + 106, r->depth);
	put32(p + 108, 0);
}

/* bytes 0..39 of the record layout (RECS and RECP records alike) */
static void rec_get_prefix(struct ntbpf_rec *r, const uint8_t *p)
{
	r->t0 = get64(p);
	r->sector = get64(p + 8);
	r->dev = get32(p + 16);
	r->bytes = get32(p + 20);
	r->ev_mask = get32(p + 24);
	r->ctrl = get16(p + 28);
	r->qid = get16(p + 30);
	r->cid = get16(p + 32);
	r->op = p[34];
	r->opcode = p[35];
	r->flags = p[36];
	r->role = p[37];
	r->status = get16(p + 38);
}

void nt_rec_get(struct ntbpf_rec *r, const uint8_t *p)
{
	unsigned int i;

	rec_get_prefix(r, p);
	for (i = 0; i < NTBPF_MAX_EV; i++)
		r->ev[i] = get32(p + REC_PREFIX + 4 * i);
	r->port = get16(p + 104);
	r->depth = get16(p + 106);
	memset(r->reserved, 0, sizeof(r->reserved));
}

#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
/*
 * The slots of e[0..3] whose bits are set in m's low four, in order, at q:
 * a jump by those four bits to their copy, a load and a store a slot (or
 * two slots, or three, in one go where they are neighbours).  ~30
 * instructions for the 16 slots where a loop over the set bits took ~9 per
 * slot set (a record has 6-8): ~40 a record less on the lab's clock.
 */
static inline __attribute__((always_inline)) uint8_t *pack4(uint8_t *q, const uint32_t *e, uint32_t m)
{
	switch (m & 15) {
	case 0: return q;
	case 1: memcpy(q, e, 4); return q + 4;
	case 2: memcpy(q, e + 1, 4); return q + 4;
	case 3: memcpy(q, e, 8); return q + 8;
	case 4: memcpy(q, e + 2, 4); return q + 4;
	case 5: memcpy(q, e, 4); memcpy(q + 4, e + 2, 4); return q + 8;
	case 6: memcpy(q, e + 1, 8); return q + 8;
	case 7: memcpy(q, e, 12); return q + 12;
	case 8: memcpy(q, e + 3, 4); return q + 4;
	case 9: memcpy(q, e, 4); memcpy(q + 4, e + 3, 4); return q + 8;
	case 10: memcpy(q, e + 1, 4); memcpy(q + 4, e + 3, 4); return q + 8;
	case 11: memcpy(q, e, 8); memcpy(q + 8, e + 3, 4); return q + 12;
	case 12: memcpy(q, e + 2, 8); return q + 8;
	case 13: memcpy(q, e, 4); memcpy(q + 4, e + 2, 8); return q + 12;
	case 14: memcpy(q, e + 1, 12); return q + 12;
	default: memcpy(q, e, 16); return q + 16;
	}
}
#endif

/*
 * One record packed (a RECP chunk's record, docs/record-format.md): bytes
 * 0..39 of the record layout, port and depth, then ev[i] for each bit i < 16
 * of ev_mask, in slot order (a slot outside ev_mask holds nothing: it is
 * read as 0); returns its length.  A record has the events of
 * one role (6-8 of 16 slots): 68-72 bytes instead of 112, which is what
 * writing the file costs by (the page cache's copy, per byte).
 */
static inline __attribute__((always_inline)) size_t rec_pack(uint8_t *p, const struct ntbpf_rec *r)
{
	uint32_t m = r->ev_mask & ((1u << NTBPF_MAX_EV) - 1);
	uint8_t *q = p + PACK_FIXED;

#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	memcpy(p, r, REC_PREFIX);
	memcpy(p + REC_PREFIX, &r->port, 4);
	_Static_assert(NTBPF_MAX_EV == 16, "nt_rec_pack: four groups of four slots");
	q = pack4(q, r->ev, m);
	q = pack4(q, r->ev + 4, m >> 4);
	q = pack4(q, r->ev + 8, m >> 8);
	q = pack4(q, r->ev + 12, m >> 12);
#else
	uint8_t full[REC_SIZE];

	nt_rec_put(full, r);
	memcpy(p, full, REC_PREFIX);
	memcpy(p + REC_PREFIX, full + 104, 4);
	while (m) {
		put32(q, r->ev[__builtin_ctz(m)]);
		q += 4;
		m &= m - 1;
	}
#endif
	return (size_t)(q - p);
}

size_t nt_rec_pack(uint8_t *p, const struct ntbpf_rec *r)
{
	return rec_pack(p, r);
}

/*
 * The next packed record of a body of len bytes at *off, into r: its
 * length checked against what is left.  false: it does not fit.
 */
static bool rec_unpack(struct ntbpf_rec *r, const uint8_t *p, size_t len, size_t *off)
{
	size_t o = *off;
	uint32_t m, i;

	if (len - o < PACK_FIXED)
		return false;
	p += o;
	m = get32(p + 24) & ((1u << NTBPF_MAX_EV) - 1);
	if (len - o - PACK_FIXED < (size_t)__builtin_popcount(m) * EV_SIZE)
		return false;
	rec_get_prefix(r, p);
	r->port = get16(p + 40);
	r->depth = get16(p + 42);
	memset(r->reserved, 0, sizeof(r->reserved));
	memset(r->ev, 0, sizeof(r->ev));
	p += PACK_FIXED;
	for (i = 0; m; m &= m - 1, p += EV_SIZE)
		r->ev[__builtin_ctz(m)] = get32(p), i++;
	*off = o + PACK_FIXED + i * EV_SIZE;
	return true;
}

/*
 * A chunk of packed uncoded records: the header, then the records as
 * nt_rec_pack() lays them out, zeros to a multiple of 8 bytes.  One check
 * pass and one write, no coding (what makes record cheap to run; the file
 * is ~6x a coded chunk's size).
 */
static int write_packed(struct nt_writer *w)
{
	uint8_t hd[CHUNK_HDR];
	size_t len = w->pk_len;

	if (w->err)
		return w->err;
	while (len % 8)
		w->pk[len++] = 0;	/* room: NT_CHUNK_RECS * PACK_MAX + 8 */
	memcpy(hd, PACKCHUNK_MAGIC, 4);
	put32(hd + 4, w->n);
	put32(hd + 8, PACK_FIXED);
	put32(hd + 12, len);
	put32(hd + 16, nt_pack_check(w->pk, len));
	/* counted only whole: a chunk cut by ENOSPC is not in nt_writer_bytes() */
	if (fwrite(hd, 1, CHUNK_HDR, w->f) != CHUNK_HDR || fwrite(w->pk, 1, len, w->f) != len) {
		w->err = errno ? -errno : -EIO;
		return w->err;
	}
	w->bytes += CHUNK_HDR + len;
	w->records += w->n;
	w->pk_len = 0;
	return 0;
}

static int write_chunk(struct nt_writer *w)
{
	if (w->raw ? write_packed(w) : write_recs(w, w->recs, w->n))
		return w->err;
	w->n = 0;
	return 0;
}

void nt_writer_set_raw(struct nt_writer *w, bool raw)
{
	/* the records collected so far go out in the kind they were collected for */
	if (w->raw != raw && w->n && !w->err)
		write_chunk(w);
	w->raw = raw;
}

int nt_writer_add(struct nt_writer *w, const struct ntbpf_rec *r)
{
	if (w->err)
		return w->err;
	if (w->raw) {
		w->pk_len += rec_pack(w->pk + w->pk_len, r);
	} else {
		w->recs[w->n] = *r;
		/* not written (no column): 0 whatever the caller left there */
		memset(w->recs[w->n].reserved, 0, sizeof(r->reserved));
	}
	if (++w->n == NT_CHUNK_RECS)
		return write_chunk(w);
	return 0;
}

/*
 * n records in a row: for packed chunks one loop that packs them, with the
 * checks of nt_writer_add once per run (record's drain hands over a per-CPU
 * ring's records this way: ~20 instructions a record fewer).  *added: how
 * many the writer took (all n when it returns 0; on an error, the record
 * whose chunk's write failed is the last one taken, as in nt_writer_add).
 */
int nt_writer_add_run(struct nt_writer *w, const struct ntbpf_rec *r, size_t n, size_t *added)
{
	size_t done = 0;

	*added = 0;
	if (w->err)
		return w->err;
	if (!w->raw) {
		while (done < n)
			if (nt_writer_add(w, &r[done++]))
				break;
		*added = done;
		return w->err;
	}
	while (done < n) {
		uint32_t room = NT_CHUNK_RECS - w->n, k = n - done < room ? (uint32_t)(n - done) : room;
		uint8_t *pk = w->pk;
		size_t len = w->pk_len;

		for (uint32_t j = 0; j < k; j++)
			len += rec_pack(pk + len, &r[done + j]);
		w->pk_len = len;
		w->n += k;
		done += k;
		if (w->n == NT_CHUNK_RECS && write_chunk(w))
			break;
	}
	*added = done;
	return w->err;
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

uint64_t nt_writer_records(const struct nt_writer *w)
{
	return w->records;
}

uint64_t nt_writer_bytes(const struct nt_writer *w)
{
	return w->bytes;
}

/* ---- header decoding ---------------------------------------------------- */

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
	/* appended later: the queues' RX queues (a file without them: -1) */
	if (!v->bad && v->len >= 4) {
		uint32_t nrx = cur_u32(v);

		for (i = 0; i < nrx && i < c->nqueues && v->len >= 4; i++)
			c->queues[i].rx_queue = (int32_t)cur_u32(v);
	}
	/* appended after those: the TX queues (a file without them: -1) */
	if (!v->bad && v->len >= 4) {
		uint32_t ntx = cur_u32(v);

		for (i = 0; i < ntx && i < c->nqueues && v->len >= 4; i++)
			c->queues[i].tx_queue = (int32_t)cur_u32(v);
		/* a count past what it read leaves the rest unread: the namespaces cannot follow */
		if (i < ntx)
			return 0;
	}
	/* appended after those: the namespaces (a file without them: none, the nsid "unknown") */
	if (!v->bad && v->len >= 4) {
		uint32_t nns = cur_u32(v);

		for (i = 0; i < nns && v->len >= 8; i++) {
			uint32_t dev = cur_u32(v), nsid = cur_u32(v);

			if (c->nns < NT_CTRL_NS) {
				c->ns[c->nns].dev = dev;
				c->ns[c->nns++].nsid = nsid;
			}
		}
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
 * One item.  Unknown tags are skipped, and bytes after the fields we know are
 * ignored, so later versions may add items or append to existing ones.  Of
 * RECORD_LAYOUT our reader uses rec_size and nev; the field list is for
 * other tools (the chunk's columns say where each field is).
 */
static int dec_item(struct nt_header *h, uint16_t tag, struct cur *v, uint32_t *nqueues)
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
	case TAG_CNTLID_CHANGE: {
		int32_t inst = (int32_t)cur_u32(v);
		uint16_t cntlid = cur_u16(v);
		uint64_t from = cur_u64(v);

		if (!v->bad)
			nt_header_add_cntlid_change(h, inst, cntlid, from);
		break;
	}
	}
	return 0;
}

static int dec_items(struct nt_header *h, const uint8_t *p, size_t len, char *err, size_t errlen)
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
		switch (dec_item(h, tag, &v, &nqueues)) {
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
	    h->nev > NT_COLS_MAX_NEV || REC_PREFIX + h->nev * EV_SIZE > h->rec_size) {
		snprintf(err, errlen,
			 "unsupported record layout (%u bytes, %u event slots)",
			 h->rec_size, h->nev);
		return -1;
	}
	return 0;
}

/* ---- reader ------------------------------------------------------------- */

struct nt_reader {
	FILE *f;
	z_stream zs;
	uint32_t nev;			/* the file's event slots */
	uint32_t rec_size;		/* the file's record size */
	uint64_t off;			/* file offset of the next byte */
	uint64_t block_at, block_len;	/* the chunk (or trailer) being read: its offset, and its length
					 * once its header gave it (0 before): what a cut is measured against */
	uint64_t records;		/* records in the chunks decoded */
	uint64_t chunks;
	struct ntbpf_rec *recs;		/* the current chunk, decoded */
	uint32_t n, pos;
	size_t recs_cap;		/* in records */
	uint8_t *comp, *raw;
	size_t comp_cap, raw_cap;
	struct nt_coldec *dec;		/* the column codec's scratch */
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
static int read_header(FILE *f, struct nt_header *h, uint64_t *off, char *err, size_t errlen)
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
	if (h->version > NT_FILE_VERSION) {
		snprintf(err, errlen, "record file version %u is newer than this ntbpf (%u)",
			 h->version, NT_FILE_VERSION);
		return hdr_fail(h, NULL, err, errlen, NULL);
	}
	if (h->version < NT_FILE_VERSION_MIN) {	/* earlier formats: ntbpf's first days */
		snprintf(err, errlen, "record file version %u not supported (this ntbpf reads versions %u to %u)",
			 h->version, NT_FILE_VERSION_MIN, NT_FILE_VERSION);
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
	if (dec_items(h, buf + HDR_FIXED, plen, err, errlen) ||
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
	if (read_header(f, h, &rd->off, err, errlen)) {
		free(rd);
		return NULL;
	}
	rd->dec = nt_coldec_new();
	if (!rd->dec || inflateInit2(&rd->zs, -MAX_WBITS) != Z_OK) {	/* raw: inflate_chunk */
		snprintf(err, errlen, "out of memory (zlib)");
		nt_coldec_free(rd->dec);
		nt_header_free(h);
		free(rd);
		return NULL;
	}
	rd->f = f;
	rd->nev = h->nev;
	rd->rec_size = h->rec_size;
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

/*
 * The file ended before its trailer's end.  Between two blocks: what a
 * recording stopped without its trailer leaves (each block is written whole).
 * Inside a chunk or the trailer: the file was cut (head -c, a copy that
 * stopped), said against the size the block's header gives.
 */
static void stop_truncated(struct nt_reader *rd, const char *where)
{
	unsigned long long n = rd->records, into = rd->off - rd->block_at, at = rd->block_at, len = rd->block_len;

	if (!strcmp(where, "inside the trailer"))
		stop(rd, NT_READ_TRUNCATED, len ? "truncated after %llu records (inside the trailer): the file was cut "
		     "%llu of the %llu bytes of its trailer (at offset %llu)" : "truncated after %llu records (inside "
		     "the trailer): the file was cut %llu bytes into its trailer (at offset %llu)", n, into,
		     len ? len : at, at);
	else if (rd->off == rd->block_at)
		stop(rd, NT_READ_TRUNCATED, "truncated after %llu records (no trailer): the recording was interrupted "
		     "(the file ends between two chunks, at offset %llu)", n, at);
	else if (len)
		stop(rd, NT_READ_TRUNCATED, "truncated after %llu records (no trailer): the file was cut %llu of the "
		     "%llu bytes of the chunk at offset %llu", n, into, len, at);
	else
		stop(rd, NT_READ_TRUNCATED, "truncated after %llu records (no trailer): the file was cut %llu bytes "
		     "into the chunk or trailer at offset %llu, inside its header", n, into, at);
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
	rd->block_len = 8ull + len + 4;
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
static bool chunk_sane(uint32_t nrec, uint32_t raw, uint32_t clen)
{
	return nrec && nrec <= MAX_CHUNK_NREC && raw <= MAX_CHUNK_RAW &&
	       nrec <= CHUNK_RECS_PER_BYTE * ((uint64_t)CHUNK_HDR + clen) &&
	       raw <= DEFLATE_MAX_RATIO * (uint64_t)clen &&
	       raw <= NT_COLS_RAW_MAX(nrec) &&
	       clen && clen <= compressBound(raw) + CLEN_SLACK;
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

/* A chunk's body read: got of want bytes; -1 (status set) where it fell short */
static int rd_got(struct nt_reader *rd, size_t got, size_t want)
{
	rd->off += got;
	if (got == want)
		return 0;
	if (ferror(rd->f))
		stop(rd, NT_READ_CORRUPT, "read error at offset %llu: %s", (unsigned long long)rd->off,
		     strerror(errno));
	else
		stop_truncated(rd, "no trailer");
	return -1;
}

/* RECS and RECP chunks hold this version's records: the file's header must say so (else stop) */
static bool layout_is_ours(struct nt_reader *rd, uint64_t at, const char *kind)
{
	if (rd->nev == NTBPF_MAX_EV && rd->rec_size == REC_SIZE)
		return true;
	stop(rd, NT_READ_CORRUPT,
	     "chunk at offset %llu holds %s records of this version's layout, but the header's is %u bytes with %u events",
	     (unsigned long long)at, kind, rd->rec_size, rd->nev);
	return false;
}

/*
 * A chunk of uncoded records (write_raw), after its magic: the sizes are
 * checked before anything is allocated (at most MAX_CHUNK_NREC records of
 * this version's layout, which the file's header must have too), the body
 * is read into the records' memory, and the check decides.
 */
static bool load_raw(struct nt_reader *rd, uint64_t at)
{
	uint8_t hd[CHUNK_HDR];
	uint32_t nrec, rsize, len;
	size_t got;
	uint8_t *body;

	if (rd_read(rd, hd + 4, CHUNK_HDR - 4, "no trailer"))
		return false;
	nrec = get32(hd + 4);
	rsize = get32(hd + 8);
	len = get32(hd + 12);
	rd->block_len = (uint64_t)CHUNK_HDR + len;
	if (!nrec || nrec > MAX_CHUNK_NREC || rsize != REC_SIZE || len != (uint64_t)nrec * REC_SIZE) {
		stop(rd, NT_READ_CORRUPT,
		     "corrupt after %llu records: chunk at offset %llu has bad sizes (%u records of %u bytes, %u bytes)",
		     (unsigned long long)rd->records, (unsigned long long)at, nrec, rsize, len);
		return false;
	}
	if (!layout_is_ours(rd, at, "uncoded"))
		return false;
	if (grow((void **)&rd->recs, &rd->recs_cap, nrec, REC_SIZE)) {
		stop(rd, NT_READ_CORRUPT, "out of memory for a chunk of %u records", nrec);
		return false;
	}
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	body = (uint8_t *)rd->recs;
#else
	if (grow((void **)&rd->comp, &rd->comp_cap, len, 1)) {
		stop(rd, NT_READ_CORRUPT, "out of memory for a chunk of %u records", nrec);
		return false;
	}
	body = rd->comp;
#endif
	got = fread(body, 1, len, rd->f);
	if (rd_got(rd, got, len))
		return false;
	if (nt_raw_check(body, len) != get32(hd + 16)) {
		stop(rd, NT_READ_CORRUPT, "corrupt after %llu records: chunk at offset %llu (check mismatch)",
		     (unsigned long long)rd->records, (unsigned long long)at);
		return false;
	}
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	for (uint32_t i = 0; i < nrec; i++)
		memset(rd->recs[i].reserved, 0, sizeof(rd->recs[i].reserved));
#else
	for (uint32_t i = 0; i < nrec; i++)
		nt_rec_get(&rd->recs[i], body + (size_t)i * REC_SIZE);
#endif
	rd->n = nrec;
	rd->pos = 0;
	rd->records += nrec;
	rd->chunks++;
	return true;
}

/*
 * A chunk of packed uncoded records (write_packed), after its magic: the
 * sizes are checked before anything is allocated (at most MAX_CHUNK_NREC
 * records, each 44 to 108 bytes, zeros to a multiple of 8), the check
 * decides, then each record must fit in what is left, and the records must
 * end where the padding starts.
 */
static bool all_zero(const uint8_t *p, size_t n)
{
	while (n--)
		if (*p++)
			return false;
	return true;
}

static bool load_packed(struct nt_reader *rd, uint64_t at)
{
	uint8_t hd[CHUNK_HDR];
	uint32_t nrec, fixed, len, i;
	size_t got, off = 0;

	if (rd_read(rd, hd + 4, CHUNK_HDR - 4, "no trailer"))
		return false;
	nrec = get32(hd + 4);
	fixed = get32(hd + 8);
	len = get32(hd + 12);
	rd->block_len = (uint64_t)CHUNK_HDR + len;
	if (!nrec || nrec > MAX_CHUNK_NREC || fixed != PACK_FIXED || len % 8 ||
	    len < (uint64_t)nrec * PACK_FIXED || len > (uint64_t)nrec * PACK_MAX + 7) {
		stop(rd, NT_READ_CORRUPT,
		     "corrupt after %llu records: chunk at offset %llu has bad sizes (%u packed records of %u fixed bytes, %u bytes)",
		     (unsigned long long)rd->records, (unsigned long long)at, nrec, fixed, len);
		return false;
	}
	if (!layout_is_ours(rd, at, "packed"))
		return false;
	if (grow((void **)&rd->recs, &rd->recs_cap, nrec, REC_SIZE) ||
	    grow((void **)&rd->comp, &rd->comp_cap, len, 1)) {
		stop(rd, NT_READ_CORRUPT, "out of memory for a chunk of %u records", nrec);
		return false;
	}
	got = fread(rd->comp, 1, len, rd->f);
	if (rd_got(rd, got, len))
		return false;
	if (nt_pack_check(rd->comp, len) != get32(hd + 16)) {
		stop(rd, NT_READ_CORRUPT, "corrupt after %llu records: chunk at offset %llu (check mismatch)",
		     (unsigned long long)rd->records, (unsigned long long)at);
		return false;
	}
	for (i = 0; i < nrec; i++)
		if (!rec_unpack(&rd->recs[i], rd->comp, len, &off))
			break;
	if (i < nrec || len - off >= 8 || !all_zero(rd->comp + off, len - off)) {
		stop(rd, NT_READ_CORRUPT,
		     "corrupt after %llu records: chunk at offset %llu: %s",
		     (unsigned long long)rd->records + i, (unsigned long long)at,
		     i < nrec ? "a packed record runs past the chunk" : "bytes after its last packed record");
		return false;
	}
	rd->n = nrec;
	rd->pos = 0;
	rd->records += nrec;
	rd->chunks++;
	return true;
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

	rd->block_at = at;
	rd->block_len = 0;
	if (rd_read(rd, hd, 4, "no trailer"))
		return false;
	if (!memcmp(hd, TRAILER_MAGIC, 4)) {
		read_trailer(rd);
		return false;
	}
	if (!memcmp(hd, PACKCHUNK_MAGIC, 4))
		return load_packed(rd, at);
	if (!memcmp(hd, RAWCHUNK_MAGIC, 4))
		return load_raw(rd, at);
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
	rd->block_len = (uint64_t)CHUNK_HDR + clen;
	if (!chunk_sane(nrec, raw, clen)) {
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
		if (rd_got(rd, got, clen))
			return false;
	}
	if (grow((void **)&rd->raw, &rd->raw_cap, (size_t)raw + NT_COLS_SLACK, 1) ||
	    nt_coldec_reserve(rd->dec, nrec) ||
	    grow((void **)&rd->recs, &rd->recs_cap, nrec, REC_SIZE)) {
		stop(rd, NT_READ_CORRUPT, "out of memory for a chunk of %u records", nrec);
		return false;
	}
	if (crc32(0, rd->comp, clen) != get32(hd + 16))
		bad = "CRC mismatch";
	else if (inflate_chunk(rd, clen, raw))
		bad = "decompression failed";
	else {
		memset(rd->raw + raw, 0, NT_COLS_SLACK);
		bad = nt_cols_decode(rd->dec, rd->recs, rd->raw, raw, nrec, rd->nev);
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
	nt_coldec_free(rd->dec);
	free(rd);
}
