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

/*
 * THE stage table: one row per stage, everything about it.  The rest is
 * derived from it (tests/unit/test_stages.c checks the derived views):
 *   enum nt_stage, nt_spans[]           here (also compiled into the BPF side)
 *   nt_kh_slot_stage()                  include/ntbpf_kh.h (BPF and user space)
 *   names, summaries, nt_sum_slot[],
 *   the report's row order, the ten,
 *   the sets of stages by host and
 *   layer, the depth stages, the
 *   block-only stages, joined names     src/stages.c, src/stages.h
 *   the stage list in "report --help"   src/cli.c
 * Columns:
 *   ID      enum nt_stage is NT_ST_<ID>; rows are in pipeline order
 *   NAME    the report's name (ntprof's)
 *   ROLE    the host whose two events bound it (0: network, from both hosts)
 *   FROM TO its two events on that host; AFROM ATO stand in when FROM or TO
 *           was not seen (-1: none)
 *   SLOT    its slot among its role's stages: in a report's per-record
 *           summary (struct nt_sum) and in an in-kernel histogram group
 *           (struct nt_kh_gval); -1: none
 *   TEN     one of the ten stages that tile end_to_end
 *   ROW     its row in the report's table
 *   LAYER   what spends its time (NT_LAYER_*, below): on ROLE's host's CPU
 *           (block layer, NVMe/TCP driver, TCP stack), a device, the wire,
 *           or none of its own (a sum of other stages)
 *   DEPTH   the stage that waits behind ROLE's host's requests in flight
 *           (a record's depth): one per host (--diagnose relates the two)
 *   HELP    one line: what it spans
 * Only ID, ROLE, FROM..ATO and SLOT reach the BPF side; the other columns
 * are never expanded there.  The two exceptions (blk_device, writes through
 * R2T) are below the table, each coded once.
 */
#define NT_LAYER_SUM 0		/* none of its own: a sum of other stages */
#define NT_LAYER_BLK 1		/* the block layer, on ROLE's CPU */
#define NT_LAYER_NVME 2		/* nvme_tcp, or nvmet_tcp and the nvmet core, on ROLE's CPU */
#define NT_LAYER_NSTACK 3	/* the TCP stack until the driver takes the PDU, on ROLE's CPU */
#define NT_LAYER_DEVICE 4	/* a device (the target's namespace; blk_device: driver and device) */
#define NT_LAYER_WIRE 5		/* the network between the two hosts */
#define NT_LAYERS_CPU (1u << NT_LAYER_BLK | 1u << NT_LAYER_NVME | 1u << NT_LAYER_NSTACK)

#define NT_STAGES(X) \
	X(BLK_SUB, blk_submission, NTBPF_ROLE_INITIATOR, EV_I_BLK_START, EV_I_QUEUE_RQ, -1, EV_I_BLK_ISSUE, 0, 1, 0, NT_LAYER_BLK, 0, \
	  "request allocated in blk-mq -> handed to the nvme_tcp driver (block_rq_issue stands in on other drivers)") \
	X(NVME_TCP_SUB, nvme_tcp_submission, NTBPF_ROLE_INITIATOR, EV_I_QUEUE_RQ, EV_I_CMD_SENT, -1, -1, 1, 1, 1, NT_LAYER_NVME, 1, \
	  "nvme_tcp_queue_rq -> command PDU handed to the socket") \
	X(NSTACK_SUB, nstack_submission, NTBPF_ROLE_TARGET, EV_T_CMD_ARRIVE, EV_T_CMD_PICKUP, -1, -1, 0, 1, 2, NT_LAYER_NSTACK, 0, \
	  "command PDU arrives at the target socket -> nvmet_tcp picks it up") \
	X(NVMET_TCP_SUB, nvmet_tcp_submission, NTBPF_ROLE_TARGET, EV_T_CMD_PICKUP, EV_T_EXEC, -1, -1, 1, 1, 3, NT_LAYER_NVME, 0, \
	  "nvmet_tcp picks the PDU up -> request handed to the target backend") \
	X(TARGET_SUBSYS, target_subsystem, NTBPF_ROLE_TARGET, EV_T_EXEC, EV_T_SUBSYS_DONE, -1, -1, 2, 1, 4, NT_LAYER_DEVICE, 1, \
	  "request handed to the backend -> nvmet core completes it") \
	X(NVMET_TCP_COMP, nvmet_tcp_completion, NTBPF_ROLE_TARGET, EV_T_SUBSYS_DONE, EV_T_RESP_SENT, -1, -1, 3, 1, 5, NT_LAYER_NVME, 0, \
	  "nvmet core completion -> response (and C2H data) handed to the socket") \
	X(NETWORK, network_transmission, 0, 0, 0, -1, -1, -1, 1, 6, NT_LAYER_WIRE, 0, \
	  "remote (initiator) - target_residence (target): the wire and both TCP stacks") \
	X(NSTACK_COMP, nstack_completion, NTBPF_ROLE_INITIATOR, EV_I_RESP_ARRIVE, EV_I_RESP_PROC, -1, -1, 2, 1, 7, NT_LAYER_NSTACK, 0, \
	  "response arrives at the initiator socket -> nvme_tcp processes it") \
	X(NVME_TCP_COMP, nvme_tcp_completion, NTBPF_ROLE_INITIATOR, EV_I_RESP_PROC, EV_I_NVME_DONE, -1, -1, 3, 1, 8, NT_LAYER_NVME, 0, \
	  "nvme_tcp processes the response -> nvme request completed") \
	X(BLK_COMP, blk_completion, NTBPF_ROLE_INITIATOR, EV_I_NVME_DONE, EV_I_BLK_DONE, -1, -1, 4, 1, 9, NT_LAYER_BLK, 0, \
	  "nvme request completed -> block request completed") \
	X(BLK_DEVICE, blk_device, NTBPF_ROLE_INITIATOR, EV_I_BLK_ISSUE, EV_I_BLK_DONE, -1, -1, 5, 0, 10, NT_LAYER_DEVICE, 0, \
	  "block_rq_issue -> block_rq_complete, on devices without nvme_tcp hooks (driver + device)") \
	X(REMOTE, remote, NTBPF_ROLE_INITIATOR, EV_I_CMD_SENT, EV_I_RESP_ARRIVE, -1, -1, 6, 0, 12, NT_LAYER_SUM, 0, \
	  "command sent -> response arrives, seen from the initiator (network + target)") \
	X(TARGET_RES, target_residence, NTBPF_ROLE_TARGET, EV_T_CMD_ARRIVE, EV_T_RESP_SENT, -1, -1, 4, 0, 13, NT_LAYER_SUM, 0, \
	  "command arrives at the target -> response handed to the socket") \
	X(E2E, end_to_end, NTBPF_ROLE_INITIATOR, EV_I_BLK_START, EV_I_BLK_DONE, EV_I_BLK_ISSUE, -1, 7, 0, 11, NT_LAYER_SUM, 0, \
	  "request allocated in blk-mq -> block request completed")

enum nt_stage {
#define NT_X_ENUM(id, ...) NT_ST_##id,
	NT_STAGES(NT_X_ENUM)
#undef NT_X_ENUM
	NT_ST_NR
};

/* the two events bounding a stage on one host; alt_* stand in when one was not seen */
struct nt_span {
	__u8 role;		/* 0: not a single-host stage (network) */
	__u8 from, to;
	__s8 alt_from, alt_to;
};

static const struct nt_span nt_spans[NT_ST_NR] = {
#define NT_X_SPAN(id, name, role_, from_, to_, afrom, ato, ...) \
	[NT_ST_##id] = { .role = (role_), .from = (from_), .to = (to_), .alt_from = (afrom), .alt_to = (ato) },
	NT_STAGES(NT_X_SPAN)
#undef NT_X_SPAN
};

/*
 * How nt_span_value is compiled: inline in user space; the BPF side makes it
 * a static subprogram, called from kh_record() (a global function, verified
 * once).  Not global itself: a global function's pointer arguments need
 * v5.12, and 5.10 refuses every program that holds one.
 */
#ifndef NT_SPAN_FN
#define NT_SPAN_FN static inline
#endif

/* an index known to be below n: the BPF side restates it where the verifier can see it */
#ifndef NT_BOUND
#define NT_BOUND(i, n) (i)
#endif
/* the same, but a constant stays a constant (the inlined paths fold the table) */
#define NT_CBOUND(i, n) (__builtin_constant_p(i) ? (i) : NT_BOUND(i, n))

static inline int nt_seen(const struct ntbpf_rec *r, int ev)
{
	return ev >= 0 && ev < NTBPF_MAX_EV && (r->ev_mask & (1u << ev));
}

/*
 * Value of single-host stage s for record r.  0 when one of its events was
 * not seen (or r is of the other role), 1 when computed from the stage's own
 * events, 2 when a stand-in event was used; -1 for events out of order.
 */
static inline __attribute__((always_inline)) int nt_span_value_inl(const struct ntbpf_rec *r, int s, __u64 *ns)
{
	const struct nt_span *d;
	int from, to, rc = 1;

	if (!r || !ns || s < 0 || s >= NT_ST_NR)
		return 0;
	d = &nt_spans[NT_CBOUND(s, NT_ST_NR)];
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
	from = NT_CBOUND(from, NTBPF_MAX_EV);
	to = NT_CBOUND(to, NTBPF_MAX_EV);
	if (r->ev[to] < r->ev[from])
		return -1;
	*ns = r->ev[to] - r->ev[from];
	return rc;
}

NT_SPAN_FN int nt_span_value(const struct ntbpf_rec *r, int s, __u64 *ns)
{
	return nt_span_value_inl(r, s, ns);
}

/*
 * Exception 1, blk_device: reported only where nothing finer is known, an
 * initiator record with no event but the block layer's (any block device
 * other than NVMe/TCP).
 */
#define NT_BLK_ONLY_EVS ((1u << EV_I_BLK_START) | (1u << EV_I_BLK_ISSUE) | (1u << EV_I_BLK_DONE))

static inline int nt_blk_device_applies(const struct ntbpf_rec *r)
{
	return r->role != NTBPF_ROLE_INITIATOR || !(r->ev_mask & ~NT_BLK_ONLY_EVS);
}

/*
 * Exception 2, writes through R2T.  The initiator's handling of the R2T
 * (r2t_arrive -> data_sent) is nvme_tcp work, not waiting for the target:
 * it moves from remote (x) to nvme_tcp_submission (y), when remote can give
 * it up.  The target's wait for the data (r2t_sent -> data_arrive) is
 * network, not nvmet work: it is taken out of nvmet_tcp_submission (x) and
 * target_residence (y), when both can give it up.  Moving both keeps every
 * sum exact.  nt_r2t_adj is the span moved (0: none, or events out of
 * order); nt_r2t_move applies it to the role's x and y stage values, each
 * present or not.
 */
#define NT_R2T_X(role) ((role) == NTBPF_ROLE_INITIATOR ? NT_ST_REMOTE : NT_ST_NVMET_TCP_SUB)
#define NT_R2T_Y(role) ((role) == NTBPF_ROLE_INITIATOR ? NT_ST_NVME_TCP_SUB : NT_ST_TARGET_RES)

/* ev[b] - ev[a], or 0 where one was not seen or they are out of order */
static inline __u64 nt_ev_gap(const struct ntbpf_rec *r, int a, int b)
{
	if (!nt_seen(r, a) || !nt_seen(r, b) || r->ev[b] < r->ev[a])
		return 0;
	return r->ev[b] - r->ev[a];
}

static inline __u64 nt_r2t_adj(const struct ntbpf_rec *r)
{
	if (r->role == NTBPF_ROLE_INITIATOR)
		return nt_ev_gap(r, EV_I_R2T_ARRIVE, EV_I_DATA_SENT);
	if (r->role == NTBPF_ROLE_TARGET)
		return nt_ev_gap(r, EV_T_R2T_SENT, EV_T_DATA_ARRIVE);
	return 0;
}

static inline void nt_r2t_move(int role, __u64 adj, int have_x, __u64 *x, int have_y, __u64 *y)
{
	if (!adj || !have_x || *x < adj)
		return;
	if (role == NTBPF_ROLE_INITIATOR) {
		*x -= adj;
		*y += adj;
	} else if (have_y && *y >= adj) {
		*x -= adj;
		*y -= adj;
	}
}

/* stage s (xs or ys, of value v) with the R2T move applied (nt_stage_of) */
static inline __attribute__((always_inline)) __u64 nt_r2t_stage(const struct ntbpf_rec *r, int s, __u64 v, int xs, int ys)
{
	__u64 adj = nt_r2t_adj(r), x = v, y = v;
	int hx, hy;

	if (!adj)
		return v;
	hx = s == xs || nt_span_value_inl(r, xs, &x) > 0;
	hy = s == ys || nt_span_value_inl(r, ys, &y) > 0;
	nt_r2t_move(r->role, adj, hx, &x, hy, &y);
	return s == xs ? x : y;
}

/*
 * Stage s of one host's record, as reported (network needs both hosts: not
 * here): its span with the two exceptions.  Return as nt_span_value.  The
 * BPF side's per-stage path (in-kernel histograms); the report's per-record
 * path is nt_host_raw() (src/stages.c), and tests/unit/test_stages.c checks
 * that the two agree on random records.
 */
static inline __attribute__((always_inline)) int nt_stage_of_inl(const struct ntbpf_rec *r, int s, __u64 *ns)
{
	__u64 v = 0;
	int rc;

	if (!r || !ns)
		return 0;
	if (s == NT_ST_BLK_DEVICE && !nt_blk_device_applies(r))
		return 0;
	rc = nt_span_value_inl(r, s, &v);
	if (rc <= 0)
		return rc;
	if (s == NT_ST_REMOTE || s == NT_ST_NVME_TCP_SUB)
		v = nt_r2t_stage(r, s, v, NT_ST_REMOTE, NT_ST_NVME_TCP_SUB);
	else if (s == NT_ST_NVMET_TCP_SUB || s == NT_ST_TARGET_RES)
		v = nt_r2t_stage(r, s, v, NT_ST_NVMET_TCP_SUB, NT_ST_TARGET_RES);
	*ns = v;
	return rc;
}

NT_SPAN_FN int nt_stage_of(const struct ntbpf_rec *r, int s, __u64 *ns)
{
	return nt_stage_of_inl(r, s, ns);
}

#endif
