// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * liverun.c - "ntbpf live": the probes, the interval loop, and (--serve) the
 * record stream to its peers (one, or with a key per host one per host each).  Aggregation and the peer side are in live.c.
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
#include "report.h"
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

static volatile sig_atomic_t stop_signal;

static void on_signal(int sig)
{
	stop_signal = sig;
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

int nt_live_run(const struct nt_config *cfg, int argc, char **argv)
{
	char err[256];
	struct nt_devset devs = { 0 };
	struct nt_header hdr;
	struct nt_probes pr = { 0 };
	struct nt_probe_opts po = { .sample = cfg->sample, .devs = &devs, .force_kprobe = cfg->force_kprobe,
				    .bpf_stats = cfg->bpf_stats, .verbose = cfg->verbose,
				    .kernel_agg = !cfg->serve && !cfg->peer && !cfg->records,
				    /* host, subsys and ns are named by the queue's controller */
				    .kh_by_queue = !!(cfg->group_by & NT_GB_CTRL_KEYS) };
	struct kh_state *kh = NULL;
	struct nt_report_opts ko;
	struct nt_input local = { .path = "live" };
	struct nt_key key = { 0 };
	struct nt_keyset keys = { 0 };
	struct stat sb;
	struct live_state st = { 0 };
	struct ring_buffer *rb = NULL;
	struct nt_metrics *mx = NULL;
	struct nt_metrics_server *mxs = NULL;
	uint64_t stats[ST_NR], lost_before = 0, t_next, t_last, cpu_start, not_run = 0;
	struct nt_kcount k0 = { 0 };	/* the devices' own counts at the start (unsampled initiator) */
	struct tick_src tk;
	int role, rc = 1, ticks = 0;
	bool loaded = false;

	nt_header_init(&hdr, 0);
	/* --serve --key DIR: a key per host, each peer sent its own host's records only (stream.h) */
	if (cfg->serve && cfg->key && !stat(cfg->key, &sb) && S_ISDIR(sb.st_mode)) {
		if (nt_keyset_load(cfg->key, &keys, err, sizeof(err))) {
			fprintf(stderr, "ntbpf live: %s\n", err);
			return 1;
		}
	} else if (cfg->key && nt_key_load(cfg->key, &key, err, sizeof(err))) {
		fprintf(stderr, "ntbpf live: %s\n", err);
		return 1;
	}
	/* a bad address or a missing key fails before the probes load (hdr is filled before the first poll) */
	if (cfg->serve && keys.n) {
		/* the hosts are looked up once the probes are loaded (nt_probes_tnqn): till then, nobody's */
		st.srv = nt_stream_server_new_hosts(cfg->serve, &keys, NULL, NULL, &hdr, stderr, err, sizeof(err));
		if (!st.srv) {
			fprintf(stderr, "ntbpf live: %s\n", err);
			goto out;
		}
	} else if (cfg->serve) {
		st.srv = nt_stream_server_new(cfg->serve, cfg->key ? &key : NULL, &hdr, stderr, err, sizeof(err));
		if (!st.srv) {
			fprintf(stderr, "ntbpf live: %s\n", err);
			goto out;
		}
	}
	role = nt_record_preflight(cfg, "live", &devs);
	if (role < 0)
		goto out;
	if (cfg->peer && role != NTBPF_ROLE_INITIATOR) {
		fprintf(stderr, "ntbpf live: --peer is for the initiator (this host records as %s)\n", nt_role_name(role));
		goto out;
	}
	if (cfg->serve && role != NTBPF_ROLE_TARGET) {
		fprintf(stderr, "ntbpf live: --serve is for the target (this host records as %s)\n", nt_role_name(role));
		goto out;
	}
	po.role = role;
	/* on NVMe namespaces only, block_rq_issue waits until an I/O lacks its start stamp (probes.h) */
	po.defer_blk_issue = role == NTBPF_ROLE_INITIATOR && nt_devs_nvme_only(&devs);
	po.defer_data_send = true;	/* the target: until a queue runs without SQ head updates */
	if (nt_probes_load(&pr, &po, err, sizeof(err)) || (loaded = true, nt_probes_attach(&pr, err, sizeof(err)))) {
		fprintf(stderr, "ntbpf live: %s\n", err);
		goto out;
	}
	nt_record_header(&hdr, cfg, role, &devs, &pr, argc, argv);
	if (keys.n)
		nt_stream_server_set_host_of(st.srv, nt_probes_tnqn, &pr);
	st.l = nt_live_new(cfg, &hdr);
	if (!st.l || (po.kernel_agg && !(kh = kh_init())))
		goto out;
	nt_report_opts_of(cfg, &ko);
	local.hdr = hdr;
	if (cfg->metrics) {
		/* every interval's report also updates the endpoint (src/metrics.c) */
		mx = nt_metrics_new(nt_role_name(role));
		if (!mx)
			goto out;
		nt_metrics_set_hooks(mx, pr.nattached);
		if (cfg->peer)
			nt_metrics_set_peer(mx, 0);
		ko.on_interval = nt_metrics_on_interval;
		ko.on_interval_ctx = mx;
		nt_live_on_interval(st.l, nt_metrics_on_interval, mx);
		mxs = nt_metrics_serve(mx, cfg->metrics, cfg->metrics_remote, err, sizeof(err));
		if (!mxs) {
			fprintf(stderr, "ntbpf live: %s\n", err);
			goto out;
		}
	}
	if (cfg->peer && nt_live_peer(st.l, cfg->peer, cfg->key ? &key : NULL, err, sizeof(err))) {
		fprintf(stderr, "ntbpf live: %s\n", err);
		goto out;
	}

	rb = ring_buffer__new(nt_probes_ringbuf_fd(&pr), on_event, &st, NULL);
	if (!rb) {
		fprintf(stderr, "ntbpf live: cannot set up the ring buffer: %s\n", strerror(errno));
		goto out;
	}
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	signal(SIGPIPE, SIG_IGN);
	/* --bpf-stats: the process's exact runtime from here on, as record measures it */
	cpu_start = cfg->bpf_stats ? nt_clock_ns(CLOCK_PROCESS_CPUTIME_ID) : 0;
	fprintf(stderr, "ntbpf live: %s, %d hooks attached%s%s%s, every %g s%s%s%s%s%s%s%s; Ctrl-C to stop\n",
		nt_role_name(role), pr.nattached, pr.deferred ? " (" : "", nt_probes_deferred_text(&pr),
		pr.deferred ? ")" : "",
		cfg->interval, cfg->serve ? ", serving on " : "",
		cfg->serve ? cfg->serve : "", cfg->metrics ? ", metrics at http://" : "",
		cfg->metrics ? cfg->metrics : "", cfg->metrics ? "/metrics" : "", cfg->peer ? ", merging the target's records (lines lag one interval)" : "",
		po.kernel_agg ? ", histograms in the kernel (percentiles within 1.6 %)" : "");
	nt_report_interval_header(stdout, &ko);	/* CSV: the header line, once */
	if (role == NTBPF_ROLE_INITIATOR && cfg->sample <= 1)
		k0.ok = !nt_dev_iostat("", &devs, &k0.done, &k0.inflight);
	tk = (struct tick_src){ .cfg = cfg, .pr = &pr, .hdr = &hdr, .local = &local, .st = &st, .kh = kh,
				.ko = &ko, .kernel_agg = po.kernel_agg };
	t_last = nt_clock_ns(CLOCK_MONOTONIC);
	t_next = t_last + (uint64_t)(cfg->interval * 1e9);
	while (!stop_signal) {
		uint64_t t = nt_clock_ns(CLOCK_MONOTONIC);
		int n = nt_recorder_poll(rb, t < t_next ? (int)((t_next - t) / 1000000 > 100 ? 100 : (t_next - t) / 1000000) : 0);

		if (n < 0) {
			fprintf(stderr, "ntbpf live: ring buffer poll failed: %s\n", strerror(-n));
			goto out;
		}
		if (st.srv)
			nt_stream_server_poll(st.srv);
		if (nt_probes_undefer_now(&pr, "live") && mx)
			nt_metrics_set_hooks(mx, pr.nattached);
		t = nt_clock_ns(CLOCK_MONOTONIC);
		if (t < t_next)
			continue;
		/* the records so far before the server looks their controllers' hosts up (stream.h) */
		if (keys.n)
			ring_buffer__consume(rb);
		nt_stream_server_tick(st.srv);
		live_stats(&pr, &devs, &k0, &not_run, stats);
		metrics_lost(mx, stats);
		print_tick(&tk, (t - t_last) / 1e9, nt_lost_sum(stats) - lost_before);
		lost_before = nt_lost_sum(stats);
		t_last = t;
		t_next += (uint64_t)(cfg->interval * 1e9);
		if (t_next < t)
			t_next = t + (uint64_t)(cfg->interval * 1e9);
		if (cfg->count && ++ticks >= cfg->count)
			break;
	}
	if (stop_signal) {
		/* the partial interval, so that the intervals add up to the whole run */
		uint64_t t = nt_clock_ns(CLOCK_MONOTONIC);

		ring_buffer__consume(rb);
		nt_stream_server_tick(st.srv);
		live_stats(&pr, &devs, &k0, &not_run, stats);
		metrics_lost(mx, stats);
		print_tick(&tk, (t - t_last) / 1e9, nt_lost_sum(stats) - lost_before);
		if (cfg->peer) {
			/* and the interval held back for the target's records */
			sleep(1);
			nt_live_tick(st.l, stdout, (t - t_last) / 1e9, 0);
		}
	}
	if (cfg->bpf_stats) {
		uint64_t ns, runs;

		nt_probes_stats(&pr, stats);
		if (!nt_probes_run_time(&pr, &ns, &runs))
			fprintf(stderr, "ntbpf live: BPF run time %.0f ns per I/O (%" PRIu64 " I/Os, %s)\n",
				stats[ST_EMITTED] ? (double)ns / stats[ST_EMITTED] : 0.0, stats[ST_EMITTED],
				po.kernel_agg ? "histograms in the kernel" : "per-I/O records");
		if (stats[ST_EMITTED]) {
			double cpu = (double)(nt_clock_ns(CLOCK_PROCESS_CPUTIME_ID) - cpu_start);

			fprintf(stderr, "ntbpf live: user-space CPU %.0f ns per I/O (%.3f s of CPU)\n",
				cpu / stats[ST_EMITTED], cpu / 1e9);
		}
		if (cfg->verbose)
			nt_probes_run_time_each(&pr, stderr);
	}
	rc = 0;
out:
	nt_metrics_server_stop(mxs);
	nt_metrics_free(mx);
	kh_free(kh);
	ring_buffer__free(rb);
	nt_stream_server_free(st.srv);
	nt_keyset_free(&keys);
	nt_live_free(st.l);
	explicit_bzero(&key, sizeof(key));
	if (loaded)
		nt_probes_destroy(&pr);
	nt_header_free(&hdr);
	return rc;
}
