/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* drainprio - record's drain loop gives way to the workload (record --nice). */
#ifndef NTBPF_DRAINPRIO_H
#define NTBPF_DRAINPRIO_H

#include <stdbool.h>
#include <stdint.h>

/*
 * The drain loop's priority (record --nice): it runs at nice `nice` so that
 * its bursts of draining and writing give way to the workload, and at the
 * nice it started with (or `nice`, if lower) while it is behind: from a
 * round that found a ring 3/4 full (or records in the shared ring buffer,
 * where the programs go when a ring is full) to one that finds no more than
 * 5/8 (the programs wake it at half).
 * Linux's nice is per thread: only the calling thread changes.
 */
struct nt_drain_prio {
	bool ok;		/* the nice values could be read and set */
	int idle, busy;		/* the nice values: keeping up, behind */
	int cur;
	uint64_t catchups;	/* rounds that went from idle to busy */
};
/* the nice for a round that found `backlog` of `cap` records waiting in the fullest ring (pure) */
int nt_drain_prio_next(int cur, int idle, int busy, uint64_t backlog, uint64_t cap);
void nt_drain_prio_start(struct nt_drain_prio *p, int nice);
void nt_drain_prio_round(struct nt_drain_prio *p, uint64_t backlog, uint64_t cap);

#endif
