/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * live - stage latencies every interval while the workload runs: "ntbpf live"'s intervals
 * (live.c: this host's records through src/interval.h, the peer's merged in; the in-kernel
 * histograms' differences), run by liverun.c.  "ntbpf record --interval" uses src/interval.h
 * alone.
 *
 *   ntbpf live [interval] [count]             this host's stages
 *   ntbpf live --serve ADDR:PORT ...          (target) also stream every record to a peer
 *                                             (--key DIR: to a peer per host, its host's records)
 *   ntbpf live --peer ADDR:PORT ...           (initiator) merge the target's records: all ten stages
 *   ntbpf record --interval SEC ...           the same lines while recording to a file (interval.h)
 *
 * The stream (stream.h) is the record file format itself (docs/record-format.md) after an
 * HMAC handshake: a header, then one chunk per interval; a peer that drops is reported and
 * reconnected.
 */
#ifndef NTBPF_LIVE_H
#define NTBPF_LIVE_H

#include <stdbool.h>
#include <stdio.h>
#include "cli.h"
#include "interval.h"
#include "recfile.h"
#include "stream.h"
#include "ntbpf_stages.h"
#include "ntbpf_kh.h"

struct nt_live;
struct nt_report;
struct nt_interval_info;

/* per-interval aggregation for one host (and its peer's records, if any) */
struct nt_live *nt_live_new(const struct nt_config *cfg, const struct nt_header *local);
void nt_live_push(struct nt_live *l, const struct ntbpf_rec *r);
/* the end of an interval of 'secs' seconds: print it; lost = records lost in it */
void nt_live_tick(struct nt_live *l, FILE *out, double secs, uint64_t lost);
void nt_live_free(struct nt_live *l);
/* each interval's report also goes to fn(ctx, ...) before it is printed (--metrics) */
void nt_live_on_interval(struct nt_live *l, void (*fn)(void *ctx, const struct nt_report *rep,
						       const struct nt_interval_info *info), void *ctx);
/* the local header again (the caller's arrays moved: --group-by queue reads the queues every interval) */
void nt_live_set_local(struct nt_live *l, const struct nt_header *local);
/* records held per interval and waiting from the peer, each (default NT_STREAM_MAX_RECS); more are dropped */
void nt_live_set_cap(struct nt_live *l, size_t max_recs);
/* initiator: read the target's record stream from ADDR:PORT (a thread; reconnects); key NULL: none */
int nt_live_peer(struct nt_live *l, const char *addr, const struct nt_key *key, char *err, size_t errlen);
/* the peer's state now (zeroes without a peer) */
void nt_live_peer_status(struct nt_live *l, struct nt_stream_status *st);

/*
 * In-kernel histograms (ntbpf_kh.h), one group: the interval's values from every
 * CPU's value now and at the last interval.  Bucket counters are 32 bits per
 * CPU: their differences are taken per CPU, modulo 2^32, then summed.
 */
uint64_t nt_kh_ios(const struct nt_kh_gval *now, const struct nt_kh_gval *prev, int ncpu);
/* slot i: values added, their sum and the buckets (NT_KH_NB, zeroed first); the count */
uint64_t nt_kh_slot_interval(const struct nt_kh_gval *now, const struct nt_kh_gval *prev, int ncpu, int slot,
			     uint64_t *count, uint64_t *sum, uint64_t *b);
/*
 * One group's interval into rep: its I/O count, (queue groups) its depths,
 * each stage's histogram; b: scratch of NT_KH_NB.  The group's I/Os.
 */
uint64_t nt_kh_add_group(struct nt_report *rep, const struct nt_kh_gkey *key, const struct nt_kh_gval *now,
			 const struct nt_kh_gval *prev, int ncpu, uint64_t *b);
/* the queue depths the group's I/Os saw (NT_KH_DEP_NB buckets, zeroed first); how many */
uint64_t nt_kh_depth_interval(const struct nt_kh_gval *now, const struct nt_kh_gval *prev, int ncpu, uint64_t *sum,
			      uint64_t *b);

#endif
