/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * target.bpf.h - the target's hooks: nvmet core and nvmet_tcp.  Part of
 * ntbpf.bpf.c (included there, once, after initiator.bpf.h): one object,
 * one skeleton.
 */
#ifndef NTBPF_TARGET_BPF_H
#define NTBPF_TARGET_BPF_H

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

#endif
