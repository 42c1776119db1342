// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * ntbpf.bpf.c - per-I/O records assembled in maps and emitted once, at
 * completion, through per-CPU rings (record, x86: pcr_put) or a ring buffer.
 *
 * Each hook exists as several programs (tp_btf / raw_tp for tracepoints,
 * fentry / kprobe and fexit / kretprobe for functions) that share one static
 * handler; user space loads exactly one variant per hook (src/hooks.c), the
 * best the running kernel allows.  docs/stages.md says which event each hook
 * stamps and which hook stands in where a function is inlined.
 *
 * Initiator: a record per struct request, created at nvme:nvme_setup_cmd
 * (nvme devices) or block:block_rq_issue (others), emitted at
 * block:block_rq_complete.  Target: a record per struct nvmet_req, created at
 * nvmet:nvmet_req_init, emitted when the response has been handed to the
 * socket.  Socket arrival times are kept per queue (the first data_ready not
 * yet consumed) and given to the requests that queue's receive pass handles.
 *
 * This file: the settings, the maps, the records' life (slots, emit, the
 * per-CPU rings, the in-kernel histograms), the queues' state, the attach
 * variants' macros, and the kernel_sendpage stand-in both roles use.  The
 * hooks of each role are in initiator.bpf.h and target.bpf.h, included here.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_endian.h>
#include "ntbpf.h"
#define NT_SPAN_FN __noinline
/* the compiler must not fold the bound away: hide the value, then bound it */
#define NT_BOUND(i, n) ({ __u64 __i = (__u64)(i); barrier_var(__i); if (__i >= (n)) __i = 0; __i; })
#include "ntbpf_stages.h"
#include "ntbpf_kh.h"
#include "core_fixes.bpf.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/*
 * Set by user space before load, all at once (struct ntbpf_cfg, include/ntbpf.h; the loader:
 * src/probes.c).  The test knobs are cfg.test: 0 outside the tests, and the verifier drops
 * their code unread.
 */
const volatile struct ntbpf_cfg cfg = {
	.sample = 1,
	.rec_role = NTBPF_ROLE_INITIATOR,
};
static __u64 test_skip_n;

static __always_inline bool test_skipped(void)
{
	return cfg.test.skip_end && ++test_skip_n % cfg.test.skip_end == 0;
}


/*
 * Requests in flight: struct request * (initiator) or struct nvmet_req *
 * (target).  A record lives in slots[], at an index hashed from that
 * pointer: finding it (or finding that the I/O is not recorded, as for
 * every I/O --sample left out) is a multiply, a shift and a compare, no
 * helper call.  A request whose slot is taken by another live request goes
 * to the hash map inflight; nover counts those, and only while it is
 * non-zero does a miss in slots[] cost a hash lookup.
 */
#define NSLOTS_LOG2 14
#define NSLOTS (1u << NSLOTS_LOG2)
/* a slot held longer than this lost its completion: a new request may take it */
#define SLOT_STALE_NS (60ull * 1000000000)

struct nt_slot slots[NSLOTS];
__u64 nover;	/* requests in the inflight hash */
/*
 * record --sample-by time: CLOCK_MONOTONIC when the current window's hooks
 * were attached (user space sets it, and clears the slots and the queues'
 * arrivals first).  An entry time older than that was stamped in an earlier
 * window, whose exit program was detached before it ran: it is not used.
 */
__u64 win_t0;
/*
 * record --sample-by time, between windows: every program returns at once.
 * Where windows are far apart user space also detaches the tracepoint hooks
 * (an RCU grace period: 30-380 ms of guest time on a busy lab guest), and
 * where they are seconds apart the function hooks too (an ftrace update of
 * millions of instructions, and RCU-tasks grace periods) (src/sampling.h).
 */
__u32 paused;
/*
 * The windows themselves: the first win_w ns of every win_p ns of the wall
 * clock (CLOCK_MONOTONIC + win_phase; win_p 0: no windows).  User space
 * arms the hooks ahead of a window and disarms them after it, whenever it
 * gets to; the exact edges are kept here, where records are created.
 */
__u64 win_p, win_w;
__s64 win_phase;
/*
 * User space is attaching the hooks detached between windows: no program
 * arms the others until every hook is back (a record would miss the events
 * of the hooks still to come).
 */
__u32 arming;
/*
 * ntbpf live on NVMe namespaces only: block_rq_issue is not attached (its
 * event is no stage's boundary there: nvme_setup_cmd starts each record,
 * and blk_start is rq->start_time_ns).  An I/O without that stamp (iostats
 * off, no scheduler) would then have no start: counted here, user space
 * then attaches block_rq_issue (blk_issue stands in for blk_start).
 */
__u32 issue_deferred;
__u64 no_start_stamp;
/*
 * The target: nvmet_try_send_data ends a command only on a queue without
 * SQ head updates (sqhd_disabled, the host's choice at connect; Linux
 * hosts do not by default), so its fentry/fexit pair is not attached
 * until such a queue is seen (its first command here: sqhd_off_seen).
 * Until user space has attached it, that queue's records are emitted at
 * subsys_done (no resp_sent), as where no send hook attaches.
 */
__u32 data_send_deferred;
__u64 sqhd_off_seen;
__u64 sqhd_early;	/* records emitted at subsys_done for it */

static __always_inline bool outside_window(__u64 now)
{
	return win_p && (now + (__u64)win_phase) % win_p >= win_w;
}

/*
 * A paused hook that creates records (nvme_setup_cmd, nvmet_req_init,
 * block_rq_issue) arms every program itself when its event falls inside a
 * window: user space arms ahead of each window, but a thread can wake late
 * on a busy host, and the two hosts would then record different I/Os.  Only
 * tracepoints create records, and they are attached while paused only where
 * windows are close together (user space detaches them between windows far
 * apart): that is where a paused run reads the clock.  0: run; 1: paused;
 * 2: armed by this run (whose I/O's earlier events went unseen).
 */
static __always_inline int stays_paused(void)
{
	if (!paused)
		return 0;
	if (!win_p || arming || outside_window(bpf_ktime_get_ns()))
		return 1;
	paused = 0;
	return 2;
}

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, __u64);
	__type(value, struct ntbpf_rec);
} inflight SEC(".maps");

/*
 * slot index of pointer p: a multiplicative hash of its address's low 32
 * bits.  The verifier allows no arithmetic on a BTF pointer (tp_btf, fentry
 * arguments), but a privileged program may copy its low half into a 32-bit
 * register (a "partial copy of pointer", refused only to unprivileged
 * programs), which is then a number: one instruction.  The C compiler emits
 * no 32-bit move for BPF v1, hence the assembly.  Kernel addresses of live
 * requests and queues differ in their low 32 bits; a number (a kprobe's
 * argument) hashes the same way.
 */
static __always_inline __u64 slot_hash(__u64 p, int bits)
{
	__u64 lo;

	asm volatile("r0 = %[p]\n\tw0 = w0\n\t%[lo] = r0" : [lo] "=r"(lo) : [p] "r"(p) : "r0");
	return (lo * 0x9E3779B97F4A7C15ull) >> (64 - bits);
}

static __always_inline struct nt_slot *slot_of(__u64 key)
{
	return &slots[NT_BOUND(slot_hash(key, NSLOTS_LOG2), NSLOTS)];
}

/*
 * The record of request key, NULL if it is not being recorded; *sp: its
 * slot, NULL where it is in the overflow hash.  A program that goes on to
 * the slot (entry time, drop) passes *sp along: one hash per program.
 */
static __always_inline struct ntbpf_rec *rec_find(__u64 key, struct nt_slot **sp)
{
	struct nt_slot *s = slot_of(key);

	if (s->key == key) {
		*sp = s;
		return &s->r;
	}
	*sp = NULL;
	if (!nover)
		return NULL;
	return bpf_map_lookup_elem(&inflight, &key);
}

static __always_inline struct ntbpf_rec *rec_get(__u64 key)
{
	struct nt_slot *s;

	return rec_find(key, &s);
}

/*
 * Per NVMe/TCP queue (struct nvme_tcp_queue * or struct nvmet_tcp_queue *):
 * its struct qstate (include/ntbpf.h: the last ARRIVALS data_ready calls and
 * the connection's port), in qslots[] below or, past a slot collision, here.
 */

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u64);
	__type(value, struct qstate);
} queues SEC(".maps");

#define RB_BYTES (8 << 20)
#define RB_WAKEUP_BYTES (RB_BYTES / 32)	/* ~2300 records: the reader is woken per batch */
#define RB_REC_BYTES (sizeof(struct ntbpf_rec) + 8)	/* a record and its ring-buffer header */

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, RB_BYTES);
} events SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, ST_NR);
	__type(key, __u32);
	__type(value, __u64);
} stats SEC(".maps");

/*
 * record's per-CPU rings (struct nt_pcr_ctl): cfg.pcr_n records per CPU (a
 * power of two), CPU c's at c * cfg.pcr_n in pcr_recs.  User space sizes both
 * maps to the CPUs before load; cfg.pcr_n 0: no per-CPU rings (live, the
 * stream, architectures other than x86), and the verifier skips their code.
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct nt_pcr_ctl);
} pcr_ctl SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct ntbpf_rec);
} pcr_recs SEC(".maps");

/*
 * ntbpf live without per-I/O records: per-CPU histograms per group, every
 * stage of the group's role in one value (ntbpf_kh.h), from the same stage
 * definitions as the report (ntbpf_stages.h).  User space reads and diffs
 * them every interval.
 */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, 256);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct nt_kh_gkey);
	__type(value, struct nt_kh_gval);
} khist SEC(".maps");

/* a zeroed value to create histograms from (too large for the stack) */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct nt_kh_gval);
} khist_zero SEC(".maps");

/* nvme_setup_cmd sampled this request out: block_rq_issue (same CPU, next) must not create it */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} skip_rq SEC(".maps");

/*
 * nvme_setup_cmd counted this request in no_start_stamp: if block_rq_issue
 * (same CPU, next; attached meanwhile) stamps it, it has an end_to_end from
 * blk_issue after all, and is taken off the count
 */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} nostamp_rq SEC(".maps");

/* entry -> exit stash for exit hooks (arguments and entry time), keyed by pid_tgid */
struct args {
	__u64 a[2];
	__u64 ts;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u64);
	__type(value, struct args);
} stash SEC(".maps");

/*
 * fentry -> fexit: only the entry time (fexit sees the arguments), kept in
 * the task's own storage: a pointer walk instead of a hash update, lookup
 * and delete per call.
 */
struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, __u64);
} entry_ts SEC(".maps");

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
	r->ev_mask |= 1u << (ev & (NTBPF_MAX_EV - 1));
}

/*
 * Sampling decides from what every host sees of the I/O, so that an
 * initiator and a target sampling independently keep the same I/Os: the
 * starting LBA, queue and command id of an NVMe command; the sector
 * elsewhere.  Fibonacci hashing spreads sequential keys.
 */
static __always_inline bool sampled_out(__u64 key)
{
	if (cfg.sample <= 1)
		return false;
	key *= 0x9E3779B97F4A7C15ull;
	return (key >> 32) % cfg.sample != 0;
}

static __always_inline __u64 nvme_sample_key(__u64 slba, __u16 qid, __u16 cid)
{
	return slba ^ ((__u64)cid << 48) ^ ((__u64)qid << 32);
}

/*
 * The command's starting LBA (rw.slba, dwords 10 and 11), little endian
 * like the host: read through the union's first member, common, which is
 * the one the 6.1 verifier resolves direct loads against.
 */
static __always_inline __u64 cmd_slba(bool btf, struct nvme_command *cmd)
{
	if (btf)
		return (__u64)cmd->common.cdw10 | (__u64)cmd->common.cdw11 << 32;
	return BPF_CORE_READ(cmd, rw.slba);
}

/*
 * Tracepoint arguments may be NULL for the verifier (tp_btf, v6.12+): check
 * them, and keep the compiler from computing field addresses before the check.
 */
#define NONNULL(p) ({ bool __ok = (p) != NULL; barrier_var(p); __ok; })

static __always_inline bool dev_wanted(__u32 dev)
{
	if (!cfg.filter_dev)
		return true;
#pragma clang loop unroll(disable)
	for (__u32 i = 0; i < NTBPF_MAX_DEVS && i < cfg.ndevs; i++)
		if (cfg.dev_list[i] == dev)
			return true;
	return false;
}

/* a finished request leaves its slot s (rec_find's; NULL: the overflow hash) */
static __always_inline void rec_drop(struct nt_slot *s, __u64 key)
{
	if (s && s->key == key)
		s->key = 0;
	else if (nover && !bpf_map_delete_elem(&inflight, &key))
		__sync_fetch_and_add(&nover, -1);
}

/*
 * Add value v to slot i (a constant) of group h.  Inline: the slot's
 * offsets fold into the loads and stores (a static subprogram cost ~25
 * instructions more per slot: the call, its checks and the index arithmetic).
 * The verifier still prunes the states after each slot of kh_record()
 * (its scratch registers are dead there): checked to load on 5.10, 6.1 and 6.12.
 */
static __always_inline int kh_add(struct nt_kh_gval *h, __u32 i, __u64 v)
{
	if (!h || i >= NT_KH_SLOTS)
		return 0;
	h->count[i]++;
	h->sum[i] += v;
	/* stage values are below 2^32 (ntbpf_kh.h); one that is not is counted in bucket 0, as NT_BOUND did */
	h->b[i][NT_BOUND(v >> 32 ? NT_KH_NB32 : nt_kh_bucket32((__u32)v), NT_KH_NB32)]++;
	return 0;
}

/*
 * One finished I/O into the histograms of its group: one map lookup, and
 * each stage of its role computed inline from the stage table with the
 * stage a constant (nt_stage_of_inl folds the table into a few compares).
 */
static __always_inline void kh_record(const struct ntbpf_rec *r, int role)
{
	struct nt_kh_gkey k = {};
	struct nt_kh_gval *h;
	__u32 zero = 0;

	k.dev = r->dev;
	k.bytes = r->bytes;
	k.op = r->op;
	k.role = r->role;
	k.status = r->status;
	if (cfg.kh_by_queue && (r->flags & NTBPF_F_NVME)) {
		k.ctrl = r->ctrl;
		k.qid = r->qid;
	}
	h = bpf_map_lookup_elem(&khist, &k);
	if (!h) {
		struct nt_kh_gval *z = bpf_map_lookup_elem(&khist_zero, &zero);

		if (!z)
			return;
		bpf_map_update_elem(&khist, &k, z, BPF_NOEXIST);	/* EEXIST: another CPU made it */
		h = bpf_map_lookup_elem(&khist, &k);
		if (!h) {
			stat_inc(ST_LOST_MAP_FULL);	/* more groups than the map holds */
			return;
		}
	}
	h->ios++;
	if (cfg.kh_by_queue && r->depth) {
		h->dep_n++;
		h->dep_sum += r->depth;
		h->dep_b[NT_BOUND(nt_kh_bucket(r->depth), NT_KH_DEP_NB)]++;
	}
	NT_UNROLL
	for (int i = 0; i < NT_KH_SLOTS; i++) {
		int s = nt_kh_slot_stage(role, i);
		__u64 v = 0;

		if (s == NT_KH_NONE)
			break;
		if (nt_stage_of_inl(r, s, &v) > 0)
			kh_add(h, i, v);
	}
}

/*
 * r into this CPU's ring: false where there is none, it is full, or a
 * program this one interrupted (or, on a preemptible kernel, preempted)
 * is writing into it: the caller uses the shared ring buffer.  The ring is
 * claimed by an atomic add and a read of the sum (1: ours; every claimant
 * is on this CPU, so two cannot both read 1), which 5.10 has, unlike
 * atomic exchange.  The head is published by a plain store after the
 * record's: x86 keeps stores in order (user space loads the head with
 * acquire); other architectures use the shared ring buffer only.  Two
 * lookups the verifier inlines, the record's copy and two atomic adds,
 * where the ring buffer takes three helper calls and a spinlock (~100
 * guest instructions a record less by bpf_stats on the lab's clock).
 */
static __always_inline bool pcr_put(const struct ntbpf_rec *r)
{
#ifdef __TARGET_ARCH_x86
	struct nt_pcr_ctl *c;
	struct ntbpf_rec *out;
	bool done = false;
	__u32 cpu, idx;
	__u64 h;

	if (!cfg.pcr_n)
		return false;
	cpu = bpf_get_smp_processor_id();
	c = bpf_map_lookup_elem(&pcr_ctl, &cpu);
	if (!c)
		return false;
	__sync_fetch_and_add(&c->busy, 1);
	if (*(volatile __u64 *)&c->busy != 1) {
		__sync_fetch_and_add(&c->busy, -1);
		return false;
	}
	h = c->head;
	if (h - *(volatile __u64 *)&c->tail < cfg.pcr_n) {
		idx = cpu * cfg.pcr_n + ((__u32)h & (cfg.pcr_n - 1));
		out = bpf_map_lookup_elem(&pcr_recs, &idx);
		if (out) {
			*out = *r;
			barrier();
			*(volatile __u64 *)&c->head = h + 1;
			done = true;
		}
	}
	__sync_fetch_and_add(&c->busy, -1);
	/*
	 * The reader takes the rings every 100 ms; a ring half full wakes it
	 * at once, by an 8-byte mark on the shared ring buffer (no record).
	 */
	if (done && h + 1 - *(volatile __u64 *)&c->tail == (cfg.pcr_n + 1) / 2) {
		__u64 mark = 0;

		bpf_ringbuf_output(&events, &mark, sizeof(mark), BPF_RB_FORCE_WAKEUP);
	}
	return done;
#else
	return false;
#endif
}

/* role: NTBPF_ROLE_INITIATOR or _TARGET, a constant at each call; s: rec_find's slot */
static __always_inline void emit(struct ntbpf_rec *r, struct nt_slot *s, __u64 key, int role)
{
	if (cfg.test.no_emit) {
		stat_inc(ST_EMITTED);
		rec_drop(s, key);
		return;
	}
	if (cfg.kernel_agg) {
		kh_record(r, role);
		stat_inc(ST_EMITTED);
		rec_drop(s, key);
		return;
	}
	/* counted by the rings' heads (user space adds them to ST_EMITTED): no stat a record */
	if (pcr_put(r)) {
		rec_drop(s, key);
		return;
	}
	/*
	 * Wake the reader once per batch: when this record takes the data
	 * waiting past a multiple of RB_WAKEUP_BYTES.  A wake-up per record
	 * (the default) costs an irq_work and a context switch per I/O, and
	 * so does waking on every record once a batch waits: a reader busy
	 * writing its file falls behind, and was then woken for every record
	 * (measured on the instruction clock: ~7 k guest instructions per I/O).
	 * The reader also polls every 100 ms, so a batch never waits longer,
	 * and a batch is far below the ring's size: nothing is dropped for it.
	 */
	{
		__u64 avail = bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA);
		__u64 flags = avail / RB_WAKEUP_BYTES != (avail + RB_REC_BYTES) / RB_WAKEUP_BYTES ?
			      BPF_RB_FORCE_WAKEUP : BPF_RB_NO_WAKEUP;

		/* reserve, copy, submit: the copy in BPF instructions rather than the kernel's memcpy */
		struct ntbpf_rec *out = bpf_ringbuf_reserve(&events, sizeof(*r), 0);

		if (!out) {
			stat_inc(ST_LOST_RINGBUF);
		} else {
			*out = *r;
			bpf_ringbuf_submit(out, flags);
			stat_inc(ST_EMITTED);
		}
	}
	rec_drop(s, key);
}

/*
 * A new in-flight record for key, filled in place: its slot's record, or
 * where the slot is held by another live request, *tmp (the caller's stack),
 * which rec_publish() then puts in the overflow hash.  A slot already held
 * by key, or held longer than SLOT_STALE_NS, means that request's completion
 * never reached us (the kernel can skip a tracing program's run): that
 * record is counted as lost instead of overwritten silently.  The slot stays
 * free (key 0) until rec_publish: a reader that sees the key sees the record.
 * *gone: the lost record's depth when it was this request's (its queue's
 * count still holds it: the caller lets it go, depth_out), else 0.
 */
static __always_inline struct ntbpf_rec *rec_claim(__u64 key, __u64 now, struct nt_slot **sp,
						   struct ntbpf_rec *tmp, __u16 *gone)
{
	struct nt_slot *s = slot_of(key);
	__u64 held = s->key;

	*gone = 0;
	if (held == key || !held || now > s->r.t0 + SLOT_STALE_NS) {
		if (held)
			stat_inc(ST_NO_COMPLETE);
		/* the lost record of this request still counts in its queue's depth */
		if (held == key)
			*gone = s->r.depth;
		s->key = 0;
		s->entry_ts = 0;
		barrier();
		s->r = (struct ntbpf_rec){};
		*sp = s;
		return &s->r;
	}
	*sp = NULL;
	*tmp = (struct ntbpf_rec){};
	return tmp;
}

/*
 * Returns the depth of this request's lost record that r replaced in the
 * overflow hash (as rec_claim's *gone), else 0.
 */
static __always_inline __u16 rec_publish(__u64 key, struct nt_slot *s, struct ntbpf_rec *r)
{
	struct ntbpf_rec *old;
	__u16 gone;

	if (s) {
		barrier();
		s->key = key;
		return 0;
	}
	if (!bpf_map_update_elem(&inflight, &key, r, BPF_NOEXIST)) {
		__sync_fetch_and_add(&nover, 1);
		return 0;
	}
	old = bpf_map_lookup_elem(&inflight, &key);
	if (old) {
		/* an earlier I/O's record on this request: lost, and this one takes its place */
		stat_inc(ST_NO_COMPLETE);
		gone = old->depth;
		if (bpf_map_update_elem(&inflight, &key, r, BPF_ANY))
			stat_inc(ST_LOST_MAP_FULL);
		return gone;
	}
	if (bpf_map_update_elem(&inflight, &key, r, BPF_ANY))
		stat_inc(ST_LOST_MAP_FULL);
	else
		__sync_fetch_and_add(&nover, 1);
	return 0;
}

/*
 * Queue state, like the records: in qslots[] at an index hashed from the
 * queue's address, in the hash map queues only when that slot belongs to
 * another queue (qover counts those).  Queues are never removed: a slot is
 * taken for good, as the hash entries were.
 */
#define NQSLOTS_LOG2 10
#define NQSLOTS (1u << NQSLOTS_LOG2)
struct nt_qslot qslots[NQSLOTS];	/* in the skeleton: a sampling window clears the arrivals */
static __u64 qover;

static __always_inline struct nt_qslot *qslot_of(__u64 q)
{
	return &qslots[NT_BOUND(slot_hash(q, NQSLOTS_LOG2), NQSLOTS)];
}

/* the state of queue q (an NVMe/TCP queue of this host's role seen before), or NULL */
static __always_inline struct qstate *qstate_of(__u64 q)
{
	struct nt_qslot *e = qslot_of(q);

	if (e->key == q)
		return &e->s;
	if (!qover)
		return NULL;
	return bpf_map_lookup_elem(&queues, &q);
}

/* a zeroed queue state to start from (too large for the stack beside a record) */
static const struct qstate qzero;

static __always_inline struct qstate *qstate_get(__u64 q)
{
	struct nt_qslot *e = qslot_of(q);
	struct qstate *s;

	if (e->key == q)
		return &e->s;
	if (!e->key) {
		e->s = qzero;
		barrier();
		e->key = q;
		return &e->s;
	}
	s = bpf_map_lookup_elem(&queues, &q);
	if (s)
		return s;
	if (!bpf_map_update_elem(&queues, &q, &qzero, BPF_NOEXIST))
		__sync_fetch_and_add(&qover, 1);
	return bpf_map_lookup_elem(&queues, &q);
}

/*
 * Once per connection (where port is read): the facts of queue s's
 * connection for the file's queue list, which user space reads from here at
 * the end of the recording.  Never per I/O.
 */
static __always_inline void q_conn(struct qstate *s, struct sock *sk, __u16 qid, __s32 io_cpu)
{
	__u16 m;

	s->qid = qid;
	s->io_cpu = io_cpu;
	s->family = BPF_CORE_READ(sk, __sk_common.skc_family);
	s->sport = BPF_CORE_READ(sk, __sk_common.skc_num);
	s->dport = bpf_ntohs(BPF_CORE_READ(sk, __sk_common.skc_dport));
	if (s->family == 10 /* AF_INET6 */ && bpf_core_field_exists(sk->__sk_common.skc_v6_daddr)) {
		bpf_core_read(s->saddr, sizeof(s->saddr), &sk->__sk_common.skc_v6_rcv_saddr);
		bpf_core_read(s->daddr, sizeof(s->daddr), &sk->__sk_common.skc_v6_daddr);
	} else {
		s->saddr[0] = BPF_CORE_READ(sk, __sk_common.skc_rcv_saddr);
		s->daddr[0] = BPF_CORE_READ(sk, __sk_common.skc_daddr);
	}
	s->rx_queue = -1;
	if (bpf_core_field_exists(sk->__sk_common.skc_rx_queue_mapping)) {
		m = BPF_CORE_READ(sk, __sk_common.skc_rx_queue_mapping);
		s->rx_queue = m == 0xffff ? -1 : (__s16)m;	/* NO_QUEUE_MAPPING */
	}
	s->tx_queue = -1;
	if (bpf_core_field_exists(sk->__sk_common.skc_tx_queue_mapping)) {
		m = BPF_CORE_READ(sk, __sk_common.skc_tx_queue_mapping);
		s->tx_queue = m == 0xffff ? -1 : (__s16)m;
	}
}

/*
 * A recorded request of queue s is created: count it in flight, and return
 * the depth it saw (itself included).  The add does not use its result
 * (XADD: 5.10 has no atomic fetch); the read after it may see another CPU's
 * add too, which is as right.
 */
static __always_inline __u16 depth_in(struct qstate *s)
{
	__s32 d;

	__sync_fetch_and_add(&s->inflight, 1);
	d = s->inflight;
	return d <= 0 ? 1 : d > 0xffff ? 0xffff : d;
}

/* a counted request (depth != 0) of queue q leaves: never below 0 (a window's forget zeroes the count) */
static __always_inline void depth_out(__u64 q)
{
	struct qstate *s = qstate_of(q);

	if (s && s->inflight > 0)
		__sync_fetch_and_add(&s->inflight, -1);
}

struct nt_cnotes cnotes[NT_CNOTE_CTRLS];	/* in the skeleton: record reads them at the end */

/*
 * Controller inst's cntlid at a connection's first I/O (its nvme_setup_cmd
 * at now): noted where it differs from the last one noted.  Two queues of
 * one controller noting at once write the same cntlid.
 */
static __always_inline void cntlid_note(__u16 inst, __u16 cntlid, __u64 now)
{
	struct nt_cnotes *c;
	__u32 n;

	if (inst >= NT_CNOTE_CTRLS)
		return;
	c = &cnotes[inst];
	n = c->n;
	if (n >= NT_CNOTES || (n && c->cntlid[(n - 1) & (NT_CNOTES - 1)] == cntlid))
		return;
	c->cntlid[n & (NT_CNOTES - 1)] = cntlid;
	c->ts[n & (NT_CNOTES - 1)] = now;
	c->n = n + 1;
}

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, NT_TNQN_CTRLS);
	__type(key, __u16);
	__type(value, struct nt_tnqn);
} tnqns SEC(".maps");

static struct nt_tnqn tnqn_zero;

/*
 * Target: controller c's NQNs (which host, which subsystem), at a
 * connection's first I/O.  nvmet_ctrl has held both since it was written;
 * without module BTF (5.10) the type is unknown and the reads below are
 * dead code (as in tcp_queue_of_rq).
 */
static __always_inline void tnqn_note(struct nvmet_ctrl *c, __u16 cntlid)
{
	struct nt_tnqn *v;

	if (!bpf_core_type_exists(struct nvmet_ctrl) || !c ||
	    bpf_map_update_elem(&tnqns, &cntlid, &tnqn_zero, BPF_ANY))
		return;
	v = bpf_map_lookup_elem(&tnqns, &cntlid);
	if (!v)
		return;
	if (bpf_core_field_exists(c->hostnqn))
		BPF_CORE_READ_STR_INTO(&v->hostnqn, c, hostnqn);
	/* 7.2's controller no longer copies the subsystem's NQN: read it from the subsystem */
	if (bpf_core_field_exists(c->subsysnqn)) {
		BPF_CORE_READ_STR_INTO(&v->subsysnqn, c, subsysnqn);
	} else if (bpf_core_field_exists(c->subsys)) {
		const char *nqn = BPF_CORE_READ(c, subsys, subsysnqn);

		if (nqn)
			bpf_core_read_str(v->subsysnqn, sizeof(v->subsysnqn), nqn);
	}
}

/*
 * Queue q connects (again): its socket's facts (port, TCP ends, the
 * controller) are read anew at its next I/O, instead of a probe read of
 * the socket at every I/O to compare.
 */
static __always_inline void conn_reset(__u64 q)
{
	struct qstate *s = qstate_of(q);

	if (s)
		s->sock = 0;
}

/*
 * Exit hooks: a PDU counts as handed to the socket at the entry of the call
 * that sent its last byte (on loopback the peer's data_ready runs inside
 * that call, so its return would be too late).  The entry program stashes
 * the time (and, for kprobes, the arguments); the exit program decides.
 */
static __always_inline void stash_put(__u64 a0, __u64 a1)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct args a = { .a = { a0, a1 }, .ts = bpf_ktime_get_ns() };

	bpf_map_update_elem(&stash, &id, &a, BPF_ANY);
}

/* copy out and drop the stash; ts 0 if the entry was not seen */
static __always_inline struct args stash_take(void)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct args *p = bpf_map_lookup_elem(&stash, &id), a = {};

	if (p) {
		if (p->ts >= win_t0)
			a = *p;
		bpf_map_delete_elem(&stash, &id);
	}
	if (!a.ts)
		a.ts = bpf_ktime_get_ns();
	return a;
}

static __always_inline void ts_put(void)
{
	__u64 *v = bpf_task_storage_get(&entry_ts, bpf_get_current_task_btf(), 0,
					BPF_LOCAL_STORAGE_GET_F_CREATE);

	if (v)
		*v = bpf_ktime_get_ns();
}

/* the entry time, consumed; now if the entry was not seen */
static __always_inline __u64 ts_take(void)
{
	__u64 *v = bpf_task_storage_get(&entry_ts, bpf_get_current_task_btf(), 0, 0), ts = 0;

	if (v) {
		ts = *v;
		*v = 0;
	}
	return ts && ts >= win_t0 ? ts : bpf_ktime_get_ns();
}

/*
 * fentry -> fexit of a call about one recorded I/O: the entry time waits in
 * the I/O's own slot s (rec_find's; the calls about one command run one at
 * a time, on its queue's io_work), a store instead of the task storage's
 * lookup; an I/O in the overflow hash (s NULL) uses the task storage.
 */
static __always_inline void entry_put(struct nt_slot *s)
{
	if (s)
		s->entry_ts = bpf_ktime_get_ns();
	else
		ts_put();
}

/* the entry time, consumed; now if the entry was not seen */
static __always_inline __u64 entry_take(struct nt_slot *s)
{
	__u64 ts;

	if (!s)
		return ts_take();
	ts = s->entry_ts;
	s->entry_ts = 0;
	return ts && ts >= win_t0 ? ts : bpf_ktime_get_ns();
}

/* tracepoint tp(T0 a0[, T1 a1]): handler(a0[, a1]), as tp_btf or as raw_tp; arguments may be NULL */
#define TP_HOOK1(tp, handler, T0)						\
SEC("tp_btf/" #tp)								\
int BPF_PROG(tp_btf_##tp, T0 a0)						\
{										\
	if (paused)								\
		return 0;							\
	return NONNULL(a0) ? handler(true, a0) : 0;				\
}										\
SEC("raw_tp/" #tp)								\
int BPF_PROG(raw_tp_##tp, T0 a0)						\
{										\
	if (paused)								\
		return 0;							\
	return NONNULL(a0) ? handler(false, a0) : 0;				\
}

/*
 * The two-argument tracepoints are the ones that create records (see
 * stays_paused); run_armed: whether the run that armed the programs still
 * records its I/O (not where that I/O's earlier events were missed).  how:
 * the handler's btf argument (1 tp_btf, 0 raw_tp, 2 tp_btf_rc_).
 */
#define TP2_PROG(sec, name, handler, T0, T1, run_armed, how)			\
SEC(sec)									\
int BPF_PROG(name, T0 a0, T1 a1)						\
{										\
	int p = stays_paused();							\
										\
	if (p == 1 || (p == 2 && !(run_armed)))					\
		return 0;							\
	if ((how) == 2 && cfg.test.refuse_rc)					\
		asm volatile("r0 = *(u64 *)(r10 + 8)" ::: "r0");		\
	return NONNULL(a0) && NONNULL(a1) ? handler(how, a0, a1) : 0;		\
}

#define TP_HOOK2(tp, handler, T0, T1, run_armed)				\
	TP2_PROG("tp_btf/" #tp, tp_btf_##tp, handler, T0, T1, run_armed, true)	\
	TP2_PROG("raw_tp/" #tp, raw_tp_##tp, handler, T0, T1, run_armed, false)

/* the tp_btf program once more as tp_btf_rc_tp, whose handler may call bpf_rdonly_cast */
#define TP_RC2(tp, handler, T0, T1, run_armed)					\
	TP2_PROG("tp_btf/" #tp, tp_btf_rc_##tp, handler, T0, T1, run_armed, 2)

/* function f(T0 a0) entered: handler(a0), as fentry or as kprobe */
#define ENTRY_HOOK1(fn, handler, T0)						\
SEC("fentry/" #fn)								\
int BPF_PROG(fentry_##fn, T0 a0)						\
{										\
	if (paused)								\
		return 0;							\
	return handler(true, a0);						\
}										\
SEC("kprobe/" #fn)								\
int BPF_KPROBE(kprobe_##fn, T0 a0)						\
{										\
	if (paused)								\
		return 0;							\
	return handler(false, a0);						\
}

/*
 * function f(T0 a0, T1 a1) returning int: handler(a0, r, s, key, entry_ts,
 * ret).  gate(btf, a0, &s, &key) gives a0's record (its slot, its key),
 * NULL for any other I/O (every I/O --sample leaves out, and every call the
 * handler would ignore): both programs then return at once.  The entry time
 * waits in the I/O's slot.
 */
#define EXIT_HOOK2(fn, handler, T0, T1, gate)					\
SEC("fentry/" #fn)								\
int BPF_PROG(fentry_##fn, T0 a0, T1 a1)						\
{										\
	struct nt_slot *s;							\
	__u64 k;								\
										\
	if (paused)								\
		return 0;							\
	if (gate(true, a0, &s, &k))						\
		entry_put(s);							\
	return 0;								\
}										\
SEC("fexit/" #fn)								\
int BPF_PROG(fexit_##fn, T0 a0, T1 a1, int ret)					\
{										\
	struct ntbpf_rec *r;							\
	struct nt_slot *s;							\
	__u64 k;								\
										\
	if (paused)								\
		return 0;							\
	r = gate(true, a0, &s, &k);						\
	return r ? handler(true, a0, r, s, k, entry_take(s), ret) : 0;		\
}										\
SEC("kprobe/" #fn)								\
int BPF_KPROBE(kprobe_##fn, T0 a0)						\
{										\
	struct nt_slot *s;							\
	__u64 k;								\
										\
	if (paused)								\
		return 0;							\
	if (gate(false, a0, &s, &k))						\
		stash_put((__u64)a0, 0);					\
	return 0;								\
}										\
SEC("kretprobe/" #fn)								\
int BPF_KRETPROBE(kretprobe_##fn, int ret)					\
{										\
	struct ntbpf_rec *r;							\
	struct nt_slot *s;							\
	__u64 k;								\
										\
	if (paused)								\
		return 0;							\
	struct args a = stash_take();						\
	if (!a.a[0] || !(r = gate(false, (T0)a.a[0], &s, &k)))			\
		return 0;							\
	return handler(false, (T0)a.a[0], r, s, k, a.ts, ret);			\
}

/* the hooks of each role (one object: the same programs as when they were written here) */
#include "initiator.bpf.h"
#include "target.bpf.h"

/* ------------------------------------------------------------------ */
/* both roles: the kernel_sendpage stand-in                            */

/*
 * Kernels before v6.5 (Debian 6.1) inline nvme_tcp_try_send_cmd_pdu and the
 * nvmet_try_send_* helpers, which all hand their PDUs to kernel_sendpage():
 * its return, on a socket of a known NVMe/TCP queue, stands in for them.
 * The queue says which request is being sent (queue->request on the
 * initiator, queue->snd_cmd on the target) and its state which PDU; the
 * driver updates both only after kernel_sendpage returns.  What is read
 * through the queue (a void * to the verifier) is read with probe reads.
 */
static __always_inline int on_sendpage(bool btf, struct socket *sock, __u64 size, __u64 ts, int ret)
{
	struct sock *sk;
	__u64 q;

	if (ret <= 0 || (__u64)ret != size)
		return 0;	/* partial: the driver calls again for the rest */
	sk = RD(btf, sock, sk);
	q = (__u64)RD(btf, sk, sk_user_data);
	if (!q || !qstate_of(q))
		return 0;	/* not an NVMe/TCP queue of this host's role */
	if (cfg.rec_role == NTBPF_ROLE_INITIATOR) {
		struct nvme_tcp_request *req = BPF_CORE_READ((struct nvme_tcp_queue *)q, request);
		int state;

		if (!req)
			return 0;
		state = BPF_CORE_READ(req, state);	/* enum nvme_tcp_send_state, from BTF */
		if (state == bpf_core_enum_value(enum nvme_tcp_send_state, NVME_TCP_SEND_CMD_PDU)) {
			on_cmd_pdu_sent(req, ts);
		} else if (state == bpf_core_enum_value(enum nvme_tcp_send_state, NVME_TCP_SEND_H2C_PDU)) {
			on_send_data_pdu(false, req);	/* an R2T was answered */
		} else if (state == bpf_core_enum_value(enum nvme_tcp_send_state, NVME_TCP_SEND_DATA)) {
			/* the send that completes the current PDU (pdu_sent advances after it) */
			__u32 left = BPF_CORE_READ(req, pdu_len) - BPF_CORE_READ(req, pdu_sent);

			if (left <= size)
				on_data_sent(req, ts);
		}
	} else {
		struct nvmet_tcp_cmd *cmd = BPF_CORE_READ((struct nvmet_tcp_queue *)q, snd_cmd);
		struct ntbpf_rec *r;
		struct nt_slot *slot;
		__u64 key;
		int state;

		if (!cmd || !(r = tgt_rec_of(false, cmd, &slot, &key)))
			return 0;
		state = BPF_CORE_READ(cmd, state);
		if (state == bpf_core_enum_value(enum nvmet_tcp_send_state, NVMET_TCP_SEND_RESPONSE))
			on_resp_sent(false, cmd, r, slot, key, ts, 1);
		else if (state == bpf_core_enum_value(enum nvmet_tcp_send_state, NVMET_TCP_SEND_R2T))
			ev_set(r, EV_T_R2T_SENT, ts);	/* the R2T is out */
	}
	return 0;
}

/* kernel_sendpage(sock, page, offset, size, flags) */
SEC("fentry/kernel_sendpage")
int BPF_PROG(fentry_kernel_sendpage, struct socket *sock)
{
	if (paused)
		return 0;
	ts_put();
	return 0;
}

SEC("fexit/kernel_sendpage")
int BPF_PROG(fexit_kernel_sendpage, struct socket *sock, struct page *page, int offset, size_t size,
	     int flags, int ret)
{
	if (paused)
		return 0;
	return on_sendpage(true, sock, size, ts_take(), ret);
}

SEC("kprobe/kernel_sendpage")
int BPF_KPROBE(kprobe_kernel_sendpage, struct socket *sock, struct page *page, int offset, size_t size)
{
	if (paused)
		return 0;
	stash_put((__u64)sock, size);
	return 0;
}

SEC("kretprobe/kernel_sendpage")
int BPF_KRETPROBE(kretprobe_kernel_sendpage, int ret)
{
	if (paused)
		return 0;
	struct args a = stash_take();

	return a.a[0] ? on_sendpage(false, (void *)a.a[0], a.a[1], a.ts, ret) : 0;
}
