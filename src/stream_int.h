/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * stream_int.h - what the live stream's three parts share, and no one else:
 * the key, the handshake and the addresses (stream.c), the server
 * (streamsrv.c) and the client (streamcli.c).  The protocol and the API
 * are stream.h.
 */
#ifndef NTBPF_STREAM_INT_H
#define NTBPF_STREAM_INT_H

#include <stdint.h>
#include <time.h>
#include "stream.h"

#define AUTH_MAGIC "NTBPFAU1"
#define CHALLENGE_LEN (8 + 32)
#define RESPONSE_LEN (8 + 32 + 32)
#define REFUSE_MAGIC "NTBPFNO:"	/* in place of the server's MAC: a refusal, one line */

static inline uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static inline uint32_t le32(const uint8_t *p)
{
	return p[0] | p[1] << 8 | p[2] << 16 | (uint32_t)p[3] << 24;
}

static inline uint64_t le64(const uint8_t *p)
{
	return le32(p) | (uint64_t)le32(p + 4) << 32;
}

/* OpenSSL's first use loads its providers (13 ms here, far longer in an emulated guest): before any peer waits */
void nt_stream_crypto_warm(void);
/* the client's side of the handshake, given up when *stop (may be NULL) is set: 0, or -1 with err */
int nt_stream_auth(int fd, const struct nt_key *k, const volatile int *stop, char *err, size_t errlen);

#endif
