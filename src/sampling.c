// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* sampling.c - the windows of "record --sample N --sample-by time" (sampling.h) */
#include "sampling.h"

/*
 * armed from 50 ms before a window to 50 ms after it, at most a quarter of
 * the gap between windows; 1 s where the function hooks are attached at
 * each window (hundreds of ms on a busy lab guest)
 */
#define NT_WINDOW_LEAD_NS 50000000ull
#define NT_WINDOW_FN_LEAD_NS 1000000000ull

struct nt_windows nt_windows_with(uint32_t n, uint32_t window_ms, uint64_t fn_gap_ns)
{
	struct nt_windows w;
	uint64_t lead;

	w.w_ns = (uint64_t)window_ms * 1000000;
	w.p_ns = w.w_ns * (n < 2 ? 2 : n);
	w.fn_gap_ns = fn_gap_ns;
	lead = nt_windows_detach(&w) == NT_DETACH_ALL ? NT_WINDOW_FN_LEAD_NS : NT_WINDOW_LEAD_NS;
	w.lead_ns = (w.p_ns - w.w_ns) / 4 < lead ? (w.p_ns - w.w_ns) / 4 : lead;
	return w;
}

uint32_t nt_sample_window_ms(uint32_t n)
{
	if (n < 100 || NT_SAMPLE_PERIOD_MS / n < NT_SAMPLE_WINDOW_MS)
		return NT_SAMPLE_WINDOW_MS;
	return NT_SAMPLE_PERIOD_MS / n;
}

struct nt_windows nt_windows_of(uint32_t n, uint32_t window_ms)
{
	return nt_windows_with(n, window_ms, NT_DETACH_FN_GAP_NS);
}

bool nt_window_at(const struct nt_windows *w, uint64_t real_ns, uint64_t *start_ns, uint64_t *next_ns)
{
	/* shifted by the lead, the armed part of a period is its first lead + w + lead */
	uint64_t t = real_ns + w->lead_ns, s = t - t % w->p_ns;

	if (t - s < 2 * w->lead_ns + w->w_ns) {
		*start_ns = s;
		*next_ns = s + w->w_ns + w->lead_ns;
		return true;
	}
	*start_ns = s + w->p_ns;
	*next_ns = s + w->p_ns - w->lead_ns;
	return false;
}

enum nt_detach nt_windows_detach(const struct nt_windows *w)
{
	uint64_t gap = w->p_ns - w->w_ns;

	if (gap >= NT_DETACH_GAP_NS && gap >= w->fn_gap_ns)
		return NT_DETACH_ALL;
	return gap >= NT_DETACH_GAP_NS ? NT_DETACH_TP : NT_DETACH_NONE;
}
