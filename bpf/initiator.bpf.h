/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * initiator.bpf.h - the initiator's hooks: the block layer (block_rq_issue,
 * block_rq_complete: every device), nvme core and nvme_tcp.  Part of
 * ntbpf.bpf.c (included there, once, after the maps, the records' helpers
 * and the attach variants' macros it uses): one object, one skeleton.
 */
#ifndef NTBPF_INITIATOR_BPF_H
#define NTBPF_INITIATOR_BPF_H

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
		/* only an I/O without a start stamp can have been counted: no lookup for the rest */
		skip = r->ev_mask & (1u << EV_I_BLK_START) ? NULL : bpf_map_lookup_elem(&nostamp_rq, &zero);
		if (skip && *skip == key) {
			*skip = 0;
			__sync_fetch_and_sub(&no_start_stamp, 1);
		}
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
	/*
	 * Its bios taken (multipath's failover: blk_steal_bios leaves no bio
	 * and no bytes) and no status yet: where the kernel keeps it (v6.1).
	 */
	else if (bpf_core_type_exists(struct nvme_request) && !cfg.kernel_agg && btf && !error && !r->status &&
		 (r->flags & NTBPF_F_NVME) && r->bytes && !nr_bytes && !RD(btf, rq, bio))
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
	if (issue_deferred && !(r->ev_mask & (1u << EV_I_BLK_START))) {
		__sync_fetch_and_add(&no_start_stamp, 1);
		skip = bpf_map_lookup_elem(&nostamp_rq, &zero);
		if (skip)
			*skip = key;
	}
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

/*
 * bpf_rdonly_cast (v6.2) makes a kept address a typed pointer to load from
 * directly (a guarded load, ~8 instructions) where a probe read is a helper
 * call (~80 on the lab's clock).  Weak: on a kernel without it the programs
 * that call it are not loaded (their tp_btf_rc_ names; src/hooks.c).
 */
extern void *bpf_rdonly_cast(const void *obj, __u32 btf_id) __ksym __weak;

/* btf: 0 raw_tp, 1 tp_btf, 2 tp_btf_rc_ (bpf_rdonly_cast) */
static __always_inline int on_nvme_complete(int btf, struct request *rq)
{
	__u64 key = (__u64)rq;
	struct ntbpf_rec *r = rec_get(key);
	struct nvme_request *nreq = nvme_req_of_rq(rq);

	if (r) {
		ev_set(r, EV_I_NVME_DONE, bpf_ktime_get_ns());
		/*
		 * block_rq_complete reads it where the I/O failed (its error),
		 * except before 5.11 (no error there): a probe read here then.
		 * Through bpf_rdonly_cast (a guarded load, no helper call) every
		 * I/O's status here: a request native multipath fails over ends
		 * without an error, its status cleared (nvme_failover_req), so
		 * only here does it show its path error (docs/stages.md,
		 * "Multipath").  The in-kernel histograms keep no status.
		 */
		if (!cfg.kernel_agg && cfg.blk_tp_has_q)
			r->status = BPF_CORE_READ(nreq, status);
		else if (!cfg.kernel_agg && btf == 2 && bpf_core_type_exists(struct nvme_request))
			r->status = ((struct nvme_request *)bpf_rdonly_cast(nreq,
						bpf_core_type_id_kernel(struct nvme_request)))->status;
	}
	return 0;
}

TP_HOOK1(nvme_complete_rq, on_nvme_complete, struct request *)
SEC("tp_btf/nvme_complete_rq")
int BPF_PROG(tp_btf_rc_nvme_complete_rq, struct request *a0)
{
	if (paused)
		return 0;
	if (cfg.test.refuse_rc)
		asm volatile("r0 = *(u64 *)(r10 + 8)" ::: "r0");
	return NONNULL(a0) ? on_nvme_complete(2, a0) : 0;
}

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

#endif
