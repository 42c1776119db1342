// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * metrics.c - the live intervals as an OpenMetrics / Prometheus endpoint.
 *
 * The live loop hands each finished interval's report to nt_metrics_add()
 * (under a mutex, a few microseconds); the HTTP server runs in its own
 * thread and renders a consistent snapshot under the same mutex.  Every
 * limit is fixed: connections (NT_MX_CONNS), request size (NT_MX_REQ),
 * time per connection (NT_MX_TIMEOUT_MS).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include "hist.h"
#include "metrics.h"
#include "groups.h"
#include "render.h"
#include "stages.h"
#include "stream.h"
#include "sysinfo.h"

#define NT_MX_CONNS 8			/* clients served at once; more wait in the backlog */
#define NT_MX_REQ 8192			/* request head, bytes */
#define NT_MX_TIMEOUT_MS 5000		/* a connection's whole life */
#define NT_MX_MAX_SERIES 4096		/* label sets kept (each holds ~340 buckets) */
#define NT_MX_KEY_VALUES 32		/* values of the host, subsys and ns labels each; more: "other" */

/*
 * ---- bucket bounds: from 0.95 us, x1.05 until past 10 s, each rounded down
 * to the last value of one of the report histogram's buckets (hist.h), so that
 * every value of an nt_hist bucket falls into the same bucket here: the
 * report's percentile and its samples then lie in the bucket PromQL
 * interpolates in, and its error is at most the bucket's width, 5 %. ----
 */

#define NT_MX_MAXB 400
static uint64_t bounds[NT_MX_MAXB];
static size_t nbounds;
static pthread_once_t bounds_once = PTHREAD_ONCE_INIT;

/* the first value of v's nt_hist bucket */
static uint64_t hist_bucket_low(uint64_t v)
{
	uint32_t b = nt_hist_bucket(v), s;

	if (b < 2 * NT_HIST_SUB)
		return b;
	s = (b >> NT_HIST_SUB_BITS) - 1;
	return (uint64_t)(b - (s << NT_HIST_SUB_BITS)) << s;
}

static void bounds_init(void)
{
	uint64_t b = 950;

	nbounds = 0;
	while (nbounds < NT_MX_MAXB) {
		b = hist_bucket_low(b + 1) - 1;		/* the end of the nt_hist bucket below b + 1 */
		bounds[nbounds++] = b;
		if (b >= 10000000000ull)
			break;
		b = b * 105 / 100;
	}
}

const uint64_t *nt_metrics_bounds_ns(size_t *n)
{
	pthread_once(&bounds_once, bounds_init);
	*n = nbounds;
	return bounds;
}

/* ---- state ---- */

struct series {
	char labels[1024];	/* stage="...",op="...",... (escaped; host and subsys NQNs cut at 120 bytes) */
	bool hist;		/* a latency histogram, else an I/O counter */
	uint64_t count;		/* I/Os, or values in the histogram */
	double sum;		/* seconds */
	uint64_t *b;		/* nbounds + 1 (the last: +Inf), not cumulative */
};

static void esc(char *dst, size_t len, const char *src);

struct nt_metrics {
	pthread_mutex_t mu;
	char role[16];
	struct series *s;
	size_t n, cap;
	uint64_t lost[NT_ML_NR];
	int peer_up;		/* -1: no peer */
	int hooks;
	uint64_t intervals;
	bool full;		/* NT_MX_MAX_SERIES reached: new label sets dropped */
	/* --group-by host, subsys, ns: the label values given out, at most NT_MX_KEY_VALUES each; then "other" */
	int nkv[NT_KEY_KINDS];
	char kv[NT_KEY_KINDS][NT_MX_KEY_VALUES][128];
};

/* a host, subsys or ns label value (escaped), bounded over the endpoint's life: the first ones, then "other" */
static void key_value(struct nt_metrics *m, enum nt_key_kind kind, const char *name, char *dst, size_t len)
{
	char cut[121];
	int i;

	snprintf(cut, sizeof(cut), "%s", name);
	for (i = 0; i < m->nkv[kind]; i++)
		if (!strcmp(m->kv[kind][i], cut))
			break;
	if (i == m->nkv[kind]) {
		if (i == NT_MX_KEY_VALUES || !strcmp(cut, "other")) {
			snprintf(dst, len, "other");
			return;
		}
		snprintf(m->kv[kind][m->nkv[kind]++], sizeof(m->kv[kind][0]), "%s", cut);
	}
	esc(dst, len, cut);
}

struct nt_metrics *nt_metrics_new(const char *role)
{
	struct nt_metrics *m = calloc(1, sizeof(*m));

	if (!m)
		return NULL;
	pthread_once(&bounds_once, bounds_init);
	pthread_mutex_init(&m->mu, NULL);
	snprintf(m->role, sizeof(m->role), "%s", role ? role : "unknown");
	m->peer_up = -1;
	return m;
}

void nt_metrics_free(struct nt_metrics *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < m->n; i++)
		free(m->s[i].b);
	free(m->s);
	pthread_mutex_destroy(&m->mu);
	free(m);
}

/* a label value as the text formats want it: \\, \" and \n escaped */
static void esc(char *dst, size_t len, const char *src)
{
	size_t o = 0;

	for (; *src && o + 3 < len; src++) {
		unsigned char c = *src;

		if (c == '\\' || c == '"') {
			dst[o++] = '\\';
			dst[o++] = c;
		} else if (c == '\n') {
			dst[o++] = '\\';
			dst[o++] = 'n';
		} else if (c >= 0x20 && c != 0x7f) {
			dst[o++] = c;
		} else {
			dst[o++] = '?';	/* control bytes from an untrusted header */
		}
	}
	dst[o] = 0;
}

static struct series *series_get(struct nt_metrics *m, const char *labels, bool hist)
{
	struct series *s;

	for (size_t i = 0; i < m->n; i++)
		if (m->s[i].hist == hist && !strcmp(m->s[i].labels, labels))
			return &m->s[i];
	if (m->n == NT_MX_MAX_SERIES) {
		m->full = true;
		return NULL;
	}
	if (m->n == m->cap) {
		size_t ncap = m->cap ? 2 * m->cap : 32;
		struct series *p = realloc(m->s, ncap * sizeof(*p));

		if (!p)
			return NULL;
		m->s = p;
		m->cap = ncap;
	}
	s = &m->s[m->n];
	memset(s, 0, sizeof(*s));
	snprintf(s->labels, sizeof(s->labels), "%s", labels);
	s->hist = hist;
	if (hist && !(s->b = calloc(nbounds + 1, sizeof(*s->b))))
		return NULL;
	m->n++;
	return s;
}

/* the first bucket whose bound is >= v (nbounds: +Inf) */
static size_t bucket_of(uint64_t v)
{
	size_t lo = 0, hi = nbounds;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (bounds[mid] >= v)
			hi = mid;
		else
			lo = mid + 1;
	}
	return lo;
}

static void add_hist(struct series *s, const struct nt_hist *h)
{
	if (!h->count || !h->buckets)
		return;
	for (uint32_t b = 0; b < NT_HIST_NBUCKETS; b++)
		if (h->buckets[b])
			s->b[bucket_of(nt_hist_bucket_value(b))] += h->buckets[b];
	s->count += h->count;
	s->sum += h->sum / 1e9;
}

/* --group-by host, subsys, ns: ',host="...",subsys="...",ns="..."' for the keys grouped by */
static void metric_keys(struct nt_metrics *m, const struct nt_report *rep, const struct nt_group *g, char *dst,
			size_t len)
{
	static const char *const label[NT_KEY_KINDS] = { "host", "subsys", "ns" };
	const unsigned int bit[NT_KEY_KINDS] = { NT_GB_HOST, NT_GB_SUBSYS, NT_GB_NS };
	const uint16_t idx[NT_KEY_KINDS] = { g->host, g->subsys, g->ns };
	size_t o = 0;

	dst[0] = 0;
	for (int k = 0; k < NT_KEY_KINDS; k++) {
		char v[256];

		if (!(rep->o->group_by & bit[k]))
			continue;
		key_value(m, (enum nt_key_kind)k, nt_report_key_name(rep, (enum nt_key_kind)k, idx[k]), v, sizeof(v));
		o += (size_t)snprintf(dst + o, o < len ? len - o : 0, ",%s=\"%s\"", label[k], v);
		if (o >= len)
			break;
	}
}

int nt_metrics_add(struct nt_metrics *m, const struct nt_report *rep)
{
	int rc = 0;

	pthread_mutex_lock(&m->mu);
	m->intervals++;
	for (int gi = 0; gi < rep->ngroups; gi++) {
		const struct nt_group *g = &rep->groups[gi];
		char dev[64], edev[160], erole[40], base[960], labels[1024], keys[640] = "";
		struct series *s;

		if (!g->count)
			continue;
		nt_report_group_dev(rep, g, dev, sizeof(dev));
		esc(edev, sizeof(edev), (rep->o->group_by & NT_GB_DEV) ? dev : "all");
		esc(erole, sizeof(erole), m->role);
		metric_keys(m, rep, g, keys, sizeof(keys));
		snprintf(base, sizeof(base), "op=\"%s\",size=\"%u\",device=\"%s\",role=\"%s\"%s",
			 g->op == 0xff ? "all" : nt_op_name(g->op), g->size, edev, erole, keys);
		if ((s = series_get(m, base, false)))
			s->count += g->count;
		else
			rc = -1;
		for (int st = 0; st < NT_ST_NR; st++) {
			if (!g->h[st].count)
				continue;
			snprintf(labels, sizeof(labels), "stage=\"%s\",%s", nt_stage_name(st), base);
			if ((s = series_get(m, labels, true)))
				add_hist(s, &g->h[st]);
			else
				rc = -1;
		}
	}
	pthread_mutex_unlock(&m->mu);
	return rc;
}

void nt_metrics_set_lost(struct nt_metrics *m, const uint64_t lost[NT_ML_NR])
{
	pthread_mutex_lock(&m->mu);
	memcpy(m->lost, lost, sizeof(m->lost));
	pthread_mutex_unlock(&m->mu);
}

void nt_metrics_set_peer(struct nt_metrics *m, int up)
{
	pthread_mutex_lock(&m->mu);
	m->peer_up = up;
	pthread_mutex_unlock(&m->mu);
}

void nt_metrics_set_hooks(struct nt_metrics *m, int attached)
{
	pthread_mutex_lock(&m->mu);
	m->hooks = attached;
	pthread_mutex_unlock(&m->mu);
}

void nt_metrics_on_interval(void *ctx, const struct nt_report *rep, const struct nt_interval_info *info)
{
	struct nt_metrics *m = ctx;

	nt_metrics_add(m, rep);
	if (info && info->peer)
		nt_metrics_set_peer(m, !strcmp(info->peer, "connected"));
}

/* ---- rendering ---- */

/* ns as seconds, exactly (a decimal of at most 9 fraction digits, no trailing zeros) */
static void secs_str(char *buf, size_t len, uint64_t ns)
{
	int n = snprintf(buf, len, "%" PRIu64 ".%09" PRIu64, ns / (uint64_t)1000000000, ns % (uint64_t)1000000000);

	while (n > 0 && buf[n - 1] == '0')
		buf[--n] = 0;
	if (n > 0 && buf[n - 1] == '.')
		buf[n++] = '0', buf[n] = 0;
}

static const char *const lost_cause[NT_ML_NR] = {
	[NT_ML_RINGBUF] = "ring_buffer_full",
	[NT_ML_MAP_FULL] = "map_full",
	[NT_ML_NO_COMPLETE] = "no_completion",
	[NT_ML_PROG_MISSES] = "program_runs_skipped",
	[NT_ML_NO_START] = "start_never_seen",
	[NT_ML_NOT_RUN] = "not_run",
};

static void family(FILE *out, bool om, const char *name, const char *type, const char *help)
{
	size_t l = strlen(name);

	/* OpenMetrics names a counter family without its _total suffix */
	if (om && !strcmp(type, "counter") && l > 6 && !strcmp(name + l - 6, "_total"))
		l -= 6;
	fprintf(out, "# HELP %.*s %s\n# TYPE %.*s %s\n", (int)l, name, help, (int)l, name, type);
}

void nt_metrics_render(FILE *out, struct nt_metrics *m, bool om)
{
	char le[32], erole[40];

	pthread_mutex_lock(&m->mu);
	esc(erole, sizeof(erole), m->role);
	family(out, om, "ntbpf_stage_latency_seconds", "histogram",
	       "Latency of each stage of an NVMe/TCP I/O (docs/stages.md), cumulative since start.");
	for (size_t i = 0; i < m->n; i++) {
		const struct series *s = &m->s[i];
		uint64_t cum = 0;

		if (!s->hist)
			continue;
		for (size_t b = 0; b < nbounds; b++) {
			cum += s->b[b];
			secs_str(le, sizeof(le), bounds[b]);
			fprintf(out, "ntbpf_stage_latency_seconds_bucket{%s,le=\"%s\"} %" PRIu64 "\n", s->labels, le, cum);
		}
		cum += s->b[nbounds];
		fprintf(out, "ntbpf_stage_latency_seconds_bucket{%s,le=\"+Inf\"} %" PRIu64 "\n", s->labels, cum);
		fprintf(out, "ntbpf_stage_latency_seconds_sum{%s} %.9g\n", s->labels, s->sum);
		fprintf(out, "ntbpf_stage_latency_seconds_count{%s} %" PRIu64 "\n", s->labels, s->count);
	}
	family(out, om, "ntbpf_ios_total", "counter", "I/Os seen, per group.");
	for (size_t i = 0; i < m->n; i++)
		if (!m->s[i].hist)
			fprintf(out, "ntbpf_ios_total{%s} %" PRIu64 "\n", m->s[i].labels, m->s[i].count);
	family(out, om, "ntbpf_lost_records_total", "counter",
	       "I/Os that could not be measured, by cause (ring buffer full, map full, completion never seen, "
	       "BPF program runs the kernel skipped, start never seen: in flight when live began, or its issue's "
	       "program not run by the kernel; not run: I/Os the devices' own counts hold that no program run saw).");
	for (int c = 0; c < NT_ML_NR; c++)
		fprintf(out, "ntbpf_lost_records_total{cause=\"%s\",role=\"%s\"} %" PRIu64 "\n", lost_cause[c], erole,
			m->lost[c]);
	if (m->peer_up >= 0) {
		family(out, om, "ntbpf_peer_up", "gauge", "1 when the target's record stream (--peer) is connected.");
		fprintf(out, "ntbpf_peer_up{role=\"%s\"} %d\n", erole, m->peer_up);
	}
	family(out, om, "ntbpf_hooks_attached", "gauge", "Kernel hooks attached (ntbpf probe lists them).");
	fprintf(out, "ntbpf_hooks_attached{role=\"%s\"} %d\n", erole, m->hooks);
	family(out, om, "ntbpf_intervals_total", "counter", "Intervals accounted (the endpoint's update count).");
	fprintf(out, "ntbpf_intervals_total{role=\"%s\"} %" PRIu64 "\n", erole, m->intervals);
	if (m->full) {
		family(out, om, "ntbpf_series_dropped", "gauge", "1 when label sets past the limit were dropped.");
		fprintf(out, "ntbpf_series_dropped{role=\"%s\"} 1\n", erole);
	}
	pthread_mutex_unlock(&m->mu);
	if (om)
		fputs("# EOF\n", out);
}

bool nt_metrics_wants_openmetrics(const char *accept)
{
	return accept && strstr(accept, "application/openmetrics-text") != NULL;
}

/* ---- HTTP ---- */

/* the value of header name in the request head, into buf ("" if absent) */
static void header_value(const char *req, size_t len, const char *name, char *buf, size_t blen)
{
	size_t nl = strlen(name);
	const char *p = req, *end = req + len;

	buf[0] = 0;
	while (p < end) {
		const char *eol = memchr(p, '\n', end - p);
		size_t ll = eol ? (size_t)(eol - p) : (size_t)(end - p);

		if (ll > nl && !strncasecmp(p, name, nl) && p[nl] == ':') {
			const char *v = p + nl + 1;

			while (v < p + ll && (*v == ' ' || *v == '\t'))
				v++;
			ll -= v - p;
			while (ll && (v[ll - 1] == '\r' || v[ll - 1] == ' '))
				ll--;
			snprintf(buf, blen, "%.*s", (int)ll, v);
			return;
		}
		if (!eol)
			break;
		p = eol + 1;
	}
}

static int reply(FILE *out, int status, const char *reason, const char *ctype, const char *body, size_t blen,
		 bool head)
{
	fprintf(out, "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\nConnection: close\r\n\r\n",
		status, reason, ctype, blen);
	if (!head)
		fwrite(body, 1, blen, out);
	return status;
}

int nt_metrics_http_reply(FILE *out, struct nt_metrics *m, const char *req, size_t len)
{
	static const char text[] = "text/plain; charset=utf-8";
	char method[8], path[256], accept[512];
	const char *sp1, *sp2, *eol = memchr(req, '\n', len);
	bool head, om;
	char *body = NULL;
	size_t blen = 0;
	FILE *b;
	int st;

	if (!eol || !memmem(req, len, "\r\n\r\n", 4) || !(sp1 = memchr(req, ' ', eol - req)) ||
	    !(sp2 = memchr(sp1 + 1, ' ', eol - sp1 - 1)) || sp1 - req >= (long)sizeof(method) ||
	    sp2 - sp1 - 1 >= (long)sizeof(path) || strncmp(sp2 + 1, "HTTP/1.", 7))
		return reply(out, 400, "Bad Request", text, "bad request\n", 12, false);
	snprintf(method, sizeof(method), "%.*s", (int)(sp1 - req), req);
	snprintf(path, sizeof(path), "%.*s", (int)(sp2 - sp1 - 1), sp1 + 1);
	head = !strcmp(method, "HEAD");
	if (strcmp(method, "GET") && !head)
		return reply(out, 405, "Method Not Allowed", text, "GET or HEAD\n", 12, false);
	if (!strcmp(path, "/"))
		return reply(out, 200, "OK", "text/html; charset=utf-8",
			     "<html><body><a href=\"/metrics\">/metrics</a></body></html>\n", 58, head);
	if (strcmp(path, "/metrics") && strncmp(path, "/metrics?", 9))
		return reply(out, 404, "Not Found", text, "not found (try /metrics)\n", 25, head);
	header_value(req, len, "Accept", accept, sizeof(accept));
	om = nt_metrics_wants_openmetrics(accept);
	b = open_memstream(&body, &blen);
	if (!b)
		return reply(out, 500, "Internal Server Error", text, "out of memory\n", 14, head);
	nt_metrics_render(b, m, om);
	if (fclose(b)) {
		free(body);
		return reply(out, 500, "Internal Server Error", text, "out of memory\n", 14, head);
	}
	st = reply(out, 200, "OK",
		   om ? "application/openmetrics-text; version=1.0.0; charset=utf-8"
		      : "text/plain; version=0.0.4; charset=utf-8", body, blen, head);
	free(body);
	return st;
}

/* ---- the server thread ---- */

struct conn {
	int fd;
	size_t len;
	uint64_t deadline;	/* ms, monotonic */
	char buf[NT_MX_REQ];
};

struct nt_metrics_server {
	struct nt_metrics *m;
	int lfd;
	int wake[2];
	pthread_t th;
	struct conn c[NT_MX_CONNS];
};

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void conn_close(struct conn *c)
{
	close(c->fd);
	c->fd = -1;
	c->len = 0;
}

/* the reply, written until done or the connection's deadline */
static void conn_answer(struct nt_metrics_server *s, struct conn *c)
{
	char *resp = NULL;
	size_t rlen = 0, off = 0;
	FILE *f = open_memstream(&resp, &rlen);

	if (!f) {
		conn_close(c);
		return;
	}
	nt_metrics_http_reply(f, s->m, c->buf, c->len);
	if (fclose(f)) {
		free(resp);
		conn_close(c);
		return;
	}
	while (off < rlen) {
		struct pollfd p = { .fd = c->fd, .events = POLLOUT };
		uint64_t t = now_ms();
		ssize_t w;

		if (t >= c->deadline || poll(&p, 1, (int)(c->deadline - t)) <= 0)
			break;
		w = send(c->fd, resp + off, rlen - off, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (w < 0 && (errno == EAGAIN || errno == EINTR))
			continue;
		if (w <= 0)
			break;
		off += w;
	}
	free(resp);
	conn_close(c);
}

static void *server_main(void *arg)
{
	struct nt_metrics_server *s = arg;

	for (;;) {
		struct pollfd p[NT_MX_CONNS + 2];
		int idx[NT_MX_CONNS], np = 0, nfree = 0;
		uint64_t t = now_ms();

		p[np++] = (struct pollfd){ .fd = s->wake[0], .events = POLLIN };
		for (int i = 0; i < NT_MX_CONNS; i++) {
			idx[i] = -1;
			if (s->c[i].fd < 0) {
				nfree++;
				continue;
			}
			if (t >= s->c[i].deadline) {
				conn_close(&s->c[i]);	/* too slow: dropped */
				nfree++;
				continue;
			}
			idx[i] = np;
			p[np++] = (struct pollfd){ .fd = s->c[i].fd, .events = POLLIN };
		}
		/* at the limit, new clients wait in the listen backlog */
		if (nfree)
			p[np++] = (struct pollfd){ .fd = s->lfd, .events = POLLIN };
		if (poll(p, np, 200) < 0 && errno != EINTR)
			break;
		if (p[0].revents)
			break;	/* stop */
		if (nfree && (p[np - 1].revents & POLLIN)) {
			int fd = accept4(s->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

			for (int i = 0; fd >= 0 && i < NT_MX_CONNS; i++)
				if (s->c[i].fd < 0) {
					s->c[i].fd = fd;
					s->c[i].len = 0;
					s->c[i].deadline = now_ms() + NT_MX_TIMEOUT_MS;
					fd = -1;
				}
			if (fd >= 0)
				close(fd);
		}
		for (int i = 0; i < NT_MX_CONNS; i++) {
			struct conn *c = &s->c[i];
			ssize_t r;

			if (idx[i] < 0 || !p[idx[i]].revents || c->fd < 0)
				continue;
			r = recv(c->fd, c->buf + c->len, sizeof(c->buf) - 1 - c->len, 0);
			if (r < 0 && (errno == EAGAIN || errno == EINTR))
				continue;
			if (r <= 0) {
				conn_close(c);
				continue;
			}
			c->len += r;
			c->buf[c->len] = 0;
			/* a whole request head, or as much as we take (then: 400) */
			if (memmem(c->buf, c->len, "\r\n\r\n", 4) || c->len == sizeof(c->buf) - 1)
				conn_answer(s, c);
		}
	}
	return NULL;
}

int nt_metrics_addr_is_loopback(const char *host)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *ai, *a;
	int lo = 1;

	if (nt_resolve(host, NULL, &hints, &ai))
		return -1;
	for (a = ai; a; a = a->ai_next) {
		if (a->ai_family == AF_INET) {
			const struct sockaddr_in *sin = (const void *)a->ai_addr;

			if ((ntohl(sin->sin_addr.s_addr) >> 24) != 127)
				lo = 0;
		} else if (a->ai_family == AF_INET6) {
			const struct sockaddr_in6 *s6 = (const void *)a->ai_addr;

			if (!IN6_IS_ADDR_LOOPBACK(&s6->sin6_addr))
				lo = 0;
		} else {
			lo = 0;
		}
	}
	freeaddrinfo(ai);
	return lo;
}

struct nt_metrics_server *nt_metrics_serve(struct nt_metrics *m, const char *addr, bool allow_remote, char *err,
					   size_t errlen)
{
	char host[128], port[16];
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM }, *ai;
	struct nt_metrics_server *s;
	int one = 1, rc, lo;

	if (nt_split_addr(addr, host, sizeof(host), port, sizeof(port)) || !host[0]) {
		snprintf(err, errlen, "bad --metrics '%s' (want ADDR:PORT, e.g. 127.0.0.1:9464)", addr);
		return NULL;
	}
	lo = nt_metrics_addr_is_loopback(host);
	if (lo < 0) {
		snprintf(err, errlen, "--metrics %s: cannot resolve '%s'%s", addr, host,
			 nt_resolve_hint(nt_build_static(), EAI_NONAME));
		return NULL;
	}
	if (!lo && !allow_remote) {
		snprintf(err, errlen, "--metrics %s is not a loopback address: the endpoint has no authentication, "
			 "so other hosts may read it only with --metrics-remote", addr);
		return NULL;
	}
	rc = nt_resolve(host, port, &hints, &ai);
	if (rc) {
		snprintf(err, errlen, "--metrics %s: %s%s", addr, gai_strerror(rc), nt_resolve_hint(nt_build_static(), rc));
		return NULL;
	}
	s = calloc(1, sizeof(*s));
	if (!s) {
		freeaddrinfo(ai);
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	s->m = m;
	s->wake[0] = s->wake[1] = -1;
	for (int i = 0; i < NT_MX_CONNS; i++)
		s->c[i].fd = -1;
	s->lfd = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (s->lfd < 0 || setsockopt(s->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(s->lfd, ai->ai_addr, ai->ai_addrlen) || listen(s->lfd, 16) || pipe2(s->wake, O_CLOEXEC)) {
		snprintf(err, errlen, "--metrics %s: %s", addr, strerror(errno));
		goto fail;
	}
	freeaddrinfo(ai);
	ai = NULL;
	if (pthread_create(&s->th, NULL, server_main, s)) {
		snprintf(err, errlen, "--metrics %s: cannot start the server thread", addr);
		goto fail;
	}
	return s;
fail:
	if (ai)
		freeaddrinfo(ai);
	if (s->lfd >= 0)
		close(s->lfd);
	if (s->wake[0] >= 0) {
		close(s->wake[0]);
		close(s->wake[1]);
	}
	free(s);
	return NULL;
}

int nt_metrics_server_port(const struct nt_metrics_server *s)
{
	return nt_sock_port(s->lfd);
}

void nt_metrics_server_stop(struct nt_metrics_server *s)
{
	if (!s)
		return;
	if (write(s->wake[1], "x", 1) != 1)
		pthread_cancel(s->th);
	pthread_join(s->th, NULL);
	for (int i = 0; i < NT_MX_CONNS; i++)
		if (s->c[i].fd >= 0)
			close(s->c[i].fd);
	close(s->lfd);
	close(s->wake[0]);
	close(s->wake[1]);
	free(s);
}
