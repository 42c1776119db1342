/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * facts - read what the running kernel offers for the hook table, without
 * tracefs if need be: BTF of vmlinux and of the modules (types, functions,
 * btf_trace_* tracepoint types), /proc/kallsyms (text symbols, and the
 * __tracepoint_* / __traceiter_* symbols of tracepoints), tracefs events and
 * available_filter_functions where tracefs is mounted and readable, the kprobe
 * PMU, /sys/module.  What cannot be read stays -1 (unknown), never "yes".
 */
#ifndef NTBPF_FACTS_H
#define NTBPF_FACTS_H

#include "hooks.h"

/* the running kernel; NTBPF_FACTS=FILE (tests) reads them from a facts file instead. 0 or -1 with cause */
int nt_facts_read(struct nt_facts *f, char *err, size_t errlen);
/* the same, always from the running kernel */
void nt_facts_read_system(struct nt_facts *f);

#endif
