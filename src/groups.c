// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * groups.c - the report's aggregation (src/groups.h).  Each I/O contributes
 * one value per stage it has to its group's histograms; groups are few (op x
 * size x device x queue), so they live in a small array, searched from the
 * last one used.  A file report's records come from the input-and-pairing
 * pass (src/pairing.c), which hands each record to take_sum and each I/O to
 * emit_sums.  Below every renderer: none of them calls back up into the
 * report command for a group, a key's name or a queue.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include "escape.h"
#include "groups.h"
#include "names.h"
#include "pairing.h"

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
	uint16_t ctrl, qid, status, path;
	uint16_t host, subsys, ns;
	uint8_t op;
	bool has_queue, status_nvme;
};

static bool same_group(const struct nt_group *g, const struct gkey *k)
{
	return g->op == k->op && g->size == k->size && g->dev_role == k->dev_role && g->dev == k->dev &&
	       g->path == k->path &&
	       g->has_queue == k->has_queue && g->ctrl == k->ctrl && g->qid == k->qid && g->status == k->status &&
	       g->status_nvme == k->status_nvme && g->host == k->host && g->subsys == k->subsys && g->ns == k->ns;
}

/* r's multipath path (nt_path_of), through the report's cache (rep is the caller's: a cache, not the report) */
static uint16_t path_of(const struct nt_report *rep, const struct ntbpf_rec *r, const struct nt_header *h)
{
	struct nt_pathc *e = (struct nt_pathc *)&rep->pathc[r->ctrl & 7];

	if (e->h != h || e->head != r->dev || e->ctrl != r->ctrl) {
		e->h = h;
		e->head = r->dev;
		e->ctrl = r->ctrl;
		e->path = nt_path_of((struct nt_mpath *)&rep->mpath, h, r->dev, r->ctrl);
	}
	return e->path;
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
		/* a namespace reached by several paths (native multipath): the path this I/O took */
		if (r->role != NTBPF_ROLE_TARGET && (r->flags & NTBPF_F_NVME) && h)
			key.path = path_of(rep, r, h);
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
	g->path = key.path;
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

/* ---- --diagnose's time windows (struct nt_timewin) ---- */

/* the io CPU of r's queue as its header lists it, as a mask bit (0: unknown) */
static uint64_t queue_cpu_bit(const struct nt_header *h, const struct ntbpf_rec *r)
{
	const struct nt_ctrl_info *c = h ? nt_ctrl_of(h, r->role, r->flags, r->ctrl) : NULL;

	for (uint32_t k = 0; c && c->queues && k < c->nqueues; k++)
		if (c->queues[k].qid == r->qid)
			return c->queues[k].io_cpu < 0 ? 0 : 1ull << (c->queues[k].io_cpu < 63 ? c->queues[k].io_cpu : 63);
	return 0;
}

/* a target record's stream + 1 (host, subsystem, namespace), made if new; 0: no host named; -1 (0xffff): no room */
static uint16_t win_stream(struct nt_report *rep, const struct ntbpf_rec *r, const struct nt_header *h)
{
	struct nt_timewin *w = rep->win;
	uint16_t host, subsys, k;
	uint32_t nsid;
	uint64_t cpu;

	if (w->last.stream && w->last.h == h && w->last.ctrl == r->ctrl && w->last.qid == r->qid &&
	    w->last.dev == r->dev)
		return w->last.stream;
	ctrl_keys(rep, r, h, &host, &subsys);
	if (host == NT_KEY_UNKNOWN)
		return 0;
	if (host == NT_KEY_OTHER)
		return UINT16_MAX;
	nsid = h ? nt_nsid_of(h, r->role, r->flags, r->ctrl, r->dev) : 0;
	cpu = queue_cpu_bit(h, r);
	for (k = 0; k < w->nstreams; k++)
		if (w->s[k].host == host && w->s[k].subsys == subsys && w->s[k].nsid == nsid)
			break;
	if (k == w->nstreams) {
		if (k == NT_WIN_STREAMS)
			return UINT16_MAX;
		w->s[w->nstreams++] = (struct nt_wstream){ .host = host, .subsys = subsys, .nsid = nsid };
	}
	w->s[k].cpus |= cpu;
	w->last.h = h;
	w->last.ctrl = r->ctrl;
	w->last.qid = r->qid;
	w->last.dev = r->dev;
	w->last.stream = (uint16_t)(k + 1);
	return w->last.stream;
}

/* floor(a / b) for b > 0 */
static int64_t floor_div(int64_t a, int64_t b)
{
	return a / b - (a % b < 0);
}

/* windows twice as wide: each pair merged (more windows with I/O than the table holds) */
static void win_widen(struct nt_timewin *w)
{
	int n = 0;

	for (int k = 0; k < w->nwin; k++) {
		int64_t x = floor_div(w->idx[k], 2);

		if (n && w->idx[n - 1] == x) {
			for (int s = 0; s < w->nstreams; s++) {
				struct nt_wcell *a = &w->c[n - 1][s];
				const struct nt_wcell *b = &w->c[k][s];

				a->ios += b->ios;
				a->tn += b->tn;
				a->bytes += b->bytes;
				a->tsum += b->tsum;
				a->busy_ns += b->busy_ns;
			}
			continue;
		}
		w->idx[n] = x;
		if (n != k)
			memcpy(w->c[n], w->c[k], sizeof(w->c[n]));
		n++;
	}
	memset(&w->c[n], 0, (w->nwin - n) * sizeof(w->c[0]));
	w->nwin = n;
	w->width_ns *= 2;
}

/* the row of the window holding t (made if new, in time order) */
static struct nt_wcell *win_row(struct nt_timewin *w, uint64_t t)
{
	for (;;) {
		int64_t k = floor_div((int64_t)(t - w->base_ns), (int64_t)w->width_ns);
		int lo = 0, hi = w->nwin;

		if (w->nwin && w->idx[w->nwin - 1] == k)	/* mostly the last one */
			return w->c[w->nwin - 1];
		while (lo < hi) {
			int mid = (lo + hi) / 2;

			if (w->idx[mid] < k)
				lo = mid + 1;
			else
				hi = mid;
		}
		if (lo < w->nwin && w->idx[lo] == k)
			return w->c[lo];
		if (w->nwin == NT_WIN_N && w->width_ns < 1ull << 60) {
			win_widen(w);
			continue;
		}
		if (w->nwin == NT_WIN_N)	/* not reached: 512 windows of 36 years each would be full */
			return w->c[lo < w->nwin ? lo : w->nwin - 1];
		memmove(&w->idx[lo + 1], &w->idx[lo], (w->nwin - lo) * sizeof(w->idx[0]));
		memmove(&w->c[lo + 1], &w->c[lo], (w->nwin - lo) * sizeof(w->c[0]));
		memset(&w->c[lo], 0, sizeof(w->c[lo]));
		w->idx[lo] = k;
		w->nwin++;
		return w->c[lo];
	}
}

/* one target I/O (st) into its stream's window; ok: it succeeded (its target stages count) */
static void win_add(struct nt_report *rep, const struct nt_sum *st, bool ok, uint32_t mask, const uint64_t *vals)
{
	const uint32_t three = NT_WIN_STAGES;
	struct nt_timewin *w = rep->win;
	uint64_t t = (uint64_t)st->io.start_hi << 32 | st->io.start_lo;
	struct nt_wcell *c;

	if (!st->stream || st->stream > w->nstreams) {
		w->unnamed += !st->stream;
		w->dropped += !!st->stream;
		return;
	}
	if (!w->based) {	/* the first I/O opens the first window */
		w->based = true;
		w->base_ns = t;
		w->width_ns = NT_WIN_MIN_NS;
	}
	c = &win_row(w, t)[st->stream - 1];
	w->s[st->stream - 1].ios++;
	c->ios++;
	c->bytes += st->io.bytes;
	if (ok && (mask & three) == three) {
		double sum = 0;

		for (uint32_t left = three; left; left &= left - 1)
			sum += (double)vals[__builtin_ctz(left)];
		c->tn++;
		c->tsum += sum;
	}
	/* its time at the target, window by window: the load it put there (a 128k write at QD32 is there long) */
	if (mask & 1u << NT_ST_TARGET_RES) {
		uint64_t cur = t, end = t + vals[NT_ST_TARGET_RES];

		for (int k = 0; cur < end && k < NT_WIN_SPAN; k++) {
			struct nt_wcell *row = win_row(w, cur);	/* may widen the windows: the width after it */
			int64_t i = floor_div((int64_t)(cur - w->base_ns), (int64_t)w->width_ns);
			uint64_t wend = w->base_ns + (uint64_t)((i + 1) * (int64_t)w->width_ns);

			row[st->stream - 1].busy_ns += (wend < end ? wend : end) - cur;
			cur = wend;
		}
	}
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
	s->stream = role == NTBPF_ROLE_TARGET && r->role == role && rep->win ? win_stream(rep, r, h) : 0;
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
	if (st && rep->win)
		win_add(rep, st, !g->status, mask, vals);
	if (si)
		add_depth(g, 0, si->depth, mask, vals, nt_depth_stage(NTBPF_ROLE_INITIATOR));
	if (st)
		add_depth(g, 1, st->depth, mask, vals, nt_depth_stage(NTBPF_ROLE_TARGET));
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
	if (x->path != y->path)
		return x->path < y->path ? -1 : 1;
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
	struct nt_unseen u;

	nt_inputs_unseen(ins, nins, &u);
	for (int k = 0; k < 6; k++)
		rep->lost_why[k] += u.why[k];
	rep->lost += u.lost;
	rep->no_start += u.no_start;
	rep->inflight_end += u.inflight_end;
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

void nt_report_count(struct nt_report *rep, const struct nt_input *ins, int nins)
{
	count_lost(rep, ins, nins);
	count_matched(rep);
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
	if (role == NTBPF_ROLE_INITIATOR && !rep->fo_skip) {
		if (h != rep->fo_h) {	/* a file's first initiator record */
			rep->fo_h = h;
			rep->fo_host = nt_fo_host(h);
			rep->fo_mp = nt_mpath_of(&rep->mpath, h);
		}
		if (rep->fo_mp && nt_fo_feed(&rep->fo, r, rep->fo_host, rep->fo_seq++))
			return -1;
	}
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

/* the pass's take and emit (src/pairing.h): a record's payload is its struct io_sum (or nt_sum) */
static int take_sum(void *ctx, const struct ntbpf_rec *r, const struct nt_header *h, uint8_t role, void *pay)
{
	return sum_io(ctx, r, h, role, pay);
}

static int emit_sums(void *ctx, const void *si, const void *st)
{
	return add_io(ctx, si, st);
}

/* --since/--until on the wall clock: seconds from the start count from the earliest file's start */
static void set_window(void *ctx, const struct nt_input *ins, int n)
{
	struct nt_report *rep = ctx;
	const struct nt_report_opts *o = rep->o;
	int64_t start = INT64_MAX;

	for (int i = 0; i < n; i++)
		start = (int64_t)ins[i].hdr.real_ns < start ? (int64_t)ins[i].hdr.real_ns : start;
	rep->since_ns = o->since.rel && n ? start + o->since.ns : o->since.ns;
	rep->until_ns = o->until.rel && n ? start + o->until.ns : o->until.ns;
}

int nt_report_build_files(struct nt_report *rep, struct nt_input *ins, FILE *const *files, const char *const *names,
			  int n, const struct nt_report_opts *o, FILE *warn, char *err, size_t errlen)
{
	struct nt_pair_ops ops = { .take = take_sum, .emit = emit_sums, .start = set_window, .rereads = &rep->fo_skip,
				   .ctx = rep };

	nt_report_begin(rep, ins, n, o);
	rep->since_set = o->since.set;	/* the payload's size: set_window gives the times */
	rep->until_set = o->until.set;
	ops.payload[0] = ops.payload[1] = io_size(rep);
	if (nt_pair_files(&rep->m, ins, files, names, n, o->window_ns, &ops, "ntbpf report", warn, err, errlen))
		return -1;
	if (!rep->fo_skip) {
		if (nt_fo_finish(&rep->fo)) {
			snprintf(err, errlen, "out of memory");
			return -1;
		}
		nt_fo_summarize(&rep->fo, &rep->fo_sum);
	}
	nt_report_count(rep, ins, n);
	nt_report_finish(rep);
	return 0;
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

void nt_report_begin(struct nt_report *rep, const struct nt_input *ins, int nins, const struct nt_report_opts *o)
{
	memset(rep, 0, sizeof(*rep));
	rep->o = o;
	rep->ins = ins;
	rep->nins = nins;
	/* NULL: every I/O's host is "unknown" (--diagnose names hosts for its windows) */
	if ((o->group_by & (NT_GB_HOST | NT_GB_SUBSYS | NT_GB_NS)) || o->diagnose)
		rep->names = calloc(1, sizeof(*rep->names));
	if (o->diagnose)
		rep->win = calloc(1, sizeof(*rep->win));	/* NULL: the diagnosis says interference was not checked */
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
	nt_fo_free(&rep->fo);
	nt_mpath_free(&rep->mpath);
	free(rep->names);
	free(rep->win);
	memset(rep, 0, sizeof(*rep));
}

void nt_report_dev_name(const struct nt_report *rep, int role, uint32_t dev, char *buf, size_t len)
{
	nt_dev_name_in(rep->ins, rep->nins, role, dev, buf, len);
}

void nt_report_group_dev(const struct nt_report *rep, const struct nt_group *g, char *buf, size_t len)
{
	char head[64];

	nt_dev_name_in(rep->ins, rep->nins, g->dev_role, g->dev, head, sizeof(head));
	if (g->path)
		nt_path_name(head, g->path, buf, len);
	else
		snprintf(buf, len, "%s", head);
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
