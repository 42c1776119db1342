/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * hooks - every kernel hook ntbpf wants, and how it can attach on the
 * running kernel (tp_btf else raw_tp for tracepoints).  Each variant is a
 * program in bpf/ntbpf.bpf.c named "<attach>_<hook>".
 */
#ifndef NTBPF_HOOKS_H
#define NTBPF_HOOKS_H

#include <stdbool.h>
#include <stdio.h>
#include "recfile.h"

struct bpf_object;
struct btf;

enum nt_hook_kind { NT_HK_TP };

enum nt_attach { NT_AT_NONE = 0, NT_AT_TP_BTF, NT_AT_RAW_TP };

struct nt_hook {
	const char *name;	/* "block:block_rq_issue" */
	enum nt_hook_kind kind;
	const char *sys;	/* tracepoint system ("block") */
	const char *tp;		/* tracepoint name */
	uint8_t roles;		/* 1 << enum ntbpf_role it serves */
	const char *boundary;	/* what it stamps */
};

struct nt_hook_choice {
	const struct nt_hook *hook;
	enum nt_attach attach;
	char why[96];		/* when NT_AT_NONE */
};

int nt_hooks_count(void);
const struct nt_hook *nt_hook_at(int i);
const char *nt_attach_name(enum nt_attach a);

/* vmlinux BTF, loaded once; NULL if the kernel has none */
struct btf *nt_vmlinux_btf(void);

/* decide the attach type of every hook from BTF and tracefs */
void nt_hooks_choose(struct nt_hook_choice *c, int n);

/*
 * The block_rq_issue/complete tracepoints take (q, rq) before v5.11 and (rq)
 * after: count the prototype's parameters in BTF.
 */
bool nt_blk_tp_has_q(void);

/* set autoload of every program of obj from the choices (before load) */
int nt_hooks_autoload(struct bpf_object *obj, const struct nt_hook_choice *c, int n);

/* "ntbpf probe" */
int nt_probe_print(FILE *out);

#endif
