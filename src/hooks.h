/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * hooks - every kernel hook ntbpf wants, and how it can attach on the
 * running kernel: tracepoints as tp_btf else raw_tp; functions as
 * fentry/fexit else kprobe/kretprobe.  Each variant is a program in
 * bpf/ntbpf.bpf.c named "<variant>_<name>" (kprobe + kretprobe for exits).
 */
#ifndef NTBPF_HOOKS_H
#define NTBPF_HOOKS_H

#include <stdbool.h>
#include <stdio.h>
#include "recfile.h"

struct bpf_object;

enum nt_hook_kind {
	NT_HK_TP,	/* tracepoint */
	NT_HK_ENTRY,	/* function entry */
	NT_HK_EXIT,	/* function return (with its arguments) */
};

enum nt_attach { NT_AT_NONE = 0, NT_AT_TP_BTF, NT_AT_RAW_TP, NT_AT_FENTRY, NT_AT_FEXIT, NT_AT_KPROBE, NT_AT_KRETPROBE };

struct nt_hook {
	const char *name;	/* tracepoint or function */
	enum nt_hook_kind kind;
	const char *where;	/* tracepoint system, or module of the function ("" = vmlinux) */
	const char *module;	/* module that must be loaded ("" = none) */
	uint8_t roles;		/* 1 << enum ntbpf_role */
	const char *boundary;	/* the event it stamps */
	const char *stands_in_for;	/* only used where this function is not attachable */
	const char *instead;	/* what the report does when this hook is missing */
};

struct nt_hook_choice {
	const struct nt_hook *hook;
	enum nt_attach attach;
	char why[96];		/* when NT_AT_NONE: not loaded, inlined, ... */
};

int nt_hooks_count(void);
const struct nt_hook *nt_hook_at(int i);
const char *nt_attach_name(enum nt_attach a);

/*
 * Decide each hook's attach type from BTF, /proc/kallsyms, tracefs and the
 * loaded modules, for a recorder of 'role' (0: every role, as probe shows).
 * force_kprobe: use kprobes for functions (fentry refused, or --kprobe).
 */
void nt_hooks_choose(struct nt_hook_choice *c, int n, int role, bool force_kprobe);

/* block_rq_* tracepoints take (q, rq) before v5.11: count the prototype's parameters in BTF */
bool nt_blk_tp_has_q(void);

/* set autoload of every program of obj from the choices (before load); -1 if a program is missing */
int nt_hooks_autoload(struct bpf_object *obj, const struct nt_hook_choice *c, int n);

/* program names of a choice: up to two ("kprobe_x" and "kretprobe_x") */
int nt_hook_progs(const struct nt_hook_choice *c, char names[2][96]);

/* "ntbpf probe" */
int nt_probe_print(FILE *out, bool force_kprobe);

#endif
