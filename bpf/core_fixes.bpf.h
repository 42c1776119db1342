/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * core_fixes.bpf.h - every kernel difference ntbpf's BPF code depends on, in
 * one place, each resolved through CO-RE (never a kernel version number).
 */
#ifndef NTBPF_CORE_FIXES_BPF_H
#define NTBPF_CORE_FIXES_BPF_H

#include <bpf/bpf_core_read.h>

/*
 * RD(btf, p, a, b): p->a->b.  Where the program's arguments are BTF pointers
 * (tp_btf, fentry, fexit; btf is a constant true there) a direct load the
 * verifier makes fault-safe, a few instructions; elsewhere (raw_tp, kprobe,
 * and pointers that are plain numbers to the verifier) one
 * bpf_probe_read_kernel call per step.  Every handler takes btf as its first
 * argument and is inlined, so only one of the two is compiled into each
 * program.
 */
#define RD(btf, ...) ((btf) ? ___arrow(__VA_ARGS__) : BPF_CORE_READ(__VA_ARGS__))

/*
 * v5.17 (f3fa33acca9f "block: remove the ->rq_disk field in struct request"):
 * the disk is reached through rq->q->disk; before, rq->rq_disk.
 */
struct request___old_rq_disk {
	struct gendisk *rq_disk;
} __attribute__((preserve_access_index));

static __always_inline struct gendisk *rq_disk(bool btf, struct request *rq)
{
	struct request___old_rq_disk *old = (void *)rq;

	if (bpf_core_field_exists(old->rq_disk))
		return RD(btf, old, rq_disk);
	return RD(btf, rq, q, disk);
}

/* btf: disk is a BTF pointer to the verifier (see RD) */
static __always_inline __u32 disk_devt(bool btf, struct gendisk *disk)
{
	if (!disk)
		return NTBPF_NO_DEV;
	return ((__u32)RD(btf, disk, major) << 20) | (__u32)RD(btf, disk, first_minor);
}

/* dev_t as the kernel encodes it (MKDEV: major << 20 | minor), as in block tracepoints */
static __always_inline __u32 rq_devt(bool btf, struct request *rq)
{
	return disk_devt(btf, rq_disk(btf, rq));
}

/*
 * With native NVMe multipath (CONFIG_NVME_MULTIPATH, on in distro kernels)
 * I/O is issued on a hidden per-path disk (nvme0c0n1); users know the
 * namespace head (nvme0n1).  The request queue's queuedata is the struct
 * nvme_ns, whose head has the head disk.  Without multipath there is no
 * head disk: the request's own disk is the one users see.
 */
struct nvme_ns_head___mp {
	struct gendisk *disk;
} __attribute__((preserve_access_index));

/* ns: the request queue's queuedata, a void * (so read with probe reads) */
static __always_inline __u32 nvme_ns_head_devt(struct nvme_ns *ns)
{
	struct nvme_ns_head___mp *head = NULL;
	struct gendisk *disk;

	if (!ns || !bpf_core_field_exists(head->disk))
		return NTBPF_NO_DEV;
	head = (void *)BPF_CORE_READ(ns, head);
	disk = BPF_CORE_READ(head, disk);
	return disk ? disk_devt(false, disk) : NTBPF_NO_DEV;
}

/*
 * v5.15 (87eb71076749 "block: add a sequence number to disks"): diskseq, a
 * number no other disk gets while the system runs; 0 where there is none.
 */
static __always_inline __u64 disk_seq(bool btf, struct gendisk *disk)
{
	if (!disk || !bpf_core_field_exists(disk->diskseq))
		return 0;
	return RD(btf, disk, diskseq);
}

static __always_inline __u32 nvme_head_devt(bool btf, struct request *rq)
{
	return nvme_ns_head_devt(RD(btf, rq, q, queuedata));
}

/*
 * v5.19 renamed enum req_opf to enum req_op (and made it blk_opf_t based);
 * the numeric values of the ops have never changed, but read them from BTF.
 * REQ_OP_BITS is a #define; its value is the first flag bit, __REQ_FAILFAST_DEV.
 */
enum req_opf___old {
	REQ_OP_READ___old = 0,
	REQ_OP_WRITE___old = 1,
	REQ_OP_FLUSH___old = 2,
	REQ_OP_DISCARD___old = 3,
	REQ_OP_WRITE_ZEROES___old = 9,
};

enum req_flag_bits___x {
	__REQ_FAILFAST_DEV___x = 8,
};

/* value of REQ_OP_<name> on the running kernel, or -1 if it has none */
#define REQ_OP_VAL(name)							\
	(bpf_core_enum_value_exists(enum req_op, REQ_OP_##name) ?		\
		(int)bpf_core_enum_value(enum req_op, REQ_OP_##name) :		\
	 bpf_core_enum_value_exists(enum req_opf___old, REQ_OP_##name##___old) ? \
		(int)bpf_core_enum_value(enum req_opf___old, REQ_OP_##name##___old) : -1)

static __always_inline __u8 rq_ntbpf_op(bool btf, struct request *rq)
{
	__u32 bits = 8, flags = RD(btf, rq, cmd_flags);
	int op;

	if (bpf_core_enum_value_exists(enum req_flag_bits___x, __REQ_FAILFAST_DEV___x))
		bits = bpf_core_enum_value(enum req_flag_bits___x, __REQ_FAILFAST_DEV___x);
	op = flags & ((1u << (bits & 31)) - 1);

	if (op == REQ_OP_VAL(READ))
		return NTBPF_OP_READ;
	if (op == REQ_OP_VAL(WRITE))
		return NTBPF_OP_WRITE;
	if (op == REQ_OP_VAL(FLUSH))
		return NTBPF_OP_FLUSH;
	if (op == REQ_OP_VAL(DISCARD))
		return NTBPF_OP_DISCARD;
	if (op == REQ_OP_VAL(WRITE_ZEROES))
		return NTBPF_OP_WRITE_ZEROES;
	return NTBPF_OP_OTHER;
}

#endif
