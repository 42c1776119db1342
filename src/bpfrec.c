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
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "bpfrec.h"
#include "live.h"
#include "probes.h"
#include "recfile.h"
#include "sysinfo.h"

static volatile sig_atomic_t stop_signal;

static void on_signal(int sig)
{
	stop_signal = sig;
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

static double tv_s(const struct timeval *t)
{
	return t->tv_sec + t->tv_usec / 1e6;
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
	struct nt_live *live;	/* --interval */
	struct nt_writer *w;
	uint64_t lost_user;
	int werr;
};

static int on_event(void *ctx, void *data, size_t size)
{
	struct rec_state *st = ctx;

	if (st->live && size >= sizeof(struct ntbpf_rec))
		nt_live_push(st->live, data);
	if (size < sizeof(struct ntbpf_rec) || nt_writer_add(st->w, data)) {
		st->lost_user++;
		if (!st->werr)
			st->werr = errno ? errno : EIO;
	}
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
		execvp(argv[0], argv);
		fprintf(stderr, "ntbpf record: cannot run '%s': %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	close(p[0]);
	*go_fd = p[1];
	return pid;
}

int nt_record_preflight(const struct nt_config *cfg, const char *cmd, struct nt_devset *devs)
{
	char err[256];
	int role;

	if (!privileged()) {
		fprintf(stderr, "ntbpf %s: needs root (or CAP_BPF and CAP_PERFMON)\n", cmd);
		return -1;
	}
	if (access("/sys/kernel/btf/vmlinux", R_OK)) {
		fprintf(stderr, "ntbpf %s: this kernel has no BTF (/sys/kernel/btf/vmlinux missing; "
			"CONFIG_DEBUG_INFO_BTF=y is needed)\n", cmd);
		return -1;
	}
	role = resolve_role(cfg, err, sizeof(err));
	if (role < 0) {
		fprintf(stderr, "ntbpf %s: %s\n", cmd, err);
		return -1;
	}
	for (int i = 0; i < cfg->ndevs; i++)
		if (nt_dev_resolve("", cfg->devs[i], devs, err, sizeof(err))) {
			fprintf(stderr, "ntbpf %s: %s\n", cmd, err);
			return -1;
		}
	return role;
}

void nt_record_header(struct nt_header *hdr, const struct nt_config *cfg, int role, struct nt_devset *devs,
		      const struct nt_probes *pr, int argc, char **argv)
{
	hdr->role = role;
	hdr->sample = cfg->sample;
	nt_sys_identity(hdr, argc, argv);
	if (!devs->n)
		nt_dev_all("", devs);
	nt_dev_to_header(devs, hdr);
	if (role == NTBPF_ROLE_INITIATOR)
		nt_sys_nvme_ctrls("", hdr);
	nt_probes_to_header(pr, hdr);
}

int nt_record_run(const struct nt_config *cfg, int argc, char **argv)
{
	char err[256];
	struct nt_devset devs = { 0 };
	struct nt_header hdr;
	struct nt_trailer tr = { 0 };
	struct rec_state st = { 0 };
	struct nt_probes pr = { 0 };
	struct ring_buffer *rb = NULL;
	struct rusage ru_start = { 0 };
	struct nt_probe_opts po = { .sample = cfg->sample, .devs = &devs, .force_kprobe = cfg->force_kprobe,
				    .bpf_stats = cfg->bpf_stats,
				    .verbose = cfg->verbose };
	int role, rc = 1, go_fd = -1, child_status = 0;
	pid_t child = -1;
	FILE *out = NULL;
	uint64_t t_end = 0, last_flush, last_tick, lost_ticked = 0;
	bool child_done = false, loaded = false;
	const char *oname = strcmp(cfg->output, "-") ? cfg->output : "standard output";

	nt_header_init(&hdr, 0);
	role = nt_record_preflight(cfg, "record", &devs);
	if (role < 0)
		return 1;

	po.role = role;
	if (nt_probes_load(&pr, &po, err, sizeof(err))) {
		fprintf(stderr, "ntbpf record: %s\n", err);
		goto out;
	}
	loaded = true;
	if (pr.fallback[0])
		fprintf(stderr, "ntbpf record: warning: %s\n", pr.fallback);

	if (!strcmp(cfg->output, "-")) {
		/*
		 * -o -: the record stream takes standard output; from here on fd 1
		 * is stderr, so that --interval lines and CMD's output stay out of it
		 */
		int fd = dup(STDOUT_FILENO);

		out = fd >= 0 ? fdopen(fd, "wb") : NULL;
		if (out && dup2(STDERR_FILENO, STDOUT_FILENO) < 0) {
			fclose(out);
			out = NULL;
		}
	} else {
		out = fopen(cfg->output, "wb");
	}
	if (!out) {
		fprintf(stderr, "ntbpf record: cannot write %s: %s\n", oname, strerror(errno));
		goto out;
	}
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
	st.w = nt_writer_open(out, &hdr);
	if (!st.w) {
		fprintf(stderr, "ntbpf record: cannot write %s: %s\n", oname, strerror(errno));
		goto out;
	}
	if (cfg->interval > 0) {
		st.live = nt_live_new(cfg, &hdr);
		if (!st.live)
			goto out;
	}
	rb = ring_buffer__new(nt_probes_ringbuf_fd(&pr), on_event, &st, NULL);
	if (!rb) {
		fprintf(stderr, "ntbpf record: cannot set up the ring buffer: %s\n", strerror(errno));
		goto out;
	}

	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	if (cfg->bpf_stats)
		getrusage(RUSAGE_SELF, &ru_start);	/* from here on: the cost while recording */
	/* scripts wait for this line before starting the workload */
	fprintf(stderr, "ntbpf record: recording %s I/O to %s (%d hooks attached%s)\n", nt_role_name(role),
		oname, pr.nattached, child > 0 ? "" : "; Ctrl-C to stop");
	if (child > 0) {
		/* Ctrl-C reaches the command too (same process group); let it end first */
		if (write(go_fd, "g", 1) != 1)
			goto out;
		close(go_fd);
		go_fd = -1;
	}
	if (cfg->duration > 0)
		t_end = nt_clock_ns(CLOCK_MONOTONIC) + (uint64_t)(cfg->duration * 1e9);
	last_flush = last_tick = nt_clock_ns(CLOCK_MONOTONIC);
	while (!st.werr) {
		/* BPF wakes us per batch: take the rest every round (records wait <= 100 ms) */
		int n = ring_buffer__poll(rb, 100);
		uint64_t t;

		if (n >= 0)
			n = ring_buffer__consume(rb);
		t = nt_clock_ns(CLOCK_MONOTONIC);

		if (n < 0 && n != -EINTR) {
			fprintf(stderr, "ntbpf record: ring buffer poll failed: %s\n", strerror(-n));
			break;
		}
		if (st.live && t - last_tick >= (uint64_t)(cfg->interval * 1e9)) {
			uint64_t s2[ST_NR], lost;

			nt_probes_stats(&pr, s2);
			lost = s2[ST_LOST_RINGBUF] + s2[ST_LOST_MAP_FULL] + s2[ST_NO_COMPLETE] + s2[ST_PROG_MISSES];
			nt_live_tick(st.live, stdout, (t - last_tick) / 1e9, lost - lost_ticked);
			lost_ticked = lost;
			last_tick = t;
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
			/* the command got Ctrl-C too; forward SIGTERM and wait for it to end */
			if (stop_signal == SIGTERM)
				kill(child, SIGTERM);
			stop_signal = 0;
		}
	}
	/* stop new events, then drain what the kernel still holds */
	nt_probes_detach(&pr);
	ring_buffer__consume(rb);
	if (st.live) {
		uint64_t s2[ST_NR], t = nt_clock_ns(CLOCK_MONOTONIC);

		nt_probes_stats(&pr, s2);
		nt_live_tick(st.live, stdout, (t - last_tick) / 1e9, s2[ST_LOST_RINGBUF] + s2[ST_LOST_MAP_FULL] +
			     s2[ST_NO_COMPLETE] + s2[ST_PROG_MISSES] - lost_ticked);
	}
	nt_probes_stats(&pr, tr.stats);
	if (cfg->bpf_stats) {
		uint64_t ns, runs;

		struct rusage ru;
		double u, sy;

		if (!nt_probes_run_time(&pr, &ns, &runs))
			fprintf(stderr, "ntbpf record: BPF run time %.0f ns per recorded I/O (%" PRIu64 " ns in %" PRIu64
				" program runs, %.0f ns each)\n", tr.stats[ST_EMITTED] ? (double)ns / tr.stats[ST_EMITTED] : 0.0,
				ns, runs, runs ? (double)ns / runs : 0.0);
		/*
		 * The reader, the encoder and the writing while recording: this
		 * process only, not CMD, and not the start (BTF, loading and
		 * verifying the programs), which is before the workload.
		 */
		if (!getrusage(RUSAGE_SELF, &ru) && tr.stats[ST_EMITTED]) {
			u = tv_s(&ru.ru_utime) - tv_s(&ru_start.ru_utime);
			sy = tv_s(&ru.ru_stime) - tv_s(&ru_start.ru_stime);
			fprintf(stderr, "ntbpf record: user-space CPU %.0f ns per recorded I/O while recording (%.3f s user, "
				"%.3f s system; %.3f s more to start)\n", (u + sy) * 1e9 / tr.stats[ST_EMITTED], u, sy,
				tv_s(&ru_start.ru_utime) + tv_s(&ru_start.ru_stime));
		}
	}
	tr.records = tr.stats[ST_EMITTED] - st.lost_user;
	tr.lost_user = st.lost_user;
	tr.end_mono_ns = nt_clock_ns(CLOCK_MONOTONIC);
	rc = nt_writer_close(st.w, &tr);
	st.w = NULL;
	if (rc || fflush(out) || ferror(out)) {
		fprintf(stderr, "ntbpf record: writing %s failed: %s\n", oname,
			strerror(st.werr ? st.werr : rc < 0 ? -rc : errno));
		rc = 1;
		goto out;
	}
	{
		struct stat sb;
		uint64_t lost = tr.stats[ST_LOST_RINGBUF] + tr.stats[ST_LOST_MAP_FULL] + tr.stats[ST_PROG_MISSES] +
				tr.stats[ST_NO_COMPLETE] + tr.lost_user;
		double size = fstat(fileno(out), &sb) ? 0 : sb.st_size;

		fprintf(stderr, "ntbpf record: %" PRIu64 " records, %" PRIu64 " lost, %.1f KiB written to %s "
			"(%.1f bytes/record, %s, %d hooks)\n", tr.records, lost, size / 1024, oname,
			tr.records ? size / tr.records : 0.0, nt_role_name(role), pr.nattached);
	}
	rc = st.werr ? 1 : 0;
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
	nt_live_free(st.live);
	if (loaded)
		nt_probes_destroy(&pr);
	if (out)
		fclose(out);
	if (rc && out && !st.w && !tr.end_mono_ns && strcmp(cfg->output, "-"))
		unlink(cfg->output);	/* nothing was recorded: leave no half file */
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
