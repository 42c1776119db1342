// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * report.c - aggregation and rendering.  Each I/O contributes one value per
 * stage it has to its group's histograms; groups are few (op x size x device
 * x queue), so they live in a small array, searched from the last one used.
 */
#define _GNU_SOURCE	/* fopencookie */
#include <errno.h>
#include <inttypes.h>
#include <time.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include "match.h"
#include "report.h"
#include "diagnose.h"
#include "escape.h"
#include "html.h"
#include "outfile.h"
#include "script.h"
#include "sysinfo.h"

/* ---- grouping ---- */

/* ---- hosts, subsystems, namespaces (--group-by host, subsys, ns) ---- */

#define KCACHE 64	/* a power of two */

struct nt_keynames {
	int n[NT_KEY_KINDS];
	char name[NT_KEY_KINDS][NT_KEY_NAMES][256];	/* index i + 1 is name[i] */
	/* a controller's host and subsystem indexes, by (header, role, record's ctrl): direct-mapped */
	struct kcache {
		const struct nt_header *h;
		uint16_t ctrl, host, subsys;
		uint8_t role;
	} cache[KCACHE];
	uint32_t last_nsid;	/* ns_key's last answer (0: none), an I/O's namespace mostly being its neighbour's */
	uint16_t last_ns;
};

/* s's index among the names of kind (added if new and there is room): NT_KEY_UNKNOWN for "" */
static uint16_t key_intern(struct nt_keynames *kn, enum nt_key_kind kind, const char *s)
{
	int i;

	if (!kn || !*s)
		return NT_KEY_UNKNOWN;
	for (i = 0; i < kn->n[kind]; i++)
		if (!strcmp(kn->name[kind][i], s))
			return (uint16_t)(i + 1);
	if (i == NT_KEY_NAMES)
		return NT_KEY_OTHER;
	snprintf(kn->name[kind][i], sizeof(kn->name[kind][i]), "%s", s);
	kn->n[kind]++;
	return (uint16_t)(i + 1);
}

uint16_t nt_report_key_add(struct nt_report *rep, enum nt_key_kind kind, const char *name)
{
	return key_intern(rep->names, kind, name);
}

const char *nt_report_key_name(const struct nt_report *rep, enum nt_key_kind kind, uint16_t idx)
{
	if (idx == NT_KEY_OTHER)
		return "other";
	if (idx == NT_KEY_UNKNOWN || !rep->names || idx > rep->names->n[kind])
		return "unknown";
	return rep->names->name[kind][idx - 1];
}

const char *nt_report_host_hostname(const struct nt_report *rep, uint16_t idx)
{
	const char *nqn = nt_report_key_name(rep, NT_KEY_HOST, idx);

	if (idx == NT_KEY_UNKNOWN || idx == NT_KEY_OTHER)
		return "";
	for (int i = 0; i < rep->nins; i++) {
		const struct nt_header *h = &rep->ins[i].hdr;

		if (h->role != NTBPF_ROLE_INITIATOR)
			continue;
		for (uint32_t k = 0; k < h->nctrls; k++)
			if (!strcmp(h->ctrls[k].hostnqn, nqn))
				return h->hostname;
	}
	return "";
}

/* r's host and subsystem (names' indexes) from its file's header h */
static void ctrl_keys(const struct nt_report *rep, const struct ntbpf_rec *r, const struct nt_header *h,
		      uint16_t *host, uint16_t *subsys)
{
	struct nt_keynames *kn = rep->names;
	const struct nt_ctrl_info *c;
	struct kcache *e;

	*host = *subsys = NT_KEY_UNKNOWN;
	if (!kn || !h || (r->role != NTBPF_ROLE_TARGET && !(r->flags & NTBPF_F_NVME)))
		return;
	e = &kn->cache[r->ctrl & (KCACHE - 1)];
	if (e->h != h || e->role != r->role || e->ctrl != r->ctrl) {
		c = nt_ctrl_of(h, r->role, r->flags, r->ctrl);
		e->h = h;
		e->role = r->role;
		e->ctrl = r->ctrl;
		e->host = c ? key_intern(kn, NT_KEY_HOST, c->hostnqn) : NT_KEY_UNKNOWN;
		e->subsys = c ? key_intern(kn, NT_KEY_SUBSYS, c->subsysnqn) : NT_KEY_UNKNOWN;
	}
	*host = e->host;
	*subsys = e->subsys;
}

static uint16_t ns_key(const struct nt_report *rep, const struct ntbpf_rec *r, const struct nt_header *h)
{
	uint32_t nsid = nt_nsid_of(h, r->role, r->flags, r->ctrl, r->dev);
	char buf[16];

	if (!nsid || !rep->names || (r->role != NTBPF_ROLE_TARGET && !(r->flags & NTBPF_F_NVME)))
		return NT_KEY_UNKNOWN;
	if (nsid != rep->names->last_nsid) {
		snprintf(buf, sizeof(buf), "%u", nsid);
		rep->names->last_ns = key_intern(rep->names, NT_KEY_NS, buf);
		rep->names->last_nsid = nsid;
	}
	return rep->names->last_ns;
}

/* the header of the file whose records hold r; else (live) the first input of r's role; or NULL */
static const struct nt_header *hdr_of(const struct nt_report *rep, const struct ntbpf_rec *r)
{
	for (int i = 0; i < rep->nins; i++)
		if (rep->ins[i].recs && r >= rep->ins[i].recs && r < rep->ins[i].recs + rep->ins[i].n)
			return &rep->ins[i].hdr;
	for (int i = 0; i < rep->nins; i++)
		if (rep->ins[i].hdr.role == r->role)
			return &rep->ins[i].hdr;
	return NULL;
}

/* ---- grouping ---- */

/* what a group is keyed on (struct nt_group is large: never build one per record) */
struct gkey {
	uint32_t size, dev;
	int dev_role;
	uint16_t ctrl, qid, status;
	uint16_t host, subsys, ns;
	uint8_t op;
	bool has_queue, status_nvme;
};

static bool same_group(const struct nt_group *g, const struct gkey *k)
{
	return g->op == k->op && g->size == k->size && g->dev_role == k->dev_role && g->dev == k->dev &&
	       g->has_queue == k->has_queue && g->ctrl == k->ctrl && g->qid == k->qid && g->status == k->status &&
	       g->status_nvme == k->status_nvme && g->host == k->host && g->subsys == k->subsys && g->ns == k->ns;
}

/* h: the header of r's file (host, subsys, ns), or NULL */
static void key_of(const struct nt_report *rep, const struct ntbpf_rec *r, const struct nt_header *h,
		   struct gkey *k)
{
	unsigned int gb = rep->o->group_by;
	struct gkey key = { .op = 0xff };

	if (gb & (NT_GB_HOST | NT_GB_SUBSYS)) {
		uint16_t host, subsys;

		ctrl_keys(rep, r, h, &host, &subsys);
		key.host = (gb & NT_GB_HOST) ? host : NT_KEY_UNKNOWN;
		key.subsys = (gb & NT_GB_SUBSYS) ? subsys : NT_KEY_UNKNOWN;
	}
	if (gb & NT_GB_NS)
		key.ns = ns_key(rep, r, h);

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
		/* a queue is named by its host: nvme instance (initiator) or cntlid (target) */
		key.dev_role = r->role;
	}
	/* failed I/Os always go to groups of their own: out of the others' percentiles */
	if (r->status) {
		key.status = r->status;
		key.status_nvme = nt_status_is_nvme(r);
	}
	*k = key;
}

int nt_report_group_index(const struct nt_report *rep, const struct ntbpf_rec *r, const struct nt_header *h)
{
	struct gkey key;

	key_of(rep, r, h, &key);
	for (int i = 0; i < rep->ngroups; i++)
		if (same_group(&rep->groups[i], &key))
			return i;
	return -1;
}

static struct nt_group *group_for(struct nt_report *rep, const struct ntbpf_rec *r, const struct nt_header *h)
{
	struct nt_group *g;
	struct gkey key;
	int i, c = r->role & 3;

	key_of(rep, r, h, &key);
	/* each side's records come in runs of the same group (the sides alternate): try its last one first */
	if (rep->last_group[c] < rep->ngroups && same_group(&rep->groups[rep->last_group[c]], &key))
		return &rep->groups[rep->last_group[c]];
	for (i = 0; i < rep->ngroups; i++)
		if (same_group(&rep->groups[i], &key)) {
			rep->last_group[c] = i;
			return &rep->groups[i];
		}
	g = realloc(rep->groups, (rep->ngroups + 1) * sizeof(*g));
	if (!g)
		return NULL;
	rep->groups = g;
	rep->last_group[c] = rep->ngroups;
	g = &rep->groups[rep->ngroups++];
	memset(g, 0, sizeof(*g));
	g->op = key.op;
	g->size = key.size;
	g->dev_role = key.dev_role;
	g->dev = key.dev;
	g->has_queue = key.has_queue;
	g->ctrl = key.ctrl;
	g->qid = key.qid;
	g->status = key.status;
	g->status_nvme = key.status_nvme;
	g->host = key.host;
	g->subsys = key.subsys;
	g->ns = key.ns;
	g->first_ns = UINT64_MAX;
	for (i = 0; i < NT_ST_NR; i++)
		nt_hist_init(&g->h[i]);
	return g;
}

int nt_report_add_kh(struct nt_report *rep, const struct nt_kh_key *k, const uint64_t *buckets, uint64_t count,
		     uint64_t sum)
{
	/*
	 * A failed initiator I/O's status is block_rq_complete's blk_status_t
	 * (the kernel side reads no NVMe status): named as one, it goes to its
	 * status's group without the queue (a queue's group is an NVMe one).
	 */
	bool blk_failed = k->status && k->role == NTBPF_ROLE_INITIATOR;
	struct ntbpf_rec r = { .role = k->role, .op = k->op, .bytes = k->bytes, .dev = k->dev,
			       .flags = k->queue && !blk_failed ? NTBPF_F_NVME : 0, .ctrl = k->ctrl, .qid = k->qid,
			       .status = k->status };
	struct nt_group *g = group_for(rep, &r, hdr_of(rep, &r));
	uint64_t seen = 0;

	if (!g)
		return -1;
	g->used = true;
	if (k->stage == NT_KH_DEPTH) {
		/*
		 * the queue's depths (buckets of nt_kh_bucket: exact under 64):
		 * count, sum and the largest, as its bucket's lowest value
		 */
		int side = k->role == NTBPF_ROLE_TARGET;

		g->dep_n[side] += count;
		g->dep_sum[side] += sum;
		for (uint32_t b = NT_KH_DEP_NB; b-- > 0;)
			if (buckets[b]) {
				uint64_t v = nt_kh_low(b);

				if (v > g->dep_max[side])
					g->dep_max[side] = v > UINT16_MAX ? UINT16_MAX : (uint32_t)v;
				break;
			}
		return 0;
	}
	if (k->stage >= NT_ST_NR) {
		g->count += count;
		g->bytes += count * k->bytes;
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

static void group_span(struct nt_group *g, uint64_t start, uint64_t end, uint32_t bytes)
{
	g->bytes += bytes;
	if (start < g->first_ns)
		g->first_ns = start;
	if (end > g->last_ns)
		g->last_ns = end;
}

/* an I/O that started at wall-clock time t is in --since/--until (always without them) */
static bool in_window(const struct nt_report *rep, int64_t t)
{
	return (!rep->since_set || t >= rep->since_ns) && (!rep->until_set || t < rep->until_ns);
}

/*
 * What a report keeps of a record: its own host's stages, and its group
 * (tag) if group.  to_wall turns its host's monotonic clock into the wall
 * clock (0: no header).  An initiator's I/O is in its group's span and bytes
 * now (its group is final); a target's goes there if it stays unmatched
 * (add_pair), from what its summary's .io carries.
 */
static int summarize(struct nt_report *rep, const struct ntbpf_rec *r, const struct nt_header *h, uint8_t role,
		     bool group, struct nt_sum *s, uint64_t to_wall)
{
	struct nt_group *g = NULL;

	s->tag = NO_GROUP;
	if (group) {
		g = group_for(rep, r, h);
		if (!g)
			return -1;
		s->tag = (uint32_t)(g - rep->groups);
	}
	nt_sum_of(r, role, s);
	if (role == NTBPF_ROLE_TARGET) {
		uint64_t start = r->t0 + to_wall;

		s->io.start_lo = (uint32_t)start;
		s->io.start_hi = (uint32_t)(start >> 32);
		s->io.bytes = r->bytes;
	} else if (g && in_window(rep, (int64_t)(r->t0 + to_wall))) {
		group_span(g, r->t0 + to_wall, r->t0 + to_wall + nt_rec_end(r), r->bytes);
	}
	return 0;
}

/* the clock offset (wall - monotonic) of the input whose records hold r, or 0 */
static uint64_t to_wall_of(const struct nt_report *rep, const struct ntbpf_rec *r)
{
	for (int i = 0; i < rep->nins; i++)
		if (rep->ins[i].recs && r >= rep->ins[i].recs && r < rep->ins[i].recs + rep->ins[i].n)
			return nt_wall_offset(&rep->ins[i].hdr);
	return 0;
}

/* one side's depth (0: initiator, 1: target) and the stage that waits behind it (stage's value if present) */
static void add_depth(struct nt_group *g, int side, uint16_t depth, uint32_t mask, const uint64_t *vals, int stage)
{
	int b;

	if (!depth)
		return;
	g->dep_n[side]++;
	g->dep_sum[side] += depth;
	if (depth > g->dep_max[side])
		g->dep_max[side] = depth;
	if (!(mask & (1u << stage)))
		return;
	b = 31 - __builtin_clz(depth);	/* floor(log2(depth)): depth is not 0 here */
	if (b > NT_DEP_BUCKETS - 1)
		b = NT_DEP_BUCKETS - 1;
	g->dep_bn[side][b]++;
	g->dep_bsum[side][b] += vals[stage];
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
	if (!si) {
		/* a target I/O alone: it ends with its residence (else its longest stage seen) */
		uint64_t start = (uint64_t)st->io.start_hi << 32 | st->io.start_lo, len = 0;

		for (uint32_t left = mask; left; left &= left - 1)
			if (vals[__builtin_ctz(left)] > len)
				len = vals[__builtin_ctz(left)];
		group_span(g, start, start + len, st->io.bytes);
	}
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
	if (si)
		add_depth(g, 0, si->depth, mask, vals, NT_ST_NVME_TCP_SUB);
	if (st)
		add_depth(g, 1, st->depth, mask, vals, NT_ST_TARGET_SUBSYS);
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

	if (init && summarize(rep, init, hdr_of(rep, init), NTBPF_ROLE_INITIATOR, true, &si, to_wall_of(rep, init)))
		return -1;
	if (tgt && summarize(rep, tgt, hdr_of(rep, tgt), NTBPF_ROLE_TARGET, !init, &st, to_wall_of(rep, tgt)))
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
	if (x->host != y->host)
		return x->host < y->host ? -1 : 1;
	if (x->subsys != y->subsys)
		return x->subsys < y->subsys ? -1 : 1;
	if (x->ns != y->ns)
		return x->ns < y->ns ? -1 : 1;
	if (x->ctrl != y->ctrl)
		return x->ctrl < y->ctrl ? -1 : 1;
	if (x->qid != y->qid)
		return x->qid < y->qid ? -1 : 1;
	if (x->has_queue != y->has_queue)
		return (int)x->has_queue - (int)y->has_queue;
	if (x->status_nvme != y->status_nvme)
		return (int)x->status_nvme - (int)y->status_nvme;
	return (int)x->status - (int)y->status;
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
		rep->lost_why[5] += in->trailer.stats[ST_NOT_RUN];
		rep->lost += nt_lost_sum(in->trailer.stats) + in->trailer.lost_user;
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

/*
 * A record's payload: a struct io_sum when timed, else its struct nt_sum
 * alone (io_size() apart: 4-byte aligned, so never touched as an io_sum then;
 * the summary is the io_sum's first member).
 */
static int sum_io(struct nt_report *rep, const struct ntbpf_rec *r, const struct nt_header *h, uint8_t role,
		  void *pay)
{
	if (timed(rep))
		((struct io_sum *)pay)->wall = (int64_t)r->t0 - (int64_t)h->mono_ns + (int64_t)h->real_ns;
	/* a target's group is needed only if it stays unmatched: nt_report_finish drops unused ones */
	return summarize(rep, r, h, role, true, pay, nt_wall_offset(h));
}

/* one I/O of a file report: into its group, unless it started outside --since/--until (counted) */
static int add_io(struct nt_report *rep, const void *si, const void *st)
{
	if (timed(rep) && !in_window(rep, ((const struct io_sum *)(si ? si : st))->wall)) {
		rep->outside++;
		rep->outside_pairs += si && st;
		rep->outside_init += si && !st;
		return 0;
	}
	return add_pair(rep, si, st);	/* the summary: the payload's first bytes */
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
	void *s;
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
	if (nt_inputs_twice(ins, n, false, err, errlen))	/* the same recording twice: before reading it */
		goto out;
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
	if (!rc && nt_inputs_twice(ins, n, true, err, errlen))	/* recordings that overlap: their ends are known now */
		rc = -1;
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
	if (o->group_by & (NT_GB_HOST | NT_GB_SUBSYS | NT_GB_NS))
		rep->names = calloc(1, sizeof(*rep->names));	/* NULL: every I/O's host is "unknown" */
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
	memset(rep->last_group, 0, sizeof(rep->last_group));
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
	/* live: the headers' controllers are read anew each interval */
	if (rep->names)
		memset(rep->names->cache, 0, sizeof(rep->names->cache));
}

void nt_report_free(struct nt_report *rep)
{
	nt_report_clear_groups(rep);
	nt_match_free(&rep->m);
	free(rep->names);
	memset(rep, 0, sizeof(*rep));
}

/* ---- naming ---- */

/* header DEV items are "name=major:minor" */
static void dev_name(const struct nt_report *rep, int role, uint32_t dev, char *buf, size_t len)
{
	nt_dev_name_in(rep->ins, rep->nins, role, dev, buf, len);
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

const struct nt_queue_info *nt_report_group_queue(const struct nt_report *rep, const struct nt_group *g)
{
	int role = g->dev_role == NTBPF_ROLE_TARGET ? NTBPF_ROLE_TARGET : NTBPF_ROLE_INITIATOR;

	if (!g->has_queue)
		return NULL;
	for (int i = 0; i < rep->nins; i++) {
		const struct nt_header *h = &rep->ins[i].hdr;

		if (h->role != role)
			continue;
		for (uint32_t c = 0; c < h->nctrls; c++) {
			const struct nt_ctrl_info *ci = &h->ctrls[c];

			if (role == NTBPF_ROLE_INITIATOR ? ci->instance != g->ctrl : ci->cntlid != g->ctrl)
				continue;
			for (uint32_t k = 0; ci->queues && k < ci->nqueues; k++)
				if (ci->queues[k].qid == g->qid)
					return &ci->queues[k];
		}
	}
	return NULL;
}

/* "addr:port" ("[addr]:port" for IPv6), or "" unknown; the address is from a file: escape it on output */
static void endpoint(const char *addr, uint16_t port, char *buf, size_t len)
{
	if (!addr[0])
		snprintf(buf, len, "%s", "");
	else if (strchr(addr, ':'))
		snprintf(buf, len, "[%s]:%u", addr, port);
	else
		snprintf(buf, len, "%s:%u", addr, port);
}

/* a queue group's facts, as the outputs print them */
struct qfacts {
	int io_cpu, rx_queue, tx_queue;	/* -1 unknown */
	char local[80], remote[80];	/* "" unknown */
	double dmean[2];		/* depth: initiator, target; 0 none */
	uint32_t dmax[2];
};

static void qfacts_of(const struct nt_report *rep, const struct nt_group *g, struct qfacts *f)
{
	const struct nt_queue_info *q = nt_report_group_queue(rep, g);

	memset(f, 0, sizeof(*f));
	f->io_cpu = q ? q->io_cpu : -1;
	f->rx_queue = q ? q->rx_queue : -1;
	f->tx_queue = q ? q->tx_queue : -1;
	if (q) {
		endpoint(q->saddr, q->sport, f->local, sizeof(f->local));
		endpoint(q->daddr, q->dport, f->remote, sizeof(f->remote));
	}
	for (int k = 0; k < 2; k++) {
		f->dmean[k] = g->dep_n[k] ? (double)g->dep_sum[k] / g->dep_n[k] : 0;
		f->dmax[k] = g->dep_max[k];
	}
}

/* percentile k's key: "p50", "p99.9", "p99.999999" (as the user spelled it) */
static void pct_key(const struct nt_report_opts *o, int k, char *buf, size_t len)
{
	buf[0] = 'p';
	nt_pct_label(o->pcts[k], o->pct_labels[k], buf + 1, len - 1);
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
			n += strcmp(rep->ins[i].hdr.hooks[k].status, "attached") != 0 &&
			     strncmp(rep->ins[i].hdr.hooks[k].status, "deferred", 8) != 0;
	return n;
}

/*
 * A group's rate: over a live interval (secs > 0), or over its span, from
 * its first I/O's start to its last one's end.  0: no span (one I/O, or
 * in-kernel histograms).
 */
static double group_secs(const struct nt_group *g, double secs)
{
	if (secs > 0)
		return secs;
	/* one I/O has no rate: its span is its own latency */
	return g->count > 1 && g->last_ns > g->first_ns && g->first_ns != UINT64_MAX ?
		(g->last_ns - g->first_ns) / 1e9 : 0;
}

/*
 * A group's span (report only), IOPS and MB/s in one output's formats:
 * f[0] the span (a double), f[1] IOPS and MB/s (two doubles), f[2] no rate.
 */
static void put_rate(FILE *out, const struct nt_group *g, double secs, const char *const f[3])
{
	double rate = group_secs(g, secs);

	if (secs <= 0)
		fprintf(out, f[0], rate);
	if (rate > 0)
		fprintf(out, f[1], g->count / rate, g->bytes / rate / 1e6);
	else
		fputs(f[2], out);
}

/* I/Os by status, over the groups (failed I/Os are in groups of their own): how many kinds */
struct status_count {
	uint16_t status;
	bool nvme;
	uint64_t ios;
};

static int status_counts(const struct nt_report *rep, struct status_count *sc, int max)
{
	int n = 0;

	for (int gi = 0; gi < rep->ngroups; gi++) {
		const struct nt_group *g = &rep->groups[gi];
		int k;

		for (k = 0; k < n; k++)
			if (sc[k].status == g->status && (!g->status || sc[k].nvme == g->status_nvme))
				break;
		if (k == n) {
			if (n == max)
				continue;	/* cannot happen: at most one kind per group */
			sc[n++] = (struct status_count){ .status = g->status, .nvme = g->status_nvme };
		}
		sc[k].ios += g->count;
	}
	return n;
}

/* ---- text ---- */

/* "# I/Os by status: ok 1987; 0x0002 (invalid field in command) 3" */
static void print_status_text(FILE *out, const struct nt_report *rep)
{
	struct status_count *sc = calloc(rep->ngroups + 1, sizeof(*sc));
	int n = sc ? status_counts(rep, sc, rep->ngroups + 1) : 0;
	bool failed = false;
	char label[32];

	if (!n) {
		free(sc);
		return;
	}
	fputs("# I/Os by status:", out);
	for (int k = 0; k < n; k++) {
		const char *name = nt_status_name(sc[k].status, sc[k].nvme);

		nt_status_label(sc[k].status, sc[k].nvme, label, sizeof(label));
		fprintf(out, "%s %s", k ? ";" : "", label);
		if (sc[k].status && *name)
			fprintf(out, " (%s)", name);
		fprintf(out, " %" PRIu64, sc[k].ios);
		failed |= sc[k].status != 0;
	}
	if (failed)
		fputs("; failed I/Os are in groups of their own (status=), out of the others' percentiles", out);
	fputc('\n', out);
	free(sc);
}

/* how input in was sampled, in words */
static void sampling_text(const struct nt_input *in, char *buf, size_t len)
{
	if (in->hdr.sample > 1 && in->hdr.sample_window_ms)
		snprintf(buf, len, "%u ms windows, one in %u", in->hdr.sample_window_ms, in->hdr.sample);
	else if (in->hdr.sample > 1)
		snprintf(buf, len, "about 1 I/O in %u", in->hdr.sample);
	else
		snprintf(buf, len, "not sampled");
}

/*
 * The first initiator and target inputs whose sampling differs (--sample,
 * --sample-window, by time or by I/O): only I/Os both hosts recorded can
 * pair, e.g. an initiator and a target of ntbpf versions with different
 * default windows.  NULL where they agree or a side is missing.
 */
static const struct nt_input *sampling_differs(const struct nt_report *rep, const struct nt_input **init)
{
	const struct nt_input *a = NULL;

	for (int i = 0; i < rep->nins && !a; i++)
		if (rep->ins[i].hdr.role == NTBPF_ROLE_INITIATOR)
			a = &rep->ins[i];
	for (int i = 0; a && i < rep->nins; i++) {
		const struct nt_input *b = &rep->ins[i];
		uint32_t sa = a->hdr.sample > 1 ? a->hdr.sample : 1, sb = b->hdr.sample > 1 ? b->hdr.sample : 1;

		if (b->hdr.role != NTBPF_ROLE_TARGET)
			continue;
		if (sa != sb || (sa > 1 && a->hdr.sample_window_ms != b->hdr.sample_window_ms)) {
			*init = a;
			return b;
		}
	}
	return NULL;
}

/* the recordings' span on the wall clock: the earliest start, the latest end (0: not known, a file without trailer) */
static void recorded_span(const struct nt_report *rep, uint64_t *from, uint64_t *to)
{
	*from = *to = 0;
	for (int i = 0; i < rep->nins; i++) {
		uint64_t a = rep->ins[i].hdr.real_ns, b = 0;

		if (rep->ins[i].has_trailer && a && rep->ins[i].trailer.end_mono_ns >= rep->ins[i].hdr.mono_ns)
			b = rep->ins[i].trailer.end_mono_ns - rep->ins[i].hdr.mono_ns + a;
		if (a && (!*from || a < *from))
			*from = a;
		if (!b) {
			*to = UINT64_MAX;	/* one end not known: none */
		} else if (*to != UINT64_MAX && b > *to) {
			*to = b;
		}
	}
	if (*to == UINT64_MAX)
		*to = 0;
}

const char *nt_report_empty_why(const struct nt_report *rep)
{
	if ((rep->since_set || rep->until_set) && rep->outside)
		return "no I/O in the time window (--since/--until): every recorded I/O started outside it";
	if (rep->since_set || rep->until_set)
		return "no I/O in the time window (--since/--until), and none recorded";
	return "no I/O recorded";
}

static void print_notes_text(FILE *out, const struct nt_report *rep)
{
	fprintf(out, "# lost records: %" PRIu64, rep->lost);
	if (rep->lost) {
		/* what each count means for the report: a skipped run loses events, not the record */
		static const char *const why[sizeof(rep->lost_why) / sizeof(rep->lost_why[0])] = {
			"ring buffer full", "in-flight map full",
			"program runs the kernel skipped (their I/Os miss the events those runs would have taken)",
			"completions never seen", "not written by user space",
			"I/Os no program run saw (the devices' own counts have them: the kernel skipped the runs)",
		};
		const char *sep = " (";

		for (size_t k = 0; k < sizeof(why) / sizeof(why[0]); k++)
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
	print_status_text(out, rep);
	for (int i = 0; i < rep->nins; i++)
		if (rep->ins[i].hdr.sample > 1) {
			fprintf(out, "# sampled inputs: IOPS and MB/s count the recorded I/Os only\n");
			break;
		}
	{
		const struct nt_input *ini = NULL, *tgt = sampling_differs(rep, &ini);
		char a[64], b[64];

		if (tgt) {
			sampling_text(ini, a, sizeof(a));
			sampling_text(tgt, b, sizeof(b));
			fprintf(out, "# sampled differently: initiator %s, target %s: only I/Os both recorded can pair "
				"(record both with the same --sample and --sample-window)\n", a, b);
		}
	}
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
		fprintf(out, "# paired without the queue's TCP port (a file from an older ntbpf, or from an initiator"
			" whose kernel has no BTF for nvme_tcp, e.g. 5.10): %" PRIu64 "\n",
			rep->matched - (uint64_t)rep->m.by_port);
	if (rep->m.shared_cntlid && rep->n_tgt)
		fprintf(out, "# initiator I/Os on controllers that share a cntlid (two subsystems) and lack"
			" the queue's TCP port: %zu; paired by queue, command id and timing only\n",
			rep->m.shared_cntlid);
	if (rep->since_set || rep->until_set) {
		uint64_t from, to;
		char a[48], b[48], c[48], d[48];

		recorded_span(rep, &from, &to);
		nt_fmt_wall((uint64_t)rep->since_ns, a, sizeof(a));
		nt_fmt_wall((uint64_t)rep->until_ns, b, sizeof(b));
		nt_fmt_wall(from, c, sizeof(c));
		nt_fmt_wall(to, d, sizeof(d));
		fprintf(out, "# time window: I/Os that started from %s to %s; the recordings: %s to %s\n",
			rep->since_set ? a : "the start", rep->until_set ? b : "the end", from ? c : "-",
			to ? d : "(end not known)");
		fprintf(out, "# I/Os that started outside --since/--until, left out: %" PRIu64 "\n", rep->outside);
	}
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
				/* deferred: loaded, attached only where the kernel showed it was needed (never, here) */
				fputs(strncmp(h->hooks[k].status, "deferred", 8) ? " not attached (" : " (", out);
				nt_put_term(out, h->hooks[k].status);
				fputs("); ", out);
				nt_put_term(out, h->hooks[k].boundary[0] ? h->hooks[k].boundary : "its stage is not measured");
				fputc('\n', out);
			}
	}
	if (!(rep->stages_seen & ~((1u << NT_ST_BLK_SUB) | (1u << NT_ST_BLK_DEVICE) | (1u << NT_ST_E2E))) &&
	    rep->n_init && rep->stages_seen)	/* none seen at all (an empty window): no claim */
		fprintf(out, "# no nvme_tcp events: blk_submission ends at block_rq_issue; the rest is blk_device\n");
	if (rep->n_init && !rep->n_tgt)
		fprintf(out, "# no target records: target stages and network_transmission not measured\n");
	if (rep->n_tgt && !rep->n_init)
		fprintf(out, "# no initiator records: host stages and network_transmission not measured\n");
}

/* biolatency's print_log2_hist: "    16 -> 31         : 120      |*****     |" */
static void print_log2_text(FILE *out, const char *name, const struct nt_hist *h)
{
	uint64_t bins[NT_LOG2_BINS], top = 0;
	int n = nt_hist_log2_us(h, bins);

	for (int i = 0; i < n; i++)
		top = bins[i] > top ? bins[i] : top;
	fprintf(out, "\n%s\n%5s%-19s : count    distribution\n", name, "", "usecs");
	for (int i = 0; i < n; i++) {
		uint64_t lo = (1ull << (i + 1)) >> 1, hi = (1ull << (i + 1)) - 1;
		int stars = top ? (int)(bins[i] * 40 / top) : 0;

		if (lo == hi)
			lo--;
		fprintf(out, "%10" PRIu64 " -> %-10" PRIu64 " : %-8" PRIu64 " |%.*s%*s|\n", lo, hi, bins[i], stars,
			"****************************************", 40 - stars, "");
	}
}

/* --group-by host, subsys, ns: " host=NQN (hostname) subsys=NQN ns=1", names from files escaped */
static void print_keys_text(FILE *out, const struct nt_report *rep, const struct nt_group *g)
{
	unsigned int gb = rep->o->group_by;

	if (gb & NT_GB_HOST) {
		const char *hn = nt_report_host_hostname(rep, g->host);

		fputs(" host=", out);
		nt_put_term(out, nt_report_key_name(rep, NT_KEY_HOST, g->host));
		if (*hn) {
			fputs(" (", out);
			nt_put_term(out, hn);
			fputc(')', out);
		}
	}
	if (gb & NT_GB_SUBSYS) {
		fputs(" subsys=", out);
		nt_put_term(out, nt_report_key_name(rep, NT_KEY_SUBSYS, g->subsys));
	}
	if (gb & NT_GB_NS)
		fprintf(out, " ns=%s", nt_report_key_name(rep, NT_KEY_NS, g->ns));
}

/* one group's table; secs > 0 adds IOPS (live intervals) */
static void print_group_text(FILE *out, const struct nt_report *rep, const struct nt_group *g, double secs)
{
	const struct nt_report_opts *o = rep->o;
	char name[64], q[32], key[NT_PCT_LABEL + 8];

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
	print_keys_text(out, rep, g);
	if (g->status) {
		const char *sname = nt_status_name(g->status, g->status_nvme);

		nt_status_label(g->status, g->status_nvme, q, sizeof(q));
		fprintf(out, " status=%s", q);
		if (*sname)
			fprintf(out, " (%s)", sname);
	}
	fprintf(out, " I/Os=%" PRIu64, g->count);
	put_rate(out, g, secs, (const char *const[]){ " span=%.3fs", " IOPS=%.0f MB/s=%.2f\n", " IOPS=- MB/s=-\n" });
	if ((o->group_by & NT_GB_QUEUE) && g->has_queue) {
		struct qfacts f;

		qfacts_of(rep, g, &f);
		fputs("queue:", out);
		if (f.io_cpu >= 0)
			fprintf(out, " io_cpu=%d", f.io_cpu);
		else
			fputs(" io_cpu=-", out);
		fputs(" local=", out);
		nt_put_term(out, f.local[0] ? f.local : "-");
		fputs(" remote=", out);
		nt_put_term(out, f.remote[0] ? f.remote : "-");
		if (f.rx_queue >= 0)
			fprintf(out, " rx_queue=%d", f.rx_queue);
		else
			fputs(" rx_queue=-", out);
		if (f.tx_queue >= 0)
			fprintf(out, " tx_queue=%d", f.tx_queue);
		else
			fputs(" tx_queue=-", out);
		for (int k = 0; k < 2; k++)
			if (g->dep_n[k])
				fprintf(out, " %s=%.1f/%u", k ? "target_depth(mean/max)" : "depth(mean/max)", f.dmean[k],
					f.dmax[k]);
		fputc('\n', out);
	}
	fprintf(out, "%-22s %10s %10s %10s", "stage", "count", "avg_us", "min_us");
	for (int p = 0; p < o->npcts; p++) {
		pct_key(o, p, key, sizeof(key));
		strcat(key, "_us");
		fprintf(out, " %10s", key);
	}
	fprintf(out, " %10s\n", "max_us");
	for (int k = 0; k < NT_ST_NR; k++) {
		/* the stages that add up, then end_to_end, then the two spans they split */
		int s = nt_stage_at_row[k];
		const struct nt_hist *h = &g->h[s];

		if (!h->count && !o->verbose)
			continue;
		if (s == NT_ST_E2E)
			fputs("----\n", out);
		fprintf(out, "%-22s %10" PRIu64 " %10.2f %10.2f", nt_stage_name(s), h->count,
			h->count ? nt_hist_mean(h) / 1000.0 : 0.0, us(nt_hist_percentile(h, 0)));
		for (int p = 0; p < o->npcts; p++)
			fprintf(out, " %10.2f", us(nt_hist_percentile(h, o->pcts[p])));
		fprintf(out, " %10.2f", us(nt_hist_percentile(h, 100)));
		if (g->stand_in[s])
			fprintf(out, "  (stand-in on %" PRIu64 ")", g->stand_in[s]);
		fputc('\n', out);
	}
	for (int k = 0; k < NT_ST_NR && o->hist; k++)
		if (g->h[nt_stage_at_row[k]].count)
			print_log2_text(out, nt_stage_name(nt_stage_at_row[k]), &g->h[nt_stage_at_row[k]]);
}

/* where a file's recording began and ended on the wall clock; 0: not known */
static void file_span(const struct nt_input *in, uint64_t *from, uint64_t *to)
{
	*from = in->hdr.real_ns;
	*to = in->has_trailer && in->hdr.real_ns && in->trailer.end_mono_ns >= in->hdr.mono_ns ?
		in->trailer.end_mono_ns - in->hdr.mono_ns + in->hdr.real_ns : 0;
}

/* -v: what a file's header and trailer say of the recording */
static void print_facts_text(FILE *out, const struct nt_input *in)
{
	const struct nt_header *h = &in->hdr;
	uint64_t from, to;
	char t1[48], t2[48];

	fputs("#   command: ", out);
	nt_put_term(out, h->cmdline[0] ? h->cmdline : "-");
	fputs("; ntbpf ", out);
	nt_put_term(out, h->ntbpf_version[0] ? h->ntbpf_version : "-");
	fputc('\n', out);
	file_span(in, &from, &to);
	nt_fmt_wall(from, t1, sizeof(t1));
	if (to) {
		nt_fmt_wall(to, t2, sizeof(t2));
		fprintf(out, "#   recorded: %s to %s (%.3f s)", t1, t2, (to - from) / 1e9);
	} else {
		fprintf(out, "#   recorded: from %s (no trailer: end not known)", from ? t1 : "-");
	}
	if (h->sample > 1 && h->sample_window_ms)
		fprintf(out, "; sampling: every I/O of one %u ms window in %u\n", h->sample_window_ms, h->sample);
	else if (h->sample > 1)
		fprintf(out, "; sampling: about 1 I/O in %u (by a hash of each I/O)\n", h->sample);
	else
		fprintf(out, "; sampling: none (every I/O)\n");
	for (uint32_t k = 0; k < h->nctrls; k++) {
		const struct nt_ctrl_info *c = &h->ctrls[k];

		fputs("#   subsystem ", out);
		nt_put_term(out, c->subsysnqn[0] ? c->subsysnqn : "-");
		fputs(" at ", out);
		nt_put_term(out, c->address[0] ? c->address : "-");
		if (c->instance >= 0)
			fprintf(out, " (nvme%d, cntlid %u", c->instance, c->cntlid);
		else
			fprintf(out, " (cntlid %u", c->cntlid);
		fputs(", ", out);
		nt_put_term(out, c->transport[0] ? c->transport : "-");
		fprintf(out, ", %u queues; host ", c->nqueues);
		nt_put_term(out, c->hostnqn[0] ? c->hostnqn : "-");
		fputs(")\n", out);
	}
	for (uint32_t k = 0; k < h->ncchanges && k < NT_MAX_CNTLID_CHANGES; k++) {
		const struct nt_cntlid_change *c = &h->cchanges[k];

		nt_fmt_wall(c->from_mono_ns >= h->mono_ns ? c->from_mono_ns - h->mono_ns + h->real_ns : h->real_ns,
			    t1, sizeof(t1));
		fprintf(out, "#   nvme%d reconnected: cntlid %u from %s\n", c->instance, c->cntlid, t1);
	}
}

static void print_text(FILE *out, const struct nt_report *rep)
{
	nt_report_print_head(out, rep);
	for (int gi = 0; gi < rep->ngroups; gi++) {
		fputc('\n', out);
		print_group_text(out, rep, &rep->groups[gi], 0);
	}
	if (!rep->ngroups)
		fprintf(out, "\n%s\n", nt_report_empty_why(rep));
	if (rep->o->diagnose)
		nt_diagnose_print_text(out, rep);
}

void nt_report_print_group(FILE *out, const struct nt_report *rep, int gi)
{
	print_group_text(out, rep, &rep->groups[gi], 0);
}

void nt_report_print_head(FILE *out, const struct nt_report *rep)
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
		if (in->hdr.sample > 1) {
			char how[64];

			sampling_text(in, how, sizeof(how));
			fprintf(out, ", sampled: %s", how);
		}
		fputs(in->status == NT_READ_OK ? "" : ", ", out);
		nt_put_term(out, in->status == NT_READ_OK ? "" : in->status_msg);
		fputc('\n', out);
		if (rep->o->verbose)
			print_facts_text(out, in);
	}
	print_notes_text(out, rep);
}

/* ---- JSON ---- */

/* strings from files are untrusted: valid UTF-8 and valid JSON whatever they hold (escape.c) */
static void json_str(FILE *out, const char *s)
{
	nt_put_json(out, s);
}

/* a key's name, or null where it is unknown */
static void json_key(FILE *out, const char *field, const char *name, bool known)
{
	fprintf(out, ", \"%s\": ", field);
	if (known)
		json_str(out, name);
	else
		fputs("null", out);
}

/* --group-by host, subsys, ns: "host" (hostnqn), "hostname", "subsys", "ns" (a number); null unknown */
static void print_keys_json(FILE *out, const struct nt_report *rep, const struct nt_group *g)
{
	unsigned int gb = rep->o->group_by;

	if (gb & NT_GB_HOST) {
		const char *hn = nt_report_host_hostname(rep, g->host);

		json_key(out, "host", nt_report_key_name(rep, NT_KEY_HOST, g->host), g->host != NT_KEY_UNKNOWN);
		json_key(out, "hostname", hn, *hn);
	}
	if (gb & NT_GB_SUBSYS)
		json_key(out, "subsys", nt_report_key_name(rep, NT_KEY_SUBSYS, g->subsys), g->subsys != NT_KEY_UNKNOWN);
	if (gb & NT_GB_NS) {
		fputs(", \"ns\": ", out);
		if (g->ns == NT_KEY_UNKNOWN)
			fputs("null", out);
		else if (g->ns == NT_KEY_OTHER)
			fputs("\"other\"", out);
		else
			fputs(nt_report_key_name(rep, NT_KEY_NS, g->ns), out);	/* digits only */
	}
}

/* the "groups" array's members; secs > 0 adds "iops" (live intervals) */
/* the groups as a JSON array's elements: laid out on lines (report), or on one line (live) */
static void print_groups_json(FILE *out, const struct nt_report *rep, double secs, bool one_line)
{
	const struct nt_report_opts *o = rep->o;
	char name[64], q[32], key[NT_PCT_LABEL + 8];
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
			struct qfacts f;

			fprintf(out, ", \"queue\": ");
			json_str(out, q);
			qfacts_of(rep, g, &f);
			if (f.io_cpu >= 0)
				fprintf(out, ", \"io_cpu\": %d", f.io_cpu);
			else
				fputs(", \"io_cpu\": null", out);
			fputs(", \"local\": ", out);
			if (f.local[0])
				json_str(out, f.local);
			else
				fputs("null", out);
			fputs(", \"remote\": ", out);
			if (f.remote[0])
				json_str(out, f.remote);
			else
				fputs("null", out);
			if (f.rx_queue >= 0)
				fprintf(out, ", \"rx_queue\": %d", f.rx_queue);
			else
				fputs(", \"rx_queue\": null", out);
			if (f.tx_queue >= 0)
				fprintf(out, ", \"tx_queue\": %d", f.tx_queue);
			else
				fputs(", \"tx_queue\": null", out);
			for (int k = 0; k < 2; k++)
				if (g->dep_n[k])
					fprintf(out, ", \"%sdepth_mean\": %.2f, \"%sdepth_max\": %u", k ? "target_" : "",
						f.dmean[k], k ? "target_" : "", f.dmax[k]);
				else
					fprintf(out, ", \"%sdepth_mean\": null, \"%sdepth_max\": null", k ? "target_" : "",
						k ? "target_" : "");
		}
		print_keys_json(out, rep, g);
		fprintf(out, ", \"count\": %" PRIu64, g->count);
		nt_status_label(g->status, g->status_nvme, q, sizeof(q));
		fprintf(out, ", \"status\": \"%s\"", q);
		if (g->status)
			fprintf(out, ", \"status_name\": \"%s\"", nt_status_name(g->status, g->status_nvme));
		fprintf(out, ", \"full_breakdown\": {\"ios\": %" PRIu64 ", \"max_residual_ns\": %" PRIu64 "}",
			g->full, g->full_resid);
		put_rate(out, g, secs, (const char *const[]){ ", \"span_s\": %.6f", ", \"iops\": %.1f, \"mb_s\": %.3f",
							      ", \"iops\": null, \"mb_s\": null" });
		fprintf(out, ",%s\"stages\": {", one_line ? "" : "\n   ");
		first = true;
		for (int s = 0; s < NT_ST_NR; s++) {
			const struct nt_hist *h = &g->h[s];

			if (!h->count)
				continue;
			fprintf(out, "%s%s\"%s\": {\"count\": %" PRIu64 ", \"avg_us\": %.3f, \"min_us\": %.3f",
				first ? "" : ",", one_line ? "" : "\n    ", nt_stage_name(s), h->count,
				nt_hist_mean(h) / 1000.0, us(nt_hist_percentile(h, 0)));
			for (int p = 0; p < o->npcts; p++) {
				pct_key(o, p, key, sizeof(key));
				fprintf(out, ", \"%s_us\": %.3f", key, us(nt_hist_percentile(h, o->pcts[p])));
			}
			fprintf(out, ", \"max_us\": %.3f", us(nt_hist_percentile(h, 100)));
			if (o->hist) {
				uint64_t bins[NT_LOG2_BINS];
				int nb = nt_hist_log2_us(h, bins);

				fputs(", \"log2_us\": [", out);
				for (int i = 0; i < nb; i++)
					fprintf(out, "%s%" PRIu64, i ? ", " : "", bins[i]);
				fputc(']', out);
			}
			if (g->stand_in[s])
				fprintf(out, ", \"stand_in\": %" PRIu64, g->stand_in[s]);
			fputc('}', out);
			first = false;
		}
		fprintf(out, "}}");
	}
}

/* "io_status": I/Os by status, success first */
static void print_status_json(FILE *out, const struct nt_report *rep)
{
	struct status_count *sc = calloc(rep->ngroups + 1, sizeof(*sc));
	int n = sc ? status_counts(rep, sc, rep->ngroups + 1) : 0;
	char label[32];

	fprintf(out, " \"io_status\": [");
	for (int k = 0; k < n; k++) {
		nt_status_label(sc[k].status, sc[k].nvme, label, sizeof(label));
		fprintf(out, "%s{\"status\": \"%s\", \"name\": \"%s\", \"kind\": \"%s\", \"ios\": %" PRIu64 "}",
			k ? ", " : "", label, nt_status_name(sc[k].status, sc[k].nvme),
			!sc[k].status ? "none" : sc[k].nvme ? "nvme" : "block", sc[k].ios);
	}
	fprintf(out, "],\n");
	free(sc);
}

/* "k1": "v1", "k2": "v2" ... from { k1, v1, k2, v2, ..., NULL }, the values escaped */
static void json_fields(FILE *out, const char *const *kv)
{
	for (int i = 0; kv[i]; i += 2) {
		fprintf(out, "%s\"%s\": ", i ? ", " : "", kv[i]);
		json_str(out, kv[i + 1]);
	}
}

/* what the file says of its recording: command line, start and end, controllers */
static void print_facts_json(FILE *out, const struct nt_input *in)
{
	const struct nt_header *h = &in->hdr;
	uint64_t from, to;
	char t[48];

	fprintf(out, ",\n   \"cmdline\": ");
	json_str(out, h->cmdline);
	file_span(in, &from, &to);
	nt_fmt_wall(from, t, sizeof(t));
	fprintf(out, ", \"start\": ");
	if (from)
		fprintf(out, "\"%s\"", t);
	else
		fputs("null", out);
	nt_fmt_wall(to, t, sizeof(t));
	fprintf(out, ", \"end\": ");
	if (to)
		fprintf(out, "\"%s\", \"duration_s\": %.6f", t, (to - from) / 1e9);
	else
		fputs("null, \"duration_s\": null", out);
	fprintf(out, ",\n   \"controllers\": [");
	for (uint32_t k = 0; k < h->nctrls; k++) {
		const struct nt_ctrl_info *c = &h->ctrls[k];

		fprintf(out, "%s{\"instance\": %d, \"cntlid\": %u, ", k ? ", " : "", c->instance, c->cntlid);
		json_fields(out, (const char *const[]){ "transport", c->transport, "subsysnqn", c->subsysnqn,
							"hostnqn", c->hostnqn, "address", c->address, NULL });
		fprintf(out, ", \"queues\": %u}", c->nqueues);
	}
	fputc(']', out);
	/* a reconnect while recording: the controller's new cntlid, and from when */
	fprintf(out, ",\n   \"cntlid_changes\": [");
	for (uint32_t k = 0; k < h->ncchanges && k < NT_MAX_CNTLID_CHANGES; k++) {
		const struct nt_cntlid_change *c = &h->cchanges[k];

		nt_fmt_wall(c->from_mono_ns >= h->mono_ns ? c->from_mono_ns - h->mono_ns + h->real_ns : h->real_ns,
			    t, sizeof(t));
		fprintf(out, "%s{\"instance\": %d, \"cntlid\": %u, \"from\": \"%s\"}", k ? ", " : "", c->instance,
			c->cntlid, t);
	}
	fputc(']', out);
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
		print_facts_json(out, in);
		fprintf(out, ",\n   \"hooks\": [");
		for (uint32_t k = 0; k < in->hdr.nhooks; k++) {
			const struct nt_hook_info *hk = &in->hdr.hooks[k];

			fputs(k ? ", {" : "{", out);
			json_fields(out, (const char *const[]){ "name", hk->name, "attach", hk->attach, "status", hk->status,
								"boundary", hk->boundary, NULL });
			fputc('}', out);
		}
		fprintf(out, "]}");
	}
	fprintf(out, "],\n \"lost_records\": %" PRIu64 ", \"matched\": %" PRIu64
		", \"unmatched\": {\"initiator\": %" PRIu64 ", \"target\": %" PRIu64 "},\n",
		rep->lost, rep->matched, rep->unmatched_init, rep->unmatched_tgt);
	print_status_json(out, rep);
	fprintf(out, " \"lost_detail\": {\"ring_buffer_full\": %" PRIu64 ", \"map_full\": %" PRIu64
		", \"skipped_runs\": %" PRIu64 ", \"no_completion\": %" PRIu64 ", \"user_space\": %" PRIu64 ", \"not_run\": %" PRIu64 "},\n",
		rep->lost_why[0], rep->lost_why[1], rep->lost_why[2], rep->lost_why[3], rep->lost_why[4], rep->lost_why[5]);
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
	{
		const struct nt_input *ini = NULL;

		if (sampling_differs(rep, &ini))
			fprintf(out, ", \"sampling_differs\": true");
	}
	fprintf(out, "},\n");
	if (rep->since_set || rep->until_set) {
		fputs(" \"time_window\": {\"since_ns\": ", out);
		rep->since_set ? fprintf(out, "%" PRId64, rep->since_ns) : fputs("null", out);
		fputs(", \"until_ns\": ", out);
		rep->until_set ? fprintf(out, "%" PRId64, rep->until_ns) : fputs("null", out);
		fprintf(out, ", \"left_out\": %" PRIu64 "},\n", rep->outside);
		{
			uint64_t from, to;

			recorded_span(rep, &from, &to);
			fprintf(out, " \"recorded\": {\"from_ns\": %" PRIu64 ", \"to_ns\": ", from);
			to ? fprintf(out, "%" PRIu64, to) : fputs("null", out);
			fputs("},\n", out);
		}
	}
	fprintf(out, " \"hooks_not_attached\": %d,\n \"groups\": [", hooks_missing(rep));
	print_groups_json(out, rep, 0, false);
	fprintf(out, "]");
	if (rep->o->diagnose) {
		char scope[512];

		if (nt_diagnose_scope(rep, scope, sizeof(scope))) {	/* one host: what the findings cannot see */
			fputs(",\n \"diagnosis_scope\": ", out);
			nt_put_json(out, scope);
		}
		fputs(",\n \"time_shares\": ", out);	/* where the time goes, whether a rule fired or not */
		nt_diagnose_print_shares_json(out, rep);
		fprintf(out, ",\n \"findings\": [");
		nt_diagnose_print_json(out, rep);
		fprintf(out, "]");
	}
	fprintf(out, "}\n");
}

/* ---- CSV ---- */

/* the header line; live's rows start with the interval's time (RFC 3339) and length */
static void csv_header(FILE *out, const struct nt_report_opts *o, bool timed)
{
	char key[NT_PCT_LABEL + 8];

	fprintf(out, "%sop,size,device,queue,group_count,stage,count,avg_us", timed ? "time,interval_s," : "");
	for (int p = 0; p < o->npcts; p++) {
		pct_key(o, p, key, sizeof(key));
		fprintf(out, ",%s_us", key);
	}
	/* added later: after the percentiles, so that columns keep their places */
	fprintf(out, ",min_us,max_us,status,span_s,iops,mb_s");
	/* --group-by queue's facts, empty elsewhere */
	fprintf(out, ",io_cpu,local,remote,rx_queue,depth_mean,depth_max,target_depth_mean,target_depth_max");
	/* added later still: at the end */
	fprintf(out, ",tx_queue");
	/* --group-by host, subsys or ns: their columns, at the end */
	if (o->group_by & (NT_GB_HOST | NT_GB_SUBSYS | NT_GB_NS))
		fprintf(out, ",host,hostname,subsys,ns");
	fputc('\n', out);
}

/* --group-by host, subsys or ns: a row's host,hostname,subsys,ns (empty: not grouped by it, or unknown) */
static void csv_keys(FILE *out, const struct nt_report *rep, const struct nt_group *g)
{
	unsigned int gb = rep->o->group_by;

	if (!(gb & (NT_GB_HOST | NT_GB_SUBSYS | NT_GB_NS)))
		return;
	fputc(',', out);
	if ((gb & NT_GB_HOST) && g->host != NT_KEY_UNKNOWN)
		nt_put_csv(out, nt_report_key_name(rep, NT_KEY_HOST, g->host));
	fputc(',', out);
	if (gb & NT_GB_HOST)
		nt_put_csv(out, nt_report_host_hostname(rep, g->host));
	fputc(',', out);
	if ((gb & NT_GB_SUBSYS) && g->subsys != NT_KEY_UNKNOWN)
		nt_put_csv(out, nt_report_key_name(rep, NT_KEY_SUBSYS, g->subsys));
	fputc(',', out);
	if ((gb & NT_GB_NS) && g->ns != NT_KEY_UNKNOWN)
		nt_put_csv(out, nt_report_key_name(rep, NT_KEY_NS, g->ns));
}

/* a row's queue columns (empty but for --group-by queue), and its end */
static void csv_queue(FILE *out, const struct nt_report *rep, const struct nt_group *g)
{
	struct qfacts f;

	if (!(rep->o->group_by & NT_GB_QUEUE) || !g->has_queue) {
		fputs(",,,,,,,,,", out);
		csv_keys(out, rep, g);
		fputc('\n', out);
		return;
	}
	qfacts_of(rep, g, &f);
	fputc(',', out);
	if (f.io_cpu >= 0)
		fprintf(out, "%d", f.io_cpu);
	fputc(',', out);
	nt_put_csv(out, f.local);
	fputc(',', out);
	nt_put_csv(out, f.remote);
	fputc(',', out);
	if (f.rx_queue >= 0)
		fprintf(out, "%d", f.rx_queue);
	for (int k = 0; k < 2; k++)
		if (g->dep_n[k])
			fprintf(out, ",%.2f,%u", f.dmean[k], f.dmax[k]);
		else
			fputs(",,", out);
	fputc(',', out);
	if (f.tx_queue >= 0)
		fprintf(out, "%d", f.tx_queue);
	csv_keys(out, rep, g);
	fputc('\n', out);
}

/* one row per group and stage; when: NULL, or live's interval (its time and length first) */
static void csv_rows(FILE *out, const struct nt_report *rep, const char *when, double secs)
{
	const struct nt_report_opts *o = rep->o;
	char name[64], q[32];

	for (int gi = 0; gi < rep->ngroups; gi++) {
		const struct nt_group *g = &rep->groups[gi];
		double rate = group_secs(g, secs);
		char status[32];

		dev_name(rep, g->dev_role, g->dev, name, sizeof(name));
		queue_name(g, q, sizeof(q));
		nt_status_label(g->status, g->status_nvme, status, sizeof(status));
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
			fprintf(out, ",%.3f,%.3f,%s,%.6f,", us(nt_hist_percentile(h, 0)), us(nt_hist_percentile(h, 100)),
				status, rate);
			if (rate > 0)
				fprintf(out, "%.1f,%.3f", g->count / rate, g->bytes / rate / 1e6);
			else
				fputs(",", out);
			csv_queue(out, rep, g);
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
	case NT_FMT_HTML:
		nt_report_html(out, rep, NULL);	/* tables only: the charts need the files again (nt_report_cmd) */
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
	memcpy(o->pct_labels, cfg->pct_labels, sizeof(o->pct_labels));
	o->format = cfg->format;
	o->group_by = cfg->group_by;
	o->hist = cfg->hist;
	/* the rules look at each queue: --diagnose groups by queue too */
	o->diagnose = cfg->cmd == NT_CMD_REPORT && cfg->diagnose;
	if (o->diagnose)
		o->group_by |= NT_GB_QUEUE;
	/* -v of record and live is about libbpf, not the report */
	o->verbose = cfg->cmd == NT_CMD_REPORT && cfg->verbose;
	o->window_ns = (uint64_t)(cfg->pair_window * 1e9);
	o->since = cfg->since;
	o->until = cfg->until;
}

/* the report into out, or (-o FILE) into FILE: 0600, an existing FILE kept as FILE.old; 0 or -1 */
static int write_report(const struct nt_config *cfg, const char *buf, size_t len, FILE *out, FILE *err)
{
	struct nt_outfile of = { .fd = -1 };
	char msg[400];

	if (!cfg->report_output || !strcmp(cfg->report_output, "-")) {
		errno = 0;
		if (fwrite(buf, 1, len, out) != len || fflush(out) || ferror(out)) {
			fprintf(err, "ntbpf report: cannot write the report to standard output: %s\n",
				strerror(errno ? errno : EIO));
			return -1;
		}
		return 0;
	}
	if (nt_outfile_open(&of, cfg->report_output, msg, sizeof(msg)) || nt_outfile_start(&of, msg, sizeof(msg))) {
		if (of.f)
			nt_outfile_abort(&of);
		fprintf(err, "ntbpf report: %s\n", msg);
		return -1;
	}
	if (fwrite(buf, 1, len, of.f) != len) {
		nt_outfile_abort(&of);
		fprintf(err, "ntbpf report: cannot write %s: %s\n", nt_esc_term(msg, sizeof(msg), cfg->report_output),
			strerror(errno));
		return -1;
	}
	if (nt_outfile_commit(&of, msg, sizeof(msg))) {
		fprintf(err, "ntbpf report: %s\n", msg);
		return -1;
	}
	return 0;
}

/* a stream that drops what is written: no /dev/null needed (a container or a bare chroot may lack /dev) */
static ssize_t discard_write(void *cookie, const char *buf, size_t size)
{
	return size;
}

static FILE *discard_stream(void)
{
	static const cookie_io_functions_t io = { .write = discard_write };

	return fopencookie(NULL, "w", io);
}

/*
 * -o FILE must not replace what the report reads: FILE is one of the inputs
 * (the same file, by device and inode: a name twice, a link), or an ntbpf
 * record file (a forgotten output name: "report -o initiator.ntbpf
 * target.ntbpf").  0, or -1 with a one-line cause in msg.
 */
int nt_output_check(const char *output, const char *const *inputs, int n, const char *prog, char *msg, size_t len)
{
	char path[256], in[256], magic[8];
	struct stat so, si;
	FILE *f;

	if (!output || !strcmp(output, "-") || stat(output, &so))
		return 0;	/* standard output, or a new file */
	nt_esc_term(path, sizeof(path), output);
	for (int i = 0; i < n; i++) {
		int rc = strcmp(inputs[i], "-") ? stat(inputs[i], &si) : fstat(STDIN_FILENO, &si);

		if (!rc && si.st_dev == so.st_dev && si.st_ino == so.st_ino) {
			snprintf(msg, len, "%s: -o %s is an input (%s): the report would replace it; give another name",
				 prog, path, strcmp(inputs[i], "-") ? nt_esc_term(in, sizeof(in), inputs[i]) :
				 "standard input");
			return -1;
		}
	}
	if (S_ISREG(so.st_mode) && (f = fopen(output, "rb"))) {
		bool rec = fread(magic, 1, sizeof(magic), f) == sizeof(magic) && !memcmp(magic, "NTBPFREC", 8);

		fclose(f);
		if (rec) {
			snprintf(msg, len, "%s: -o %s is an ntbpf record file: the report would replace it; give "
				 "another name", prog, path);
			return -1;
		}
	}
	return 0;
}

int nt_report_cmd(const struct nt_config *cfg, FILE *out, FILE *err)
{
	bool html = cfg->format == NT_FMT_HTML;
	struct nt_input *ins = calloc(cfg->nfiles, sizeof(*ins)), *ins2 = html ? calloc(cfg->nfiles, sizeof(*ins2)) : NULL;
	FILE **files = calloc(cfg->nfiles, sizeof(*files)), *m = NULL, *quiet = NULL;
	struct nt_rows *rows = NULL;
	struct nt_report_opts o;
	struct nt_report rep;
	char msg[1200], *buf = NULL;
	size_t len = 0;
	int rc = 0;

	if (!ins || !files || (html && !ins2)) {
		free(ins);
		free(ins2);
		free(files);
		return 1;
	}
	nt_report_opts_of(cfg, &o);
	if (nt_output_check(cfg->report_output, (const char *const *)cfg->files, cfg->nfiles, "ntbpf report", msg,
			    sizeof(msg))) {
		fprintf(err, "%s\n", msg);
		rc = 1;
		goto out;
	}
	for (int i = 0; i < cfg->nfiles; i++) {
		/* "-": standard input, read front to back like any file (a pipe will do); html reads the files twice */
		files[i] = html ? nt_open_input(cfg->files[i]) :
			   strcmp(cfg->files[i], "-") ? fopen(cfg->files[i], "rb") : fdopen(dup(STDIN_FILENO), "rb");
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
	/* the charts: every I/O again (the warnings were given once) */
	quiet = html ? discard_stream() : NULL;
	if (html && (!quiet || nt_rows_open(&rows, ins2, files, (const char *const *)cfg->files, cfg->nfiles,
					    "ntbpf report", quiet))) {
		fprintf(err, "ntbpf report: cannot read the files again for the charts\n");
		nt_report_free(&rep);
		rc = 1;
		goto out;
	}
	m = open_memstream(&buf, &len);
	if (!m) {
		fprintf(err, "ntbpf report: out of memory\n");
		nt_report_free(&rep);
		rc = 1;
		goto out;
	}
	if (html) {
		if (nt_report_html(m, &rep, rows)) {
			fprintf(err, "ntbpf report: out of memory, or the files could not be read again\n");
			rc = 1;
		}
	} else {
		nt_report_print(m, &rep);
	}
	nt_report_free(&rep);
	if (fclose(m)) {
		fprintf(err, "ntbpf report: out of memory\n");
		rc = 1;
	} else if (write_report(cfg, buf, len, out, err)) {
		rc = 1;
	}
out:
	free(buf);
	if (quiet)
		fclose(quiet);
	nt_rows_free(rows);
	for (int i = 0; i < cfg->nfiles; i++) {
		if (files[i])
			fclose(files[i]);
		nt_input_free(&ins[i]);
		if (ins2)
			nt_input_free(&ins2[i]);
	}
	free(files);
	free(ins);
	free(ins2);
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
