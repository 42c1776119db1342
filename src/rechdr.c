/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * rechdr.c - the record file's header model: the header in memory (hooks,
 * controllers and their queues, cntlid changes, the index that finds a
 * controller), and its TLV items encoded for the writer and decoded for the
 * reader (recfile.c).  docs/record-format.md, "Header".
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

#include "colcodec.h"
#include "recfile_int.h"

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
int nt_hdr_encode(struct buf *b, const struct nt_header *h)
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
	err = nt_hdr_encode(&b, &t);
	bare = b.len;
	free(b.p);
	if (err)
		return err;
	/* the padding item: its own 8 bytes and zeros */
	if (bare != len && (bare + 8 > len || len - bare - 8 > UINT32_MAX))
		return -E2BIG;
	t.reserve = bare == len ? 0 : (uint32_t)(len - bare - 8);
	b = (struct buf){ 0 };
	err = nt_hdr_encode(&b, &t);
	if (!err && b.len != len)
		err = -EINVAL;
	if (!err && fflush(f))
		err = errno ? -errno : -EIO;
	if (!err && pwrite(fileno(f), b.p, b.len, 0) != (ssize_t)b.len)
		err = errno ? -errno : -EIO;
	free(b.p);
	return err;
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
	/*
	 * Appended later, each present when 4 more bytes are: the queues' RX queues, then their TX
	 * queues (a file without them: -1), then the namespaces (without them: none, the nsid
	 * "unknown").  Every entry a count gives is read (those past the queues are skipped), so
	 * the next count is found where the list ends; a list that runs past the item is too short.
	 */
	if (!v->bad && v->len >= 4) {
		uint32_t nrx = cur_u32(v);

		if (nrx > v->len / 4)
			v->bad = true;
		for (i = 0; i < nrx && !v->bad; i++) {
			int32_t rx = (int32_t)cur_u32(v);

			if (i < c->nqueues)
				c->queues[i].rx_queue = rx;
		}
	}
	if (!v->bad && v->len >= 4) {
		uint32_t ntx = cur_u32(v);

		if (ntx > v->len / 4)
			v->bad = true;
		for (i = 0; i < ntx && !v->bad; i++) {
			int32_t tx = (int32_t)cur_u32(v);

			if (i < c->nqueues)
				c->queues[i].tx_queue = tx;
		}
	}
	if (!v->bad && v->len >= 4) {
		uint32_t nns = cur_u32(v);

		if (nns > v->len / 8)
			v->bad = true;
		for (i = 0; i < nns && !v->bad; i++) {
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

int nt_hdr_decode_items(struct nt_header *h, const uint8_t *p, size_t len, char *err, size_t errlen)
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

int nt_hdr_check_layout(const struct nt_header *h, char *err, size_t errlen)
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
