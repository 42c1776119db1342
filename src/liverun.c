// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * liverun.c - "ntbpf live": the probes, what each round and each interval of
 * the drain loop (src/recorder.c, shared with record) does: the lines (from
 * the records, or from the in-kernel histograms), --metrics, and (--serve)
 * the record stream to its peers (one, or with a key per host one per host
 * each).  Aggregation and the peer side are in live.c.
 */
#define _GNU_SOURCE
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <inttypes.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "live.h"
#include "liverun.h"
#include "metrics.h"
#include "ntbpf.h"
#include "ntbpf_stages.h"
#include "ntbpf_kh.h"
#include "probes.h"
#include "recorder.h"
#include "render.h"
#include "stream.h"
#include "sysinfo.h"

/* ---- in-kernel histograms: read, per-CPU differences with the last interval, summed ---- */

struct kh_group {
	struct nt_kh_gkey key;
	struct nt_kh_gval *prev;	/* every CPU's value at the last interval */
};

struct kh_state {
	int ncpu;
	struct nt_kh_gval *pcpu;	/* every CPU's value now */
	uint64_t b[NT_KH_NB];		/* one stage's buckets for the interval */
	size_t n;
	struct kh_group *g;		/* groups seen so far */
};

static void kh_free(struct kh_state *k)
{
	if (!k)
		return;
	free(k->pcpu);
	for (size_t i = 0; i < k->n; i++)
		free(k->g[i].prev);
	free(k->g);
	free(k);
}

static struct kh_state *kh_init(void)
{
	struct kh_state *k = calloc(1, sizeof(*k));

	if (!k)
		return NULL;
	k->ncpu = libbpf_num_possible_cpus();
	if (k->ncpu > 0)
		k->pcpu = calloc(k->ncpu, sizeof(*k->pcpu));
	if (!k->pcpu) {
		kh_free(k);
		return NULL;
	}
	return k;
}

static struct kh_group *kh_group(struct kh_state *k, const struct nt_kh_gkey *key)
{
	struct kh_group *ng;

	for (size_t i = 0; i < k->n; i++)
		if (!memcmp(&k->g[i].key, key, sizeof(*key)))
			return &k->g[i];
	ng = realloc(k->g, (k->n + 1) * sizeof(*k->g));
	if (!ng)
		return NULL;
	k->g = ng;
	ng = &k->g[k->n];
	ng->key = *key;
	ng->prev = calloc(k->ncpu, sizeof(*ng->prev));
	if (!ng->prev)
		return NULL;
	k->n++;
	return ng;
}

/*
 * Each group's value holds every stage of its role (ntbpf_kh.h): each slot
 * becomes the interval's histogram of one stage, the I/O count the
 * group's NT_ST_NR entry, as the report expects.  The differences with the
 * last interval are live.c's (nt_kh_add_group: unit-tested).
 */
static void kh_tick(struct kh_state *k, int fd, struct nt_input *local, const struct nt_report_opts *o, FILE *out,
		    double secs, uint64_t lost)
{
	struct nt_interval_info info = { .lost = lost };
	struct nt_kh_gkey key, prev;
	struct nt_report rep;
	bool first = true;
	char when[40];

	nt_time_label(when, sizeof(when), o->format != NT_FMT_TEXT);
	nt_report_begin(&rep, local, 1, o);
	while (!bpf_map_get_next_key(fd, first ? NULL : &prev, &key)) {
		struct kh_group *g;

		first = false;
		prev = key;
		if (key.role != NTBPF_ROLE_INITIATOR && key.role != NTBPF_ROLE_TARGET)
			continue;
		if (bpf_map_lookup_elem(fd, &key, k->pcpu) || !(g = kh_group(k, &key)))
			continue;
		nt_kh_add_group(&rep, &key, k->pcpu, g->prev, k->ncpu, k->b);
		memcpy(g->prev, k->pcpu, k->ncpu * sizeof(*k->pcpu));
	}
	nt_report_finish(&rep);
	nt_report_print_interval(out, &rep, when, secs, &info);
	nt_report_free(&rep);
}

/* ---- "ntbpf live" ---- */

/*
 * --group-by queue: each queue's facts (io_cpu, TCP ends, RX queue), read
 * again every interval, since the BPF side learns a queue at its first I/O.
 * The header's arrays may move: whoever holds a copy of it takes it again.
 */
static void refresh_queues(const struct nt_probes *pr, struct nt_header *h)
{
	for (uint32_t i = 0; i < h->nctrls; i++) {
		free(h->ctrls[i].queues);
		h->ctrls[i].queues = NULL;
		h->ctrls[i].nqueues = 0;
	}
	if (nt_probes_queues(pr, h) < 0)
		fprintf(stderr, "ntbpf live: warning: out of memory reading the queues\n");
	/* controllers connected since the start: their NQNs and namespaces (--group-by host, subsys, ns) */
	if (h->role == NTBPF_ROLE_INITIATOR)
		nt_sys_nvme_names("", h);
}

struct live_state {
	struct nt_live *l;
	struct nt_stream_server *srv;
};

static int on_event(void *ctx, void *data, size_t size)
{
	struct live_state *st = ctx;

	if (size < sizeof(struct ntbpf_rec))
		return 0;
	nt_live_push(st->l, data);
	nt_stream_server_add(st->srv, data);
	return 0;
}

/* what one interval's lines come from: the in-kernel histograms, or the records */
struct tick_src {
	const struct nt_config *cfg;
	struct nt_probes *pr;
	struct nt_header *hdr;
	struct nt_input *local;
	struct live_state *st;
	struct kh_state *kh;
	const struct nt_report_opts *ko;
	bool kernel_agg;
};

static void print_tick(const struct tick_src *k, double secs, uint64_t lost)
{
	uint32_t nc = k->hdr->ncchanges;

	/* a reconnect gave a controller a new cntlid: the peer's records pair by it */
	if (!k->kernel_agg && k->hdr->role == NTBPF_ROLE_INITIATOR)
		nt_probes_cntlid_changes(k->pr, k->hdr);
	if (k->cfg->group_by & NT_GB_CTRL_KEYS)
		refresh_queues(k->pr, k->hdr);
	if ((k->cfg->group_by & NT_GB_CTRL_KEYS) || k->hdr->ncchanges != nc) {
		k->local->hdr = *k->hdr;
		nt_live_set_local(k->st->l, k->hdr);
	}
	if (k->kernel_agg)
		kh_tick(k->kh, nt_probes_khist_fd(k->pr), k->local, k->ko, stdout, secs, lost);
	else
		nt_live_tick(k->st->l, stdout, secs, lost);
}

/* --metrics: the lost records by cause, before each interval is handed over */
static void metrics_lost(struct nt_metrics *mx, const uint64_t *s)
{
	uint64_t l[NT_ML_NR] = { [NT_ML_RINGBUF] = s[ST_LOST_RINGBUF], [NT_ML_MAP_FULL] = s[ST_LOST_MAP_FULL],
				 [NT_ML_NO_COMPLETE] = s[ST_NO_COMPLETE], [NT_ML_PROG_MISSES] = s[ST_PROG_MISSES],
				 [NT_ML_NO_START] = s[ST_NO_START], [NT_ML_NOT_RUN] = s[ST_NOT_RUN] };

	if (mx)
		nt_metrics_set_lost(mx, l);
}

/*
 * The BPF counters, with the I/Os no program run saw so far (ST_NOT_RUN, as
 * record counts them for a whole recording: nt_dev_not_run).  The devices
 * are read first, so that an I/O between the two reads counts for ntbpf
 * alone and the figure is never too high; it is kept as the largest seen
 * (a counter: it never goes down).  The I/Os in flight now are left out:
 * their records are not emitted yet (record counts them at its stop, as
 * in flight at the end), and counted here they made a busy device's
 * in-flight I/O a permanent "not_run" loss.
 */
static void live_stats(struct nt_probes *pr, const struct nt_devset *devs, const struct nt_kcount *k0,
		       uint64_t *not_run, uint64_t stats[ST_NR])
{
	struct nt_kcount k = { 0 };
	uint64_t n;

	if (k0->ok)
		k.ok = !nt_dev_iostat("", devs, &k.done, &k.inflight);
	k.inflight = 0;
	nt_probes_stats(pr, stats);
	n = nt_dev_not_run(k0, &k, stats);	/* 0 where k was not read */
	if (n > *not_run)
		*not_run = n;
	stats[ST_NOT_RUN] = *not_run;
}

/* one run of live: everything nt_live_run's steps share */
struct live_run {
	const struct nt_config *cfg;
	char err[256];
	struct nt_devset devs;
	struct nt_header hdr;
	struct nt_probes pr;
	struct nt_probe_opts po;
	struct kh_state *kh;
	struct nt_report_opts ko;
	struct nt_input local;
	struct nt_key key;
	struct nt_keyset keys;
	struct live_state st;
	struct ring_buffer *rb;
	struct nt_metrics *mx;
	struct nt_metrics_server *mxs;
	uint64_t stats[ST_NR], lost_before, cpu_start, not_run;
	struct nt_kcount k0;	/* the devices' own counts at the start (unsampled initiator) */
	struct tick_src tk;
	int role;
	bool loaded;
};

/* --key, --serve: the key (or a key per host) and the server, before the probes load: 0, or -1 (said) */
static int live_serve(struct live_run *r)
{
	const struct nt_config *cfg = r->cfg;
	struct stat sb;

	/* --serve --key DIR: a key per host, each peer sent its own host's records only (stream.h) */
	if (cfg->serve && cfg->key && !stat(cfg->key, &sb) && S_ISDIR(sb.st_mode)) {
		if (nt_keyset_load(cfg->key, &r->keys, r->err, sizeof(r->err)))
			goto fail;
	} else if (cfg->key && nt_key_load(cfg->key, &r->key, r->err, sizeof(r->err))) {
		goto fail;
	}
	/* a bad address or a missing key fails before the probes load (hdr is filled before the first poll) */
	if (cfg->serve && r->keys.n)
		/* the hosts are looked up once the probes are loaded (nt_probes_tnqn): till then, nobody's */
		r->st.srv = nt_stream_server_new_hosts(cfg->serve, &r->keys, NULL, NULL, &r->hdr, stderr, r->err,
						       sizeof(r->err));
	else if (cfg->serve)
		r->st.srv = nt_stream_server_new(cfg->serve, cfg->key ? &r->key : NULL, &r->hdr, stderr, r->err,
						 sizeof(r->err));
	if (!cfg->serve || r->st.srv)
		return 0;
fail:
	fprintf(stderr, "ntbpf live: %s\n", r->err);
	return -1;
}

/* the probes, the header, the intervals (records or in-kernel histograms): 0, or -1 (said, unless out of memory) */
static int live_load(struct live_run *r, int argc, char **argv)
{
	const struct nt_config *cfg = r->cfg;

	r->role = nt_record_preflight(cfg, "live", &r->devs);
	if (r->role < 0)
		return -1;
	if (cfg->peer && r->role != NTBPF_ROLE_INITIATOR) {
		fprintf(stderr, "ntbpf live: --peer is for the initiator (this host records as %s)\n", nt_role_name(r->role));
		return -1;
	}
	if (cfg->serve && r->role != NTBPF_ROLE_TARGET) {
		fprintf(stderr, "ntbpf live: --serve is for the target (this host records as %s)\n", nt_role_name(r->role));
		return -1;
	}
	r->po.role = r->role;
	/* on NVMe namespaces only, block_rq_issue waits until an I/O lacks its start stamp (probes.h) */
	r->po.defer_blk_issue = r->role == NTBPF_ROLE_INITIATOR && nt_devs_nvme_only(&r->devs);
	r->po.defer_data_send = true;	/* the target: until a queue runs without SQ head updates */
	if (nt_probes_load(&r->pr, &r->po, r->err, sizeof(r->err)) ||
	    (r->loaded = true, nt_probes_attach(&r->pr, r->err, sizeof(r->err)))) {
		fprintf(stderr, "ntbpf live: %s\n", r->err);
		return -1;
	}
	nt_record_header(&r->hdr, cfg, r->role, &r->devs, &r->pr, argc, argv);
	if (r->keys.n)
		nt_stream_server_set_host_of(r->st.srv, nt_probes_tnqn, &r->pr);
	r->st.l = nt_live_new(cfg, &r->hdr);
	if (!r->st.l || (r->po.kernel_agg && !(r->kh = kh_init())))
		return -1;
	nt_report_opts_of(cfg, &r->ko);
	r->local.hdr = r->hdr;
	return 0;
}

/* --metrics (every interval's report also updates the endpoint, src/metrics.c), --peer: 0, or -1 */
static int live_outputs(struct live_run *r)
{
	const struct nt_config *cfg = r->cfg;

	if (cfg->metrics) {
		r->mx = nt_metrics_new(nt_role_name(r->role));
		if (!r->mx)
			return -1;
		nt_metrics_set_hooks(r->mx, r->pr.nattached);
		if (cfg->peer)
			nt_metrics_set_peer(r->mx, 0);
		r->ko.on_interval = nt_metrics_on_interval;
		r->ko.on_interval_ctx = r->mx;
		nt_live_on_interval(r->st.l, nt_metrics_on_interval, r->mx);
		r->mxs = nt_metrics_serve(r->mx, cfg->metrics, cfg->metrics_remote, r->err, sizeof(r->err));
		if (!r->mxs) {
			fprintf(stderr, "ntbpf live: %s\n", r->err);
			return -1;
		}
	}
	if (cfg->peer && nt_live_peer(r->st.l, cfg->peer, cfg->key ? &r->key : NULL, r->err, sizeof(r->err))) {
		fprintf(stderr, "ntbpf live: %s\n", r->err);
		return -1;
	}
	r->rb = ring_buffer__new(nt_probes_ringbuf_fd(&r->pr), on_event, &r->st, NULL);
	if (!r->rb) {
		fprintf(stderr, "ntbpf live: cannot set up the ring buffer: %s\n", strerror(errno));
		return -1;
	}
	return 0;
}

/* the drain loop's round (recorder.h): the stream's peers, the deferred hooks */
static int live_round(void *ctx, int n)
{
	struct live_run *r = ctx;

	if (r->st.srv)
		nt_stream_server_poll(r->st.srv);
	if (nt_probes_undefer_now(&r->pr, "live") && r->mx)
		nt_metrics_set_hooks(r->mx, r->pr.nattached);
	return 0;
}

/* an interval's end: the stream's tick, the counters, the lines */
static void live_tick(void *ctx, double secs)
{
	struct live_run *r = ctx;

	/* the records so far before the server looks their controllers' hosts up (stream.h) */
	if (r->keys.n)
		ring_buffer__consume(r->rb);
	nt_stream_server_tick(r->st.srv);
	live_stats(&r->pr, &r->devs, &r->k0, &r->not_run, r->stats);
	metrics_lost(r->mx, r->stats);
	print_tick(&r->tk, secs, nt_lost_sum(r->stats) - r->lost_before);
	r->lost_before = nt_lost_sum(r->stats);
}

/* --bpf-stats: what live cost */
static void live_cost(struct live_run *r)
{
	uint64_t ns, runs;

	nt_probes_stats(&r->pr, r->stats);
	if (!nt_probes_run_time(&r->pr, &ns, &runs))
		fprintf(stderr, "ntbpf live: BPF run time %.0f ns per I/O (%" PRIu64 " I/Os, %s)\n",
			r->stats[ST_EMITTED] ? (double)ns / r->stats[ST_EMITTED] : 0.0, r->stats[ST_EMITTED],
			r->po.kernel_agg ? "histograms in the kernel" : "per-I/O records");
	if (r->stats[ST_EMITTED]) {
		double cpu = (double)(nt_clock_ns(CLOCK_PROCESS_CPUTIME_ID) - r->cpu_start);

		fprintf(stderr, "ntbpf live: user-space CPU %.0f ns per I/O (%.3f s of CPU)\n",
			cpu / r->stats[ST_EMITTED], cpu / 1e9);
	}
	if (r->cfg->verbose)
		nt_probes_run_time_each(&r->pr, stderr);
}

int nt_live_run(const struct nt_config *cfg, int argc, char **argv)
{
	struct live_run *r = calloc(1, sizeof(*r));
	struct nt_loop lp = { .cmd = "live", .round = live_round, .tick = live_tick,
			      .interval_ns = (uint64_t)(cfg->interval * 1e9), .count = cfg->count };
	int rc = 1;

	if (!r) {
		fprintf(stderr, "ntbpf live: out of memory\n");
		return 1;
	}
	r->cfg = cfg;
	r->local.path = "live";
	r->po = (struct nt_probe_opts){ .sample = cfg->sample, .devs = &r->devs, .force_kprobe = cfg->force_kprobe,
					.bpf_stats = cfg->bpf_stats, .verbose = cfg->verbose,
					.kernel_agg = !cfg->serve && !cfg->peer && !cfg->records,
					/* host, subsys and ns are named by the queue's controller */
					.kh_by_queue = !!(cfg->group_by & NT_GB_CTRL_KEYS) };
	nt_header_init(&r->hdr, 0);
	if (live_serve(r) || live_load(r, argc, argv) || live_outputs(r))
		goto out;
	nt_recorder_signals(false);
	/* --bpf-stats: the process's exact runtime from here on, as record measures it */
	r->cpu_start = cfg->bpf_stats ? nt_clock_ns(CLOCK_PROCESS_CPUTIME_ID) : 0;
	fprintf(stderr, "ntbpf live: %s, %d hooks attached%s%s%s, every %g s%s%s%s%s%s%s%s; Ctrl-C to stop\n",
		nt_role_name(r->role), r->pr.nattached, r->pr.deferred ? " (" : "", nt_probes_deferred_text(&r->pr),
		r->pr.deferred ? ")" : "",
		cfg->interval, cfg->serve ? ", serving on " : "",
		cfg->serve ? cfg->serve : "", cfg->metrics ? ", metrics at http://" : "",
		cfg->metrics ? cfg->metrics : "", cfg->metrics ? "/metrics" : "",
		cfg->peer ? ", merging the target's records (lines lag one interval)" : "",
		r->po.kernel_agg ? ", histograms in the kernel (percentiles within 1.6 %)" : "");
	nt_report_interval_header(stdout, &r->ko);	/* CSV: the header line, once */
	if (r->role == NTBPF_ROLE_INITIATOR && cfg->sample <= 1)
		r->k0.ok = !nt_dev_iostat("", &r->devs, &r->k0.done, &r->k0.inflight);
	r->tk = (struct tick_src){ .cfg = cfg, .pr = &r->pr, .hdr = &r->hdr, .local = &r->local, .st = &r->st,
				   .kh = r->kh, .ko = &r->ko, .kernel_agg = r->po.kernel_agg };
	lp.rb = r->rb;
	lp.ctx = r;
	if (nt_recorder_loop(&lp))
		goto out;
	if (nt_recorder_stop_signal()) {
		/* the partial interval, so that the intervals add up to the whole run */
		double secs = (nt_clock_ns(CLOCK_MONOTONIC) - lp.t_last) / 1e9;

		ring_buffer__consume(r->rb);
		live_tick(r, secs);
		if (cfg->peer) {
			/* and the interval held back for the target's records */
			sleep(1);
			nt_live_tick(r->st.l, stdout, secs, 0);
		}
	}
	if (cfg->bpf_stats)
		live_cost(r);
	nt_probes_misses_each(&r->pr, stderr, "ntbpf live: warning");
	rc = 0;
out:
	nt_metrics_server_stop(r->mxs);
	nt_metrics_free(r->mx);
	kh_free(r->kh);
	ring_buffer__free(r->rb);
	nt_stream_server_free(r->st.srv);
	nt_keyset_free(&r->keys);
	nt_live_free(r->st.l);
	explicit_bzero(&r->key, sizeof(r->key));
	if (r->loaded)
		nt_probes_destroy(&r->pr);
	nt_header_free(&r->hdr);
	free(r);
	return rc;
}
