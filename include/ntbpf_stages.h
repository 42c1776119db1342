/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * ntbpf_stages.h - the stages and how one host's record yields them, shared
 * by user space (src/stages.c, the report) and the BPF programs (in-kernel
 * histograms for "ntbpf live"), so both compute the same thing by
 * construction.  docs/stages.md is the prose; tests/unit/test_stages.c checks
 * that the two agree.  Plain C the BPF verifier accepts: no libc, bounded
 * loops only.  Include after ntbpf.h.
 */
#ifndef NTBPF_STAGES_SHARED_H
#define NTBPF_STAGES_SHARED_H

/* In pipeline order; the order of the report's rows. */
enum nt_stage {
	NT_ST_BLK_SUB = 0,	/* blk_submission */
	NT_ST_NVME_TCP_SUB,	/* nvme_tcp_submission */
	NT_ST_NSTACK_SUB,	/* nstack_submission (target) */
	NT_ST_NVMET_TCP_SUB,	/* nvmet_tcp_submission */
	NT_ST_TARGET_SUBSYS,	/* target_subsystem */
	NT_ST_NVMET_TCP_COMP,	/* nvmet_tcp_completion */
	NT_ST_NETWORK,		/* network_transmission (needs both hosts) */
	NT_ST_NSTACK_COMP,	/* nstack_completion (initiator) */
	NT_ST_NVME_TCP_COMP,	/* nvme_tcp_completion */
	NT_ST_BLK_COMP,		/* blk_completion */
	NT_ST_BLK_DEVICE,	/* blk_device: issue -> complete, devices without nvme_tcp hooks */
	NT_ST_REMOTE,		/* remote: initiator's wait for the target (network + target) */
	NT_ST_TARGET_RES,	/* target_residence: target arrival -> response sent */
	NT_ST_E2E,		/* end_to_end */
	NT_ST_NR
};

/* the two events bounding a stage on one host; alt_* stand in when one was not seen */
struct nt_span {
	__u8 role;		/* 0: not a single-host stage (network) */
	__u8 from, to;
	__s8 alt_from, alt_to;
};

#define NT_SPAN(r, f, t, af, at) { .role = (r), .from = (f), .to = (t), .alt_from = (af), .alt_to = (at) }

static const struct nt_span nt_spans[NT_ST_NR] = {
	[NT_ST_BLK_SUB] = NT_SPAN(NTBPF_ROLE_INITIATOR, EV_I_BLK_START, EV_I_QUEUE_RQ, -1, EV_I_BLK_ISSUE),
	[NT_ST_NVME_TCP_SUB] = NT_SPAN(NTBPF_ROLE_INITIATOR, EV_I_QUEUE_RQ, EV_I_CMD_SENT, -1, -1),
	[NT_ST_NSTACK_SUB] = NT_SPAN(NTBPF_ROLE_TARGET, EV_T_CMD_ARRIVE, EV_T_CMD_PICKUP, -1, -1),
	[NT_ST_NVMET_TCP_SUB] = NT_SPAN(NTBPF_ROLE_TARGET, EV_T_CMD_PICKUP, EV_T_EXEC, -1, -1),
	[NT_ST_TARGET_SUBSYS] = NT_SPAN(NTBPF_ROLE_TARGET, EV_T_EXEC, EV_T_SUBSYS_DONE, -1, -1),
	[NT_ST_NVMET_TCP_COMP] = NT_SPAN(NTBPF_ROLE_TARGET, EV_T_SUBSYS_DONE, EV_T_RESP_SENT, -1, -1),
	[NT_ST_NETWORK] = NT_SPAN(0, 0, 0, -1, -1),
	[NT_ST_NSTACK_COMP] = NT_SPAN(NTBPF_ROLE_INITIATOR, EV_I_RESP_ARRIVE, EV_I_RESP_PROC, -1, -1),
	[NT_ST_NVME_TCP_COMP] = NT_SPAN(NTBPF_ROLE_INITIATOR, EV_I_RESP_PROC, EV_I_NVME_DONE, -1, -1),
	[NT_ST_BLK_COMP] = NT_SPAN(NTBPF_ROLE_INITIATOR, EV_I_NVME_DONE, EV_I_BLK_DONE, -1, -1),
	[NT_ST_BLK_DEVICE] = NT_SPAN(NTBPF_ROLE_INITIATOR, EV_I_BLK_ISSUE, EV_I_BLK_DONE, -1, -1),
	[NT_ST_REMOTE] = NT_SPAN(NTBPF_ROLE_INITIATOR, EV_I_CMD_SENT, EV_I_RESP_ARRIVE, -1, -1),
	[NT_ST_TARGET_RES] = NT_SPAN(NTBPF_ROLE_TARGET, EV_T_CMD_ARRIVE, EV_T_RESP_SENT, -1, -1),
	[NT_ST_E2E] = NT_SPAN(NTBPF_ROLE_INITIATOR, EV_I_BLK_START, EV_I_BLK_DONE, EV_I_BLK_ISSUE, -1),
};

/*
 * How nt_span_value is compiled: inline in user space; the BPF side makes it
 * a global function, verified once rather than once per stage and path.
 */
#ifndef NT_SPAN_FN
#define NT_SPAN_FN static inline
#endif

/* an index known to be below n: the BPF side restates it where the verifier can see it */
#ifndef NT_BOUND
#define NT_BOUND(i, n) (i)
#endif

static inline int nt_seen(const struct ntbpf_rec *r, int ev)
{
	return ev >= 0 && ev < NTBPF_MAX_EV && (r->ev_mask & (1u << ev));
}

/*
 * Value of single-host stage s for record r.  0 when one of its events was
 * not seen (or r is of the other role), 1 when computed from the stage's own
 * events, 2 when a stand-in event was used; -1 for events out of order.
 */
NT_SPAN_FN int nt_span_value(const struct ntbpf_rec *r, int s, __u64 *ns)
{
	const struct nt_span *d;
	int from, to, rc = 1;

	if (!r || !ns || s < 0 || s >= NT_ST_NR)
		return 0;
	d = &nt_spans[NT_BOUND(s, NT_ST_NR)];
	if (!d->role || r->role != d->role)
		return 0;
	from = d->from;
	to = d->to;
	if (!nt_seen(r, from)) {
		if (!nt_seen(r, d->alt_from))
			return 0;
		from = d->alt_from;
		rc = 2;
	}
	if (!nt_seen(r, to)) {
		if (!nt_seen(r, d->alt_to))
			return 0;
		to = d->alt_to;
		rc = 2;
	}
	from = NT_BOUND(from, NTBPF_MAX_EV);
	to = NT_BOUND(to, NTBPF_MAX_EV);
	if (r->ev[to] < r->ev[from])
		return -1;
	*ns = r->ev[to] - r->ev[from];
	return rc;
}

/* a write through R2T: the initiator's handling of the R2T (r2t_arrive -> data_sent), or 0 */
static inline __u64 nt_r2t_host(const struct ntbpf_rec *r)
{
	if (r->role != NTBPF_ROLE_INITIATOR || !nt_seen(r, EV_I_R2T_ARRIVE) || !nt_seen(r, EV_I_DATA_SENT) ||
	    r->ev[EV_I_DATA_SENT] < r->ev[EV_I_R2T_ARRIVE])
		return 0;
	return r->ev[EV_I_DATA_SENT] - r->ev[EV_I_R2T_ARRIVE];
}

/* ... and the target's wait for the data (r2t_sent -> data_arrive), or 0 */
static inline __u64 nt_r2t_wait(const struct ntbpf_rec *r)
{
	if (r->role != NTBPF_ROLE_TARGET || !nt_seen(r, EV_T_R2T_SENT) || !nt_seen(r, EV_T_DATA_ARRIVE) ||
	    r->ev[EV_T_DATA_ARRIVE] < r->ev[EV_T_R2T_SENT])
		return 0;
	return r->ev[EV_T_DATA_ARRIVE] - r->ev[EV_T_R2T_SENT];
}

/*
 * Stage s of one host's record, as reported (network needs both hosts: not
 * here).  Return as nt_span_value.  On top of the two events:
 *  - blk_device only where nothing finer is known (no nvme event);
 *  - writes through R2T: the initiator's handling of the R2T is nvme_tcp
 *    work, not waiting for the target (moved from remote to
 *    nvme_tcp_submission); the target's wait for the data is network, not
 *    nvmet work (taken out of nvmet_tcp_submission and target_residence).
 *    Moving both keeps every sum exact.
 */
NT_SPAN_FN int nt_stage_of(const struct ntbpf_rec *r, int s, __u64 *ns)
{
	__u64 v = 0, other = 0, adj;
	int rc;

	if (!r || !ns)
		return 0;
	if (s == NT_ST_BLK_DEVICE && r->role == NTBPF_ROLE_INITIATOR &&
	    (r->ev_mask & ~((1u << EV_I_BLK_START) | (1u << EV_I_BLK_ISSUE) | (1u << EV_I_BLK_DONE))))
		return 0;
	rc = nt_span_value(r, s, &v);
	if (rc <= 0)
		return rc;
	if (s == NT_ST_REMOTE || s == NT_ST_NVME_TCP_SUB) {
		adj = nt_r2t_host(r);
		/* only when remote can give it up */
		if (adj && nt_span_value(r, NT_ST_REMOTE, &other) > 0 && other >= adj)
			v = s == NT_ST_REMOTE ? v - adj : v + adj;
	} else if (s == NT_ST_NVMET_TCP_SUB || s == NT_ST_TARGET_RES) {
		__u64 sub = 0, res = 0;

		adj = nt_r2t_wait(r);
		if (adj && nt_span_value(r, NT_ST_NVMET_TCP_SUB, &sub) > 0 && sub >= adj &&
		    nt_span_value(r, NT_ST_TARGET_RES, &res) > 0 && res >= adj)
			v -= adj;
	}
	*ns = v;
	return rc;
}

/*
 * Every stage one host's record gives.  Returns the mask of stages set in
 * vals; *stand_in gets those computed with a stand-in boundary.
 */
#if defined(__GNUC__) && !defined(__bpf__)
/*
 * The report's common case, without a branch per stage: every stage of the
 * role has its own two events (no stand-in) and they are in order.  Both
 * loops unroll over the constant table, so they compile to the role's
 * subtractions.  blk_device never applies here (nvme events are seen).
 * 1 and the stages in raw/mask, or 0: take the general path.
 */
static inline int nt_host_fast(const struct ntbpf_rec *r, int role, __u64 raw[NT_ST_NR], __u32 *maskp)
{
	__u32 need = 0, mask = 0;
	__s64 bad = 0;

#pragma GCC unroll 16
	for (int s = 0; s < NT_ST_NR; s++)
		if (nt_spans[s].role == role && s != NT_ST_BLK_DEVICE)
			need |= 1u << nt_spans[s].from | 1u << nt_spans[s].to;
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
#endif

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

#if defined(__GNUC__) && !defined(__bpf__)
	if (!(r->role == NTBPF_ROLE_INITIATOR && nt_host_fast(r, NTBPF_ROLE_INITIATOR, raw, &mask)) &&
	    !(r->role == NTBPF_ROLE_TARGET && nt_host_fast(r, NTBPF_ROLE_TARGET, raw, &mask)))
#endif
	{
		/* unrolled, every span's events are constants: a few instructions per stage */
#if defined(__GNUC__) && !defined(__bpf__)
#pragma GCC unroll 16
#endif
		for (int s = 0; s < NT_ST_NR; s++)
			rc[s] = nt_spans[s].role == r->role ? nt_span_value(r, s, &raw[s]) : 0;
		if (r->role == NTBPF_ROLE_INITIATOR &&
		    (r->ev_mask & ~((1u << EV_I_BLK_START) | (1u << EV_I_BLK_ISSUE) | (1u << EV_I_BLK_DONE))))
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
	if (r->role == NTBPF_ROLE_INITIATOR) {
		adj = nt_r2t_host(r);
		if (adj && (mask & (1u << NT_ST_REMOTE)) && raw[NT_ST_REMOTE] >= adj) {
			raw[NT_ST_REMOTE] -= adj;
			raw[NT_ST_NVME_TCP_SUB] += adj;
		}
	} else if (r->role == NTBPF_ROLE_TARGET) {
		adj = nt_r2t_wait(r);
		if (adj && (mask & (1u << NT_ST_NVMET_TCP_SUB)) && raw[NT_ST_NVMET_TCP_SUB] >= adj &&
		    (mask & (1u << NT_ST_TARGET_RES)) && raw[NT_ST_TARGET_RES] >= adj) {
			raw[NT_ST_NVMET_TCP_SUB] -= adj;
			raw[NT_ST_TARGET_RES] -= adj;
		}
	}
	*stand_in = si;
	return mask;
}

/* the same into vals[], set where bit s of the result is */
static inline __u32 nt_host_stages(const struct ntbpf_rec *r, __u64 vals[NT_ST_NR], __u32 *stand_in)
{
	__u64 raw[NT_ST_NR] = { 0 };
	__u32 mask = nt_host_raw(r, raw, stand_in);

	for (__u32 left = mask; left; left &= left - 1)
		vals[__builtin_ctz(left)] = raw[__builtin_ctz(left)];
	return mask;
}

/*
 * In-kernel histogram buckets ("ntbpf live" without per-I/O records):
 * log-linear with 2^NT_KH_SUB_BITS sub-buckets per power of two, so a
 * bucket's midpoint is within 1/64 (1.6 %) of any value in it; values under
 * 2^NT_KH_SUB_BITS ns are exact.  Up to 2^NT_KH_MAX_EXP ns (68 s).
 */
#define NT_KH_SUB_BITS 5
#define NT_KH_SUB (1u << NT_KH_SUB_BITS)
#define NT_KH_MAX_EXP 36
#define NT_KH_NB ((NT_KH_MAX_EXP - NT_KH_SUB_BITS + 2) * NT_KH_SUB)

/* floor(log2(v)) for v > 0, without a clz instruction */
static inline __u32 nt_log2(__u64 v)
{
	__u32 r = 0;

	if (v >> 32) { v >>= 32; r += 32; }
	if (v >> 16) { v >>= 16; r += 16; }
	if (v >> 8) { v >>= 8; r += 8; }
	if (v >> 4) { v >>= 4; r += 4; }
	if (v >> 2) { v >>= 2; r += 2; }
	if (v >> 1) r += 1;
	return r;
}

static inline __u32 nt_kh_bucket(__u64 v)
{
	__u32 e;

	if (v < NT_KH_SUB)
		return (__u32)v;
	e = nt_log2(v);
	if (e > NT_KH_MAX_EXP) {
		e = NT_KH_MAX_EXP;
		v = (1ull << (NT_KH_MAX_EXP + 1)) - 1;
	}
	return (e - NT_KH_SUB_BITS + 1) * NT_KH_SUB + (__u32)((v >> (e - NT_KH_SUB_BITS)) & (NT_KH_SUB - 1));
}

/* the midpoint of bucket b (user space turns buckets back into values) */
static inline __u64 nt_kh_value(__u32 b)
{
	__u32 e, sub;
	__u64 lo;

	if (b < NT_KH_SUB)
		return b;
	e = b / NT_KH_SUB + NT_KH_SUB_BITS - 1;
	sub = b % NT_KH_SUB;
	lo = ((__u64)(NT_KH_SUB + sub)) << (e - NT_KH_SUB_BITS);
	return lo + ((1ull << (e - NT_KH_SUB_BITS)) >> 1);
}

/* key of one in-kernel histogram: a group (op, size, device) and a stage */
struct nt_kh_key {
	__u32 dev;
	__u32 bytes;
	__u8 op;
	__u8 stage;	/* enum nt_stage, or NT_ST_NR for the group's I/O count */
	__u8 role;
	__u8 pad;
};

struct nt_kh_val {
	__u64 count;
	__u64 sum;
	__u64 b[NT_KH_NB];
};

#endif
