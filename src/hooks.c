// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * hooks.c - the hook table (every event ntbpf stamps: the function or tracepoint, the roles that
 * use it, its stand-in) and the choice per hook of an attach type (tp_btf, raw_tp, fentry/fexit,
 * kprobe/kretprobe, or none) from the kernel's facts (facts.c).  Also the facts' text form
 * (`probe --facts`, read back by the tests).  docs/stages.md lists the same hooks.
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include "hooks.h"
#include "recfile.h"

#define I (1u << NTBPF_ROLE_INITIATOR)
#define T (1u << NTBPF_ROLE_TARGET)
#define SENDPAGE_STANDIN "stand-in: kernel_sendpage"

/* Order matters only for printing.  docs/stages.md lists the same hooks. */
static const struct nt_hook hooks[] = {
	{ .name = "block_rq_issue", .kind = NT_HK_TP, .where = "block", .roles = I,
	  .boundary = "blk_issue; blk_start from rq->start_time_ns", .instead = "no block stages" },
	{ .name = "block_rq_complete", .kind = NT_HK_TP, .where = "block", .roles = I,
	  .boundary = "blk_done (record emitted)", .instead = "no initiator records" },
	{ .name = "nvme_setup_cmd", .kind = NT_HK_TP, .where = "nvme", .roles = I,
	  .boundary = "queue_rq (inside nvme_tcp_queue_rq)",
	  .instead = "blk_submission ends at blk_issue; no NVMe identity, no matching" },
	{ .name = "nvme_complete_rq", .kind = NT_HK_TP, .where = "nvme", .roles = I,
	  .boundary = "nvme_done", .instead = "nvme_tcp_completion and blk_completion not measured", .rc = true },
	{ .name = "nvme_tcp_data_ready", .kind = NT_HK_ENTRY, .where = "nvme_tcp", .module = "nvme_tcp", .roles = I,
	  .boundary = "resp_arrive (delivery that covers the response's bytes)",
	  .instead = "nstack_completion, remote and network_transmission not measured" },
	{ .name = "nvme_tcp_recv_skb", .kind = NT_HK_ENTRY, .where = "nvme_tcp", .module = "nvme_tcp", .roles = I,
	  .boundary = "the stream range a receive call handles (dates resp_arrive)",
	  .instead = "resp_arrive from the read position: can be early where TCP coalesced segments" },
	{ .name = "blk_mq_complete_request_remote", .kind = NT_HK_ENTRY, .module = "nvme_tcp", .roles = I,
	  .boundary = "resp_proc (nvme_tcp processes the response)",
	  .instead = "nstack_completion and nvme_tcp_completion not measured" },
	{ .name = "nvme_tcp_try_send_cmd_pdu", .kind = NT_HK_ENTRY, .where = "nvme_tcp", .module = "nvme_tcp", .roles = I,
	  .boundary = "cmd_sent (entry of the call that hands the command PDU to the socket)", .instead = SENDPAGE_STANDIN },
	{ .name = "nvme_tcp_try_send_data", .kind = NT_HK_ENTRY, .where = "nvme_tcp", .module = "nvme_tcp", .roles = I,
	  .boundary = "data_sent (entry of the call that sends the H2C data after an R2T)", .instead = SENDPAGE_STANDIN },
	{ .name = "nvme_tcp_try_send_data_pdu", .kind = NT_HK_ENTRY, .where = "nvme_tcp", .module = "nvme_tcp", .roles = I,
	  .boundary = "r2t_arrive (arrival of the pass that read the R2T)", .instead = SENDPAGE_STANDIN },
	{ .name = "nvmet_tcp_data_ready", .kind = NT_HK_ENTRY, .where = "nvmet_tcp", .module = "nvmet_tcp", .roles = T,
	  .boundary = "cmd_arrive (delivery that covers the command's bytes)",
	  .instead = "nstack_submission not measured; target_residence starts at cmd_pickup" },
	{ .name = "nvmet_tcp_try_recv_pdu", .kind = NT_HK_ENTRY, .where = "nvmet_tcp", .module = "nvmet_tcp", .roles = T,
	  .boundary = "cmd_pickup", .instead = "nstack_submission and nvmet_tcp_submission not measured" },
	{ .name = "nvmet_req_init", .kind = NT_HK_TP, .where = "nvmet", .module = "nvmet", .roles = T,
	  .boundary = "req_init (target record created)", .instead = "no target records", .rc = true },
	{ .name = "nvmet_bdev_execute_rw", .kind = NT_HK_ENTRY, .where = "nvmet", .module = "nvmet", .roles = T,
	  .boundary = "exec (block-device namespace read/write)" },
	{ .name = "nvmet_bdev_execute_flush", .kind = NT_HK_ENTRY, .where = "nvmet", .module = "nvmet", .roles = T,
	  .boundary = "exec (block-device namespace flush)" },
	{ .name = "nvmet_file_execute_rw", .kind = NT_HK_ENTRY, .where = "nvmet", .module = "nvmet", .roles = T,
	  .boundary = "exec (file namespace read/write)" },
	{ .name = "nvmet_file_execute_flush", .kind = NT_HK_ENTRY, .where = "nvmet", .module = "nvmet", .roles = T,
	  .boundary = "exec (file namespace flush)" },
	{ .name = "nvmet_req_complete", .kind = NT_HK_TP, .where = "nvmet", .module = "nvmet", .roles = T,
	  .boundary = "subsys_done", .instead = "target_subsystem and nvmet_tcp_completion not measured" },
	{ .name = "nvmet_try_send_response", .kind = NT_HK_ENTRY, .where = "nvmet_tcp", .module = "nvmet_tcp", .roles = T,
	  .boundary = "resp_sent (entry of the first call that hands the response to the socket; record emitted)",
	  .instead = SENDPAGE_STANDIN },
	{ .name = "nvmet_try_send_r2t", .kind = NT_HK_ENTRY, .where = "nvmet_tcp", .module = "nvmet_tcp", .roles = T,
	  .boundary = "r2t_sent (entry of the call that sends the R2T)", .instead = SENDPAGE_STANDIN },
	{ .name = "nvmet_try_send_data", .kind = NT_HK_EXIT, .where = "nvmet_tcp", .module = "nvmet_tcp", .roles = T,
	  .boundary = "resp_sent when C2H data carries SUCCESS", .instead = "reads without a response capsule are not emitted" },
	{ .name = "kernel_sendpage", .kind = NT_HK_EXIT, .roles = I | T,
	  .boundary = "cmd_sent / r2t_arrive / data_sent / r2t_sent / resp_sent: entry of the kernel_sendpage that completes the PDU",
	  .stands_in_for = "nvme_tcp_try_send_cmd_pdu,nvme_tcp_try_send_data,nvmet_try_send_response",
	  .instead = "initiator: nvme_tcp_submission and remote not measured; target: records emitted at subsys_done" },
};

#define NHOOKS ((int)(sizeof(hooks) / sizeof(hooks[0])))

/* modules whose tracepoints or functions the table names (nvme_core defines the nvme: tracepoints) */
const char *const nt_fact_modules[] = { "nvme_core", "nvme_tcp", "nvmet", "nvmet_tcp", NULL };

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

void nt_hook_label(const struct nt_hook *h, char *buf, size_t len)
{
	if (h->kind == NT_HK_TP)
		snprintf(buf, len, "%s:%s", h->where, h->name);
	else
		snprintf(buf, len, "%s!%s", h->where ? h->where : "vmlinux", h->name);
}

void nt_why_text(const struct nt_hook_choice *c, char *buf, size_t len)
{
	const struct nt_hook *h = c->hook;

	switch (c->why) {
	case NT_WHY_NONE:
		snprintf(buf, len, "attached");
		break;
	case NT_WHY_ROLE:
		snprintf(buf, len, "not a hook of this role");
		break;
	case NT_WHY_MODULE:
		snprintf(buf, len, "module %s not loaded", h->module);
		break;
	case NT_WHY_TP_ABSENT:
		snprintf(buf, len, "tracepoint %s:%s not in this kernel", h->where, h->name);
		break;
	case NT_WHY_FUNC_ABSENT:
		snprintf(buf, len, "%s not attachable (inlined or absent on this kernel)", h->name);
		break;
	case NT_WHY_NO_KPROBES:
		snprintf(buf, len, "%s: no fentry and no kprobes on this kernel", h->name);
		break;
	case NT_WHY_NOT_NEEDED:
		snprintf(buf, len, "not needed (%s attachable)", h->stands_in_for);
		break;
	case NT_WHY_REFUSED:
		snprintf(buf, len, "refused by the kernel: %s", c->detail[0] ? c->detail : "load failed");
		break;
	default:
		snprintf(buf, len, "unknown");
		break;
	}
}

/* ---- facts ---- */

const struct nt_tp_fact *nt_facts_tp(const struct nt_facts *f, const char *name)
{
	for (int i = 0; i < f->ntp && i < NT_FACTS_MAX; i++)
		if (!strcmp(f->tp[i].name, name))
			return &f->tp[i];
	return NULL;
}

const struct nt_fn_fact *nt_facts_fn(const struct nt_facts *f, const char *name)
{
	for (int i = 0; i < f->nfn && i < NT_FACTS_MAX; i++)
		if (!strcmp(f->fn[i].name, name))
			return &f->fn[i];
	return NULL;
}

const struct nt_mod_fact *nt_facts_mod(const struct nt_facts *f, const char *name)
{
	for (int i = 0; i < f->nmod && i < NT_FACT_MODS; i++)
		if (!strcmp(f->mod[i].name, name))
			return &f->mod[i];
	return NULL;
}

void nt_facts_print(FILE *out, const struct nt_facts *f)
{
	fprintf(out, "# ntbpf facts 1\nkernel %s\nroot %d\nvmlinux_btf %d\nkallsyms %d\ntracefs %d\nkprobes %d\n"
		"rdonly_cast %d\n", f->kernel[0] ? f->kernel : "-", f->root, f->vmlinux_btf, f->kallsyms, f->tracefs,
		f->kprobes, f->rdonly_cast);
	for (int i = 0; i < f->nmod && i < NT_FACT_MODS; i++)
		fprintf(out, "module %s loaded=%d btf=%d\n", f->mod[i].name, f->mod[i].loaded, f->mod[i].btf);
	for (int i = 0; i < f->ntp && i < NT_FACTS_MAX; i++)
		fprintf(out, "tp %s btf=%d nargs=%d ksym=%d tracefs=%d\n", f->tp[i].name, f->tp[i].btf,
			f->tp[i].nargs, f->tp[i].ksym, f->tp[i].tracefs);
	for (int i = 0; i < f->nfn && i < NT_FACTS_MAX; i++)
		fprintf(out, "fn %s btf=%d ksym=%d ftrace=%d\n", f->fn[i].name, f->fn[i].btf, f->fn[i].ksym,
			f->fn[i].ftrace);
}

/* "key=V" with V in -1..99; 0 if absent, -1 on a bad value */
static int kv(const char *tok, const char *key, int8_t *v)
{
	size_t k = strlen(key);
	char *end;
	long x;

	if (strncmp(tok, key, k) || tok[k] != '=')
		return 0;
	x = strtol(tok + k + 1, &end, 10);
	if (end == tok + k + 1 || *end || x < -1 || x > 99)
		return -1;
	*v = (int8_t)x;
	return 1;
}

static bool good_name(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (!isalnum((unsigned char)*s) && *s != '_' && *s != '.' && *s != '-' && *s != '+' && *s != '~')
			return false;
	return true;
}

int nt_facts_parse(FILE *in, struct nt_facts *f, char *err, size_t errlen)
{
	char line[256];
	int ln = 0;
	bool magic = false;

	memset(f, 0, sizeof(*f));
	f->tracefs = f->kprobes = f->rdonly_cast = -1;
	while (fgets(line, sizeof(line), in)) {
		char *tok[8], *save = NULL, *t;
		int nt = 0, bad = 0;

		ln++;
		if (!strchr(line, '\n') && !feof(in)) {
			snprintf(err, errlen, "facts line %d: longer than %zu bytes", ln, sizeof(line) - 2);
			return -1;
		}
		if (!strncmp(line, "# ntbpf facts 1", 15))
			magic = true;
		if (line[0] == '#')
			continue;
		for (t = strtok_r(line, " \t\r\n", &save); t && nt < 8; t = strtok_r(NULL, " \t\r\n", &save))
			tok[nt++] = t;
		if (!nt)
			continue;
		if (!magic) {
			snprintf(err, errlen, "facts line %d: no '# ntbpf facts 1' line first", ln);
			return -1;
		}
		if (nt == 2 && !strcmp(tok[0], "kernel") && good_name(tok[1]) && strlen(tok[1]) < sizeof(f->kernel)) {
			snprintf(f->kernel, sizeof(f->kernel), "%s", tok[1]);
			continue;
		}
		if (nt == 2) {
			static const char *const keys[] = { "root", "vmlinux_btf", "kallsyms", "tracefs", "kprobes",
							    "rdonly_cast" };
			int8_t *dst[] = { &f->root, &f->vmlinux_btf, &f->kallsyms, &f->tracefs, &f->kprobes,
					  &f->rdonly_cast };
			char kvb[64];
			size_t k;

			for (k = 0; k < 6; k++)
				if (!strcmp(tok[0], keys[k]))
					break;
			snprintf(kvb, sizeof(kvb), "v=%s", tok[1]);
			if (k < 6 && kv(kvb, "v", dst[k]) == 1)
				continue;
		}
		/* a fact names its module, tracepoint or function: a keyword alone is not one (tok[1] unset) */
		if (nt < 2 || !good_name(tok[1]) || strlen(tok[1]) >= NT_FACT_NAME)
			bad = 1;
		else if (!strcmp(tok[0], "module") && f->nmod < NT_FACT_MODS && strlen(tok[1]) < sizeof(f->mod[0].name)) {
			struct nt_mod_fact *m = &f->mod[f->nmod++];

			snprintf(m->name, sizeof(m->name), "%s", tok[1]);
			for (int i = 2; i < nt; i++)
				if (kv(tok[i], "loaded", &m->loaded) != 1 && kv(tok[i], "btf", &m->btf) != 1)
					bad = 1;
		} else if (!strcmp(tok[0], "tp") && f->ntp < NT_FACTS_MAX) {
			struct nt_tp_fact *p = &f->tp[f->ntp++];

			snprintf(p->name, sizeof(p->name), "%s", tok[1]);
			p->btf = p->ksym = p->tracefs = p->nargs = -1;
			for (int i = 2; i < nt; i++)
				if (kv(tok[i], "btf", &p->btf) != 1 && kv(tok[i], "nargs", &p->nargs) != 1 &&
				    kv(tok[i], "ksym", &p->ksym) != 1 && kv(tok[i], "tracefs", &p->tracefs) != 1)
					bad = 1;
		} else if (!strcmp(tok[0], "fn") && f->nfn < NT_FACTS_MAX) {
			struct nt_fn_fact *p = &f->fn[f->nfn++];

			snprintf(p->name, sizeof(p->name), "%s", tok[1]);
			p->btf = p->ksym = p->ftrace = -1;
			for (int i = 2; i < nt; i++)
				if (kv(tok[i], "btf", &p->btf) != 1 && kv(tok[i], "ksym", &p->ksym) != 1 &&
				    kv(tok[i], "ftrace", &p->ftrace) != 1)
					bad = 1;
		} else {
			bad = 1;
		}
		if (bad) {
			snprintf(err, errlen, "facts line %d: not a fact this version reads", ln);
			return -1;
		}
	}
	if (ferror(in)) {
		snprintf(err, errlen, "facts: read error");
		return -1;
	}
	if (!magic) {
		snprintf(err, errlen, "facts: no '# ntbpf facts 1' line");
		return -1;
	}
	return 0;
}

/* ---- the decision ---- */

static bool mod_loaded(const struct nt_facts *f, const char *mod)
{
	const struct nt_mod_fact *m;

	if (!mod)
		return true;
	m = nt_facts_mod(f, mod);
	return m && m->loaded == 1;	/* unknown is not loaded */
}

static void decide_tp(const struct nt_facts *f, struct nt_hook_choice *c)
{
	const struct nt_tp_fact *t = nt_facts_tp(f, c->hook->name);

	/* tp_btf needs the tracepoint's btf_trace_* type (vmlinux or module BTF) */
	if (t && t->btf == 1 && f->vmlinux_btf == 1) {
		c->attach = NT_AT_TP_BTF;
		c->rc = c->hook->rc && f->rdonly_cast == 1;
	}
	/* raw_tp needs the tracepoint itself: its kallsyms symbols or its tracefs directory */
	else if (t && (t->ksym == 1 || t->tracefs == 1))
		c->attach = NT_AT_RAW_TP;
	else
		c->why = NT_WHY_TP_ABSENT;
}

static void decide_fn(const struct nt_facts *f, struct nt_hook_choice *c, bool force_kprobe)
{
	const struct nt_fn_fact *fn = nt_facts_fn(f, c->hook->name);
	bool entry = c->hook->kind == NT_HK_ENTRY;

	/* traceable: a text symbol, and in available_filter_functions where that could be read */
	if (!fn || fn->ksym != 1 || fn->ftrace == 0) {
		c->why = NT_WHY_FUNC_ABSENT;
		return;
	}
	if (!force_kprobe && fn->btf == 1 && f->vmlinux_btf == 1)
		c->attach = entry ? NT_AT_FENTRY : NT_AT_FEXIT;
	else if (f->kprobes == 1)
		c->attach = entry ? NT_AT_KPROBE : NT_AT_KRETPROBE;
	else
		c->why = NT_WHY_NO_KPROBES;
}

static const struct nt_hook_choice *find(const struct nt_hook_choice *c, int n, const char *name)
{
	for (int i = 0; i < n; i++)
		if (c[i].hook && !strcmp(c[i].hook->name, name))
			return &c[i];
	return NULL;
}

/*
 * A stand-in is attached only where something it stands in for is missing
 * from this kernel (need: true), and is no news where all of those that
 * this role has attach (need: false, and at least one attaches).
 */
static bool standin_is(const struct nt_hook_choice *c, int n, const char *list, bool need)
{
	const char *p = list;
	bool some = false;

	while (p && *p) {
		const char *e = strchr(p, ',');
		size_t len = e ? (size_t)(e - p) : strlen(p);
		char name[NT_FACT_NAME];
		const struct nt_hook_choice *o;

		snprintf(name, sizeof(name), "%.*s", (int)len, p);
		o = find(c, n, name);
		if (o && o->attach == NT_AT_NONE && o->why != NT_WHY_ROLE && o->why != NT_WHY_MODULE)
			return need;
		some |= o && o->attach != NT_AT_NONE;
		p = e ? e + 1 : NULL;
	}
	return need ? false : some;
}

void nt_hooks_decide(const struct nt_facts *f, struct nt_hook_choice *c, int n, int role, bool force_kprobe)
{
	if (n > NHOOKS)
		n = NHOOKS;
	for (int i = 0; i < n; i++) {
		const struct nt_hook *h = &hooks[i];

		c[i].hook = h;
		c[i].attach = NT_AT_NONE;
		c[i].why = NT_WHY_NONE;
		c[i].rc = false;
		if (c[i].refused)
			c[i].why = NT_WHY_REFUSED;
		else if (role && !(h->roles & (1u << role)))
			c[i].why = NT_WHY_ROLE;
		else if (!mod_loaded(f, h->module))
			c[i].why = NT_WHY_MODULE;
		else if (h->kind == NT_HK_TP)
			decide_tp(f, &c[i]);
		else
			decide_fn(f, &c[i], force_kprobe);
	}
	/*
	 * A stand-in whose functions all attach is not needed, attachable or
	 * not (kernel_sendpage is gone from 6.5 on, where nothing is inlined
	 * that it would stand in for): no news, and no loss to report.
	 */
	for (int i = 0; i < n; i++)
		if (hooks[i].stands_in_for && c[i].why != NT_WHY_ROLE && c[i].why != NT_WHY_MODULE &&
		    (c[i].attach != NT_AT_NONE ? !standin_is(c, n, hooks[i].stands_in_for, true) :
						 standin_is(c, n, hooks[i].stands_in_for, false))) {
			c[i].attach = NT_AT_NONE;
			c[i].why = NT_WHY_NOT_NEEDED;
		}
}

bool nt_blk_tp_has_q(const struct nt_facts *f)
{
	const struct nt_tp_fact *t = nt_facts_tp(f, "block_rq_issue");

	/* (void *__data, struct request_queue *q, struct request *rq) before v5.11 */
	return t && t->btf == 1 && t->nargs == 3;
}

int nt_hook_variant_progs(const struct nt_hook *h, enum nt_attach a, char names[2][96])
{
	switch (a) {
	case NT_AT_NONE:
		return 0;
	case NT_AT_KRETPROBE:	/* exit hooks: the entry half stashes the entry time */
		snprintf(names[0], 96, "kprobe_%s", h->name);
		snprintf(names[1], 96, "kretprobe_%s", h->name);
		return 2;
	case NT_AT_FEXIT:
		snprintf(names[0], 96, "fentry_%s", h->name);
		snprintf(names[1], 96, "fexit_%s", h->name);
		return 2;
	default:
		snprintf(names[0], 96, "%s_%s", nt_attach_name(a), h->name);
		return 1;
	}
}

int nt_hook_progs(const struct nt_hook_choice *c, char names[2][96])
{
	if (c->rc && c->attach == NT_AT_TP_BTF) {
		snprintf(names[0], 96, "tp_btf_rc_%s", c->hook->name);
		return 1;
	}
	return nt_hook_variant_progs(c->hook, c->attach, names);
}

int nt_hook_of_prog(const struct nt_hook_choice *c, int n, const char *prog)
{
	for (int i = 0; i < n; i++) {
		char names[2][96];
		int k = c[i].hook ? nt_hook_progs(&c[i], names) : 0;

		for (int j = 0; j < k; j++)
			if (!strcmp(names[j], prog))
				return i;
	}
	return -1;
}
