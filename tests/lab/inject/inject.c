// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * ntbpf-inject - the lab's delay injector (tests/lab only, never shipped): attaches
 * inject.bpf.c's programs at the sites asked for, each busy-waiting its delay, until SIGINT or
 * SIGTERM, then prints how often each site fired.
 *
 *   ntbpf-inject [--role initiator|target|both] SITE=NS...    (SITE: a site or a stage name)
 *   ntbpf-inject --every N SITE=NS... --then SITE=NS... ...     (one guest: a schedule of phases,
 *                             N I/Os each, counted where they enter nvme-tcp; then the last phase)
 *   ntbpf-inject --list                                         (the table below)
 *   ntbpf-inject --align-tick GUARD [--hz HZ] [SITE=NS...]      (an nvme I/O that would be running
 *                             within GUARD ns of the next timer tick waits for it first:
 *                             inject.bpf.c, "the timer tick kept out of the I/Os")
 *
 * SITES is the one table of where a known delay goes for each stage; docs/stages.md
 * ("Known answers") shows it and tests/lab/test_inject.py holds the two in agreement and
 * checks that every stage of the stage table has a site.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/libbpf.h>
#include <bpf/bpf.h>

#include "inject.h"
#include "inject.skel.h"
#include "inject-bounded.skel.h"
#include "inject-nopreempt.skel.h"

struct site {
	const char *name;	/* --inject's name for it */
	const char *stage;	/* the stage it lands in */
	const char *role;	/* the host it runs on */
	const char *func;	/* the kernel function (module!function) */
	const char *at;		/* entry or exit */
	const char *when;	/* its filter, for the table */
	const char *progs[3];	/* its programs (fentry/fexit) */
	const char *kprobe;	/* the kprobe stand-in for progs[0], where the kernel has no BTF for it */
};

/* One row per site; the first row of a stage is the one `STAGE=NS` picks. */
static const struct site SITES[INJ_NSITES] = {
	[INJ_QUEUE_RQ] = {.name = "queue_rq", .stage = "blk_submission", .role = "initiator",
		.func = "nvme_tcp!nvme_tcp_queue_rq", .at = "entry", .when = "an nvme disk's request (counts the I/Os for --every)",
		.progs = {"f_queue_rq"}, .kprobe = "k_queue_rq"},
	[INJ_START_RQ] = {.name = "start_request", .stage = "nvme_tcp_submission", .role = "initiator",
		.func = "vmlinux!blk_mq_start_request", .at = "entry", .when = "an nvme disk's request",
		.progs = {"f_start_rq"}},
	[INJ_R2T_COPIED] = {.name = "r2t_copied", .stage = "nvme_tcp_submission", .role = "initiator",
		.func = "vmlinux!skb_copy_bits", .at = "exit", .when = "a whole R2T header (type 0x09) copied",
		.progs = {"f_copy_bits"}},
	[INJ_TGT_IO_WORK] = {.name = "tgt_io_work", .stage = "nstack_submission", .role = "target",
		.func = "nvmet_tcp!nvmet_tcp_io_work", .at = "entry",
		.when = "at a PDU's start, a command capsule alone unread (72 bytes, 76 with header digest)",
		.progs = {"f_tgt_io_work"}},
	[INJ_REQ_INIT] = {.name = "req_init", .stage = "nvmet_tcp_submission", .role = "target",
		.func = "nvmet!nvmet_req_init", .at = "entry", .when = "every command",
		.progs = {"f_req_init"}},
	[INJ_BIO_DONE] = {.name = "bio_done", .stage = "target_subsystem", .role = "target",
		.func = "nvmet!nvmet_bio_done", .at = "entry", .when = "every backing bio",
		.progs = {"f_bio_done"}},
	[INJ_QUEUE_RESPONSE] = {.name = "queue_response", .stage = "nvmet_tcp_completion", .role = "target",
		.func = "nvmet_tcp!nvmet_tcp_queue_response", .at = "entry",
		.when = "inside nvmet_req_complete (not an R2T)",
		.progs = {"f_queue_response", "f_req_complete_in", "f_req_complete_out"}},
	[INJ_RSP_COPIED] = {.name = "rsp_copied", .stage = "nstack_completion", .role = "initiator",
		.func = "vmlinux!skb_copy_bits", .at = "exit", .when = "a whole response header (type 0x05) copied",
		.progs = {"f_copy_bits"}},
	[INJ_COMPLETE_REMOTE] = {.name = "complete_remote", .stage = "nvme_tcp_completion", .role = "initiator",
		.func = "vmlinux!blk_mq_complete_request_remote", .at = "exit", .when = "an nvme disk's request",
		.progs = {"f_complete_remote"}},
	[INJ_CLEANUP] = {.name = "cleanup_cmd", .stage = "blk_completion", .role = "initiator",
		.func = "nvme_core!nvme_cleanup_cmd", .at = "entry", .when = "an nvme disk's request",
		.progs = {"f_cleanup"}},
};

static volatile sig_atomic_t stop;
static void on_signal(int sig) { stop = 1; }

static int find_site(const char *name)
{
	for (int i = 0; i < INJ_NSITES; i++)
		if (!strcmp(SITES[i].name, name))
			return i;
	for (int i = 0; i < INJ_NSITES; i++)
		if (!strcmp(SITES[i].stage, name))
			return i;
	return -1;
}

static void list(void)
{
	printf("%-16s %-21s %-9s %-38s %-5s %s\n", "site", "stage", "host", "function", "at", "when");
	for (int i = 0; i < INJ_NSITES; i++)
		printf("%-16s %-21s %-9s %-38s %-5s %s\n", SITES[i].name, SITES[i].stage, SITES[i].role,
		       SITES[i].func, SITES[i].at, SITES[i].when);
}

static int usage(void)
{
	fprintf(stderr, "usage: ntbpf-inject [--role initiator|target|both] [--align-tick GUARD_NS [--hz HZ]] [--every N] SITE=NS... [--then SITE=NS...]... | --list\n");
	return 2;
}

static struct bpf_program *prog(struct inject_bpf *skel, const char *name)
{
	return bpf_object__find_program_by_name(skel->obj, name);
}

/* inject.bpf.c is built three times: with bpf_loop and preemption off during the wait
 * (-DINJ_PREEMPT_OFF, inject-nopreempt.skel.h: 6.10+'s bpf_preempt_disable), with bpf_loop
 * (inject.skel.h) and with a bounded loop (-DINJ_BOUNDED_LOOP, inject-bounded.skel.h) for kernels
 * without bpf_loop (5.17+).  A kernel refuses at load what it lacks; the loader tries them in
 * that order.  The three have the same programs, maps and data, so each is opened through
 * inject_bpf's skeleton: one type for the rest of the loader. */
_Static_assert(sizeof(struct inject_bpf) == sizeof(struct inject_bounded_bpf), "two skeletons, one layout");
_Static_assert(sizeof(struct inject_bpf__rodata) == sizeof(struct inject_bounded_bpf__rodata), "two skeletons, one .rodata");
_Static_assert(sizeof(struct inject_bpf__bss) == sizeof(struct inject_bounded_bpf__bss), "two skeletons, one .bss");
_Static_assert(sizeof(struct inject_bpf) == sizeof(struct inject_nopreempt_bpf), "three skeletons, one layout");
_Static_assert(sizeof(struct inject_bpf__rodata) == sizeof(struct inject_nopreempt_bpf__rodata), "three skeletons, one .rodata");
_Static_assert(sizeof(struct inject_bpf__bss) == sizeof(struct inject_nopreempt_bpf__bss), "three skeletons, one .bss");

enum variant { V_NOPREEMPT, V_LOOP, V_BOUNDED };
static const char *const variant_name[] = {"bpf_loop, preemption off", "bpf_loop", "bounded loop"};

static struct inject_bpf *open_skel(enum variant v)
{
	struct inject_bpf *skel;
	int err;

	if (v == V_LOOP)
		return inject_bpf__open();
	skel = calloc(1, sizeof(*skel));
	if (!skel)
		return NULL;
	err = inject_bpf__create_skeleton(skel);
	if (!err) {
		skel->skeleton->data = v == V_BOUNDED ? inject_bounded_bpf__elf_bytes(&skel->skeleton->data_sz)
						      : inject_nopreempt_bpf__elf_bytes(&skel->skeleton->data_sz);
		err = bpf_object__open_skeleton(skel->skeleton, NULL);
	}
	if (err) {
		inject_bpf__destroy(skel);
		errno = -err;
		return NULL;
	}
	return skel;
}

int main(int argc, char **argv)
{
	const char *role = "both";
	static __u64 delay[INJ_MAX_PHASES][INJ_NSITES];
	bool on[INJ_NSITES] = {}, kprobe[INJ_NSITES] = {};
	struct inject_bpf *skel = NULL;
	struct bpf_program *linked[3 * INJ_NSITES];
	int i, a, err = 0, n = 0, nlinks = 0, ph = 0;
	unsigned long every = 0, guard = 0, hz = 250;

	for (a = 1; a < argc; a++) {
		char *eq, *end;
		int s;

		if (!strcmp(argv[a], "--list")) {
			list();
			return 0;
		}
		if (!strcmp(argv[a], "--role") && a + 1 < argc) {
			role = argv[++a];
			if (strcmp(role, "initiator") && strcmp(role, "target") && strcmp(role, "both"))
				return usage();
			continue;
		}
		if (!strcmp(argv[a], "--every") && a + 1 < argc) {
			errno = 0;
			every = strtoul(argv[++a], &end, 10);
			if (errno || !every || *end || every > 1000000)
				return usage();
			continue;
		}
		if ((!strcmp(argv[a], "--align-tick") || !strcmp(argv[a], "--hz")) && a + 1 < argc) {
			bool is_hz = argv[a][2] == 'h';

			errno = 0;
			unsigned long v = strtoul(argv[++a], &end, 10);
			if (errno || !v || *end || v > (is_hz ? 10000 : 100000000))
				return usage();
			*(is_hz ? &hz : &guard) = v;
			continue;
		}
		if (!strcmp(argv[a], "--then")) {
			if (++ph >= INJ_MAX_PHASES) {
				fprintf(stderr, "ntbpf-inject: at most %d phases\n", INJ_MAX_PHASES);
				return 2;
			}
			continue;
		}
		eq = strchr(argv[a], '=');
		if (!eq)
			return usage();
		*eq = 0;
		s = find_site(argv[a]);
		if (s < 0) {
			fprintf(stderr, "ntbpf-inject: no site or stage '%s' (--list)\n", argv[a]);
			return 2;
		}
		errno = 0;
		delay[ph][s] = strtoull(eq + 1, &end, 10);
		if (errno || end == eq + 1 || *end || delay[ph][s] > 100000000) {
			fprintf(stderr, "ntbpf-inject: %s: the delay is a number of ns up to 1e8\n", argv[a]);
			return 2;
		}
		if (strcmp(role, "both") && strcmp(role, SITES[s].role))
			continue; /* the other host's site */
		on[s] = true;
	}
	if (ph && !every) {
		fprintf(stderr, "ntbpf-inject: --then needs --every N\n");
		return 2;
	}
	if (every && strcmp(role, "both")) {
		fprintf(stderr, "ntbpf-inject: --every counts the I/Os on the initiator: one guest only (--role both)\n");
		return 2;
	}
	if (every)
		on[INJ_QUEUE_RQ] = true; /* it counts the I/Os */
	if (guard && guard >= 1000000000UL / hz) {
		fprintf(stderr, "ntbpf-inject: --align-tick %lu: not shorter than the tick (%lu ns at %lu Hz)\n",
			guard, 1000000000UL / hz, hz);
		return 2;
	}

	libbpf_set_strict_mode(LIBBPF_STRICT_ALL);
	bool have_loop = libbpf_probe_bpf_helper(BPF_PROG_TYPE_KPROBE, BPF_FUNC_loop, NULL) > 0;
	enum variant var = have_loop ? V_NOPREEMPT : V_BOUNDED;
	libbpf_print_fn_t prev_print = libbpf_set_print(NULL);

	libbpf_set_print(prev_print);
	for (int attempt = 0; attempt < 3; attempt++) {
		struct bpf_program *p;

		skel = open_skel(var);
		if (!skel) {
			fprintf(stderr, "ntbpf-inject: cannot open the BPF object: %s\n", strerror(errno));
			return 1;
		}
		bpf_object__for_each_program(p, skel->obj)
			bpf_program__set_autoload(p, false);
		skel->rodata->every = every;
		skel->rodata->nphases = ph + 1;
		if (guard) {
			skel->rodata->tick_ns = 1000000000UL / hz;
			skel->rodata->guard_ns = guard;
			bpf_program__set_autoload(prog(skel, "f_tick"), true);
			bpf_program__set_autoload(prog(skel, "f_align"), true);
			bpf_program__set_autoload(prog(skel, "f_align_done"), true);
		}
		for (i = 0; i < INJ_NSITES; i++) {
			for (int p = 0; p <= ph; p++)
				skel->rodata->delay_ns[p][i] = delay[p][i];
			if (!on[i])
				continue;
			if (kprobe[i]) {
				bpf_program__set_autoload(prog(skel, SITES[i].kprobe), true);
				continue;
			}
			for (int j = 0; j < 3 && SITES[i].progs[j]; j++)
				bpf_program__set_autoload(prog(skel, SITES[i].progs[j]), true);
		}
		if (var == V_NOPREEMPT) /* libbpf prints why a kernel before 6.10 refuses it */
			libbpf_set_print(NULL);
		err = inject_bpf__load(skel);
		libbpf_set_print(prev_print);
		if (!err)
			break;
		if (var == V_NOPREEMPT) {	/* no bpf_preempt_disable: without it */
			inject_bpf__destroy(skel);
			skel = NULL;
			var = V_LOOP;
			attempt--;
			continue;
		}
		/* a kernel without BTF for the function (5.10's modules): its kprobe stand-in */
		bool retry = false;
		for (i = 0; i < INJ_NSITES; i++)
			if (on[i] && SITES[i].kprobe && !kprobe[i])
				kprobe[i] = retry = true;
		inject_bpf__destroy(skel);
		skel = NULL;
		if (!retry)
			break;
	}
	if (!skel) {
		fprintf(stderr, "ntbpf-inject: cannot load: %s\n", strerror(-err));
		return 1;
	}
	if (guard && var == V_BOUNDED) {
		fprintf(stderr, "ntbpf-inject: --align-tick waits up to a tick: it needs bpf_loop (5.17+)\n");
		inject_bpf__destroy(skel);
		return 1;
	}
	if (guard) {
		const char *names[] = {"f_tick", "f_align", "f_align_done"};

		for (i = 0; i < 3; i++)
			if (!bpf_program__attach(prog(skel, names[i]))) {
				fprintf(stderr, "ntbpf-inject: --align-tick: cannot attach %s: %s\n", names[i], strerror(errno));
				inject_bpf__destroy(skel);
				return 1;
			}
		printf("ntbpf-inject: timer tick every %lu ns kept out of the I/Os: those within %lu ns of it wait\n",
		       1000000000UL / hz, guard);
	}
	/* each program once: skb_copy_bits's program serves two sites */
	for (i = 0; i < INJ_NSITES; i++) {
		if (!on[i])
			continue;
		const char *names[3] = {kprobe[i] ? SITES[i].kprobe : SITES[i].progs[0],
					kprobe[i] ? NULL : SITES[i].progs[1], kprobe[i] ? NULL : SITES[i].progs[2]};
		for (int j = 0; j < 3 && names[j]; j++) {
			struct bpf_program *p = prog(skel, names[j]);
			bool done = false;

			for (int k = 0; k < nlinks; k++)
				done |= linked[k] == p;
			if (done)
				continue;
			if (!bpf_program__attach(p)) {
				fprintf(stderr, "ntbpf-inject: cannot attach %s (%s): %s\n", SITES[i].name,
					SITES[i].func, strerror(errno));
				inject_bpf__destroy(skel);
				return 1;
			}
			linked[nlinks++] = p;
		}
		printf("ntbpf-inject: %s on %s %s (%s):", SITES[i].name, SITES[i].func, SITES[i].at, SITES[i].stage);
		for (int p = 0; p <= ph; p++)
			printf(" %llu", (unsigned long long)delay[p][i]);
		printf(" ns%s\n", kprobe[i] ? " (kprobe)" : "");
		n++;
	}
	printf("ntbpf-inject: %d site(s) attached, %s", n, variant_name[var]);
	if (every)
		printf(", %d phases of %lu I/Os", ph + 1, every);
	printf("\n");
	fflush(stdout);
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	while (!stop)
		pause();
	/* "ntbpf-inject: SITE spun N passed M" (one phase), or with a schedule
	 * "ntbpf-inject: phase P SITE spun N passed M" and the I/Os counted */
	for (int p = 0; p <= ph; p++)
		for (i = 0; i < INJ_NSITES; i++) {
			if (!on[i])
				continue;
			if (every)
				printf("ntbpf-inject: phase %d ", p);
			else
				printf("ntbpf-inject: ");
			printf("%s spun %llu passed %llu\n", SITES[i].name, (unsigned long long)skel->bss->hits[p][i],
			       (unsigned long long)skel->bss->passes[p][i]);
		}
	if (every)
		printf("ntbpf-inject: %llu I/Os counted\n", (unsigned long long)skel->bss->io_count);
	/* "ntbpf-inject: target write bios segments 1:N 2-31:N 32+:N changed N" */
	if (on[INJ_BIO_DONE])
		printf("ntbpf-inject: target write bios segments 1:%llu 2-31:%llu 32+:%llu changed %llu\n",
		       (unsigned long long)skel->bss->wbio[0], (unsigned long long)skel->bss->wbio[1],
		       (unsigned long long)skel->bss->wbio[2], (unsigned long long)skel->bss->wbio_changed);
	/* "ntbpf-inject: tick-align ios N waited N unanchored N ticks N in-io N off-grid N" */
	if (guard)
		printf("ntbpf-inject: tick-align ios %llu waited %llu unanchored %llu ticks %llu in-io %llu off-grid %llu\n",
		       (unsigned long long)skel->bss->align_ios, (unsigned long long)skel->bss->align_waits,
		       (unsigned long long)skel->bss->align_unanchored, (unsigned long long)skel->bss->ticks,
		       (unsigned long long)skel->bss->ticks_in_io, (unsigned long long)skel->bss->ticks_off_grid);
	inject_bpf__destroy(skel);
	return 0;
}
