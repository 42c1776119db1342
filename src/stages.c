// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <string.h>
#include "stages.h"

static const struct {
	const char *name, *summary;
} names[NT_ST_NR] = {
	[NT_ST_BLK_SUB] = { "blk_submission",
		"request allocated in blk-mq -> handed to the nvme_tcp driver (block_rq_issue stands in on other drivers)" },
	[NT_ST_NVME_TCP_SUB] = { "nvme_tcp_submission",
		"nvme_tcp_queue_rq -> command PDU handed to the socket" },
	[NT_ST_NSTACK_SUB] = { "nstack_submission",
		"command PDU arrives at the target socket -> nvmet_tcp picks it up" },
	[NT_ST_NVMET_TCP_SUB] = { "nvmet_tcp_submission",
		"nvmet_tcp picks the PDU up -> request handed to the target backend" },
	[NT_ST_TARGET_SUBSYS] = { "target_subsystem",
		"request handed to the backend -> nvmet core completes it" },
	[NT_ST_NVMET_TCP_COMP] = { "nvmet_tcp_completion",
		"nvmet core completion -> response (and C2H data) handed to the socket" },
	[NT_ST_NETWORK] = { "network_transmission",
		"remote (initiator) - target_residence (target): the wire and both TCP stacks" },
	[NT_ST_NSTACK_COMP] = { "nstack_completion",
		"response arrives at the initiator socket -> nvme_tcp processes it" },
	[NT_ST_NVME_TCP_COMP] = { "nvme_tcp_completion",
		"nvme_tcp processes the response -> nvme request completed" },
	[NT_ST_BLK_COMP] = { "blk_completion",
		"nvme request completed -> block request completed" },
	[NT_ST_BLK_DEVICE] = { "blk_device",
		"block_rq_issue -> block_rq_complete, on devices without nvme_tcp hooks (driver + device)" },
	[NT_ST_REMOTE] = { "remote",
		"command sent -> response arrives, seen from the initiator (network + target)" },
	[NT_ST_TARGET_RES] = { "target_residence",
		"command arrives at the target -> response handed to the socket" },
	[NT_ST_E2E] = { "end_to_end",
		"request allocated in blk-mq -> block request completed" },
};

static const char *const ev_init_names[EV_I_NR] = {
	[EV_I_BLK_START] = "blk_start", [EV_I_BLK_ISSUE] = "blk_issue",
	[EV_I_QUEUE_RQ] = "queue_rq", [EV_I_CMD_SENT] = "cmd_sent",
	[EV_I_R2T_ARRIVE] = "r2t_arrive", [EV_I_DATA_SENT] = "data_sent",
	[EV_I_RESP_ARRIVE] = "resp_arrive", [EV_I_RESP_PROC] = "resp_proc",
	[EV_I_NVME_DONE] = "nvme_done", [EV_I_BLK_DONE] = "blk_done",
};

static const char *const ev_tgt_names[EV_T_NR] = {
	[EV_T_CMD_ARRIVE] = "cmd_arrive", [EV_T_CMD_PICKUP] = "cmd_pickup",
	[EV_T_REQ_INIT] = "req_init", [EV_T_R2T_SENT] = "r2t_sent",
	[EV_T_DATA_ARRIVE] = "data_arrive", [EV_T_EXEC] = "exec",
	[EV_T_SUBSYS_DONE] = "subsys_done", [EV_T_RESP_QUEUED] = "resp_queued",
	[EV_T_RESP_SENT] = "resp_sent",
};

const char *nt_stage_name(int s)
{
	return (s >= 0 && s < NT_ST_NR) ? names[s].name : "?";
}

const char *nt_stage_summary(int s)
{
	return (s >= 0 && s < NT_ST_NR) ? names[s].summary : "?";
}

int nt_stage_by_name(const char *name)
{
	for (int s = 0; s < NT_ST_NR; s++)
		if (!strcmp(names[s].name, name))
			return s;
	return -1;
}

const char *nt_ev_name(uint8_t role, int ev)
{
	if (role == NTBPF_ROLE_INITIATOR && ev >= 0 && ev < EV_I_NR)
		return ev_init_names[ev];
	if (role == NTBPF_ROLE_TARGET && ev >= 0 && ev < EV_T_NR)
		return ev_tgt_names[ev];
	return "?";
}

int nt_stage_value(const struct ntbpf_rec *r, int s, uint64_t *ns)
{
	__u64 v;
	int rc = nt_span_value(r, s, &v);

	if (rc > 0)
		*ns = v;
	return rc;
}

const int8_t nt_sum_slot[NT_ST_NR] = {
	/* initiator */
	[NT_ST_BLK_SUB] = 0, [NT_ST_NVME_TCP_SUB] = 1, [NT_ST_NSTACK_COMP] = 2, [NT_ST_NVME_TCP_COMP] = 3,
	[NT_ST_BLK_COMP] = 4, [NT_ST_BLK_DEVICE] = 5, [NT_ST_REMOTE] = 6, [NT_ST_E2E] = 7,
	/* target */
	[NT_ST_NSTACK_SUB] = 0, [NT_ST_NVMET_TCP_SUB] = 1, [NT_ST_TARGET_SUBSYS] = 2, [NT_ST_NVMET_TCP_COMP] = 3,
	[NT_ST_TARGET_RES] = 4,
	/* both */
	[NT_ST_NETWORK] = -1,
};

/* a role's stages into their slots: unrolled over the constant table, a store per stage */
#define PACK_ROLE(ROLE)								\
	do {									\
		_Pragma("GCC unroll 16")					\
		for (int st = 0; st < NT_ST_NR; st++)				\
			if (nt_spans[st].role == (ROLE))			\
				s->v[nt_sum_slot[st]] = (uint32_t)raw[st];	\
	} while (0)

#define UNPACK_ROLE(S, ROLE)							\
	do {									\
		_Pragma("GCC unroll 16")					\
		for (int st_ = 0; st_ < NT_ST_NR; st_++)			\
			if (nt_spans[st_].role == (ROLE))			\
				vals[st_] = (S)->v[nt_sum_slot[st_]];		\
	} while (0)

void nt_sum_of(const struct ntbpf_rec *r, uint8_t role, struct nt_sum *s)
{
	__u64 raw[NT_ST_NR] = { 0 };
	__u32 mask = 0, si = 0;

	if (r->role == role)
		mask = nt_host_raw(r, raw, &si);
	if (role == NTBPF_ROLE_INITIATOR)
		PACK_ROLE(NTBPF_ROLE_INITIATOR);
	else
		PACK_ROLE(NTBPF_ROLE_TARGET);
	s->mask = (uint16_t)mask;
	s->stand_in = (uint16_t)si;
}

uint32_t nt_sum_combine(const struct nt_sum *si, const struct nt_sum *st, uint64_t vals[NT_ST_NR], uint32_t *stand_in,
			bool *neg_net)
{
	uint32_t mi = si ? si->mask : 0, mt = st ? st->mask & ~mi : 0, mask = mi | mt;

	/*
	 * A host's summary holds only its role's stages (nt_sum_of), and the
	 * two roles' stages are disjoint: each side's slots are copied whole,
	 * unrolled (what is not in mask is not read).
	 */
	*neg_net = false;
	if (si)
		UNPACK_ROLE(si, NTBPF_ROLE_INITIATOR);
	if (st)
		UNPACK_ROLE(st, NTBPF_ROLE_TARGET);
	*stand_in = (si ? si->stand_in : 0) | (st ? st->stand_in : 0);
	if ((mask & (1u << NT_ST_REMOTE)) && (mask & (1u << NT_ST_TARGET_RES))) {
		if (vals[NT_ST_REMOTE] >= vals[NT_ST_TARGET_RES]) {
			vals[NT_ST_NETWORK] = vals[NT_ST_REMOTE] - vals[NT_ST_TARGET_RES];
			mask |= 1u << NT_ST_NETWORK;
		} else {
			*neg_net = true;
		}
	}
	return mask;
}

uint32_t nt_stages_compute(const struct ntbpf_rec *init, const struct ntbpf_rec *tgt,
			   uint64_t vals[NT_ST_NR], uint32_t *stand_in, bool *neg_net)
{
	struct nt_sum si, st;

	if (init)
		nt_sum_of(init, NTBPF_ROLE_INITIATOR, &si);
	if (tgt)
		nt_sum_of(tgt, NTBPF_ROLE_TARGET, &st);
	return nt_sum_combine(init ? &si : NULL, tgt ? &st : NULL, vals, stand_in, neg_net);
}
