// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * matchstream.c - streaming pairing (match.h: nt_smatch_run, nt_smatch_fleet; report's files):
 * one initiator file against one target file, both read once, side by side; struct sm holds the
 * target records in a ring until their initiator I/O comes or the window passes.  Segments,
 * estimates and first fit are the in-memory engine's (matchmem.c), from match.c, decision for
 * decision; a fleet runs every file pair, a bit per record saying what an earlier run paired.
 */
#include <stdlib.h>
#include <string.h>
#include "match_int.h"
#include "recfile.h"
#include "sysinfo.h"

#define LOOKAHEAD 16	/* > the distance sm_targets looks ahead */

/* a target record is let go this far below the earliest start a query can still have */
#define HORIZON_SLACK (2 * SEG_WINDOW + TOLERANCE_NS)

struct sm {
	struct nt_matching *m;
	const struct nt_smatch_ops *ops;
	const struct nt_ssrc *is, *ts;
	size_t psz;
	int64_t win, prior, window;
	bool any_shared;
	struct keys keys;
	struct skey *sk;		/* per key id: the target items held */
	size_t skcap;
	size_t since_sweep;		/* records read or paired since the last sweep */
	/*
	 * The held target records' payloads, in file order: written in
	 * sequence, let go when paired or let go of; [rhead, rtail) counted
	 * from the start, rcap a power of two
	 */
	unsigned char *ring, *dead;
	uint64_t *rlo;			/* ... and their starts */
	uint64_t rhead, rtail, rcap;
	int64_t tfloor;			/* no search looks below it (target clock; only moves forward) */
	/*
	 * initiator items read: ib[ipend, iread) not paired yet; the segment being
	 * formed starts at seg_from, its end searched from seg_scan on
	 */
	struct nt_mitem *ib;
	unsigned char *ipay;
	size_t ipend, seg_from, seg_scan, iread, icap;
	bool i_eof, t_eof;
	const struct ntbpf_rec *tr;	/* the rest of the target chunk being read */
	size_t trn;
	int64_t max_ihi, max_thi;	/* the latest completion read on each side (keyed records) */
	bool have_ihi, have_thi;
	struct seg *seg;
	size_t nseg, segcap, seg_at;	/* segments found, their room, the one offset_at last used */
	int64_t first_off;
	size_t votes;
	int scouts;			/* first searches through a second reader (sm_scout) */
	unsigned char *tmp;		/* one payload */
	const struct fleet_run *fl;	/* one run of a fleet (nt_smatch_fleet), else NULL */
	const struct nt_ssrc *scout;	/* the target's source that can read again (sm_scout) */
	uint64_t ipos, tpos;		/* position in its file of the next record read */
	/* target records looked ahead at, by position % LOOKAHEAD: key + 1 (0: none) and its id */
	uint64_t la_key[LOOKAHEAD];
	uint32_t la_kid[LOOKAHEAD];
	size_t posoff;			/* fleet: where in a slot the record's position is kept */
};

/* a set of record positions (paired in an earlier run of a fleet) */
struct bits {
	uint64_t *w;
	size_t nw;
};

static bool bit_get(const struct bits *b, uint64_t pos)
{
	return pos / 64 < b->nw && (b->w[pos / 64] >> (pos % 64) & 1);
}

static int bit_set(struct bits *b, uint64_t pos)
{
	if (pos / 64 >= b->nw) {
		size_t nw = b->nw ? b->nw * 2 : 1024;
		uint64_t *w;

		while (nw <= pos / 64)
			nw *= 2;
		w = realloc(b->w, nw * sizeof(*w));
		if (!w)
			return -1;
		memset(w + b->nw, 0, (nw - b->nw) * sizeof(*w));
		b->w = w;
		b->nw = nw;
	}
	b->w[pos / 64] |= 1ull << (pos % 64);
	return 0;
}

/*
 * One (initiator file, target file) run of a fleet: records paired in an
 * earlier run are passed over (as the whole-file matcher passes over them),
 * counted in a file's first run, and let out unpaired in its last.
 */
struct fleet_run {
	struct bits *idone, *tdone;
	bool count_i, count_t, last_i, last_t;
};

#define COUNT_I(s) (!(s)->fl || (s)->fl->count_i)
#define COUNT_T(s) (!(s)->fl || (s)->fl->count_t)
#define LAST_I(s) (!(s)->fl || (s)->fl->last_i)
#define LAST_T(s) (!(s)->fl || (s)->fl->last_t)
#define DONE_ITEM (UINT32_MAX - 1)	/* an ib item's idx: paired in an earlier run */

static inline uint64_t *slot_pos(const struct sm *s, const void *slot)
{
	return (uint64_t *)((unsigned char *)slot + s->posoff);
}

/* a record that is nobody's partner: out at once, alone */
static int sm_alone(struct sm *s, const struct ntbpf_rec *r, const struct nt_header *h, enum nt_side side)
{
	bool tgt = side == NT_SIDE_TGT;

	if (s->ops->take(s->ops->ctx, r, h, tgt ? NTBPF_ROLE_TARGET : NTBPF_ROLE_INITIATOR, s->tmp))
		return -1;
	return s->ops->emit(s->ops->ctx, tgt ? NULL : s->tmp, tgt ? s->tmp : NULL);
}

/* an initiator I/O on a controller sharing its cntlid, paired (or not) without a port on one side */
static void sm_count_shared(struct sm *s, const struct nt_header *h, const struct nt_mitem *x,
			    const struct nt_mitem *partner)
{
	if (s->any_shared && x->kid != NT_NO_KEY && nt_cntlid_dup(h, (uint16_t)(x->kq >> 32)) &&
	    (!port_of(x) || (partner && !port_of(partner))))
		s->m->shared_cntlid++;
}

/* every record of one file, alone (no file of the other side) */
static int sm_all_alone(struct sm *s, const struct nt_ssrc *src)
{
	const struct ntbpf_rec *r;
	size_t n;

	while ((n = src->chunk(src->ctx, &r)))
		for (size_t k = 0; k < n; k++) {
			struct nt_mitem x;
			bool nc;
			enum nt_side side = nt_mitem_of(&r[k], src->hdr, &x, &nc);

			if (side == NT_SIDE_ADMIN) {
				s->m->admin++;
				continue;
			}
			if (side == NT_SIDE_TGT) {
				s->m->n_tgt++;
			} else {
				s->m->n_init++;
				s->m->no_cntlid += nc;
				sm_count_shared(s, src->hdr, &x, NULL);
			}
			if (sm_alone(s, &r[k], src->hdr, side))
				return -1;
		}
	return 0;
}

/* room in a per-key array for key id kid (the new entries zeroed): 0, or -1 */
static __attribute__((noinline)) int skeys_grow(struct skey **sk, size_t *skcap, uint32_t kid)
{
	size_t ncap = *skcap ? *skcap * 2 : 1024;
	struct skey *p;

	while (ncap <= kid)
		ncap *= 2;
	p = realloc(*sk, ncap * sizeof(*p));
	if (!p)
		return -1;
	memset(p + *skcap, 0, (ncap - *skcap) * sizeof(*p));
	*sk = p;
	*skcap = ncap;
	return 0;
}

/* key id kid's entry in a per-key array, made if new (zeroed); NULL: out of memory.  Inline: twice per I/O */
static inline struct skey *skey_of(struct skey **sk, size_t *skcap, uint32_t kid)
{
	if (__builtin_expect(kid >= *skcap, 0) && skeys_grow(sk, skcap, kid))
		return NULL;
	return &(*sk)[kid];
}

/* room for more items in one key's list: 0, or -1 */
static int skey_grow(struct skey *k)
{
	uint32_t ncap = k->cap ? k->cap * 2 : 8;
	struct nt_mitem *v = realloc(k->v, ncap * sizeof(*v));

	if (!v)
		return -1;
	k->v = v;
	k->cap = ncap;
	return 0;
}

static inline unsigned char *ring_at(const struct sm *s, uint64_t p)
{
	return s->ring + (p & (s->rcap - 1)) * s->psz;
}

/* the ring place of a held item */
static inline uint64_t ring_pos(const struct sm *s, const struct nt_mitem *x)
{
	return s->rhead + (uint32_t)(x->kid - (uint32_t)s->rhead);
}

/* a held item's payload is no longer needed (paired, or let go of): the ring's front moves past the dead */
static void ring_free(struct sm *s, const struct nt_mitem *x)
{
	s->dead[ring_pos(s, x) & (s->rcap - 1)] = 1;
	while (s->rhead < s->rtail && s->dead[s->rhead & (s->rcap - 1)])
		s->rhead++;
}

static int ring_grow(struct sm *s)
{
	uint64_t ncap = s->rcap ? s->rcap * 2 : 4096;
	unsigned char *ring = malloc(ncap * s->psz), *dead = malloc(ncap);
	uint64_t *rlo = malloc(ncap * sizeof(*rlo));

	if (!ring || !dead || !rlo || ncap >= 1ull << 31) {
		free(ring);
		free(dead);
		free(rlo);
		return -1;
	}
	nt_advise_huge(ring, ncap * s->psz);	/* written in sequence, read back at random */
	nt_advise_huge(rlo, ncap * sizeof(*rlo));
	for (uint64_t p = s->rhead; p < s->rtail; p++) {
		memcpy(ring + (p & (ncap - 1)) * s->psz, ring_at(s, p), s->psz);
		dead[p & (ncap - 1)] = s->dead[p & (s->rcap - 1)];
		rlo[p & (ncap - 1)] = s->rlo[p & (s->rcap - 1)];
	}
	free(s->ring);
	free(s->dead);
	free(s->rlo);
	s->ring = ring;
	s->dead = dead;
	s->rlo = rlo;
	s->rcap = ncap;
	return 0;
}

/* hold a target item, in lo order within its key (file order is completion order: nearly sorted) */
static int sm_hold(struct sm *s, const struct nt_mitem *x, const struct ntbpf_rec *r)
{
	uint32_t la = (uint32_t)(s->tpos - 1) % LOOKAHEAD, kid, j;
	struct skey *k;
	uint64_t p;

	/* its key's id, found when it was looked ahead at (sm_targets), else now */
	if (s->la_key[la] == (x->kq & KEY_MASK) + 1 && s->la_kid[la] != NT_NO_KEY)
		kid = s->la_kid[la];
	else
		kid = key_add(&s->keys, x->kq & KEY_MASK);

	if (kid == NT_NO_KEY || !(k = skey_of(&s->sk, &s->skcap, kid)))
		return -1;
	if (k->n == k->cap)	/* drop those below the horizon: let go of (or paired) */
		k->head = (uint32_t)lower_bound(k->v, k->head, k->n, s->tfloor < 0 ? 0 : (uint64_t)s->tfloor);
	if (k->n == k->cap && k->head && k->head >= k->cap / 4) {	/* their room (else grow: O(1) a record) */
		memmove(k->v, k->v + k->head, (k->n - k->head) * sizeof(*k->v));
		k->n -= k->head;
		k->cur = k->cur > k->head ? k->cur - k->head : 0;
		k->head = 0;
	}
	if (k->n == k->cap && skey_grow(k))
		return -1;
	if (s->rtail - s->rhead == s->rcap && ring_grow(s))
		return -1;
	p = s->rtail++;
	__builtin_prefetch(ring_at(s, p + 32), 1);	/* written next: out of cache since the ring last came round */
	s->dead[p & (s->rcap - 1)] = 0;
	s->rlo[p & (s->rcap - 1)] = x->lo;
	j = k->n;
	if (j > k->head && k->last > x->lo) {
		while (j > k->head && k->v[j - 1].lo > x->lo)
			j--;
		memmove(k->v + j + 1, k->v + j, (k->n - j) * sizeof(*k->v));
	} else {
		k->last = x->lo;
	}
	k->v[j] = *x;
	k->v[j].idx = 0;
	k->v[j].kid = (uint32_t)p;
	k->n++;
	s->since_sweep++;
	if (s->posoff)
		*slot_pos(s, ring_at(s, p)) = s->tpos - 1;
	return s->ops->take(s->ops->ctx, r, s->ts->hdr, NTBPF_ROLE_TARGET, ring_at(s, p));
}

/* read target records until one completing at or after `until` (target clock) was read, or the end */
static int sm_targets(struct sm *s, int64_t until)
{
	while (!s->t_eof && (!s->have_thi || s->max_thi < until)) {
		const struct ntbpf_rec *r;
		struct nt_mitem x;
		enum nt_side side;
		bool nc;

		if (!s->trn && !(s->trn = s->ts->chunk(s->ts->ctx, &s->tr))) {
			s->t_eof = true;
			break;
		}
		r = s->tr++;
		s->trn--;
		if (s->trn > 8 && s->tr[8].role == NTBPF_ROLE_TARGET) {
			/* where a record read soon goes in its key's list: out of cache since that list last grew */
			const struct ntbpf_rec *a = &s->tr[8];
			uint64_t key = mkkey(a->ctrl, a->qid, a->cid);
			uint32_t kid = key_find(&s->keys, key), la = (uint32_t)(s->tpos + 9) % LOOKAHEAD;

			s->la_key[la] = key + 1;	/* sm_hold takes its id from here */
			s->la_kid[la] = kid;
			if (kid < s->skcap && s->sk[kid].n < s->sk[kid].cap)
				__builtin_prefetch(&s->sk[kid].v[s->sk[kid].n], 1);
		}
		side = nt_mitem_of(r, s->ts->hdr, &x, &nc);
		s->tpos++;
		if (side == NT_SIDE_ADMIN) {
			s->m->admin += COUNT_T(s);
			continue;
		}
		if (side == NT_SIDE_INIT) {	/* an initiator's record in the target's file */
			if (COUNT_T(s)) {
				s->m->n_init++;
				s->m->no_cntlid += nc;
				if (sm_alone(s, r, s->ts->hdr, side))
					return -1;
			}
			continue;
		}
		s->m->n_tgt += COUNT_T(s);
		if (s->fl && bit_get(s->fl->tdone, s->tpos - 1))
			continue;	/* paired in an earlier run */
		/* everything starting before max_thi - win was promised read: this one is late */
		if (s->have_thi && (int64_t)x.lo < s->max_thi - s->win)
			s->m->slow_tgt += COUNT_T(s);
		if (!s->have_thi || (int64_t)x.hi > s->max_thi)
			s->max_thi = (int64_t)x.hi;
		s->have_thi = true;
		if (sm_hold(s, &x, r))
			return -1;
	}
	return 0;
}

static int sm_push_init(struct sm *s, const struct nt_mitem *x, const struct ntbpf_rec *r, bool done)
{
	if (s->iread == s->icap && s->ipend && s->ipend >= s->icap / 2) {	/* the paired ones' room (else grow) */
		memmove(s->ib, s->ib + s->ipend, (s->iread - s->ipend) * sizeof(*s->ib));
		memmove(s->ipay, s->ipay + s->ipend * s->psz, (s->iread - s->ipend) * s->psz);
		s->iread -= s->ipend;
		s->seg_from -= s->ipend;
		s->seg_scan -= s->ipend;
		s->ipend = 0;
	}
	if (s->iread == s->icap) {
		size_t ncap = s->icap ? s->icap * 2 : 4096;
		struct nt_mitem *v = realloc(s->ib, ncap * sizeof(*v));
		unsigned char *pay;

		if (!v)
			return -1;
		s->ib = v;
		pay = realloc(s->ipay, ncap * s->psz);
		if (!pay)
			return -1;
		s->ipay = pay;
		s->icap = ncap;
	}
	s->ib[s->iread] = *x;
	s->ib[s->iread].idx = 0;
	if (x->kid != NT_NO_KEY) {	/* its key's id (the key may have no target record yet) */
		uint32_t kid = key_add(&s->keys, x->kq & KEY_MASK);

		if (kid == NT_NO_KEY || !skey_of(&s->sk, &s->skcap, kid))
			return -1;
		s->ib[s->iread].idx = kid;
	}
	if (done) {
		s->ib[s->iread++].idx = DONE_ITEM;
		return 0;
	}
	if (s->posoff)
		*slot_pos(s, s->ipay + s->iread * s->psz) = s->ipos - 1;
	return s->ops->take(s->ops->ctx, r, s->is->hdr, NTBPF_ROLE_INITIATOR, s->ipay + s->iread++ * s->psz);
}

/* the next initiator chunk into ib */
static int sm_read_init(struct sm *s)
{
	const struct ntbpf_rec *r;
	size_t n = s->is->chunk(s->is->ctx, &r);

	if (!n)
		s->i_eof = true;
	for (size_t k = 0; k < n; k++) {
		struct nt_mitem x;
		bool nc;
		enum nt_side side = nt_mitem_of(&r[k], s->is->hdr, &x, &nc);
		bool done;

		s->ipos++;
		if (side == NT_SIDE_ADMIN) {
			s->m->admin += COUNT_I(s);
			continue;
		}
		if (side == NT_SIDE_TGT) {	/* a target's record in the initiator's file */
			if (COUNT_I(s)) {
				s->m->n_tgt++;
				if (sm_alone(s, &r[k], s->is->hdr, side))
					return -1;
			}
			continue;
		}
		if (COUNT_I(s)) {
			s->m->n_init++;
			s->m->no_cntlid += nc;
		}
		done = s->fl && bit_get(s->fl->idone, s->ipos - 1);
		if (done)	/* paired in an earlier run: in the segments, never a voter or paired again */
			x.kid = NT_NO_KEY;
		if (x.kid != NT_NO_KEY) {
			if (s->have_ihi && (int64_t)x.lo < s->max_ihi - s->win)
				s->m->slow_init += COUNT_I(s);
			if (!s->have_ihi || (int64_t)x.hi > s->max_ihi)
				s->max_ihi = (int64_t)x.hi;
			s->have_ihi = true;
		}
		if (sm_push_init(s, &x, &r[k], done))
			return -1;
	}
	return 0;
}

/* the segment starting at seg_from ends before *to (the whole-file rule); false: read more first */
static bool sm_seg_end(struct sm *s, size_t *to)
{
	size_t from = s->seg_from, t = s->seg_scan > from + 1 ? s->seg_scan : from + 1;
	int64_t t_end = (int64_t)s->ib[from].lo + SEG_NS;

	while (t < s->iread && t - from < SEG_INITS && ((int64_t)s->ib[t].lo < t_end || t - from < 64))
		t++;
	s->seg_scan = t;
	*to = t;
	return t < s->iread || t - from >= SEG_INITS || s->i_eof;
}

/* read the target records a query over ib[from, to) at offset p +- w may look at */
static int sm_need(struct sm *s, size_t from, size_t to, int64_t p, int64_t w)
{
	int64_t hi = INT64_MIN;

	for (size_t i = from; i < to; i++)
		if (s->ib[i].kid != NT_NO_KEY && (int64_t)s->ib[i].hi > hi)
			hi = (int64_t)s->ib[i].hi;
	return hi == INT64_MIN ? 0 : sm_targets(s, hi + p + w + s->win);
}

/* the scout's keys, in lo order (no payloads) */
static int scout_add(struct skey **sk, size_t *skcap, uint32_t kid, const struct nt_mitem *x)
{
	struct skey *k = skey_of(sk, skcap, kid);
	uint32_t j;

	if (!k || (k->n == k->cap && skey_grow(k)))
		return -1;
	for (j = k->n; j > 0 && k->v[j - 1].lo > x->lo; j--)
		;
	memmove(k->v + j + 1, k->v + j, (k->n - j) * sizeof(*k->v));
	k->v[j] = *x;
	k->n++;
	return 0;
}

/*
 * The first coarse search between hosts booted apart, through a second
 * reader of the target's records: it keeps only those of the sampled I/Os'
 * keys within the prior's uncertainty (the candidates the search looks at,
 * all of them), where the main reader would hold 5 s of every record.  1:
 * found (*o, *v); 0: nothing found; -1: out of memory; -2: cannot read again.
 */
static int sm_scout(struct sm *s, size_t from, size_t to, int64_t *o, size_t *v)
{
	size_t ni = to - from, step = ni > COARSE_INITS ? ni / COARSE_INITS : 1, skcap = 0, n;
	int64_t lo_min = INT64_MAX, hi_max = INT64_MIN, seen_hi = INT64_MIN;
	struct keys keys = { 0 };
	struct skey *sk = NULL;
	struct tview tw = { 0 };
	struct nt_ssrc again;
	const struct ntbpf_rec *r;
	int rc = -1;

	for (size_t i = from; i < to; i += step) {
		const struct nt_mitem *x = &s->ib[i];

		if (x->kid == NT_NO_KEY)
			continue;
		if (key_add(&keys, x->kq & KEY_MASK) == NT_NO_KEY)
			goto out;
		lo_min = (int64_t)x->lo + s->prior - s->window < lo_min ? (int64_t)x->lo + s->prior - s->window : lo_min;
		hi_max = (int64_t)x->hi + s->prior + s->window > hi_max ? (int64_t)x->hi + s->prior + s->window : hi_max;
	}
	if (!keys.n) {
		rc = 0;
		goto out;
	}
	if (s->scout->reopen(s->scout->ctx, &again)) {
		rc = -2;
		goto out;
	}
	if (!again.hdr)
		again.hdr = s->scout->hdr;
	while (seen_hi < hi_max + s->win && (n = again.chunk(again.ctx, &r)))
		for (size_t k = 0; k < n; k++) {
			struct nt_mitem x;
			bool nc;
			uint32_t kid;

			if (nt_mitem_of(&r[k], again.hdr, &x, &nc) != NT_SIDE_TGT)
				continue;
			seen_hi = (int64_t)x.hi > seen_hi ? (int64_t)x.hi : seen_hi;
			kid = key_find(&keys, x.kq & KEY_MASK);
			if (kid == NT_NO_KEY || (int64_t)x.lo < lo_min || (int64_t)x.lo > hi_max)
				continue;
			if (scout_add(&sk, &skcap, kid, &x)) {
				again.close(&again);
				goto out;
			}
		}
	again.close(&again);
	if (!skey_of(&sk, &skcap, (uint32_t)keys.n - 1))
		goto out;	/* every key has its (maybe empty) vector */
	tw.sk = sk;
	rc = nt_estimate_offset(s->m, s->ib, from, to, &keys, &tw, s->prior, s->window, COARSE_INITS, COARSE_CANDIDATES,
			        o, v);
out:
	for (size_t k = 0; k < skcap; k++)
		free(sk[k].v);
	free(sk);
	nt_keys_free(&keys);
	return rc;
}

/* the clock offset over ib[from, to), as match_files finds it for a segment */
static int sm_segment(struct sm *s, size_t from, size_t to)
{
	struct tview tw = { 0 };
	int64_t o, mid;
	size_t v;

	if (!s->nseg) {
		/*
		 * Coarse over the prior's uncertainty.  Where it finds nothing,
		 * the whole-file path tries the whole file; here the next
		 * segment tries (the I/Os of this one are not paired)
		 */
		int sc = s->scout->reopen && s->window > SEG_WINDOW && s->scouts < 8 ? sm_scout(s, from, to, &o, &v) : -2;

		if (sc == -1)
			return -1;
		if (sc == 0)
			return 0;
		s->scouts += sc != -2;	/* a few tries: each reads from the start */
		if (sc == -2) {	/* held in memory: up to the prior's uncertainty ahead */
			if (sm_need(s, from, to, s->prior, s->window))
				return -1;
			tw.sk = s->sk;
			if (!nt_estimate_offset(s->m, s->ib, from, to, &s->keys, &tw, s->prior, s->window, COARSE_INITS,
					        COARSE_CANDIDATES, &o, &v))
				return 0;
		}
	} else {
		o = s->seg[s->nseg - 1].off;
	}
	if (sm_need(s, from, to, o, SEG_WINDOW))
		return -1;
	tw.sk = s->sk;
	if (!nt_estimate_offset(s->m, s->ib, from, to, &s->keys, &tw, o, SEG_WINDOW, s->nseg ? SEG_SAMPLES : SAMPLE_INITS,
			        FINE_CANDIDATES, &o, &v))
		return 0;
	s->votes += v;
	mid = (int64_t)s->ib[from + (to - from) / 2].lo;
	if (s->nseg && mid <= s->seg[s->nseg - 1].at)
		return 0;	/* a long I/O in the middle: keep the points in time order */
	if (s->nseg == s->segcap) {
		size_t ncap = s->segcap ? s->segcap * 2 : 64;
		struct seg *p = realloc(s->seg, ncap * sizeof(*p));

		if (!p)
			return -1;
		s->seg = p;
		s->segcap = ncap;
	}
	if (!s->nseg)
		s->first_off = o;
	s->seg[s->nseg] = (struct seg){ .at = mid, .off = o };
	if (s->nseg)
		s->seg[s->nseg - 1].slope = (double)(o - s->seg[s->nseg - 1].off) / (double)(mid - s->seg[s->nseg - 1].at);
	s->nseg++;
	return 0;
}

/* pair ib[ipend]: the first target item of its key that fits, at the offset interpolated for its time */
static int sm_pair_one(struct sm *s)
{
	const struct nt_mitem *x = &s->ib[s->ipend];
	const void *ipay = s->ipay + s->ipend * s->psz, *tpay = NULL;
	struct nt_mitem *partner = NULL;

	if (x->kid == NT_NO_KEY && x->idx == DONE_ITEM)
		return 0;	/* went out in an earlier run */
	if (x->kid != NT_NO_KEY && s->nseg) {
		int64_t off = offset_at(s->seg, s->nseg, &s->seg_at, (int64_t)x->lo);
		int64_t from = (int64_t)x->lo + off - TOLERANCE_NS;
		uint16_t port = port_of(x);

		if (from < s->tfloor)	/* a slow one: what started before h may have gone out alone */
			from = s->tfloor;
		uint32_t kid;

		if (sm_targets(s, (int64_t)x->hi + off + TOLERANCE_NS + s->win))
			return -1;
		kid = x->idx;
		{
			struct skey *k = &s->sk[kid];
			size_t j;

			/* this key's I/Os come in time order: from where its last search ended */
			k->cur = k->cur < k->head ? k->head : k->cur > k->n ? k->n : k->cur;
			j = seek_from(k->v, k->head, k->n, k->cur, from < 0 ? 0 : (uint64_t)from);
			k->cur = (uint32_t)j;

			while (j < k->n && ((k->v[j].idx & PAIRED) || !same_conn(port, port_of(&k->v[j]))))
				j++;
			if (j < k->n && (int64_t)k->v[j].lo <= (int64_t)x->hi + off + TOLERANCE_NS &&
			    (int64_t)k->v[j].hi <= (int64_t)x->hi + off + TOLERANCE_NS) {
				partner = &k->v[j];
				partner->idx |= PAIRED;
				tpay = ring_at(s, ring_pos(s, partner));
				s->m->matched++;
				s->m->by_port += port && port_of(partner);
			}
		}
	}
	s->since_sweep++;
	if (s->fl && partner && (bit_set(s->fl->idone, *slot_pos(s, ipay)) || bit_set(s->fl->tdone, *slot_pos(s, tpay))))
		return -1;
	if (!partner && !LAST_I(s))
		return 0;	/* a later run may pair it */
	sm_count_shared(s, s->is->hdr, x, partner);
	if (s->ops->emit(s->ops->ctx, ipay, tpay))
		return -1;
	if (partner)
		ring_free(s, partner);
	return 0;
}

/*
 * Pair the estimated segments' I/Os, in file order, once the offset at
 * their time is final (a later segment's point lies after it), or at the
 * end.  Where the estimates stall (no target records for a while), an I/O
 * more than 4 full segments behind goes with the offset known (none: it
 * stays unpaired) rather than be held.
 */
static int sm_pair_ready(struct sm *s, bool final)
{
	while (s->ipend < s->seg_from) {
		const struct nt_mitem *x = &s->ib[s->ipend];

		/*
		 * The partners of the next ones come from W ago: out of cache
		 * (only hints, never read).  In steps: a key's state 16 ahead,
		 * its list 8 ahead (the search reads v[cur - 1] to v[cur + 1]:
		 * the partner is usually the one after the last), the partner's
		 * payload and dead flag 4 ahead.
		 */
		if (s->ipend + 16 < s->seg_from && s->ib[s->ipend + 16].kid != NT_NO_KEY)
			__builtin_prefetch(&s->sk[s->ib[s->ipend + 16].idx]);
		if (s->ipend + 8 < s->seg_from && s->ib[s->ipend + 8].kid != NT_NO_KEY) {
			const struct skey *k = &s->sk[s->ib[s->ipend + 8].idx];

			if (k->cur < k->n) {
				const char *a = (const char *)&k->v[k->cur > k->head ? k->cur - 1 : k->cur];
				const char *b = (const char *)&k->v[k->cur + 1 < k->n ? k->cur + 2 : k->n] - 1;

				__builtin_prefetch(a);
				__builtin_prefetch(b);
				if (b - a >= 64)
					__builtin_prefetch(a + 64);
			}
		}
		if (s->ipend + 4 < s->seg_from && s->ib[s->ipend + 4].kid != NT_NO_KEY) {
			const struct skey *k = &s->sk[s->ib[s->ipend + 4].idx];
			uint32_t j = k->cur + 1 < k->n ? k->cur + 1 : k->cur;

			if (j < k->n && s->rcap) {
				uint64_t p = ring_pos(s, &k->v[j]);
				const unsigned char *t = ring_at(s, p);

				__builtin_prefetch(t);
				__builtin_prefetch(t + s->psz - 1);
				__builtin_prefetch(&s->dead[p & (s->rcap - 1)], 1);
			}
		}
		bool ready = final || x->kid == NT_NO_KEY || (s->nseg && s->seg[s->nseg - 1].at > (int64_t)x->lo) ||
			     s->seg_from - s->ipend > 4 * SEG_INITS;

		if (!ready)
			break;
		if (sm_pair_one(s))
			return -1;
		s->ipend++;
	}
	return 0;
}

/*
 * Let go of the target records no initiator I/O still to come can pair or
 * vote with: those starting before the earliest start of one held or to be
 * read (max_ihi - window: a later one is slow), at the offset there, less
 * the slack of a segment's search and of 1000 ppm of drift over the window.
 * The horizon h only moves forward; the unpaired below it go out alone, in
 * ring (file) order; the key lists drop theirs lazily (sm_hold), and no
 * search looks below h.
 */
static int sm_sweep(struct sm *s)
{
	int64_t lo = s->max_ihi - s->win, h;
	size_t k;

	if (!s->have_ihi)
		return 0;
	for (size_t i = s->ipend; i < s->iread; i++)
		if (s->ib[i].kid != NT_NO_KEY && (int64_t)s->ib[i].lo < lo)
			lo = (int64_t)s->ib[i].lo;
	if (s->nseg) {
		size_t at = 0;
		int64_t o = offset_at(s->seg, s->nseg, &at, lo);

		h = lo + (o < s->seg[s->nseg - 1].off ? o : s->seg[s->nseg - 1].off) - HORIZON_SLACK - s->win / 1000;
		/* the segment points before lo's are no longer needed: memory stays flat */
		for (k = 0; k + 1 < s->nseg && s->seg[k + 1].at <= lo; k++)
			;
		if (k) {
			memmove(s->seg, s->seg + k, (s->nseg - k) * sizeof(*s->seg));
			s->nseg -= k;
			s->seg_at = 0;
		}
	} else {
		h = lo + s->prior - s->window - HORIZON_SLACK;
	}
	if (h > s->tfloor)
		s->tfloor = h;
	while (s->rhead < s->rtail) {
		uint64_t p = s->rhead & (s->rcap - 1);

		if (!s->dead[p]) {
			if ((int64_t)s->rlo[p] >= s->tfloor)
				break;
			if (LAST_T(s) && s->ops->emit(s->ops->ctx, NULL, s->ring + p * s->psz))
				return -1;
		}
		s->rhead++;
	}
	s->since_sweep = 0;
	return 0;
}

/* a target-file record read after the initiator's end: nobody's partner in this run */
static int sm_late_target(struct sm *s, const struct ntbpf_rec *r)
{
	struct nt_mitem x;
	bool nc;
	enum nt_side side = nt_mitem_of(r, s->ts->hdr, &x, &nc);

	s->tpos++;
	if (side == NT_SIDE_ADMIN) {
		s->m->admin += COUNT_T(s);
		return 0;
	}
	if (side == NT_SIDE_TGT) {
		s->m->n_tgt += COUNT_T(s);
		if (!LAST_T(s) || (s->fl && bit_get(s->fl->tdone, s->tpos - 1)))
			return 0;
	} else {
		if (!COUNT_T(s))
			return 0;
		s->m->n_init++;
		s->m->no_cntlid += nc;
	}
	return sm_alone(s, r, s->ts->hdr, side);
}

/* the end: every target item held and every record not read yet goes out */
static int sm_drain(struct sm *s)
{
	for (; s->rhead < s->rtail; s->rhead++)
		if (!s->dead[s->rhead & (s->rcap - 1)] && LAST_T(s) &&
		    s->ops->emit(s->ops->ctx, NULL, ring_at(s, s->rhead)))
			return -1;
	while (!s->t_eof) {
		for (; s->trn; s->trn--, s->tr++)
			if (sm_late_target(s, s->tr))
				return -1;
		if (!(s->trn = s->ts->chunk(s->ts->ctx, &s->tr)))
			s->t_eof = true;
	}
	return 0;
}

static bool headers_share_cntlid(const struct nt_header *const *h, int n)
{
	for (int f = 0; f < n; f++)
		for (uint32_t k = 0; h[f] && k < h[f]->nctrls; k++)
			if (nt_cntlid_shared(h[f], (uint16_t)h[f]->ctrls[k].instance, h[f]->ctrls[k].cntlid))
				return true;
	return false;
}

static int sm_run(struct nt_matching *m, const struct nt_ssrc *init, const struct nt_ssrc *tgt, uint64_t window_ns,
		  const struct nt_smatch_ops *ops, const struct fleet_run *fl, const struct nt_ssrc *scout)
{
	const struct nt_header *hs[2] = { init ? init->hdr : NULL, tgt ? tgt->hdr : NULL };
	struct sm s = { .m = m, .ops = ops, .is = init, .ts = tgt, .psz = ops->payload ? ops->payload : 1, .tfloor = INT64_MIN,
			.win = (int64_t)(window_ns > INT64_MAX / 4 ? INT64_MAX / 4 : window_ns), .fl = fl,
			.scout = scout ? scout : tgt };
	int rc = -1;

	if (fl) {	/* each slot keeps its record's position too */
		s.posoff = (s.psz + 7) & ~(size_t)7;
		s.psz = s.posoff + sizeof(uint64_t);
	}

	s.tmp = malloc(s.psz);
	if (!s.tmp)
		return -1;
	s.any_shared = headers_share_cntlid(hs, 2);
	m->window_ns = window_ns;
	if (!init || !tgt) {
		rc = sm_all_alone(&s, init ? init : tgt);
		free(s.tmp);
		return rc;
	}
	nt_prior_of(init->hdr, tgt->hdr, &s.prior, &s.window);
	for (;;) {
		size_t to;

		while (s.seg_from < s.iread && sm_seg_end(&s, &to)) {
			if (sm_segment(&s, s.seg_from, to))
				goto out;
			s.seg_from = s.seg_scan = to;
			if (sm_pair_ready(&s, false))
				goto out;
			if (s.since_sweep >= 4096 && sm_sweep(&s))
				goto out;
		}
		if (s.i_eof)
			break;
		if (sm_read_init(&s))
			goto out;
	}
	if (sm_pair_ready(&s, true) || sm_drain(&s))
		goto out;
	if (s.nseg) {
		m->have_offset = true;
		m->offset_ns = s.first_off;
		m->offset_drift_ns = s.seg[s.nseg - 1].off - s.first_off;
		m->offset_votes = s.votes;
	}
	rc = 0;
out:
	for (size_t k = 0; k < s.skcap; k++) {
		free(s.sk[k].v);
	}
	free(s.sk);
	nt_keys_free(&s.keys);
	free(s.ib);
	free(s.ipay);
	free(s.ring);
	free(s.dead);
	free(s.rlo);
	free(s.seg);
	free(s.tmp);
	return rc;
}

int nt_smatch_run(struct nt_matching *m, const struct nt_ssrc *init, const struct nt_ssrc *tgt, uint64_t window_ns,
		  const struct nt_smatch_ops *ops)
{
	return sm_run(m, init, tgt, window_ns, ops, NULL, NULL);
}

int nt_smatch_fleet(struct nt_matching *m, struct nt_ssrc *srcs, int n, uint64_t window_ns,
		    const struct nt_smatch_ops *ops)
{
	struct bits *done = calloc(n ? n : 1, sizeof(*done));
	int a0 = -1, a1 = -1, b0 = -1, b1 = -1, rc = -1;

	if (!done)
		return -1;
	for (int i = 0; i < n; i++) {
		struct nt_ssrc again;

		if (!srcs[i].reopen || srcs[i].reopen(srcs[i].ctx, &again)) {
			rc = -2;	/* a run reads each file again: regular files only */
			goto out;
		}
		again.close(&again);
		if (srcs[i].hdr->role == NTBPF_ROLE_INITIATOR) {
			a1 = i;
			a0 = a0 < 0 ? i : a0;
		} else if (srcs[i].hdr->role == NTBPF_ROLE_TARGET) {
			b1 = i;
			b0 = b0 < 0 ? i : b0;
		}
	}
	/* initiator file a against target file b, every pair, in file order: as nt_match_items */
	for (int a = a0; a0 >= 0 && b0 >= 0 && a <= a1; a++)
		for (int b = b0; srcs[a].hdr->role == NTBPF_ROLE_INITIATOR && b <= b1; b++) {
			struct fleet_run fr = { &done[a], &done[b], b == b0, a == a0, b == b1, a == a1 };
			struct nt_ssrc ai, bt;
			int r;

			if (srcs[b].hdr->role != NTBPF_ROLE_TARGET)
				continue;
			/* a file's first run reads it through its own source (counted there), later ones again */
			if (!fr.count_i && srcs[a].reopen(srcs[a].ctx, &ai))
				goto out;
			if (!fr.count_t && srcs[b].reopen(srcs[b].ctx, &bt)) {
				if (!fr.count_i)
					ai.close(&ai);
				goto out;
			}
			if (!fr.count_i && !ai.hdr)
				ai.hdr = srcs[a].hdr;	/* the same file's header */
			if (!fr.count_t && !bt.hdr)
				bt.hdr = srcs[b].hdr;
			r = sm_run(m, fr.count_i ? &srcs[a] : &ai, fr.count_t ? &srcs[b] : &bt, window_ns, ops, &fr, &srcs[b]);
			if (!fr.count_i)
				ai.close(&ai);
			if (!fr.count_t)
				bt.close(&bt);
			if (r)
				goto out;
		}
	/* the rest: files of one side only, or of neither */
	for (int i = 0; i < n; i++) {
		uint8_t role = srcs[i].hdr->role;

		if (a0 >= 0 && b0 >= 0 && (role == NTBPF_ROLE_INITIATOR || role == NTBPF_ROLE_TARGET))
			continue;
		if (sm_run(m, role == NTBPF_ROLE_TARGET ? NULL : &srcs[i], role == NTBPF_ROLE_TARGET ? &srcs[i] : NULL, 0,
			   ops, NULL, NULL))
			goto out;
	}
	rc = 0;
out:
	for (int i = 0; i < n; i++)
		free(done[i].w);
	free(done);
	return rc;
}

