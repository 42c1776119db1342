// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * match.c - what both pairing engines (matchmem.c, matchstream.c) build on, as match.h and
 * match_int.h describe it: a record's item (its window in its host's clock, its key: cntlid,
 * qid, cid and the queue's port), the key table, and the clock offset between two hosts
 * estimated from the data (nt_estimate_offset: the offset most sampled candidate pairs allow).
 */
#include <stdlib.h>
#include <string.h>
#include "match_int.h"
#include "recfile.h"

#define ITEM_T_MAX (1ll << 62)	/* prior and item times held within it (nt_prior_of, item_window) */

static uint64_t at(const struct ntbpf_rec *r, int ev)
{
	return r->t0 + r->ev[ev];
}

/*
 * Initiator: from the command leaving to the response arriving (or the
 * nearest events seen); target: from the command arriving to the response
 * leaving.  The target window lies inside the initiator's, shifted by the
 * clock offset.
 */
void nt_rec_window(const struct ntbpf_rec *r, uint64_t *lo, uint64_t *hi)
{
	/*
	 * Each list's events in the order of the event numbers, so the first
	 * seen is the highest (or lowest) bit of the mask: no loop per record.
	 */
	_Static_assert(EV_I_CMD_SENT > EV_I_QUEUE_RQ && EV_I_QUEUE_RQ > EV_I_BLK_ISSUE, "init_lo order");
	_Static_assert(EV_I_RESP_ARRIVE < EV_I_RESP_PROC && EV_I_RESP_PROC < EV_I_NVME_DONE &&
		       EV_I_NVME_DONE < EV_I_BLK_DONE, "init_hi order");
	_Static_assert(EV_T_RESP_SENT > EV_T_RESP_QUEUED && EV_T_RESP_QUEUED > EV_T_SUBSYS_DONE &&
		       EV_T_SUBSYS_DONE > EV_T_REQ_INIT, "tgt_hi order");
	const uint32_t init_lo = 1u << EV_I_CMD_SENT | 1u << EV_I_QUEUE_RQ | 1u << EV_I_BLK_ISSUE;
	const uint32_t init_hi = 1u << EV_I_RESP_ARRIVE | 1u << EV_I_RESP_PROC | 1u << EV_I_NVME_DONE |
				 1u << EV_I_BLK_DONE;
	const uint32_t tgt_hi = 1u << EV_T_RESP_SENT | 1u << EV_T_RESP_QUEUED | 1u << EV_T_SUBSYS_DONE |
				1u << EV_T_REQ_INIT;
	uint32_t m;

	*lo = r->t0;
	*hi = r->t0;
	if (r->role == NTBPF_ROLE_TARGET) {
		if ((m = r->ev_mask & tgt_hi))
			*hi = at(r, 31 - __builtin_clz(m));
		return;
	}
	if ((m = r->ev_mask & init_lo))
		*lo = at(r, 31 - __builtin_clz(m));
	if ((m = r->ev_mask & init_hi))
		*hi = at(r, __builtin_ctz(m));
}

int nt_keys_grow(struct keys *k)
{
	struct keys nk = { .cap = k->cap ? k->cap * 2 : 1024, .n = k->n };

	nk.tab = calloc(nk.cap, sizeof(*nk.tab));
	nk.id = malloc(nk.cap * sizeof(*nk.id));
	if (!nk.tab || !nk.id) {
		free(nk.tab);
		free(nk.id);
		return -1;
	}
	for (size_t h = 0; h < k->cap; h++)
		if (k->tab[h]) {
			size_t s = key_slot(&nk, k->tab[h] - 1);

			nk.tab[s] = k->tab[h];
			nk.id[s] = k->id[h];
		}
	free(k->tab);
	free(k->id);
	*k = nk;
	return 0;
}

void nt_keys_free(struct keys *k)
{
	free(k->tab);
	free(k->id);
	memset(k, 0, sizeof(*k));
}

struct edge {
	int64_t x;
	int d;		/* +1 interval opens, -1 closes (closes sort after opens at the same x) */
};

static int edge_cmp(const void *a, const void *b)
{
	const struct edge *x = a, *y = b;

	if (x->x != y->x)
		return x->x < y->x ? -1 : 1;
	return y->d - x->d;
}

/*
 * Sort edges as edge_cmp orders them: by x, opens before closes at the same
 * x.  Up to millions of edges in the coarse pass: an LSD radix sort on
 * (x - min) << 1 | close, 11 bits a pass, as many passes as the span needs.
 */
static int sort_edges(struct edge *e, size_t n)
{
	uint64_t *k = malloc(2 * (n ? n : 1) * sizeof(*k)), *t, span;
	uint32_t cnt[2048];
	int64_t lo = n ? e[0].x : 0, hi = lo;
	int bits = 0;

	if (!k)
		return -1;
	t = k + n;
	for (size_t i = 1; i < n; i++) {
		lo = e[i].x < lo ? e[i].x : lo;
		hi = e[i].x > hi ? e[i].x : hi;
	}
	span = (uint64_t)hi - (uint64_t)lo;
	if (span >> 62) {	/* cannot happen with ns offsets; keep it exact anyway */
		free(k);
		qsort(e, n, sizeof(*e), edge_cmp);
		return 0;
	}
	for (size_t i = 0; i < n; i++)
		k[i] = ((uint64_t)e[i].x - (uint64_t)lo) << 1 | (e[i].d < 0);
	while (bits < 64 && (span << 1 | 1) >> bits)
		bits += 11;
	for (int sh = 0; sh < bits; sh += 11) {
		size_t sum = 0;
		uint64_t *x;

		memset(cnt, 0, sizeof(cnt));
		for (size_t i = 0; i < n; i++)
			cnt[(k[i] >> sh) & 2047]++;
		for (int d = 0; d < 2048; d++) {
			size_t c = cnt[d];

			cnt[d] = (uint32_t)sum;
			sum += c;
		}
		for (size_t i = 0; i < n; i++)
			t[cnt[(k[i] >> sh) & 2047]++] = k[i];
		x = k;
		k = t;
		t = x;
	}
	for (size_t i = 0; i < n; i++) {
		e[i].x = (int64_t)((k[i] >> 1) + (uint64_t)lo);
		e[i].d = k[i] & 1 ? -1 : +1;
	}
	free(k < t ? k : t);
	return 0;
}

bool nt_estimate_offset(const struct nt_matching *m, const struct nt_mitem *iv, size_t a_first, size_t a_end,
			const struct keys *keys, const struct tview *tw, int64_t prior,
			int64_t window, size_t samples, int max_cand, int64_t *off, size_t *votes)
{
	size_t ni = a_end - a_first, step = ni > samples ? ni / samples : 1, ne = 0, cap = 0, every = 0, seen = 0;
	struct edge *e = NULL;
	int cur = 0, best = 0;
	int64_t best_lo = 0, best_hi = 0;

	/*
	 * Every step-th I/O.  Where none of those can vote (the stride fell
	 * in step with I/Os paired already or without a key: a fleet's
	 * controllers interleaved, or block I/O between nvme I/O), every
	 * every-th of those that can, once.
	 */
again:
	for (size_t i = a_first; i < a_end; i += every ? 1 : step) {
		int64_t from = (int64_t)iv[i].lo + prior - window;
		uint32_t kid = init_kid(m, iv, i, keys);
		const struct nt_mitem *tv;
		size_t j, end;

		if (kid == NT_NO_KEY || (every && seen++ % every))
			continue;
		tv = tgroup(tw, kid, &j, &end);
		j = lower_bound(tv, j, end, from < 0 ? 0 : (uint64_t)from);
		for (int c = 0; j < end && c < max_cand; j++, c++) {
			int64_t a = (int64_t)tv[j].hi - (int64_t)iv[i].hi - TOLERANCE_NS;
			int64_t b = (int64_t)tv[j].lo - (int64_t)iv[i].lo + TOLERANCE_NS;

			if ((int64_t)tv[j].lo > (int64_t)iv[i].hi + prior + window)
				break;
			if (a > b || !same_conn(port_of(&iv[i]), port_of(&tv[j])))
				continue;
			if (ne + 2 > cap) {
				size_t ncap = cap ? cap * 2 : 1024;
				struct edge *p = realloc(e, ncap * sizeof(*e));

				if (!p) {
					free(e);
					return false;
				}
				e = p;
				cap = ncap;
			}
			e[ne++] = (struct edge){ a, +1 };
			e[ne++] = (struct edge){ b, -1 };
		}
	}
	if (!ne && !every && step > 1) {
		size_t can = 0;

		for (size_t i = a_first; i < a_end; i++)
			can += init_kid(m, iv, i, keys) != NT_NO_KEY;
		if (can) {
			every = can > samples ? can / samples : 1;
			goto again;
		}
	}
	if (!ne) {
		free(e);
		return false;
	}
	if (sort_edges(e, ne)) {
		free(e);
		return false;
	}
	/*
	 * The point most intervals cover; among equals, the one nearest the
	 * prior.  Perfectly regular traffic ties at shifts of one cid's
	 * period (every I/O fits the previous use of its cid as well); the
	 * clocks move slowly, so the nearest is the true one.
	 */
	for (size_t k = 0; k < ne; k++) {
		cur += e[k].d;
		if (e[k].d > 0 && cur >= best) {
			int64_t lo = e[k].x, hi = k + 1 < ne ? e[k + 1].x : e[k].x;
			int64_t mid = lo + (hi - lo) / 2, was = best_lo + (best_hi - best_lo) / 2;

			if (cur > best || llabs(mid - prior) < llabs(was - prior)) {
				best = cur;
				best_lo = lo;
				best_hi = hi;
			}
		}
	}
	free(e);
	/*
	 * Every offset in [best_lo, best_hi] fits all the votes: its middle
	 * where it is narrow (up to a segment's search, 1 ms), else the one
	 * nearest the prior, a tolerance inside its ends.  Long I/Os
	 * (hundreds of ms under a burst) allow a wide range, whose middle
	 * would be a drift no clock made (3.4 ms in 4 s on one host's clock,
	 * CI 2026-11-29) and leave out the pairs it does not fit.
	 */
	if (best_hi - best_lo <= SEG_WINDOW) {
		*off = best_lo + (best_hi - best_lo) / 2;
	} else {
		int64_t lo = best_lo + TOLERANCE_NS, hi = best_hi - TOLERANCE_NS;

		*off = prior < lo ? lo : prior > hi ? hi : prior;
	}
	*votes = best;
	return true;
}

/*
 * controller instance -> cntlid, from the initiator file's header: the one
 * in force when record r was issued on its queue (nvme_setup_cmd) where a
 * reconnect changed it while recording
 */
static inline bool cntlid_of(const struct nt_header *h, const struct ntbpf_rec *r, uint16_t *cntlid)
{
	const struct nt_ctrl_info *c = NULL;
	uint16_t instance = r->ctrl;

	if (h->ncchanges)
		return nt_header_cntlid_at(h, instance, r->t0 + ((r->ev_mask >> EV_I_QUEUE_RQ) & 1 ?
								 r->ev[EV_I_QUEUE_RQ] : 0), cntlid);

	/* a few controllers (the usual host): the first of that instance, as nt_header_ctrl finds it, inline */
	if (h->nctrls <= 4) {
		for (uint32_t k = 0; k < h->nctrls && !c; k++)
			if (h->ctrls[k].instance == instance)
				c = &h->ctrls[k];
	} else {
		c = nt_header_ctrl(h, instance);	/* by hash */
	}

	if (c)
		*cntlid = c->cntlid;
	return c != NULL;
}

bool nt_cntlid_shared(const struct nt_header *h, uint16_t instance, uint16_t cntlid)
{
	bool other;

	return nt_header_cntlid_ctrls(h, cntlid, instance, &other) && other;	/* by hash */
}

void nt_prior_of(const struct nt_header *ha, const struct nt_header *hb, int64_t *prior, int64_t *window)
{
	if (ha->boot_id[0] && !strcmp(ha->boot_id, hb->boot_id)) {
		*prior = 0;
		*window = 1000000;
	} else {
		/* in unsigned arithmetic: a header's clocks are untrusted, and may be anything (fuzz_report);
		 * held to +-2^62 ns (146 years), so that item times (also held there, nt_mitem_of) plus
		 * the prior, the window and the tolerances never overflow */
		*prior = (int64_t)((hb->mono_ns - hb->real_ns) - (ha->mono_ns - ha->real_ns));
		*prior = *prior > ITEM_T_MAX ? ITEM_T_MAX : *prior < -ITEM_T_MAX ? -ITEM_T_MAX : *prior;
		*window = 5000000000ll;
	}
}

/* an item's times are held below 2^62 ns (146 years of a host's clock): a record's t0 is
 * untrusted, and the search adds offsets and windows to them in signed 64-bit arithmetic */
static void item_window(const struct ntbpf_rec *r, struct nt_mitem *x)
{
	nt_rec_window(r, &x->lo, &x->hi);
	x->lo = x->lo > (uint64_t)ITEM_T_MAX ? (uint64_t)ITEM_T_MAX : x->lo;
	x->hi = x->hi > (uint64_t)ITEM_T_MAX ? (uint64_t)ITEM_T_MAX : x->hi;
}

enum nt_side nt_mitem_of(const struct ntbpf_rec *r, const struct nt_header *h, struct nt_mitem *x,
			 bool *no_cntlid)
{
	uint16_t cntlid;

	*no_cntlid = false;
	if (r->flags & NTBPF_F_ADMIN)
		return NT_SIDE_ADMIN;
	if (r->role == NTBPF_ROLE_TARGET) {
		x->kq = (uint64_t)r->port << KEY_BITS | mkkey(r->ctrl, r->qid, r->cid);
		x->kid = 0;
		item_window(r, x);
		return NT_SIDE_TGT;
	}
	x->kid = NT_NO_KEY;
	x->kq = 0;
	x->lo = x->hi = 0;
	if (!(r->flags & NTBPF_F_NVME))
		return NT_SIDE_INIT;
	if (!cntlid_of(h, r, &cntlid)) {
		*no_cntlid = true;
		return NT_SIDE_INIT;
	}
	x->kid = 0;	/* keyed */
	x->kq = (uint64_t)r->port << KEY_BITS | mkkey(cntlid, r->qid, r->cid);
	item_window(r, x);
	return NT_SIDE_INIT;
}

bool nt_cntlid_dup(const struct nt_header *h, uint16_t cntlid)
{
	return nt_header_cntlid_ctrls(h, cntlid, 0, NULL) > 1;	/* by hash */
}
