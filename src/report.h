/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * report - the "ntbpf report" command (pure: no BPF): read the files, build
 * the report (src/groups.h), print it in the format asked for: text, JSON,
 * CSV (src/render.h) or HTML (src/html.h).  Above every output module; none
 * of them includes this header.
 */
#ifndef NTBPF_REPORT_H
#define NTBPF_REPORT_H

#include <stdbool.h>
#include <stdio.h>
#include "cli.h"
#include "groups.h"
#include "render.h"

/* the report in its options' format: text, JSON, CSV, or HTML's tables (without the charts) */
void nt_report_print(FILE *out, const struct nt_report *rep);

/*
 * -o output against the inputs: refused (-1, "PROG: ..." one line in msg)
 * when it is one of them (same device and inode) or an ntbpf record file;
 * else 0.  "-" and a file not there yet: 0.
 */
int nt_output_check(const char *output, const char *const *inputs, int n, const char *prog, char *msg, size_t len);

/* "ntbpf report": 0, or 1 when an input was unreadable (nothing printed) or cut short (printed) */
int nt_report_cmd(const struct nt_config *cfg, FILE *out, FILE *err);

#endif
