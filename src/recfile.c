/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * recfile.c - the ntbpf record file's container: the chunk framing (sizes,
 * zlib, CRC32), records packed and unpacked, the trailer, and the writer and
 * reader over them.  The header's model and its TLV items are rechdr.c's,
 * the uncoded chunks' checks recsum.c's, what a coded chunk's bytes hold --
 * records as bit-packed columns -- the column codec's (colenc.c, coldec.c); what the
 * three share is recfile_int.h.
 *
 * The byte-level format is specified in docs/record-format.md.  Every
 * multi-byte integer on disk is little endian and is encoded with shifts
 * (bytebuf.h), never by copying host memory, so a file moves between hosts
 * of any byte order.  One format version is written and read,
 * NT_FILE_VERSION; others are refused with a one-line cause.
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
		err = nt_hdr_encode(&b, h);
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
	if (h->version < NT_FILE_VERSION) {	/* earlier formats: the ntbpf that wrote them reads them */
		snprintf(err, errlen, "record file version %u is older than this ntbpf reads (%u): record again, "
			 "or read it with the ntbpf that wrote it", h->version, NT_FILE_VERSION);
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
	if (nt_hdr_decode_items(h, buf + HDR_FIXED, plen, err, errlen) ||
	    nt_hdr_check_layout(h, err, errlen))
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
