// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * stages.c - from a record's events to stage durations: the names and summaries of the stage table
 * (include/ntbpf_stages.h), one host's stages (the fast path for the common event sets and the
 * general one: nt_sum_of), and the stages of a matched pair from its two hosts' (nt_sum_combine),
 * whose ten ntprof stages sum to end_to_end exactly.  docs/stages.md defines every stage by its two events.
 */
#include <stdio.h>
#include <string.h>
#include "stages.h"

/* the columns of the stage table (include/ntbpf_stages.h) that only user space needs */
static const struct {
	const char *name, *summary;
} names[NT_ST_NR] = {
#define NT_X_NAME(id, name_, role, from, to, afrom, ato, slot, ten, row, layer, depth, help) \
	[NT_ST_##id] = { #name_, help },
	NT_STAGES(NT_X_NAME)
#undef NT_X_NAME
};

const int8_t nt_sum_slot[NT_ST_NR] = {
#define NT_X_SLOT(id, name, role, from, to, afrom, ato, slot, ...) [NT_ST_##id] = (slot),
	NT_STAGES(NT_X_SLOT)
#undef NT_X_SLOT
};

/* a target stage's slot leaves room for struct nt_sum's .io */
#define NT_X_TSLOT(id, name, role, from, to, afrom, ato, slot, ...) \
	_Static_assert((role) != NTBPF_ROLE_TARGET || (slot) < NT_SUM_TGT, #id ": target slot overlaps nt_sum.io");
NT_STAGES(NT_X_TSLOT)
#undef NT_X_TSLOT

const int8_t nt_stage_at_row[NT_ST_NR] = {
#define NT_X_ROW(id, name, role, from, to, afrom, ato, slot, ten, row, ...) [row] = NT_ST_##id,
	NT_STAGES(NT_X_ROW)
#undef NT_X_ROW
};

static const char *const ev_init_names[EV_I_NR] = {
	[EV_I_BLK_START] = "blk_start", [EV_I_BLK_ISSUE] = "blk_issue",
	[EV_I_QUEUE_RQ] = "queue_rq", [EV_I_CMD_SENT] = "cmd_sent",
	[EV_I_R2T_ARRIVE] = "r2t_arrive", [EV_I_DATA_SENT] = "data_sent",
	[EV_I_RESP_ARRIVE] = "resp_arrive", [EV_I_RESP_PROC] = "resp_proc",
	[EV_I_NVME_DONE] = "nvme_done", [EV_I_BLK_DONE] = "blk_done",
};

static const char *const ev_tgt_names[EV_T_NR] = {
	[EV_T_CMD_ARRIVE] = "cmd_arrive", [EV_T_CMD_PICKUP] = "cmd_pickup",
	[EV_T_REQ_INIT] = "req_init", [EV_T_R2T_SENT] = "r2t_sent",
	[EV_T_DATA_ARRIVE] = "data_arrive", [EV_T_EXEC] = "exec",
	[EV_T_SUBSYS_DONE] = "subsys_done", [EV_T_RESP_QUEUED] = "resp_queued",
	[EV_T_RESP_SENT] = "resp_sent",
};

const char *nt_stage_name(int s)
{
	return (s >= 0 && s < NT_ST_NR) ? names[s].name : "?";
}

const char *nt_stage_summary(int s)
{
	return (s >= 0 && s < NT_ST_NR) ? names[s].summary : "?";
}

int nt_stage_by_name(const char *name)
{
	for (int s = 0; s < NT_ST_NR; s++)
		if (!strcmp(names[s].name, name))
			return s;
	return -1;
}

/* one per host, and on its host */
_Static_assert(__builtin_popcount(NT_DEPTH_MASK) == 2, "one depth stage per host");

int nt_stage_join(char *buf, size_t len, uint32_t mask, const char *sep)
{
	size_t at = 0;
	int k;

	if (len)
		buf[0] = '\0';
	for (int s = 0; s < NT_ST_NR; s++) {
		if (!(mask & (1u << s)))
			continue;
		k = snprintf(buf + (at < len ? at : len), at < len ? len - at : 0, "%s%s", at ? sep : "", names[s].name);
		if (k < 0)
			return k;
		at += (size_t)k;
	}
	return (int)at;
}

const char *nt_ev_name(uint8_t role, int ev)
{
	if (role == NTBPF_ROLE_INITIATOR && ev >= 0 && ev < EV_I_NR)
		return ev_init_names[ev];
	if (role == NTBPF_ROLE_TARGET && ev >= 0 && ev < EV_T_NR)
		return ev_tgt_names[ev];
	return "?";
}

/* the events the fast paths need for every stage of role but blk_device: unrolled, a constant */
static inline __attribute__((always_inline)) __u32 fast_need(int role)
{
	__u32 need = 0;

#pragma GCC unroll 16
	for (int s = 0; s < NT_ST_NR; s++)
		if (nt_spans[s].role == role && s != NT_ST_BLK_DEVICE)
			need |= 1u << nt_spans[s].from | 1u << nt_spans[s].to;
	return need;
}

/*
 * The report's common case, without a branch per stage: every stage of the
 * role has its own two events (no stand-in) and they are in order.  Both
 * loops unroll over the constant table, so they compile to the role's
 * subtractions.  blk_device never applies here (nvme events are seen).
 * 1 and the stages in raw/mask, or 0: take the general path.
 */
static inline int nt_host_fast(const struct ntbpf_rec *r, int role, __u64 raw[NT_ST_NR], __u32 *maskp)
{
	__u32 need = fast_need(role), mask = 0;
	__s64 bad = 0;

	if ((r->ev_mask & need) != need)
		return 0;
#pragma GCC unroll 16
	for (int s = 0; s < NT_ST_NR; s++) {
		__s64 d;

		if (nt_spans[s].role != role || s == NT_ST_BLK_DEVICE)
			continue;
		d = (__s64)r->ev[nt_spans[s].to] - (__s64)r->ev[nt_spans[s].from];
		bad |= d;
		raw[s] = (__u64)d;
		mask |= 1u << s;
	}
	*maskp = mask;
	return bad >= 0;
}

/*
 * nt_stage_of() for every stage, with each span read once: the report calls
 * this for every record (tests/unit/test_stages.c checks the two agree on
 * random records).  raw[s] is stage s where bit s of the result is set
 * (raw comes in zeroed); *stand_in the stages from a stand-in boundary.
 */
static inline __u32 nt_host_raw(const struct ntbpf_rec *r, __u64 raw[NT_ST_NR], __u32 *stand_in)
{
	int rc[NT_ST_NR];
	__u32 mask = 0, si = 0;
	__u64 adj;

	if (!(r->role == NTBPF_ROLE_INITIATOR && nt_host_fast(r, NTBPF_ROLE_INITIATOR, raw, &mask)) &&
	    !(r->role == NTBPF_ROLE_TARGET && nt_host_fast(r, NTBPF_ROLE_TARGET, raw, &mask)))
	{
		/* unrolled, every span's events are constants: a few instructions per stage */
#pragma GCC unroll 16
		for (int s = 0; s < NT_ST_NR; s++)
			rc[s] = nt_spans[s].role == r->role ? nt_span_value(r, s, &raw[s]) : 0;
		if (!nt_blk_device_applies(r))
			rc[NT_ST_BLK_DEVICE] = 0;
		mask = 0;
		for (int s = 0; s < NT_ST_NR; s++) {
			if (rc[s] <= 0)
				continue;
			mask |= 1u << s;
			if (rc[s] == 2)
				si |= 1u << s;
		}
	}
	adj = nt_r2t_adj(r);
	if (adj) {
		int xs = NT_R2T_X(r->role), ys = NT_R2T_Y(r->role);

		nt_r2t_move(r->role, adj, !!(mask & (1u << xs)), &raw[xs], !!(mask & (1u << ys)), &raw[ys]);
	}
	*stand_in = si;
	return mask;
}

/* a role's stages into their slots: unrolled over the constant table, a store per stage */
#define PACK_ROLE(ROLE)								\
	do {									\
		_Pragma("GCC unroll 16")					\
		for (int st = 0; st < NT_ST_NR; st++)				\
			if (nt_spans[st].role == (ROLE))			\
				s->v[nt_sum_slot[st]] = (uint32_t)raw[st];	\
	} while (0)

#define UNPACK_ROLE(S, ROLE)							\
	do {									\
		_Pragma("GCC unroll 16")					\
		for (int st_ = 0; st_ < NT_ST_NR; st_++)			\
			if (nt_spans[st_].role == (ROLE))			\
				vals[st_] = (S)->v[nt_sum_slot[st_]];		\
	} while (0)

/*
 * nt_host_fast() straight into the role's slots (no array between: the
 * packing's wide loads stalled on its narrow stores), where there is no R2T
 * move either.  What it writes is what the general path below writes.  1,
 * or 0: take the general path (slots may be half written: it writes them all).
 * A copy kept for speed: one function for both, the R2T move on the slots,
 * took 75 instructions a record instead of 72 (callgrind, 2026-11-29).
 * tests/unit/test_stages.c holds both to nt_stage_of on random records, one
 * in eight of them sum_fast's, the R2T writes among them nt_host_fast's.
 */
static inline __attribute__((always_inline)) int sum_fast(const struct ntbpf_rec *r, int role, struct nt_sum *s)
{
	__u32 need = fast_need(role), mask = 0;
	__s64 bad = 0;

	if ((r->ev_mask & need) != need || nt_r2t_adj(r))
		return 0;
#pragma GCC unroll 16
	for (int st = 0; st < NT_ST_NR; st++) {
		__s64 d;

		if (nt_spans[st].role != role)
			continue;
		if (st == NT_ST_BLK_DEVICE) {
			s->v[nt_sum_slot[st]] = 0;
			continue;
		}
		d = (__s64)r->ev[nt_spans[st].to] - (__s64)r->ev[nt_spans[st].from];
		bad |= d;
		s->v[nt_sum_slot[st]] = (uint32_t)d;
		mask |= 1u << st;
	}
	if (bad < 0)
		return 0;
	s->mask = (uint16_t)mask;
	s->stand_in = 0;
	s->depth = r->depth;
	return 1;
}

/* nt_sum_of's general path, out of line: the fast one needs no stack array (zeroing it was rep stos) */
static __attribute__((noinline)) void sum_general(const struct ntbpf_rec *r, uint8_t role, struct nt_sum *s)
{
	__u64 raw[NT_ST_NR] = { 0 };
	__u32 mask = 0, si = 0;

	if (r->role == role)
		mask = nt_host_raw(r, raw, &si);
	if (role == NTBPF_ROLE_INITIATOR)
		PACK_ROLE(NTBPF_ROLE_INITIATOR);
	else
		PACK_ROLE(NTBPF_ROLE_TARGET);
	s->mask = (uint16_t)mask;
	s->stand_in = (uint16_t)si;
	s->depth = r->role == role ? r->depth : 0;
}

void nt_sum_of(const struct ntbpf_rec *r, uint8_t role, struct nt_sum *s)
{
	if (r->role == role &&
	    (role == NTBPF_ROLE_INITIATOR ? sum_fast(r, NTBPF_ROLE_INITIATOR, s) :
	     role == NTBPF_ROLE_TARGET && sum_fast(r, NTBPF_ROLE_TARGET, s)))
		return;
	sum_general(r, role, s);
}

uint32_t nt_sum_combine(const struct nt_sum *si, const struct nt_sum *st, uint64_t vals[NT_ST_NR], uint32_t *stand_in,
			bool *neg_net)
{
	uint32_t mi = si ? si->mask : 0, mt = st ? st->mask & ~mi : 0, mask = mi | mt;

	/*
	 * A host's summary holds only its role's stages (nt_sum_of), and the
	 * two roles' stages are disjoint: each side's slots are copied whole,
	 * unrolled (what is not in mask is not read).
	 */
	*neg_net = false;
	if (si)
		UNPACK_ROLE(si, NTBPF_ROLE_INITIATOR);
	if (st)
		UNPACK_ROLE(st, NTBPF_ROLE_TARGET);
	*stand_in = (si ? si->stand_in : 0) | (st ? st->stand_in : 0);
	if ((mask & (1u << NT_ST_REMOTE)) && (mask & (1u << NT_ST_TARGET_RES))) {
		if (vals[NT_ST_REMOTE] >= vals[NT_ST_TARGET_RES]) {
			vals[NT_ST_NETWORK] = vals[NT_ST_REMOTE] - vals[NT_ST_TARGET_RES];
			mask |= 1u << NT_ST_NETWORK;
		} else {
			*neg_net = true;
		}
	}
	return mask;
}
