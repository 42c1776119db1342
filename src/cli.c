// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * cli.c - argp front end for "ntbpf record | report | probe".
 *
 * argp prints its own "Try --help" hint to the state's err_stream; we point
 * that at a scratch stream so that every bad command line gives exactly one
 * line on stderr: the cause.
 */
#include <argp.h>
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "cli.h"
#include "sampling.h"
#include "stages.h"
#include "stream.h"
#include "sysinfo.h"

const char *argp_program_version;	/* nt_version_line(), set in nt_cli_parse */
const char *argp_program_bug_address = NULL;

struct parse_ctx {
	struct nt_config *cfg;
	FILE *err;
	const char *prog;
	FILE *scratch;
	bool failed;
	const char *bad_arg;	/* where getopt stopped: an unknown option, or one without its value */
	bool help;	/* only printing help: stay quiet about missing arguments */
	bool pcts_given;
	int sample_by;			/* record --sample-by: 0 not given, 1 time, 2 io */
	bool sample_detach;		/* record --sample-detach given */
	uint32_t sample_window_ms;	/* record --sample-window, 0 not given */
};

static void fail(struct parse_ctx *pc, const char *fmt, ...)
{
	va_list ap;

	if (pc->failed || pc->help)
		return;
	pc->failed = true;
	fprintf(pc->err, "%s: ", pc->prog);
	va_start(ap, fmt);
	vfprintf(pc->err, fmt, ap);
	va_end(ap);
	fputc('\n', pc->err);
}

/* getopt failed (argp calls every parser with ARGP_KEY_ERROR): the argument it stopped at */
static void note_bad_arg(struct parse_ctx *pc, const struct argp_state *st)
{
	if (!pc->failed && !pc->bad_arg && st->next > 0 && st->next <= st->argc)
		pc->bad_arg = st->argv[st->next - 1];
}

static int parse_double(const char *s, double *out)
{
	char *end;

	errno = 0;
	*out = strtod(s, &end);
	return (errno || end == s || *end || !isfinite(*out)) ? -1 : 0;
}

int nt_parse_rotate(const char *s, uint64_t *bytes, uint64_t *ns)
{
	static const struct { char unit; bool time; double mul; } units[] = {
		{ 'K', false, 1024.0 }, { 'M', false, 1048576.0 }, { 'G', false, 1073741824.0 },
		{ 's', true, 1e9 }, { 'm', true, 60e9 }, { 'h', true, 3600e9 },
	};
	char *end;
	double v;

	*bytes = *ns = 0;
	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || !isfinite(v) || v <= 0 || !end[0] || end[1])
		return -1;
	for (size_t k = 0; k < sizeof(units) / sizeof(units[0]); k++)
		if (units[k].unit == end[0]) {
			double x = v * units[k].mul;

			if (units[k].time ? x < 1e9 || x > 7 * 86400e9 : x < 65536 || x > 1e15)
				return -1;	/* 1 s to a week; 64 KiB to a PB */
			*(units[k].time ? ns : bytes) = (uint64_t)x;
			return 0;
		}
	return -1;
}

int nt_parse_when(const char *s, struct nt_when *w)
{
	struct tm tm = { 0 };
	int n = 0, oh = 0, om = 0;
	int64_t frac = 0, scale = 100000000, off = 0;
	char t;
	double d;
	time_t secs;

	memset(w, 0, sizeof(*w));
	if (!parse_double(s, &d)) {	/* seconds from the start */
		if (d < 0 || d > 1e9)
			return -1;
		*w = (struct nt_when){ .set = true, .rel = true, .ns = (int64_t)(d * 1e9 + 0.5) };
		return 0;
	}
	if (sscanf(s, "%4d-%2d-%2d%c%2d:%2d:%2d%n", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &t, &tm.tm_hour, &tm.tm_min,
		   &tm.tm_sec, &n) != 7 || n != 19 || (t != 'T' && t != 't' && t != ' ') || tm.tm_mon < 1 ||
	    tm.tm_mon > 12 || tm.tm_mday < 1 || tm.tm_mday > 31 || tm.tm_hour > 23 || tm.tm_min > 59 || tm.tm_sec > 60)
		return -1;
	s += n;
	if (*s == '.') {
		if (!isdigit((unsigned char)s[1]))
			return -1;
		for (s++; isdigit((unsigned char)*s); s++, scale /= 10)
			frac += scale ? (*s - '0') * scale : 0;
	}
	if (*s == 'Z' || *s == 'z') {
		s++;
	} else if ((*s == '+' || *s == '-') && sscanf(s + 1, "%2d:%2d%n", &oh, &om, &n) == 2 && n == 5 && oh < 24 &&
		   om < 60) {
		off = (*s == '-' ? -1 : 1) * (oh * 3600 + om * 60) * 1000000000ll;
		s += 6;
	} else {
		return -1;
	}
	if (*s)
		return -1;
	tm.tm_year -= 1900;
	tm.tm_mon -= 1;
	secs = timegm(&tm);
	if (secs < 0)
		return -1;
	*w = (struct nt_when){ .set = true, .ns = (int64_t)secs * 1000000000ll + frac - off };
	return 0;
}

/* digits, optionally a point and digits: what a percentile label may keep as it is */
static bool decimal(const char *s)
{
	const char *p = s;

	while (isdigit((unsigned char)*p))
		p++;
	if (p == s)
		return false;
	if (*p == '.') {
		const char *q = ++p;

		while (isdigit((unsigned char)*p))
			p++;
		if (p == q)
			return false;
	}
	return !*p;
}

void nt_pct_label(double p, const char *spelled, char *buf, size_t len)
{
	if (spelled && *spelled) {
		snprintf(buf, len, "%s", spelled);
		return;
	}
	for (int prec = 0; prec <= 17; prec++) {	/* the fewest decimals that read back as p: no exponent */
		snprintf(buf, len, "%.*f", prec, p);
		if (strtod(buf, NULL) == p)
			return;
	}
}

int nt_parse_percentiles(const char *s, double *pcts, char (*labels)[NT_PCT_LABEL], int *n, char *msg,
			 size_t msglen)
{
	char buf[256], *save = NULL, *tok;

	if (strlen(s) >= sizeof(buf)) {
		snprintf(msg, msglen, "--percentiles list too long");
		return -1;
	}
	strcpy(buf, s);
	*n = 0;
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		double p;

		/* the label says what was asked: a decimal number, as written (no 0x10 labelled p16, no 1e2) */
		if (!decimal(tok) || parse_double(tok, &p) || p <= 0 || p > 100) {
			snprintf(msg, msglen, "bad percentile '%s' (want a decimal number in (0, 100], e.g. 99.9)", tok);
			return -1;
		}
		if (strlen(tok) >= NT_PCT_LABEL) {
			snprintf(msg, msglen, "bad percentile '%s' (at most %d characters)", tok, NT_PCT_LABEL - 1);
			return -1;
		}
		for (int k = 0; k < *n; k++)
			if (pcts[k] == p) {
				snprintf(msg, msglen, "percentile '%s' given twice (--percentiles %s)", tok, s);
				return -1;
			}
		if (*n == NT_MAX_PCTS) {
			snprintf(msg, msglen, "at most %d percentiles", NT_MAX_PCTS);
			return -1;
		}
		if (labels)
			snprintf(labels[*n], NT_PCT_LABEL, "%s", tok);
		pcts[(*n)++] = p;
	}
	if (!*n) {
		snprintf(msg, msglen, "--percentiles needs at least one value");
		return -1;
	}
	return 0;
}

int nt_parse_group_by(const char *s, unsigned int *gb, char *msg, size_t msglen)
{
	static const struct { const char *name; unsigned int bit; } keys[] = {
		{ "op", NT_GB_OP }, { "size", NT_GB_SIZE }, { "dev", NT_GB_DEV },
		{ "device", NT_GB_DEV }, { "queue", NT_GB_QUEUE }, { "host", NT_GB_HOST },
		{ "subsys", NT_GB_SUBSYS }, { "ns", NT_GB_NS }, { "none", 0 },
	};
	char buf[128], *save = NULL, *tok;

	if (strlen(s) >= sizeof(buf)) {
		snprintf(msg, msglen, "--group-by list too long");
		return -1;
	}
	strcpy(buf, s);
	*gb = 0;
	/* "" or ",": no key at all (was: no grouping, silently); "none" says that */
	if (!s[strspn(s, ",")]) {
		snprintf(msg, msglen, "--group-by needs a key (op, size, dev, queue, host, subsys, ns, or none for one group)");
		return -1;
	}
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		size_t i;

		for (i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
			if (!strcmp(tok, keys[i].name))
				break;
		if (i == sizeof(keys) / sizeof(keys[0])) {
			snprintf(msg, msglen, "bad --group-by key '%s' (want op, size, dev, queue, host, subsys, ns or none)", tok);
			return -1;
		}
		*gb |= keys[i].bit;
	}
	return 0;
}

/* an option the chosen --format cannot show: refused, not dropped (report, live) */
static bool bad_for_format(struct parse_ctx *pc)
{
	const struct nt_config *cfg = pc->cfg;

	if (cfg->format != NT_FMT_CSV || cfg->cmd == NT_CMD_SCRIPT)
		return false;
	if (cfg->hist)
		fail(pc, "--hist is not shown in --format csv (text, json%s show it)", cfg->cmd == NT_CMD_REPORT ?
		     ", html" : "");
	else if (cfg->diagnose)
		fail(pc, "--diagnose is not shown in --format csv (text, json, html show it)");
	else
		return false;
	return true;
}

/* ---- record ---- */

enum { OPT_ROLE = 0x100, OPT_DURATION, OPT_SAMPLE, OPT_PCT, OPT_FORMAT, OPT_GROUP, OPT_KPROBE, OPT_BPF_STATS, OPT_INTERVAL, OPT_SERVE, OPT_PEER, OPT_RECORDS, OPT_KEY, OPT_FACTS,
       OPT_NO_VERIFY, OPT_METRICS, OPT_METRICS_REMOTE, OPT_SAMPLE_BY, OPT_SAMPLE_WINDOW, OPT_SAMPLE_DETACH, OPT_HIST,
       OPT_PAIR_WINDOW, OPT_SINCE, OPT_UNTIL, OPT_ROTATE, OPT_DIAGNOSE, OPT_NICE };

static const char record_doc[] =
"Record one record per I/O (block layer, nvme_tcp and nvmet_tcp as the kernel allows) "
"into a record file, until Ctrl-C, --duration, or CMD exits.  The records are written as they "
"are (~70 bytes each: a fraction of the CPU that coding them takes); -z codes and compresses "
"them as they are written (~12 bytes each).\n"
"\v"
"EXAMPLES:\n"
"  # the initiator, while fio runs:\n"
"  ntbpf record -d nvme1n1 -o init.ntbpf -- fio job.fio\n"
"  # the target, until Ctrl-C:\n"
"  ntbpf record --role target -o target.ntbpf\n"
"  # about 1 I/O in 10, for 30 s, printing the stages every second:\n"
"  ntbpf record --sample 10 --duration 30 --interval 1\n"
"  # then, anywhere:\n"
"  ntbpf report init.ntbpf target.ntbpf\n"
"  # to standard output, e.g. into ssh:\n"
"  ntbpf record -o - --duration 10 | ssh collector 'cat > host1.ntbpf'";

static const struct argp_option record_opts[] = {
	{ "output", 'o', "FILE", 0, "Record file to write (default: ntbpf.data; '-': standard output, and "
	  "everything else, CMD's output included, to standard error)", 0 },
	{ "role", OPT_ROLE, "ROLE", 0, "initiator, target or auto (default: auto, from the loaded nvme_tcp / nvmet_tcp modules)", 0 },
	{ "duration", OPT_DURATION, "SEC", 0, "Stop after SEC seconds", 0 },
	{ "device", 'd', "DEV", 0, "Only this block device (repeatable), e.g. nvme1n1", 0 },
	{ "sample", OPT_SAMPLE, "N", 0, "Record about 1 in N I/Os (same I/Os on initiator and target): "
	  "every I/O of one time window in N, the hooks armed only then (see --sample-by)", 0 },
	{ "sample-by", OPT_SAMPLE_BY, "time|io", 0, "time (default): windows of --sample-window ms, one in every N, "
	  "chosen from the wall clock, so hosts whose clocks agree (NTP) choose the same; between windows the "
	  "tracepoint hooks are detached (windows 1 s apart or more), the function hooks too where windows are "
	  "10 s apart or more, else they return at once (see --sample-detach).  io: a hash of each I/O's LBA, queue and command id decides, the hooks stay attached (every I/O "
	  "pays their dispatch; needs no clock agreement)", 0 },
	{ "sample-window", OPT_SAMPLE_WINDOW, "MS", 0, "Length of a --sample-by time window, 1 to 60000 (default "
	  "100 ms; from --sample 100 on, as long as makes windows 100 s apart: 1 s at --sample 100, 100 ms at 1000)", 0 },
	{ "sample-detach", OPT_SAMPLE_DETACH, "all|tracepoints", 0, "What --sample-by time detaches between windows: "
	  "all (default): the function hooks too where windows are 10 s apart or more (--sample 1000), each "
	  "attached again 1 s ahead of its window; tracepoints: only the tracepoint hooks, the function hooks "
	  "stay attached and return at once (no ftrace update per window, but each I/O pays their dispatch)", 0 },
	{ "kprobe", OPT_KPROBE, NULL, 0, "Attach kernel functions with kprobes even where fentry works", 0 },
	{ "bpf-stats", OPT_BPF_STATS, NULL, 0, "Measure the BPF programs' run time and print it per I/O", 0 },
	{ "compress", 'z', NULL, 0, "Code the records in columns and compress them while recording: files ~6x "
	  "smaller, ~0.75 k more instructions per recorded I/O on each host (as perf record -z)", 0 },
	{ "interval", OPT_INTERVAL, "SEC", 0, "Also print the stage latencies every SEC seconds (like ntbpf live)", 0 },
	{ "rotate", OPT_ROTATE, "SIZE|TIME", 0, "Write a numbered series FILE.0000, FILE.0001, ... each a whole "
	  "record file, a new one every SIZE bytes (K, M, G) or TIME (s, m, h); report reads the series as one", 0 },
	{ "nice", OPT_NICE, "N", 0, "Nice value of the loop that takes the records and writes them, -20 to 19 "
	  "(default 19: its bursts give way to the workload; should it fall behind, a per-CPU ring 3/4 full, it "
	  "catches up at the nice ntbpf started with)", 0 },
	{ "verbose", 'v', NULL, 0, "Print libbpf and attach details, and at the end the devices' own I/O counts against what the programs saw", 0 },
	{},
};

/* record's options, all read: the combinations they may not make, and the sampling defaults */
static error_t record_end(struct parse_ctx *pc, struct nt_config *cfg)
{
	if ((cfg->rotate_bytes || cfg->rotate_ns) && cfg->output && !strcmp(cfg->output, "-")) {
		fail(pc, "--rotate writes files: not with -o -");
		return EINVAL;
	}
	if (pc->sample_by == 2 && pc->sample_window_ms) {
		fail(pc, "--sample-window goes with --sample-by time, not io");
		return EINVAL;
	}
	if (pc->sample_by == 2 && pc->sample_detach) {
		fail(pc, "--sample-detach goes with --sample-by time, not io");
		return EINVAL;
	}
	cfg->sample_window_ms = pc->sample_by == 2 ? 0 :
		pc->sample_window_ms ? pc->sample_window_ms : nt_sample_window_ms(cfg->sample);
	if (!pc->sample_detach)
		cfg->sample_detach_all = true;	/* where windows are 10 s apart or more */
	return 0;
}

/* record's -o, --role, --duration and -d: where the records go, whose I/O, for how long */
static error_t record_what(struct parse_ctx *pc, int key, char *arg)
{
	struct nt_config *cfg = pc->cfg;
	double d;

	switch (key) {
	case 'o':
		cfg->output = arg;
		break;
	case OPT_ROLE:
		if (!strcmp(arg, "auto"))
			cfg->role = 0;
		else if (!strcmp(arg, "initiator") || !strcmp(arg, "host"))
			cfg->role = NTBPF_ROLE_INITIATOR;
		else if (!strcmp(arg, "target"))
			cfg->role = NTBPF_ROLE_TARGET;
		else {
			fail(pc, "bad --role '%s' (want initiator, target or auto)", arg);
			return EINVAL;
		}
		break;
	case OPT_DURATION:
		if (parse_double(arg, &d) || d <= 0) {
			fail(pc, "bad --duration '%s' (want seconds > 0)", arg);
			return EINVAL;
		}
		cfg->duration = d;
		break;
	case 'd':
		if (cfg->ndevs == NTBPF_MAX_DEVS) {
			fail(pc, "at most %d -d devices", NTBPF_MAX_DEVS);
			return EINVAL;
		}
		if (!strncmp(arg, "/dev/", 5))
			arg += 5;
		if (!*arg || strchr(arg, '/')) {
			fail(pc, "bad device name '%s'", arg);
			return EINVAL;
		}
		cfg->devs[cfg->ndevs++] = arg;
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

/* record's --sample and how it samples; record_end checks how they combine, once all are read */
static error_t record_sampling(struct parse_ctx *pc, int key, char *arg)
{
	struct nt_config *cfg = pc->cfg;

	switch (key) {
	case OPT_SAMPLE: {
		char *end;
		unsigned long v;

		errno = 0;
		v = strtoul(arg, &end, 10);
		if (errno || end == arg || *end || v < 1 || v > 1000000 || arg[0] == '-') {
			fail(pc, "bad --sample '%s' (want a whole number from 1 to 1000000)", arg);
			return EINVAL;
		}
		cfg->sample = v;
		break;
	}
	case OPT_SAMPLE_BY:
		if (strcmp(arg, "time") && strcmp(arg, "io")) {
			fail(pc, "bad --sample-by '%s' (want time or io)", arg);
			return EINVAL;
		}
		pc->sample_by = strcmp(arg, "time") ? 2 : 1;
		break;
	case OPT_SAMPLE_DETACH:
		if (strcmp(arg, "tracepoints") && strcmp(arg, "all")) {
			fail(pc, "bad --sample-detach '%s' (want all or tracepoints)", arg);
			return EINVAL;
		}
		cfg->sample_detach_all = !strcmp(arg, "all");
		pc->sample_detach = true;
		break;
	case OPT_SAMPLE_WINDOW: {
		char *end;
		unsigned long v;

		errno = 0;
		v = strtoul(arg, &end, 10);
		if (errno || end == arg || *end || v < 1 || v > 60000 || arg[0] == '-') {
			fail(pc, "bad --sample-window '%s' (want milliseconds from 1 to 60000)", arg);
			return EINVAL;
		}
		pc->sample_window_ms = v;
		break;
	}
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

/* record's --rotate, --interval, --nice and switches: how the recording runs */
static error_t record_how(struct parse_ctx *pc, int key, char *arg)
{
	struct nt_config *cfg = pc->cfg;
	double d;

	switch (key) {
	case OPT_ROTATE:
		if (nt_parse_rotate(arg, &cfg->rotate_bytes, &cfg->rotate_ns)) {
			fail(pc, "bad --rotate '%s' (want a size, 64M, 1G, or a time, 30s, 10m, 1h)", arg);
			return EINVAL;
		}
		break;
	case 'v':
		cfg->verbose = true;
		break;
	case OPT_KPROBE:
		cfg->force_kprobe = true;
		break;
	case OPT_BPF_STATS:
		cfg->bpf_stats = true;
		break;
	case 'z':
		cfg->compress = true;
		break;
	case OPT_INTERVAL:
		if (parse_double(arg, &d) || d < 0.1 || d > 3600) {
			fail(pc, "bad --interval '%s' (want seconds from 0.1 to 3600)", arg);
			return EINVAL;
		}
		cfg->interval = d;
		break;
	case OPT_NICE: {
		char *end;
		long v;

		errno = 0;
		v = strtol(arg, &end, 10);
		if (errno || end == arg || *end || v < -20 || v > 19) {
			fail(pc, "bad --nice '%s' (want a whole number from -20 to 19)", arg);
			return EINVAL;
		}
		cfg->nice = (int)v;
		break;
	}
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

/* argp's calls for record: each option to the step that reads its kind */
static error_t record_parse(int key, char *arg, struct argp_state *st)
{
	struct parse_ctx *pc = st->input;

	switch (key) {
	case ARGP_KEY_INIT:
		st->err_stream = pc->scratch;
		return 0;
	case 'o':
	case OPT_ROLE:
	case OPT_DURATION:
	case 'd':
		return record_what(pc, key, arg);
	case OPT_SAMPLE:
	case OPT_SAMPLE_BY:
	case OPT_SAMPLE_DETACH:
	case OPT_SAMPLE_WINDOW:
		return record_sampling(pc, key, arg);
	case OPT_ROTATE:
	case 'v':
	case OPT_KPROBE:
	case OPT_BPF_STATS:
	case 'z':
	case OPT_INTERVAL:
	case OPT_NICE:
		return record_how(pc, key, arg);
	case ARGP_KEY_END:
		return record_end(pc, pc->cfg);
	case ARGP_KEY_ARG:
		fail(pc, "unexpected argument '%s' (put the command to run after --)", arg);
		return EINVAL;
	case ARGP_KEY_ERROR:
		note_bad_arg(pc, st);
		return 0;
	default:
		return ARGP_ERR_UNKNOWN;
	}
}

/* ---- report ---- */

static const char report_doc[] =
"Merge record files from the initiator and the target, match each I/O across hosts, "
"and print the per-stage latency breakdown with percentiles.  Without FILE: ntbpf.data; "
"'-' reads standard input (a pipe will do).  Refused rather than reported wrong: the same "
"recording twice (a name twice, a copy; a recording is its role, host, boot and start), two "
"recordings of one host's I/Os at once, -o onto an input or a record file, an option the "
"format cannot show (--hist, --diagnose with csv).\n"
"\v"
"EXAMPLES:\n"
"  # the full breakdown, both hosts:\n"
"  ntbpf report initiator.ntbpf target.ntbpf\n"
"  # a recording streamed over ssh, never stored on the recording host:\n"
"  ntbpf record -o - --duration 10 | ssh collector ntbpf report -\n"
"  ntbpf report --percentiles 50,99,99.99 --group-by op,queue ntbpf.data\n"
"  ntbpf report --format json ntbpf.data | jq .groups[0].stages\n"
"  # charts to open in a browser:\n"
"  ntbpf report --format html -o report.html initiator.ntbpf target.ntbpf";

/* the doc's end: "STAGES (docs/stages.md):", every stage in the report's order, from the stage table */
static char *report_help_filter(int key, const char *text, void *input)
{
	char *buf, *p;
	size_t len, line;

	if (key != ARGP_KEY_HELP_POST_DOC || !text)
		return (char *)text;
	len = strlen(text) + 32;
	for (int s = 0; s < NT_ST_NR; s++)
		len += strlen(nt_stage_name(s)) + 3;
	buf = malloc(len);
	if (!buf)
		return (char *)text;
	p = buf + sprintf(buf, "%s\nSTAGES (docs/stages.md):", text);
	line = strlen("STAGES (docs/stages.md):");
	for (int k = 0; k < NT_ST_NR; k++) {
		int s = nt_stage_at_row[k];
		const char *name = nt_stage_name(s);

		if (line + 1 + strlen(name) > 61) {
			p += sprintf(p, "\n ");
			line = 1;
		}
		p += sprintf(p, " %s", name);
		line += 1 + strlen(name);
	}
	return buf;
}

static const struct argp_option report_opts[] = {
	{ "percentiles", OPT_PCT, "LIST", 0, "Percentiles to print (default: 50,90,99,99.9): decimal numbers in "
	  "(0, 100], each once, labelled as written (99.999 -> p99.999_us)", 0 },
	{ "format", OPT_FORMAT, "FMT", 0, "text, json, csv or html (default: text).  html: one self-contained "
	  "file (inline SVG and CSS, nothing from the network) with charts per group: the stages at p50 and p99, "
	  "an end_to_end heatmap over time, each stage's p50 and p99 over time", 0 },
	{ "output", 'o', "FILE", 0, "Write the report to FILE (mode 0600; an existing FILE is kept as FILE.old) "
	  "instead of standard output.  Refused when FILE is one of the inputs or an ntbpf record file", 0 },
	{ "group-by", OPT_GROUP, "KEYS", 0, "Group by op,size,dev,queue,host,subsys,ns or none (default: op,size,dev)", 0 },
	{ "window", OPT_PAIR_WINDOW, "SECONDS", 0, "Pairing window: longer than the slowest I/O (default: 2); a slower "
	  "one is counted, and paired only if its partner is still held.  Memory grows with it", 0 },
	{ "since", OPT_SINCE, "TIME", 0, "Only I/Os that started at or after TIME: RFC 3339 (2026-11-25T14:00:05Z) "
	  "or seconds from the recording's start", 0 },
	{ "until", OPT_UNTIL, "TIME", 0, "Only I/Os that started before TIME (as --since)", 0 },
	{ "hist", OPT_HIST, NULL, 0, "Also print each stage's distribution as a log2 histogram in microseconds "
	  "(as biolatency); JSON: its bins (log2_us)", 0 },
	{ "diagnose", OPT_DIAGNOSE, NULL, 0, "Also print findings: the dominant stage's likely cause (too_few_queues, "
	  "queue_imbalance, target_device, target_cpu, network, initiator_cpu; interference: a host's target stages "
	  "growing with another host's load), its evidence and the knob; groups by queue too (docs/diagnose.md); "
	  "JSON: findings", 0 },
	{ "verbose", 'v', NULL, 0, "Also print empty stages and each file's facts: the command line that recorded it, its start, end and sampling, its NVMe subsystems and addresses", 0 },
	{},
};

static error_t report_parse(int key, char *arg, struct argp_state *st)
{
	struct parse_ctx *pc = st->input;
	struct nt_config *cfg = pc->cfg;
	char msg[160];

	switch (key) {
	case ARGP_KEY_INIT:
		st->err_stream = pc->scratch;
		break;
	case OPT_PCT:
		pc->pcts_given = true;
		memset(cfg->pct_labels, 0, sizeof(cfg->pct_labels));
		if (nt_parse_percentiles(arg, cfg->pcts, cfg->pct_labels, &cfg->npcts, msg, sizeof(msg))) {
			fail(pc, "%s", msg);
			return EINVAL;
		}
		break;
	case OPT_FORMAT:
		if (!strcmp(arg, "text"))
			cfg->format = NT_FMT_TEXT;
		else if (!strcmp(arg, "json"))
			cfg->format = NT_FMT_JSON;
		else if (!strcmp(arg, "csv"))
			cfg->format = NT_FMT_CSV;
		else if (!strcmp(arg, "html") && cfg->cmd == NT_CMD_REPORT)
			cfg->format = NT_FMT_HTML;
		else {
			fail(pc, "bad --format '%s' (want text, json, csv%s)", arg, cfg->cmd == NT_CMD_REPORT ? " or html" : "");
			return EINVAL;
		}
		break;
	case OPT_PAIR_WINDOW:
		if (parse_double(arg, &cfg->pair_window) || cfg->pair_window <= 0 || cfg->pair_window > 3600) {
			fail(pc, "bad --window '%s' (want seconds in (0, 3600])", arg);
			return EINVAL;
		}
		break;
	case OPT_SINCE:
	case OPT_UNTIL:
		if (nt_parse_when(arg, key == OPT_SINCE ? &cfg->since : &cfg->until)) {
			fail(pc, "bad --%s '%s' (want RFC 3339, e.g. 2026-11-25T14:00:05Z, or seconds from the start)",
			     key == OPT_SINCE ? "since" : "until", arg);
			return EINVAL;
		}
		break;
	case 'o':
		cfg->report_output = arg;
		break;
	case OPT_HIST:
		cfg->hist = true;
		break;
	case OPT_DIAGNOSE:
		cfg->diagnose = true;
		break;
	case OPT_GROUP:
		if (nt_parse_group_by(arg, &cfg->group_by, msg, sizeof(msg))) {
			fail(pc, "%s", msg);
			return EINVAL;
		}
		break;
	case 'v':
		cfg->verbose = true;
		break;
	case ARGP_KEY_ARG:
		cfg->files[cfg->nfiles++] = arg;	/* room for every argument */
		break;
	case ARGP_KEY_END:
		if (!cfg->nfiles)
			cfg->files[cfg->nfiles++] = "ntbpf.data";	/* what record writes by default */
		for (int i = 0, stdins = 0; i < cfg->nfiles; i++)
			if (!strcmp(cfg->files[i], "-") && ++stdins > 1) {
				fail(pc, "'-' (standard input) given more than once");
				return EINVAL;
			}
		if (cfg->since.set && cfg->until.set && cfg->since.rel == cfg->until.rel && cfg->since.ns >= cfg->until.ns) {
			fail(pc, "--since must be before --until");
			return EINVAL;
		}
		if (bad_for_format(pc))
			return EINVAL;
		break;
	case ARGP_KEY_ERROR:
		note_bad_arg(pc, st);
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

/* ---- script ---- */

static const char script_doc[] =
"Print every I/O of record files as a row (like perf script and biosnoop): an initiator I/O "
"and its target record merged into one row, I/Os seen on one host only flagged (match), in "
"order of completion time.  Columns: time (completion, RFC 3339 UTC with ns), host, "
"target_host, device, op, size, lba, qid, cid, status, match, then <stage>_ns for every stage "
"(empty where not measured), end_to_end_ns among them.  What the rows cannot show (records "
"lost while recording, I/Os in flight at its start or stop, admin commands) is one line on "
"standard error.  Without FILE: ntbpf.data; '-' reads standard input.  The same recording given "
"twice (a name twice, a copy), or two recordings of one host's I/Os at once, is refused: its rows "
"would be printed twice.\n"
"\v"
"EXAMPLES:\n"
"  ntbpf script initiator.ntbpf target.ntbpf > ios.csv\n"
"  # the failed I/Os, and the 10 slowest:\n"
"  ntbpf script --format json ntbpf.data | jq -c 'select(.status != \"ok\")'\n"
"  ntbpf script --format json | jq -sc 'sort_by(.end_to_end_ns) | .[-10:][]'";

static const struct argp_option script_opts[] = {
	{ "format", OPT_FORMAT, "FMT", 0, "csv (default) or json (JSON Lines: one object per I/O)", 0 },
	{},
};

static error_t script_parse(int key, char *arg, struct argp_state *st)
{
	struct parse_ctx *pc = st->input;

	switch (key) {
	case OPT_FORMAT:
		if (!strcmp(arg, "csv"))
			pc->cfg->format = NT_FMT_CSV;
		else if (!strcmp(arg, "json"))
			pc->cfg->format = NT_FMT_JSON;
		else {
			fail(pc, "bad --format '%s' (want csv or json)", arg);
			return EINVAL;
		}
		return 0;
	case ARGP_KEY_INIT:
		pc->cfg->format = NT_FMT_CSV;
		/* fall through */
	case ARGP_KEY_ARG:
	case ARGP_KEY_END:
	case ARGP_KEY_ERROR:
		return report_parse(key, arg, st);
	default:
		return ARGP_ERR_UNKNOWN;
	}
}

/* ---- live ---- */

static const char live_doc[] =
"Print the stage latencies every interval while the workload runs (like biolatency "
"[interval] [count]): IOPS and, per group, each stage this host sees.  With --peer on the "
"initiator and --serve on the target, the initiator prints all ten stages, network included.  "
"With -d naming NVMe namespaces only, the block_rq_issue hook waits until an I/O comes without "
"its start stamp (queue/iostats 0): no stage of an NVMe I/O ends there, and every other block "
"device's I/O on the host then passes one hook less.\n"
"\v"
"EXAMPLES:\n"
"  # every second, this host's stages, until Ctrl-C:\n"
"  ntbpf live\n"
"  # every 5 s, 12 times:\n"
"  ntbpf live -d nvme1n1 5 12\n"
"  # all ten stages every second: on the target, then on the initiator\n"
"  ntbpf live --serve 0.0.0.0:4430 --key ~/.ntbpf.key\n"
"  ntbpf live --peer target-host:4430 --key ~/.ntbpf.key -d nvme1n1\n"
"  ntbpf live --format json | jq .groups[0].stages.end_to_end\n"
"  # a Prometheus endpoint at http://127.0.0.1:9464/metrics, updated every 5 s:\n"
"  ntbpf live --metrics 127.0.0.1:9464 5 > /dev/null";

static const struct argp_option live_opts[] = {
	{ "role", OPT_ROLE, "ROLE", 0, "initiator, target or auto (default: auto)", 0 },
	{ "device", 'd', "DEV", 0, "Only this block device (repeatable)", 0 },
	{ "sample", OPT_SAMPLE, "N", 0, "Look at about 1 in N I/Os", 0 },
	{ "percentiles", OPT_PCT, "LIST", 0, "Percentiles to print (default: 50,99): decimal numbers in (0, 100], "
	  "each once, labelled as written", 0 },
	{ "format", OPT_FORMAT, "FMT", 0, "text, json (one object per interval) or csv (a row per group and stage, led by the time)", 0 },
	{ "group-by", OPT_GROUP, "KEYS", 0, "Group by op,size,dev,queue,host,subsys,ns or none (default: op,size,dev)", 0 },
	{ "hist", OPT_HIST, NULL, 0, "Also print each stage's log2 histogram in microseconds every interval "
	  "(as biolatency); JSON: its bins (log2_us)", 0 },
	{ "serve", OPT_SERVE, "ADDR:PORT", 0, "Target: stream every record to the initiator that connects here; "
	  "with --key DIR to up to 8, each only its own host's records", 0 },
	{ "peer", OPT_PEER, "ADDR:PORT", 0, "Initiator: merge the target's records from there (reconnects)", 0 },
	{ "key", OPT_KEY, "FILE", 0, "Shared secret of --serve and --peer (a file of 16+ bytes, mode 0600, yours); "
	  "without it --serve takes only a loopback address; on the target a directory of one key file per "
	  "host, named by its hostnqn", 0 },
	{ "records", OPT_RECORDS, NULL, 0, "Per-I/O records to user space (default without --serve/--peer: "
	  "histograms in the kernel, percentiles within 1.6 %)", 0 },
	{ "metrics", OPT_METRICS, "ADDR:PORT", 0, "Serve OpenMetrics / Prometheus text at http://ADDR:PORT/metrics, "
	  "updated every interval (ADDR must be loopback unless --metrics-remote)", 0 },
	{ "metrics-remote", OPT_METRICS_REMOTE, NULL, 0, "Allow a non-loopback --metrics address (the endpoint has no "
	  "authentication: firewall it)", 0 },
	{ "kprobe", OPT_KPROBE, NULL, 0, "Attach kernel functions with kprobes even where fentry works", 0 },
	{ "bpf-stats", OPT_BPF_STATS, NULL, 0, "Measure the BPF programs' run time and print it per I/O at the end", 0 },
	{ "verbose", 'v', NULL, 0, "Print libbpf details", 0 },
	{},
};

static error_t live_parse(int key, char *arg, struct argp_state *st)
{
	struct parse_ctx *pc = st->input;
	struct nt_config *cfg = pc->cfg;
	char host[128], port[16];
	double d;

	switch (key) {
	case OPT_SERVE:
		cfg->serve = arg;
		return 0;
	case OPT_PEER:
		cfg->peer = arg;
		return 0;
	case OPT_KEY:
		cfg->key = arg;
		return 0;
	case OPT_RECORDS:
		cfg->records = true;
		return 0;
	case OPT_METRICS:
		cfg->metrics = arg;
		return 0;
	case OPT_METRICS_REMOTE:
		cfg->metrics_remote = true;
		return 0;
	case OPT_PCT:
		pc->pcts_given = true;
		return report_parse(key, arg, st);
	case OPT_FORMAT:
	case OPT_GROUP:
	case OPT_HIST:
		return report_parse(key, arg, st);
	case ARGP_KEY_ARG:
		if (st->arg_num == 0) {
			if (parse_double(arg, &d) || d < 0.1 || d > 3600) {
				fail(pc, "bad interval '%s' (want seconds from 0.1 to 3600)", arg);
				return EINVAL;
			}
			cfg->interval = d;
		} else if (st->arg_num == 1) {
			char *end;
			long n = strtol(arg, &end, 10);

			if (*end || end == arg || n < 1 || n > 100000000) {
				fail(pc, "bad count '%s' (want a whole number >= 1)", arg);
				return EINVAL;
			}
			cfg->count = (int)n;
		} else {
			fail(pc, "unexpected argument '%s' (usage: ntbpf live [interval] [count])", arg);
			return EINVAL;
		}
		return 0;
	case ARGP_KEY_END:
		if (cfg->serve && cfg->peer) {
			fail(pc, "--serve (target) and --peer (initiator) exclude each other");
			return EINVAL;
		}
		if ((cfg->serve || cfg->peer) &&
		    nt_split_addr(cfg->serve ? cfg->serve : cfg->peer, host, sizeof(host), port, sizeof(port))) {
			fail(pc, "bad %s '%s' (want ADDR:PORT, port 1-65535)", cfg->serve ? "--serve" : "--peer",
			     cfg->serve ? cfg->serve : cfg->peer);
			return EINVAL;
		}
		if (cfg->key && !cfg->serve && !cfg->peer) {
			fail(pc, "--key is for --serve or --peer");
			return EINVAL;
		}
		if (cfg->metrics && nt_split_addr(cfg->metrics, host, sizeof(host), port, sizeof(port))) {
			fail(pc, "bad --metrics '%s' (want ADDR:PORT, e.g. 127.0.0.1:9464)", cfg->metrics);
			return EINVAL;
		}
		if (cfg->metrics_remote && !cfg->metrics) {
			fail(pc, "--metrics-remote without --metrics ADDR:PORT");
			return EINVAL;
		}
		if (bad_for_format(pc))
			return EINVAL;
		return 0;
	default:
		return record_parse(key, arg, st);
	}
}

/* ---- probe ---- */

static const char probe_doc[] =
"List every hook ntbpf wants on this kernel, whether it can attach and how "
"(tp_btf, raw_tp, fentry, kprobe), or why not.\n"
"\v"
"EXAMPLES:\n"
"  ntbpf probe";

static const struct argp_option probe_opts[] = {
	{ "kprobe", OPT_KPROBE, NULL, 0, "Show what kprobes would attach (instead of fentry)", 0 },
	{ "no-verify", OPT_NO_VERIFY, NULL, 0, "Decide from the kernel's facts only; do not load the programs to verify (as root, probe loads them: seconds in a slow VM)", 0 },
	{ "facts", OPT_FACTS, NULL, OPTION_HIDDEN, "Print the facts hook choice is made from", 0 },
	{},
};

static error_t probe_parse(int key, char *arg, struct argp_state *st)
{
	struct parse_ctx *pc = st->input;

	switch (key) {
	case ARGP_KEY_INIT:
		st->err_stream = pc->scratch;
		break;
	case OPT_KPROBE:
		pc->cfg->force_kprobe = true;
		break;
	case OPT_FACTS:
		pc->cfg->probe_facts = true;
		break;
	case OPT_NO_VERIFY:
		pc->cfg->probe_no_verify = true;
		break;
	case ARGP_KEY_ARG:
		fail(pc, "unexpected argument '%s'", arg);
		return EINVAL;
	case ARGP_KEY_ERROR:
		note_bad_arg(pc, st);
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

static const char top_usage[] =
"Usage: ntbpf COMMAND [OPTION...]\n"
"Where every microsecond of an NVMe/TCP I/O goes, on stock kernels (eBPF).\n\n"
"Commands:\n"
"  record   record one record per I/O on this host (initiator or target)\n"
"  report   merge record files of both hosts and print the stage breakdown\n"
"  script   print every I/O of record files as a row (CSV or JSON Lines)\n"
"  live     print the stage latencies every second while the workload runs\n"
"  probe    list the hooks this kernel offers and how ntbpf attaches them\n\n"
"EXAMPLES:\n"
"  target#    ntbpf record --role target -o target.ntbpf        (Ctrl-C to stop)\n"
"  initiator# ntbpf record -o initiator.ntbpf -d nvme1n1 -- fio job.fio\n"
"  anywhere$  ntbpf report initiator.ntbpf target.ntbpf\n\n"
"Exit status: 0 done; 1 failed (the cause is one line on stderr), or a record file\n"
"was cut short (what it holds is still reported); 2 bad command line; with\n"
"'record -- CMD', CMD's failing status (128+N if killed by signal N).\n\n"
"'ntbpf COMMAND --help' (or -h) for the options of a command; 'ntbpf --version'.\n";

static void defaults(struct nt_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->output = "ntbpf.data";
	cfg->sample = 1;
	cfg->nice = 19;
	cfg->npcts = 4;
	cfg->pcts[0] = 50;
	cfg->pcts[1] = 90;
	cfg->pcts[2] = 99;
	cfg->pcts[3] = 99.9;
	cfg->group_by = NT_GB_OP | NT_GB_SIZE | NT_GB_DEV;
}

void nt_config_free(struct nt_config *cfg)
{
	free(cfg->files);
	cfg->files = NULL;
	cfg->nfiles = 0;
}

static int cli_parse(int argc, char **argv, struct nt_config *cfg, FILE *err);

/* help, usage or a bad command line: nothing stays allocated */
int nt_cli_parse(int argc, char **argv, struct nt_config *cfg, FILE *err)
{
	int rc = cli_parse(argc, argv, cfg, err);

	if (rc)
		nt_config_free(cfg);
	return rc;
}

/*
 * No command, or the top level's help or version: 1 when printed as asked,
 * -1 when nothing was given, 0 to go on to a command.
 */
static int top_level(int argc, char **argv, FILE *err)
{
	if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
		fputs(top_usage, argc < 2 ? err : stdout);
		return argc < 2 ? -1 : 1;
	}
	if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "-V") || !strcmp(argv[1], "version")) {
		printf("%s\n", argp_program_version);
		return 1;
	}
	return 0;
}

/* The command sub: cfg->cmd and its argp (NULL, said on err, when unknown or out of memory). */
static const struct argp *pick_command(const char *sub, int argc, struct nt_config *cfg, FILE *err)
{
	static const struct argp record_argp = { record_opts, record_parse, "[-- CMD [ARG...]]", record_doc, NULL, NULL, NULL };
	static const struct argp report_argp = { report_opts, report_parse, "[FILE...]", report_doc, NULL,
						 report_help_filter, NULL };
	static const struct argp probe_argp = { probe_opts, probe_parse, "", probe_doc, NULL, NULL, NULL };
	static const struct argp live_argp = { live_opts, live_parse, "[interval] [count]", live_doc, NULL, NULL, NULL };
	static const struct argp script_argp = { script_opts, script_parse, "[FILE...]", script_doc, NULL, NULL, NULL };
	const struct argp *ap;

	if (!strcmp(sub, "record")) {
		cfg->cmd = NT_CMD_RECORD;
		ap = &record_argp;
	} else if (!strcmp(sub, "report")) {
		cfg->cmd = NT_CMD_REPORT;
		ap = &report_argp;
		cfg->files = calloc(argc, sizeof(*cfg->files));	/* no limit but argc */
		if (!cfg->files) {
			fprintf(err, "ntbpf: out of memory\n");
			return NULL;
		}
	} else if (!strcmp(sub, "script")) {
		cfg->cmd = NT_CMD_SCRIPT;
		ap = &script_argp;
		cfg->files = calloc(argc, sizeof(*cfg->files));	/* no limit but argc */
		if (!cfg->files) {
			fprintf(err, "ntbpf: out of memory\n");
			return NULL;
		}
	} else if (!strcmp(sub, "probe")) {
		cfg->cmd = NT_CMD_PROBE;
		ap = &probe_argp;
	} else if (!strcmp(sub, "live")) {
		cfg->cmd = NT_CMD_LIVE;
		ap = &live_argp;
	} else {
		fprintf(err, "ntbpf: unknown command '%s' (want record, report, script, live or probe; see ntbpf --help)\n", sub);
		return NULL;
	}
	return ap;
}

/*
 * Where argv's "--" is (*dashdash, -1 if none) and how many arguments argp
 * parses (*sub_argc); -1, said on err, when record has nothing after it.
 */
static int split_dashdash(int argc, char **argv, struct nt_config *cfg, const char *sub, FILE *err,
			  int *sub_argcp, int *dashdashp)
{
	int sub_argc, i, dashdash = -1;

	/* "record ... -- CMD ARGS": argp must not see CMD's options */
	sub_argc = argc - 1;
	for (i = 2; i < argc; i++)
		if (!strcmp(argv[i], "--")) {
			dashdash = i;
			break;
		}
	/* elsewhere "--" ends the options as everywhere: what follows are arguments (report -- -odd-name) */
	if (dashdash >= 0 && cfg->cmd == NT_CMD_RECORD) {
		if (dashdash == argc - 1) {
			fprintf(err, "ntbpf %s: nothing after '--' (give the command to run)\n", sub);
			return -1;
		}
		cfg->cmd_argv = &argv[dashdash + 1];
		sub_argc = dashdash - 1;
	}
	*sub_argcp = sub_argc;
	*dashdashp = dashdash;
	return 0;
}

/* A help, usage or version option before "--": printed alone by argp (true), nothing else parsed. */
static bool help_asked(const struct argp *ap, int argc, char **argv, int dashdash, char *prog,
		       struct parse_ctx *pc)
{
	int i;

	for (i = 2; i < (dashdash >= 0 ? dashdash : argc); i++)
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-?") || !strcmp(argv[i], "-h") ||
		    !strcmp(argv[i], "--usage") || !strcmp(argv[i], "-V") ||
		    !strcmp(argv[i], "--version")) {
			char *hargv[] = { prog, strcmp(argv[i], "-h") ? argv[i] : "--help", NULL };

			pc->help = true;
			pc->scratch = stderr;
			argp_parse(ap, 2, hargv, ARGP_NO_EXIT, NULL, pc);
			return true;
		}
	return false;
}

/*
 * The command's options through argp, its own complaints into a scratch
 * stream (ours are the one line): argp's result (0 or an errno), or -1
 * without the stream.
 */
static int run_argp(const struct argp *ap, int sub_argc, char **argv, char *prog, struct parse_ctx *pc)
{
	char *scratch_buf = NULL;
	size_t scratch_len = 0;
	int rc;

	pc->scratch = open_memstream(&scratch_buf, &scratch_len);
	if (!pc->scratch)
		return -1;
	{
		char *saved = argv[1];

		argv[1] = prog;	/* argp and getopt name the program after argv[0] */
		/* ARGP_NO_ERRS: getopt quiet; its complaint becomes our one line, with the --help hint */
		rc = argp_parse(ap, sub_argc, argv + 1, ARGP_NO_ERRS | ARGP_IN_ORDER, NULL, pc);
		argv[1] = saved;
	}
	fclose(pc->scratch);
	free(scratch_buf);
	return rc;
}

/* live's interval, and the percentiles of what prints intervals, unless given */
static void interval_defaults(struct nt_config *cfg, const struct parse_ctx *pc)
{
	if (cfg->cmd == NT_CMD_LIVE) {
		if (!cfg->interval)
			cfg->interval = 1;
		if (!pc->pcts_given) {
			cfg->npcts = 2;
			cfg->pcts[0] = 50;
			cfg->pcts[1] = 99;
		}
	}
	if (cfg->cmd == NT_CMD_RECORD && cfg->interval && !pc->pcts_given) {
		cfg->npcts = 2;
		cfg->pcts[0] = 50;
		cfg->pcts[1] = 99;
	}
}

/* argp's result: 0, or -1 with the one line that says why (unless a parser said it) */
static int parse_result(int rc, const struct parse_ctx *pc, const char *prog, FILE *err)
{
	if (rc || pc->failed) {
		if (!pc->failed && pc->bad_arg && pc->bad_arg[0] == '-')
			fprintf(err, "%s: bad option '%s' (unknown here, or its value is missing; see '%s --help')\n",
				prog, pc->bad_arg, prog);
		else if (!pc->failed)
			fprintf(err, "%s: bad command line (%s; see '%s --help')\n", prog, strerror(rc), prog);
		return -1;
	}
	return 0;
}

static int cli_parse(int argc, char **argv, struct nt_config *cfg, FILE *err)
{
	const struct argp *ap;
	struct parse_ctx pc = { .cfg = cfg, .err = err };
	char prog[32];
	int sub_argc, dashdash, rc;
	const char *sub;

	defaults(cfg);
	argp_program_version = nt_version_line();
	if ((rc = top_level(argc, argv, err)))
		return rc;
	sub = argv[1];
	ap = pick_command(sub, argc, cfg, err);
	if (!ap)
		return -1;
	if (split_dashdash(argc, argv, cfg, sub, err, &sub_argc, &dashdash))
		return -1;
	snprintf(prog, sizeof(prog), "ntbpf %s", sub);
	pc.prog = prog;
	if (help_asked(ap, argc, argv, dashdash, prog, &pc))
		return 1;
	rc = run_argp(ap, sub_argc, argv, prog, &pc);
	if (rc < 0)
		return -1;
	interval_defaults(cfg, &pc);
	return parse_result(rc, &pc, prog, err);
}
