// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * drainprio.c - the nice value of record's drain loop (record --nice):
 * the policy (pure) and the thread's nice (setpriority on the calling
 * thread only).  No BPF: unit-tested.
 */
#include <errno.h>
#include <string.h>
#include <sys/resource.h>
#include "drainprio.h"
#include "sysinfo.h"

/* may this thread set its nice to `to`, below what it is (CAP_SYS_NICE, or RLIMIT_NICE's 20 - rlim)? */
static bool can_lower_nice(int to)
{
	struct rlimit rl;

	if (nt_sys_has_cap(23 /* CAP_SYS_NICE */))
		return true;
	return !getrlimit(RLIMIT_NICE, &rl) && (rl.rlim_cur == RLIM_INFINITY || 20 - (long long)rl.rlim_cur <= to);
}

/*
 * The programs wake the loop when a ring is half full (and it wakes every
 * 100 ms anyway): a round that finds no more than 5/8 was woken in time, one
 * that finds 3/4 or more was late.  Past a full ring the programs use the
 * shared ring buffer (~70 k records), which is what the margin is for.
 */
int nt_drain_prio_next(int cur, int idle, int busy, uint64_t backlog, uint64_t cap)
{
	if (!cap)
		return idle;
	if (backlog >= cap - cap / 4)
		return busy;
	if (backlog <= cap / 2 + cap / 8)
		return idle;
	return cur;
}

void nt_drain_prio_start(struct nt_drain_prio *p, int nice)
{
	int base;

	memset(p, 0, sizeof(*p));
	errno = 0;
	base = getpriority(PRIO_PROCESS, 0);
	if (base == -1 && errno)
		return;
	p->idle = nice;
	p->busy = nice < base ? nice : base;
	p->cur = base;
	/* going back down to busy needs CAP_SYS_NICE or RLIMIT_NICE: without, never go up */
	if (!can_lower_nice(p->busy))
		p->idle = p->busy = base;
	p->ok = true;
	nt_drain_prio_round(p, 0, 0);
}

void nt_drain_prio_round(struct nt_drain_prio *p, uint64_t backlog, uint64_t cap)
{
	int next;

	if (!p->ok)
		return;
	next = nt_drain_prio_next(p->cur, p->idle, p->busy, backlog, cap);
	if (next == p->cur)
		return;
	/* who: 0 is the calling thread (Linux keeps nice per thread) */
	if (setpriority(PRIO_PROCESS, 0, next)) {
		p->ok = false;	/* e.g. no CAP_SYS_NICE to go back down: stay where we are */
		return;
	}
	if (next == p->busy && p->cur == p->idle)
		p->catchups++;
	p->cur = next;
}
