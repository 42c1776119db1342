// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * "ntbpf report" at length: a synthetic pair of 64 M records (32 M I/Os
 * on each host, bench/synth.h: 330 k IOPS, hosts booted apart, 97 s) is
 * written to a scratch directory, then reported as main() runs it
 * (nt_cli_parse, nt_report_cmd) in a child process, whose peak resident
 * memory must stay within 256 MB: the whole-file report would take ~6 GB.
 * Every I/O must be matched.  About a minute here; NTBPF_SKIP_LONG=1 skips
 * it, NTBPF_LONG_N sets the number of I/Os.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include "report.h"
#include "../../bench/synth.h"

#define PEAK_MAX_KB (256 * 1024)

static void write_pair(const char *dir, uint64_t n)
{
	char pi[4200], pt[4200];

	snprintf(pi, sizeof(pi), "%s/initiator.ntbpf", dir);
	snprintf(pt, sizeof(pt), "%s/target.ntbpf", dir);
	assert_int_equal(synth_write_files(pi, pt, n), 0);
}

static void test_report_64m_records_bounded(void **state)
{
	const char *skip = getenv("NTBPF_SKIP_LONG"), *nv = getenv("NTBPF_LONG_N");
	uint64_t n = nv ? strtoull(nv, NULL, 10) : 32000000;
	char dir[] = "/tmp/ntbpf-long-XXXXXX", out[4200], cmd[8400], expect[128];
	struct rusage ru;
	int status;
	pid_t pid;

	if (skip && !strcmp(skip, "1")) {
		fprintf(stderr, "NTBPF_SKIP_LONG=1: skipped\n");
		skip();
	}
	assert_non_null(mkdtemp(dir));
	write_pair(dir, n);
	snprintf(out, sizeof(out), "%s/report.txt", dir);
	pid = fork();
	assert_true(pid >= 0);
	if (!pid) {
		char a0[] = "ntbpf", a1[] = "report", a2[4200], a3[4200], *argv[] = { a0, a1, a2, a3, NULL };
		struct nt_config cfg;
		FILE *o = fopen(out, "w");

		snprintf(a2, sizeof(a2), "%s/initiator.ntbpf", dir);
		snprintf(a3, sizeof(a3), "%s/target.ntbpf", dir);
		if (!o || nt_cli_parse(4, argv, &cfg, stderr))
			_exit(2);
		_exit(nt_report_cmd(&cfg, o, stderr) || fclose(o) ? 1 : 0);
	}
	assert_int_equal(wait4(pid, &status, 0, &ru), pid);
	fprintf(stderr, "report of %llu records: peak %ld kB, %.2f s CPU\n", (unsigned long long)(2 * n), ru.ru_maxrss,
		ru.ru_utime.tv_sec + ru.ru_stime.tv_sec + (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	assert_true(ru.ru_maxrss <= PEAK_MAX_KB);
	/* every I/O matched, nothing left over */
	snprintf(expect, sizeof(expect), "# matched: %llu; unmatched: initiator 0, target 0\n", (unsigned long long)n);
	{
		FILE *f = fopen(out, "r");
		char line[512];
		bool found = false;

		assert_non_null(f);
		while (fgets(line, sizeof(line), f))
			found |= !strcmp(line, expect);
		fclose(f);
		assert_true(found);
	}
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	assert_int_equal(system(cmd), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_report_64m_records_bounded),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
