/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * ntbpf.h - the per-I/O record and the counters, shared by the BPF programs
 * and user space (with ntbpf_stages.h, the stage table, and ntbpf_kh.h, the
 * in-kernel histograms).
 *
 * Fixed-width types only.  The per-I/O record defined here is what the BPF
 * programs assemble in a map while a request is in flight and emit once, at
 * completion, through the ring buffer; user space writes it unchanged (little
 * endian) into the record file (docs/record-format.md).
 *
 * On the BPF side include it after vmlinux.h.
 */
#ifndef NTBPF_H
#define NTBPF_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

#define NTBPF_MAX_EV 16		/* event slots per record */
#define NTBPF_MAX_DEVS 64	/* -d filters */

/* Which host a record (or a file) comes from. */
enum ntbpf_role {
	NTBPF_ROLE_INITIATOR = 1,
	NTBPF_ROLE_TARGET = 2,
};

/*
 * Events seen on the initiator.  ev[i] holds the time of event i in ns after
 * the record's t0 (bit i of ev_mask says whether it was seen).  Stages are
 * differences of two events of the same host: src/stages.c and
 * docs/stages.md.  Values are part of the file format: append, never renumber.
 */
enum ntbpf_ev_init {
	EV_I_BLK_START = 0,	/* rq->start_time_ns (blk-mq request allocated); t0 */
	EV_I_BLK_ISSUE = 1,	/* block:block_rq_issue (blk_mq_start_request) */
	EV_I_QUEUE_RQ = 2,	/* nvme_tcp_queue_rq / nvme:nvme_setup_cmd */
	EV_I_CMD_SENT = 3,	/* command PDU (+ in-capsule data) handed to the socket */
	EV_I_R2T_ARRIVE = 4,	/* last R2T PDU's skb arrived (large writes) */
	EV_I_DATA_SENT = 5,	/* last H2C data PDU handed to the socket */
	EV_I_RESP_ARRIVE = 6,	/* skb with the response (or last C2H data) arrived */
	EV_I_RESP_PROC = 7,	/* nvme_tcp receive path processes the response */
	EV_I_NVME_DONE = 8,	/* nvme:nvme_complete_rq */
	EV_I_BLK_DONE = 9,	/* block:block_rq_complete */
	EV_I_NR
};

/* Events seen on the target (t0 is the first of them seen). */
enum ntbpf_ev_tgt {
	EV_T_CMD_ARRIVE = 0,	/* skb with the command PDU arrived at the socket */
	EV_T_CMD_PICKUP = 1,	/* nvmet_tcp_try_recv_pdu picks the PDU up */
	EV_T_REQ_INIT = 2,	/* nvmet:nvmet_req_init */
	EV_T_R2T_SENT = 3,	/* last R2T handed to the socket (large writes) */
	EV_T_DATA_ARRIVE = 4,	/* skb with the last H2C data arrived */
	EV_T_EXEC = 5,		/* request handed to the backend (execute) */
	EV_T_SUBSYS_DONE = 6,	/* nvmet:nvmet_req_complete */
	EV_T_RESP_QUEUED = 7,	/* nvmet_tcp_queue_response */
	EV_T_RESP_SENT = 8,	/* response capsule (+ C2H data) handed to the socket */
	EV_T_NR
};

/* Block-layer operation, the grouping key "op". */
enum ntbpf_op {
	NTBPF_OP_READ = 0,
	NTBPF_OP_WRITE = 1,
	NTBPF_OP_FLUSH = 2,
	NTBPF_OP_DISCARD = 3,
	NTBPF_OP_WRITE_ZEROES = 4,
	NTBPF_OP_OTHER = 5,
	NTBPF_OP_NR
};

/* ntbpf_rec.flags */
#define NTBPF_F_ADMIN     0x01	/* admin queue (qid 0) command */
#define NTBPF_F_NVME      0x02	/* ctrl/qid/cid/opcode are valid */
#define NTBPF_F_SATURATED 0x04	/* an event was > 4.29 s after t0 and was clamped */
#define NTBPF_F_PARTIAL   0x08	/* completed in more than one block_rq_complete */

#define NTBPF_NO_DEV 0xffffffffu

/*
 * One record per I/O per host: 112 bytes, no holes, as the ring buffer
 * carries it.  The file stores its fields column by column
 * (docs/record-format.md, src/recfile.c).
 */
struct ntbpf_rec {
	__u64 t0;		/* CLOCK_MONOTONIC ns (bpf_ktime_get_ns) of the first event */
	__u64 sector;		/* starting sector (512 B) on the device, or 0 */
	__u32 dev;		/* dev_t of the block device (initiator) or nsid (target) */
	__u32 bytes;		/* transfer size */
	__u32 ev_mask;		/* bit i set: ev[i] is valid */
	__u16 ctrl;		/* initiator: nvme ctrl instance; target: cntlid */
	__u16 qid;		/* NVMe queue id (0 = admin) */
	__u16 cid;		/* NVMe command id as on the wire */
	__u8 op;		/* enum ntbpf_op */
	__u8 opcode;		/* NVMe opcode, 0xff if unknown */
	__u8 flags;		/* NTBPF_F_* */
	__u8 role;		/* enum ntbpf_role */
	__u16 status;		/* NVMe status or blk_status_t, 0 = success */
	__u32 ev[NTBPF_MAX_EV];	/* ns after t0 */
	__u16 port;		/* the queue's TCP connection: the initiator's port, as both hosts
				 * see it (initiator: local, target: remote); 0 unknown */
	__u16 depth;		/* recorded requests in flight on the queue when this one was queued
				 * (initiator, nvme_setup_cmd) or arrived (target, nvmet_req_init),
				 * itself included; 0 unknown */
	__u16 reserved[2];	/* 0 */
};
_Static_assert(sizeof(struct ntbpf_rec) == 112, "struct ntbpf_rec: update the size above and the record format");

/*
 * Initiator, in the BPF object (not on disk): controller nvmeN's cntlids as
 * its queues' first I/Os after each connect read them (a reconnect gives a
 * controller a new cntlid), with the time of that I/O's nvme_setup_cmd.
 * record puts the changes into the header (nt_header_add_cntlid_change).
 */
#define NT_CNOTE_CTRLS 64	/* controllers nvme0 .. nvme63 */
#define NT_CNOTES 8		/* cntlids noted per controller: a power of two */
struct nt_cnotes {
	__u32 n;
	__u16 cntlid[NT_CNOTES];
	__u64 ts[NT_CNOTES];
};

/*
 * Target, in the BPF object (not on disk): the NQNs of controller cntlid
 * (nvmet_ctrl.hostnqn, .subsysnqn), read at a queue's first I/O after each
 * connect (a reused cntlid is read anew); record puts them into the header's
 * CTRL items.  Strings from the kernel: user space bounds and escapes them.
 */
#define NT_NQN_LEN 256	/* NVMF_NQN_FIELD_LEN */
#define NT_TNQN_CTRLS 1024	/* controllers noted (more: their CTRL items name no host) */
struct nt_tnqn {
	char hostnqn[NT_NQN_LEN];
	char subsysnqn[NT_NQN_LEN];
};

/*
 * record's per-CPU rings (in the BPF object, not on disk): each CPU's
 * programs put records into their CPU's ring of an mmapable array, without
 * a helper call or a lock; user space takes them every 100 ms, or at once
 * when a ring is half full (an 8-byte mark on the ring buffer).  A program
 * that finds its CPU's ring full, or taken by a program it interrupted or
 * preempted (busy), uses the shared ring buffer instead.  x86 only (the
 * order of the programs' stores).  One per CPU, a cache line each.
 */
struct nt_pcr_ctl {
	__u64 head;	/* records written into this CPU's ring (BPF) */
	__u64 tail;	/* records taken from it (user space) */
	__u64 busy;	/* programs of this CPU claiming it (atomic adds): 1, the one writing */
	__u64 pad[5];
};
#define NT_PCR_MAX_RECS 8192	/* records per CPU ring, at most (a power of two) */

/* An in-flight record in the BPF object's slot array (not on disk). */
struct nt_slot {
	__u64 key;		/* the request's address, 0: free */
	__u64 entry_ts;		/* an exit hook's entry time (ktime), 0: none */
	struct ntbpf_rec r;
};

/*
 * Per NVMe/TCP queue, in the BPF object (not on disk): the last ARRIVALS
 * data_ready calls, each with how far the byte stream had arrived
 * (tp->rcv_nxt).  A PDU's arrival is the first of them that covered the
 * bytes being read (tp->copied_seq): exact at any queue depth, however the
 * driver batches its reads.
 */
#define ARRIVALS 16	/* a power of two */
_Static_assert((ARRIVALS & (ARRIVALS - 1)) == 0, "ARRIVALS: the BPF side indexes the ring with a mask");

struct arrival {
	__u32 seq;	/* rcv_nxt after this delivery */
	__u32 pad;
	__u64 ts;
};

struct qstate {
	struct arrival a[ARRIVALS];
	__u32 head;	/* next slot to write */
	__u32 chunk_end;	/* initiator: end (stream seq) of what nvme_tcp_recv_skb is handling */
	__u64 pickup;	/* target: last nvmet_tcp_try_recv_pdu */
	__u64 sock;	/* the queue's struct socket * when port was read (a reconnect makes a new one) */
	__u16 port;	/* the initiator's TCP port of the queue's connection */
	__u16 ctrl;	/* initiator: the queue's controller instance; target: cntlid; read with port */
	/* read with port, once per connection, for the file's queue list (user space reads them at the end) */
	__u16 qid;
	__s16 rx_queue;	/* sk_rx_queue_mapping: the NIC RX queue the connection's packets came on, -1 unknown */
	__s32 io_cpu;	/* initiator: nvme_tcp_queue.io_cpu; target: the CPU of its io_work at the first I/O */
	__u32 saddr[4];	/* local address (IPv4: saddr[0], network order) */
	__u32 daddr[4];	/* remote address */
	__u16 sport;	/* local port */
	__u16 dport;	/* remote port */
	__u16 family;	/* AF_INET 2, AF_INET6 10; 0: no connection seen */
	__s16 tx_queue;	/* skc_tx_queue_mapping: the NIC TX queue the connection sends on (set where the
			 * device has several: XPS or a hash), -1 unknown */
	__s32 inflight;	/* recorded requests in flight (depth), 0 after a sampling window's forget */
	__u32 pad;	/* 0 */
	__u64 sk;	/* target: sock->sk of sock, read with it */
};

/* A queue's state in the BPF object's slot array, at an index hashed from the queue's address. */
struct nt_qslot {
	__u64 key;	/* the queue's address, 0: free */
	struct qstate s;
};

/*
 * The BPF side's load-time settings: one read-only object (bpf/ntbpf.bpf.c:
 * `const volatile struct ntbpf_cfg cfg`, in .rodata), filled in one place
 * by the loader (cfg_of() in src/probes.c) before load.  The verifier reads
 * each field as a constant, so a setting that is off costs nothing: its code
 * is dropped unread.  Flags are __u8 (0 or 1); fixed-width types only, no
 * bitfields.
 */
struct ntbpf_test_knobs {
	/*
	 * NTBPF_TEST_SKIP_END=N: every Nth run of a program that ends a record (counting the runs
	 * that find one) returns at once, as when the kernel skips a program's run and counts no
	 * miss (seen on 6.18, and once on 6.1 in the lab)
	 */
	__u32 skip_end;
	/* NTBPF_TEST_REFUSE_RC=1: the tp_btf_rc_ programs read past the stack, which the verifier refuses */
	__u8 refuse_rc;
	/* NTBPF_TEST_COST=noemit: records are built and ended, never put on the ring buffer */
	__u8 no_emit;
	__u8 pad[2];
};

struct ntbpf_cfg {
	__u32 sample;			/* record about 1 in sample I/Os (1: all) */
	__u32 pcr_n;			/* records per CPU of record's per-CPU rings (a power of two); 0: none */
	__u8 rec_role;			/* enum ntbpf_role: which kind of queue sk_user_data points to */
	__u8 blk_tp_has_q;		/* block_rq_* tracepoints take (q, rq) (before v5.11) */
	__u8 tgt_emit_at_complete;	/* no resp_sent hook: emit at nvmet_req_complete */
	__u8 kernel_agg;		/* histograms in the kernel instead of per-I/O records (live) */
	__u8 kh_by_queue;		/* kernel_agg: a group per NVMe queue too, with its depths */
	__u8 filter_dev;		/* only the devices of dev_list */
	__u8 pad[2];
	/* the -d filters (dev_t, kernel encoding): a scan of ndevs constants is cheaper than a hash lookup */
	__u32 ndevs;
	__u32 dev_list[NTBPF_MAX_DEVS];
	struct ntbpf_test_knobs test;	/* test knobs only: all 0 outside the tests */
};

/* Counters kept by the BPF side (per-CPU array, index = enum). */
enum ntbpf_stat {
	ST_EMITTED = 0,		/* records handed to user space (the ring buffer's counted here, the per-CPU rings' by their heads: nt_probes_stats adds them) */
	ST_LOST_RINGBUF,	/* ring buffer full: record dropped */
	ST_LOST_MAP_FULL,	/* in-flight map full: request not tracked */
	ST_NO_START,		/* completion of a request not seen starting */
	ST_ADMIN_SKIPPED,	/* admin-queue commands not recorded */
	ST_FILTERED,		/* requests skipped by -d / --sample */
	ST_INFLIGHT_END,	/* still in flight when recording stopped (user space) */
	ST_PROG_MISSES,		/* program runs the kernel skipped (recursion_misses, user space) */
	ST_NO_COMPLETE,		/* request reissued before its completion was seen: record lost */
	ST_NOT_RUN,		/* I/Os the devices' own counts show that no program run saw (user space) */
	ST_NR
};

#endif /* NTBPF_H */
