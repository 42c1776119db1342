// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * bpfrec.c - "ntbpf record": the file (or series, --rotate), the probes
 * (src/probes.c), the command it runs, the sampling windows' thread, and
 * what each round of the drain loop (src/recorder.c, shared with live) does
 * with the records: the per-CPU rings and the ring buffer into the file,
 * and --interval's lines (src/interval.c, which live uses too).  A clean
 * stop on Ctrl-C, SIGTERM, SIGHUP, --duration or the command's exit: the
 * trailer says what was lost.
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
#include "interval.h"
#include "outfile.h"
#include "probes.h"
#include "recfile.h"
#include "sampling.h"
#include "sysinfo.h"

static double tv_s(const struct timeval *t)
{
	return t->tv_sec + t->tv_usec / 1e6;
}

struct rec_state {
	struct nt_interval *iv;	/* --interval: its lines (src/interval.h) */
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
	if (st->iv && size >= sizeof(struct ntbpf_rec))
		nt_interval_push(st->iv, data);
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
		while (t != h && !st->discard && !st->iv && !st->werr) {
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

/* one recording: everything nt_record_run's steps share */
struct rec_run {
	const struct nt_config *cfg;
	char err[256];
	struct nt_devset devs;
	struct nt_header hdr;
	struct nt_trailer tr;
	struct rec_state st;
	struct nt_probes pr;
	struct nt_probe_opts po;
	struct nt_outfile of;
	struct ring_buffer *rb;
	struct pcr_reader pc;
	struct nt_drain_prio dp;
	uint64_t drain_cap;	/* records the fullest ring holds: the per-CPU rings', else the ring buffer's */
	struct rusage ru_start;
	uint64_t cpu_start;
	/* --sample N by time: every I/O of the windows; the BPF side samples nothing itself */
	bool windowed, win_running;
	struct windows_run wr;
	int role, go_fd, child_status, knob;
	pid_t child;
	uint64_t t_end, last_flush, lost_ticked;
	bool child_done, loaded, opened, started;
	/* the devices' own counts, at the start and the stop: unsampled initiator recordings (nt_dev_not_run) */
	struct nt_kcount k0, k1;
};

/* the file, the probes, the command (-- CMD, waiting), the header and the writer: 0, or -1 (said) */
static int rec_open(struct rec_run *r, int argc, char **argv)
{
	const struct nt_config *cfg = r->cfg;

	/* the file (and its lock) first: a second recorder on it stops here */
	if (cfg->rotate_bytes || cfg->rotate_ns)
		part_path(r->st.path, sizeof(r->st.path), cfg->output, 0);
	else
		snprintf(r->st.path, sizeof(r->st.path), "%s", cfg->output);
	if (nt_outfile_open(&r->of, r->st.path, r->err, sizeof(r->err))) {
		fprintf(stderr, "ntbpf record: %s\n", r->err);
		return -1;
	}
	r->opened = true;

	r->po.role = r->role;
	/*
	 * -d naming NVMe namespaces only: block_rq_issue waits unattached (its
	 * event ends no stage of an NVMe I/O; nvme_setup_cmd starts the
	 * record), as in live.  Not with sampling windows, whose thread
	 * attaches and detaches every hook.
	 */
	r->po.defer_blk_issue = r->role == NTBPF_ROLE_INITIATOR && !r->windowed && nt_devs_nvme_only(&r->devs);
	r->po.defer_data_send = !r->windowed;	/* the target: until a queue runs without SQ head updates */
	if (nt_probes_load(&r->pr, &r->po, r->err, sizeof(r->err))) {
		fprintf(stderr, "ntbpf record: %s\n", r->err);
		return -1;
	}
	r->loaded = true;
	if (r->pr.fallback[0])
		fprintf(stderr, "ntbpf record: warning: %s\n", r->pr.fallback);

	if (cfg->cmd_argv) {
		r->child = spawn_child(cfg->cmd_argv, &r->go_fd);
		if (r->child < 0) {
			fprintf(stderr, "ntbpf record: cannot start '%s': %s\n", cfg->cmd_argv[0], strerror(errno));
			return -1;
		}
	}
	if (nt_probes_attach(&r->pr, r->err, sizeof(r->err))) {
		fprintf(stderr, "ntbpf record: %s\n", r->err);
		return -1;
	}

	nt_record_header(&r->hdr, cfg, r->role, &r->devs, &r->pr, argc, argv);
	r->hdr.reserve = r->of.is_stream ? 0 : queue_room(&r->hdr);	/* a stream is not rewritten: no queue list */
	r->st.w = nt_writer_open(r->of.f, &r->hdr);
	if (!r->st.w) {
		fprintf(stderr, "ntbpf record: cannot write %s: %s\n", r->st.path, strerror(errno));
		return -1;
	}
	r->st.compress = cfg->compress;
	nt_writer_set_raw(r->st.w, !cfg->compress);
	r->st.hdr_len = nt_writer_bytes(r->st.w);
	r->st.nctrls0 = r->hdr.nctrls;
	if (cfg->interval > 0) {
		r->st.iv = nt_interval_new(cfg, &r->hdr);
		if (!r->st.iv)
			return -1;
	}
	r->knob = nt_test_cost();
	r->st.discard = r->knob == NT_TEST_COST_DISCARD;
	return 0;
}

/* the ring buffer, the per-CPU rings, the file made current, the windows, the start line, the command: 0, or -1 */
static int rec_go(struct rec_run *r)
{
	const struct nt_config *cfg = r->cfg;

	r->rb = ring_buffer__new(nt_probes_ringbuf_fd(&r->pr), on_event, &r->st, NULL);
	if (!r->rb) {
		fprintf(stderr, "ntbpf record: cannot set up the ring buffer: %s\n", strerror(errno));
		return -1;
	}
	if (r->pr.pcr_recs) {
		if (nt_probes_pcr_map(&r->pr, &r->pc.ctl, &r->pc.recs)) {
			fprintf(stderr, "ntbpf record: cannot map the per-CPU rings: %s\n", strerror(errno));
			return -1;
		}
		r->pc.ncpu = r->pr.pcr_ncpu;
		r->pc.n = r->pr.pcr_recs;
	}
	/* recording really starts: only now does an existing file become FILE.old (as perf does) */
	if (nt_outfile_start(&r->of, r->err, sizeof(r->err))) {
		fprintf(stderr, "ntbpf record: %s\n", r->err);
		return -1;
	}
	r->started = true;

	nt_recorder_signals(true);
	if (cfg->bpf_stats) {
		getrusage(RUSAGE_SELF, &r->ru_start);	/* from here on: the cost while recording */
		r->cpu_start = nt_clock_ns(CLOCK_PROCESS_CPUTIME_ID);
	}
	if (r->windowed) {
		if (windows_start(&r->wr)) {
			fprintf(stderr, "ntbpf record: cannot start the sampling windows' thread: %s\n", strerror(errno));
			return -1;
		}
		r->win_running = true;
	}
	if (r->windowed && cfg->duration > 0 && cfg->duration * 1e9 < r->wr.w.p_ns)
		fprintf(stderr, "ntbpf record: warning: --duration %g s is shorter than the sampling period (%g s): "
			"the recording may hold no window (--sample-window sets their length)\n", cfg->duration,
			r->wr.w.p_ns / 1e9);
	if (r->role == NTBPF_ROLE_INITIATOR && cfg->sample <= 1)
		r->k0.ok = !nt_dev_iostat("", &r->devs, &r->k0.done, &r->k0.inflight);
	/*
	 * From here this thread drains and writes at --nice (19): its bursts
	 * give way to the workload (in the lab, at the same nice as fio they
	 * made fio sleep more often waiting for its completions: docs/cost-
	 * history.md), and it catches up at the nice it started with should
	 * it fall behind (src/drainprio.c).  CMD and the windows' thread keep
	 * theirs.
	 */
	nt_drain_prio_start(&r->dp, cfg->nice);
	r->drain_cap = r->pc.ncpu ? r->pc.n : nt_probes_ringbuf_recs(&r->pr);
	/* scripts wait for this line before starting the workload */
	fprintf(stderr, "ntbpf record: recording %s I/O to %s (%d hooks attached%s%s%s%s)\n", nt_role_name(r->role),
		cfg->output, r->pr.nattached, r->windowed ? window_text(cfg, &r->wr.w, r->err, sizeof(r->err)) : "",
		r->pr.deferred ? "; " : "", nt_probes_deferred_text(&r->pr),
		r->child > 0 ? "" : "; Ctrl-C to stop");
	if (r->child > 0) {
		/* Ctrl-C reaches the command too (same process group); let it end first */
		if (write(r->go_fd, "g", 1) != 1)
			return -1;
		close(r->go_fd);
		r->go_fd = -1;
	}
	if (cfg->duration > 0)
		r->t_end = nt_clock_ns(CLOCK_MONOTONIC) + (uint64_t)(cfg->duration * 1e9);
	r->last_flush = r->st.part_start_ns = nt_clock_ns(CLOCK_MONOTONIC);
	return 0;
}

/* the drain loop's round (recorder.h): the per-CPU rings, the drain's nice, the file's upkeep; 1: stop */
static int rec_round(void *ctx, int n)
{
	struct rec_run *r = ctx;
	const struct nt_config *cfg = r->cfg;
	uint64_t t, most = pcr_drain(&r->pc, &r->st);

	/*
	 * Without per-CPU rings, what the ring buffer gave; with them,
	 * records there beyond the CPUs' wake-up marks say a ring was full.
	 */
	if (n > (r->pc.ncpu ? 2 * r->pc.ncpu : 0))
		most = r->pc.ncpu ? r->pc.n : (uint64_t)n;
	nt_drain_prio_round(&r->dp, most, r->drain_cap);
	t = nt_clock_ns(CLOCK_MONOTONIC);
	/* the header rewritten at the end then says it is attached */
	if (r->pr.deferred && nt_probes_undefer_now(&r->pr, "record")) {
		r->hdr.nhooks = 0;
		nt_probes_to_header(&r->pr, &r->hdr);
	}
	if (t - r->last_flush >= 1000000000ull) {
		rec_flush(&r->st);
		r->last_flush = t;
	}
	if (((cfg->rotate_bytes && nt_writer_bytes(r->st.w) >= cfg->rotate_bytes) ||
	     (cfg->rotate_ns && t - r->st.part_start_ns >= cfg->rotate_ns)) &&
	    rec_rotate(&r->st, &r->of, &r->hdr, &r->pr, cfg->output))
		return 1;
	if (r->child > 0 && !r->child_done && waitpid(r->child, &r->child_status, WNOHANG) == r->child)
		r->child_done = true;
	return r->st.werr || r->child_done || (r->t_end && t >= r->t_end);
}

/* --interval: the lines of the records so far, as live prints them */
static void rec_tick(void *ctx, double secs)
{
	struct rec_run *r = ctx;
	uint64_t s2[ST_NR], lost;

	nt_probes_stats(&r->pr, s2);
	lost = nt_lost_sum(s2);
	nt_interval_tick(r->st.iv, stdout, secs, lost - r->lost_ticked);
	r->lost_ticked = lost;
}

/* a stop signal: the recording stops, or, with a command, the command ends first */
static int rec_on_signal(void *ctx, int sig)
{
	struct rec_run *r = ctx;

	if (r->child <= 0)
		return 1;
	/* the command got Ctrl-C (or the hangup) too; forward a kill and wait for it to end */
	if (sig == SIGTERM || sig == SIGHUP)
		kill(r->child, sig);
	return 0;
}

/* stop new events, drain what the kernel still holds, and count what was lost into the trailer */
static void rec_stop(struct rec_run *r, uint64_t t_last)
{
	const struct nt_config *cfg = r->cfg;
	uint64_t now[ST_NR], all[ST_NR], dropped;	/* this file's; the whole recording's */

	if (r->k0.ok)
		r->k1.ok = !nt_dev_iostat("", &r->devs, &r->k1.done, &r->k1.inflight);
	if (r->win_running) {
		windows_stop(&r->wr);
		r->win_running = false;
	}
	nt_probes_detach(&r->pr);
	ring_buffer__consume(r->rb);
	pcr_drain(&r->pc, &r->st);
	if (r->st.iv)
		rec_tick(r, (nt_clock_ns(CLOCK_MONOTONIC) - t_last) / 1e9);
	dropped = r->pr.inflight_dropped;
	nt_probes_stats(&r->pr, now);
	part_stats(&r->st, now, dropped, r->tr.stats, true);
	if (r->k1.ok) {
		nt_probes_stats(&r->pr, all);
		r->tr.stats[ST_NOT_RUN] = nt_dev_not_run(&r->k0, &r->k1, all);
		if (cfg->verbose)
			fprintf(stderr, "ntbpf record: the devices' own counts: %" PRIu64 " I/Os completed while recording, %"
				PRIu64 " in flight at its stop; the programs saw %" PRIu64 " records, %" PRIu64 " lost, %"
				PRIu64 " in flight at the start, %" PRIu64 " at the stop\n", r->k1.done - r->k0.done,
				r->k1.inflight, all[ST_EMITTED],
				all[ST_LOST_RINGBUF] + all[ST_LOST_MAP_FULL] + all[ST_NO_COMPLETE], all[ST_NO_START],
				all[ST_INFLIGHT_END]);
	}
	if (cfg->verbose)
		fprintf(stderr, "ntbpf record: took the records at nice %d%s, at nice %d %" PRIu64 " time%s it fell behind "
			"(a ring 3/4 full)\n", r->dp.idle, r->dp.ok ? "" : " (could not change it)", r->dp.busy,
			r->dp.catchups, r->dp.catchups == 1 ? "" : "s");
	if (cfg->verbose && r->pc.ncpu)
		fprintf(stderr, "ntbpf record: per-CPU rings of %u records on %d CPUs: %" PRIu64 " records came through "
			"them, %" PRIu64 " through the shared ring buffer\n", r->pc.n, r->pc.ncpu, r->pc.taken,
			r->st.seen - r->pc.taken);
}

/* --bpf-stats and the test knobs: what the recording cost */
static void rec_cost(const struct rec_run *r)
{
	const uint64_t emitted = r->tr.stats[ST_EMITTED];
	uint64_t ns, runs;
	struct rusage ru;

	if (r->cfg->bpf_stats) {
		if (r->cfg->verbose)
			nt_probes_run_time_each(&r->pr, stderr);
		if (!nt_probes_run_time(&r->pr, &ns, &runs))
			fprintf(stderr, "ntbpf record: BPF run time %.0f ns per recorded I/O (%" PRIu64 " ns in %" PRIu64
				" program runs, %.0f ns each)\n", emitted ? (double)ns / emitted : 0.0,
				ns, runs, runs ? (double)ns / runs : 0.0);
		/*
		 * The reader, the encoder and the writing while recording: this
		 * process only, not CMD, and not the start (BTF, loading and
		 * verifying the programs), which is before the workload.  The
		 * total is the scheduler's runtime of the process (exact);
		 * getrusage splits it into user and system by timer ticks only.
		 */
		if (!getrusage(RUSAGE_SELF, &ru) && emitted) {
			double cpu = (nt_clock_ns(CLOCK_PROCESS_CPUTIME_ID) - r->cpu_start) / 1e9;
			double u = tv_s(&ru.ru_utime) - tv_s(&r->ru_start.ru_utime);
			double sy = tv_s(&ru.ru_stime) - tv_s(&r->ru_start.ru_stime);

			fprintf(stderr, "ntbpf record: user-space CPU %.0f ns per recorded I/O while recording (%.3f s of CPU; "
				"by ticks %.3f s user, %.3f s system; %.3f s more to start; %ld context switches, "
				"%ld involuntary)\n", cpu * 1e9 / emitted,
				cpu, u, sy, tv_s(&r->ru_start.ru_utime) + tv_s(&r->ru_start.ru_stime),
				ru.ru_nvcsw - r->ru_start.ru_nvcsw, ru.ru_nivcsw - r->ru_start.ru_nivcsw);
		}
	}
	if (r->st.discard)
		fprintf(stderr, "ntbpf record: test knob: %" PRIu64 " records taken off the ring buffer and dropped\n",
			r->st.discarded);
	else if (r->knob == NT_TEST_COST_NOEMIT)
		fprintf(stderr, "ntbpf record: test knob: %" PRIu64 " records built and ended, none put on the ring buffer\n",
			emitted);
	else if (r->knob == NT_TEST_COST_EMPTY)
		fprintf(stderr, "ntbpf record: test knob: %" PRIu64 " records built (every program run returned at once)\n",
			emitted);
}

/* the trailer, the queue list, the file made whole, and the closing lines: the exit status */
static int rec_finish(struct rec_run *r)
{
	const struct nt_config *cfg = r->cfg;
	struct rec_state *st = &r->st;
	uint64_t wbytes, lost;
	struct stat sb;
	double size;
	int rc;

	r->tr.end_mono_ns = nt_clock_ns(CLOCK_MONOTONIC);
	if (!st->w) {	/* --rotate could not go on: the files of the series before it are whole */
		r->opened = false;
		return 1;
	}
	rec_flush(st);
	wbytes = nt_writer_bytes(st->w);	/* a stream (-, a FIFO) has no size to stat: what went into it */
	if (st->werr) {
		rec_salvage(st, &r->of, &r->tr, st->path);
	} else {
		r->tr.records = st->written;	/* the writer's own count (in a series, this file's) */
		r->tr.lost_user = st->lost_user;
		rc = nt_writer_close(st->w, &r->tr);
		st->w = NULL;
		if (rc) {
			st->werr = rc < 0 ? -rc : EIO;
			fprintf(stderr, "ntbpf record: writing the end of %s failed: %s\n", st->path, strerror(st->werr));
		} else if (!r->of.is_stream) {
			/* with --rotate: the series' last file */
			record_queues(&r->pr, &r->hdr, r->of.f, st->hdr_len);
		}
	}
	lost = nt_lost_sum(r->tr.stats) + r->tr.lost_user;
	size = !fstat(r->of.fd, &sb) && S_ISREG(sb.st_mode) ? (double)sb.st_size : (double)wbytes;
	if (nt_outfile_commit(&r->of, r->err, sizeof(r->err))) {
		fprintf(stderr, "ntbpf record: %s\n", r->err);
		st->werr = st->werr ? st->werr : EIO;
	}
	r->opened = false;
	fprintf(stderr, "ntbpf record: %" PRIu64 " records, %" PRIu64 " lost, %.1f KiB written to %s "
		"(%.1f bytes/record, %s, %d hooks)\n", st->werr ? st->written : r->tr.records, lost, size / 1024,
		st->path, r->tr.records ? size / r->tr.records : 0.0, nt_role_name(r->role), r->pr.nattached);
	if (st->part)
		fprintf(stderr, "ntbpf record: a series of %u files, %s.0000 to %s\n", st->part + 1, cfg->output, st->path);
	if (r->tr.stats[ST_NOT_RUN])
		fprintf(stderr, "ntbpf record: warning: the devices' own counts (/sys/class/block/*/stat) hold %" PRIu64
			" I/Os that no program run of ntbpf's saw: the kernel did not run them (counted as lost)\n",
			r->tr.stats[ST_NOT_RUN]);
	if (r->tr.stats[ST_PROG_MISSES])
		nt_probes_misses_each(&r->pr, stderr, "ntbpf record: warning");
	if (r->windowed)
		fprintf(stderr, "ntbpf record: %" PRIu64 " sampling windows of %u ms (between them %s), one "
			"every %g s; %" PRIu64 " I/Os in flight when a window closed (counted as in flight at "
			"the end)\n", r->wr.nwindows, cfg->sample_window_ms, detach_text[nt_windows_detach(&r->wr.w)],
			r->wr.w.p_ns / 1e9, r->pr.inflight_dropped);
	if (r->windowed && r->wr.reattach_failed)
		fprintf(stderr, "ntbpf record: warning: %" PRIu64 " times a hook did not attach "
			"again at a window: its events are missing from that window\n", r->wr.reattach_failed);
	if (st->werr && r->child > 0 && !r->child_done)
		fprintf(stderr, "ntbpf record: '%s' goes on to its end\n", cfg->cmd_argv[0]);
	return st->werr ? 1 : 0;
}

/* what is still open, the command waited for: the exit status (the command's failure is ours) */
static int rec_close(struct rec_run *r, int rc)
{
	const struct nt_config *cfg = r->cfg;

	if (r->win_running)
		windows_stop(&r->wr);
	if (r->go_fd >= 0)
		close(r->go_fd);	/* child sees EOF and exits 127 without running */
	if (r->child > 0 && !r->child_done) {
		/* a recording that failed to start stops the command; one that stopped early does not */
		if (rc && !r->started)
			kill(r->child, SIGTERM);
		waitpid(r->child, &r->child_status, 0);
		r->child_done = true;
	}
	if (r->st.w)
		nt_writer_close(r->st.w, &r->tr);
	ring_buffer__free(r->rb);
	nt_interval_free(r->st.iv);
	if (r->loaded)
		nt_probes_destroy(&r->pr);
	if (r->opened) {
		/* nothing was recorded: the temporary file goes, an existing FILE stays as it was */
		if (r->started && nt_outfile_commit(&r->of, r->err, sizeof(r->err)))
			fprintf(stderr, "ntbpf record: %s\n", r->err);
		else if (!r->started)
			nt_outfile_abort(&r->of);
	}
	nt_header_free(&r->hdr);
	if (r->child > 0 && (!rc || r->st.werr)) {
		/* like perf record -- cmd: the command's failure is ours */
		if (WIFEXITED(r->child_status) && WEXITSTATUS(r->child_status)) {
			fprintf(stderr, "ntbpf record: '%s' exited with status %d\n", cfg->cmd_argv[0],
				WEXITSTATUS(r->child_status));
			rc = WEXITSTATUS(r->child_status);
		} else if (WIFSIGNALED(r->child_status) && WTERMSIG(r->child_status) != SIGINT &&
			   WTERMSIG(r->child_status) != SIGTERM && WTERMSIG(r->child_status) != SIGHUP) {
			fprintf(stderr, "ntbpf record: '%s' killed by signal %d\n", cfg->cmd_argv[0],
				WTERMSIG(r->child_status));
			rc = 128 + WTERMSIG(r->child_status);
		}
	}
	return rc;
}

int nt_record_run(const struct nt_config *cfg, int argc, char **argv)
{
	struct rec_run *r = calloc(1, sizeof(*r));
	struct nt_loop lp = { .cmd = "record", .round = rec_round, .on_signal = rec_on_signal };
	bool windowed = cfg->sample > 1 && cfg->sample_window_ms;
	int rc = 1, polled;

	if (!r) {
		fprintf(stderr, "ntbpf record: out of memory\n");
		return 1;
	}
	r->cfg = cfg;
	r->of.fd = r->go_fd = r->child = -1;
	r->windowed = windowed;
	r->wr = (struct windows_run){ .pr = &r->pr, .w = nt_windows_with(cfg->sample, cfg->sample_window_ms,
									 cfg->sample_detach_all ? fn_gap_ns() : UINT64_MAX),
				      .verbose = cfg->verbose };
	r->po = (struct nt_probe_opts){ .sample = windowed ? 1 : cfg->sample, .devs = &r->devs,
					.force_kprobe = cfg->force_kprobe, .bpf_stats = cfg->bpf_stats,
					.percpu_rings = true, .verbose = cfg->verbose };
	nt_header_init(&r->hdr, 0);
	r->role = nt_record_preflight(cfg, "record", &r->devs);
	if (r->role < 0) {
		free(r);
		return 1;
	}
	if (rec_open(r, argc, argv) || rec_go(r))
		goto out;
	lp.rb = r->rb;
	lp.ctx = r;
	if (r->st.iv) {
		lp.interval_ns = (uint64_t)(cfg->interval * 1e9);
		lp.tick = rec_tick;
	}
	/* a poll that failed (said) ends the recording: the file is made whole, the exit status 1 */
	polled = nt_recorder_loop(&lp);
	rec_stop(r, lp.t_last);
	rec_cost(r);
	rc = rec_finish(r);
	if (polled && !rc)
		rc = 1;
out:
	rc = rec_close(r, rc);
	free(r);
	return rc;
}
