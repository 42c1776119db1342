// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * bpfrec.c - "ntbpf record": preflight checks, skeleton lifecycle
 * (open -> rodata / autoload -> load -> attach), ring buffer to record file,
 * and a clean stop on Ctrl-C, SIGTERM, --duration or the command's exit.
 */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <linux/capability.h>
#include <sys/syscall.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "bpfrec.h"
#include "hooks.h"
#include "ntbpf.skel.h"
#include "recfile.h"
#include "sysinfo.h"

static volatile sig_atomic_t stop_signal;

static void on_signal(int sig)
{
	stop_signal = sig;
}

static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	return vfprintf(stderr, fmt, ap);
}

static int libbpf_quiet(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	return 0;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

/* root, or CAP_BPF + CAP_PERFMON (5.8+), or CAP_SYS_ADMIN */
static bool privileged(void)
{
	struct __user_cap_header_struct hdr = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct data[2];

	if (geteuid() == 0)
		return true;
	if (syscall(SYS_capget, &hdr, data))
		return false;
#define HAS(c) (data[(c) / 32].effective & (1u << ((c) % 32)))
	return HAS(21 /* CAP_SYS_ADMIN */) || (HAS(39 /* CAP_BPF */) && HAS(38 /* CAP_PERFMON */));
#undef HAS
}

static int resolve_role(const struct nt_config *cfg, char *err, size_t errlen)
{
	bool host, tgt;

	if (cfg->role)
		return cfg->role;
	host = nt_sys_module_loaded("", "nvme_tcp");
	tgt = nt_sys_module_loaded("", "nvmet_tcp");
	if (host && tgt) {
		snprintf(err, errlen, "both nvme_tcp and nvmet_tcp are loaded: say --role initiator or --role target");
		return -1;
	}
	return tgt ? NTBPF_ROLE_TARGET : NTBPF_ROLE_INITIATOR;
}

struct rec_state {
	struct nt_writer *w;
	uint64_t lost_user;
	int werr;
};

static int on_event(void *ctx, void *data, size_t size)
{
	struct rec_state *st = ctx;

	if (size < sizeof(struct ntbpf_rec) || nt_writer_add(st->w, data)) {
		st->lost_user++;
		if (!st->werr)
			st->werr = errno ? errno : EIO;
	}
	return 0;
}

/*
 * A tracing program is not re-entered on a CPU where it is already running
 * (e.g. block_rq_complete from an interrupt while the same program runs in
 * task context): the kernel skips the run and only counts it.
 */
static uint64_t prog_misses(struct bpf_object *obj)
{
	struct bpf_program *p;
	uint64_t n = 0;

	bpf_object__for_each_program(p, obj) {
		struct bpf_prog_info info = { 0 };
		__u32 len = sizeof(info);
		int fd = bpf_program__fd(p);

		if (fd >= 0 && !bpf_obj_get_info_by_fd(fd, &info, &len))
			n += info.recursion_misses;
	}
	return n;
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
		execvp(argv[0], argv);
		fprintf(stderr, "ntbpf record: cannot run '%s': %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	close(p[0]);
	*go_fd = p[1];
	return pid;
}

static void fill_hooks(struct nt_header *h, const struct nt_hook_choice *c, int n,
		       struct ntbpf_bpf *skel, int role, const int *attached_err)
{
	for (int i = 0; i < n; i++) {
		struct nt_hook_info *hi;

		if (!(c[i].hook->roles & (1u << role)))
			continue;
		hi = nt_header_add_hook(h);
		if (!hi)
			return;
		snprintf(hi->name, sizeof(hi->name), "%s", c[i].hook->name);
		snprintf(hi->attach, sizeof(hi->attach), "%s", c[i].attach ? nt_attach_name(c[i].attach) : "");
		snprintf(hi->boundary, sizeof(hi->boundary), "%s", c[i].hook->boundary);
		if (c[i].attach == NT_AT_NONE)
			snprintf(hi->status, sizeof(hi->status), "%s", c[i].why);
		else if (attached_err[i])
			snprintf(hi->status, sizeof(hi->status), "attach failed: %s", strerror(-attached_err[i]));
		else
			snprintf(hi->status, sizeof(hi->status), "attached");
	}
}

int nt_record_run(const struct nt_config *cfg, int argc, char **argv)
{
	char err[256];
	struct nt_devset devs = { 0 };
	struct nt_header hdr;
	struct nt_trailer tr = { 0 };
	struct rec_state st = { 0 };
	struct ntbpf_bpf *skel = NULL;
	struct ring_buffer *rb = NULL;
	struct bpf_link *links[16] = { 0 };
	int attach_err[16] = { 0 };
	struct nt_hook_choice choice[16];
	int nhooks = nt_hooks_count(), role, rc = 1, go_fd = -1, child_status = 0, nattached = 0;
	pid_t child = -1;
	FILE *out = NULL;
	uint64_t t_end = 0, last_flush;
	bool child_done = false;

	nt_header_init(&hdr, 0);
	if (!privileged()) {
		fprintf(stderr, "ntbpf record: needs root (or CAP_BPF and CAP_PERFMON)\n");
		return 1;
	}
	if (access("/sys/kernel/btf/vmlinux", R_OK)) {
		fprintf(stderr, "ntbpf record: this kernel has no BTF (/sys/kernel/btf/vmlinux missing; "
			"CONFIG_DEBUG_INFO_BTF=y is needed)\n");
		return 1;
	}
	role = resolve_role(cfg, err, sizeof(err));
	if (role < 0) {
		fprintf(stderr, "ntbpf record: %s\n", err);
		return 1;
	}
	for (int i = 0; i < cfg->ndevs; i++)
		if (nt_dev_resolve("", cfg->devs[i], &devs, err, sizeof(err))) {
			fprintf(stderr, "ntbpf record: %s\n", err);
			return 1;
		}

	libbpf_set_print(cfg->verbose ? libbpf_print : libbpf_quiet);
	nt_hooks_choose(choice, nhooks);
	skel = ntbpf_bpf__open();
	if (!skel) {
		fprintf(stderr, "ntbpf record: cannot open the BPF object: %s\n", strerror(errno));
		goto out;
	}
	skel->rodata->filter_dev = cfg->ndevs > 0;
	skel->rodata->sample = cfg->sample;
	skel->rodata->blk_tp_has_q = nt_blk_tp_has_q();
	if (nt_hooks_autoload(skel->obj, choice, nhooks)) {
		fprintf(stderr, "ntbpf record: BPF object lacks a program for a hook (build mismatch)\n");
		goto out;
	}
	if (ntbpf_bpf__load(skel)) {
		fprintf(stderr, "ntbpf record: loading the BPF programs failed: %s (run with -v for the verifier log)\n",
			strerror(errno));
		goto out;
	}
	for (int i = 0; i < devs.n; i++) {
		__u8 one = 1;

		bpf_map__update_elem(skel->maps.devs, &devs.devt[i], sizeof(__u32), &one, sizeof(one), BPF_ANY);
	}

	out = fopen(cfg->output, "wb");
	if (!out) {
		fprintf(stderr, "ntbpf record: cannot write %s: %s\n", cfg->output, strerror(errno));
		goto out;
	}
	if (cfg->cmd_argv) {
		child = spawn_child(cfg->cmd_argv, &go_fd);
		if (child < 0) {
			fprintf(stderr, "ntbpf record: cannot start '%s': %s\n", cfg->cmd_argv[0], strerror(errno));
			goto out;
		}
	}

	for (int i = 0; i < nhooks; i++) {
		char name[128];
		struct bpf_program *p;

		if (choice[i].attach == NT_AT_NONE || !(choice[i].hook->roles & (1u << role)))
			continue;
		snprintf(name, sizeof(name), "%s_%s", nt_attach_name(choice[i].attach), choice[i].hook->tp);
		p = bpf_object__find_program_by_name(skel->obj, name);
		links[i] = p ? bpf_program__attach(p) : NULL;
		if (!links[i]) {
			attach_err[i] = -errno;
			fprintf(stderr, "ntbpf record: warning: %s not attached: %s\n", choice[i].hook->name,
				strerror(errno));
		} else {
			nattached++;
		}
	}
	if (!nattached) {
		fprintf(stderr, "ntbpf record: no hook could be attached (see ntbpf probe)\n");
		goto out;
	}

	hdr.role = role;
	hdr.sample = cfg->sample;
	nt_sys_identity(&hdr, argc, argv);
	if (!devs.n)
		nt_dev_all("", &devs);
	nt_dev_to_header(&devs, &hdr);
	if (role == NTBPF_ROLE_INITIATOR)
		nt_sys_nvme_ctrls("", &hdr);
	fill_hooks(&hdr, choice, nhooks, skel, role, attach_err);
	st.w = nt_writer_open(out, &hdr);
	if (!st.w) {
		fprintf(stderr, "ntbpf record: cannot write %s: %s\n", cfg->output, strerror(errno));
		goto out;
	}
	rb = ring_buffer__new(bpf_map__fd(skel->maps.events), on_event, &st, NULL);
	if (!rb) {
		fprintf(stderr, "ntbpf record: cannot set up the ring buffer: %s\n", strerror(errno));
		goto out;
	}

	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	if (child > 0) {
		/* Ctrl-C reaches the command too (same process group); let it end first */
		if (write(go_fd, "g", 1) != 1)
			goto out;
		close(go_fd);
		go_fd = -1;
	}
	if (cfg->duration > 0)
		t_end = now_ns() + (uint64_t)(cfg->duration * 1e9);
	last_flush = now_ns();
	while (!st.werr) {
		int n = ring_buffer__poll(rb, 100);
		uint64_t t = now_ns();

		if (n < 0 && n != -EINTR) {
			fprintf(stderr, "ntbpf record: ring buffer poll failed: %s\n", strerror(-n));
			break;
		}
		if (t - last_flush >= 1000000000ull) {
			if (nt_writer_flush(st.w) && !st.werr)
				st.werr = errno ? errno : EIO;
			last_flush = t;
		}
		if (child > 0 && !child_done && waitpid(child, &child_status, WNOHANG) == child)
			child_done = true;
		if (child_done || (t_end && t >= t_end))
			break;
		if (stop_signal && child <= 0)
			break;
		if (stop_signal && child > 0) {
			/* the command got the signal too (or we forward SIGTERM); wait for it */
			if (stop_signal == SIGTERM)
				kill(child, SIGTERM);
			stop_signal = 0;
		}
	}
	/* stop new events, then drain what the kernel still holds */
	for (int i = 0; i < nhooks; i++)
		bpf_link__destroy(links[i]), links[i] = NULL;
	tr.stats[ST_PROG_MISSES] = prog_misses(skel->obj);
	ring_buffer__consume(rb);
	{
		__u64 key = 0, next;
		uint64_t inflight = 0;

		while (!bpf_map__get_next_key(skel->maps.inflight, inflight ? &key : NULL, &next, sizeof(next))) {
			key = next;
			inflight++;
		}
		tr.stats[ST_INFLIGHT_END] = inflight;
	}
	{
		int ncpu = libbpf_num_possible_cpus();
		__u64 *vals = calloc(ncpu > 0 ? ncpu : 1, sizeof(__u64));

		for (__u32 k = 0; vals && k < ST_NR; k++) {
			if (k == ST_INFLIGHT_END || k == ST_PROG_MISSES)
				continue;
			if (bpf_map__lookup_elem(skel->maps.stats, &k, sizeof(k), vals, ncpu * sizeof(__u64), 0))
				continue;
			for (int c = 0; c < ncpu; c++)
				tr.stats[k] += vals[c];
		}
		free(vals);
	}
	tr.records = tr.stats[ST_EMITTED] - st.lost_user;
	tr.lost_user = st.lost_user;
	tr.end_mono_ns = now_ns();
	if (nt_writer_close(st.w, &tr) || fflush(out) || ferror(out)) {
		fprintf(stderr, "ntbpf record: writing %s failed: %s\n", cfg->output, strerror(st.werr ? st.werr : errno));
		st.w = NULL;
		goto out;
	}
	{
		struct stat sb;
		uint64_t lost = tr.stats[ST_LOST_RINGBUF] + tr.stats[ST_LOST_MAP_FULL] + tr.stats[ST_PROG_MISSES] +
				tr.stats[ST_NO_COMPLETE] + tr.lost_user;
		double size = fstat(fileno(out), &sb) ? 0 : sb.st_size;

		st.w = NULL;
		fprintf(stderr, "ntbpf record: %" PRIu64 " records, %" PRIu64 " lost, %.1f KiB written to %s "
			"(%.1f bytes/record, %s)\n", tr.records, lost, size / 1024, cfg->output,
			tr.records ? size / tr.records : 0.0, nt_role_name(role));
	}
	rc = 0;
	if (st.werr)
		rc = 1;
out:
	if (go_fd >= 0)
		close(go_fd);	/* child sees EOF and exits 127 without running */
	if (child > 0 && !child_done) {
		if (rc)
			kill(child, SIGTERM);
		waitpid(child, &child_status, 0);
		child_done = true;
	}
	if (st.w)
		nt_writer_close(st.w, &tr);
	ring_buffer__free(rb);
	for (int i = 0; i < nhooks; i++)
		bpf_link__destroy(links[i]);
	ntbpf_bpf__destroy(skel);
	if (out)
		fclose(out);
	nt_header_free(&hdr);
	if (!rc && child > 0) {
		/* like perf record -- cmd: the command's failure is ours */
		if (WIFEXITED(child_status) && WEXITSTATUS(child_status)) {
			fprintf(stderr, "ntbpf record: '%s' exited with status %d\n", cfg->cmd_argv[0],
				WEXITSTATUS(child_status));
			rc = WEXITSTATUS(child_status);
		} else if (WIFSIGNALED(child_status) && WTERMSIG(child_status) != SIGINT &&
			   WTERMSIG(child_status) != SIGTERM) {
			fprintf(stderr, "ntbpf record: '%s' killed by signal %d\n", cfg->cmd_argv[0],
				WTERMSIG(child_status));
			rc = 128 + WTERMSIG(child_status);
		}
	}
	return rc;
}
