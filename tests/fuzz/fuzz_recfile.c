/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * fuzz_recfile.c - the record file reader under libFuzzer (make fuzz), and the
 * same code for the unit test that replays the corpus (tests/unit/test_fuzz_corpus.c).
 *
 * Mutants of a real file almost never get past its CRCs and zlib, so the
 * fuzzer's input is a "pre-image" of a record file: the file itself, except
 * that each chunk's payload is the chunk's raw (inflated) bytes, `clen` is
 * their length, and `raw` is ignored.  nt_fuzz_fixup() turns it into a
 * real file: it deflates each payload (level 0: fast), writes the real raw
 * and compressed lengths, and recomputes the CRCs of the header, of each
 * chunk and of the trailer.  So a mutation of a column descriptor, an
 * exception or the packed bits reaches the column decoder.  Whatever does not
 * parse as a pre-image (a header length past the end, a cut chunk, bytes
 * that are neither CHNK, RECS nor TRLR) is copied as it is, so truncations and bad
 * magics are fuzzed too.  A RECS chunk (uncoded records) is its file bytes
 * with the check recomputed.  scripts/fuzz-seed makes pre-images of record files.
 *
 * nt_fuzz_one() reads the file to its end, touching every record, like
 * ntbpf report does.
 */
#ifndef NT_FUZZ_RECFILE_C	/* fuzz_report.c and the corpus test include it too */
#define NT_FUZZ_RECFILE_C
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "recfile.h"

struct fz_buf {
	uint8_t *p;
	size_t len, cap;
};

static int fz_put(struct fz_buf *b, const void *p, size_t n)
{
	if (!n)
		return 0;
	if (b->len + n > b->cap) {
		size_t cap = b->cap ? b->cap : 4096;
		uint8_t *np;

		while (cap < b->len + n)
			cap *= 2;
		np = realloc(b->p, cap);
		if (!np)
			return -1;
		b->p = np;
		b->cap = cap;
	}
	memcpy(b->p + b->len, p, n);
	b->len += n;
	return 0;
}

static uint32_t fz_get32(const uint8_t *p)
{
	return p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void fz_put32(uint8_t *p, uint32_t v)
{
	p[0] = v;
	p[1] = v >> 8;
	p[2] = v >> 16;
	p[3] = v >> 24;
}

/*
 * A zlib stream of stored blocks (what deflate level 0 makes), written by
 * hand: deflateInit's ~270 KiB of state per chunk would be most of an
 * execution's time under ASan.
 */
static size_t stored_len(size_t n)
{
	return 2 + (n / 65535 + 1) * 5 + n + 4;
}

static size_t stored_zlib(uint8_t *z, const uint8_t *p, size_t n)
{
	size_t o = 0, at = 0;

	z[o++] = 0x78;		/* deflate, 32 KiB window */
	z[o++] = 0x01;		/* no dictionary; (0x78 << 8 | 0x01) % 31 == 0 */
	do {
		size_t m = n - at > 65535 ? 65535 : n - at;

		z[o++] = at + m == n;	/* BFINAL, BTYPE 00: stored */
		z[o++] = m;
		z[o++] = m >> 8;
		z[o++] = ~m;
		z[o++] = ~m >> 8;
		memcpy(z + o, p + at, m);
		o += m;
		at += m;
	} while (at < n);
	{
		uint32_t a = adler32(1, p, n);

		z[o++] = a >> 24;
		z[o++] = a >> 16;
		z[o++] = a >> 8;
		z[o++] = a;
	}
	return o;
}

/* pre-image -> record file, in *out (malloc'ed); -1: out of memory */
static int nt_fuzz_fixup(const uint8_t *in, size_t len, struct fz_buf *out)
{
	size_t pos = 0;
	uint8_t hd[20], crc[4];

	out->len = 0;
	if (len >= 16 && !memcmp(in, "NTBPFREC", 8)) {
		uint32_t plen = fz_get32(in + 12);

		if (plen <= len - 16 && len - 16 - plen >= 4) {
			fz_put32(crc, crc32(0, in, 16 + plen));
			if (fz_put(out, in, 16 + plen) || fz_put(out, crc, 4))
				return -1;
			pos = 16 + plen + 4;
		}
	}
	while (pos && len - pos >= 20 && (!memcmp(in + pos, "CHNK", 4) || !memcmp(in + pos, "RECS", 4))) {
		uint32_t raw = fz_get32(in + pos + 12);
		size_t clen;
		uint8_t *z;

		if (!memcmp(in + pos, "RECS", 4)) {	/* uncoded records: the file's own bytes, the check made right */
			if (raw > len - pos - 20)
				break;
			memcpy(hd, in + pos, 16);
			fz_put32(hd + 16, nt_raw_check(in + pos + 20, raw));
			if (fz_put(out, hd, 20) || fz_put(out, in + pos + 20, raw))
				return -1;
			pos += 20 + raw;
			continue;
		}

		if (raw > len - pos - 20)
			break;		/* cut: copied as it is below */
		z = malloc(stored_len(raw));
		if (!z)
			return -1;
		clen = stored_zlib(z, in + pos + 20, raw);
		memcpy(hd, in + pos, 8);
		fz_put32(hd + 8, raw);
		fz_put32(hd + 12, clen);
		fz_put32(hd + 16, crc32(0, z, clen));
		if (fz_put(out, hd, 20) || fz_put(out, z, clen)) {
			free(z);
			return -1;
		}
		free(z);
		pos += 20 + raw;
	}
	if (pos && len - pos >= 8 && !memcmp(in + pos, "TRLR", 4)) {
		uint32_t tlen = fz_get32(in + pos + 4);

		if (tlen <= len - pos - 8 && len - pos - 8 - tlen >= 4) {
			fz_put32(crc, crc32(0, in + pos, 8 + tlen));
			if (fz_put(out, in + pos, 8 + tlen) || fz_put(out, crc, 4))
				return -1;
			pos += 8 + tlen + 4;
		}
	}
	return fz_put(out, in + pos, len - pos);
}

/*
 * Read a record file from memory to its end; returns the records read.
 * Every record is touched (its first and last fields), the header's strings
 * and lists are walked, and the status and trailer are asked for.
 */
static size_t nt_fuzz_read(const uint8_t *file, size_t len, enum nt_read_status *st)
{
	struct nt_header h;
	struct nt_reader *rd;
	const struct ntbpf_rec *r;
	char err[256];
	size_t n, total = 0;
	uint64_t sum = 0;
	FILE *f;

	*st = NT_READ_CORRUPT;
	f = fmemopen((void *)file, len ? len : 1, "rb");
	if (!f)
		return 0;
	if (!len)
		fgetc(f);	/* fmemopen refuses size 0: an empty file */
	rd = nt_reader_open(f, &h, err, sizeof(err));
	if (!rd) {
		fclose(f);
		return 0;
	}
	while ((n = nt_reader_chunk(rd, &r)) > 0)
		for (size_t k = 0; k < n; k++, total++)
			sum += r[k].t0 + r[k].ev[NTBPF_MAX_EV - 1] + r[k].port;
	*st = nt_reader_status(rd, err, sizeof(err));
	if (nt_reader_trailer(rd))
		sum += nt_reader_trailer(rd)->records;
	for (uint32_t i = 0; i < h.nhooks; i++)
		sum += strlen(h.hooks[i].name) + strlen(h.hooks[i].status);
	for (uint32_t i = 0; i < h.nctrls; i++)
		for (uint32_t q = 0; q < h.ctrls[i].nqueues; q++)
			sum += h.ctrls[i].queues[q].qid + strlen(h.ctrls[i].queues[q].saddr);
	sum += strlen(h.hostname) + strlen(h.kernel) + strlen(h.cmdline) + strlen(err);
	nt_reader_close(rd);
	nt_header_free(&h);
	fclose(f);
	/* keep sum alive */
	__asm__ volatile("" : : "r"(sum));
	return total;
}

/* one pre-image through the fix-up and the reader; records read, or -1 */
static long nt_fuzz_one(const uint8_t *data, size_t size, enum nt_read_status *st)
{
	struct fz_buf b = { 0 };
	size_t n;

	if (nt_fuzz_fixup(data, size, &b)) {
		free(b.p);
		return -1;
	}
	n = nt_fuzz_read(b.p ? b.p : (const uint8_t *)"", b.len, st);
	free(b.p);
	return (long)n;
}

#ifdef NT_FUZZ_MAIN
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	enum nt_read_status st;

	nt_fuzz_one(data, size, &st);
	return 0;
}
#endif
#endif /* NT_FUZZ_RECFILE_C */
