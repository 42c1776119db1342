// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * testapi.h - what only the unit tests use, made of the product's API (issue 32: no test-only
 * API in src/): a record file read into memory, the report of records held in memory (as live
 * builds its intervals), and one I/O's stages from its two records (the report's per-record
 * path: nt_sum_of, nt_sum_combine).  Include after the src/ headers.
 */
#ifndef NTBPF_TEST_API_H
#define NTBPF_TEST_API_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "groups.h"
#include "input.h"
#include "match.h"
#include "stages.h"

static int keep_record(void *ctx, struct nt_input *in, const struct ntbpf_rec *r)
{
	struct nt_vec *v = ctx;
	struct ntbpf_rec *p = nt_vec_push(v);

	if (!p)
		return -1;
	*p = *r;
	in->recs = v->v;
	return 0;
}

/* every record of an open record file into in->recs (nt_input_free frees them): 0, or -1 with err */
static int nt_input_load_stream(struct nt_input *in, FILE *f, const char *name, char *err, size_t errlen)
{
	struct nt_vec v = { .sz = sizeof(struct ntbpf_rec) };
	int rc = nt_input_scan(in, f, name, err, errlen, keep_record, &v);

	if (rc) {
		free(v.v);
		in->recs = NULL;
	}
	return rc;
}

/* the same from a path */
static int nt_input_load(struct nt_input *in, const char *path, char *err, size_t errlen)
{
	FILE *f = fopen(path, "rb");
	char sub[200];
	int rc;

	if (!f) {
		snprintf(err, errlen, "cannot open %s: %s", path, strerror(errno));
		return -1;
	}
	rc = nt_input_load_stream(in, f, path, sub, sizeof(sub));
	if (rc)
		snprintf(err, errlen, "%s: %s", path, sub);
	fclose(f);
	return rc;
}

/* the report of records held in memory (ins[i].recs): paired, grouped, counted.  0, or -1 */
static int nt_report_build(struct nt_report *rep, const struct nt_input *ins, int nins,
			   const struct nt_report_opts *o)
{
	nt_report_begin(rep, ins, nins, o);
	if (nt_match_build(&rep->m, ins, nins))
		return -1;
	nt_report_count(rep, ins, nins);
	for (size_t k = 0; k < rep->m.n_init; k++)
		if (nt_report_add(rep, rep->m.init[k], rep->m.partner[k]))
			return -1;
	for (size_t k = 0; k < rep->m.n_tgt; k++)
		if (!rep->m.tgt_matched[k] && nt_report_add(rep, NULL, rep->m.tgt[k]))
			return -1;
	nt_report_finish(rep);
	return 0;
}

/*
 * All stages of one I/O: init and/or tgt may be NULL (one side only).
 * vals[s] is valid where bit s of the returned mask is set.  stand_in gets the
 * mask of stages computed from a stand-in boundary.  network_transmission is
 * remote - target_residence when both sides are given; *neg_net is set when
 * that came out negative (then it is left out).
 */
static uint32_t nt_stages_compute(const struct ntbpf_rec *init, const struct ntbpf_rec *tgt,
				  uint64_t vals[NT_ST_NR], uint32_t *stand_in, bool *neg_net)
{
	struct nt_sum si, st;

	if (init)
		nt_sum_of(init, NTBPF_ROLE_INITIATOR, &si);
	if (tgt)
		nt_sum_of(tgt, NTBPF_ROLE_TARGET, &st);
	return nt_sum_combine(init ? &si : NULL, tgt ? &st : NULL, vals, stand_in, neg_net);
}

#endif
