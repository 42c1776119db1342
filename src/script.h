/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * script - "ntbpf script": one row per I/O (as perf script, biosnoop), CSV
 * or JSON Lines, a matched initiator/target pair merged into one row.
 *
 * Two passes over the files (nt_rows_*, also what the HTML report's
 * charts are drawn from): the first pairs I/Os (src/match.h) keeping 32
 * bytes per record and each target record's stages (struct nt_sum); the
 * second reads the files side by side, in order of completion time, and
 * hands over each I/O as a row.  "ntbpf script" prints them through a
 * reorder buffer of fixed size.  Pass 1 is the input-and-pairing pass's
 * whole form (src/pairing.h: nt_pair_whole); standard input is copied to an
 * unlinked temporary file first (nt_pair_open, nt_open_input).
 */
#ifndef NTBPF_SCRIPT_H
#define NTBPF_SCRIPT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include "cli.h"
#include "input.h"
#include "ntbpf.h"
#include "ntbpf_stages.h"

/* rows the reorder buffer holds: records of one file out of completion order by more are counted */
#define NT_SCRIPT_WINDOW 65536

enum nt_row_match { NT_ROW_BOTH, NT_ROW_INIT, NT_ROW_TGT };

/* one I/O: its initiator's record's fields (or the target's, alone), and its stages */
struct nt_row {
	uint64_t time;		/* completion, wall clock ns */
	uint64_t lba;
	uint32_t dev, bytes, mask;	/* mask: stages in vals */
	uint32_t vals[NT_ST_NR];	/* ns */
	uint16_t qid, cid, ctrl, status, file, tfile;	/* file: its record's input; tfile: its partner's */
	uint16_t path;		/* native multipath: the path's controller instance + 1 (nt_path_of); 0 none */
	uint32_t failed_over, retry_of;	/* multipath (failover.h): N > 0 when this request's bios were retried
					 * (link N), or when it is link N's retry; 0 none */
	uint8_t op, role, flags, match;
	bool status_nvme;
};

struct nt_rows;

/*
 * Pass 1 over files[0..n) (rewindable; names for messages): ins[i] gets
 * each header, count and status (a cut file: a warning on err).  0, or -1
 * with a one-line cause printed on err as "PROG: ...".
 */
int nt_rows_open(struct nt_rows **rs, struct nt_input *ins, FILE *const *files, const char *const *names, int n,
		 const char *prog, FILE *err);
/* pass 2: each I/O once, in order of completion time per file; each() non-zero stops.  0, or -1 */
int nt_rows_each(struct nt_rows *rs, int (*each)(void *ctx, const struct nt_row *w), void *ctx);
/* whether a file was cut short or damaged (warned) */
bool nt_rows_cut(const struct nt_rows *rs);
void nt_rows_free(struct nt_rows *rs);


/* "ntbpf script": 0, or 1 when an input was unreadable (nothing printed) or cut short (printed) */
int nt_script_cmd(const struct nt_config *cfg, FILE *out, FILE *err);

#endif
