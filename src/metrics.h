/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * metrics - "ntbpf live --metrics ADDR:PORT": the live intervals as an
 * OpenMetrics / Prometheus text endpoint.
 *
 *   nt_metrics_add()       the live loop hands over each finished interval
 *                          (its report: groups and stage histograms)
 *   nt_metrics_render()    pure: the exposition into a FILE * (unit-tested)
 *   nt_metrics_serve()     a small HTTP server in its own thread: the live
 *                          loop never waits for a client
 *
 * Counters are cumulative since start; histogram bucket bounds grow by at
 * most 5 % from 0.95 us to past 10 s (nt_metrics_bounds_ns) and never split
 * a bucket of the report's histogram, so that PromQL's histogram_quantile
 * (linear inside a bucket) is within 5 % of ntbpf's own percentile for
 * latencies in 1 us - 10 s (tests/unit/test_metrics.c).
 */
#ifndef NTBPF_METRICS_H
#define NTBPF_METRICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct nt_report;
struct nt_interval_info;
struct nt_metrics;
struct nt_metrics_server;

/* lost-record causes, as ntbpf_lost_records_total{cause=...} */
enum nt_metrics_lost { NT_ML_RINGBUF, NT_ML_MAP_FULL, NT_ML_NO_COMPLETE, NT_ML_PROG_MISSES, NT_ML_NO_START, NT_ML_NOT_RUN, NT_ML_NR };

/* the histogram's finite upper bounds in ns, ascending; *n gets their number */
const uint64_t *nt_metrics_bounds_ns(size_t *n);

/* role: "initiator" or "target", the role label of every series */
struct nt_metrics *nt_metrics_new(const char *role);
void nt_metrics_free(struct nt_metrics *m);
/* one finished interval: its groups' I/O counts and stage histograms. 0, or -1 (out of memory) */
int nt_metrics_add(struct nt_metrics *m, const struct nt_report *rep);
/* cumulative lost records by cause (NT_ML_*) */
void nt_metrics_set_lost(struct nt_metrics *m, const uint64_t lost[NT_ML_NR]);
/* peer: -1 no --peer (no ntbpf_peer_up series), 0 down, 1 up */
void nt_metrics_set_peer(struct nt_metrics *m, int up);
void nt_metrics_set_hooks(struct nt_metrics *m, int attached);
/* nt_report_opts.on_interval for ctx = the metrics: add, and the peer's state */
void nt_metrics_on_interval(void *ctx, const struct nt_report *rep, const struct nt_interval_info *info);

/* the exposition: OpenMetrics 1.0 (ends with "# EOF") or Prometheus text 0.0.4 */
void nt_metrics_render(FILE *out, struct nt_metrics *m, bool openmetrics);
/* what an Accept header asks for: true for OpenMetrics */
bool nt_metrics_wants_openmetrics(const char *accept);

/*
 * The HTTP reply to one raw request (pure; the server's core): status line,
 * headers and body into out.  Returns the HTTP status.
 */
int nt_metrics_http_reply(FILE *out, struct nt_metrics *m, const char *req, size_t len);

/* is this address (numeric or a name) loopback only? -1 if it does not resolve */
int nt_metrics_addr_is_loopback(const char *host);

/*
 * Listen on ADDR:PORT (a non-loopback address only with allow_remote) and
 * serve /metrics from a thread.  NULL with a one-line cause in err.
 */
struct nt_metrics_server *nt_metrics_serve(struct nt_metrics *m, const char *addr, bool allow_remote, char *err,
					   size_t errlen);
void nt_metrics_server_stop(struct nt_metrics_server *s);
/* the port it listens on (for ADDR:0) */
int nt_metrics_server_port(const struct nt_metrics_server *s);

#endif
