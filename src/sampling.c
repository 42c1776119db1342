// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* sampling.c - the windows of "record --sample N --sample-by time" (sampling.h) */
#include "sampling.h"

struct nt_windows nt_windows_of(uint32_t n, uint32_t window_ms)
{
	struct nt_windows w = { (uint64_t)window_ms * 1000000, (uint64_t)window_ms * 1000000 * (n < 2 ? 2 : n) };

	return w;
}

bool nt_window_at(const struct nt_windows *w, uint64_t real_ns, uint64_t *next_ns)
{
	uint64_t start = real_ns - real_ns % w->p_ns;

	if (real_ns - start < w->w_ns) {
		*next_ns = start + w->w_ns;
		return true;
	}
	*next_ns = start + w->p_ns;
	return false;
}
