// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * facts.c - what the running kernel offers, read once at start-up: which tracepoints exist
 * (tracefs) and how many arguments they take (BTF), which functions are traceable (kallsyms,
 * available_filter_functions) and which modules are loaded with BTF.  hooks.c decides from these
 * facts which attach type each hook gets; `ntbpf probe --facts` prints them and tests replay them.
 */
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>
#include "facts.h"

static const char *const tracefs_roots[] = { "/sys/kernel/tracing", "/sys/kernel/debug/tracing" };

static struct btf *vmlinux_btf(void)
{
	static struct btf *btf;
	static bool tried;

	if (!tried) {
		tried = true;
		btf = btf__load_vmlinux_btf();
		if (libbpf_get_error(btf))
			btf = NULL;
	}
	return btf;
}

/* split BTF of a loaded module (its /sys/kernel/btf file), cached; NULL if none */
static struct btf *module_btf(const char *mod)
{
	static struct { char name[24]; struct btf *btf; } cache[NT_FACT_MODS];
	static int n;
	char path[128];
	struct btf *b;

	if (!mod || !vmlinux_btf())
		return NULL;
	for (int i = 0; i < n; i++)
		if (!strcmp(cache[i].name, mod))
			return cache[i].btf;
	snprintf(path, sizeof(path), "/sys/kernel/btf/%s", mod);
	b = btf__parse_split(path, vmlinux_btf());
	if (libbpf_get_error(b))
		b = NULL;
	if (n < NT_FACT_MODS) {
		snprintf(cache[n].name, sizeof(cache[n].name), "%s", mod);
		cache[n++].btf = b;
	}
	return b;
}

/* parameters of btf_trace_<tp>'s prototype (with __data), or -1 */
static int tp_nargs_in(struct btf *btf, const char *tp)
{
	char name[128];
	const struct btf_type *t;
	int id;

	if (!btf)
		return -1;
	snprintf(name, sizeof(name), "btf_trace_%s", tp);
	id = btf__find_by_name_kind(btf, name, BTF_KIND_TYPEDEF);
	if (id <= 0)
		return -1;
	t = btf__type_by_id(btf, id);
	t = t ? btf__type_by_id(btf, t->type) : NULL;
	if (!t || !btf_is_ptr(t))
		return -1;
	t = btf__type_by_id(btf, t->type);
	return (t && btf_is_func_proto(t)) ? (int)btf_vlen(t) : -1;
}

static bool path_exists(const char *p)
{
	struct stat st;

	return !stat(p, &st);
}

static int8_t tracefs_has_event(const char *root, const char *sys, const char *tp)
{
	char path[256];

	if (!root)
		return -1;
	snprintf(path, sizeof(path), "%s/events/%s/%s", root, sys, tp);
	return path_exists(path);
}

/* the name part of a kallsyms or available_filter_functions line: "name" or "name [mod]" */
static struct nt_fn_fact *fn_named(struct nt_facts *f, const char *sym)
{
	for (int i = 0; i < f->nfn; i++)
		if (!strcmp(f->fn[i].name, sym))
			return &f->fn[i];
	return NULL;
}

static struct nt_tp_fact *tp_of_sym(struct nt_facts *f, const char *sym)
{
	const char *tp = NULL;

	if (!strncmp(sym, "__tracepoint_", 13))
		tp = sym + 13;
	else if (!strncmp(sym, "__traceiter_", 12))
		tp = sym + 12;
	if (!tp)
		return NULL;
	for (int i = 0; i < f->ntp; i++)
		if (!strcmp(f->tp[i].name, tp))
			return &f->tp[i];
	return NULL;
}

static void read_kallsyms(struct nt_facts *f)
{
	FILE *in = fopen("/proc/kallsyms", "r");
	char line[512], sym[256], type;
	unsigned long long addr;

	f->kallsyms = in != NULL;
	if (!in)
		return;
	for (int i = 0; i < f->ntp; i++)
		f->tp[i].ksym = 0;
	for (int i = 0; i < f->nfn; i++)
		f->fn[i].ksym = 0;
	while (fgets(line, sizeof(line), in)) {
		struct nt_fn_fact *fn;
		struct nt_tp_fact *tp;

		if (sscanf(line, "%llx %c %255s", &addr, &type, sym) != 3)
			continue;
		if ((tp = tp_of_sym(f, sym)))
			tp->ksym = 1;
		else if ((type == 't' || type == 'T') && (fn = fn_named(f, sym)))
			fn->ksym = 1;
	}
	if (ferror(in))
		f->kallsyms = 0;
	fclose(in);
}

/* available_filter_functions: the functions ftrace (so fentry and kprobes on their entry) can hook */
static void read_ftrace(struct nt_facts *f, const char *root)
{
	char path[128], line[512], sym[256];
	FILE *in;

	if (!root)
		return;
	snprintf(path, sizeof(path), "%s/available_filter_functions", root);
	in = fopen(path, "r");
	if (!in) {
		f->tracefs = 0;
		return;
	}
	for (int i = 0; i < f->nfn; i++)
		f->fn[i].ftrace = 0;
	while (fgets(line, sizeof(line), in)) {
		struct nt_fn_fact *fn;

		if (sscanf(line, "%255s", sym) == 1 && (fn = fn_named(f, sym)))
			fn->ftrace = 1;
	}
	fclose(in);
}

void nt_facts_read_system(struct nt_facts *f)
{
	const char *root = NULL;
	struct utsname u;

	memset(f, 0, sizeof(*f));
	if (!uname(&u))
		snprintf(f->kernel, sizeof(f->kernel), "%s", u.release);
	f->root = geteuid() == 0;
	f->vmlinux_btf = vmlinux_btf() != NULL;
	f->kprobes = path_exists("/sys/bus/event_source/devices/kprobe");
	/* kfuncs are functions of vmlinux BTF; a program that calls one this kernel lacks does not load */
	f->rdonly_cast = vmlinux_btf() ? btf__find_by_name_kind(vmlinux_btf(), "bpf_rdonly_cast", BTF_KIND_FUNC) > 0 : -1;
	f->tracefs = -1;
	for (size_t i = 0; i < sizeof(tracefs_roots) / sizeof(tracefs_roots[0]) && !root; i++) {
		char p[128];

		snprintf(p, sizeof(p), "%s/events", tracefs_roots[i]);
		if (path_exists(p))
			root = tracefs_roots[i], f->tracefs = 1;
	}
	for (int i = 0; nt_fact_modules[i] && f->nmod < NT_FACT_MODS; i++) {
		struct nt_mod_fact *m = &f->mod[f->nmod++];
		char p[128];

		snprintf(m->name, sizeof(m->name), "%s", nt_fact_modules[i]);
		snprintf(p, sizeof(p), "/sys/module/%s", m->name);
		m->loaded = path_exists(p);
		m->btf = module_btf(m->name) != NULL;
	}
	for (int i = 0; i < nt_hooks_count(); i++) {
		const struct nt_hook *h = nt_hook_at(i);

		if (h->kind == NT_HK_TP && f->ntp < NT_FACTS_MAX) {
			struct nt_tp_fact *t = &f->tp[f->ntp++];
			int na = tp_nargs_in(vmlinux_btf(), h->name);

			/* nvme: and nvmet: tracepoints are defined in modules: their BTF holds the type */
			for (int m = 0; na < 0 && nt_fact_modules[m]; m++)
				na = tp_nargs_in(module_btf(nt_fact_modules[m]), h->name);
			snprintf(t->name, sizeof(t->name), "%s", h->name);
			t->btf = na >= 0;
			t->nargs = na;
			t->ksym = -1;
			t->tracefs = tracefs_has_event(root, h->where, h->name);
		} else if (h->kind != NT_HK_TP && f->nfn < NT_FACTS_MAX) {
			struct nt_fn_fact *fn = &f->fn[f->nfn++];
			struct btf *b = h->where ? module_btf(h->where) : vmlinux_btf();

			snprintf(fn->name, sizeof(fn->name), "%s", h->name);
			fn->btf = b && btf__find_by_name_kind(b, h->name, BTF_KIND_FUNC) > 0;
			fn->ksym = -1;
			fn->ftrace = -1;
		}
	}
	read_kallsyms(f);
	read_ftrace(f, root);
}

int nt_facts_read(struct nt_facts *f, char *err, size_t errlen)
{
	const char *file = getenv("NTBPF_FACTS");
	char why[160];
	FILE *in;
	int rc;

	if (!file || !*file) {
		nt_facts_read_system(f);
		return 0;
	}
	in = fopen(file, "r");
	if (!in) {
		snprintf(err, errlen, "NTBPF_FACTS: cannot open %s: %s", file, strerror(errno));
		return -1;
	}
	rc = nt_facts_parse(in, f, why, sizeof(why));
	fclose(in);
	if (rc)
		snprintf(err, errlen, "NTBPF_FACTS %s: %s", file, why);
	return rc;
}
