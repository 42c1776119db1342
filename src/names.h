/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * names - how the outputs name what a record and its file's header say: an
 * operation, a status, a wall-clock time, a device, a controller and a
 * namespace; where a record's I/O ended and a file's wall-clock offset.
 * Pure, below every output (report, script, html, diagnose, live) so that
 * none of them reaches up into another for a name.
 */
#ifndef NTBPF_NAMES_H
#define NTBPF_NAMES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "input.h"
#include "ntbpf.h"
#include "recfile.h"

const char *nt_op_name(uint8_t op);
/* wall-clock ns as RFC 3339 in UTC with nanoseconds: 2026-11-25T15:00:00.123456789Z */
void nt_fmt_wall(uint64_t ns, char *buf, size_t len);
/* an I/O's status as printed: "ok", "0x4002" (NVMe), "blk:10" (blk_status_t); the NVMe specification's name or "" */
void nt_status_label(uint16_t status, bool nvme, char *buf, size_t len);
const char *nt_status_name(uint16_t status, bool nvme);
/* whether r's status is an NVMe status (else blk_status_t) */
bool nt_status_is_nvme(const struct ntbpf_rec *r);

/*
 * The controller a record of a file with header h belongs to (initiator: nvme
 * instance r_ctrl of an NVMe record; target: cntlid r_ctrl), or NULL; and the
 * namespace id of a record (target: its dev; initiator: its disk's nsid as
 * the controller lists it), 0 unknown.
 */
const struct nt_ctrl_info *nt_ctrl_of(const struct nt_header *h, uint8_t role, uint8_t flags, uint16_t r_ctrl);
uint32_t nt_nsid_of(const struct nt_header *h, uint8_t role, uint8_t flags, uint16_t r_ctrl, uint32_t dev);

/* a device as the outputs print it, from the headers of inputs: "nvme1n1", "nsid1" (target), "259:3" or "-" */
void nt_dev_name_in(const struct nt_input *ins, int nins, int role, uint32_t dev, char *buf, size_t len);

/*
 * Native NVMe multipath: a header's controllers that share their subsystem
 * and host NQN with another one (the paths of one namespace), computed once
 * per header (O(n log n): a hostile file may name 60000 controllers).
 */
struct nt_mpath {
	const struct nt_header *h;
	uint32_t n;		/* h->nctrls when computed */
	uint8_t *shared;	/* per controller (its index in h->ctrls), or NULL: none shares */
};
/* whether any of h's controllers shares (mp: the cache, zeroed at first) */
bool nt_mpath_of(struct nt_mpath *mp, const struct nt_header *h);
void nt_mpath_free(struct nt_mpath *mp);
/*
 * An initiator's NVMe I/O on head disk dev (nvmeSnN) ran on the path (hidden
 * disk nvmeScCnN, which has no dev_t) of its controller, instance ctrl: the
 * path's number + 1 (ctrl + 1) where that controller shares (nt_mpath_of) and
 * dev is none of its own disks (multipath off); else 0.
 */
uint16_t nt_path_of(struct nt_mpath *mp, const struct nt_header *h, uint32_t dev, uint16_t ctrl);
/* head's name ("nvme0n1") on path p (nt_path_of, > 0): "nvme0c1n1" */
void nt_path_name(const char *head, uint16_t p, char *buf, size_t len);

/* where r's I/O ended: its last event, ns after t0 (inline: once per record on the report's path) */
static inline uint32_t nt_rec_end(const struct ntbpf_rec *r)
{
	uint32_t end = 0;

	/* every slot, masked, without a branch (the compiler may vectorize it): once per record */
#pragma GCC unroll 16
	for (int i = 0; i < NTBPF_MAX_EV; i++) {
		uint32_t v = r->ev_mask >> i & 1 ? r->ev[i] : 0;

		end = v > end ? v : end;
	}
	return end;
}

/* wall clock - monotonic clock of a file's host (0: the header does not say) */
uint64_t nt_wall_offset(const struct nt_header *h);

#endif
