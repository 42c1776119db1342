// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <stdlib.h>
#include <string.h>
#include "match.h"
#include "report.h"

#define SAMPLE_INITS 4000	/* initiator I/Os used to estimate the clock offset finely */
#define COARSE_INITS 256	/* ... and coarsely, over the whole prior window */
#define COARSE_CANDIDATES 4096	/* target candidates per sampled I/O, coarse pass */
#define FINE_CANDIDATES 64	/* ... fine pass (+-1 ms around the coarse estimate) */
#define TOLERANCE_NS 100000	/* slack for stand-in boundaries when fitting windows */

static inline bool seen(const struct ntbpf_rec *r, int ev)
{
	return r->ev_mask & (1u << ev);
}

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
	static const int init_lo[] = { EV_I_CMD_SENT, EV_I_QUEUE_RQ, EV_I_BLK_ISSUE };
	static const int init_hi[] = { EV_I_RESP_ARRIVE, EV_I_RESP_PROC, EV_I_NVME_DONE, EV_I_BLK_DONE };
	static const int tgt_hi[] = { EV_T_RESP_SENT, EV_T_RESP_QUEUED, EV_T_SUBSYS_DONE, EV_T_REQ_INIT };
	size_t i;

	*lo = r->t0;
	*hi = r->t0;
	if (r->role == NTBPF_ROLE_TARGET) {
		for (i = 0; i < sizeof(tgt_hi) / sizeof(tgt_hi[0]); i++)
			if (seen(r, tgt_hi[i])) {
				*hi = at(r, tgt_hi[i]);
				break;
			}
		return;
	}
	for (i = 0; i < sizeof(init_lo) / sizeof(init_lo[0]); i++)
		if (seen(r, init_lo[i])) {
			*lo = at(r, init_lo[i]);
			break;
		}
	for (i = 0; i < sizeof(init_hi) / sizeof(init_hi[0]); i++)
		if (seen(r, init_hi[i])) {
			*hi = at(r, init_hi[i]);
			break;
		}
}

struct item {
	uint64_t key;		/* cntlid << 32 | qid << 16 | cid */
	uint64_t lo, hi;
	size_t idx;		/* into m->init or m->tgt */
};


static uint64_t mkkey(uint16_t cntlid, uint16_t qid, uint16_t cid)
{
	return (uint64_t)cntlid << 32 | (uint64_t)qid << 16 | cid;
}

/*
 * Group items by key, keeping each key's items in file order, which is
 * their time order: a cid comes back only after its command completed, and
 * records are written at completion.  A stable counting sort over dense key
 * ids (open addressing) does in O(n) what qsort did in O(n log n).  Keys
 * end up in ascending order so both sides' groups can be searched.
 */
static uint64_t *key_tab;	/* keys seen, slot -> key (0 = empty, stored key + 1) */
static uint32_t *key_id;	/* slot -> dense id */
static size_t key_cap, key_n;

static int key_ids_init(size_t n)
{
	key_cap = 1;
	while (key_cap < 2 * n + 16)
		key_cap <<= 1;
	key_n = 0;
	key_tab = calloc(key_cap, sizeof(*key_tab));
	key_id = calloc(key_cap, sizeof(*key_id));
	return key_tab && key_id ? 0 : -1;
}

static uint32_t key_lookup(uint64_t key)
{
	size_t h = (size_t)((key * 0x9E3779B97F4A7C15ull) >> 20) & (key_cap - 1);

	while (key_tab[h] && key_tab[h] != key + 1)
		h = (h + 1) & (key_cap - 1);
	if (!key_tab[h]) {
		key_tab[h] = key + 1;
		key_id[h] = (uint32_t)key_n++;
	}
	return key_id[h];
}

static void key_ids_free(void)
{
	free(key_tab);
	free(key_id);
	key_tab = NULL;
	key_id = NULL;
}

static int key_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* sort a's and b's items by key (ascending), stable within a key */
static int group_by_key(struct item *a, size_t na, struct item *b, size_t nb)
{
	struct item *tmp = malloc((na > nb ? na : nb) * sizeof(*tmp) + 1);
	uint64_t *keys = NULL;
	uint32_t *rank = NULL, *pos = NULL, *ids = NULL;
	int rc = -1;

	if (!tmp || key_ids_init(na + nb))
		goto out;
	ids = malloc((na + nb + 1) * sizeof(*ids));
	if (!ids)
		goto out;
	for (size_t i = 0; i < na; i++)
		ids[i] = key_lookup(a[i].key);
	for (size_t i = 0; i < nb; i++)
		ids[na + i] = key_lookup(b[i].key);
	/* dense ids in key order */
	keys = malloc((key_n + 1) * sizeof(*keys));
	rank = malloc((key_n + 1) * sizeof(*rank));
	pos = calloc(key_n + 1, sizeof(*pos));
	if (!keys || !rank || !pos)
		goto out;
	for (size_t h = 0; h < key_cap; h++)
		if (key_tab[h])
			keys[key_id[h]] = key_tab[h] - 1;
	{
		uint64_t *sorted = malloc((key_n + 1) * sizeof(*sorted));

		if (!sorted)
			goto out;
		memcpy(sorted, keys, key_n * sizeof(*sorted));
		qsort(sorted, key_n, sizeof(*sorted), key_cmp);
		for (size_t r = 0; r < key_n; r++)
			rank[key_lookup(sorted[r])] = (uint32_t)r;
		free(sorted);
	}
	for (int side = 0; side < 2; side++) {
		struct item *v = side ? b : a;
		size_t n = side ? nb : na, sum = 0;
		const uint32_t *id = side ? ids + na : ids;

		memset(pos, 0, (key_n + 1) * sizeof(*pos));
		for (size_t i = 0; i < n; i++)
			pos[rank[id[i]] + 1]++;
		for (size_t r = 0; r < key_n; r++) {
			sum += pos[r + 1];
			pos[r + 1] = (uint32_t)sum;
		}
		for (size_t i = 0; i < n; i++)
			tmp[pos[rank[id[i]]]++] = v[i];
		memcpy(v, tmp, n * sizeof(*v));
	}
	rc = 0;
out:
	free(tmp);
	free(keys);
	free(rank);
	free(pos);
	free(ids);
	key_ids_free();
	return rc;
}

/* first item of key >= key with lo >= lo */
static size_t lower_bound(const struct item *v, size_t n, uint64_t key, uint64_t lo)
{
	size_t a = 0, b = n;

	while (a < b) {
		size_t mid = a + (b - a) / 2;

		if (v[mid].key < key || (v[mid].key == key && v[mid].lo < lo))
			a = mid + 1;
		else
			b = mid;
	}
	return a;
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
 * Each (sampled initiator I/O, candidate target record) pair allows the
 * offsets in [t.hi - i.hi, t.lo - i.lo]; true pairs all contain the true
 * offset, wrong ones scatter.  Take the point most intervals cover.
 */
static bool estimate_offset(const struct item *iv, size_t ni, const struct item *tv, size_t nt,
			    int64_t prior, int64_t window, size_t samples, int max_cand, int64_t *off, size_t *votes)
{
	size_t step = ni > samples ? ni / samples : 1, ne = 0, cap = 0;
	struct edge *e = NULL;
	int cur = 0, best = 0;
	int64_t best_lo = 0, best_hi = 0;

	for (size_t i = 0; i < ni; i += step) {
		int64_t from = (int64_t)iv[i].lo + prior - window;
		size_t j = lower_bound(tv, nt, iv[i].key, from < 0 ? 0 : (uint64_t)from);

		for (int c = 0; j < nt && tv[j].key == iv[i].key && c < max_cand; j++, c++) {
			int64_t a = (int64_t)tv[j].hi - (int64_t)iv[i].hi - TOLERANCE_NS;
			int64_t b = (int64_t)tv[j].lo - (int64_t)iv[i].lo + TOLERANCE_NS;

			if ((int64_t)tv[j].lo > (int64_t)iv[i].hi + prior + window)
				break;
			if (a > b)
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
	if (!ne) {
		free(e);
		return false;
	}
	qsort(e, ne, sizeof(*e), edge_cmp);
	for (size_t k = 0; k < ne; k++) {
		cur += e[k].d;
		if (e[k].d > 0 && cur > best) {
			best = cur;
			best_lo = e[k].x;
			best_hi = k + 1 < ne ? e[k + 1].x : e[k].x;
		}
	}
	free(e);
	*off = best_lo + (best_hi - best_lo) / 2;
	*votes = best;
	return true;
}

/* controller instance -> cntlid, from the initiator file's header */
static bool cntlid_of(const struct nt_header *h, uint16_t instance, uint16_t *cntlid)
{
	for (uint32_t k = 0; k < h->nctrls; k++)
		if (h->ctrls[k].instance == instance) {
			*cntlid = h->ctrls[k].cntlid;
			return true;
		}
	return false;
}

static int match_files(struct nt_matching *m, const struct nt_input *a, size_t a_first,
		       const struct nt_input *b, size_t b_first)
{
	struct item *iv = NULL, *tv = NULL;
	size_t ni = 0, nt = 0, j = 0;
	int64_t prior, window, off;
	size_t votes;
	int rc = -1;

	iv = malloc((a->n ? a->n : 1) * sizeof(*iv));
	tv = malloc((b->n ? b->n : 1) * sizeof(*tv));
	if (!iv || !tv)
		goto out;
	for (size_t k = a_first; k < m->n_init; k++) {
		const struct ntbpf_rec *r = m->init[k];
		uint16_t cntlid;

		if (r < a->recs || r >= a->recs + a->n)
			break;		/* records of one file are contiguous in m->init */
		if (m->partner[k] || !(r->flags & NTBPF_F_NVME) || !cntlid_of(&a->hdr, r->ctrl, &cntlid))
			continue;
		iv[ni].key = mkkey(cntlid, r->qid, r->cid);
		nt_rec_window(r, &iv[ni].lo, &iv[ni].hi);
		iv[ni++].idx = k;
	}
	for (size_t k = b_first; k < m->n_tgt; k++) {
		const struct ntbpf_rec *r = m->tgt[k];

		if (r < b->recs || r >= b->recs + b->n)
			break;
		if (m->tgt_matched[k])
			continue;
		tv[nt].key = mkkey(r->ctrl, r->qid, r->cid);
		nt_rec_window(r, &tv[nt].lo, &tv[nt].hi);
		tv[nt++].idx = k;
	}
	if (group_by_key(iv, ni, tv, nt))
		goto out;

	/* the same boot: one clock; otherwise the wall clocks say roughly how they relate */
	if (a->hdr.boot_id[0] && !strcmp(a->hdr.boot_id, b->hdr.boot_id)) {
		prior = 0;
		window = 1000000;
	} else {
		prior = ((int64_t)b->hdr.mono_ns - (int64_t)b->hdr.real_ns) -
			((int64_t)a->hdr.mono_ns - (int64_t)a->hdr.real_ns);
		window = 5000000000ll;
	}
	/* coarse over the prior's uncertainty, then fine around what it found */
	if (!estimate_offset(iv, ni, tv, nt, prior, window, COARSE_INITS, COARSE_CANDIDATES, &off, &votes) ||
	    !estimate_offset(iv, ni, tv, nt, off, 1000000, SAMPLE_INITS, FINE_CANDIDATES, &off, &votes)) {
		rc = 0;
		goto out;
	}
	m->offset_ns = off;
	m->offset_votes = votes;
	m->have_offset = true;

	/* in each (cntlid, qid, cid), in time order: the first target record that fits */
	for (size_t i = 0; i < ni; i++) {
		int64_t from = (int64_t)iv[i].lo + off - TOLERANCE_NS;

		if (j >= nt || tv[j].key != iv[i].key || (int64_t)tv[j].lo < from)
			j = lower_bound(tv, nt, iv[i].key, from < 0 ? 0 : (uint64_t)from);
		while (j < nt && tv[j].key == iv[i].key && m->tgt_matched[tv[j].idx])
			j++;
		if (j >= nt || tv[j].key != iv[i].key)
			continue;
		if ((int64_t)tv[j].lo > (int64_t)iv[i].hi + off + TOLERANCE_NS ||
		    (int64_t)tv[j].hi > (int64_t)iv[i].hi + off + TOLERANCE_NS)
			continue;
		m->partner[iv[i].idx] = m->tgt[tv[j].idx];
		m->tgt_matched[tv[j].idx] = true;
		m->matched++;
		j++;
	}
	rc = 0;
out:
	free(iv);
	free(tv);
	return rc;
}

int nt_match_build(struct nt_matching *m, const struct nt_input *ins, int nins)
{
	size_t ni = 0, nt = 0;

	memset(m, 0, sizeof(*m));
	for (int f = 0; f < nins; f++)
		for (size_t k = 0; k < ins[f].n; k++) {
			if (ins[f].recs[k].flags & NTBPF_F_ADMIN)
				continue;
			if (ins[f].recs[k].role == NTBPF_ROLE_TARGET)
				nt++;
			else
				ni++;
		}
	m->init = calloc(ni ? ni : 1, sizeof(*m->init));
	m->partner = calloc(ni ? ni : 1, sizeof(*m->partner));
	m->tgt = calloc(nt ? nt : 1, sizeof(*m->tgt));
	m->tgt_matched = calloc(nt ? nt : 1, sizeof(*m->tgt_matched));
	if (!m->init || !m->partner || !m->tgt || !m->tgt_matched)
		return -1;
	for (int f = 0; f < nins; f++)
		for (size_t k = 0; k < ins[f].n; k++) {
			const struct ntbpf_rec *r = &ins[f].recs[k];

			if (r->flags & NTBPF_F_ADMIN)
				continue;
			if (r->role == NTBPF_ROLE_TARGET)
				m->tgt[m->n_tgt++] = r;
			else
				m->init[m->n_init++] = r;
		}
	/* every initiator file against every target file */
	for (int a = 0; a < nins; a++) {
		size_t a_first = 0;

		if (ins[a].hdr.role != NTBPF_ROLE_INITIATOR || !ins[a].n)
			continue;
		while (a_first < m->n_init && (m->init[a_first] < ins[a].recs || m->init[a_first] >= ins[a].recs + ins[a].n))
			a_first++;
		for (int b = 0; b < nins; b++) {
			size_t b_first = 0;

			if (ins[b].hdr.role != NTBPF_ROLE_TARGET || !ins[b].n)
				continue;
			while (b_first < m->n_tgt && (m->tgt[b_first] < ins[b].recs || m->tgt[b_first] >= ins[b].recs + ins[b].n))
				b_first++;
			if (match_files(m, &ins[a], a_first, &ins[b], b_first))
				return -1;
		}
	}
	for (size_t k = 0; k < m->n_init; k++) {
		uint16_t c;
		int f;

		if (m->partner[k] || !(m->init[k]->flags & NTBPF_F_NVME))
			continue;
		for (f = 0; f < nins; f++)
			if (m->init[k] >= ins[f].recs && m->init[k] < ins[f].recs + ins[f].n)
				break;
		if (f < nins && !cntlid_of(&ins[f].hdr, m->init[k]->ctrl, &c))
			m->no_cntlid++;
	}
	return 0;
}

void nt_match_free(struct nt_matching *m)
{
	free(m->init);
	free(m->partner);
	free(m->tgt);
	free(m->tgt_matched);
	memset(m, 0, sizeof(*m));
}
