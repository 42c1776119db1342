// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * inject.bpf.c - the lab's delay injector (never part of ntbpf): on a kernel function that runs
 * strictly between one stage's two boundary events on the same I/O's path, busy-wait until the
 * clock has moved on by a set delay.  On the instruction clock (virtual time = guest
 * instructions) the wait is exactly the delay, whatever the other vCPU does; on the host clock
 * it is the delay in wall time.  A known answer: the stage that holds the site must grow by the
 * delay and no other stage may move.
 *
 * One program per site (tests/lab/inject/inject.c has the table: stage, function, filter);
 * the loader turns on the sites asked for and sets their delays (0: the site runs its filter
 * and returns, so that a baseline carries the same programs as the delayed run).
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#include "inject.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* per phase and site: the delay in ns (0: run the filter only).  With `every` set, the I/Os
 * are counted where they enter nvme-tcp (queue_rq) and I/O k (from 1) runs phase (k-1)/every
 * (the last phase once the schedule is over); at QD1 all of an I/O's sites run between its
 * queue_rq and the next one's, so each I/O sees one phase. */
const volatile __u64 delay_ns[INJ_MAX_PHASES][INJ_NSITES] = {};
const volatile __u32 every = 0;
const volatile __u32 nphases = 1;

__u64 io_count = 0;
/* per phase and site: how often it spun, and how often its filter passed with no delay */
__u64 hits[INJ_MAX_PHASES][INJ_NSITES] = {};
__u64 passes[INJ_MAX_PHASES][INJ_NSITES] = {};

static __always_inline __u32 phase(void)
{
	__u64 c = io_count, p;

	if (!every || !c)
		return 0;
	p = (c - 1) / every;
	return p < nphases ? p : nphases - 1;
}

/* 5.10's request has the disk itself (rq_disk; gone in 6.0 for q->disk) */
struct request___old {
	struct gendisk *rq_disk;
} __attribute__((preserve_access_index));

/* The wait: bpf_loop (5.17+), or, built with -DINJ_BOUNDED_LOOP (the object ntbpf-inject loads
 * on kernels without bpf_loop, e.g. 5.10), a bounded loop.  One object cannot hold both: the
 * bpf_loop call passes its callback as a BPF_PSEUDO_FUNC ld_imm64, which a kernel before 5.13
 * refuses at load even on a branch never taken. */
/* Built with -DINJ_PREEMPT_OFF (the object ntbpf-inject tries first): the wait runs with
 * preemption off (kfuncs of 6.10+), so that on a preemptible kernel (7.2's generic flavor) no
 * other task runs inside it and stretches it past its end (it overshot by 1.1-3.9 us there). */
#ifdef INJ_PREEMPT_OFF
extern void bpf_preempt_disable(void) __ksym;
extern void bpf_preempt_enable(void) __ksym;
#endif

#ifndef INJ_BOUNDED_LOOP
static int spin_cb(__u32 i, void *ctx)
{
	__u64 *end = ctx;

	return bpf_ktime_get_ns() >= *end;
}
#endif

static __always_inline void spin(int site)
{
	__u32 p = phase();
	__u64 d, end;

	if (p >= INJ_MAX_PHASES || site < 0 || site >= INJ_NSITES)
		return;
	d = delay_ns[p][site];
	if (!d) {
		__sync_fetch_and_add(&passes[p][site], 1);
		return;
	}
#ifdef INJ_PREEMPT_OFF
	bpf_preempt_disable();
#endif
	end = bpf_ktime_get_ns() + d;
#ifndef INJ_BOUNDED_LOOP
	bpf_loop(1 << 22, spin_cb, &end, 0);
#ifdef INJ_PREEMPT_OFF
	bpf_preempt_enable();
#endif
#else
	/* bounded: the verifier walks every round and keeps the early exit of each on its branch
	 * stack, which it caps at 8192 (5.10: "The sequence of 8193 jumps is too complex" with 8192
	 * rounds); each round reads the clock (tens of ns): a few hundred us at most */
	for (int i = 0; i < 7680; i++)
		if (bpf_ktime_get_ns() >= end)
			break;
#endif
	__sync_fetch_and_add(&hits[p][site], 1);
}

/* the disk's name starts "nvme" (the initiator's namespace or one of its paths; the admin
 * queue has no disk, the target's backing device is nullb0) */
static __always_inline bool nvme_named(struct gendisk *disk)
{
	char name[4] = {};

	if (!disk)
		return false;
	bpf_probe_read_kernel(name, sizeof(name), &disk->disk_name);
	return name[0] == 'n' && name[1] == 'v' && name[2] == 'm' && name[3] == 'e';
}

static __always_inline bool nvme_disk(struct request *rq)
{
	if (bpf_core_field_exists(((struct request___old *)0)->rq_disk))
		return nvme_named(BPF_CORE_READ((struct request___old *)rq, rq_disk));
	return nvme_named(BPF_CORE_READ(rq, q, disk));
}

/* ---- initiator ---------------------------------------------------------------------------- */

/* blk_submission: nvme-tcp's queue_rq, before nvme_setup_cmd (queue_rq's event); counts the
 * I/Os (an nvme disk's requests) for the phases */
static __always_inline int queue_rq(const struct blk_mq_queue_data *bd)
{
	struct request *rq = BPF_CORE_READ(bd, rq);

	if (!nvme_disk(rq))
		return 0;
	__sync_fetch_and_add(&io_count, 1);
	spin(INJ_QUEUE_RQ);
	return 0;
}
SEC("fentry/nvme_tcp_queue_rq")
int BPF_PROG(f_queue_rq, struct blk_mq_hw_ctx *hctx, const struct blk_mq_queue_data *bd)
{
	return queue_rq(bd);
}
SEC("kprobe/nvme_tcp_queue_rq")
int BPF_KPROBE(k_queue_rq, struct blk_mq_hw_ctx *hctx, const struct blk_mq_queue_data *bd)
{
	return queue_rq(bd);
}

/* nvme_tcp_submission: blk_mq_start_request of an nvme disk's request, called by queue_rq
 * after nvme_setup_cmd and before the command is handed to the socket */
SEC("fentry/blk_mq_start_request")
int BPF_PROG(f_start_rq, struct request *rq)
{
	if (nvme_disk(rq))
		spin(INJ_START_RQ);
	return 0;
}

/* The initiator copies each PDU header out of the skb with skb_copy_bits into its queue's pdu
 * buffer; on return the header is there.  A whole header in one copy whose type is `type`
 * (24-byte header, plen = the copy's length: header and header digest, no data) */
static __always_inline bool copied_header(const __u8 *to, int len, __u8 type)
{
	__u8 h[8];

	if (len != 24 && len != 28)
		return false;
	if (bpf_probe_read_kernel(h, sizeof(h), to))
		return false;
	return h[0] == type && h[2] == 24 && h[3] == 0 &&
	       (h[4] | h[5] << 8 | h[6] << 16 | (__u32)h[7] << 24) == (__u32)len;
}

/* nstack_completion: the response capsule's header (0x05) copied, before it is processed;
 * nvme_tcp_submission's R2T leg (r2t_arrive -> data_sent): an R2T's header (0x09) copied */
SEC("fexit/skb_copy_bits")
int BPF_PROG(f_copy_bits, const struct sk_buff *skb, int offset, void *to, int len, int ret)
{
	if (ret)
		return 0;
	if (copied_header(to, len, 0x05))
		spin(INJ_RSP_COPIED);
	else if (copied_header(to, len, 0x09))
		spin(INJ_R2T_COPIED);
	return 0;
}

/* nvme_tcp_completion: after blk_mq_complete_request_remote (resp_proc's hook, at its entry)
 * returns, before nvme_complete_rq (nvme_done).  At its exit, not its entry: a wait there
 * could run before ntbpf's own fentry and land in nstack_completion.  When it returns true the
 * request completes elsewhere: by an IPI on the request's CPU, which does not wait for this
 * one (CPUs not sharing a cache), or by BLOCK_SOFTIRQ raised here (one hardware queue shared
 * by several CPUs), which runs after the wait unless a SCHED_FIFO ksoftirqd preempted io_work
 * inside the function (7.2, PREEMPT_LAZY, two vCPUs, --ksoftirqd-fifo: docs/stages.md) */
SEC("fexit/blk_mq_complete_request_remote")
int BPF_PROG(f_complete_remote, struct request *rq, bool ret)
{
	if (nvme_disk(rq))
		spin(INJ_COMPLETE_REMOTE);
	return 0;
}

/* blk_completion: nvme_complete_rq calls nvme_cleanup_cmd right after its tracepoint
 * (nvme_done), before blk_mq_end_request's block_rq_complete (blk_done) */
SEC("fentry/nvme_cleanup_cmd")
int BPF_PROG(f_cleanup, struct request *rq)
{
	if (nvme_disk(rq))
		spin(INJ_CLEANUP);
	return 0;
}

/* ---- target ------------------------------------------------------------------------------- */

/* nstack_submission: the target's io_work starts while a command capsule alone waits on the
 * socket, at a PDU's start (data_ready queued the work: cmd_arrive; the command's header is
 * read by nvmet_tcp_try_recv_pdu: cmd_pickup).  A command capsule without in-capsule data is
 * 72 bytes (+4 with a header digest); an H2C data PDU (R2T writes) comes with its data. */
SEC("fentry/nvmet_tcp_io_work")
int BPF_PROG(f_tgt_io_work, struct work_struct *w)
{
	struct nvmet_tcp_queue *q = (void *)w - bpf_core_field_offset(struct nvmet_tcp_queue, io_work);
	struct tcp_sock *tp;
	__u32 pending, want;

	if (BPF_CORE_READ(q, rcv_state) != bpf_core_enum_value(enum nvmet_tcp_recv_state, NVMET_TCP_RECV_PDU) ||
	    BPF_CORE_READ(q, offset) != 0)
		return 0;
	tp = (struct tcp_sock *)BPF_CORE_READ(q, sock, sk);
	pending = BPF_CORE_READ(tp, rcv_nxt) - BPF_CORE_READ(tp, copied_seq);
	want = 72 + (BPF_CORE_READ(q, hdr_digest) ? 4 : 0);
	if (pending == want)
		spin(INJ_TGT_IO_WORK);
	return 0;
}

/* nvmet_tcp_submission: nvmet_req_init, called for a command after its header was picked up
 * (cmd_pickup) and before the backend gets it (exec) or the R2T is sent */
SEC("fentry/nvmet_req_init")
int BPF_PROG(f_req_init)
{
	spin(INJ_REQ_INIT);
	return 0;
}

/* target_subsystem: the backing bio ends (nvmet_bio_done, its bi_end_io), before
 * nvmet_req_complete's tracepoint (subsys_done).  And what the backing write bios were made
 * of: their segments (bi_vcnt, after bio_add_page merged the physically contiguous ascending
 * pages of the command's data), counted 1, 2-31, 32+, and how often a write had another count
 * than the write before (the writes' target_subsystem alternating every other write:
 * docs/stages.md, "The timer tick, kept out").  wbio_last is a plain read and write: exact at
 * QD1 (the known answers), approximate when bios end on several CPUs at once. */
__u64 wbio[3] = {}, wbio_changed = 0;
__u16 wbio_last = 0;

SEC("fentry/nvmet_bio_done")
int BPF_PROG(f_bio_done, struct bio *bio)
{
	__u16 n = BPF_CORE_READ(bio, bi_vcnt);

	if ((BPF_CORE_READ(bio, bi_opf) & 0xff) == 1) {	/* REQ_OP_WRITE */
		__sync_fetch_and_add(&wbio[n <= 1 ? 0 : n < 32 ? 1 : 2], 1);
		if (wbio_last && n != wbio_last)
			__sync_fetch_and_add(&wbio_changed, 1);
		wbio_last = n;
	}
	spin(INJ_BIO_DONE);
	return 0;
}

/* nvmet_tcp_completion: nvmet_tcp_queue_response called from nvmet_req_complete (after its
 * tracepoint: subsys_done), before the response's send (resp_sent).  The same function
 * queues an R2T from the receive path: not inside nvmet_req_complete, so no spin.  The
 * requests inside nvmet_req_complete are keyed by their own address, not counted per CPU: a
 * task preempted and moved to another CPU inside nvmet_req_complete (7.2) left a per-CPU count
 * standing, and that CPU's next R2Ts spun too (231 spins for 150 I/Os, the delay seen in
 * nvmet_tcp_submission). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u64);
	__type(value, __u8);
} in_complete SEC(".maps");

SEC("fentry/nvmet_req_complete")
int BPF_PROG(f_req_complete_in, struct nvmet_req *req)
{
	__u64 k = (__u64)req;
	__u8 one = 1;

	bpf_map_update_elem(&in_complete, &k, &one, BPF_ANY);
	return 0;
}

SEC("fexit/nvmet_req_complete")
int BPF_PROG(f_req_complete_out, struct nvmet_req *req)
{
	__u64 k = (__u64)req;

	bpf_map_delete_elem(&in_complete, &k);
	return 0;
}

SEC("fentry/nvmet_tcp_queue_response")
int BPF_PROG(f_queue_response, struct nvmet_req *req)
{
	__u64 k = (__u64)req;

	if (bpf_map_lookup_elem(&in_complete, &k))
		spin(INJ_QUEUE_RESPONSE);
	return 0;
}

/* ---- the timer tick kept out of the I/Os (--align-tick) ------------------------------------ */

/* Every busy vCPU takes the timer tick at the same jiffy boundaries (HZ=250 on Debian: every 4
 * ms), and on the instruction clock a tick on either vCPU (its handler, then the timer and RCU
 * softirqs: 5.5-28 us of instructions) lengthens whatever stage is running then.  Where 128k
 * writes keep both vCPUs busy for ~160 us, ~8 % of them took a tick, at random, in one of their
 * R2T stages (tests/lab/scenarios.py: KA_R2T_STAGES): p90 of ~75 writes a phase then moved 5-15
 * us from phase to phase.  With --align-tick GUARD an I/O that could still run when the next
 * boundary comes (fewer than GUARD ns before it) waits before it enters the block layer
 * (blk_mq_submit_bio, before blk-mq stamps rq->start_time_ns: no stage has begun) until the
 * boundary and its tick have passed.  The ticks are counted: those that came while an nvme I/O
 * was in flight (the alignment failed, or an I/O outlasted GUARD) and those off the boundaries
 * (tick_ns wrong for this kernel). */
const volatile __u64 tick_ns = 0;	/* 0: no alignment */
const volatile __u64 guard_ns = 0;
#define ALIGN_AFTER_NS 50000ULL		/* past the boundary: the tick's handler and softirqs */
#define TICK_SLACK_NS 100000ULL		/* a tick's handler this late after its boundary is on it */

__u64 last_tick = 0, off_run = 0;
__s64 in_flight = 0;
__u64 align_ios = 0, align_waits = 0, align_unanchored = 0, ticks_in_io = 0, ticks_off_grid = 0, ticks = 0;

SEC("fentry/update_process_times")
int BPF_PROG(f_tick)
{
	__u64 now = bpf_ktime_get_ns(), prev = last_tick;

	if (!tick_ns)
		return 0;
	__sync_fetch_and_add(&ticks, 1);
	if (prev && now > prev && (now - prev) % tick_ns > TICK_SLACK_NS &&
	    tick_ns - (now - prev) % tick_ns > TICK_SLACK_NS) {
		__sync_fetch_and_add(&ticks_off_grid, 1);
		/* A late first tick anchors the grid late, and every tick after it looks off the
		 * grid (a CI rehearsal, 6.1: 2185 of 2186 ticks, 467 of them inside I/Os): three
		 * in a row, and this one becomes the anchor.  One late tick among on-grid ones
		 * does not move it. */
		if (++off_run >= 3) {
			last_tick = now;
			off_run = 0;
		}
	} else if (prev) {
		off_run = 0;
	}
	if (in_flight > 0)
		__sync_fetch_and_add(&ticks_in_io, 1);
	/* the grid: the first tick's handler (late after its boundary by its entry, <1 us), or
	 * the third of three off-grid ticks in a row (above) */
	if (!prev)
		last_tick = now;
	return 0;
}

/* 5.10's bio names its disk (bi_disk; bi_bdev from 5.12) */
struct bio___old {
	struct gendisk *bi_disk;
} __attribute__((preserve_access_index));

static __always_inline bool nvme_bio(struct bio *bio)
{
	if (bpf_core_field_exists(((struct bio___old *)0)->bi_disk))
		return nvme_named(BPF_CORE_READ((struct bio___old *)bio, bi_disk));
	return nvme_named(BPF_CORE_READ(bio, bi_bdev, bd_disk));
}

SEC("fentry/blk_mq_submit_bio")
int BPF_PROG(f_align, struct bio *bio)
{
	__u64 now, grid, left, end;

	if (!tick_ns || !nvme_bio(bio))
		return 0;
	__sync_fetch_and_add(&align_ios, 1);
	grid = last_tick;
	now = bpf_ktime_get_ns();
	if (!grid || now < grid) {
		__sync_fetch_and_add(&align_unanchored, 1);
	} else {
		left = tick_ns - (now - grid) % tick_ns;
		if (left < guard_ns) {
			end = now + left + ALIGN_AFTER_NS;
#ifndef INJ_BOUNDED_LOOP
#ifdef INJ_PREEMPT_OFF
			bpf_preempt_disable();
#endif
			bpf_loop(1 << 23, spin_cb, &end, 0);
#ifdef INJ_PREEMPT_OFF
			bpf_preempt_enable();
#endif
#else
			(void)end;	/* no bpf_loop: the loader refuses --align-tick */
#endif
			__sync_fetch_and_add(&align_waits, 1);
		}
	}
	__sync_fetch_and_add(&in_flight, 1);
	return 0;
}

SEC("tp_btf/block_rq_complete")
int BPF_PROG(f_align_done, struct request *rq)
{
	if (tick_ns && nvme_disk(rq) && in_flight > 0)
		__sync_fetch_and_sub(&in_flight, 1);
	return 0;
}
