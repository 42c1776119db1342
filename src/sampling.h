/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * sampling - "record --sample N" by time: the hooks are attached during one
 * window of W in every N*W of the wall clock, and every I/O of a window is
 * recorded.  Windows are aligned to the epoch, so hosts whose clocks agree
 * (NTP) choose the same windows without talking to each other.  Pure.
 */
#ifndef NTBPF_SAMPLING_H
#define NTBPF_SAMPLING_H

#include <stdbool.h>
#include <stdint.h>

struct nt_windows {
	uint64_t w_ns;		/* window length */
	uint64_t p_ns;		/* period: one window every p_ns (N * w_ns) */
	uint64_t lead_ns;	/* the hooks are armed this long before a window and paused this
				 * long after it (the recorder adapts it to how long arming takes;
				 * the BPF side keeps the edges) */
};

/* windows of window_ms, one in every n (n < 2 counts as 2) */
struct nt_windows nt_windows_of(uint32_t n, uint32_t window_ms);
/*
 * Whether wall-clock time real_ns lies in a window or within the lead
 * before or after one (armed); *start_ns: that window's start, else the
 * next one's; *next_ns: when that changes (a lead after the window's end,
 * or a lead before the next one).
 */
bool nt_window_at(const struct nt_windows *w, uint64_t real_ns, uint64_t *start_ns, uint64_t *next_ns);
/*
 * Whether the tracepoint hooks are detached between windows: where the gap
 * between two windows is at least NT_DETACH_GAP_NS.  Detaching waits for an
 * RCU grace period (tens to hundreds of ms), which must end long before
 * the next window; nearer windows only pause the programs.
 */
#define NT_DETACH_GAP_NS 1000000000ull
bool nt_windows_detach(const struct nt_windows *w);

#endif
