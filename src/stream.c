// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * stream.c - the live record stream: the server ("live --serve") and the
 * client ("live --peer") side by side, and the handshake they share
 * (stream.h has the protocol).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dirent.h>
#include <limits.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <nss.h>
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
#include "stream.h"
#include "sysinfo.h"

#define AUTH_MAGIC "NTBPFAU1"
#define CHALLENGE_LEN (8 + 32)
#define RESPONSE_LEN (8 + 32 + 32)
#define NCAND 4			/* connections authenticating at once */
#define REFUSE_MAGIC "NTBPFNO:"	/* in place of the server's MAC: a refusal, one line */
#define NT_STREAM_CTLS 1024	/* per-host keys: controllers routed (NT_TNQN_CTRLS); more are nobody's */

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static uint32_t le32(const uint8_t *p)
{
	return p[0] | p[1] << 8 | p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t le64(const uint8_t *p)
{
	return le32(p) | (uint64_t)le32(p + 4) << 32;
}

/* ---- the key and the handshake ---- */

int nt_key_load(const char *path, struct nt_key *k, char *err, size_t errlen)
{
	struct stat sb;
	ssize_t n;
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);

	k->n = 0;
	if (fd < 0) {
		snprintf(err, errlen, "--key %s: %s", path, errno == ELOOP ? "is a symbolic link" : strerror(errno));
		return -1;
	}
	if (fstat(fd, &sb) || !S_ISREG(sb.st_mode)) {
		snprintf(err, errlen, "--key %s: not a regular file", path);
		goto fail;
	}
	if (sb.st_uid != geteuid()) {
		snprintf(err, errlen, "--key %s: owned by uid %u, not by this user (uid %u)", path, (unsigned)sb.st_uid,
			 (unsigned)geteuid());
		goto fail;
	}
	if (sb.st_mode & 077) {
		snprintf(err, errlen, "--key %s: mode %04o lets others read it: chmod 600 %s", path,
			 (unsigned)(sb.st_mode & 07777), path);
		goto fail;
	}
	n = read(fd, k->k, sizeof(k->k));
	if (n < 0) {
		snprintf(err, errlen, "--key %s: %s", path, strerror(errno));
		goto fail;
	}
	if (n == (ssize_t)sizeof(k->k) || sb.st_size > (off_t)sizeof(k->k)) {
		snprintf(err, errlen, "--key %s: longer than %d bytes", path, NT_KEY_MAX);
		goto fail;
	}
	if (n > 0 && k->k[n - 1] == '\n')
		n--;
	if (n < NT_KEY_MIN) {
		snprintf(err, errlen, "--key %s: %zd bytes, want at least %d (e.g. head -c 32 /dev/urandom | base64)",
			 path, n, NT_KEY_MIN);
		goto fail;
	}
	k->n = n;
	close(fd);
	return 0;
fail:
	OPENSSL_cleanse(k->k, sizeof(k->k));
	close(fd);
	return -1;
}

int nt_keyset_load(const char *dir, struct nt_keyset *ks, char *err, size_t errlen)
{
	struct stat sb;
	struct dirent *d;
	DIR *dp;
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

	memset(ks, 0, sizeof(*ks));
	if (fd < 0) {
		snprintf(err, errlen, "--key %s: %s", dir, errno == ELOOP ? "is a symbolic link" : strerror(errno));
		return -1;
	}
	if (fstat(fd, &sb) || sb.st_uid != geteuid() || (sb.st_mode & 077)) {
		snprintf(err, errlen, "--key %s: a key directory must be yours and closed to others (chmod 700 %s)",
			 dir, dir);
		close(fd);
		return -1;
	}
	dp = fdopendir(fd);
	if (!dp) {
		snprintf(err, errlen, "--key %s: %s", dir, strerror(errno));
		close(fd);
		return -1;
	}
	ks->v = calloc(NT_STREAM_HOSTS_MAX, sizeof(*ks->v));
	if (!ks->v) {
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	while ((d = readdir(dp))) {
		char path[PATH_MAX];

		if (d->d_name[0] == '.')
			continue;
		if (ks->n == NT_STREAM_HOSTS_MAX) {
			snprintf(err, errlen, "--key %s: more than %d host keys", dir, NT_STREAM_HOSTS_MAX);
			goto fail;
		}
		if (strlen(d->d_name) >= sizeof(ks->v[0].host)) {
			snprintf(err, errlen, "--key %s: a file name longer than an NQN", dir);
			goto fail;
		}
		snprintf(path, sizeof(path), "%s/%s", dir, d->d_name);
		if (nt_key_load(path, &ks->v[ks->n].key, err, errlen))
			goto fail;
		snprintf(ks->v[ks->n].host, sizeof(ks->v[0].host), "%s", d->d_name);
		for (size_t i = 0; i < ks->n; i++)
			if (ks->v[i].key.n == ks->v[ks->n].key.n &&
			    !CRYPTO_memcmp(ks->v[i].key.k, ks->v[ks->n].key.k, ks->v[i].key.n)) {
				snprintf(err, errlen, "--key %s: hosts %s and %s have the same key: each host needs its own",
					 dir, ks->v[i].host, d->d_name);
				ks->n++;
				goto fail;
			}
		ks->n++;
	}
	closedir(dp);
	if (!ks->n) {
		snprintf(err, errlen, "--key %s: no key files (one per host, named by its hostnqn)", dir);
		nt_keyset_free(ks);
		return -1;
	}
	return 0;
fail:
	closedir(dp);
	nt_keyset_free(ks);
	return -1;
}

void nt_keyset_free(struct nt_keyset *ks)
{
	if (ks->v)
		OPENSSL_cleanse(ks->v, NT_STREAM_HOSTS_MAX * sizeof(*ks->v));
	free(ks->v);
	ks->v = NULL;
	ks->n = 0;
}

int nt_split_addr(const char *s, char *host, size_t hl, char *port, size_t pl)
{
	const char *c = strrchr(s, ':');
	char *end;
	long p;

	if (!c || c == s || !c[1] || (size_t)(c - s) >= hl || strlen(c + 1) >= pl)
		return -1;
	errno = 0;
	p = strtol(c + 1, &end, 10);
	if (*end || errno || p < 1 || p > 65535 || c[1] < '0' || c[1] > '9')
		return -1;
	snprintf(host, hl, "%.*s", (int)(c - s), s);
	if (host[0] == '[' && host[strlen(host) - 1] == ']') {
		memmove(host, host + 1, strlen(host));
		host[strlen(host) - 1] = 0;
	}
	snprintf(port, pl, "%ld", p);
	return 0;
}

static void static_setup(void)
{
	if (!nt_build_static())
		return;
	/* hosts: files dns, whatever /etc/nsswitch.conf says (nt_resolve in stream.h) */
	__nss_configure_lookup("hosts", "files dns");
	/* OpenSSL's default provider is linked in: no openssl.cnf of the host's (Debian's OPENSSLDIR,
	 * /usr/lib/ssl, where another distro may keep another OpenSSL's file) may make it dlopen a
	 * provider or engine into a static binary */
	OPENSSL_init_crypto(OPENSSL_INIT_NO_LOAD_CONFIG, NULL);
}

static pthread_once_t static_once = PTHREAD_ONCE_INIT;

int nt_resolve(const char *host, const char *port, const struct addrinfo *hints, struct addrinfo **ai)
{
	pthread_once(&static_once, static_setup);
	return getaddrinfo(host, port, hints, ai);
}

const char *nt_resolve_hint(bool is_static, int rc)
{
	if (!is_static)
		return "";
	switch (rc) {
	case EAI_NONAME:
	case EAI_AGAIN:
	case EAI_FAIL:
	case EAI_NODATA:
	case EAI_ADDRFAMILY:
		return "; this static ntbpf looks names up in /etc/hosts and DNS only: give an address";
	default:
		return "";
	}
}

void nt_stream_mac(const struct nt_key *k, const char *label, const uint8_t a[32], const uint8_t b[32],
		   uint8_t out[32])
{
	uint8_t msg[32 + 64];
	size_t ll = strlen(label);
	unsigned int len = 32;
	static const unsigned char none[1];

	memcpy(msg, label, ll);
	memcpy(msg + ll, a, 32);
	memcpy(msg + ll + 32, b, 32);
	pthread_once(&static_once, static_setup);	/* before OpenSSL's first use */
	if (!HMAC(EVP_sha256(), k && k->n ? k->k : none, k ? (int)k->n : 0, msg, ll + 64, out, &len))
		memset(out, 0, 32);	/* never matches a real MAC's use: the peer's check fails */
}

/* OpenSSL's first use loads its providers (13 ms here, far longer in an emulated guest): before any peer waits */
static void crypto_warm(void)
{
	uint8_t z[32] = { 0 }, o[32];

	nt_stream_mac(NULL, "warm", z, z, o);
}

/* blocking I/O of exactly n bytes until deadline (ms, CLOCK_MONOTONIC) */
static int io_full(int fd, void *buf, size_t n, bool out, uint64_t deadline, const volatile int *stop)
{
	size_t done = 0;

	while (done < n) {
		struct pollfd pfd = { .fd = fd, .events = out ? POLLOUT : POLLIN };
		uint64_t t = now_ms();
		ssize_t r;

		if (t >= deadline || (stop && __atomic_load_n(stop, __ATOMIC_SEQ_CST))) {
			errno = ETIMEDOUT;
			return -1;
		}
		if (poll(&pfd, 1, deadline - t > 200 ? 200 : (int)(deadline - t)) <= 0)
			continue;
		r = out ? send(fd, (char *)buf + done, n - done, MSG_NOSIGNAL | MSG_DONTWAIT)
			: recv(fd, (char *)buf + done, n - done, MSG_DONTWAIT);
		if (r == 0) {
			errno = ECONNRESET;
			return -1;
		}
		if (r < 0) {
			if (errno == EAGAIN || errno == EINTR)
				continue;
			return -1;
		}
		done += r;
	}
	return 0;
}

static int auth_client(int fd, const struct nt_key *k, const volatile int *stop, char *err, size_t errlen)
{
	uint8_t ch[CHALLENGE_LEN], resp[RESPONSE_LEN], mac[32], want[32];
	uint64_t deadline = now_ms() + NT_STREAM_AUTH_MS;

	if (io_full(fd, ch, sizeof(ch), false, deadline, stop)) {
		snprintf(err, errlen, "no challenge from the server (%s; not ntbpf live --serve, or another peer "
			 "is authenticating?)", strerror(errno));
		return -1;
	}
	if (memcmp(ch, AUTH_MAGIC, 8)) {
		snprintf(err, errlen, "the server is not ntbpf live --serve (or an older ntbpf without --key)");
		return -1;
	}
	memcpy(resp, AUTH_MAGIC, 8);
	if (getrandom(resp + 8, 32, 0) != 32) {
		snprintf(err, errlen, "getrandom: %s", strerror(errno));
		return -1;
	}
	nt_stream_mac(k, "ntbpf client", ch + 8, resp + 8, resp + 40);
	if (io_full(fd, resp, sizeof(resp), true, deadline, stop) ||
	    io_full(fd, mac, sizeof(mac), false, deadline, stop)) {
		snprintf(err, errlen, "the server refused us (%s): wrong --key?", strerror(errno));
		return -1;
	}
	if (!memcmp(mac, REFUSE_MAGIC, 8)) {
		/* authenticated, but the server serves enough peers: its one line, printable bytes only */
		char line[161];
		size_t n = 0;

		memcpy(line, mac, 32);
		for (n = 32; n < sizeof(line) - 1 && memchr(line, '\n', n) == NULL; n++)
			if (io_full(fd, line + n, 1, false, deadline, stop))
				break;
		line[n] = 0;
		for (size_t i = 0; i < n; i++)
			if (line[i] < 0x20 || line[i] > 0x7e)
				line[i] = line[i] == '\n' ? 0 : '?';
		snprintf(err, errlen, "the server refused us: %s", line + 9);
		return -1;
	}
	nt_stream_mac(k, "ntbpf server", ch + 8, resp + 8, want);
	if (CRYPTO_memcmp(mac, want, 32)) {
		snprintf(err, errlen, "the server failed to authenticate: wrong --key on one end?");
		return -1;
	}
	return 0;
}

int nt_stream_auth_client(int fd, const struct nt_key *k, char *err, size_t errlen)
{
	return auth_client(fd, k, NULL, err, errlen);
}

/* ---- the server ---- */

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
	crypto_warm();
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

/* ---- the client ---- */

struct nt_stream_client {
	char host[128], port[16];
	struct nt_key key;
	int interval_ms;
	size_t max_recs;
	pthread_t th;
	pthread_mutex_t mu;
	int stop;			/* atomic */
	/* under mu */
	struct ntbpf_rec *v;
	size_t n, cap;
	struct nt_stream_status st;
	/* the thread's connection */
	int fd;
	bool got_header;
	uint8_t *frame;			/* the block being passed to the reader */
	size_t flen, fpos, fcap;
	uint64_t last_block_ms;
	char err[160];
};

static void set_state(struct nt_stream_client *c, const char *fmt, const char *arg)
{
	pthread_mutex_lock(&c->mu);
	snprintf(c->st.state, sizeof(c->st.state), fmt, arg);
	pthread_mutex_unlock(&c->mu);
}

/* n more bytes into the frame; waits an interval at a time, saying "stalled" when it lasts */
static int frame_read(struct nt_stream_client *c, size_t n)
{
	if (n > NT_STREAM_MAX_CHUNK + 64 || c->flen + n > NT_STREAM_MAX_CHUNK + 64) {
		snprintf(c->err, sizeof(c->err), "a block of more than %u bytes", NT_STREAM_MAX_CHUNK + 64);
		return -1;
	}
	if (c->flen + n > c->fcap) {
		size_t ncap = c->fcap ? c->fcap : 4096;
		uint8_t *p;

		while (ncap < c->flen + n)
			ncap *= 2;
		p = realloc(c->frame, ncap);
		if (!p) {
			snprintf(c->err, sizeof(c->err), "out of memory");
			return -1;
		}
		c->frame = p;
		c->fcap = ncap;
	}
	while (n) {
		struct pollfd pfd = { .fd = c->fd, .events = POLLIN };
		ssize_t r;

		if (__atomic_load_n(&c->stop, __ATOMIC_SEQ_CST))
			return -1;
		if (poll(&pfd, 1, 200) == 0) {
			uint64_t silent = now_ms() - c->last_block_ms;

			if (silent >= (uint64_t)NT_STREAM_STALL * c->interval_ms) {
				char why[64];

				snprintf(why, sizeof(why), "%.0f s", silent / 1000.0);
				set_state(c, "stalled (nothing whole for %s)", why);
			}
			continue;
		}
		r = recv(c->fd, c->frame + c->flen, n, MSG_DONTWAIT);
		if (r == 0) {
			snprintf(c->err, sizeof(c->err), "connection closed");
			return -1;
		}
		if (r < 0) {
			if (errno == EAGAIN || errno == EINTR)
				continue;
			snprintf(c->err, sizeof(c->err), "%s", strerror(errno));
			return -1;
		}
		c->flen += r;
		n -= r;
	}
	return 0;
}

/* the next block the reader should see (header, chunk, trailer); heartbeats are taken here */
static int next_block(struct nt_stream_client *c)
{
	for (;;) {
		c->flen = c->fpos = 0;
		if (!c->got_header) {
			uint32_t p;

			if (frame_read(c, 16))
				return -1;
			if (memcmp(c->frame, "NTBPFREC", 8)) {
				snprintf(c->err, sizeof(c->err), "not a record stream");
				return -1;
			}
			p = le32(c->frame + 12);
			if (p > NT_STREAM_MAX_HEADER) {
				snprintf(c->err, sizeof(c->err), "a header of %u bytes (at most %u)", p,
					 NT_STREAM_MAX_HEADER);
				return -1;
			}
			if (frame_read(c, (size_t)p + 4))
				return -1;
			c->got_header = true;
		} else {
			if (frame_read(c, 4))
				return -1;
			if (!memcmp(c->frame, "CHNK", 4)) {
				uint32_t nrec, clen;

				if (frame_read(c, 16))
					return -1;
				nrec = le32(c->frame + 4);
				clen = le32(c->frame + 12);
				if (nrec < 1 || nrec > NT_CHUNK_RECS || clen > NT_STREAM_MAX_CHUNK) {
					snprintf(c->err, sizeof(c->err), "a chunk of %u records in %u bytes (at most %u, %u)",
						 nrec, clen, NT_CHUNK_RECS, NT_STREAM_MAX_CHUNK);
					return -1;
				}
				if (frame_read(c, clen))
					return -1;
			} else if (!memcmp(c->frame, "TRLR", 4)) {
				uint32_t l;

				if (frame_read(c, 4))
					return -1;
				l = le32(c->frame + 4);
				if (l > 4096) {
					snprintf(c->err, sizeof(c->err), "a trailer of %u bytes", l);
					return -1;
				}
				if (frame_read(c, (size_t)l + 4))
					return -1;
			} else if (!memcmp(c->frame, "NTST", 4)) {
				if (frame_read(c, 8))
					return -1;
				c->last_block_ms = now_ms();
				pthread_mutex_lock(&c->mu);
				c->st.dropped_there = le64(c->frame + 4);
				if (!strncmp(c->st.state, "stalled", 7))
					snprintf(c->st.state, sizeof(c->st.state), "connected");
				pthread_mutex_unlock(&c->mu);
				continue;
			} else {
				/* hex: bytes from the socket never reach a terminal or the JSON */
				snprintf(c->err, sizeof(c->err), "not a record stream (a block %02x%02x%02x%02x)",
					 c->frame[0], c->frame[1], c->frame[2], c->frame[3]);
				return -1;
			}
		}
		c->last_block_ms = now_ms();
		return 0;
	}
}

static ssize_t cookie_read(void *cookie, char *buf, size_t size)
{
	struct nt_stream_client *c = cookie;
	size_t n;

	if (c->fpos == c->flen && next_block(c))
		return 0;	/* the reader sees the end; c->err says why */
	n = c->flen - c->fpos < size ? c->flen - c->fpos : size;
	memcpy(buf, c->frame + c->fpos, n);
	c->fpos += n;
	return n;
}

static int dial(struct nt_stream_client *c, char *err, size_t errlen)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM }, *ai = NULL, *a;
	int fd = -1, rc = nt_resolve(c->host, c->port, &hints, &ai);

	if (rc) {
		snprintf(err, errlen, "%s%s", gai_strerror(rc), nt_resolve_hint(nt_build_static(), rc));
		return -1;
	}
	for (a = ai; a && fd < 0; a = a->ai_next) {
		struct pollfd pfd = { .events = POLLOUT };
		int e = 0;
		socklen_t el = sizeof(e);

		fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, a->ai_protocol);
		if (fd < 0)
			continue;
		pfd.fd = fd;
		if (connect(fd, a->ai_addr, a->ai_addrlen) && errno == EINPROGRESS) {
			for (int i = 0; i < 30 && !__atomic_load_n(&c->stop, __ATOMIC_SEQ_CST); i++)
				if (poll(&pfd, 1, 100) > 0)
					break;
			if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &el) || e || !(pfd.revents & POLLOUT))
				errno = e ? e : ETIMEDOUT;
			else
				errno = 0;
		} else {
			errno = 0;
		}
		if (errno) {
			snprintf(err, errlen, "%s", strerror(errno));
			close(fd);
			fd = -1;
		}
	}
	freeaddrinfo(ai);
	return fd;
}

static void pause_1s(struct nt_stream_client *c)
{
	for (int i = 0; i < 10 && !__atomic_load_n(&c->stop, __ATOMIC_SEQ_CST); i++)
		usleep(100000);
}

static void push_chunk(struct nt_stream_client *c, const struct ntbpf_rec *r, size_t n)
{
	pthread_mutex_lock(&c->mu);
	if (c->n + n > c->cap && c->cap < c->max_recs) {
		size_t ncap = c->cap ? c->cap : 4096;
		struct ntbpf_rec *p;

		while (ncap < c->n + n && ncap < c->max_recs)
			ncap *= 2;
		if (ncap > c->max_recs)
			ncap = c->max_recs;
		p = realloc(c->v, ncap * sizeof(*p));
		if (p) {
			c->v = p;
			c->cap = ncap;
		}
	}
	c->st.received += n;
	for (size_t k = 0; k < n; k++) {
		if (c->n >= c->cap) {	/* over the cap (or out of memory): counted, shown */
			c->st.dropped_here += n - k;
			break;
		}
		c->v[c->n++] = r[k];
	}
	pthread_mutex_unlock(&c->mu);
}

static void *client_main(void *arg)
{
	static const cookie_io_functions_t io = { .read = cookie_read };
	struct nt_stream_client *c = arg;

	while (!__atomic_load_n(&c->stop, __ATOMIC_SEQ_CST)) {
		char err[256] = "";
		struct nt_header h;
		struct nt_reader *rd;
		const struct ntbpf_rec *recs;
		size_t n;
		FILE *f;

		c->fd = dial(c, err, sizeof(err));
		if (c->fd < 0) {
			set_state(c, "down (%s), retrying", err);
			pause_1s(c);
			continue;
		}
		if (auth_client(c->fd, &c->key, &c->stop, err, sizeof(err))) {
			set_state(c, "down (%s), retrying", err);
			goto next;
		}
		c->got_header = false;
		c->err[0] = 0;
		c->last_block_ms = now_ms();
		set_state(c, "connected", NULL);
		f = fopencookie(c, "r", io);
		rd = f ? nt_reader_open(f, &h, err, sizeof(err)) : NULL;
		if (!rd) {
			set_state(c, "down (%s), retrying", c->err[0] ? c->err : f ? err : strerror(errno));
			if (f)
				fclose(f);
			goto next;
		}
		pthread_mutex_lock(&c->mu);
		memcpy(c->st.boot_id, h.boot_id, sizeof(h.boot_id));
		memcpy(c->st.hostname, h.hostname, sizeof(h.hostname));
		c->st.mono_ns = h.mono_ns;
		c->st.real_ns = h.real_ns;
		c->st.role = h.role;
		pthread_mutex_unlock(&c->mu);
		nt_header_free(&h);
		while ((n = nt_reader_chunk(rd, &recs)) > 0) {
			push_chunk(c, recs, n);
			pthread_mutex_lock(&c->mu);
			if (!strncmp(c->st.state, "stalled", 7))
				snprintf(c->st.state, sizeof(c->st.state), "connected");
			pthread_mutex_unlock(&c->mu);
		}
		if (nt_reader_status(rd, err, sizeof(err)) == NT_READ_OK)
			snprintf(err, sizeof(err), "the server stopped");
		else if (c->err[0])
			snprintf(err, sizeof(err), "%s", c->err);
		nt_reader_close(rd);
		fclose(f);
		if (!__atomic_load_n(&c->stop, __ATOMIC_SEQ_CST))
			set_state(c, "down (%s), reconnecting", err);
next:
		close(c->fd);
		c->fd = -1;
		pause_1s(c);
	}
	return NULL;
}

struct nt_stream_client *nt_stream_client_start(const char *addr, const struct nt_key *k, double interval,
						size_t max_recs, char *err, size_t errlen)
{
	struct nt_stream_client *c = calloc(1, sizeof(*c));

	if (!c) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	if (nt_split_addr(addr, c->host, sizeof(c->host), c->port, sizeof(c->port))) {
		snprintf(err, errlen, "bad --peer '%s' (want HOST:PORT, port 1-65535)", addr);
		free(c);
		return NULL;
	}
	if (nt_build_static()) {
		/* a name only another NSS module knows would be retried for ever: refuse it now */
		struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM }, *ai = NULL;
		int rc = nt_resolve(c->host, c->port, &hints, &ai);

		if (rc == EAI_NONAME || rc == EAI_NODATA || rc == EAI_FAIL || rc == EAI_ADDRFAMILY) {
			snprintf(err, errlen, "--peer %s: %s%s", addr, gai_strerror(rc), nt_resolve_hint(true, rc));
			free(c);
			return NULL;
		}
		if (!rc)
			freeaddrinfo(ai);
	}
	if (k)
		c->key = *k;
	c->interval_ms = interval > 0 ? (int)(interval * 1000) : 1000;
	if (c->interval_ms < 10)
		c->interval_ms = 10;
	c->max_recs = max_recs ? max_recs : NT_STREAM_MAX_RECS;
	c->fd = -1;
	snprintf(c->st.state, sizeof(c->st.state), "connecting");
	crypto_warm();
	pthread_mutex_init(&c->mu, NULL);
	if (pthread_create(&c->th, NULL, client_main, c)) {
		snprintf(err, errlen, "cannot start the peer thread");
		pthread_mutex_destroy(&c->mu);
		free(c);
		return NULL;
	}
	return c;
}

void nt_stream_client_take(struct nt_stream_client *c, struct ntbpf_rec **v, size_t *n, size_t *cap)
{
	struct ntbpf_rec *tv;
	size_t tc;

	pthread_mutex_lock(&c->mu);
	tv = c->v;
	tc = c->cap;
	c->v = *v;
	c->cap = *cap > c->max_recs ? 0 : *cap;	/* never keep more than the cap */
	if (!c->cap) {
		free(c->v);
		c->v = NULL;
	}
	*v = tv;
	*n = c->n;
	*cap = tc;
	c->n = 0;
	pthread_mutex_unlock(&c->mu);
}

void nt_stream_client_status(struct nt_stream_client *c, struct nt_stream_status *st)
{
	pthread_mutex_lock(&c->mu);
	*st = c->st;
	pthread_mutex_unlock(&c->mu);
}

void nt_stream_client_stop(struct nt_stream_client *c)
{
	if (!c)
		return;
	__atomic_store_n(&c->stop, 1, __ATOMIC_SEQ_CST);
	pthread_join(c->th, NULL);	/* every wait in the thread looks at stop at least every 200 ms */
	OPENSSL_cleanse(c->key.k, sizeof(c->key.k));
	free(c->v);
	free(c->frame);
	pthread_mutex_destroy(&c->mu);
	free(c);
}
