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
#include <stddef.h>
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

/* each stage's role (2 bits) and layer (4 bits) packed by stage (columns ROLE, LAYER) */
#define NT_X_ROLES(id, name, role, ...) | ((uint64_t)(role) << (2 * NT_ST_##id))
#define NT_X_LAYERS(id, name, role, from, to, afrom, ato, slot, ten, row, layer, ...) \
	| ((uint64_t)(layer) << (4 * NT_ST_##id))
#define NT_ROLES_PACKED (0ull NT_STAGES(NT_X_ROLES))
#define NT_LAYERS_PACKED (0ull NT_STAGES(NT_X_LAYERS))
_Static_assert(NT_ST_NR * 4 <= 64, "layers are packed 4 bits a stage");

static inline int nt_stage_role(int s)
{
	return (int)(NT_ROLES_PACKED >> (2 * s) & 3);
}

static inline int nt_stage_layer(int s)
{
	return (int)(NT_LAYERS_PACKED >> (4 * s) & 15);
}

/*
 * The stages of role (0: network; -1: any) whose layer is in layers (a
 * mask of 1u << NT_LAYER_*; ~0u: any): nt_stages_where(NTBPF_ROLE_TARGET,
 * NT_LAYERS_CPU) is what the target's CPU runs.  Of constant arguments, a
 * constant.
 */
static inline __attribute__((always_inline)) uint32_t nt_stages_where(int role, uint32_t layers)
{
	uint32_t m = 0;

#pragma GCC unroll 16
	for (int s = 0; s < NT_ST_NR; s++)
		if ((role < 0 || nt_stage_role(s) == role) && (layers >> nt_stage_layer(s) & 1))
			m |= 1u << s;
	return m;
}

/* the stage that waits behind a host's requests in flight (column DEPTH): one per host */
#define NT_X_DEPTH(id, name, role, from, to, afrom, ato, slot, ten, row, layer, depth, ...) \
	| ((depth) ? 1u << NT_ST_##id : 0u)
#define NT_DEPTH_MASK (0u NT_STAGES(NT_X_DEPTH))

static inline __attribute__((always_inline)) int nt_depth_stage(int role)
{
	return __builtin_ctz(NT_DEPTH_MASK & nt_stages_where(role, ~0u));
}

/*
 * The stages a record with the block layer's events alone yields (a block
 * device other than NVMe/TCP): both ends, or their stand-ins, among
 * NT_BLK_ONLY_EVS (include/ntbpf_stages.h).
 */
#define NT_EV_BLK_ONLY(ev) ((ev) >= 0 && (NT_BLK_ONLY_EVS >> ((ev) & 31) & 1))
#define NT_X_BLK_ONLY(id, name, role, from, to, afrom, ato, ...) \
	| ((role) == NTBPF_ROLE_INITIATOR && (NT_EV_BLK_ONLY(from) || NT_EV_BLK_ONLY(afrom)) && \
	   (NT_EV_BLK_ONLY(to) || NT_EV_BLK_ONLY(ato)) ? 1u << NT_ST_##id : 0u)
#define NT_BLK_ONLY_MASK (0u NT_STAGES(NT_X_BLK_ONLY))

/* the names of mask's stages in pipeline order, sep between, into buf; as snprintf */
int nt_stage_join(char *buf, size_t len, uint32_t mask, const char *sep);

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
