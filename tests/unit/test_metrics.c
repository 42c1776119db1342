// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The --metrics endpoint: bucket bounds, PromQL's histogram_quantile over the
 * rendered buckets against ntbpf's own percentiles and the true sample
 * quantiles (<= 5 % over 1 us - 10 s), both text formats, label escaping of
 * untrusted device names, the HTTP replies, and a real server on loopback.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <arpa/inet.h>
#include <math.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include "hist.h"
#include "metrics.h"
#include "report.h"

/* ---- the bounds ---- */

static void test_bounds(void **state)
{
	size_t n;
	const uint64_t *b = nt_metrics_bounds_ns(&n);

	assert_true(n > 300 && n < 400);
	assert_true(b[0] * 105 < 1000 * 100);	/* 1 us lies inside a bucket, not in [0, b0] */
	assert_true(b[n - 1] >= 10000000000ull);	/* 10 s is covered */
	assert_true(b[n - 2] < 10000000000ull);		/* and no more than needed */
	for (size_t i = 1; i < n; i++) {
		assert_true(b[i] > b[i - 1]);
		assert_true(b[i] * 100 <= b[i - 1] * 105);	/* each bucket at most 5 % wide */
	}
	for (size_t i = 0; i < n; i++)	/* never inside one of the report's buckets */
		assert_int_not_equal(nt_hist_bucket(b[i]), nt_hist_bucket(b[i] + 1));
}

/* ---- a report of one group with one stage, made by hand ---- */

struct onegroup {
	struct nt_report_opts o;
	struct nt_group g;
	struct nt_report rep;
	struct nt_input in;
};

static void onegroup_init(struct onegroup *x, const char *devname)
{
	memset(x, 0, sizeof(*x));
	x->o.group_by = NT_GB_OP | NT_GB_SIZE | NT_GB_DEV;
	x->g.op = 0;	/* read */
	x->g.size = 4096;
	x->g.dev_role = NTBPF_ROLE_INITIATOR;
	x->g.dev = (259u << 20) | 3;
	x->g.used = true;
	for (int s = 0; s < NT_ST_NR; s++)
		nt_hist_init(&x->g.h[s]);
	x->rep.o = &x->o;
	x->rep.groups = &x->g;
	x->rep.ngroups = 1;
	if (devname) {
		x->in.hdr.role = NTBPF_ROLE_INITIATOR;
		x->in.hdr.ndevs = 1;
		snprintf(x->in.hdr.devs[0], sizeof(x->in.hdr.devs[0]), "%s=259:3", devname);
		x->rep.ins = &x->in;
		x->rep.nins = 1;
	}
}

static void onegroup_free(struct onegroup *x)
{
	for (int s = 0; s < NT_ST_NR; s++)
		nt_hist_free(&x->g.h[s]);
}

static char *render(struct nt_metrics *m, bool om)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	nt_metrics_render(f, m, om);
	assert_int_equal(fclose(f), 0);
	return buf;
}

/* ---- PromQL's histogram_quantile (promql/quantile.go, bucketQuantile), over rendered text ---- */

#define MAXB 512
struct parsed {
	double le[MAXB];
	double cum[MAXB];
	int n;
};

static void parse_buckets(const char *text, const char *stage, struct parsed *p)
{
	char pat[128];
	const char *s = text;

	p->n = 0;
	snprintf(pat, sizeof(pat), "ntbpf_stage_latency_seconds_bucket{stage=\"%s\",", stage);
	while ((s = strstr(s, pat))) {
		const char *le = strstr(s, ",le=\"");
		const char *close = le ? strstr(le, "\"} ") : NULL;

		assert_non_null(close);
		assert_true(p->n < MAXB);
		p->le[p->n] = !strncmp(le + 5, "+Inf", 4) ? INFINITY : strtod(le + 5, NULL);
		p->cum[p->n] = strtod(close + 3, NULL);
		p->n++;
		s = close;
	}
}

static double prom_quantile(double q, const struct parsed *p)
{
	double rank, start, end, count;
	int b;

	assert_true(p->n >= 2 && isinf(p->le[p->n - 1]));
	if (p->cum[p->n - 1] == 0)
		return NAN;
	rank = q * p->cum[p->n - 1];
	for (b = 0; b < p->n - 1 && p->cum[b] < rank; b++)
		;
	if (b == p->n - 1)
		return p->le[p->n - 2];
	if (b == 0 && p->le[0] <= 0)
		return p->le[0];
	start = 0;
	end = p->le[b];
	count = p->cum[b];
	if (b > 0) {
		start = p->le[b - 1];
		count -= p->cum[b - 1];
		rank -= p->cum[b - 1];
	}
	return start + (end - start) * (rank / count);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/*
 * Sample sets of every shape over 1 us - 10 s (log-uniform, narrow clusters
 * at random places, two modes, one repeated value, a few values): for each,
 * PromQL's estimate of p50/p90/p99/p99.9 against the report's own percentile
 * and against the exact sample quantile.  Returns the worst relative error.
 */
static void test_quantile_error(void **state)
{
	static const double qs[] = { 0.5, 0.9, 0.99, 0.999 };
	uint64_t seed = 88172645463325252ull, *v = malloc(20000 * sizeof(*v));
	double worst_own = 0, worst_true = 0;
	int checked = 0;

	assert_non_null(v);
	for (int trial = 0; trial < 300; trial++) {
		struct onegroup x;
		struct nt_metrics *m = nt_metrics_new("initiator");
		struct parsed p;
		int shape = trial % 5, n = shape == 4 ? 1 + trial % 7 : 2000 + (int)(rnd(&seed) % 18000);
		double c1 = 3 + (rnd(&seed) % 7000) / 1000.0, c2 = 3 + (rnd(&seed) % 7000) / 1000.0;	/* log10 ns */
		char *text;

		onegroup_init(&x, "nvme1n1");
		for (int i = 0; i < n; i++) {
			double u = (rnd(&seed) % 1000001) / 1e6, l;

			switch (shape) {
			case 0: l = 3 + 7 * u; break;				/* log-uniform 1 us - 10 s */
			case 1: l = c1 + 0.05 * u; break;			/* a cluster 12 % wide */
			case 2: l = (i % 10 ? c1 : c2) + 0.02 * u; break;	/* two modes */
			case 3: l = c1; break;					/* one value */
			default: l = c1 + 0.5 * u; break;			/* a handful of values */
			}
			v[i] = (uint64_t)pow(10, l);
			if (v[i] < 1000)
				v[i] = 1000;
			if (v[i] > 10000000000ull)
				v[i] = 10000000000ull;
			assert_int_equal(nt_hist_add(&x.g.h[NT_ST_E2E], v[i]), 0);
		}
		x.g.count = n;
		assert_int_equal(nt_metrics_add(m, &x.rep), 0);
		text = render(m, false);
		parse_buckets(text, "end_to_end", &p);
		assert_true(p.n > 300);
		qsort(v, n, sizeof(*v), cmp_u64);
		for (size_t k = 0; k < sizeof(qs) / sizeof(qs[0]); k++) {
			double est = prom_quantile(qs[k], &p) * 1e9;
			double own = (double)nt_hist_percentile(&x.g.h[NT_ST_E2E], qs[k] * 100);
			double truth = (double)v[(size_t)ceil(qs[k] * n) - 1];	/* nearest rank */
			double e_own = fabs(est - own) / own, e_true = fabs(est - truth) / truth;

			worst_own = e_own > worst_own ? e_own : worst_own;
			worst_true = e_true > worst_true ? e_true : worst_true;
			if (e_own > 0.05 || e_true > 0.05)
				print_error("shape %d n %d q %g: promql %.0f ns, own %.0f, true %.0f\n", shape, n, qs[k],
					    est, own, truth);
			assert_true(e_own <= 0.05);
			assert_true(e_true <= 0.05);
			checked++;
		}
		free(text);
		nt_metrics_free(m);
		onegroup_free(&x);
	}
	print_message("histogram_quantile: worst error %.2f %% against ntbpf's percentile, %.2f %% against the "
		      "samples (%d quantiles)\n", worst_own * 100, worst_true * 100, checked);
	/* the bound is tight: some estimate comes close to it, so the test can tell */
	assert_true(worst_true > 0.02);
	free(v);
}

/* ---- the text formats ---- */

static void test_render_formats(void **state)
{
	struct onegroup x;
	struct nt_metrics *m = nt_metrics_new("initiator");
	uint64_t lost[NT_ML_NR] = { 1, 2, 3, 4, 5, 6 };
	char *om, *prom;

	onegroup_init(&x, "nvme1n1");
	for (int i = 0; i < 10; i++)
		nt_hist_add(&x.g.h[NT_ST_E2E], 50000 + i);
	nt_hist_add(&x.g.h[NT_ST_BLK_SUB], 700);	/* below the first bound */
	x.g.count = 10;
	assert_int_equal(nt_metrics_add(m, &x.rep), 0);
	assert_int_equal(nt_metrics_add(m, &x.rep), 0);	/* counters accumulate */
	nt_metrics_set_lost(m, lost);
	nt_metrics_set_hooks(m, 17);
	nt_metrics_set_peer(m, 1);
	om = render(m, true);
	prom = render(m, false);

	/* OpenMetrics: counter families without _total, and # EOF last */
	assert_non_null(strstr(om, "# TYPE ntbpf_ios counter\n"));
	assert_non_null(strstr(om, "# TYPE ntbpf_lost_records counter\n"));
	assert_non_null(strstr(om, "# TYPE ntbpf_stage_latency_seconds histogram\n"));
	assert_string_equal(om + strlen(om) - 6, "# EOF\n");
	/* Prometheus 0.0.4: the sample names in TYPE, no # EOF */
	assert_non_null(strstr(prom, "# TYPE ntbpf_ios_total counter\n"));
	assert_null(strstr(prom, "# EOF"));
	for (char *t = om; t; t = NULL) {
		assert_non_null(strstr(t, "ntbpf_ios_total{op=\"read\",size=\"4096\",device=\"nvme1n1\",role=\"initiator\"} 20\n"));
		assert_non_null(strstr(t, "ntbpf_stage_latency_seconds_count{stage=\"end_to_end\",op=\"read\",size=\"4096\","
					  "device=\"nvme1n1\",role=\"initiator\"} 20\n"));
		assert_non_null(strstr(t, "ntbpf_stage_latency_seconds_sum{stage=\"end_to_end\",op=\"read\",size=\"4096\","
					  "device=\"nvme1n1\",role=\"initiator\"} 0.00100009\n"));
		assert_non_null(strstr(t, "ntbpf_stage_latency_seconds_bucket{stage=\"blk_submission\",op=\"read\","
					  "size=\"4096\",device=\"nvme1n1\",role=\"initiator\",le=\"0.000000947\"} 2\n"));
		assert_non_null(strstr(t, "le=\"+Inf\"} 20\n"));
		assert_non_null(strstr(t, "ntbpf_lost_records_total{cause=\"ring_buffer_full\",role=\"initiator\"} 1\n"));
		assert_non_null(strstr(t, "ntbpf_lost_records_total{cause=\"program_runs_skipped\",role=\"initiator\"} 4\n"));
		assert_non_null(strstr(t, "ntbpf_lost_records_total{cause=\"start_never_seen\",role=\"initiator\"} 5\n"));
		assert_non_null(strstr(t, "ntbpf_lost_records_total{cause=\"not_run\",role=\"initiator\"} 6\n"));
		assert_non_null(strstr(t, "ntbpf_peer_up{role=\"initiator\"} 1\n"));
		assert_non_null(strstr(t, "ntbpf_hooks_attached{role=\"initiator\"} 17\n"));
	}
	/* the bucket just below the values has none, the one holding them all 20 */
	{
		struct parsed p;

		parse_buckets(prom, "end_to_end", &p);
		for (int b = 0; b < p.n; b++) {
			if (p.le[b] * 1e9 < 50000)
				assert_true(p.cum[b] == 0);
			if (p.le[b] * 1e9 >= 50009)
				assert_true(p.cum[b] == 20);
		}
	}
	free(om);
	free(prom);
	/* without --peer there is no peer_up series */
	nt_metrics_set_peer(m, -1);
	om = render(m, true);
	assert_null(strstr(om, "ntbpf_peer_up"));
	free(om);
	nt_metrics_free(m);
	onegroup_free(&x);
}

/* the live loop's hook: the interval, and the peer's state as live reports it */
static void test_on_interval(void **state)
{
	struct onegroup x;
	struct nt_metrics *m = nt_metrics_new("initiator");
	struct nt_interval_info up = { .peer = "connected" }, down = { .peer = "down (connection refused), retrying" };
	char *t;

	onegroup_init(&x, NULL);
	nt_hist_add(&x.g.h[NT_ST_NETWORK], 40000);
	x.g.count = 1;
	nt_metrics_on_interval(m, &x.rep, &up);
	t = render(m, false);
	assert_non_null(strstr(t, "ntbpf_peer_up{role=\"initiator\"} 1\n"));
	assert_non_null(strstr(t, "ntbpf_stage_latency_seconds_count{stage=\"network_transmission\",op=\"read\","
				  "size=\"4096\",device=\"259:3\",role=\"initiator\"} 1\n"));
	free(t);
	nt_metrics_on_interval(m, &x.rep, &down);
	t = render(m, false);
	assert_non_null(strstr(t, "ntbpf_peer_up{role=\"initiator\"} 0\n"));
	assert_non_null(strstr(t, "ntbpf_intervals_total{role=\"initiator\"} 2\n"));
	free(t);
	nt_metrics_free(m);
	onegroup_free(&x);
}

/* device names come from the record header (untrusted): escaped, one line per sample */
static void test_label_escaping(void **state)
{
	struct onegroup x;
	struct nt_metrics *m = nt_metrics_new("initiator");
	char *t;

	onegroup_init(&x, "ev\"il\\d\nx\x01");
	nt_hist_add(&x.g.h[NT_ST_E2E], 5000);
	x.g.count = 1;
	assert_int_equal(nt_metrics_add(m, &x.rep), 0);
	t = render(m, false);
	assert_non_null(strstr(t, "device=\"ev\\\"il\\\\d\\nx?\""));
	for (char *l = t; *l; l = strchr(l, '\n') + 1)	/* every line a comment or name{...} value */
		assert_true(*l == '#' || !strncmp(l, "ntbpf_", 6));
	free(t);
	nt_metrics_free(m);
	onegroup_free(&x);
}

/*
 * --group-by host,ns: the host and ns labels, escaped (a hostnqn is a file's
 * string), and bounded: past NT_MX_KEY_VALUES (32) distinct hosts the rest
 * share host="other", whatever the report holds.
 */
static void test_host_labels(void **state)
{
	enum { NG = 40 };
	struct nt_report_opts o = { .group_by = NT_GB_HOST | NT_GB_NS };
	struct nt_metrics *m = nt_metrics_new("target");
	struct nt_group *g = calloc(NG, sizeof(*g));
	struct nt_report rep;
	int hosts = 0, other = 0;
	char *t;

	assert_non_null(g);
	nt_report_begin(&rep, NULL, 0, &o);
	for (int i = 0; i < NG; i++) {
		char nqn[64];

		snprintf(nqn, sizeof(nqn), i ? "nqn.2014-08.org.nvmexpress:uuid:%04d" : "nqn.ev\"il\n%d", i);
		g[i].host = nt_report_key_add(&rep, NT_KEY_HOST, nqn);
		g[i].ns = nt_report_key_add(&rep, NT_KEY_NS, "7");
		g[i].op = 0;
		g[i].size = 4096;
		g[i].count = 1;
		g[i].used = true;
		for (int s = 0; s < NT_ST_NR; s++)
			nt_hist_init(&g[i].h[s]);
	}
	rep.groups = g;
	rep.ngroups = NG;
	assert_int_equal(nt_metrics_add(m, &rep), 0);
	t = render(m, false);
	assert_non_null(strstr(t, "host=\"nqn.ev\\\"il\\n0\",ns=\"7\""));
	for (char *l = t; *l; l = strchr(l, '\n') + 1) {
		assert_true(*l == '#' || !strncmp(l, "ntbpf_", 6));
		if (!strncmp(l, "ntbpf_ios_total{", 16)) {
			hosts++;
			other += strstr(l, "host=\"other\"") && strstr(l, "} 8\n") == strchr(l, '}');
		}
	}
	assert_int_equal(hosts, 33);	/* 32 hosts and "other" */
	assert_int_equal(other, 1);	/* with the last 8 hosts' I/Os */
	free(t);
	nt_metrics_free(m);
	rep.groups = NULL;
	rep.ngroups = 0;
	for (int i = 0; i < NG; i++)
		for (int s = 0; s < NT_ST_NR; s++)
			nt_hist_free(&g[i].h[s]);
	free(g);
	nt_report_free(&rep);
}

/* ---- HTTP ---- */

static int http(struct nt_metrics *m, const char *req, char **resp)
{
	size_t len = 0;
	FILE *f = open_memstream(resp, &len);
	int st = nt_metrics_http_reply(f, m, req, strlen(req));

	fclose(f);
	return st;
}

static void test_http(void **state)
{
	struct nt_metrics *m = nt_metrics_new("target");
	char *r;

	assert_int_equal(http(m, "GET /metrics HTTP/1.1\r\nHost: x\r\nAccept: application/openmetrics-text;"
				 "version=1.0.0,text/plain;version=0.0.4;q=0.5\r\n\r\n", &r), 200);
	assert_non_null(strstr(r, "Content-Type: application/openmetrics-text; version=1.0.0; charset=utf-8\r\n"));
	assert_non_null(strstr(r, "\r\n\r\n# HELP"));
	assert_string_equal(r + strlen(r) - 6, "# EOF\n");
	free(r);
	assert_int_equal(http(m, "GET /metrics HTTP/1.0\r\naccept: text/plain\r\n\r\n", &r), 200);
	assert_non_null(strstr(r, "Content-Type: text/plain; version=0.0.4; charset=utf-8\r\n"));
	assert_null(strstr(r, "# EOF"));
	free(r);
	assert_int_equal(http(m, "HEAD /metrics HTTP/1.1\r\n\r\n", &r), 200);
	assert_null(strstr(r, "# HELP"));
	free(r);
	assert_int_equal(http(m, "GET /metrics?x=1 HTTP/1.1\r\n\r\n", &r), 200);
	free(r);
	assert_int_equal(http(m, "POST /metrics HTTP/1.1\r\n\r\n", &r), 405);
	free(r);
	assert_int_equal(http(m, "GET /etc/passwd HTTP/1.1\r\n\r\n", &r), 404);
	free(r);
	assert_int_equal(http(m, "GET /metrics\r\n\r\n", &r), 400);
	free(r);
	assert_int_equal(http(m, "\x16\x03\x01 garbage", &r), 400);
	free(r);
	assert_int_equal(http(m, "GET /metrics HTTP/1.1\r\nHost: x\r\n", &r), 400);	/* head never ended */
	free(r);
	nt_metrics_free(m);
}

static void test_loopback_only(void **state)
{
	struct nt_metrics *m = nt_metrics_new("initiator");
	char err[256] = "";

	assert_int_equal(nt_metrics_addr_is_loopback("127.0.0.1"), 1);
	assert_int_equal(nt_metrics_addr_is_loopback("127.3.4.5"), 1);
	assert_int_equal(nt_metrics_addr_is_loopback("::1"), 1);
	assert_int_equal(nt_metrics_addr_is_loopback("0.0.0.0"), 0);
	assert_int_equal(nt_metrics_addr_is_loopback("::"), 0);
	assert_int_equal(nt_metrics_addr_is_loopback("192.0.2.1"), 0);
	assert_null(nt_metrics_serve(m, "0.0.0.0:9464", false, err, sizeof(err)));
	assert_non_null(strstr(err, "not a loopback address"));
	assert_non_null(strstr(err, "--metrics-remote"));
	assert_null(nt_metrics_serve(m, ":9464", false, err, sizeof(err)));
	assert_non_null(strstr(err, "bad --metrics"));
	assert_null(nt_metrics_serve(m, "9464", false, err, sizeof(err)));
	nt_metrics_free(m);
}

static int dial(int port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port) };
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_true(fd >= 0);
	assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	return fd;
}

static size_t read_all(int fd, char *buf, size_t cap)
{
	size_t n = 0;
	ssize_t r;

	while (n < cap - 1 && (r = read(fd, buf + n, cap - 1 - n)) > 0)
		n += r;
	buf[n] = 0;
	return n;
}

/* a real server: a silent client and a flood do not stop others from being served */
static void test_server(void **state)
{
	struct nt_metrics *m = nt_metrics_new("initiator");
	struct nt_metrics_server *s;
	char err[256], *buf = malloc(1 << 20), big[9000];
	int port, idle, fd;

	assert_non_null(buf);
	{
		/* a free port: the kernel's pick for a socket of our own */
		struct sockaddr_in a = { .sin_family = AF_INET };
		socklen_t al = sizeof(a);
		int t = socket(AF_INET, SOCK_STREAM, 0);
		char addr[32];

		a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		assert_int_equal(bind(t, (struct sockaddr *)&a, sizeof(a)), 0);
		assert_int_equal(getsockname(t, (struct sockaddr *)&a, &al), 0);
		close(t);
		snprintf(addr, sizeof(addr), "127.0.0.1:%d", ntohs(a.sin_port));
		s = nt_metrics_serve(m, addr, false, err, sizeof(err));
		assert_non_null(s);
		port = nt_metrics_server_port(s);
		assert_int_equal(port, ntohs(a.sin_port));
	}
	idle = dial(port);	/* connects and says nothing */
	fd = dial(port);
	memset(big, 'A', sizeof(big));
	assert_int_equal(write(fd, big, sizeof(big)), (ssize_t)sizeof(big));	/* a request head too long */
	read_all(fd, buf, 1 << 20);
	assert_non_null(strstr(buf, "HTTP/1.1 400"));
	close(fd);
	fd = dial(port);
	assert_true(write(fd, "GET /metrics HTTP/1.1\r\nHost: t\r\n\r\n", 35) == 35);
	read_all(fd, buf, 1 << 20);
	assert_non_null(strstr(buf, "HTTP/1.1 200 OK"));
	assert_non_null(strstr(buf, "ntbpf_hooks_attached{role=\"initiator\"} 0\n"));
	close(fd);
	close(idle);
	nt_metrics_server_stop(s);
	nt_metrics_free(m);
	free(buf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bounds),
		cmocka_unit_test(test_quantile_error),
		cmocka_unit_test(test_render_formats),
		cmocka_unit_test(test_on_interval),
		cmocka_unit_test(test_label_escaping),
		cmocka_unit_test(test_host_labels),
		cmocka_unit_test(test_http),
		cmocka_unit_test(test_loopback_only),
		cmocka_unit_test(test_server),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
