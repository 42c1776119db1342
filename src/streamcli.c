// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * streamcli.c - the live record stream's client ("live --peer", stream.h):
 * a thread that dials, authenticates and reads the server's stream, every
 * length bounded and the records it holds capped, for live to take each
 * interval.
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
		if (nt_stream_auth(c->fd, &c->key, &c->stop, err, sizeof(err))) {
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
	nt_stream_crypto_warm();
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
