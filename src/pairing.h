/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * pairing - the input-and-pairing pass that every output of record files
 * shares ("ntbpf report", its HTML charts, "ntbpf script"): open the files
 * ("-": standard input), read them (src/input.h), refuse one recording given
 * twice, warn of a file cut short, pair each initiator I/O with its target
 * record (an engine of src/match.h), and hand each record to the output's
 * take() and each I/O (a pair, or a record alone) to its emit().  A new
 * output gets pairing by calling one function:
 *
 *   nt_pair_open()   the command's files, opened to read
 *   nt_pair_files()  streaming, in memory bounded by the pairing window, an
 *                    initiator's file (or "record --rotate" series) against
 *                    a target's; more of both, a fleet ("ntbpf report")
 *   nt_pair_whole()  every record's item in memory, the pairing kept as
 *                    indexes for a second read in time order (src/script.c)
 *
 * Below the outputs (src/groups.c builds the report through it), above the
 * engines (src/match.h) and the reader (src/input.h).
 */
#ifndef NTBPF_PAIRING_H
#define NTBPF_PAIRING_H

#include <stdbool.h>
#include <stdio.h>
#include "input.h"
#include "match.h"

struct nt_pair_ops {
	/* bytes an output keeps per record of each side ([0] initiator, [1] target; 0: none, take gets NULL)
	 * until its I/O is emitted; nt_pair_files: the two the same */
	size_t payload[2];
	/* a record read (not an admin command; h: its file's header; role: its side): fill its payload.
	 * 0, or -1 (out of memory: stop) */
	int (*take)(void *ctx, const struct ntbpf_rec *r, const struct nt_header *h, uint8_t role, void *payload);
	/* nt_pair_files: one I/O, its initiator's and/or its target's payload (the other NULL).  0, or -1: stop */
	int (*emit)(void *ctx, const void *init, const void *tgt);
	/* nt_pair_files, optional: every header is read, no record yet */
	void (*start)(void *ctx, const struct nt_input *ins, int n);
	/* nt_pair_files, optional: set while the records may be read more than once (a fleet pairs each
	 * initiator's records once per target's), and after when they were */
	bool *rereads;
	void *ctx;
};

/*
 * files[i] (names[i] for messages) opened to read into files[]: "-" is
 * standard input, read front to back (a pipe will do), or with again
 * copied to an unlinked temporary file first, to be read twice
 * (nt_open_input).  0; -1 after "PROG: cannot open NAME: why" on err (the
 * files opened so far stay in files[] for the caller to close).
 */
int nt_pair_open(FILE **files, const char *const *names, int n, bool again, const char *prog, FILE *err);
/* open a file to read, "-" standard input copied to an unlinked temporary file; NULL with errno */
FILE *nt_open_input(const char *name);

/*
 * Streaming: read files[0..n) side by side, each file once (a fleet: again
 * per run, or whole when a file cannot be read again), and pair their
 * records with window_ns (0: NT_PAIR_WINDOW_NS): every record goes to take()
 * and then, in its I/O, to emit() exactly once.  The files of one "record
 * --rotate" series are read as one.  Counts into m (zeroed by the caller).
 * ins[i] gets file i's header, count, status and trailer; a file cut short
 * gets "PROG: warning: NAME: why" on warn.  0; -1 with a one-line cause in
 * err (a file not readable at all, one recording twice, out of memory).
 */
int nt_pair_files(struct nt_matching *m, struct nt_input *ins, FILE *const *files, const char *const *names, int n,
		  uint64_t window_ns, const struct nt_pair_ops *ops, const char *prog, FILE *warn, char *err,
		  size_t errlen);

/*
 * Whole: each file read in turn (rewound first) into memory, each record as
 * its item (32 bytes) and its payload, then paired (nt_match_items).  What
 * stays: m (pidx, tgt_matched: each I/O's partner by index), pay[side] (the
 * payloads in file order), at[side][f] (where file f's records start among
 * them; at[side][n] their count) and whether a file was cut short (warned:
 * "PROG: warning: NAME: why" on err).  0, or -1 after "PROG: ..." on err.
 * nt_paired_free frees what the pass left, in any case.
 */
struct nt_paired {
	struct nt_matching m;
	struct nt_vec pay[2];
	size_t *at[2];
	bool cut;
};
int nt_pair_whole(struct nt_paired *p, struct nt_input *ins, FILE *const *files, const char *const *names, int n,
		  const struct nt_pair_ops *ops, const char *prog, FILE *err);
void nt_paired_free(struct nt_paired *p);

#endif
