/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * input - one record file as the report reads it: header, records (or
 * nothing, when the caller takes them one by one), how the read ended, and
 * the trailer's counts.  A file cut short keeps what its whole chunks hold.
 */
#ifndef NTBPF_INPUT_H
#define NTBPF_INPUT_H

#include <stdbool.h>
#include <stdio.h>
#include "recfile.h"

struct nt_input {
	const char *path;
	struct nt_header hdr;
	struct ntbpf_rec *recs;	/* records held in memory (live's intervals; the tests), else NULL */
	size_t n;
	enum nt_read_status status;
	char status_msg[256];	/* why not OK */
	bool has_trailer;
	struct nt_trailer trailer;
};

/* the header's arrays and recs (where the caller put them there with malloc: the tests' loader) */
void nt_input_free(struct nt_input *in);

/*
 * Read a record file, handing each record to each() (non-zero: out of
 * memory, stop); header, count, status and trailer into in.  0, or -1 with
 * a one-line cause in err.
 */
int nt_input_scan(struct nt_input *in, FILE *f, const char *name, char *err, size_t errlen,
		  int (*each)(void *ctx, struct nt_input *in, const struct ntbpf_rec *r), void *ctx);

/*
 * The same a chunk at a time, for reading several files side by side:
 * open (header into in, or NULL with a one-line cause in err), take chunks
 * (counted in in->n; 0 at the end), close (status and trailer into in).
 */
struct nt_reader *nt_input_open(struct nt_input *in, FILE *f, const char *name, char *err, size_t errlen);
size_t nt_input_chunk(struct nt_input *in, struct nt_reader *rd, const struct ntbpf_rec **recs);
void nt_input_close(struct nt_input *in, struct nt_reader *rd);

/*
 * Inputs that would count I/Os twice, refused (not counted once: a name given
 * twice, a copy, or a glob over a folder holding one is a mistake the user
 * should hear about).  A recording is its host's role, hostname, boot and
 * start (CLOCK_MONOTONIC at its start: each file of a "record --rotate"
 * series has its own): two inputs with the same are one recording (a file
 * without a boot id, made by hand, is not compared).  With
 * spans (after the files were read: the trailers' end times), two
 * recordings of one role, host and boot whose spans overlap and whose -d
 * devices meet recorded the same I/Os.  0, or -1 with a one-line cause
 * naming both inputs (in->path) in err.
 */
int nt_inputs_twice(const struct nt_input *ins, int n, bool spans, char *err, size_t errlen);

/*
 * What the inputs' trailers say was lost while recording, summed over them
 * (a file without a trailer says nothing): what the report's head shows and
 * "ntbpf script" notes.
 */
struct nt_unseen {
	uint64_t lost;		/* ring buffer + map full + user space + skipped runs + no completion */
	uint64_t why[6];	/* ring buffer, map full, program runs skipped, no completion, user space, not run */
	uint64_t no_start, inflight_end;	/* I/Os in flight at the recording's start, at its stop */
};
void nt_inputs_unseen(const struct nt_input *ins, int n, struct nt_unseen *u);

/* a growing array of n elements of size sz (zero it, set sz) */
struct nt_vec {
	void *v;
	size_t n, cap, sz;
};

int nt_vec_grow(struct nt_vec *a);

/* room for one more element, or NULL */
static inline void *nt_vec_push(struct nt_vec *a)
{
	if (__builtin_expect(a->n == a->cap, 0) && nt_vec_grow(a))
		return NULL;
	return (char *)a->v + a->sz * a->n++;
}

#endif
