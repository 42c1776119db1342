// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * bpfrec.c - "ntbpf record": preflight checks, skeleton lifecycle
 * (open -> rodata / autoload -> load -> attach), ring buffer to record file,
 * and a clean stop on Ctrl-C, SIGTERM, --duration or the command's exit.
 */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "bpfrec.h"
#include "recorder.h"
#include "drainprio.h"
#include "live.h"
#include "outfile.h"
#include "probes.h"
#include "recfile.h"
#include "sampling.h"
#include "sysinfo.h"

static volatile sig_atomic_t stop_signal;

static void on_signal(int sig)
{
	stop_signal = sig;
}

static double tv_s(const struct timeval *t)
{
	return t->tv_sec + t->tv_usec / 1e6;
}

struct rec_state {
	struct nt_live *live;	/* --interval */
	struct nt_writer *w;
	uint64_t lost_user;
	uint64_t pending;	/* records given to the writer, not yet in a written chunk */
	bool compress;		/* -z: coded chunks */
	uint64_t written;	/* records in whole chunks the file holds */
	int werr;
	/* --rotate: the file of the series being written, and the BPF counters when it began */
	char path[4096];
	unsigned int part;
	uint64_t part_start_ns;
	uint64_t stats0[ST_NR];
	uint64_t dropped0;		/* the probes' inflight_dropped when this file began */
	uint64_t hdr_len;		/* the length of this file's header, its room for the queue list included */
	uint32_t nctrls0;		/* the header's controllers before any queue list was added */
	bool discard;			/* NTBPF_TEST_COST=discard: records taken off the ring and dropped */
	uint64_t seen;			/* records taken from the kernel (on_event) */
	uint64_t discarded;
};

static int on_event(void *ctx, void *data, size_t size)
{
	struct rec_state *st = ctx;

	if (size == sizeof(uint64_t))
		return 0;	/* a per-CPU ring half full woke us (pcr_put): no record */
	st->seen++;
	if (st->discard) {
		st->discarded++;
		return 0;
	}
	if (st->live && size >= sizeof(struct ntbpf_rec))
		nt_live_push(st->live, data);
	if (st->werr || size < sizeof(struct ntbpf_rec) || nt_writer_add(st->w, data)) {
		st->lost_user++;
		if (!st->werr)
			st->werr = errno ? errno : EIO;
		return 0;
	}
	/* the writer writes a chunk every NT_CHUNK_RECS records */
	if (++st->pending == NT_CHUNK_RECS) {
		st->written += st->pending;
		st->pending = 0;
	}
	return 0;
}

/*
 * record's per-CPU rings (struct nt_pcr_ctl), mapped: each CPU's records
 * from its tail to its head, in order, through on_event; then the tail,
 * which lets the CPU's programs reuse those places.
 */
struct pcr_reader {
	struct nt_pcr_ctl *ctl;
	const struct ntbpf_rec *recs;
	int ncpu;
	uint32_t n;	/* records per CPU, a power of two */
	uint64_t taken;	/* records that came through them */
};

static uint64_t pcr_drain(struct pcr_reader *pc, struct rec_state *st)
{
	uint64_t most = 0;	/* the fullest ring's records */

	for (int c = 0; c < pc->ncpu; c++) {
		struct nt_pcr_ctl *ctl = &pc->ctl[c];
		uint64_t h = __atomic_load_n(&ctl->head, __ATOMIC_ACQUIRE), t = ctl->tail;
		const struct ntbpf_rec *ring = pc->recs + (size_t)c * pc->n;

		/* a head more than a ring ahead is not the programs' (they never pass the tail) */
		if (h - t > pc->n)
			t = h - pc->n;
		if (h - t > most)
			most = h - t;
		/* the plain case, records to the file only: each run of the ring in one call */
		while (t != h && !st->discard && !st->live && !st->werr) {
			uint64_t at = t & (pc->n - 1), k = pc->n - at < h - t ? pc->n - at : h - t;
			size_t added;

			st->seen += k;
			pc->taken += k;
			t += k;
			if (nt_writer_add_run(st->w, &ring[at], k, &added)) {
				/*
				 * A chunk's write failed: lost, as on_event counts them, the
				 * record whose add failed and those not handed over; what the
				 * file holds is its whole chunks.
				 */
				st->lost_user += k - added + 1;
				st->werr = errno ? errno : EIO;
				st->written = nt_writer_records(st->w);
				st->pending = 0;
				break;
			}
			st->pending += added;
			st->written += st->pending / NT_CHUNK_RECS * NT_CHUNK_RECS;
			st->pending %= NT_CHUNK_RECS;
		}
		for (; t != h; t++, pc->taken++)
			on_event(st, (void *)&ring[t & (pc->n - 1)], sizeof(struct ntbpf_rec));
		__atomic_store_n(&ctl->tail, t, __ATOMIC_RELEASE);
	}
	return most;
}

static void rec_flush(struct rec_state *st)
{
	int rc;

	if (st->werr)
		return;
	rc = nt_writer_flush(st->w);
	if (rc) {
		st->werr = rc < 0 ? -rc : EIO;
		return;
	}
	st->written += st->pending;
	st->pending = 0;
}

/* --rotate: the name of part k of the series */
static void part_path(char *buf, size_t len, const char *output, unsigned int k)
{
	snprintf(buf, len, "%s.%04u", output, k);
}

/*
 * The BPF counters since this part of the series began (the trailer of each
 * file counts its own share), from one reading of them (now) and of the
 * windows' drops (dropped): the next part starts from the same reading, so
 * that what the kernel counts while a part is closed falls into one part.
 */
static void part_stats(const struct rec_state *st, const uint64_t *now, uint64_t dropped, uint64_t *stats,
		       bool last)
{
	uint64_t gauge;

	/* in flight at the end: a gauge (the records still open) and a count (those a sampling window dropped) */
	gauge = now[ST_INFLIGHT_END] - dropped;
	for (int k = 0; k < ST_NR; k++)
		stats[k] = now[k] >= st->stats0[k] ? now[k] - st->stats0[k] : 0;
	/*
	 * A record open when a file of the series ends completes in the next
	 * one: only the last file counts those still open as in flight at
	 * the end; each counts the windows' drops of its own time.
	 */
	stats[ST_INFLIGHT_END] = dropped - st->dropped0 + (last ? gauge : 0);
}

static void record_queues(const struct nt_probes *pr, struct nt_header *hdr, FILE *f, uint64_t hdr_len);

/*
 * The queue list record_queues put into a header (and the controllers it
 * added for them), taken out again: the next file of a series lists its
 * queues at its own end.  The queue arrays stay allocated (array_add
 * reallocates them as they grow again); those of dropped controllers are
 * freed.  The cntlid changes stay: they hold for the next file's I/Os too.
 */
static void queues_reset(struct nt_header *hdr, uint32_t nctrls0)
{
	for (uint32_t i = 0; i < hdr->nctrls; i++) {
		hdr->ctrls[i].nqueues = 0;
		if (i >= nctrls0) {
			free(hdr->ctrls[i].queues);
			hdr->ctrls[i].queues = NULL;
		}
	}
	if (hdr->nctrls > nctrls0)
		hdr->nctrls = nctrls0;
}

/*
 * --rotate: end this file of the series (a whole file: its trailer counts
 * what it holds and what was lost while it was written, its header the
 * queues and cntlid changes as at its end) and go on in the next,
 * FILE.NNNN, with the header's clocks read again.  0, or -1 (st->werr or a
 * message: the recording stops).
 */
static int rec_rotate(struct rec_state *st, struct nt_outfile *of, struct nt_header *hdr, struct nt_probes *pr,
		      const char *output)
{
	struct nt_trailer tr = { 0 };
	uint64_t now[ST_NR], dropped;
	char err[256];
	int rc;

	rec_flush(st);
	if (st->werr)
		return -1;
	dropped = pr->inflight_dropped;
	nt_probes_stats(pr, now);
	part_stats(st, now, dropped, tr.stats, false);
	tr.end_mono_ns = nt_clock_ns(CLOCK_MONOTONIC);
	tr.records = st->written;
	tr.lost_user = st->lost_user;
	rc = nt_writer_close(st->w, &tr);
	st->w = NULL;
	if (!rc && !of->is_stream) {
		record_queues(pr, hdr, of->f, st->hdr_len);
		queues_reset(hdr, st->nctrls0);
	}
	if (rc || nt_outfile_commit(of, err, sizeof(err))) {
		if (rc)
			snprintf(err, sizeof(err), "writing the end of %s failed: %s", st->path, strerror(rc < 0 ? -rc : EIO));
		fprintf(stderr, "ntbpf record: %s\n", err);
		st->werr = EIO;
		return -1;
	}
	memcpy(st->stats0, now, sizeof(now));
	st->dropped0 = dropped;
	st->written = st->lost_user = 0;
	part_path(st->path, sizeof(st->path), output, ++st->part);
	if (nt_outfile_open(of, st->path, err, sizeof(err)) || nt_outfile_start(of, err, sizeof(err))) {
		fprintf(stderr, "ntbpf record: %s\n", err);
		st->werr = EIO;
		nt_outfile_abort(of);
		return -1;
	}
	hdr->mono_ns = nt_clock_ns(CLOCK_MONOTONIC);
	hdr->real_ns = nt_clock_ns(CLOCK_REALTIME);
	hdr->boot_ns = nt_clock_ns(CLOCK_BOOTTIME);
	st->part_start_ns = hdr->mono_ns;
	st->w = nt_writer_open(of->f, hdr);
	if (!st->w) {
		fprintf(stderr, "ntbpf record: cannot write %s: %s\n", st->path, strerror(errno));
		st->werr = errno ? errno : EIO;
		nt_outfile_abort(of);
		return -1;
	}
	nt_writer_set_raw(st->w, !st->compress);
	/* its header may be longer than the last file's: cntlid changes, a deferred hook attached */
	st->hdr_len = nt_writer_bytes(st->w);
	return 0;
}

/* child waits on a pipe until the probes are attached, then execs */
static pid_t spawn_child(char **argv, int *go_fd)
{
	int p[2];
	pid_t pid;

	if (pipe(p))
		return -1;
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		char c;

		close(p[1]);
		if (read(p[0], &c, 1) != 1)
			_exit(127);	/* recorder failed before starting */
		close(p[0]);
		signal(SIGINT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		signal(SIGHUP, SIG_DFL);
		signal(SIGPIPE, SIG_DFL);
		execvp(argv[0], argv);
		fprintf(stderr, "ntbpf record: cannot run '%s': %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	close(p[0]);
	*go_fd = p[1];
	return pid;
}

/*
 * A write failed (ENOSPC, EIO, ...): the recording stops, the file keeps its
 * whole chunks and ends with a trailer if there is room for one (else after
 * its last whole chunk: still readable, reported as cut short).
 */
static void rec_salvage(struct rec_state *st, struct nt_outfile *of, struct nt_trailer *tr, const char *path)
{
	uint64_t good = nt_writer_bytes(st->w);
	int rc;

	fprintf(stderr, "ntbpf record: warning: writing %s failed (%s): recording stopped; the file keeps every "
		"whole chunk written before\n", path, strerror(st->werr));
	nt_outfile_cut(of, good);
	nt_writer_recover(st->w);
	tr->records = st->written;
	tr->lost_user = tr->stats[ST_EMITTED] > st->written ? tr->stats[ST_EMITTED] - st->written : 0;
	rc = nt_writer_close(st->w, tr);
	st->w = NULL;
	if (rc) {
		nt_outfile_cut(of, good);
		fprintf(stderr, "ntbpf record: warning: no room for the trailer either: %s ends after its last "
			"whole chunk\n", path);
	}
}

/* what sampling windows detach between them (sampling.h) */
static const char *const detach_text[] = {
	[NT_DETACH_NONE] = "every hook paused",
	[NT_DETACH_TP] = "tracepoint hooks detached, function hooks paused",
	[NT_DETACH_ALL] = "every hook detached",
};

/* the start line's windows: length, period, and what happens between them (all only where they are far apart) */
static const char *window_text(const struct nt_config *cfg, const struct nt_windows *w, char *buf, size_t len)
{
	enum nt_detach d = nt_windows_detach(w);

	int n = snprintf(buf, len, " in %u ms windows, one in %u: every %g s; between them %s", cfg->sample_window_ms,
			 cfg->sample, w->p_ns / 1e9, detach_text[d]);

	if (cfg->sample_detach_all && d != NT_DETACH_ALL && n > 0 && (size_t)n < len)
		snprintf(buf + n, len - n, " (--sample-detach all detaches function hooks only where windows are "
			 "%g s apart or more)", w->fn_gap_ns / 1e9);
	return buf;
}

/*
 * --sample-by time: a thread arms the programs a lead ahead of each window
 * and pauses them a lead after it (so that the window's last I/Os complete);
 * the lead follows how long arming took.  The BPF side keeps the windows'
 * exact edges, so a late thread costs some CPU, never a record outside a
 * window.
 */
struct windows_run {
	struct nt_probes *pr;
	struct nt_windows w;
	bool verbose;
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool stop;
	uint64_t nwindows;		/* read after the thread ended */
	uint64_t reattach_failed;	/* tracepoint programs that did not attach again at a window */
};

static void *windows_thread(void *arg)
{
	struct windows_run *wr = arg;
	struct sched_param sp = { .sched_priority = 1 };
	/* never more than at the start (50 ms, or a quarter of the gap): armed is not free */
	uint64_t max_lead = wr->w.lead_ns, lead = wr->w.lead_ns, closed = UINT64_MAX;
	uint64_t want = 0, late = 0;	/* when the thread meant to wake; how late it woke to arm */
	bool armed = false;

	/*
	 * Arm on time on a busy host: the lowest real-time priority, so the
	 * thread's timer wake-up is not queued behind the workload (in the lab,
	 * behind fio and io_work, it woke over 20 ms late, and the target missed
	 * the start of a window the initiator recorded).  It sleeps between
	 * windows and its work is short.  Best effort: without the right to it,
	 * the lead covers what it can.
	 */
	if (pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp) && wr->verbose)
		fprintf(stderr, "ntbpf record: the windows' thread runs at normal priority\n");
	pthread_mutex_lock(&wr->mu);
	while (!wr->stop) {
		uint64_t now = nt_clock_ns(CLOCK_REALTIME), start, next, mono, took;
		bool in = nt_window_at(&wr->w, now, &start, &next);
		struct timespec until;

		/*
		 * The window just disarmed stays closed: a lead that grew since
		 * it was armed would otherwise say it is still armed, and the
		 * thread would arm and disarm it again and again.
		 */
		if (in && start == closed) {
			in = false;
			next = start + wr->w.p_ns - wr->w.lead_ns;
		}

		if (in == armed) {
			want = next;
			until.tv_sec = next / 1000000000;
			until.tv_nsec = next % 1000000000;
			pthread_cond_timedwait(&wr->cv, &wr->mu, &until);
			continue;
		}
		/* a busy host wakes the thread late: the lead covers that too (decaying maximum) */
		if (in && want && now > want)
			late = now - want > late * 3 / 4 ? now - want : late * 3 / 4;
		pthread_mutex_unlock(&wr->mu);
		mono = nt_clock_ns(CLOCK_MONOTONIC);
		if (in)	/* the wall clock may have been stepped: the windows follow it */
			nt_probes_set_windows(wr->pr, wr->w.p_ns, wr->w.w_ns, (int64_t)(now - mono));
		wr->reattach_failed += nt_probes_window(wr->pr, in, mono, nt_windows_detach(&wr->w));
		took = nt_clock_ns(CLOCK_MONOTONIC) - mono;
		if (wr->verbose)
			fprintf(stderr, "ntbpf record: %s at %.3f s (wall clock) in %.3f ms; lead %.1f ms\n",
				in ? "window armed" : "window disarmed", now / 1e9, took / 1e6, wr->w.lead_ns / 1e6);
		pthread_mutex_lock(&wr->mu);
		wr->nwindows += in;
		armed = in;
		/*
		 * The next window is armed twice as early as this one took to
		 * arm or the thread woke late, whichever is more, plus 5 ms, at
		 * most the first window's lead (sampling.c: 50 ms, or a quarter
		 * of the gap): every program runs while armed, outside windows too.
		 */
		if (in) {
			uint64_t need = 2 * (took > late ? took : late) + 5000000;

			lead = need < max_lead ? need : max_lead;
		} else {
			closed = start - wr->w.p_ns;	/* start: the next window's */
			wr->w.lead_ns = lead;
		}
	}
	pthread_mutex_unlock(&wr->mu);
	return NULL;
}

/*
 * The gap between windows from which the function hooks are detached too
 * under --sample-detach all (sampling.h): NT_DETACH_FN_GAP_NS, or
 * NTBPF_DETACH_FN_GAP_MS, a test knob (the lab's windows are short), ignored
 * unless a whole number of ms.
 */
static uint64_t fn_gap_ns(void)
{
	const char *e = getenv("NTBPF_DETACH_FN_GAP_MS");
	unsigned long long ms;
	char *end;

	if (!e || !*e || *e == '-' || strlen(e) > 9)
		return NT_DETACH_FN_GAP_NS;
	errno = 0;
	ms = strtoull(e, &end, 10);
	return errno || *end ? NT_DETACH_FN_GAP_NS : ms * 1000000ull;
}

static int windows_start(struct windows_run *wr)
{
	uint64_t mono = nt_clock_ns(CLOCK_MONOTONIC), now = nt_clock_ns(CLOCK_REALTIME);

	nt_probes_set_windows(wr->pr, wr->w.p_ns, wr->w.w_ns, (int64_t)(now - mono));
	/* attached, and paused until a window (tracepoints detached where windows are far apart) */
	nt_probes_window(wr->pr, false, mono, nt_windows_detach(&wr->w));
	pthread_mutex_init(&wr->mu, NULL);
	pthread_cond_init(&wr->cv, NULL);
	return pthread_create(&wr->thread, NULL, windows_thread, wr);
}

static void windows_stop(struct windows_run *wr)
{
	pthread_mutex_lock(&wr->mu);
	wr->stop = true;
	pthread_cond_signal(&wr->cv);
	pthread_mutex_unlock(&wr->mu);
	pthread_join(wr->thread, NULL);
	pthread_cond_destroy(&wr->cv);
	pthread_mutex_destroy(&wr->mu);
}

/*
 * The queues' facts are known at the end (the BPF side reads each queue's
 * connection at its first recorded I/O): into the header, which is
 * rewritten in place in the room it was written with; on the initiator
 * also the controllers' queues no recorded I/O went to (sysfs queue_count),
 * with nothing known of them.  Queues that do not fit are left out, and
 * said so.
 */
static void record_queues(const struct nt_probes *pr, struct nt_header *hdr, FILE *f, uint64_t hdr_len)
{
	uint32_t cut = 0, nqn_cut = 0;
	int n = nt_probes_queues(pr, hdr), idle = 0, rc;

	/* a reconnect while recording gave a controller a new cntlid: since when */
	if (hdr->role == NTBPF_ROLE_INITIATOR)
		nt_probes_cntlid_changes(pr, hdr);

	/* controllers and namespaces that came after the start: their NQNs and nsids (--group-by host, ns) */
	if (hdr->role == NTBPF_ROLE_INITIATOR)
		nt_sys_nvme_names("", hdr);
	if (n < 0)
		fprintf(stderr, "ntbpf record: warning: out of memory reading the queues: the header lists none\n");
	/* and the initiator's queues no recorded I/O went to (queue_imbalance counts them) */
	else if (hdr->role == NTBPF_ROLE_INITIATOR && (idle = nt_sys_nvme_idle_queues("", hdr)) < 0)
		fprintf(stderr, "ntbpf record: warning: out of memory listing the idle queues: the header lists "
			"the queues with I/O only\n");
	for (;;) {
		uint32_t i = hdr->nctrls;

		rc = nt_header_rewrite(f, hdr, hdr_len);
		if (rc != -E2BIG)
			break;
		while (i && !hdr->ctrls[i - 1].nqueues)
			i--;
		if (!i) {
			/* no queue left to cut: a target's controllers without their NQNs, the last first */
			for (i = hdr->nctrls; i && !hdr->ctrls[i - 1].hostnqn[0] && !hdr->ctrls[i - 1].subsysnqn[0];)
				i--;
			if (!i || hdr->role != NTBPF_ROLE_TARGET)
				break;
			hdr->ctrls[i - 1].hostnqn[0] = hdr->ctrls[i - 1].subsysnqn[0] = 0;
			nqn_cut++;
			continue;
		}
		hdr->ctrls[i - 1].nqueues--;	/* the highest qid of the last controller */
		cut++;
	}
	if (rc)
		fprintf(stderr, "ntbpf record: warning: cannot write the queue list into the header: %s\n",
			strerror(-rc));
	else if (cut)
		fprintf(stderr, "ntbpf record: warning: %u of %d queues did not fit into the header's room: "
			"not listed\n", cut, n + (idle > 0 ? idle : 0));
	if (!rc && nqn_cut)
		fprintf(stderr, "ntbpf record: warning: the NQNs of %u controllers did not fit into the header's "
			"room: their I/Os group as host unknown\n", nqn_cut);
}

/*
 * room in the header for the queue list: about 100 bytes a queue, a queue per CPU per controller;
 * on the target the controllers' NQNs too
 */
static uint32_t queue_room(const struct nt_header *hdr)
{
	int ncpu = libbpf_num_possible_cpus();
	uint64_t room = 1024 + 128ull * (ncpu > 0 ? ncpu : 1) * (hdr->nctrls > 2 ? hdr->nctrls : 2);

	/* a target learns its controllers (hosts) as they come: their NQNs, 32 at the longest */
	if (hdr->role == NTBPF_ROLE_TARGET)
		room += 32 * 2 * 256;

	return room > (1u << 20) ? 1u << 20 : (uint32_t)room;
}

int nt_record_run(const struct nt_config *cfg, int argc, char **argv)
{
	char err[256];
	struct nt_devset devs = { 0 };
	struct nt_header hdr;
	struct nt_trailer tr = { 0 };
	struct rec_state st = { 0 };
	struct nt_probes pr = { 0 };
	struct nt_outfile of = { .fd = -1 };
	struct ring_buffer *rb = NULL;
	struct pcr_reader pc = { 0 };
	struct nt_drain_prio dp = { 0 };
	uint64_t drain_cap = 0;	/* records the fullest ring holds: the per-CPU rings', else the ring buffer's */
	struct rusage ru_start = { 0 };
	uint64_t cpu_start = 0;
	/* --sample N by time: every I/O of the windows; the BPF side samples nothing itself */
	bool windowed = cfg->sample > 1 && cfg->sample_window_ms, win_running = false;
	struct windows_run wr = { .pr = &pr, .w = nt_windows_with(cfg->sample, cfg->sample_window_ms,
								 cfg->sample_detach_all ? fn_gap_ns() : UINT64_MAX),
				  .verbose = cfg->verbose };
	struct nt_probe_opts po = { .sample = windowed ? 1 : cfg->sample, .devs = &devs, .force_kprobe = cfg->force_kprobe,
				    .bpf_stats = cfg->bpf_stats, .percpu_rings = true,
				    .verbose = cfg->verbose };
	int role, rc = 1, go_fd = -1, child_status = 0, knob = 0;
	pid_t child = -1;
	uint64_t t_end = 0, last_flush, last_tick, lost_ticked = 0, wbytes;
	bool child_done = false, loaded = false, opened = false, started = false;
	/* the devices' own counts, at the start and the stop: unsampled initiator recordings (nt_dev_not_run) */
	struct nt_kcount k0 = { 0 }, k1 = { 0 };

	nt_header_init(&hdr, 0);
	role = nt_record_preflight(cfg, "record", &devs);
	if (role < 0)
		return 1;
	/* the file (and its lock) first: a second recorder on it stops here */
	if (cfg->rotate_bytes || cfg->rotate_ns)
		part_path(st.path, sizeof(st.path), cfg->output, 0);
	else
		snprintf(st.path, sizeof(st.path), "%s", cfg->output);
	if (nt_outfile_open(&of, st.path, err, sizeof(err))) {
		fprintf(stderr, "ntbpf record: %s\n", err);
		return 1;
	}
	opened = true;

	po.role = role;
	/*
	 * -d naming NVMe namespaces only: block_rq_issue waits unattached (its
	 * event ends no stage of an NVMe I/O; nvme_setup_cmd starts the
	 * record), as in live.  Not with sampling windows, whose thread
	 * attaches and detaches every hook.
	 */
	po.defer_blk_issue = role == NTBPF_ROLE_INITIATOR && !windowed && nt_devs_nvme_only(&devs);
	po.defer_data_send = !windowed;	/* the target: until a queue runs without SQ head updates */
	if (nt_probes_load(&pr, &po, err, sizeof(err))) {
		fprintf(stderr, "ntbpf record: %s\n", err);
		goto out;
	}
	loaded = true;
	if (pr.fallback[0])
		fprintf(stderr, "ntbpf record: warning: %s\n", pr.fallback);

	if (cfg->cmd_argv) {
		child = spawn_child(cfg->cmd_argv, &go_fd);
		if (child < 0) {
			fprintf(stderr, "ntbpf record: cannot start '%s': %s\n", cfg->cmd_argv[0], strerror(errno));
			goto out;
		}
	}
	if (nt_probes_attach(&pr, err, sizeof(err))) {
		fprintf(stderr, "ntbpf record: %s\n", err);
		goto out;
	}

	nt_record_header(&hdr, cfg, role, &devs, &pr, argc, argv);
	hdr.reserve = of.is_stream ? 0 : queue_room(&hdr);	/* a stream is not rewritten: no queue list */
	st.w = nt_writer_open(of.f, &hdr);
	if (!st.w) {
		fprintf(stderr, "ntbpf record: cannot write %s: %s\n", st.path, strerror(errno));
		goto out;
	}
	st.compress = cfg->compress;
	nt_writer_set_raw(st.w, !cfg->compress);
	st.hdr_len = nt_writer_bytes(st.w);
	st.nctrls0 = hdr.nctrls;
	if (cfg->interval > 0) {
		st.live = nt_live_new(cfg, &hdr);
		if (!st.live)
			goto out;
	}
	knob = nt_test_cost();
	st.discard = knob == NT_TEST_COST_DISCARD;
	rb = ring_buffer__new(nt_probes_ringbuf_fd(&pr), on_event, &st, NULL);
	if (!rb) {
		fprintf(stderr, "ntbpf record: cannot set up the ring buffer: %s\n", strerror(errno));
		goto out;
	}
	if (pr.pcr_recs) {
		if (nt_probes_pcr_map(&pr, &pc.ctl, &pc.recs)) {
			fprintf(stderr, "ntbpf record: cannot map the per-CPU rings: %s\n", strerror(errno));
			goto out;
		}
		pc.ncpu = pr.pcr_ncpu;
		pc.n = pr.pcr_recs;
	}
	/* recording really starts: only now does an existing file become FILE.old (as perf does) */
	if (nt_outfile_start(&of, err, sizeof(err))) {
		fprintf(stderr, "ntbpf record: %s\n", err);
		goto out;
	}
	started = true;

	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	signal(SIGHUP, on_signal);	/* an ssh drop ends the recording like Ctrl-C */
	signal(SIGPIPE, SIG_IGN);	/* and a closed stderr must not kill us before the trailer */
	if (cfg->bpf_stats)
		getrusage(RUSAGE_SELF, &ru_start);	/* from here on: the cost while recording */
	if (cfg->bpf_stats)
		cpu_start = nt_clock_ns(CLOCK_PROCESS_CPUTIME_ID);
	if (windowed) {
		if (windows_start(&wr)) {
			fprintf(stderr, "ntbpf record: cannot start the sampling windows' thread: %s\n", strerror(errno));
			goto out;
		}
		win_running = true;
	}
	if (windowed && cfg->duration > 0 && cfg->duration * 1e9 < wr.w.p_ns)
		fprintf(stderr, "ntbpf record: warning: --duration %g s is shorter than the sampling period (%g s): "
			"the recording may hold no window (--sample-window sets their length)\n", cfg->duration,
			wr.w.p_ns / 1e9);
	if (role == NTBPF_ROLE_INITIATOR && cfg->sample <= 1)
		k0.ok = !nt_dev_iostat("", &devs, &k0.done, &k0.inflight);
	/*
	 * From here this thread drains and writes at --nice (19): its bursts
	 * give way to the workload (in the lab, at the same nice as fio they
	 * made fio sleep more often waiting for its completions: docs/cost-
	 * history.md), and it catches up at the nice it started with should
	 * it fall behind (src/drainprio.c).  CMD and the windows' thread keep
	 * theirs.
	 */
	nt_drain_prio_start(&dp, cfg->nice);
	drain_cap = pc.ncpu ? pc.n : nt_probes_ringbuf_recs(&pr);
	/* scripts wait for this line before starting the workload */
	fprintf(stderr, "ntbpf record: recording %s I/O to %s (%d hooks attached%s%s%s%s)\n", nt_role_name(role),
		cfg->output, pr.nattached, windowed ? window_text(cfg, &wr.w, err, sizeof(err)) : "",
		pr.deferred ? "; " : "", nt_probes_deferred_text(&pr),
		child > 0 ? "" : "; Ctrl-C to stop");
	if (child > 0) {
		/* Ctrl-C reaches the command too (same process group); let it end first */
		if (write(go_fd, "g", 1) != 1)
			goto out;
		close(go_fd);
		go_fd = -1;
	}
	if (cfg->duration > 0)
		t_end = nt_clock_ns(CLOCK_MONOTONIC) + (uint64_t)(cfg->duration * 1e9);
	last_flush = last_tick = st.part_start_ns = nt_clock_ns(CLOCK_MONOTONIC);
	while (!st.werr) {
		/* records wait <= 100 ms; a per-CPU ring half full wakes us at once */
		int n = nt_recorder_poll(rb, 100);
		uint64_t t, most;

		most = pcr_drain(&pc, &st);
		/*
		 * Without per-CPU rings, what the ring buffer gave; with them,
		 * records there beyond the CPUs' wake-up marks say a ring was full.
		 */
		if (n > (pc.ncpu ? 2 * pc.ncpu : 0))
			most = pc.ncpu ? pc.n : (uint64_t)n;
		nt_drain_prio_round(&dp, most, drain_cap);
		t = nt_clock_ns(CLOCK_MONOTONIC);

		if (n < 0) {
			fprintf(stderr, "ntbpf record: ring buffer poll failed: %s\n", strerror(-n));
			break;
		}
		if (st.live && t - last_tick >= (uint64_t)(cfg->interval * 1e9)) {
			uint64_t s2[ST_NR], lost;

			nt_probes_stats(&pr, s2);
			lost = nt_lost_sum(s2);
			nt_live_tick(st.live, stdout, (t - last_tick) / 1e9, lost - lost_ticked);
			lost_ticked = lost;
			last_tick = t;
		}
		/* the header rewritten at the end then says it is attached */
		if (pr.deferred && nt_probes_undefer_now(&pr, "record")) {
			hdr.nhooks = 0;
			nt_probes_to_header(&pr, &hdr);
		}
		if (t - last_flush >= 1000000000ull) {
			rec_flush(&st);
			last_flush = t;
		}
		if (((cfg->rotate_bytes && nt_writer_bytes(st.w) >= cfg->rotate_bytes) ||
		     (cfg->rotate_ns && t - st.part_start_ns >= cfg->rotate_ns)) &&
		    rec_rotate(&st, &of, &hdr, &pr, cfg->output))
			break;
		if (child > 0 && !child_done && waitpid(child, &child_status, WNOHANG) == child)
			child_done = true;
		if (child_done || (t_end && t >= t_end))
			break;
		if (stop_signal && child <= 0)
			break;
		if (stop_signal && child > 0) {
			/* the command got Ctrl-C (or the hangup) too; forward a kill and wait for it to end */
			if (stop_signal == SIGTERM || stop_signal == SIGHUP)
				kill(child, stop_signal);
			stop_signal = 0;
		}
	}
	if (k0.ok)
		k1.ok = !nt_dev_iostat("", &devs, &k1.done, &k1.inflight);
	/* stop new events, then drain what the kernel still holds */
	if (win_running) {
		windows_stop(&wr);
		win_running = false;
	}
	nt_probes_detach(&pr);
	ring_buffer__consume(rb);
	pcr_drain(&pc, &st);
	if (st.live) {
		uint64_t s2[ST_NR], t = nt_clock_ns(CLOCK_MONOTONIC);

		nt_probes_stats(&pr, s2);
		nt_live_tick(st.live, stdout, (t - last_tick) / 1e9, nt_lost_sum(s2) - lost_ticked);
	}
	{
		uint64_t now[ST_NR], dropped = pr.inflight_dropped;

		nt_probes_stats(&pr, now);
		part_stats(&st, now, dropped, tr.stats, true);
	}
	if (k1.ok) {
		uint64_t all[ST_NR];	/* the whole recording's, not this file's */

		nt_probes_stats(&pr, all);
		tr.stats[ST_NOT_RUN] = nt_dev_not_run(&k0, &k1, all);
		if (cfg->verbose)
			fprintf(stderr, "ntbpf record: the devices' own counts: %" PRIu64 " I/Os completed while recording, %"
				PRIu64 " in flight at its stop; the programs saw %" PRIu64 " records, %" PRIu64 " lost, %"
				PRIu64 " in flight at the start, %" PRIu64 " at the stop\n", k1.done - k0.done, k1.inflight,
				all[ST_EMITTED], all[ST_LOST_RINGBUF] + all[ST_LOST_MAP_FULL] + all[ST_NO_COMPLETE],
				all[ST_NO_START], all[ST_INFLIGHT_END]);
	}
	if (cfg->verbose)
		fprintf(stderr, "ntbpf record: took the records at nice %d%s, at nice %d %" PRIu64 " time%s it fell behind "
			"(a ring 3/4 full)\n", dp.idle, dp.ok ? "" : " (could not change it)", dp.busy, dp.catchups,
			dp.catchups == 1 ? "" : "s");
	if (cfg->verbose && pc.ncpu)
		fprintf(stderr, "ntbpf record: per-CPU rings of %u records on %d CPUs: %" PRIu64 " records came through "
			"them, %" PRIu64 " through the shared ring buffer\n", pc.n, pc.ncpu, pc.taken, st.seen - pc.taken);
	if (cfg->bpf_stats) {
		uint64_t ns, runs;

		struct rusage ru;
		double u, sy;

		if (cfg->verbose)
			nt_probes_run_time_each(&pr, stderr);
		if (!nt_probes_run_time(&pr, &ns, &runs))
			fprintf(stderr, "ntbpf record: BPF run time %.0f ns per recorded I/O (%" PRIu64 " ns in %" PRIu64
				" program runs, %.0f ns each)\n", tr.stats[ST_EMITTED] ? (double)ns / tr.stats[ST_EMITTED] : 0.0,
				ns, runs, runs ? (double)ns / runs : 0.0);
		/*
		 * The reader, the encoder and the writing while recording: this
		 * process only, not CMD, and not the start (BTF, loading and
		 * verifying the programs), which is before the workload.
		 */
		/*
		 * The total is the scheduler's runtime of the process (exact);
		 * getrusage splits it into user and system by timer ticks only.
		 */
		if (!getrusage(RUSAGE_SELF, &ru) && tr.stats[ST_EMITTED]) {
			double cpu = (nt_clock_ns(CLOCK_PROCESS_CPUTIME_ID) - cpu_start) / 1e9;

			u = tv_s(&ru.ru_utime) - tv_s(&ru_start.ru_utime);
			sy = tv_s(&ru.ru_stime) - tv_s(&ru_start.ru_stime);
			fprintf(stderr, "ntbpf record: user-space CPU %.0f ns per recorded I/O while recording (%.3f s of CPU; "
				"by ticks %.3f s user, %.3f s system; %.3f s more to start; %ld context switches, "
				"%ld involuntary)\n", cpu * 1e9 / tr.stats[ST_EMITTED],
				cpu, u, sy, tv_s(&ru_start.ru_utime) + tv_s(&ru_start.ru_stime),
				ru.ru_nvcsw - ru_start.ru_nvcsw, ru.ru_nivcsw - ru_start.ru_nivcsw);
		}
	}
	if (st.discard)
		fprintf(stderr, "ntbpf record: test knob: %" PRIu64 " records taken off the ring buffer and dropped\n",
			st.discarded);
	else if (knob == NT_TEST_COST_NOEMIT)
		fprintf(stderr, "ntbpf record: test knob: %" PRIu64 " records built and ended, none put on the ring buffer\n",
			tr.stats[ST_EMITTED]);
	else if (knob == NT_TEST_COST_EMPTY)
		fprintf(stderr, "ntbpf record: test knob: %" PRIu64 " records built (every program run returned at once)\n",
			tr.stats[ST_EMITTED]);
	tr.end_mono_ns = nt_clock_ns(CLOCK_MONOTONIC);
	if (!st.w) {	/* --rotate could not go on: the files of the series before it are whole */
		opened = false;
		rc = 1;
		goto out;
	}
	rec_flush(&st);
	wbytes = nt_writer_bytes(st.w);	/* a stream (-, a FIFO) has no size to stat: what went into it */
	if (st.werr) {
		rec_salvage(&st, &of, &tr, st.path);
	} else {
		tr.records = st.written;	/* the writer's own count (in a series, this file's) */
		tr.lost_user = st.lost_user;
		rc = nt_writer_close(st.w, &tr);
		st.w = NULL;
		if (rc) {
			st.werr = rc < 0 ? -rc : EIO;
			fprintf(stderr, "ntbpf record: writing the end of %s failed: %s\n", st.path, strerror(st.werr));
		} else if (!of.is_stream) {
			/* with --rotate: the series' last file */
			record_queues(&pr, &hdr, of.f, st.hdr_len);
		}
	}
	{
		struct stat sb;
		uint64_t lost = nt_lost_sum(tr.stats) + tr.lost_user;
		double size = !fstat(of.fd, &sb) && S_ISREG(sb.st_mode) ? (double)sb.st_size : (double)wbytes;

		if (nt_outfile_commit(&of, err, sizeof(err))) {
			fprintf(stderr, "ntbpf record: %s\n", err);
			st.werr = st.werr ? st.werr : EIO;
		}
		opened = false;
		fprintf(stderr, "ntbpf record: %" PRIu64 " records, %" PRIu64 " lost, %.1f KiB written to %s "
			"(%.1f bytes/record, %s, %d hooks)\n", st.werr ? st.written : tr.records, lost, size / 1024,
			st.path, tr.records ? size / tr.records : 0.0, nt_role_name(role), pr.nattached);
		if (st.part)
			fprintf(stderr, "ntbpf record: a series of %u files, %s.0000 to %s\n", st.part + 1, cfg->output, st.path);
		if (tr.stats[ST_NOT_RUN])
			fprintf(stderr, "ntbpf record: warning: the devices' own counts (/sys/class/block/*/stat) hold %" PRIu64
				" I/Os that no program run of ntbpf's saw: the kernel did not run them (counted as lost)\n",
				tr.stats[ST_NOT_RUN]);
		if (windowed)
			fprintf(stderr, "ntbpf record: %" PRIu64 " sampling windows of %u ms (between them %s), one "
				"every %g s; %" PRIu64 " I/Os in flight when a window closed (counted as in flight at "
				"the end)\n", wr.nwindows, cfg->sample_window_ms, detach_text[nt_windows_detach(&wr.w)],
				wr.w.p_ns / 1e9, pr.inflight_dropped);
		if (windowed && wr.reattach_failed)
			fprintf(stderr, "ntbpf record: warning: %" PRIu64 " times a hook did not attach "
				"again at a window: its events are missing from that window\n", wr.reattach_failed);
	}
	if (st.werr && child > 0 && !child_done)
		fprintf(stderr, "ntbpf record: '%s' goes on to its end\n", cfg->cmd_argv[0]);
	rc = st.werr ? 1 : 0;
out:
	if (win_running)
		windows_stop(&wr);
	if (go_fd >= 0)
		close(go_fd);	/* child sees EOF and exits 127 without running */
	if (child > 0 && !child_done) {
		/* a recording that failed to start stops the command; one that stopped early does not */
		if (rc && !started)
			kill(child, SIGTERM);
		waitpid(child, &child_status, 0);
		child_done = true;
	}
	if (st.w)
		nt_writer_close(st.w, &tr);
	ring_buffer__free(rb);
	nt_live_free(st.live);
	if (loaded)
		nt_probes_destroy(&pr);
	if (opened) {
		/* nothing was recorded: the temporary file goes, an existing FILE stays as it was */
		if (started && nt_outfile_commit(&of, err, sizeof(err)))
			fprintf(stderr, "ntbpf record: %s\n", err);
		else if (!started)
			nt_outfile_abort(&of);
	}
	nt_header_free(&hdr);
	if (child > 0 && (!rc || st.werr)) {
		/* like perf record -- cmd: the command's failure is ours */
		if (WIFEXITED(child_status) && WEXITSTATUS(child_status)) {
			fprintf(stderr, "ntbpf record: '%s' exited with status %d\n", cfg->cmd_argv[0],
				WEXITSTATUS(child_status));
			rc = WEXITSTATUS(child_status);
		} else if (WIFSIGNALED(child_status) && WTERMSIG(child_status) != SIGINT &&
			   WTERMSIG(child_status) != SIGTERM && WTERMSIG(child_status) != SIGHUP) {
			fprintf(stderr, "ntbpf record: '%s' killed by signal %d\n", cfg->cmd_argv[0],
				WTERMSIG(child_status));
			rc = 128 + WTERMSIG(child_status);
		}
	}
	return rc;
}
