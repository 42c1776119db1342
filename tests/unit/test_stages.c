// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "report.h"
#include "stages.h"
#include "testapi.h"

/* single-host stage s of r, as nt_span_value() gives it */
static int stage_value(const struct ntbpf_rec *r, int s, uint64_t *ns)
{
	__u64 v;
	int rc = nt_span_value(r, s, &v);

	if (rc > 0)
		*ns = v;
	return rc;
}

/* every stage of one host's record through the report's per-record path (nt_sum_of: fast or general) */
static __u32 host_stages(const struct ntbpf_rec *r, __u64 vals[NT_ST_NR], __u32 *stand_in)
{
	uint64_t v[NT_ST_NR];
	uint32_t mask, si;
	bool neg;

	mask = nt_stages_compute(r->role == NTBPF_ROLE_INITIATOR ? r : NULL, r->role == NTBPF_ROLE_TARGET ? r : NULL,
				 v, &si, &neg);
	for (int s = 0; s < NT_ST_NR; s++)
		if (mask & (1u << s))
			vals[s] = v[s];
	*stand_in = si;
	return mask;
}

static struct ntbpf_rec init_rec(const uint32_t *ev, int n)
{
	struct ntbpf_rec r = { .t0 = 1000000, .role = NTBPF_ROLE_INITIATOR };

	for (int i = 0; i < n; i++) {
		if (ev[i] == UINT32_MAX)
			continue;
		r.ev[i] = ev[i];
		r.ev_mask |= 1u << i;
	}
	return r;
}

/* every initiator event, in ns after t0 */
static const uint32_t full_init[EV_I_NR] = {
	[EV_I_BLK_START] = 0, [EV_I_BLK_ISSUE] = 900, [EV_I_QUEUE_RQ] = 700,
	[EV_I_CMD_SENT] = 5700, [EV_I_R2T_ARRIVE] = UINT32_MAX, [EV_I_DATA_SENT] = UINT32_MAX,
	[EV_I_RESP_ARRIVE] = 105700, [EV_I_RESP_PROC] = 108000, [EV_I_NVME_DONE] = 109500,
	[EV_I_BLK_DONE] = 110000,
};

static struct ntbpf_rec tgt_rec(void)
{
	struct ntbpf_rec r = { .t0 = 77, .role = NTBPF_ROLE_TARGET };
	const uint32_t ev[EV_T_NR] = {
		[EV_T_CMD_ARRIVE] = 0, [EV_T_CMD_PICKUP] = 3000, [EV_T_REQ_INIT] = 3500,
		[EV_T_EXEC] = 4000, [EV_T_SUBSYS_DONE] = 54000, [EV_T_RESP_QUEUED] = 55000,
		[EV_T_RESP_SENT] = 60000,
	};

	for (int i = 0; i < EV_T_NR; i++)
		if (i != EV_T_R2T_SENT && i != EV_T_DATA_ARRIVE) {
			r.ev[i] = ev[i];
			r.ev_mask |= 1u << i;
		}
	return r;
}

static void test_init_only_stages(void **state)
{
	struct ntbpf_rec r = init_rec(full_init, EV_I_NR);
	uint64_t v[NT_ST_NR], sum;
	uint32_t stand_in;
	bool neg;
	uint32_t m = nt_stages_compute(&r, NULL, v, &stand_in, &neg);

	assert_true(m & (1u << NT_ST_BLK_SUB));
	assert_int_equal(v[NT_ST_BLK_SUB], 700);
	assert_int_equal(v[NT_ST_NVME_TCP_SUB], 5000);
	assert_int_equal(v[NT_ST_REMOTE], 100000);
	assert_int_equal(v[NT_ST_NSTACK_COMP], 2300);
	assert_int_equal(v[NT_ST_NVME_TCP_COMP], 1500);
	assert_int_equal(v[NT_ST_BLK_COMP], 500);
	assert_int_equal(v[NT_ST_E2E], 110000);
	/* nvme events seen: no blk_device, no target stages, no network */
	assert_false(m & (1u << NT_ST_BLK_DEVICE));
	assert_false(m & (1u << NT_ST_NETWORK));
	assert_false(m & (1u << NT_ST_TARGET_SUBSYS));
	assert_int_equal(stand_in, 0);
	sum = v[NT_ST_BLK_SUB] + v[NT_ST_NVME_TCP_SUB] + v[NT_ST_REMOTE] + v[NT_ST_NSTACK_COMP] +
	      v[NT_ST_NVME_TCP_COMP] + v[NT_ST_BLK_COMP];
	assert_int_equal(sum, v[NT_ST_E2E]);
}

static void test_matched_ten_stages_sum(void **state)
{
	struct ntbpf_rec i = init_rec(full_init, EV_I_NR), t = tgt_rec();
	uint64_t v[NT_ST_NR], sum = 0;
	uint32_t stand_in;
	bool neg;
	uint32_t m = nt_stages_compute(&i, &t, v, &stand_in, &neg);
	static const int ten[] = { NT_ST_BLK_SUB, NT_ST_NVME_TCP_SUB, NT_ST_NSTACK_SUB, NT_ST_NVMET_TCP_SUB,
				   NT_ST_TARGET_SUBSYS, NT_ST_NVMET_TCP_COMP, NT_ST_NETWORK, NT_ST_NSTACK_COMP,
				   NT_ST_NVME_TCP_COMP, NT_ST_BLK_COMP };

	assert_false(neg);
	for (size_t k = 0; k < sizeof(ten) / sizeof(ten[0]); k++) {
		assert_true(m & (1u << ten[k]));
		sum += v[ten[k]];
	}
	assert_int_equal(v[NT_ST_NETWORK], 100000 - 60000);
	assert_int_equal(v[NT_ST_TARGET_SUBSYS], 50000);
	assert_int_equal(sum, v[NT_ST_E2E]);
}

/* the report's per-group self-check: matched I/Os with all ten stages, and how far their sum is off */
static void test_report_full_breakdown(void **state)
{
	struct ntbpf_rec i = init_rec(full_init, EV_I_NR), t = tgt_rec(), half = init_rec(full_init, EV_I_NR);
	struct nt_report_opts o = { .group_by = NT_GB_OP };
	struct nt_report rep;

	nt_report_begin(&rep, NULL, 0, &o);
	assert_int_equal(nt_report_add(&rep, &i, &t), 0);
	assert_int_equal(nt_report_add(&rep, &i, &t), 0);
	assert_int_equal(nt_report_add(&rep, &half, NULL), 0);	/* unmatched: no network, not full */
	assert_int_equal(rep.ngroups, 1);
	assert_int_equal(rep.groups[0].count, 3);
	assert_int_equal(rep.groups[0].full, 2);
	assert_int_equal(rep.groups[0].full_resid, 0);
	nt_report_free(&rep);
}

/* a 128k write through R2T: host R2T handling is nvme_tcp work, the target's wait is network */
static void test_r2t_write_sums(void **state)
{
	const uint32_t ev[EV_I_NR] = {
		[EV_I_BLK_START] = 0, [EV_I_BLK_ISSUE] = 900, [EV_I_QUEUE_RQ] = 700,
		[EV_I_CMD_SENT] = 5000, [EV_I_R2T_ARRIVE] = 60000, [EV_I_DATA_SENT] = 64000,
		[EV_I_RESP_ARRIVE] = 200000, [EV_I_RESP_PROC] = 201000, [EV_I_NVME_DONE] = 202000,
		[EV_I_BLK_DONE] = 203000,
	};
	struct ntbpf_rec i = init_rec(ev, EV_I_NR), t = { .role = NTBPF_ROLE_TARGET };
	const uint32_t tev[EV_T_NR] = {
		[EV_T_CMD_ARRIVE] = 0, [EV_T_CMD_PICKUP] = 2000, [EV_T_REQ_INIT] = 2500, [EV_T_R2T_SENT] = 4000,
		[EV_T_DATA_ARRIVE] = 110000, [EV_T_EXEC] = 115000, [EV_T_SUBSYS_DONE] = 140000,
		[EV_T_RESP_QUEUED] = 141000, [EV_T_RESP_SENT] = 150000,
	};
	uint64_t v[NT_ST_NR], sum = 0;
	uint32_t stand_in, m;
	bool neg;
	static const int ten[] = { NT_ST_BLK_SUB, NT_ST_NVME_TCP_SUB, NT_ST_NSTACK_SUB, NT_ST_NVMET_TCP_SUB,
				   NT_ST_TARGET_SUBSYS, NT_ST_NVMET_TCP_COMP, NT_ST_NETWORK, NT_ST_NSTACK_COMP,
				   NT_ST_NVME_TCP_COMP, NT_ST_BLK_COMP };

	for (int k = 0; k < EV_T_NR; k++) {
		t.ev[k] = tev[k];
		t.ev_mask |= 1u << k;
	}
	m = nt_stages_compute(&i, &t, v, &stand_in, &neg);
	assert_false(neg);
	/* host: 4.3 us to the command + 4 us answering the R2T */
	assert_int_equal(v[NT_ST_NVME_TCP_SUB], 4300 + 4000);
	/* target: pickup -> exec minus the 106 us it waited for the data */
	assert_int_equal(v[NT_ST_NVMET_TCP_SUB], 113000 - 106000);
	assert_int_equal(v[NT_ST_TARGET_RES], 150000 - 106000);
	/* remote 195 us - 4 us host work = 191 us; minus 44 us in the target: 147 us on the wire */
	assert_int_equal(v[NT_ST_REMOTE], 191000);
	assert_int_equal(v[NT_ST_NETWORK], 147000);
	for (size_t k = 0; k < sizeof(ten) / sizeof(ten[0]); k++) {
		assert_true(m & (1u << ten[k]));
		sum += v[ten[k]];
	}
	assert_int_equal(sum, v[NT_ST_E2E]);
	/* initiator alone: its stages with remote still sum */
	m = nt_stages_compute(&i, NULL, v, &stand_in, &neg);
	assert_int_equal(v[NT_ST_BLK_SUB] + v[NT_ST_NVME_TCP_SUB] + v[NT_ST_REMOTE] + v[NT_ST_NSTACK_COMP] +
			 v[NT_ST_NVME_TCP_COMP] + v[NT_ST_BLK_COMP], v[NT_ST_E2E]);
}

static void test_negative_network_left_out(void **state)
{
	struct ntbpf_rec i = init_rec(full_init, EV_I_NR), t = tgt_rec();
	uint64_t v[NT_ST_NR];
	uint32_t stand_in;
	bool neg;
	uint32_t m;

	t.ev[EV_T_RESP_SENT] = 200000;	/* target residence longer than the host's wait */
	m = nt_stages_compute(&i, &t, v, &stand_in, &neg);
	assert_true(neg);
	assert_false(m & (1u << NT_ST_NETWORK));
}

static void test_block_only(void **state)
{
	const uint32_t ev[EV_I_NR] = {
		[EV_I_BLK_START] = 0, [EV_I_BLK_ISSUE] = 250, [EV_I_QUEUE_RQ] = UINT32_MAX,
		[EV_I_CMD_SENT] = UINT32_MAX, [EV_I_R2T_ARRIVE] = UINT32_MAX, [EV_I_DATA_SENT] = UINT32_MAX,
		[EV_I_RESP_ARRIVE] = UINT32_MAX, [EV_I_RESP_PROC] = UINT32_MAX, [EV_I_NVME_DONE] = UINT32_MAX,
		[EV_I_BLK_DONE] = 47000,
	};
	struct ntbpf_rec r = init_rec(ev, EV_I_NR);
	uint64_t v[NT_ST_NR];
	uint32_t stand_in;
	bool neg;
	uint32_t m = nt_stages_compute(&r, NULL, v, &stand_in, &neg);

	assert_int_equal(m, (1u << NT_ST_BLK_SUB) | (1u << NT_ST_BLK_DEVICE) | (1u << NT_ST_E2E));
	assert_int_equal(stand_in, 1u << NT_ST_BLK_SUB);
	assert_int_equal(v[NT_ST_BLK_SUB], 250);
	assert_int_equal(v[NT_ST_BLK_DEVICE], 46750);
	assert_int_equal(v[NT_ST_BLK_SUB] + v[NT_ST_BLK_DEVICE], v[NT_ST_E2E]);
}

static void test_no_start_stamp(void **state)
{
	struct ntbpf_rec r = { .role = NTBPF_ROLE_INITIATOR };
	uint64_t v[NT_ST_NR];
	uint32_t stand_in;
	bool neg;
	uint32_t m;

	r.ev_mask = (1u << EV_I_BLK_ISSUE) | (1u << EV_I_BLK_DONE);
	r.ev[EV_I_BLK_ISSUE] = 0;
	r.ev[EV_I_BLK_DONE] = 3000;
	m = nt_stages_compute(&r, NULL, v, &stand_in, &neg);
	assert_false(m & (1u << NT_ST_BLK_SUB));
	assert_true(m & (1u << NT_ST_E2E));
	assert_true(stand_in & (1u << NT_ST_E2E));
	assert_int_equal(v[NT_ST_E2E], 3000);
}

static void test_out_of_order_is_not_a_value(void **state)
{
	struct ntbpf_rec r = init_rec(full_init, EV_I_NR);
	uint64_t ns = 0;

	r.ev[EV_I_NVME_DONE] = 200000;	/* after blk_done */
	assert_int_equal(stage_value(&r, NT_ST_BLK_COMP, &ns), -1);
	/* a target stage asked of an initiator record */
	assert_int_equal(stage_value(&r, NT_ST_TARGET_SUBSYS, &ns), 0);
}

/* the in-kernel histogram buckets: exact below 32 ns, midpoints within 1/64, monotonic */
/*
 * The report's per-record path (nt_sum_of: sum_fast, or nt_host_raw with each span read once) gives
 * exactly what nt_stage_of (the BPF side's per-stage path) gives, stage by
 * stage, on random records: random events present, random and out-of-order
 * times, R2T writes with waits longer and shorter than the spans they leave.
 * One record in eight has every event of its role, in order: sum_fast's,
 * or with an R2T write nt_host_fast's (src/stages.c), so that both fast
 * paths are held to nt_stage_of, not only the general one.
 */
static void test_host_stages_equal_stage_of(void **state)
{
	uint64_t x = 88172645463325252ull;
	int fast = 0;

	for (int n = 0; n < 200000; n++) {
		struct ntbpf_rec r = { 0 };
		__u64 vals[NT_ST_NR], v;
		__u32 mask, stand_in, rnd;

		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		r.role = (x & 3) == 3 ? 0 : (x & 1) + 1;
		r.ev_mask = (__u32)(x >> 8) & 0x3ff;
		if (n & 1)	/* half the records: the usual full set */
			r.ev_mask |= r.role == NTBPF_ROLE_TARGET ? 0x1f7 : 0x3cf;
		for (int e = 0; e < NTBPF_MAX_EV; e++) {
			x ^= x << 13, x ^= x >> 7, x ^= x << 17;
			rnd = (__u32)x;
			/* mostly increasing, sometimes not */
			r.ev[e] = (n & 7) == 5 ? e * 1000 + rnd % 1000 : (n & 2) ? e * 1000 + (rnd % 3000) : rnd % 100000;
		}
		mask = host_stages(&r, vals, &stand_in);
		if ((n & 7) == 5 && r.role) {	/* sum_fast's: every stage of the role but blk_device, none a stand-in */
			assert_int_equal(mask, nt_stages_where(r.role, ~0u) & ~(1u << NT_ST_BLK_DEVICE));
			assert_int_equal(stand_in, 0);
			fast++;
		}
		for (int s = 0; s < NT_ST_NR; s++) {
			int rc = nt_stage_of(&r, s, &v);

			assert_int_equal(!!(mask & (1u << s)), rc > 0);
			assert_int_equal(!!(stand_in & (1u << s)), rc == 2);
			if (rc > 0)
				assert_int_equal(vals[s], v);
		}
	}
	assert_true(fast > 15000);
}

static void test_kernel_buckets(void **state)
{
	uint32_t prev = 0;

	for (__u64 v = 0; v < 32; v++) {
		assert_int_equal(nt_kh_bucket(v), v);
		assert_int_equal(nt_kh_value(nt_kh_bucket(v)), v);
	}
	for (__u64 v = 1; v < (1ull << 37); v = v * 1.01 + 1) {
		uint32_t b = nt_kh_bucket(v);
		__u64 m = nt_kh_value(b);
		double err = (double)(m > v ? m - v : v - m) / v;

		assert_true(b < NT_KH_NB);
		assert_true(b >= prev);
		assert_true(err <= 1.0 / 64 + 1e-12);
		assert_int_equal(nt_kh_bucket(m), b);
		prev = b;
	}
	/* the BPF side's 32-bit form: the same bucket for every 32-bit value */
	for (__u64 v = 0; v < (1ull << 32); v = v < 4096 ? v + 1 : v * 1.003 + 1) {
		assert_int_equal(nt_kh_bucket32((__u32)v), nt_kh_bucket(v));
		assert_int_equal(nt_kh_bucket32((__u32)v - 1), nt_kh_bucket((__u32)v - 1));
	}
	for (int e = 0; e < 32; e++) {
		assert_int_equal(nt_kh_bucket32(1u << e), nt_kh_bucket(1ull << e));
		assert_int_equal(nt_kh_bucket32((1u << e) - 1), nt_kh_bucket((1ull << e) - 1));
	}
	assert_int_equal(nt_kh_bucket32(~0u), nt_kh_bucket(~0u));
	assert_true(nt_kh_bucket32(~0u) < NT_KH_NB32);
	/* beyond 2^37 ns everything lands in the last bucket, never past it */
	assert_int_equal(nt_kh_bucket(~0ull), NT_KH_NB - 1);
	assert_int_equal(nt_log2(1), 0);
	assert_int_equal(nt_log2(~0ull), 63);
}

/*
 * The names users type and read, written out here rather than taken from the
 * table: ntprof's stage names in pipeline order (the enum's), the event
 * names of docs/stages.md, and lookups that must fail.
 */
static void test_names(void **state)
{
	static const char *const want[NT_ST_NR] = {
		"blk_submission", "nvme_tcp_submission", "nstack_submission", "nvmet_tcp_submission",
		"target_subsystem", "nvmet_tcp_completion", "network_transmission", "nstack_completion",
		"nvme_tcp_completion", "blk_completion", "blk_device", "remote", "target_residence", "end_to_end",
	};
	static const char *const init_ev[EV_I_NR] = {
		"blk_start", "blk_issue", "queue_rq", "cmd_sent", "r2t_arrive", "data_sent",
		"resp_arrive", "resp_proc", "nvme_done", "blk_done",
	};
	static const char *const tgt_ev[EV_T_NR] = {
		"cmd_arrive", "cmd_pickup", "req_init", "r2t_sent", "data_arrive", "exec",
		"subsys_done", "resp_queued", "resp_sent",
	};

	for (int s = 0; s < NT_ST_NR; s++) {
		assert_string_equal(nt_stage_name(s), want[s]);
		assert_int_equal(nt_stage_by_name(want[s]), s);
		assert_true(strlen(nt_stage_summary(s)) > 20);
	}
	for (int e = 0; e < EV_I_NR; e++)
		assert_string_equal(nt_ev_name(NTBPF_ROLE_INITIATOR, e), init_ev[e]);
	for (int e = 0; e < EV_T_NR; e++)
		assert_string_equal(nt_ev_name(NTBPF_ROLE_TARGET, e), tgt_ev[e]);
	assert_string_equal(nt_ev_name(NTBPF_ROLE_TARGET, EV_T_NR), "?");
	assert_string_equal(nt_ev_name(0, 0), "?");
	assert_string_equal(nt_stage_name(NT_ST_NR), "?");
	assert_string_equal(nt_stage_name(-1), "?");
	assert_int_equal(nt_stage_by_name("nope"), -1);
	assert_int_equal(nt_stage_by_name(""), -1);
	assert_int_equal(nt_stage_by_name("end_to_en"), -1);
	assert_int_equal(nt_stage_by_name("END_TO_END"), -1);
}

/*
 * Every view derived from the stage table (include/ntbpf_stages.h) agrees
 * with the others: summary slots and in-kernel histogram slots are each
 * other's inverse and dense from 0 (the BPF side and live stop at the first
 * empty slot), the report's rows are a permutation with the ten first and
 * end_to_end right after them, and the ten are the stages that tile
 * end_to_end on both hosts.
 */
static void test_table_views_agree(void **state)
{
	uint32_t rows = 0, ten = 0;

	for (int role = NTBPF_ROLE_INITIATOR; role <= NTBPF_ROLE_TARGET; role++) {
		int n = 0;

		for (int s = 0; s < NT_ST_NR; s++)
			if (nt_spans[s].role == role) {
				assert_true(nt_sum_slot[s] >= 0 && nt_sum_slot[s] < NT_KH_SLOTS);
				assert_int_equal(nt_kh_slot_stage(role, nt_sum_slot[s]), s);
				n++;
			}
		for (int i = 0; i < NT_KH_SLOTS; i++) {
			int s = nt_kh_slot_stage(role, i);

			if (i >= n) {
				assert_int_equal(s, NT_KH_NONE);
				continue;
			}
			assert_true(s >= 0 && s < NT_ST_NR);
			assert_int_equal(nt_spans[s].role, role);
			assert_int_equal(nt_sum_slot[s], i);
		}
	}
	assert_int_equal(nt_kh_slot_stage(0, 0), NT_KH_NONE);
	assert_int_equal(nt_kh_slot_stage(NTBPF_ROLE_TARGET, -1), NT_KH_NONE);
	for (int k = 0; k < NT_ST_NR; k++) {
		int s = nt_stage_at_row[k];

		assert_true(s >= 0 && s < NT_ST_NR);
		assert_false(rows & (1u << s));
		rows |= 1u << s;
		if (k < 10)
			ten |= 1u << s;
	}
	assert_int_equal(rows, (1u << NT_ST_NR) - 1);
	assert_int_equal(ten, NT_TEN_MASK);
	assert_int_equal(__builtin_popcount(NT_TEN_MASK), 10);
	assert_int_equal(nt_stage_at_row[10], NT_ST_BLK_DEVICE);
	assert_int_equal(nt_stage_at_row[11], NT_ST_E2E);
	/* the ten: every stage of a full I/O but the spans they split (and blk_device, which needs no nvme) */
	assert_int_equal(NT_TEN_MASK, ((1u << NT_ST_NR) - 1) & ~((1u << NT_ST_BLK_DEVICE) | (1u << NT_ST_REMOTE) |
								 (1u << NT_ST_TARGET_RES) | (1u << NT_ST_E2E)));
	/* only network needs both hosts, and it has no slot */
	for (int s = 0; s < NT_ST_NR; s++)
		assert_int_equal(nt_spans[s].role == 0, s == NT_ST_NETWORK);
}

/*
 * The sets derived from the columns ROLE, LAYER, DEPTH and the events
 * (src/stages.h), written out here: what each host's CPU runs (--diagnose's
 * initiator_cpu and target_cpu), nvmet's own stages (interference's windows),
 * the stage behind each host's depth, what a block-only record yields (and
 * that a block-only record yields exactly that), and the joined names.
 */
static void test_table_sets(void **state)
{
	struct ntbpf_rec r = { .role = NTBPF_ROLE_INITIATOR };
	uint32_t got = 0;
	char buf[200];
	__u64 v;

	assert_int_equal(nt_stages_where(NTBPF_ROLE_INITIATOR, NT_LAYERS_CPU),
			 1u << NT_ST_BLK_SUB | 1u << NT_ST_NVME_TCP_SUB | 1u << NT_ST_NSTACK_COMP |
			 1u << NT_ST_NVME_TCP_COMP | 1u << NT_ST_BLK_COMP);
	assert_int_equal(nt_stages_where(NTBPF_ROLE_TARGET, NT_LAYERS_CPU),
			 1u << NT_ST_NSTACK_SUB | 1u << NT_ST_NVMET_TCP_SUB | 1u << NT_ST_NVMET_TCP_COMP);
	assert_int_equal(nt_stages_where(NTBPF_ROLE_TARGET, 1u << NT_LAYER_NVME | 1u << NT_LAYER_DEVICE),
			 1u << NT_ST_NVMET_TCP_SUB | 1u << NT_ST_TARGET_SUBSYS | 1u << NT_ST_NVMET_TCP_COMP);
	assert_int_equal(nt_stages_where(0, ~0u), 1u << NT_ST_NETWORK);
	assert_int_equal(nt_stages_where(-1, ~0u), (1u << NT_ST_NR) - 1);
	assert_int_equal(nt_stages_where(-1, 1u << NT_LAYER_SUM),
			 1u << NT_ST_REMOTE | 1u << NT_ST_TARGET_RES | 1u << NT_ST_E2E);
	for (int s = 0; s < NT_ST_NR; s++)
		assert_int_equal(nt_stage_role(s), nt_spans[s].role);
	assert_int_equal(nt_depth_stage(NTBPF_ROLE_INITIATOR), NT_ST_NVME_TCP_SUB);
	assert_int_equal(nt_depth_stage(NTBPF_ROLE_TARGET), NT_ST_TARGET_SUBSYS);
	assert_int_equal(NT_BLK_ONLY_MASK, 1u << NT_ST_BLK_SUB | 1u << NT_ST_BLK_DEVICE | 1u << NT_ST_E2E);
	r.ev_mask = NT_BLK_ONLY_EVS;
	r.ev[EV_I_BLK_ISSUE] = 10;
	r.ev[EV_I_BLK_DONE] = 30;
	for (int s = 0; s < NT_ST_NR; s++)
		if (nt_stage_of(&r, s, &v) > 0)
			got |= 1u << s;
	assert_int_equal(got, NT_BLK_ONLY_MASK);
	assert_int_equal(nt_stage_join(buf, sizeof(buf), nt_stages_where(NTBPF_ROLE_TARGET, NT_LAYERS_CPU), "+"), 59);
	assert_string_equal(buf, "nstack_submission+nvmet_tcp_submission+nvmet_tcp_completion");
	assert_int_equal(nt_stage_join(buf, 8, NT_TEN_MASK & ~nt_stages_where(NTBPF_ROLE_INITIATOR, ~0u), ", "), 101);
	assert_string_equal(buf, "nstack_");
	assert_int_equal(nt_stage_join(buf, sizeof(buf), 0, "+"), 0);
	assert_string_equal(buf, "");
}

/* docs/stages.md's table and src/stages.c must say the same thing */
static void test_doc_agrees(void **state)
{
	const char *dir = getenv("NTBPF_TESTDATA");
	char path[512], line[512];
	FILE *f;
	int rows = 0, in_table = 0;
	uint32_t seen = 0;

	snprintf(path, sizeof(path), "%s/../../docs/stages.md", dir ? dir : "tests/unit");
	f = fopen(path, "r");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		char name[64], host[32], from[32], to[32], alt[64] = "";
		const struct nt_span *d;
		int s;

		if (strstr(line, "stages-table: begin"))
			in_table = 1;
		if (strstr(line, "stages-table: end"))
			break;
		if (!in_table || line[0] != '|' || strstr(line, "---") || strstr(line, "| stage |"))
			continue;
		/* | name | host | from | to | stand-in | */
		assert_true(sscanf(line, "| %63s | %31s | %31s | %31s | %63[^|]", name, host, from, to, alt) >= 4);
		s = nt_stage_by_name(name);
		assert_true(s >= 0);
		d = &nt_spans[s];
		seen |= 1u << s;
		rows++;
		if (s == NT_ST_NETWORK) {
			assert_string_equal(host, "both");
			assert_string_equal(from, nt_stage_name(NT_ST_REMOTE));
			assert_string_equal(to, nt_stage_name(NT_ST_TARGET_RES));
			continue;
		}
		assert_string_equal(host, d->role == NTBPF_ROLE_INITIATOR ? "initiator" : "target");
		assert_string_equal(from, nt_ev_name(d->role, d->from));
		assert_string_equal(to, nt_ev_name(d->role, d->to));
		if (d->alt_from >= 0) {
			char want[64];

			snprintf(want, sizeof(want), "from: %s", nt_ev_name(d->role, d->alt_from));
			assert_non_null(strstr(alt, want));
		}
		if (d->alt_to >= 0) {
			char want[64];

			snprintf(want, sizeof(want), "to: %s", nt_ev_name(d->role, d->alt_to));
			assert_non_null(strstr(alt, want));
		}
		if (d->alt_from < 0 && d->alt_to < 0)
			assert_null(strstr(alt, ":"));
	}
	fclose(f);
	assert_int_equal(rows, NT_ST_NR);
	assert_int_equal(seen, (1u << NT_ST_NR) - 1);
}

/* each host's stages have their own slot in a summary (struct nt_sum), and network none */
static void test_sum_slots(void **state)
{
	for (int role = NTBPF_ROLE_INITIATOR; role <= NTBPF_ROLE_TARGET; role++) {
		uint32_t used = 0;

		for (int s = 0; s < NT_ST_NR; s++) {
			if (nt_spans[s].role != role)
				continue;
			assert_true(nt_sum_slot[s] >= 0 && nt_sum_slot[s] < NT_SUM_V);
			assert_false(used & (1u << nt_sum_slot[s]));
			used |= 1u << nt_sum_slot[s];
		}
	}
	assert_int_equal(nt_spans[NT_ST_NETWORK].role, 0);
	assert_int_equal(nt_sum_slot[NT_ST_NETWORK], -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sum_slots),
		cmocka_unit_test(test_init_only_stages),
		cmocka_unit_test(test_matched_ten_stages_sum),
		cmocka_unit_test(test_report_full_breakdown),
		cmocka_unit_test(test_r2t_write_sums),
		cmocka_unit_test(test_negative_network_left_out),
		cmocka_unit_test(test_block_only),
		cmocka_unit_test(test_no_start_stamp),
		cmocka_unit_test(test_out_of_order_is_not_a_value),
		cmocka_unit_test(test_host_stages_equal_stage_of),
		cmocka_unit_test(test_kernel_buckets),
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_table_views_agree),
		cmocka_unit_test(test_table_sets),
		cmocka_unit_test(test_doc_agrees),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
