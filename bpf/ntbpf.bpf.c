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

/* ------------------------------------------------------------------ */
/* initiator: block layer                                              */

static __always_inline void rec_from_rq(bool btf, struct ntbpf_rec *r, struct request *rq, __u32 dev, __u64 now)
{
	__u64 start = RD(btf, rq, start_time_ns);

	r->dev = dev;
	r->sector = RD(btf, rq, __sector);
	r->bytes = RD(btf, rq, __data_len);
	r->op = rq_ntbpf_op(btf, rq);
	r->opcode = 0xff;
	r->role = NTBPF_ROLE_INITIATOR;
	/* start_time_ns is stamped at allocation when iostat or a scheduler needs it */
	if (start && start <= now) {
		r->t0 = start;
		r->ev_mask = 1u << EV_I_BLK_START;
	} else {
		r->t0 = now;
	}
}

static __always_inline int on_rq_issue(bool btf, struct request *rq)
{
	__u64 now, key = (__u64)rq;
	struct ntbpf_rec *r = rec_get(key);
	__u32 zero = 0, dev;
	__u64 *skip;

	/* nvme: created by nvme_setup_cmd a moment ago, on this CPU */
	if (r && (r->flags & NTBPF_F_NVME) && !(r->ev_mask & (1u << EV_I_BLK_ISSUE))) {
		ev_set(r, EV_I_BLK_ISSUE, bpf_ktime_get_ns());
		return 0;
	}
	skip = bpf_map_lookup_elem(&skip_rq, &zero);
	if (skip && *skip == key) {
		*skip = 0;
		return 0;
	}
	dev = rq_devt(btf, rq);
	if (!dev_wanted(dev))
		return 0;
	now = bpf_ktime_get_ns();
	if (outside_window(now))
		return 0;
	if (sampled_out(RD(btf, rq, __sector))) {
		stat_inc(ST_FILTERED);
		return 0;
	}
	{
		struct ntbpf_rec tmp, *nr;
		struct nt_slot *s;
		__u16 gone;

		nr = rec_claim(key, now, &s, &tmp, &gone);
		rec_from_rq(btf, nr, rq, dev, now);
		ev_set(nr, EV_I_BLK_ISSUE, now);
		gone |= rec_publish(key, s, nr);
		/* an NVMe record lost here: nvme_setup_cmd's program did not run for this I/O */
		if (gone)
			depth_out((__u64)RD(btf, rq, mq_hctx, driver_data));
	}
	return 0;
}

/* struct nvme_request opens every NVMe driver's blk-mq pdu, right behind struct request */
static __always_inline struct nvme_request *nvme_req_of_rq(struct request *rq)
{
	return (void *)rq + bpf_core_type_size(struct request);
}

static __always_inline int on_rq_complete(bool btf, struct request *rq, int error, unsigned int nr_bytes)
{
	__u64 key = (__u64)rq;
	struct nt_slot *slot;
	struct ntbpf_rec *r = rec_find(key, &slot);

	if (!r) {
		/*
		 * A flush sequence completes the caller's empty request (a
		 * FLUSH, or a WRITE with PREFLUSH from fsync) without issuing
		 * it: blk-mq issues its own flush request, which is recorded.
		 * An untracked completion without data is that, not an I/O
		 * missed at the start.  Sampling (by a hash, or in windows:
		 * win_p) leaves requests out on purpose.
		 */
		if (cfg.sample <= 1 && !win_p && nr_bytes) {
			__u32 dev = rq_devt(btf, rq);

			/* a path device's head (probe reads) only for nvme disks: major 259, BLOCK_EXT_MAJOR */
			if (dev_wanted(dev) || ((dev >> 20) == 259 && dev_wanted(nvme_head_devt(btf, rq))))
				stat_inc(ST_NO_START);
		}
		return 0;
	}
	/* counted on the runs that find a record: in one guest, the target's disk completes I/Os too */
	if (test_skipped())
		return 0;
	/* a partial completion (nr_bytes < what is left) is followed by another */
	if (nr_bytes < RD(btf, rq, __data_len)) {
		r->flags |= NTBPF_F_PARTIAL;
		return 0;
	}
	/*
	 * An earlier I/O's record on this request: the kernel ran neither that
	 * I/O's completion program nor this one's issue program (a 6.18 kernel
	 * was seen to skip a tracepoint's program now and then, counting no
	 * miss).  Emitted, it would time the two I/Os as one: it is lost, and
	 * this completion had no start.  The sector is the I/O's own until a
	 * partial completion moves it, and a zone append's (an "other" op) is
	 * set by its completion.
	 */
	if (!(r->flags & NTBPF_F_PARTIAL) && r->op != NTBPF_OP_OTHER && r->sector != RD(btf, rq, __sector)) {
		stat_inc(ST_NO_COMPLETE);
		stat_inc(ST_NO_START);
		if (r->depth)
			depth_out((__u64)RD(btf, rq, mq_hctx, driver_data));
		rec_drop(slot, key);
		return 0;
	}
	ev_set(r, EV_I_BLK_DONE, bpf_ktime_get_ns());
	/*
	 * An NVMe I/O's status (nvme_complete_rq's, since 5.11): an I/O that
	 * failed has an error here (nvme_error_status(status)), one that did
	 * not had status 0 (its success code), so only a failed I/O needs the
	 * probe read.  A status the NVMe request does not hold: the block
	 * layer's error.  Where nvme-core has no BTF (not loaded), the type
	 * check is 0 and the verifier drops the read: this program loads on
	 * any host.  The in-kernel histograms keep the block layer's error.
	 */
	if (bpf_core_type_exists(struct nvme_request) && !cfg.kernel_agg && !cfg.blk_tp_has_q && error &&
	    (r->flags & NTBPF_F_NVME))
		r->status = BPF_CORE_READ(nvme_req_of_rq(rq), status);
	if (!r->status)
		r->status = (__u16)error;
	/* counted only where hctx->driver_data was the queue (on_setup_cmd): loads, no helper call */
	if (r->depth)
		depth_out((__u64)RD(btf, rq, mq_hctx, driver_data));
	emit(r, slot, key, NTBPF_ROLE_INITIATOR);
	return 0;
}

/* block_rq_issue(rq), before v5.11 (q, rq) */
SEC("tp_btf/block_rq_issue")
int BPF_PROG(tp_btf_block_rq_issue)
{
	if (stays_paused() == 1)
		return 0;
	if (cfg.blk_tp_has_q)
		{ struct request *rq = (void *)ctx[1]; return NONNULL(rq) ? on_rq_issue(true, rq) : 0; }
	{ struct request *rq = (void *)ctx[0]; return NONNULL(rq) ? on_rq_issue(true, rq) : 0; }
}

SEC("raw_tp/block_rq_issue")
int BPF_PROG(raw_tp_block_rq_issue)
{
	if (stays_paused() == 1)
		return 0;
	if (cfg.blk_tp_has_q)
		{ struct request *rq = (void *)ctx[1]; return NONNULL(rq) ? on_rq_issue(false, rq) : 0; }
	{ struct request *rq = (void *)ctx[0]; return NONNULL(rq) ? on_rq_issue(false, rq) : 0; }
}

/* block_rq_complete(rq, error, nr_bytes), before v5.11 (q, rq, nr_bytes) */
SEC("tp_btf/block_rq_complete")
int BPF_PROG(tp_btf_block_rq_complete)
{
	if (paused)
		return 0;
	if (cfg.blk_tp_has_q)
		{ struct request *rq = (void *)ctx[1]; return NONNULL(rq) ? on_rq_complete(true, rq, 0, (unsigned int)ctx[2]) : 0; }
	{ struct request *rq = (void *)ctx[0]; return NONNULL(rq) ? on_rq_complete(true, rq, (int)ctx[1], (unsigned int)ctx[2]) : 0; }
}

SEC("raw_tp/block_rq_complete")
int BPF_PROG(raw_tp_block_rq_complete)
{
	if (paused)
		return 0;
	if (cfg.blk_tp_has_q)
		{ struct request *rq = (void *)ctx[1]; return NONNULL(rq) ? on_rq_complete(false, rq, 0, (unsigned int)ctx[2]) : 0; }
	{ struct request *rq = (void *)ctx[0]; return NONNULL(rq) ? on_rq_complete(false, rq, (int)ctx[1], (unsigned int)ctx[2]) : 0; }
}

/* ------------------------------------------------------------------ */
/* initiator: nvme core and nvme_tcp                                   */

/* struct nvme_tcp_request is the blk-mq pdu, right behind struct request */
static __always_inline struct request *rq_of_tcp_req(struct nvme_tcp_request *req)
{
	return (void *)req - bpf_core_type_size(struct request);
}

static __always_inline struct nvme_tcp_request *tcp_req_of_rq(struct request *rq)
{
	return (void *)rq + bpf_core_type_size(struct request);
}

/*
 * The request's nvme_tcp queue; 0 where struct nvme_tcp_request has no BTF
 * (no module BTF: 5.10), so that the programs reading it still load (libbpf
 * poisons the failed relocations, and the verifier drops them as dead code):
 * no queue port, no arrival read through the queue's socket there.
 */
static __always_inline __u64 tcp_queue_of_rq(struct request *rq)
{
	if (!bpf_core_type_exists(struct nvme_tcp_request))
		return 0;
	return (__u64)BPF_CORE_READ(tcp_req_of_rq(rq), queue);
}

/*
 * The namespace head's dev_t of path disk 'disk' (nvme_ns_head_devt: four
 * probe reads), kept per path disk: a path disk belongs to one namespace
 * for its life, and diskseq names that life (core_fixes.bpf.h).  One word
 * per entry, diskseq's low 32 bits over the dev_t, so that a reader never
 * sees half of another CPU's write.  Without diskseq (before v5.15) the
 * head is read every time.
 */
#define NT_HEADC 64
__u64 headc[NT_HEADC];

static __always_inline __u32 nvme_head_devt_of(bool btf, struct gendisk *disk, void *ns)
{
	__u64 seq = disk_seq(btf, disk) & 0xffffffffull, e;
	__u32 head;

	if (!ns || !seq)
		return nvme_ns_head_devt(ns);
	e = headc[seq & (NT_HEADC - 1)];
	if (e >> 32 == seq)
		return (__u32)e;
	head = nvme_ns_head_devt(ns);
	headc[seq & (NT_HEADC - 1)] = seq << 32 | head;
	return head;
}

/* nvme_setup_cmd(req, cmd): inside nvme_tcp_queue_rq, before block_rq_issue */
static __always_inline int on_setup_cmd(bool btf, struct request *rq, struct nvme_command *cmd)
{
	__u64 now, key = (__u64)rq, q = 0, dq;
	struct nvme_request *nreq = nvme_req_of_rq(rq);
	struct blk_mq_hw_ctx *hctx;
	struct ntbpf_rec tmp, *r;
	struct nt_slot *slot;
	struct qstate *s = NULL;
	void *queuedata = RD(btf, rq, q, queuedata);
	__u16 gone;
	struct gendisk *disk = rq_disk(btf, rq);
	__u32 dev, head = nvme_head_devt_of(btf, disk, queuedata), zero = 0;
	__u16 qid = 0, cid;
	__u8 opcode;
	__u64 *skip, slba;

	opcode = RD(btf, cmd, common.opcode);
	/* a queue's connect (the fabrics opcode), before any I/O on a new socket: on its hctx's queue */
	if (opcode == 0x7f)
		conn_reset((__u64)RD(btf, rq, mq_hctx, driver_data));
	/* -d nvme0n1 names the head; the I/O runs on the path disk nvme0c0n1 */
	if (head != NTBPF_NO_DEV && dev_wanted(head)) {
		dev = head;
	} else {
		dev = disk_devt(btf, disk);
		if (!dev_wanted(dev))
			return 0;
		if (head != NTBPF_NO_DEV)
			dev = head;
	}
	/* I/O queues have queuedata; the admin queue (qid 0) does not */
	hctx = RD(btf, rq, mq_hctx);
	if (queuedata)
		qid = RD(btf, hctx, queue_num) + 1;
	/* the admin queue, and fabrics commands (connect) on I/O queues, are not I/O */
	if (!qid || opcode == 0x7f) {
		stat_inc(ST_ADMIN_SKIPPED);
		return 0;
	}
	/* an I/O --sample leaves out costs nothing more than this */
	cid = RD(btf, cmd, common.command_id);
	slba = cmd_slba(btf, cmd);
	if (sampled_out(nvme_sample_key(slba, qid, cid))) {
		stat_inc(ST_FILTERED);
		skip = bpf_map_lookup_elem(&skip_rq, &zero);
		if (skip)
			*skip = key;
		return 0;
	}
	now = bpf_ktime_get_ns();
	if (outside_window(now)) {
		skip = bpf_map_lookup_elem(&skip_rq, &zero);	/* nor may block_rq_issue create it */
		if (skip)
			*skip = key;
		return 0;
	}
	r = rec_claim(key, now, &slot, &tmp, &gone);
	rec_from_rq(btf, r, rq, dev, now);
	r->cid = cid;
	r->opcode = opcode;
	r->qid = qid;
	r->flags |= NTBPF_F_NVME;
	if (issue_deferred && !(r->ev_mask & (1u << EV_I_BLK_START)))
		__sync_fetch_and_add(&no_start_stamp, 1);
	/*
	 * nvme_tcp's hctx->driver_data is the queue its pdus point to (not so
	 * for nvme-pci).  A queue with a state here was seen before as
	 * nvme_tcp's (by this check, or by nvme_tcp_data_ready): no probe read
	 * of the pdu for it.
	 */
	dq = (__u64)RD(btf, hctx, driver_data);
	if (bpf_core_type_exists(struct nvme_tcp_request) && dq)
		s = qstate_of(dq);
	if (s) {
		q = dq;
	} else {
		q = tcp_queue_of_rq(rq);
		if (q && q == dq)
			s = qstate_get(q);
		else
			q = 0;
	}
	/*
	 * A connection's facts are read at its first I/O: a reconnect gives
	 * the queue a new socket, and its connect command (conn_reset) comes
	 * before any I/O on it.  A queue belongs to one controller: its
	 * instance is read once per connection too.
	 */
	if (s && !s->sock) {
		struct socket *sock = BPF_CORE_READ((struct nvme_tcp_queue *)q, sock);

		s->port = BPF_CORE_READ(sock, sk, __sk_common.skc_num);
		s->ctrl = BPF_CORE_READ(nreq, ctrl, instance);
		/* the target gives a reconnecting controller a new cntlid, which pairs the records */
		if (!cfg.kernel_agg)
			cntlid_note(s->ctrl, BPF_CORE_READ(nreq, ctrl, cntlid), now);
		q_conn(s, BPF_CORE_READ(sock, sk), qid, BPF_CORE_READ((struct nvme_tcp_queue *)q, io_cpu));
		s->sock = (__u64)sock;
	}
	/* a request belongs to one hctx: a lost record of it counted in dq's depth */
	if (gone)
		depth_out(dq);
	if (s) {
		r->port = s->port;
		r->ctrl = s->ctrl;
		/* the histograms keep depths only by queue */
		if (!cfg.kernel_agg || cfg.kh_by_queue)
			r->depth = depth_in(s);
	} else {
		r->ctrl = BPF_CORE_READ(nreq, ctrl, instance);
	}
	ev_set(r, EV_I_QUEUE_RQ, now);
	if (rec_publish(key, slot, r))
		depth_out(dq);
	return 0;
}

/* armed here, the I/O is whole: its earlier events (blk_start) do not need a hook */
TP_HOOK2(nvme_setup_cmd, on_setup_cmd, struct request *, struct nvme_command *, true)

static __always_inline int on_nvme_complete(bool btf, struct request *rq)
{
	__u64 key = (__u64)rq;
	struct ntbpf_rec *r = rec_get(key);
	struct nvme_request *nreq = nvme_req_of_rq(rq);

	if (r) {
		ev_set(r, EV_I_NVME_DONE, bpf_ktime_get_ns());
		/*
		 * block_rq_complete reads it where the I/O failed (its error),
		 * except before 5.11 (no error there): a probe read here then.
		 * The in-kernel histograms keep no status.
		 */
		if (!cfg.kernel_agg && cfg.blk_tp_has_q)
			r->status = BPF_CORE_READ(nreq, status);
	}
	return 0;
}

TP_HOOK1(nvme_complete_rq, on_nvme_complete, struct request *)

/* data arrived on a queue's socket: note how far the stream got, and when */
static __always_inline int on_data_ready(bool btf, struct sock *sk)
{
	__u64 q = (__u64)RD(btf, sk, sk_user_data);
	struct tcp_sock *tp;
	struct qstate *s;
	__u32 i, seq;

	if (!q)
		return 0;
	s = qstate_get(q);
	if (!s)
		return 0;
	/*
	 * rcv_nxt is beyond struct sock: fentry has the socket as a BTF pointer,
	 * which bpf_skc_to_tcp_sock turns into a tcp_sock to load from (a few
	 * instructions); a kprobe takes a probe read (~50)
	 */
	if (btf) {
		tp = bpf_skc_to_tcp_sock(sk);
		if (!tp)
			return 0;
		seq = tp->rcv_nxt;
	} else {
		tp = (void *)sk;
		seq = BPF_CORE_READ(tp, rcv_nxt);
	}
	i = s->head % ARRIVALS;
	s->a[i].seq = seq;
	s->a[i].ts = bpf_ktime_get_ns();
	s->head = i + 1;
	return 0;
}

/*
 * When did the byte before stream position 'need' arrive: the oldest noted
 * delivery whose rcv_nxt reached 'need' (sequence arithmetic wraps).  0 if
 * the ring no longer holds it.  The ring is in delivery order (data_ready
 * runs under the socket's lock), so the deliveries that reached 'need' are
 * its newest ones: walk back from the newest and stop at the first that
 * did not (most often after one or two).
 */
static __always_inline __u64 arrival_of(struct qstate *s, __u32 need)
{
	__u32 head = s->head;
	__u64 best = 0;

	for (int k = 1; k <= ARRIVALS; k++) {
		struct arrival *e = &s->a[(head - k) & (ARRIVALS - 1)];

		if (!e->ts || (__s32)(e->seq - need) < 0)
			break;
		best = e->ts;
	}
	return best;
}

/* arrival of what socket sk is reading now (host: the skb being processed); s: the queue's state */
static __always_inline __u64 sk_arrival(struct qstate *s, struct sock *sk, __u32 extra)
{
	if (!s || !sk)
		return 0;
	return arrival_of(s, BPF_CORE_READ((struct tcp_sock *)sk, copied_seq) + extra);
}

/*
 * bpf_rdonly_cast (v6.2) makes a kept address a typed pointer to load from
 * directly (a guarded load, ~8 instructions) where a probe read is a helper
 * call (~80 on the lab's clock).  Weak: on a kernel without it the programs
 * that call it are not loaded (their tp_btf_rc_ names; src/hooks.c).
 */
extern void *bpf_rdonly_cast(const void *obj, __u32 btf_id) __ksym __weak;

/* sk_arrival through bpf_rdonly_cast: sk is an address kept in the queue's state */
static __always_inline __u64 sk_arrival_rc(struct qstate *s, struct sock *sk, __u32 extra)
{
	struct tcp_sock *tp;

	if (!s || !sk)
		return 0;
	tp = bpf_rdonly_cast(sk, bpf_core_type_id_kernel(struct tcp_sock));
	return arrival_of(s, tp->copied_seq + extra);
}

static __always_inline __u64 queue_arrival(struct qstate *s, struct socket *sock, __u32 extra)
{
	if (!s || !sock)
		return 0;
	return sk_arrival(s, BPF_CORE_READ(sock, sk), extra);
}

ENTRY_HOOK1(nvme_tcp_data_ready, on_data_ready, struct sock *)

/*
 * nvme_tcp_recv_skb(desc, skb, offset, len): read_sock hands nvme_tcp the
 * stream bytes [seq + offset, seq + offset + len).  TCP may have coalesced
 * segments that arrived at different times into this skb, so the read
 * position alone can date a response too early: date it by the arrival of
 * the end of the range being handled (late by at most that coalescing).
 */
static __always_inline int on_recv_skb(bool btf, read_descriptor_t *desc, struct sk_buff *skb,
				       unsigned int offset, size_t len)
{
	__u64 q = (__u64)RD(btf, desc, arg.data);
	struct qstate *s = qstate_of(q);
	__u32 seq = 0;

	if (!s)
		return 0;
	/* TCP_SKB_CB(skb)->seq: the first word of skb->cb */
	if (btf)
		seq = *(__u32 *)skb->cb;
	else
		bpf_core_read(&seq, sizeof(seq), &skb->cb);
	s->chunk_end = seq + offset + (__u32)len;
	return 0;
}

SEC("fentry/nvme_tcp_recv_skb")
int BPF_PROG(fentry_nvme_tcp_recv_skb, read_descriptor_t *desc, struct sk_buff *skb, unsigned int offset,
	     size_t len)
{
	if (paused)
		return 0;
	return on_recv_skb(true, desc, skb, offset, len);
}

SEC("kprobe/nvme_tcp_recv_skb")
int BPF_KPROBE(kprobe_nvme_tcp_recv_skb, read_descriptor_t *desc, struct sk_buff *skb, unsigned int offset,
	       size_t len)
{
	if (paused)
		return 0;
	return on_recv_skb(false, desc, skb, offset, len);
}

/* arrival of what the initiator's receive path is handling now */
static __always_inline __u64 host_arrival(__u64 q)
{
	struct qstate *s = qstate_of(q);

	if (!s)
		return 0;
	if (s->chunk_end)
		return arrival_of(s, s->chunk_end);
	/* without nvme_tcp_recv_skb: the skb at the read position */
	if (!bpf_core_type_exists(struct nvme_tcp_queue))
		return 0;
	return queue_arrival(s, BPF_CORE_READ((struct nvme_tcp_queue *)q, sock), 1);
}

/*
 * blk_mq_complete_request_remote(rq): nvme_tcp hands a request to blk-mq
 * completion as it processes the response (or the last C2H data PDU with
 * SUCCESS).  The request's queue says when that response arrived.
 */
static __always_inline int on_complete_remote(bool btf, struct request *rq)
{
	__u64 now, key = (__u64)rq, q, arr;
	struct ntbpf_rec *r = rec_get(key);

	if (!r || !(r->flags & NTBPF_F_NVME) || r->role != NTBPF_ROLE_INITIATOR)
		return 0;
	now = bpf_ktime_get_ns();
	ev_set(r, EV_I_RESP_PROC, now);
	/*
	 * Without nvme_tcp's BTF: hctx->driver_data, the same queue (on_setup_cmd
	 * checks it where it can).  A request it counted in its queue's depth
	 * is one it found there: two loads instead of a probe read.  So is one
	 * with a port where live's histograms count no depth (the port is the
	 * queue state's).
	 */
	if (!bpf_core_type_exists(struct nvme_tcp_request) || (btf && (r->depth || (cfg.kernel_agg && r->port))))
		q = (__u64)RD(btf, rq, mq_hctx, driver_data);
	else
		q = tcp_queue_of_rq(rq);
	arr = host_arrival(q);
	if (arr && arr <= now)
		ev_set(r, EV_I_RESP_ARRIVE, arr);
	return 0;
}

ENTRY_HOOK1(blk_mq_complete_request_remote, on_complete_remote, struct request *)

static __always_inline struct ntbpf_rec *host_rec_of(struct nvme_tcp_request *req)
{
	__u64 key = (__u64)rq_of_tcp_req(req);
	struct ntbpf_rec *r = rec_get(key);

	return (r && r->role == NTBPF_ROLE_INITIATOR) ? r : NULL;
}

/*
 * cmd_sent is the entry of the nvme_tcp_try_send_cmd_pdu(req) call that
 * sends the command PDU's last byte.  It is stamped at that entry, not at
 * the return: the response can complete the I/O before the sender returns
 * (a softirq on the sender's return from the socket processes it, or another
 * CPU does; seen on 7.2 at QD1), and by then the record has been emitted.
 * A PDU sent in pieces takes several calls: each overwrites the stamp, so the
 * last one, the call that completed the PDU, is what the record keeps.
 */
static __always_inline int on_cmd_pdu_sent(struct nvme_tcp_request *req, __u64 ts)
{
	struct ntbpf_rec *r = host_rec_of(req);

	if (r)
		ev_set(r, EV_I_CMD_SENT, ts);
	return 0;
}

static __always_inline int on_cmd_pdu_send(bool btf, struct nvme_tcp_request *req)
{
	struct ntbpf_rec *r = host_rec_of(req);

	if (r)
		ev_set(r, EV_I_CMD_SENT, bpf_ktime_get_ns());
	return 0;
}

/*
 * nvme_tcp_try_send_data(req) sends the data PDU of an R2T: data_sent is
 * the entry of the call that sends its last byte, stamped at entry for the
 * same reason as cmd_sent (the response may complete the write before it
 * returns).  In-capsule data follows its command PDU on the wire like any
 * payload: its transfer is network time, and the target dates the command
 * by its header, so cmd_sent stays at the command PDU.
 */
static __always_inline int on_data_sent(struct nvme_tcp_request *req, __u64 ts)
{
	struct ntbpf_rec *r = host_rec_of(req);

	if (r && (r->ev_mask & (1u << EV_I_R2T_ARRIVE)))
		ev_set(r, EV_I_DATA_SENT, ts);
	return 0;
}

static __always_inline int on_data_send(bool btf, struct nvme_tcp_request *req)
{
	struct ntbpf_rec *r = host_rec_of(req);

	if (r && (r->ev_mask & (1u << EV_I_R2T_ARRIVE)))
		ev_set(r, EV_I_DATA_SENT, bpf_ktime_get_ns());
	return 0;
}

ENTRY_HOOK1(nvme_tcp_try_send_cmd_pdu, on_cmd_pdu_send, struct nvme_tcp_request *)
ENTRY_HOOK1(nvme_tcp_try_send_data, on_data_send, struct nvme_tcp_request *)

/*
 * The first H2C data PDU of a request goes out after its R2T arrived
 * (nvme_tcp_handle_r2t is inlined on 6.1 and 6.12): stamp the R2T's
 * arrival then.
 */
static __always_inline int on_send_data_pdu(bool btf, struct nvme_tcp_request *req)
{
	struct ntbpf_rec *r = host_rec_of(req);
	struct nvme_tcp_queue *queue;
	__u64 arr;

	if (!r || (r->ev_mask & (1u << EV_I_R2T_ARRIVE)))
		return 0;
	queue = RD(btf, req, queue);
	/* the R2T was in what the queue read last */
	arr = host_arrival((__u64)queue);
	ev_set(r, EV_I_R2T_ARRIVE, arr ? arr : bpf_ktime_get_ns());
	return 0;
}

ENTRY_HOOK1(nvme_tcp_try_send_data_pdu, on_send_data_pdu, struct nvme_tcp_request *)

/* ------------------------------------------------------------------ */
/* target: nvmet_tcp and nvmet core                                    */

static __always_inline __u64 tgt_queue_of_sq(struct nvmet_sq *sq)
{
	if (!sq)
		return 0;
	return (__u64)((void *)sq - bpf_core_field_offset(struct nvmet_tcp_queue, nvme_sq));
}

static __always_inline struct nvmet_req *req_of_tgt_cmd(struct nvmet_tcp_cmd *cmd)
{
	return (void *)cmd + bpf_core_field_offset(struct nvmet_tcp_cmd, req);
}

ENTRY_HOOK1(nvmet_tcp_data_ready, on_data_ready, struct sock *)

/* nvmet_tcp_try_recv_pdu(queue): the last call before nvmet_req_init picked the command up */
static __always_inline int on_try_recv_pdu(bool btf, struct nvmet_tcp_queue *queue)
{
	__u64 q = (__u64)queue;
	struct qstate *s = qstate_of(q);

	if (s)
		s->pickup = bpf_ktime_get_ns();
	return 0;
}

ENTRY_HOOK1(nvmet_tcp_try_recv_pdu, on_try_recv_pdu, struct nvmet_tcp_queue *)

/* NVMe opcodes (fixed by the specification) to the grouping op */
static __always_inline __u8 nvme_op(__u8 opcode)
{
	switch (opcode) {
	case 0x02:
		return NTBPF_OP_READ;
	case 0x01:
		return NTBPF_OP_WRITE;
	case 0x00:
		return NTBPF_OP_FLUSH;
	case 0x09:
		return NTBPF_OP_DISCARD;
	case 0x08:
		return NTBPF_OP_WRITE_ZEROES;
	default:
		return NTBPF_OP_OTHER;
	}
}

/* btf: 0 probe reads (raw_tp), 1 BTF loads (tp_btf), 2 BTF loads and bpf_rdonly_cast (tp_btf_rc_) */
static __always_inline int on_req_init(int btf, struct nvmet_req *req, struct nvme_command *cmd)
{
	__u64 now, key = (__u64)req, q, arr, slba, pick;
	struct nvmet_sq *sq = RD(btf, req, sq);
	struct ntbpf_rec tmp, *r;
	struct nt_slot *slot;
	struct socket *sock;
	struct sock *sk;
	struct qstate *s;
	__u16 qid = RD(btf, sq, qid), cid, gone;
	__u8 opcode = RD(btf, cmd, common.opcode);

	/*
	 * An I/O queue's connect asking for no SQ head updates (cattr bit 2,
	 * NVME_CONNECT_DISABLE_SQFLOW): user space attaches nvmet_try_send_data
	 * before the queue's first I/O, mostly
	 */
	if (opcode == 0x7f && data_send_deferred && RD(btf, cmd, connect.fctype) == 0x01 &&
	    RD(btf, cmd, connect.qid) && (RD(btf, cmd, connect.cattr) & (1 << 2)))
		__sync_fetch_and_add(&sqhd_off_seen, 1);
	/* a queue's connect, its first command (a queue's memory can serve a later connection) */
	if (opcode == 0x7f)
		conn_reset(tgt_queue_of_sq(sq));
	/* the admin queue, and fabrics commands (connect) on I/O queues, are not I/O */
	if (!qid || opcode == 0x7f) {
		stat_inc(ST_ADMIN_SKIPPED);
		return 0;
	}
	cid = RD(btf, cmd, common.command_id);
	slba = cmd_slba(btf, cmd);
	if (sampled_out(nvme_sample_key(slba, qid, cid))) {
		stat_inc(ST_FILTERED);
		return 0;
	}
	q = tgt_queue_of_sq(sq);
	s = qstate_of(q);
	/*
	 * No clock read of its own where nvmet_tcp_try_recv_pdu's program
	 * noted when it picked this command up: that call is running now (it
	 * read the header, then handed the PDU to nvmet_req_init), its time a
	 * few microseconds back.  No stage ends at req_init (docs/stages.md),
	 * so the record has no req_init event then; it has one where there is
	 * no cmd_pickup.  The clock read was ~55 instructions per I/O.
	 */
	pick = s ? s->pickup : 0;
	now = pick ? pick : bpf_ktime_get_ns();
	if (outside_window(now))
		return 0;
	r = rec_claim(key, now, &slot, &tmp, &gone);
	r->role = NTBPF_ROLE_TARGET;
	r->flags = NTBPF_F_NVME;
	r->qid = qid;
	r->cid = cid;
	r->opcode = opcode;
	r->op = nvme_op(opcode);
	r->dev = RD(btf, cmd, common.nsid);
	r->bytes = RD(btf, cmd, common.dptr.sgl.length);
	r->sector = slba;
	r->ctrl = RD(btf, sq, ctrl, cntlid);
	/* a command belongs to one queue: a lost record of it counted in q's depth */
	if (gone)
		depth_out(q);
	/* a connection's facts are read at its first I/O (after conn_reset) */
	sock = s && s->sock ? NULL : q ? BPF_CORE_READ((struct nvmet_tcp_queue *)q, sock) : NULL;
	if (s && !s->sock) {
		sk = BPF_CORE_READ(sock, sk);
		s->sock = (__u64)sock;
		s->sk = (__u64)sk;
		s->port = bpf_ntohs(BPF_CORE_READ(sk, __sk_common.skc_dport));
		s->ctrl = r->ctrl;
		tnqn_note(BPF_CORE_READ(sq, ctrl), r->ctrl);
		/* nvmet_req_init runs in the queue's io_work */
		q_conn(s, sk, qid, bpf_get_smp_processor_id());
		if (data_send_deferred && RD(btf, sq, sqhd_disabled))
			__sync_fetch_and_add(&sqhd_off_seen, 1);
	}
	if (s) {
		/* the socket's sock, read with it (a socket keeps its sock) */
		sk = (struct sock *)s->sk;
		r->port = s->port;
		r->depth = depth_in(s);
	} else {
		sk = sock ? BPF_CORE_READ(sock, sk) : NULL;
		if (sk)
			r->port = bpf_ntohs(BPF_CORE_READ(sk, __sk_common.skc_dport));
	}
	r->t0 = now;
	/* recvmsg has just read the command header: copied_seq is right behind it */
	arr = btf == 2 ? sk_arrival_rc(s, sk, 0) : sk_arrival(s, sk, 0);
	/* a delivery noted before this run: with pick, it may have come after the pickup (below) */
	if (arr && (pick || arr <= now)) {
		r->t0 = arr;
		ev_set(r, EV_T_CMD_ARRIVE, arr);
	}
	/*
	 * The header's tail can arrive while nvmet_tcp_try_recv_pdu is already
	 * reading it: the PDU is picked up when it has all arrived.
	 */
	if (pick)
		ev_set(r, EV_T_CMD_PICKUP, pick >= r->t0 ? pick : r->t0);
	else
		ev_set(r, EV_T_REQ_INIT, now);
	if (rec_publish(key, slot, r))
		depth_out(q);
	return 0;
}

/* armed here, the command's arrival and pickup were not noted: that I/O is left out */
TP_HOOK2(nvmet_req_init, on_req_init, struct nvmet_req *, struct nvme_command *, false)
TP_RC2(nvmet_req_init, on_req_init, struct nvmet_req *, struct nvme_command *, false)

/* the request goes to the backend; for data that came after an R2T, note when it arrived */
static __always_inline int on_exec(bool btf, struct nvmet_req *req)
{
	__u64 now, key = (__u64)req, q, arr;
	struct ntbpf_rec *r = rec_get(key);

	if (!r || r->role != NTBPF_ROLE_TARGET)
		return 0;
	now = bpf_ktime_get_ns();
	if (r->ev_mask & (1u << EV_T_R2T_SENT)) {
		/* all data has been read: copied_seq is right behind its last byte */
		q = tgt_queue_of_sq(RD(btf, req, sq));
		if (q) {
			/* nvmet_req_init read the queue's socket for this request: s->sk is that socket's */
			struct qstate *s = qstate_of(q);

			arr = s && s->sk ? sk_arrival(s, (struct sock *)s->sk, 0) :
			      queue_arrival(s, BPF_CORE_READ((struct nvmet_tcp_queue *)q, sock), 0);
			if (arr && arr <= now)
				ev_set(r, EV_T_DATA_ARRIVE, arr);
		}
	}
	ev_set(r, EV_T_EXEC, now);
	return 0;
}

ENTRY_HOOK1(nvmet_bdev_execute_rw, on_exec, struct nvmet_req *)
ENTRY_HOOK1(nvmet_bdev_execute_flush, on_exec, struct nvmet_req *)
ENTRY_HOOK1(nvmet_file_execute_rw, on_exec, struct nvmet_req *)
ENTRY_HOOK1(nvmet_file_execute_flush, on_exec, struct nvmet_req *)

static __always_inline int on_req_complete(bool btf, struct nvmet_req *req)
{
	bool early;
	__u64 key = (__u64)req;
	struct nt_slot *slot;
	struct ntbpf_rec *r = rec_find(key, &slot);

	if (!r || r->role != NTBPF_ROLE_TARGET || (cfg.tgt_emit_at_complete && test_skipped()))
		return 0;
	ev_set(r, EV_T_SUBSYS_DONE, bpf_ktime_get_ns());
	r->status = RD(btf, req, cqe, status) >> 1;
	/* sqhd_off_seen first: no load through the request until such a queue was seen */
	early = data_send_deferred && sqhd_off_seen && RD(btf, req, sq, sqhd_disabled);
	if (early)
		__sync_fetch_and_add(&sqhd_early, 1);
	if (cfg.tgt_emit_at_complete || early) {
		if (r->depth)
			depth_out(tgt_queue_of_sq(RD(btf, req, sq)));
		emit(r, slot, key, NTBPF_ROLE_TARGET);
	}
	return 0;
}

TP_HOOK1(nvmet_req_complete, on_req_complete, struct nvmet_req *)

/*
 * resp_queued is not stamped (nvmet_tcp_queue_response, hooked until 0.4):
 * __nvmet_req_complete calls it in the statement after the
 * nvmet_req_complete trace event, so it added a program run per I/O and
 * nothing to subsys_done.
 */

/* EXIT_HOOK2's gate: cmd's record (*sp: its slot, *key: its key), NULL if it is not recorded */
static __always_inline struct ntbpf_rec *tgt_rec_of(bool btf, struct nvmet_tcp_cmd *cmd, struct nt_slot **sp,
						    __u64 *key)
{
	struct ntbpf_rec *r;

	*key = (__u64)req_of_tgt_cmd(cmd);
	r = rec_find(*key, sp);
	return (r && r->role == NTBPF_ROLE_TARGET) ? r : NULL;
}

/*
 * nvmet_try_send_data ends a command only where the queue runs without SQ
 * head updates (sqhd_disabled, the host's choice at connect; Linux hosts
 * do not by default): elsewhere both programs return after two loads.
 */
static __always_inline struct ntbpf_rec *tgt_rec_sqhd_off(bool btf, struct nvmet_tcp_cmd *cmd,
							  struct nt_slot **sp, __u64 *key)
{
	if (!RD(btf, cmd, queue, nvme_sq.sqhd_disabled))
		return NULL;
	return tgt_rec_of(btf, cmd, sp, key);
}

/*
 * nvmet_try_send_r2t(cmd) entered: r2t_sent is the entry of the last call,
 * the one that sends the R2T's last byte (a send cut short is called again,
 * and each call overwrites the stamp), as cmd_sent on the initiator.
 */
static __always_inline int on_r2t_send(bool btf, struct nvmet_tcp_cmd *cmd)
{
	struct nt_slot *s;
	__u64 k;
	struct ntbpf_rec *r = tgt_rec_of(btf, cmd, &s, &k);

	if (r)
		ev_set(r, EV_T_R2T_SENT, bpf_ktime_get_ns());
	return 0;
}

/* the response capsule (or the last C2H data PDU carrying SUCCESS) is out: done */
static __always_inline int on_resp_sent(bool btf, struct nvmet_tcp_cmd *cmd, struct ntbpf_rec *r,
					struct nt_slot *s, __u64 key, __u64 ts, int ret)
{
	if (ret != 1 || test_skipped())
		return 0;
	ev_set(r, EV_T_RESP_SENT, ts);
	if (r->depth)
		depth_out((__u64)RD(btf, cmd, queue));
	emit(r, s, key, NTBPF_ROLE_TARGET);
	return 0;
}

/*
 * nvmet_try_send_response(cmd) entered: resp_sent is the entry of the first
 * call, and the record is emitted there, in the one program run (no fexit:
 * a run and the trampoline's call of the function fewer per I/O).  A
 * response of 24 bytes (28 with a header digest) goes out whole unless the
 * socket has no room for it; the calls after such a first one find no
 * record, and the wait for room, TCP's, counts as network time.
 */
static __always_inline int on_resp_send(bool btf, struct nvmet_tcp_cmd *cmd)
{
	struct nt_slot *s;
	__u64 k;
	struct ntbpf_rec *r = tgt_rec_of(btf, cmd, &s, &k);

	return r ? on_resp_sent(btf, cmd, r, s, k, bpf_ktime_get_ns(), 1) : 0;
}

/*
 * C2H data with SUCCESS (sqhd disabled: the gate, tgt_rec_sqhd_off, checked
 * it) ends the command without a response capsule
 */
static __always_inline int on_tgt_data_sent(bool btf, struct nvmet_tcp_cmd *cmd, struct ntbpf_rec *r,
					    struct nt_slot *s, __u64 key, __u64 ts, int ret)
{
	if (ret == 1 && !RD(btf, cmd, queue, data_digest))
		return on_resp_sent(btf, cmd, r, s, key, ts, ret);
	return 0;
}

ENTRY_HOOK1(nvmet_try_send_response, on_resp_send, struct nvmet_tcp_cmd *)
ENTRY_HOOK1(nvmet_try_send_r2t, on_r2t_send, struct nvmet_tcp_cmd *)
EXIT_HOOK2(nvmet_try_send_data, on_tgt_data_sent, struct nvmet_tcp_cmd *, bool, tgt_rec_sqhd_off)

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
