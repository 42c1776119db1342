/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * stages - every stage ntbpf reports, user space's side of the stage table
 * (include/ntbpf_stages.h, shared with the BPF side; docs/stages.md;
 * tests/unit/test_stages.c checks that the doc, the table and every view
 * derived from it agree): names, the report's row order, per-record
 * summaries, and the values of in-kernel histogram buckets.
 */
#ifndef NTBPF_STAGES_H
#define NTBPF_STAGES_H

#include <stdbool.h>
#include <stdint.h>
#include "ntbpf.h"
#include "ntbpf_stages.h"
#include "ntbpf_kh.h"

const char *nt_stage_name(int s);
const char *nt_stage_summary(int s);	/* one line for --help and the docs */
int nt_stage_by_name(const char *name);	/* -1 if unknown */
const char *nt_ev_name(uint8_t role, int ev);	/* "blk_start", "cmd_arrive", ... */

/* the ten stages that tile end_to_end (column TEN) */
#define NT_X_TEN(id, name, role, from, to, afrom, ato, slot, ten, ...) | ((ten) ? 1u << NT_ST_##id : 0u)
#define NT_TEN_MASK (0u NT_STAGES(NT_X_TEN))

/* the stage in row k of the report's table (column ROW) */
extern const int8_t nt_stage_at_row[NT_ST_NR];

/*
 * one in-kernel histogram as the report takes it: a group (op, size, device,
 * and with queue set an NVMe queue: ctrl, qid) and a stage
 */
struct nt_kh_key {
	__u32 dev;
	__u32 bytes;
	__u8 op;
	__u8 stage;	/* enum nt_stage, NT_ST_NR for the group's I/O count, NT_KH_DEPTH its queue depths */
	__u8 role;
	__u8 queue;
	__u16 ctrl;
	__u16 qid;
	__u16 status;	/* 0, or failed: a blk_status_t (initiator) or an NVMe status (target) */
};
#define NT_KH_DEPTH (NT_ST_NR + 1)

/* the lowest value of bucket b */
static inline __u64 nt_kh_low(__u32 b)
{
	__u32 e;

	if (b < NT_KH_SUB)
		return b;
	e = b / NT_KH_SUB + NT_KH_SUB_BITS - 1;
	return ((__u64)(NT_KH_SUB + b % NT_KH_SUB)) << (e - NT_KH_SUB_BITS);
}

/* the midpoint of bucket b (user space turns buckets back into values) */
static inline __u64 nt_kh_value(__u32 b)
{
	if (b < NT_KH_SUB)
		return b;
	return nt_kh_low(b) + ((1ull << (b / NT_KH_SUB - 1)) >> 1);
}


/*
 * One host's own stages of one I/O, 40 bytes (what "ntbpf report" keeps per
 * record).  Each stage has a slot among its role's stages (nt_sum_slot[]);
 * every stage is a difference of two ev[] offsets from t0 (32 bits), so it
 * fits.  tag is the caller's (the report's group).
 */
#define NT_SUM_V 8
#define NT_SUM_TGT 5	/* a target's stages use slots below this (stages.c checks); the rest is .io */
struct nt_sum {
	union {
		uint32_t v[NT_SUM_V];	/* v[nt_sum_slot[s]] where bit s of mask is set */
		struct {		/* a target's summary: what a report needs if it stays unmatched */
			uint32_t slots_[NT_SUM_TGT];
			uint32_t start_lo, start_hi;	/* its t0 on the report's clock (wall clock in files) */
			uint32_t bytes;
		} io;
	};
	uint16_t mask, stand_in;	/* stages present; of those, from a stand-in boundary */
	uint32_t tag;
	uint16_t depth;			/* the record's depth (its queue's requests in flight), 0 unknown */
	uint16_t stream;		/* the report's: its --diagnose window stream + 1 (src/groups.h), 0 none */
};
_Static_assert(NT_ST_NR <= 16, "stage masks are 16 bits");
extern const int8_t nt_sum_slot[NT_ST_NR];	/* -1: network_transmission (needs both hosts) */

/* r's stages if it is of role (else none); tag untouched */
void nt_sum_of(const struct ntbpf_rec *r, uint8_t role, struct nt_sum *s);

/*
 * The I/O's stages from its initiator's and/or its target's own (either
 * may be NULL): the initiator's win where both have one, and
 * network_transmission = remote - target_residence (*neg_net when that is
 * negative; then it is left out).  vals[s] is valid where bit s of the
 * result is set.
 */
uint32_t nt_sum_combine(const struct nt_sum *si, const struct nt_sum *st, uint64_t vals[NT_ST_NR], uint32_t *stand_in,
			bool *neg_net);

#endif
