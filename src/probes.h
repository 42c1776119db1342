/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * probes - the BPF side's lifecycle for one recorder: read the kernel's facts,
 * choose hooks, open the skeleton, set rodata and autoload, load in one retry
 * loop (a program the kernel refuses turns its hook off, a refused fentry
 * turns functions over to kprobes; the rest load), attach hook by hook, read
 * the counters, detach.  Used by "ntbpf record" and "ntbpf live".
 */
#ifndef NTBPF_PROBES_H
#define NTBPF_PROBES_H

#include <stdbool.h>
#include <stdio.h>
#include "hooks.h"
#include "recfile.h"
#include "sampling.h"
#include "sysinfo.h"

#define NT_MAX_HOOKS 32

struct ntbpf_bpf;

struct nt_probes {
	struct ntbpf_bpf *skel;
	int role;
	int nhooks;
	struct nt_hook_choice choice[NT_MAX_HOOKS];
	struct bpf_link *links[NT_MAX_HOOKS][2];
	int attach_err[NT_MAX_HOOKS];	/* -errno of a failed attach */
	struct nt_facts facts;		/* what the kernel offers (facts.c) */
	int nrefused;			/* hooks whose program the kernel refused to load */
	char fallback[400];		/* why kprobes were used instead of fentry, probe reads instead of bpf_rdonly_cast; or "" */
	int nattached;
	int stats_fd;			/* BPF_ENABLE_STATS while >= 0 */
	bool no_task_storage;		/* kernel before 5.11: entry_ts not created, functions as kprobes */
	uint64_t inflight_dropped;	/* records in flight when a sampling window closed */
	enum nt_detach detached;	/* between sampling windows: what is detached (sampling.h) */
	int deferred;			/* 1 + the hook loaded but not attached (defer_*), or 0 */
	int defer_for;			/* deferred: the hook that does its work (nvme_setup_cmd, nvmet_try_send_response) */
	uint32_t pcr_recs;		/* records per CPU ring (nt_probe_opts.percpu_rings), 0: none */
	int pcr_ncpu;			/* the rings: one per possible CPU */
	void *pcr_ctl_map, *pcr_recs_map;	/* nt_probes_pcr_map's, unmapped by nt_probes_destroy */
};

struct nt_probe_opts {
	int role;
	uint32_t sample;
	const struct nt_devset *devs;	/* NULL or empty: every device */
	bool force_kprobe;
	bool bpf_stats;
	bool kernel_agg;		/* histograms in the kernel, no per-I/O records */
	bool kh_by_queue;		/* kernel_agg: a group per NVMe queue too, with its depths */
	/*
	 * live on NVMe namespaces only: block_rq_issue is loaded but not
	 * attached, until an I/O comes without a start stamp (nt_probes_undefer)
	 */
	bool defer_blk_issue;
	/*
	 * the target: nvmet_try_send_data is loaded but not attached, until a
	 * queue without SQ head updates is seen (nt_probes_undefer)
	 */
	bool defer_data_send;
	/* record: per-CPU rings before the shared ring buffer (struct nt_pcr_ctl; x86) */
	bool percpu_rings;
	bool verbose;
	bool quiet;			/* no warning per refused hook (probe shows them) */
	const struct nt_facts *facts;	/* already read (probe), or NULL: read them */
};

/* facts, choice, open + load (the retry loop); 0, or -1 with a one-line cause in err */
int nt_probes_load(struct nt_probes *p, const struct nt_probe_opts *o, char *err, size_t errlen);
/* attach every chosen hook; 0 if at least one attached, else -1 with the cause */
int nt_probes_attach(struct nt_probes *p, char *err, size_t errlen);
/*
 * defer_blk_issue: I/Os that came without a start stamp so far;
 * defer_data_send: queues seen without SQ head updates (0 while none did,
 * or nothing is deferred)
 */
uint64_t nt_probes_deferred_need(const struct nt_probes *p);
/*
 * attach the deferred hook: 0 (*unstamped: the I/Os that came without a
 * start stamp, or were emitted at subsys_done for want of it), or -1 with
 * the cause
 */
int nt_probes_undefer(struct nt_probes *p, uint64_t *unstamped, char *err, size_t errlen);
/* the start line's words on the deferred hook ("" if none) */
const char *nt_probes_deferred_text(const struct nt_probes *p);
/*
 * Checked at every wake-up of a recording loop: where the deferred hook is
 * needed now, attach it and say so on stderr ("ntbpf CMD: ...").  True
 * where the hooks changed.
 */
bool nt_probes_undefer_now(struct nt_probes *p, const char *cmd);
/* hooks of this role with attach type, status and boundary, into the file header */
void nt_probes_to_header(const struct nt_probes *p, struct nt_header *h);
int nt_probes_ringbuf_fd(const struct nt_probes *p);
uint64_t nt_probes_ringbuf_recs(const struct nt_probes *p);	/* records the ring buffer holds */
/*
 * The per-CPU rings mapped into user space (pcr_recs > 0): 0, or -1 with
 * errno; nt_probes_destroy unmaps them
 */
int nt_probes_pcr_map(struct nt_probes *p, struct nt_pcr_ctl **ctl, const struct ntbpf_rec **recs);

/* NTBPF_TEST_COST, a test knob of the cost model: 0, or what record leaves out */
enum { NT_TEST_COST_EMPTY = 1, NT_TEST_COST_NOEMIT, NT_TEST_COST_DISCARD };
int nt_test_cost(void);
/* the in-kernel histograms (per-CPU hash, ntbpf_kh.h), for kernel_agg */
int nt_probes_khist_fd(const struct nt_probes *p);
/*
 * The BPF side's queue table (each NVMe/TCP queue's connection, read at its
 * first recorded I/O) into h's controllers' queue lists, sorted by qid; a
 * controller h lacks (the target's) is added.  Queues seen, or -1 (no memory).
 */
int nt_probes_queues(const struct nt_probes *p, struct nt_header *h);
/* target: the hostnqn of controller cntlid as the BPF side read it last (live --serve --key DIR);
 * ctx: the struct nt_probes; 0, or -1 unknown */
int nt_probes_tnqn(void *ctx, uint16_t cntlid, char *nqn, size_t len);
/* initiator: the cntlid changes the BPF side noted (reconnects while recording) into h */
void nt_probes_cntlid_changes(const struct nt_probes *p, struct nt_header *h);
/* stop every hook (links destroyed; maps stay readable) */
void nt_probes_detach(struct nt_probes *p);
/*
 * record --sample-by time: arm the programs ahead of a window, or pause them
 * all after it (and clear what it left), and detach the tracepoint hooks
 * or all hooks (detach: slow, for windows far apart); arming attaches them
 * again.  Returns how many programs failed to attach again.
 */
int nt_probes_window(struct nt_probes *p, bool arm, uint64_t mono_now, enum nt_detach detach);
/* the windows in which the BPF side creates records: the first len of every period of CLOCK_MONOTONIC + phase */
void nt_probes_set_windows(struct nt_probes *p, uint64_t period_ns, uint64_t len_ns, int64_t phase_ns);
/* BPF counters, in-flight records and skipped program runs into t->stats */
void nt_probes_stats(const struct nt_probes *p, uint64_t stats[ST_NR]);
/* summed run time and run count of every program (needs bpf_stats); 0 or -1 */
int nt_probes_run_time(const struct nt_probes *p, uint64_t *ns, uint64_t *runs);
/* with -v: each program's runs and run time (needs bpf_stats) */
void nt_probes_run_time_each(const struct nt_probes *p, FILE *out);
/* the programs the kernel skipped runs of, by name, on one line (nothing when none) */
void nt_probes_misses_each(const struct nt_probes *p, FILE *out, const char *who);
void nt_probes_destroy(struct nt_probes *p);

#endif
