/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * script - "ntbpf script": one row per I/O (as perf script, biosnoop), CSV
 * or JSON Lines, a matched initiator/target pair merged into one row.
 *
 * Two passes over the files: the first pairs I/Os (src/match.h) keeping 32
 * bytes per record and each target record's stages (struct nt_sum); the
 * second reads the files side by side and prints, in order of completion
 * time, through a reorder buffer of fixed size.  Standard input is copied
 * to an unlinked temporary file first.
 */
#ifndef NTBPF_SCRIPT_H
#define NTBPF_SCRIPT_H

#include <stdio.h>
#include "cli.h"

/* rows the reorder buffer holds: records of one file out of completion order by more are counted */
#define NT_SCRIPT_WINDOW 65536

/* "ntbpf script": 0, or 1 when an input was unreadable (nothing printed) or cut short (printed) */
int nt_script_cmd(const struct nt_config *cfg, FILE *out, FILE *err);

#endif
