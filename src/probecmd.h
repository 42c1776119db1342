/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* probecmd - "ntbpf probe": the hooks this kernel offers, verified by loading them as root. */
#ifndef NTBPF_PROBECMD_H
#define NTBPF_PROBECMD_H

#include <stdbool.h>
#include <stdio.h>

/*
 * facts_only: print the facts (the hidden --facts); verify: as root, load the
 * chosen programs through record's retry loop.  0, or -1 after a one-line cause on err.
 */
int nt_probe_print(FILE *out, FILE *err, bool force_kprobe, bool facts_only, bool verify);

#endif
