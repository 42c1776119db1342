// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * ntbpf report against crafted record files (issue 9): memory that follows
 * the file's size, controllers looked up by hash, strings from files escaped
 * for the terminal, JSON and CSV, a directory named as one, and damage that
 * costs only what follows it.  Each case failed on the code before its fix.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>
#include <zlib.h>
#include "cli.h"
#include "escape.h"
#include "report.h"

static char tmpdir[] = "/tmp/ntbpf-hostile-XXXXXX";

static int setup(void **state)
{
	return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", tmpdir);
	return system(cmd);
}

static const char *path_of(const char *name)
{
	static char buf[4][256];
	static int k;

	k = (k + 1) % 4;
	snprintf(buf[k], sizeof(buf[k]), "%s/%s", tmpdir, name);
	return buf[k];
}

/* ntbpf report FILE... into out/err (malloc'ed, NUL-terminated); the exit status */
static int report(const char *const *files, int n, enum nt_format fmt, char **out, char **err)
{
	struct nt_config cfg = { .cmd = NT_CMD_REPORT, .npcts = 2, .pcts = { 50, 99 }, .format = fmt,
				 .group_by = NT_GB_OP | NT_GB_SIZE | NT_GB_DEV };
	size_t ol, el;
	FILE *o = open_memstream(out, &ol), *e = open_memstream(err, &el);
	int rc;

	cfg.files = (const char **)files;
	cfg.nfiles = n;
	rc = nt_report_cmd(&cfg, o, e);
	fclose(o);
	fclose(e);
	return rc;
}

static size_t lines(const char *s)
{
	size_t n = 0;

	for (; *s; s++)
		n += *s == '\n';
	return n;
}

static void le32(uint8_t *p, uint32_t v)
{
	p[0] = v;
	p[1] = v >> 8;
	p[2] = v >> 16;
	p[3] = v >> 24;
}

/* ---- memory follows the file's size ---- */

/*
 * A header, then chunks of nrec records whose every column is constant:
 * b = 0 everywhere, so no bits at all.  Each chunk is ~50 bytes.
 */
static size_t constant_file(const char *path, uint32_t nrec, int nchunks)
{
	struct nt_header h;
	struct nt_writer *w;
	uint8_t raw[8 + 3 * 64], comp[512], hd[20];
	uLongf clen = sizeof(comp);
	uint32_t ncols = 16 + NTBPF_MAX_EV;
	char *hbuf;
	size_t hlen, mlen;
	FILE *m = open_memstream(&hbuf, &mlen), *f;
	long size;

	/* the header as the writer writes it */
	nt_header_init(&h, NTBPF_ROLE_INITIATOR);
	w = nt_writer_open(m, &h);
	assert_non_null(w);
	nt_header_free(&h);
	assert_int_equal(fflush(m), 0);
	hlen = mlen;
	assert_int_equal(nt_writer_close(w, NULL), 0);
	fclose(m);
	f = fopen(path, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(hbuf, 1, hlen, f), hlen);
	free(hbuf);
	memset(raw, 0, sizeof(raw));
	le32(raw, nrec);
	le32(raw + 4, ncols);	/* then ncols descriptors: b 0, base 0, no exceptions */
	assert_int_equal(compress2(comp, &clen, raw, 8 + 3 * ncols, 9), Z_OK);
	memcpy(hd, "CHNK", 4);
	le32(hd + 4, nrec);
	le32(hd + 8, 8 + 3 * ncols);
	le32(hd + 12, clen);
	le32(hd + 16, crc32(0, comp, clen));
	for (int i = 0; i < nchunks; i++) {
		assert_int_equal(fwrite(hd, 1, sizeof(hd), f), sizeof(hd));
		assert_int_equal(fwrite(comp, 1, clen, f), clen);
	}
	size = ftell(f);
	fclose(f);	/* no trailer: a cut recording */
	return size;
}

static void test_constant_columns_bounded(void **state)
{
	static const uint32_t nrecs[] = { NT_CHUNK_RECS, 1u << 20 };

	for (size_t t = 0; t < 2; t++) {
		const char *p = path_of("constant.ntbpf");
		size_t size = constant_file(p, nrecs[t], 8), n = 0, got;
		const struct ntbpf_rec *r;
		struct nt_header h;
		struct nt_reader *rd;
		char err[256], *out, *eout;
		FILE *f = fopen(p, "rb");

		rd = nt_reader_open(f, &h, err, sizeof(err));
		assert_non_null(rd);
		while ((got = nt_reader_chunk(rd, &r)))
			n += got;
		/* the old reader: 8 x 4096 (or 8 x 2^20) records out of < 1 KB */
		assert_true(n <= 16 * size);
		assert_int_equal(nt_reader_status(rd, err, sizeof(err)), NT_READ_CORRUPT);
		assert_non_null(strstr(err, "bad sizes"));
		nt_reader_close(rd);
		nt_header_free(&h);
		fclose(f);

		/* report: one warning line naming the file and the cause, status 1 */
		assert_int_equal(report(&p, 1, NT_FMT_TEXT, &out, &eout), 1);
		assert_non_null(strstr(eout, p));
		assert_non_null(strstr(eout, "bad sizes"));
		assert_int_equal(lines(eout), 1);
		assert_non_null(strstr(out, ", 0 records, corrupt"));
		free(out);
		free(eout);
	}
}

/* ---- tens of thousands of controllers ---- */

#define NCTRL 60000

static void many_ctrl_files(const char *ipath, const char *tpath)
{
	struct nt_header h;
	struct nt_writer *w;
	FILE *f;

	for (int side = 0; side < 2; side++) {
		uint8_t role = side ? NTBPF_ROLE_TARGET : NTBPF_ROLE_INITIATOR;

		nt_header_init(&h, role);
		for (int i = 0; i < NCTRL; i++) {
			struct nt_ctrl_info *c = nt_header_add_ctrl(&h);

			assert_non_null(c);
			c->instance = side ? -1 : i;
			c->cntlid = i + 1;
			snprintf(c->transport, sizeof(c->transport), "tcp");
		}
		f = fopen(side ? tpath : ipath, "wb");
		assert_non_null(f);
		w = nt_writer_open(f, &h);
		assert_non_null(w);
		nt_header_free(&h);
		for (int i = 0; i < NCTRL; i++) {
			struct ntbpf_rec r = { 0 };

			r.t0 = 1000000000ull + (uint64_t)i * 10000;
			r.role = role;
			r.flags = NTBPF_F_NVME;
			r.op = NTBPF_OP_READ;
			r.bytes = 4096;
			r.ctrl = side ? i + 1 : i;	/* target: the cntlid; initiator: the instance */
			r.qid = 1;
			r.cid = i & 0x3ff;
			r.ev_mask = 1u << 0 | 1u << 1;
			r.ev[1] = 5000;
			assert_int_equal(nt_writer_add(w, &r), 0);
		}
		assert_int_equal(nt_writer_close(w, NULL), 0);
		fclose(f);
	}
}

static double cpu_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void test_many_controllers(void **state)
{
	const char *files[2] = { path_of("ctrl-init.ntbpf"), path_of("ctrl-tgt.ntbpf") };
	char *out, *err;
	double t;

	many_ctrl_files(files[0], files[1]);
	t = cpu_now();
	assert_int_equal(report(files, 2, NT_FMT_JSON, &out, &err), 0);
	t = cpu_now() - t;
	/*
	 * Before: a linear search of the controllers per record and a
	 * controllers x controllers scan, ~7 G steps here (minutes); by hash
	 * ~0.3 s of CPU on the development VM.
	 */
	printf("report of %d controllers, %d I/Os per host: %.2f s CPU\n", NCTRL, NCTRL, t);
	assert_true(t < 4.0);
	assert_non_null(strstr(out, "\"no_cntlid\": 0,"));
	assert_non_null(strstr(out, "\"matched\": 60000,"));
	free(out);
	free(err);
}

/* block-layer read i of 4 KiB on dev, 100 us after the one before, done 20 us + done_extra ns after its start */
static struct ntbpf_rec blk_read(int i, uint32_t dev, uint32_t done_extra)
{
	struct ntbpf_rec r = { 0 };

	r.t0 = 1000000000ull + i * 100000ull;
	r.role = NTBPF_ROLE_INITIATOR;
	r.op = NTBPF_OP_READ;
	r.bytes = 4096;
	r.dev = dev;
	r.ev_mask = (1u << EV_I_BLK_START) | (1u << EV_I_BLK_DONE);
	r.ev[EV_I_BLK_DONE] = 20000 + done_extra;
	return r;
}

/* ---- strings from files ---- */

/* a checker of its own: valid UTF-8 (RFC 3629) */
static bool valid_utf8(const unsigned char *s, size_t n)
{
	for (size_t i = 0; i < n;) {
		unsigned char c = s[i];
		size_t k, len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
		uint32_t v;

		if (!len || i + len > n || (len == 2 && c < 0xc2))
			return false;
		v = len == 1 ? c : c & (0x7f >> len);
		for (k = 1; k < len; k++) {
			if ((s[i + k] & 0xc0) != 0x80)
				return false;
			v = v << 6 | (s[i + k] & 0x3f);
		}
		if ((len == 3 && v < 0x800) || (len == 4 && (v < 0x10000 || v > 0x10ffff)) ||
		    (v >= 0xd800 && v <= 0xdfff))
			return false;
		i += len;
	}
	return true;
}

/* printable: no control byte but the line ends, valid UTF-8, no C1 control, no ESC */
static void assert_printable(const char *s)
{
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		assert_false(*p < 0x20 && *p != '\n');
		assert_false(*p == 0x7f);
		assert_false(p[0] == 0xc2 && p[1] >= 0x80 && p[1] <= 0x9f);
	}
	assert_true(valid_utf8((const unsigned char *)s, strlen(s)));
}

/* python3, if there: the exit status of a script reading s on stdin */
static int python(const char *script, const char *s)
{
	char cmd[1024];
	FILE *p;

	if (system("python3 -c '' 2>/dev/null"))
		return -1;
	snprintf(cmd, sizeof(cmd), "python3 -c '%s'", script);
	p = popen(cmd, "w");
	assert_non_null(p);
	fputs(s, p);
	return pclose(p);
}

static const char evil_host[] = "host\n# matched: 999999; unmatched: initiator 0, target 0\x1b[2J\xc2\x9b" "31m\r";

static void evil_file(const char *path)
{
	struct nt_header h;
	struct nt_hook_info *k;
	struct nt_writer *w;
	FILE *f = fopen(path, "wb");

	assert_non_null(f);
	nt_header_init(&h, NTBPF_ROLE_INITIATOR);
	snprintf(h.hostname, sizeof(h.hostname), "%s", evil_host);
	snprintf(h.kernel, sizeof(h.kernel), "6.1\xff\xfe\xc0\xaf\xed\xa0\x80 \"\\ok\\\" \xe2\x80\xae" "cba");
	snprintf(h.cmdline, sizeof(h.cmdline), "ntbpf record \x1b]0;pwned\x07");
	h.ndevs = 1;
	snprintf(h.devs[0], sizeof(h.devs[0]), "nv,me\"0\x1b[1m\xff=259:0");
	k = nt_header_add_hook(&h);
	snprintf(k->name, sizeof(k->name), "nvme_tcp:\x1b[31mred");
	snprintf(k->status, sizeof(k->status), "not\nattached\x7f");
	snprintf(k->boundary, sizeof(k->boundary), "\xf0\x9f\x98\x80 ok, \xf4\x90\x80\x80");
	w = nt_writer_open(f, &h);
	assert_non_null(w);
	nt_header_free(&h);
	for (int i = 0; i < 50; i++) {
		struct ntbpf_rec r = blk_read(i, 259u << 20, i);

		assert_int_equal(nt_writer_add(w, &r), 0);
	}
	assert_int_equal(nt_writer_close(w, NULL), 0);
	fclose(f);
}

static void test_strings_escaped(void **state)
{
	const char *p = path_of("evil.ntbpf");
	char *out, *err;
	int rc;

	evil_file(p);
	/* text: one line per line, nothing for the terminal to act on */
	assert_int_equal(report(&p, 1, NT_FMT_TEXT, &out, &err), 0);
	assert_printable(out);
	assert_null(strstr(out, "\n# matched: 999999"));
	assert_non_null(strstr(out, "on host\\x0a# matched: 999999; unmatched: initiator 0, target 0\\x1b[2J\\xc2\\x9b31m\\x0d, kernel 6.1\\xff\\xfe"));
	assert_non_null(strstr(out, "\\xe2\\x80\\xaecba"));	/* a right-to-left override, shown as bytes */
	assert_non_null(strstr(out, "hook nvme_tcp:\\x1b[31mred not attached (not\\x0aattached\\x7f); \xf0\x9f\x98\x80 ok, \\xf4\\x90\\x80\\x80\n"));
	assert_non_null(strstr(out, "dev=nv,me\"0\\x1b[1m\\xff I/Os=50"));
	free(out);
	free(err);

	/* JSON: valid UTF-8, parses, and holds the hostname as it was (JSON can carry it) */
	assert_int_equal(report(&p, 1, NT_FMT_JSON, &out, &err), 0);
	assert_true(valid_utf8((const unsigned char *)out, strlen(out)));
	rc = python("import json,sys; d=json.load(sys.stdin); "
		    "assert d[\"inputs\"][0][\"hostname\"].startswith(\"host\\n# matched: 999999\"), d; "
		    "assert d[\"groups\"][0][\"device\"] == \"nv,me\\\"0\\x1b[1m\\ufffd\", d", out);
	if (rc >= 0)
		assert_int_equal(rc, 0);
	free(out);
	free(err);

	/* CSV: valid UTF-8, printable, every row as many fields as the header */
	assert_int_equal(report(&p, 1, NT_FMT_CSV, &out, &err), 0);
	assert_printable(out);
	assert_non_null(strstr(out, "read,4096,\"nv,me\"\"0\\x1b[1m\\xff\",-,50,"));
	rc = python("import csv,sys; rows=list(csv.reader(sys.stdin)); "
		    "assert len(rows) > 1 and all(len(r) == len(rows[0]) for r in rows), rows; "
		    "assert rows[1][2] == \"nv,me\\\"0\\\\x1b[1m\\\\xff\", rows[1]", out);
	if (rc >= 0)
		assert_int_equal(rc, 0);
	free(out);
	free(err);
}

/* live's interval line names the peer, whose state may carry its hostname */
static void test_peer_escaped(void **state)
{
	struct nt_report_opts o = { .npcts = 1, .pcts = { 50 }, .format = NT_FMT_JSON };
	struct nt_interval_info info = { .peer = "connected to evil\n\x1b[2J\"\xff" };
	struct nt_report rep;
	char *out;
	size_t len;
	FILE *f;

	nt_report_begin(&rep, NULL, 0, &o);
	nt_report_finish(&rep);
	for (int fmt = 0; fmt < 2; fmt++) {
		o.format = fmt ? NT_FMT_JSON : NT_FMT_TEXT;
		f = open_memstream(&out, &len);
		nt_report_print_interval(f, &rep, "12:00:00", 1.0, &info);
		fclose(f);
		assert_printable(out);
		assert_int_equal(lines(out), fmt ? 1 : 2);	/* text: the line, then an empty one */
		assert_non_null(strstr(out, fmt ? "\"peer\": \"connected to evil\\u000a\\u001b[2J\\\"\\ufffd\""
						: "peer connected to evil\\x0a\\x1b[2J\"\\xff:"));
		free(out);
	}
	nt_report_free(&rep);
}

static void test_escape_functions(void **state)
{
	char buf[16];

	/* cut at a character, never inside an escape or a UTF-8 sequence */
	assert_string_equal(nt_esc_term(buf, sizeof(buf), "abc\x1b" "defghijklmn"), "abc\\x1bdefghijk");
	assert_string_equal(nt_esc_term(buf, 8, "ab\xc3\xa9\xc3\xa9\xc3\xa9"), "ab\xc3\xa9\xc3\xa9");
	assert_string_equal(nt_esc_term(buf, 6, "a\\b\x01"), "a\\\\b");
	assert_string_equal(nt_esc_term(buf, sizeof(buf), "\xe0\x80\x80"), "\\xe0\\x80\\x80");	/* overlong */
}

/* ---- a directory, damage, many files ---- */

static void test_directory(void **state)
{
	const char *d = tmpdir;
	char *out, *err;

	assert_int_equal(report(&d, 1, NT_FMT_TEXT, &out, &err), 1);
	assert_non_null(strstr(err, "is a directory"));
	assert_null(strstr(err, "empty"));
	assert_int_equal(lines(err), 1);
	free(out);
	free(err);
}

/* three chunks, a trailer; the second chunk's compressed bytes damaged */
static void test_damage_keeps_what_precedes(void **state)
{
	const char *p = path_of("damaged.ntbpf");
	struct nt_header h;
	struct nt_writer *w;
	char *out, *err, *buf;
	size_t len, at = 0;
	int chunk = 0;
	FILE *f = open_memstream(&buf, &len);

	nt_header_init(&h, NTBPF_ROLE_INITIATOR);
	w = nt_writer_open(f, &h);
	nt_header_free(&h);
	for (int i = 0; i < 300; i++) {
		struct ntbpf_rec r = blk_read(i, 7u << 20, i * 7);

		assert_int_equal(nt_writer_add(w, &r), 0);
		if (i % 100 == 99)
			assert_int_equal(nt_writer_flush(w), 0);
	}
	assert_int_equal(nt_writer_close(w, NULL), 0);
	fclose(f);
	for (size_t i = 0; i + 4 <= len; i++)
		if (!memcmp(buf + i, "CHNK", 4) && ++chunk == 2)
			at = i;
	assert_true(at > 0);
	buf[at + 30] ^= 0x40;
	f = fopen(p, "wb");
	fwrite(buf, 1, len, f);
	fclose(f);
	free(buf);

	assert_int_equal(report(&p, 1, NT_FMT_TEXT, &out, &err), 1);
	assert_int_equal(lines(err), 1);
	assert_non_null(strstr(err, p));
	assert_non_null(strstr(err, "CRC mismatch"));
	assert_non_null(strstr(out, ", 100 records, corrupt after 100 records"));
	assert_non_null(strstr(out, "I/Os=100"));
	free(out);
	free(err);
}

static void test_many_files(void **state)
{
	enum { N = 150 };
	static char names[N][64];
	const char *files[N];
	char *argv[N + 3], *out, *err;
	struct nt_config cfg;

	for (int i = 0; i < N; i++) {
		struct nt_header h;
		struct nt_writer *w;
		struct ntbpf_rec r = blk_read(0, 7u << 20, 0);
		FILE *f;

		snprintf(names[i], sizeof(names[i]), "%s", path_of("many-XXX.ntbpf"));
		snprintf(strstr(names[i], "XXX"), 16, "%03d.ntbpf", i);
		files[i] = names[i];
		f = fopen(files[i], "wb");
		assert_non_null(f);
		nt_header_init(&h, NTBPF_ROLE_INITIATOR);
		w = nt_writer_open(f, &h);
		nt_header_free(&h);
		r.t0 += i;
		assert_int_equal(nt_writer_add(w, &r), 0);
		assert_int_equal(nt_writer_close(w, NULL), 0);
		fclose(f);
	}
	/* the command line takes them all (it stopped at 64) */
	argv[0] = "ntbpf";
	argv[1] = "report";
	for (int i = 0; i < N; i++)
		argv[2 + i] = names[i];
	argv[N + 2] = NULL;
	assert_int_equal(nt_cli_parse(N + 2, argv, &cfg, stderr), 0);
	assert_int_equal(cfg.nfiles, N);
	assert_string_equal(cfg.files[N - 1], names[N - 1]);
	nt_config_free(&cfg);
	assert_int_equal(report(files, N, NT_FMT_TEXT, &out, &err), 0);
	assert_non_null(strstr(out, "I/Os=150"));
	free(out);
	free(err);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_constant_columns_bounded),
		cmocka_unit_test(test_many_controllers),
		cmocka_unit_test(test_strings_escaped),
		cmocka_unit_test(test_peer_escaped),
		cmocka_unit_test(test_escape_functions),
		cmocka_unit_test(test_directory),
		cmocka_unit_test(test_damage_keeps_what_precedes),
		cmocka_unit_test(test_many_files),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
