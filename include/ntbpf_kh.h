/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * ntbpf_kh.h - the in-kernel histograms of "ntbpf live" without per-I/O
 * records, as the BPF side keeps them: one per-CPU map value per group
 * (op, size, device, role) with every stage of that role in it, so that a
 * finished I/O costs one map lookup.  User space (src/liverun.c) turns each
 * slot back into the per-stage histogram of ntbpf_stages.h (struct
 * nt_kh_key / nt_kh_val, same buckets).  Include after ntbpf_stages.h.
 */
#ifndef NTBPF_KH_H
#define NTBPF_KH_H

/*
 * Stage values are differences of 32-bit event offsets (< 2^32 ns), so
 * only the buckets up to exponent 31 of nt_kh_bucket() can be hit: 896 of
 * NT_KH_NB.  32-bit counters (user space takes per-CPU differences, so
 * they may wrap) keep a group's value under the 32 KiB per-CPU limit.
 */
#define NT_KH_NB32 ((31 - NT_KH_SUB_BITS + 2) * NT_KH_SUB)
#define NT_KH_SLOTS 8

struct nt_kh_gkey {
	__u32 dev;
	__u32 bytes;
	__u8 op;
	__u8 role;
	__u8 pad[2];
};

struct nt_kh_gval {
	__u64 ios;			/* I/Os of the group */
	__u64 count[NT_KH_SLOTS];	/* per slot: values added */
	__u64 sum[NT_KH_SLOTS];
	__u32 b[NT_KH_SLOTS][NT_KH_NB32];
};

#define NT_KH_NONE 0xff

/* which stage slot i of a group of this role holds; NT_KH_NONE past the last (a switch: no data for BPF) */
static inline int nt_kh_slot_stage(int role, int i)
{
	if (role == NTBPF_ROLE_INITIATOR) {
		switch (i) {
		case 0: return NT_ST_BLK_SUB;
		case 1: return NT_ST_NVME_TCP_SUB;
		case 2: return NT_ST_NSTACK_COMP;
		case 3: return NT_ST_NVME_TCP_COMP;
		case 4: return NT_ST_BLK_COMP;
		case 5: return NT_ST_BLK_DEVICE;
		case 6: return NT_ST_REMOTE;
		case 7: return NT_ST_E2E;
		}
	} else if (role == NTBPF_ROLE_TARGET) {
		switch (i) {
		case 0: return NT_ST_NSTACK_SUB;
		case 1: return NT_ST_NVMET_TCP_SUB;
		case 2: return NT_ST_TARGET_SUBSYS;
		case 3: return NT_ST_NVMET_TCP_COMP;
		case 4: return NT_ST_TARGET_RES;
		}
	}
	return NT_KH_NONE;
}

#endif
