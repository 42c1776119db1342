/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * recfile_int.h - what the record file's three parts share, and no one else:
 * the container (recfile.c: writer and reader), the header model (rechdr.c:
 * the header in memory, its TLV items encoded and decoded) and the checks
 * (recsum.c).  The format is docs/record-format.md; the API is recfile.h.
 */
#ifndef NTBPF_RECFILE_INT_H
#define NTBPF_RECFILE_INT_H

#include <stddef.h>
#include <stdint.h>
#include "bytebuf.h"
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

_Static_assert(sizeof(struct ntbpf_rec) == 112, "record layout changed");
_Static_assert(offsetof(struct ntbpf_rec, ev) == 40, "record prefix changed");
_Static_assert(offsetof(struct ntbpf_rec, port) == 104 &&
	       offsetof(struct ntbpf_rec, depth) == 106 && offsetof(struct ntbpf_rec, reserved) == 108, "fields after ev[] moved");

/* rechdr.c: the header's fixed part, TLV items and CRC into b (0; -ENOMEM; -E2BIG: over MAX_HDR_PAYLOAD) */
int nt_hdr_encode(struct buf *b, const struct nt_header *h);
/* rechdr.c: the TLV items of a header's payload into h; -1 with err set */
int nt_hdr_decode_items(struct nt_header *h, const uint8_t *p, size_t len, char *err, size_t errlen);
/* rechdr.c: the record layout a header gives is one this reader can read; -1 with err set */
int nt_hdr_check_layout(const struct nt_header *h, char *err, size_t errlen);

#endif
