// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * "ntbpf report" as main() runs it (nt_cli_parse, nt_report_cmd) against
 * golden files (tests/unit/golden/): a block-only recording, and a two-host
 * pair with all ten stages; the exit status on good, cut and unreadable
 * files; the in-memory path against the files path.
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
#include <sys/stat.h>
#include "report.h"
#include "golden.h"
#include "testapi.h"
#include "../../bench/synth.h"

/*
 * "ntbpf report ARGS..." as main() runs it (nt_cli_parse, nt_report_cmd), in
 * dir, on the files there; stdout returned (malloc'd), *rc its exit status,
 * the JSON's ntbpf_version (the build's) replaced by "test".
 */
static char *report_cli(const char *dir, const char *args, int *rc)
{
	char line[512], *argv[32], *save, *out = NULL, cwd[4096], *v;
	int argc = 0;
	size_t olen = 0;
	struct nt_config cfg;
	FILE *o, *e = fopen("/dev/null", "w");

	snprintf(line, sizeof(line), "ntbpf report %s", args);
	for (char *t = strtok_r(line, " ", &save); t && argc < 31; t = strtok_r(NULL, " ", &save))
		argv[argc++] = t;
	argv[argc] = NULL;
	assert_non_null(getcwd(cwd, sizeof(cwd)));
	assert_int_equal(chdir(dir), 0);
	assert_int_equal(nt_cli_parse(argc, argv, &cfg, e), 0);
	o = open_memstream(&out, &olen);
	*rc = nt_report_cmd(&cfg, o, e);
	nt_config_free(&cfg);
	fclose(o);
	fclose(e);
	assert_int_equal(chdir(cwd), 0);
	v = strstr(out, "{\"ntbpf_version\": \"");
	if (v) {
		char *q;

		v += strlen("{\"ntbpf_version\": \"");
		q = strchr(v, '"');
		assert_non_null(q);
		assert_true(q - v >= 4);	/* git describe: never shorter */
		memcpy(v, "test", 4);
		memmove(v + 4, q, strlen(q) + 1);
	}
	return out;
}

/* a scratch directory for record files */
static char *scratch_dir(void)
{
	static char dir[64];

	snprintf(dir, sizeof(dir), "/tmp/ntbpf-test-XXXXXX");
	assert_non_null(mkdtemp(dir));
	return dir;
}

static void scratch_rm(const char *dir, const char *const *names, int n)
{
	char path[256];

	for (int i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
		unlink(path);
	}
	rmdir(dir);
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
		if (i % 331 == 7)
			r.status = 10;	/* failed: a blk_status_t */
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

/* the block-only recording as "ntbpf report --format FMT --percentiles 50,99,99.9 init.ntbpf" prints it */
static char *render(enum nt_format fmt, size_t nrec)
{
	static const char *const fmts[] = { [NT_FMT_TEXT] = "text", [NT_FMT_JSON] = "json", [NT_FMT_CSV] = "csv" };
	const char *names[] = { "init.ntbpf" };
	char *dir = scratch_dir(), path[256], args[128], *out;
	FILE *f;
	int rc;

	snprintf(path, sizeof(path), "%s/init.ntbpf", dir);
	f = fopen(path, "wb");
	assert_non_null(f);
	make_init_file(f, nrec, true);
	fclose(f);
	snprintf(args, sizeof(args), "--format %s --percentiles 50,99,99.9 init.ntbpf", fmts[fmt]);
	out = report_cli(dir, args, &rc);
	assert_int_equal(rc, 0);
	scratch_rm(dir, names, 1);
	return out;
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

/* --hist: biolatency's histograms (golden), and in JSON bins that count every value of the stage */
static void test_hist(void **state)
{
	const char *names[] = { "init.ntbpf" };
	char *dir = scratch_dir(), path[256], *out, *p;
	FILE *f;
	int rc, stages = 0;

	snprintf(path, sizeof(path), "%s/init.ntbpf", dir);
	f = fopen(path, "wb");
	assert_non_null(f);
	make_init_file(f, 2000, true);
	fclose(f);
	out = report_cli(dir, "--hist --percentiles 50,99 init.ntbpf", &rc);
	assert_int_equal(rc, 0);
	check_golden("report-hist.txt", out);
	assert_non_null(strstr(out, "\nend_to_end\n     usecs               : count    distribution\n"
				    "         0 -> 1          : 0        |                                        |\n"));
	free(out);
	out = report_cli(dir, "--hist --format json init.ntbpf", &rc);
	assert_int_equal(rc, 0);
	for (p = out; (p = strstr(p, "{\"count\": ")); p++) {
		unsigned long count, sum = 0, bin;
		char *b = strstr(p, "\"log2_us\": [");
		int used;

		assert_int_equal(sscanf(p, "{\"count\": %lu", &count), 1);
		assert_non_null(b);
		b += strlen("\"log2_us\": [");
		while (sscanf(b, "%lu%n", &bin, &used) == 1) {
			sum += bin;
			b += used;
			if (*b == ',')
				b += 2;
		}
		assert_int_equal(*b, ']');
		assert_int_equal(sum, count);
		stages++;
	}
	assert_int_equal(stages, 7 * 3);
	free(out);
	out = report_cli(dir, "init.ntbpf", &rc);
	assert_null(strstr(out, "usecs"));	/* only with --hist */
	free(out);
	scratch_rm(dir, names, 1);
}

/* the numbers themselves, independent of the golden files */
static void test_values(void **state)
{
	char *s = render(NT_FMT_CSV, 2000), *line;
	int n = 0;

	/* 2000 I/Os: i%5==0 on loop0 (400), of those i%4==3 writes (100) */
	line = strstr(s, "write,131072,loop0,-,100,end_to_end,100,");
	assert_non_null(line);
	/* 1200 reads of 4k on nvme0n1, 4 of which failed (i % 331 == 7: 338, 669, 1662, 1993): their own group */
	line = strstr(s, "read,4096,nvme0n1,-,1196,blk_device,1196,");
	assert_non_null(line);
	assert_non_null(strstr(s, "read,4096,nvme0n1,-,4,blk_device,4,"));
	assert_non_null(strstr(s, "write,131072,nvme0n1,-,2,end_to_end,2,"));
	assert_non_null(strstr(s, "read,4096,loop0,-,1,end_to_end,1,"));
	{
		/*
		 * min_us,max_us,status,span_s,iops,mb_s, then the 9 queue columns (empty: not
		 * grouped by queue); one I/O every 100 us from t0 = 1 s
		 */
		double mn, mx, span, iops, mbs;
		char status[32];
		const char *row = strstr(s, "read,4096,nvme0n1,-,1196,end_to_end,1196,");

		assert_non_null(row);
		/* the six after the 15th comma from the end of the row */
		row = strchr(row, '\n');
		for (int commas = 0; commas < 15; row--)
			commas += row[-1] == ',';
		row++;
		assert_int_equal(sscanf(row, "%lf,%lf,%31[^,],%lf,%lf,%lf", &mn, &mx, status, &span, &iops, &mbs), 6);
		assert_string_equal(status, "ok");
		/* first read of nvme0n1: i = 1; last: i = 1998 (its end up to 100 us later) */
		assert_true(span >= 0.1997 && span <= 0.1998 + 0.0001);
		assert_true(iops > 1196 / 0.1999 && iops < 1196 / 0.1997);
		assert_true(mbs > iops * 4096 / 1e6 * 0.999 && mbs < iops * 4096 / 1e6 * 1.001);
		assert_true(mn >= 20.2 && mn < mx && mx >= 2000);	/* the tail: i % 97 == 0 adds 2 ms */
	}
	assert_non_null(strstr(s, ",blk:10,0.000000,,,,,,,,,,,\n"));	/* one I/O: no rate; no queue */
	for (line = s; (line = strchr(line, '\n')); line++)
		n++;
	assert_int_equal(n, 1 + 7 * 3);	/* header + 4 groups and 3 of failed I/Os x 3 stages */
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
	cfg.files = &file;
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

/*
 * "ntbpf report" reads files once and keeps summaries (nt_report_build_files);
 * nt_report_build pairs records held in memory and adds them one I/O at a
 * time (nt_report_add, as live does).  Both
 * must print the same report, byte for byte, on a varied two-host set:
 * matched and unmatched I/Os on both sides, two initiator files, admin
 * commands, R2T writes, stand-in boundaries, events out of order, a
 * block-only device, and a file cut short.
 */
/* the synthetic hosts (bench/synth.h), with a block-only device too */
static struct nt_writer *open_host(FILE *f, int role, const char *host)
{
	struct nt_ctrl_info *c;
	struct nt_header h;
	struct nt_writer *w;

	c = synth_header(&h, role);
	if (host) {	/* another host: not a second copy of the first one's recording (refused) */
		snprintf(h.hostname, sizeof(h.hostname), "%s", host);
		snprintf(h.boot_id, sizeof(h.boot_id), "%s", host);
	}
	h.ndevs = 2;
	snprintf(h.devs[1], sizeof(h.devs[1]), "loop0=7:0");
	/* queues 1-3 of the 4 in the header's list (4: not known), as ntbpf record lists them */
	for (int k = 1; c && k <= 3; k++) {
		struct nt_queue_info *q = nt_ctrl_add_queue(c);

		assert_non_null(q);
		q->qid = k;
		q->io_cpu = k - 1;
		q->rx_queue = k == 3 ? -1 : k;
		q->tx_queue = k == 1 ? -1 : k + 4;
		snprintf(q->saddr, sizeof(q->saddr), role == NTBPF_ROLE_TARGET ? "10.0.0.2" : "10.0.0.1");
		snprintf(q->daddr, sizeof(q->daddr), role == NTBPF_ROLE_TARGET ? "10.0.0.1" : "10.0.0.2");
		q->sport = role == NTBPF_ROLE_TARGET ? 4420 : 40000 + k - 1;
		q->dport = role == NTBPF_ROLE_TARGET ? 40000 + k - 1 : 4420;
	}
	w = nt_writer_open(f, &h);
	nt_header_free(&h);
	assert_non_null(w);
	return w;
}

/* what make_hosts wrote, as ground truth */
struct hosts_truth {
	size_t pairs;		/* I/Os with a record on both hosts (admin excluded) */
	size_t init_only, tgt_only, blk_only, admin, r2t;
	size_t failed;		/* I/Os with an initiator record that failed (NVMe status 0x4281) */
};

/*
 * N synthetic NVMe/TCP I/Os (bench/synth.h: 4 queues, the target's clock
 * 7.78 ms ahead) as the initiator (files ia and, for some queues' I/Os, ib
 * when given: a second initiator host's) and the target (tg) record them: R2T writes, stand-in
 * boundaries, events out of order, admin commands, a block-only device,
 * I/Os missing on either host.
 */
static void make_hosts(FILE *ia, FILE *ib, FILE *tg, size_t n, struct hosts_truth *x)
{
	struct nt_writer *w[3] = { open_host(ia, NTBPF_ROLE_INITIATOR, NULL),
				   ib ? open_host(ib, NTBPF_ROLE_INITIATOR, "bench-initiator-b") : NULL,
				   open_host(tg, NTBPF_ROLE_TARGET, NULL) };
	struct nt_trailer t = { 0 };
	struct synth s;

	memset(x, 0, sizeof(*x));
	synth_init(&s);
	for (uint64_t k = 0; k < n; k++) {
		struct ntbpf_rec i, g;
		int a = ib && (k / 4) % 3 == 2;	/* some queues' I/Os in the second initiator file */
		bool admin = false, has_i = true, has_g = true;

		synth_pair(&s, k, &i, &g);
		i.depth = 1 + (k / 4) % 8;	/* the queue's requests in flight, as each host saw them */
		g.depth = 1 + (k / 4) % 5;
		if (k % 7 == 3) {	/* an R2T write */
			i.op = g.op = NTBPF_OP_WRITE;
			i.bytes = g.bytes = 131072;
			synth_set(&i, EV_I_R2T_ARRIVE, i.t0 + i.ev[EV_I_CMD_SENT] + 9000);
			synth_set(&i, EV_I_DATA_SENT, i.t0 + i.ev[EV_I_CMD_SENT] + 9000 + 3000 + k % 5000);
			synth_set(&g, EV_T_R2T_SENT, g.t0 + g.ev[EV_T_CMD_PICKUP] + 500);
			synth_set(&g, EV_T_DATA_ARRIVE, g.t0 + g.ev[EV_T_CMD_PICKUP] + 500 + 15000 + k % 3000);
			x->r2t++;
		}
		if (k % 11 == 5)	/* no queue_rq: blk_submission ends at the stand-in blk_issue */
			i.ev_mask &= ~(1u << EV_I_QUEUE_RQ);
		if (k % 13 == 6)	/* events out of order */
			g.ev[EV_T_EXEC] = g.ev[EV_T_SUBSYS_DONE] + 10;
		if (k % 17 == 7)	/* no exec hook on the target */
			g.ev_mask &= ~(1u << EV_T_EXEC);
		if (k % 149 == 20)	/* failed: unrecovered read error, do not retry */
			i.status = g.status = 0x4281;
		if (k % 101 == 50) {	/* an admin command on both hosts */
			i.flags |= NTBPF_F_ADMIN;
			g.flags |= NTBPF_F_ADMIN;
			admin = true;
		}
		if (k % 89 == 1) {	/* a loop device I/O: block layer only */
			struct ntbpf_rec b = i;

			b.flags = 0;
			b.dev = 7u << 20;
			b.ev_mask &= (1u << EV_I_BLK_START) | (1u << EV_I_BLK_ISSUE) | (1u << EV_I_BLK_DONE);
			assert_int_equal(nt_writer_add(w[a], &b), 0);
			x->blk_only++;
		}
		if (k % 53 != 9)	/* else the target record is missing: unmatched initiator I/O */
			assert_int_equal(nt_writer_add(w[2], &g), 0);
		else
			has_g = false;
		if (k % 61 != 4)	/* else the initiator record is missing: unmatched target record */
			assert_int_equal(nt_writer_add(w[a], &i), 0);
		else
			has_i = false;
		x->failed += !admin && has_i && i.status;
		if (admin)
			x->admin += has_i + has_g;
		else if (has_i && has_g)
			x->pairs++;
		else if (has_i)
			x->init_only++;
		else if (has_g)
			x->tgt_only++;
		if (ib && k % 3000 == 2999)	/* chunks of ~1000 records in the second initiator file */
			assert_int_equal(nt_writer_flush(w[1]), 0);
	}
	t.records = n;
	t.stats[ST_LOST_RINGBUF] = 2;
	for (int k = 0; k < 3; k++)
		if (w[k])
			assert_int_equal(nt_writer_close(w[k], &t), 0);
}

static void test_files_path_equals_records_path(void **state)
{
	enum { N = 30000, NF = 3 };
	char *buf[NF] = { 0 }, *out[2][2] = { { 0 } }, err[256];
	size_t len[NF] = { 0 }, olen;
	FILE *f[NF];
	struct hosts_truth x;
	const char *names[NF] = { "init-a.ntbpf", "init-b.ntbpf", "tgt.ntbpf" };
	long cut;

	for (int k = 0; k < NF; k++)
		f[k] = open_memstream(&buf[k], &len[k]);
	make_hosts(f[0], f[1], f[2], N, &x);
	for (int k = 0; k < NF; k++)
		fclose(f[k]);
	/* the second initiator file was cut short, inside a chunk */
	cut = (long)len[1] * 2 / 3;
	for (int fmt = 0; fmt < 2; fmt++) {
		struct nt_report_opts o = { .version = "test", .npcts = 3, .pcts = { 50, 99, 99.9 },
					    .format = fmt ? NT_FMT_JSON : NT_FMT_TEXT,
					    .group_by = NT_GB_OP | NT_GB_SIZE | NT_GB_DEV | NT_GB_QUEUE };

		for (int path = 0; path < 2; path++) {
			struct nt_input in[NF];
			struct nt_report rep;
			FILE *r[NF], *o_;

			for (int k = 0; k < NF; k++)
				r[k] = fmemopen(buf[k], k == 1 ? (size_t)cut : len[k], "rb");
			if (path == 0) {
				for (int k = 0; k < NF; k++)
					assert_int_equal(nt_input_load_stream(&in[k], r[k], names[k], err, sizeof(err)), 0);
				assert_int_equal(nt_report_build(&rep, in, NF, &o), 0);
			} else {
				FILE *warn = fopen("/dev/null", "w");

				assert_int_equal(nt_report_build_files(&rep, in, r, names, NF, &o, warn, err, sizeof(err)), 0);
				fclose(warn);
				assert_null(in[0].recs);
			}
			assert_int_equal(in[1].status != NT_READ_OK, 1);
			assert_true(rep.matched > N * 8 / 10);
			assert_true(rep.unmatched_init > 0 && rep.unmatched_tgt > 0 && rep.admin > 0);
			o_ = open_memstream(&out[fmt][path], &olen);
			nt_report_print(o_, &rep);
			fclose(o_);
			nt_report_free(&rep);
			for (int k = 0; k < NF; k++) {
				nt_input_free(&in[k]);
				fclose(r[k]);
			}
		}
		assert_string_equal(out[fmt][0], out[fmt][1]);
		if (fmt) {	/* the synthetic target clock is 7.777777 ms ahead, and does not drift */
			const char *c = strstr(out[fmt][0], "\"clock_offset_ns\": ");
			long long off;

			assert_non_null(c);
			assert_int_equal(sscanf(c, "\"clock_offset_ns\": %lld", &off), 1);
			assert_true(off > 7777777 - 120000 && off < 7777777 + 120000);
			assert_non_null(strstr(out[fmt][0], "\"clock_drift_ns\": "));
		}
		assert_non_null(strstr(out[fmt][0], "network_transmission"));
		assert_non_null(strstr(out[fmt][0], fmt ? "\"stand_in\"" : "stand-in"));
		free(out[fmt][0]);
		free(out[fmt][1]);
	}
	for (int k = 0; k < NF; k++)
		free(buf[k]);
}

/*
 * The headline output, through the product path: "ntbpf report" on an
 * initiator's and a target's file (make_hosts: ten stages, R2T writes,
 * stand-ins, matching, unmatched I/Os on both sides, admin commands, a
 * block-only device), in text, JSON and CSV, grouped the default way and by
 * queue.  Golden files, and the numbers the files were made with.
 */
static void test_golden_two_hosts(void **state)
{
	static const struct {
		const char *golden, *args;
	} runs[] = {
		{ "two-hosts.txt", "initiator.ntbpf target.ntbpf" },
		{ "two-hosts-queue.txt", "--group-by queue --percentiles 50,99 initiator.ntbpf target.ntbpf" },
		{ "two-hosts.json", "--format json --group-by op,size,dev,queue initiator.ntbpf target.ntbpf" },
		{ "two-hosts.csv", "--format csv --group-by queue target.ntbpf initiator.ntbpf" },
	};
	const char *names[] = { "initiator.ntbpf", "target.ntbpf" };
	char *dir = scratch_dir(), path[2][256], want[256];
	FILE *f[2];
	struct hosts_truth x;

	for (int k = 0; k < 2; k++) {
		snprintf(path[k], sizeof(path[k]), "%s/%s", dir, names[k]);
		f[k] = fopen(path[k], "wb");
		assert_non_null(f[k]);
	}
	make_hosts(f[0], NULL, f[1], 2000, &x);
	fclose(f[0]);
	fclose(f[1]);
	for (size_t r = 0; r < sizeof(runs) / sizeof(runs[0]); r++) {
		int rc;
		char *out = report_cli(dir, runs[r].args, &rc), *p;

		assert_int_equal(rc, 0);
		check_golden(runs[r].golden, out);
		if (r == 0) {
			/* every I/O on both hosts paired; the rest counted, nothing lost silently */
			snprintf(want, sizeof(want), "# matched: %zu; unmatched: initiator %zu, target %zu\n", x.pairs,
				 x.init_only + x.blk_only, x.tgt_only);
			assert_non_null(strstr(out, want));
			snprintf(want, sizeof(want), "# admin-queue commands left out: %zu\n", x.admin);
			assert_non_null(strstr(out, want));
			/* the failed I/Os counted, and in groups of their own */
			snprintf(want, sizeof(want), "; 0x4281 (unrecovered read error) %zu;", x.failed);
			assert_non_null(strstr(out, want));
			assert_non_null(strstr(out, "dev=nvme0n1 status=0x4281 (unrecovered read error) I/Os="));
			assert_non_null(strstr(out, "group: op=write size=131072 dev=nvme0n1"));
		}
		if (r == 2) {
			int full = 0;

			/* the ten stages tile end_to_end exactly, R2T writes included */
			for (p = out; (p = strstr(p, "\"full_breakdown\": {\"ios\": ")); p++) {
				unsigned long ios, resid;

				assert_int_equal(sscanf(p, "\"full_breakdown\": {\"ios\": %lu, \"max_residual_ns\": %lu",
							&ios, &resid), 2);
				assert_int_equal(resid, 0);
				full += ios > 0;
			}
			assert_true(full >= 8);	/* reads and writes on each of 4 queues */
		}
		free(out);
	}
	assert_true(x.r2t > 0 && x.pairs > 1500 && x.init_only && x.tgt_only && x.blk_only && x.admin && x.failed >= 10);
	scratch_rm(dir, names, 2);
}

/* dir/name: n synthetic I/Os (bench/synth.h) of h's role under header h (freed), trailer t */
static void write_synth(const char *dir, const char *name, struct nt_header *h, int n, const struct nt_trailer *t)
{
	char path[256];
	struct nt_writer *w;
	struct synth sy;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "wb");
	assert_non_null(f);
	w = nt_writer_open(f, h);
	assert_non_null(w);
	synth_init(&sy);
	for (int k = 0; k < n; k++) {
		struct ntbpf_rec i, g;

		synth_pair(&sy, k, &i, &g);
		assert_int_equal(nt_writer_add(w, h->role == NTBPF_ROLE_TARGET ? &g : &i), 0);
	}
	assert_int_equal(nt_writer_close(w, t), 0);
	fclose(f);
	nt_header_free(h);
}

/* -v: the facts a file stores, escaped; JSON carries them always */
static void test_verbose_facts(void **state)
{
	const char *names[] = { "i.ntbpf" };
	char *dir = scratch_dir(), *out;
	struct nt_header h;
	struct nt_ctrl_info *c;
	struct nt_trailer t = { .records = 1, .end_mono_ns = 3500000000ull };
	int rc;

	c = synth_header(&h, NTBPF_ROLE_INITIATOR);
	snprintf(c->subsysnqn, sizeof(c->subsysnqn), "nqn.2024-01.io.ntbpf:lab");
	snprintf(c->address, sizeof(c->address), "traddr=10.0.0.2,trsvcid=4420");
	snprintf(c->transport, sizeof(c->transport), "tcp");
	snprintf(h.cmdline, sizeof(h.cmdline), "ntbpf record -o i.ntbpf \x1b[31m");
	h.sample = 10;
	h.sample_window_ms = 100;
	write_synth(dir, "i.ntbpf", &h, 1, &t);
	out = report_cli(dir, "-v i.ntbpf", &rc);
	assert_int_equal(rc, 0);
	assert_non_null(strstr(out, "#   command: ntbpf record -o i.ntbpf \\x1b[31m; ntbpf "));
	/* mono 1 s = 1700000000 s wall; the trailer's end at mono 3.5 s */
	assert_non_null(strstr(out, "#   recorded: 2023-11-14T22:13:20.000000000Z to 2023-11-14T22:13:22.500000000Z (2.500 s); "
				    "sampling: every I/O of one 100 ms window in 10\n"));
	assert_non_null(strstr(out, "#   subsystem nqn.2024-01.io.ntbpf:lab at traddr=10.0.0.2,trsvcid=4420 (nvme0, cntlid 1, tcp"));
	assert_non_null(strstr(out, "# sampled inputs: IOPS and MB/s count the recorded I/Os only\n"));
	assert_null(strchr(out, '\x1b'));
	free(out);
	out = report_cli(dir, "i.ntbpf", &rc);
	assert_null(strstr(out, "#   command:"));	/* only with -v */
	free(out);
	out = report_cli(dir, "--format json i.ntbpf", &rc);
	assert_non_null(strstr(out, "\"start\": \"2023-11-14T22:13:20.000000000Z\", \"end\": \"2023-11-14T22:13:22.500000000Z\", "
				    "\"duration_s\": 2.500000"));
	assert_non_null(strstr(out, "\"subsysnqn\": \"nqn.2024-01.io.ntbpf:lab\""));
	assert_non_null(strstr(out, "\"cmdline\": \"ntbpf record -o i.ntbpf \\u001b[31m\""));
	free(out);
	scratch_rm(dir, names, 1);
}

/*
 * An initiator and a target sampled differently (another ntbpf version's
 * default windows, or --sample-window on one host only): the report says
 * so, since only I/Os both recorded can pair; nothing when they agree.
 */
static void write_sampled(const char *dir, const char *name, int role, uint32_t sample, uint32_t window_ms, int n)
{
	struct nt_header h;
	struct nt_trailer t = { .records = (uint64_t)n };

	synth_header(&h, role);
	h.sample = sample;
	h.sample_window_ms = window_ms;
	write_synth(dir, name, &h, n, &t);
}

static void test_sampling_differs(void **state)
{
	const char *names[] = { "i.ntbpf", "t.ntbpf" };
	char *dir = scratch_dir(), *out;
	int rc;

	write_sampled(dir, "i.ntbpf", NTBPF_ROLE_INITIATOR, 100, 1000, 200);
	write_sampled(dir, "t.ntbpf", NTBPF_ROLE_TARGET, 100, 100, 200);
	out = report_cli(dir, "i.ntbpf t.ntbpf", &rc);
	assert_int_equal(rc, 0);
	assert_non_null(strstr(out, "# sampled differently: initiator 1000 ms windows, one in 100, target 100 ms windows, "
				    "one in 100: only I/Os both recorded can pair (record both with the same --sample and "
				    "--sample-window)\n"));
	free(out);
	out = report_cli(dir, "--format json i.ntbpf t.ntbpf", &rc);
	assert_non_null(strstr(out, ", \"sampling_differs\": true}"));
	free(out);
	write_sampled(dir, "t.ntbpf", NTBPF_ROLE_TARGET, 0, 0, 200);
	out = report_cli(dir, "i.ntbpf t.ntbpf", &rc);
	assert_non_null(strstr(out, "# sampled differently: initiator 1000 ms windows, one in 100, target not sampled: "));
	free(out);
	write_sampled(dir, "t.ntbpf", NTBPF_ROLE_TARGET, 100, 1000, 200);
	out = report_cli(dir, "i.ntbpf t.ntbpf", &rc);
	assert_null(strstr(out, "sampled differently"));
	free(out);
	out = report_cli(dir, "--format json i.ntbpf t.ntbpf", &rc);
	assert_null(strstr(out, "sampling_differs"));
	free(out);
	out = report_cli(dir, "i.ntbpf", &rc);	/* one side: nothing to compare */
	assert_null(strstr(out, "sampled differently"));
	free(out);
	scratch_rm(dir, names, 2);
}

/* I/Os no program run saw (ST_NOT_RUN, from the devices' own counts): lost, with their cause, in text and JSON */
static void test_not_run(void **state)
{
	const char *names[] = { "i.ntbpf" };
	char *dir = scratch_dir(), *out;
	struct nt_header h;
	struct nt_trailer t = { .records = 200, .end_mono_ns = 3500000000ull };
	int rc;

	t.stats[ST_EMITTED] = 200;
	t.stats[ST_NO_COMPLETE] = 2;
	t.stats[ST_NOT_RUN] = 3;
	synth_header(&h, NTBPF_ROLE_INITIATOR);
	write_synth(dir, "i.ntbpf", &h, 200, &t);
	out = report_cli(dir, "i.ntbpf", &rc);
	assert_int_equal(rc, 0);
	assert_non_null(strstr(out, "# lost records: 5 (completions never seen: 2; I/Os no program run saw (the devices' "
				    "own counts have them: the kernel skipped the runs): 3)\n"));
	free(out);
	out = report_cli(dir, "--format json i.ntbpf", &rc);
	assert_non_null(strstr(out, "\"lost_records\": 5,"));
	assert_non_null(strstr(out, "\"no_completion\": 2, \"user_space\": 0, \"not_run\": 3}"));
	free(out);
	scratch_rm(dir, names, 1);
}

/* --format html -o FILE: one self-contained file, 0600, strings from the files escaped, three charts */
static void test_html(void **state)
{
	const char *names[] = { "i.ntbpf", "r.html" };
	char *dir = scratch_dir(), path[256], *out, doc[1 << 20];
	struct nt_header h;
	struct nt_trailer t = { .records = 500 };
	struct stat st;
	FILE *f;
	size_t n;
	int rc;

	synth_header(&h, NTBPF_ROLE_INITIATOR);
	snprintf(h.hostname, sizeof(h.hostname), "<script>alert('x')</script>&");
	write_synth(dir, "i.ntbpf", &h, 500, &t);
	out = report_cli(dir, "--format html -o r.html i.ntbpf", &rc);
	assert_int_equal(rc, 0);
	assert_string_equal(out, "");	/* all of it in the file */
	free(out);
	snprintf(path, sizeof(path), "%s/r.html", dir);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	f = fopen(path, "r");
	n = fread(doc, 1, sizeof(doc) - 1, f);
	fclose(f);
	doc[n] = '\0';
	assert_true(n > 1000 && n < sizeof(doc) - 1);
	assert_memory_equal(doc, "<!DOCTYPE html>", 15);
	assert_null(strstr(doc, "<script"));
	assert_non_null(strstr(doc, "on &lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;&amp;, kernel"));
	assert_non_null(strstr(doc, "default-src 'none'"));
	assert_true(strstr(doc, "# no target records: ") < strstr(doc, "<svg"));	/* what it could not see: on top */
	{
		static const char *const want[] = { "Stages at p50 and p99", "end_to_end over time", "Stages over time" };

		for (int k = 0; k < 3; k++) {
			const char *at = strstr(doc, want[k]);

			assert_non_null(at);
			assert_null(strstr(at + 1, want[k]));	/* one group: once each */
		}
	}
	/* every initiator stage measured is drawn in the bar with its p50 (a rect with a title) */
	assert_non_null(strstr(doc, "<title>blk_submission p50 "));
	assert_null(strstr(doc, "<title>remote p99 "));	/* not one of the ten: it would count twice */
	assert_non_null(strstr(doc, "<title>nstack_completion p99 "));
	assert_true(strstr(doc, "</body></html>\n") == doc + n - strlen("</body></html>\n"));
	scratch_rm(dir, names, 2);
}


/* bench/synth.h's pair of n I/Os (hosts booted apart) in dir: i.ntbpf, t.ntbpf */
static void make_synth_pair(const char *dir, size_t n)
{
	char pi[256], pt[256];

	snprintf(pi, sizeof(pi), "%s/i.ntbpf", dir);
	snprintf(pt, sizeof(pt), "%s/t.ntbpf", dir);
	assert_int_equal(synth_write_files(pi, pt, n), 0);
}

/*
 * --since/--until: the synthetic I/O k starts 1 s + 3 us (k + 1) after the
 * recordings' start (2023-11-14T22:13:20Z): [1.003 s, 1.006 s) holds
 * I/Os 999 to 1998, the same said in RFC 3339 (another offset for --until);
 * the rest are counted as left out, not as unmatched.
 */
static void test_time_window(void **state)
{
	static const char *const names[] = { "i.ntbpf", "t.ntbpf" };
	static const char *const args[] = {
		"--since 1.003 --until 1.006 i.ntbpf t.ntbpf",
		"--since 2023-11-14T22:13:21.003Z --until 2023-11-14T23:13:21.006+01:00 i.ntbpf t.ntbpf",
		"--format json --since 1.003 --until 1.006 i.ntbpf t.ntbpf",
	};
	char *dir = scratch_dir(), *out;
	int rc;

	make_synth_pair(dir, 3000);
	for (int a = 0; a < 2; a++) {
		out = report_cli(dir, args[a], &rc);
		assert_int_equal(rc, 0);
		assert_non_null(strstr(out, "# matched: 1000; unmatched: initiator 0, target 0\n"));
		assert_non_null(strstr(out, "# I/Os that started outside --since/--until, left out: 2000\n"));
		assert_non_null(strstr(out, " I/Os=1000 span=0.003s "));	/* the window's I/Os only */
		free(out);
	}
	out = report_cli(dir, args[2], &rc);
	assert_int_equal(rc, 0);
	assert_non_null(strstr(out, "\"matched\": 1000, \"unmatched\": {\"initiator\": 0, \"target\": 0}"));
	assert_non_null(strstr(out, "\"time_window\": {\"since_ns\": 1700000001003000000, "
				    "\"until_ns\": 1700000001006000000, \"left_out\": 2000}"));
	free(out);
	/* without a window: all 3000 */
	out = report_cli(dir, "i.ntbpf t.ntbpf", &rc);
	assert_non_null(strstr(out, "# matched: 3000; unmatched: initiator 0, target 0\n"));
	assert_null(strstr(out, "--since"));
	free(out);
	scratch_rm(dir, names, 2);
}


/* part `part` of side s (0 initiator, 1 target) of a "record --rotate" series, started `at` ns later */
static struct nt_writer *series_part(const char *dir, int s, int part, uint64_t at, FILE **f)
{
	char path[256];
	struct nt_header h;
	struct nt_writer *w;

	snprintf(path, sizeof(path), "%s/%c.%04d", dir, s ? 't' : 'i', part);
	*f = fopen(path, "wb");
	assert_non_null(*f);
	synth_header(&h, s ? NTBPF_ROLE_TARGET : NTBPF_ROLE_INITIATOR);
	snprintf(h.cmdline, sizeof(h.cmdline), "ntbpf record --rotate 1s -o %c", s ? 't' : 'i');
	h.mono_ns += at;	/* the same clocks, read again when the file began */
	h.real_ns += at;
	w = nt_writer_open(*f, &h);
	nt_header_free(&h);
	assert_non_null(w);
	return w;
}

/* bench/synth.h's n I/Os as two "record --rotate" series: parts[0] initiator files, parts[1] target files */
static void make_synth_series(const char *dir, size_t n, const int parts[2])
{
	struct nt_writer *w[2];
	FILE *f[2];
	uint64_t in[2] = { 0 };
	int p[2] = { 0 };
	struct synth sy;

	for (int s = 0; s < 2; s++)
		w[s] = series_part(dir, s, 0, 0, &f[s]);
	synth_init(&sy);
	for (size_t k = 0; k < n; k++) {
		struct ntbpf_rec r[2];

		synth_pair(&sy, k, &r[0], &r[1]);
		for (int s = 0; s < 2; s++) {
			if (p[s] + 1 < parts[s] && k >= n * (size_t)(p[s] + 1) / (size_t)parts[s]) {
				struct nt_trailer tr = { .records = in[s] };

				assert_int_equal(nt_writer_close(w[s], &tr), 0);
				assert_int_equal(fclose(f[s]), 0);
				in[s] = 0;
				w[s] = series_part(dir, s, ++p[s], r[s].t0 - 2000000000ull, &f[s]);
			}
			assert_int_equal(nt_writer_add(w[s], &r[s]), 0);
			in[s]++;
		}
	}
	for (int s = 0; s < 2; s++) {
		struct nt_trailer tr = { .records = in[s] };

		assert_int_equal(nt_writer_close(w[s], &tr), 0);
		assert_int_equal(fclose(f[s]), 0);
	}
}

/* the report without its "# input" lines */
static char *without_inputs(char *out)
{
	char *p = out, *q = out;

	while (*p) {
		char *nl = strchr(p, '\n');
		size_t len = nl ? (size_t)(nl - p + 1) : strlen(p);

		if (strncmp(p, "# input ", 8)) {
			memmove(q, p, len);
			q += len;
		}
		p += len;
	}
	*q = 0;
	return out;
}

/*
 * "record --rotate" series read as one: the initiator's 30000 I/Os in 3
 * files, the target's in 2, given in any order, report as the two whole
 * files do (but for the input lines), I/Os across a file's end included.
 */
static void test_series(void **state)
{
	static const int parts[2] = { 3, 2 };
	static const char *const names[] = { "i.ntbpf", "t.ntbpf", "i.0000", "i.0001", "i.0002", "t.0000", "t.0001" };
	char *dir = scratch_dir(), *whole, *series;
	int rc;

	make_synth_pair(dir, 30000);
	make_synth_series(dir, 30000, parts);
	whole = without_inputs(report_cli(dir, "i.ntbpf t.ntbpf", &rc));
	assert_int_equal(rc, 0);
	assert_non_null(strstr(whole, "# matched: 30000; unmatched: initiator 0, target 0\n"));
	series = without_inputs(report_cli(dir, "t.0001 i.0002 i.0000 t.0000 i.0001", &rc));
	assert_int_equal(rc, 0);
	assert_string_equal(series, whole);
	free(series);
	free(whole);
	scratch_rm(dir, names, 7);
}

/* a copy of dir/from at dir/to, byte for byte (cp) */
static void copy_file(const char *dir, const char *from, const char *to)
{
	char a[256], b[256], buf[65536];
	FILE *fa, *fb;
	size_t n;

	snprintf(a, sizeof(a), "%s/%s", dir, from);
	snprintf(b, sizeof(b), "%s/%s", dir, to);
	fa = fopen(a, "rb");
	fb = fopen(b, "wb");
	assert_true(fa && fb);
	while ((n = fread(buf, 1, sizeof(buf), fa)) > 0)
		assert_int_equal(fwrite(buf, 1, n, fb), n);
	fclose(fa);
	assert_int_equal(fclose(fb), 0);
}

/* "ntbpf report ARGS" in dir: its exit status and standard error (malloc'd); stdout must be empty when it fails */
static char *report_err_out(const char *dir, const char *args, int *rc, bool printed);

static char *report_err(const char *dir, const char *args, int *rc)
{
	return report_err_out(dir, args, rc, false);
}

/* the same; printed: a report is printed even though it fails (a file cut short) */
static char *report_err_out(const char *dir, const char *args, int *rc, bool printed)
{
	char line[512], *argv[32], *save, *out = NULL, *eb = NULL, cwd[4096];
	size_t olen = 0, elen = 0;
	struct nt_config cfg;
	int argc = 0;
	FILE *o, *e;

	snprintf(line, sizeof(line), "ntbpf report %s", args);
	for (char *t = strtok_r(line, " ", &save); t && argc < 31; t = strtok_r(NULL, " ", &save))
		argv[argc++] = t;
	argv[argc] = NULL;
	assert_non_null(getcwd(cwd, sizeof(cwd)));
	assert_int_equal(chdir(dir), 0);
	e = open_memstream(&eb, &elen);
	*rc = nt_cli_parse(argc, argv, &cfg, e);
	if (!*rc) {
		o = open_memstream(&out, &olen);
		*rc = nt_report_cmd(&cfg, o, e);
		nt_config_free(&cfg);
		fclose(o);
		if (*rc && !printed)
			assert_string_equal(out, "");
		if (printed)
			assert_non_null(strstr(out, "# ntbpf report\n"));
		free(out);
	}
	fclose(e);
	assert_int_equal(chdir(cwd), 0);
	return eb;
}

/* exactly one line */
static void assert_one_line(const char *s)
{
	const char *nl = strchr(s, '\n');

	assert_non_null(nl);
	assert_null(strchr(nl + 1, '\n'));
}

/*
 * The same recording given twice (the same name, a copy, a glob over a
 * folder holding one), or two recordings of one host's I/Os at the same
 * time: refused, one line naming both, nothing printed (issue 30: it used to
 * print twice the I/Os).  Recordings of other devices, or one after the
 * other, are not.
 */
static void test_twice(void **state)
{
	static const char *const names[] = { "i.ntbpf", "t.ntbpf", "copy.ntbpf", "a.ntbpf", "b.ntbpf", "c.ntbpf",
					     "d.ntbpf" };
	struct nt_trailer t = { 0 };
	char *dir = scratch_dir(), *err;
	struct nt_header h;
	int rc;

	make_synth_pair(dir, 3000);
	copy_file(dir, "i.ntbpf", "copy.ntbpf");
	err = report_err(dir, "i.ntbpf t.ntbpf i.ntbpf", &rc);
	assert_int_equal(rc, 1);
	assert_non_null(strstr(err, "ntbpf report: i.ntbpf and i.ntbpf are the same recording (initiator on "
				    "bench-initiator, same boot and start)"));
	assert_one_line(err);
	free(err);
	err = report_err(dir, "i.ntbpf t.ntbpf copy.ntbpf", &rc);
	assert_int_equal(rc, 1);
	assert_non_null(strstr(err, "i.ntbpf and copy.ntbpf are the same recording"));
	assert_one_line(err);
	free(err);
	err = report_err(dir, "--format json copy.ntbpf t.ntbpf t.ntbpf", &rc);
	assert_int_equal(rc, 1);
	assert_non_null(strstr(err, "t.ntbpf and t.ntbpf are the same recording (target on bench-target"));
	free(err);

	/* a: 10 s from 1 s; b: 10 s from 6 s (overlaps a); c: b's times, another device; d: from a's end */
	for (int k = 0; k < 4; k++) {
		synth_header(&h, NTBPF_ROLE_INITIATOR);
		h.mono_ns += k == 1 || k == 2 ? 5000000000ull : k == 3 ? 10000000000ull : 0;
		h.real_ns += h.mono_ns - 1000000000ull;
		if (k == 2)
			snprintf(h.devs[0], sizeof(h.devs[0]), "nvme1n1=259:1");
		t.end_mono_ns = h.mono_ns + 10000000000ull;
		write_synth(dir, names[3 + k], &h, 100, &t);
	}
	err = report_err(dir, "a.ntbpf t.ntbpf b.ntbpf", &rc);
	assert_int_equal(rc, 1);
	assert_non_null(strstr(err, "ntbpf report: a.ntbpf and b.ntbpf overlap: two recordings of the same I/Os "
				    "(initiator on bench-initiator, same boot and devices, at the same time)"));
	assert_one_line(err);
	free(err);
	err = report_err(dir, "a.ntbpf c.ntbpf d.ntbpf", &rc);
	assert_int_equal(rc, 0);
	assert_string_equal(err, "");
	free(err);
	scratch_rm(dir, names, 7);
}

/*
 * -o never replaces what the report reads: an input (by name, or a link to
 * it) or any ntbpf record file is refused, one line, the file untouched
 * (issue 30: "report -o initiator.ntbpf target.ntbpf" replaced the
 * recording); a text file is written as before.  "--" ends the options.
 */
static void test_output_not_input(void **state)
{
	static const char *const names[] = { "i.ntbpf", "t.ntbpf", "link.ntbpf", "r.txt", "r.txt.old" };
	char *dir = scratch_dir(), *err, path[256], *a, *b;
	struct stat sb, sa;
	int rc;

	make_synth_pair(dir, 300);
	snprintf(path, sizeof(path), "%s/i.ntbpf", dir);
	assert_int_equal(stat(path, &sb), 0);
	err = report_err(dir, "-o i.ntbpf t.ntbpf", &rc);
	assert_int_equal(rc, 1);
	assert_non_null(strstr(err, "ntbpf report: -o i.ntbpf is an ntbpf record file: the report would replace it"));
	assert_one_line(err);
	free(err);
	err = report_err(dir, "-o t.ntbpf i.ntbpf t.ntbpf", &rc);
	assert_int_equal(rc, 1);
	assert_non_null(strstr(err, "ntbpf report: -o t.ntbpf is an input (t.ntbpf)"));
	assert_one_line(err);
	free(err);
	snprintf(path, sizeof(path), "%s/link.ntbpf", dir);
	assert_int_equal(symlink("i.ntbpf", path), 0);
	err = report_err(dir, "--format json -o link.ntbpf i.ntbpf", &rc);
	assert_int_equal(rc, 1);
	assert_non_null(strstr(err, "-o link.ntbpf is an input (i.ntbpf)"));
	free(err);
	snprintf(path, sizeof(path), "%s/i.ntbpf", dir);
	assert_int_equal(stat(path, &sa), 0);	/* untouched */
	assert_true(sa.st_ino == sb.st_ino && sa.st_size == sb.st_size && sa.st_mtime == sb.st_mtime);
	snprintf(path, sizeof(path), "%s/i.ntbpf.old", dir);
	assert_int_equal(access(path, F_OK), -1);
	/* a report over a report: as before */
	err = report_err(dir, "-o r.txt i.ntbpf t.ntbpf", &rc);
	assert_int_equal(rc, 0);
	assert_string_equal(err, "");
	free(err);
	err = report_err(dir, "-o r.txt i.ntbpf t.ntbpf", &rc);
	assert_int_equal(rc, 0);
	free(err);
	/* "--" ends the options */
	a = report_cli(dir, "-- i.ntbpf t.ntbpf", &rc);
	assert_int_equal(rc, 0);
	b = report_cli(dir, "i.ntbpf t.ntbpf", &rc);
	assert_string_equal(a, b);
	free(a);
	free(b);
	scratch_rm(dir, names, 5);
}

/* the percentile as asked, in every format: p99.999999, not p100 (issue 30) */
static void test_percentile_labels(void **state)
{
	static const char *const names[] = { "i.ntbpf", "t.ntbpf" };
	static const char *const args[] = {
		"--percentiles 50,99.999999 i.ntbpf t.ntbpf",
		"--format json --percentiles 50,99.999999 i.ntbpf t.ntbpf",
		"--format csv --percentiles 50,99.999999 i.ntbpf t.ntbpf",
	};
	static const char *const want[] = { " p99.999999_us ", "\"p99.999999_us\": ", ",p99.999999_us," };
	char *dir = scratch_dir(), *out;
	int rc;

	make_synth_pair(dir, 300);
	for (int k = 0; k < 3; k++) {
		out = report_cli(dir, args[k], &rc);
		assert_int_equal(rc, 0);
		assert_non_null(strstr(out, want[k]));
		assert_null(strstr(out, "p100"));
		free(out);
	}
	scratch_rm(dir, names, 2);
}

/*
 * Every write error names the user's path (not the temporary file) and its
 * cause (issue 30: "cannot write" alone, or the .ntbpf-tmp name); a file cut
 * inside a chunk (head -c) says it was cut, against the chunk's size.
 */
static void test_messages(void **state)
{
	static const char *const names[] = { "i.ntbpf", "t.ntbpf", "cut.ntbpf" };
	char *dir = scratch_dir(), *err, *eb = NULL, path[256], buf[1 << 16];
	size_t elen = 0, n;
	struct nt_config cfg;
	FILE *full, *e, *in, *cut;
	char *argv[] = { "ntbpf", "report", "i.ntbpf", "t.ntbpf", NULL }, cwd[4096];
	int rc;

	make_synth_pair(dir, 3000);
	/* report > /dev/full */
	assert_non_null(getcwd(cwd, sizeof(cwd)));
	assert_int_equal(chdir(dir), 0);
	e = open_memstream(&eb, &elen);
	assert_int_equal(nt_cli_parse(4, argv, &cfg, e), 0);
	full = fopen("/dev/full", "w");
	assert_non_null(full);
	assert_int_equal(nt_report_cmd(&cfg, full, e), 1);
	fclose(full);
	nt_config_free(&cfg);
	fclose(e);
	assert_int_equal(chdir(cwd), 0);
	assert_string_equal(eb, "ntbpf report: cannot write the report to standard output: No space left on device\n");
	free(eb);
	/* -o into a folder that is not there: the user's name and the cause */
	err = report_err(dir, "-o /nonexistent/dir/x.txt i.ntbpf t.ntbpf", &rc);
	assert_int_equal(rc, 1);
	assert_string_equal(err, "ntbpf report: cannot write /nonexistent/dir/x.txt: No such file or directory\n");
	free(err);
	/* -o /dev/full: written in place, the cause said */
	err = report_err(dir, "-o /dev/full i.ntbpf t.ntbpf", &rc);
	assert_int_equal(rc, 1);
	assert_non_null(strstr(err, "/dev/full: No space left on device"));
	assert_one_line(err);
	free(err);
	/* head -c: two thirds of the initiator's file */
	snprintf(path, sizeof(path), "%s/i.ntbpf", dir);
	in = fopen(path, "rb");
	snprintf(path, sizeof(path), "%s/cut.ntbpf", dir);
	cut = fopen(path, "wb");
	assert_true(in && cut);
	n = fread(buf, 1, sizeof(buf), in);
	assert_true(n > 3000 && n < sizeof(buf));
	assert_int_equal(fwrite(buf, 1, n * 2 / 3, cut), n * 2 / 3);
	fclose(in);
	assert_int_equal(fclose(cut), 0);
	err = report_err_out(dir, "cut.ntbpf t.ntbpf", &rc, true);
	assert_int_equal(rc, 1);
	assert_non_null(strstr(err, "ntbpf report: warning: cut.ntbpf: truncated after "));
	assert_non_null(strstr(err, " records (no trailer): the file was cut "));
	assert_non_null(strstr(err, " bytes of the chunk at offset "));
	assert_null(strstr(err, "interrupted"));
	assert_one_line(err);
	free(err);
	scratch_rm(dir, names, 3);
}

/*
 * A window past the recordings' end says what it did (issue 30: "no I/O
 * recorded" and "no nvme_tcp events", both false): the window applied, the
 * recordings' span, no I/O in the window; JSON says the span too.
 */
static void test_empty_window(void **state)
{
	static const char *const names[] = { "i.ntbpf", "t.ntbpf", "a.ntbpf" };
	struct nt_trailer t = { .records = 100, .end_mono_ns = 11000000000ull };
	char *dir = scratch_dir(), *out;
	struct nt_header h;
	int rc;

	make_synth_pair(dir, 3000);
	out = report_cli(dir, "--since 100 i.ntbpf t.ntbpf", &rc);
	assert_int_equal(rc, 0);
	assert_non_null(strstr(out, "# time window: I/Os that started from 2023-11-14T22:15:00.000000000Z to the end; "
				    "the recordings: 2023-11-14T22:13:20.000000000Z to (end not known)\n"));
	assert_non_null(strstr(out, "# I/Os that started outside --since/--until, left out: 3000\n"));
	assert_non_null(strstr(out, "\nno I/O in the time window (--since/--until): every recorded I/O started "
				    "outside it\n"));
	assert_null(strstr(out, "no I/O recorded"));
	assert_null(strstr(out, "no nvme_tcp events"));
	free(out);
	/* a file whose trailer gives its end: 10 s from 2023-11-14T22:13:20Z */
	synth_header(&h, NTBPF_ROLE_INITIATOR);
	write_synth(dir, "a.ntbpf", &h, 100, &t);
	out = report_cli(dir, "--since 2023-11-14T23:00:00Z --until 2023-11-14T23:00:01Z a.ntbpf", &rc);
	assert_int_equal(rc, 0);
	assert_non_null(strstr(out, "# time window: I/Os that started from 2023-11-14T23:00:00.000000000Z to "
				    "2023-11-14T23:00:01.000000000Z; the recordings: 2023-11-14T22:13:20.000000000Z to "
				    "2023-11-14T22:13:30.000000000Z\n"));
	assert_non_null(strstr(out, "no I/O in the time window"));
	free(out);
	out = report_cli(dir, "--format json --since 100 a.ntbpf", &rc);
	assert_non_null(strstr(out, "\"recorded\": {\"from_ns\": 1700000000000000000, \"to_ns\": "
				    "1700000010000000000}"));
	free(out);
	scratch_rm(dir, names, 3);
}

/*
 * One target, two initiator hosts (issue 33): both hosts' controllers are
 * nvme0 with queues 1-4 and the same command ids at the same times (host B
 * runs the first NB I/Os of host A's sequence); only the target's cntlid
 * (1: A, 2: B) tells them apart.  --group-by host names each by its hostnqn,
 * the same key from the initiators' files and the target's, with the
 * hostname where an initiator's file says it.
 */
#define NQN_A "nqn.2014-08.org.nvmexpress:uuid:aaaaaaaa-0000-0000-0000-000000000001"
#define NQN_B "nqn.2014-08.org.nvmexpress:uuid:bbbbbbbb-0000-0000-0000-000000000002"
#define NQN_SUB "nqn.2024-01.io.ntbpf:lab"

/* an initiator host's file: nvme0 (cntlid) of hostnqn nqn, nvme0n1 = nsid 1; its I/Os 0 .. n-1 */
static void write_host(const char *dir, const char *name, const char *host, uint16_t cntlid, const char *nqn, int n)
{
	struct nt_trailer t = { .records = (uint64_t)n };
	struct nt_ctrl_info *c;
	struct nt_header h;

	c = synth_header(&h, NTBPF_ROLE_INITIATOR);
	snprintf(h.hostname, sizeof(h.hostname), "%s", host);
	snprintf(h.boot_id, sizeof(h.boot_id), "%s", host);
	c->cntlid = cntlid;
	snprintf(c->hostnqn, sizeof(c->hostnqn), "%s", nqn);
	snprintf(c->subsysnqn, sizeof(c->subsysnqn), NQN_SUB);
	c->nns = 1;
	c->ns[0].dev = 259u << 20;	/* nvme0n1, the records' dev */
	c->ns[0].nsid = 1;
	write_synth(dir, name, &h, n, &t);
}

/* the target's file: cntlid 1 (A's na I/Os) and 2 (B's nb), with their NQNs unless nqns is false (an older file) */
static void write_target(const char *dir, const char *name, int na, int nb, bool nqns)
{
	struct nt_trailer t = { .records = (uint64_t)(na + nb) };
	struct nt_ctrl_info *c[2];
	struct nt_header h;
	struct nt_writer *w;
	struct synth sy[2];
	char path[256];
	FILE *f;

	c[0] = synth_header(&h, NTBPF_ROLE_TARGET);
	c[1] = nt_header_add_ctrl(&h);
	c[0] = &h.ctrls[0];	/* moved by the add */
	assert_non_null(c[1]);
	for (int k = 0; k < 2; k++) {
		c[k]->instance = -1;
		c[k]->cntlid = (uint16_t)(k + 1);
		snprintf(c[k]->transport, sizeof(c[k]->transport), "tcp");
		if (nqns) {
			snprintf(c[k]->hostnqn, sizeof(c[k]->hostnqn), "%s", k ? NQN_B : NQN_A);
			snprintf(c[k]->subsysnqn, sizeof(c[k]->subsysnqn), NQN_SUB);
		}
	}
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "wb");
	assert_non_null(f);
	w = nt_writer_open(f, &h);
	assert_non_null(w);
	synth_init(&sy[0]);
	synth_init(&sy[1]);
	for (int k = 0; k < na; k++)
		for (int hst = 0; hst < 2; hst++) {
			struct ntbpf_rec i, g;

			if (hst && k >= nb)
				continue;
			synth_pair(&sy[hst], (uint64_t)k, &i, &g);
			g.ctrl = (uint16_t)(hst + 1);	/* the same qid, cid and port: only the cntlid differs */
			assert_int_equal(nt_writer_add(w, &g), 0);
		}
	assert_int_equal(nt_writer_close(w, &t), 0);
	fclose(f);
	nt_header_free(&h);
}

/* the count of the JSON group whose "host" is nqn ("null": unknown), or -1 */
static long host_count(const char *json, const char *nqn)
{
	char want[256];
	const char *p, *c;

	if (!strcmp(nqn, "null"))
		snprintf(want, sizeof(want), "\"host\": null");
	else
		snprintf(want, sizeof(want), "\"host\": \"%s\"", nqn);
	p = strstr(json, want);
	if (!p || strstr(p + 1, want))
		return -1;	/* none, or two groups of one host */
	c = strstr(p, "\"count\": ");
	return c ? strtol(c + 9, NULL, 10) : -1;
}

static void test_group_by_host(void **state)
{
	static const char *const names[] = { "a.ntbpf", "b.ntbpf", "t.ntbpf", "old.ntbpf" };
	enum { NA = 300, NB = 200 };
	char *dir = scratch_dir(), *out;
	int rc;

	write_host(dir, "a.ntbpf", "host-a", 1, NQN_A, NA);
	write_host(dir, "b.ntbpf", "host-b", 2, NQN_B, NB);
	write_target(dir, "t.ntbpf", NA, NB, true);
	write_target(dir, "old.ntbpf", NA, NB, false);

	/* all files: every I/O pairs with its own host's target record, in its host's group */
	out = report_cli(dir, "--format json --group-by host,subsys,ns a.ntbpf b.ntbpf t.ntbpf", &rc);
	assert_int_equal(rc, 0);
	assert_non_null(strstr(out, "\"matched\": 500, \"unmatched\": {\"initiator\": 0, \"target\": 0}"));
	assert_int_equal(host_count(out, NQN_A), NA);
	assert_int_equal(host_count(out, NQN_B), NB);
	assert_non_null(strstr(out, "\"host\": \"" NQN_A "\", \"hostname\": \"host-a\", \"subsys\": \"" NQN_SUB
				    "\", \"ns\": 1, \"count\": 300"));
	assert_non_null(strstr(out, "\"hostname\": \"host-b\""));
	free(out);
	/* the same in text, CSV and HTML */
	out = report_cli(dir, "--group-by host a.ntbpf b.ntbpf t.ntbpf", &rc);
	assert_non_null(strstr(out, " host=" NQN_A " (host-a) I/Os=300"));
	assert_non_null(strstr(out, " host=" NQN_B " (host-b) I/Os=200"));
	free(out);
	out = report_cli(dir, "--format csv --group-by host,ns a.ntbpf b.ntbpf t.ntbpf", &rc);
	assert_non_null(strstr(out, ",tx_queue,host,hostname,subsys,ns\n"));
	assert_non_null(strstr(out, "," NQN_A ",host-a,,1\n"));
	assert_non_null(strstr(out, "," NQN_B ",host-b,,1\n"));
	free(out);
	out = report_cli(dir, "--format html --group-by host a.ntbpf b.ntbpf t.ntbpf", &rc);
	assert_int_equal(rc, 0);
	assert_non_null(strstr(out, "host=" NQN_A " (host-a) I/Os=300"));
	free(out);

	/* the target's file alone: the hosts by the hostnqn it read; no hostname known */
	out = report_cli(dir, "--format json --group-by host t.ntbpf", &rc);
	assert_int_equal(host_count(out, NQN_A), NA);
	assert_int_equal(host_count(out, NQN_B), NB);
	assert_non_null(strstr(out, "\"hostname\": null"));
	free(out);
	/* one initiator's file alone */
	out = report_cli(dir, "--format json --group-by host b.ntbpf", &rc);
	assert_int_equal(host_count(out, NQN_B), NB);
	assert_int_equal(host_count(out, NQN_A), -1);
	free(out);
	/* a target file without the NQNs (written before them): one group, "unknown" */
	out = report_cli(dir, "--format json --group-by host,subsys old.ntbpf", &rc);
	assert_int_equal(rc, 0);
	assert_int_equal(host_count(out, "null"), NA + NB);
	assert_non_null(strstr(out, "\"subsys\": null"));
	free(out);
	out = report_cli(dir, "--group-by host old.ntbpf", &rc);
	assert_non_null(strstr(out, " host=unknown I/Os=500"));
	free(out);
	scratch_rm(dir, names, 4);
}

/*
 * The same two hosts in memory: nt_report_build (inputs loaded, as the
 * equivalence test does) and live's way, nt_report_add with inputs that
 * hold headers only (each record's host from the first header of its role).
 */
static void test_group_by_host_in_memory(void **state)
{
	static const char *const names[] = { "a.ntbpf", "b.ntbpf", "t.ntbpf" };
	struct nt_report_opts o = { .group_by = NT_GB_HOST | NT_GB_NS, .npcts = 1, .pcts = { 50 } };
	char *dir = scratch_dir(), err[256], path[512];
	struct nt_input ins[3] = { 0 }, hdrs[1] = { 0 };
	struct nt_report rep;
	int found = 0;

	write_host(dir, "a.ntbpf", "host-a", 1, NQN_A, 300);
	write_host(dir, "b.ntbpf", "host-b", 2, NQN_B, 200);
	write_target(dir, "t.ntbpf", 300, 200, true);
	for (int i = 0; i < 3; i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
		assert_int_equal(nt_input_load(&ins[i], path, err, sizeof(err)), 0);
	}
	assert_int_equal(nt_report_build(&rep, ins, 3, &o), 0);
	assert_int_equal(rep.matched, 500);
	assert_int_equal(rep.ngroups, 2);
	for (int g = 0; g < rep.ngroups; g++) {
		const char *h = nt_report_key_name(&rep, NT_KEY_HOST, rep.groups[g].host);

		assert_string_equal(nt_report_key_name(&rep, NT_KEY_NS, rep.groups[g].ns), "1");
		if (!strcmp(h, NQN_A))
			found += rep.groups[g].count == 300;
		else if (!strcmp(h, NQN_B))
			found += 2 * (rep.groups[g].count == 200);
	}
	assert_int_equal(found, 3);
	nt_report_free(&rep);
	/* live: the target's records, its header only */
	hdrs[0].hdr = ins[2].hdr;
	nt_report_begin(&rep, hdrs, 1, &o);
	for (size_t k = 0; k < ins[2].n; k++)
		assert_int_equal(nt_report_add(&rep, NULL, &ins[2].recs[k]), 0);
	nt_report_finish(&rep);
	assert_int_equal(rep.ngroups, 2);
	assert_int_equal(rep.groups[0].count + rep.groups[1].count, 500);
	assert_true(rep.groups[0].count == 300 || rep.groups[0].count == 200);
	assert_true(rep.groups[0].host != rep.groups[1].host && rep.groups[0].host != NT_KEY_UNKNOWN &&
		    rep.groups[1].host != NT_KEY_UNKNOWN);
	nt_report_free(&rep);
	/* live's in-kernel histograms (a group per queue: the key's ctrl and qid) into host groups */
	nt_report_begin(&rep, hdrs, 1, &o);
	for (uint16_t q = 1; q <= 4; q++)
		for (uint16_t c = 1; c <= 2; c++) {
			struct nt_kh_key k = { .dev = 1, .bytes = 4096, .role = NTBPF_ROLE_TARGET, .stage = NT_ST_NR,
					       .queue = 1, .ctrl = c, .qid = q };

			assert_int_equal(nt_report_add_kh(&rep, &k, NULL, c == 1 ? 10 : 3, 0), 0);
		}
	nt_report_finish(&rep);
	assert_int_equal(rep.ngroups, 2);
	for (int g = 0; g < 2; g++) {
		const char *h = nt_report_key_name(&rep, NT_KEY_HOST, rep.groups[g].host);

		assert_int_equal(rep.groups[g].count, !strcmp(h, NQN_A) ? 40 : 12);
		assert_true(!strcmp(h, NQN_A) || !strcmp(h, NQN_B));
	}
	nt_report_free(&rep);
	for (int i = 0; i < 3; i++)
		nt_input_free(&ins[i]);
	scratch_rm(dir, names, 3);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_golden_text),
		cmocka_unit_test(test_time_window),
		cmocka_unit_test(test_series),
		cmocka_unit_test(test_golden_json),
		cmocka_unit_test(test_golden_csv),
		cmocka_unit_test(test_golden_two_hosts),
		cmocka_unit_test(test_values),
		cmocka_unit_test(test_hist),
		cmocka_unit_test(test_exit_status),
		cmocka_unit_test(test_files_path_equals_records_path),
		cmocka_unit_test(test_verbose_facts),
		cmocka_unit_test(test_sampling_differs),
		cmocka_unit_test(test_not_run),
		cmocka_unit_test(test_html),
		cmocka_unit_test(test_twice),
		cmocka_unit_test(test_output_not_input),
		cmocka_unit_test(test_percentile_labels),
		cmocka_unit_test(test_messages),
		cmocka_unit_test(test_empty_window),
		cmocka_unit_test(test_group_by_host),
		cmocka_unit_test(test_group_by_host_in_memory),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
