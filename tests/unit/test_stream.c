// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The live record stream (src/stream.c) over loopback TCP, no root: key files,
 * addresses, the HMAC handshake (wrong keys, both directions), one peer that
 * a stranger cannot evict, a peer that never reads (the server never blocks,
 * drops are counted on both ends, then it is dropped), a server that floods (the
 * client's memory is capped), servers that go silent (reported as stalled), and
 * per-host keys: two peers each sent only its host's records (a controller ID
 * given to another host included), a stalled peer dropped while the other goes
 * on, a peer beyond the limit refused with one line.
 */
#define _GNU_SOURCE	/* EAI_NODATA, EAI_ADDRFAMILY */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "stream.h"

static const struct nt_key key_a = { .n = 16, .k = "0123456789abcdef" };
static const struct nt_key key_b = { .n = 16, .k = "0123456789abcdeX" };

static uint64_t ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
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

static int connect_to(int port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	return fd;
}

static struct ntbpf_rec rec(uint32_t k)
{
	struct ntbpf_rec r = { .role = NTBPF_ROLE_TARGET, .flags = NTBPF_F_NVME, .op = NTBPF_OP_READ, .bytes = 4096,
			       .dev = 1, .qid = 1, .cid = (uint16_t)k, .t0 = 1000000000ull + k * 7919ull };

	/* values that do not compress away: the queue fills with real bytes */
	r.t0 ^= (uint64_t)(k * 2246822519u) << 20;
	r.ev_mask = 1u << EV_T_CMD_PICKUP;
	r.ev[EV_T_CMD_PICKUP] = (k * 2654435761u) & 0xfffff;
	return r;
}

/* a server on a free loopback port; log goes to a memory stream */
struct srvctx {
	struct nt_stream_server *s;
	struct nt_header h;
	int port;
	char *logbuf;
	size_t loglen;
	FILE *log;
};

static void srv_start(struct srvctx *c, const struct nt_key *k)
{
	char addr[64], err[256];

	memset(c, 0, sizeof(*c));
	nt_header_init(&c->h, NTBPF_ROLE_TARGET);
	snprintf(c->h.boot_id, sizeof(c->h.boot_id), "tgt-boot");
	c->log = open_memstream(&c->logbuf, &c->loglen);
	c->port = free_port();
	snprintf(addr, sizeof(addr), "127.0.0.1:%d", c->port);
	c->s = nt_stream_server_new(addr, k, &c->h, c->log, err, sizeof(err));
	assert_non_null(c->s);
}

static void srv_stop(struct srvctx *c)
{
	nt_stream_server_free(c->s);
	fclose(c->log);
	free(c->logbuf);
	nt_header_free(&c->h);
}

static const char *srv_log(struct srvctx *c)
{
	fflush(c->log);
	return c->logbuf ? c->logbuf : "";
}

/* polls the server until cond holds (5 s at most) */
#define POLL_UNTIL(c, cond)							\
	do {									\
		uint64_t t_ = ms();						\
		while (!(cond) && ms() - t_ < 5000) {				\
			nt_stream_server_poll((c)->s);				\
			usleep(1000);						\
		}								\
		assert_true(cond);						\
	} while (0)

/* the client handshake in a thread, while the test polls the server */
struct authctx {
	int fd;
	const struct nt_key *k;
	int rc;
	char err[256];
};

static void *auth_thread(void *arg)
{
	struct authctx *a = arg;

	a->rc = nt_stream_auth_client(a->fd, a->k, a->err, sizeof(a->err));
	return NULL;
}

static int auth_against(struct srvctx *c, const struct nt_key *k, char *err, size_t errlen)
{
	struct authctx a = { .fd = connect_to(c->port), .k = k, .rc = 99 };
	pthread_t th;
	uint64_t t = ms();

	pthread_create(&th, NULL, auth_thread, &a);
	while (__atomic_load_n(&a.rc, __ATOMIC_SEQ_CST) == 99 && ms() - t < 5000) {
		nt_stream_server_poll(c->s);
		usleep(1000);
	}
	pthread_join(th, NULL);
	if (err)
		snprintf(err, errlen, "%s", a.err);
	if (a.rc) {
		close(a.fd);
		return -1;
	}
	return a.fd;
}

static void write_file(const char *path, const char *s, mode_t mode)
{
	FILE *f = fopen(path, "w");

	fputs(s, f);
	fclose(f);
	chmod(path, mode);
}

static void test_key_file(void **state)
{
	char dir[] = "/tmp/ntbpf-key-XXXXXX", p[128], l[128], err[256];
	struct nt_key k;

	assert_non_null(mkdtemp(dir));
	snprintf(p, sizeof(p), "%s/key", dir);
	write_file(p, "0123456789abcdef0123\n", 0600);
	assert_int_equal(nt_key_load(p, &k, err, sizeof(err)), 0);
	assert_int_equal(k.n, 20);	/* the final newline is not part of it */
	/* readable by others: refused, saying how to fix it */
	chmod(p, 0644);
	assert_int_equal(nt_key_load(p, &k, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "mode 0644 lets others read it: chmod 600"));
	chmod(p, 0640);
	assert_int_equal(nt_key_load(p, &k, err, sizeof(err)), -1);
	/* too short */
	write_file(p, "short\n", 0600);
	assert_int_equal(nt_key_load(p, &k, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "at least 16"));
	/* a symbolic link, a directory, nothing */
	write_file(p, "0123456789abcdef0123\n", 0600);
	snprintf(l, sizeof(l), "%s/link", dir);
	assert_int_equal(symlink(p, l), 0);
	assert_int_equal(nt_key_load(l, &k, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "symbolic link"));
	assert_int_equal(nt_key_load(dir, &k, err, sizeof(err)), -1);
	unlink(l);
	snprintf(l, sizeof(l), "%s/none", dir);
	assert_int_equal(nt_key_load(l, &k, err, sizeof(err)), -1);
	/* someone else's file (only root can make one) */
	if (geteuid() == 0) {
		assert_int_equal(chown(p, 65534, 65534), 0);
		assert_int_equal(nt_key_load(p, &k, err, sizeof(err)), -1);
		assert_non_null(strstr(err, "not by this user"));
	}
	unlink(p);
	rmdir(dir);
}

static void test_addresses(void **state)
{
	char h[128], p[16], err[256];
	struct nt_header hdr;

	assert_int_equal(nt_split_addr("0.0.0.0:99999", h, sizeof(h), p, sizeof(p)), -1);
	assert_int_equal(nt_split_addr("0.0.0.0:0", h, sizeof(h), p, sizeof(p)), -1);
	assert_int_equal(nt_split_addr("0.0.0.0:-1", h, sizeof(h), p, sizeof(p)), -1);
	assert_int_equal(nt_split_addr("0.0.0.0:44x", h, sizeof(h), p, sizeof(p)), -1);
	assert_int_equal(nt_split_addr(":4430", h, sizeof(h), p, sizeof(p)), -1);
	assert_int_equal(nt_split_addr("[::1]:4430", h, sizeof(h), p, sizeof(p)), 0);
	assert_string_equal(h, "::1");
	assert_string_equal(p, "4430");
	nt_header_init(&hdr, NTBPF_ROLE_TARGET);
	/* no key: only loopback */
	assert_null(nt_stream_server_new("0.0.0.0:4430", NULL, &hdr, stderr, err, sizeof(err)));
	assert_non_null(strstr(err, "needs --key FILE"));
	assert_null(nt_stream_server_new("0.0.0.0:99999", &key_a, &hdr, stderr, err, sizeof(err)));
	assert_non_null(strstr(err, "port 1-65535"));
	nt_header_free(&hdr);
}

static void test_no_key_loopback(void **state)
{
	struct srvctx c;
	int fd;

	srv_start(&c, NULL);
	assert_non_null(strstr(srv_log(&c), "serving on the loopback address"));
	fd = auth_against(&c, NULL, NULL, 0);
	assert_true(fd >= 0);
	POLL_UNTIL(&c, nt_stream_server_connected(c.s));
	close(fd);
	srv_stop(&c);
}

static void test_wrong_key_refused(void **state)
{
	struct srvctx c;
	char err[256];

	srv_start(&c, &key_a);
	/* the client has another key: the server refuses it */
	assert_int_equal(auth_against(&c, &key_b, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "wrong --key"));
	POLL_UNTIL(&c, strstr(srv_log(&c), "failed to authenticate (wrong --key?)"));
	assert_false(nt_stream_server_connected(c.s));
	/* no key at all against a keyed server */
	assert_int_equal(auth_against(&c, NULL, err, sizeof(err)), -1);
	assert_false(nt_stream_server_connected(c.s));
	srv_stop(&c);
}

/* a fake server that knows no key: the client refuses it (the server proves itself too) */
static void test_client_authenticates_server(void **state)
{
	int sv[2];
	uint8_t ch[40] = "NTBPFAU1", resp[72], fake[32] = { 0 };
	char err[256];
	pid_t pid;

	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	assert_int_equal(getrandom(ch + 8, 32, 0), 32);
	pid = fork();
	if (pid == 0) {
		close(sv[0]);
		if (write(sv[1], ch, sizeof(ch)) != sizeof(ch) || read(sv[1], resp, sizeof(resp)) != sizeof(resp) ||
		    write(sv[1], fake, sizeof(fake)) != sizeof(fake))
			_exit(1);
		_exit(0);
	}
	close(sv[1]);
	assert_int_equal(nt_stream_auth_client(sv[0], &key_a, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "the server failed to authenticate"));
	close(sv[0]);
	waitpid(pid, NULL, 0);
}

/* strangers that connect and say nothing (or garbage) do not evict the peer */
static void test_one_peer_not_evicted(void **state)
{
	struct srvctx c;
	int fd, s1, s2, fd2;
	char buf[256];
	ssize_t n;

	srv_start(&c, &key_a);
	fd = auth_against(&c, &key_a, NULL, 0);
	assert_true(fd >= 0);
	POLL_UNTIL(&c, nt_stream_server_connected(c.s));
	s1 = connect_to(c.port);
	s2 = connect_to(c.port);
	{	/* garbage of a whole handshake's length: refused as soon as it is read */
		char junk[72] = "GET / HTTP/1.0\r\n\r\n";

		assert_int_equal(write(s2, junk, sizeof(junk)), sizeof(junk));
	}
	/* accepted in order: once s2 is refused, s1 (silent) was accepted too */
	POLL_UNTIL(&c, strstr(srv_log(&c), "failed to authenticate (wrong --key?)"));
	assert_true(nt_stream_server_connected(c.s));
	/* and the peer still gets its records */
	for (uint32_t k = 0; k < 10; k++) {
		struct ntbpf_rec r = rec(k);

		nt_stream_server_add(c.s, &r);
	}
	nt_stream_server_tick(c.s);
	n = recv(fd, buf, sizeof(buf), 0);
	assert_true(n > 8);	/* after the handshake (the server's MAC), the header */
	assert_memory_equal(buf, "NTBPFREC", 8);
	assert_null(strstr(srv_log(&c), "dropped"));
	/* an authenticated newcomer does replace it */
	fd2 = auth_against(&c, &key_a, NULL, 0);
	assert_true(fd2 >= 0);
	POLL_UNTIL(&c, strstr(srv_log(&c), "replaced by a newly authenticated peer"));
	close(s1);
	close(s2);
	close(fd);
	close(fd2);
	srv_stop(&c);
}

/* a stranger that connects and never answers the challenge is closed after NT_STREAM_AUTH_MS, not before */
static void test_unauthenticated_closed(void **state)
{
	struct srvctx c;
	uint8_t buf[64];
	uint64_t t0, closed = 0;
	ssize_t n, got = 0;
	int fd;

	srv_start(&c, &key_a);
	fd = connect_to(c.port);
	t0 = ms();
	while (!closed && ms() - t0 < NT_STREAM_AUTH_MS + 3000) {
		nt_stream_server_poll(c.s);
		n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
		if (n > 0)
			got += n;	/* the challenge */
		else if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK))
			closed = ms() - t0;
		usleep(2000);
	}
	assert_int_equal(got, 40);
	assert_true(closed >= NT_STREAM_AUTH_MS);
	assert_non_null(strstr(srv_log(&c), "did not authenticate in time"));
	assert_false(nt_stream_server_connected(c.s));
	close(fd);
	srv_stop(&c);
}

/* a peer that never reads: adding records never blocks, the queue stays bounded, drops are counted */
static void test_slow_peer_never_blocks(void **state)
{
	struct srvctx c;
	uint64_t t, worst = 0;
	int fd;

	srv_start(&c, &key_a);
	nt_stream_server_set_queue_max(c.s, 256 << 10);
	fd = auth_against(&c, &key_a, NULL, 0);
	assert_true(fd >= 0);
	POLL_UNTIL(&c, nt_stream_server_connected(c.s));
	for (int round = 0; round < 100; round++) {
		t = ms();
		for (uint32_t k = 0; k < 20000; k++) {
			struct ntbpf_rec r = rec(round * 20000 + k);

			nt_stream_server_add(c.s, &r);
		}
		nt_stream_server_tick(c.s);
		nt_stream_server_poll(c.s);
		if (ms() - t > worst)
			worst = ms() - t;
		/* the cap, one chunk more at most */
		assert_true(nt_stream_server_queued(c.s) <= (256 << 10) + 4096 * sizeof(struct ntbpf_rec));
	}
	assert_true(worst < 1000);	/* a blocking send would wait forever here */
	assert_true(nt_stream_server_dropped(c.s) > 0);
	assert_non_null(strstr(srv_log(&c), "reads too slowly"));
	/* and, having taken nothing for NT_STREAM_STALL ticks, dropped */
	assert_non_null(strstr(srv_log(&c), "stopped reading for 3 intervals"));
	assert_false(nt_stream_server_connected(c.s));
	close(fd);
	srv_stop(&c);
}

/* the client: a server that floods; then the drops it reports, and then silence */
struct flood {
	struct srvctx c;
	volatile int stop;
	uint32_t recs_per_tick;
	size_t qmax;
};

static void *flood_thread(void *arg)
{
	struct flood *f = arg;
	uint32_t k = 0;

	if (f->qmax)
		nt_stream_server_set_queue_max(f->c.s, f->qmax);
	while (!f->stop) {
		for (uint32_t i = 0; i < f->recs_per_tick && nt_stream_server_connected(f->c.s); i++) {
			struct ntbpf_rec r = rec(k++);

			nt_stream_server_add(f->c.s, &r);
		}
		nt_stream_server_tick(f->c.s);
		nt_stream_server_poll(f->c.s);
		usleep(2000);
	}
	return NULL;
}

static void wait_client(struct nt_stream_client *cl, struct nt_stream_status *st, int (*ok)(struct nt_stream_status *))
{
	uint64_t t = ms();

	do {
		nt_stream_client_status(cl, st);
		if (ok(st))
			return;
		usleep(5000);
	} while (ms() - t < 8000);
	fail_msg("client state '%s', %llu received, %llu dropped here, %llu there", st->state,
		 (unsigned long long)st->received, (unsigned long long)st->dropped_here,
		 (unsigned long long)st->dropped_there);
}

static int capped(struct nt_stream_status *st)
{
	return st->dropped_here > 0 && st->received > 50000;
}

static void test_client_memory_capped(void **state)
{
	struct flood f = { .recs_per_tick = 4000 };
	struct nt_stream_client *cl;
	struct nt_stream_status st;
	struct ntbpf_rec *v = NULL;
	size_t n = 0, cap = 0;
	char addr[64], err[256];
	pthread_t th;

	srv_start(&f.c, &key_a);
	pthread_create(&th, NULL, flood_thread, &f);
	snprintf(addr, sizeof(addr), "127.0.0.1:%d", f.c.port);
	cl = nt_stream_client_start(addr, &key_a, 0.1, 1000, err, sizeof(err));
	assert_non_null(cl);
	/* nobody takes the records: the client holds 1000 and counts the rest */
	wait_client(cl, &st, capped);
	assert_string_equal(st.state, "connected");
	assert_string_equal(st.boot_id, "tgt-boot");
	nt_stream_client_take(cl, &v, &n, &cap);
	assert_int_equal(n, 1000);
	assert_true(cap <= 1000);
	/* and it keeps going: more arrive after a take (output never silently stops) */
	{
		uint64_t before = st.received;
		uint64_t t = ms();

		do {
			nt_stream_client_status(cl, &st);
			usleep(5000);
		} while (st.received < before + 10000 && ms() - t < 5000);
		assert_true(st.received >= before + 10000);
	}
	f.stop = 1;
	pthread_join(th, NULL);
	nt_stream_client_stop(cl);
	free(v);
	srv_stop(&f.c);
}

static int target_dropped(struct nt_stream_status *st)
{
	return st->dropped_there > 0;
}

/* the server's drops reach the client (NTST blocks) */
static void test_drops_reported_to_client(void **state)
{
	struct flood f = { .recs_per_tick = 20000, .qmax = 1 };
	struct nt_stream_client *cl;
	struct nt_stream_status st;
	char addr[64], err[256];
	pthread_t th;

	srv_start(&f.c, &key_a);
	pthread_create(&th, NULL, flood_thread, &f);
	snprintf(addr, sizeof(addr), "127.0.0.1:%d", f.c.port);
	cl = nt_stream_client_start(addr, &key_a, 0.1, 0, err, sizeof(err));
	assert_non_null(cl);
	wait_client(cl, &st, target_dropped);
	f.stop = 1;
	pthread_join(th, NULL);
	assert_true(nt_stream_server_dropped(f.c.s) >= st.dropped_there);
	nt_stream_client_stop(cl);
	srv_stop(&f.c);
}

/* a fake server: authenticates, sends 'len' bytes of 'bytes', then nothing */
struct silent {
	int port, lfd;
	const uint8_t *bytes;
	size_t len;
	volatile int stop;
};

static void *silent_thread(void *arg)
{
	struct silent *s = arg;
	uint8_t ch[40] = "NTBPFAU1", resp[72], mac[32];
	int fd = accept(s->lfd, NULL, NULL);

	assert_int_equal(getrandom(ch + 8, 32, 0), 32);
	assert_int_equal(write(fd, ch, sizeof(ch)), sizeof(ch));
	assert_int_equal(recv(fd, resp, sizeof(resp), MSG_WAITALL), sizeof(resp));
	nt_stream_mac(&key_a, "ntbpf server", ch + 8, resp + 8, mac);
	assert_int_equal(write(fd, mac, sizeof(mac)), sizeof(mac));
	assert_int_equal(write(fd, s->bytes, s->len), (ssize_t)s->len);
	while (!s->stop)
		usleep(10000);
	close(fd);
	return NULL;
}

static int stalled(struct nt_stream_status *st)
{
	return !strncmp(st->state, "stalled", 7);
}

static void silent_case(const uint8_t *bytes, size_t len)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t al = sizeof(a);
	struct silent s = { .bytes = bytes, .len = len };
	struct nt_stream_client *cl;
	struct nt_stream_status st;
	char addr[64], err[256];
	pthread_t th;
	uint64_t t0;

	s.lfd = socket(AF_INET, SOCK_STREAM, 0);
	assert_int_equal(bind(s.lfd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(s.lfd, 1), 0);
	getsockname(s.lfd, (struct sockaddr *)&a, &al);
	pthread_create(&th, NULL, silent_thread, &s);
	snprintf(addr, sizeof(addr), "127.0.0.1:%d", ntohs(a.sin_port));
	t0 = ms();
	cl = nt_stream_client_start(addr, &key_a, 0.1, 0, err, sizeof(err));
	assert_non_null(cl);
	wait_client(cl, &st, stalled);
	/* after NT_STREAM_STALL intervals of 0.1 s, not before */
	assert_true(ms() - t0 >= NT_STREAM_STALL * 100);
	s.stop = 1;
	pthread_join(th, NULL);
	nt_stream_client_stop(cl);
	close(s.lfd);
}

static void test_silent_server_stalls(void **state)
{
	struct nt_header h;
	char *buf = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&buf, &len);
	struct nt_writer *w;

	/* half a header */
	silent_case((const uint8_t *)"NTBPFREC\3\0", 10);
	/* a whole header, then silence */
	nt_header_init(&h, NTBPF_ROLE_TARGET);
	w = nt_writer_open(m, &h);
	fflush(m);
	assert_true(len > 20);
	silent_case((const uint8_t *)buf, len);
	nt_writer_close(w, NULL);
	fclose(m);
	free(buf);
	nt_header_free(&h);
}

/* lengths from the socket are bounded: a chunk that claims 4 GB is refused before any allocation */
static void test_client_bounds_lengths(void **state)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t al = sizeof(a);
	uint8_t bytes[64] = "NTBPFREC\3\0\0\0\0\0\0\0";	/* empty payload; CRC wrong: the reader says so */
	struct silent s = { .bytes = bytes, .len = 16 + 4 };
	struct nt_stream_client *cl;
	struct nt_stream_status st;
	char addr[64], err[256];
	pthread_t th;

	/* a header claiming a 4 GB payload */
	bytes[12] = bytes[13] = bytes[14] = bytes[15] = 0xff;
	s.lfd = socket(AF_INET, SOCK_STREAM, 0);
	assert_int_equal(bind(s.lfd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(s.lfd, 1), 0);
	getsockname(s.lfd, (struct sockaddr *)&a, &al);
	pthread_create(&th, NULL, silent_thread, &s);
	snprintf(addr, sizeof(addr), "127.0.0.1:%d", ntohs(a.sin_port));
	cl = nt_stream_client_start(addr, &key_a, 0.1, 0, err, sizeof(err));
	assert_non_null(cl);
	{
		uint64_t t = ms();

		do {
			nt_stream_client_status(cl, &st);
			usleep(5000);
		} while (!strstr(st.state, "a header of") && ms() - t < 5000);
	}
	assert_non_null(strstr(st.state, "down (a header of 4294967295 bytes (at most 1048576))"));
	s.stop = 1;
	pthread_join(th, NULL);
	nt_stream_client_stop(cl);
	close(s.lfd);
}

/* what a static binary says when a name does not resolve (the binary linked with shared libraries: nothing) */
static void test_resolve_hint(void **state)
{
	const int names[] = { EAI_NONAME, EAI_AGAIN, EAI_FAIL, EAI_NODATA, EAI_ADDRFAMILY };

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		assert_string_equal(nt_resolve_hint(false, names[i]), "");
		assert_non_null(strstr(nt_resolve_hint(true, names[i]), "/etc/hosts and DNS only: give an address"));
	}
	assert_string_equal(nt_resolve_hint(true, EAI_SERVICE), "");
	assert_string_equal(nt_resolve_hint(true, EAI_MEMORY), "");
	assert_string_equal(nt_resolve_hint(true, 0), "");
}


/* ---- per-host keys (--key DIR): several peers, each its own host's records ---- */

static const struct nt_key key_c = { .n = 16, .k = "0123456789abcdeC" };
#define HOST_A "nqn.2014-08.org.nvmexpress:uuid:aaaa"
#define HOST_B "nqn.2014-08.org.nvmexpress:uuid:bbbb"
#define HOST_C "nqn.2014-08.org.nvmexpress:uuid:cccc"

/* the target's controllers: cntlid 1 of host A (host B's once 'reused' is set), 2 of B, 9 unknown */
static volatile int reused;

static int test_host_of(void *ctx, uint16_t cntlid, char *nqn, size_t len)
{
	(void)ctx;
	if (cntlid == 1 || cntlid == 2)
		snprintf(nqn, len, "%s", cntlid == 2 || reused ? HOST_B : HOST_A);
	return cntlid == 1 || cntlid == 2 ? 0 : -1;
}

static char keydir[64];

static void make_keydir(struct nt_keyset *ks)
{
	char p[192], err[256];
	const struct { const char *host; const struct nt_key *k; } keys[] = {
		{ HOST_A, &key_a }, { HOST_B, &key_b }, { HOST_C, &key_c } };

	snprintf(keydir, sizeof(keydir), "/tmp/ntbpf-keys-XXXXXX");
	assert_non_null(mkdtemp(keydir));
	for (size_t i = 0; i < 3; i++) {
		snprintf(p, sizeof(p), "%s/%s", keydir, keys[i].host);
		write_file(p, (const char *)keys[i].k->k, 0600);
	}
	assert_int_equal(nt_keyset_load(keydir, ks, err, sizeof(err)), 0);
	assert_int_equal(ks->n, 3);
}

static void rm_keydir(struct nt_keyset *ks)
{
	char p[192];
	const char *h[] = { HOST_A, HOST_B, HOST_C, "dup" };

	for (size_t i = 0; i < 4; i++) {
		snprintf(p, sizeof(p), "%s/%s", keydir, h[i]);
		unlink(p);
	}
	rmdir(keydir);
	nt_keyset_free(ks);
}

static void srv_start_hosts(struct srvctx *c, const struct nt_keyset *ks)
{
	char addr[64], err[256];

	memset(c, 0, sizeof(*c));
	nt_header_init(&c->h, NTBPF_ROLE_TARGET);
	c->log = open_memstream(&c->logbuf, &c->loglen);
	c->port = free_port();
	snprintf(addr, sizeof(addr), "127.0.0.1:%d", c->port);
	c->s = nt_stream_server_new_hosts(addr, ks, test_host_of, NULL, &c->h, c->log, err, sizeof(err));
	assert_non_null(c->s);
}

/* the key directory's rules: closed to others, each key its own */
static void test_keyset_rules(void **state)
{
	struct nt_keyset ks;
	char p[192], err[256];

	make_keydir(&ks);
	for (size_t i = 0; i < ks.n; i++)
		assert_true(!strcmp(ks.v[i].host, HOST_A) || !strcmp(ks.v[i].host, HOST_B) ||
			    !strcmp(ks.v[i].host, HOST_C));
	nt_keyset_free(&ks);
	chmod(keydir, 0755);
	assert_int_equal(nt_keyset_load(keydir, &ks, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "chmod 700"));
	chmod(keydir, 0700);
	snprintf(p, sizeof(p), "%s/dup", keydir);
	write_file(p, (const char *)key_a.k, 0600);
	assert_int_equal(nt_keyset_load(keydir, &ks, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "have the same key"));
	rm_keydir(&ks);
}

static void take_all(struct nt_stream_client *cl, struct ntbpf_rec **v, size_t *cap, uint64_t count[3][3],
		     uint64_t *stray)
{
	size_t n = 0;

	nt_stream_client_take(cl, v, &n, cap);
	for (size_t k = 0; k < n; k++) {
		const struct ntbpf_rec *r = &(*v)[k];
		int ci = r->ctrl == 1 ? 1 : r->ctrl == 2 ? 2 : 0;

		if (ci && r->dev >= 1 && r->dev <= 2)
			count[ci][r->dev]++;
		else
			(*stray)++;
	}
}

static int both_connected(struct nt_stream_server *s)
{
	return nt_stream_server_peers(s) == 2;
}

/*
 * Two peers on loopback, hosts A and B: each receives its host's records only.  Records
 * are marked with their phase (dev): in phase 2 the target gives controller 1 to host B
 * in the middle of an interval; that interval's records of controller 1 go to nobody,
 * and from then on its records go to B, never to A.
 */
static void test_two_peers_isolated(void **state)
{
	struct nt_keyset ks;
	struct srvctx c;
	struct nt_stream_client *ca, *cb;
	struct ntbpf_rec *va = NULL, *vb = NULL;
	size_t capa = 0, capb = 0;
	uint64_t na[3][3] = { { 0 } }, nb[3][3] = { { 0 } }, stray_a = 0, stray_b = 0;
	char addr[64], err[256];
	uint32_t k = 0;

	reused = 0;
	make_keydir(&ks);
	srv_start_hosts(&c, &ks);
	snprintf(addr, sizeof(addr), "127.0.0.1:%d", c.port);
	ca = nt_stream_client_start(addr, &key_a, 0.1, 0, err, sizeof(err));
	cb = nt_stream_client_start(addr, &key_b, 0.1, 0, err, sizeof(err));
	assert_non_null(ca);
	assert_non_null(cb);
	POLL_UNTIL(&c, both_connected(c.s));
	assert_non_null(strstr(srv_log(&c), "host " HOST_A));
	assert_non_null(strstr(srv_log(&c), "host " HOST_B));
	for (int tick = 0; tick < 60; tick++) {
		int phase = tick < 30 ? 1 : 2;

		for (int i = 0; i < 200; i++) {
			struct ntbpf_rec r = rec(k++);

			r.ctrl = (uint16_t[]){ 1, 2, 9 }[i % 3];
			r.dev = phase;
			if (tick == 30 && i == 100)
				reused = 1;	/* controller 1 is host B's from here on */
			if (tick == 30 && r.ctrl == 1)
				r.dev = i < 100 ? 1 : 2;
			nt_stream_server_add(c.s, &r);
		}
		nt_stream_server_tick(c.s);
		nt_stream_server_poll(c.s);
		usleep(5000);
		take_all(ca, &va, &capa, na, &stray_a);
		take_all(cb, &vb, &capb, nb, &stray_b);
	}
	{	/* what is on the way */
		uint64_t t = ms();

		while (ms() - t < 500) {
			nt_stream_server_poll(c.s);
			take_all(ca, &va, &capa, na, &stray_a);
			take_all(cb, &vb, &capb, nb, &stray_b);
			usleep(5000);
		}
	}
	/* A: controller 1 of phase 1 only; nothing of B's, of controller 9, of phase 2 */
	assert_true(na[1][1] > 1000);
	assert_int_equal(na[1][2], 0);
	assert_int_equal(na[2][1] + na[2][2], 0);
	assert_int_equal(stray_a, 0);
	/* B: controller 2 throughout, controller 1 in phase 2 only (once it is B's at two ticks) */
	assert_true(nb[2][1] > 1000 && nb[2][2] > 1000);
	assert_int_equal(nb[1][1], 0);
	assert_true(nb[1][2] > 1000);
	assert_int_equal(stray_b, 0);
	/* controller 9 (no host known), each controller's first interval and the switch's: nobody's */
	assert_true(nt_stream_server_withheld(c.s) > 0);
	assert_non_null(strstr(srv_log(&c), "records sent to no peer"));
	nt_stream_client_stop(ca);
	nt_stream_client_stop(cb);
	free(va);
	free(vb);
	srv_stop(&c);
	rm_keydir(&ks);
}

/* peer A never reads: it is dropped within NT_STREAM_STALL ticks of a full socket; B keeps receiving */
static void test_stalled_peer_dropped(void **state)
{
	struct nt_keyset ks;
	struct srvctx c;
	struct nt_stream_client *cb;
	struct nt_stream_status st;
	struct ntbpf_rec *vb = NULL;
	size_t capb = 0;
	uint64_t nb[3][3] = { { 0 } }, stray_b = 0, worst = 0, t0, t_drop = 0, b_at_drop = 0;
	char addr[64], err[256];
	uint32_t k = 0;
	int fd;

	reused = 0;
	make_keydir(&ks);
	srv_start_hosts(&c, &ks);
	nt_stream_server_set_queue_max(c.s, 256 << 10);
	snprintf(addr, sizeof(addr), "127.0.0.1:%d", c.port);
	fd = auth_against(&c, &key_a, NULL, 0);	/* authenticates, then never reads */
	assert_true(fd >= 0);
	cb = nt_stream_client_start(addr, &key_b, 0.1, 0, err, sizeof(err));
	assert_non_null(cb);
	POLL_UNTIL(&c, both_connected(c.s));
	t0 = ms();
	while (ms() - t0 < 20000) {
		uint64_t t = ms();

		for (int i = 0; i < 8000; i++) {
			struct ntbpf_rec r = rec(k++);

			r.ctrl = i & 1 ? 2 : 1;
			r.dev = 1;
			nt_stream_server_add(c.s, &r);
		}
		nt_stream_server_tick(c.s);
		nt_stream_server_poll(c.s);
		if (ms() - t > worst)
			worst = ms() - t;
		take_all(cb, &vb, &capb, nb, &stray_b);
		if (!t_drop && strstr(srv_log(&c), "stopped reading")) {
			t_drop = ms();
			b_at_drop = nb[2][1];
		}
		if (t_drop && ms() - t_drop > 1000)
			break;
		usleep(20000);
	}
	assert_true(t_drop > 0);			/* A was dropped ... */
	assert_true(worst < 1000);			/* ... and no tick waited for it */
	assert_int_equal(nt_stream_server_peers(c.s), 1);
	/* B received all along and keeps receiving after A's drop, its own records only */
	assert_true(b_at_drop > 0);
	assert_true(nb[2][1] > b_at_drop + 10000);
	assert_int_equal(nb[1][1], 0);
	assert_int_equal(stray_b, 0);
	nt_stream_client_status(cb, &st);
	assert_string_equal(st.state, "connected");
	nt_stream_client_stop(cb);
	close(fd);
	free(vb);
	srv_stop(&c);
	rm_keydir(&ks);
}

/* beyond the most peers, an authenticated newcomer gets one line and is closed; the others stay */
static void test_peer_limit_refused(void **state)
{
	struct nt_keyset ks;
	struct srvctx c;
	char err[256];
	int fa, fb;

	make_keydir(&ks);
	srv_start_hosts(&c, &ks);
	nt_stream_server_set_peers_max(c.s, 2);
	fa = auth_against(&c, &key_a, NULL, 0);
	fb = auth_against(&c, &key_b, NULL, 0);
	assert_true(fa >= 0 && fb >= 0);
	POLL_UNTIL(&c, both_connected(c.s));
	assert_int_equal(auth_against(&c, &key_c, err, sizeof(err)), -1);
	assert_string_equal(err, "the server refused us: ntbpf live --serve: 2 peers already, the most it serves; "
				 "try later");
	assert_non_null(strstr(srv_log(&c), "of " HOST_C " refused: 2 peers already (at most 2)"));
	assert_int_equal(nt_stream_server_peers(c.s), 2);
	/* a key of no host is refused as before */
	assert_int_equal(auth_against(&c, &key_b.n ? &(struct nt_key){ .n = 16, .k = "none-of-these-00" } : NULL,
				      err, sizeof(err)), -1);
	assert_non_null(strstr(err, "wrong --key"));
	close(fa);
	close(fb);
	srv_stop(&c);
	rm_keydir(&ks);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_resolve_hint),
		cmocka_unit_test(test_key_file),
		cmocka_unit_test(test_addresses),
		cmocka_unit_test(test_no_key_loopback),
		cmocka_unit_test(test_wrong_key_refused),
		cmocka_unit_test(test_client_authenticates_server),
		cmocka_unit_test(test_one_peer_not_evicted),
		cmocka_unit_test(test_unauthenticated_closed),
		cmocka_unit_test(test_slow_peer_never_blocks),
		cmocka_unit_test(test_client_memory_capped),
		cmocka_unit_test(test_drops_reported_to_client),
		cmocka_unit_test(test_silent_server_stalls),
		cmocka_unit_test(test_client_bounds_lengths),
		cmocka_unit_test(test_keyset_rules),
		cmocka_unit_test(test_two_peers_isolated),
		cmocka_unit_test(test_stalled_peer_dropped),
		cmocka_unit_test(test_peer_limit_refused),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
