/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * groups - the report's aggregation (pure: no BPF).  A report is its inputs,
 * what could not be seen, and groups of I/Os (op x size x device x queue,
 * --group-by host, subsys, ns), each with a histogram per stage.
 *
 *   nt_report_build_files()  record files read and paired by the input-and-
 *                      pairing pass (src/pairing.h), grouped, histograms
 *                      filled, what could not be seen collected ("ntbpf report")
 *   nt_report_begin(), _add(), _finish()  one I/O at a time (ntbpf live),
 *                      nt_report_count() the head's counts of matching
 *   nt_report_opts_of()  the report's options from the command line
 *
 * Below every renderer (src/render.h, src/html.h, src/diagnose.h) and the
 * report command (src/report.h), which print what is built here.
 */
#ifndef NTBPF_GROUPS_H
#define NTBPF_GROUPS_H

#include <stdbool.h>
#include <stdio.h>
#include "cli.h"
#include "failover.h"
#include "hist.h"
#include "input.h"
#include "match.h"
#include "names.h"
#include "recfile.h"
#include "stages.h"

#define NT_DEP_BUCKETS 8	/* depth 1, 2-3, 4-7, ..., 128+ */

struct nt_group {
	uint8_t op;
	uint32_t size;
	int dev_role;		/* role whose device id is in dev */
	uint32_t dev;
	uint16_t ctrl, qid;
	bool has_queue;
	/* --group-by host, subsys, ns: indexes into the report's names (NT_KEY_UNKNOWN, NT_KEY_OTHER) */
	uint16_t host, subsys, ns;
	uint16_t status;		/* NVMe status (or blk_status_t): its I/Os failed; 0 succeeded */
	uint16_t path;			/* --group-by dev, native multipath: the path's controller instance + 1
					 * (nt_path_of); 0: the device itself */
	bool status_nvme;		/* status is an NVMe status (else the block layer's) */
	uint64_t count;
	uint64_t bytes;			/* transferred by its I/Os */
	uint64_t first_ns, last_ns;	/* first I/O's start, last one's end (wall clock in files) */
	uint64_t full;			/* matched I/Os with all ten stages of the breakdown */
	uint64_t full_resid;		/* ... the largest |sum of the ten - end_to_end| among them, ns */
	uint64_t stand_in[NT_ST_NR];	/* I/Os whose stage used a stand-in boundary */
	struct nt_hist h[NT_ST_NR];
	bool used;			/* has an I/O (a file report makes groups ahead; unused ones go) */
	/*
	 * Queue depth as the records saw it ([0] initiator at nvme_setup_cmd,
	 * [1] target at nvmet_req_init): I/Os with one, its sum and max; and per
	 * log2 depth bucket (1, 2-3, 4-7, ...) the I/Os and the sum of the stage
	 * that waits behind that depth (nvme_tcp_submission, target_subsystem),
	 * for --diagnose's "grows with depth".
	 */
	uint64_t dep_n[2], dep_sum[2];
	uint32_t dep_max[2];
	uint64_t dep_bn[2][NT_DEP_BUCKETS], dep_bsum[2][NT_DEP_BUCKETS];
};

/*
 * --diagnose's time windows (the interference rule, src/diagnose.c): per
 * stream (one host's I/O to one target namespace, as the target's records
 * name them: hostnqn, subsysnqn, nsid, and the io CPUs of its queues) and
 * per window of the run, the I/Os the target saw start, their bytes and
 * their target stages (nvmet_tcp_submission + target_subsystem +
 * nvmet_tcp_completion), and how many it had in flight.  Bounded: NT_WIN_STREAMS streams (the I/Os of
 * others, and of hosts the target's file does not name, are counted, not
 * compared) and NT_WIN_N windows that hold I/O, at least NT_WIN_MIN_NS wide:
 * only windows with I/O are kept (in time order), so a stray I/O far from
 * the rest takes one, and more windows than that double their width,
 * merging pairs, as often as they need.
 */
#define NT_WIN_STREAMS 16
/* the target stages windows sum: nvmet's own (nvmet_tcp and the device; the stage table's layers) */
#define NT_WIN_STAGES nt_stages_where(NTBPF_ROLE_TARGET, 1u << NT_LAYER_NVME | 1u << NT_LAYER_DEVICE)
#define NT_WIN_N 512
#define NT_WIN_MIN_NS 100000000ull
#define NT_WIN_SPAN 64		/* an I/O's time in flight is counted in its first 64 windows at most */
struct nt_wcell {
	uint32_t ios, tn;	/* the target's I/Os that started in it; of those, the ones that succeeded with the
				 * three stages */
	uint64_t bytes;		/* ... their bytes */
	double tsum;		/* the three stages' sum over the tn, ns */
	uint64_t busy_ns;	/* the time its I/Os spent at the target in it (arrival to response), summed:
				 * over the window's width, how many were in flight on average */
};
struct nt_timewin {
	int nstreams, nwin;
	struct nt_wstream {
		uint16_t host, subsys;	/* names' indexes (NT_KEY_HOST, NT_KEY_SUBSYS) */
		uint32_t nsid;		/* 0 unknown */
		uint64_t cpus;		/* its queues' io CPUs (bit c: CPU c, bit 63: 63 and above) */
		uint64_t ios;
	} s[NT_WIN_STREAMS];
	/* window idx[k] (ascending): [base + idx width, base + (idx + 1) width) on the target's wall clock */
	uint64_t base_ns, width_ns;	/* base: the first I/O's start */
	bool based;
	uint64_t unnamed, dropped;	/* target I/Os not in a stream: their host not named; the streams full */
	struct {		/* the last record's stream (records come in runs) */
		const void *h;
		uint16_t ctrl, qid;
		uint32_t dev;
		uint16_t stream;
	} last;
	int64_t idx[NT_WIN_N];
	struct nt_wcell c[NT_WIN_N][NT_WIN_STREAMS];	/* 256 KiB */
};

struct nt_report;
struct nt_interval_info;

/*
 * --group-by host, subsys, ns: the names a report has seen, each kind
 * bounded (metrics' label sets too): the first NT_KEY_NAMES distinct ones
 * get their own groups, the rest fold into "other".  A host is its hostnqn
 * (the same in the initiator's and the target's files), a subsystem its
 * subsysnqn, a namespace its nsid; what a file does not say is "unknown".
 */
#define NT_KEY_NAMES 64
#define NT_KEY_UNKNOWN 0
#define NT_KEY_OTHER 0xffff
enum nt_key_kind { NT_KEY_HOST, NT_KEY_SUBSYS, NT_KEY_NS, NT_KEY_KINDS };
struct nt_keynames;

struct nt_report_opts {
	const char *version;	/* ntbpf_version printed in JSON */
	int npcts;
	double pcts[NT_MAX_PCTS];
	char pct_labels[NT_MAX_PCTS][NT_PCT_LABEL];	/* as given ("" or not set: the number's shortest form) */
	enum nt_format format;
	unsigned int group_by;
	bool verbose;
	bool hist;		/* --hist: log2 histograms per stage (text), their bins (JSON) */
	uint64_t window_ns;	/* report: the pairing window (nt_smatch_run); 0 = NT_PAIR_WINDOW_NS */
	struct nt_when since, until;	/* report: only I/Os that started in [since, until) */
	bool diagnose;		/* --diagnose: findings after the groups (text), "findings" (JSON) */
	/* live: called with each interval before it is printed (ntbpf live --metrics) */
	void (*on_interval)(void *ctx, const struct nt_report *rep, const struct nt_interval_info *info);
	void *on_interval_ctx;
};

struct nt_report {
	const struct nt_report_opts *o;
	const struct nt_input *ins;
	int nins;
	uint64_t n_init, n_tgt;		/* records per side (admin excluded) */
	uint64_t matched;
	uint64_t unmatched_init, unmatched_tgt;
	uint64_t admin;			/* admin-queue records left out */
	uint64_t neg_network;		/* matched I/Os whose network term came out negative */
	uint64_t lost;			/* ring buffer + map full + user space + skipped runs + no completion */
	uint64_t lost_why[6];		/* ring buffer, map full, program runs skipped, no completion, user space, not run */
	uint64_t no_start, inflight_end;
	bool since_set, until_set;	/* --since/--until: wall clock, ns since the epoch */
	int64_t since_ns, until_ns;
	uint64_t outside;		/* I/Os that started outside them, left out ... */
	uint64_t outside_pairs, outside_init;	/* ... of which matched, initiator only */
	uint32_t stages_seen;		/* mask of stages with any value */
	int ngroups;
	int last_group[4];		/* group_for's one-entry cache (index) per role (& 3) */
	struct nt_group *groups;
	struct nt_matching m;
	struct nt_keynames *names;	/* --group-by host, subsys, ns (owned; NULL: all "unknown") */
	struct nt_timewin *win;		/* --diagnose's time windows (owned; NULL without --diagnose) */
	/* multipath failover (src/failover.h): file reports only, not a fleet's (fo_skip) */
	struct nt_failover fo;
	struct nt_fo_summary fo_sum;
	bool fo_skip;
	uint64_t fo_seq;
	const struct nt_header *fo_h;	/* the last record's header, its host's number, whether it names a */
	uint32_t fo_host;		/* multipath namespace (only then are its records fed) */
	bool fo_mp;
	struct nt_mpath mpath;		/* the multipath facts of the last initiator header asked about */
	/* --group-by dev: nt_path_of per (header, head, controller), direct-mapped by controller */
	struct nt_pathc {
		const struct nt_header *h;
		uint32_t head;
		uint16_t ctrl, path;
	} pathc[8];
};

/* the report's options from the command line: "ntbpf report", live intervals, record --interval */
void nt_report_opts_of(const struct nt_config *cfg, struct nt_report_opts *o);

/*
 * The report from record files, read once: keeps ~100 bytes per record (what
 * matching and the stages need), not the records.  ins[i] gets file i's
 * header, count and status (recs stays NULL); a file cut short gets a
 * warning on warn.  0; -1 with a one-line cause in err (a file not readable
 * at all, or out of memory).
 */
int nt_report_build_files(struct nt_report *rep, struct nt_input *ins, FILE *const *files, const char *const *names,
			  int n, const struct nt_report_opts *o, FILE *warn, char *err, size_t errlen);

/*
 * Incremental use (ntbpf live): begin, then add I/Os (init and/or tgt),
 * finish (orders the groups), print, clear the groups for the next interval.
 * ins name the devices (headers) and may be NULL.
 */
void nt_report_begin(struct nt_report *rep, const struct nt_input *ins, int nins, const struct nt_report_opts *o);
/* what the inputs' trailers say was lost, and what rep->m paired: into the head's counts */
void nt_report_count(struct nt_report *rep, const struct nt_input *ins, int nins);
int nt_report_add(struct nt_report *rep, const struct ntbpf_rec *init, const struct ntbpf_rec *tgt);
/* a delta of one in-kernel histogram (ntbpf live without per-I/O records) */
int nt_report_add_kh(struct nt_report *rep, const struct nt_kh_key *k, const uint64_t *buckets, uint64_t count,
		     uint64_t sum);
void nt_report_finish(struct nt_report *rep);
void nt_report_clear_groups(struct nt_report *rep);

struct nt_interval_info {
	uint64_t lost;			/* records lost in this interval */
	uint64_t matched, unmatched_init, unmatched_tgt;
	const char *peer;		/* NULL: no peer; else its state ("connected", "down") */
};

/* the header's facts about a queue group's queue (its host's headers), or NULL */
const struct nt_queue_info *nt_report_group_queue(const struct nt_report *rep, const struct nt_group *g);
/* the group an I/O (its initiator's record, or its target's alone; h: its file's header, or NULL) went to, or -1 */
int nt_report_group_index(const struct nt_report *rep, const struct ntbpf_rec *r, const struct nt_header *h);
/* a group's host, subsystem or namespace as printed: the NQN, the nsid, "unknown" or "other" */
const char *nt_report_key_name(const struct nt_report *rep, enum nt_key_kind kind, uint16_t idx);
/* name's index among the report's names of kind (added if new: NT_KEY_OTHER when they are full) */
uint16_t nt_report_key_add(struct nt_report *rep, enum nt_key_kind kind, const char *name);
/* the hostname of a host (hostnqn) where an initiator's file among the inputs says it, else "" */
const char *nt_report_host_hostname(const struct nt_report *rep, uint16_t idx);
void nt_report_free(struct nt_report *rep);

/* a group's device as the report prints it: "nvme1n1", "nsid1" (target), "259:3" or "-" */
void nt_report_dev_name(const struct nt_report *rep, int role, uint32_t dev, char *buf, size_t len);
/* the same for group g, its multipath path if it has one: "nvme1c2n1" */
void nt_report_group_dev(const struct nt_report *rep, const struct nt_group *g, char *buf, size_t len);

#endif
