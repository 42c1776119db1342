// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli.h"
#include "sampling.h"
#include "report.h"

/* parse a space-separated command line; err text in errbuf */
static int parse(const char *line, struct nt_config *cfg, char *errbuf, size_t errlen)
{
	static char buf[1024];
	static char *argv[64];
	int argc = 0, rc;
	char *save = NULL, *tok;
	FILE *err = fmemopen(errbuf, errlen, "w");

	snprintf(buf, sizeof(buf), "%s", line);
	for (tok = strtok_r(buf, " ", &save); tok && argc < 63; tok = strtok_r(NULL, " ", &save))
		argv[argc++] = tok;
	argv[argc] = NULL;
	memset(errbuf, 0, errlen);
	rc = nt_cli_parse(argc, argv, cfg, err);
	fclose(err);
	return rc;
}

/* a bad command line: -1 and exactly one line naming the cause */
static void assert_bad(const char *line, const char *cause)
{
	struct nt_config cfg;
	char err[512];

	assert_int_equal(parse(line, &cfg, err, sizeof(err)), -1);
	if (cause) {
		assert_non_null(strstr(err, cause));
		assert_non_null(strchr(err, '\n'));
		assert_null(strchr(strchr(err, '\n') + 1, '\n'));
	}
}

static void test_record_defaults(void **state)
{
	struct nt_config cfg;
	char err[256];

	assert_int_equal(parse("ntbpf record", &cfg, err, sizeof(err)), 0);
	assert_int_equal(cfg.cmd, NT_CMD_RECORD);
	assert_string_equal(cfg.output, "ntbpf.data");
	assert_int_equal(cfg.role, 0);
	assert_int_equal(cfg.sample, 1);
	assert_int_equal(cfg.ndevs, 0);
	assert_null(cfg.cmd_argv);
	assert_true(cfg.duration == 0);
}

static void test_record_full(void **state)
{
	struct nt_config cfg;
	char err[256];

	assert_int_equal(parse("ntbpf record -o x.ntbpf --role target --duration 2.5 -d nvme1n1 -d /dev/loop0 "
			       "--sample 10 -- fio --name=t -x", &cfg, err, sizeof(err)), 0);
	assert_string_equal(cfg.output, "x.ntbpf");
	assert_int_equal(cfg.role, NTBPF_ROLE_TARGET);
	assert_true(cfg.duration == 2.5);
	assert_int_equal(cfg.ndevs, 2);
	assert_string_equal(cfg.devs[0], "nvme1n1");
	assert_string_equal(cfg.devs[1], "loop0");
	assert_int_equal(cfg.sample, 10);
	assert_int_equal(cfg.sample_window_ms, NT_SAMPLE_WINDOW_MS);	/* --sample-by time by default */
	assert_non_null(cfg.cmd_argv);
	assert_string_equal(cfg.cmd_argv[0], "fio");
	assert_string_equal(cfg.cmd_argv[1], "--name=t");
	assert_string_equal(cfg.cmd_argv[2], "-x");	/* the command's options are not ours */
	assert_null(cfg.cmd_argv[3]);
	assert_int_equal(parse("ntbpf record --role initiator", &cfg, err, sizeof(err)), 0);
	assert_int_equal(cfg.role, NTBPF_ROLE_INITIATOR);
	assert_int_equal(parse("ntbpf record --sample 100", &cfg, err, sizeof(err)), 0);
	assert_int_equal(cfg.sample_window_ms, 1000);	/* 100 s apart */
	assert_int_equal(parse("ntbpf record --sample 1000", &cfg, err, sizeof(err)), 0);
	assert_int_equal(cfg.sample_window_ms, 100);
	assert_int_equal(parse("ntbpf record --sample 100 --sample-window 20", &cfg, err, sizeof(err)), 0);
	assert_int_equal(cfg.sample_window_ms, 20);
	assert_int_equal(parse("ntbpf record --sample 100 --sample-by io", &cfg, err, sizeof(err)), 0);
	assert_int_equal(cfg.sample, 100);
	assert_int_equal(cfg.sample_window_ms, 0);	/* a per-I/O hash */
	assert_int_equal(parse("ntbpf record --sample-by time --sample 5", &cfg, err, sizeof(err)), 0);
	assert_int_equal(cfg.sample_window_ms, NT_SAMPLE_WINDOW_MS);
	assert_true(cfg.sample_detach_all);	/* every hook, where windows are 10 s apart */
	assert_int_equal(parse("ntbpf record --sample 1000 --sample-detach all", &cfg, err, sizeof(err)), 0);
	assert_true(cfg.sample_detach_all);
	assert_int_equal(parse("ntbpf record --sample 1000 --sample-detach tracepoints", &cfg, err, sizeof(err)), 0);
	assert_false(cfg.sample_detach_all);
}

static void test_record_bad(void **state)
{
	assert_bad("ntbpf record --sample 1000 --sample-detach functions", "bad --sample-detach 'functions'");
	assert_bad("ntbpf record --sample 1000 --sample-by io --sample-detach all", "--sample-detach goes with --sample-by time");
	assert_bad("ntbpf record --role both", "bad --role 'both'");
	assert_bad("ntbpf record --duration -1", "bad --duration");
	assert_bad("ntbpf record --duration abc", "bad --duration");
	assert_bad("ntbpf record --sample 0", "bad --sample '0'");
	assert_bad("ntbpf record --sample 5x", "bad --sample");
	assert_bad("ntbpf record --sample -3", "bad --sample");
	assert_bad("ntbpf record --sample 10 --sample-by lba", "bad --sample-by 'lba'");
	assert_bad("ntbpf record --sample 10 --sample-window 0", "bad --sample-window '0'");
	assert_bad("ntbpf record --sample 10 --sample-window 60001", "bad --sample-window");
	assert_bad("ntbpf record --sample 10 --sample-by io --sample-window 50", "--sample-window goes with");
	assert_bad("ntbpf record stray", "unexpected argument 'stray'");
	assert_bad("ntbpf record -d a/b", "bad device name");
	assert_bad("ntbpf record --", "nothing after '--'");
	/* getopt names unknown options on stderr itself; we only check the status */
	assert_bad("ntbpf record --bogus", NULL);
}

static void test_report(void **state)
{
	struct nt_config cfg;
	char err[256];

	assert_int_equal(parse("ntbpf report a.ntbpf b.ntbpf", &cfg, err, sizeof(err)), 0);
	assert_int_equal(cfg.cmd, NT_CMD_REPORT);
	assert_int_equal(cfg.nfiles, 2);
	assert_string_equal(cfg.files[1], "b.ntbpf");
	assert_int_equal(cfg.npcts, 4);
	assert_true(cfg.pcts[3] == 99.9);
	assert_int_equal(cfg.format, NT_FMT_TEXT);
	assert_int_equal(cfg.group_by, NT_GB_OP | NT_GB_SIZE | NT_GB_DEV);
	nt_config_free(&cfg);

	assert_int_equal(parse("ntbpf report --percentiles 50,99.99 --format json --group-by op,queue f",
			       &cfg, err, sizeof(err)), 0);
	assert_int_equal(cfg.npcts, 2);
	assert_true(cfg.pcts[1] == 99.99);
	assert_int_equal(cfg.format, NT_FMT_JSON);
	assert_int_equal(cfg.group_by, NT_GB_OP | NT_GB_QUEUE);
	nt_config_free(&cfg);
	assert_int_equal(parse("ntbpf report --format csv --group-by none f", &cfg, err, sizeof(err)), 0);
	assert_int_equal(cfg.format, NT_FMT_CSV);
	assert_int_equal(cfg.group_by, 0);
	assert_true(cfg.pair_window == 0);	/* the default: NT_PAIR_WINDOW_NS */
	assert_false(cfg.hist);
	nt_config_free(&cfg);
	/* issue 33: the initiator host (hostnqn), the subsystem, the namespace; on live too */
	assert_int_equal(parse("ntbpf report --group-by host,subsys,ns f", &cfg, err, sizeof(err)), 0);
	assert_int_equal(cfg.group_by, NT_GB_HOST | NT_GB_SUBSYS | NT_GB_NS);
	nt_config_free(&cfg);
	assert_int_equal(parse("ntbpf live --group-by op,host", &cfg, err, sizeof(err)), 0);
	assert_int_equal(cfg.group_by, NT_GB_OP | NT_GB_HOST);
	nt_config_free(&cfg);
	assert_bad("ntbpf report --group-by hostname f", "bad --group-by key 'hostname' (want op, size, dev, queue, "
						       "host, subsys, ns or none)");
	assert_int_equal(parse("ntbpf report --hist f", &cfg, err, sizeof(err)), 0);
	assert_true(cfg.hist);
	nt_config_free(&cfg);
	/* --diagnose: findings, and the report groups by queue too */
	assert_false(cfg.diagnose);
	assert_int_equal(parse("ntbpf report --diagnose --group-by op f", &cfg, err, sizeof(err)), 0);
	assert_true(cfg.diagnose);
	{
		struct nt_report_opts o;

		nt_report_opts_of(&cfg, &o);
		assert_true(o.diagnose);
		assert_int_equal(o.group_by, NT_GB_OP | NT_GB_QUEUE);
	}
	nt_config_free(&cfg);
	assert_bad("ntbpf live --diagnose", NULL);	/* report only */
	/* script: csv by default, csv or json, files as report's */
	assert_int_equal(parse("ntbpf script a b", &cfg, err, sizeof(err)), 0);
	assert_int_equal(cfg.cmd, NT_CMD_SCRIPT);
	assert_int_equal(cfg.format, NT_FMT_CSV);
	assert_int_equal(cfg.nfiles, 2);
	nt_config_free(&cfg);
	assert_int_equal(parse("ntbpf script --format json", &cfg, err, sizeof(err)), 0);
	assert_int_equal(cfg.format, NT_FMT_JSON);
	assert_string_equal(cfg.files[0], "ntbpf.data");
	nt_config_free(&cfg);
	assert_int_equal(parse("ntbpf report --window 0.5 f", &cfg, err, sizeof(err)), 0);
	assert_true(cfg.pair_window == 0.5);
	{
		struct nt_report_opts o;

		nt_report_opts_of(&cfg, &o);
		assert_int_equal(o.window_ns, 500000000);
	}
	nt_config_free(&cfg);
}

/*
 * Percentile labels say what was asked (issue 30: 99.999999 was labelled
 * p100, 0x10 p16, and 50,50 gave a JSON key twice): kept as spelled,
 * non-decimal forms and duplicates refused.
 */
static void test_percentile_labels(void **state)
{
	struct nt_config cfg;
	struct nt_report_opts o;
	char err[256], buf[32];

	assert_int_equal(parse("ntbpf report --percentiles 99.999999,50,99.90 f", &cfg, err, sizeof(err)), 0);
	assert_int_equal(cfg.npcts, 3);
	assert_string_equal(cfg.pct_labels[0], "99.999999");
	assert_string_equal(cfg.pct_labels[2], "99.90");
	nt_report_opts_of(&cfg, &o);
	assert_string_equal(o.pct_labels[0], "99.999999");
	nt_config_free(&cfg);
	/* not given: the number's shortest form */
	nt_pct_label(99.999999, "", buf, sizeof(buf));
	assert_string_equal(buf, "99.999999");
	nt_pct_label(99.9, NULL, buf, sizeof(buf));
	assert_string_equal(buf, "99.9");
	nt_pct_label(50, NULL, buf, sizeof(buf));
	assert_string_equal(buf, "50");
	assert_bad("ntbpf report --percentiles 0x10 f", "bad percentile '0x10' (want a decimal number");
	assert_bad("ntbpf report --percentiles 1e2 f", "bad percentile '1e2'");
	assert_bad("ntbpf report --percentiles inf f", "bad percentile 'inf'");
	assert_bad("ntbpf report --percentiles nan f", "bad percentile 'nan'");
	assert_bad("ntbpf report --percentiles +50 f", "bad percentile '+50'");
	assert_bad("ntbpf report --percentiles 50,50 f", "percentile '50' given twice");
	assert_bad("ntbpf report --percentiles 50,50.0 f", "percentile '50.0' given twice");
	assert_bad("ntbpf live --percentiles 99,99", "given twice");
	assert_bad("ntbpf report --percentiles 99.9999999999999999999999 f", "at most 23 characters");
}

/* an unknown option, or one without its value: one line naming it, and where to look (issue 30) */
static void test_bad_option_says_help(void **state)
{
	assert_bad("ntbpf report --bogus f", "ntbpf report: bad option '--bogus' (unknown here, or its value is "
		   "missing; see 'ntbpf report --help')");
	assert_bad("ntbpf report f --format", "bad option '--format' (unknown here, or its value is missing; see "
		   "'ntbpf report --help')");
	assert_bad("ntbpf script --hist f", "ntbpf script: bad option '--hist' (unknown here, or its value is "
		   "missing; see 'ntbpf script --help')");
	assert_bad("ntbpf record -q", "see 'ntbpf record --help'");
	assert_bad("ntbpf live --nope", "see 'ntbpf live --help'");
	assert_bad("ntbpf probe --nope", "see 'ntbpf probe --help'");
}

/* what a format cannot show is refused, not dropped; an empty --group-by is refused, not "none" (issue 30) */
static void test_not_silently_dropped(void **state)
{
	struct nt_config cfg;
	char err[256];

	{
		char *argv[] = { "ntbpf", "report", "--group-by", "", "f", NULL };
		char buf[256];
		FILE *e = fmemopen(buf, sizeof(buf), "w");

		memset(buf, 0, sizeof(buf));
		assert_int_equal(nt_cli_parse(5, argv, &cfg, e), -1);
		fclose(e);
		assert_non_null(strstr(buf, "ntbpf report: --group-by needs a key (op, size, dev, queue, host, subsys, ns, or none"));
	}
	assert_bad("ntbpf report --group-by , f", "--group-by needs a key");
	assert_bad("ntbpf report --hist --format csv f", "--hist is not shown in --format csv (text, json, html show it)");
	assert_bad("ntbpf report --format csv --hist f", "--hist is not shown in --format csv");
	assert_bad("ntbpf report --diagnose --format csv f", "--diagnose is not shown in --format csv");
	assert_bad("ntbpf live --format csv --hist", "--hist is not shown in --format csv (text, json show it)");
	/* shown there: as before */
	assert_int_equal(parse("ntbpf report --hist --diagnose --format json f", &cfg, err, sizeof(err)), 0);
	nt_config_free(&cfg);
	assert_int_equal(parse("ntbpf report --hist --diagnose --format html f", &cfg, err, sizeof(err)), 0);
	nt_config_free(&cfg);
	assert_int_equal(parse("ntbpf report --group-by none --format csv f", &cfg, err, sizeof(err)), 0);
	assert_int_equal(cfg.group_by, 0);
	nt_config_free(&cfg);
}

/* "--" ends the options of every command (issue 30: report and script said "nothing after '--'") */
static void test_dashdash(void **state)
{
	struct nt_config cfg;
	char err[256];

	assert_int_equal(parse("ntbpf report f -- x", &cfg, err, sizeof(err)), 0);
	assert_int_equal(cfg.nfiles, 2);
	assert_string_equal(cfg.files[1], "x");
	nt_config_free(&cfg);
	assert_int_equal(parse("ntbpf report --hist -- -odd --help", &cfg, err, sizeof(err)), 0);
	assert_true(cfg.hist);
	assert_int_equal(cfg.nfiles, 2);
	assert_string_equal(cfg.files[0], "-odd");
	assert_string_equal(cfg.files[1], "--help");
	nt_config_free(&cfg);
	assert_int_equal(parse("ntbpf script -- f", &cfg, err, sizeof(err)), 0);
	assert_int_equal(cfg.cmd, NT_CMD_SCRIPT);
	assert_int_equal(cfg.nfiles, 1);
	assert_string_equal(cfg.files[0], "f");
	nt_config_free(&cfg);
	assert_int_equal(parse("ntbpf report --", &cfg, err, sizeof(err)), 0);
	assert_string_equal(cfg.files[0], "ntbpf.data");	/* nothing after: the default file */
	nt_config_free(&cfg);
	assert_int_equal(parse("ntbpf live -- 2 3", &cfg, err, sizeof(err)), 0);
	assert_true(cfg.interval == 2 && cfg.count == 3);
	assert_int_equal(parse("ntbpf probe --", &cfg, err, sizeof(err)), 0);
	assert_bad("ntbpf record --", "nothing after '--' (give the command to run)");
}

/* record --rotate SIZE|TIME */
static void test_rotate(void **state)
{
	struct nt_config cfg;
	char err[256];
	uint64_t b, ns;

	assert_int_equal(nt_parse_rotate("64M", &b, &ns), 0);
	assert_true(b == 64ull << 20 && ns == 0);
	assert_int_equal(nt_parse_rotate("1.5G", &b, &ns), 0);
	assert_true(b == 3ull << 29);
	assert_int_equal(nt_parse_rotate("10m", &b, &ns), 0);
	assert_true(b == 0 && ns == 600000000000ull);
	assert_int_equal(nt_parse_rotate("1s", &b, &ns), 0);
	assert_int_equal(nt_parse_rotate("0.5s", &b, &ns), -1);	/* at least 1 s */
	assert_int_equal(nt_parse_rotate("10K", &b, &ns), -1);		/* at least 64 KiB */
	assert_int_equal(nt_parse_rotate("64", &b, &ns), -1);		/* a unit */
	assert_int_equal(nt_parse_rotate("64MB", &b, &ns), -1);
	assert_int_equal(parse("ntbpf record --rotate 100M -o r.ntbpf", &cfg, err, sizeof(err)), 0);
	assert_true(cfg.rotate_bytes == 100ull << 20 && cfg.rotate_ns == 0);
	nt_config_free(&cfg);
	assert_bad("ntbpf record --rotate 1h -o -", "--rotate writes files: not with -o -");
	assert_bad("ntbpf record --rotate soon", "bad --rotate 'soon'");
}

/* --since/--until: RFC 3339 at any offset, or seconds from the start */
static void test_when(void **state)
{
	struct nt_when w;

	assert_int_equal(nt_parse_when("2023-11-14T22:13:20Z", &w), 0);
	assert_true(w.set && !w.rel);
	assert_true(w.ns == 1700000000000000000ll);
	assert_int_equal(nt_parse_when("2023-11-14t23:43:20.25+01:30", &w), 0);
	assert_true(w.ns == 1700000000250000000ll);
	assert_int_equal(nt_parse_when("2023-11-14 22:13:20.123456789-00:00", &w), 0);
	assert_true(w.ns == 1700000000123456789ll);
	assert_int_equal(nt_parse_when("90.5", &w), 0);
	assert_true(w.set && w.rel && w.ns == 90500000000ll);
	assert_int_equal(nt_parse_when("2023-11-14T22:13:20", &w), -1);
	assert_int_equal(nt_parse_when("2023-13-14T22:13:20Z", &w), -1);
	assert_int_equal(nt_parse_when("2023-11-14T22:13:20.Z", &w), -1);
	assert_int_equal(nt_parse_when("2023-11-14T22:13:20Zx", &w), -1);
	assert_int_equal(nt_parse_when("", &w), -1);
}

static void test_report_bad(void **state)
{
	assert_bad("ntbpf report - -", "given more than once");	/* no FILE: ntbpf.data (test_conventions) */
	assert_bad("ntbpf report --percentiles 0 f", "bad percentile '0'");
	assert_bad("ntbpf report --percentiles 101 f", "bad percentile '101'");
	assert_bad("ntbpf report --percentiles 50,x f", "bad percentile 'x'");
	assert_bad("ntbpf report --percentiles , f", "at least one");
	assert_bad("ntbpf report --format xml f", "bad --format 'xml'");
	assert_bad("ntbpf report --group-by op,color f", "bad --group-by key 'color'");
	assert_bad("ntbpf report --window 0 f", "bad --window '0'");
	assert_bad("ntbpf report --since yesterday f", "bad --since 'yesterday'");
	assert_bad("ntbpf report --until 2026-11-25T14:00:05 f", "bad --until");	/* RFC 3339 wants the offset */
	assert_bad("ntbpf report --since -5 f", "bad --since '-5'");
	assert_bad("ntbpf report --since 5 --until 5 f", "--since must be before --until");
	assert_bad("ntbpf report --window 1h f", "bad --window '1h'");
	assert_bad("ntbpf script --format text f", "bad --format 'text' (want csv or json)");
	assert_bad("ntbpf script - -", "given more than once");
	assert_bad("ntbpf script --hist f", NULL);	/* getopt says so on stderr */
}

static void test_live(void **state)
{
	struct nt_config cfg;
	char err[256];

	assert_int_equal(parse("ntbpf live", &cfg, err, sizeof(err)), 0);
	assert_int_equal(cfg.cmd, NT_CMD_LIVE);
	assert_true(cfg.interval == 1);
	assert_int_equal(cfg.count, 0);
	assert_int_equal(cfg.npcts, 2);	/* live defaults to 50,99 */
	assert_true(cfg.pcts[0] == 50 && cfg.pcts[1] == 99);
	assert_int_equal(parse("ntbpf live -d nvme0n1 --peer tgt:4430 --format json 0.5 10", &cfg, err, sizeof(err)), 0);
	assert_true(cfg.interval == 0.5);
	assert_int_equal(cfg.count, 10);
	assert_string_equal(cfg.peer, "tgt:4430");
	assert_int_equal(cfg.format, NT_FMT_JSON);
	assert_int_equal(parse("ntbpf live --serve 0.0.0.0:4430 --percentiles 90 2", &cfg, err, sizeof(err)), 0);
	assert_string_equal(cfg.serve, "0.0.0.0:4430");
	assert_int_equal(cfg.npcts, 1);
	assert_bad("ntbpf live 0", "bad interval '0'");
	assert_bad("ntbpf live 1 x", "bad count 'x'");
	assert_bad("ntbpf live 1 2 3", "unexpected argument '3'");
	assert_int_equal(parse("ntbpf live --hist", &cfg, err, sizeof(err)), 0);
	assert_true(cfg.hist);
	assert_int_equal(parse("ntbpf live --format csv", &cfg, err, sizeof(err)), 0);	/* RFC 3339 time per row */
	assert_int_equal(cfg.format, NT_FMT_CSV);
	assert_bad("ntbpf live --format xml", "bad --format 'xml'");
	assert_bad("ntbpf live --serve a:1 --peer b:2", "exclude each other");
	/* ports are 1-65535 (99999 used to listen on another port), --key goes with the stream */
	assert_bad("ntbpf live --serve 0.0.0.0:99999", "bad --serve '0.0.0.0:99999' (want ADDR:PORT, port 1-65535)");
	assert_bad("ntbpf live --serve 0.0.0.0:0", "port 1-65535");
	assert_bad("ntbpf live --peer tgt:http", "bad --peer 'tgt:http'");
	assert_bad("ntbpf live --key k", "--key is for --serve or --peer");
	assert_int_equal(parse("ntbpf live --serve 0.0.0.0:4430 --key /k", &cfg, err, sizeof(err)), 0);
	assert_string_equal(cfg.key, "/k");
	/* record --interval */
	assert_int_equal(parse("ntbpf record --interval 2", &cfg, err, sizeof(err)), 0);
	assert_true(cfg.interval == 2);
	assert_int_equal(cfg.npcts, 2);
	assert_bad("ntbpf record --interval 0.01", "bad --interval");
	/* record --nice: 19 unless told */
	assert_int_equal(parse("ntbpf record", &cfg, err, sizeof(err)), 0);
	assert_int_equal(cfg.nice, 19);
	assert_int_equal(parse("ntbpf record --nice 0", &cfg, err, sizeof(err)), 0);
	assert_int_equal(cfg.nice, 0);
	assert_int_equal(parse("ntbpf record --nice -20", &cfg, err, sizeof(err)), 0);
	assert_int_equal(cfg.nice, -20);
	assert_bad("ntbpf record --nice 20", "bad --nice '20' (want a whole number from -20 to 19)");
	assert_bad("ntbpf record --nice -21", "bad --nice '-21'");
	assert_bad("ntbpf record --nice 5x", "bad --nice '5x'");
	assert_bad("ntbpf record --nice ''", "bad --nice ''");
}

static void test_top_level(void **state)
{
	struct nt_config cfg;
	char err[2048];

	assert_bad("ntbpf frobnicate", "unknown command 'frobnicate'");
	assert_int_equal(parse("ntbpf", &cfg, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "Usage: ntbpf COMMAND"));
	assert_int_equal(parse("ntbpf probe", &cfg, err, sizeof(err)), 0);
	assert_int_equal(cfg.cmd, NT_CMD_PROBE);
	assert_bad("ntbpf probe extra", "unexpected argument");
}

static void test_help_is_not_an_error(void **state)
{
	struct nt_config cfg;
	char err[256];
	FILE *saved = stdout;

	/* argp prints help to stdout: keep the test output clean */
	stdout = fopen("/dev/null", "w");
	assert_int_equal(parse("ntbpf report --help", &cfg, err, sizeof(err)), 1);
	assert_int_equal(parse("ntbpf record --help", &cfg, err, sizeof(err)), 1);
	assert_int_equal(parse("ntbpf --help", &cfg, err, sizeof(err)), 1);
	fclose(stdout);
	stdout = saved;
	assert_string_equal(err, "");
}

/* report --help ends with every stage, in the report's order, from the stage table */
static void test_report_help_lists_stages(void **state)
{
	struct nt_config cfg;
	char err[256], buf[8192];
	FILE *saved = stdout, *f = tmpfile();
	size_t n;

	assert_non_null(f);
	stdout = f;
	assert_int_equal(parse("ntbpf report --help", &cfg, err, sizeof(err)), 1);
	stdout = saved;
	rewind(f);
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = 0;
	fclose(f);
	assert_non_null(strstr(buf, "  ntbpf report --format html -o report.html initiator.ntbpf target.ntbpf\n"
				    "STAGES (docs/stages.md): blk_submission nvme_tcp_submission\n"
				    "  nstack_submission nvmet_tcp_submission target_subsystem\n"
				    "  nvmet_tcp_completion network_transmission nstack_completion\n"
				    "  nvme_tcp_completion blk_completion blk_device end_to_end\n"
				    "  remote target_residence\n"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_record_defaults),
		cmocka_unit_test(test_record_full),
		cmocka_unit_test(test_record_bad),
		cmocka_unit_test(test_report),
		cmocka_unit_test(test_report_bad),
		cmocka_unit_test(test_dashdash),
		cmocka_unit_test(test_not_silently_dropped),
		cmocka_unit_test(test_bad_option_says_help),
		cmocka_unit_test(test_percentile_labels),
		cmocka_unit_test(test_when),
		cmocka_unit_test(test_rotate),
		cmocka_unit_test(test_live),
		cmocka_unit_test(test_top_level),
		cmocka_unit_test(test_help_is_not_an_error),
		cmocka_unit_test(test_report_help_lists_stages),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
