/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * html - "ntbpf report --format html": one self-contained file (inline SVG
 * and CSS; no script, no font or anything else from the network).  On top
 * the text report's head (inputs, what it could not see); per group its
 * table, a stacked bar of the stages at p50 and at p99, a heatmap of
 * end_to_end over time (log2 us bins), and each stage's p50 and p99 over
 * time.  The charts are drawn from every I/O (src/script.h's rows).
 */
#ifndef NTBPF_HTML_H
#define NTBPF_HTML_H

#include <stdio.h>
#include "render.h"
#include "script.h"

#define NT_HTML_TBINS 60	/* time columns of the charts */
#define NT_HTML_MAX_GROUPS 64	/* groups drawn (all are in the tables) */

/* 0, or -1 (out of memory, or the files could not be read again) */
int nt_report_html(FILE *out, const struct nt_report *rep, struct nt_rows *rows);

/* HTML text: & < > " ' escaped (strings already made printable by nt_put_term) */
void nt_put_html(FILE *out, const char *s);

#endif
