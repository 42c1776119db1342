/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * bench/synth.h - the synthetic I/O of the benchmarks: N matched 4k reads on
 * 4 queues at QD32, about 330k IOPS, with lognormal-ish stage times.  Pair k
 * is one I/O as the initiator and the target record it; queue q's TCP
 * connection has the initiator port 40000 + q.  Deterministic: the
 * same sequence in bench-gen and bench-recfile.
 */
#ifndef NTBPF_BENCH_SYNTH_H
#define NTBPF_BENCH_SYNTH_H

#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include "ntbpf.h"
#include "recfile.h"

struct synth {
	uint64_t x;		/* xorshift state */
	uint64_t t;		/* initiator clock */
	uint16_t gen[4][32];	/* per queue and tag: nvme command id generation */
};

/* the synthetic hosts' file header: nvme0n1, controller nvme0 = cntlid 1, distinct boots */
static inline struct nt_ctrl_info *synth_header(struct nt_header *h, int role)
{
	struct nt_ctrl_info *c;

	nt_header_init(h, role);
	snprintf(h->hostname, sizeof(h->hostname), role == NTBPF_ROLE_TARGET ? "bench-target" : "bench-initiator");
	snprintf(h->kernel, sizeof(h->kernel), "synthetic");
	snprintf(h->boot_id, sizeof(h->boot_id), role == NTBPF_ROLE_TARGET ? "t" : "i");
	h->mono_ns = 1000000000ull;
	h->real_ns = 1700000000000000000ull;
	h->sample = 1;
	h->ndevs = 1;
	snprintf(h->devs[0], sizeof(h->devs[0]), "nvme0n1=259:0");
	c = nt_header_add_ctrl(h);
	if (c) {
		c->instance = 0;
		c->cntlid = 1;
	}
	return c;
}

static inline void synth_init(struct synth *s)
{
	memset(s, 0, sizeof(*s));
	s->x = 0x9E3779B97F4A7C15ull;
	s->t = 2000000000ull;
}

static inline uint32_t synth_rnd(struct synth *s, uint32_t base, uint32_t spread)
{
	double u;

	s->x ^= s->x << 13, s->x ^= s->x >> 7, s->x ^= s->x << 17;
	/* a long tail: base + spread * u^3 * 8 */
	u = (s->x >> 11) * (1.0 / 9007199254740992.0);
	return base + (uint32_t)(spread * u * u * u * 8);
}

static inline void synth_set(struct ntbpf_rec *r, int ev, uint64_t at)
{
	r->ev[ev] = (uint32_t)(at - r->t0);
	r->ev_mask |= 1u << ev;
}

/* I/O number k (k = 0, 1, 2, ... in order) as seen by each host. */
static inline void synth_pair(struct synth *s, uint64_t k, struct ntbpf_rec *i,
			      struct ntbpf_rec *g)
{
	const int64_t off = 7777777;	/* target clock ahead */
	uint16_t q = k % 4, tag = (k / 4) % 32;
	uint16_t cid = (uint16_t)(((s->gen[q][tag]++ & 0xf) << 12) | tag);
	uint64_t qrq, sent, arr, tarr, pick, exec, done, rs, proc, nd, t;

	memset(i, 0, sizeof(*i));
	memset(g, 0, sizeof(*g));
	t = s->t += 3000;	/* ~330k IOPS */
	i->role = NTBPF_ROLE_INITIATOR;
	i->flags = NTBPF_F_NVME;
	i->op = NTBPF_OP_READ;
	i->opcode = 2;
	i->bytes = 4096;
	i->dev = 259u << 20;
	i->qid = q + 1;
	i->port = g->port = 40000 + q;	/* the queue's connection, as both hosts see it */
	i->cid = cid;
	i->sector = k * 8;
	i->t0 = t;
	qrq = t + synth_rnd(s, 400, 200);
	sent = qrq + synth_rnd(s, 2000, 3000);
	tarr = sent + synth_rnd(s, 8000, 2000);
	pick = tarr + synth_rnd(s, 3000, 3000);
	exec = pick + synth_rnd(s, 2000, 1000);
	done = exec + synth_rnd(s, 20000, 20000);
	rs = done + synth_rnd(s, 4000, 4000);
	arr = rs + synth_rnd(s, 8000, 2000);
	proc = arr + synth_rnd(s, 3000, 3000);
	nd = proc + synth_rnd(s, 1500, 1000);
	synth_set(i, EV_I_BLK_START, t);
	synth_set(i, EV_I_BLK_ISSUE, qrq + 200);
	synth_set(i, EV_I_QUEUE_RQ, qrq);
	synth_set(i, EV_I_CMD_SENT, sent);
	synth_set(i, EV_I_RESP_ARRIVE, arr);
	synth_set(i, EV_I_RESP_PROC, proc);
	synth_set(i, EV_I_NVME_DONE, nd);
	synth_set(i, EV_I_BLK_DONE, nd + synth_rnd(s, 500, 300));
	g->role = NTBPF_ROLE_TARGET;
	g->flags = NTBPF_F_NVME;
	g->op = NTBPF_OP_READ;
	g->opcode = 2;
	g->bytes = 4096;
	g->dev = 1;
	g->ctrl = 1;
	g->qid = q + 1;
	g->cid = cid;
	g->sector = k;
	g->t0 = tarr + off;
	synth_set(g, EV_T_CMD_ARRIVE, tarr + off);
	synth_set(g, EV_T_CMD_PICKUP, pick + off);
	synth_set(g, EV_T_REQ_INIT, pick + off + 300);
	synth_set(g, EV_T_EXEC, exec + off);
	synth_set(g, EV_T_SUBSYS_DONE, done + off);
	synth_set(g, EV_T_RESP_QUEUED, done + off + 200);
	synth_set(g, EV_T_RESP_SENT, rs + off);
}

/* the pair of files of n I/Os: headers, records, trailers into open streams (not closed).  0, or -1 */
static inline int synth_write_pair(FILE *fi, FILE *ft, uint64_t n)
{
	struct nt_writer *w[2] = { NULL, NULL };
	FILE *f[2] = { fi, ft };
	struct synth sy;
	int rc = 0;

	for (int s = 0; s < 2; s++) {
		struct nt_header h;

		synth_header(&h, s ? NTBPF_ROLE_TARGET : NTBPF_ROLE_INITIATOR);
		w[s] = nt_writer_open(f[s], &h);
		nt_header_free(&h);
		rc |= w[s] ? 0 : -1;
	}
	synth_init(&sy);
	for (uint64_t k = 0; !rc && k < n; k++) {
		struct ntbpf_rec i, g;

		synth_pair(&sy, k, &i, &g);
		rc = nt_writer_add(w[0], &i) || nt_writer_add(w[1], &g) ? -1 : 0;
	}
	for (int s = 0; s < 2; s++) {
		struct nt_trailer tr = { .records = n };

		tr.stats[ST_EMITTED] = n;
		if (w[s] && nt_writer_close(w[s], &tr))
			rc = -1;
	}
	return rc;
}

/* the same into two new files at these paths: 0, or -1 */
static inline int synth_write_files(const char *pi, const char *pt, uint64_t n)
{
	FILE *fi = fopen(pi, "wb"), *ft = fopen(pt, "wb");
	int rc = fi && ft ? synth_write_pair(fi, ft, n) : -1;

	if (fi && fclose(fi))
		rc = -1;
	if (ft && fclose(ft))
		rc = -1;
	return rc;
}

#endif
