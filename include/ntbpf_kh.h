/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * ntbpf_kh.h - the in-kernel histograms of "ntbpf live" without per-I/O
 * records, as the BPF side keeps them: one per-CPU map value per group
 * (op, size, device, role) with every stage of that role in it, so that a
 * finished I/O costs one map lookup.  User space (src/liverun.c) turns each
 * slot back into one stage's histogram (struct nt_kh_key, nt_kh_value() in
 * src/stages.h).  Which stage a slot holds comes from the stage table
 * (ntbpf_stages.h, column SLOT).  Include after ntbpf_stages.h.
 */
#ifndef NTBPF_KH_H
#define NTBPF_KH_H

/*
 * In-kernel histogram buckets ("ntbpf live" without per-I/O records):
 * log-linear with 2^NT_KH_SUB_BITS sub-buckets per power of two, so a
 * bucket's midpoint is within 1/64 (1.6 %) of any value in it; values under
 * 2^NT_KH_SUB_BITS ns are exact.  Up to 2^NT_KH_MAX_EXP ns (68 s).
 */
#define NT_KH_SUB_BITS 5
#define NT_KH_SUB (1u << NT_KH_SUB_BITS)
#define NT_KH_MAX_EXP 36
#define NT_KH_NB ((NT_KH_MAX_EXP - NT_KH_SUB_BITS + 2) * NT_KH_SUB)

/* floor(log2(v)) for v > 0, without a clz instruction */
static inline __u32 nt_log2(__u64 v)
{
	__u32 r = 0;

	if (v >> 32) { v >>= 32; r += 32; }
	if (v >> 16) { v >>= 16; r += 16; }
	if (v >> 8) { v >>= 8; r += 8; }
	if (v >> 4) { v >>= 4; r += 4; }
	if (v >> 2) { v >>= 2; r += 2; }
	if (v >> 1) r += 1;
	return r;
}

static inline __u32 nt_kh_bucket(__u64 v)
{
	__u32 e;

	if (v < NT_KH_SUB)
		return (__u32)v;
	e = nt_log2(v);
	if (e > NT_KH_MAX_EXP) {
		e = NT_KH_MAX_EXP;
		v = (1ull << (NT_KH_MAX_EXP + 1)) - 1;
	}
	return (e - NT_KH_SUB_BITS + 1) * NT_KH_SUB + (__u32)((v >> (e - NT_KH_SUB_BITS)) & (NT_KH_SUB - 1));
}

/* floor(log2) of every byte value: nt_kh_bucket32 looks the top byte up */
#define NT_L2_4(n) n, n, n, n
#define NT_L2_16(n) NT_L2_4(n), NT_L2_4(n), NT_L2_4(n), NT_L2_4(n)
static const __u8 nt_log2_byte[256] = {
	0, 0, 1, 1, NT_L2_4(2), NT_L2_4(3), NT_L2_4(3), NT_L2_16(4),
	NT_L2_16(5), NT_L2_16(5), NT_L2_16(6), NT_L2_16(6), NT_L2_16(6), NT_L2_16(6),
	NT_L2_16(7), NT_L2_16(7), NT_L2_16(7), NT_L2_16(7), NT_L2_16(7), NT_L2_16(7), NT_L2_16(7), NT_L2_16(7),
};
#undef NT_L2_4
#undef NT_L2_16

/*
 * nt_kh_bucket(v) for v < 2^32 (every stage value: see below), in fewer
 * instructions for the BPF side: two compares and one table load find the
 * exponent.  tests/unit/test_stages.c checks that the two agree.
 */
static inline __u32 nt_kh_bucket32(__u32 v)
{
	__u32 e;

	if (v < NT_KH_SUB)
		return v;
	/* NT_BOUND: the verifier sees the index bounded in the register that holds it */
	if (v >> 16)
		e = v >> 24 ? 24 + nt_log2_byte[NT_BOUND(v >> 24, 256)] : 16 + nt_log2_byte[NT_BOUND((v >> 16) & 0xff, 256)];
	else
		e = v >> 8 ? 8 + nt_log2_byte[NT_BOUND(v >> 8, 256)] : nt_log2_byte[NT_BOUND(v, 256)];
	return (e - NT_KH_SUB_BITS + 1) * NT_KH_SUB + ((v >> (e - NT_KH_SUB_BITS)) & (NT_KH_SUB - 1));
}

/*
 * Stage values are differences of 32-bit event offsets (< 2^32 ns), so
 * only the buckets up to exponent 31 of nt_kh_bucket() can be hit: 896 of
 * NT_KH_NB.  32-bit counters (user space takes per-CPU differences, so
 * they may wrap) keep a group's value under the 32 KiB per-CPU limit.
 */
#define NT_KH_NB32 ((31 - NT_KH_SUB_BITS + 2) * NT_KH_SUB)
#define NT_KH_SLOTS 8

/*
 * The requests in flight on a queue (struct ntbpf_rec's depth, < 2^16),
 * with the same buckets: exact under 32, within 1.6 % above.  Kept only
 * when live groups by queue (the BPF side's cfg.kh_by_queue).
 */
#define NT_KH_DEP_NB ((15 - NT_KH_SUB_BITS + 2) * NT_KH_SUB)

/*
 * ctrl, qid: 0 unless live groups by queue; then an NVMe queue's (an I/O
 * queue's qid is 1 or more).  status: 0, or the I/O failed: the
 * initiator's blk_status_t (block_rq_complete's error: the histograms read
 * no NVMe status), the target's NVMe status (cqe) - failed I/Os in groups
 * of their own, as the report keeps them.  16 bytes: hashed at every I/O.
 */
struct nt_kh_gkey {
	__u32 dev;
	__u32 bytes;
	__u8 op;
	__u8 role;
	__u16 qid;
	__u16 ctrl;
	__u16 status;
};
_Static_assert(sizeof(struct nt_kh_gkey) == 16, "struct nt_kh_gkey: 16 bytes, four words to hash");

struct nt_kh_gval {
	__u64 ios;			/* I/Os of the group */
	__u64 count[NT_KH_SLOTS];	/* per slot: values added */
	__u64 sum[NT_KH_SLOTS];
	__u32 b[NT_KH_SLOTS][NT_KH_NB32];
	__u64 dep_n;			/* I/Os with a known depth (by queue only) */
	__u64 dep_sum;
	__u32 dep_b[NT_KH_DEP_NB];
};
/* the kernel's limit on a per-CPU value (PCPU_MIN_UNIT_SIZE) */
_Static_assert(sizeof(struct nt_kh_gval) <= 32768, "struct nt_kh_gval: over the per-CPU value limit");

#define NT_KH_NONE 0xff

/*
 * which stage slot i of a group of this role holds; NT_KH_NONE past the
 * last.  A switch per role over constants from the stage table (rows of the
 * other role get case labels past the slots, which i never reaches): no data
 * for BPF, a few compares.
 */
#define NT_X_KH_CASE(ROLE, id, name, role_, from, to, afrom, ato, slot, ...) \
	case (role_) == (ROLE) ? (slot) : NT_KH_SLOTS + NT_ST_##id: \
		return NT_ST_##id;
#define NT_X_KH_INIT(...) NT_X_KH_CASE(NTBPF_ROLE_INITIATOR, __VA_ARGS__)
#define NT_X_KH_TGT(...) NT_X_KH_CASE(NTBPF_ROLE_TARGET, __VA_ARGS__)

static inline int nt_kh_slot_stage(int role, int i)
{
	if ((unsigned int)i >= NT_KH_SLOTS)
		return NT_KH_NONE;
	if (role == NTBPF_ROLE_INITIATOR) {
		switch (i) {
		NT_STAGES(NT_X_KH_INIT)
		}
	} else if (role == NTBPF_ROLE_TARGET) {
		switch (i) {
		NT_STAGES(NT_X_KH_TGT)
		}
	}
	return NT_KH_NONE;
}

/* a loop unrolled by clang (the BPF side); gcc builds the user-space tests */
#ifdef __clang__
#define NT_UNROLL _Pragma("unroll")
#else
#define NT_UNROLL
#endif

#endif
