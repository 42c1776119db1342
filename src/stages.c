// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <string.h>
#include "stages.h"

#define I NTBPF_ROLE_INITIATOR
#define T NTBPF_ROLE_TARGET

static const struct nt_stage_def defs[NT_ST_NR] = {
	[NT_ST_BLK_SUB] = { "blk_submission", I, EV_I_BLK_START, EV_I_QUEUE_RQ, -1, EV_I_BLK_ISSUE,
		"request allocated in blk-mq -> handed to the nvme_tcp driver (block_rq_issue stands in on other drivers)" },
	[NT_ST_NVME_TCP_SUB] = { "nvme_tcp_submission", I, EV_I_QUEUE_RQ, EV_I_CMD_SENT, -1, -1,
		"nvme_tcp_queue_rq -> command PDU (and in-capsule data) handed to the socket" },
	[NT_ST_NSTACK_SUB] = { "nstack_submission", T, EV_T_CMD_ARRIVE, EV_T_CMD_PICKUP, -1, -1,
		"command PDU arrives at the target socket -> nvmet_tcp picks it up" },
	[NT_ST_NVMET_TCP_SUB] = { "nvmet_tcp_submission", T, EV_T_CMD_PICKUP, EV_T_EXEC, -1, -1,
		"nvmet_tcp picks the PDU up -> request handed to the target backend" },
	[NT_ST_TARGET_SUBSYS] = { "target_subsystem", T, EV_T_EXEC, EV_T_SUBSYS_DONE, -1, -1,
		"request handed to the backend -> nvmet core completes it" },
	[NT_ST_NVMET_TCP_COMP] = { "nvmet_tcp_completion", T, EV_T_SUBSYS_DONE, EV_T_RESP_SENT, -1, -1,
		"nvmet core completion -> response (and C2H data) handed to the socket" },
	[NT_ST_NETWORK] = { "network_transmission", 0, 0, 0, -1, -1,
		"remote (initiator) - target_residence (target): both directions on the wire and in the NICs" },
	[NT_ST_NSTACK_COMP] = { "nstack_completion", I, EV_I_RESP_ARRIVE, EV_I_RESP_PROC, -1, -1,
		"response skb arrives at the initiator socket -> nvme_tcp processes it" },
	[NT_ST_NVME_TCP_COMP] = { "nvme_tcp_completion", I, EV_I_RESP_PROC, EV_I_NVME_DONE, -1, -1,
		"nvme_tcp processes the response -> nvme request completed" },
	[NT_ST_BLK_COMP] = { "blk_completion", I, EV_I_NVME_DONE, EV_I_BLK_DONE, -1, -1,
		"nvme request completed -> block request completed" },
	[NT_ST_BLK_DEVICE] = { "blk_device", I, EV_I_BLK_ISSUE, EV_I_BLK_DONE, -1, -1,
		"block_rq_issue -> block_rq_complete, on devices without nvme_tcp hooks (driver + device)" },
	[NT_ST_REMOTE] = { "remote", I, EV_I_CMD_SENT, EV_I_RESP_ARRIVE, -1, -1,
		"command sent -> response arrives, seen from the initiator (network + target)" },
	[NT_ST_TARGET_RES] = { "target_residence", T, EV_T_CMD_ARRIVE, EV_T_RESP_SENT, -1, -1,
		"command arrives at the target -> response handed to the socket" },
	[NT_ST_E2E] = { "end_to_end", I, EV_I_BLK_START, EV_I_BLK_DONE, EV_I_BLK_ISSUE, -1,
		"request allocated in blk-mq -> block request completed (block_rq_issue if the start was not stamped)" },
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

const struct nt_stage_def *nt_stage(int s)
{
	return (s >= 0 && s < NT_ST_NR) ? &defs[s] : NULL;
}

const char *nt_stage_name(int s)
{
	return (s >= 0 && s < NT_ST_NR) ? defs[s].name : "?";
}

int nt_stage_by_name(const char *name)
{
	for (int s = 0; s < NT_ST_NR; s++)
		if (!strcmp(defs[s].name, name))
			return s;
	return -1;
}

const char *nt_ev_name(uint8_t role, int ev)
{
	if (role == I && ev >= 0 && ev < EV_I_NR)
		return ev_init_names[ev];
	if (role == T && ev >= 0 && ev < EV_T_NR)
		return ev_tgt_names[ev];
	return "?";
}

static inline bool seen(const struct ntbpf_rec *r, int ev)
{
	return ev >= 0 && (r->ev_mask & (1u << ev));
}

/* t0 is the time of the first event: an event not in the mask but equal to t0 is not "seen" */
int nt_stage_value(const struct ntbpf_rec *r, int s, uint64_t *ns)
{
	const struct nt_stage_def *d = nt_stage(s);
	int from, to, rc = 1;

	if (!d || !d->role || r->role != d->role)
		return 0;
	from = d->from;
	to = d->to;
	if (!seen(r, from)) {
		if (!seen(r, d->alt_from))
			return 0;
		from = d->alt_from;
		rc = 2;
	}
	if (!seen(r, to)) {
		if (!seen(r, d->alt_to))
			return 0;
		to = d->alt_to;
		rc = 2;
	}
	if (r->ev[to] < r->ev[from])
		return -1;
	*ns = r->ev[to] - r->ev[from];
	return rc;
}

static bool has_nvme_events(const struct ntbpf_rec *r)
{
	return r->ev_mask & ~((1u << EV_I_BLK_START) | (1u << EV_I_BLK_ISSUE) | (1u << EV_I_BLK_DONE));
}

uint32_t nt_stages_compute(const struct ntbpf_rec *init, const struct ntbpf_rec *tgt,
			   uint64_t vals[NT_ST_NR], uint32_t *stand_in, bool *neg_net)
{
	uint32_t mask = 0;

	*stand_in = 0;
	*neg_net = false;
	for (int s = 0; s < NT_ST_NR; s++) {
		const struct nt_stage_def *d = &defs[s];
		const struct ntbpf_rec *r = d->role == I ? init : d->role == T ? tgt : NULL;
		int rc;

		if (!r)
			continue;
		/* blk_device only where nothing finer is known */
		if (s == NT_ST_BLK_DEVICE && has_nvme_events(r))
			continue;
		rc = nt_stage_value(r, s, &vals[s]);
		if (rc > 0) {
			mask |= 1u << s;
			if (rc == 2)
				*stand_in |= 1u << s;
		}
	}
	/*
	 * Writes through R2T: the host's handling of the R2T (r2t_arrive ->
	 * data_sent) is nvme_tcp work, not waiting for the target; the target's
	 * wait for the data (r2t_sent -> data_arrive) is network, not nvmet
	 * work.  Moving both keeps every sum exact and gives network the R2T
	 * and data crossings too.
	 */
	if (init && (mask & (1u << NT_ST_REMOTE)) && seen(init, EV_I_R2T_ARRIVE) && seen(init, EV_I_DATA_SENT) &&
	    init->ev[EV_I_DATA_SENT] >= init->ev[EV_I_R2T_ARRIVE]) {
		uint64_t h = init->ev[EV_I_DATA_SENT] - init->ev[EV_I_R2T_ARRIVE];

		if (vals[NT_ST_REMOTE] >= h) {
			vals[NT_ST_REMOTE] -= h;
			vals[NT_ST_NVME_TCP_SUB] += h;
		}
	}
	if (tgt && (mask & (1u << NT_ST_NVMET_TCP_SUB)) && seen(tgt, EV_T_R2T_SENT) && seen(tgt, EV_T_DATA_ARRIVE) &&
	    tgt->ev[EV_T_DATA_ARRIVE] >= tgt->ev[EV_T_R2T_SENT]) {
		uint64_t w = tgt->ev[EV_T_DATA_ARRIVE] - tgt->ev[EV_T_R2T_SENT];

		if (vals[NT_ST_NVMET_TCP_SUB] >= w && vals[NT_ST_TARGET_RES] >= w) {
			vals[NT_ST_NVMET_TCP_SUB] -= w;
			vals[NT_ST_TARGET_RES] -= w;
		}
	}
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
