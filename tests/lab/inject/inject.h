/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* inject.h - the lab delay injector's sites, shared by inject.bpf.c and inject.c (the table) */
#ifndef NTBPF_LAB_INJECT_H
#define NTBPF_LAB_INJECT_H

/* phases of a schedule (ntbpf-inject --every N ... --then ...) */
#define INJ_MAX_PHASES 32

enum inj_site {
	INJ_QUEUE_RQ,		/* blk_submission */
	INJ_START_RQ,		/* nvme_tcp_submission */
	INJ_R2T_COPIED,		/* nvme_tcp_submission, the R2T leg (r2t_arrive -> data_sent) */
	INJ_TGT_IO_WORK,	/* nstack_submission */
	INJ_REQ_INIT,		/* nvmet_tcp_submission */
	INJ_BIO_DONE,		/* target_subsystem */
	INJ_QUEUE_RESPONSE,	/* nvmet_tcp_completion */
	INJ_RSP_COPIED,		/* nstack_completion */
	INJ_COMPLETE_REMOTE,	/* nvme_tcp_completion */
	INJ_CLEANUP,		/* blk_completion */
	INJ_NSITES,
};

#endif
