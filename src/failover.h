/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * failover - I/Os that native NVMe multipath sent down another path.  A
 * request that ends in a path error (NVMe status type 3: 0x370 host pathing
 * error, 0x371 command aborted by host when a controller's queues are torn
 * down, ANA states) on a multipath namespace does not fail: nvme_failover_req
 * steals its bios to the namespace head's requeue list and ends the request;
 * the head resubmits the bios on a path that works, as a new request.  Both
 * requests are records.  They are linked here by what the bio keeps across
 * the two: the namespace head (the record's dev), the starting sector, the
 * size and the operation, the retry starting after the first one's NVMe
 * completion: the earliest such record within NT_FO_WINDOW records (+ up to 255) of the
 * first (in file order, either side: files are in order of completion per
 * CPU).  A bio retried again is a chain; the report counts each original
 * I/O once, with its end_to_end from the first request's start to the last
 * retry's end.  Bounded work: at most NT_FO_OPEN path errors wait for their
 * retry at a time, and NT_FO_BUDGET comparisons in all (a hostile file of
 * path errors: past it, path errors are still counted, no longer linked).
 * Pure: no BPF, no I/O.
 */
#ifndef NTBPF_FAILOVER_H
#define NTBPF_FAILOVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "ntbpf.h"

#define NT_FO_WINDOW 4096	/* records a path error looks back and ahead for its retry (a power of two) */
#define NT_FO_OPEN 1024		/* path errors looking ahead at a time (more: the oldest is resolved early) */
#define NT_FO_BUDGET (1ull << 26)	/* comparisons in all (a hostile file of path errors): then no more links */

/* whether r is an initiator NVMe I/O that ended in a path error (SCT 3): multipath retries its bios */
bool nt_fo_path_error(const struct ntbpf_rec *r);

/* one request as the linker keeps it */
struct nt_fo_req {
	uint64_t start, done, end;	/* host monotonic ns: first event, NVMe completion (or end), last event */
	uint64_t sector, idx;		/* idx: the caller's index of the record */
	uint32_t dev, bytes, host;
	uint16_t status, ctrl;
	uint8_t op;
};

/* a request whose bios were retried, and its retry (the earliest after it) */
struct nt_fo_link {
	struct nt_fo_req first, retry;
};

struct nt_fo_open {
	struct nt_fo_req f, best;
	uint64_t at;		/* records fed when f came */
	bool has;
};

struct nt_failover {
	struct nt_fo_req *recent;	/* the last NT_FO_WINDOW requests fed (a ring) */
	uint64_t fed;
	struct nt_fo_open *open;	/* path errors still looking for their retry */
	size_t nopen, capopen;
	struct nt_fo_link *links;	/* resolved by nt_fo_finish, in the order of the first requests' starts */
	size_t nlinks, caplinks;
	uint64_t path_errors;		/* requests that ended in a path error */
	uint64_t unretried;		/* of which no retry was found */
	uint64_t work;			/* comparisons made (NT_FO_BUDGET) */
	bool oom;
};

/* the summary a report prints */
struct nt_fo_summary {
	uint64_t path_errors;	/* requests ended in a path error (every try counted) */
	uint64_t ios;		/* original I/Os whose bios were retried (a chain once) */
	uint64_t retries;	/* retry requests linked */
	uint64_t unretried;	/* path errors with no retry found among the records */
	double e2e_avg_us, e2e_p50_us, e2e_p99_us, e2e_max_us;	/* first start -> last retry's end */
};

void nt_fo_init(struct nt_failover *fo);
struct nt_header;
/* a number for a record file's host, as nt_fo_feed takes it: its boot (one monotonic clock), hashed */
uint32_t nt_fo_host(const struct nt_header *h);
/* one initiator record (others are ignored); host: a number for its host; idx: the caller's, unique per record; -1 out of memory */
int nt_fo_feed(struct nt_failover *fo, const struct ntbpf_rec *r, uint32_t host, uint64_t idx);
/* after the last record: the links (fo->links), sorted by the first request's start */
int nt_fo_finish(struct nt_failover *fo);
void nt_fo_summarize(const struct nt_failover *fo, struct nt_fo_summary *s);
void nt_fo_free(struct nt_failover *fo);

#endif
