// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * diagnose.c - ntbpf report --diagnose: rules over a built report (grouped by
 * queue).  Every rule compares stage means over the I/Os that succeeded
 * (failed I/Os are left out, as their groups are) against end_to_end's mean,
 * and, where the cause is a queue, the stage's mean at the shallowest and
 * the deepest queue depth the records saw.  docs/diagnose.md states each
 * rule; tests/unit/test_diagnose.c provokes each and its control.
 */
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "diagnose.h"
#include "escape.h"
#include "groups.h"

#define MAXQ 1024	/* queues told apart for queue_imbalance; more share the last entry */

struct qagg {
	int role;
	const char *host;	/* its controller's hostnqn ("" unknown): queues are compared within a host */
	uint16_t ctrl, qid;
	int io_cpu;		/* -1 unknown */
	uint64_t ios;
	double wait;		/* sum of nvme_tcp_submission, ns */
	uint64_t dep_n;		/* the initiator's depth samples, and their sum */
	double dep_sum;
};

struct agg {
	double sum[NT_ST_NR], mean[NT_ST_NR];
	uint64_t n[NT_ST_NR], min[NT_ST_NR];
	uint64_t ios;
	uint64_t dep_n[2];
	double dep_sum[2];
	uint64_t bn[2][NT_DEP_BUCKETS];
	double bsum[2][NT_DEP_BUCKETS];
	struct qagg q[MAXQ];
	int nq;
};

/* the hostnqn of a queue group's controller (initiator: nvme instance; target: cntlid), as a header of its role says; "" */
static const char *ctrl_host(const struct nt_report *rep, int role, uint16_t ctrl)
{
	for (int i = 0; i < rep->nins; i++) {
		const struct nt_header *h = &rep->ins[i].hdr;

		if ((h->role == NTBPF_ROLE_TARGET) != (role == NTBPF_ROLE_TARGET))
			continue;
		for (uint32_t c = 0; c < h->nctrls; c++)
			if (role == NTBPF_ROLE_TARGET ? h->ctrls[c].cntlid == ctrl : h->ctrls[c].instance == ctrl)
				return h->ctrls[c].hostnqn;
	}
	return "";
}

static void add_queue(struct agg *a, const struct nt_report *rep, const struct nt_group *g)
{
	const struct nt_queue_info *qi;
	const struct nt_hist *h = &g->h[NT_ST_NVME_TCP_SUB];
	int role = g->dev_role == NTBPF_ROLE_TARGET ? NTBPF_ROLE_TARGET : NTBPF_ROLE_INITIATOR, k;

	for (k = 0; k < a->nq; k++)
		if (a->q[k].role == role && a->q[k].ctrl == g->ctrl && a->q[k].qid == g->qid)
			break;
	if (k == a->nq) {
		if (a->nq == MAXQ)
			k = MAXQ - 1;
		else
			a->nq++;
		qi = nt_report_group_queue(rep, g);
		a->q[k] = (struct qagg){ role, ctrl_host(rep, role, g->ctrl), g->ctrl, g->qid, qi ? qi->io_cpu : -1, 0,
					 0, 0, 0 };
	}
	a->q[k].ios += g->count;
	a->q[k].dep_n += g->dep_n[0];
	a->q[k].dep_sum += g->dep_sum[0];
	if (h->count)
		a->q[k].wait += nt_hist_mean(h) * h->count;
}

/*
 * The queues the inputs' headers list that no I/O of the report went to,
 * with 0 I/Os: of the controllers that carried some (a controller the
 * report's filters left out is not this run's), so that one busy queue of
 * two is told from one queue.
 */
static void add_idle_queues(struct agg *a, const struct nt_report *rep)
{
	int nq = a->nq;

	for (int i = 0; i < rep->nins; i++) {
		const struct nt_header *h = &rep->ins[i].hdr;
		int role = h->role == NTBPF_ROLE_TARGET ? NTBPF_ROLE_TARGET : NTBPF_ROLE_INITIATOR;

		for (uint32_t c = 0; c < h->nctrls; c++) {
			const struct nt_ctrl_info *ci = &h->ctrls[c];
			uint16_t ctrl = role == NTBPF_ROLE_INITIATOR ? (uint16_t)ci->instance : ci->cntlid;
			bool busy = false;

			if (role == NTBPF_ROLE_INITIATOR && ci->instance < 0)
				continue;
			for (int k = 0; k < nq && !busy; k++)
				busy = a->q[k].role == role && a->q[k].ctrl == ctrl;
			for (uint32_t j = 0; busy && ci->queues && j < ci->nqueues; j++) {
				int k;

				for (k = 0; k < a->nq; k++)
					if (a->q[k].role == role && a->q[k].ctrl == ctrl && a->q[k].qid == ci->queues[j].qid)
						break;
				if (k < a->nq || a->nq == MAXQ)
					continue;
				a->q[a->nq++] = (struct qagg){ role, ci->hostnqn, ctrl, ci->queues[j].qid, ci->queues[j].io_cpu,
							       0, 0, 0, 0 };
			}
		}
	}
}

static void aggregate(const struct nt_report *rep, struct agg *a)
{
	memset(a, 0, sizeof(*a));
	for (int s = 0; s < NT_ST_NR; s++)
		a->min[s] = UINT64_MAX;
	for (int gi = 0; gi < rep->ngroups; gi++) {
		const struct nt_group *g = &rep->groups[gi];

		if (g->status)
			continue;	/* failed I/Os: out, as out of the others' percentiles */
		a->ios += g->count;
		for (int s = 0; s < NT_ST_NR; s++) {
			const struct nt_hist *h = &g->h[s];
			uint64_t mn;

			if (!h->count)
				continue;
			a->n[s] += h->count;
			a->sum[s] += nt_hist_mean(h) * h->count;
			mn = nt_hist_percentile(h, 0);
			if (mn < a->min[s])
				a->min[s] = mn;
		}
		for (int side = 0; side < 2; side++) {
			a->dep_n[side] += g->dep_n[side];
			a->dep_sum[side] += g->dep_sum[side];
			for (int b = 0; b < NT_DEP_BUCKETS; b++) {
				a->bn[side][b] += g->dep_bn[side][b];
				a->bsum[side][b] += g->dep_bsum[side][b];
			}
		}
		if (g->has_queue)
			add_queue(a, rep, g);
	}
	for (int s = 0; s < NT_ST_NR; s++)
		a->mean[s] = a->n[s] ? a->sum[s] / a->n[s] : 0;
	add_idle_queues(a, rep);
}

/*
 * The waiting stage's mean (ns) at the shallowest and the deepest depth
 * bucket that hold at least 5 % of the I/Os with a depth (and 10); the
 * buckets' low depths.  false: fewer than two such buckets.
 */
static bool depth_ends(const struct agg *a, int side, double *lo, double *hi, int *dlo, int *dhi)
{
	uint64_t tot = 0, need;
	int b0 = -1, b1 = -1;

	for (int b = 0; b < NT_DEP_BUCKETS; b++)
		tot += a->bn[side][b];
	need = tot / 20 > 10 ? tot / 20 : 10;
	for (int b = 0; b < NT_DEP_BUCKETS; b++)
		if (a->bn[side][b] >= need) {
			if (b0 < 0)
				b0 = b;
			b1 = b;
		}
	if (b0 < 0 || b1 == b0)
		return false;
	*lo = a->bsum[side][b0] / a->bn[side][b0];
	*hi = a->bsum[side][b1] / a->bn[side][b1];
	*dlo = 1 << b0;
	*dhi = 1 << b1;
	return true;
}

/* the share of denom of the sum of mask's stages' means (summed in pipeline order) */
static double share(const struct agg *a, double denom, uint32_t mask)
{
	double sum = 0;

	for (int s = 0; s < NT_ST_NR; s++)
		if (mask & (1u << s))
			sum += a->mean[s];
	return sum / denom;
}

/* the stages each host's CPU runs (the stage table's roles and layers) */
#define INIT_CPU nt_stages_where(NTBPF_ROLE_INITIATOR, NT_LAYERS_CPU)
/* the stage that waits behind each host's depth: the initiator's queue, the target's device */
#define DEPTH_I nt_depth_stage(NTBPF_ROLE_INITIATOR)
#define DEPTH_T nt_depth_stage(NTBPF_ROLE_TARGET)
#define TGT_CPU nt_stages_where(NTBPF_ROLE_TARGET, NT_LAYERS_CPU)

#define US(ns) ((ns) / 1000.0)

static struct nt_finding *next(struct nt_finding *f, int max, int *n)
{
	if (*n >= max)
		return NULL;
	memset(&f[*n], 0, sizeof(f[*n]));
	return &f[(*n)++];
}

/* ---- interference: one host's target stages against another's load, window by window ---- */

/* the distinct hosts of the windows' streams, in the order of their first stream; how many */
static int win_hosts(const struct nt_timewin *w, uint16_t *hosts)
{
	int n = 0;

	for (int k = 0; k < w->nstreams; k++) {
		int i;

		for (i = 0; i < n && hosts[i] != w->s[k].host; i++)
			;
		if (i == n)
			hosts[n++] = w->s[k].host;
	}
	return n;
}

static int dbl_cmp(const void *x, const void *y)
{
	double a = *(const double *)x, b = *(const double *)y;

	return a < b ? -1 : a > b;
}

/* the median of v[0..n) (reordered); 0 for none */
static double median(double *v, int n)
{
	if (!n)
		return 0;
	qsort(v, n, sizeof(*v), dbl_cmp);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/*
 * How far apart a and b lie: the share of the pairs (one of a, one of b) in
 * which a's is the larger (ties half): 1 when every a is larger, 0.5 when
 * they mix as at random (the Mann-Whitney U over the pairs; the busy and
 * idle windows' counts do not change what it means).
 */
static double separation(const double *a, int na, const double *b, int nb)
{
	double wins = 0;

	for (int i = 0; i < na; i++)
		for (int j = 0; j < nb; j++)
			wins += a[i] > b[j] ? 1 : a[i] == b[j] ? 0.5 : 0;
	return na && nb ? wins / ((double)na * nb) : 0;
}

enum if_why { IF_FIRES, IF_NOT_SHARED, IF_FEW_WINDOWS, IF_BELOW };

/* victim v against cause c (hosts' name indexes): the numbers, and whether (else why not) it fires */
static enum if_why if_eval(const struct nt_report *rep, const struct nt_timewin *w, uint16_t v, uint16_t c,
			   struct nt_interference *e)
{
	double ml[NT_WIN_N], mi[NT_WIN_N], ol[NT_WIN_N], oi[NT_WIN_N], peak = 0, sec;
	double ciops = 0, cbytes = 0;
	bool cs[NT_WIN_STREAMS] = { false }, any = false;
	int n = 0, len = 0;

	memset(e, 0, sizeof(*e));
	snprintf(e->victim, sizeof(e->victim), "%s", nt_report_key_name(rep, NT_KEY_HOST, v));
	snprintf(e->cause, sizeof(e->cause), "%s", nt_report_key_name(rep, NT_KEY_HOST, c));
	e->width_ms = w->width_ns / 1e6;
	sec = w->width_ns / 1e9;
	/* the cause's streams that share a namespace or an io CPU with one of the victim's */
	for (int i = 0; i < w->nstreams; i++)
		for (int j = 0; w->s[i].host == c && j < w->nstreams; j++) {
			const struct nt_wstream *a = &w->s[i], *b = &w->s[j];
			bool ns = a->nsid && a->subsys == b->subsys && a->nsid == b->nsid;
			uint64_t cpu = a->cpus & b->cpus;

			if (b->host != v || !(ns || cpu))
				continue;
			cs[i] = true;
			if (!any && len < (int)sizeof(e->shared)) {
				if (ns)
					len += snprintf(e->shared + len, sizeof(e->shared) - len, "namespace %u of %.100s",
							a->nsid, nt_report_key_name(rep, NT_KEY_SUBSYS, a->subsys));
				if (cpu && len < (int)sizeof(e->shared))
					snprintf(e->shared + len, sizeof(e->shared) - len, "%sthe io CPU %d", ns ? " and " : "",
						 __builtin_ctzll(cpu));
			}
			any = true;
		}
	if (!any)
		return IF_NOT_SHARED;
	/* the cause's load in a window: its I/Os in flight at the target, on average (their time there over the width) */
	for (int k = 0; k < w->nwin; k++) {
		double cl = 0;

		for (int i = 0; i < w->nstreams; i++)
			cl += cs[i] ? (double)w->c[k][i].busy_ns : 0;
		peak = cl > peak ? cl : peak;
	}
	for (int k = 0; k < w->nwin; k++) {
		double cl = 0, cb = 0, ci = 0, vt = 0, vn = 0, vio = 0;

		for (int i = 0; i < w->nstreams; i++) {
			if (cs[i]) {
				cl += (double)w->c[k][i].busy_ns;
				cb += (double)w->c[k][i].bytes;
				ci += w->c[k][i].ios;
			} else if (w->s[i].host == v) {
				vt += w->c[k][i].tsum;
				vn += w->c[k][i].tn;
				vio += w->c[k][i].ios;
			}
		}
		if (vn < NT_IF_WIN_IOS)
			continue;
		n++;
		if (peak > 0 && cl >= NT_IF_BUSY * peak) {
			ml[e->loaded] = vt / vn;
			ol[e->loaded++] = vio / sec;
			ciops += ci / sec;
			cbytes += cb / sec;
		} else if (cl <= NT_IF_IDLE * peak) {
			mi[e->idle] = vt / vn;
			oi[e->idle++] = vio / sec;
		}
	}
	e->windows = n;
	e->sep = separation(ml, e->loaded, mi, e->idle);
	e->cause_inflight = peak / w->width_ns;
	if (e->loaded) {
		e->cause_iops = ciops / e->loaded;
		e->cause_mbps = cbytes / e->loaded / 1e6;
	}
	e->victim_loaded_us = US(median(ml, e->loaded));
	e->victim_idle_us = US(median(mi, e->idle));
	e->victim_iops_loaded = median(ol, e->loaded);
	e->victim_iops_idle = median(oi, e->idle);
	if (e->loaded < NT_IF_MIN_WINDOWS || e->idle < NT_IF_MIN_WINDOWS)
		return IF_FEW_WINDOWS;
	if (e->victim_idle_us > 0 && e->victim_loaded_us >= NT_IF_GROWTH * e->victim_idle_us &&
	    e->victim_loaded_us - e->victim_idle_us >= NT_IF_MIN_US && e->sep >= NT_IF_SEP &&
	    e->victim_iops_loaded <= NT_IF_OWN * e->victim_iops_idle)
		return IF_FIRES;
	return IF_BELOW;
}

static double if_growth(const struct nt_interference *e)
{
	return e->victim_idle_us > 0 ? e->victim_loaded_us / e->victim_idle_us : 0;
}

static void if_finding(struct nt_finding *x, const struct nt_interference *e)
{
	x->kind = "interference";
	nt_stage_join(x->stage, sizeof(x->stage), NT_WIN_STAGES, "+");
	x->has_interference = true;
	x->in = *e;
	snprintf(x->evidence, sizeof(x->evidence), "host %s's target stages take %.1f us (median of the windows' "
		 "means) in the %d windows of %.0f ms where host %s was busy, %.1f us in the %d where it was idle "
		 "(x%.1f; longer in %.0f%% of the busy-idle pairs of windows); host %s in those windows: %.0f IOPS, "
		 "%.1f MB/s, up to %.1f I/Os in flight at the target, on %s; host %s's own rate %.0f vs %.0f IOPS",
		 e->victim, e->victim_loaded_us, e->loaded, e->width_ms, e->cause, e->victim_idle_us, e->idle,
		 if_growth(e), 100 * e->sep, e->cause, e->cause_iops, e->cause_mbps, e->cause_inflight, e->shared,
		 e->victim, e->victim_iops_loaded, e->victim_iops_idle);
	x->advice = "keep the hosts apart on the target: the busy host's namespace on another device, its load "
		    "capped (its queue depth, a rate limit: fio rate=, blk-throttle io.max on its initiator), or "
		    "nvmet_tcp's io_work for the two hosts' queues on different CPUs (the target NIC's RSS queues "
		    "and irq affinity)";
}

/* interference findings into f (from *n, at most max): a victim's at most once, its nearest cause */
static void interference(const struct nt_report *rep, struct nt_finding *f, int max, int *n)
{
	const struct nt_timewin *w = rep->win;
	uint16_t hosts[NT_WIN_STREAMS];
	int nh;

	if (!w)
		return;
	nh = win_hosts(w, hosts);
	for (int a = 0; a < nh; a++) {
		struct nt_interference e, best;
		bool found = false;
		struct nt_finding *x;

		for (int b = 0; b < nh; b++)
			if (b != a && if_eval(rep, w, hosts[a], hosts[b], &e) == IF_FIRES &&
			    (!found || if_growth(&e) > if_growth(&best))) {
				best = e;
				found = true;
			}
		if (found && (x = next(f, max, n)))
			if_finding(x, &best);
	}
}

/*
 * What the windows could not hold, appended to buf (after "; " if it holds
 * something): the target I/Os of streams beyond the table's, and, where
 * some hosts are named, those of hosts the target's file does not name
 * (files that name none say nothing: one host, or none to tell apart).
 */
static int lost_note(const struct nt_timewin *w, char *buf, size_t len)
{
	size_t at = strlen(buf);
	int k = 0;

	if (w->dropped && at < len)
		k = snprintf(buf + at, len - at, "%s%" PRIu64 " target I/Os of hosts beyond the first %d host and "
			     "namespace pairs not compared", at ? "; " : "", w->dropped, NT_WIN_STREAMS);
	at = strlen(buf);
	if (w->unnamed && w->nstreams && at < len)
		k = snprintf(buf + at, len - at, "%s%" PRIu64 " target I/Os whose host the target's file does not "
			     "name not compared", at ? "; " : "", w->unnamed);
	return k;
}

int nt_diagnose_interference_note(const struct nt_report *rep, char *buf, size_t len)
{
	const struct nt_timewin *w = rep->win;
	struct nt_interference e, best;
	uint16_t hosts[NT_WIN_STREAMS];
	enum if_why bw = IF_NOT_SHARED, r;
	int nh, at = 0, fired = 0;

	buf[0] = '\0';
	if (!w && rep->o->diagnose) {
		snprintf(buf, len, "not checked: no memory for its time windows");
		return 1;
	}
	if (!w)
		return 0;
	if ((nh = win_hosts(w, hosts)) < 2) {
		if (lost_note(w, buf, len) > 0)
			return 1;
		return 0;
	}
	/* the pair nearest to firing: one that fires; else enough windows and the most growth; else the most busy windows */
	for (int a = 0; a < nh; a++)
		for (int b = 0; b < nh; b++) {
			if (a == b)
				continue;
			r = if_eval(rep, w, hosts[a], hosts[b], &e);
			fired += r == IF_FIRES;
			if (at == 0 || r > bw || (r == bw && (r == IF_BELOW ? if_growth(&e) > if_growth(&best) :
							     e.loaded > best.loaded))) {
				best = e;
				bw = r;
				at = 1;
			}
		}
	if (fired)
		bw = IF_FIRES;
	switch (bw) {
	case IF_FIRES:
		break;
	case IF_NOT_SHARED:
		at = snprintf(buf, len, "no two of the %d hosts share a namespace or an io CPU the target's file names",
			      nh);
		break;
	case IF_FEW_WINDOWS:
		at = snprintf(buf, len, "host %s had %d windows of %.0f ms while host %s was busy and %d while it was "
			      "idle, of %d with %d I/Os or more (it compares at least %d of each): the two hosts' loads "
			      "did not both vary in time", best.victim, best.loaded, best.width_ms, best.cause, best.idle,
			      best.windows, NT_IF_WIN_IOS, NT_IF_MIN_WINDOWS);
		break;
	case IF_BELOW:
		at = snprintf(buf, len, "host %s's target stages x%.2f (%.1f vs %.1f us) in the windows where host %s was "
			      "busy (it fires at x%.1f and +%.0f us), longer in %.0f%% of the busy-idle pairs of windows (at "
			      "%.0f%%), its own rate x%.2f (at most x%.2f)", best.victim, if_growth(&best),
			      best.victim_loaded_us, best.victim_idle_us, best.cause, NT_IF_GROWTH, NT_IF_MIN_US,
			      100 * best.sep, 100 * NT_IF_SEP,
			      best.victim_iops_idle > 0 ? best.victim_iops_loaded / best.victim_iops_idle : 0, NT_IF_OWN);
		break;
	}
	if (bw == IF_FIRES)
		at = 0;
	if (at >= 0 && (size_t)at < len)
		lost_note(w, buf + at, len - at);
	return buf[0] != '\0';
}

/* the first queue of role with queue k's host */
static int first_of_host(const struct agg *a, int k)
{
	for (int i = 0; i < k; i++)
		if (a->q[i].role == a->q[k].role && !strcmp(a->q[i].host, a->q[k].host))
			return i;
	return k;
}

/*
 * How many hosts role's queues belong to; with most (not NULL): most[0]
 * the largest share of one host's I/Os that one of its queues carries, over
 * NT_DIAG_IMBALANCE times its even share (queue_imbalance's measure, where
 * larger than most[0] already), most[1] that host's queues, most[2] the share.
 */
static int hosts_of(const struct agg *a, int role, double *most)
{
	int nh = 0;

	for (int h = 0; h < a->nq; h++) {
		uint64_t tot = 0, top = 0;
		int nq = 0;

		if (a->q[h].role != role || first_of_host(a, h) != h)
			continue;
		nh++;
		for (int k = 0; most && k < a->nq; k++)
			if (a->q[k].role == role && !strcmp(a->q[k].host, a->q[h].host)) {
				nq++;
				tot += a->q[k].ios;
				top = a->q[k].ios > top ? a->q[k].ios : top;
			}
		if (most && nq >= 2 && tot && (double)top / tot / (NT_DIAG_IMBALANCE / nq) > most[0]) {
			most[0] = (double)top / tot / (NT_DIAG_IMBALANCE / nq);
			most[1] = nq;
			most[2] = (double)top / tot;
		}
	}
	return nh;
}

/* the denominator as nt_diagnose takes it, and its name; false: too few I/Os or nothing to compare with */
static bool denom_of(const struct agg *a, double *denom, const char **dn)
{
	*denom = a->n[NT_ST_E2E] ? a->mean[NT_ST_E2E] : a->mean[NT_ST_TARGET_RES];
	*dn = nt_stage_name(a->n[NT_ST_E2E] ? NT_ST_E2E : NT_ST_TARGET_RES);
	return a->ios >= NT_DIAG_MIN_IOS && *denom > 0;
}

/* what the rules share: the aggregate, the denominator and its name, the findings so far */
struct dctx {
	const struct agg *a;
	double denom;
	const char *dn;
	struct nt_finding *f;
	int max, n;
};

/* "%.1f + %.1f ... of %.1f us": the means of mask's stages (pipeline order) and the denominator's */
static void put_means(char *buf, size_t len, const struct agg *a, uint32_t mask, double denom)
{
	size_t at = 0;

	buf[0] = '\0';
	for (int s = 0; s < NT_ST_NR && at < len; s++)
		if (mask & (1u << s))
			at += snprintf(buf + at, len - at, "%s%.1f", at ? " + " : "", US(a->mean[s]));
	if (at < len)
		snprintf(buf + at, len - at, " of %.1f us", US(denom));
}

/*
 * too_few_queues: submission waits while many requests share each queue.
 * Growth with depth is evidence, not a condition: a queue that stays full
 * all run long (seed 004's 2 jobs x QD16 on one queue) has every request at
 * a high depth, and the wait does not grow within it.  true: it fired.
 */
static bool rule_too_few_queues(struct dctx *c, int nq_init)
{
	const struct agg *a = c->a;
	int s = nt_depth_stage(NTBPF_ROLE_INITIATOR), len, dlo, dhi;
	double sh = a->mean[s] / c->denom, lo, hi;
	struct nt_finding *x;

	if (!(sh >= NT_DIAG_SUBMIT_SHARE && a->dep_n[0] && a->dep_sum[0] / a->dep_n[0] >= NT_DIAG_DEPTH &&
	      (x = next(c->f, c->max, &c->n))))
		return false;
	x->kind = "too_few_queues";
	snprintf(x->stage, sizeof(x->stage), "%s", nt_stage_name(s));
	len = snprintf(x->evidence, sizeof(x->evidence), "%s is %.0f%% of %s (mean %.1f of %.1f us) with a mean "
		       "depth of %.1f requests per queue (%d I/O queue%s)", nt_stage_name(s), 100 * sh, c->dn,
		       US(a->mean[s]), US(c->denom), a->dep_sum[0] / a->dep_n[0], nq_init, nq_init == 1 ? "" : "s");
	if (depth_ends(a, 0, &lo, &hi, &dlo, &dhi) && lo > 0 && len > 0 && (size_t)len < sizeof(x->evidence))
		snprintf(x->evidence + len, sizeof(x->evidence) - len, "; it averages %.1f us at depth %d+ vs "
			 "%.1f us at depth %d-%d (x%.1f%s)", US(hi), dhi, US(lo), dlo, 2 * dlo - 1, hi / lo,
			 hi >= NT_DIAG_GROWTH * lo ? ": it grows with the depth" : "");
	x->advice = "more I/O queues: nvme connect -i N (nr_io_queues), at least as many as the CPUs "
		    "submitting I/O; or less outstanding I/O per queue";
	return true;
}

/* queue_imbalance for the queues of role of one host (hk: its first queue); true: it fired */
static bool imbalance_of_host(struct dctx *c, int role, int hk, int nh)
{
	const struct agg *a = c->a;
	int ws = nt_depth_stage(NTBPF_ROLE_INITIATOR);
	uint64_t tot = 0, top = 0, dn = 0;
	double wtot = 0, wtop = 0, ds = 0, dhot = 0, drest = 0, sh = a->mean[ws] / c->denom;
	int ktop = -1, kw = -1, cpu = -2, nq = 0;
	bool one_cpu = true;
	const char *host = a->q[hk].host;
	char who[300] = "";
	struct nt_finding *x;

	if (nh > 1)
		snprintf(who, sizeof(who), "host %s: ", *host ? host : "unknown");
	for (int k = 0; k < a->nq; k++) {
		if (a->q[k].role != role || strcmp(a->q[k].host, host))
			continue;
		nq++;
		tot += a->q[k].ios;
		wtot += a->q[k].wait;
		dn += a->q[k].dep_n;
		ds += a->q[k].dep_sum;
		if (a->q[k].ios > top) {
			top = a->q[k].ios;
			ktop = k;
		}
		if (a->q[k].wait > wtop) {
			wtop = a->q[k].wait;
			kw = k;
		}
		if (a->q[k].io_cpu < 0 || (cpu != -2 && a->q[k].io_cpu != cpu))
			one_cpu = false;
		cpu = a->q[k].io_cpu;
	}
	if (kw >= 0 && a->q[kw].dep_n && dn > a->q[kw].dep_n) {
		dhot = a->q[kw].dep_sum / a->q[kw].dep_n;
		drest = (ds - a->q[kw].dep_sum) / (dn - a->q[kw].dep_n);
	}
	if (nq >= 2 && tot && (double)top / tot >= NT_DIAG_IMBALANCE / nq && (x = next(c->f, c->max, &c->n))) {
		x->kind = "queue_imbalance";
		snprintf(x->stage, sizeof(x->stage), "-");
		snprintf(x->evidence, sizeof(x->evidence), "%squeue %u carries %.0f%% of the I/Os of %d queues "
			 "(%" PRIu64 " of %" PRIu64 "; even: %.0f%%)", who, a->q[ktop].qid, 100.0 * top / tot, nq,
			 top, tot, 100.0 / nq);
		x->advice = "spread the submitting threads over CPUs mapped to other queues (fio cpus_allowed, "
			    "numjobs), or check the queue map (nvme connect -i)";
	} else if (nq >= 2 && wtot > 0 && sh >= 0.1 && wtop / wtot >= NT_DIAG_IMBALANCE / nq &&
		   drest > 0 && dhot >= NT_DIAG_IMBALANCE * drest && (x = next(c->f, c->max, &c->n))) {
		x->kind = "queue_imbalance";
		snprintf(x->stage, sizeof(x->stage), "%s", nt_stage_name(ws));
		snprintf(x->evidence, sizeof(x->evidence), "%squeue %u holds %.0f%% of the %s wait of %d queues "
			 "(even: %.0f%%), with a mean depth of %.1f requests against %.1f on the others", who,
			 a->q[kw].qid, 100 * wtop / wtot, nt_stage_name(ws), nq, 100.0 / nq, dhot, drest);
		x->advice = "spread the submitting threads over CPUs mapped to other queues (fio cpus_allowed, "
			    "numjobs), or check the queue map (nvme connect -i)";
	} else if (nq >= 2 && one_cpu && (x = next(c->f, c->max, &c->n))) {
		x->kind = "queue_imbalance";
		snprintf(x->stage, sizeof(x->stage), "-");
		snprintf(x->evidence, sizeof(x->evidence), "%sall %d queues' io_work runs on CPU %d", who, nq, cpu);
		x->advice = "let the queues' io_work use several CPUs (nvme_tcp wq_unbound=N, the NIC's RSS and "
			    "irq affinity on the target)";
	} else {
		return false;
	}
	return true;
}

/*
 * queue_imbalance: one queue (or one io_cpu) carries most I/Os, or most
 * of the wait because it holds more of the outstanding I/O.  A queue
 * that waits longer at the depth of the others waits for its io_cpu,
 * not for its share of the load (the lab's split control: 2 jobs, one
 * per queue, depth 1 each, and the target's work on queue 1's CPU).
 * The initiator's queues, else the target's; each host's on their own,
 * named where there are several; the first that fires.
 */
static void rule_queue_imbalance(struct dctx *c, int nq_init)
{
	const struct agg *a = c->a;
	int role = nq_init ? NTBPF_ROLE_INITIATOR : NTBPF_ROLE_TARGET;
	int nh = hosts_of(a, role, NULL);

	for (int hk = 0; hk < a->nq; hk++)
		if (a->q[hk].role == role && first_of_host(a, hk) == hk && imbalance_of_host(c, role, hk, nh))
			break;
}

/* target_device: the target's backend, its depth stage */
static void rule_target_device(struct dctx *c)
{
	const struct agg *a = c->a;
	int s = nt_depth_stage(NTBPF_ROLE_TARGET), len, dlo, dhi;
	double sh = a->mean[s] / c->denom, lo, hi;
	struct nt_finding *x;

	if (!(sh >= NT_DIAG_DOMINANT && (x = next(c->f, c->max, &c->n))))
		return;
	x->kind = "target_device";
	snprintf(x->stage, sizeof(x->stage), "%s", nt_stage_name(s));
	len = snprintf(x->evidence, sizeof(x->evidence), "%s is %.0f%% of %s (mean %.1f of %.1f us)", nt_stage_name(s),
		       100 * sh, c->dn, US(a->mean[s]), US(c->denom));
	if (depth_ends(a, 1, &lo, &hi, &dlo, &dhi) && len > 0 && (size_t)len < sizeof(x->evidence))
		snprintf(x->evidence + len, sizeof(x->evidence) - len, "; %.1f us at target depth %d+ vs %.1f us "
			 "at depth %d-%d (x%.1f%s)", US(hi), dhi, US(lo), dlo, 2 * dlo - 1, lo > 0 ? hi / lo : 0,
			 lo > 0 && hi >= NT_DIAG_GROWTH * lo ? ": it queues in the device" : "");
	x->advice = "the target's namespace device is slow for this load: check it on the target (iostat -x), "
		    "spread I/O over more namespaces or devices, or lower the queue depth";
}

/* target_cpu: the stages the target's CPU runs (its TCP stack and nvmet_tcp) */
static void rule_target_cpu(struct dctx *c)
{
	uint32_t m = TGT_CPU;
	double sh = share(c->a, c->denom, m);
	char means[200];
	struct nt_finding *x;

	if (!(sh >= NT_DIAG_DOMINANT && (x = next(c->f, c->max, &c->n))))
		return;
	x->kind = "target_cpu";
	nt_stage_join(x->stage, sizeof(x->stage), m, "+");
	put_means(means, sizeof(means), c->a, m, c->denom);
	snprintf(x->evidence, sizeof(x->evidence), "the target's TCP and nvmet_tcp stages are %.0f%% of %s (means %s)",
		 100 * sh, c->dn, means);
	x->advice = "the target's CPUs: more CPUs for nvmet_tcp's io_work (the NIC's RSS queues and irq "
		    "affinity), fewer other tasks on them, more host queues to spread the connections";
}

/* network: the wire and both network stacks' queues */
static void rule_network(struct dctx *c)
{
	const struct agg *a = c->a;
	double sh = a->mean[NT_ST_NETWORK] / c->denom, base;
	struct nt_finding *x;

	if (!(sh >= NT_DIAG_DOMINANT && (x = next(c->f, c->max, &c->n))))
		return;
	base = a->min[NT_ST_NETWORK] == UINT64_MAX ? 0 : (double)a->min[NT_ST_NETWORK];
	x->kind = "network";
	snprintf(x->stage, sizeof(x->stage), "%s", nt_stage_name(NT_ST_NETWORK));
	snprintf(x->evidence, sizeof(x->evidence), "%s is %.0f%% of %s (mean %.1f of %.1f us); its minimum, the base "
		 "round trip, is %.1f us%s", nt_stage_name(NT_ST_NETWORK), 100 * sh, c->dn, US(a->mean[NT_ST_NETWORK]),
		 US(c->denom), US(base), base > 0 && a->mean[NT_ST_NETWORK] >= 2 * base ?
		 ": the mean is more than twice that, packets queue on the way" : ": the round trip itself is long");
	x->advice = "the network path: its round trip (distance, netem, a slow hop), NIC queues and "
		    "offloads, congestion (ss -ti, tc -s qdisc)";
}

/* initiator_cpu: the stages the initiator's CPU runs, submission not explained by queue depth */
static void rule_initiator_cpu(struct dctx *c)
{
	uint32_t m = INIT_CPU;
	double sh = share(c->a, c->denom, m);
	char means[200];
	struct nt_finding *x;

	if (!(sh >= NT_DIAG_DOMINANT && (x = next(c->f, c->max, &c->n))))
		return;
	x->kind = "initiator_cpu";
	nt_stage_join(x->stage, sizeof(x->stage), m, "+");
	put_means(means, sizeof(means), c->a, m, c->denom);
	snprintf(x->evidence, sizeof(x->evidence), "the initiator's own stages are %.0f%% of %s (means %s)", 100 * sh,
		 c->dn, means);
	x->advice = "the initiator's CPUs: keep the workload off the queues' io_cpu (fio cpus_allowed; the "
		    "queue: lines of --group-by queue name each io_cpu), or nvme_tcp wq_unbound=Y";
}

int nt_diagnose(const struct nt_report *rep, struct nt_finding *f, int max, const char **why)
{
	static struct agg a;	/* large: not on the stack */
	static char whybuf[128];
	struct dctx c = { .a = &a, .f = f, .max = max };
	int nq_init = 0;
	bool tfq;

	if (why)
		*why = "";
	aggregate(rep, &a);
	/* end_to_end where the initiator was recorded, else the target's residence: named as what it is */
	if (!denom_of(&a, &c.denom, &c.dn)) {
		if (why && a.ios < NT_DIAG_MIN_IOS) {
			*why = "too few I/Os to diagnose (fewer than 100 that succeeded)";
		} else if (why) {
			snprintf(whybuf, sizeof(whybuf), "no %s or %s to compare the stages with", nt_stage_name(NT_ST_E2E),
				 nt_stage_name(NT_ST_TARGET_RES));
			*why = whybuf;
		}
		return 0;
	}
	for (int k = 0; k < a.nq; k++)
		nq_init += a.q[k].role == NTBPF_ROLE_INITIATOR;
	tfq = rule_too_few_queues(&c, nq_init);
	rule_queue_imbalance(&c, nq_init);
	rule_target_device(&c);
	rule_target_cpu(&c);
	rule_network(&c);
	if (!tfq)
		rule_initiator_cpu(&c);
	/* interference: a host's target stages grow with another's load on its namespace or io CPU */
	interference(rep, f, max, &c.n);
	return c.n;
}

static int share_cmp(const void *x, const void *y)
{
	const struct nt_share *a = x, *b = y;

	return a->share < b->share ? 1 : a->share > b->share ? -1 : a->stage - b->stage;
}

int nt_diagnose_shares(const struct nt_report *rep, struct nt_share *out, int max, const char **dn)
{
	static struct agg a;
	double denom;
	int n = 0;

	aggregate(rep, &a);
	if (!denom_of(&a, &denom, dn))
		return 0;
	for (int s = 0; s < NT_ST_NR && n < max; s++) {
		/* the ten; remote where the network is not split from the target; blk_device where nothing splits it */
		bool part = (NT_TEN_MASK & (1u << s)) ||
			    (s == NT_ST_REMOTE && !a.n[NT_ST_NETWORK] && !a.n[NT_ST_NSTACK_SUB]) ||
			    (s == NT_ST_BLK_DEVICE && !a.n[NT_ST_NVME_TCP_SUB] && !a.n[NT_ST_REMOTE]);

		if (!part || !a.n[s] || (!a.n[NT_ST_E2E] && s == NT_ST_TARGET_RES))
			continue;
		out[n] = (struct nt_share){ .stage = s, .share = a.mean[s] / denom, .mean_ns = a.mean[s] };
		if (s == DEPTH_I && a.dep_n[0])
			out[n].depth = a.dep_sum[0] / a.dep_n[0];
		if (s == DEPTH_T && a.dep_n[1])
			out[n].depth = a.dep_sum[1] / a.dep_n[1];
		n++;
	}
	qsort(out, n, sizeof(*out), share_cmp);
	return n;
}

int nt_diagnose_closest(const struct nt_report *rep, char *buf, size_t len)
{
	static struct agg a;
	double denom, best = -1, sh, d;
	const char *dn;
	int role, nq = 0;
	double most[3] = { 0, 0, 0 };

	buf[0] = '\0';
	aggregate(rep, &a);
	if (!denom_of(&a, &denom, &dn))
		return 0;
	/* each rule's distance from firing: its measure over its threshold (the smaller where it needs two) */
	if (a.n[DEPTH_I]) {
		sh = a.mean[DEPTH_I] / denom;
		d = a.dep_n[0] ? a.dep_sum[0] / a.dep_n[0] : 0;
		best = sh / NT_DIAG_SUBMIT_SHARE < d / NT_DIAG_DEPTH ? sh / NT_DIAG_SUBMIT_SHARE : d / NT_DIAG_DEPTH;
		snprintf(buf, len, "too_few_queues: %s is %.0f%% of %s (it fires at %.0f%%) at a mean depth of %.1f "
			 "requests per queue (it fires at %.0f)", nt_stage_name(DEPTH_I), 100 * sh, dn,
			 100 * NT_DIAG_SUBMIT_SHARE, d, NT_DIAG_DEPTH);
	}
	/* the initiator's queues, else the target's; each host's on their own */
	for (int k = 0; k < a.nq && !nq; k++)
		nq = a.q[k].role == NTBPF_ROLE_INITIATOR;
	role = nq ? NTBPF_ROLE_INITIATOR : NTBPF_ROLE_TARGET;
	hosts_of(&a, role, most);
	if (most[0] > best) {
		best = most[0];
		snprintf(buf, len, "queue_imbalance: the busiest of %d queues carries %.0f%% of the I/Os (it fires at "
			 "%.0f%%)", (int)most[1], 100.0 * most[2], 100 * NT_DIAG_IMBALANCE / most[1]);
	}
	if (a.n[DEPTH_T] && (sh = a.mean[DEPTH_T] / denom) / NT_DIAG_DOMINANT > best) {
		best = sh / NT_DIAG_DOMINANT;
		snprintf(buf, len, "target_device: %s is %.0f%% of %s (it fires at %.0f%%)", nt_stage_name(DEPTH_T),
			 100 * sh, dn, 100 * NT_DIAG_DOMINANT);
	}
	if (a.n[NT_ST_NVMET_TCP_SUB] && (sh = share(&a, denom, TGT_CPU)) / NT_DIAG_DOMINANT > best) {
		best = sh / NT_DIAG_DOMINANT;
		snprintf(buf, len, "target_cpu: the target's TCP and nvmet_tcp stages are %.0f%% of %s (it fires at "
			 "%.0f%%)", 100 * sh, dn, 100 * NT_DIAG_DOMINANT);
	}
	if (a.n[NT_ST_NETWORK] && (sh = a.mean[NT_ST_NETWORK] / denom) / NT_DIAG_DOMINANT > best) {
		best = sh / NT_DIAG_DOMINANT;
		snprintf(buf, len, "network: %s is %.0f%% of %s (it fires at %.0f%%)", nt_stage_name(NT_ST_NETWORK),
			 100 * sh, dn, 100 * NT_DIAG_DOMINANT);
	}
	if (a.n[NT_ST_E2E] && (sh = share(&a, denom, INIT_CPU)) / NT_DIAG_DOMINANT > best) {
		best = sh / NT_DIAG_DOMINANT;
		snprintf(buf, len, "initiator_cpu: the initiator's own stages are %.0f%% of %s (it fires at %.0f%%)",
			 100 * sh, dn, 100 * NT_DIAG_DOMINANT);
	}
	return best >= 0;
}

int nt_diagnose_scope(const struct nt_report *rep, char *buf, size_t len)
{
	static struct agg a;
	char unseen[200];

	buf[0] = '\0';
	if ((rep->n_init && rep->n_tgt) || (!rep->n_init && !rep->n_tgt))
		return 0;
	aggregate(rep, &a);
	/* not seen: the ten the other host measures, and network_transmission, which needs both */
	nt_stage_join(unseen, sizeof(unseen), NT_TEN_MASK & ~nt_stages_where(rep->n_init ? NTBPF_ROLE_INITIATOR :
									     NTBPF_ROLE_TARGET, ~0u), ", ");
	if (!rep->n_init) {
		snprintf(buf, len, "seen from the target only: shares are of %s, the target's part of each I/O, not of "
			 "%s (a finding says what dominates the target's part, not the I/O); not seen: %s (give the "
			 "initiator's file too)", nt_stage_name(NT_ST_TARGET_RES), nt_stage_name(NT_ST_E2E), unseen);
	} else if (a.n[NT_ST_REMOTE] && a.mean[NT_ST_E2E] > 0) {
		snprintf(buf, len, "seen from the initiator only: not seen apart: %s; together they are %s, %.0f%% of %s "
			 "(mean %.1f of %.1f us; give the target's file too to split it)", unseen,
			 nt_stage_name(NT_ST_REMOTE), 100 * a.mean[NT_ST_REMOTE] / a.mean[NT_ST_E2E],
			 nt_stage_name(NT_ST_E2E), US(a.mean[NT_ST_REMOTE]), US(a.mean[NT_ST_E2E]));
	} else {
		snprintf(buf, len, "seen from the initiator only: not seen: the target's stages and %s (give the target's "
			 "file too)", nt_stage_name(NT_ST_NETWORK));
	}
	return 1;
}

void nt_diagnose_print_text(FILE *out, const struct nt_report *rep)
{
	struct nt_finding f[NT_MAX_FINDINGS];
	const char *why;
	char scope[512];
	int n = nt_diagnose(rep, f, NT_MAX_FINDINGS, &why);

	fputs("\ndiagnosis:", out);
	if (!n) {
		fprintf(out, " %s\n", *why ? why : "nothing stands out (docs/diagnose.md: the rules and thresholds)");
	} else {
		fputc('\n', out);
		for (int i = 0; i < n; i++)
			fprintf(out, "  %s (%s)\n    evidence: %s\n    advice: %s\n", f[i].kind, f[i].stage,
				f[i].evidence, f[i].advice);
	}
	{	/* where the time goes, whether a rule fired or not; and, when none did, the nearest */
		struct nt_share sh[NT_ST_NR];
		const char *dn;
		int k = nt_diagnose_shares(rep, sh, NT_ST_NR, &dn);

		if (k)
			fprintf(out, "  where the time goes (share of %s's mean, largest first):", dn);
		for (int i = 0; i < k; i++) {
			fprintf(out, "%s %s %.0f%% (%.1f us", i ? "," : "", nt_stage_name(sh[i].stage), 100 * sh[i].share,
				US(sh[i].mean_ns));
			if (sh[i].depth > 0)
				fprintf(out, sh[i].stage == DEPTH_T ? "; mean target depth %.1f" :
					"; mean depth %.1f per queue", sh[i].depth);
			fputc(')', out);
		}
		if (k)
			fputc('\n', out);
		if (!n && nt_diagnose_closest(rep, scope, sizeof(scope)))
			fprintf(out, "  closest rule: %s\n", scope);
	}
	{	/* several hosts: why interference did not fire, and what its windows could not hold */
		char note[1024];

		if (nt_diagnose_interference_note(rep, note, sizeof(note)))
			fprintf(out, "  interference: %s\n", note);
	}
	if (nt_diagnose_scope(rep, scope, sizeof(scope)))	/* one host: what its findings cannot see */
		fprintf(out, "  %s\n", scope);
}

void nt_diagnose_print_shares_json(FILE *out, const struct nt_report *rep)
{
	struct nt_share sh[NT_ST_NR];
	const char *dn = nt_stage_name(NT_ST_E2E);
	char closest[512];
	int k = nt_diagnose_shares(rep, sh, NT_ST_NR, &dn);

	fprintf(out, "{\"of\": \"%s\", \"stages\": [", dn);
	for (int i = 0; i < k; i++) {
		fprintf(out, "%s{\"stage\": \"%s\", \"share\": %.4f, \"mean_us\": %.3f", i ? ", " : "",
			nt_stage_name(sh[i].stage), sh[i].share, US(sh[i].mean_ns));
		if (sh[i].depth > 0)
			fprintf(out, ", \"mean_depth\": %.2f", sh[i].depth);
		fputc('}', out);
	}
	fputs("], \"closest_rule\": ", out);
	if (nt_diagnose_closest(rep, closest, sizeof(closest)))
		nt_put_json(out, closest);
	else
		fputs("null", out);
	fputc('}', out);
}

void nt_diagnose_print_json(FILE *out, const struct nt_report *rep)
{
	struct nt_finding f[NT_MAX_FINDINGS];
	int n = nt_diagnose(rep, f, NT_MAX_FINDINGS, NULL);

	for (int i = 0; i < n; i++) {
		fprintf(out, "%s\n  {\"kind\": \"%s\", \"stage\": \"%s\", \"evidence\": ", i ? "," : "", f[i].kind,
			f[i].stage);
		nt_put_json(out, f[i].evidence);
		fputs(", \"advice\": ", out);
		nt_put_json(out, f[i].advice);
		if (f[i].has_interference) {
			const struct nt_interference *e = &f[i].in;

			fputs(", \"victim\": ", out);
			nt_put_json(out, e->victim);
			fputs(", \"cause\": ", out);
			nt_put_json(out, e->cause);
			fputs(", \"shared\": ", out);
			nt_put_json(out, e->shared);
			fprintf(out, ", \"windows\": {\"width_ms\": %.3f, \"busy\": %d, \"idle\": %d, \"compared\": %d}, "
				"\"victim_target_us\": {\"busy\": %.3f, \"idle\": %.3f}, \"victim_iops\": {\"busy\": %.1f, "
				"\"idle\": %.1f}, \"cause_load\": {\"iops\": %.1f, \"mb_s\": %.3f, \"in_flight_max\": %.2f}, "
				"\"separation\": %.3f", e->width_ms, e->loaded, e->idle, e->windows, e->victim_loaded_us,
				e->victim_idle_us, e->victim_iops_loaded, e->victim_iops_idle, e->cause_iops, e->cause_mbps,
				e->cause_inflight, e->sep);
		}
		fputc('}', out);
	}
}
