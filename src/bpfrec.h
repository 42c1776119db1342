/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* bpfrec - "ntbpf record" (needs root and BTF). */
#ifndef NTBPF_BPFREC_H
#define NTBPF_BPFREC_H

#include "cli.h"
#include "sysinfo.h"

/* root, BTF, role, -d devices: the role, or -1 after a one-line error */
int nt_record_preflight(const struct nt_config *cfg, const char *cmd, struct nt_devset *devs);

struct nt_probes;
/* the file/stream header of a recording: identity, devices, controllers, hooks */
void nt_record_header(struct nt_header *hdr, const struct nt_config *cfg, int role, struct nt_devset *devs,
		      const struct nt_probes *pr, int argc, char **argv);

/* exit status: 0, 1 on failure, or the recorded command's failing status */
int nt_record_run(const struct nt_config *cfg, int argc, char **argv);

#endif
