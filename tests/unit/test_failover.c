// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Native NVMe multipath (src/failover.h, nt_path_of): a request that ended
 * in a path error is linked to the request that retried its bio on another
 * path, whatever the order in the file, never to one that started before the
 * failover or to another bio; a chain counts once, from its first start to
 * its last end; and "ntbpf report --group-by dev" and "ntbpf script" (as
 * main() runs them) show each path, the failover line and the link.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "failover.h"
#include "names.h"
#include "recfile.h"
#include "report.h"
#include "script.h"

/* an initiator NVMe read of 4 KiB at sector, t0 start, nvme_done and blk_done after it (ns) */
static struct ntbpf_rec req(uint64_t t0, uint64_t sector, uint16_t ctrl, uint16_t status, uint32_t done,
			    uint32_t end)
{
	struct ntbpf_rec r;

	memset(&r, 0, sizeof(r));
	r.role = NTBPF_ROLE_INITIATOR;
	r.flags = NTBPF_F_NVME;
	r.op = NTBPF_OP_READ;
	r.opcode = 2;
	r.bytes = 4096;
	r.dev = 259 << 20 | 0;
	r.sector = sector;
	r.t0 = t0;
	r.ctrl = ctrl;
	r.qid = 1;
	r.status = status;
	r.ev_mask = 1u << EV_I_BLK_START | 1u << EV_I_QUEUE_RQ | 1u << EV_I_NVME_DONE | 1u << EV_I_BLK_DONE;
	r.ev[EV_I_QUEUE_RQ] = 1000;
	r.ev[EV_I_NVME_DONE] = done;
	r.ev[EV_I_BLK_DONE] = end;
	return r;
}

static void feed_all(struct nt_failover *fo, const struct ntbpf_rec *r, int n)
{
	for (int i = 0; i < n; i++)
		assert_int_equal(nt_fo_feed(fo, &r[i], 7, (uint64_t)i), 0);
	assert_int_equal(nt_fo_finish(fo), 0);
}

static void test_path_error_kinds(void **state)
{
	struct ntbpf_rec r = req(0, 8, 1, 0x371, 10, 20);

	(void)state;
	assert_true(nt_fo_path_error(&r));
	r.status = 0x370;
	assert_true(nt_fo_path_error(&r));
	r.status = 0x4302;	/* ANA inaccessible with DNR: still type 3 */
	assert_true(nt_fo_path_error(&r));
	r.status = 0x6006;	/* internal error: not a path error */
	assert_false(nt_fo_path_error(&r));
	r.status = 0x371;
	r.flags = 0;		/* a block layer status */
	assert_false(nt_fo_path_error(&r));
}

/* the retry is the earliest record of the same bio that started after the first one's completion */
static void test_link_and_window(void **state)
{
	struct ntbpf_rec r[] = {
		req(1000000, 800, 1, 0x371, 50000, 50100),	/* 0: aborted on path 1 */
		req(1010000, 800, 0, 0, 30000, 30100),		/* 1: same sector, started before the failover */
		req(1020000, 16, 0, 0, 30000, 30100),		/* 2: another bio */
		req(1060000, 800, 0, 0, 40000, 40500),		/* 3: the retry */
		req(1200000, 800, 0, 0, 40000, 40500),		/* 4: a later read of the same sector */
	};
	struct nt_failover fo;
	struct nt_fo_summary s;

	(void)state;
	nt_fo_init(&fo);
	feed_all(&fo, r, 5);
	assert_int_equal(fo.nlinks, 1);
	assert_int_equal(fo.links[0].first.idx, 0);
	assert_int_equal(fo.links[0].retry.idx, 3);
	nt_fo_summarize(&fo, &s);
	assert_int_equal(s.path_errors, 1);
	assert_int_equal(s.ios, 1);
	assert_int_equal(s.retries, 1);
	assert_int_equal(s.unretried, 0);
	/* from the first's start (1000000) to the retry's end (1060000 + 40500) */
	assert_float_equal(s.e2e_max_us, 100.5, 1e-9);
	assert_float_equal(s.e2e_p50_us, 100.5, 1e-9);
	nt_fo_free(&fo);
}

/* the retry's record came first in the file (another CPU's ring drained first) */
static void test_retry_before_in_file(void **state)
{
	struct ntbpf_rec r[] = {
		req(1060000, 800, 0, 0, 40000, 40500),		/* the retry */
		req(1000000, 800, 1, 0x371, 50000, 50100),	/* the aborted request */
	};
	struct nt_failover fo;

	(void)state;
	nt_fo_init(&fo);
	feed_all(&fo, r, 2);
	assert_int_equal(fo.nlinks, 1);
	assert_int_equal(fo.links[0].first.idx, 1);
	assert_int_equal(fo.links[0].retry.idx, 0);
	nt_fo_free(&fo);
}

/* a retry that failed again, then a third try: one I/O, end_to_end over the chain; a path error without a retry */
static void test_chain_and_unretried(void **state)
{
	struct ntbpf_rec r[] = {
		req(1000000, 800, 1, 0x371, 50000, 50100),	/* 0 */
		req(1060000, 800, 2, 0x370, 10000, 10100),	/* 1: its retry, failed again */
		req(1080000, 800, 0, 0, 20000, 20000),		/* 2: the third try: ends at 1100000 */
		req(1090000, 64, 1, 0x371, 10000, 10100),	/* 3: no retry among the records */
	};
	struct nt_failover fo;
	struct nt_fo_summary s;

	(void)state;
	nt_fo_init(&fo);
	feed_all(&fo, r, 4);
	assert_int_equal(fo.nlinks, 2);
	nt_fo_summarize(&fo, &s);
	assert_int_equal(s.path_errors, 3);
	assert_int_equal(s.retries, 2);
	assert_int_equal(s.ios, 1);
	assert_int_equal(s.unretried, 1);
	assert_float_equal(s.e2e_max_us, 100.0, 1e-9);
	nt_fo_free(&fo);
}

/* beyond NT_FO_WINDOW records: no link (and memory stays bounded) */
static void test_window_bound(void **state)
{
	struct nt_failover fo;
	struct ntbpf_rec f = req(1000000, 800, 1, 0x371, 50000, 50100), o, late;

	(void)state;
	nt_fo_init(&fo);
	assert_int_equal(nt_fo_feed(&fo, &f, 7, 0), 0);
	for (uint64_t i = 1; i <= NT_FO_WINDOW + 256; i++) {	/* the window's end is checked every 256 */
		o = req(2000000 + i * 1000, 100000 + i * 8, 0, 0, 500, 600);
		assert_int_equal(nt_fo_feed(&fo, &o, 7, i), 0);
	}
	assert_int_equal(fo.nopen, 0);
	late = req(9000000, 800, 0, 0, 500, 600);
	assert_int_equal(nt_fo_feed(&fo, &late, 7, NT_FO_WINDOW + 257), 0);
	assert_int_equal(nt_fo_finish(&fo), 0);
	assert_int_equal(fo.nlinks, 0);
	assert_int_equal(fo.unretried, 1);
	nt_fo_free(&fo);
}

/*
 * A hostile file: every record a path error of one bio, each the retry of the
 * one before: the work is bounded (NT_FO_BUDGET comparisons, then no more
 * links), every path error still counted, the links made one chain.
 */
static void test_hostile_chain(void **state)
{
	struct nt_failover fo;
	struct nt_fo_summary s;
	enum { M = 200000 };

	(void)state;
	nt_fo_init(&fo);
	for (uint64_t i = 0; i < M; i++) {
		struct ntbpf_rec r = req(1000000 + i * 1000, 800, (uint16_t)(i & 1), 0x371, 500, 600);

		assert_int_equal(nt_fo_feed(&fo, &r, 7, i), 0);
	}
	assert_int_equal(nt_fo_finish(&fo), 0);
	nt_fo_summarize(&fo, &s);
	assert_int_equal(s.path_errors, M);
	assert_true(s.retries >= NT_FO_OPEN && s.retries < M);
	assert_int_equal(s.ios, 1);
	assert_int_equal(s.retries + s.unretried, M);
	assert_true(fo.work <= NT_FO_BUDGET + NT_FO_OPEN);
	nt_fo_free(&fo);
}

/* a header with controllers nvme0 and nvme1 of one subsystem and host (multipath), and nvme2 of another */
static void mp_header(struct nt_header *h)
{
	static const char *const sub[] = { "nqn.x:lab", "nqn.x:lab", "nqn.x:other" };

	nt_header_init(h, NTBPF_ROLE_INITIATOR);
	snprintf(h->hostname, sizeof(h->hostname), "ini");
	snprintf(h->boot_id, sizeof(h->boot_id), "b");
	h->mono_ns = 1000000000ull;
	h->real_ns = 1700000000000000000ull;
	h->sample = 1;
	h->ndevs = 2;
	snprintf(h->devs[0], sizeof(h->devs[0]), "nvme0n1=259:0");
	snprintf(h->devs[1], sizeof(h->devs[1]), "nvme2n1=259:5");
	for (int i = 0; i < 3; i++) {
		struct nt_ctrl_info *c = nt_header_add_ctrl(h);

		assert_non_null(c);
		c->instance = i;
		c->cntlid = (uint16_t)(i + 1);
		snprintf(c->subsysnqn, sizeof(c->subsysnqn), "%s", sub[i]);
		snprintf(c->hostnqn, sizeof(c->hostnqn), "nqn.x:host");
		if (i == 2) {	/* multipath off for it: its disk is its own */
			c->nns = 1;
			c->ns[0].dev = 259 << 20 | 5;
			c->ns[0].nsid = 1;
		}
	}
}

static void test_path_names(void **state)
{
	struct nt_mpath mp = { 0 };
	struct nt_header h;
	char buf[64];

	(void)state;
	mp_header(&h);
	assert_true(nt_mpath_of(&mp, &h));
	assert_int_equal(nt_path_of(&mp, &h, 259 << 20 | 0, 0), 1);
	assert_int_equal(nt_path_of(&mp, &h, 259 << 20 | 0, 1), 2);
	assert_int_equal(nt_path_of(&mp, &h, 259 << 20 | 5, 2), 0);	/* its own disk, and nvme2 shares with none */
	assert_int_equal(nt_path_of(&mp, &h, 259 << 20 | 0, 9), 0);	/* no such controller */
	nt_path_name("nvme0n1", 2, buf, sizeof(buf));
	assert_string_equal(buf, "nvme0c1n1");
	nt_path_name("259:0", 1, buf, sizeof(buf));
	assert_string_equal(buf, "259:0:c0");
	nt_header_free(&h);
	nt_mpath_free(&mp);
	/* one controller of the subsystem: no path named */
	mp_header(&h);
	snprintf(h.ctrls[1].subsysnqn, sizeof(h.ctrls[1].subsysnqn), "nqn.x:third");
	assert_false(nt_mpath_of(&mp, &h));
	assert_int_equal(nt_path_of(&mp, &h, 259 << 20 | 0, 0), 0);
	nt_header_free(&h);
	nt_mpath_free(&mp);
}

/* "ntbpf CMD ARGS..." in dir as main() runs it: stdout (malloc'd) */
static char *run_cli(const char *dir, const char *cmd, const char *args)
{
	char line[512], *argv[32], *save, *out = NULL, cwd[4096];
	int argc = 0, rc;
	size_t olen = 0;
	struct nt_config cfg;
	FILE *o, *e = fopen("/dev/null", "w");

	snprintf(line, sizeof(line), "ntbpf %s %s", cmd, args);
	for (char *t = strtok_r(line, " ", &save); t && argc < 31; t = strtok_r(NULL, " ", &save))
		argv[argc++] = t;
	argv[argc] = NULL;
	assert_non_null(getcwd(cwd, sizeof(cwd)));
	assert_int_equal(chdir(dir), 0);
	assert_int_equal(nt_cli_parse(argc, argv, &cfg, e), 0);
	o = open_memstream(&out, &olen);
	rc = strcmp(cmd, "report") ? nt_script_cmd(&cfg, o, e) : nt_report_cmd(&cfg, o, e);
	assert_int_equal(rc, 0);
	nt_config_free(&cfg);
	fclose(o);
	fclose(e);
	assert_int_equal(chdir(cwd), 0);
	return out;
}

static int count_of(const char *s, const char *what)
{
	int n = 0;

	for (const char *p = s; (p = strstr(p, what)); p += strlen(what))
		n++;
	return n;
}

/* report and script on an initiator file: reads round-robin on two paths, path 1 drops three */
static void test_report_and_script(void **state)
{
	char dir[] = "/tmp/ntbpf-fo-XXXXXX", path[256], *out;
	struct nt_header h;
	struct nt_trailer t = { 0 };
	struct nt_writer *w;
	FILE *f;
	int n = 0;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/i.ntbpf", dir);
	f = fopen(path, "wb");
	assert_non_null(f);
	mp_header(&h);
	w = nt_writer_open(f, &h);
	assert_non_null(w);
	for (int i = 0; i < 40; i++) {
		uint64_t t0 = 2000000000ull + (uint64_t)i * 100000;
		struct ntbpf_rec r = req(t0, (uint64_t)i * 8, (uint16_t)(i & 1), 0, 50000, 51000);

		r.cid = (uint16_t)i;
		if (i >= 35 && (i & 1)) {	/* 35, 37, 39 on nvme1: aborted, retried on nvme0 */
			struct ntbpf_rec re = req(t0 + 70000, (uint64_t)i * 8, 0, 0, 40000, 41000);

			r.status = 0x371;
			r.ev[EV_I_NVME_DONE] = 60000;
			r.ev[EV_I_BLK_DONE] = 60100;
			assert_int_equal(nt_writer_add(w, &r), 0);
			re.cid = (uint16_t)(100 + i);
			assert_int_equal(nt_writer_add(w, &re), 0);
			n += 2;
			continue;
		}
		assert_int_equal(nt_writer_add(w, &r), 0);
		n++;
	}
	t.records = (uint64_t)n;
	t.stats[ST_EMITTED] = (uint64_t)n;
	assert_int_equal(nt_writer_close(w, &t), 0);
	fclose(f);
	nt_header_free(&h);

	out = run_cli(dir, "report", "--group-by dev i.ntbpf");
	if (getenv("FO_DEBUG"))
		fputs(out, stderr);
	assert_non_null(strstr(out, "group: op=all size=all dev=nvme0c0n1 I/Os=23 "));
	assert_non_null(strstr(out, "group: op=all size=all dev=nvme0c1n1 I/Os=17 "));
	assert_non_null(strstr(out, "group: op=all size=all dev=nvme0c1n1 status=0x0371 (command aborted by host) I/Os=3 "));
	/* from the first start to the retry's end: 70 + 41 us */
	assert_non_null(strstr(out, "# failed over: 3 requests ended in a path error (status= groups); 3 I/Os retried on "
				    "another path (3 retry requests), end_to_end including the retry avg 111.00 us, p50 "
				    "111.00, p99 111.00, max 111.00\n"));
	free(out);
	out = run_cli(dir, "report", "--format json i.ntbpf");
	assert_non_null(strstr(out, "\"failover\": {\"path_errors\": 3, \"ios\": 3, \"retries\": 3, \"unretried\": 0, "
				    "\"end_to_end_us\": {\"avg\": 111.000, \"p50\": 111.000, \"p99\": 111.000, \"max\": 111.000}}"));
	free(out);
	out = run_cli(dir, "script", "i.ntbpf");
	assert_non_null(strstr(out, ",hostnqn,subsysnqn,nsid,retry\n"));
	assert_int_equal(count_of(out, ",failed_over:"), 3);
	assert_int_equal(count_of(out, ",retry_of:"), 3);
	for (int k = 1; k <= 3; k++) {
		char a[32], b[32], *pa, *pb, *la, *lb;

		snprintf(a, sizeof(a), ",failed_over:%d\n", k);
		snprintf(b, sizeof(b), ",retry_of:%d\n", k);
		pa = strstr(out, a);
		pb = strstr(out, b);
		assert_non_null(pa);
		assert_non_null(pb);
		/* the same LBA, the first on nvme0c1n1 with its status, the retry on nvme0c0n1 */
		for (la = pa; la > out && la[-1] != '\n'; la--)
			;
		for (lb = pb; lb > out && lb[-1] != '\n'; lb--)
			;
		assert_non_null(strstr(la, ",nvme0c1n1,read,4096,"));
		assert_true(strstr(la, ",nvme0c1n1,read,4096,") < pa);
		assert_true(strstr(lb, ",nvme0c0n1,read,4096,") < pb);
		assert_true(strstr(la, ",0x0371,") < pa);
		assert_int_equal(strtoull(strstr(la, ",4096,") + 6, NULL, 10), strtoull(strstr(lb, ",4096,") + 6, NULL, 10));
	}
	free(out);
	out = run_cli(dir, "script", "--format json i.ntbpf");
	assert_int_equal(count_of(out, "\"retry\": \"failed_over:"), 3);
	assert_int_equal(count_of(out, "\"retry\": null"), 40 - 3);
	free(out);
	unlink(path);
	rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_path_error_kinds),
		cmocka_unit_test(test_link_and_window),
		cmocka_unit_test(test_retry_before_in_file),
		cmocka_unit_test(test_chain_and_unretried),
		cmocka_unit_test(test_window_bound),
		cmocka_unit_test(test_hostile_chain),
		cmocka_unit_test(test_path_names),
		cmocka_unit_test(test_report_and_script),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
