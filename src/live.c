// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * live.c - "ntbpf live": the report, every interval, while I/O runs.
 *
 * Local records are aggregated per interval with the report's own grouping
 * and histograms.  With --peer, the initiator also receives the target's
 * records (a thread reads the peer's record stream) and pairs them with its
 * own, so every line carries all ten stages; an initiator interval is held
 * back one interval so that its target records have time to arrive.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include "live.h"
#include "match.h"
#include "report.h"

#define POOL_AGE_MAX 3	/* intervals a target record waits for its initiator partner */

struct recvec {
	struct ntbpf_rec *v;
	size_t n, cap;
};

static int vec_push(struct recvec *v, const struct ntbpf_rec *r)
{
	if (v->n == v->cap) {
		size_t ncap = v->cap ? v->cap * 2 : 1024;
		struct ntbpf_rec *p = realloc(v->v, ncap * sizeof(*p));

		if (!p)
			return -1;
		v->v = p;
		v->cap = ncap;
	}
	v->v[v->n++] = *r;
	return 0;
}

/* ---- the peer: a thread reading the target's record stream ---- */

struct peer {
	char host[128], port[16];
	pthread_t th;
	pthread_mutex_t mu;
	struct recvec incoming;	/* received, not yet taken by the main thread */
	struct nt_header hdr;	/* the peer's scalars (boot id, clocks) */
	char state[128];
	int fd;
	volatile int stop;
};

static void peer_state(struct peer *p, const char *fmt, const char *arg)
{
	pthread_mutex_lock(&p->mu);
	snprintf(p->state, sizeof(p->state), fmt, arg);
	pthread_mutex_unlock(&p->mu);
}

static int dial(const char *host, const char *port, char *err, size_t errlen)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM }, *ai = NULL, *a;
	int fd = -1, rc = getaddrinfo(host, port, &hints, &ai);

	if (rc) {
		snprintf(err, errlen, "%s", gai_strerror(rc));
		return -1;
	}
	for (a = ai; a; a = a->ai_next) {
		fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
		if (fd < 0)
			continue;
		if (!connect(fd, a->ai_addr, a->ai_addrlen))
			break;
		snprintf(err, errlen, "%s", strerror(errno));
		close(fd);
		fd = -1;
	}
	freeaddrinfo(ai);
	return fd;
}

/* a connection's reader and stream: closed also when the thread is cancelled inside a read */
struct peer_conn {
	struct nt_reader *rd;
	FILE *f;
};

static void peer_conn_close(void *arg)
{
	struct peer_conn *c = arg;

	nt_reader_close(c->rd);
	fclose(c->f);
}

static void *peer_main(void *arg)
{
	struct peer *p = arg;

	while (!p->stop) {
		char err[256] = "";
		struct nt_header h;
		struct nt_reader *rd;
		struct ntbpf_rec r;
		FILE *f;
		int fd = dial(p->host, p->port, err, sizeof(err));

		if (fd < 0) {
			peer_state(p, "down (%s), retrying", err);
			sleep(1);
			continue;
		}
		/*
		 * The header is read with cancellation off (a cancel inside
		 * nt_reader_open would leak it): peer_stop shuts the socket
		 * down first, which ends the read, once it sees p->fd.
		 */
		__atomic_store_n(&p->fd, fd, __ATOMIC_SEQ_CST);
		pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, NULL);
		f = __atomic_load_n(&p->stop, __ATOMIC_SEQ_CST) ? NULL : fdopen(fd, "rb");
		rd = f ? nt_reader_open(f, &h, err, sizeof(err)) : NULL;
		pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, NULL);
		if (!rd) {
			peer_state(p, "down (%s), retrying", f ? err : strerror(errno));
			p->fd = -1;
			if (f)
				fclose(f);
			else
				close(fd);
			sleep(1);
			continue;
		}
		pthread_mutex_lock(&p->mu);
		memcpy(p->hdr.boot_id, h.boot_id, sizeof(h.boot_id));
		memcpy(p->hdr.hostname, h.hostname, sizeof(h.hostname));
		p->hdr.mono_ns = h.mono_ns;
		p->hdr.real_ns = h.real_ns;
		p->hdr.role = h.role;
		snprintf(p->state, sizeof(p->state), "connected");
		pthread_mutex_unlock(&p->mu);
		nt_header_free(&h);
		{
			struct peer_conn c = { rd, f };

			pthread_cleanup_push(peer_conn_close, &c);
			while (!p->stop && nt_reader_next(rd, &r) == 1) {
				pthread_mutex_lock(&p->mu);
				vec_push(&p->incoming, &r);
				pthread_mutex_unlock(&p->mu);
			}
			nt_reader_status(rd, err, sizeof(err));
			p->fd = -1;
			pthread_cleanup_pop(1);
		}
		if (!p->stop) {
			peer_state(p, "down (%s), reconnecting", err[0] ? err : "connection closed");
			sleep(1);
		}
	}
	return NULL;
}

int nt_split_addr(const char *s, char *host, size_t hl, char *port, size_t pl)
{
	const char *c = strrchr(s, ':');

	if (!c || c == s || !c[1] || (size_t)(c - s) >= hl || strlen(c + 1) >= pl)
		return -1;
	snprintf(host, hl, "%.*s", (int)(c - s), s);
	if (host[0] == '[' && host[strlen(host) - 1] == ']') {
		memmove(host, host + 1, strlen(host));
		host[strlen(host) - 1] = 0;
	}
	snprintf(port, pl, "%s", c + 1);
	return 0;
}

/* ---- aggregation ---- */

struct nt_live {
	const struct nt_config *cfg;
	struct nt_report_opts o;
	struct nt_input local;		/* this host's header (device names, controllers) */
	struct recvec cur;		/* this interval's records */
	struct recvec pending;		/* peer mode: last interval's initiator records */
	double pending_secs;
	uint64_t pending_lost;
	char pending_when[16];
	struct recvec pool;		/* peer mode: target records waiting for a partner */
	uint8_t *pool_age;
	size_t pool_age_cap;
	struct peer *peer;
};

struct nt_live *nt_live_new(const struct nt_config *cfg, const struct nt_header *local)
{
	struct nt_live *l = calloc(1, sizeof(*l));

	if (!l)
		return NULL;
	l->cfg = cfg;
	nt_report_opts_of(cfg, &l->o);
	l->local.path = "live";
	l->local.hdr = *local;	/* shares the caller's arrays: never freed here */
	return l;
}

void nt_live_push(struct nt_live *l, const struct ntbpf_rec *r)
{
	vec_push(&l->cur, r);
}

static void now_label(char *buf, size_t len)
{
	time_t t = time(NULL);
	struct tm tm;

	localtime_r(&t, &tm);
	strftime(buf, len, "%H:%M:%S", &tm);
}

/* this host's records alone */
static void tick_local(struct nt_live *l, FILE *out, double secs, uint64_t lost)
{
	struct nt_report rep;
	struct nt_interval_info info = { .lost = lost };
	char when[16];

	now_label(when, sizeof(when));
	nt_report_begin(&rep, &l->local, 1, &l->o);
	for (size_t k = 0; k < l->cur.n; k++) {
		const struct ntbpf_rec *r = &l->cur.v[k];

		if (r->role == NTBPF_ROLE_TARGET)
			nt_report_add(&rep, NULL, r);
		else
			nt_report_add(&rep, r, NULL);
	}
	nt_report_finish(&rep);
	nt_report_print_interval(out, &rep, when, secs, &info);
	nt_report_free(&rep);
	l->cur.n = 0;
}

/* take what the peer thread received into the pool */
static void pool_take(struct nt_live *l)
{
	struct peer *p = l->peer;

	pthread_mutex_lock(&p->mu);
	for (size_t k = 0; k < p->incoming.n; k++)
		vec_push(&l->pool, &p->incoming.v[k]);
	p->incoming.n = 0;
	pthread_mutex_unlock(&p->mu);
	if (l->pool.n > l->pool_age_cap) {
		uint8_t *a = realloc(l->pool_age, l->pool.cap);

		if (a) {
			memset(a + l->pool_age_cap, 0, l->pool.cap - l->pool_age_cap);
			l->pool_age = a;
			l->pool_age_cap = l->pool.cap;
		}
	}
}

/* the previous interval's initiator I/Os, paired with the target records that arrived since */
static void tick_peer(struct nt_live *l, FILE *out, double secs, uint64_t lost)
{
	struct nt_input in[2];
	struct nt_matching m;
	struct nt_report rep;
	struct nt_interval_info info = { 0 };
	char state[128];
	size_t keep = 0, expired = 0;

	pool_take(l);
	pthread_mutex_lock(&l->peer->mu);
	snprintf(state, sizeof(state), "%s", l->peer->state);
	memset(&in, 0, sizeof(in));
	in[1].hdr.role = NTBPF_ROLE_TARGET;
	memcpy(in[1].hdr.boot_id, l->peer->hdr.boot_id, sizeof(in[1].hdr.boot_id));
	in[1].hdr.mono_ns = l->peer->hdr.mono_ns;
	in[1].hdr.real_ns = l->peer->hdr.real_ns;
	pthread_mutex_unlock(&l->peer->mu);
	in[0].hdr = l->local.hdr;
	in[0].recs = l->pending.v;
	in[0].n = l->pending.n;
	in[1].recs = l->pool.v;
	in[1].n = l->pool.n;
	info.peer = state;
	info.lost = l->pending_lost;

	if (l->pending_when[0] && !nt_match_build(&m, in, 2)) {
		nt_report_begin(&rep, &l->local, 1, &l->o);
		for (size_t k = 0; k < m.n_init; k++)
			nt_report_add(&rep, m.init[k], m.partner[k]);
		nt_report_finish(&rep);
		info.matched = m.matched;
		info.unmatched_init = m.n_init - m.matched;
		/* the pool keeps what did not match, a few intervals at most */
		for (size_t k = 0; k < m.n_tgt; k++) {
			size_t idx = m.tgt[k] - l->pool.v;

			if (m.tgt_matched[k])
				continue;
			if (l->pool_age[idx] + 1 > POOL_AGE_MAX) {
				expired++;
				continue;
			}
			l->pool_age[keep] = l->pool_age[idx] + 1;
			l->pool.v[keep++] = l->pool.v[idx];
		}
		l->pool.n = keep;
		info.unmatched_tgt = expired;
		nt_report_print_interval(out, &rep, l->pending_when, l->pending_secs, &info);
		nt_report_free(&rep);
		nt_match_free(&m);
	}
	/* this interval becomes the pending one */
	{
		struct recvec t = l->pending;

		l->pending = l->cur;
		l->cur = t;
		l->cur.n = 0;
	}
	l->pending_secs = secs;
	l->pending_lost = lost;
	now_label(l->pending_when, sizeof(l->pending_when));
}

void nt_live_tick(struct nt_live *l, FILE *out, double secs, uint64_t lost)
{
	if (l->peer)
		tick_peer(l, out, secs, lost);
	else
		tick_local(l, out, secs, lost);
}

int nt_live_peer(struct nt_live *l, const char *addr, char *err, size_t errlen)
{
	struct peer *p = calloc(1, sizeof(*p));

	if (!p)
		return -1;
	if (nt_split_addr(addr, p->host, sizeof(p->host), p->port, sizeof(p->port))) {
		snprintf(err, errlen, "bad --peer '%s' (want HOST:PORT)", addr);
		free(p);
		return -1;
	}
	pthread_mutex_init(&p->mu, NULL);
	p->fd = -1;
	snprintf(p->state, sizeof(p->state), "connecting");
	if (pthread_create(&p->th, NULL, peer_main, p)) {
		snprintf(err, errlen, "cannot start the peer thread");
		free(p);
		return -1;
	}
	l->peer = p;
	return 0;
}

static void peer_stop(struct peer *p)
{
	int fd;

	__atomic_store_n(&p->stop, 1, __ATOMIC_SEQ_CST);
	fd = __atomic_load_n(&p->fd, __ATOMIC_SEQ_CST);
	if (fd >= 0)
		shutdown(fd, SHUT_RDWR);
	pthread_cancel(p->th);	/* it may sleep or block in connect */
	pthread_join(p->th, NULL);
	free(p->incoming.v);
	pthread_mutex_destroy(&p->mu);
	free(p);
}

void nt_live_free(struct nt_live *l)
{
	if (!l)
		return;
	if (l->peer)
		peer_stop(l->peer);
	free(l->cur.v);
	free(l->pending.v);
	free(l->pool.v);
	free(l->pool_age);
	free(l);
}

