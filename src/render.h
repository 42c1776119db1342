/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * render - a built report (src/groups.h) as text (an ntprof-like table), JSON
 * (docs/report-json.md) or CSV; whole ("ntbpf report") or one interval at a
 * time (ntbpf live, record --interval).  The report command (src/report.h)
 * picks one, or HTML (src/html.h, which prints the text's head and tables).
 */
#ifndef NTBPF_RENDER_H
#define NTBPF_RENDER_H

#include <stdio.h>
#include "groups.h"

/* the whole report in one format */
void nt_report_print_text(FILE *out, const struct nt_report *rep);
void nt_report_print_json(FILE *out, const struct nt_report *rep);
void nt_report_print_csv(FILE *out, const struct nt_report *rep);
/* the text report's parts: its head (inputs, what it could not see), one group's table */
void nt_report_print_head(FILE *out, const struct nt_report *rep);
void nt_report_print_group(FILE *out, const struct nt_report *rep, int gi);
/* why a report has no group: "no I/O recorded", or no I/O in the --since/--until window */
const char *nt_report_empty_why(const struct nt_report *rep);

/* live's CSV header line (time,interval_s,op,...), once before the first interval; nothing for text and JSON */
void nt_report_interval_header(FILE *out, const struct nt_report_opts *o);

/* one interval: text block (time, IOPS, a table per group), one JSON object per line, or CSV rows
 * (one per group and stage, each led by the interval's RFC 3339 time and length) */
void nt_report_print_interval(FILE *out, const struct nt_report *rep, const char *when, double secs,
			      const struct nt_interval_info *info);

#endif
