// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Cross-host matching on synthetic recordings: an unknown clock offset, cids
 * reused every 16 I/Os, records lost on either side, a second controller.
 * Each record's sector carries the I/O's true identity so the pairing can be
 * checked one by one.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include "match.h"
#include "report.h"
#include <math.h>
#include "../../bench/synth.h"

#define N 3000

static uint64_t spacing = 97000;	/* ns between I/Os */

struct pair {
	struct nt_input in[2];
};

static void set_ev(struct ntbpf_rec *r, int ev, uint64_t at)
{
	r->ev[ev] = (uint32_t)(at - r->t0);
	r->ev_mask |= 1u << ev;
}

/*
 * I/O k: initiator sends at 1 s + k * 97 us, the target sees it 15 us later
 * (in its clock: + offset), holds it 40 us, the response arrives 15 us after.
 */
static void build(struct pair *p, int64_t offset, const char *boot_a, const char *boot_b,
		  int drop_init_every, int drop_tgt_every)
{
	struct nt_ctrl_info *c;
	size_t ni = 0, nt = 0;

	memset(p, 0, sizeof(*p));
	nt_header_init(&p->in[0].hdr, NTBPF_ROLE_INITIATOR);
	nt_header_init(&p->in[1].hdr, NTBPF_ROLE_TARGET);
	snprintf(p->in[0].hdr.boot_id, sizeof(p->in[0].hdr.boot_id), "%s", boot_a);
	snprintf(p->in[1].hdr.boot_id, sizeof(p->in[1].hdr.boot_id), "%s", boot_b);
	/* wall clocks agree to within 0.4 s: a rough prior only */
	p->in[0].hdr.mono_ns = 1000000000ull;
	p->in[0].hdr.real_ns = 5000000000000ull;
	p->in[1].hdr.mono_ns = 1000000000ull + offset;
	p->in[1].hdr.real_ns = 5000000000000ull + 400000000ull;
	c = nt_header_add_ctrl(&p->in[0].hdr);
	c->instance = 0;
	c->cntlid = 7;
	c = nt_header_add_ctrl(&p->in[0].hdr);
	c->instance = 1;
	c->cntlid = 9;
	p->in[0].recs = calloc(N, sizeof(struct ntbpf_rec));
	p->in[1].recs = calloc(N, sizeof(struct ntbpf_rec));
	for (int k = 0; k < N; k++) {
		uint64_t send = 1000000000ull + (uint64_t)k * spacing;
		uint16_t cid = (uint16_t)(((k % 16) << 12) | (k % 3));	/* genctr + 3 tags */
		uint16_t ctrl = k % 5 == 4 ? 1 : 0;			/* two controllers */
		struct ntbpf_rec *i = &p->in[0].recs[ni], *t = &p->in[1].recs[nt];

		if (!drop_init_every || k % drop_init_every) {
			i->role = NTBPF_ROLE_INITIATOR;
			i->flags = NTBPF_F_NVME;
			i->ctrl = ctrl;
			i->qid = 1;
			i->cid = cid;
			i->sector = k;
			i->t0 = send - 20000;
			set_ev(i, EV_I_BLK_START, i->t0);
			set_ev(i, EV_I_QUEUE_RQ, send - 5000);
			set_ev(i, EV_I_CMD_SENT, send);
			set_ev(i, EV_I_RESP_ARRIVE, send + 70000);
			set_ev(i, EV_I_BLK_DONE, send + 80000);
			ni++;
		}
		if (!drop_tgt_every || k % drop_tgt_every) {
			t->role = NTBPF_ROLE_TARGET;
			t->flags = NTBPF_F_NVME;
			t->ctrl = ctrl ? 9 : 7;
			t->qid = 1;
			t->cid = cid;
			t->sector = k;
			t->t0 = send + offset + 15000;
			set_ev(t, EV_T_CMD_ARRIVE, t->t0);
			set_ev(t, EV_T_RESP_SENT, t->t0 + 40000);
			nt++;
		}
	}
	p->in[0].n = ni;
	p->in[1].n = nt;
}

static void drop(struct pair *p)
{
	for (int f = 0; f < 2; f++)
		nt_input_free(&p->in[f]);
}

/* every pairing is the true one; returns matched */
static size_t check_pairs(const struct nt_matching *m)
{
	size_t ok = 0;

	for (size_t k = 0; k < m->n_init; k++)
		if (m->partner[k]) {
			assert_int_equal(m->partner[k]->sector, m->init[k]->sector);
			ok++;
		}
	assert_int_equal(ok, m->matched);
	return ok;
}


/*
 * The streaming matcher (nt_smatch_run) over the same records, fed in
 * chunks of `step`: every record comes out exactly once, and its pairs are
 * the whole-file matcher's (m, from nt_match_build), decision for decision.
 */
struct msrc {
	const struct ntbpf_rec *r;
	size_t n, at, step;
};

static size_t mchunk(void *ctx, const struct ntbpf_rec **recs)
{
	struct msrc *s = ctx;
	size_t k = s->n - s->at < s->step ? s->n - s->at : s->step;

	*recs = s->r + s->at;
	s->at += k;
	return k;
}

/* the records again from the start (the first search between hosts booted apart reads ahead through it) */
static int mreopen(void *ctx, struct nt_ssrc *again)
{
	const struct msrc *s = ctx;
	struct msrc *a = malloc(sizeof(*a));

	if (!a)
		return -1;
	*a = (struct msrc){ s->r, s->n, 0, s->step };
	*again = (struct nt_ssrc){ .chunk = mchunk, .ctx = a, .close = NULL };
	return 0;
}

static const struct nt_header *again_hdr;

static void mclose(struct nt_ssrc *again);

/* any source again (its header is the caller's to set: the fleet runs pass their own) */
static int mreopen_any(void *ctx, struct nt_ssrc *again)
{
	int rc = mreopen(ctx, again);

	again->close = mclose;
	return rc;
}

static void mclose(struct nt_ssrc *again)
{
	free(again->ctx);
}

static int mreopen_hdr(void *ctx, struct nt_ssrc *again)
{
	int rc = mreopen(ctx, again);

	again->hdr = again_hdr;
	again->close = mclose;
	return rc;
}

struct sres {
	const struct ntbpf_rec *i0, *t0;
	uint32_t *pidx;		/* per initiator record: 1 + its target's index, 0 none */
	uint8_t *iseen, *tseen;	/* emitted how many times */
	size_t ni, nt;
};

static int stake(void *ctx, const struct ntbpf_rec *r, const struct nt_header *h, uint8_t role, void *pay)
{
	struct sres *s = ctx;
	uint32_t k = (uint32_t)(role == NTBPF_ROLE_TARGET ? r - s->t0 : r - s->i0);

	memcpy(pay, &k, sizeof(k));
	return 0;
}

static int semit(void *ctx, const void *ip, const void *tp)
{
	struct sres *s = ctx;
	uint32_t i, t;

	if (tp) {
		memcpy(&t, tp, sizeof(t));
		assert_true(t < s->nt);
		s->tseen[t]++;
	}
	if (ip) {
		memcpy(&i, ip, sizeof(i));
		assert_true(i < s->ni);
		s->iseen[i]++;
		s->pidx[i] = tp ? t + 1 : 0;
	}
	return 0;
}

/*
 * nt_smatch_run over in[0], in[1] (window w, chunks of step) into sm and s
 * (freed by the caller); again: the target's records can be read again
 */
static void stream_run(const struct nt_input *in, uint64_t w, size_t step, bool again, struct nt_matching *sm,
		       struct sres *s)
{
	struct msrc ms[2] = { { in[0].recs, in[0].n, 0, step }, { in[1].recs, in[1].n, 0, step } };
	struct nt_ssrc src[2] = { { .hdr = &in[0].hdr, .chunk = mchunk, .ctx = &ms[0] },
				  { .hdr = &in[1].hdr, .chunk = mchunk, .ctx = &ms[1], .reopen = again ? mreopen_hdr : NULL } };
	struct nt_smatch_ops ops = { .payload = sizeof(uint32_t), .take = stake, .emit = semit, .ctx = s };

	again_hdr = &in[1].hdr;
	memset(sm, 0, sizeof(*sm));
	*s = (struct sres){ .i0 = in[0].recs, .t0 = in[1].recs, .ni = in[0].n, .nt = in[1].n };
	s->pidx = calloc(in[0].n + 1, sizeof(*s->pidx));
	s->iseen = calloc(in[0].n + 1, 1);
	s->tseen = calloc(in[1].n + 1, 1);
	assert_int_equal(nt_smatch_run(sm, &src[0], &src[1], w, &ops), 0);
	for (size_t k = 0; k < in[0].n; k++)
		assert_int_equal(s->iseen[k], 1);
	for (size_t k = 0; k < in[1].n; k++)
		assert_int_equal(s->tseen[k], 1);
	assert_int_equal(sm->n_init, in[0].n);
	assert_int_equal(sm->n_tgt, in[1].n);
}

static void sres_free(struct sres *s)
{
	free(s->pidx);
	free(s->iseen);
	free(s->tseen);
}

static void assert_stream_same(const struct nt_input *in, const struct nt_matching *m)
{
	static const size_t steps[] = { 4096, 777 };	/* the first reads again (a file), the second cannot (a pipe) */

	for (size_t c = 0; c < sizeof(steps) / sizeof(steps[0]); c++) {
		struct nt_matching sm;
		struct sres s;

		stream_run(in, NT_PAIR_WINDOW_NS, steps[c], c == 0, &sm, &s);
		for (size_t k = 0; k < m->n_init; k++)
			if (s.pidx[k] != m->pidx[k])
				fail_msg("init %zu: streamed %u, whole file %u", k, s.pidx[k], m->pidx[k]);
		assert_int_equal(sm.matched, m->matched);
		assert_int_equal(sm.by_port, m->by_port);
		assert_int_equal(sm.shared_cntlid, m->shared_cntlid);
		assert_int_equal(sm.have_offset, m->have_offset);
		assert_int_equal(sm.offset_ns, m->offset_ns);
		assert_int_equal(sm.offset_drift_ns, m->offset_drift_ns);
		assert_int_equal(sm.offset_votes, m->offset_votes);
		assert_int_equal(sm.slow_init + sm.slow_tgt, 0);
		sres_free(&s);
	}
}

static void test_offset_and_pairs(void **state)
{
	struct pair p;
	struct nt_matching m;
	int64_t off = 123456789;	/* target clock ahead by 123.46 ms */

	build(&p, off, "boot-a", "boot-b", 0, 0);
	assert_int_equal(nt_match_build(&m, p.in, 2), 0);
	assert_true(m.have_offset);
	/* true pairs allow offsets in [off - 30 us, off + 15 us] (+- slack) */
	assert_true(m.offset_ns >= off - 30000 - 100000 && m.offset_ns <= off + 15000 + 100000);
	assert_int_equal(check_pairs(&m), N);
	assert_int_equal(m.matched, N);
	assert_stream_same(p.in, &m);
	nt_match_free(&m);
	drop(&p);
}

/* QD32-like rates: a cid recurs every 48 I/Os = 144 us, far inside the wall-clock prior's 5 s */
static void test_high_rate(void **state)
{
	struct pair p;
	struct nt_matching m;

	spacing = 3000;
	build(&p, 7777777, "boot-a", "boot-b", 0, 0);
	spacing = 97000;
	assert_int_equal(nt_match_build(&m, p.in, 2), 0);
	assert_true(m.offset_ns >= 7777777 - 130000 && m.offset_ns <= 7777777 + 115000);
	assert_int_equal(check_pairs(&m), N);
	assert_stream_same(p.in, &m);
	nt_match_free(&m);
	drop(&p);
}

static void test_losses_on_both_sides(void **state)
{
	struct pair p;
	struct nt_matching m;

	build(&p, -987654321, "boot-a", "boot-b", 101, 97);
	assert_int_equal(nt_match_build(&m, p.in, 2), 0);
	/* I/Os present on both sides: N minus those dropped on either */
	{
		size_t both = 0;

		for (int k = 0; k < N; k++)
			both += (k % 101) && (k % 97);
		assert_int_equal(check_pairs(&m), both);
	}
	assert_stream_same(p.in, &m);
	nt_match_free(&m);
	drop(&p);
}

static void test_same_host(void **state)
{
	struct pair p;
	struct nt_matching m;

	build(&p, 0, "same-boot", "same-boot", 0, 13);
	assert_int_equal(nt_match_build(&m, p.in, 2), 0);
	assert_true(m.offset_ns >= -130000 && m.offset_ns <= 115000);
	check_pairs(&m);
	assert_int_equal(m.matched, N - (N + 12) / 13);
	nt_match_free(&m);
	drop(&p);
}

static void test_unknown_controller_never_matches(void **state)
{
	struct pair p;
	struct nt_matching m;

	build(&p, 5000000, "a", "b", 0, 0);
	p.in[0].hdr.ctrls[1].instance = 42;	/* instance 1 no longer named */
	assert_int_equal(nt_match_build(&m, p.in, 2), 0);
	check_pairs(&m);
	assert_int_equal(m.matched, N - N / 5);
	assert_int_equal(m.no_cntlid, N / 5);
	nt_match_free(&m);
	drop(&p);
}

/*
 * Controller nvme0 reconnects halfway: the target gives it cntlid 8 for 7.
 * Without the header's note of the change the I/Os after it cannot be
 * keyed; with it (from the queue_rq of the first I/O after) every I/O pairs,
 * in the streaming matcher too, and an I/O queued before the change but
 * started (blk_start) long before still takes the cntlid of its issue.
 */
static void test_reconnect_new_cntlid(void **state)
{
	struct pair p;
	struct nt_matching m;
	uint64_t from = 1000000000ull + (uint64_t)(N / 2) * spacing - 5000;
	size_t after = 0;

	build(&p, 5000000, "a", "b", 0, 0);
	for (size_t k = 0; k < p.in[1].n; k++)
		if (p.in[1].recs[k].ctrl == 7 && p.in[1].recs[k].sector >= N / 2) {
			p.in[1].recs[k].ctrl = 8;
			after++;
		}
	/* the first I/O after the change waited in the block layer since before it */
	for (size_t k = 0; k < p.in[0].n; k++)
		if (p.in[0].recs[k].sector == N / 2) {
			struct ntbpf_rec *r = &p.in[0].recs[k];
			uint64_t q = r->t0 + r->ev[EV_I_QUEUE_RQ];

			r->t0 -= 3 * spacing;
			for (int e = 0; e < NTBPF_MAX_EV; e++)
				if (r->ev_mask & (1u << e))
					r->ev[e] += 3 * spacing;
			assert_int_equal(r->t0 + r->ev[EV_I_QUEUE_RQ], q);
		}
	assert_true(after > N / 4);
	assert_int_equal(nt_match_build(&m, p.in, 2), 0);
	check_pairs(&m);
	assert_int_equal(m.matched, N - after);
	nt_match_free(&m);

	nt_header_add_cntlid_change(&p.in[0].hdr, 0, 7, from - 1000);	/* the cntlid in force: no change */
	assert_int_equal(p.in[0].hdr.ncchanges, 0);
	nt_header_add_cntlid_change(&p.in[0].hdr, 0, 8, from);
	assert_int_equal(p.in[0].hdr.ncchanges, 1);
	assert_int_equal(nt_match_build(&m, p.in, 2), 0);
	check_pairs(&m);
	assert_int_equal(m.matched, N);
	assert_stream_same(p.in, &m);
	nt_match_free(&m);
	drop(&p);
}

/*
 * Two subsystems of one target both number their controller 1: the target's
 * records carry cntlid 7 for both.  The I/Os are counted as ambiguous; here
 * they do not overlap in time, so timing still pairs every one correctly.
 */
static void test_shared_cntlid_is_counted(void **state)
{
	struct pair p;
	struct nt_matching m;

	build(&p, 5000000, "a", "b", 0, 0);
	p.in[0].hdr.ctrls[1].cntlid = 7;
	for (size_t k = 0; k < p.in[1].n; k++)
		p.in[1].recs[k].ctrl = 7;
	assert_int_equal(nt_match_build(&m, p.in, 2), 0);
	assert_int_equal(check_pairs(&m), N);
	assert_int_equal(m.shared_cntlid, N);
	assert_int_equal(m.no_cntlid, 0);
	nt_match_free(&m);
	/* distinct cntlids: nothing ambiguous */
	drop(&p);
	build(&p, 5000000, "a", "b", 0, 0);
	assert_int_equal(nt_match_build(&m, p.in, 2), 0);
	assert_int_equal(m.shared_cntlid, 0);
	nt_match_free(&m);
	drop(&p);
}

/*
 * Two controllers with the same cntlid, busy at the same moments with the
 * same cids; the target sees the second one's commands first.  Timing alone
 * pairs them crosswise; the queue's TCP port pairs them right.
 */
static void build_twins(struct pair *p, bool ports)
{
	struct nt_ctrl_info *c;
	const int n = 1000;
	size_t ni = 0, nt = 0;

	memset(p, 0, sizeof(*p));
	nt_header_init(&p->in[0].hdr, NTBPF_ROLE_INITIATOR);
	nt_header_init(&p->in[1].hdr, NTBPF_ROLE_TARGET);
	snprintf(p->in[0].hdr.boot_id, sizeof(p->in[0].hdr.boot_id), "a");
	snprintf(p->in[1].hdr.boot_id, sizeof(p->in[1].hdr.boot_id), "b");
	p->in[0].hdr.mono_ns = p->in[1].hdr.mono_ns = 1000000000ull;
	p->in[0].hdr.real_ns = p->in[1].hdr.real_ns = 5000000000000ull;
	for (int k = 0; k < 2; k++) {
		c = nt_header_add_ctrl(&p->in[0].hdr);
		c->instance = k;
		c->cntlid = 1;		/* two subsystems, each numbering from 1 */
	}
	p->in[0].recs = calloc(2 * n, sizeof(struct ntbpf_rec));
	p->in[1].recs = calloc(2 * n, sizeof(struct ntbpf_rec));
	for (int k = 0; k < n; k++)
		for (int ctl = 0; ctl < 2; ctl++) {
			uint64_t send = 1000000000ull + (uint64_t)k * 100000 + ctl * 5000;
			/* records are written at completion: the target finishes the second one first */
			struct ntbpf_rec *i = &p->in[0].recs[ni++], *t = &p->in[1].recs[2 * k + !ctl];

			i->role = NTBPF_ROLE_INITIATOR;
			i->flags = NTBPF_F_NVME;
			i->ctrl = (uint16_t)ctl;
			i->qid = 1;
			i->cid = (uint16_t)(k % 4);
			i->sector = 2 * k + ctl;
			i->port = ports ? 40000 + ctl : 0;
			i->t0 = send - 10000;
			set_ev(i, EV_I_CMD_SENT, send);
			set_ev(i, EV_I_RESP_ARRIVE, send + 80000);
			*t = (struct ntbpf_rec){ .role = NTBPF_ROLE_TARGET, .flags = NTBPF_F_NVME, .ctrl = 1,
						 .qid = 1, .cid = i->cid, .sector = i->sector, .port = i->port };
			/* the second controller's command reaches the target 30 us before the first's */
			t->t0 = send + (ctl ? 10000 : 40000 + 5000);
			set_ev(t, EV_T_CMD_ARRIVE, t->t0);
			set_ev(t, EV_T_RESP_SENT, t->t0 + 20000);
			nt++;
		}
	p->in[0].n = ni;
	p->in[1].n = nt;
}

static void test_port_tells_shared_cntlids_apart(void **state)
{
	struct pair p;
	struct nt_matching m;
	size_t wrong = 0;

	build_twins(&p, true);
	assert_int_equal(nt_match_build(&m, p.in, 2), 0);
	assert_int_equal(check_pairs(&m), 2000);
	assert_int_equal(m.by_port, 2000);
	assert_int_equal(m.shared_cntlid, 0);
	nt_match_free(&m);
	drop(&p);

	/* without ports: counted as ambiguous, and timing does get some wrong */
	build_twins(&p, false);
	assert_int_equal(nt_match_build(&m, p.in, 2), 0);
	assert_int_equal(m.shared_cntlid, 2000);
	assert_int_equal(m.by_port, 0);
	for (size_t k = 0; k < m.n_init; k++)
		wrong += m.partner[k] && m.partner[k]->sector != m.init[k]->sector;
	assert_true(wrong > 0);
	nt_match_free(&m);
	drop(&p);
}

static void test_one_side_only(void **state)
{
	struct pair p;
	struct nt_matching m;

	build(&p, 0, "a", "b", 0, 0);
	assert_int_equal(nt_match_build(&m, p.in, 1), 0);
	assert_int_equal(m.n_init, N);
	assert_int_equal(m.n_tgt, 0);
	assert_int_equal(m.matched, 0);
	nt_match_free(&m);
	assert_int_equal(nt_match_build(&m, &p.in[1], 1), 0);
	assert_int_equal(m.n_tgt, N);
	assert_int_equal(m.matched, 0);
	nt_match_free(&m);
	drop(&p);
}

/*
 * The two hosts' clocks drift apart: linearly (ppm) and with a wander (NTP
 * slewing each host its own way).  400 k I/Os at 330 k IOPS, 1.2 s: at 1000
 * ppm the offset moves 1.2 ms, ten times the pairing tolerance, and one
 * offset for the whole recording would lose most pairs.
 */
static void drift_case(double ppm, double wander_ns, double period_ns)
{
	enum { ND = 400000 };
	struct nt_input in[2];
	struct nt_matching m;
	struct synth s;
	size_t wrong = 0;

	memset(in, 0, sizeof(in));
	synth_header(&in[0].hdr, NTBPF_ROLE_INITIATOR);
	synth_header(&in[1].hdr, NTBPF_ROLE_TARGET);
	in[0].recs = calloc(ND, sizeof(struct ntbpf_rec));
	in[1].recs = calloc(ND, sizeof(struct ntbpf_rec));
	assert_non_null(in[0].recs);
	assert_non_null(in[1].recs);
	synth_init(&s);
	for (size_t k = 0; k < ND; k++) {
		struct ntbpf_rec *i = &in[0].recs[k], *g = &in[1].recs[k];
		double t;

		synth_pair(&s, k, i, g);
		t = (double)(g->t0 - 2000000000ull);
		g->t0 += (int64_t)(t * ppm * 1e-6 + wander_ns * sin(2 * M_PI * t / period_ns));
	}
	in[0].n = in[1].n = ND;
	assert_int_equal(nt_match_build(&m, in, 2), 0);
	for (size_t k = 0; k < m.n_init; k++)
		wrong += m.partner[k] && m.partner[k]->sector * 8 != m.init[k]->sector;
	if (wrong || m.matched != ND)
		fprintf(stderr, "drift %.0f ppm, wander %.0f ns / %.0f ns: %zu wrong, %zu matched\n", ppm, wander_ns,
			period_ns, wrong, m.matched);
	assert_int_equal(wrong, 0);
	assert_int_equal(m.matched, ND);
	if (ppm >= 100)		/* the report says how far it moved */
		assert_true(m.offset_drift_ns > (int64_t)(ND * 3000 * ppm * 1e-6 * 0.8));
	assert_stream_same(in, &m);
	nt_match_free(&m);
	nt_input_free(&in[0]);
	nt_input_free(&in[1]);
}

/*
 * One host's clock (offset 0): short reads, then a burst of long writes at
 * QD32 (250 ms each: the command crosses in 30 us; stretches of 200 whose
 * responses waited 6-12 ms, then 0.05-0.5 ms), as one-6.12-two-hosts-interference's
 * second run had them.  Each
 * long I/O allows offsets over milliseconds; the middle of the range they all
 * allow drifted 3.4 ms and left 31 of 844 unpaired (CI 2026-11-29).
 */
static void test_long_ios_no_false_drift(void **state)
{
	enum { NS = 2000, NL = 1600 };
	struct nt_input in[2];
	struct nt_matching m;
	struct synth s;
	size_t n = 0, wrong = 0;
	uint64_t t = 2000000000ull;

	(void)state;
	memset(in, 0, sizeof(in));
	synth_header(&in[0].hdr, NTBPF_ROLE_INITIATOR);
	synth_header(&in[1].hdr, NTBPF_ROLE_TARGET);
	snprintf(in[1].hdr.boot_id, sizeof(in[1].hdr.boot_id), "i");	/* one host */
	in[0].recs = calloc(NS + NL, sizeof(struct ntbpf_rec));
	in[1].recs = calloc(NS + NL, sizeof(struct ntbpf_rec));
	assert_non_null(in[0].recs);
	assert_non_null(in[1].recs);
	synth_init(&s);
	for (size_t k = 0; k < NS + NL; k++, n++) {
		struct ntbpf_rec *i = &in[0].recs[k], *g = &in[1].recs[k];
		bool big = k >= NS;
		uint64_t sent, arr, tarr, rs;

		if (big)
			t += 9400000;	/* 32 in flight, 250 ms each */
		else
			t += 100000;
		sent = t + 2000;
		tarr = sent + 30000;
		arr = big ? sent + 250000000 : tarr + 60000;
		/* stretches of writes whose responses all waited 6-12 ms, then 0.05-0.5 ms */
		rs = !big ? tarr + 30000 : (k / 200) % 2 ? arr - 50000 - synth_rnd(&s, 0, 56000) :
		     arr - 6000000 - synth_rnd(&s, 0, 750000);
		i->role = NTBPF_ROLE_INITIATOR;
		g->role = NTBPF_ROLE_TARGET;
		i->flags = g->flags = NTBPF_F_NVME;
		i->op = g->op = big ? NTBPF_OP_WRITE : NTBPF_OP_READ;
		i->opcode = g->opcode = big ? 1 : 2;
		i->bytes = g->bytes = big ? 131072 : 4096;
		i->dev = 259u << 20;
		g->dev = 1;
		g->ctrl = 1;
		i->qid = g->qid = 1;
		i->port = g->port = 40000;
		i->cid = g->cid = (uint16_t)(k % 32);
		i->sector = k * 8;
		g->sector = k;
		i->t0 = t;
		set_ev(i, EV_I_BLK_START, t);
		set_ev(i, EV_I_CMD_SENT, sent);
		set_ev(i, EV_I_RESP_ARRIVE, arr);
		set_ev(i, EV_I_BLK_DONE, arr + 5000);
		g->t0 = tarr;
		set_ev(g, EV_T_CMD_ARRIVE, tarr);
		set_ev(g, EV_T_RESP_SENT, rs);
	}
	in[0].n = in[1].n = n;
	assert_int_equal(nt_match_build(&m, in, 2), 0);
	for (size_t k = 0; k < m.n_init; k++)
		wrong += m.partner[k] && m.partner[k]->sector * 8 != m.init[k]->sector;
	if (wrong || m.matched != n || llabs(m.offset_drift_ns) > 500000)
		fprintf(stderr, "long I/Os: %zu wrong, %zu of %zu matched, offset %lld drift %lld ns\n", wrong,
			m.matched, n, (long long)m.offset_ns, (long long)m.offset_drift_ns);
	assert_int_equal(wrong, 0);
	assert_int_equal(m.matched, n);
	assert_true(llabs(m.offset_drift_ns) <= 500000);
	assert_stream_same(in, &m);
	nt_match_free(&m);
	nt_input_free(&in[0]);
	nt_input_free(&in[1]);
}

static void test_clock_drift(void **state)
{
	drift_case(0, 0, 1);
	drift_case(100, 0, 1);
	drift_case(1000, 0, 1);
	/* NTP slews a clock by at most 500 ppm: +-150 us over 2 s (up to 470 ppm) */
	drift_case(20, 150000, 2000000000);
	drift_case(-200, 100000, 1500000000);
}


/*
 * An initiator record written 600 ms after its I/O completed (a CPU stalled
 * before the ring buffer was drained): later than a 1 ms window.  It is
 * counted, and the rest pair as before; every record still comes out once.
 */
static void test_stream_slow_io_counted(void **state)
{
	enum { NS = 300000, LATE = 50000, BY = 200000 };
	struct nt_input in[2];
	struct nt_matching sm;
	struct sres s;
	struct synth sy;
	struct ntbpf_rec late;
	size_t wrong = 0;

	memset(in, 0, sizeof(in));
	synth_header(&in[0].hdr, NTBPF_ROLE_INITIATOR);
	synth_header(&in[1].hdr, NTBPF_ROLE_TARGET);
	in[0].recs = calloc(NS, sizeof(struct ntbpf_rec));
	in[1].recs = calloc(NS, sizeof(struct ntbpf_rec));
	synth_init(&sy);
	for (size_t k = 0; k < NS; k++)
		synth_pair(&sy, k, &in[0].recs[k], &in[1].recs[k]);
	in[0].n = in[1].n = NS;
	late = in[0].recs[LATE];
	memmove(&in[0].recs[LATE], &in[0].recs[LATE + 1], BY * sizeof(late));
	in[0].recs[LATE + BY] = late;
	stream_run(in, 1000000, 4096, true, &sm, &s);
	assert_int_equal(sm.slow_init, 1);
	assert_int_equal(sm.slow_tgt, 0);
	assert_int_equal(sm.window_ns, 1000000);
	for (size_t k = 0; k < NS; k++)
		wrong += s.pidx[k] && in[1].recs[s.pidx[k] - 1].sector * 8 != in[0].recs[k].sector;
	assert_int_equal(wrong, 0);
	/* its target record was let go before it came: both unmatched, counted */
	assert_int_equal(sm.matched, NS - 1);
	assert_int_equal(s.pidx[LATE + BY], 0);
	/* with the default window (2 s) it is neither late nor unpaired */
	sres_free(&s);
	stream_run(in, NT_PAIR_WINDOW_NS, 4096, false, &sm, &s);
	assert_int_equal(sm.slow_init, 0);
	assert_int_equal(sm.matched, NS);
	sres_free(&s);
	nt_input_free(&in[0]);
	nt_input_free(&in[1]);
}


/* the fleet's records, streamed (nt_smatch_fleet): payload = file << 24 | index */
struct fleet_res {
	const struct nt_input *in;
	int n;
	uint8_t *seen[8];
	uint32_t *partner[8];	/* per initiator record: 1 + (file << 24 | index) of its target's, 0 none */
};

static uint32_t fleet_gid(const struct fleet_res *fr, const struct ntbpf_rec *r)
{
	for (int f = 0; f < fr->n; f++)
		if (r >= fr->in[f].recs && r < fr->in[f].recs + fr->in[f].n)
			return (uint32_t)(f << 24 | (r - fr->in[f].recs));
	fail_msg("a record of no file");
	return 0;
}

static int ftake(void *ctx, const struct ntbpf_rec *r, const struct nt_header *h, uint8_t role, void *pay)
{
	uint32_t g = fleet_gid(ctx, r);

	memcpy(pay, &g, sizeof(g));
	return 0;
}

static int femit(void *ctx, const void *ip, const void *tp)
{
	struct fleet_res *fr = ctx;
	uint32_t i = 0, t = 0;

	if (tp) {
		memcpy(&t, tp, sizeof(t));
		fr->seen[t >> 24][t & 0xffffff]++;
	}
	if (ip) {
		memcpy(&i, ip, sizeof(i));
		fr->seen[i >> 24][i & 0xffffff]++;
		fr->partner[i >> 24][i & 0xffffff] = tp ? t + 1 : 0;
	}
	return 0;
}

/* the same files streamed, each read once per file of the other side: the same pairs, each record out once */
static void fleet_streamed(const struct nt_input *in, int n, const struct nt_matching *m)
{
	struct fleet_res fr = { .in = in, .n = n };
	struct msrc ms[8];
	struct nt_ssrc src[8];
	struct nt_smatch_ops ops = { .payload = sizeof(uint32_t), .take = ftake, .emit = femit, .ctx = &fr };
	struct nt_matching sm;
	size_t k = 0;

	memset(&sm, 0, sizeof(sm));
	for (int f = 0; f < n; f++) {
		ms[f] = (struct msrc){ in[f].recs, in[f].n, 0, 1000 };
		src[f] = (struct nt_ssrc){ .hdr = &in[f].hdr, .chunk = mchunk, .ctx = &ms[f], .reopen = mreopen_any };
		fr.seen[f] = calloc(in[f].n + 1, 1);
		fr.partner[f] = calloc(in[f].n + 1, sizeof(uint32_t));
	}
	assert_int_equal(nt_smatch_fleet(&sm, src, n, NT_PAIR_WINDOW_NS, &ops), 0);
	assert_int_equal(sm.matched, m->matched);
	assert_int_equal(sm.n_init, m->n_init);
	assert_int_equal(sm.n_tgt, m->n_tgt);
	assert_int_equal(sm.offset_ns, m->offset_ns);
	assert_int_equal(sm.offset_votes, m->offset_votes);
	for (int f = 0; f < n; f++)
		for (size_t r = 0; r < in[f].n; r++) {
			assert_int_equal(fr.seen[f][r], 1);
			if (in[f].hdr.role == NTBPF_ROLE_INITIATOR) {
				uint32_t t = fr.partner[f][r];
				const struct ntbpf_rec *mine = &in[f].recs[r];

				/* the whole-file matcher's partner (m->init in file order) */
				assert_ptr_equal(mine, m->init[k]);
				assert_non_null(m->partner[k]);
				assert_true(t != 0);
				assert_ptr_equal(&in[(t - 1) >> 24].recs[(t - 1) & 0xffffff], m->partner[k]);
				k++;
			}
		}
	for (int f = 0; f < n; f++) {
		free(fr.seen[f]);
		free(fr.partner[f]);
	}
}

/*
 * A fleet: three initiators, two targets, each host with a clock of its own
 * (booted apart, offsets up to 2.5 s).  Connections: i0 -> t0 (cntlid 1),
 * i1 -> t0 (cntlid 2), i1 -> t1 (cntlid 1: the same number as i0's on t0),
 * i2 -> t1 (cntlid 2); two queues each, a port per queue.  Every I/O pairs
 * with its own target record (the sector carries its identity), across all
 * five files, by queue identity: each initiator file is tried against each
 * target file, and only its own queues' records agree on an offset.  (i1's
 * two controllers alternate: the offset search's every-2nd-I/O sample of
 * i1 against t1 fell only on I/Os t0 had paired, and found nothing, until
 * it learned to sample those that can vote.)  "ntbpf report" with more than
 * one file of each side pairs through this same path (nt_match_items).
 */
static void test_fleet(void **state)
{
	enum { NI = 3, NT = 2, NC = 4, NIO = 16000 };
	static const struct { int init, inst, tgt, cntlid; } conn[NC] = {
		{ 0, 0, 0, 1 }, { 1, 0, 0, 2 }, { 1, 1, 1, 1 }, { 2, 0, 1, 2 },
	};
	static const int64_t ioff[NI] = { 0, 1234567890, -987654321 }, toff[NT] = { 2500000000ll, -333333333 };
	struct nt_input in[NI + NT];
	struct nt_matching m;
	size_t total = 0;

	memset(in, 0, sizeof(in));
	for (int f = 0; f < NI + NT; f++) {
		struct nt_header *h = &in[f].hdr;
		int64_t off = f < NI ? ioff[f] : toff[f - NI];

		nt_header_init(h, f < NI ? NTBPF_ROLE_INITIATOR : NTBPF_ROLE_TARGET);
		snprintf(h->boot_id, sizeof(h->boot_id), "boot-%d", f);
		h->mono_ns = (uint64_t)(10000000000ll + off);
		h->real_ns = 5000000000000ull + (uint64_t)(f * 100000000);	/* wall clocks within 0.4 s */
		in[f].recs = calloc(NIO, sizeof(struct ntbpf_rec));
		assert_non_null(in[f].recs);
	}
	for (int c = 0; c < NC; c++) {
		struct nt_ctrl_info *ci = nt_header_add_ctrl(&in[conn[c].init].hdr);

		ci->instance = conn[c].inst;
		ci->cntlid = (uint16_t)conn[c].cntlid;
	}
	for (int k = 0; k < NIO; k++) {
		int c = k % NC, q = (k / NC) % 2, g = conn[c].init, t = NI + conn[c].tgt;
		uint64_t send = 10000000000ull + (uint64_t)k * 20000;	/* true time */
		uint16_t cid = (uint16_t)((((k / 8) % 16) << 12) | ((k / NC / 2) % 4));
		uint16_t port = (uint16_t)(41000 + 1000 * c + q);
		struct ntbpf_rec *i = &in[g].recs[in[g].n++], *r = &in[t].recs[in[t].n++];

		i->role = NTBPF_ROLE_INITIATOR;
		i->flags = NTBPF_F_NVME;
		i->ctrl = (uint16_t)conn[c].inst;
		i->qid = (uint16_t)(q + 1);
		i->cid = cid;
		i->port = port;
		i->sector = (uint64_t)k;
		i->t0 = send - 20000 + (uint64_t)ioff[g];
		set_ev(i, EV_I_BLK_START, i->t0);
		set_ev(i, EV_I_QUEUE_RQ, i->t0 + 15000);
		set_ev(i, EV_I_CMD_SENT, i->t0 + 20000);
		set_ev(i, EV_I_RESP_ARRIVE, i->t0 + 90000);
		set_ev(i, EV_I_BLK_DONE, i->t0 + 100000);
		r->role = NTBPF_ROLE_TARGET;
		r->flags = NTBPF_F_NVME;
		r->ctrl = (uint16_t)conn[c].cntlid;
		r->qid = (uint16_t)(q + 1);
		r->cid = cid;
		r->port = port;
		r->sector = (uint64_t)k;
		r->t0 = send + 15000 + (uint64_t)toff[t - NI];
		set_ev(r, EV_T_CMD_ARRIVE, r->t0);
		set_ev(r, EV_T_RESP_SENT, r->t0 + 40000);
	}
	assert_int_equal(nt_match_build(&m, in, NI + NT), 0);
	if (m.matched != NIO) {
		size_t miss[NC] = { 0 };

		for (size_t k = 0; k < m.n_init; k++)
			miss[m.init[k]->sector % NC] += !m.partner[k];
		fprintf(stderr, "fleet: matched %zu of %d; unpaired per connection %zu %zu %zu %zu\n", m.matched, NIO,
			miss[0], miss[1], miss[2], miss[3]);
	}
	for (size_t k = 0; k < m.n_init; k++) {
		assert_non_null(m.partner[k]);
		assert_int_equal(m.partner[k]->sector, m.init[k]->sector);
		total++;
	}
	assert_int_equal(total, NIO);
	assert_int_equal(m.matched, NIO);
	assert_int_equal(m.by_port, NIO);
	fleet_streamed(in, NI + NT, &m);
	nt_match_free(&m);
	for (int f = 0; f < NI + NT; f++)
		nt_input_free(&in[f]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_clock_drift),
		cmocka_unit_test(test_long_ios_no_false_drift),
		cmocka_unit_test(test_stream_slow_io_counted),
		cmocka_unit_test(test_offset_and_pairs),
		cmocka_unit_test(test_high_rate),
		cmocka_unit_test(test_losses_on_both_sides),
		cmocka_unit_test(test_same_host),
		cmocka_unit_test(test_unknown_controller_never_matches),
		cmocka_unit_test(test_reconnect_new_cntlid),
		cmocka_unit_test(test_shared_cntlid_is_counted),
		cmocka_unit_test(test_port_tells_shared_cntlids_apart),
		cmocka_unit_test(test_one_side_only),
		cmocka_unit_test(test_fleet),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
