// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * stream.c - the live record stream's key (--key FILE or DIR), the
 * handshake both ends share (stream.h has the protocol), and addresses
 * (nt_resolve: the one getaddrinfo of ntbpf).  The server ("live --serve")
 * is streamsrv.c, the client ("live --peer") streamcli.c.
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
#include "stream_int.h"
#include "sysinfo.h"

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

void nt_stream_crypto_warm(void)
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

int nt_stream_auth(int fd, const struct nt_key *k, const volatile int *stop, char *err, size_t errlen)
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
	return nt_stream_auth(fd, k, NULL, err, errlen);
}
