// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * "ntbpf script" as main() runs it (nt_cli_parse, nt_script_cmd) on
 * synthetic two-host files (bench/synth.h): one row per I/O, pairs merged
 * and their stages equal to what the stage code computes from the two
 * records, unmatched I/Os flagged, rows in time order, columns from the
 * stage table, strings from the files escaped, standard input read.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "script.h"
#include "report.h"
#include "testapi.h"
#include "../../bench/synth.h"

enum { N = 20000 };

struct truth {
	struct ntbpf_rec i[N], g[N];
	bool has_i[N], has_g[N];
	size_t both, init_only, tgt_only, failed;
};

static struct truth T;

/* N I/Os; some only on one host, some failed; the target's hostname is hostile */
static void make_files(const char *dir)
{
	struct nt_header h;
	struct nt_writer *w[2];
	struct nt_trailer t = { 0 };
	struct synth s;
	char path[256];
	FILE *f[2];

	for (int k = 0; k < 2; k++) {
		snprintf(path, sizeof(path), "%s/%s", dir, k ? "t.ntbpf" : "i.ntbpf");
		f[k] = fopen(path, "wb");
		assert_non_null(f[k]);
		synth_header(&h, k ? NTBPF_ROLE_TARGET : NTBPF_ROLE_INITIATOR);
		if (k)
			snprintf(h.hostname, sizeof(h.hostname), "tgt,\"x\"\n\x1b[2J");
		w[k] = nt_writer_open(f[k], &h);
		assert_non_null(w[k]);
		nt_header_free(&h);
	}
	memset(&T, 0, sizeof(T));
	synth_init(&s);
	for (size_t k = 0; k < N; k++) {
		synth_pair(&s, k, &T.i[k], &T.g[k]);
		if (k % 97 == 13)
			T.i[k].status = T.g[k].status = 0x0004;
		T.has_i[k] = k % 53 != 9;
		T.has_g[k] = k % 61 != 4;
		if (T.has_i[k])
			assert_int_equal(nt_writer_add(w[0], &T.i[k]), 0);
		if (T.has_g[k])
			assert_int_equal(nt_writer_add(w[1], &T.g[k]), 0);
		T.both += T.has_i[k] && T.has_g[k];
		T.init_only += T.has_i[k] && !T.has_g[k];
		T.tgt_only += !T.has_i[k] && T.has_g[k];
		T.failed += (T.has_i[k] || T.has_g[k]) && T.i[k].status;
	}
	for (int k = 0; k < 2; k++) {
		t.stats[ST_LOST_RINGBUF] = k ? 3 : 0;	/* the target lost 3 */
		assert_int_equal(nt_writer_close(w[k], &t), 0);
		fclose(f[k]);
	}
}

static char *script_cli(const char *dir, const char *args, int *rc, char **errs)
{
	char line[512], *argv[32], *save, *out = NULL, *eb = NULL, cwd[4096];
	size_t olen = 0, elen = 0;
	int argc = 0;
	struct nt_config cfg;
	FILE *o, *e;

	snprintf(line, sizeof(line), "ntbpf script %s", args);
	for (char *t = strtok_r(line, " ", &save); t && argc < 31; t = strtok_r(NULL, " ", &save))
		argv[argc++] = t;
	argv[argc] = NULL;
	assert_non_null(getcwd(cwd, sizeof(cwd)));
	assert_int_equal(chdir(dir), 0);
	e = open_memstream(&eb, &elen);
	assert_int_equal(nt_cli_parse(argc, argv, &cfg, e), 0);
	o = open_memstream(&out, &olen);
	*rc = nt_script_cmd(&cfg, o, e);
	nt_config_free(&cfg);
	fclose(o);
	fclose(e);
	assert_int_equal(chdir(cwd), 0);
	if (errs)
		*errs = eb;
	else
		free(eb);
	return out;
}

static char *scratch(void)
{
	static char dir[64];

	snprintf(dir, sizeof(dir), "/tmp/ntbpf-script-XXXXXX");
	assert_non_null(mkdtemp(dir));
	make_files(dir);
	return dir;
}

static void cleanup(const char *dir)
{
	char path[256];

	snprintf(path, sizeof(path), "%s/i.ntbpf", dir);
	unlink(path);
	snprintf(path, sizeof(path), "%s/t.ntbpf", dir);
	unlink(path);
	rmdir(dir);
}

/* split a CSV line (no quoted field holds a comma here but the host's, handled by the caller) */
static int fields(char *line, char **f, int max)
{
	int n = 0;

	for (char *p = line; n < max;) {
		f[n++] = p;
		if (*p == '"') {	/* quoted: up to the closing quote */
			p = strchr(p + 1, '"');
			while (p && p[1] == '"')
				p = strchr(p + 2, '"');
			assert_non_null(p);
			p++;
		}
		p = strchr(p, ',');
		if (!p)
			break;
		*p++ = '\0';
	}
	return n;
}

static void test_csv_rows(void **state)
{
	char *dir = scratch(), *errs, *out, *line, *save = NULL;
	int rc, nrow = 0, e2e_col = -1, first_stage = 11;
	size_t both = 0, io = 0, to = 0, failed = 0;
	char last[48] = "";

	out = script_cli(dir, "i.ntbpf t.ntbpf", &rc, &errs);
	assert_int_equal(rc, 0);
	/* what the rows cannot show: one line */
	assert_string_equal(errs, "ntbpf script: not in the rows: 3 records lost while recording, 0 I/Os in flight at its"
			    " start or stop, 0 admin commands (ntbpf report says why)\n");
	for (line = strtok_r(out, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *f[64];
		int n = fields(line, f, 64);

		if (!nrow++) {
			/* the header: fixed columns, then one per stage, from the stage table, then the host keys, retry */
			assert_int_equal(n, first_stage + NT_ST_NR + 4);
			assert_string_equal(f[first_stage + NT_ST_NR], "hostnqn");
			assert_string_equal(f[first_stage + NT_ST_NR + 1], "subsysnqn");
			assert_string_equal(f[first_stage + NT_ST_NR + 2], "nsid");
			assert_string_equal(f[first_stage + NT_ST_NR + 3], "retry");
			assert_string_equal(f[0], "time");
			assert_string_equal(f[10], "match");
			for (int s = 0; s < NT_ST_NR; s++) {
				char want[64];

				snprintf(want, sizeof(want), "%s_ns", nt_stage_name(s));
				assert_string_equal(f[first_stage + s], want);
				if (s == NT_ST_E2E)
					e2e_col = first_stage + s;
			}
			continue;
		}
		assert_int_equal(n, first_stage + NT_ST_NR + 4);
		assert_string_equal(f[first_stage + NT_ST_NR + 3], "");	/* no multipath failover here */
		/* time order (RFC 3339 in UTC sorts as text) */
		assert_int_equal(strlen(f[0]), 30);
		assert_true(strcmp(last, f[0]) <= 0);
		snprintf(last, sizeof(last), "%s", f[0]);
		failed += strcmp(f[9], "ok") != 0;
		if (!strcmp(f[10], "both")) {
			/* sector = 8k: the generator's I/O number; the stages as the stage code has them */
			size_t k = strtoull(f[6], NULL, 10) / 8;
			uint64_t vals[NT_ST_NR], sum = 0;
			uint32_t stand_in;
			bool neg;
			uint32_t mask;

			assert_true(k < N && T.has_i[k] && T.has_g[k]);
			mask = nt_stages_compute(&T.i[k], &T.g[k], vals, &stand_in, &neg);
			for (int s = 0; s < NT_ST_NR; s++) {
				if (mask & (1u << s))
					assert_int_equal(strtoull(f[first_stage + s], NULL, 10), vals[s]);
				else
					assert_string_equal(f[first_stage + s], "");
				if ((NT_TEN_MASK & (1u << s)) && (mask & (1u << s)))
					sum += vals[s];
			}
			if ((mask & NT_TEN_MASK) == NT_TEN_MASK)
				assert_int_equal(sum, strtoull(f[e2e_col], NULL, 10));
			assert_string_equal(f[1], "bench-initiator");
			/* the hostile target hostname: one field, quoted, no control byte */
			assert_string_equal(f[2], "\"tgt,\"\"x\"\"\\x0a\\x1b[2J\"");
			assert_string_equal(f[3], "nvme0n1");
			both++;
		} else if (!strcmp(f[10], "initiator_only")) {
			assert_string_equal(f[2], "");
			assert_string_equal(f[first_stage + NT_ST_NETWORK], "");
			io++;
		} else {
			assert_string_equal(f[10], "target_only");
			assert_string_equal(f[3], "nsid1");
			assert_string_equal(f[first_stage + NT_ST_E2E], "");
			to++;
		}
	}
	assert_int_equal(both, T.both);
	assert_int_equal(io, T.init_only);
	assert_int_equal(to, T.tgt_only);
	assert_int_equal(failed, T.failed);
	assert_int_equal(nrow - 1, T.both + T.init_only + T.tgt_only);
	free(out);
	free(errs);
	cleanup(dir);
}

/* JSON Lines: one object per I/O, null where not measured; standard input as a file */
static void test_json_and_stdin(void **state)
{
	char *dir = scratch(), *a, *b, path[256];
	int rc, saved = dup(STDIN_FILENO), fd;
	size_t lines = 0;

	a = script_cli(dir, "--format json i.ntbpf t.ntbpf", &rc, NULL);
	assert_int_equal(rc, 0);
	for (char *p = a; (p = strchr(p, '\n')); p++)
		lines++;
	assert_int_equal(lines, T.both + T.init_only + T.tgt_only);
	assert_non_null(strstr(a, "\"match\": \"target_only\""));
	assert_non_null(strstr(a, "\"blk_device_ns\": null"));
	assert_non_null(strstr(a, "\"status\": \"0x0004\""));
	assert_null(strchr(a, '\x1b'));
	/* the same with the target file on standard input */
	snprintf(path, sizeof(path), "%s/t.ntbpf", dir);
	fd = open(path, O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(dup2(fd, STDIN_FILENO), STDIN_FILENO);
	close(fd);
	b = script_cli(dir, "--format json i.ntbpf -", &rc, NULL);
	assert_int_equal(dup2(saved, STDIN_FILENO), STDIN_FILENO);
	close(saved);
	assert_int_equal(rc, 0);
	assert_string_equal(a, b);
	free(a);
	free(b);
	cleanup(dir);
}

static void test_bad_input(void **state)
{
	char *dir = scratch(), *errs, *out, path[256];
	int rc;
	FILE *f;

	snprintf(path, sizeof(path), "%s/x.ntbpf", dir);
	f = fopen(path, "w");
	fputs("not a record file\n", f);
	fclose(f);
	out = script_cli(dir, "i.ntbpf x.ntbpf", &rc, &errs);
	assert_int_equal(rc, 1);
	assert_string_equal(out, "");
	assert_non_null(strstr(errs, "ntbpf script: x.ntbpf: "));
	assert_null(strchr(strchr(errs, '\n') + 1, '\n'));	/* one line */
	free(out);
	free(errs);
	unlink(path);
	cleanup(dir);
}

/* the same recording twice (its name, or a copy): refused, one line naming both, no rows (issue 30) */
static void test_twice(void **state)
{
	char *dir = scratch(), *errs, *out, a[256], b[256], buf[65536];
	size_t n;
	FILE *fa, *fb;
	int rc;

	out = script_cli(dir, "i.ntbpf t.ntbpf i.ntbpf", &rc, &errs);
	assert_int_equal(rc, 1);
	assert_string_equal(out, "");
	assert_non_null(strstr(errs, "ntbpf script: i.ntbpf and i.ntbpf are the same recording"));
	assert_null(strchr(strchr(errs, '\n') + 1, '\n'));	/* one line */
	free(out);
	free(errs);
	snprintf(a, sizeof(a), "%s/t.ntbpf", dir);
	snprintf(b, sizeof(b), "%s/copy.ntbpf", dir);
	fa = fopen(a, "rb");
	fb = fopen(b, "wb");
	assert_true(fa && fb);
	while ((n = fread(buf, 1, sizeof(buf), fa)) > 0)
		assert_int_equal(fwrite(buf, 1, n, fb), n);
	fclose(fa);
	assert_int_equal(fclose(fb), 0);
	out = script_cli(dir, "--format json copy.ntbpf i.ntbpf t.ntbpf", &rc, &errs);
	assert_int_equal(rc, 1);
	assert_string_equal(out, "");
	assert_non_null(strstr(errs, "ntbpf script: copy.ntbpf and t.ntbpf are the same recording"));
	free(out);
	free(errs);
	unlink(b);
	cleanup(dir);
}

/* script > /dev/full: the cause, one line (issue 30: "cannot write" alone) */
static void test_write_error(void **state)
{
	char *dir = scratch(), *eb = NULL, cwd[4096];
	char *argv[] = { "ntbpf", "script", "i.ntbpf", "t.ntbpf", NULL };
	size_t elen = 0;
	struct nt_config cfg;
	FILE *full, *e;

	assert_non_null(getcwd(cwd, sizeof(cwd)));
	assert_int_equal(chdir(dir), 0);
	e = open_memstream(&eb, &elen);
	assert_int_equal(nt_cli_parse(4, argv, &cfg, e), 0);
	full = fopen("/dev/full", "w");
	assert_non_null(full);
	assert_int_equal(nt_script_cmd(&cfg, full, e), 1);
	fclose(full);
	nt_config_free(&cfg);
	fclose(e);
	assert_int_equal(chdir(cwd), 0);
	assert_non_null(strstr(eb, "ntbpf script: cannot write the rows to standard output: No space left on device\n"));
	free(eb);
	cleanup(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_csv_rows),
		cmocka_unit_test(test_json_and_stdin),
		cmocka_unit_test(test_bad_input),
		cmocka_unit_test(test_twice),
		cmocka_unit_test(test_write_error),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
