/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * colcodec - the record file's column codec: a chunk of records as
 * bit-packed columns and back (docs/record-format.md, "Chunk").  It knows
 * records and columns only; the container (recfile.c) frames, deflates and
 * checks the bytes it produces and consumes.  Internal to the two.
 */
#ifndef NTBPF_COLCODEC_H
#define NTBPF_COLCODEC_H

#include <stddef.h>
#include <stdint.h>
#include "ntbpf.h"

#define NT_COLS_MAX_NEV	32u	/* event slots a file may have: ev_mask is 32 bits */
/* zeroed bytes the decoder needs after the raw chunk: it reads 8 bytes at its last value */
#define NT_COLS_SLACK	16
/* the largest raw chunk of nrec records a reader accepts (far above what we write) */
#define NT_COLS_RAW_MAX(nrec)	(4096u + (uint64_t)(nrec) * 1024u)

/*
 * The raw chunk in its three parts, in file order: the column directory and
 * the exceptions (worth deflating), then the packed bits (near-random: the
 * container stores them).  Valid until the next encode.
 */
struct nt_cols_raw {
	const uint8_t *dir, *exc, *bits;
	size_t dir_len, exc_len, bits_len;
};

struct nt_colenc;
struct nt_colenc *nt_colenc_new(void);	/* scratch for chunks of up to NT_CHUNK_RECS; NULL: out of memory */
void nt_colenc_free(struct nt_colenc *e);
/* n (1..NT_CHUNK_RECS) records into *out; 0, or -ENOMEM */
int nt_cols_encode(struct nt_colenc *e, const struct ntbpf_rec *recs, uint32_t n, struct nt_cols_raw *out);

struct nt_coldec;
struct nt_coldec *nt_coldec_new(void);	/* NULL: out of memory */
void nt_coldec_free(struct nt_coldec *d);
int nt_coldec_reserve(struct nt_coldec *d, uint32_t nrec);	/* scratch for nrec records; -1: out of memory */
/*
 * Decode nrec records (nt_coldec_reserve'd) of a file with file_nev event
 * slots from raw[0..len), which is followed by NT_COLS_SLACK zero bytes.
 * NULL when good, else what was wrong ("bad record encoding: ...").
 */
const char *nt_cols_decode(struct nt_coldec *d, struct ntbpf_rec *recs, const uint8_t *raw, size_t len,
			   uint32_t nrec, uint32_t file_nev);

#endif
