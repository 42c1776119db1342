// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "ntbpf.h"
#include "ntbpf.skel.h"
#include "probes.h"

static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	return vfprintf(stderr, fmt, ap);
}

/* keep libbpf's last warning: a failed load is reported with its cause */
static char last_warning[200];

static int libbpf_quiet(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	char buf[512];
	size_t n;

	if (level != LIBBPF_WARN)
		return 0;
	vsnprintf(buf, sizeof(buf), fmt, ap);
	n = strlen(buf);
	while (n && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
		buf[--n] = 0;
	/* the summary lines name the program; verifier dumps are noise here */
	if (strstr(buf, "failed to load") || strstr(buf, "failed to attach") || strstr(buf, "failed to find") ||
	    strstr(buf, "failed to resolve") || strstr(buf, "BTF") || !last_warning[0])
		snprintf(last_warning, sizeof(last_warning), "%s", buf);
	return 0;
}

static bool uses_functions(const struct nt_probes *p)
{
	for (int i = 0; i < p->nhooks; i++)
		if (p->choice[i].attach == NT_AT_FENTRY || p->choice[i].attach == NT_AT_FEXIT)
			return true;
	return false;
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

static int try_load(struct nt_probes *p, const struct nt_probe_opts *o, char *err, size_t errlen)
{
	struct ntbpf_bpf *skel = ntbpf_bpf__open();

	if (!skel) {
		snprintf(err, errlen, "cannot open the BPF object: %s", strerror(errno));
		return -1;
	}
	skel->rodata->filter_dev = o->devs && o->devs->n > 0;
	if (o->devs) {
		skel->rodata->ndevs = o->devs->n < NTBPF_MAX_DEVS ? o->devs->n : NTBPF_MAX_DEVS;
		for (int i = 0; i < (int)skel->rodata->ndevs; i++)
			skel->rodata->dev_list[i] = o->devs->devt[i];
	}
	skel->rodata->sample = o->sample ? o->sample : 1;
	skel->rodata->blk_tp_has_q = nt_blk_tp_has_q();
	skel->rodata->rec_role = p->role;
	skel->rodata->kernel_agg = o->kernel_agg;
	skel->rodata->tgt_emit_at_complete = p->role == NTBPF_ROLE_TARGET && !tgt_has_resp_sent(p);
	if (nt_hooks_autoload(skel->obj, p->choice, p->nhooks)) {
		snprintf(err, errlen, "the BPF object lacks a program for a hook (build mismatch)");
		ntbpf_bpf__destroy(skel);
		return -1;
	}
	if (ntbpf_bpf__load(skel)) {
		snprintf(err, errlen, "loading the BPF programs failed: %s [%s] (-v shows the verifier log)",
			 strerror(errno), last_warning);
		ntbpf_bpf__destroy(skel);
		return -1;
	}
	p->skel = skel;
	return 0;
}

int nt_probes_load(struct nt_probes *p, const struct nt_probe_opts *o, char *err, size_t errlen)
{
	char first[256];

	memset(p, 0, sizeof(*p));
	p->stats_fd = -1;
	p->role = o->role;
	p->nhooks = nt_hooks_count();
	if (p->nhooks > NT_MAX_HOOKS)
		p->nhooks = NT_MAX_HOOKS;
	libbpf_set_print(o->verbose ? libbpf_print : libbpf_quiet);
	nt_hooks_choose(p->choice, p->nhooks, p->role, o->force_kprobe);
	if (try_load(p, o, first, sizeof(first))) {
		if (!uses_functions(p)) {
			snprintf(err, errlen, "%s", first);
			return -1;
		}
		/* some kernels (lockdown, some LSMs) refuse fentry/fexit: kprobes then */
		nt_hooks_choose(p->choice, p->nhooks, p->role, true);
		if (try_load(p, o, err, errlen))
			return -1;
		snprintf(p->fallback, sizeof(p->fallback), "fentry/fexit refused (%s): kprobes used", first);
	}
	if (o->bpf_stats) {
		p->stats_fd = bpf_enable_stats(BPF_STATS_RUN_TIME);
		if (p->stats_fd < 0)
			fprintf(stderr, "ntbpf: warning: cannot enable BPF run-time statistics: %s\n", strerror(errno));
	}
	return 0;
}

int nt_probes_attach(struct nt_probes *p, char *err, size_t errlen)
{
	for (int i = 0; i < p->nhooks; i++) {
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
		if (k && !p->attach_err[i])
			p->nattached++;
		else if (k) {
			for (int j = 0; j < 2; j++)
				bpf_link__destroy(p->links[i][j]), p->links[i][j] = NULL;
			fprintf(stderr, "ntbpf: warning: %s not attached: %s\n", p->choice[i].hook->name,
				strerror(-p->attach_err[i]));
		}
	}
	if (!p->nattached) {
		snprintf(err, errlen, "no hook could be attached (see ntbpf probe)");
		return -1;
	}
	return 0;
}

void nt_probes_to_header(const struct nt_probes *p, struct nt_header *h)
{
	for (int i = 0; i < p->nhooks; i++) {
		const struct nt_hook_choice *c = &p->choice[i];
		struct nt_hook_info *hi;

		if (!(c->hook->roles & (1u << p->role)))
			continue;
		/* a stand-in that was not needed is no news */
		if (c->attach == NT_AT_NONE && c->hook->stands_in_for)
			continue;
		hi = nt_header_add_hook(h);
		if (!hi)
			return;
		snprintf(hi->name, sizeof(hi->name), "%s%s%s",
			 c->hook->kind == NT_HK_TP ? c->hook->where : (*c->hook->where ? c->hook->where : "vmlinux"),
			 c->hook->kind == NT_HK_TP ? ":" : "!", c->hook->name);
		snprintf(hi->attach, sizeof(hi->attach), "%s", c->attach ? nt_attach_name(c->attach) : "");
		if (c->attach == NT_AT_NONE) {
			snprintf(hi->status, sizeof(hi->status), "%s", c->why);
			snprintf(hi->boundary, sizeof(hi->boundary), "%s", *c->hook->instead ? c->hook->instead :
				 "its event is not stamped");
		} else if (p->attach_err[i]) {
			snprintf(hi->status, sizeof(hi->status), "attach failed: %s", strerror(-p->attach_err[i]));
			snprintf(hi->boundary, sizeof(hi->boundary), "%s", *c->hook->instead ? c->hook->instead :
				 "its event is not stamped");
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
	/* the slots are the object's .bss, mapped into this process */
	for (unsigned int i = 0; p->skel->bss && i < sizeof(p->skel->bss->slots) / sizeof(p->skel->bss->slots[0]); i++)
		inflight += p->skel->bss->slots[i].key != 0;
	while (!bpf_map__get_next_key(p->skel->maps.inflight, key ? &key : NULL, &next, sizeof(next))) {
		key = next;
		inflight++;
	}
	stats[ST_INFLIGHT_END] = inflight;
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

void nt_probes_destroy(struct nt_probes *p)
{
	if (p->stats_fd >= 0)
		close(p->stats_fd);
	p->stats_fd = -1;
	nt_probes_detach(p);
	ntbpf_bpf__destroy(p->skel);
	p->skel = NULL;
}
