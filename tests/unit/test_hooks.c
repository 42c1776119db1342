// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Hook choice, without root: the BPF object really has every program the
 * hook table names (opened from the embedded skeleton, not loaded), and the
 * choice on each kernel follows from that kernel's facts, captured with
 * "ntbpf probe --facts" (tests/unit/facts-*.txt: 6.1, 6.12 and 7.2 in the lab's
 * guests with nvme_tcp and nvmet_tcp loaded, 6.18 on this project's machine
 * without nvme, tracefs unmounted and mounted).  The expected choices on 6.1
 * and 6.12 are what main's "ntbpf probe" printed in the same guests.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <bpf/libbpf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "hooks.h"
#include "ntbpf.skel.h"

#define MAXH 64

static void load_facts(const char *name, struct nt_facts *f)
{
	char path[512], err[200] = "";
	const char *dir = getenv("NTBPF_TESTDATA");
	FILE *in;

	snprintf(path, sizeof(path), "%s/%s", dir ? dir : "tests/unit", name);
	in = fopen(path, "r");
	if (!in)
		fail_msg("cannot open %s", path);
	if (nt_facts_parse(in, f, err, sizeof(err)))
		fail_msg("%s: %s", path, err);
	fclose(in);
}

static int hook_index(const char *name)
{
	for (int i = 0; i < nt_hooks_count(); i++)
		if (!strcmp(nt_hook_at(i)->name, name))
			return i;
	fail_msg("no hook %s", name);
	return -1;
}

/* ---- the BPF object has the programs the table names ---- */

static bool is_subprog_name(struct bpf_object *obj, const struct bpf_program *p)
{
	(void)obj;
	/* libbpf lists only entry programs (those in a SEC other than .text) */
	return !bpf_program__section_name(p) || !strcmp(bpf_program__section_name(p), ".text");
}

static void test_object_has_every_program(void **state)
{
	size_t sz = 0;
	const void *bytes = ntbpf_bpf__elf_bytes(&sz);
	LIBBPF_OPTS(bpf_object_open_opts, opts, .object_name = "ntbpf_test");
	struct bpf_object *obj;
	struct bpf_program *p;
	int owned = 0, progs = 0;

	assert_true(sz > 0);
	obj = bpf_object__open_mem(bytes, sz, &opts);
	assert_non_null(obj);
	assert_int_equal(libbpf_get_error(obj), 0);
	for (int i = 0; i < nt_hooks_count(); i++) {
		const struct nt_hook *h = nt_hook_at(i);
		enum nt_attach v[2];

		if (h->kind == NT_HK_TP)
			v[0] = NT_AT_TP_BTF, v[1] = NT_AT_RAW_TP;
		else if (h->kind == NT_HK_ENTRY)
			v[0] = NT_AT_FENTRY, v[1] = NT_AT_KPROBE;
		else
			v[0] = NT_AT_FEXIT, v[1] = NT_AT_KRETPROBE;
		for (int k = 0; k < 2; k++) {
			char names[2][96];
			int n = nt_hook_variant_progs(h, v[k], names);

			assert_true(n >= 1);
			for (int j = 0; j < n; j++) {
				struct bpf_program *prog = bpf_object__find_program_by_name(obj, names[j]);
				const char *sec;
				char want[128];

				if (!prog)
					fail_msg("hook %s: no program %s in the BPF object", h->name, names[j]);
				/* the section says the same attach type and target as the name */
				sec = bpf_program__section_name(prog);
				snprintf(want, sizeof(want), "%.*s/%s", (int)(strlen(names[j]) - strlen(h->name) - 1),
					 names[j], h->name);
				if (strcmp(sec, want))
					fail_msg("program %s is in section %s, not %s", names[j], sec, want);
			}
		}
		/* a tracepoint with a bpf_rdonly_cast program: tp_btf_rc_<name>, a tp_btf program of it */
		if (h->rc) {
			struct nt_hook_choice c = { .hook = h, .attach = NT_AT_TP_BTF, .rc = true };
			char names[2][96], want[128];
			struct bpf_program *prog;

			assert_int_equal(h->kind, NT_HK_TP);
			assert_int_equal(nt_hook_progs(&c, names), 1);
			snprintf(want, sizeof(want), "tp_btf_rc_%s", h->name);
			assert_string_equal(names[0], want);
			prog = bpf_object__find_program_by_name(obj, names[0]);
			if (!prog)
				fail_msg("hook %s: no program %s in the BPF object", h->name, names[0]);
			snprintf(want, sizeof(want), "tp_btf/%s", h->name);
			assert_string_equal(bpf_program__section_name(prog), want);
		}
	}
	/* and no program the table does not own (it would never load) */
	bpf_object__for_each_program(p, obj) {
		struct nt_hook_choice c[MAXH] = { 0 };
		bool found = false;

		if (is_subprog_name(obj, p))
			continue;
		progs++;
		for (int i = 0; i < nt_hooks_count() && !found; i++) {
			static const enum nt_attach all[] = { NT_AT_TP_BTF, NT_AT_RAW_TP, NT_AT_FENTRY, NT_AT_FEXIT,
							      NT_AT_KPROBE, NT_AT_KRETPROBE };

			for (size_t a = 0; a < sizeof(all) / sizeof(all[0]) && !found; a++) {
				c[i].hook = nt_hook_at(i);
				c[i].attach = all[a];
				found = nt_hook_of_prog(c, i + 1, bpf_program__name(p)) == i;
				c[i].rc = c[i].hook->rc && all[a] == NT_AT_TP_BTF;
				found = found || (c[i].rc && nt_hook_of_prog(c, i + 1, bpf_program__name(p)) == i);
				c[i].rc = false;
			}
			c[i].attach = NT_AT_NONE;
		}
		if (!found)
			fail_msg("program %s belongs to no hook of the table", bpf_program__name(p));
		owned++;
	}
	assert_int_equal(owned, progs);
	assert_true(progs >= 2 * nt_hooks_count());
	bpf_object__close(obj);
}

/* ---- choices per kernel ---- */

struct expect {
	const char *hook;
	enum nt_attach attach;
	enum nt_why why;
	bool rc;	/* through its tp_btf_rc_ program (bpf_rdonly_cast) */
};

static void check_choices(const char *facts, int role, bool force_kprobe, const struct expect *e, int n)
{
	struct nt_facts f;
	struct nt_hook_choice c[MAXH] = { 0 };

	load_facts(facts, &f);
	assert_true(nt_hooks_count() <= MAXH);
	nt_hooks_decide(&f, c, nt_hooks_count(), role, force_kprobe);
	assert_int_equal(n, nt_hooks_count());
	for (int k = 0; k < n; k++) {
		int i = hook_index(e[k].hook);

		if (c[i].attach != e[k].attach || c[i].why != e[k].why || c[i].rc != e[k].rc)
			fail_msg("%s, role %d%s: %s is %s%s (why %d), want %s%s (why %d)", facts, role,
				 force_kprobe ? ", kprobes" : "", e[k].hook, nt_attach_name(c[i].attach),
				 c[i].rc ? " rc" : "", c[i].why, nt_attach_name(e[k].attach), e[k].rc ? " rc" : "",
				 e[k].why);
	}
}

#define A(h, at) { h, NT_AT_##at, NT_WHY_NONE, false }
#define RC(h) { h, NT_AT_TP_BTF, NT_WHY_NONE, true }
#define N(h, w) { h, NT_AT_NONE, NT_WHY_##w, false }

/* main's "ntbpf probe" in a 6.12 guest (tests/lab, nvme_tcp and nvmet_tcp loaded) */
static const struct expect k612[] = {
	A("block_rq_issue", TP_BTF), A("block_rq_complete", TP_BTF), A("nvme_setup_cmd", TP_BTF),
	RC("nvme_complete_rq"), A("nvme_tcp_data_ready", FENTRY), A("nvme_tcp_recv_skb", FENTRY),
	A("blk_mq_complete_request_remote", FENTRY), A("nvme_tcp_try_send_cmd_pdu", FENTRY),
	A("nvme_tcp_try_send_data", FENTRY), A("nvme_tcp_try_send_data_pdu", FENTRY),
	A("nvmet_tcp_data_ready", FENTRY), A("nvmet_tcp_try_recv_pdu", FENTRY), RC("nvmet_req_init"),
	A("nvmet_bdev_execute_rw", FENTRY), A("nvmet_bdev_execute_flush", FENTRY),
	A("nvmet_file_execute_rw", FENTRY), A("nvmet_file_execute_flush", FENTRY),
	A("nvmet_req_complete", TP_BTF),
	A("nvmet_try_send_response", FENTRY), A("nvmet_try_send_r2t", FENTRY), A("nvmet_try_send_data", FEXIT),
	N("kernel_sendpage", NOT_NEEDED),	/* gone since 6.5, and what it stands in for attaches: no news */
};

/* main's "ntbpf probe" in a 6.1 guest: the send helpers are inlined, kernel_sendpage stands in */
static const struct expect k61[] = {
	A("block_rq_issue", TP_BTF), A("block_rq_complete", TP_BTF), A("nvme_setup_cmd", TP_BTF),
	A("nvme_complete_rq", TP_BTF), A("nvme_tcp_data_ready", FENTRY), A("nvme_tcp_recv_skb", FENTRY),
	A("blk_mq_complete_request_remote", FENTRY), N("nvme_tcp_try_send_cmd_pdu", FUNC_ABSENT),
	N("nvme_tcp_try_send_data", FUNC_ABSENT), N("nvme_tcp_try_send_data_pdu", FUNC_ABSENT),
	A("nvmet_tcp_data_ready", FENTRY), A("nvmet_tcp_try_recv_pdu", FENTRY), A("nvmet_req_init", TP_BTF),
	A("nvmet_bdev_execute_rw", FENTRY), A("nvmet_bdev_execute_flush", FENTRY),
	A("nvmet_file_execute_rw", FENTRY), A("nvmet_file_execute_flush", FENTRY),
	A("nvmet_req_complete", TP_BTF),
	N("nvmet_try_send_response", FUNC_ABSENT), N("nvmet_try_send_r2t", FUNC_ABSENT),
	N("nvmet_try_send_data", FUNC_ABSENT), A("kernel_sendpage", FEXIT),
};

/* this project's machine: 6.18, no nvme code at all, no kprobes */
static const struct expect k618[] = {
	A("block_rq_issue", TP_BTF), A("block_rq_complete", TP_BTF), N("nvme_setup_cmd", TP_ABSENT),
	N("nvme_complete_rq", TP_ABSENT), N("nvme_tcp_data_ready", MODULE), N("nvme_tcp_recv_skb", MODULE),
	N("blk_mq_complete_request_remote", MODULE), N("nvme_tcp_try_send_cmd_pdu", MODULE),
	N("nvme_tcp_try_send_data", MODULE), N("nvme_tcp_try_send_data_pdu", MODULE),
	N("nvmet_tcp_data_ready", MODULE), N("nvmet_tcp_try_recv_pdu", MODULE), N("nvmet_req_init", MODULE),
	N("nvmet_bdev_execute_rw", MODULE), N("nvmet_bdev_execute_flush", MODULE),
	N("nvmet_file_execute_rw", MODULE), N("nvmet_file_execute_flush", MODULE),
	N("nvmet_req_complete", MODULE),
	N("nvmet_try_send_response", MODULE), N("nvmet_try_send_r2t", MODULE),
	N("nvmet_try_send_data", MODULE), N("kernel_sendpage", FUNC_ABSENT),
};

#define NE(a) ((int)(sizeof(a) / sizeof(a[0])))

static void test_choice_6_12(void **state)
{
	check_choices("facts-6.12.txt", 0, false, k612, NE(k612));
}

static void test_choice_7_2(void **state)
{
	/* Debian sid's 7.2 in the lab (lab branch's build-image): the same choices as 6.12 */
	check_choices("facts-7.2.txt", 0, false, k612, NE(k612));
}

static void test_choice_6_1(void **state)
{
	check_choices("facts-6.1.txt", 0, false, k61, NE(k61));
}

static void test_choice_6_18_no_nvme(void **state)
{
	/* the issue-9 kernel: tracefs not mounted, so nvme: tracepoints are known absent from BTF and kallsyms */
	check_choices("facts-6.18-nonvme.txt", 0, false, k618, NE(k618));
	/* fentry refused here: the loader's retry turns functions over to kprobes, which this kernel lacks */
	check_choices("facts-6.18-nonvme.txt", 0, true, k618, NE(k618));
	check_choices("facts-6.18-tracefs.txt", 0, false, k618, NE(k618));
}

static void test_role_and_kprobes(void **state)
{
	struct nt_facts f;
	struct nt_hook_choice c[MAXH] = { 0 };
	int n = nt_hooks_count();

	load_facts("facts-6.12.txt", &f);
	nt_hooks_decide(&f, c, n, NTBPF_ROLE_INITIATOR, true);
	assert_int_equal(c[hook_index("nvmet_req_init")].why, NT_WHY_ROLE);
	assert_int_equal(c[hook_index("nvme_tcp_data_ready")].attach, NT_AT_KPROBE);
	assert_int_equal(c[hook_index("nvme_tcp_try_send_cmd_pdu")].attach, NT_AT_KPROBE);
	assert_int_equal(c[hook_index("nvmet_try_send_response")].attach, NT_AT_NONE);	/* a target hook */
	assert_int_equal(c[hook_index("nvme_setup_cmd")].attach, NT_AT_TP_BTF);
	/* 6.18 with fentry refused and no kprobes: a function that is there still cannot attach */
	load_facts("facts-6.18-nonvme.txt", &f);
	for (int i = 0; i < f.nmod; i++)
		f.mod[i].loaded = 1;
	memset(c, 0, sizeof(c));
	nt_hooks_decide(&f, c, n, NTBPF_ROLE_INITIATOR, true);
	assert_int_equal(c[hook_index("blk_mq_complete_request_remote")].why, NT_WHY_NO_KPROBES);
	nt_hooks_decide(&f, c, n, NTBPF_ROLE_INITIATOR, false);
	assert_int_equal(c[hook_index("blk_mq_complete_request_remote")].attach, NT_AT_FENTRY);
}

/* what could not be read is never taken as there */
static void test_unknown_is_absent(void **state)
{
	struct nt_facts f;
	struct nt_hook_choice c[MAXH] = { 0 };
	int n = nt_hooks_count();

	load_facts("facts-6.12.txt", &f);
	f.vmlinux_btf = 0;
	for (int i = 0; i < f.ntp; i++)
		f.tp[i].ksym = -1, f.tp[i].tracefs = -1;
	for (int i = 0; i < f.nfn; i++)
		f.fn[i].ksym = -1;
	nt_hooks_decide(&f, c, n, 0, false);
	for (int i = 0; i < n; i++) {
		assert_int_equal(c[i].attach, NT_AT_NONE);
		assert_true(c[i].why == NT_WHY_TP_ABSENT || c[i].why == NT_WHY_FUNC_ABSENT ||
			    c[i].why == NT_WHY_NOT_NEEDED);
	}
	/* bpf_rdonly_cast unknown (facts without its line) or absent: the probe-read program */
	for (int v = -1; v <= 0; v++) {
		load_facts("facts-6.12.txt", &f);
		f.rdonly_cast = (int8_t)v;
		memset(c, 0, sizeof(c));
		nt_hooks_decide(&f, c, n, 0, false);
		assert_int_equal(c[hook_index("nvmet_req_init")].attach, NT_AT_TP_BTF);
		assert_false(c[hook_index("nvmet_req_init")].rc);
		assert_int_equal(c[hook_index("nvme_complete_rq")].attach, NT_AT_TP_BTF);
		assert_false(c[hook_index("nvme_complete_rq")].rc);
	}
	/* a module fact missing: not loaded */
	load_facts("facts-6.12.txt", &f);
	f.nmod = 0;
	memset(c, 0, sizeof(c));
	nt_hooks_decide(&f, c, n, 0, false);
	assert_int_equal(c[hook_index("nvme_tcp_data_ready")].why, NT_WHY_MODULE);
	/* tracefs read: available_filter_functions rules out a notrace function kallsyms lists */
	load_facts("facts-6.12.txt", &f);
	for (int i = 0; i < f.nfn; i++)
		if (!strcmp(f.fn[i].name, "nvme_tcp_recv_skb"))
			f.fn[i].ftrace = 0;
	memset(c, 0, sizeof(c));
	nt_hooks_decide(&f, c, n, 0, false);
	assert_int_equal(c[hook_index("nvme_tcp_recv_skb")].why, NT_WHY_FUNC_ABSENT);
}

/* a refused program stays off, and a stand-in becomes needed (no 'why' strings compared) */
static void test_refused_and_standin(void **state)
{
	struct nt_facts f;
	struct nt_hook_choice c[MAXH] = { 0 };
	int n = nt_hooks_count(), ks = hook_index("kernel_sendpage"), cmd = hook_index("nvme_tcp_try_send_cmd_pdu");
	char text[200];

	load_facts("facts-6.1.txt", &f);
	/* pretend 6.1 had the three send helpers out of line: kernel_sendpage is then not needed */
	for (int i = 0; i < f.nfn; i++)
		if (strstr(f.fn[i].name, "try_send"))
			f.fn[i].btf = f.fn[i].ksym = 1, f.fn[i].ftrace = -1;
	nt_hooks_decide(&f, c, n, 0, false);
	assert_int_equal(c[cmd].attach, NT_AT_FENTRY);
	assert_int_equal(c[ks].why, NT_WHY_NOT_NEEDED);
	/* the kernel refuses one: it stays off on every later decision, and the stand-in attaches */
	c[cmd].refused = true;
	snprintf(c[cmd].detail, sizeof(c[cmd].detail), "fentry_nvme_tcp_try_send_cmd_pdu: Invalid argument");
	nt_hooks_decide(&f, c, n, 0, false);
	nt_hooks_decide(&f, c, n, 0, true);
	assert_int_equal(c[cmd].attach, NT_AT_NONE);
	assert_int_equal(c[cmd].why, NT_WHY_REFUSED);
	assert_int_equal(c[ks].attach, NT_AT_KRETPROBE);
	nt_why_text(&c[cmd], text, sizeof(text));
	assert_string_equal(text, "refused by the kernel: fentry_nvme_tcp_try_send_cmd_pdu: Invalid argument");
	/* a module that is not loaded does not call for the stand-in */
	load_facts("facts-6.1.txt", &f);
	memset(c, 0, sizeof(c));
	nt_hooks_decide(&f, c, n, NTBPF_ROLE_TARGET, false);
	assert_int_equal(c[ks].attach, NT_AT_FEXIT);	/* nvmet_try_send_response is inlined on 6.1 */
	for (int i = 0; i < f.nmod; i++)
		if (!strcmp(f.mod[i].name, "nvmet_tcp"))
			f.mod[i].loaded = 0;
	memset(c, 0, sizeof(c));
	nt_hooks_decide(&f, c, n, NTBPF_ROLE_TARGET, false);
	assert_int_equal(c[ks].why, NT_WHY_NOT_NEEDED);
}

static void test_prog_to_hook(void **state)
{
	struct nt_facts f;
	struct nt_hook_choice c[MAXH] = { 0 };
	int n = nt_hooks_count();

	load_facts("facts-6.12.txt", &f);
	nt_hooks_decide(&f, c, n, 0, false);
	assert_int_equal(nt_hook_of_prog(c, n, "fentry_nvme_tcp_try_send_cmd_pdu"), hook_index("nvme_tcp_try_send_cmd_pdu"));
	assert_int_equal(nt_hook_of_prog(c, n, "fexit_nvme_tcp_try_send_cmd_pdu"), -1);	/* an entry hook now */
	assert_int_equal(nt_hook_of_prog(c, n, "fexit_nvmet_try_send_response"), -1);	/* an entry hook too */
	assert_int_equal(nt_hook_of_prog(c, n, "fentry_nvmet_try_send_response"), hook_index("nvmet_try_send_response"));
	assert_int_equal(nt_hook_of_prog(c, n, "fexit_nvmet_try_send_data"), hook_index("nvmet_try_send_data"));
	assert_int_equal(nt_hook_of_prog(c, n, "fentry_nvmet_try_send_data"), hook_index("nvmet_try_send_data"));
	assert_int_equal(nt_hook_of_prog(c, n, "tp_btf_nvme_setup_cmd"), hook_index("nvme_setup_cmd"));
	assert_int_equal(nt_hook_of_prog(c, n, "raw_tp_nvme_setup_cmd"), -1);	/* not the chosen variant */
	assert_int_equal(nt_hook_of_prog(c, n, "kh_record"), -1);
	assert_false(nt_blk_tp_has_q(&f));	/* (rq) since v5.11 */
}

static void test_facts_text(void **state)
{
	static const char *const bad[] = {
		"kernel 6.1\n",					/* no magic line */
		"# ntbpf facts 1\nroot yes\n",			/* not a number */
		"# ntbpf facts 1\ntp x btf=1 nargs=200\n",	/* out of range */
		"# ntbpf facts 1\nfn x btf=1 colour=3\n",	/* unknown key */
		"# ntbpf facts 1\nfn a/b btf=1\n",		/* not a symbol name */
		"# ntbpf facts 1\nsomething 1 2\n",
		"# ntbpf facts 1\nfn xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx btf=1\n",	/* too long */
		/* a keyword alone: it read the name through a pointer never set (fuzz_facts) */
		"# ntbpf facts 1\ntp block_rq_issue btf=1\nfn\n",
		"# ntbpf facts 1\nmodule\n",
		"# ntbpf facts 1\ntp\n",
	};
	struct nt_facts f, g;
	char *buf = NULL, err[200];
	size_t len = 0;
	FILE *out, *in;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		in = fmemopen((void *)bad[i], strlen(bad[i]), "r");
		err[0] = 0;
		if (nt_facts_parse(in, &f, err, sizeof(err)) == 0)
			fail_msg("accepted bad facts #%zu", i);
		assert_true(err[0] && !strchr(err, '\n'));
		fclose(in);
	}
	/* print and parse again: the same facts */
	load_facts("facts-6.12.txt", &f);
	out = open_memstream(&buf, &len);
	nt_facts_print(out, &f);
	fclose(out);
	in = fmemopen(buf, len, "r");
	assert_int_equal(nt_facts_parse(in, &g, err, sizeof(err)), 0);
	fclose(in);
	free(buf);
	assert_memory_equal(&f, &g, sizeof(f));
	assert_true(f.ntp >= 6 && f.nfn >= 17 && f.nmod == 4);
	assert_string_equal(f.kernel, "6.12.117+deb12-cloud-amd64");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_object_has_every_program),
		cmocka_unit_test(test_choice_6_12),
		cmocka_unit_test(test_choice_7_2),
		cmocka_unit_test(test_choice_6_1),
		cmocka_unit_test(test_choice_6_18_no_nvme),
		cmocka_unit_test(test_role_and_kprobes),
		cmocka_unit_test(test_unknown_is_absent),
		cmocka_unit_test(test_refused_and_standin),
		cmocka_unit_test(test_prog_to_hook),
		cmocka_unit_test(test_facts_text),
	};

	libbpf_set_print(NULL);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
