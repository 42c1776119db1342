// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * test_diagnose - ntbpf report --diagnose's rules (src/diagnose.c,
 * docs/diagnose.md) on synthetic two-host recordings: each rule on data
 * that provokes it, and a control that must not (the same load without the
 * cause, or with the cause's other half missing).  The records go through
 * the report's pairing and grouping (nt_report_build), as in ntbpf report.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "diagnose.h"
#include "report.h"
#include "testapi.h"
#include "../../bench/synth.h"

#define N 2000

/* one recording's shape: stage lengths in ns (each I/O alike), queues, depth */
struct shape {
	uint32_t blk_sub, sub, net, nstack_sub, nvmet_sub, tsub, nvmet_comp, nstack_comp, nvme_comp, blk_comp;
	int nq;			/* I/O queues */
	int hot;		/* > 0: this percentage of I/Os go to queue 1, the rest round-robin */
	int busy;		/* > 0: the I/Os go to queues 1..busy only; the header lists the others with
				 * nothing known, as the recorder lists the queues no I/O went to */
	bool one_cpu;		/* every queue's io_work on CPU 0 (else queue q on CPU q) */
	int depth;		/* initiator depth: 1 + k % depth */
	int deep;		/* > 0: queue 1's I/Os at this depth */
	uint32_t slow1;		/* queue 1's nvme_tcp_submission longer by this (its io_cpu busy) */
	uint32_t sub_per_depth;	/* nvme_tcp_submission grows by this per request in flight */
	int tdepth;		/* target depth: 1 + k % tdepth */
	uint32_t tsub_per_depth;
};

static const struct shape base = {
	.blk_sub = 1000, .sub = 5000, .net = 10000, .nstack_sub = 5000, .nvmet_sub = 5000, .tsub = 20000,
	.nvmet_comp = 5000, .nstack_comp = 5000, .nvme_comp = 2000, .blk_comp = 1000,
	.nq = 4, .depth = 2, .tdepth = 2,
};

static void header(struct nt_header *h, int role, const struct shape *sh)
{
	struct nt_ctrl_info *c = synth_header(h, role);

	for (int q = 1; c && q <= sh->nq; q++) {
		struct nt_queue_info *qi = nt_ctrl_add_queue(c);

		assert_non_null(qi);
		qi->qid = q;
		qi->io_cpu = sh->busy && q > sh->busy ? -1 : sh->one_cpu ? 0 : q - 1;
	}
}

/* diagnose(): 0 both hosts' files, else only the target's; its text block and scope line (malloc'd) */
static int only_target;
static char *last_text;

/* the findings of a recording of this shape (both hosts, or only_target) */
static int diagnose(const struct shape *sh, struct nt_finding *f, size_t nrec, const char **why)
{
	static struct ntbpf_rec ri[N], rt[N];
	struct nt_report_opts o = { .version = "test", .npcts = 1, .pcts = { 50 }, .format = NT_FMT_TEXT,
				    .group_by = NT_GB_OP | NT_GB_QUEUE, .diagnose = true };
	struct nt_input in[2];
	struct nt_report rep;
	struct synth s;
	int n;

	assert_true(nrec <= N);
	memset(in, 0, sizeof(in));
	header(&in[0].hdr, NTBPF_ROLE_INITIATOR, sh);
	header(&in[1].hdr, NTBPF_ROLE_TARGET, sh);
	synth_init(&s);
	for (size_t k = 0; k < nrec; k++) {
		struct ntbpf_rec *i = &ri[k], *g = &rt[k];
		uint16_t q = sh->busy ? k % sh->busy : sh->hot && (int)(k % 100) < sh->hot ? 0 : k % sh->nq;
		uint16_t d = sh->deep && q == 0 ? (size_t)sh->deep : 1 + k % sh->depth, td = 1 + (k / 3) % sh->tdepth;
		const int64_t off = 7777777;	/* synth.h: the target's clock ahead */
		uint64_t t, qrq, sent, arr, pick, exec, done, rs, back, proc, nd;

		synth_pair(&s, k, i, g);
		i->qid = g->qid = q + 1;
		i->port = g->port = 40000 + q;
		i->cid = g->cid = k & 0xfff;
		i->depth = d;
		g->depth = td;
		t = i->t0;
		qrq = t + sh->blk_sub;
		sent = qrq + sh->sub + sh->sub_per_depth * d + (q == 0 ? sh->slow1 : 0);
		arr = sent + sh->net;
		pick = arr + sh->nstack_sub;
		exec = pick + sh->nvmet_sub;
		done = exec + sh->tsub + sh->tsub_per_depth * td;
		rs = done + sh->nvmet_comp;
		back = rs + sh->net;
		proc = back + sh->nstack_comp;
		nd = proc + sh->nvme_comp;
		memset(i->ev, 0, sizeof(i->ev));
		memset(g->ev, 0, sizeof(g->ev));
		i->ev_mask = g->ev_mask = 0;
		synth_set(i, EV_I_BLK_START, t);
		synth_set(i, EV_I_BLK_ISSUE, qrq + 100);
		synth_set(i, EV_I_QUEUE_RQ, qrq);
		synth_set(i, EV_I_CMD_SENT, sent);
		synth_set(i, EV_I_RESP_ARRIVE, back);
		synth_set(i, EV_I_RESP_PROC, proc);
		synth_set(i, EV_I_NVME_DONE, nd);
		synth_set(i, EV_I_BLK_DONE, nd + sh->blk_comp);
		g->t0 = arr + off;
		synth_set(g, EV_T_CMD_ARRIVE, arr + off);
		synth_set(g, EV_T_CMD_PICKUP, pick + off);
		synth_set(g, EV_T_REQ_INIT, pick + off + 100);
		synth_set(g, EV_T_EXEC, exec + off);
		synth_set(g, EV_T_SUBSYS_DONE, done + off);
		synth_set(g, EV_T_RESP_QUEUED, done + off + 100);
		synth_set(g, EV_T_RESP_SENT, rs + off);
	}
	in[0].path = "init.ntbpf";
	in[1].path = "tgt.ntbpf";
	in[0].recs = ri;
	in[0].n = nrec;
	in[1].recs = rt;
	in[1].n = nrec;
	assert_int_equal(nt_report_build(&rep, only_target ? &in[1] : in, only_target ? 1 : 2, &o), 0);
	if (!only_target)
		assert_int_equal(rep.matched, nrec);	/* the shapes pair as a recording does */
	n = nt_diagnose(&rep, f, NT_MAX_FINDINGS, why);
	{
		size_t len = 0;
		FILE *m;

		free(last_text);	/* the run before's */
		last_text = NULL;
		m = open_memstream(&last_text, &len);

		assert_non_null(m);
		nt_diagnose_print_text(m, &rep);
		fclose(m);
	}
	if (getenv("NTBPF_TEST_VERBOSE"))
		for (int i = 0; i < n; i++)
			printf("  %s: %s\n", f[i].kind, f[i].evidence);
	nt_report_free(&rep);
	nt_header_free(&in[0].hdr);
	nt_header_free(&in[1].hdr);
	return n;
}

/* s contains what (fails the test if s is NULL) */
static __attribute__((noinline)) bool has(const char *s, const char *what)
{
	if (!s)
		fail();
	return strstr(s, what) != NULL;
}

static const struct nt_finding *find(const struct nt_finding *f, int n, const char *kind)
{
	for (int i = 0; i < n; i++)
		if (!strcmp(f[i].kind, kind))
			return &f[i];
	return NULL;
}

/* the findings of the last run() */
static struct nt_finding last[NT_MAX_FINDINGS];
static int nlast;

/* diagnose a recording of shape sh; its finding of kind (NULL: none) */
static const struct nt_finding *run(const struct shape *sh, const char *kind)
{
	nlast = diagnose(sh, last, N, NULL);
	return find(last, nlast, kind);
}

/* the last run() found kind */
static bool found(const char *kind)
{
	return find(last, nlast, kind) != NULL;
}

static void test_nothing_stands_out(void **state)
{
	struct nt_finding f[NT_MAX_FINDINGS];
	const char *why;

	assert_int_equal(diagnose(&base, f, N, &why), 0);
	assert_string_equal(why, "");
	/* too few I/Os: none, and why */
	assert_int_equal(diagnose(&base, f, 50, &why), 0);
	assert_true(has(why, "too few I/Os"));
}

static void test_too_few_queues(void **state)
{
	const struct nt_finding *x;
	struct shape sh = base;

	/* one queue, 1..32 in flight, each request waiting 10 us behind each other one */
	sh.nq = 1;
	sh.depth = 32;
	sh.sub_per_depth = 10000;
	x = run(&sh, "too_few_queues");
	assert_non_null(x);
	assert_string_equal(x->stage, "nvme_tcp_submission");
	assert_true(has(x->evidence, "with a mean depth of 16.4 requests per queue (1 I/O queue)"));
	assert_true(has(x->evidence, "(x8.0: it grows with the depth)"));
	assert_true(has(x->advice, "nvme connect -i"));
	assert_false(found("initiator_cpu"));	/* the same stages: explained by the queue */
	/* control: two queues, 1-2 in flight, no waiting */
	sh = base;
	sh.nq = 2;
	assert_null(run(&sh, "too_few_queues"));
	/* a queue that stays full: as long a wait at every depth (the lab's 2 jobs x QD16 on 1 queue) */
	sh = base;
	sh.nq = 1;
	sh.depth = 32;
	sh.sub = 175000;
	x = run(&sh, "too_few_queues");
	assert_non_null(x);
	assert_false(has(x->evidence, "it grows"));
	/* control: as deep, but submission short (16 % of end_to_end: below 20 %) */
	sh.sub = 12000;
	assert_null(run(&sh, "too_few_queues"));
	/* control: submission as long, with 1-2 requests per queue (the CPU, not the queue) */
	sh.sub = 175000;
	sh.depth = 2;
	assert_null(run(&sh, "too_few_queues"));
	assert_true(found("initiator_cpu"));
}

static void test_queue_imbalance(void **state)
{
	const struct nt_finding *x;
	struct shape sh = base;

	sh.hot = 70;	/* 70 % + a quarter of the rest on queue 1 of 4: 77.5 % */
	x = run(&sh, "queue_imbalance");
	assert_non_null(x);
	assert_true(has(x->evidence, "queue 1 carries 77% of the I/Os of 4 queues (1540 of 2000; even: 25%)"));
	/* every queue's io_work on one CPU */
	sh = base;
	sh.one_cpu = true;
	x = run(&sh, "queue_imbalance");
	assert_non_null(x);
	assert_true(has(x->evidence, "all 4 queues' io_work runs on CPU 0"));
	/* control: round-robin over 4 queues on 4 CPUs (base) */
	assert_null(run(&base, "queue_imbalance"));
	/* every I/O on queue 1 of 2: the idle queue has no group, only the header's entry
	 * (the lab's fio pinned to one CPU of two); controls: the controller's only queue, and
	 * both queues busy */
	{
		static const struct { int nq, busy; bool fires; } c[] = { { 2, 1, true }, { 1, 1, false },
									    { 2, 2, false } };

		for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
			sh = base;
			sh.nq = c[i].nq;
			sh.busy = c[i].busy;
			x = run(&sh, "queue_imbalance");
			assert_int_equal(x != NULL, c[i].fires);
		}
		sh.nq = 2;
		sh.busy = 1;
		assert_true(has(run(&sh, "queue_imbalance")->evidence,
				"queue 1 carries 100% of the I/Os of 2 queues (2000 of 2000; even: 50%)"));
	}
	/* I/Os even over 2 queues, queue 1 holding 8 requests and the wait that goes with them */
	sh = base;
	sh.nq = 2;
	sh.sub = 1000;
	sh.deep = 8;
	sh.sub_per_depth = 5000;
	x = run(&sh, "queue_imbalance");
	assert_non_null(x);
	assert_string_equal(x->stage, "nvme_tcp_submission");
	assert_true(has(x->evidence, "queue 1 holds 79% of the nvme_tcp_submission wait of 2 queues (even: 50%), "
				     "with a mean depth of 8.0 requests against 2.0 on the others"));
	/* control: as much more wait on queue 1, at the others' depth (its io_cpu, not its load:
	 * the lab's split run, one job per queue) */
	sh.deep = 0;
	sh.sub_per_depth = 0;
	sh.slow1 = 35000;
	assert_null(run(&sh, "queue_imbalance"));
}

static void test_target_device(void **state)
{
	const struct nt_finding *x;
	struct shape sh = base;

	sh.tdepth = 16;
	sh.tsub_per_depth = 30000;	/* a device that queues: 30 us more per request in flight */
	x = run(&sh, "target_device");
	assert_non_null(x);
	assert_string_equal(x->stage, "target_subsystem");
	assert_true(has(x->evidence, "it queues in the device"));
	assert_false(found("network"));
	assert_false(found("target_cpu"));
	/* control: the same depths, a fast device */
	sh.tsub_per_depth = 0;
	assert_null(run(&sh, "target_device"));
}

static void test_target_cpu(void **state)
{
	const struct nt_finding *x;
	struct shape sh = base;

	sh.nstack_sub = 100000;
	sh.nvmet_sub = 50000;
	sh.nvmet_comp = 50000;
	x = run(&sh, "target_cpu");
	assert_non_null(x);
	assert_true(has(x->evidence, "means 100.0 + 50.0 + 50.0 of"));
	assert_false(found("target_device"));
	/* control: 15 + 7 + 7 us (36 %) */
	sh.nstack_sub = 15000;
	sh.nvmet_sub = 7000;
	sh.nvmet_comp = 7000;
	assert_null(run(&sh, "target_cpu"));
}

static void test_network(void **state)
{
	const struct nt_finding *x;
	struct shape sh = base;

	sh.net = 200000;	/* 200 us each way: netem, distance */
	x = run(&sh, "network");
	assert_non_null(x);
	assert_string_equal(x->stage, "network_transmission");
	assert_true(has(x->evidence, "the base round trip, is 400.0 us: the round trip itself is long"));
	assert_int_equal(nlast, 1);
	/* control: 15 us each way (38 %) */
	sh.net = 15000;
	assert_null(run(&sh, "network"));
}

static void test_initiator_cpu(void **state)
{
	const struct nt_finding *x;
	struct shape sh = base;

	sh.blk_sub = 30000;
	sh.nstack_comp = 100000;
	sh.nvme_comp = 50000;
	x = run(&sh, "initiator_cpu");
	assert_non_null(x);
	assert_true(has(x->advice, "io_cpu"));
	assert_false(found("too_few_queues"));
	/* control: a tenth of that */
	sh.blk_sub = 3000;
	sh.nstack_comp = 10000;
	sh.nvme_comp = 5000;
	assert_null(run(&sh, "initiator_cpu"));
}

/* the report as nt_report_print writes it (the caller frees) */
static char *printed(const struct nt_report *rep)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&buf, &len);

	assert_non_null(m);
	nt_report_print(m, rep);
	fclose(m);
	if (!buf)
		fail();
	return buf;
}

/* an initiator-only recording whose I/O ends resp_arrive, resp_proc, nvme_done, blk_done ns after t0 */
static void init_ends(struct ntbpf_rec *ri, uint64_t arrive, uint64_t proc, uint64_t done, uint64_t blk)
{
	for (size_t k = 0; k < N; k++) {
		synth_set(&ri[k], EV_I_RESP_ARRIVE, ri[k].t0 + arrive);
		synth_set(&ri[k], EV_I_RESP_PROC, ri[k].t0 + proc);
		synth_set(&ri[k], EV_I_NVME_DONE, ri[k].t0 + done);
		synth_set(&ri[k], EV_I_BLK_DONE, ri[k].t0 + blk);
	}
}

/* the JSON findings array and the HTML block, through the report's printer */
static void test_json(void **state)
{
	static struct ntbpf_rec ri[N];
	struct nt_report_opts o = { .version = "test", .npcts = 1, .pcts = { 50 }, .format = NT_FMT_JSON,
				    .group_by = NT_GB_QUEUE, .diagnose = true };
	struct nt_input in[1];
	struct nt_report rep;
	struct synth s;
	char *buf;

	memset(in, 0, sizeof(in));
	header(&in[0].hdr, NTBPF_ROLE_INITIATOR, &base);
	synth_init(&s);
	for (size_t k = 0; k < N; k++) {
		struct ntbpf_rec g;

		synth_pair(&s, k, &ri[k], &g);
	}
	in[0].path = "init.ntbpf";
	in[0].recs = ri;
	in[0].n = N;
	/* 2 ms between the command sent and the response: remote dominates, which no rule names */
	init_ends(ri, 2000000, 2003000, 2004000, 2005000);
	assert_int_equal(nt_report_build(&rep, in, 1, &o), 0);
	buf = printed(&rep);
	assert_true(has(buf, "\"findings\": []}"));
	/* what the initiator's file alone cannot see, and how much of end_to_end that is */
	assert_true(has(buf, "\"diagnosis_scope\": \"seen from the initiator only: not seen apart: nstack_submission, "
			"nvmet_tcp_submission, target_subsystem, nvmet_tcp_completion, network_transmission; together "
			"they are remote, 99% of end_to_end"));
	free(buf);
	nt_report_free(&rep);
	/* one side's stages are enough for initiator_cpu */
	init_ends(ri, 100000, 1500000, 1600000, 1700000);
	assert_int_equal(nt_report_build(&rep, in, 1, &o), 0);
	buf = printed(&rep);
	assert_true(has(buf, "\"findings\": [\n  {\"kind\": \"initiator_cpu\", \"stage\": \"blk_submission+"));
	assert_true(has(buf, "\"evidence\": \"the initiator's own stages are "));
	assert_true(has(buf, "\"advice\": \"the initiator's CPUs"));
	free(buf);
	/* the HTML report: the findings under its head */
	o.format = NT_FMT_HTML;
	buf = printed(&rep);
	assert_true(has(buf, "<pre class=\"diagnosis\">\ndiagnosis:\n  initiator_cpu (blk_submission+"));
	free(buf);
	nt_report_free(&rep);
	nt_header_free(&in[0].hdr);
}

/*
 * One host's files: the shares are of what that host sees, named so, and
 * the diagnosis says what it cannot see (issue 30: the target alone said
 * "89 % of end_to_end" of target_residence's mean, and named the target
 * where both hosts' files name the network).
 */
static void test_one_host(void **state)
{
	struct shape sh = base;
	const struct nt_finding *x;
	const char *why;

	sh.net = 100000;	/* 100 us each way: the network dominates */
	nlast = diagnose(&sh, last, N, &why);
	x = find(last, nlast, "network");
	assert_non_null(x);
	assert_true(has(x->evidence, "% of end_to_end"));
	assert_false(has(last_text, "seen from"));
	/* the target's file alone: 20 of its 35 us are target_subsystem */
	only_target = 1;
	nlast = diagnose(&sh, last, N, &why);
	only_target = 0;
	assert_null(find(last, nlast, "network"));
	x = find(last, nlast, "target_device");
	assert_non_null(x);
	assert_true(has(x->evidence, "target_subsystem is 57% of target_residence (mean 20.0 of 35.0 us)"));
	for (int i = 0; i < nlast; i++)
		assert_false(has(last[i].evidence, "end_to_end"));
	assert_true(has(last_text, "\n  seen from the target only: shares are of target_residence, the target's part "
			"of each I/O, not of end_to_end (a finding says what dominates the target's part, not the I/O); "
			"not seen: blk_submission, nvme_tcp_submission, "
			"network_transmission, nstack_completion, nvme_tcp_completion, blk_completion"));
}

/*
 * Where the time goes, ranked, whether a rule fires or not, and the rule
 * nearest to firing (issue 30: a two-host run whose network took 40 % of
 * every I/O, with 24 requests on one queue, said only "nothing stands out").
 */
static void test_where_time_goes(void **state)
{
	struct shape sh = base;
	const char *why;

	sh.net = 25000;		/* 50 us of 115: 43 % */
	sh.sub = 21000;		/* 18 %: below too_few_queues' 20 % */
	sh.nq = 1;
	sh.depth = 47;		/* 24 requests in flight on the one queue */
	nlast = diagnose(&sh, last, N, &why);
	if (getenv("NTBPF_TEST_VERBOSE"))
		printf("%s", last_text);
	assert_int_equal(nlast, 0);
	assert_true(has(last_text, "diagnosis: nothing stands out"));
	assert_true(has(last_text, "\n  where the time goes (share of end_to_end's mean, largest first): "
			"network_transmission 43% (50.0 us), nvme_tcp_submission 18% (21.0 us; mean depth 23."));
	assert_true(has(last_text, "\n  closest rule: too_few_queues: nvme_tcp_submission is 18% of end_to_end (it "
			"fires at 20%) at a mean depth of 23."));
	/* a rule that fires: the ranking still follows it, no "closest" */
	sh.net = 60000;
	nlast = diagnose(&sh, last, N, &why);
	assert_non_null(find(last, nlast, "network"));
	assert_true(has(last_text, "\n  where the time goes (share of end_to_end's mean, largest first): "
			"network_transmission "));
	assert_false(has(last_text, "closest rule"));
}

/* ---- interference: two hosts on one target (issue 33) ---- */

#define NQN_A "nqn.2014-08.org.nvmexpress:uuid:aaaaaaaa-0000-0000-0000-000000000001"
#define NQN_B "nqn.2014-08.org.nvmexpress:uuid:bbbbbbbb-0000-0000-0000-000000000002"
#define SUBSYS "nqn.2024-01.io.ntbpf:lab"
#define N2 20000

/*
 * Host A reads 4k at QD1, one I/O every a_every_us; host B writes 128k,
 * one every 500 us while it is on: from b_from_ms, on_ms on then off_ms off,
 * over and over.  Both controllers' queue 1 (the same qid and command ids).
 * A's target_subsystem takes extra_us more while B is on (the interference).
 */
struct two {
	int span_ms;
	int a_every_us;
	int on_ms, off_ms;	/* B's pattern; on_ms 0: B never runs */
	int b_from_ms;		/* B's first I/O */
	int a_until_ms;		/* > 0: A stops then (one at a time, with b_from_ms after it) */
	uint32_t extra_us;	/* A's target_subsystem longer while B is on */
	int extra_period_ms;	/* > 0: the extra follows its own on/off pattern instead (not B's) */
	bool b_apart;		/* B's namespace 2 (another device) and io CPU 1 (A's: namespace 1, CPU 0) */
	bool a_twice;		/* A issues twice as often while B is on (A's own load grows with B's) */
	bool target_only;	/* the target's file alone */
	bool init_only;		/* the initiator's file alone */
	int stray_s;		/* > 0: one more I/O of A this many seconds after the rest */
	int b_every_us;		/* B's I/O every this many us while on (0: 500) */
};

static void two_header(struct nt_header *h, int role, const struct two *t)
{
	nt_header_init(h, role);
	snprintf(h->hostname, sizeof(h->hostname), role == NTBPF_ROLE_TARGET ? "bench-target" : "bench-initiator");
	snprintf(h->boot_id, sizeof(h->boot_id), role == NTBPF_ROLE_TARGET ? "t" : "i");
	h->mono_ns = 1000000000ull;
	h->real_ns = 1700000000000000000ull;
	h->sample = 1;
	for (int k = 0; k < 2; k++) {
		struct nt_ctrl_info *c = nt_header_add_ctrl(h);
		struct nt_queue_info *q;

		assert_non_null(c);
		c->instance = role == NTBPF_ROLE_TARGET ? -1 : k;
		c->cntlid = k + 1;
		snprintf(c->transport, sizeof(c->transport), "tcp");
		snprintf(c->subsysnqn, sizeof(c->subsysnqn), SUBSYS);
		snprintf(c->hostnqn, sizeof(c->hostnqn), "%s", k ? NQN_B : NQN_A);
		q = nt_ctrl_add_queue(c);
		assert_non_null(q);
		q->qid = 1;
		q->io_cpu = k && t->b_apart ? 1 : 0;
	}
}

static bool b_on(const struct two *t, uint64_t us)
{
	uint64_t ms = us / 1000;

	return t->on_ms && ms >= (uint64_t)t->b_from_ms && (ms - t->b_from_ms) % (t->on_ms + t->off_ms) < (uint64_t)t->on_ms;
}

/* one I/O of host b (0: A, 1: B) at us into ri/rt, its target stages from the shape */
static void two_io(struct ntbpf_rec *i, struct ntbpf_rec *g, int b, uint64_t us, uint16_t cid, uint32_t tsub,
		   const struct two *t)
{
	const int64_t off = 7777777;
	uint64_t t0 = 2000000000ull + us * 1000, sent = t0 + 3000, arr = sent + 10000, pick = arr + 5000,
		 exec = pick + 5000, done = exec + tsub, rs = done + 5000, back = rs + 10000, nd = back + 7000;

	memset(i, 0, sizeof(*i));
	memset(g, 0, sizeof(*g));
	i->role = NTBPF_ROLE_INITIATOR;
	g->role = NTBPF_ROLE_TARGET;
	i->flags = g->flags = NTBPF_F_NVME;
	i->op = g->op = b ? NTBPF_OP_WRITE : NTBPF_OP_READ;
	i->opcode = g->opcode = b ? 1 : 2;
	i->bytes = g->bytes = b ? 131072 : 4096;
	i->dev = 259u << 20 | b;
	g->dev = b && t->b_apart ? 2 : 1;	/* the target's: its nsid */
	i->ctrl = b;				/* nvme0, nvme1 */
	g->ctrl = b + 1;			/* cntlid 1, 2 */
	i->qid = g->qid = 1;
	i->port = g->port = 40000 + b;
	i->cid = g->cid = cid;
	i->t0 = t0;
	synth_set(i, EV_I_BLK_START, t0);
	synth_set(i, EV_I_BLK_ISSUE, t0 + 1100);
	synth_set(i, EV_I_QUEUE_RQ, t0 + 1000);
	synth_set(i, EV_I_CMD_SENT, sent);
	synth_set(i, EV_I_RESP_ARRIVE, back);
	synth_set(i, EV_I_RESP_PROC, back + 5000);
	synth_set(i, EV_I_NVME_DONE, nd);
	synth_set(i, EV_I_BLK_DONE, nd + 1000);
	g->t0 = arr + off;
	synth_set(g, EV_T_CMD_ARRIVE, arr + off);
	synth_set(g, EV_T_CMD_PICKUP, pick + off);
	synth_set(g, EV_T_REQ_INIT, pick + off + 100);
	synth_set(g, EV_T_EXEC, exec + off);
	synth_set(g, EV_T_SUBSYS_DONE, done + off);
	synth_set(g, EV_T_RESP_QUEUED, done + off + 100);
	synth_set(g, EV_T_RESP_SENT, rs + off);
}

/* the findings of a two-host recording of shape t; its text (last_text) and JSON (*json, malloc'd, if json) */
static int two_hosts(const struct two *t, struct nt_finding *f, char **json)
{
	static struct ntbpf_rec ri[N2], rt[N2];
	struct nt_report_opts o = { .version = "test", .npcts = 1, .pcts = { 50 }, .format = NT_FMT_TEXT,
				    .group_by = NT_GB_OP | NT_GB_QUEUE, .diagnose = true };
	struct nt_input in[2];
	struct nt_report rep;
	uint64_t a_next = 0, b_next = t->on_ms ? (uint64_t)t->b_from_ms * 1000 : UINT64_MAX;
	uint16_t cid[2] = { 0, 0 };
	size_t n = 0;
	int nf;

	memset(in, 0, sizeof(in));
	two_header(&in[0].hdr, NTBPF_ROLE_INITIATOR, t);
	two_header(&in[1].hdr, NTBPF_ROLE_TARGET, t);
	/* the two hosts' I/Os in the order they start */
	while (n < N2) {
		bool a_turn = a_next <= b_next;
		uint64_t us = a_turn ? a_next : b_next;
		bool on = b_on(t, us), extra;

		if (us >= (uint64_t)t->span_ms * 1000)
			break;
		extra = t->extra_period_ms ? (us / 1000 / t->extra_period_ms) % 2 == 1 : on;
		if (a_turn) {
			if (!t->a_until_ms || us < (uint64_t)t->a_until_ms * 1000)
				two_io(&ri[n], &rt[n], 0, us, cid[0]++ & 0xfff, 20000 + (extra ? t->extra_us * 1000 : 0), t),
					n++;
			a_next += t->a_twice && on ? t->a_every_us / 2 : t->a_every_us;
		} else {
			if (on)
				two_io(&ri[n], &rt[n], 1, us, cid[1]++ & 0xfff, 100000, t), n++;
			b_next += t->b_every_us ? t->b_every_us : 500;
		}
	}
	if (t->stray_s && n < N2) {
		two_io(&ri[n], &rt[n], 0, (uint64_t)(t->span_ms + 1000 * t->stray_s) * 1000, cid[0]++ & 0xfff, 20000, t);
		n++;
	}
	in[0].path = "init.ntbpf";
	in[1].path = "tgt.ntbpf";
	in[0].recs = ri;
	in[1].recs = rt;
	in[0].n = in[1].n = n;
	assert_int_equal(nt_report_build(&rep, t->target_only ? &in[1] : in, t->target_only || t->init_only ? 1 : 2, &o),
			 0);
	if (!t->target_only && !t->init_only)
		assert_int_equal(rep.matched, n);	/* the same qids and cids, told apart by connection */
	nf = nt_diagnose(&rep, f, NT_MAX_FINDINGS, NULL);
	free(last_text);
	last_text = printed(&rep);
	if (json) {
		o.format = NT_FMT_JSON;
		*json = printed(&rep);
	}
	if (getenv("NTBPF_TEST_VERBOSE"))
		printf("%s", last_text);
	nt_report_free(&rep);
	nt_header_free(&in[0].hdr);
	nt_header_free(&in[1].hdr);
	return nf;
}

/* B on 200 ms, off 200 ms over 2 s; A every ms, its target_subsystem 60 us longer while B is on */
static const struct two two_base = { .span_ms = 2000, .a_every_us = 1000, .on_ms = 200, .off_ms = 200,
				     .b_from_ms = 100, .extra_us = 60 };

static void test_interference(void **state)
{
	struct nt_finding f[NT_MAX_FINDINGS];
	const struct nt_finding *x;
	struct two t = two_base;
	char *json;
	int n = two_hosts(&t, f, &json);

	x = find(f, n, "interference");
	assert_non_null(x);
	assert_true(x->has_interference);
	assert_string_equal(x->in.victim, NQN_A);
	assert_string_equal(x->in.cause, NQN_B);
	/* 2 s in windows of 100 ms: B busy in half */
	assert_true(x->in.width_ms == 100);
	assert_true(x->in.loaded == 10 && x->in.idle >= 9);
	/* A's target stages: 30 us idle, 90 us while B writes */
	assert_true(x->in.victim_idle_us > 29.9 && x->in.victim_idle_us < 30.1);
	assert_true(x->in.victim_loaded_us > 89.9 && x->in.victim_loaded_us < 90.1);
	/* B's load in its busy windows: 2000 IOPS of 128 KiB */
	assert_true(x->in.cause_iops > 1900 && x->in.cause_iops <= 2000);
	assert_true(x->in.cause_mbps > 249 && x->in.cause_mbps < 263);
	assert_true(x->in.sep > 0.99);	/* every busy window longer than every idle one */
	assert_true(has(x->in.shared, "namespace 1 of " SUBSYS " and the io CPU 0"));
	assert_true(has(x->evidence, "host " NQN_A "'s target stages take 90.0 us"));
	assert_true(has(x->evidence, "where host " NQN_B " was busy, 30.0 us in the"));
	assert_true(has(x->advice, "another device"));
	/*
	 * each host's queues on their own: one queue each (both on CPU 0) is no
	 * queue_imbalance (with the two hosts' queues taken together: "all 2
	 * queues' io_work runs on CPU 0")
	 */
	assert_null(find(f, n, "queue_imbalance"));
	/* B is nobody's victim: A never idles */
	for (int i = 0; i < n; i++)
		assert_false(!strcmp(f[i].kind, "interference") && !strcmp(f[i].in.victim, NQN_B));
	/* text and JSON */
	assert_true(has(last_text, "\n  interference (nvmet_tcp_submission+target_subsystem+nvmet_tcp_completion)\n"
			"    evidence: host " NQN_A "'s target stages take 90.0 us"));
	assert_false(has(last_text, "\n  interference: "));	/* no note when it fired */
	assert_true(has(json, "{\"kind\": \"interference\", \"stage\": \"nvmet_tcp_submission+target_subsystem+"
			"nvmet_tcp_completion\", \"evidence\": "));
	assert_true(has(json, "\"victim\": \"" NQN_A "\", \"cause\": \"" NQN_B "\", \"shared\": \"namespace 1 of "));
	assert_true(has(json, "\"windows\": {\"width_ms\": 100.000, \"busy\": "));
	assert_true(has(json, "\"victim_target_us\": {\"busy\": 90.000, \"idle\": 30.000}"));
	assert_false(has(json, "\"interference_note\""));
	free(json);
	/* the target's file alone holds all it needs */
	t.target_only = true;
	n = two_hosts(&t, f, NULL);
	x = find(f, n, "interference");
	assert_non_null(x);
	assert_string_equal(x->in.victim, NQN_A);
	/* a smaller effect, still x1.5: fires; below x1.5: not, and the note says by how much */
	t = two_base;
	t.extra_us = 16;
	n = two_hosts(&t, f, NULL);
	assert_non_null(find(f, n, "interference"));
	t.extra_us = 14;
	n = two_hosts(&t, f, &json);
	assert_null(find(f, n, "interference"));
	assert_true(has(last_text, "\n  interference: host " NQN_A "'s target stages x1.47 (44.0 vs 30.0 us) in the "
			"windows where host " NQN_B " was busy (it fires at x1.5 and +5 us)"));
	assert_true(has(json, "\"interference_note\": \"host " NQN_A "'s target stages x1.47"));
	free(json);
}

static void test_interference_controls(void **state)
{
	struct nt_finding f[NT_MAX_FINDINGS];
	struct two t = two_base;
	int n;

	/* no interference: B's load comes and goes, A's target stages stay */
	t.extra_us = 0;
	n = two_hosts(&t, f, NULL);
	assert_null(find(f, n, "interference"));
	assert_true(has(last_text, "\n  interference: host " NQN_A "'s target stages x1.00"));
	/* one at a time: A reads for 1 s, B writes after it: never busy in A's windows */
	t = two_base;
	t.a_until_ms = 1000;
	t.b_from_ms = 1000;
	t.off_ms = 0;
	n = two_hosts(&t, f, NULL);
	assert_null(find(f, n, "interference"));
	assert_true(has(last_text, "\n  interference: host " NQN_A " had 0 windows of 100 ms while host " NQN_B
			" was busy and "));
	assert_true(has(last_text, "the two hosts' loads did not both vary in time"));
	/* A's stages grow on a pattern of their own (every other 300 ms), not B's */
	t = two_base;
	t.extra_period_ms = 300;
	n = two_hosts(&t, f, NULL);
	assert_null(find(f, n, "interference"));
	/* apart: B on another namespace and io CPU; A slower while B writes, but they share nothing ntbpf sees */
	t = two_base;
	t.b_apart = true;
	n = two_hosts(&t, f, NULL);
	assert_null(find(f, n, "interference"));
	assert_true(has(last_text, "\n  interference: no two of the 2 hosts share a namespace or an io CPU"));
	/* A's own load doubles while B is on: its own, not B's */
	t = two_base;
	t.a_twice = true;
	n = two_hosts(&t, f, NULL);
	assert_null(find(f, n, "interference"));
	assert_true(has(last_text, "its own rate x2.00 (at most x1.50)"));
}

static void test_interference_edges(void **state)
{
	struct nt_finding f[NT_MAX_FINDINGS];
	struct two t = two_base;
	int n;

	/* one host only: no finding, nothing to say */
	t.on_ms = 0;
	n = two_hosts(&t, f, NULL);
	assert_null(find(f, n, "interference"));
	assert_false(has(last_text, "interference"));
	/* no target records: nothing in the windows (the scope line says the target is not seen) */
	t = two_base;
	t.init_only = true;
	n = two_hosts(&t, f, NULL);
	assert_null(find(f, n, "interference"));
	assert_false(has(last_text, "interference"));
	assert_true(has(last_text, "seen from the initiator only"));
	/* too few windows: 500 ms (5 windows of 100 ms), B on for the middle 200 (half of 2 windows: busy) */
	t = two_base;
	t.span_ms = 500;
	t.b_from_ms = 150;
	t.on_ms = 200;
	t.off_ms = 10000;
	t.a_every_us = 2000;
	n = two_hosts(&t, f, NULL);
	assert_null(find(f, n, "interference"));
	assert_true(has(last_text, "\n  interference: host " NQN_A " had 3 windows of 100 ms while host " NQN_B
			" was busy and 2 while it was idle"));
	/* a stray I/O a minute after the rest (the lab's target records the partition scan at connect,
	 * ~40 s before fio) takes one window: the others stay 100 ms */
	t = two_base;
	t.stray_s = 60;
	n = two_hosts(&t, f, NULL);
	assert_non_null(find(f, n, "interference"));
	assert_true(find(f, n, "interference")->in.width_ms == 100);
	/* a longer run: windows widened to hold it (512 at most: 60 s in 200 ms), the same finding */
	t = two_base;
	t.span_ms = 60000;
	t.a_every_us = 10000;
	t.b_every_us = 20000;
	t.on_ms = 5000;
	t.off_ms = 5000;
	n = two_hosts(&t, f, NULL);
	assert_non_null(find(f, n, "interference"));
	assert_true(find(f, n, "interference")->in.width_ms == 200);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_nothing_stands_out),
		cmocka_unit_test(test_too_few_queues),
		cmocka_unit_test(test_queue_imbalance),
		cmocka_unit_test(test_target_device),
		cmocka_unit_test(test_target_cpu),
		cmocka_unit_test(test_network),
		cmocka_unit_test(test_initiator_cpu),
		cmocka_unit_test(test_json),
		cmocka_unit_test(test_one_host),
		cmocka_unit_test(test_where_time_goes),
		cmocka_unit_test(test_interference),
		cmocka_unit_test(test_interference_controls),
		cmocka_unit_test(test_interference_edges),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
