// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * live.c - "ntbpf live": the report, every interval, while I/O runs.
 *
 * Local records are aggregated per interval by src/interval.c (which
 * "record --interval" uses too), with the report's own grouping and
 * histograms.  With --peer, the initiator also receives the target's
 * records (a thread reads the peer's record stream) and pairs them with its
 * own, so every line carries all ten stages; an initiator interval is held
 * back one interval so that its target records have time to arrive.  The
 * stream itself (both ends) is in stream.c.  Memory is capped: this host's
 * records per interval and the peer's waiting records each hold at most
 * NT_STREAM_MAX_RECS (more are dropped, counted and shown).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include "interval.h"
#include "live.h"
#include "match.h"
#include "groups.h"
#include "render.h"
#include "stream.h"

#define POOL_AGE_MAX 3	/* intervals a target record waits for its initiator partner */

struct nt_live {
	const struct nt_config *cfg;
	struct nt_interval iv;		/* this host's records, this interval's (src/interval.h) */
	struct nt_recvec pending;	/* peer mode: last interval's initiator records */
	double pending_secs;
	uint64_t pending_lost;
	char pending_when[40];
	struct nt_recvec pool;		/* peer mode: target records waiting for a partner */
	uint8_t *pool_age;
	size_t pool_age_cap;
	struct nt_recvec in;		/* peer mode: taken from the stream */
	struct nt_stream_client *peer;
};

void nt_live_set_local(struct nt_live *l, const struct nt_header *local)
{
	l->iv.local.hdr = *local;	/* shares the caller's arrays, as nt_live_new */
}

struct nt_live *nt_live_new(const struct nt_config *cfg, const struct nt_header *local)
{
	struct nt_live *l = calloc(1, sizeof(*l));

	if (!l)
		return NULL;
	l->cfg = cfg;
	nt_interval_init(&l->iv, cfg, local);
	return l;
}

void nt_live_on_interval(struct nt_live *l, void (*fn)(void *ctx, const struct nt_report *rep,
						       const struct nt_interval_info *info), void *ctx)
{
	l->iv.o.on_interval = fn;
	l->iv.o.on_interval_ctx = ctx;
}

void nt_live_set_cap(struct nt_live *l, size_t max_recs)
{
	l->iv.max_recs = max_recs;
}

void nt_live_push(struct nt_live *l, const struct ntbpf_rec *r)
{
	nt_interval_push(&l->iv, r);
}

/* take what the peer thread received into the pool (capped) */
static void pool_take(struct nt_live *l)
{
	nt_stream_client_take(l->peer, &l->in.v, &l->in.n, &l->in.cap);
	for (size_t k = 0; k < l->in.n; k++)
		if (nt_recvec_push(&l->pool, &l->in.v[k], l->iv.max_recs)) {
			l->iv.dropped += l->in.n - k;
			break;
		}
	l->in.n = 0;
	if (l->pool.n > l->pool_age_cap) {
		uint8_t *a = realloc(l->pool_age, l->pool.cap);

		if (!a) {	/* the records without an age are dropped */
			l->iv.dropped += l->pool.n - l->pool_age_cap;
			l->pool.n = l->pool_age_cap;
			return;
		}
		memset(a + l->pool_age_cap, 0, l->pool.cap - l->pool_age_cap);
		l->pool_age = a;
		l->pool_age_cap = l->pool.cap;
	}
}

/* the previous interval's initiator I/Os, paired with the target records that arrived since */
static void tick_peer(struct nt_live *l, FILE *out, double secs, uint64_t lost)
{
	struct nt_input in[2];
	struct nt_matching m;
	struct nt_report rep;
	struct nt_interval_info info = { 0 };
	struct nt_stream_status ps;
	char state[256];
	size_t keep = 0, expired = 0;

	pool_take(l);
	nt_stream_client_status(l->peer, &ps);
	memset(&in, 0, sizeof(in));
	in[1].hdr.role = NTBPF_ROLE_TARGET;
	memcpy(in[1].hdr.boot_id, ps.boot_id, sizeof(in[1].hdr.boot_id));
	in[1].hdr.mono_ns = ps.mono_ns;
	in[1].hdr.real_ns = ps.real_ns;
	/* the peer's state, and what was dropped on either end (whole run) */
	{
		int len = snprintf(state, sizeof(state), "%s", ps.state);

		if (ps.dropped_there && len < (int)sizeof(state))
			len += snprintf(state + len, sizeof(state) - len, ", %" PRIu64 " records dropped by the target",
					ps.dropped_there);
		if (ps.dropped_here + l->iv.dropped && len < (int)sizeof(state))
			snprintf(state + len, sizeof(state) - len, ", %" PRIu64 " records dropped here (over the cap)",
				 ps.dropped_here + l->iv.dropped);
	}
	in[0].hdr = l->iv.local.hdr;
	in[0].recs = l->pending.v;
	in[0].n = l->pending.n;
	in[1].recs = l->pool.v;
	in[1].n = l->pool.n;
	info.peer = state;
	info.lost = l->pending_lost;

	if (l->pending_when[0] && !nt_match_build(&m, in, 2)) {
		nt_report_begin(&rep, &l->iv.local, 1, &l->iv.o);
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
		struct nt_recvec t = l->pending;

		l->pending = l->iv.cur;
		l->iv.cur = t;
		l->iv.cur.n = 0;
	}
	l->pending_secs = secs;
	l->pending_lost = lost;
	nt_interval_when(&l->iv, l->pending_when, sizeof(l->pending_when));
}

void nt_live_tick(struct nt_live *l, FILE *out, double secs, uint64_t lost)
{
	if (l->peer)
		tick_peer(l, out, secs, lost);
	else
		nt_interval_tick(&l->iv, out, secs, lost);
}

int nt_live_peer(struct nt_live *l, const char *addr, const struct nt_key *key, char *err, size_t errlen)
{
	l->peer = nt_stream_client_start(addr, key, l->cfg->interval, l->iv.max_recs, err, errlen);
	return l->peer ? 0 : -1;
}

void nt_live_peer_status(struct nt_live *l, struct nt_stream_status *st)
{
	memset(st, 0, sizeof(*st));
	if (l->peer)
		nt_stream_client_status(l->peer, st);
}

void nt_live_free(struct nt_live *l)
{
	if (!l)
		return;
	nt_stream_client_stop(l->peer);
	free(l->in.v);
	nt_interval_fini(&l->iv);
	free(l->pending.v);
	free(l->pool.v);
	free(l->pool_age);
	free(l);
}


uint64_t nt_kh_ios(const struct nt_kh_gval *now, const struct nt_kh_gval *prev, int ncpu)
{
	uint64_t ios = 0;

	for (int c = 0; c < ncpu; c++)
		ios += now[c].ios - prev[c].ios;
	return ios;
}

uint64_t nt_kh_depth_interval(const struct nt_kh_gval *now, const struct nt_kh_gval *prev, int ncpu, uint64_t *sum,
			      uint64_t *b)
{
	uint64_t n = 0;

	*sum = 0;
	for (int c = 0; c < ncpu; c++) {
		n += now[c].dep_n - prev[c].dep_n;
		*sum += now[c].dep_sum - prev[c].dep_sum;
	}
	if (!n)
		return 0;
	memset(b, 0, NT_KH_DEP_NB * sizeof(*b));
	for (int c = 0; c < ncpu; c++)
		for (uint32_t k = 0; k < NT_KH_DEP_NB; k++)
			b[k] += (uint32_t)(now[c].dep_b[k] - prev[c].dep_b[k]);
	return n;
}

uint64_t nt_kh_slot_interval(const struct nt_kh_gval *now, const struct nt_kh_gval *prev, int ncpu, int slot,
			     uint64_t *count, uint64_t *sum, uint64_t *b)
{
	*count = *sum = 0;
	for (int c = 0; c < ncpu; c++) {
		*count += now[c].count[slot] - prev[c].count[slot];
		*sum += now[c].sum[slot] - prev[c].sum[slot];
	}
	if (!*count)
		return 0;
	memset(b, 0, NT_KH_NB * sizeof(*b));
	for (int c = 0; c < ncpu; c++) {
		const uint32_t *n = now[c].b[slot], *t = prev[c].b[slot];

		for (uint32_t k = 0; k < NT_KH_NB32; k++)
			b[k] += (uint32_t)(n[k] - t[k]);
	}
	return *count;
}

uint64_t nt_kh_add_group(struct nt_report *rep, const struct nt_kh_gkey *key, const struct nt_kh_gval *now,
			 const struct nt_kh_gval *prev, int ncpu, uint64_t *b)
{
	struct nt_kh_key hk = { .dev = key->dev, .bytes = key->bytes, .op = key->op, .role = key->role,
				.queue = key->qid != 0, .ctrl = key->ctrl, .qid = key->qid, .status = key->status };
	uint64_t ios = nt_kh_ios(now, prev, ncpu);

	if (!ios)
		return 0;
	memset(b, 0, NT_KH_NB * sizeof(*b));
	b[0] = ios;
	hk.stage = NT_ST_NR;	/* the group's I/O count */
	nt_report_add_kh(rep, &hk, b, ios, 0);
	if (key->qid) {
		uint64_t sum, n = nt_kh_depth_interval(now, prev, ncpu, &sum, b);

		hk.stage = NT_KH_DEPTH;
		if (n)
			nt_report_add_kh(rep, &hk, b, n, sum);
	}
	for (int i = 0; i < NT_KH_SLOTS && nt_kh_slot_stage(key->role, i) != NT_KH_NONE; i++) {
		uint64_t count, sum;

		if (!nt_kh_slot_interval(now, prev, ncpu, i, &count, &sum, b))
			continue;
		hk.stage = nt_kh_slot_stage(key->role, i);
		nt_report_add_kh(rep, &hk, b, count, sum);
	}
	return ios;
}
