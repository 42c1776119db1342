// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * probes.c - the BPF object's life: open, set autoload from the hook choices (hooks.c), load with
 * the fallbacks a kernel asks for, attach one hook at a time (a hook that fails is reported and
 * the others go on), deferred hooks, the ring buffer and per-CPU record maps, and the counters
 * of what the programs lost or missed (written into the recording's header).
 */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include "ntbpf.h"
#include "ntbpf.skel.h"
#include "facts.h"
#include "probes.h"

/*
 * What libbpf says about a failed load: the program it names ("prog 'x':
 * failed to load", "prog 'x': relo #3: ...") and the last line of the
 * verifier's log.  Kept whether or not -v forwards everything to stderr.
 */
static struct {
	bool verbose;
	char prog[96];		/* the last program named by a warning about a failure */
	char why[200];		/* the verifier log's last line, or a CO-RE relocation's failure */
	char fail[80];		/* "BPF program load failed: <strerror>" */
	char last[200];		/* libbpf's last warning */
} lb;

/* copy s[0..n) into dst as printable ASCII (the log is the kernel's, but still bytes from outside) */
static void clean_copy(char *dst, size_t len, const char *s, size_t n)
{
	size_t j = 0;

	for (size_t i = 0; i < n && j + 1 < len; i++)
		dst[j++] = (s[i] >= 0x20 && s[i] < 0x7f) ? s[i] : '?';
	dst[j] = 0;
}

static void note_log_tail(const char *msg)
{
	const char *end = strstr(msg, "-- END PROG LOAD LOG --");
	const char *b = strstr(msg, "-- BEGIN PROG LOAD LOG --");

	if (!b || !end)
		return;
	b += strlen("-- BEGIN PROG LOAD LOG --");
	/* the last line that is not the verifier's statistics */
	while (end > b) {
		const char *e = end, *s;

		while (e > b && (e[-1] == '\n' || e[-1] == ' '))
			e--;
		s = e;
		while (s > b && s[-1] != '\n')
			s--;
		if (e > s && strncmp(s, "processed ", 10) && strncmp(s, "verification time", 17) &&
		    strncmp(s, "stack depth", 11)) {
			if (!lb.why[0])
				clean_copy(lb.why, sizeof(lb.why), s, (size_t)(e - s));
			return;
		}
		end = s;
	}
}

static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	char small[512], *buf = small;
	const char *p;
	va_list ap2;
	size_t n;
	int len;

	/* a verifier log can be megabytes: its last line is the cause */
	va_copy(ap2, ap);
	len = vsnprintf(small, sizeof(small), fmt, ap);
	if (len >= (int)sizeof(small) && len < (64 << 20) && (buf = malloc((size_t)len + 1)))
		vsnprintf(buf, (size_t)len + 1, fmt, ap2);
	else
		buf = small;
	va_end(ap2);
	if (lb.verbose)
		fputs(buf, stderr);
	if (level != LIBBPF_WARN)
		goto out;
	note_log_tail(buf);
	n = strlen(buf);
	while (n && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
		buf[--n] = 0;
	if (!strncmp(buf, "libbpf: ", 8))
		memmove(buf, buf + 8, strlen(buf + 8) + 1);
	if (strncmp(buf, "-- BEGIN", 8) && !strstr(buf, "PROG LOAD LOG"))
		clean_copy(lb.last, sizeof(lb.last), buf, strlen(buf));
	if (!strncmp(buf, "prog '", 6) && (p = strchr(buf + 6, '\'')) && (strstr(buf, "fail") || strstr(buf, "relo #"))) {
		clean_copy(lb.prog, sizeof(lb.prog), buf + 6, (size_t)(p - buf - 6));
		const char *f = strstr(buf, "BPF program load failed: "), *r = strstr(buf, "CO-RE relocation ");

		if (f)
			clean_copy(lb.fail, sizeof(lb.fail), f + 25, strlen(f + 25));
		if (!lb.why[0] && r)
			clean_copy(lb.why, sizeof(lb.why), r, strlen(r));
	}
out:
	if (buf != small)
		free(buf);
	return 0;
}

/* the target emits a record when its response is sent; without such a hook, at completion */
static bool tgt_has_resp_sent(const struct nt_probes *p)
{
	for (int i = 0; i < p->nhooks; i++) {
		const char *n = p->choice[i].hook->name;

		if (p->choice[i].attach != NT_AT_NONE &&
		    (!strcmp(n, "nvmet_try_send_response") || !strcmp(n, "kernel_sendpage")))
			return true;
	}
	return false;
}

static int set_autoload(struct bpf_object *obj, const struct nt_hook_choice *c, int n)
{
	struct bpf_program *p;

	bpf_object__for_each_program(p, obj)
		bpf_program__set_autoload(p, false);
	for (int i = 0; i < n; i++) {
		char names[2][96];
		int k = nt_hook_progs(&c[i], names);

		for (int j = 0; j < k; j++) {
			p = bpf_object__find_program_by_name(obj, names[j]);
			if (!p)
				return -1;
			bpf_program__set_autoload(p, true);
		}
	}
	return 0;
}

/*
 * NTBPF_TEST_REFUSE_RC=1, a test knob: the tp_btf_rc_ programs make a read
 * the verifier refuses, as a kernel that has bpf_rdonly_cast but refuses the
 * program would (the loader's fallback to the probe-read programs is what the
 * lab checks with it).  Elsewhere the verifier drops that branch unread.
 */
static bool test_refuse_rc(void)
{
	const char *e = getenv("NTBPF_TEST_REFUSE_RC");

	return e && !strcmp(e, "1");
}

/*
 * A kernel that loads fentry/fexit programs but cannot attach them: arm64
 * before its ftrace had direct calls (Debian 12's 6.1 arm64 kernel answers
 * every attach with ENOTSUPP, 524).  The first fentry/fexit hook is attached
 * and let go again; 0 if it attached, or failed for a reason of its own (the
 * real attach reports that hook), else the errno that says none can attach.
 */
static int fentry_cannot_attach(struct nt_probes *p, char *name, size_t namelen)
{
	for (int i = 0; i < p->nhooks; i++) {
		char names[2][96];
		struct bpf_program *prog;
		struct bpf_link *l;
		int e;

		if (p->choice[i].attach != NT_AT_FENTRY && p->choice[i].attach != NT_AT_FEXIT)
			continue;
		if (nt_hook_progs(&p->choice[i], names) < 1 ||
		    !(prog = bpf_object__find_program_by_name(p->skel->obj, names[0])))
			continue;
		l = bpf_program__attach(prog);
		e = l ? 0 : errno;
		bpf_link__destroy(l);
		snprintf(name, namelen, "%s", names[0]);
		return e == 524 /* ENOTSUPP, the kernel's own */ || e == EOPNOTSUPP ? e : 0;
	}
	return 0;
}

/* one more reason the loader chose a fallback, after those it already has */
static void __attribute__((format(printf, 2, 3))) add_fallback(struct nt_probes *p, const char *fmt, ...)
{
	size_t n = strlen(p->fallback);
	va_list ap;

	if (n && n + 2 < sizeof(p->fallback)) {
		memcpy(p->fallback + n, "; ", 3);
		n += 2;
	}
	va_start(ap, fmt);
	vsnprintf(p->fallback + n, sizeof(p->fallback) - n, fmt, ap);
	va_end(ap);
}

/*
 * NTBPF_TEST_SKIP_END=N, a test knob: the BPF programs that end records
 * return at once on every Nth run, as a kernel that skips a program's run
 * now and then (counting no miss).  Said on stderr once; anything but a
 * whole number from 1 to 1000000 is ignored.
 */
static uint32_t test_skip_end(void)
{
	static bool said;
	const char *e = getenv("NTBPF_TEST_SKIP_END");
	unsigned long n;
	char *end;

	if (!e || !*e || *e == '-' || strlen(e) > 7)
		return 0;
	errno = 0;
	n = strtoul(e, &end, 10);
	if (errno || *end || n < 1 || n > 1000000)
		return 0;
	if (!said)
		fprintf(stderr, "ntbpf: test knob NTBPF_TEST_SKIP_END=%lu: every %lu-th run of a program that "
			"ends a record is skipped\n", n, n);
	said = true;
	return (uint32_t)n;
}

/*
 * NTBPF_TEST_COST, a test knob for the cost model (bench/lab-cost), for
 * record: "empty", every hook attached and every program run returns at once
 * (the paused flag: what the kernel's dispatch into the programs costs);
 * "noemit", the programs build and end every record but put none on the
 * ring buffer (what the programs cost); "discard", user space takes the
 * records off the ring buffer and drops them (src/bpfrec.c: what the ring
 * buffer adds).  Said on stderr once; anything else is ignored.
 */
int nt_test_cost(void)
{
	static const char *what[] = {
		[NT_TEST_COST_EMPTY] = "every program run returns at once",
		[NT_TEST_COST_NOEMIT] = "no record is put on the ring buffer",
		[NT_TEST_COST_DISCARD] = "records are taken off the ring buffer and dropped, not written",
	};
	static bool said;
	const char *e = getenv("NTBPF_TEST_COST");
	int v = !e ? 0 : !strcmp(e, "empty") ? NT_TEST_COST_EMPTY : !strcmp(e, "noemit") ? NT_TEST_COST_NOEMIT :
		!strcmp(e, "discard") ? NT_TEST_COST_DISCARD : 0;

	if (v && !said)
		fprintf(stderr, "ntbpf: test knob NTBPF_TEST_COST=%s: %s\n", e, what[v]);
	said = true;
	return v;
}

/*
 * Records per CPU ring: NT_PCR_MAX_RECS, fewer where many CPUs would take
 * more than 16 MiB in all (a CPU that fills its ring uses the shared ring
 * buffer), at least 256; NTBPF_TEST_PCR_RECS (a power of two, 1 .. 8192)
 * sets it for the tests.  Used on x86 only (nt_probes_load): unused elsewhere.
 */
static __attribute__((unused)) uint32_t pcr_recs_for(int ncpu)
{
	const char *e = getenv("NTBPF_TEST_PCR_RECS");
	uint32_t n = NT_PCR_MAX_RECS;

	if (e && *e && strlen(e) < 6) {
		char *end;
		unsigned long v = strtoul(e, &end, 10);

		if (!*end && v >= 1 && v <= NT_PCR_MAX_RECS && !(v & (v - 1))) {
			fprintf(stderr, "ntbpf: test knob NTBPF_TEST_PCR_RECS=%lu: per-CPU rings of %lu records\n",
				v, v);
			return (uint32_t)v;
		}
	}
	while (n > 256 && (uint64_t)ncpu * n * sizeof(struct ntbpf_rec) > (16u << 20))
		n /= 2;
	return n;
}

int nt_probes_pcr_map(struct nt_probes *p, struct nt_pcr_ctl **ctl, const struct ntbpf_rec **recs)
{
	size_t cl = (size_t)p->pcr_ncpu * sizeof(struct nt_pcr_ctl);
	size_t rl = (size_t)p->pcr_ncpu * p->pcr_recs * sizeof(struct ntbpf_rec);
	void *a, *b;

	if (!p->pcr_recs) {
		errno = ENOENT;
		return -1;
	}
	a = mmap(NULL, cl, PROT_READ | PROT_WRITE, MAP_SHARED, bpf_map__fd(p->skel->maps.pcr_ctl), 0);
	if (a == MAP_FAILED)
		return -1;
	b = mmap(NULL, rl, PROT_READ, MAP_SHARED, bpf_map__fd(p->skel->maps.pcr_recs), 0);
	if (b == MAP_FAILED) {
		int e = errno;

		munmap(a, cl);
		errno = e;
		return -1;
	}
	p->pcr_ctl_map = a;
	p->pcr_recs_map = b;
	*ctl = a;
	*recs = b;
	return 0;
}

/*
 * The BPF side's settings (struct ntbpf_cfg, include/ntbpf.h), every one of them here: the
 * options, what this kernel offers, and the test knobs (cfg.test: 0 outside the tests).
 */
static struct ntbpf_cfg cfg_of(const struct nt_probes *p, const struct nt_probe_opts *o)
{
	struct ntbpf_cfg c = {
		.sample = o->sample ? o->sample : 1,
		.pcr_n = p->pcr_recs,
		.rec_role = p->role,
		.blk_tp_has_q = nt_blk_tp_has_q(&p->facts),
		.tgt_emit_at_complete = p->role == NTBPF_ROLE_TARGET && !tgt_has_resp_sent(p),
		.kernel_agg = o->kernel_agg,
		.kh_by_queue = o->kernel_agg && o->kh_by_queue,
		.filter_dev = o->devs && o->devs->n > 0,
		.test = {
			.skip_end = test_skip_end(),
			.refuse_rc = test_refuse_rc(),
			.no_emit = !o->kernel_agg && nt_test_cost() == NT_TEST_COST_NOEMIT,
		},
	};

	if (o->devs) {
		c.ndevs = o->devs->n < NTBPF_MAX_DEVS ? o->devs->n : NTBPF_MAX_DEVS;
		for (uint32_t i = 0; i < c.ndevs; i++)
			c.dev_list[i] = o->devs->devt[i];
	}
	return c;
}

/* open, set rodata and autoload, load: 0; 1 if the load failed (lb names why); -1 on any other error */
static int try_load(struct nt_probes *p, const struct nt_probe_opts *o, char *err, size_t errlen)
{
	struct ntbpf_bpf *skel = ntbpf_bpf__open();

	if (!skel) {
		snprintf(err, errlen, "cannot open the BPF object: %s", strerror(errno));
		return -1;
	}
	skel->rodata->cfg = cfg_of(p, o);
	if (p->pcr_recs) {
		if (bpf_map__set_max_entries(skel->maps.pcr_ctl, p->pcr_ncpu) ||
		    bpf_map__set_max_entries(skel->maps.pcr_recs, (uint32_t)p->pcr_ncpu * p->pcr_recs)) {
			snprintf(err, errlen, "cannot size the per-CPU rings: %s", strerror(errno));
			ntbpf_bpf__destroy(skel);
			return -1;
		}
	}
	/* only the fentry/fexit pairs use entry_ts; with no task storage they are never chosen */
	if (p->no_task_storage)
		bpf_map__set_autocreate(skel->maps.entry_ts, false);
	if (set_autoload(skel->obj, p->choice, p->nhooks)) {
		snprintf(err, errlen, "the BPF object lacks a program for a hook (build mismatch)");
		ntbpf_bpf__destroy(skel);
		return -1;
	}
	lb.prog[0] = lb.why[0] = lb.fail[0] = lb.last[0] = 0;
	if (ntbpf_bpf__load(skel)) {
		snprintf(err, errlen, "loading the BPF programs failed: %s [%s] (-v shows the verifier log)",
			 strerror(errno), lb.last);
		ntbpf_bpf__destroy(skel);
		return 1;
	}
	p->skel = skel;
	return 0;
}

static const char *load_cause(void)
{
	static char buf[96];
	const char *r = strstr(lb.why, "CO-RE relocation ");

	/* "failed to resolve CO-RE relocation <byte_off> [324] struct nvme_command.common.opcode (...)" */
	if (r && (r = strstr(r, "] "))) {
		char *acc;

		snprintf(buf, sizeof(buf), "CO-RE: %s", r + 2);
		/* the type and field are the cause; the accessor spec "(0:14 @ offset 208)" is not */
		if ((acc = strstr(buf, " (")))
			*acc = 0;
		return buf;
	}
	return lb.why[0] ? lb.why : lb.fail[0] ? lb.fail : lb.last;
}

/* p reset for a load: o's role, the hook count, libbpf's log, the kernel's facts (-1, err set, if unread). */
static int probes_reset(struct nt_probes *p, const struct nt_probe_opts *o, char *err, size_t errlen)
{
	memset(p, 0, sizeof(*p));
	p->stats_fd = -1;
	p->role = o->role;
	p->nhooks = nt_hooks_count();
	if (p->nhooks > NT_MAX_HOOKS)
		p->nhooks = NT_MAX_HOOKS;
	lb.verbose = o->verbose;
	libbpf_set_print(libbpf_print);
	if (o->facts)
		p->facts = *o->facts;
	else if (nt_facts_read(&p->facts, err, errlen))
		return -1;
	return 0;
}

/*
 * The fentry -> fexit entry time lives in task storage for tracing
 * programs (BPF_MAP_TYPE_TASK_STORAGE, v5.11).  Without it (5.10) the map
 * cannot be created and the whole object would be refused: functions are
 * attached as kprobes there, whose entry -> return stash is a hash.
 */
static void check_task_storage(struct nt_probes *p, bool *force_kprobe)
{
	if (libbpf_probe_bpf_map_type(BPF_MAP_TYPE_TASK_STORAGE, NULL) <= 0) {
		p->no_task_storage = true;
		if (!*force_kprobe)
			snprintf(p->fallback, sizeof(p->fallback),
				 "no task storage for tracing programs (kernel before 5.11): kprobes used");
		*force_kprobe = true;
	}
}

/* The per-CPU rings' size, when o asks for them. */
static void size_percpu_rings(struct nt_probes *p, const struct nt_probe_opts *o)
{
	/* x86 only: elsewhere the programs' stores could be seen out of order (pcr_put) */
#if defined(__x86_64__) || defined(__i386__)
	if (o->percpu_rings && !o->kernel_agg) {
		p->pcr_ncpu = libbpf_num_possible_cpus();
		if (p->pcr_ncpu > 0)
			p->pcr_recs = pcr_recs_for(p->pcr_ncpu);
	}
#endif
}

/*
 * After a load that worked without kprobes forced: true (the skeleton
 * destroyed, *force_kprobe set, said in p->fallback) when fentry/fexit
 * cannot attach here.
 */
static bool fentry_fallback(struct nt_probes *p, bool *force_kprobe)
{
	char name[96];
	int e = fentry_cannot_attach(p, name, sizeof(name));

	if (e) {
		ntbpf_bpf__destroy(p->skel);
		p->skel = NULL;
		*force_kprobe = true;
		add_fallback(p, "fentry/fexit cannot attach (%s: %s): kprobes used", name,
			     e == 524 ? "not supported by this kernel" : strerror(e));
		return true;
	}
	return false;
}

/*
 * The kernel refused program lb.prog: turn off what it needs (its hook, or
 * rdonly_cast, or fentry/fexit for all) for the next round; -1 when no one
 * program is at fault (a map, the object): nothing to turn off.
 */
static int turn_off_refused(struct nt_probes *p, const struct nt_probe_opts *o, bool *force_kprobe)
{
	int i = lb.prog[0] ? nt_hook_of_prog(p->choice, p->nhooks, lb.prog) : -1;

	if (i < 0)	/* not one program's fault (a map, the object): nothing to turn off */
		return -1;
	if (p->choice[i].rc) {
		/* a kernel that has bpf_rdonly_cast but refuses it here: the probe-read program then */
		p->facts.rdonly_cast = 0;
		add_fallback(p, "bpf_rdonly_cast refused (%s: %s): probe reads used", lb.prog, load_cause());
		return 0;
	}
	if (!*force_kprobe && (p->choice[i].attach == NT_AT_FENTRY || p->choice[i].attach == NT_AT_FEXIT)) {
		/* some kernels (lockdown, some LSMs) refuse fentry/fexit: kprobes then */
		*force_kprobe = true;
		add_fallback(p, "fentry/fexit refused (%s: %s): kprobes used", lb.prog, load_cause());
		return 0;
	}
	p->choice[i].refused = true;
	snprintf(p->choice[i].detail, sizeof(p->choice[i].detail), "%s: %s", lb.prog, load_cause());
	p->nrefused++;
	if (!o->quiet)
		fprintf(stderr, "ntbpf: warning: hook %s left out: the kernel refused %s (%s)\n",
			p->choice[i].hook->name, lb.prog, load_cause());
	return 0;
}

/* The rounds of decide and load (nt_probes_load says how they end): 0, or -1 with err set. */
static int load_rounds(struct nt_probes *p, const struct nt_probe_opts *o, bool force_kprobe, char *err,
		       size_t errlen)
{
	int rounds;

	for (rounds = 0; rounds <= 2 * p->nhooks + 1; rounds++) {
		int rc;

		nt_hooks_decide(&p->facts, p->choice, p->nhooks, p->role, force_kprobe);
		rc = try_load(p, o, err, errlen);
		if (rc == 0 && !force_kprobe) {
			if (fentry_fallback(p, &force_kprobe))
				continue;
		}
		if (rc <= 0)
			break;
		if (turn_off_refused(p, o, &force_kprobe))
			return -1;
	}
	if (!p->skel) {
		snprintf(err, errlen, "loading the BPF programs failed after %d rounds", rounds);
		return -1;
	}
	return 0;
}

/*
 * block_rq_issue stamps blk_issue, which no stage of an NVMe I/O ends
 * at while rq->start_time_ns gives blk_start (docs/stages.md: it stands
 * in where that stamp is missing); nvme_setup_cmd starts the record.
 * Its two program runs per I/O (and one per I/O of every other block
 * device on the host) are then saved until an I/O comes unstamped.
 *
 * A hook no stage needs until the kernel shows otherwise, loaded but not
 * attached (nt_probes_undefer): the initiator's block_rq_issue on NVMe
 * namespaces (nvme_setup_cmd starts the record), the target's
 * nvmet_try_send_data (nvmet_try_send_response ends the command unless
 * a queue runs without SQ head updates).
 */
static void defer_unneeded_hook(struct nt_probes *p, const struct nt_probe_opts *o)
{
	if (p->skel->bss && ((o->defer_blk_issue && p->role == NTBPF_ROLE_INITIATOR) ||
			     (o->defer_data_send && p->role == NTBPF_ROLE_TARGET))) {
		bool init = p->role == NTBPF_ROLE_INITIATOR;
		const char *hook = init ? "block_rq_issue" : "nvmet_try_send_data";
		const char *needed = init ? "nvme_setup_cmd" : "nvmet_try_send_response";
		int iss = -1, setup = -1;

		for (int i = 0; i < p->nhooks; i++) {
			if (!strcmp(p->choice[i].hook->name, hook))
				iss = i;
			if (!strcmp(p->choice[i].hook->name, needed))
				setup = i;
		}
		if (iss >= 0 && setup >= 0 && p->choice[iss].attach != NT_AT_NONE &&
		    p->choice[setup].attach != NT_AT_NONE) {
			p->deferred = iss + 1;
			p->defer_for = setup;
			if (init)
				p->skel->bss->issue_deferred = 1;
			else
				p->skel->bss->data_send_deferred = 1;
		}
	}
}

/* --bpf-stats: the kernel's run-time statistics on while p is loaded (a warning if they cannot be) */
static void enable_bpf_stats(struct nt_probes *p, const struct nt_probe_opts *o)
{
	if (o->bpf_stats) {
		p->stats_fd = bpf_enable_stats(BPF_STATS_RUN_TIME);
		if (p->stats_fd < 0)
			fprintf(stderr, "ntbpf: warning: cannot enable BPF run-time statistics: %s\n", strerror(errno));
	}
}

/*
 * One loop: decide from the facts, load; when the kernel refuses a program,
 * turn its hook off (or, for a refused fentry/fexit, every function over to
 * kprobes, once; for a refused tp_btf_rc_ program, the probe-read tp_btf
 * one), decide again (stand-ins may now be needed) and retry.
 * Each round turns at least one more thing off, so it ends.
 */
int nt_probes_load(struct nt_probes *p, const struct nt_probe_opts *o, char *err, size_t errlen)
{
	bool force_kprobe = o->force_kprobe;

	if (probes_reset(p, o, err, errlen))
		return -1;
	check_task_storage(p, &force_kprobe);
	size_percpu_rings(p, o);
	if (load_rounds(p, o, force_kprobe, err, errlen))
		return -1;
	defer_unneeded_hook(p, o);
	enable_bpf_stats(p, o);
	return 0;
}

/* attach hook i's programs: 1 attached, 0 nothing to attach, -1 failed (warned, attach_err set) */
static int attach_one(struct nt_probes *p, int i)
{
	char names[2][96];
	int k = nt_hook_progs(&p->choice[i], names);

	for (int j = 0; j < k; j++) {
		struct bpf_program *prog = bpf_object__find_program_by_name(p->skel->obj, names[j]);

		p->links[i][j] = prog ? bpf_program__attach(prog) : NULL;
		if (!p->links[i][j]) {
			p->attach_err[i] = prog ? -errno : -ENOENT;
			break;
		}
	}
	if (!k)
		return 0;
	if (!p->attach_err[i]) {
		p->nattached++;
		return 1;
	}
	for (int j = 0; j < 2; j++)
		bpf_link__destroy(p->links[i][j]), p->links[i][j] = NULL;
	fprintf(stderr, "ntbpf: warning: %s not attached: %s\n", p->choice[i].hook->name, strerror(-p->attach_err[i]));
	return -1;
}

int nt_probes_attach(struct nt_probes *p, char *err, size_t errlen)
{
	if (nt_test_cost() == NT_TEST_COST_EMPTY)
		p->skel->bss->paused = 1;
	for (int i = 0; i < p->nhooks; i++)
		if (p->deferred != i + 1)
			attach_one(p, i);
	/* nvme_setup_cmd, which starts an NVMe I/O's record in its stead, did not attach: no wait then */
	if (p->deferred && !p->links[p->defer_for][0]) {
		uint64_t n;

		nt_probes_undefer(p, &n, err, errlen);	/* a failure is warned about; others may have attached */
	}
	if (!p->nattached) {
		snprintf(err, errlen, "no hook could be attached (see ntbpf probe)");
		return -1;
	}
	return 0;
}

uint64_t nt_probes_deferred_need(const struct nt_probes *p)
{
	if (!p->deferred || !p->skel->bss)
		return 0;
	return p->role == NTBPF_ROLE_INITIATOR ? p->skel->bss->no_start_stamp : p->skel->bss->sqhd_off_seen;
}

int nt_probes_undefer(struct nt_probes *p, uint64_t *unstamped, char *err, size_t errlen)
{
	int i = p->deferred - 1;

	if (i < 0)
		return 0;
	p->deferred = 0;
	/* attached first: an I/O between the two is stamped (and taken off the count), or counted */
	if (attach_one(p, i) < 0) {
		snprintf(err, errlen, "%s could not be attached: %s", p->choice[i].hook->name,
			 strerror(-p->attach_err[i]));
		return -1;
	}
	if (p->role == NTBPF_ROLE_INITIATOR) {
		p->skel->bss->issue_deferred = 0;
		*unstamped = p->skel->bss->no_start_stamp;
	} else {
		p->skel->bss->data_send_deferred = 0;
		*unstamped = p->skel->bss->sqhd_early;
	}
	return 0;
}

const char *nt_probes_deferred_text(const struct nt_probes *p)
{
	if (!p->deferred)
		return "";
	return p->role == NTBPF_ROLE_INITIATOR ? "block_rq_issue only if an I/O lacks its start stamp: NVMe namespaces only" :
	       "nvmet_try_send_data only once a queue runs without SQ head updates";
}

bool nt_probes_undefer_now(struct nt_probes *p, const char *cmd)
{
	uint64_t n = nt_probes_deferred_need(p);
	bool init = p->role == NTBPF_ROLE_INITIATOR;
	char err[160];

	if (!n)
		return false;
	if (nt_probes_undefer(p, &n, err, sizeof(err)))
		fprintf(stderr, "ntbpf %s: warning: %s: %s\n", cmd, err,
			init ? "I/Os without a start stamp have no blk_submission or end_to_end" :
			"I/Os on queues without SQ head updates are emitted at subsys_done (no resp_sent, no "
			"nvmet_tcp_completion)");
	else if (init)
		fprintf(stderr, "ntbpf %s: %" PRIu64 " I/O(s) came without a start stamp (queue/iostats 0?) and "
			"have no blk_submission or end_to_end: block_rq_issue attached, blk_issue stands in for "
			"blk_start from now on\n", cmd, n);
	else
		fprintf(stderr, "ntbpf %s: a queue runs without SQ head updates (connected with --disable-sqflow?): "
			"nvmet_try_send_data attached; %" PRIu64 " I/O(s) of such queues before it were emitted at "
			"subsys_done (no resp_sent)\n", cmd, n);
	return true;
}

void nt_probes_to_header(const struct nt_probes *p, struct nt_header *h)
{
	for (int i = 0; i < p->nhooks; i++) {
		const struct nt_hook_choice *c = &p->choice[i];
		const char *instead = c->hook->instead ? c->hook->instead : "its event is not stamped";
		struct nt_hook_info *hi;

		if (!(c->hook->roles & (1u << p->role)))
			continue;
		/* a stand-in that was not needed is no news */
		if (c->why == NT_WHY_NOT_NEEDED)
			continue;
		hi = nt_header_add_hook(h);
		if (!hi)
			return;
		nt_hook_label(c->hook, hi->name, sizeof(hi->name));
		snprintf(hi->attach, sizeof(hi->attach), "%s", c->attach ? nt_attach_name(c->attach) : "");
		if (c->attach == NT_AT_NONE) {
			nt_why_text(c, hi->status, sizeof(hi->status));
			snprintf(hi->boundary, sizeof(hi->boundary), "%s", instead);
		} else if (p->deferred == i + 1 && p->role == NTBPF_ROLE_TARGET) {
			snprintf(hi->status, sizeof(hi->status), "deferred: no queue without SQ head updates");
			snprintf(hi->boundary, sizeof(hi->boundary), "nvmet_try_send_response gives resp_sent "
				 "(attached should a queue run with sqhd_disabled)");
		} else if (p->deferred == i + 1) {
			snprintf(hi->status, sizeof(hi->status), "deferred: NVMe namespaces only");
			snprintf(hi->boundary, sizeof(hi->boundary), "no stage ends at blk_issue: records start at "
				 "nvme_setup_cmd, blk_start is rq->start_time_ns (attached should an I/O lack it)");
		} else if (p->attach_err[i]) {
			snprintf(hi->status, sizeof(hi->status), "attach failed: %s", strerror(-p->attach_err[i]));
			snprintf(hi->boundary, sizeof(hi->boundary), "%s", instead);
		} else {
			snprintf(hi->status, sizeof(hi->status), "attached");
			snprintf(hi->boundary, sizeof(hi->boundary), "%s%s%s", c->hook->boundary,
				 c->hook->stands_in_for ? "; stands in for " : "",
				 c->hook->stands_in_for ? c->hook->stands_in_for : "");
		}
	}
}

int nt_probes_ringbuf_fd(const struct nt_probes *p)
{
	return bpf_map__fd(p->skel->maps.events);
}

uint64_t nt_probes_ringbuf_recs(const struct nt_probes *p)
{
	/* each record behind the ring buffer's 8-byte header */
	return bpf_map__max_entries(p->skel->maps.events) / (sizeof(struct ntbpf_rec) + 8);
}

int nt_probes_khist_fd(const struct nt_probes *p)
{
	return bpf_map__fd(p->skel->maps.khist);
}

int nt_probes_tnqn(void *ctx, uint16_t cntlid, char *nqn, size_t len)
{
	const struct nt_probes *p = ctx;
	struct nt_tnqn t;
	__u16 key = cntlid;

	if (!p || !p->skel || bpf_map__lookup_elem(p->skel->maps.tnqns, &key, sizeof(key), &t, sizeof(t), 0))
		return -1;
	/* the kernel's string: cut at the field's end */
	snprintf(nqn, len, "%.*s", (int)sizeof(t.hostnqn), t.hostnqn);
	return nqn[0] ? 0 : -1;
}

/*
 * A tracing program is not re-entered on a CPU where it is already running
 * (e.g. a completion from an interrupt while the same program runs in task
 * context): the kernel skips the run and only counts it.
 */
static uint64_t prog_misses(struct bpf_object *obj)
{
	struct bpf_program *prog;
	uint64_t n = 0;

	bpf_object__for_each_program(prog, obj) {
		struct bpf_prog_info info = { 0 };
		__u32 len = sizeof(info);
		int fd = bpf_program__fd(prog);

		if (fd >= 0 && !bpf_obj_get_info_by_fd(fd, &info, &len))
			n += info.recursion_misses;
	}
	return n;
}

void nt_probes_detach(struct nt_probes *p)
{
	for (int i = 0; i < p->nhooks; i++)
		for (int j = 0; j < 2; j++)
			bpf_link__destroy(p->links[i][j]), p->links[i][j] = NULL;
}

static void nt_probes_forget(struct nt_probes *p, uint64_t mono_now);

/*
 * record --sample-by time.  Disarming pauses every program (they return at
 * once).  Where windows are far apart (sampling.h: NT_DETACH_TP), it also
 * detaches the tracepoint hooks, whose dispatch every I/O would otherwise
 * still pay between windows; that waits for an RCU grace period (up to
 * hundreds of ms on a busy host), which only the windows' thread waits for.
 * Where they are seconds apart (NT_DETACH_ALL), the function hooks go too:
 * detaching and attaching one is an ftrace update of every traced function,
 * millions of instructions per hook, which pays only there.  Arming (ahead
 * of the window: the BPF side creates records only inside the windows
 * nt_probes_set_windows gave it) attaches them again and lets the programs
 * run; disarming clears what the window left (nt_probes_forget).
 */
void nt_probes_set_windows(struct nt_probes *p, uint64_t period_ns, uint64_t len_ns, int64_t phase_ns)
{
	if (!p->skel->bss)
		return;
	p->skel->bss->win_phase = phase_ns;
	p->skel->bss->win_w = len_ns;
	p->skel->bss->win_p = period_ns;
}

static bool is_tracepoint(const struct nt_hook_choice *c)
{
	return c->attach == NT_AT_TP_BTF || c->attach == NT_AT_RAW_TP;
}

/*
 * attach (or detach) the hooks that attached at the start: the tracepoint
 * hooks, or (all) every hook; how many failed.  Where all go, the
 * tracepoints (which create records, and arm the programs themselves when
 * their event falls in a window: see the BPF side's stays_paused) are
 * detached first and attached last, so that no record is created while the
 * function hooks that add its later events are away.  (Detaching a function
 * hook waits for RCU-tasks grace periods: seconds on a busy lab guest.)
 */
static int hooks_attach(struct nt_probes *p, bool attach, bool all)
{
	int failed = 0;

	/* tracepoints (tp 1) only, or: attaching, functions then tracepoints; detaching, the reverse */
	for (int pass = 0; pass < (all ? 2 : 1); pass++)
		for (int i = 0; i < p->nhooks; i++) {
			bool tp = !all || (attach ? pass == 1 : pass == 0);
			char names[2][96];
			int k = p->attach_err[i] || p->deferred == i + 1 || is_tracepoint(&p->choice[i]) != tp ? 0
										 : nt_hook_progs(&p->choice[i], names);

			for (int j = 0; j < k; j++) {
				struct bpf_program *prog;

				if (!attach) {
					bpf_link__destroy(p->links[i][j]), p->links[i][j] = NULL;
					continue;
				}
				if (p->links[i][j])
					continue;
				prog = bpf_object__find_program_by_name(p->skel->obj, names[j]);
				p->links[i][j] = prog ? bpf_program__attach(prog) : NULL;
				failed += !p->links[i][j];
			}
		}
	p->detached = attach ? NT_DETACH_NONE : all ? NT_DETACH_ALL : NT_DETACH_TP;
	return failed;
}

int nt_probes_window(struct nt_probes *p, bool arm, uint64_t mono_now, enum nt_detach detach)
{
	int failed = 0;

	if (!p->skel->bss)
		return 0;
	if (arm) {
		if (p->detached != NT_DETACH_NONE) {
			p->skel->bss->arming = 1;	/* no run arms the programs before all are back */
			failed = hooks_attach(p, true, p->detached == NT_DETACH_ALL);
			p->skel->bss->arming = 0;
		}
		p->skel->bss->paused = 0;
		return failed;
	}
	/*
	 * Disarmed, what the window left is cleared at once (not when the
	 * next one is armed: a record-creating hook may arm the programs
	 * itself, inside the window, before user space does; see the BPF
	 * side's stays_paused).
	 */
	p->skel->bss->paused = 1;
	nt_probes_forget(p, mono_now);
	if (detach != NT_DETACH_NONE)
		hooks_attach(p, false, detach == NT_DETACH_ALL);
	return 0;
}

/*
 * Between two sampling windows: the records still in flight when the hooks
 * were detached will never complete (counted, with those at the stop, as in
 * flight at the end), and the queues' noted arrivals are of the past.  Clear
 * both (and the queues' in-flight counts, the depth), and date the new window for the entry-time checks (win_t0).
 */
static void nt_probes_forget(struct nt_probes *p, uint64_t mono_now)
{
	struct ntbpf_bpf__bss *b = p->skel->bss;
	__u64 key = 0, next;

	if (!b)
		return;
	for (unsigned int i = 0; i < sizeof(b->slots) / sizeof(b->slots[0]); i++)
		if (b->slots[i].key) {
			p->inflight_dropped++;
			b->slots[i].key = 0;
		}
	while (!bpf_map__get_next_key(p->skel->maps.inflight, NULL, &next, sizeof(next)) &&
	       !bpf_map__delete_elem(p->skel->maps.inflight, &next, sizeof(next), 0))
		p->inflight_dropped++;
	b->nover = 0;
	for (unsigned int i = 0; i < sizeof(b->qslots) / sizeof(b->qslots[0]); i++)
		if (b->qslots[i].key) {
			memset(b->qslots[i].s.a, 0, sizeof(b->qslots[i].s.a));
			b->qslots[i].s.chunk_end = 0;
			b->qslots[i].s.pickup = 0;
			b->qslots[i].s.inflight = 0;	/* the records it counted are gone */
		}
	while (!bpf_map__get_next_key(p->skel->maps.queues, key ? &key : NULL, &next, sizeof(next))) {
		struct qstate q;

		key = next;
		if (bpf_map__lookup_elem(p->skel->maps.queues, &key, sizeof(key), &q, sizeof(q), 0))
			continue;
		memset(q.a, 0, sizeof(q.a));
		q.chunk_end = 0;
		q.pickup = 0;
		q.inflight = 0;
		bpf_map__update_elem(p->skel->maps.queues, &key, sizeof(key), &q, sizeof(q), BPF_EXIST);
	}
	b->win_t0 = mono_now;
}

/* one queue of the BPF side's table into the header: under its controller (added if the header lacks it) */
static int queue_to_header(int role, const struct qstate *q, struct nt_header *h, const struct bpf_map *tnqns)
{
	struct nt_ctrl_info *c = NULL;
	struct nt_queue_info *qi;
	int af = q->family == 10 ? AF_INET6 : AF_INET;

	if (q->family != 2 && q->family != 10)
		return 0;	/* no connection seen (a queue only data_ready met) */
	for (uint32_t i = 0; i < h->nctrls && !c; i++)
		if (role == NTBPF_ROLE_INITIATOR ? h->ctrls[i].instance == q->ctrl
						 : h->ctrls[i].instance < 0 && h->ctrls[i].cntlid == q->ctrl)
			c = &h->ctrls[i];
	if (!c) {
		c = nt_header_add_ctrl(h);
		if (!c)
			return -1;
		c->instance = role == NTBPF_ROLE_INITIATOR ? q->ctrl : -1;
		c->cntlid = role == NTBPF_ROLE_INITIATOR ? 0 : q->ctrl;
		snprintf(c->transport, sizeof(c->transport), "tcp");
	}
	if (role == NTBPF_ROLE_TARGET && !c->hostnqn[0] && tnqns) {
		struct nt_tnqn t;
		__u16 cntlid = q->ctrl;

		/* the kernel's strings: cut at the field's end here, escaped wherever printed */
		if (!bpf_map__lookup_elem(tnqns, &cntlid, sizeof(cntlid), &t, sizeof(t), 0)) {
			snprintf(c->hostnqn, sizeof(c->hostnqn), "%.*s", (int)sizeof(t.hostnqn), t.hostnqn);
			snprintf(c->subsysnqn, sizeof(c->subsysnqn), "%.*s", (int)sizeof(t.subsysnqn), t.subsysnqn);
		}
	}
	qi = nt_ctrl_add_queue(c);
	if (!qi)
		return -1;
	qi->qid = q->qid;
	qi->io_cpu = q->io_cpu;
	qi->rx_queue = q->rx_queue;
	qi->tx_queue = q->tx_queue;
	qi->sport = q->sport;
	qi->dport = q->dport;
	if (!inet_ntop(af, q->saddr, qi->saddr, sizeof(qi->saddr)))
		qi->saddr[0] = 0;
	if (!inet_ntop(af, q->daddr, qi->daddr, sizeof(qi->daddr)))
		qi->daddr[0] = 0;
	return 0;
}

static int cmp_queue(const void *a, const void *b)
{
	const struct nt_queue_info *x = a, *y = b;

	return (int)x->qid - (int)y->qid;
}

void nt_probes_cntlid_changes(const struct nt_probes *p, struct nt_header *h)
{
	const struct ntbpf_bpf__bss *b = p->skel ? p->skel->bss : NULL;

	for (unsigned int i = 0; b && i < NT_CNOTE_CTRLS; i++)
		for (unsigned int k = 0; k < b->cnotes[i].n && k < NT_CNOTES; k++)
			nt_header_add_cntlid_change(h, (int32_t)i, b->cnotes[i].cntlid[k], b->cnotes[i].ts[k]);
}

int nt_probes_queues(const struct nt_probes *p, struct nt_header *h)
{
	struct ntbpf_bpf__bss *b = p->skel->bss;
	__u64 key = 0, next;
	int n = 0;

	for (unsigned int i = 0; b && i < sizeof(b->qslots) / sizeof(b->qslots[0]); i++)
		if (b->qslots[i].key && b->qslots[i].s.family) {
			if (queue_to_header(p->role, &b->qslots[i].s, h, p->skel->maps.tnqns))
				return -1;
			n++;
		}
	while (!bpf_map__get_next_key(p->skel->maps.queues, key ? &key : NULL, &next, sizeof(next))) {
		struct qstate q;

		key = next;
		if (bpf_map__lookup_elem(p->skel->maps.queues, &key, sizeof(key), &q, sizeof(q), 0) || !q.family)
			continue;
		if (queue_to_header(p->role, &q, h, p->skel->maps.tnqns))
			return -1;
		n++;
	}
	for (uint32_t i = 0; i < h->nctrls; i++)
		if (h->ctrls[i].nqueues > 1)
			qsort(h->ctrls[i].queues, h->ctrls[i].nqueues, sizeof(*h->ctrls[i].queues), cmp_queue);
	return n;
}

void nt_probes_stats(const struct nt_probes *p, uint64_t stats[ST_NR])
{
	int ncpu = libbpf_num_possible_cpus();
	__u64 *vals = calloc(ncpu > 0 ? ncpu : 1, sizeof(__u64));
	__u64 key = 0, next;
	uint64_t inflight = 0;

	memset(stats, 0, sizeof(uint64_t) * ST_NR);
	for (__u32 k = 0; vals && k < ST_NR; k++) {
		if (bpf_map__lookup_elem(p->skel->maps.stats, &k, sizeof(k), vals, ncpu * sizeof(__u64), 0))
			continue;
		for (int c = 0; c < ncpu; c++)
			stats[k] += vals[c];
	}
	free(vals);
	/* record's per-CPU rings count what they took by their heads, not in the stats map */
	for (int c = 0; p->pcr_ctl_map && c < p->pcr_ncpu; c++)
		stats[ST_EMITTED] += __atomic_load_n(&((const struct nt_pcr_ctl *)p->pcr_ctl_map)[c].head,
						     __ATOMIC_RELAXED);
	/* the slots are the object's .bss, mapped into this process */
	for (unsigned int i = 0; p->skel->bss && i < sizeof(p->skel->bss->slots) / sizeof(p->skel->bss->slots[0]); i++)
		inflight += p->skel->bss->slots[i].key != 0;
	while (!bpf_map__get_next_key(p->skel->maps.inflight, key ? &key : NULL, &next, sizeof(next))) {
		key = next;
		inflight++;
	}
	stats[ST_INFLIGHT_END] = inflight + p->inflight_dropped;
	stats[ST_PROG_MISSES] = prog_misses(p->skel->obj);
}

int nt_probes_run_time(const struct nt_probes *p, uint64_t *ns, uint64_t *runs)
{
	struct bpf_program *prog;

	*ns = *runs = 0;
	if (p->stats_fd < 0)
		return -1;
	bpf_object__for_each_program(prog, p->skel->obj) {
		struct bpf_prog_info info = { 0 };
		__u32 len = sizeof(info);
		int fd = bpf_program__fd(prog);

		if (fd >= 0 && !bpf_obj_get_info_by_fd(fd, &info, &len)) {
			*ns += info.run_time_ns;
			*runs += info.run_cnt;
		}
	}
	return 0;
}

void nt_probes_run_time_each(const struct nt_probes *p, FILE *out)
{
	struct bpf_program *prog;

	if (p->stats_fd < 0)
		return;
	bpf_object__for_each_program(prog, p->skel->obj) {
		struct bpf_prog_info info = { 0 };
		__u32 len = sizeof(info);
		int fd = bpf_program__fd(prog);

		if (fd >= 0 && !bpf_obj_get_info_by_fd(fd, &info, &len) && info.run_cnt)
			fprintf(out, "ntbpf: BPF %-40s %10llu runs %8.0f ns each (%u instructions)\n",
				bpf_program__name(prog), (unsigned long long)info.run_cnt,
				(double)info.run_time_ns / info.run_cnt, info.xlated_prog_len / 8);
	}
}

/*
 * Which programs the kernel skipped, by name, on one line (record's and
 * live's end): the count alone does not say which events are missing.
 */
void nt_probes_misses_each(const struct nt_probes *p, FILE *out, const char *who)
{
	struct bpf_program *prog;
	uint64_t total = 0;
	char list[512] = "";
	size_t off = 0;

	if (!p->skel)
		return;
	bpf_object__for_each_program(prog, p->skel->obj) {
		struct bpf_prog_info info = { 0 };
		__u32 len = sizeof(info);
		int fd = bpf_program__fd(prog), n;

		if (fd < 0 || bpf_obj_get_info_by_fd(fd, &info, &len) || !info.recursion_misses)
			continue;
		total += info.recursion_misses;
		n = snprintf(list + off, sizeof(list) - off, "%s%s %llu", off ? ", " : "",
			     bpf_program__name(prog), (unsigned long long)info.recursion_misses);
		if (n > 0 && (size_t)n < sizeof(list) - off)
			off += (size_t)n;
	}
	if (total)
		fprintf(out, "%s: %" PRIu64 " program runs skipped by the kernel (the program was already "
			"running on that CPU): %s\n", who, total, list);
}

void nt_probes_destroy(struct nt_probes *p)
{
	if (p->stats_fd >= 0)
		close(p->stats_fd);
	p->stats_fd = -1;
	nt_probes_detach(p);
	if (p->pcr_ctl_map)
		munmap(p->pcr_ctl_map, (size_t)p->pcr_ncpu * sizeof(struct nt_pcr_ctl));
	if (p->pcr_recs_map)
		munmap(p->pcr_recs_map, (size_t)p->pcr_ncpu * p->pcr_recs * sizeof(struct ntbpf_rec));
	p->pcr_ctl_map = p->pcr_recs_map = NULL;
	ntbpf_bpf__destroy(p->skel);
	p->skel = NULL;
}
