// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * golden.h - golden files of the unit tests (tests/unit/golden/): the test
 * data directory, and a comparison that NTBPF_UPDATE_GOLDEN=1 turns into a
 * rewrite (review the diff!).  Include after cmocka.h.
 */
#ifndef NTBPF_TEST_GOLDEN_H
#define NTBPF_TEST_GOLDEN_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* absolute: the product-path tests run "ntbpf report" inside a scratch directory */
static const char *datadir(void)
{
	static char abs[4096];
	const char *d = getenv("NTBPF_TESTDATA");

	if (!abs[0])
		assert_non_null(realpath(d ? d : "tests/unit", abs));
	return abs;
}

/* got must equal golden/name (NTBPF_UPDATE_GOLDEN=1: write it there first) */
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

#endif
