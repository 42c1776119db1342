// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Live aggregation: intervals of local records, and --peer: the target's
 * record stream over a real loopback TCP socket, paired one interval later;
 * a peer that drops is reported and picked up again when it comes back.
 * Goldens (tests/unit/golden/live-*): a local interval in text, a paired
 * interval (all ten stages) in JSON, their times masked.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include "cli.h"
#include "golden.h"
#include "live.h"
#include "report.h"
#include "metrics.h"
#include "stream.h"

static struct nt_config cfg_for(const char *fmt)
{
	struct nt_config c;
	char *argv[] = { "ntbpf", "live", "--format", (char *)fmt, "1", NULL };

	FILE *devnull = fopen("/dev/null", "w");
	assert_int_equal(nt_cli_parse(5, argv, &c, devnull), 0);
	fclose(devnull);
	return c;
}

static struct ntbpf_rec init_rec(uint64_t send, uint16_t cid)
{
	struct ntbpf_rec r = { .role = NTBPF_ROLE_INITIATOR, .flags = NTBPF_F_NVME, .op = NTBPF_OP_READ,
			       .bytes = 4096, .dev = 259u << 20, .qid = 1, .cid = cid, .t0 = send - 10000 };

	r.ev_mask = (1u << EV_I_BLK_START) | (1u << EV_I_QUEUE_RQ) | (1u << EV_I_CMD_SENT) |
		    (1u << EV_I_RESP_ARRIVE) | (1u << EV_I_RESP_PROC) | (1u << EV_I_NVME_DONE) | (1u << EV_I_BLK_DONE);
	r.ev[EV_I_QUEUE_RQ] = 2000;
	r.ev[EV_I_CMD_SENT] = 10000;
	r.ev[EV_I_RESP_ARRIVE] = 110000;
	r.ev[EV_I_RESP_PROC] = 112000;
	r.ev[EV_I_NVME_DONE] = 113000;
	r.ev[EV_I_BLK_DONE] = 114000;
	return r;
}

static struct ntbpf_rec tgt_rec(uint64_t send, uint16_t cid, int64_t off)
{
	struct ntbpf_rec r = { .role = NTBPF_ROLE_TARGET, .flags = NTBPF_F_NVME, .op = NTBPF_OP_READ,
			       .bytes = 4096, .dev = 1, .ctrl = 3, .qid = 1, .cid = cid, .t0 = send + off + 20000 };

	r.ev_mask = (1u << EV_T_CMD_ARRIVE) | (1u << EV_T_CMD_PICKUP) | (1u << EV_T_EXEC) |
		    (1u << EV_T_SUBSYS_DONE) | (1u << EV_T_RESP_SENT);
	r.ev[EV_T_CMD_PICKUP] = 5000;
	r.ev[EV_T_EXEC] = 8000;
	r.ev[EV_T_SUBSYS_DONE] = 58000;
	r.ev[EV_T_RESP_SENT] = 60000;
	return r;
}

static char *tick(struct nt_live *l, double secs)
{
	char path[] = "/tmp/ntbpf-live-XXXXXX", *out;
	int fd = mkstemp(path);
	FILE *m = fdopen(fd, "w+");
	long len;

	nt_live_tick(l, m, secs, 0);
	fflush(m);
	len = ftell(m);
	rewind(m);
	out = calloc(1, len + 1);
	assert_int_equal(fread(out, 1, len, m), (size_t)len);
	fclose(m);
	unlink(path);
	return out;
}

/*
 * The wall-clock times of an interval's lines, "HH:MM:SS" (text) and RFC 3339
 * (JSON Lines, CSV), masked in place (same length), for the goldens.
 */
static void mask_times(char *s)
{
	static const char rfc[] = "dddd-dd-ddTdd:dd:dd.ddd+dd:dd", hms[] = "dd:dd:dd";

	for (char *p = s; *p; p++) {
		const char *pat = NULL;

		for (int k = 0; k < 2 && !pat; k++) {
			const char *t = k ? hms : rfc;
			size_t i;

			for (i = 0; t[i] && p[i]; i++)
				if (t[i] == 'd' ? p[i] < '0' || p[i] > '9' : t[i] != p[i] && !(t[i] == '+' && p[i] == '-'))
					break;
			if (!t[i] && (p == s || p[-1] < '0' || p[-1] > '9'))
				pat = t;
		}
		if (pat) {
			for (size_t i = 0; pat[i]; i++, p++)
				*p = pat[i] == 'd' ? 'x' : *p;
			p--;
		}
	}
}

/* the peer's state, which moves on by itself ("down (...), reconnecting", then "retrying"): "*" */
static void mask_peer_state(char *s)
{
	char *p = strstr(s, "\"peer\": \""), *e;

	assert_non_null(p);
	p += strlen("\"peer\": \"");
	e = strchr(p, '"');
	assert_non_null(e);
	*p = '*';
	memmove(p + 1, e, strlen(e) + 1);
}

static void local_header(struct nt_header *h)
{
	struct nt_ctrl_info *c;

	nt_header_init(h, NTBPF_ROLE_INITIATOR);
	snprintf(h->boot_id, sizeof(h->boot_id), "init-boot");
	h->mono_ns = 1000000000ull;
	h->real_ns = 1700000000000000000ull;
	h->ndevs = 1;
	snprintf(h->devs[0], sizeof(h->devs[0]), "nvme0n1=259:0");
	c = nt_header_add_ctrl(h);
	c->instance = 0;
	c->cntlid = 3;
}

/* n initiator I/Os, 200 us apart */
static void push_local(struct nt_live *l, int n)
{
	for (int k = 0; k < n; k++) {
		struct ntbpf_rec r = init_rec(2000000000ull + k * 200000ull, (uint16_t)(k % 16) << 12);

		nt_live_push(l, &r);
	}
}

/* this host's live (its header into *h; cfg is kept) with n I/Os pushed */
static struct nt_live *local_live(const struct nt_config *cfg, struct nt_header *h, int n)
{
	struct nt_live *l;

	local_header(h);
	l = nt_live_new(cfg, h);
	assert_non_null(l);
	push_local(l, n);
	return l;
}

/* live --hist: each interval's histograms (every I/O's end_to_end is 114 us), and MB/s */
static void test_local_hist(void **state)
{
	struct nt_config cfg = cfg_for("text");
	struct nt_header h;
	struct nt_live *l;
	char *out;

	cfg.hist = true;
	l = local_live(&cfg, &h, 250);
	out = tick(l, 0.5);
	assert_non_null(strstr(out, " I/Os=250 IOPS=500 MB/s=2.05\n"));
	assert_non_null(strstr(out, "\nend_to_end\n     usecs               : count    distribution\n"));
	assert_non_null(strstr(out, "        64 -> 127        : 250      |****************************************|\n"));
	free(out);
	nt_live_free(l);
	nt_header_free(&h);
	nt_config_free(&cfg);
}

static void test_local_intervals(void **state)
{
	struct nt_config cfg = cfg_for("json");
	struct nt_header h;
	struct nt_live *l = local_live(&cfg, &h, 250);
	char *out;

	out = tick(l, 0.5);
	/* one line, 250 I/Os in half a second */
	assert_non_null(strstr(out, "\"iops\": 500.0"));
	assert_non_null(strstr(out, "\"device\": \"nvme0n1\", \"count\": 250"));
	assert_non_null(strstr(out, "\"end_to_end\": {\"count\": 250"));
	assert_null(strstr(out, "network_transmission"));	/* no peer */
	assert_non_null(strchr(out, '\n'));
	assert_null(strchr(strchr(out, '\n') + 1, '\n'));
	free(out);
	/* the next interval starts empty */
	out = tick(l, 1.0);
	assert_non_null(strstr(out, "\"iops\": 0.0"));
	assert_non_null(strstr(out, "\"groups\": []"));
	free(out);
	/* this host's records per interval are capped: the rest are counted lost in that interval, not held */
	nt_live_set_cap(l, 100);
	push_local(l, 150);
	out = tick(l, 1.0);
	assert_non_null(strstr(out, "\"lost_records\": 50"));
	assert_non_null(strstr(out, "\"end_to_end\": {\"count\": 100"));
	free(out);
	out = tick(l, 1.0);
	assert_non_null(strstr(out, "\"lost_records\": 0"));
	free(out);
	nt_live_free(l);
	nt_header_free(&h);
}

/* a local interval in text, as "ntbpf live 1" prints it (the time masked) */
static void test_golden_local_text(void **state)
{
	struct nt_config cfg = cfg_for("text");
	struct nt_header h;
	struct nt_live *l = local_live(&cfg, &h, 250);
	char *out;

	out = tick(l, 0.5);
	mask_times(out);
	check_golden("live-local.txt", out);
	free(out);
	nt_live_free(l);
	nt_header_free(&h);
}

/* a one-shot record-stream server on 127.0.0.1 (stream.c's, with a key) */
struct srv {
	int port;
	int nrec;
	uint64_t base;
	int64_t off;
	int close_after;	/* close the connection after this many records */
};

static const struct nt_key test_key = { .n = 16, .k = "0123456789abcdef" };

static void *serve(void *arg)
{
	struct srv *s = arg;
	struct nt_stream_server *ss;
	struct nt_header h;
	char addr[64], err[128];
	FILE *log = fopen("/dev/null", "w");

	nt_header_init(&h, NTBPF_ROLE_TARGET);
	snprintf(h.boot_id, sizeof(h.boot_id), "tgt-boot");
	h.mono_ns = 1000000000ull + s->off;
	h.real_ns = 1700000000000000000ull;
	snprintf(addr, sizeof(addr), "127.0.0.1:%d", s->port);
	ss = nt_stream_server_new(addr, &test_key, &h, log, err, sizeof(err));
	assert_non_null(ss);
	/* wait for the peer to connect and authenticate (10 s at most) */
	for (int i = 0; i < 10000 && !nt_stream_server_connected(ss); i++) {
		nt_stream_server_poll(ss);
		usleep(1000);
	}
	assert_true(nt_stream_server_connected(ss));
	for (int k = 0; k < s->nrec && k < s->close_after; k++) {
		struct ntbpf_rec r = tgt_rec(s->base + k * 200000ull, (uint16_t)(k % 16) << 12, s->off);

		nt_stream_server_add(ss, &r);
	}
	nt_stream_server_tick(ss);
	nt_stream_server_free(ss);
	nt_header_free(&h);
	fclose(log);
	return NULL;
}

static int free_port(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	getsockname(fd, (struct sockaddr *)&a, &len);
	close(fd);
	return ntohs(a.sin_port);
}

/* waits (10 s at most) until the peer thread received n records in all and its state starts with 'want' */
static void wait_peer(struct nt_live *l, uint64_t n, const char *want)
{
	struct nt_stream_status st;

	for (int i = 0; i < 1000; i++) {
		nt_live_peer_status(l, &st);
		if (st.received >= n && !strncmp(st.state, want, strlen(want)))
			return;
		usleep(10000);
	}
	fail_msg("peer: %llu records received, state '%s'; want %llu, '%s'", (unsigned long long)st.received,
		 st.state, (unsigned long long)n, want);
}

static void test_peer_stream_pairs(void **state)
{
	struct nt_config cfg = cfg_for("json");
	struct srv s = { .nrec = 200, .base = 3000000000ull, .off = 55555555, .close_after = 1 << 30 };
	struct nt_header h;
	struct nt_live *l;
	struct nt_metrics *mx = nt_metrics_new("initiator");
	pthread_t th;
	char addr[64], err[128], *out;

	s.port = free_port();
	pthread_create(&th, NULL, serve, &s);
	local_header(&h);
	l = nt_live_new(&cfg, &h);
	nt_live_on_interval(l, nt_metrics_on_interval, mx);	/* --metrics */
	nt_metrics_set_peer(mx, 1);
	snprintf(addr, sizeof(addr), "127.0.0.1:%d", s.port);
	assert_int_equal(nt_live_peer(l, addr, &test_key, err, sizeof(err)), 0);
	pthread_join(th, NULL);
	wait_peer(l, 200, "down");	/* the peer thread read all that was sent, to the end */
	for (int k = 0; k < 200; k++) {
		struct ntbpf_rec r = init_rec(s.base + k * 200000ull, (uint16_t)(k % 16) << 12);

		nt_live_push(l, &r);
	}
	/* the first tick only holds the interval back */
	out = tick(l, 1.0);
	assert_string_equal(out, "");
	free(out);
	out = tick(l, 1.0);
	assert_non_null(strstr(out, "\"matched\": 200"));
	assert_non_null(strstr(out, "\"unmatched\": {\"initiator\": 0, \"target\": 0}"));
	assert_non_null(strstr(out, "\"network_transmission\": {\"count\": 200, \"avg_us\": 40.000"));
	assert_non_null(strstr(out, "\"target_subsystem\": {\"count\": 200, \"avg_us\": 50.000"));
	mask_times(out);
	mask_peer_state(out);
	check_golden("live-peer.json", out);	/* the paired interval: all ten stages */
	free(out);
	/* --metrics with --peer: the paired interval's ten stages, and the peer's state (it hung up) */
	{
		char *buf = NULL;
		size_t len = 0;
		FILE *f = open_memstream(&buf, &len);

		nt_metrics_render(f, mx, true);
		fclose(f);
		assert_non_null(strstr(buf, "ntbpf_stage_latency_seconds_count{stage=\"network_transmission\",op=\"read\","
					    "size=\"4096\",device=\"nvme0n1\",role=\"initiator\"} 200\n"));
		assert_non_null(strstr(buf, "ntbpf_stage_latency_seconds_sum{stage=\"target_subsystem\",op=\"read\","
					    "size=\"4096\",device=\"nvme0n1\",role=\"initiator\"} 0.01\n"));
		assert_non_null(strstr(buf, "ntbpf_ios_total{op=\"read\",size=\"4096\",device=\"nvme0n1\","
					    "role=\"initiator\"} 200\n"));
		assert_non_null(strstr(buf, "ntbpf_peer_up{role=\"initiator\"} 0\n"));
		free(buf);
	}
	nt_metrics_free(mx);
	nt_live_free(l);
	nt_header_free(&h);
}

static void test_peer_drops_and_returns(void **state)
{
	struct nt_config cfg = cfg_for("text");
	struct srv s = { .nrec = 100, .base = 5000000000ull, .off = -777777, .close_after = 100 };
	struct nt_header h;
	struct nt_live *l;
	pthread_t th;
	char addr[64], err[128], *out;

	s.port = free_port();
	pthread_create(&th, NULL, serve, &s);
	local_header(&h);
	l = nt_live_new(&cfg, &h);
	snprintf(addr, sizeof(addr), "127.0.0.1:%d", s.port);
	assert_int_equal(nt_live_peer(l, addr, &test_key, err, sizeof(err)), 0);
	pthread_join(th, NULL);
	wait_peer(l, 100, "down");	/* the stream ended: the peer is down and retrying */
	out = tick(l, 1.0);
	free(out);
	out = tick(l, 1.0);
	assert_non_null(strstr(out, "peer down"));
	free(out);
	/* it comes back: the next records pair again */
	s.base = 9000000000ull;
	pthread_create(&th, NULL, serve, &s);
	pthread_join(th, NULL);	/* returns once the peer connected again and got everything sent */
	wait_peer(l, 200, "down");
	for (int k = 0; k < 100; k++) {
		struct ntbpf_rec r = init_rec(s.base + k * 200000ull, (uint16_t)(k % 16) << 12);

		nt_live_push(l, &r);
	}
	out = tick(l, 1.0);
	free(out);
	out = tick(l, 1.0);
	assert_non_null(strstr(out, "matched 100, unmatched 0 initiator"));
	assert_non_null(strstr(out, "network_transmission"));
	free(out);
	nt_live_free(l);
	nt_header_free(&h);
}

/* live --format csv: the header once, then per interval one row per group and stage, each led by
 * the interval's RFC 3339 time (date, time, zone) and length */
static void test_local_csv(void **state)
{
	struct nt_config cfg = cfg_for("csv");
	struct nt_report_opts o;
	struct nt_header h;
	struct nt_live *l;
	char *out, *line, *save = NULL, hdr[256] = "";
	FILE *m = fmemopen(hdr, sizeof(hdr) - 1, "w");
	int rows = 0;

	nt_report_opts_of(&cfg, &o);
	nt_report_interval_header(m, &o);
	fclose(m);
	assert_string_equal(hdr, "time,interval_s,op,size,device,queue,group_count,stage,count,avg_us,p50_us,p99_us,"
			    "min_us,max_us,status,span_s,iops,mb_s,io_cpu,local,remote,rx_queue,depth_mean,depth_max,"
			    "target_depth_mean,target_depth_max,tx_queue\n");
	l = local_live(&cfg, &h, 250);
	setenv("TZ", "IST-5:30", 1);
	tzset();
	out = tick(l, 0.5);
	unsetenv("TZ");
	tzset();
	for (line = strtok_r(out, "\n", &save); line; line = strtok_r(NULL, "\n", &save), rows++) {
		/* 2026-11-24T10:03:08.123+05:30,0.500,read,4096,nvme0n1,... */
		assert_int_equal(strlen(line) > 30, 1);
		assert_true(line[4] == '-' && line[7] == '-' && line[10] == 'T' && line[13] == ':' && line[19] == '.');
		assert_memory_equal(line + 23, "+05:30,0.500,", 13);
		assert_non_null(strstr(line, ",nvme0n1,"));
		assert_non_null(strstr(line, ",250,"));	/* the group's count */
	}
	assert_true(rows >= 1);
	free(out);
	nt_live_free(l);
}

/* in-kernel histograms: per-CPU differences, 32-bit bucket counters wrapping around between intervals */
static void test_kh_wraparound(void **state)
{
	struct nt_kh_gval *now = calloc(2, sizeof(*now)), *prev = calloc(2, sizeof(*prev));
	uint64_t *b = calloc(NT_KH_NB, sizeof(*b)), count, sum;

	prev[0].ios = 100;
	now[0].ios = 130;
	prev[1].ios = 7;
	now[1].ios = 17;
	assert_int_equal(nt_kh_ios(now, prev, 2), 40);
	/* slot 2: CPU 0's bucket 5 wraps (0xfffffff0 -> 0x10: +32), CPU 1's adds 8; bucket 9 goes 3 -> 4 on CPU 1 */
	prev[0].count[2] = 1000;
	now[0].count[2] = 1032;
	prev[1].count[2] = 50;
	now[1].count[2] = 59;
	prev[0].sum[2] = 5000000;
	now[0].sum[2] = 5000000 + 32 * 1000;
	now[1].sum[2] = 9 * 2000;
	prev[0].b[2][5] = 0xfffffff0u;
	now[0].b[2][5] = 0x10;
	prev[1].b[2][5] = 1;
	now[1].b[2][5] = 9;
	prev[1].b[2][9] = 3;
	now[1].b[2][9] = 4;
	b[NT_KH_NB - 1] = 77;	/* zeroed first */
	assert_int_equal(nt_kh_slot_interval(now, prev, 2, 2, &count, &sum, b), 41);
	assert_int_equal(count, 41);
	assert_int_equal(sum, 32 * 1000 + 9 * 2000);
	assert_int_equal(b[5], 40);
	assert_int_equal(b[9], 1);
	assert_int_equal(b[NT_KH_NB - 1], 0);
	for (unsigned int k = 0; k < NT_KH_NB; k++)
		if (k != 5 && k != 9)
			assert_int_equal(b[k], 0);
	/* a slot with nothing new: 0, nothing computed */
	assert_int_equal(nt_kh_slot_interval(now, prev, 2, 3, &count, &sum, b), 0);
	free(now);
	free(prev);
	free(b);
}

/* an interval of in-kernel histograms, grouped by queue: its report, per-CPU values and buckets */
struct kh_fix {
	struct nt_config cfg;
	struct nt_input in;
	struct nt_report_opts o;
	struct nt_report rep;
	struct nt_kh_gval *now, *prev;
	uint64_t *b;
};

static void kh_begin(struct kh_fix *x, const char *format, int ncpu, void (*header)(struct nt_header *))
{
	x->cfg = cfg_for(format);
	x->in = (struct nt_input){ .path = "live" };
	x->now = calloc(ncpu, sizeof(*x->now));
	x->prev = calloc(ncpu, sizeof(*x->prev));
	x->b = calloc(NT_KH_NB, sizeof(*x->b));
	assert_true(x->now && x->prev && x->b);
	nt_header_init(&x->in.hdr, NTBPF_ROLE_INITIATOR);
	snprintf(x->in.hdr.devs[0], sizeof(x->in.hdr.devs[0]), "nvme0n1");
	if (header)
		header(&x->in.hdr);
	x->cfg.group_by |= NT_GB_QUEUE;
	nt_report_opts_of(&x->cfg, &x->o);
	nt_report_begin(&x->rep, &x->in, 1, &x->o);
}

/* the interval as live prints it (the caller frees it) */
static char *kh_interval(struct kh_fix *x)
{
	struct nt_interval_info info = { 0 };
	char *out = NULL;
	size_t len;
	FILE *f = open_memstream(&out, &len);

	assert_non_null(f);
	nt_report_finish(&x->rep);
	nt_report_print_interval(f, &x->rep, "12:00:00", 1.0, &info);
	fclose(f);
	return out;
}

/* one CPU's interval: n I/Os of group k, each with value v in slot 0 (a fixture of one CPU) */
static uint64_t kh_add_ios(struct kh_fix *x, const struct nt_kh_gkey *k, uint64_t n, uint64_t v)
{
	memset(x->now, 0, sizeof(*x->now));
	x->now[0].ios = n;
	x->now[0].count[0] = n;
	x->now[0].sum[0] = n * v;
	x->now[0].b[0][nt_kh_bucket(v)] = (uint32_t)n;
	return nt_kh_add_group(&x->rep, k, x->now, x->prev, 1, x->b);
}

static void kh_done(struct kh_fix *x)
{
	nt_report_free(&x->rep);
	nt_header_free(&x->in.hdr);
	nt_config_free(&x->cfg);
	free(x->now);
	free(x->prev);
	free(x->b);
}

/*
 * Failed I/Os with histograms in the kernel: in groups of their own (their
 * status is part of the kernel's key), named as the report names them: the
 * initiator's blk_status_t, the target's NVMe status; a queue's failed I/Os
 * leave the queue's group for their status's.
 */
static void test_kh_failed(void **state)
{
	struct nt_kh_gkey ok = { .dev = 259u << 20, .bytes = 4096, .op = NTBPF_OP_READ, .role = NTBPF_ROLE_INITIATOR,
				 .ctrl = 0, .qid = 1 };
	struct nt_kh_gkey bad = ok, tgt = ok;
	struct nt_kh_gval *now;
	struct kh_fix x;
	char *out;

	(void)state;
	kh_begin(&x, "json", 1, NULL);
	now = x.now;
	assert_int_equal(kh_add_ios(&x, &ok, 30, 5000), 30);
	/* 3 failed with BLK_STS_IOERR (10) on the same queue, and 2 on queue 2: one group */
	bad.status = 10;
	assert_int_equal(kh_add_ios(&x, &bad, 3, 90000), 3);
	bad.qid = 2;
	assert_int_equal(kh_add_ios(&x, &bad, 2, 90000), 2);
	/* a target's failed I/O (no stage value): its NVMe status (0x4002: DNR, invalid field) */
	tgt.role = NTBPF_ROLE_TARGET;
	tgt.status = 0x4002;
	memset(now, 0, sizeof(*now));
	now[0].ios = 1;
	assert_int_equal(nt_kh_add_group(&x.rep, &tgt, now, x.prev, 1, x.b), 1);
	out = kh_interval(&x);
	assert_non_null(strstr(out, "\"count\": 30, \"status\": \"ok\""));
	assert_non_null(strstr(out, "\"count\": 5, \"status\": \"blk:10\""));
	assert_non_null(strstr(out, "\"count\": 1, \"status\": \"0x4002\""));
	free(out);
	kh_done(&x);
}

/*
 * live --group-by queue with histograms in the kernel: a group per NVMe
 * queue, with the interval's depths (mean, and the largest as its bucket's
 * lowest value: exact under 64) and the queue's facts from the header
 */
/* queue 1 of controller 0, with its facts, in the header */
static void queue1_facts(struct nt_header *h)
{
	struct nt_ctrl_info *c = nt_header_add_ctrl(h);
	struct nt_queue_info *q;

	assert_non_null(c);
	c->instance = 0;
	q = nt_ctrl_add_queue(c);
	assert_non_null(q);
	q->qid = 1;
	q->io_cpu = 3;
	snprintf(q->saddr, sizeof(q->saddr), "10.0.0.1");
	q->sport = 40001;
	snprintf(q->daddr, sizeof(q->daddr), "10.0.0.2");
	q->dport = 4420;
}

static void test_kh_by_queue(void **state)
{
	struct nt_kh_gkey k1 = { .dev = 259u << 20, .bytes = 4096, .op = NTBPF_OP_READ, .role = NTBPF_ROLE_INITIATOR,
				 .ctrl = 0, .qid = 1 };
	struct nt_kh_gkey k2 = k1;
	struct nt_kh_gval *now, *prev;
	struct kh_fix x;
	char *out;

	(void)state;
	kh_begin(&x, "text", 2, queue1_facts);
	now = x.now;
	prev = x.prev;
	/* queue 1: 30 I/Os on CPU 0, 10 on CPU 1; depths 1 x10, 40 x20 (bucket of 40 is exact), 70 x10 (in 70-71) */
	now[0].ios = 30;
	now[1].ios = 10;
	now[0].dep_n = 30;
	now[0].dep_sum = 10 * 1 + 20 * 40;
	now[0].dep_b[nt_kh_bucket(1)] = 10;
	now[0].dep_b[nt_kh_bucket(40)] = 20;
	now[1].dep_n = 10;
	now[1].dep_sum = 10 * 70;
	now[1].dep_b[nt_kh_bucket(70)] = 10;
	now[0].count[0] = 30;
	now[0].sum[0] = 30 * 5000;
	now[0].b[0][nt_kh_bucket(5000)] = 30;
	now[1].count[0] = 10;
	now[1].sum[0] = 10 * 5000;
	now[1].b[0][nt_kh_bucket(5000)] = 10;
	assert_int_equal(nt_kh_add_group(&x.rep, &k1, now, prev, 2, x.b), 40);
	/* queue 2 (no facts in the header): 5 I/Os, no depth known */
	memset(now, 0, 2 * sizeof(*now));
	now[1].ios = 5;
	k2.qid = 2;
	assert_int_equal(nt_kh_add_group(&x.rep, &k2, now, prev, 2, x.b), 5);
	/* nothing new: no group */
	assert_int_equal(nt_kh_add_group(&x.rep, &k2, prev, prev, 2, x.b), 0);
	out = kh_interval(&x);
	assert_non_null(strstr(out, "queue=nvme0q1 I/Os=40 IOPS=40"));
	assert_non_null(strstr(out, "queue: io_cpu=3 local=10.0.0.1:40001 remote=10.0.0.2:4420 rx_queue=- tx_queue=- "
				    "depth(mean/max)=37.8/70\n"));
	assert_non_null(strstr(out, "queue=nvme0q2 I/Os=5 IOPS=5"));
	assert_non_null(strstr(out, "queue: io_cpu=- local=- remote=- rx_queue=- tx_queue=-\n"));
	free(out);
	kh_done(&x);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_local_intervals),
		cmocka_unit_test(test_local_hist),
		cmocka_unit_test(test_local_csv),
		cmocka_unit_test(test_kh_wraparound),
		cmocka_unit_test(test_kh_by_queue),
		cmocka_unit_test(test_kh_failed),
		cmocka_unit_test(test_golden_local_text),
		cmocka_unit_test(test_peer_stream_pairs),
		cmocka_unit_test(test_peer_drops_and_returns),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
