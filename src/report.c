// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * report.c - aggregation and rendering.  Each I/O contributes one value per
 * stage it has to its group's histograms; groups are few (op x size x device
 * x queue), so they live in a small array, searched from the last one used.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include "match.h"
#include "report.h"
#include "escape.h"
#include "sysinfo.h"

static const char *const op_names[NTBPF_OP_NR] = {
	[NTBPF_OP_READ] = "read", [NTBPF_OP_WRITE] = "write", [NTBPF_OP_FLUSH] = "flush",
	[NTBPF_OP_DISCARD] = "discard", [NTBPF_OP_WRITE_ZEROES] = "write_zeroes",
	[NTBPF_OP_OTHER] = "other",
};

const char *nt_op_name(uint8_t op)
{
	return op < NTBPF_OP_NR ? op_names[op] : "other";
}

/* ---- grouping ---- */

/* what a group is keyed on (struct nt_group is large: never build one per record) */
struct gkey {
	uint32_t size, dev;
	int dev_role;
	uint16_t ctrl, qid;
	uint8_t op;
	bool has_queue;
};

static bool same_group(const struct nt_group *g, const struct gkey *k)
{
	return g->op == k->op && g->size == k->size && g->dev_role == k->dev_role && g->dev == k->dev &&
	       g->has_queue == k->has_queue && g->ctrl == k->ctrl && g->qid == k->qid;
}

static struct nt_group *group_for(struct nt_report *rep, const struct ntbpf_rec *r)
{
	unsigned int gb = rep->o->group_by;
	struct gkey key = { .op = 0xff };
	struct nt_group *g;
	int i;

	if (gb & NT_GB_OP)
		key.op = r->op;
	if (gb & NT_GB_SIZE)
		key.size = r->bytes;
	if (gb & NT_GB_DEV) {
		key.dev_role = r->role;
		key.dev = r->dev;
	}
	if ((gb & NT_GB_QUEUE) && (r->flags & NTBPF_F_NVME)) {
		key.has_queue = true;
		key.ctrl = r->ctrl;
		key.qid = r->qid;
	}
	/* records come in runs of the same group: try the last one first */
	if (rep->last_group < rep->ngroups && same_group(&rep->groups[rep->last_group], &key))
		return &rep->groups[rep->last_group];
	for (i = 0; i < rep->ngroups; i++)
		if (same_group(&rep->groups[i], &key)) {
			rep->last_group = i;
			return &rep->groups[i];
		}
	g = realloc(rep->groups, (rep->ngroups + 1) * sizeof(*g));
	if (!g)
		return NULL;
	rep->groups = g;
	rep->last_group = rep->ngroups;
	g = &rep->groups[rep->ngroups++];
	memset(g, 0, sizeof(*g));
	g->op = key.op;
	g->size = key.size;
	g->dev_role = key.dev_role;
	g->dev = key.dev;
	g->has_queue = key.has_queue;
	g->ctrl = key.ctrl;
	g->qid = key.qid;
	for (i = 0; i < NT_ST_NR; i++)
		nt_hist_init(&g->h[i]);
	return g;
}

int nt_report_add_kh(struct nt_report *rep, const struct nt_kh_key *k, const uint64_t *buckets, uint64_t count,
		     uint64_t sum)
{
	struct ntbpf_rec r = { .role = k->role, .op = k->op, .bytes = k->bytes, .dev = k->dev };
	struct nt_group *g = group_for(rep, &r);
	uint64_t seen = 0;

	if (!g)
		return -1;
	g->used = true;
	if (k->stage >= NT_ST_NR) {
		g->count += count;
		if (k->role == NTBPF_ROLE_TARGET)
			rep->n_tgt += count;
		else
			rep->n_init += count;
		return 0;
	}
	rep->stages_seen |= 1u << k->stage;
	for (uint32_t b = 0; b < NT_KH_NB; b++) {
		if (!buckets[b])
			continue;
		seen += buckets[b];
		/* the exact total goes with the first bucket: the average stays exact */
		if (nt_hist_add_n(&g->h[k->stage], nt_kh_value(b), buckets[b], seen == buckets[b] ? sum : 0))
			return -1;
	}
	return 0;
}

#define NO_GROUP UINT32_MAX

/* what a report keeps of a record: its own host's stages, and its group (tag) if group */
static int summarize(struct nt_report *rep, const struct ntbpf_rec *r, uint8_t role, bool group, struct nt_sum *s)
{
	s->tag = NO_GROUP;
	if (group) {
		struct nt_group *g = group_for(rep, r);

		if (!g)
			return -1;
		s->tag = (uint32_t)(g - rep->groups);
	}
	nt_sum_of(r, role, s);
	return 0;
}

/* one I/O: its initiator's and/or its target's summary; the group is the initiator's if there is one */
static int add_pair(struct nt_report *rep, const struct nt_sum *si, const struct nt_sum *st)
{
	uint64_t vals[NT_ST_NR];
	uint32_t mask, stand_in;
	bool neg;
	struct nt_group *g = &rep->groups[si ? si->tag : st->tag];

	mask = nt_sum_combine(si, st, vals, &stand_in, &neg);
	if (neg)
		rep->neg_network++;
	g->used = true;
	g->count++;
	if ((mask & NT_TEN_MASK) == NT_TEN_MASK && (mask & (1u << NT_ST_E2E))) {
		/* the ten tile end_to_end: a self-check the report carries (lab-tested to be 0) */
		uint64_t sum = 0, d;

		for (uint32_t left = NT_TEN_MASK; left; left &= left - 1)
			sum += vals[__builtin_ctz(left)];
		d = sum > vals[NT_ST_E2E] ? sum - vals[NT_ST_E2E] : vals[NT_ST_E2E] - sum;
		g->full++;
		if (d > g->full_resid)
			g->full_resid = d;
	}
	rep->stages_seen |= mask;
	for (uint32_t left = mask; left; left &= left - 1) {
		int s = __builtin_ctz(left);

		if (nt_hist_add(&g->h[s], vals[s]))
			return -1;
	}
	for (uint32_t left = stand_in & mask; left; left &= left - 1)
		g->stand_in[__builtin_ctz(left)]++;
	return 0;
}

int nt_report_add(struct nt_report *rep, const struct ntbpf_rec *init, const struct ntbpf_rec *tgt)
{
	struct nt_sum si, st;

	if (init && summarize(rep, init, NTBPF_ROLE_INITIATOR, true, &si))
		return -1;
	if (tgt && summarize(rep, tgt, NTBPF_ROLE_TARGET, !init, &st))
		return -1;
	if (!init && !tgt)
		return 0;
	return add_pair(rep, init ? &si : NULL, tgt ? &st : NULL);
}

static int group_cmp(const void *a, const void *b)
{
	const struct nt_group *x = a, *y = b;

	if (x->op != y->op)
		return x->op < y->op ? -1 : 1;
	if (x->size != y->size)
		return x->size < y->size ? -1 : 1;
	if (x->dev_role != y->dev_role)
		return x->dev_role < y->dev_role ? -1 : 1;
	if (x->dev != y->dev)
		return x->dev < y->dev ? -1 : 1;
	if (x->ctrl != y->ctrl)
		return x->ctrl < y->ctrl ? -1 : 1;
	if (x->qid != y->qid)
		return x->qid < y->qid ? -1 : 1;
	return (int)x->has_queue - (int)y->has_queue;
}

/* what the files' trailers say was lost */
static void count_lost(struct nt_report *rep, const struct nt_input *ins, int nins)
{
	for (int i = 0; i < nins; i++) {
		const struct nt_input *in = &ins[i];

		if (!in->has_trailer)
			continue;
		rep->lost_why[0] += in->trailer.stats[ST_LOST_RINGBUF];
		rep->lost_why[1] += in->trailer.stats[ST_LOST_MAP_FULL];
		rep->lost_why[2] += in->trailer.stats[ST_PROG_MISSES];
		rep->lost_why[3] += in->trailer.stats[ST_NO_COMPLETE];
		rep->lost_why[4] += in->trailer.lost_user;
		rep->lost += in->trailer.stats[ST_LOST_RINGBUF] + in->trailer.stats[ST_LOST_MAP_FULL] +
			     in->trailer.stats[ST_PROG_MISSES] + in->trailer.stats[ST_NO_COMPLETE] +
			     in->trailer.lost_user;
		rep->no_start += in->trailer.stats[ST_NO_START];
		rep->inflight_end += in->trailer.stats[ST_INFLIGHT_END];
	}
}

static void count_matched(struct nt_report *rep)
{
	uint64_t out_tgt = rep->outside - rep->outside_pairs - rep->outside_init;

	rep->admin += rep->m.admin;
	rep->n_init = rep->m.n_init;
	rep->n_tgt = rep->m.n_tgt;
	/* I/Os that started outside --since/--until are left out of these too */
	rep->matched = rep->m.matched - rep->outside_pairs;
	rep->unmatched_init = rep->m.n_init - rep->m.matched - rep->outside_init;
	rep->unmatched_tgt = rep->m.n_tgt - rep->m.matched - out_tgt;
}

int nt_report_build(struct nt_report *rep, const struct nt_input *ins, int nins,
		    const struct nt_report_opts *o)
{
	nt_report_begin(rep, ins, nins, o);
	count_lost(rep, ins, nins);
	if (nt_match_build(&rep->m, ins, nins))
		return -1;
	count_matched(rep);
	for (size_t k = 0; k < rep->m.n_init; k++)
		if (nt_report_add(rep, rep->m.init[k], rep->m.partner[k]))
			return -1;
	for (size_t k = 0; k < rep->m.n_tgt; k++)
		if (!rep->m.tgt_matched[k] && nt_report_add(rep, NULL, rep->m.tgt[k]))
			return -1;
	nt_report_finish(rep);
	return 0;
}

/*
 * What a file report keeps of a record: its summary, and with
 * --since/--until its start on the wall clock (without them the summary
 * only: io_size()).
 */
struct io_sum {
	struct nt_sum s;
	int64_t wall;
};

static inline bool timed(const struct nt_report *rep)
{
	return rep->since_set || rep->until_set;
}

static size_t io_size(const struct nt_report *rep)
{
	return timed(rep) ? sizeof(struct io_sum) : sizeof(struct nt_sum);
}

static int sum_io(struct nt_report *rep, const struct ntbpf_rec *r, const struct nt_header *h, uint8_t role,
		  struct io_sum *io)
{
	if (timed(rep))
		io->wall = (int64_t)r->t0 - (int64_t)h->mono_ns + (int64_t)h->real_ns;
	/* a target's group is needed only if it stays unmatched: nt_report_finish drops unused ones */
	return summarize(rep, r, role, true, &io->s);
}

/* one I/O of a file report: into its group, unless it started outside --since/--until (counted) */
static int add_io(struct nt_report *rep, const struct io_sum *si, const struct io_sum *st)
{
	int64_t t = !timed(rep) ? 0 : si ? si->wall : st->wall;

	if (timed(rep) && ((rep->since_set && t < rep->since_ns) || (rep->until_set && t >= rep->until_ns))) {
		rep->outside++;
		rep->outside_pairs += si && st;
		rep->outside_init += si && !st;
		return 0;
	}
	return add_pair(rep, si ? &si->s : NULL, st ? &st->s : NULL);
}

/* the file report's state: per side, each record's item (matching) and summary (stages) */
struct stream {
	struct nt_report *rep;
	struct nt_vec ii, si, ti, st;
};

static int take_record(void *ctx, struct nt_input *in, const struct ntbpf_rec *r)
{
	struct stream *c = ctx;
	struct nt_mitem *x;
	struct io_sum *s;
	bool no_cntlid, tgt;

	if (r->flags & NTBPF_F_ADMIN) {
		c->rep->m.admin++;
		return 0;
	}
	/* straight into the arrays */
	tgt = r->role == NTBPF_ROLE_TARGET;
	x = nt_vec_push(tgt ? &c->ti : &c->ii);
	s = nt_vec_push(tgt ? &c->st : &c->si);
	if (!x || !s)
		return -1;
	nt_mitem_of(r, &in->hdr, x, &no_cntlid);
	x->idx = (uint32_t)((tgt ? c->ti.n : c->ii.n) - 1);
	c->rep->m.no_cntlid += no_cntlid;
	return sum_io(c->rep, r, &in->hdr, tgt ? NTBPF_ROLE_TARGET : NTBPF_ROLE_INITIATOR, s);
}

/* streaming (nt_smatch_run): a record's payload is its struct io_sum */
static int take_sum(void *ctx, const struct ntbpf_rec *r, const struct nt_header *h, uint8_t role, void *pay)
{
	return sum_io(ctx, r, h, role, pay);
}

static int emit_sums(void *ctx, const void *si, const void *st)
{
	return add_io(ctx, si, st);
}

struct file_src {
	struct nt_input *in;
	struct nt_reader *rd;
	FILE *f;
};

/*
 * The files of one source: one file, or the series one "record --rotate"
 * wrote (same role, host, boot and command line), read as one stream in the
 * order of their start.  The source's header is the current file's.
 */
struct series {
	struct file_src **fs;
	int n, cur;
	struct nt_ssrc *src;
};

static size_t series_chunk(void *ctx, const struct ntbpf_rec **recs)
{
	struct series *se = ctx;

	for (; se->cur < se->n; se->cur++) {
		struct file_src *f = se->fs[se->cur];
		size_t k;

		se->src->hdr = &f->in->hdr;
		if ((k = nt_input_chunk(f->in, f->rd, recs)))
			return k;
	}
	return 0;
}

/* a series read again from the start (struct nt_ssrc's reopen), each regular file through a descriptor of its own */
struct series_again {
	const struct series *se;
	int cur;
	struct nt_input in;
	struct nt_reader *rd;
	FILE *f;
	struct nt_ssrc *self;
};

static void again_end(struct series_again *a)
{
	if (a->rd)
		nt_reader_close(a->rd);
	if (a->f)
		fclose(a->f);
	nt_header_free(&a->in.hdr);
	a->rd = NULL;
	a->f = NULL;
}

/* file a->cur of the series, open again: 0, or -1 (not a regular file, or unreadable) */
static int again_open(struct series_again *a)
{
	FILE *orig = a->se->fs[a->cur]->f;
	struct stat st;
	char path[64], err[200];

	if (fileno(orig) < 0 || fstat(fileno(orig), &st) || !S_ISREG(st.st_mode))
		return -1;
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fileno(orig));
	a->f = fopen(path, "rb");
	if (!a->f || !(a->rd = nt_input_open(&a->in, a->f, path, err, sizeof(err)))) {
		again_end(a);
		return -1;
	}
	a->self->hdr = &a->in.hdr;
	return 0;
}

static size_t again_chunk(void *ctx, const struct ntbpf_rec **recs)
{
	struct series_again *a = ctx;
	size_t k = 0;

	while (a->rd && !(k = nt_reader_chunk(a->rd, recs))) {
		again_end(a);
		if (++a->cur >= a->se->n || again_open(a))
			return 0;
	}
	return k;
}

static void again_close(struct nt_ssrc *again)
{
	struct series_again *a = again->ctx;

	again_end(a);
	free(a);
}

static int series_reopen(void *ctx, struct nt_ssrc *again)
{
	struct series_again *a = calloc(1, sizeof(*a));

	if (!a)
		return -1;
	a->se = ctx;
	a->self = again;
	*again = (struct nt_ssrc){ .chunk = again_chunk, .ctx = a, .close = again_close };
	if (again_open(a)) {
		free(a);
		return -1;
	}
	return 0;
}

static int start_cmp(const void *a, const void *b)
{
	const struct file_src *x = *(struct file_src *const *)a, *y = *(struct file_src *const *)b;

	return x->in->hdr.mono_ns < y->in->hdr.mono_ns ? -1 : x->in->hdr.mono_ns > y->in->hdr.mono_ns;
}

/* file b continues file a's series: both written by one "record --rotate" (else files are never joined) */
static bool same_series(const struct nt_header *a, const struct nt_header *b)
{
	return a->role == b->role && a->boot_id[0] && strstr(a->cmdline, "--rotate") && !strcmp(a->boot_id, b->boot_id) &&
	       !strcmp(a->hostname, b->hostname) && !strcmp(a->cmdline, b->cmdline);
}

/*
 * The sources: each file alone, or with the rest of its series.  se[] gets
 * them (se[k].fs points into order[]), src[] their nt_ssrc; returns how
 * many, or -1.
 */
static int sources_of(struct file_src *fs, int n, struct file_src **order, struct series *se, struct nt_ssrc *src)
{
	int ns = 0, used = 0;
	bool *taken = calloc(n ? n : 1, sizeof(*taken));

	if (!taken)
		return -1;
	for (int i = 0; i < n; i++) {
		if (taken[i])
			continue;
		se[ns] = (struct series){ .fs = &order[used], .src = &src[ns] };
		for (int j = i; j < n; j++)
			if (j == i || (!taken[j] && same_series(&fs[i].in->hdr, &fs[j].in->hdr))) {
				taken[j] = true;
				order[used++] = &fs[j];
				se[ns].n++;
			}
		qsort(se[ns].fs, se[ns].n, sizeof(se[ns].fs[0]), start_cmp);
		src[ns] = (struct nt_ssrc){ .hdr = &se[ns].fs[0]->in->hdr, .chunk = series_chunk, .ctx = &se[ns],
					    .reopen = series_reopen };
		ns++;
	}
	free(taken);
	return ns;
}

/* more files of both sides: every record's item and summary in memory, then nt_match_items */
static int build_whole(struct nt_report *rep, struct nt_input *ins, struct file_src *fs, int n)
{
	struct stream c = { .rep = rep, .ii.sz = sizeof(struct nt_mitem), .ti.sz = sizeof(struct nt_mitem),
			    .si.sz = io_size(rep), .st.sz = io_size(rep) };
	size_t *init_at = calloc(n + 1, sizeof(*init_at)), *tgt_at = calloc(n + 1, sizeof(*tgt_at));
	const struct nt_header **hdrs = calloc(n + 1, sizeof(*hdrs));
	const unsigned char *si, *st;
	const struct ntbpf_rec *r;
	size_t sz = io_size(rep);
	int rc = -1;

	if (!init_at || !tgt_at || !hdrs)
		goto out;
	for (int i = 0; i < n; i++) {
		size_t k;

		while ((k = nt_input_chunk(&ins[i], fs[i].rd, &r)))
			for (size_t j = 0; j < k; j++)
				if (take_record(&c, &ins[i], &r[j]))
					goto out;
		hdrs[i] = &ins[i].hdr;
		init_at[i + 1] = c.ii.n;
		tgt_at[i + 1] = c.ti.n;
	}
	rep->m.n_init = c.ii.n;
	rep->m.n_tgt = c.ti.n;
	if (nt_match_items(&rep->m, c.ii.v, init_at, c.ti.v, tgt_at, hdrs, n))
		goto out;
	si = c.si.v;
	st = c.st.v;
	/* the summaries are io_size() apart */
	for (size_t k = 0; k < rep->m.n_init; k++)
		if (add_io(rep, (const void *)(si + k * sz),
			   rep->m.pidx[k] ? (const void *)(st + (rep->m.pidx[k] - 1) * sz) : NULL))
			goto out;
	for (size_t k = 0; k < rep->m.n_tgt; k++)
		if (!rep->m.tgt_matched[k] && add_io(rep, NULL, (const void *)(st + k * sz)))
			goto out;
	rc = 0;
out:
	free(c.ii.v);
	free(c.ti.v);
	free(c.si.v);
	free(c.st.v);
	free(init_at);
	free(tgt_at);
	free(hdrs);
	return rc;
}

/* --since/--until on the wall clock: seconds from the start count from the earliest file's start */
static void set_window(struct nt_report *rep, const struct nt_input *ins, int n)
{
	const struct nt_report_opts *o = rep->o;
	int64_t start = INT64_MAX;

	for (int i = 0; i < n; i++)
		start = (int64_t)ins[i].hdr.real_ns < start ? (int64_t)ins[i].hdr.real_ns : start;
	rep->since_set = o->since.set;
	rep->until_set = o->until.set;
	rep->since_ns = o->since.rel && n ? start + o->since.ns : o->since.ns;
	rep->until_ns = o->until.rel && n ? start + o->until.ns : o->until.ns;
}

/*
 * One initiator (a file, or a series) against one target, and any number of
 * sources with nothing to pair: read side by side in bounded memory
 * (src/match.h, nt_smatch_run).  More of both sides, a fleet: every
 * initiator source against every target source (nt_smatch_fleet), or from
 * standard input whole (nt_match_items).
 */
static int build_sources(struct nt_report *rep, struct nt_input *ins, struct file_src *fs, int n)
{
	struct nt_smatch_ops ops = { .payload = io_size(rep), .take = take_sum, .emit = emit_sums,
				     .ctx = rep };
	struct file_src **order = calloc(n ? n : 1, sizeof(*order));
	struct series *se = calloc(n ? n : 1, sizeof(*se));
	struct nt_ssrc *src = calloc(n ? n : 1, sizeof(*src));
	uint64_t window = rep->o->window_ns ? rep->o->window_ns : NT_PAIR_WINDOW_NS;
	int ns = -1, a = -1, b = -1, na = 0, nb = 0, rc = -1;

	if (!order || !se || !src || (ns = sources_of(fs, n, order, se, src)) < 0)
		goto out;
	for (int k = 0; k < ns; k++) {
		if (src[k].hdr->role == NTBPF_ROLE_INITIATOR) {
			a = k;
			na++;
		} else if (src[k].hdr->role == NTBPF_ROLE_TARGET) {
			b = k;
			nb++;
		}
	}
	if (na && nb && na + nb > 2) {
		rc = nt_smatch_fleet(&rep->m, src, ns, window, &ops);
		if (rc == -2)
			rc = build_whole(rep, ins, fs, n);
		goto out;
	}
	rc = 0;
	if (na == 1 && nb == 1)
		rc = nt_smatch_run(&rep->m, &src[a], &src[b], window, &ops);
	else
		a = b = -1;
	for (int k = 0; !rc && k < ns; k++)
		if (k != a && k != b)
			rc = nt_smatch_run(&rep->m, src[k].hdr->role == NTBPF_ROLE_TARGET ? NULL : &src[k],
					   src[k].hdr->role == NTBPF_ROLE_TARGET ? &src[k] : NULL, 0, &ops);
out:
	free(order);
	free(se);
	free(src);
	return rc;
}

int nt_report_build_files(struct nt_report *rep, struct nt_input *ins, FILE *const *files, const char *const *names,
			  int n, const struct nt_report_opts *o, FILE *warn, char *err, size_t errlen)
{
	struct file_src *fs = calloc(n ? n : 1, sizeof(*fs));
	int opened = 0, rc = -1;

	nt_report_begin(rep, ins, n, o);
	if (!fs) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	for (int i = 0; i < n; i++, opened++) {
		char sub[200];

		fs[i].in = &ins[i];
		fs[i].f = files[i];
		fs[i].rd = nt_input_open(&ins[i], files[i], names[i], sub, sizeof(sub));
		if (!fs[i].rd) {
			char path[256];

			snprintf(err, errlen, "%s: %s", nt_esc_term(path, sizeof(path), names[i]), sub);
			rep->nins = i + 1;	/* its header is loaded: nt_report_free's caller frees it */
			goto out;
		}
	}
	set_window(rep, ins, n);
	if (build_sources(rep, ins, fs, n)) {
		snprintf(err, errlen, "out of memory");
		goto out;
	}
	rc = 0;
out:
	for (int i = 0; i < opened; i++) {
		nt_input_close(&ins[i], fs[i].rd);
		if (!rc && ins[i].status != NT_READ_OK && warn) {
			fputs("ntbpf report: warning: ", warn);
			nt_put_term(warn, names[i]);
			fputs(": ", warn);
			nt_put_term(warn, ins[i].status_msg);
			fputc('\n', warn);
		}
	}
	free(fs);
	if (!rc) {
		count_lost(rep, ins, n);
		count_matched(rep);
		nt_report_finish(rep);
	}
	return rc;
}

void nt_report_begin(struct nt_report *rep, const struct nt_input *ins, int nins, const struct nt_report_opts *o)
{
	memset(rep, 0, sizeof(*rep));
	rep->o = o;
	rep->ins = ins;
	rep->nins = nins;
}

void nt_report_finish(struct nt_report *rep)
{
	int n = 0;

	for (int i = 0; i < rep->ngroups; i++) {
		if (!rep->groups[i].used) {
			for (int s = 0; s < NT_ST_NR; s++)
				nt_hist_free(&rep->groups[i].h[s]);
			continue;
		}
		rep->groups[n++] = rep->groups[i];
	}
	rep->ngroups = n;
	rep->last_group = 0;
	if (rep->ngroups > 1)
		qsort(rep->groups, rep->ngroups, sizeof(*rep->groups), group_cmp);
}

void nt_report_clear_groups(struct nt_report *rep)
{
	for (int i = 0; i < rep->ngroups; i++)
		for (int s = 0; s < NT_ST_NR; s++)
			nt_hist_free(&rep->groups[i].h[s]);
	free(rep->groups);
	rep->groups = NULL;
	rep->ngroups = 0;
	rep->stages_seen = 0;
}

void nt_report_free(struct nt_report *rep)
{
	nt_report_clear_groups(rep);
	nt_match_free(&rep->m);
	memset(rep, 0, sizeof(*rep));
}

/* ---- naming ---- */

/* header DEV items are "name=major:minor" */
static void dev_name(const struct nt_report *rep, int role, uint32_t dev, char *buf, size_t len)
{
	unsigned int maj = dev >> 20, min = dev & 0xfffff;

	if (role == NTBPF_ROLE_TARGET) {
		snprintf(buf, len, "nsid%u", dev);
		return;
	}
	for (int i = 0; i < rep->nins; i++) {
		const struct nt_header *h = &rep->ins[i].hdr;

		if (h->role == NTBPF_ROLE_TARGET)
			continue;
		for (uint32_t k = 0; k < h->ndevs; k++) {
			const char *eq = strchr(h->devs[k], '=');
			unsigned int a, b;

			if (eq && sscanf(eq + 1, "%u:%u", &a, &b) == 2 && a == maj && b == min) {
				snprintf(buf, len, "%.*s", (int)(eq - h->devs[k]), h->devs[k]);
				return;
			}
		}
	}
	if (dev == NTBPF_NO_DEV)
		snprintf(buf, len, "-");
	else
		snprintf(buf, len, "%u:%u", maj, min);
}

void nt_report_dev_name(const struct nt_report *rep, int role, uint32_t dev, char *buf, size_t len)
{
	dev_name(rep, role, dev, buf, len);
}

static void queue_name(const struct nt_group *g, char *buf, size_t len)
{
	if (!g->has_queue)
		snprintf(buf, len, "-");
	else if (g->dev_role == NTBPF_ROLE_TARGET)
		snprintf(buf, len, "cntlid%uq%u", g->ctrl, g->qid);
	else
		snprintf(buf, len, "nvme%uq%u", g->ctrl, g->qid);
}

static void pct_key(double p, char *buf, size_t len)
{
	/* 50 -> "p50", 99.9 -> "p99.9" */
	snprintf(buf, len, "p%g", p);
}

static double us(uint64_t ns)
{
	return ns / 1000.0;
}

/* hooks of every input that did not attach */
static int hooks_missing(const struct nt_report *rep)
{
	int n = 0;

	for (int i = 0; i < rep->nins; i++)
		for (uint32_t k = 0; k < rep->ins[i].hdr.nhooks; k++)
			n += strcmp(rep->ins[i].hdr.hooks[k].status, "attached") != 0;
	return n;
}

/* ---- text ---- */

static void print_notes_text(FILE *out, const struct nt_report *rep)
{
	fprintf(out, "# lost records: %" PRIu64, rep->lost);
	if (rep->lost) {
		/* what each count means for the report: a skipped run loses events, not the record */
		static const char *const why[5] = {
			"ring buffer full", "in-flight map full",
			"program runs the kernel skipped (their I/Os miss the events those runs would have taken)",
			"completions never seen", "not written by user space",
		};
		const char *sep = " (";

		for (int k = 0; k < 5; k++)
			if (rep->lost_why[k]) {
				fprintf(out, "%s%s: %" PRIu64, sep, why[k], rep->lost_why[k]);
				sep = "; ";
			}
		if (strcmp(sep, " ("))
			fputc(')', out);
	}
	fputc('\n', out);
	fprintf(out, "# matched: %" PRIu64 "; unmatched: initiator %" PRIu64 ", target %" PRIu64 "\n",
		rep->matched, rep->unmatched_init, rep->unmatched_tgt);
	if (rep->no_start || rep->inflight_end)
		fprintf(out, "# in flight when recording began: %" PRIu64 ", when it stopped: %" PRIu64
			" (not recorded)\n", rep->no_start, rep->inflight_end);
	if (rep->admin)
		fprintf(out, "# admin-queue commands left out: %" PRIu64 "\n", rep->admin);
	if (rep->m.have_offset && rep->n_tgt && rep->n_init) {
		fprintf(out, "# target clock = initiator clock %+.3f ms (estimated from %zu I/Os", rep->m.offset_ns / 1e6,
			rep->m.offset_votes);
		/* below 10 us it is the estimates' own spread */
		if (rep->m.offset_drift_ns >= 10000 || rep->m.offset_drift_ns <= -10000)
			fprintf(out, "; drifting %+.3f ms by the end, followed", rep->m.offset_drift_ns / 1e6);
		fprintf(out, "; used only to pair I/Os)\n");
	}
	if (rep->m.no_cntlid)
		fprintf(out, "# initiator I/Os whose controller the header does not name (cannot match): %zu\n",
			rep->m.no_cntlid);
	if (rep->matched > rep->m.by_port)
		fprintf(out, "# paired without the queue's TCP port (a file from an older ntbpf): %" PRIu64 "\n",
			rep->matched - (uint64_t)rep->m.by_port);
	if (rep->m.shared_cntlid && rep->n_tgt)
		fprintf(out, "# initiator I/Os on controllers that share a cntlid (two subsystems) and lack"
			" the queue's TCP port: %zu; paired by queue, command id and timing only\n",
			rep->m.shared_cntlid);
	if (rep->since_set || rep->until_set)
		fprintf(out, "# I/Os that started outside --since/--until, left out: %" PRIu64 "\n", rep->outside);
	if (rep->m.slow_init || rep->m.slow_tgt)
		fprintf(out, "# I/Os slower than the pairing window (--window %.3g s): initiator %zu, target %zu;"
			" paired only where the partner was still held\n", rep->m.window_ns / 1e9, rep->m.slow_init,
			rep->m.slow_tgt);
	if (rep->neg_network)
		fprintf(out, "# network_transmission left out where negative: %" PRIu64 " I/Os\n", rep->neg_network);
	for (int i = 0; i < rep->nins; i++) {
		const struct nt_header *h = &rep->ins[i].hdr;

		for (uint32_t k = 0; k < h->nhooks; k++)
			if (strcmp(h->hooks[k].status, "attached")) {
				fprintf(out, "# %s: hook ", nt_role_name(h->role));
				nt_put_term(out, h->hooks[k].name);
				fputs(" not attached (", out);
				nt_put_term(out, h->hooks[k].status);
				fputs("); ", out);
				nt_put_term(out, h->hooks[k].boundary[0] ? h->hooks[k].boundary : "its stage is not measured");
				fputc('\n', out);
			}
	}
	if (!(rep->stages_seen & ~((1u << NT_ST_BLK_SUB) | (1u << NT_ST_BLK_DEVICE) | (1u << NT_ST_E2E))) &&
	    rep->n_init)
		fprintf(out, "# no nvme_tcp events: blk_submission ends at block_rq_issue; the rest is blk_device\n");
	if (rep->n_init && !rep->n_tgt)
		fprintf(out, "# no target records: target stages and network_transmission not measured\n");
	if (rep->n_tgt && !rep->n_init)
		fprintf(out, "# no initiator records: host stages and network_transmission not measured\n");
}

/* one group's table; secs > 0 adds IOPS (live intervals) */
static void print_group_text(FILE *out, const struct nt_report *rep, const struct nt_group *g, double secs)
{
	const struct nt_report_opts *o = rep->o;
	char name[64], q[32], key[16];


	dev_name(rep, g->dev_role, g->dev, name, sizeof(name));
	queue_name(g, q, sizeof(q));
	if (o->group_by & NT_GB_SIZE)
		snprintf(q, sizeof(q), "%u", g->size);
	else
		snprintf(q, sizeof(q), "all");
	fprintf(out, "group: op=%s size=%s dev=", g->op == 0xff ? "all" : nt_op_name(g->op), q);
	nt_put_term(out, (o->group_by & NT_GB_DEV) ? name : "all");	/* a name from a file */
	queue_name(g, q, sizeof(q));
	if (o->group_by & NT_GB_QUEUE)
		fprintf(out, " queue=%s", q);
	if (secs > 0)
		fprintf(out, " I/Os=%" PRIu64 " IOPS=%.0f\n", g->count, g->count / secs);
	else
		fprintf(out, " I/Os=%" PRIu64 "\n", g->count);
	fprintf(out, "%-22s %10s %10s", "stage", "count", "avg_us");
	for (int p = 0; p < o->npcts; p++) {
		pct_key(o->pcts[p], key, sizeof(key));
		strcat(key, "_us");
		fprintf(out, " %10s", key);
	}
	fputc('\n', out);
	for (int k = 0; k < NT_ST_NR; k++) {
		/* the stages that add up, then end_to_end, then the two spans they split */
		int s = nt_stage_at_row[k];
		const struct nt_hist *h = &g->h[s];

		if (!h->count && !o->verbose)
			continue;
		if (s == NT_ST_E2E)
			fputs("----\n", out);
		fprintf(out, "%-22s %10" PRIu64 " %10.2f", nt_stage_name(s), h->count, h->count ? nt_hist_mean(h) / 1000.0 : 0.0);
		for (int p = 0; p < o->npcts; p++)
			fprintf(out, " %10.2f", us(nt_hist_percentile(h, o->pcts[p])));
		if (g->stand_in[s])
			fprintf(out, "  (stand-in on %" PRIu64 ")", g->stand_in[s]);
		fputc('\n', out);
	}
}

static void print_text(FILE *out, const struct nt_report *rep)
{
	fprintf(out, "# ntbpf report\n");
	for (int i = 0; i < rep->nins; i++) {
		const struct nt_input *in = &rep->ins[i];

		/* the strings come from the file: escaped, so that they cannot make lines or drive the terminal */
		fputs("# input ", out);
		nt_put_term(out, in->path);
		fprintf(out, ": %s on ", nt_role_name(in->hdr.role));
		nt_put_term(out, in->hdr.hostname);
		fputs(", kernel ", out);
		nt_put_term(out, in->hdr.kernel);
		fprintf(out, ", %zu records", in->n);
		if (in->hdr.sample > 1 && in->hdr.sample_window_ms)
			fprintf(out, ", sampled: %u ms windows, one in %u", in->hdr.sample_window_ms, in->hdr.sample);
		else if (in->hdr.sample > 1)
			fprintf(out, ", sampled: about 1 I/O in %u", in->hdr.sample);
		fputs(in->status == NT_READ_OK ? "" : ", ", out);
		nt_put_term(out, in->status == NT_READ_OK ? "" : in->status_msg);
		fputc('\n', out);
	}
	print_notes_text(out, rep);
	for (int gi = 0; gi < rep->ngroups; gi++) {
		fputc('\n', out);
		print_group_text(out, rep, &rep->groups[gi], 0);
	}
	if (!rep->ngroups)
		fprintf(out, "\nno I/O recorded\n");
}

/* ---- JSON ---- */

/* strings from files are untrusted: valid UTF-8 and valid JSON whatever they hold (escape.c) */
static void json_str(FILE *out, const char *s)
{
	nt_put_json(out, s);
}

/* the "groups" array's members; secs > 0 adds "iops" (live intervals) */
/* the groups as a JSON array's elements: laid out on lines (report), or on one line (live) */
static void print_groups_json(FILE *out, const struct nt_report *rep, double secs, bool one_line)
{
	const struct nt_report_opts *o = rep->o;
	char name[64], q[32], key[16];
	bool first;

	for (int gi = 0; gi < rep->ngroups; gi++) {
		const struct nt_group *g = &rep->groups[gi];

		dev_name(rep, g->dev_role, g->dev, name, sizeof(name));
		queue_name(g, q, sizeof(q));
		fprintf(out, "%s%s{\"op\": ", gi ? "," : "", one_line ? "" : "\n  ");
		json_str(out, g->op == 0xff ? "all" : nt_op_name(g->op));
		fprintf(out, ", \"size\": %u, \"device\": ", g->size);
		json_str(out, (o->group_by & NT_GB_DEV) ? name : "all");
		if (o->group_by & NT_GB_QUEUE) {
			fprintf(out, ", \"queue\": ");
			json_str(out, q);
		}
		fprintf(out, ", \"count\": %" PRIu64, g->count);
		fprintf(out, ", \"full_breakdown\": {\"ios\": %" PRIu64 ", \"max_residual_ns\": %" PRIu64 "}",
			g->full, g->full_resid);
		if (secs > 0)
			fprintf(out, ", \"iops\": %.1f", g->count / secs);
		fprintf(out, ",%s\"stages\": {", one_line ? "" : "\n   ");
		first = true;
		for (int s = 0; s < NT_ST_NR; s++) {
			const struct nt_hist *h = &g->h[s];

			if (!h->count)
				continue;
			fprintf(out, "%s%s\"%s\": {\"count\": %" PRIu64 ", \"avg_us\": %.3f", first ? "" : ",",
				one_line ? "" : "\n    ", nt_stage_name(s), h->count, nt_hist_mean(h) / 1000.0);
			for (int p = 0; p < o->npcts; p++) {
				pct_key(o->pcts[p], key, sizeof(key));
				fprintf(out, ", \"%s_us\": %.3f", key, us(nt_hist_percentile(h, o->pcts[p])));
			}
			if (g->stand_in[s])
				fprintf(out, ", \"stand_in\": %" PRIu64, g->stand_in[s]);
			fputc('}', out);
			first = false;
		}
		fprintf(out, "}}");
	}
}

static void print_json(FILE *out, const struct nt_report *rep)
{
	const struct nt_report_opts *o = rep->o;

	fprintf(out, "{\"ntbpf_version\": ");
	json_str(out, o->version ? o->version : "");
	fprintf(out, ",\n \"inputs\": [");
	for (int i = 0; i < rep->nins; i++) {
		const struct nt_input *in = &rep->ins[i];

		fprintf(out, "%s\n  {\"file\": ", i ? "," : "");
		json_str(out, in->path);
		fprintf(out, ", \"role\": ");
		json_str(out, nt_role_name(in->hdr.role));
		fprintf(out, ", \"hostname\": ");
		json_str(out, in->hdr.hostname);
		fprintf(out, ", \"kernel\": ");
		json_str(out, in->hdr.kernel);
		fprintf(out, ", \"records\": %zu, \"complete\": %s", in->n, in->status == NT_READ_OK ? "true" : "false");
		if (in->hdr.sample > 1)
			fprintf(out, ", \"sample\": %u, \"sample_window_ms\": %u", in->hdr.sample, in->hdr.sample_window_ms);
		if (in->status != NT_READ_OK) {
			fprintf(out, ", \"error\": ");
			json_str(out, in->status_msg);
		}
		fprintf(out, ",\n   \"hooks\": [");
		for (uint32_t k = 0; k < in->hdr.nhooks; k++) {
			const struct nt_hook_info *hk = &in->hdr.hooks[k];

			fprintf(out, "%s{\"name\": ", k ? ", " : "");
			json_str(out, hk->name);
			fprintf(out, ", \"attach\": ");
			json_str(out, hk->attach);
			fprintf(out, ", \"status\": ");
			json_str(out, hk->status);
			fprintf(out, ", \"boundary\": ");
			json_str(out, hk->boundary);
			fputc('}', out);
		}
		fprintf(out, "]}");
	}
	fprintf(out, "],\n \"lost_records\": %" PRIu64 ", \"matched\": %" PRIu64
		", \"unmatched\": {\"initiator\": %" PRIu64 ", \"target\": %" PRIu64 "},\n",
		rep->lost, rep->matched, rep->unmatched_init, rep->unmatched_tgt);
	fprintf(out, " \"lost_detail\": {\"ring_buffer_full\": %" PRIu64 ", \"map_full\": %" PRIu64
		", \"skipped_runs\": %" PRIu64 ", \"no_completion\": %" PRIu64 ", \"user_space\": %" PRIu64 "},\n",
		rep->lost_why[0], rep->lost_why[1], rep->lost_why[2], rep->lost_why[3], rep->lost_why[4]);
	fprintf(out, " \"not_recorded\": {\"in_flight_at_start\": %" PRIu64 ", \"in_flight_at_stop\": %" PRIu64
		", \"admin\": %" PRIu64 ", \"negative_network\": %" PRIu64 "},\n",
		rep->no_start, rep->inflight_end, rep->admin, rep->neg_network);
	fprintf(out, " \"pairing\": {\"by_port\": %zu, \"no_cntlid\": %zu, \"shared_cntlid\": %zu", rep->m.by_port,
		rep->m.no_cntlid, rep->m.shared_cntlid);
	if (rep->m.have_offset)
		fprintf(out, ", \"clock_offset_ns\": %" PRId64 ", \"clock_drift_ns\": %" PRId64 ", \"clock_votes\": %zu",
			rep->m.offset_ns, rep->m.offset_drift_ns, rep->m.offset_votes);
	else
		fprintf(out, ", \"clock_offset_ns\": null, \"clock_drift_ns\": null, \"clock_votes\": 0");
	if (rep->m.slow_init || rep->m.slow_tgt)
		fprintf(out, ", \"window_ns\": %" PRIu64 ", \"slower_than_window\": {\"initiator\": %zu, \"target\": %zu}",
			rep->m.window_ns, rep->m.slow_init, rep->m.slow_tgt);
	fprintf(out, "},\n");
	if (rep->since_set || rep->until_set) {
		fputs(" \"time_window\": {\"since_ns\": ", out);
		rep->since_set ? fprintf(out, "%" PRId64, rep->since_ns) : fputs("null", out);
		fputs(", \"until_ns\": ", out);
		rep->until_set ? fprintf(out, "%" PRId64, rep->until_ns) : fputs("null", out);
		fprintf(out, ", \"left_out\": %" PRIu64 "},\n", rep->outside);
	}
	fprintf(out, " \"hooks_not_attached\": %d,\n \"groups\": [", hooks_missing(rep));
	print_groups_json(out, rep, 0, false);
	fprintf(out, "]}\n");
}

/* ---- CSV ---- */

/* the header line; live's rows start with the interval's time (RFC 3339) and length */
static void csv_header(FILE *out, const struct nt_report_opts *o, bool timed)
{
	char key[16];

	fprintf(out, "%sop,size,device,queue,group_count,stage,count,avg_us", timed ? "time,interval_s," : "");
	for (int p = 0; p < o->npcts; p++) {
		pct_key(o->pcts[p], key, sizeof(key));
		fprintf(out, ",%s_us", key);
	}
	fputc('\n', out);
}

/* one row per group and stage; when: NULL, or live's interval (its time and length first) */
static void csv_rows(FILE *out, const struct nt_report *rep, const char *when, double secs)
{
	const struct nt_report_opts *o = rep->o;
	char name[64], q[32];

	for (int gi = 0; gi < rep->ngroups; gi++) {
		const struct nt_group *g = &rep->groups[gi];

		dev_name(rep, g->dev_role, g->dev, name, sizeof(name));
		queue_name(g, q, sizeof(q));
		for (int s = 0; s < NT_ST_NR; s++) {
			const struct nt_hist *h = &g->h[s];

			if (!h->count)
				continue;
			if (when)
				fprintf(out, "%s,%.3f,", when, secs);
			fprintf(out, "%s,%u,", g->op == 0xff ? "all" : nt_op_name(g->op), g->size);
			nt_put_csv(out, (o->group_by & NT_GB_DEV) ? name : "all");	/* a name from a file */
			fprintf(out, ",%s,%" PRIu64 ",%s,%" PRIu64 ",%.3f", q, g->count, nt_stage_name(s),
				h->count, nt_hist_mean(h) / 1000.0);
			for (int p = 0; p < o->npcts; p++)
				fprintf(out, ",%.3f", us(nt_hist_percentile(h, o->pcts[p])));
			fputc('\n', out);
		}
	}
}

static void print_csv(FILE *out, const struct nt_report *rep)
{
	csv_header(out, rep->o, false);
	csv_rows(out, rep, NULL, 0);
}

void nt_report_interval_header(FILE *out, const struct nt_report_opts *o)
{
	if (o->format == NT_FMT_CSV) {
		csv_header(out, o, true);
		fflush(out);
	}
}

void nt_report_print(FILE *out, const struct nt_report *rep)
{
	switch (rep->o->format) {
	case NT_FMT_JSON:
		print_json(out, rep);
		break;
	case NT_FMT_CSV:
		print_csv(out, rep);
		break;
	default:
		print_text(out, rep);
	}
}

void nt_report_opts_of(const struct nt_config *cfg, struct nt_report_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->version = NTBPF_VERSION;
	o->npcts = cfg->npcts;
	memcpy(o->pcts, cfg->pcts, sizeof(o->pcts));
	o->format = cfg->format;
	o->group_by = cfg->group_by;
	/* -v of record and live is about libbpf, not the report */
	o->verbose = cfg->cmd == NT_CMD_REPORT && cfg->verbose;
	o->window_ns = (uint64_t)(cfg->pair_window * 1e9);
	o->since = cfg->since;
	o->until = cfg->until;
}

int nt_report_cmd(const struct nt_config *cfg, FILE *out, FILE *err)
{
	struct nt_input *ins = calloc(cfg->nfiles, sizeof(*ins));
	FILE **files = calloc(cfg->nfiles, sizeof(*files));
	struct nt_report_opts o;
	struct nt_report rep;
	char msg[400];
	int rc = 0;

	if (!ins || !files) {
		free(ins);
		free(files);
		return 1;
	}
	nt_report_opts_of(cfg, &o);
	for (int i = 0; i < cfg->nfiles; i++) {
		/* "-": standard input, read front to back like any file (a pipe will do) */
		files[i] = strcmp(cfg->files[i], "-") ? fopen(cfg->files[i], "rb") : fdopen(dup(STDIN_FILENO), "rb");
		if (!files[i]) {
			char path[256];

			fprintf(err, "ntbpf report: cannot open %s: %s\n", nt_esc_term(path, sizeof(path), cfg->files[i]),
				strerror(errno));
			rc = 1;
			goto out;
		}
	}
	if (nt_report_build_files(&rep, ins, files, (const char *const *)cfg->files, cfg->nfiles, &o, err, msg,
				  sizeof(msg))) {
		fprintf(err, "ntbpf report: %s\n", msg);
		nt_report_free(&rep);
		rc = 1;
		goto out;
	}
	for (int i = 0; i < cfg->nfiles; i++)
		if (ins[i].status != NT_READ_OK)
			rc = 1;	/* warned; still report what the whole chunks hold */
	nt_report_print(out, &rep);
	nt_report_free(&rep);
	if (fflush(out) || ferror(out)) {
		fprintf(err, "ntbpf report: cannot write the report\n");
		rc = 1;
	}
out:
	for (int i = 0; i < cfg->nfiles; i++) {
		if (files[i])
			fclose(files[i]);
		nt_input_free(&ins[i]);
	}
	free(files);
	free(ins);
	return rc;
}

void nt_report_print_interval(FILE *out, const struct nt_report *rep, const char *when, double secs,
			      const struct nt_interval_info *info)
{
	uint64_t n = 0;

	if (rep->o->on_interval)
		rep->o->on_interval(rep->o->on_interval_ctx, rep, info);
	for (int gi = 0; gi < rep->ngroups; gi++)
		n += rep->groups[gi].count;
	if (rep->o->format == NT_FMT_JSON) {
		fprintf(out, "{\"time\": \"%s\", \"interval_s\": %.3f, \"iops\": %.1f, \"lost_records\": %" PRIu64
			", \"matched\": %" PRIu64 ", \"unmatched\": {\"initiator\": %" PRIu64 ", \"target\": %" PRIu64 "}",
			when, secs, n / secs, info->lost, info->matched, info->unmatched_init, info->unmatched_tgt);
		if (info->peer) {	/* may name the peer's host, from its header: untrusted */
			fputs(", \"peer\": ", out);
			json_str(out, info->peer);
		}
		fprintf(out, ", \"groups\": [");
		print_groups_json(out, rep, secs, true);	/* one line per interval, for pipelines */
		fprintf(out, "]}\n");
	} else if (rep->o->format == NT_FMT_CSV) {
		csv_rows(out, rep, when, secs);	/* the header: nt_report_interval_header() */
	} else {
		fprintf(out, "%s  IOPS %.0f", when, n / secs);
		if (info->lost)
			fprintf(out, "  lost %" PRIu64, info->lost);
		if (info->peer) {
			fputs("  peer ", out);
			nt_put_term(out, info->peer);
			fprintf(out, ": matched %" PRIu64 ", unmatched %" PRIu64 " initiator / %" PRIu64 " target",
				info->matched, info->unmatched_init, info->unmatched_tgt);
		}
		fputc('\n', out);
		for (int gi = 0; gi < rep->ngroups; gi++)
			print_group_text(out, rep, &rep->groups[gi], secs);
		fputc('\n', out);
	}
	fflush(out);
}
