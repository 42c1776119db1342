// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * ntbpf.bpf.c - per-I/O records assembled in a map and emitted once, at
 * completion.  Each hook exists as several programs (tp_btf / raw_tp, later
 * fentry / kprobe) sharing one static handler; user space loads exactly one
 * variant per hook (src/hooks.c).
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "ntbpf.h"
#include "core_fixes.bpf.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* set by user space before load */
const volatile bool filter_dev = false;	/* only devices in the devs map */
const volatile __u32 sample = 1;	/* record about 1 in sample I/Os */
const volatile bool blk_tp_has_q = false;	/* block_rq_* tracepoints take (q, rq) (before v5.11) */

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, NTBPF_MAX_DEVS);
	__type(key, __u32);
	__type(value, __u8);
} devs SEC(".maps");

/* requests in flight, keyed by struct request *; sized by user space */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, __u64);
	__type(value, struct ntbpf_rec);
} inflight SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 8 << 20);
} events SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, ST_NR);
	__type(key, __u32);
	__type(value, __u64);
} stats SEC(".maps");

static __always_inline void stat_inc(__u32 which)
{
	__u64 *v = bpf_map_lookup_elem(&stats, &which);

	if (v)
		(*v)++;
}

/* ns after t0, saturating at 4.29 s (the record keeps 32-bit offsets) */
static __always_inline void ev_set(struct ntbpf_rec *r, __u32 ev, __u64 ts)
{
	__u64 d = ts > r->t0 ? ts - r->t0 : 0;

	if (d > 0xffffffffull) {
		d = 0xffffffffull;
		r->flags |= NTBPF_F_SATURATED;
	}
	r->ev[ev & (NTBPF_MAX_EV - 1)] = (__u32)d;
	r->ev_mask |= 1u << ev;
}

/*
 * Sampling decides from what every host sees of the I/O (its position), so
 * that an initiator and a target sampling independently keep the same I/Os.
 */
static __always_inline bool sampled_out(__u64 key)
{
	if (sample <= 1)
		return false;
	key *= 0x9E3779B97F4A7C15ull;	/* Fibonacci hashing spreads sequential sectors */
	return (key >> 32) % sample != 0;
}

static __always_inline bool dev_wanted(__u32 dev)
{
	return !filter_dev || bpf_map_lookup_elem(&devs, &dev);
}

static __always_inline int on_rq_issue(struct request *rq)
{
	__u64 now = bpf_ktime_get_ns(), key = (__u64)rq, start;
	struct ntbpf_rec r = {};
	__u32 dev = rq_devt(rq);

	if (!dev_wanted(dev))
		return 0;
	r.sector = BPF_CORE_READ(rq, __sector);
	if (sampled_out(r.sector)) {
		stat_inc(ST_FILTERED);
		return 0;
	}
	r.dev = dev;
	r.bytes = BPF_CORE_READ(rq, __data_len);
	r.op = rq_ntbpf_op(rq);
	r.opcode = 0xff;
	r.role = NTBPF_ROLE_INITIATOR;
	/* start_time_ns is set at allocation when iostat or a scheduler needs it */
	start = BPF_CORE_READ(rq, start_time_ns);
	if (start && start <= now) {
		r.t0 = start;
		r.ev_mask = 1u << EV_I_BLK_START;
	} else {
		r.t0 = now;
	}
	ev_set(&r, EV_I_BLK_ISSUE, now);
	/*
	 * An entry left for this request means its completion never reached
	 * us (the kernel can skip a tracing program's run): count that record
	 * as lost instead of silently overwriting it.
	 */
	if (bpf_map_update_elem(&inflight, &key, &r, BPF_NOEXIST)) {
		if (bpf_map_lookup_elem(&inflight, &key))
			stat_inc(ST_NO_COMPLETE);
		if (bpf_map_update_elem(&inflight, &key, &r, BPF_ANY))
			stat_inc(ST_LOST_MAP_FULL);
	}
	return 0;
}

static __always_inline int on_rq_complete(struct request *rq, int error, unsigned int nr_bytes)
{
	__u64 now = bpf_ktime_get_ns(), key = (__u64)rq;
	struct ntbpf_rec *r = bpf_map_lookup_elem(&inflight, &key);

	if (!r) {
		if (dev_wanted(rq_devt(rq)) && !sampled_out(BPF_CORE_READ(rq, __sector)))
			stat_inc(ST_NO_START);
		return 0;
	}
	/* a partial completion (nr_bytes < what is left) is followed by another */
	if (nr_bytes < BPF_CORE_READ(rq, __data_len)) {
		r->flags |= NTBPF_F_PARTIAL;
		return 0;
	}
	ev_set(r, EV_I_BLK_DONE, now);
	r->status = (__u16)error;
	if (bpf_ringbuf_output(&events, r, sizeof(*r), 0))
		stat_inc(ST_LOST_RINGBUF);
	else
		stat_inc(ST_EMITTED);
	bpf_map_delete_elem(&inflight, &key);
	return 0;
}

/* block_rq_issue(rq), before v5.11 (q, rq) */
SEC("tp_btf/block_rq_issue")
int BPF_PROG(tp_btf_block_rq_issue)
{
	if (blk_tp_has_q)
		return on_rq_issue((void *)ctx[1]);
	return on_rq_issue((void *)ctx[0]);
}

SEC("raw_tp/block_rq_issue")
int BPF_PROG(raw_tp_block_rq_issue)
{
	if (blk_tp_has_q)
		return on_rq_issue((void *)ctx[1]);
	return on_rq_issue((void *)ctx[0]);
}

/* block_rq_complete(rq, error, nr_bytes), before v5.11 (q, rq, nr_bytes) */
SEC("tp_btf/block_rq_complete")
int BPF_PROG(tp_btf_block_rq_complete)
{
	if (blk_tp_has_q)
		return on_rq_complete((void *)ctx[1], 0, (unsigned int)ctx[2]);
	return on_rq_complete((void *)ctx[0], (int)ctx[1], (unsigned int)ctx[2]);
}

SEC("raw_tp/block_rq_complete")
int BPF_PROG(raw_tp_block_rq_complete)
{
	if (blk_tp_has_q)
		return on_rq_complete((void *)ctx[1], 0, (unsigned int)ctx[2]);
	return on_rq_complete((void *)ctx[0], (int)ctx[1], (unsigned int)ctx[2]);
}
