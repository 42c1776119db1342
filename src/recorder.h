/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * recorder - what "ntbpf record" (bpfrec.c) and "ntbpf live" (liverun.c),
 * siblings, share: preflight, the header, the stop signal and the drain loop
 * (the ring-buffer rounds, the intervals).
 */
#ifndef NTBPF_RECORDER_H
#define NTBPF_RECORDER_H

#include "cli.h"
#include "ntbpf.h"
#include "recfile.h"
#include "sysinfo.h"

struct nt_probes;
struct ring_buffer;

/* root, BTF, role, -d devices: the role, or -1 after a one-line error naming cmd */
int nt_record_preflight(const struct nt_config *cfg, const char *cmd, struct nt_devset *devs);
/* the file/stream header of a recording: identity, devices, controllers, hooks */
void nt_record_header(struct nt_header *hdr, const struct nt_config *cfg, int role, struct nt_devset *devs,
		      const struct nt_probes *pr, int argc, char **argv);
/* wait up to timeout_ms for records, then take all there are: records taken, or a negative errno */
int nt_recorder_poll(struct ring_buffer *rb, int timeout_ms);

/*
 * The stop signal, one handler for both commands: SIGINT and SIGTERM (and
 * SIGHUP with hangup: an ssh drop ends a recording like Ctrl-C) ask the
 * loop to stop; SIGPIPE is ignored (a closed stderr must not kill us
 * before the trailer).
 */
void nt_recorder_signals(bool hangup);
/* the signal that asked to stop, or 0 */
int nt_recorder_stop_signal(void);

/*
 * The drain loop of record and live.  Each round waits for records (100 ms
 * at most, and no later than the interval's end), takes what the ring
 * buffer holds (its callback is the command's), then calls round; at each
 * interval's end, tick.  It ends when round says so, after count
 * intervals, or on a stop signal that on_signal does not take (NULL: every
 * signal stops).  The ring-buffer callback, round and tick are the
 * command's: a file (record), the live lines, the stream, the metrics.
 */
struct nt_loop {
	const char *cmd;		/* "record", "live": its messages */
	struct ring_buffer *rb;
	uint64_t interval_ns;		/* 0: no intervals */
	int count;			/* intervals, then stop; 0: until stopped */
	/* after each poll, with the records it took: 0 goes on, 1 stops */
	int (*round)(void *ctx, int n);
	/* an interval ended, secs long */
	void (*tick)(void *ctx, double secs);
	/* a stop signal came: 1 stops, 0 goes on (the signal is cleared) */
	int (*on_signal)(void *ctx, int sig);
	void *ctx;
	uint64_t t_last;		/* out: when the last interval ended (CLOCK_MONOTONIC), or the loop began */
};
/* 0: stopped; -1: the ring buffer's poll failed (said on stderr) */
int nt_recorder_loop(struct nt_loop *lp);
#endif
