/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * recorder - what "ntbpf record" (bpfrec.c) and "ntbpf live" (liverun.c),
 * siblings, share: preflight, the header, the ring-buffer round, the loss sum.
 */
#ifndef NTBPF_RECORDER_H
#define NTBPF_RECORDER_H

#include "cli.h"
#include "ntbpf.h"
#include "recfile.h"
#include "sysinfo.h"

struct nt_probes;
struct ring_buffer;

/* root, BTF, role, -d devices: the role, or -1 after a one-line error naming cmd */
int nt_record_preflight(const struct nt_config *cfg, const char *cmd, struct nt_devset *devs);
/* the file/stream header of a recording: identity, devices, controllers, hooks */
void nt_record_header(struct nt_header *hdr, const struct nt_config *cfg, int role, struct nt_devset *devs,
		      const struct nt_probes *pr, int argc, char **argv);
/* wait up to timeout_ms for records, then take all there are: records taken, or a negative errno */
int nt_recorder_poll(struct ring_buffer *rb, int timeout_ms);


#endif
