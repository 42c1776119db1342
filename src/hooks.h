/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * hooks - every kernel hook ntbpf wants, and how it can attach on a kernel
 * described by its facts (struct nt_facts): tracepoints as tp_btf else
 * raw_tp; functions as fentry/fexit else kprobe/kretprobe.  Each variant is
 * a program of bpf/ntbpf.bpf.c's object (the hooks are in
 * bpf/initiator.bpf.h and bpf/target.bpf.h) named "<variant>_<name>" (an
 * exit hook loads two: fentry+fexit or kprobe+kretprobe).
 *
 * Pure: the facts come from facts.c on a live system, or from a text file
 * (tests/unit/facts-*.txt, captured with the hidden "ntbpf probe --facts").
 */
#ifndef NTBPF_HOOKS_H
#define NTBPF_HOOKS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include "ntbpf.h"

enum nt_hook_kind {
	NT_HK_TP,	/* tracepoint */
	NT_HK_ENTRY,	/* function entry */
	NT_HK_EXIT,	/* function return (with its arguments) */
};

enum nt_attach { NT_AT_NONE = 0, NT_AT_TP_BTF, NT_AT_RAW_TP, NT_AT_FENTRY, NT_AT_FEXIT, NT_AT_KPROBE, NT_AT_KRETPROBE };

/* why a hook is not attached (NT_WHY_NONE: it is) */
enum nt_why {
	NT_WHY_NONE = 0,
	NT_WHY_ROLE,		/* not a hook of this recorder's role */
	NT_WHY_MODULE,		/* the module it lives in is not loaded */
	NT_WHY_TP_ABSENT,	/* tracepoint in neither BTF, kallsyms nor tracefs */
	NT_WHY_FUNC_ABSENT,	/* function not traceable: inlined, absent or notrace */
	NT_WHY_NO_KPROBES,	/* fentry impossible or refused, and no kprobes in this kernel */
	NT_WHY_NOT_NEEDED,	/* a stand-in whose originals attach */
	NT_WHY_REFUSED,		/* the kernel refused to load its program (verifier, CO-RE) */
	NT_WHY_NR
};

struct nt_hook {
	const char *name;	/* tracepoint or function */
	enum nt_hook_kind kind;
	const char *where;	/* tracepoint system, or module of the function (NULL = vmlinux) */
	const char *module;	/* module that must be loaded (NULL = none) */
	uint8_t roles;		/* 1 << enum ntbpf_role */
	const char *boundary;	/* the event it stamps */
	const char *stands_in_for;	/* comma list: attached only where one of these is not */
	const char *instead;	/* what the report does when this hook is missing (NULL: nothing) */
	bool rc;		/* tracepoint: a tp_btf_rc_ program too, for kernels with bpf_rdonly_cast */
};

struct nt_hook_choice {
	const struct nt_hook *hook;
	enum nt_attach attach;
	enum nt_why why;	/* when attach == NT_AT_NONE */
	bool refused;		/* set by the loader: kept off by every later decision */
	bool rc;		/* tp_btf through its tp_btf_rc_ program (struct nt_hook.rc) */
	char detail[80];	/* NT_WHY_REFUSED: the kernel's or libbpf's word */
};

/* ---- facts about one kernel ---- */

#define NT_FACT_NAME 48
#define NT_FACTS_MAX 40
#define NT_FACT_MODS 8

/* -1 where a fact could not be read (e.g. tracefs not mounted); never read as "yes" */
struct nt_tp_fact { char name[NT_FACT_NAME]; int8_t btf, nargs, ksym, tracefs; };
struct nt_fn_fact { char name[NT_FACT_NAME]; int8_t btf, ksym, ftrace; };
struct nt_mod_fact { char name[24]; int8_t loaded, btf; };

struct nt_facts {
	char kernel[65];
	int8_t root;		/* euid 0: attachability can be verified by loading */
	int8_t vmlinux_btf;	/* /sys/kernel/btf/vmlinux parsed */
	int8_t kallsyms;	/* /proc/kallsyms read */
	int8_t tracefs;		/* tracefs events and available_filter_functions read */
	int8_t kprobes;		/* kprobe PMU (/sys/bus/event_source/devices/kprobe) */
	int8_t rdonly_cast;	/* the bpf_rdonly_cast kfunc (v6.2) in vmlinux BTF: direct loads through a kept address */
	int ntp, nfn, nmod;
	struct nt_tp_fact tp[NT_FACTS_MAX];
	struct nt_fn_fact fn[NT_FACTS_MAX];
	struct nt_mod_fact mod[NT_FACT_MODS];
};

/* the modules whose presence and BTF the facts must hold (NULL-terminated) */
extern const char *const nt_fact_modules[];

/* facts <-> text ("# ntbpf facts 1", then one fact per line); parse: 0, or -1 with the cause */
void nt_facts_print(FILE *out, const struct nt_facts *f);
int nt_facts_parse(FILE *in, struct nt_facts *f, char *err, size_t errlen);
const struct nt_tp_fact *nt_facts_tp(const struct nt_facts *f, const char *name);
const struct nt_fn_fact *nt_facts_fn(const struct nt_facts *f, const char *name);
const struct nt_mod_fact *nt_facts_mod(const struct nt_facts *f, const char *name);

/* ---- the table and the decision ---- */

int nt_hooks_count(void);
const struct nt_hook *nt_hook_at(int i);
const char *nt_attach_name(enum nt_attach a);
/* "block:block_rq_issue", "nvme_tcp!nvme_tcp_data_ready", "vmlinux!kernel_sendpage" */
void nt_hook_label(const struct nt_hook *h, char *buf, size_t len);
/* one line: why a choice is not attached */
void nt_why_text(const struct nt_hook_choice *c, char *buf, size_t len);

/*
 * Decide each hook's attach type from the facts, for a recorder of 'role'
 * (0: every role, as probe shows).  force_kprobe: kprobes for functions
 * (fentry refused, or --kprobe).  Choices with .refused set stay off; the
 * rest of c[] is rewritten.  c[] must start zeroed.
 */
void nt_hooks_decide(const struct nt_facts *f, struct nt_hook_choice *c, int n, int role, bool force_kprobe);

/* block_rq_* tracepoints take (q, rq) before v5.11: the prototype's parameter count in BTF */
bool nt_blk_tp_has_q(const struct nt_facts *f);

/* program names of a hook attached as 'a': up to two ("kprobe_x" and "kretprobe_x") */
int nt_hook_variant_progs(const struct nt_hook *h, enum nt_attach a, char names[2][96]);
/* the same for a choice (0 when not attached) */
int nt_hook_progs(const struct nt_hook_choice *c, char names[2][96]);
/* index of the choice one of whose programs is 'prog', or -1 */
int nt_hook_of_prog(const struct nt_hook_choice *c, int n, const char *prog);

#endif
