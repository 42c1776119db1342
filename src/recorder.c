// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * recorder.c - what "ntbpf record" and "ntbpf live" share: the checks before
 * loading (root, BTF, role, devices), the header of a recording, the stop
 * signal and the drain loop (nt_recorder_loop).  What each does with the
 * records, each round and each interval is in bpfrec.c and liverun.c.
 */
#include <bpf/libbpf.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "probes.h"
#include "recorder.h"
#include "sysinfo.h"

/* root, or CAP_BPF + CAP_PERFMON (5.8+), or CAP_SYS_ADMIN */
static bool privileged(void)
{
	return geteuid() == 0 || nt_sys_has_cap(21 /* CAP_SYS_ADMIN */) ||
	       (nt_sys_has_cap(39 /* CAP_BPF */) && nt_sys_has_cap(38 /* CAP_PERFMON */));
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
	hdr->sample_window_ms = cfg->sample > 1 ? cfg->sample_window_ms : 0;
	nt_sys_identity(hdr, argc, argv);
	if (!devs->n)
		nt_dev_all("", devs);
	nt_dev_to_header(devs, hdr);
	if (role == NTBPF_ROLE_INITIATOR)
		nt_sys_nvme_ctrls("", hdr);
	nt_probes_to_header(pr, hdr);
}

int nt_recorder_poll(struct ring_buffer *rb, int timeout_ms)
{
	/* BPF wakes us per batch: take the rest every round */
	int n = ring_buffer__poll(rb, timeout_ms);

	if (n >= 0)
		n = ring_buffer__consume(rb);
	return n == -EINTR ? 0 : n;
}

static volatile sig_atomic_t stop_signal;

static void on_signal(int sig)
{
	stop_signal = sig;
}

void nt_recorder_signals(bool hangup)
{
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	if (hangup)
		signal(SIGHUP, on_signal);
	signal(SIGPIPE, SIG_IGN);
}

int nt_recorder_stop_signal(void)
{
	return stop_signal;
}

int nt_recorder_loop(struct nt_loop *lp)
{
	uint64_t t_next;
	int ticks = 0;

	lp->t_last = nt_clock_ns(CLOCK_MONOTONIC);
	t_next = lp->interval_ns ? lp->t_last + lp->interval_ns : UINT64_MAX;
	for (;;) {
		/* records wait <= 100 ms (a per-CPU ring half full wakes us at once), and an interval's end none */
		uint64_t t = nt_clock_ns(CLOCK_MONOTONIC);
		int n = nt_recorder_poll(lp->rb, t >= t_next ? 0 : t_next - t >= 100000000 ? 100 :
						  (int)((t_next - t) / 1000000)), stop;

		if (n < 0) {
			fprintf(stderr, "ntbpf %s: ring buffer poll failed: %s\n", lp->cmd, strerror(-n));
			return -1;
		}
		stop = lp->round ? lp->round(lp->ctx, n) : 0;
		t = nt_clock_ns(CLOCK_MONOTONIC);
		if (t >= t_next) {
			lp->tick(lp->ctx, (t - lp->t_last) / 1e9);
			lp->t_last = t;
			t_next += lp->interval_ns;
			if (t_next < t)
				t_next = t + lp->interval_ns;
			if (lp->count && ++ticks >= lp->count)
				return 0;
		}
		if (stop)
			return 0;
		if (stop_signal) {
			if (!lp->on_signal || lp->on_signal(lp->ctx, stop_signal))
				return 0;
			stop_signal = 0;
		}
	}
}
