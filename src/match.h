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
 * target's residence must fit inside the initiator's wait), segment by
 * segment (up to 1 s or 32 k I/Os each) because clocks drift apart, and
 * then each initiator I/O takes the first target record of its (cntlid,
 * qid, cid) that fits, at the offset interpolated for its time.  Clocks are only used to choose partners: no stage ever
 * subtracts times of two hosts.
 */
#ifndef NTBPF_MATCH_H
#define NTBPF_MATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "ntbpf.h"

struct nt_input;
struct nt_header;

/*
 * What matching needs of a record: its window in its host's clock and its
 * key, with the queue's port in the top 16 bits.  32 bytes; built in one
 * pass over the records (or while they are read: nt_report_cmd keeps no
 * records in memory).
 */
struct nt_mitem {
	uint64_t lo, hi;
	uint64_t kq;		/* port << 48 | cntlid << 32 | qid << 16 | cid */
	uint32_t idx;		/* position among its side's items; bit 31 on a target item: paired */
	uint32_t kid;		/* initiator: NT_NO_KEY if it cannot be paired; target: dense key id */
};

#define NT_NO_KEY UINT32_MAX

enum nt_side { NT_SIDE_ADMIN, NT_SIDE_INIT, NT_SIDE_TGT };

/*
 * The side a record goes to, and its item (for NT_SIDE_INIT and
 * NT_SIDE_TGT).  h is its file's header (instance -> cntlid); *no_cntlid is
 * set for an nvme initiator I/O whose controller the header does not map.
 */
enum nt_side nt_mitem_of(const struct ntbpf_rec *r, const struct nt_header *h, struct nt_mitem *x,
			 bool *no_cntlid);

struct nt_matching {
	size_t n_init, n_tgt;
	uint32_t *pidx;				/* per init: 1 + index of its target record, or 0 */
	bool *tgt_matched;
	/* nt_match_build only: the records themselves */
	const struct ntbpf_rec **init;		/* initiator I/O records (admin left out) */
	const struct ntbpf_rec **partner;	/* per init: its target record, or NULL */
	const struct ntbpf_rec **tgt;
	size_t matched;
	size_t by_port;				/* ... of which both records had the queue's TCP port */
	size_t admin;				/* admin-queue records, left out */
	int64_t offset_ns;			/* target clock - initiator clock (last file pair, at its start) */
	int64_t offset_drift_ns;		/* ... and how far it moved by the end */
	size_t offset_votes;			/* sample pairs that agreed on it */
	bool have_offset;
	size_t no_cntlid;			/* initiator I/Os whose controller the header does not map */
	size_t shared_cntlid;			/* ... whose cntlid another controller of the host shares,
						 * paired without a queue port on one side */
	/* nt_smatch_run only */
	uint64_t window_ns;			/* the pairing window */
	size_t slow_init, slow_tgt;		/* records that came later than the window after their
						 * start: paired only if their partner was still held */
};

/*
 * Pair items: file f's are ii[init_at[f], init_at[f + 1]) and
 * ti[tgt_at[f], tgt_at[f + 1]), its header hdrs[f].  m->n_init, n_tgt,
 * admin and no_cntlid are the caller's; this allocates and fills pidx and
 * tgt_matched and the counts.  Items are reordered/marked: scratch.
 * 0, or -1 on allocation failure.
 */
int nt_match_items(struct nt_matching *m, struct nt_mitem *ii, const size_t *init_at, struct nt_mitem *ti,
		   const size_t *tgt_at, const struct nt_header *const *hdrs, int nfiles);

/*
 * Streaming: one initiator file against one target file, both read once,
 * in file order, side by side, in memory bounded by the window, not by the
 * length.  Records are read in time order (records are written at
 * completion): the target's are read ahead of the initiator's by the
 * window (and, until the clock offset is first found between hosts booted
 * apart, by the wall-clock prior's uncertainty, 5 s), and a target record
 * is let go when no initiator I/O still to come can be its partner.  An
 * I/O whose record completes more than window_ns after it started is
 * counted (slow_init, slow_tgt) and paired if its partner is still held.
 * Pairing is the whole-file one's (nt_match_items) decision for decision:
 * the same segments, estimates and first fit, the offset interpolated
 * between segments as soon as the next segment is known.
 */
struct nt_ssrc {
	const struct nt_header *hdr;
	/* the next records in file order (valid until the next call); 0 at the end */
	size_t (*chunk)(void *ctx, const struct ntbpf_rec **recs);
	void *ctx;
	/*
	 * Optional (a file, not a pipe): the same records from the start again,
	 * through a second source of its own (0; its hdr may stay NULL: the
	 * same), closed by close(); -1: cannot.
	 * The first clock-offset search between hosts booted apart reads ahead
	 * through it, keeping only what it needs, instead of holding 5 s of records.
	 */
	int (*reopen)(void *ctx, struct nt_ssrc *again);
	void (*close)(struct nt_ssrc *again);
};

struct nt_smatch_ops {
	size_t payload;		/* bytes kept per record until it is emitted */
	/* a record read (h: its file's header; role: its side): fill its payload.  0, or -1 (out of memory: stop) */
	int (*take)(void *ctx, const struct ntbpf_rec *r, const struct nt_header *h, uint8_t role, void *payload);
	/* one I/O: its initiator's and/or its target's payload (the other NULL).  0, or -1: stop */
	int (*emit)(void *ctx, const void *init, const void *tgt);
	void *ctx;
};

/*
 * Every record of init and tgt (either may be NULL: its records go out
 * alone) is emitted exactly once.  Counts add into m (zero it first);
 * pidx, tgt_matched, init, tgt and partner stay NULL.  0, or -1 (out of
 * memory, or take/emit failed).
 */
int nt_smatch_run(struct nt_matching *m, const struct nt_ssrc *init, const struct nt_ssrc *tgt, uint64_t window_ns,
		  const struct nt_smatch_ops *ops);
/*
 * More files of both sides (a fleet): every initiator file against every
 * target file, one streaming run each, in file order, as nt_match_items
 * pairs them; a record paired in one run is passed over in the later ones
 * (a bit per record), so memory is the window's and an eighth of a byte per
 * record.  Every source must read again (reopen): a file, not a pipe.  0;
 * -1 (out of memory, or take/emit failed); -2: a source cannot read again
 * (nothing was read: use nt_match_items).
 */
int nt_smatch_fleet(struct nt_matching *m, struct nt_ssrc *srcs, int n, uint64_t window_ns,
		    const struct nt_smatch_ops *ops);

/* the default window: longer than any I/O that completes (the kernel's nvme io_timeout is 30 s; a
 * slower I/O is counted, see above) */
#define NT_PAIR_WINDOW_NS 2000000000ull

/* the same from records in memory; also fills init, tgt and partner.  0, or -1 on allocation failure */
int nt_match_build(struct nt_matching *m, const struct nt_input *ins, int nins);
void nt_match_free(struct nt_matching *m);

/* exposed for tests: the window [lo, hi] of a record in its host's clock */
void nt_rec_window(const struct ntbpf_rec *r, uint64_t *lo, uint64_t *hi);

#endif
