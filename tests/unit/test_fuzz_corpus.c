/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The fuzzer's corpus through the fuzzer's own code (tests/fuzz/fuzz_recfile.c:
 * the CRC fix-up and a read to the end), without libFuzzer: every input it
 * kept, the seeds, and the inputs that once crashed or hung the reader
 * (tests/fuzz/regress, each named after what it found).  Under make check
 * (and valgrind, ASan) this replays what the fuzzer explored.
 */
#include <dirent.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "../fuzz/fuzz_recfile.c"
#include "../fuzz/fuzz_report.c"

static const char *dir_of(const char *sub, char *buf, size_t len)
{
	const char *td = getenv("NTBPF_TESTDATA");

	snprintf(buf, len, "%s/../fuzz/%s", td ? td : "tests/unit", sub);
	return buf;
}

/* every file of dir through nt_fuzz_one; returns how many, and the records and good files */
static size_t replay(const char *sub, size_t *recs, size_t *ok)
{
	char dir[512], path[1024];
	struct dirent *de;
	size_t n = 0;
	DIR *d = opendir(dir_of(sub, dir, sizeof(dir)));

	assert_non_null(d);
	while ((de = readdir(d))) {
		enum nt_read_status st = NT_READ_CORRUPT;
		uint8_t *buf;
		long got, len;
		FILE *f;

		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		f = fopen(path, "rb");
		assert_non_null(f);
		assert_int_equal(fseek(f, 0, SEEK_END), 0);
		len = ftell(f);
		rewind(f);
		buf = malloc(len ? len : 1);
		assert_non_null(buf);
		assert_int_equal(fread(buf, 1, len, f), (size_t)len);
		fclose(f);
		got = nt_fuzz_one(buf, len, &st);
		assert_true(got >= 0);
		/* the reader's own bound: at most 16 records per byte of file */
		assert_true((size_t)got <= 16 * (size_t)len + 16);
		*recs += got;
		*ok += st == NT_READ_OK;
		free(buf);
		n++;
	}
	closedir(d);
	return n;
}

static void test_seeds(void **state)
{
	size_t recs = 0, ok = 0, n = replay("seeds", &recs, &ok);

	/* the seeds are whole recordings: they must read cleanly through the fix-up */
	assert_true(n >= 3);
	assert_int_equal(ok, n);
	assert_true(recs >= 200);
}

static void test_corpus(void **state)
{
	size_t recs = 0, ok = 0, n = replay("corpus", &recs, &ok);

	printf("corpus: %zu inputs, %zu read cleanly, %zu records\n", n, ok, recs);
	assert_true(n >= 1);
}

static void test_regressions(void **state)
{
	size_t recs = 0, ok = 0;

	/* each once made the reader misbehave: constant-columns-*: 20 K / 5 M records out of 1 KB */
	assert_true(replay("regress", &recs, &ok) >= 2);
}

/* the report fuzzer's seeds (two files each: a lab pair, a file twice, ...) through its whole path */
static void test_report_seeds(void **state)
{
	char dir[512], path[1024];
	struct dirent *de;
	size_t n = 0;
	DIR *d = opendir(dir_of("seeds-report", dir, sizeof(dir)));

	assert_non_null(d);
	while ((de = readdir(d))) {
		uint8_t *buf;
		long len;
		FILE *f;

		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		f = fopen(path, "rb");
		assert_non_null(f);
		assert_int_equal(fseek(f, 0, SEEK_END), 0);
		len = ftell(f);
		rewind(f);
		buf = malloc(len ? len : 1);
		assert_non_null(buf);
		assert_int_equal(fread(buf, 1, len, f), (size_t)len);
		fclose(f);
		assert_int_equal(LLVMFuzzerTestOneInput(buf, len), 0);
		free(buf);
		n++;
	}
	closedir(d);
	assert_true(n >= 3);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_seeds),
		cmocka_unit_test(test_corpus),
		cmocka_unit_test(test_regressions),
		cmocka_unit_test(test_report_seeds),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
