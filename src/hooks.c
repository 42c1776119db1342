// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "hooks.h"

#define INIT (1u << NTBPF_ROLE_INITIATOR)
#define TGT (1u << NTBPF_ROLE_TARGET)

static const struct nt_hook hooks[] = {
	{ "block:block_rq_issue", NT_HK_TP, "block", "block_rq_issue", INIT,
	  "blk_issue (blk_mq_start_request); blk_submission end on non-nvme devices" },
	{ "block:block_rq_complete", NT_HK_TP, "block", "block_rq_complete", INIT,
	  "blk_done: end of blk_completion and end_to_end" },
};

int nt_hooks_count(void)
{
	return sizeof(hooks) / sizeof(hooks[0]);
}

const struct nt_hook *nt_hook_at(int i)
{
	return (i >= 0 && i < nt_hooks_count()) ? &hooks[i] : NULL;
}

const char *nt_attach_name(enum nt_attach a)
{
	switch (a) {
	case NT_AT_TP_BTF:
		return "tp_btf";
	case NT_AT_RAW_TP:
		return "raw_tp";
	default:
		return "-";
	}
}

struct btf *nt_vmlinux_btf(void)
{
	static struct btf *btf;
	static bool tried;

	if (!tried) {
		tried = true;
		btf = btf__load_vmlinux_btf();
		if (!btf || libbpf_get_error(btf))
			btf = NULL;
	}
	return btf;
}

static const struct btf_type *tp_proto(const char *tp)
{
	struct btf *btf = nt_vmlinux_btf();
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
	t = btf__type_by_id(btf, t->type);	/* pointer */
	if (!t || !btf_is_ptr(t))
		return NULL;
	t = btf__type_by_id(btf, t->type);	/* func proto */
	return (t && btf_is_func_proto(t)) ? t : NULL;
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

void nt_hooks_choose(struct nt_hook_choice *c, int n)
{
	for (int i = 0; i < n && i < nt_hooks_count(); i++) {
		c[i].hook = &hooks[i];
		c[i].why[0] = 0;
		if (tp_proto(hooks[i].tp)) {
			c[i].attach = NT_AT_TP_BTF;
		} else if (tracefs_has(hooks[i].sys, hooks[i].tp)) {
			c[i].attach = NT_AT_RAW_TP;
		} else {
			c[i].attach = NT_AT_NONE;
			snprintf(c[i].why, sizeof(c[i].why), "tracepoint %s not in this kernel", hooks[i].tp);
		}
	}
}

bool nt_blk_tp_has_q(void)
{
	const struct btf_type *t = tp_proto("block_rq_issue");

	/* (void *__data, struct request_queue *q, struct request *rq) before v5.11 */
	return t && btf_vlen(t) == 3;
}

int nt_hooks_autoload(struct bpf_object *obj, const struct nt_hook_choice *c, int n)
{
	struct bpf_program *p;

	bpf_object__for_each_program(p, obj)
		bpf_program__set_autoload(p, false);
	for (int i = 0; i < n; i++) {
		char name[128];

		if (c[i].attach == NT_AT_NONE)
			continue;
		snprintf(name, sizeof(name), "%s_%s", nt_attach_name(c[i].attach), c[i].hook->tp);
		p = bpf_object__find_program_by_name(obj, name);
		if (!p)
			return -1;
		bpf_program__set_autoload(p, true);
	}
	return 0;
}

int nt_probe_print(FILE *out)
{
	int n = nt_hooks_count();
	struct nt_hook_choice *c = calloc(n, sizeof(*c));
	int avail = 0;

	if (!c)
		return -1;
	nt_hooks_choose(c, n);
	fprintf(out, "kernel BTF: %s\n", nt_vmlinux_btf() ? "yes (/sys/kernel/btf/vmlinux)" : "NO (CONFIG_DEBUG_INFO_BTF off)");
	fprintf(out, "%-28s %-10s %-8s %s\n", "HOOK", "ROLE", "ATTACH", "STATUS / STAGE BOUNDARY");
	for (int i = 0; i < n; i++) {
		const struct nt_hook *h = c[i].hook;

		fprintf(out, "%-28s %-10s %-8s %s\n", h->name,
			h->roles == (INIT | TGT) ? "both" : h->roles == INIT ? "initiator" : "target",
			nt_attach_name(c[i].attach),
			c[i].attach == NT_AT_NONE ? c[i].why : h->boundary);
		avail += c[i].attach != NT_AT_NONE;
	}
	fprintf(out, "%d of %d hooks available\n", avail, n);
	free(c);
	return 0;
}
