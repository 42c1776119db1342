// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * probecmd.c - "ntbpf probe": every hook ntbpf wants on this kernel, how it
 * attaches or why not.  As root the choice is verified by loading it through
 * the same retry loop as record (probes.c), so a program the kernel refuses
 * shows as refused; without root only the facts speak, and probe says so.
 * "ntbpf probe --facts" (hidden) prints the facts themselves (facts.h).
 */
#include <stdlib.h>
#include <string.h>
#include "facts.h"
#include "probecmd.h"
#include "probes.h"

static const char *tri(int8_t v, const char *yes, const char *no, const char *unknown)
{
	return v == 1 ? yes : v == 0 ? no : unknown;
}

static void print_facts_line(FILE *out, const struct nt_facts *f)
{
	const struct nt_mod_fact *ti = nt_facts_mod(f, "nvme_tcp"), *tt = nt_facts_mod(f, "nvmet_tcp");

	fprintf(out, "kernel BTF: %s\n", f->vmlinux_btf == 1 ? "yes (/sys/kernel/btf/vmlinux)" :
		"NO (CONFIG_DEBUG_INFO_BTF off): no tp_btf, no fentry");
	fprintf(out, "modules: nvme_tcp %s, nvmet_tcp %s\n", ti && ti->loaded == 1 ? "loaded" : "not loaded",
		tt && tt->loaded == 1 ? "loaded" : "not loaded");
	fprintf(out, "facts: kallsyms %s; tracefs %s; kprobes %s; bpf_rdonly_cast %s\n",
		tri(f->kallsyms, "read", "NOT readable (functions and raw tracepoints unknown, so left out)", "?"),
		tri(f->tracefs, "read (traceable functions from available_filter_functions)",
		    "mounted, no available_filter_functions (traceable functions from kallsyms)",
		    "not mounted (tracepoints from BTF and kallsyms, traceable functions from kallsyms)"),
		tri(f->kprobes, "yes", "no (CONFIG_KPROBES off)", "?"),
		tri(f->rdonly_cast, "yes (nvmet_req_init reads the socket without a probe read)",
		    "no (before v6.2: nvmet_req_init reads the socket by a probe read)", "?"));
}

int nt_probe_print(FILE *out, FILE *err, bool force_kprobe, bool facts_only, bool verify)
{
	struct nt_probes *p = calloc(1, sizeof(*p));
	struct nt_hook_choice *c;
	char msg[400];
	int avail = 0, n;
	bool loaded = false;

	if (!p) {
		fprintf(err, "ntbpf probe: out of memory\n");
		return -1;
	}
	if (nt_facts_read(&p->facts, msg, sizeof(msg))) {
		fprintf(err, "ntbpf probe: %s\n", msg);
		free(p);
		return -1;
	}
	if (facts_only) {
		nt_facts_print(out, &p->facts);
		free(p);
		return 0;
	}
	if (p->facts.root == 1 && verify) {
		struct nt_facts f = p->facts;
		struct nt_probe_opts o = { .force_kprobe = force_kprobe, .quiet = true, .facts = &f };

		/* verify: load what was chosen, through record's retry loop (nothing is attached) */
		if (nt_probes_load(p, &o, msg, sizeof(msg)))
			fprintf(err, "ntbpf probe: %s\n", msg);
		else
			loaded = true;
	}
	if (!loaded) {
		struct nt_facts f = p->facts;

		memset(p, 0, sizeof(*p));
		p->facts = f;
		p->nhooks = nt_hooks_count() < NT_MAX_HOOKS ? nt_hooks_count() : NT_MAX_HOOKS;
		nt_hooks_decide(&p->facts, p->choice, p->nhooks, 0, force_kprobe);
	}
	c = p->choice;
	n = p->nhooks;
	print_facts_line(out, &p->facts);
	if (p->facts.root != 1)
		fprintf(out, "not root: attachability NOT verified (nothing loaded); choices from the facts read: "
			"BTF%s, kallsyms%s, tracefs%s\n", p->facts.vmlinux_btf == 1 ? "" : " (none)",
			p->facts.kallsyms == 1 ? "" : " (unreadable)", p->facts.tracefs == 1 ? "" : " (unread)");
	else if (!verify)
		fprintf(out, "--no-verify: attachability NOT verified (nothing loaded); choices from the facts\n");
	else if (loaded)
		fprintf(out, "verified as root: every program marked here loaded%s%s\n", p->fallback[0] ? "; " : "",
			p->fallback);
	else
		fprintf(out, "as root, but the load failed (above): choices from the facts alone\n");
	fprintf(out, "%-40s %-9s %-9s %s\n", "HOOK", "ROLE", "ATTACH", "STAGE BOUNDARY / WHY NOT");
	for (int i = 0; i < n; i++) {
		const struct nt_hook *h = c[i].hook;
		char name[96], why[160];

		nt_hook_label(h, name, sizeof(name));
		nt_why_text(&c[i], why, sizeof(why));
		fprintf(out, "%-40s %-9s %-9s %s", name,
			h->roles == ((1u << NTBPF_ROLE_INITIATOR) | (1u << NTBPF_ROLE_TARGET)) ? "both" :
			h->roles == (1u << NTBPF_ROLE_INITIATOR) ? "initiator" : "target",
			nt_attach_name(c[i].attach), c[i].attach == NT_AT_NONE ? why : h->boundary);
		if (c[i].attach == NT_AT_NONE && h->instead && c[i].why != NT_WHY_NOT_NEEDED)
			fprintf(out, "; %s", h->instead);
		fputc('\n', out);
		avail += c[i].attach != NT_AT_NONE;
	}
	fprintf(out, "%d of %d hooks %s (fentry is tried first; if the kernel refuses it, kprobes)\n", avail, n,
		loaded ? "load" : "attachable by the facts");
	if (loaded)
		nt_probes_destroy(p);
	free(p);
	return 0;
}
