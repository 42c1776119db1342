// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Report rendering against golden files (tests/unit/golden/), and the exit
 * status of "ntbpf report" on good, cut and unreadable files.
 * NTBPF_UPDATE_GOLDEN=1 rewrites the golden files (review the diff!).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "report.h"

static const char *datadir(void)
{
	const char *d = getenv("NTBPF_TESTDATA");

	return d ? d : "tests/unit";
}

/* a deterministic initiator recording: reads and writes on nvme0n1 and loop0 */
static void make_init_file(FILE *f, size_t nrec, bool trailer)
{
	struct nt_header h;
	struct nt_hook_info *hk;
	struct nt_writer *w;
	struct nt_trailer t = { 0 };
	uint64_t x = 88172645463325252ull;

	nt_header_init(&h, NTBPF_ROLE_INITIATOR);
	snprintf(h.hostname, sizeof(h.hostname), "init-host");
	snprintf(h.kernel, sizeof(h.kernel), "6.12.0-test");
	snprintf(h.ntbpf_version, sizeof(h.ntbpf_version), "test");
	h.sample = 1;
	h.ndevs = 2;
	snprintf(h.devs[0], sizeof(h.devs[0]), "nvme0n1=259:0");
	snprintf(h.devs[1], sizeof(h.devs[1]), "loop0=7:0");
	hk = nt_header_add_hook(&h);
	snprintf(hk->name, sizeof(hk->name), "block:block_rq_issue");
	snprintf(hk->attach, sizeof(hk->attach), "tp_btf");
	snprintf(hk->status, sizeof(hk->status), "attached");
	snprintf(hk->boundary, sizeof(hk->boundary), "blk_issue");
	hk = nt_header_add_hook(&h);
	snprintf(hk->name, sizeof(hk->name), "nvme_tcp:nvme_tcp_try_send_cmd_pdu");
	snprintf(hk->status, sizeof(hk->status), "function inlined on this kernel");
	snprintf(hk->boundary, sizeof(hk->boundary), "cmd_sent taken at nvme_tcp_try_send");
	w = nt_writer_open(f, &h);
	assert_non_null(w);
	for (size_t i = 0; i < nrec; i++) {
		struct ntbpf_rec r = { 0 };

		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		r.t0 = 1000000000ull + i * 100000;
		r.role = NTBPF_ROLE_INITIATOR;
		r.op = (i % 4 == 3) ? NTBPF_OP_WRITE : NTBPF_OP_READ;
		r.bytes = (i % 4 == 3) ? 131072 : 4096;
		r.dev = (i % 5 == 0) ? (7u << 20) : (259u << 20);
		r.ev_mask = (1u << EV_I_BLK_START) | (1u << EV_I_BLK_ISSUE) | (1u << EV_I_BLK_DONE);
		r.ev[EV_I_BLK_ISSUE] = 200 + (uint32_t)(x % 300);
		r.ev[EV_I_BLK_DONE] = r.ev[EV_I_BLK_ISSUE] + 20000 + (uint32_t)(x % 80000);
		if (i % 97 == 0)
			r.ev[EV_I_BLK_DONE] += 2000000;	/* a tail */
		assert_int_equal(nt_writer_add(w, &r), 0);
		if (i == nrec / 2)
			assert_int_equal(nt_writer_flush(w), 0);
	}
	t.records = nrec;
	t.stats[ST_EMITTED] = nrec;
	t.stats[ST_LOST_RINGBUF] = 3;
	t.stats[ST_NO_START] = 2;
	if (trailer) {
		assert_int_equal(nt_writer_close(w, &t), 0);
	} else {
		/* a recording killed after a flush: cut the file where the flush left it */
		long pos;

		assert_int_equal(nt_writer_flush(w), 0);
		pos = ftell(f);
		assert_int_equal(nt_writer_close(w, &t), 0);
		fflush(f);
		assert_int_equal(ftruncate(fileno(f), pos), 0);
		fseek(f, pos, SEEK_SET);
	}
	nt_header_free(&h);
}

static char *render(enum nt_format fmt, size_t nrec)
{
	char *fbuf = NULL, *out = NULL, err[256];
	size_t flen = 0, olen = 0;
	FILE *f = open_memstream(&fbuf, &flen), *o;
	struct nt_input in;
	struct nt_report rep;
	struct nt_report_opts opts = { .version = "test", .npcts = 3, .pcts = { 50, 99, 99.9 }, .format = fmt,
				       .group_by = NT_GB_OP | NT_GB_SIZE | NT_GB_DEV };

	make_init_file(f, nrec, true);
	fclose(f);
	f = fmemopen(fbuf, flen, "rb");
	assert_int_equal(nt_input_load_stream(&in, f, "init.ntbpf", err, sizeof(err)), 0);
	assert_int_equal(in.status, NT_READ_OK);
	assert_int_equal(in.n, nrec);
	assert_int_equal(nt_report_build(&rep, &in, 1, &opts), 0);
	o = open_memstream(&out, &olen);
	nt_report_print(o, &rep);
	fclose(o);
	nt_report_free(&rep);
	nt_input_free(&in);
	fclose(f);
	free(fbuf);
	return out;
}

static void check_golden(const char *name, const char *got)
{
	char path[512], *want;
	FILE *f;
	long len;

	snprintf(path, sizeof(path), "%s/golden/%s", datadir(), name);
	if (getenv("NTBPF_UPDATE_GOLDEN")) {
		f = fopen(path, "w");
		assert_non_null(f);
		fputs(got, f);
		fclose(f);
	}
	f = fopen(path, "r");
	assert_non_null(f);
	fseek(f, 0, SEEK_END);
	len = ftell(f);
	rewind(f);
	want = calloc(1, len + 1);
	assert_int_equal(fread(want, 1, len, f), (size_t)len);
	fclose(f);
	if (strcmp(want, got))
		fprintf(stderr, "golden %s differs; got:\n%s\n", name, got);
	assert_string_equal(want, got);
	free(want);
}

static void test_golden_text(void **state)
{
	char *s = render(NT_FMT_TEXT, 2000);

	check_golden("report.txt", s);
	free(s);
}

static void test_golden_json(void **state)
{
	char *s = render(NT_FMT_JSON, 2000);

	check_golden("report.json", s);
	free(s);
}

static void test_golden_csv(void **state)
{
	char *s = render(NT_FMT_CSV, 2000);

	check_golden("report.csv", s);
	free(s);
}

/* the numbers themselves, independent of the golden files */
static void test_values(void **state)
{
	char *s = render(NT_FMT_CSV, 2000), *line;
	int n = 0;

	/* 2000 I/Os: i%5==0 on loop0 (400), of those i%4==3 writes (100) */
	line = strstr(s, "write,131072,loop0,-,100,end_to_end,100,");
	assert_non_null(line);
	line = strstr(s, "read,4096,nvme0n1,-,1200,blk_device,1200,");
	assert_non_null(line);
	for (line = s; (line = strchr(line, '\n')); line++)
		n++;
	assert_int_equal(n, 1 + 4 * 3);	/* header + 4 groups x 3 stages */
	free(s);
}

static int run_cmd(const char *file, char *out, size_t outlen, char *err, size_t errlen)
{
	struct nt_config cfg = { .cmd = NT_CMD_REPORT, .nfiles = 1, .npcts = 1, .pcts = { 50 },
				 .group_by = NT_GB_OP };
	FILE *o = fmemopen(out, outlen, "w"), *e = fmemopen(err, errlen, "w");
	int rc;

	memset(out, 0, outlen);
	memset(err, 0, errlen);
	cfg.files[0] = file;
	rc = nt_report_cmd(&cfg, o, e);
	fclose(o);
	fclose(e);
	return rc;
}

static void test_exit_status(void **state)
{
	char path[] = "/tmp/ntbpf-test-XXXXXX", out[16384], err[1024];
	int fd = mkstemp(path);
	FILE *f = fdopen(fd, "wb");

	make_init_file(f, 300, true);
	fclose(f);
	assert_int_equal(run_cmd(path, out, sizeof(out), err, sizeof(err)), 0);
	assert_string_equal(err, "");
	assert_non_null(strstr(out, "# lost records: 3"));

	/* killed after a flush: no trailer; the records are still reported, status says so */
	f = fopen(path, "wb");
	make_init_file(f, 300, false);
	fclose(f);
	assert_int_equal(run_cmd(path, out, sizeof(out), err, sizeof(err)), 1);
	assert_non_null(strstr(err, "warning"));
	assert_null(strchr(strchr(err, '\n') + 1, '\n'));
	assert_non_null(strstr(out, "300 records, "));
	assert_non_null(strstr(out, "I/Os=225"));	/* reads: i % 4 != 3 */

	/* not a record file */
	f = fopen(path, "wb");
	fputs("hello\n", f);
	fclose(f);
	assert_int_equal(run_cmd(path, out, sizeof(out), err, sizeof(err)), 1);
	assert_string_equal(out, "");
	assert_non_null(strstr(err, path));
	unlink(path);

	assert_int_equal(run_cmd("/nonexistent/x.ntbpf", out, sizeof(out), err, sizeof(err)), 1);
	assert_non_null(strstr(err, "cannot open /nonexistent/x.ntbpf"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_golden_text),
		cmocka_unit_test(test_golden_json),
		cmocka_unit_test(test_golden_csv),
		cmocka_unit_test(test_values),
		cmocka_unit_test(test_exit_status),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
