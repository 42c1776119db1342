// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The conventions a user expects: -h / --help on every subcommand, report's
 * default file and '-' for standard input, RFC 3339 times in JSON Lines, and
 * a release number in --version.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "cli.h"
#include "interval.h"
#include "sysinfo.h"

static int parse(int argc, char **argv, struct nt_config *c, char *errbuf, size_t len)
{
	FILE *err = fmemopen(errbuf, len, "w");
	FILE *saved = stdout;
	int rc;

	assert_non_null(err);
	stdout = fopen("/dev/null", "w");	/* help goes to stdout */
	rc = nt_cli_parse(argc, argv, c, err);
	fclose(stdout);
	stdout = saved;
	fclose(err);
	return rc;
}

static void test_help_everywhere(void **state)
{
	/* every command of enum nt_cmd */
	static const char *const cmds[] = { "record", "report", "probe", "live", "script" };
	static const char *const flags[] = { "-h", "--help" };
	struct nt_config c;
	char err[512];

	assert_int_equal(sizeof(cmds) / sizeof(cmds[0]), NT_CMD_SCRIPT);
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
		for (size_t f = 0; f < 2; f++) {
			char *argv[] = { "ntbpf", (char *)cmds[i], (char *)flags[f], NULL };

			memset(err, 0, sizeof(err));
			assert_int_equal(parse(3, argv, &c, err, sizeof(err)), 1);	/* printed, exit 0 */
			assert_string_equal(err, "");
		}
	{
		char *argv[] = { "ntbpf", "-h", NULL };

		assert_int_equal(parse(2, argv, &c, err, sizeof(err)), 1);
	}
	{
		/* after "--", -h is the command's */
		char *argv[] = { "ntbpf", "record", "--", "fio", "-h", NULL };

		assert_int_equal(parse(5, argv, &c, err, sizeof(err)), 0);
		assert_string_equal(c.cmd_argv[1], "-h");
	}
}

static void test_report_files(void **state)
{
	struct nt_config c;
	char err[512] = "";
	char *none[] = { "ntbpf", "report", NULL };
	char *dash[] = { "ntbpf", "report", "-", NULL };
	char *two[] = { "ntbpf", "report", "-", "a.ntbpf", "-", NULL };
	char *out[] = { "ntbpf", "record", "-o", "-", NULL };

	assert_int_equal(parse(2, none, &c, err, sizeof(err)), 0);
	assert_int_equal(c.nfiles, 1);
	assert_string_equal(c.files[0], "ntbpf.data");
	assert_int_equal(parse(3, dash, &c, err, sizeof(err)), 0);
	assert_int_equal(c.nfiles, 1);
	assert_string_equal(c.files[0], "-");
	assert_int_equal(parse(5, two, &c, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "'-' (standard input) given more than once"));
	assert_int_equal(parse(4, out, &c, err, sizeof(err)), 0);
	assert_string_equal(c.output, "-");
}

static void test_metrics_options(void **state)
{
	struct nt_config c;
	char err[512] = "";
	char *argv[] = { "ntbpf", "live", "--metrics", "127.0.0.1:9464", "--metrics-remote", "5", NULL };

	assert_int_equal(parse(6, argv, &c, err, sizeof(err)), 0);
	assert_string_equal(c.metrics, "127.0.0.1:9464");
	assert_true(c.metrics_remote);
	assert_true(c.interval == 5);
}

/* YYYY-MM-DDTHH:MM:SS.mmm+HH:MM */
static void check_rfc3339(const char *s, const char *zone)
{
	static const char shape[] = "dddd-dd-ddTdd:dd:dd.ddd";

	assert_int_equal(strlen(s), strlen(shape) + 6);
	for (size_t i = 0; shape[i]; i++)
		assert_true(shape[i] == 'd' ? isdigit((unsigned char)s[i]) : s[i] == shape[i]);
	assert_string_equal(s + strlen(shape), zone);
}

static void test_rfc3339(void **state)
{
	char buf[40], small[20];
	time_t now = time(NULL);
	struct tm tm;
	char year[8];

	setenv("TZ", "UTC0", 1);
	tzset();
	assert_int_equal(nt_time_label(buf, sizeof(buf), true), 0);
	check_rfc3339(buf, "+00:00");
	gmtime_r(&now, &tm);
	strftime(year, sizeof(year), "%Y", &tm);
	assert_memory_equal(buf, year, 4);
	setenv("TZ", "IST-5:30", 1);	/* a half-hour zone east of UTC */
	tzset();
	assert_int_equal(nt_time_label(buf, sizeof(buf), true), 0);
	check_rfc3339(buf, "+05:30");
	setenv("TZ", "EST5", 1);
	tzset();
	assert_int_equal(nt_time_label(buf, sizeof(buf), true), 0);
	check_rfc3339(buf, "-05:00");
	assert_int_equal(nt_time_label(small, sizeof(small), true), -1);	/* never cut short silently */
	assert_int_equal(nt_time_label(buf, sizeof(buf), false), 0);	/* text: HH:MM:SS */
	assert_int_equal(strlen(buf), 8);
	unsetenv("TZ");
	tzset();
}

/* N.N.N, with an optional -pre-release and +build (semver), or "unknown" */
static void test_version(void **state)
{
	const char *v = NTBPF_VERSION, *p = v;

	if (!strcmp(v, "unknown"))
		return;
	for (int part = 0; part < 3; part++) {
		assert_true(isdigit((unsigned char)*p));
		while (isdigit((unsigned char)*p))
			p++;
		if (part < 2)
			assert_int_equal(*p++, '.');
	}
	for (; *p; p++)
		assert_true(isalnum((unsigned char)*p) || strchr("-+.", *p));
	assert_null(strstr(v, "dirty"));
}

/* --version: "ntbpf VERSION (ARCH, static|dynamic)"; this test links the shared libraries (make static's
 * marker object is not in it), and argp's --version of every subcommand prints the same line */
static void test_version_line(void **state)
{
	extern const char *argp_program_version;
	struct nt_config c;
	char e[256];
	char *argv[] = { "ntbpf", "--version", NULL };
#if defined(__x86_64__)
	const char *arch = "x86_64";
#elif defined(__aarch64__)
	const char *arch = "aarch64";
#else
	const char *arch = NULL;
#endif
	char want[128];

	assert_false(nt_build_static());
	if (arch) {
		snprintf(want, sizeof(want), "ntbpf %s (%s, dynamic)", NTBPF_VERSION, arch);
		assert_string_equal(nt_version_line(), want);
	}
	assert_int_equal(parse(2, argv, &c, e, sizeof(e)), 1);
	assert_ptr_equal(argp_program_version, nt_version_line());
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_help_everywhere),
		cmocka_unit_test(test_version_line),
		cmocka_unit_test(test_report_files),
		cmocka_unit_test(test_metrics_options),
		cmocka_unit_test(test_rfc3339),
		cmocka_unit_test(test_version),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
