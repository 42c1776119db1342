/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * colcodec_int.h - what the column codec's encoder (colenc.c) and decoder
 * (coldec.c) share: the columns, their modes and widths, and the layout
 * below, a chunk of records as bit-packed columns.
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
#ifndef NTBPF_COLCODEC_INT_H
#define NTBPF_COLCODEC_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

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
static inline unsigned int col_width(unsigned int col, unsigned int nk)
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
static inline unsigned int col_modes(unsigned int col, unsigned int nk)
{
	if (col >= C_EV0 && col < nk)
		return 3;
	return col == C_SECTOR || col == nk + 1 ? 2 : 1;
}

static inline uint64_t width_mask(unsigned int w)
{
	return w >= 64 ? ~0ull : (1ull << w) - 1;
}

#endif
