/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * stages - every stage ntbpf reports, defined by its two events (docs/stages.md;
 * tests/unit/test_stages.c checks that the doc and this table agree).
 */
#ifndef NTBPF_STAGES_H
#define NTBPF_STAGES_H

#include <stdbool.h>
#include <stdint.h>
#include "ntbpf.h"

/* In pipeline order; the order of the report's rows. */
enum nt_stage {
	NT_ST_BLK_SUB = 0,	/* blk_submission */
	NT_ST_NVME_TCP_SUB,	/* nvme_tcp_submission */
	NT_ST_NSTACK_SUB,	/* nstack_submission (target) */
	NT_ST_NVMET_TCP_SUB,	/* nvmet_tcp_submission */
	NT_ST_TARGET_SUBSYS,	/* target_subsystem */
	NT_ST_NVMET_TCP_COMP,	/* nvmet_tcp_completion */
	NT_ST_NETWORK,		/* network_transmission (needs both hosts) */
	NT_ST_NSTACK_COMP,	/* nstack_completion (initiator) */
	NT_ST_NVME_TCP_COMP,	/* nvme_tcp_completion */
	NT_ST_BLK_COMP,		/* blk_completion */
	NT_ST_BLK_DEVICE,	/* blk_device: issue -> complete, devices without nvme_tcp hooks */
	NT_ST_REMOTE,		/* remote: initiator's wait for the target (network + target) */
	NT_ST_TARGET_RES,	/* target_residence: target arrival -> response sent */
	NT_ST_E2E,		/* end_to_end */
	NT_ST_NR
};

struct nt_stage_def {
	const char *name;
	uint8_t role;		/* host whose two events bound it; 0 = both (network) */
	uint8_t from, to;	/* events of that role */
	int8_t alt_from;	/* used when 'from' was not seen, -1 none */
	int8_t alt_to;		/* used when 'to' was not seen, -1 none */
	const char *summary;	/* one line for --help and the docs */
};

const struct nt_stage_def *nt_stage(int s);
const char *nt_stage_name(int s);
int nt_stage_by_name(const char *name);	/* -1 if unknown */
const char *nt_ev_name(uint8_t role, int ev);	/* "blk_start", "cmd_arrive", ... */

/*
 * Value of single-host stage s for record r (whose role must match the
 * stage's).  Returns 0 when one of its events was not seen, 1 when computed
 * from the stage's own events, 2 when a stand-in event (alt_*) was used.
 * Negative spans (events out of order) count as not computed (-1).
 */
int nt_stage_value(const struct ntbpf_rec *r, int s, uint64_t *ns);

/*
 * All stages of one I/O: init and/or tgt may be NULL (one side only).
 * vals[s] is valid where bit s of the returned mask is set.  stand_in gets the
 * mask of stages computed from a stand-in boundary.  network_transmission is
 * remote - target_residence when both sides are given; *neg_net is set when
 * that came out negative (then it is left out).
 */
uint32_t nt_stages_compute(const struct ntbpf_rec *init, const struct ntbpf_rec *tgt,
			   uint64_t vals[NT_ST_NR], uint32_t *stand_in, bool *neg_net);

#endif
