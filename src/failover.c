// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * failover.c - linking a request that ended in a path error to the request
 * that retried its bios on another path (failover.h).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "failover.h"
#include "names.h"

bool nt_fo_path_error(const struct ntbpf_rec *r)
{
	/* an initiator's NVMe status (nvme_complete_rq's), Status Code Type 3: path related */
	return r->role != NTBPF_ROLE_TARGET && (r->flags & NTBPF_F_NVME) && r->status &&
	       ((r->status >> 8) & 7) == 3;
}

void nt_fo_init(struct nt_failover *fo)
{
	memset(fo, 0, sizeof(*fo));
}

static void req_of(const struct ntbpf_rec *r, uint32_t host, uint64_t idx, struct nt_fo_req *q)
{
	q->start = r->t0;
	q->end = r->t0 + nt_rec_end(r);
	/* the failover happens in nvme_complete_rq: its retry starts after it */
	q->done = (r->ev_mask >> EV_I_NVME_DONE & 1) ? r->t0 + r->ev[EV_I_NVME_DONE] : q->end;
	q->sector = r->sector;
	q->idx = idx;
	q->dev = r->dev;
	q->bytes = r->bytes;
	q->host = host;
	q->status = r->status;
	q->ctrl = r->ctrl;
	q->op = r->op;
}

/* whether q can be the retry of f: the same bio (head, sector, size, op, host), started after f's completion */
static bool retries(const struct nt_fo_req *f, const struct nt_fo_req *q)
{
	return q->host == f->host && q->dev == f->dev && q->sector == f->sector && q->bytes == f->bytes &&
	       q->op == f->op && q->start >= f->done && q->idx != f->idx;
}

static void consider(struct nt_fo_open *o, const struct nt_fo_req *q)
{
	if (retries(&o->f, q) && (!o->has || q->start < o->best.start)) {
		o->best = *q;
		o->has = true;
	}
}

static int add_link(struct nt_failover *fo, const struct nt_fo_open *o)
{
	if (!o->has) {
		fo->unretried++;
		return 0;
	}
	if (fo->nlinks == fo->caplinks) {
		size_t cap = fo->caplinks ? 2 * fo->caplinks : 64;
		struct nt_fo_link *l = realloc(fo->links, cap * sizeof(*l));

		if (!l) {
			fo->oom = true;
			return -1;
		}
		fo->links = l;
		fo->caplinks = cap;
	}
	fo->links[fo->nlinks].first = o->f;
	fo->links[fo->nlinks++].retry = o->best;
	return 0;
}

/* the open path errors that have seen NT_FO_WINDOW records since they came: resolved */
static int close_old(struct nt_failover *fo, bool all)
{
	size_t k = 0;
	int rc = 0;

	for (size_t i = 0; i < fo->nopen; i++) {
		if (all || fo->fed - fo->open[i].at > NT_FO_WINDOW) {
			rc |= add_link(fo, &fo->open[i]);
			continue;
		}
		fo->open[k++] = fo->open[i];
	}
	fo->nopen = k;
	return rc;
}

uint32_t nt_fo_host(const struct nt_header *h)
{
	uint32_t x = 2166136261u;

	for (const char *c = h->boot_id; *c; c++)
		x = (x ^ (unsigned char)*c) * 16777619u;
	return x;
}

int nt_fo_feed(struct nt_failover *fo, const struct ntbpf_rec *r, uint32_t host, uint64_t idx)
{
	struct nt_fo_req q;

	if (r->role == NTBPF_ROLE_TARGET || !(r->flags & NTBPF_F_NVME) || !r->bytes)
		return 0;
	if (!fo->recent) {
		fo->recent = calloc(NT_FO_WINDOW, sizeof(*fo->recent));
		if (!fo->recent) {
			fo->oom = true;
			return -1;
		}
	}
	req_of(r, host, idx, &q);
	if (fo->work < NT_FO_BUDGET) {
		for (size_t i = 0; i < fo->nopen; i++)
			consider(&fo->open[i], &q);
		fo->work += fo->nopen;
	}
	if (nt_fo_path_error(r)) {
		struct nt_fo_open *o;

		/* bounded work per record: the oldest open one resolved with what it found */
		if (fo->nopen == NT_FO_OPEN) {
			size_t old = 0;

			for (size_t i = 1; i < fo->nopen; i++)
				old = fo->open[i].at < fo->open[old].at ? i : old;
			if (add_link(fo, &fo->open[old]))
				return -1;
			fo->open[old] = fo->open[--fo->nopen];
		}
		if (fo->nopen == fo->capopen) {
			size_t cap = fo->capopen ? 2 * fo->capopen : 16;

			o = realloc(fo->open, cap * sizeof(*o));
			if (!o) {
				fo->oom = true;
				return -1;
			}
			fo->open = o;
			fo->capopen = cap;
		}
		o = &fo->open[fo->nopen++];
		memset(o, 0, sizeof(*o));
		o->f = q;
		o->at = fo->fed;
		fo->path_errors++;
		/* its retry may have come first in the file (another CPU's ring drained first) */
		for (uint64_t i = 0; i < NT_FO_WINDOW && i < fo->fed && fo->work < NT_FO_BUDGET; i++, fo->work++)
			consider(o, &fo->recent[(fo->fed - 1 - i) & (NT_FO_WINDOW - 1)]);
	}
	fo->recent[fo->fed & (NT_FO_WINDOW - 1)] = q;
	fo->fed++;
	/* the window's end, checked every 256 records (a path error waits up to 255 more) */
	return fo->nopen && !(fo->fed & 255) ? close_old(fo, false) : 0;
}

static int link_cmp(const void *a, const void *b)
{
	const struct nt_fo_link *x = a, *y = b;

	if (x->first.start != y->first.start)
		return x->first.start < y->first.start ? -1 : 1;
	return x->first.idx < y->first.idx ? -1 : x->first.idx > y->first.idx;
}

int nt_fo_finish(struct nt_failover *fo)
{
	int rc = close_old(fo, true);

	if (fo->nlinks > 1)
		qsort(fo->links, fo->nlinks, sizeof(*fo->links), link_cmp);
	return rc || fo->oom ? -1 : 0;
}

static int idx_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* the link whose first request is record idx (a retry that failed again): by[] holds (first idx, link) pairs */
static const struct nt_fo_link *link_from(const struct nt_failover *fo, const uint64_t *by, uint64_t idx)
{
	const uint64_t *p = bsearch(&idx, by, fo->nlinks, 2 * sizeof(*by), idx_cmp);

	return p ? &fo->links[p[1]] : NULL;
}

static int dbl_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* nearest rank, as the report's percentiles */
static double rank(const double *v, size_t n, double pct)
{
	size_t k = (size_t)ceil(pct / 100.0 * (double)n);

	return v[k ? k - 1 : 0];
}

void nt_fo_summarize(const struct nt_failover *fo, struct nt_fo_summary *s)
{
	double *e2e = fo->nlinks ? malloc(fo->nlinks * sizeof(*e2e)) : NULL;
	uint64_t *by = fo->nlinks ? malloc(fo->nlinks * 2 * sizeof(*by)) : NULL;
	uint64_t *rt = fo->nlinks ? malloc(fo->nlinks * sizeof(*rt)) : NULL;
	double sum = 0;
	size_t n = 0;

	memset(s, 0, sizeof(*s));
	s->path_errors = fo->path_errors;
	s->unretried = fo->unretried;
	s->retries = fo->nlinks;
	if (fo->nlinks && (!e2e || !by || !rt)) {
		s->ios = fo->nlinks;	/* out of memory: every link an I/O, no times */
		goto out;
	}
	for (size_t i = 0; i < fo->nlinks; i++) {
		by[2 * i] = fo->links[i].first.idx;
		by[2 * i + 1] = i;
		rt[i] = fo->links[i].retry.idx;
	}
	if (fo->nlinks > 1) {
		qsort(by, fo->nlinks, 2 * sizeof(*by), idx_cmp);
		qsort(rt, fo->nlinks, sizeof(*rt), idx_cmp);
	}
	for (size_t i = 0; i < fo->nlinks; i++) {
		const struct nt_fo_link *l = &fo->links[i], *next;
		size_t hops = 0;

		/* a later try of a chain: counted from the chain's first request */
		if (bsearch(&l->first.idx, rt, fo->nlinks, sizeof(*rt), idx_cmp))
			continue;
		while (hops++ < fo->nlinks && (next = link_from(fo, by, l->retry.idx)))
			l = next;
		s->ios++;
		e2e[n] = (double)(l->retry.end - fo->links[i].first.start) / 1000.0;
		sum += e2e[n++];
	}
	if (n) {
		qsort(e2e, n, sizeof(*e2e), dbl_cmp);
		s->e2e_avg_us = sum / (double)n;
		s->e2e_p50_us = rank(e2e, n, 50);
		s->e2e_p99_us = rank(e2e, n, 99);
		s->e2e_max_us = e2e[n - 1];
	}
out:
	free(e2e);
	free(by);
	free(rt);
}

void nt_fo_free(struct nt_failover *fo)
{
	free(fo->recent);
	free(fo->open);
	free(fo->links);
	memset(fo, 0, sizeof(*fo));
}
