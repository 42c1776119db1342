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
	uint64_t fn_gap_ns;	/* the gap from which function hooks are detached too */
};

/*
 * What is detached between windows.  Tracepoint hooks: where the gap between
 * two windows is at least NT_DETACH_GAP_NS; detaching waits for an RCU grace
 * period (tens to hundreds of ms), which must end long before the next
 * window; nearer windows only pause the programs.  Function hooks too: where
 * the gap is at least fn_gap_ns (record --sample-detach all, the default:
 * NT_DETACH_FN_GAP_NS unless the recorder's test knob says otherwise;
 * --sample-detach tracepoints: UINT64_MAX, never).  Attaching and detaching
 * a function hook is an ftrace update of every traced function (on the lab's
 * 6.12 guest ~370 M instructions per window cycle for ~11 hooks, and
 * RCU-tasks grace periods: detaching took 2.5-5 s there), which pays where
 * windows are seconds apart: attached, each costs its dispatch on every I/O.
 * From 10 s: the default windows from --sample 100 on (100 s apart), not
 * --sample-window 100 at --sample 100 (a gap of 9.9 s).
 */
enum nt_detach { NT_DETACH_NONE, NT_DETACH_TP, NT_DETACH_ALL };
#define NT_DETACH_GAP_NS 1000000000ull
#define NT_DETACH_FN_GAP_NS 10000000000ull

/*
 * The default window: NT_SAMPLE_WINDOW_MS, or, from n = 100 on, as long as
 * makes windows NT_SAMPLE_PERIOD_MS apart (1 s at n = 100), never shorter
 * than NT_SAMPLE_WINDOW_MS.  Windows that far apart detach every hook between
 * them: an I/O between windows pays nothing, and the attach and detach (an
 * ftrace update per function hook, ~370 M instructions per cycle on the
 * lab's guest) is spread over 100 s.
 */
#define NT_SAMPLE_WINDOW_MS 100
#define NT_SAMPLE_PERIOD_MS 100000u
uint32_t nt_sample_window_ms(uint32_t n);

/* windows of window_ms, one in every n (n < 2 counts as 2) */
struct nt_windows nt_windows_of(uint32_t n, uint32_t window_ms);
/* the same, function hooks detached from a gap of fn_gap_ns */
struct nt_windows nt_windows_with(uint32_t n, uint32_t window_ms, uint64_t fn_gap_ns);
/*
 * Whether wall-clock time real_ns lies in a window or within the lead
 * before or after one (armed); *start_ns: that window's start, else the
 * next one's; *next_ns: when that changes (a lead after the window's end,
 * or a lead before the next one).
 */
bool nt_window_at(const struct nt_windows *w, uint64_t real_ns, uint64_t *start_ns, uint64_t *next_ns);
enum nt_detach nt_windows_detach(const struct nt_windows *w);

#endif
