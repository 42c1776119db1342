// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "hooks.h"

#define I (1u << NTBPF_ROLE_INITIATOR)
#define T (1u << NTBPF_ROLE_TARGET)

/* Order matters only for printing.  docs/stages.md lists the same hooks. */
static const struct nt_hook hooks[] = {
	{ "block_rq_issue", NT_HK_TP, "block", "", I, "blk_issue; blk_start from rq->start_time_ns", NULL,
	  "no block stages" },
	{ "block_rq_complete", NT_HK_TP, "block", "", I, "blk_done (record emitted)", NULL,
	  "no initiator records" },
	{ "nvme_setup_cmd", NT_HK_TP, "nvme", "", I, "queue_rq (inside nvme_tcp_queue_rq)", NULL,
	  "blk_submission ends at blk_issue; no NVMe identity, no matching" },
	{ "nvme_complete_rq", NT_HK_TP, "nvme", "", I, "nvme_done", NULL,
	  "nvme_tcp_completion and blk_completion not measured" },
	{ "nvme_tcp_data_ready", NT_HK_ENTRY, "nvme_tcp", "nvme_tcp", I, "resp_arrive (delivery that covers the response's bytes)", NULL,
	  "nstack_completion, remote and network_transmission not measured" },
	{ "nvme_tcp_recv_skb", NT_HK_ENTRY, "nvme_tcp", "nvme_tcp", I, "the stream range a receive call handles (dates resp_arrive)", NULL,
	  "resp_arrive from the read position: can be early where TCP coalesced segments" },
	{ "blk_mq_complete_request_remote", NT_HK_ENTRY, "", "nvme_tcp", I, "resp_proc (nvme_tcp processes the response)", NULL,
	  "nstack_completion and nvme_tcp_completion not measured" },
	{ "nvme_tcp_try_send_cmd_pdu", NT_HK_EXIT, "nvme_tcp", "nvme_tcp", I, "cmd_sent (command PDU handed to the socket)", NULL,
	  "stand-in: kernel_sendpage" },
	{ "nvme_tcp_try_send_data", NT_HK_EXIT, "nvme_tcp", "nvme_tcp", I, "data_sent (H2C data after an R2T)", NULL,
	  "stand-in: kernel_sendpage" },
	{ "nvme_tcp_try_send_data_pdu", NT_HK_ENTRY, "nvme_tcp", "nvme_tcp", I, "r2t_arrive (arrival of the pass that read the R2T)", NULL,
	  "stand-in: kernel_sendpage" },
	{ "nvmet_tcp_data_ready", NT_HK_ENTRY, "nvmet_tcp", "nvmet_tcp", T, "cmd_arrive (delivery that covers the command's bytes)", NULL,
	  "nstack_submission not measured; target_residence starts at cmd_pickup" },
	{ "nvmet_tcp_try_recv_pdu", NT_HK_ENTRY, "nvmet_tcp", "nvmet_tcp", T, "cmd_pickup", NULL,
	  "nstack_submission and nvmet_tcp_submission not measured" },
	{ "nvmet_req_init", NT_HK_TP, "nvmet", "nvmet", T, "req_init (target record created)", NULL,
	  "no target records" },
	{ "nvmet_bdev_execute_rw", NT_HK_ENTRY, "nvmet", "nvmet", T, "exec (block-device namespace read/write)", NULL, "" },
	{ "nvmet_bdev_execute_flush", NT_HK_ENTRY, "nvmet", "nvmet", T, "exec (block-device namespace flush)", NULL, "" },
	{ "nvmet_file_execute_rw", NT_HK_ENTRY, "nvmet", "nvmet", T, "exec (file namespace read/write)", NULL, "" },
	{ "nvmet_file_execute_flush", NT_HK_ENTRY, "nvmet", "nvmet", T, "exec (file namespace flush)", NULL, "" },
	{ "nvmet_req_complete", NT_HK_TP, "nvmet", "nvmet", T, "subsys_done", NULL,
	  "target_subsystem and nvmet_tcp_completion not measured" },
	{ "nvmet_tcp_queue_response", NT_HK_ENTRY, "nvmet_tcp", "nvmet_tcp", T, "resp_queued", NULL, "" },
	{ "nvmet_try_send_response", NT_HK_EXIT, "nvmet_tcp", "nvmet_tcp", T, "resp_sent (record emitted)", NULL,
	  "stand-in: kernel_sendpage" },
	{ "nvmet_try_send_r2t", NT_HK_EXIT, "nvmet_tcp", "nvmet_tcp", T, "r2t_sent", NULL,
	  "stand-in: kernel_sendpage" },
	{ "nvmet_try_send_data", NT_HK_EXIT, "nvmet_tcp", "nvmet_tcp", T, "resp_sent when C2H data carries SUCCESS", NULL,
	  "reads without a response capsule are not emitted" },
	{ "kernel_sendpage", NT_HK_EXIT, "", "", I | T, "cmd_sent / r2t_arrive / data_sent / r2t_sent / resp_sent: entry of the kernel_sendpage that completes the PDU",
	  "nvme_tcp_try_send_cmd_pdu,nvme_tcp_try_send_data,nvmet_try_send_response", "" },
};

#define NHOOKS ((int)(sizeof(hooks) / sizeof(hooks[0])))

int nt_hooks_count(void)
{
	return NHOOKS;
}

const struct nt_hook *nt_hook_at(int i)
{
	return (i >= 0 && i < NHOOKS) ? &hooks[i] : NULL;
}

const char *nt_attach_name(enum nt_attach a)
{
	static const char *const names[] = { "-", "tp_btf", "raw_tp", "fentry", "fexit", "kprobe", "kretprobe" };

	return (unsigned int)a < sizeof(names) / sizeof(names[0]) ? names[a] : "-";
}

/* ---- what the kernel offers ---- */

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

/* split BTF of a loaded module, cached; NULL if none */
static struct btf *module_btf(const char *mod)
{
	static struct { char name[32]; struct btf *btf; } cache[8];
	static int n;
	char path[128];
	struct btf *b;

	if (!mod || !*mod || !vmlinux_btf())
		return NULL;
	for (int i = 0; i < n; i++)
		if (!strcmp(cache[i].name, mod))
			return cache[i].btf;
	snprintf(path, sizeof(path), "/sys/kernel/btf/%s", mod);
	b = btf__parse_split(path, vmlinux_btf());
	if (libbpf_get_error(b))
		b = NULL;
	if (n < 8) {
		snprintf(cache[n].name, sizeof(cache[n].name), "%s", mod);
		cache[n++].btf = b;
	}
	return b;
}

static const struct btf_type *tp_proto_in(struct btf *btf, const char *tp)
{
	char name[128];
	const struct btf_type *t;
	int id;

	if (!btf)
		return NULL;
	snprintf(name, sizeof(name), "btf_trace_%s", tp);
	id = btf__find_by_name_kind(btf, name, BTF_KIND_TYPEDEF);
	if (id < 0)
		return NULL;
	t = btf__type_by_id(btf, id);
	t = btf__type_by_id(btf, t->type);
	if (!t || !btf_is_ptr(t))
		return NULL;
	t = btf__type_by_id(btf, t->type);
	return (t && btf_is_func_proto(t)) ? t : NULL;
}

/* a tracepoint's BTF: vmlinux, else the module that defines it (nvme_core, nvmet) */
static bool tp_in_btf(const char *sys, const char *tp)
{
	static const char *const mods[] = { "nvme_core", "nvmet", "nvme" };

	if (tp_proto_in(vmlinux_btf(), tp))
		return true;
	if (!strcmp(sys, "nvme") || !strcmp(sys, "nvmet"))
		for (size_t i = 0; i < sizeof(mods) / sizeof(mods[0]); i++)
			if (tp_proto_in(module_btf(mods[i]), tp))
				return true;
	return false;
}

static bool tracefs_has(const char *sys, const char *tp)
{
	static const char *const roots[] = { "/sys/kernel/tracing/events", "/sys/kernel/debug/tracing/events" };
	char path[256];
	struct stat st;

	for (size_t i = 0; i < sizeof(roots) / sizeof(roots[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s/%s", roots[i], sys, tp);
		if (!stat(path, &st))
			return true;
	}
	return false;
}

static bool tracefs_mounted(void)
{
	struct stat st;

	return !stat("/sys/kernel/tracing/events", &st) || !stat("/sys/kernel/debug/tracing/events", &st);
}

static bool func_in_btf(const char *mod, const char *fn)
{
	struct btf *b = (mod && *mod) ? module_btf(mod) : vmlinux_btf();

	return b && btf__find_by_name_kind(b, fn, BTF_KIND_FUNC) > 0;
}

/* functions of our table present in /proc/kallsyms (not inlined) */
static bool in_kallsyms(const char *fn)
{
	static char *found[64];
	static int nfound = -1;

	if (nfound < 0) {
		FILE *f = fopen("/proc/kallsyms", "r");
		char line[512], sym[256], type;
		unsigned long long addr;

		nfound = 0;
		while (f && fgets(line, sizeof(line), f)) {
			if (sscanf(line, "%llx %c %255s", &addr, &type, sym) != 3 || (type != 't' && type != 'T'))
				continue;
			for (int i = 0; i < NHOOKS; i++)
				if (hooks[i].kind != NT_HK_TP && !strcmp(sym, hooks[i].name) && nfound < 64) {
					found[nfound++] = strdup(sym);
					break;
				}
		}
		if (f)
			fclose(f);
	}
	for (int i = 0; i < nfound; i++)
		if (found[i] && !strcmp(found[i], fn))
			return true;
	return false;
}

static bool module_loaded(const char *mod)
{
	char path[128];
	struct stat st;

	if (!mod || !*mod)
		return true;
	snprintf(path, sizeof(path), "/sys/module/%s", mod);
	return !stat(path, &st);
}

static void choose_one(struct nt_hook_choice *c, const struct nt_hook *h, bool force_kprobe)
{
	c->hook = h;
	c->attach = NT_AT_NONE;
	c->why[0] = 0;
	if (!module_loaded(h->module)) {
		snprintf(c->why, sizeof(c->why), "module %s not loaded", h->module);
		return;
	}
	if (h->kind == NT_HK_TP) {
		if (tp_in_btf(h->where, h->name))
			c->attach = NT_AT_TP_BTF;
		else if (tracefs_has(h->where, h->name) || !tracefs_mounted())
			c->attach = NT_AT_RAW_TP;	/* raw_tp needs no tracefs: try it */
		else
			snprintf(c->why, sizeof(c->why), "tracepoint %s:%s not in this kernel", h->where, h->name);
		return;
	}
	if (!force_kprobe && func_in_btf(h->where, h->name)) {
		c->attach = h->kind == NT_HK_ENTRY ? NT_AT_FENTRY : NT_AT_FEXIT;
		return;
	}
	if (in_kallsyms(h->name)) {
		c->attach = h->kind == NT_HK_ENTRY ? NT_AT_KPROBE : NT_AT_KRETPROBE;
		return;
	}
	snprintf(c->why, sizeof(c->why), "%s not attachable (inlined or absent on this kernel)", h->name);
}

static const struct nt_hook_choice *find(const struct nt_hook_choice *c, int n, const char *name)
{
	for (int i = 0; i < n; i++)
		if (c[i].hook && !strcmp(c[i].hook->name, name))
			return &c[i];
	return NULL;
}

void nt_hooks_choose(struct nt_hook_choice *c, int n, int role, bool force_kprobe)
{
	for (int i = 0; i < n && i < NHOOKS; i++) {
		if (role && !(hooks[i].roles & (1u << role))) {
			c[i].hook = &hooks[i];
			c[i].attach = NT_AT_NONE;
			snprintf(c[i].why, sizeof(c[i].why), "not a %s hook", nt_role_name(role));
			continue;
		}
		choose_one(&c[i], &hooks[i], force_kprobe);
	}
	/* a stand-in is attached only where what it stands in for is not */
	for (int i = 0; i < n && i < NHOOKS; i++) {
		char list[128], *save = NULL, *tok;
		bool needed = false;

		if (!hooks[i].stands_in_for || c[i].attach == NT_AT_NONE)
			continue;
		snprintf(list, sizeof(list), "%s", hooks[i].stands_in_for);
		for (tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
			const struct nt_hook_choice *o = find(c, n, tok);

			if (o && o->attach == NT_AT_NONE && strncmp(o->why, "not a ", 6) &&
			    strncmp(o->why, "module ", 7))
				needed = true;
		}
		if (!needed) {
			c[i].attach = NT_AT_NONE;
			snprintf(c[i].why, sizeof(c[i].why), "not needed (%s attachable)", hooks[i].stands_in_for);
		}
	}
}

bool nt_blk_tp_has_q(void)
{
	const struct btf_type *t = tp_proto_in(vmlinux_btf(), "block_rq_issue");

	/* (void *__data, struct request_queue *q, struct request *rq) before v5.11 */
	return t && btf_vlen(t) == 3;
}

int nt_hook_progs(const struct nt_hook_choice *c, char names[2][96])
{
	switch (c->attach) {
	case NT_AT_NONE:
		return 0;
	case NT_AT_KRETPROBE:	/* exit hooks: the entry half stashes the entry time */
		snprintf(names[0], 96, "kprobe_%s", c->hook->name);
		snprintf(names[1], 96, "kretprobe_%s", c->hook->name);
		return 2;
	case NT_AT_FEXIT:
		snprintf(names[0], 96, "fentry_%s", c->hook->name);
		snprintf(names[1], 96, "fexit_%s", c->hook->name);
		return 2;
	default:
		snprintf(names[0], 96, "%s_%s", nt_attach_name(c->attach), c->hook->name);
		return 1;
	}
}

int nt_hooks_autoload(struct bpf_object *obj, const struct nt_hook_choice *c, int n)
{
	struct bpf_program *p;

	bpf_object__for_each_program(p, obj)
		bpf_program__set_autoload(p, false);
	for (int i = 0; i < n; i++) {
		char names[2][96];
		int k = nt_hook_progs(&c[i], names);

		for (int j = 0; j < k; j++) {
			p = bpf_object__find_program_by_name(obj, names[j]);
			if (!p)
				return -1;
			bpf_program__set_autoload(p, true);
		}
	}
	return 0;
}

int nt_probe_print(FILE *out, bool force_kprobe)
{
	struct nt_hook_choice c[NHOOKS];
	int avail = 0;

	nt_hooks_choose(c, NHOOKS, 0, force_kprobe);
	fprintf(out, "kernel BTF: %s\n", vmlinux_btf() ? "yes (/sys/kernel/btf/vmlinux)" : "NO (CONFIG_DEBUG_INFO_BTF off)");
	fprintf(out, "modules: nvme_tcp %s, nvmet_tcp %s\n", module_loaded("nvme_tcp") ? "loaded" : "not loaded",
		module_loaded("nvmet_tcp") ? "loaded" : "not loaded");
	fprintf(out, "%-40s %-9s %-9s %s\n", "HOOK", "ROLE", "ATTACH", "STAGE BOUNDARY / WHY NOT");
	for (int i = 0; i < NHOOKS; i++) {
		const struct nt_hook *h = c[i].hook;
		char name[96];

		snprintf(name, sizeof(name), "%s%s%s", h->kind == NT_HK_TP ? h->where : (*h->where ? h->where : "vmlinux"),
			 h->kind == NT_HK_TP ? ":" : "!", h->name);
		fprintf(out, "%-40s %-9s %-9s %s", name,
			h->roles == (I | T) ? "both" : h->roles == I ? "initiator" : "target",
			nt_attach_name(c[i].attach), c[i].attach == NT_AT_NONE ? c[i].why : h->boundary);
		if (c[i].attach == NT_AT_NONE && h->instead && *h->instead)
			fprintf(out, "; %s", h->instead);
		fputc('\n', out);
		avail += c[i].attach != NT_AT_NONE;
	}
	fprintf(out, "%d of %d hooks attachable (fentry is tried first; if the kernel refuses it, kprobes)\n",
		avail, NHOOKS);
	return 0;
}
