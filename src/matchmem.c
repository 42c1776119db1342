// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * matchmem.c - pairing over items held in memory (match.h: nt_match_items, nt_match_build; script,
 * live, report's fleets from standard input): each initiator file against each target file, the
 * target items grouped by key, the clock offset estimated segment by segment (match.c), then each
 * initiator I/O takes the first target record of its key that fits.  The streaming engine
 * (matchstream.c) takes the same decisions one by one.
 */
#include <stdlib.h>
#include <string.h>
#include "match_int.h"
#include "recfile.h"
#include "input.h"
#include "sysinfo.h"

/*
 * The target records of one file not paired yet, grouped by key: group g
 * is tv[start[g] .. start[g + 1]), in file order, which is time order: a
 * cid comes back only after its command completed, and records are written
 * at completion.  Keys get dense ids here; then a stable counting sort,
 * straight from the items: O(n).
 */
static int group_targets(const struct nt_matching *m, struct nt_mitem *ti, size_t first, size_t end,
			 struct keys *keys, struct nt_mitem **tvp, size_t *ntp, uint32_t **startp)
{
	uint32_t *start;
	struct nt_mitem *tv;
	size_t nt = 0;

	for (size_t k = first; k < end; k++) {
		if (m->tgt_matched[k])
			continue;
		ti[k].kid = key_add(keys, ti[k].kq & KEY_MASK);
		if (ti[k].kid == NT_NO_KEY)
			return -1;
		nt++;
	}
	start = calloc(keys->n + 2, sizeof(*start));
	tv = malloc((nt ? nt : 1) * sizeof(*tv));
	if (!start || !tv) {
		free(start);
		free(tv);
		return -1;
	}
	nt_advise_huge(tv, nt * sizeof(*tv));
	for (size_t k = first; k < end; k++)
		if (!m->tgt_matched[k])
			start[ti[k].kid + 2]++;
	for (size_t g = 2; g < keys->n + 2; g++)
		start[g] += start[g - 1];
	for (size_t k = first; k < end; k++)
		if (!m->tgt_matched[k])
			tv[start[ti[k].kid + 1]++] = ti[k];
	/*
	 * File order is completion order.  Within one key that is also the
	 * order of lo, except where two controllers share a cntlid and their
	 * commands overlap: put those few in lo order (insertion sort, linear
	 * on data this nearly sorted) so that lower_bound holds.
	 */
	for (size_t i = 1; i < nt; i++) {
		struct nt_mitem x = tv[i];
		size_t j = i;

		if (tv[i - 1].kid != x.kid || tv[i - 1].lo <= x.lo)
			continue;
		while (j > 0 && tv[j - 1].kid == x.kid && tv[j - 1].lo > x.lo) {
			tv[j] = tv[j - 1];
			j--;
		}
		tv[j] = x;
	}
	*tvp = tv;
	*ntp = nt;
	*startp = start;	/* start[g] is now the first of group g, start[nkeys] == nt */
	return 0;
}

/*
 * Pair the initiator items ii[a_first, a_end) of one file with the target
 * items ti[b_first, b_end) of another (those not paired yet).
 */
static int match_files(struct nt_matching *m, struct nt_mitem *ii, size_t a_first, size_t a_end,
		       const struct nt_header *ha, struct nt_mitem *ti, size_t b_first, size_t b_end,
		       const struct nt_header *hb)
{
	struct nt_mitem *tv = NULL;
	struct keys keys = { 0 };
	uint32_t *start = NULL, *cursor = NULL;
	struct seg *seg = NULL;
	size_t nt = 0, nseg, ns = 0, votes = 0;
	int64_t prior, window;
	struct tview tw = { 0 };
	int rc = -1;

	if (group_targets(m, ti, b_first, b_end, &keys, &tv, &nt, &start))
		goto out;
	tw.tv = tv;
	tw.start = start;

	nt_prior_of(ha, hb, &prior, &window);
	/*
	 * The offset, segment by segment of SEG_INITS initiator I/Os: two
	 * hosts' monotonic clocks drift apart (NTP slews each its own way,
	 * unsynchronised ones by up to hundreds of ppm), and a recording
	 * of minutes drifts past the tolerance.  Coarse over the prior's
	 * uncertainty (for the first segment) or around the last segment's
	 * offset, then fine around that; pairing interpolates between the
	 * segments' middles.  A segment without votes (no target records
	 * there) adds no point.
	 */
	nseg = (a_end - a_first) / 64 + 2;	/* a segment has at least 64 I/Os or ends a file */
	seg = calloc(nseg, sizeof(*seg));
	if (!seg)
		goto out;
	for (size_t from = a_first, to; from < a_end && ns < nseg; from = to) {
		int64_t o, t_end = (int64_t)ii[from].lo + SEG_NS;
		size_t v;

		for (to = from + 1; to < a_end && to - from < SEG_INITS && ((int64_t)ii[to].lo < t_end || to - from < 64);
		     to++)
			;
		if (!ns) {
			/* coarse over the prior's uncertainty: in the first segment, else the whole file */
			if (!nt_estimate_offset(m, ii, from, to, &keys, &tw, prior, window, COARSE_INITS,
					        COARSE_CANDIDATES, &o, &v) &&
			    !nt_estimate_offset(m, ii, a_first, a_end, &keys, &tw, prior, window, COARSE_INITS,
					        COARSE_CANDIDATES, &o, &v))
				break;
		} else {
			o = seg[ns - 1].off;
		}
		if (!nt_estimate_offset(m, ii, from, to, &keys, &tw, o, SEG_WINDOW, ns ? SEG_SAMPLES : SAMPLE_INITS,
				        FINE_CANDIDATES, &o, &v))
			continue;
		votes += v;
		if (ns && (int64_t)ii[from + (to - from) / 2].lo <= seg[ns - 1].at)
			continue;	/* a long I/O in the middle: keep the points in time order */
		seg[ns].at = (int64_t)ii[from + (to - from) / 2].lo;
		seg[ns].off = o;
		ns++;
	}
	if (!ns) {
		rc = 0;
		goto out;
	}
	for (size_t k = 0; k + 1 < ns; k++)
		seg[k].slope = (double)(seg[k + 1].off - seg[k].off) / (double)(seg[k + 1].at - seg[k].at);
	m->offset_ns = seg[0].off;
	m->offset_drift_ns = seg[ns - 1].off - seg[0].off;
	m->offset_votes = votes;
	m->have_offset = true;

	/* in each (cntlid, qid, cid), in time order: the first target record that fits */
	cursor = malloc((keys.n + 1) * sizeof(*cursor));
	if (!cursor)
		goto out;
	memcpy(cursor, start, (keys.n + 1) * sizeof(*cursor));
	/* initiator I/Os in file (time) order */
	for (size_t i = a_first, at = 0; i < a_end; i++) {
		uint32_t kid = init_kid(m, ii, i, &keys);
		int64_t off = offset_at(seg, ns, &at, (int64_t)ii[i].lo);
		int64_t from = (int64_t)ii[i].lo + off - TOLERANCE_NS;
		size_t end, j;
		uint16_t port = port_of(&ii[i]);

		if (kid == NT_NO_KEY)
			continue;
		end = start[kid + 1];
		j = seek_from(tv, start[kid], end, cursor[kid], from < 0 ? 0 : (uint64_t)from);
		cursor[kid] = (uint32_t)j;

		while (j < end && ((tv[j].idx & PAIRED) || !same_conn(port, port_of(&tv[j]))))
			j++;
		if (j >= end)
			continue;
		if ((int64_t)tv[j].lo > (int64_t)ii[i].hi + off + TOLERANCE_NS ||
		    (int64_t)tv[j].hi > (int64_t)ii[i].hi + off + TOLERANCE_NS)
			continue;
		m->pidx[i] = tv[j].idx + 1;
		m->by_port += port && port_of(&tv[j]);
		m->tgt_matched[tv[j].idx] = true;
		tv[j].idx |= PAIRED;	/* checked here, where the item is already in cache */
		m->matched++;
	}
	rc = 0;
out:
	free(seg);
	free(tv);
	free(start);
	free(cursor);
	nt_keys_free(&keys);
	return rc;
}

int nt_match_items(struct nt_matching *m, struct nt_mitem *ii, const size_t *init_at, struct nt_mitem *ti,
		   const size_t *tgt_at, const struct nt_header *const *hdrs, int nfiles)
{
	bool any_shared = false;

	if (m->n_init + m->n_tgt >= PAIRED)
		return -1;	/* item indexes are 31 bits (2 G records) */
	m->pidx = calloc(m->n_init ? m->n_init : 1, sizeof(*m->pidx));
	m->tgt_matched = calloc(m->n_tgt ? m->n_tgt : 1, sizeof(*m->tgt_matched));
	if (!m->pidx || !m->tgt_matched)
		return -1;
	nt_advise_huge(m->pidx, m->n_init * sizeof(*m->pidx));
	for (int f = 0; f < nfiles; f++)
		for (uint32_t k = 0; k < hdrs[f]->nctrls; k++)
			any_shared |= nt_cntlid_shared(hdrs[f], (uint16_t)hdrs[f]->ctrls[k].instance,
						       hdrs[f]->ctrls[k].cntlid);
	/* every initiator file against every target file */
	for (int a = 0; a < nfiles; a++) {
		if (hdrs[a]->role != NTBPF_ROLE_INITIATOR || init_at[a] == init_at[a + 1])
			continue;
		for (int b = 0; b < nfiles; b++) {
			if (hdrs[b]->role != NTBPF_ROLE_TARGET || tgt_at[b] == tgt_at[b + 1])
				continue;
			if (match_files(m, ii, init_at[a], init_at[a + 1], hdrs[a], ti, tgt_at[b], tgt_at[b + 1],
					hdrs[b]))
				return -1;
		}
	}
	/* only where another controller shares a cntlid: I/Os paired without a port on one side */
	for (int f = 0; any_shared && f < nfiles; f++)
		for (size_t k = init_at[f]; k < init_at[f + 1]; k++) {
			const struct nt_mitem *x = &ii[k];

			if (x->kid != NT_NO_KEY && nt_cntlid_dup(hdrs[f], (uint16_t)(x->kq >> 32)) &&
			    (!port_of(x) || (m->pidx[k] && !port_of(&ti[m->pidx[k] - 1]))))
				m->shared_cntlid++;
		}
	return 0;
}

int nt_match_build(struct nt_matching *m, const struct nt_input *ins, int nins)
{
	size_t n = 0, *init_at = NULL, *tgt_at = NULL;
	const struct nt_header **hdrs = NULL;
	struct nt_mitem *ii = NULL, *ti = NULL;
	int rc = -1;

	memset(m, 0, sizeof(*m));
	for (int f = 0; f < nins; f++)
		n += ins[f].n;
	/* sized for every record: the pages never written are never touched */
	m->init = malloc((n ? n : 1) * sizeof(*m->init));
	m->tgt = malloc((n ? n : 1) * sizeof(*m->tgt));
	ii = malloc((n ? n : 1) * sizeof(*ii));
	ti = malloc((n ? n : 1) * sizeof(*ti));
	init_at = calloc(nins + 1, sizeof(*init_at));
	tgt_at = calloc(nins + 1, sizeof(*tgt_at));
	hdrs = calloc(nins + 1, sizeof(*hdrs));
	if (!m->init || !m->tgt || !ii || !ti || !init_at || !tgt_at || !hdrs)
		goto out;
	nt_advise_huge(m->init, n * sizeof(*m->init));
	nt_advise_huge(m->tgt, n * sizeof(*m->tgt));
	nt_advise_huge(ii, n * sizeof(*ii));
	nt_advise_huge(ti, n * sizeof(*ti));
	for (int f = 0; f < nins; f++) {
		hdrs[f] = &ins[f].hdr;
		for (size_t k = 0; k < ins[f].n; k++) {
			const struct ntbpf_rec *r = &ins[f].recs[k];
			bool no_cntlid;

			switch (nt_mitem_of(r, &ins[f].hdr, &ti[m->n_tgt], &no_cntlid)) {
			case NT_SIDE_ADMIN:
				m->admin++;
				break;
			case NT_SIDE_TGT:
				ti[m->n_tgt].idx = (uint32_t)m->n_tgt;
				m->tgt[m->n_tgt++] = r;
				break;
			case NT_SIDE_INIT:
				ii[m->n_init] = ti[m->n_tgt];
				ii[m->n_init].idx = (uint32_t)m->n_init;
				m->no_cntlid += no_cntlid;
				m->init[m->n_init++] = r;
				break;
			}
		}
		init_at[f + 1] = m->n_init;
		tgt_at[f + 1] = m->n_tgt;
	}
	if (nt_match_items(m, ii, init_at, ti, tgt_at, hdrs, nins))
		goto out;
	m->partner = calloc(m->n_init ? m->n_init : 1, sizeof(*m->partner));
	if (!m->partner)
		goto out;
	for (size_t k = 0; k < m->n_init; k++)
		if (m->pidx[k])
			m->partner[k] = m->tgt[m->pidx[k] - 1];
	rc = 0;
out:
	free(ii);
	free(ti);
	free(init_at);
	free(tgt_at);
	free(hdrs);
	return rc;
}

void nt_match_free(struct nt_matching *m)
{
	free(m->pidx);
	free(m->init);
	free(m->partner);
	free(m->tgt);
	free(m->tgt_matched);
	memset(m, 0, sizeof(*m));
}
