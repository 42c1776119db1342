/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * match - pair each initiator I/O with its target record.
 *
 * Identity: (cntlid, qid, cid), and the queue's TCP connection: both hosts'
 * records carry the initiator's port of it, which must agree where both have
 * it (cntlids collide across target hosts, and on targets that number them
 * per subsystem).  The initiator's records carry the nvme
 * controller instance; its file header maps instance -> cntlid (sysfs).  A
 * cid (generation bits + tag) comes back often, so order and timing decide:
 * the two hosts' clocks are related by an unknown offset, which is
 * estimated from the data itself (every true pair constrains it: the
 * target's residence must fit inside the initiator's wait), and then each
 * initiator I/O takes the first target record of its (cntlid, qid, cid)
 * that fits.  Clocks are only used to choose partners: no stage ever
 * subtracts times of two hosts.
 */
#ifndef NTBPF_MATCH_H
#define NTBPF_MATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "ntbpf.h"

struct nt_input;

struct nt_matching {
	size_t n_init, n_tgt;
	const struct ntbpf_rec **init;		/* initiator I/O records (admin left out) */
	const struct ntbpf_rec **partner;	/* per init: its target record, or NULL */
	const struct ntbpf_rec **tgt;
	bool *tgt_matched;
	size_t matched;
	size_t by_port;				/* ... of which both records had the queue's TCP port */
	size_t admin;				/* admin-queue records, left out */
	int64_t offset_ns;			/* target clock - initiator clock (last file pair) */
	size_t offset_votes;			/* sample pairs that agreed on it */
	bool have_offset;
	size_t no_cntlid;			/* initiator I/Os whose controller the header does not map */
	size_t shared_cntlid;			/* ... whose cntlid another controller of the host shares,
						 * paired without a queue port on one side */
};

/* 0, or -1 on allocation failure */
int nt_match_build(struct nt_matching *m, const struct nt_input *ins, int nins);
void nt_match_free(struct nt_matching *m);

/* exposed for tests: the window [lo, hi] of a record in its host's clock */
void nt_rec_window(const struct ntbpf_rec *r, uint64_t *lo, uint64_t *hi);

#endif
