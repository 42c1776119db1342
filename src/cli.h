/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* cli - the command line, parsed into one config struct (pure, unit-tested). */
#ifndef NTBPF_CLI_H
#define NTBPF_CLI_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include "ntbpf.h"

#define NT_MAX_PCTS 16
#define NT_PCT_LABEL 24	/* a percentile as given: at most 23 characters */

enum nt_cmd { NT_CMD_NONE = 0, NT_CMD_RECORD, NT_CMD_REPORT, NT_CMD_PROBE, NT_CMD_LIVE, NT_CMD_SCRIPT };
enum nt_format { NT_FMT_TEXT = 0, NT_FMT_JSON, NT_FMT_CSV, NT_FMT_HTML };

/* --group-by keys, in the order they are printed */
#define NT_GB_OP    0x1
#define NT_GB_SIZE  0x2
#define NT_GB_DEV   0x4
#define NT_GB_QUEUE 0x8
#define NT_GB_HOST  0x10	/* the initiator host: its hostnqn, the same in both hosts' files */
#define NT_GB_SUBSYS 0x20	/* the subsystem: its subsysnqn */
#define NT_GB_NS    0x40	/* the namespace: its nsid */
/* keys that need the headers' controllers (live reads them every interval) */
#define NT_GB_CTRL_KEYS (NT_GB_QUEUE | NT_GB_HOST | NT_GB_SUBSYS | NT_GB_NS)

struct nt_config {
	enum nt_cmd cmd;
	bool verbose;
	bool force_kprobe;		/* --kprobe: functions via kprobes even where fentry works */
	bool bpf_stats;			/* --bpf-stats: measure the BPF programs' run time */
	bool compress;			/* record -z: column-coded, deflated chunks instead of uncoded records */
	bool probe_no_verify;		/* probe --no-verify: from the facts only, load nothing */
	bool probe_facts;		/* probe --facts (hidden): print the kernel's facts (tests/unit/facts-*.txt) */
	/* record */
	const char *output;		/* -o, default "ntbpf.data" */
	int role;			/* 0 = auto, else enum ntbpf_role */
	double duration;		/* seconds, 0 = until stopped */
	int ndevs;
	const char *devs[NTBPF_MAX_DEVS];
	uint32_t sample;		/* 1 = every I/O */
	uint32_t sample_window_ms;	/* record: --sample N in windows of this many ms, one in every N
					 * (hooks attached only then); 0 = --sample-by io: a per-I/O hash */
	bool sample_detach_all;		/* record --sample-detach all: function hooks too, between windows
					 * 10 s apart or more (default: tracepoints only) */
	char **cmd_argv;		/* after "--", NULL-terminated; NULL if none */
	uint64_t rotate_bytes, rotate_ns;	/* record --rotate: a new file of the series after this much (0: none) */
	int nice;			/* record --nice: the drain loop's nice while it keeps up (default 19) */
	double interval;		/* record --interval / live [interval]: seconds, 0 = none */
	int count;			/* live [count]: intervals, 0 = until stopped */
	const char *serve;		/* live --serve ADDR:PORT (target) */
	const char *peer;		/* live --peer ADDR:PORT (initiator) */
	const char *key;		/* live --key FILE: the stream's shared secret */
	bool records;			/* live --records: per-I/O records, not in-kernel histograms */
	const char *metrics;		/* live --metrics ADDR:PORT: OpenMetrics endpoint */
	bool metrics_remote;		/* live --metrics-remote: a non-loopback --metrics address is allowed */
	/* report */
	int npcts;
	double pcts[NT_MAX_PCTS];
	char pct_labels[NT_MAX_PCTS][NT_PCT_LABEL];	/* as the user spelled them ("99.90"); "": the number's shortest form */
	enum nt_format format;
	unsigned int group_by;		/* NT_GB_* */
	bool hist;			/* report/live --hist: log2 histograms per stage */
	bool diagnose;			/* report --diagnose: findings (src/diagnose.c) */
	const char *report_output;	/* report -o FILE (0600; an existing FILE becomes FILE.old); NULL: stdout */
	double pair_window;		/* --window: seconds, 0 = the default (NT_PAIR_WINDOW_NS) */
	struct nt_when {		/* --since, --until: I/Os starting in [since, until) */
		bool set, rel;		/* rel: ns from the recording's start, else since the epoch (UTC) */
		int64_t ns;
	} since, until;
	int nfiles;
	const char **files;		/* nfiles pointers into argv, any number; nt_config_free() */
};

/*
 * Parses argv (argv[0] is the program, argv[1] the subcommand).
 * Returns 0 to run, 1 when help/usage/version was printed (exit 0), -1 on a
 * bad command line; the one-line cause is printed to err.
 */
int nt_cli_parse(int argc, char **argv, struct nt_config *cfg, FILE *err);
void nt_config_free(struct nt_config *cfg);	/* what nt_cli_parse allocated when it returned 0 */

/*
 * "50,90,99.9" -> pcts, and each as spelled into labels (NULL: not kept);
 * decimal numbers only (no sign, exponent, hex, inf or nan), each once.
 * 0 or -1 with a message in err.
 */
int nt_parse_percentiles(const char *s, double *pcts, char (*labels)[NT_PCT_LABEL], int *n, char *msg,
			 size_t msglen);
/* a percentile's label: its spelling if given, else the shortest decimal that reads back as p (50, 99.9) */
void nt_pct_label(double p, const char *spelled, char *buf, size_t len);
int nt_parse_group_by(const char *s, unsigned int *gb, char *msg, size_t msglen);
/* record --rotate: "64M" (bytes, K M G) or "10m" (s m h) into *bytes or *ns (the other 0): 0, or -1 */
int nt_parse_rotate(const char *s, uint64_t *bytes, uint64_t *ns);
/* "2026-11-25T14:00:05.5Z" (RFC 3339, any offset) or "90.5" (seconds from the start): 0, or -1 */
int nt_parse_when(const char *s, struct nt_when *w);

#endif
