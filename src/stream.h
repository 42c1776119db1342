/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * stream - the live record stream, both ends: "live --serve" on the target
 * (server, streamsrv.c) and "live --peer" on the initiator (client,
 * streamcli.c); the key and the handshake they share are stream.c's.
 *
 * At connect, a challenge-response with HMAC-SHA256 over a shared key
 * (--key FILE) authenticates both ends:
 *
 *   server -> client   "NTBPFAU1" nonce_s[32]
 *   client -> server   "NTBPFAU1" nonce_c[32] HMAC(key, "ntbpf client" nonce_s nonce_c)
 *   server -> client   HMAC(key, "ntbpf server" nonce_s nonce_c)
 *
 * Without a key the HMAC's key is empty (loopback only: see nt_stream_server_new).
 * Then the record file format (docs/record-format.md): the header, chunks, and
 * at the end the trailer, with one more block of the stream's own between
 * chunks, every interval, also as a heartbeat:
 *
 *   "NTST" u64 records the server dropped so far (its queue for this peer was full)
 *
 * With one key (--key FILE) the server has one peer, which gets every record; a newly
 * authenticated peer replaces it.  With a key directory (--key DIR: one key file per
 * host, named by the host's hostnqn, every key distinct), the key whose HMAC matches
 * names the peer's host: up to NT_STREAM_PEERS_MAX peers at once, each sent only the
 * records of controllers of its host (the handshake is the same: a client holds
 * its own host's key only).  Beyond the limit an authenticated peer gets, in place
 * of the server's MAC, one line, and is closed:
 *
 *   server -> client   "NTBPFNO: " text "\n"     (at least 32 bytes, at most 160)
 *
 * The server never blocks: it accepts, authenticates and sends from its
 * caller's loop on non-blocking sockets, with a bounded queue per peer; a
 * peer that takes no byte for NT_STREAM_STALL intervals while bytes wait is
 * dropped, and the others go on.  The client is a thread; every length it reads is
 * bounded, the records it holds are capped, and a server that sends nothing
 * for NT_STREAM_STALL intervals is reported as stalled.
 */
#ifndef NTBPF_STREAM_H
#define NTBPF_STREAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "recfile.h"

#define NT_KEY_MIN 16			/* bytes of a key file */
#define NT_KEY_MAX 4096
#define NT_STREAM_QUEUE_MAX (16u << 20)	/* server: bytes queued per peer before records are dropped */
#define NT_STREAM_MAX_HEADER (1u << 20)	/* client: largest header payload accepted */
#define NT_STREAM_MAX_CHUNK (8u << 20)	/* client: largest compressed chunk accepted */
#define NT_STREAM_MAX_RECS (1u << 18)	/* client: records held before the main thread takes them */
#define NT_STREAM_STALL 3		/* intervals without a whole block: "stalled" */
#define NT_STREAM_AUTH_MS 3000		/* time to authenticate */
#define NT_STREAM_PEERS_MAX 8		/* server, per-host keys: peers at once */
#define NT_STREAM_HOSTS_MAX 64		/* server: host keys in a key directory */
#define NT_NQN_MAX 256			/* an NQN and its NUL (NVMF_NQN_FIELD_LEN) */

struct nt_key {
	size_t n;			/* 0: no key */
	unsigned char k[NT_KEY_MAX];
};

/* a key file: a regular file of NT_KEY_MIN..NT_KEY_MAX bytes (a final newline is dropped),
 * owned by this user and not readable by others; 0, or -1 with a one-line cause */
int nt_key_load(const char *path, struct nt_key *k, char *err, size_t errlen);

/* --key DIR on the target: one key file per host (nt_key_load's rules each), named by its hostnqn */
struct nt_keyset {
	size_t n;
	struct nt_host_key {
		char host[NT_NQN_MAX];
		struct nt_key key;
	} *v;				/* NT_STREAM_HOSTS_MAX */
};
/* the directory yours and mode 0700 or less, 1..NT_STREAM_HOSTS_MAX keys, each distinct;
 * 0, or -1 with a one-line cause */
int nt_keyset_load(const char *dir, struct nt_keyset *ks, char *err, size_t errlen);
void nt_keyset_free(struct nt_keyset *ks);

/* "HOST:PORT" or "[v6]:PORT", port 1..65535; 0, or -1 with a one-line cause */
int nt_split_addr(const char *s, char *host, size_t hl, char *port, size_t pl);
/*
 * getaddrinfo for --peer, --serve and --metrics (0, or getaddrinfo's error).  A static ntbpf
 * (make static) looks host names up in /etc/hosts and DNS only: glibc links those two lookups in,
 * but would dlopen any other NSS module that the host's nsswitch.conf names (myhostname, resolve,
 * mdns4_minimal, sss), a shared library built for the host's glibc, which a static binary cannot
 * safely load.  Addresses never need a lookup.
 */
struct addrinfo;
int nt_resolve(const char *host, const char *port, const struct addrinfo *hints, struct addrinfo **ai);
/* what to add to a message about getaddrinfo's error rc: "" in a binary linked with shared
 * libraries (is_static false); in a static one, where a name was not found, that only /etc/hosts
 * and DNS were asked and to give an address instead */
const char *nt_resolve_hint(bool is_static, int rc);
/* the local port a socket is bound to (IPv4 or IPv6), -1 on error */
int nt_sock_port(int fd);

/* HMAC-SHA256(key, label || a[32] || b[32]) */
void nt_stream_mac(const struct nt_key *k, const char *label, const uint8_t a[32], const uint8_t b[32],
		   uint8_t out[32]);
/* client side of the handshake on a connected socket (blocking, up to NT_STREAM_AUTH_MS);
 * 0, or -1 with a one-line cause */
int nt_stream_auth_client(int fd, const struct nt_key *k, char *err, size_t errlen);

/* ---- the server (target) ---- */
struct nt_stream_server;
/* listens on addr; without a key (k NULL or empty) only on a loopback address.
 * hdr is the stream's header (kept by reference); log gets one line per event. */
struct nt_stream_server *nt_stream_server_new(const char *addr, const struct nt_key *k, const struct nt_header *hdr,
					      FILE *log, char *err, size_t errlen);
/*
 * Per-host keys (ks, kept by reference): host_of(ctx, cntlid, nqn, len) says the hostnqn of
 * the target's controller cntlid now (0), or -1 (unknown: its records go to nobody).  At
 * each tick a record goes to the peers of its controller's host where that host was the
 * same at the tick before; the caller drains its records just before each tick.
 */
struct nt_stream_server *nt_stream_server_new_hosts(const char *addr, const struct nt_keyset *ks,
						    int (*host_of)(void *ctx, uint16_t cntlid, char *nqn, size_t len),
						    void *ctx, const struct nt_header *hdr, FILE *log, char *err,
						    size_t errlen);
void nt_stream_server_set_host_of(struct nt_stream_server *s,
				  int (*host_of)(void *ctx, uint16_t cntlid, char *nqn, size_t len), void *ctx);
/* accept, authenticate, send what is queued: never blocks; call often */
void nt_stream_server_poll(struct nt_stream_server *s);
/* one key: queue a record for the peer, or count it as dropped (queue full); per-host keys:
 * hold it for the interval's end (routed then; NT_STREAM_MAX_RECS per interval, more are
 * every peer's drops); nothing without a peer */
void nt_stream_server_add(struct nt_stream_server *s, const struct ntbpf_rec *r);
/* the end of an interval: the interval's records routed, each peer's chunk and heartbeat
 * out (a peer's full queue drops records, counted), drops to the log */
void nt_stream_server_tick(struct nt_stream_server *s);
bool nt_stream_server_connected(const struct nt_stream_server *s);
uint64_t nt_stream_server_dropped(const struct nt_stream_server *s);	/* records, all peers */
int nt_stream_server_peers(const struct nt_stream_server *s);		/* peers connected now */
uint64_t nt_stream_server_withheld(const struct nt_stream_server *s);	/* records sent to no host */
size_t nt_stream_server_queued(const struct nt_stream_server *s);	/* bytes not yet sent */
int nt_stream_server_port(const struct nt_stream_server *s);
void nt_stream_server_set_queue_max(struct nt_stream_server *s, size_t bytes);	/* tests */
void nt_stream_server_set_peers_max(struct nt_stream_server *s, int n);		/* tests: 1..NT_STREAM_PEERS_MAX */
/* the trailer and what is queued, for up to a second; closes */
void nt_stream_server_free(struct nt_stream_server *s);

/* ---- the client (initiator): a thread reading the server's records ---- */
struct nt_stream_client;
struct nt_stream_status {
	char state[160];		/* "connecting", "connected", "stalled (...)", "down (...), retrying" */
	char hostname[256];
	char boot_id[40];
	uint8_t role;
	uint64_t mono_ns, real_ns;	/* the server's clocks (header) */
	uint64_t received;		/* records received, all connections */
	uint64_t dropped_here;		/* records dropped here: over NT_STREAM_MAX_RECS or out of memory */
	uint64_t dropped_there;		/* records the server dropped (its "NTST" blocks) */
};
/* interval: seconds per interval (the stall clock); max_recs 0: NT_STREAM_MAX_RECS */
struct nt_stream_client *nt_stream_client_start(const char *addr, const struct nt_key *k, double interval,
						size_t max_recs, char *err, size_t errlen);
/* the records received since the last call: *v is swapped with the client's buffer (both malloc'ed) */
void nt_stream_client_take(struct nt_stream_client *c, struct ntbpf_rec **v, size_t *n, size_t *cap);
void nt_stream_client_status(struct nt_stream_client *c, struct nt_stream_status *st);
void nt_stream_client_stop(struct nt_stream_client *c);

#endif
