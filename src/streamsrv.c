// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * streamsrv.c - the live record stream's server ("live --serve", stream.h):
 * it accepts, authenticates and sends from its caller's loop on non-blocking
 * sockets, a bounded queue per peer; with a key per host each peer gets its
 * own host's controllers' records.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <limits.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "stream_int.h"
#include "sysinfo.h"

#define NCAND 4			/* connections authenticating at once */
#define NT_STREAM_CTLS 1024	/* per-host keys: controllers routed (NT_TNQN_CTRLS); more are nobody's */

struct cand {
	int fd;
	uint64_t deadline;
	uint8_t nonce[32];
	uint8_t in[RESPONSE_LEN];
	size_t got;
	char who[64];
};

/* an authenticated peer: its own writer, queue and drop count */
struct peer {
	int fd;
	char who[64];
	const char *host;		/* per-host keys: the hostnqn its key names; NULL: every record */
	FILE *wf;			/* the writer's stream: appends to q */
	struct nt_writer *w;
	uint8_t *q;			/* bytes to send */
	size_t qlen, qoff, qcap;
	uint64_t dropped, dropped_reported;
	uint64_t sent, sent_at_tick;	/* bytes the socket took: progress between ticks */
	int stuck;			/* ticks in a row with bytes waiting and none taken */
};

/* per-host keys: a controller (cntlid) and its host at the last two ticks */
struct ctl {
	uint16_t cntlid;
	bool prev_ok, now_ok, send;
	char prev[NT_NQN_MAX], now[NT_NQN_MAX];
};

struct nt_stream_server {
	int lfd;
	struct nt_key key;
	const struct nt_keyset *ks;	/* per-host keys (not owned), or NULL: one key, one peer */
	int (*host_of)(void *ctx, uint16_t cntlid, char *nqn, size_t len);
	void *host_ctx;
	const struct nt_header *hdr;
	FILE *log;
	struct cand cand[NCAND];
	struct peer peer[NT_STREAM_PEERS_MAX];
	int peers_max;
	size_t qmax;
	uint64_t dropped_closed;	/* records dropped for peers since gone */
	/* the interval's records, routed at its end */
	struct ntbpf_rec *iv;
	size_t ivn, ivcap;
	uint64_t iv_over;		/* records over NT_STREAM_MAX_RECS this interval: every peer's drop */
	struct ctl *ctl;
	size_t nctl;
	int16_t *ctl_of;		/* cntlid -> index in ctl, -1 */
	uint64_t withheld, withheld_reported;
};

static int q_append(struct peer *p, const void *buf, size_t n)
{
	if (p->qoff && p->qoff == p->qlen)
		p->qoff = p->qlen = 0;
	if (p->qlen + n > p->qcap) {
		size_t ncap = p->qcap ? p->qcap : 65536;
		uint8_t *q;

		if (p->qoff) {	/* compact first */
			memmove(p->q, p->q + p->qoff, p->qlen - p->qoff);
			p->qlen -= p->qoff;
			p->qoff = 0;
		}
		while (ncap < p->qlen + n)
			ncap *= 2;
		if (ncap != p->qcap) {
			q = realloc(p->q, ncap);
			if (!q)
				return -1;
			p->q = q;
			p->qcap = ncap;
		}
	}
	memcpy(p->q + p->qlen, buf, n);
	p->qlen += n;
	return 0;
}

static ssize_t q_write(void *cookie, const char *buf, size_t n)
{
	return q_append(cookie, buf, n) ? -1 : (ssize_t)n;
}

static void cand_close(struct cand *c)
{
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
	c->got = 0;
}

static void peer_close(struct nt_stream_server *s, struct peer *p, const char *why)
{
	if (p->fd < 0)
		return;
	if (why)
		fprintf(s->log, "ntbpf live: peer %s%s%s dropped (%s)\n", p->who, p->host ? " of " : "",
			p->host ? p->host : "", why);
	if (p->w)
		nt_writer_close(p->w, NULL);
	p->w = NULL;
	if (p->wf)
		fclose(p->wf);
	p->wf = NULL;
	close(p->fd);
	p->fd = -1;
	s->dropped_closed += p->dropped;
	free(p->q);
	p->q = NULL;
	p->qlen = p->qoff = p->qcap = 0;
	p->dropped = p->dropped_reported = p->sent = p->sent_at_tick = 0;
	p->stuck = 0;
}

static struct nt_stream_server *server_new(const char *addr, const struct nt_key *k, const struct nt_keyset *ks,
					   const struct nt_header *hdr, FILE *log, char *err, size_t errlen)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE }, *ai;
	struct nt_stream_server *s;
	char host[128], port[16];
	int one = 1, rc;
	bool loopback;

	if (nt_split_addr(addr, host, sizeof(host), port, sizeof(port))) {
		snprintf(err, errlen, "bad --serve '%s' (want ADDR:PORT, port 1-65535)", addr);
		return NULL;
	}
	rc = nt_resolve(strcmp(host, "*") ? host : NULL, port, &hints, &ai);
	if (rc) {
		snprintf(err, errlen, "--serve %s: %s%s", addr, gai_strerror(rc), nt_resolve_hint(nt_build_static(), rc));
		return NULL;
	}
	if (ai->ai_family == AF_INET)
		loopback = (ntohl(((struct sockaddr_in *)ai->ai_addr)->sin_addr.s_addr) >> 24) == 127;
	else
		loopback = ai->ai_family == AF_INET6 &&
			   IN6_IS_ADDR_LOOPBACK(&((struct sockaddr_in6 *)ai->ai_addr)->sin6_addr);
	if ((!k || !k->n) && !ks && !loopback) {
		snprintf(err, errlen, "--serve %s: needs --key FILE (without a key only a loopback address, "
			 "e.g. 127.0.0.1:%s, is served)", addr, port);
		freeaddrinfo(ai);
		return NULL;
	}
	nt_stream_crypto_warm();
	s = calloc(1, sizeof(*s));
	if (!s) {
		freeaddrinfo(ai);
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	s->qmax = NT_STREAM_QUEUE_MAX;
	s->peers_max = ks ? NT_STREAM_PEERS_MAX : 1;
	for (int i = 0; i < NCAND; i++)
		s->cand[i].fd = -1;
	for (int i = 0; i < NT_STREAM_PEERS_MAX; i++)
		s->peer[i].fd = -1;
	if (k)
		s->key = *k;
	s->ks = ks;
	s->hdr = hdr;
	s->log = log;
	if (ks) {
		s->ctl_of = malloc(65536 * sizeof(*s->ctl_of));
		s->ctl = calloc(NT_STREAM_CTLS, sizeof(*s->ctl));
		if (!s->ctl_of || !s->ctl) {
			snprintf(err, errlen, "out of memory");
			freeaddrinfo(ai);
			s->lfd = -1;
			nt_stream_server_free(s);
			return NULL;
		}
		memset(s->ctl_of, 0xff, 65536 * sizeof(*s->ctl_of));
	}
	s->lfd = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (s->lfd < 0 || setsockopt(s->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(s->lfd, ai->ai_addr, ai->ai_addrlen) || listen(s->lfd, 8)) {
		snprintf(err, errlen, "--serve %s: %s", addr, strerror(errno));
		freeaddrinfo(ai);
		nt_stream_server_free(s);
		return NULL;
	}
	freeaddrinfo(ai);
	if ((!k || !k->n) && !ks)
		fprintf(log, "ntbpf live: no --key: serving on the loopback address %s only, without authentication\n",
			addr);
	return s;
}

struct nt_stream_server *nt_stream_server_new(const char *addr, const struct nt_key *k, const struct nt_header *hdr,
					      FILE *log, char *err, size_t errlen)
{
	return server_new(addr, k, NULL, hdr, log, err, errlen);
}

struct nt_stream_server *nt_stream_server_new_hosts(const char *addr, const struct nt_keyset *ks,
						    int (*host_of)(void *ctx, uint16_t cntlid, char *nqn, size_t len),
						    void *ctx, const struct nt_header *hdr, FILE *log, char *err,
						    size_t errlen)
{
	struct nt_stream_server *s;

	if (!ks || !ks->n) {
		snprintf(err, errlen, "--serve %s: the key directory holds no key", addr);
		return NULL;
	}
	s = server_new(addr, NULL, ks, hdr, log, err, errlen);
	if (s) {
		s->host_of = host_of;
		s->host_ctx = ctx;
	}
	return s;
}

void nt_stream_server_set_host_of(struct nt_stream_server *s,
				  int (*host_of)(void *ctx, uint16_t cntlid, char *nqn, size_t len), void *ctx)
{
	if (s) {
		s->host_of = host_of;
		s->host_ctx = ctx;
	}
}

static void describe(int fd, char *who, size_t len)
{
	struct sockaddr_storage a;
	socklen_t al = sizeof(a);
	char h[INET6_ADDRSTRLEN] = "?";
	int port = 0;

	if (!getpeername(fd, (struct sockaddr *)&a, &al)) {
		if (a.ss_family == AF_INET) {
			inet_ntop(AF_INET, &((struct sockaddr_in *)&a)->sin_addr, h, sizeof(h));
			port = ntohs(((struct sockaddr_in *)&a)->sin_port);
		} else if (a.ss_family == AF_INET6) {
			inet_ntop(AF_INET6, &((struct sockaddr_in6 *)&a)->sin6_addr, h, sizeof(h));
			port = ntohs(((struct sockaddr_in6 *)&a)->sin6_port);
		}
	}
	snprintf(who, len, "%s:%d", h, port);
}

static void server_accept(struct nt_stream_server *s)
{
	for (;;) {
		uint8_t ch[CHALLENGE_LEN];
		struct cand *c = NULL;
		int fd = accept4(s->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

		if (fd < 0)
			return;
		for (int i = 0; i < NCAND && !c; i++)
			if (s->cand[i].fd < 0)
				c = &s->cand[i];
		if (!c) {	/* all busy: the oldest makes room */
			c = &s->cand[0];
			for (int i = 1; i < NCAND; i++)
				if (s->cand[i].deadline < c->deadline)
					c = &s->cand[i];
			cand_close(c);
		}
		c->fd = fd;
		c->got = 0;
		c->deadline = now_ms() + NT_STREAM_AUTH_MS;
		describe(fd, c->who, sizeof(c->who));
		memcpy(ch, AUTH_MAGIC, 8);
		if (getrandom(c->nonce, 32, 0) != 32) {
			cand_close(c);
			continue;
		}
		memcpy(ch + 8, c->nonce, 32);
		/* a fresh socket's buffer takes 40 bytes */
		if (send(fd, ch, sizeof(ch), MSG_NOSIGNAL | MSG_DONTWAIT) != (ssize_t)sizeof(ch))
			cand_close(c);
	}
}

static int npeers(const struct nt_stream_server *s)
{
	int n = 0;

	for (int i = 0; i < NT_STREAM_PEERS_MAX; i++)
		n += s->peer[i].fd >= 0;
	return n;
}

/*
 * The candidate authenticated with key k (of host, or NULL: the one key).  One key: it becomes
 * the peer, replacing the one before.  Per-host keys: a peer more, up to peers_max; beyond,
 * one line (REFUSE_MAGIC ...) in place of the server's MAC, and closed.
 */
static void promote(struct nt_stream_server *s, struct cand *c, const struct nt_key *k, const char *host)
{
	static const cookie_io_functions_t io = { .write = q_write };
	struct peer *p = NULL;
	uint8_t mac[32];
	int one = 1;

	if (!s->ks) {
		p = &s->peer[0];
		if (p->fd >= 0)
			peer_close(s, p, "replaced by a newly authenticated peer");
	} else if (npeers(s) >= s->peers_max) {
		char line[160];
		int n = snprintf(line, sizeof(line), REFUSE_MAGIC " ntbpf live --serve: %d peers already, "
				 "the most it serves; try later\n", s->peers_max);

		fprintf(s->log, "ntbpf live: peer %s of %s refused: %d peers already (at most %d)\n", c->who, host,
			s->peers_max, s->peers_max);
		if (send(c->fd, line, n, MSG_NOSIGNAL | MSG_DONTWAIT) < 0)
			(void)0;	/* closed at once either way */
		cand_close(c);
		return;
	} else {
		for (int i = 0; i < NT_STREAM_PEERS_MAX && !p; i++)
			if (s->peer[i].fd < 0)
				p = &s->peer[i];
	}
	p->fd = c->fd;
	p->host = host;
	snprintf(p->who, sizeof(p->who), "%s", c->who);
	c->fd = -1;
	c->got = 0;
	setsockopt(p->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	nt_stream_mac(k, "ntbpf server", c->nonce, c->in + 8, mac);
	p->qlen = p->qoff = 0;
	p->wf = fopencookie(p, "w", io);
	if (!p->wf || q_append(p, mac, sizeof(mac)) || !(p->w = nt_writer_open(p->wf, s->hdr)) || fflush(p->wf)) {
		peer_close(s, p, "out of memory");
		return;
	}
	fprintf(s->log, "ntbpf live: peer %s connected%s%s%s\n", p->who, k->n ? " (authenticated)" : "",
		host ? ", host " : "", host ? host : "");
}

static void server_auth(struct nt_stream_server *s)
{
	uint64_t t = now_ms();

	for (int i = 0; i < NCAND; i++) {
		struct cand *c = &s->cand[i];
		const struct nt_key *k = NULL;
		const char *host = NULL;
		uint8_t want[32];
		ssize_t r;

		if (c->fd < 0)
			continue;
		r = recv(c->fd, c->in + c->got, sizeof(c->in) - c->got, MSG_DONTWAIT);
		if (r > 0)
			c->got += r;
		if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR)) {
			cand_close(c);
			continue;
		}
		if (c->got < sizeof(c->in)) {
			if (t >= c->deadline) {
				fprintf(s->log, "ntbpf live: connection from %s did not authenticate in time\n", c->who);
				cand_close(c);
			}
			continue;
		}
		if (!memcmp(c->in, AUTH_MAGIC, 8)) {
			/* per-host keys: the key whose MAC matches names the host (keys are distinct: nt_keyset_load) */
			for (size_t j = 0; s->ks && j < s->ks->n && !k; j++) {
				nt_stream_mac(&s->ks->v[j].key, "ntbpf client", c->nonce, c->in + 8, want);
				if (!CRYPTO_memcmp(c->in + 40, want, 32)) {
					k = &s->ks->v[j].key;
					host = s->ks->v[j].host;
				}
			}
			if (!s->ks) {
				nt_stream_mac(&s->key, "ntbpf client", c->nonce, c->in + 8, want);
				if (!CRYPTO_memcmp(c->in + 40, want, 32))
					k = &s->key;
			}
		}
		if (!k) {
			fprintf(s->log, "ntbpf live: connection from %s failed to authenticate (wrong --key?)\n", c->who);
			cand_close(c);
			continue;
		}
		promote(s, c, k, host);
	}
}

static void peer_send(struct nt_stream_server *s, struct peer *p)
{
	char b;

	if (p->fd < 0)
		return;
	/* the client never sends after the handshake: readable means closed (or misbehaving) */
	if (recv(p->fd, &b, 1, MSG_DONTWAIT | MSG_PEEK) >= 0 || (errno != EAGAIN && errno != EINTR)) {
		peer_close(s, p, "connection closed");
		return;
	}
	while (p->qoff < p->qlen) {
		ssize_t r = send(p->fd, p->q + p->qoff, p->qlen - p->qoff, MSG_NOSIGNAL | MSG_DONTWAIT);

		if (r < 0) {
			if (errno != EAGAIN && errno != EINTR)
				peer_close(s, p, strerror(errno));
			return;
		}
		p->qoff += r;
		p->sent += r;
	}
}

void nt_stream_server_poll(struct nt_stream_server *s)
{
	server_accept(s);
	server_auth(s);
	for (int i = 0; i < NT_STREAM_PEERS_MAX; i++)
		peer_send(s, &s->peer[i]);
}

static struct ctl *ctl_get(struct nt_stream_server *s, uint16_t cntlid)
{
	struct ctl *e;

	if (s->ctl_of[cntlid] >= 0)
		return &s->ctl[s->ctl_of[cntlid]];
	if (s->nctl >= NT_STREAM_CTLS)
		return NULL;
	e = &s->ctl[s->nctl];
	memset(e, 0, sizeof(*e));
	e->cntlid = cntlid;
	s->ctl_of[cntlid] = (int16_t)s->nctl++;
	return e;
}

static void peer_add(struct nt_stream_server *s, struct peer *p, const struct ntbpf_rec *r);

void nt_stream_server_add(struct nt_stream_server *s, const struct ntbpf_rec *r)
{
	if (!s || !npeers(s))
		return;
	/* one key: the one peer gets every record, at once */
	if (!s->ks) {
		peer_add(s, &s->peer[0], r);
		return;
	}
	/* per-host keys: held till the tick; a controller beyond the table's room is nobody's (withheld) */
	if (!ctl_get(s, r->ctrl)) {
		s->withheld++;
		return;
	}
	if (s->ivn == s->ivcap) {
		size_t ncap = s->ivcap ? s->ivcap * 2 : 4096;
		struct ntbpf_rec *v;

		if (ncap > NT_STREAM_MAX_RECS || !(v = realloc(s->iv, ncap * sizeof(*v)))) {
			s->iv_over++;
			return;
		}
		s->iv = v;
		s->ivcap = ncap;
	}
	s->iv[s->ivn++] = *r;
}

static void peer_add(struct nt_stream_server *s, struct peer *p, const struct ntbpf_rec *r)
{
	if (!p->w)
		return;
	/* bounded: beyond the cap, records are dropped (at most one chunk more is queued) */
	if (p->qlen - p->qoff >= s->qmax) {
		p->dropped++;
		return;
	}
	if (nt_writer_add(p->w, r))
		peer_close(s, p, "out of memory");
}

/*
 * Per-host keys: each controller's host now; a record goes to a host's peers only where its
 * controller had that same host at the last tick and at this one.  The caller drained the
 * ring buffer just before: a controller ID the target gave another host in between (a
 * disconnect, a connect and a first I/O) is sent to nobody for that interval, as is a
 * controller's first interval, whose host at the last tick is not known.
 */
static void route_hosts(struct nt_stream_server *s)
{
	for (size_t i = 0; i < s->nctl; i++) {
		struct ctl *e = &s->ctl[i];

		e->now_ok = s->host_of && !s->host_of(s->host_ctx, e->cntlid, e->now, sizeof(e->now)) && e->now[0];
		e->send = e->now_ok && e->prev_ok && !strcmp(e->prev, e->now);
	}
	for (size_t k = 0; k < s->ivn; k++) {
		const struct ntbpf_rec *r = &s->iv[k];
		const struct ctl *e = &s->ctl[s->ctl_of[r->ctrl]];

		if (!e->send) {
			s->withheld++;
			continue;
		}
		for (int i = 0; i < NT_STREAM_PEERS_MAX; i++)
			if (s->peer[i].w && !strcmp(s->peer[i].host, e->now))
				peer_add(s, &s->peer[i], r);
	}
	for (size_t i = 0; i < s->nctl; i++) {
		struct ctl *e = &s->ctl[i];

		e->prev_ok = e->now_ok;
		memcpy(e->prev, e->now, sizeof(e->prev));
	}
}

void nt_stream_server_tick(struct nt_stream_server *s)
{
	uint8_t st[12] = { 'N', 'T', 'S', 'T' };

	if (!s)
		return;
	if (s->ks)
		route_hosts(s);
	s->ivn = 0;
	if (s->withheld != s->withheld_reported) {
		fprintf(s->log, "ntbpf live: %" PRIu64 " records sent to no peer: their controller's host was not "
			"known at two ticks in a row (a new controller, or an ID given to another host)\n",
			s->withheld - s->withheld_reported);
		s->withheld_reported = s->withheld;
	}
	for (int i = 0; i < NT_STREAM_PEERS_MAX; i++) {
		struct peer *p = &s->peer[i];

		if (p->fd < 0)
			continue;
		p->dropped += s->iv_over;
		if (p->dropped != p->dropped_reported) {
			fprintf(s->log, "ntbpf live: peer %s reads too slowly: %" PRIu64 " records dropped (%" PRIu64
				" in all)\n", p->who, p->dropped - p->dropped_reported, p->dropped);
			p->dropped_reported = p->dropped;
		}
		if (!p->w)
			continue;
		for (int b = 0; b < 8; b++)
			st[4 + b] = p->dropped >> (8 * b);
		/* the flush ends on a block boundary: the heartbeat goes after it */
		if (nt_writer_flush(p->w) || q_append(p, st, sizeof(st))) {
			peer_close(s, p, "out of memory");
			continue;
		}
		peer_send(s, p);
		if (p->fd < 0)
			continue;
		/* a peer that took nothing for NT_STREAM_STALL ticks while bytes waited: dropped, the others go on */
		p->stuck = p->qoff < p->qlen && p->sent == p->sent_at_tick ? p->stuck + 1 : 0;
		p->sent_at_tick = p->sent;
		if (p->stuck >= NT_STREAM_STALL) {
			char why[96];

			snprintf(why, sizeof(why), "stopped reading for %d intervals", p->stuck);
			peer_close(s, p, why);
		}
	}
	s->iv_over = 0;
}

bool nt_stream_server_connected(const struct nt_stream_server *s)
{
	for (int i = 0; s && i < NT_STREAM_PEERS_MAX; i++)
		if (s->peer[i].w)
			return true;
	return false;
}

int nt_stream_server_peers(const struct nt_stream_server *s)
{
	int n = 0;

	for (int i = 0; s && i < NT_STREAM_PEERS_MAX; i++)
		n += !!s->peer[i].w;
	return n;
}

uint64_t nt_stream_server_dropped(const struct nt_stream_server *s)
{
	uint64_t n = s ? s->dropped_closed : 0;

	for (int i = 0; s && i < NT_STREAM_PEERS_MAX; i++)
		n += s->peer[i].fd >= 0 ? s->peer[i].dropped : 0;
	return n;
}

uint64_t nt_stream_server_withheld(const struct nt_stream_server *s)
{
	return s ? s->withheld : 0;
}

size_t nt_stream_server_queued(const struct nt_stream_server *s)
{
	size_t n = 0;

	for (int i = 0; s && i < NT_STREAM_PEERS_MAX; i++)
		n += s->peer[i].qlen - s->peer[i].qoff;
	return n;
}

int nt_sock_port(int fd)
{
	struct sockaddr_storage a;
	socklen_t al = sizeof(a);

	if (getsockname(fd, (struct sockaddr *)&a, &al))
		return -1;
	return ntohs(a.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&a)->sin6_port
					     : ((struct sockaddr_in *)&a)->sin_port);
}

int nt_stream_server_port(const struct nt_stream_server *s)
{
	return nt_sock_port(s->lfd);
}

void nt_stream_server_set_queue_max(struct nt_stream_server *s, size_t bytes)
{
	s->qmax = bytes;
}

void nt_stream_server_set_peers_max(struct nt_stream_server *s, int n)
{
	if (s->ks && n >= 1 && n <= NT_STREAM_PEERS_MAX)
		s->peers_max = n;
}

void nt_stream_server_free(struct nt_stream_server *s)
{
	uint64_t deadline = now_ms() + 1000;
	bool left;

	if (!s)
		return;
	if (s->ivn)
		nt_stream_server_tick(s);	/* the last interval's records */
	for (int i = 0; i < NT_STREAM_PEERS_MAX; i++) {
		struct peer *p = &s->peer[i];

		if (p->w) {
			nt_writer_close(p->w, NULL);	/* the trailer */
			p->w = NULL;
			fflush(p->wf);
		}
	}
	do {	/* what is queued, for every peer, for up to a second in all */
		left = false;
		for (int i = 0; i < NT_STREAM_PEERS_MAX; i++) {
			struct peer *p = &s->peer[i];

			if (p->fd >= 0 && p->qoff < p->qlen) {
				struct pollfd pfd = { .fd = p->fd, .events = POLLOUT };

				poll(&pfd, 1, 10);
				peer_send(s, p);
				left |= p->fd >= 0 && p->qoff < p->qlen;
			}
		}
	} while (left && now_ms() < deadline);
	for (int i = 0; i < NT_STREAM_PEERS_MAX; i++)
		peer_close(s, &s->peer[i], NULL);
	for (int i = 0; i < NCAND; i++)
		cand_close(&s->cand[i]);
	if (s->lfd >= 0)
		close(s->lfd);
	OPENSSL_cleanse(s->key.k, sizeof(s->key.k));
	free(s->iv);
	free(s->ctl);
	free(s->ctl_of);
	free(s);
}
