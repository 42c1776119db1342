/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * fuzz_stream.c - the live stream's client end ("live --peer") over a real
 * loopback connection (make fuzz-ci, make fuzz FUZZ_TARGET=stream): the
 * harness plays the server, authenticates (no key: HMAC with the empty key,
 * as on loopback), then sends the input as the stream: a record-file
 * pre-image (tests/fuzz/fuzz_recfile.c's fix-up makes its CRCs right), the
 * stream's "NTST" heartbeats being whatever else it holds.  The client must
 * take what is whole, say why it went down, and stop cleanly; ASan, UBSan
 * and the leak check judge.  An input whose first byte is 0xff goes to the
 * server end instead: its handshake reading any bytes from a peer.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "../fuzz/fuzz_recfile.c"
#include "stream.h"

static int listen_fd = -1, port;

static int listen_once(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t al = sizeof(a);

	if (listen_fd >= 0)
		return 0;
	listen_fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (listen_fd < 0 || bind(listen_fd, (struct sockaddr *)&a, sizeof(a)) || listen(listen_fd, 4) ||
	    getsockname(listen_fd, (struct sockaddr *)&a, &al))
		return -1;
	port = ntohs(a.sin_port);
	return 0;
}

static int full(int fd, void *p, size_t n, bool out)
{
	while (n) {
		ssize_t r = out ? send(fd, p, n, MSG_NOSIGNAL) : recv(fd, p, n, 0);

		if (r <= 0)
			return -1;
		p = (char *)p + r;
		n -= r;
	}
	return 0;
}

static void client_end(const uint8_t *data, size_t size)
{
	static const struct nt_key nokey = { 0 };
	struct nt_stream_client *c;
	struct nt_stream_status st;
	struct fz_buf b = { 0 };
	uint8_t ch[40] = "NTBPFAU1", resp[72], mac[32];
	char addr[32], err[256];
	struct ntbpf_rec *v = NULL;
	size_t n = 0, cap = 0;
	int fd;

	if (listen_once() || nt_fuzz_fixup(data, size, &b)) {
		free(b.p);
		return;
	}
	snprintf(addr, sizeof(addr), "127.0.0.1:%d", port);
	c = nt_stream_client_start(addr, &nokey, 0.1, 4096, err, sizeof(err));
	if (!c)
		abort();
	fd = accept(listen_fd, NULL, NULL);
	memset(ch + 8, 0x5a, 32);
	if (fd >= 0 && !full(fd, ch, sizeof(ch), true) && !full(fd, resp, sizeof(resp), false)) {
		nt_stream_mac(&nokey, "ntbpf server", ch + 8, resp + 8, mac);
		if (!full(fd, mac, sizeof(mac), true) && b.len)
			full(fd, b.p, b.len, true);
	}
	if (fd >= 0)
		close(fd);
	/* until it says the connection went down (or 2 s: a bug) */
	for (int i = 0; i < 200; i++) {
		nt_stream_client_status(c, &st);
		nt_stream_client_take(c, &v, &n, &cap);
		if (!strncmp(st.state, "down", 4))
			break;
		usleep(10000);
	}
	nt_stream_client_take(c, &v, &n, &cap);
	nt_stream_client_stop(c);
	free(v);
	free(b.p);
}

static void server_end(const uint8_t *data, size_t size)
{
	static struct nt_stream_server *s;
	static struct nt_header h;
	static FILE *devnull;
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	char err[256];
	int fd;

	if (!s) {
		devnull = fopen("/dev/null", "w");
		struct sockaddr_in b = a;
		socklen_t bl = sizeof(b);
		char addr[32];

		/* a free port (it takes 1-65535 only): the kernel's pick, let go */
		fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd < 0 || bind(fd, (struct sockaddr *)&b, sizeof(b)) || getsockname(fd, (struct sockaddr *)&b, &bl))
			abort();
		close(fd);
		snprintf(addr, sizeof(addr), "127.0.0.1:%d", ntohs(b.sin_port));
		nt_header_init(&h, NTBPF_ROLE_TARGET);
		s = nt_stream_server_new(addr, NULL, &h, devnull, err, sizeof(err));
		if (!s) {
			fprintf(stderr, "fuzz_stream: %s\n", err);
			abort();
		}
	}
	a.sin_port = htons(nt_stream_server_port(s));
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a))) {
		if (fd >= 0)
			close(fd);
		return;
	}
	nt_stream_server_poll(s);	/* accepts: the challenge out */
	full(fd, (void *)data, size, true);
	for (int i = 0; i < 3; i++)
		nt_stream_server_poll(s);
	close(fd);
	nt_stream_server_poll(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size && data[0] == 0xff)
		server_end(data + 1, size - 1);
	else
		client_end(data, size);
	return 0;
}
