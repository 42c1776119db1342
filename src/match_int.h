/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * match_int.h - what the two pairing engines share, and no one else: the
 * keys (cntlid, qid, cid) and the queue's port, the key table, the search
 * of a key's target items, and the clock offset estimated from the data
 * (match.c).  The engines: over items held in memory (matchmem.c:
 * nt_match_items, nt_match_build) and streaming (matchstream.c:
 * nt_smatch_run, nt_smatch_fleet).  The API is match.h.
 */
#ifndef NTBPF_MATCH_INT_H
#define NTBPF_MATCH_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "match.h"

#define SAMPLE_INITS 4000	/* initiator I/Os used to estimate the clock offset finely */
#define COARSE_INITS 256	/* ... and coarsely, over the whole prior window */
#define COARSE_CANDIDATES 4096	/* target candidates per sampled I/O, coarse pass */
#define FINE_CANDIDATES 64	/* ... fine pass (+-1 ms around the coarse estimate) */
#define TOLERANCE_NS 100000
#define SEG_INITS 32768		/* initiator I/Os per clock-offset segment, at most */
#define SEG_NS 1000000000ll	/* ... and 1 s of them (when there are 64 or more) */
#define SEG_WINDOW 1000000	/* a segment's offset is searched +-1 ms around the last one's */
#define SEG_SAMPLES 512		/* ... from this many of its I/Os (the first: SAMPLE_INITS) */

#define KEY_BITS 48
#define KEY_MASK ((1ull << KEY_BITS) - 1)

static inline uint16_t port_of(const struct nt_mitem *x)
{
	return (uint16_t)(x->kq >> KEY_BITS);
}

/*
 * The same queue connection, as far as the records tell: the initiator's TCP
 * port tells apart controllers that share a cntlid (two subsystems of one
 * target); records without it (older files, hooks that could not read it)
 * fall back to cntlid, qid, cid and timing.
 */
static inline bool same_conn(uint16_t a, uint16_t b)
{
	return !a || !b || a == b;
}

#define PAIRED 0x80000000u

static inline uint64_t mkkey(uint16_t cntlid, uint16_t qid, uint16_t cid)
{
	return (uint64_t)cntlid << 32 | (uint64_t)qid << 16 | cid;
}

/*
 * Keys (cntlid, qid, cid) -> dense ids, open addressing.  There are far
 * fewer keys than records (queues x queue depth x generations), so the table
 * grows with the keys seen, not with the records: it stays in cache.
 */
struct keys {
	uint64_t *tab;		/* slot -> key + 1 (0 = empty) */
	uint32_t *id;		/* slot -> dense id */
	size_t cap, n;
};

static inline size_t key_slot(const struct keys *k, uint64_t key)
{
	size_t h = (size_t)((key * 0x9E3779B97F4A7C15ull) >> 20) & (k->cap - 1);

	while (k->tab[h] && k->tab[h] != key + 1)
		h = (h + 1) & (k->cap - 1);
	return h;
}

/* twice the room (a power of two): 0, or -1 */
int nt_keys_grow(struct keys *k);

/* the key's id, added if new; NT_NO_KEY on allocation failure */
static inline uint32_t key_add(struct keys *k, uint64_t key)
{
	size_t h;

	if (2 * (k->n + 1) > k->cap && nt_keys_grow(k))
		return NT_NO_KEY;
	h = key_slot(k, key);
	if (!k->tab[h]) {
		k->tab[h] = key + 1;
		k->id[h] = (uint32_t)k->n++;
	}
	return k->id[h];
}

static inline uint32_t key_find(const struct keys *k, uint64_t key)
{
	size_t h;

	if (!k->cap)
		return NT_NO_KEY;
	h = key_slot(k, key);
	return k->tab[h] ? k->id[h] : NT_NO_KEY;
}

void nt_keys_free(struct keys *k);

/* first item of [a, b) with lo >= lo */
static inline size_t lower_bound(const struct nt_mitem *v, size_t a, size_t b, uint64_t lo)
{
	while (a < b) {
		size_t mid = a + (b - a) / 2;

		if (v[mid].lo < lo)
			a = mid + 1;
		else
			b = mid;
	}
	return a;
}

/*
 * lower_bound(v, a, b, lo), searched from a cursor: each key's initiator
 * I/Os come in time order, so the answer moves forward from the previous
 * one; gallop from there (amortised O(1)), or search [a, cur) when it did not.
 */
static inline size_t seek_from(const struct nt_mitem *v, size_t a, size_t b, size_t cur, uint64_t lo)
{
	size_t x = cur, step = 1;

	if (cur > a && v[cur - 1].lo >= lo)
		return lower_bound(v, a, cur, lo);
	while (x < b && v[x].lo < lo) {
		size_t nx = x + step;

		if (nx >= b || v[nx].lo >= lo)
			return lower_bound(v, x + 1, nx < b ? nx : b, lo);
		x = nx;
		step <<= 1;
	}
	return x;
}

/* the key id of initiator item k in this file pair, or NT_NO_KEY: not to be paired here */
static inline uint32_t init_kid(const struct nt_matching *m, const struct nt_mitem *ii, size_t k,
				const struct keys *keys)
{
	if (ii[k].kid == NT_NO_KEY || (m->pidx && m->pidx[k]))
		return NT_NO_KEY;
	return key_find(keys, ii[k].kq & KEY_MASK);	/* NT_NO_KEY: no target record has its key */
}

/*
 * The target items of one key in lo order: a file's groups (tv, start), or
 * a streaming key's window (sk, below).
 */
struct skey {
	struct nt_mitem *v;	/* [head, n) in lo order; idx: PAIRED; kid: its payload's place in the ring */
	uint32_t head, n, cap;
	uint32_t cur;		/* where the last search ended (any value in [head, n] is correct) */
	uint64_t last;		/* streaming: v[n - 1].lo while n > head (the tail stays out of cache) */
};

struct tview {
	const struct nt_mitem *tv;
	const uint32_t *start;
	const struct skey *sk;
};

static inline const struct nt_mitem *tgroup(const struct tview *t, uint32_t kid, size_t *a, size_t *b)
{
	if (t->sk) {
		*a = t->sk[kid].head;
		*b = t->sk[kid].n;
		return t->sk[kid].v;
	}
	*a = t->start[kid];
	*b = t->start[kid + 1];
	return t->tv;
}

/*
 * Each (sampled initiator I/O, candidate target record) pair allows the
 * offsets in [t.hi - i.hi, t.lo - i.lo]; true pairs all contain the true
 * offset, wrong ones scatter.  Take the point most intervals cover.
 */
bool nt_estimate_offset(const struct nt_matching *m, const struct nt_mitem *iv, size_t a_first, size_t a_end,
			const struct keys *keys, const struct tview *tw, int64_t prior,
			int64_t window, size_t samples, int max_cand, int64_t *off, size_t *votes);

/* the clock offset at one initiator time: at segment middles, and linear between them */
struct seg {
	int64_t at;		/* initiator time of the segment's middle I/O */
	int64_t off;		/* target clock - initiator clock there */
	double slope;		/* ... changing by this much per ns until the next one */
};

static inline int64_t offset_at(const struct seg *sg, size_t ns, size_t *k, int64_t t)
{
	size_t i = *k;

	/* items come in about time order: move from the last one's segment */
	while (i + 1 < ns && t >= sg[i + 1].at)
		i++;
	while (i > 0 && t < sg[i].at)
		i--;
	*k = i;
	if (i + 1 >= ns || t <= sg[i].at)
		return sg[i].off;
	return sg[i].off + (int64_t)(sg[i].slope * (double)(t - sg[i].at));
}

/* the offset before any estimate: the same boot: one clock; otherwise the wall clocks say roughly how they relate */
void nt_prior_of(const struct nt_header *ha, const struct nt_header *hb, int64_t *prior, int64_t *window);

/*
 * Another controller of the same initiator with the same cntlid: cntlids are
 * unique only within a subsystem (each subsystem of a target numbers its
 * controllers from 1).  The queue's TCP port tells them apart; where a
 * record lacks it, such I/Os are paired on (cntlid, qid, cid) and timing,
 * which can pick the other controller's command when both are busy: the
 * report says how many.
 */
bool nt_cntlid_shared(const struct nt_header *h, uint16_t instance, uint16_t cntlid);
/* some controller of this host shares cntlid with another one */
bool nt_cntlid_dup(const struct nt_header *h, uint16_t cntlid);

#endif
