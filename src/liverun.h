/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * liverun - "ntbpf live" (needs root and BTF): the probes' records (or the in-kernel
 * histograms) into intervals (live.h), a sibling of bpfrec.h over recorder.h.
 */
#ifndef NTBPF_LIVERUN_H
#define NTBPF_LIVERUN_H

#include "cli.h"

/* exit status: 0, or 1 on failure */
int nt_live_run(const struct nt_config *cfg, int argc, char **argv);

#endif
