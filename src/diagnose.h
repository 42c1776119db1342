/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * diagnose - findings from a built report (ntbpf report --diagnose): which
 * stage dominates, its likely cause, the numbers of this run that say so,
 * and the knob.  The rules and their thresholds are in docs/diagnose.md.
 * Pure: reads the report's groups (grouped by queue) and its inputs' headers.
 */
#ifndef NTBPF_DIAGNOSE_H
#define NTBPF_DIAGNOSE_H

#include <stdbool.h>
#include <stdio.h>

struct nt_report;

#define NT_MAX_FINDINGS 8

/* interference: the two hosts and the numbers of the windows compared (JSON prints them) */
struct nt_interference {
	char victim[256], cause[256];	/* hostnqns */
	int loaded, idle, windows;	/* the victim's windows where the cause was busy, idle; all it had */
	double width_ms;
	double victim_loaded_us, victim_idle_us;	/* median of the windows' mean target stages */
	double victim_iops_loaded, victim_iops_idle;	/* the victim's own rate (median over those windows) */
	double cause_iops, cause_mbps;	/* the cause's rate in its busy windows (mean) */
	double cause_inflight;		/* the cause's I/Os in flight at the target in its busiest window (mean) */
	double sep;			/* the share of (busy, idle) window pairs whose busy one's mean is the longer */
	char shared[160];		/* what they share: "namespace 1 of SUBSYS", "io CPU 0" */
};

struct nt_finding {
	const char *kind;	/* too_few_queues, queue_imbalance, target_device, target_cpu, network, initiator_cpu,
				 * interference */
	char stage[192];	/* the dominant stage (or stages, joined by "+") it is about; "-" */
	char evidence[1024];	/* numbers from this run */
	const char *advice;	/* the knob */
	bool has_interference;
	struct nt_interference in;
};

/* thresholds (docs/diagnose.md) */
#define NT_DIAG_MIN_IOS 100		/* fewer I/Os: no findings */
#define NT_DIAG_DOMINANT 0.5		/* a cause's stages: at least this share of end_to_end's mean */
#define NT_DIAG_SUBMIT_SHARE 0.2	/* too_few_queues: nvme_tcp_submission's share at least */
#define NT_DIAG_GROWTH 2.0		/* evidence "grows with depth": mean at the deepest / at the shallowest depth */
#define NT_DIAG_DEPTH 4.0		/* too_few_queues: mean depth per queue at least */
#define NT_DIAG_IMBALANCE 1.5		/* queue_imbalance: busiest queue's share / fair share at least */
/* interference: over time windows (src/groups.h, struct nt_timewin) */
#define NT_IF_WIN_IOS 2			/* a victim's window counts with at least this many I/Os with target stages */
#define NT_IF_BUSY 0.5			/* the cause is busy in a window with at least this share of its busiest
					 * window's I/Os in flight at the target (their time there) ... */
#define NT_IF_IDLE 0.05			/* ... and idle with at most this share */
#define NT_IF_MIN_WINDOWS 3		/* at least this many busy and this many idle windows of the victim */
#define NT_IF_GROWTH 1.5		/* the victim's target stages, busy / idle windows (medians), at least */
#define NT_IF_MIN_US 5.0		/* ... and longer by at least this many us */
#define NT_IF_SEP 0.7			/* ... longer in at least this share of the (busy, idle) pairs of windows */
#define NT_IF_OWN 1.5			/* the victim's own rate, busy / idle windows, at most (else its own load) */

/*
 * The findings of rep (at most max, in the order of the rules); their
 * count.  *why (if not NULL) says why none could be made ("" otherwise).
 */
int nt_diagnose(const struct nt_report *rep, struct nt_finding *f, int max, const char **why);

/* a stage's part of where the time goes: its mean, its share of the denominator, the depth behind it */
struct nt_share {
	int stage;
	double share, mean_ns;
	double depth;		/* nvme_tcp_submission: the initiator's mean depth per queue; target_subsystem: the
				 * target's; 0 elsewhere or unknown */
};

/*
 * The stages' shares of end_to_end's mean (target_residence's with only a
 * target file; *dn names it), largest first: the ten (remote where the
 * network and the target are not split, blk_device where nothing splits
 * it); how many (0: too few I/Os, or nothing to compare with).
 */
int nt_diagnose_shares(const struct nt_report *rep, struct nt_share *out, int max, const char **dn);
/* the rule nearest to firing (its measure over its threshold), and why it did not, into buf; 0: none */
int nt_diagnose_closest(const struct nt_report *rep, char *buf, size_t len);
/* JSON: {"of", "stages": [{"stage", "share", "mean_us", "mean_depth"}], "closest_rule"} */
void nt_diagnose_print_shares_json(FILE *out, const struct nt_report *rep);

/*
 * A report of one host's files: what its diagnosis cannot see (the other
 * host's stages, network_transmission) and what its shares are of, into
 * buf; 1.  Both hosts (or none): 0, buf "".
 */
int nt_diagnose_scope(const struct nt_report *rep, char *buf, size_t len);

/*
 * With two or more hosts and no interference finding: why not (the nearest
 * pair of hosts and its numbers, or what was missing), into buf; also what
 * the windows could not hold (streams beyond the table's).  1; 0: nothing to
 * say (fewer than two hosts seen by a target), buf "".
 */
int nt_diagnose_interference_note(const struct nt_report *rep, char *buf, size_t len);

/* text: a "diagnosis:" block; JSON: the "findings" array's elements */
void nt_diagnose_print_text(FILE *out, const struct nt_report *rep);
void nt_diagnose_print_json(FILE *out, const struct nt_report *rep);

#endif /* NTBPF_DIAGNOSE_H */
