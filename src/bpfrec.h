/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* bpfrec - "ntbpf record" (needs root and BTF): the probes' records to a file (recorder.h, outfile.h). */
#ifndef NTBPF_BPFREC_H
#define NTBPF_BPFREC_H

#include "cli.h"

/* exit status: 0, 1 on failure, or the recorded command's failing status */
int nt_record_run(const struct nt_config *cfg, int argc, char **argv);

#endif
