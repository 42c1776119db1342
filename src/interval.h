/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * interval - one host's report, interval by interval, while I/O runs: the
 * records are pushed as they come (capped), and each tick groups them with
 * the report's aggregation (src/groups.h) and prints the interval's lines
 * (src/render.h: text, JSON Lines, CSV).  "ntbpf record --interval"
 * (src/bpfrec.c) and "ntbpf live" (src/live.c, which adds the peer's
 * records; src/liverun.c runs it) are siblings over this module: record
 * does not depend on live.
 */
#ifndef NTBPF_INTERVAL_H
#define NTBPF_INTERVAL_H

#include <stdbool.h>
#include <stdio.h>
#include "cli.h"
#include "groups.h"
#include "input.h"

/* records held in memory, at most a cap of them */
struct nt_recvec {
	struct ntbpf_rec *v;
	size_t n, cap;
};

/* r appended: 0, or -1 when max are held already (or out of memory) */
int nt_recvec_push(struct nt_recvec *v, const struct ntbpf_rec *r, size_t max);

struct nt_interval {
	struct nt_report_opts o;	/* the report's options (nt_report_opts_of), --metrics' callback */
	struct nt_input local;		/* this host's header (device names, controllers): the caller's arrays */
	struct nt_recvec cur;		/* this interval's records */
	size_t max_recs;		/* records held per interval (default NT_STREAM_MAX_RECS); more are dropped */
	uint64_t dropped;		/* records over the cap since the last tick (live: the peer's too) */
};

/* an interval over local (its arrays shared, never freed here); NULL when out of memory */
struct nt_interval *nt_interval_new(const struct nt_config *cfg, const struct nt_header *local);
void nt_interval_init(struct nt_interval *iv, const struct nt_config *cfg, const struct nt_header *local);
void nt_interval_push(struct nt_interval *iv, const struct ntbpf_rec *r);
/* the end of an interval of secs seconds: its records grouped and printed, then let go; lost: records lost in it */
void nt_interval_tick(struct nt_interval *iv, FILE *out, double secs, uint64_t lost);
/* now, as the interval's line says it (text: HH:MM:SS, else RFC 3339) */
void nt_interval_when(const struct nt_interval *iv, char *buf, size_t len);
/* what nt_interval_init took (the records); nt_interval_free also iv itself */
void nt_interval_fini(struct nt_interval *iv);
void nt_interval_free(struct nt_interval *iv);

/* now, "HH:MM:SS" (text), or RFC 3339 with milliseconds and zone (JSON Lines): 0, or -1 if it does not fit */
int nt_time_label(char *buf, size_t len, bool rfc3339);

#endif
