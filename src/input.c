// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * input.c - reading record files for the report: a file's
 * header, records, status and trailer (src/recfile.c decodes them).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "escape.h"
#include "input.h"
#include "sysinfo.h"

struct nt_reader *nt_input_open(struct nt_input *in, FILE *f, const char *name, char *err, size_t errlen)
{
	memset(in, 0, sizeof(*in));
	in->path = name;
	return nt_reader_open(f, &in->hdr, err, errlen);
}

size_t nt_input_chunk(struct nt_input *in, struct nt_reader *rd, const struct ntbpf_rec **recs)
{
	size_t n = nt_reader_chunk(rd, recs);

	in->n += n;
	return n;
}

void nt_input_close(struct nt_input *in, struct nt_reader *rd)
{
	const struct nt_trailer *t;

	in->status = nt_reader_status(rd, in->status_msg, sizeof(in->status_msg));
	t = nt_reader_trailer(rd);
	if (t) {
		in->has_trailer = true;
		in->trailer = *t;
	}
	nt_reader_close(rd);
}

int nt_input_scan(struct nt_input *in, FILE *f, const char *name, char *err, size_t errlen,
		  int (*each)(void *ctx, struct nt_input *in, const struct ntbpf_rec *r), void *ctx)
{
	struct nt_reader *rd = nt_input_open(in, f, name, err, errlen);
	const struct ntbpf_rec *r;
	size_t n, done = 0;
	int rc = 0;

	if (!rd)
		return -1;
	while (!rc && (n = nt_reader_chunk(rd, &r)))
		for (size_t k = 0; k < n; k++, in->n = ++done)
			if (each(ctx, in, &r[k])) {
				snprintf(err, errlen, "%s: out of memory after %zu records", name, done);
				rc = -1;
				break;
			}
	nt_input_close(in, rd);
	return rc;
}

void nt_inputs_unseen(const struct nt_input *ins, int n, struct nt_unseen *u)
{
	memset(u, 0, sizeof(*u));
	for (int i = 0; i < n; i++) {
		const struct nt_input *in = &ins[i];

		if (!in->has_trailer)
			continue;
		u->why[0] += in->trailer.stats[ST_LOST_RINGBUF];
		u->why[1] += in->trailer.stats[ST_LOST_MAP_FULL];
		u->why[2] += in->trailer.stats[ST_PROG_MISSES];
		u->why[3] += in->trailer.stats[ST_NO_COMPLETE];
		u->why[4] += in->trailer.lost_user;
		u->why[5] += in->trailer.stats[ST_NOT_RUN];
		u->lost += nt_lost_sum(in->trailer.stats) + in->trailer.lost_user;
		u->no_start += in->trailer.stats[ST_NO_START];
		u->inflight_end += in->trailer.stats[ST_INFLIGHT_END];
	}
}

/* the recording's end, or just after its start when its trailer does not say (cut short) */
static uint64_t span_end(const struct nt_input *in)
{
	if (in->has_trailer && in->trailer.end_mono_ns > in->hdr.mono_ns)
		return in->trailer.end_mono_ns;
	return in->hdr.mono_ns + 1;
}

/* the two recordings' -d filters meet (no filter: every device) */
static bool devs_meet(const struct nt_header *a, const struct nt_header *b)
{
	if (!a->ndevs || !b->ndevs)
		return true;
	for (uint32_t i = 0; i < a->ndevs && i < NTBPF_MAX_DEVS; i++)
		for (uint32_t j = 0; j < b->ndevs && j < NTBPF_MAX_DEVS; j++)
			if (!strncmp(a->devs[i], b->devs[j], sizeof(a->devs[i])))
				return true;
	return false;
}

int nt_inputs_twice(const struct nt_input *ins, int n, bool spans, char *err, size_t errlen)
{
	for (int j = 1; j < n; j++)
		for (int i = 0; i < j; i++) {
			const struct nt_header *a = &ins[i].hdr, *b = &ins[j].hdr;
			char pa[256], pb[256], host[256];
			bool same;

			/* no boot id: a file made by hand (tests), not by ntbpf record; nothing to tell it by */
			if (!a->boot_id[0] || a->role != b->role || strcmp(a->hostname, b->hostname) ||
			    strcmp(a->boot_id, b->boot_id))
				continue;
			same = a->mono_ns == b->mono_ns && a->real_ns == b->real_ns;
			if (!same && (!spans || !devs_meet(a, b) || a->mono_ns >= span_end(&ins[j]) ||
				      b->mono_ns >= span_end(&ins[i])))
				continue;
			nt_esc_term(pa, sizeof(pa), ins[i].path ? ins[i].path : "?");
			nt_esc_term(pb, sizeof(pb), ins[j].path ? ins[j].path : "?");
			nt_esc_term(host, sizeof(host), a->hostname);
			if (same)
				snprintf(err, errlen, "%s and %s are the same recording (%s on %s, same boot and start): "
					 "its I/Os would count twice; give it once", pa, pb, nt_role_name(a->role), host);
			else
				snprintf(err, errlen, "%s and %s overlap: two recordings of the same I/Os (%s on %s, same "
					 "boot and devices, at the same time) would count them twice; give one", pa, pb,
					 nt_role_name(a->role), host);
			return -1;
		}
	return 0;
}

int nt_vec_grow(struct nt_vec *a)
{
	size_t ncap = a->cap ? a->cap * 2 : 4096;
	void *p = realloc(a->v, ncap * a->sz);

	if (!p)
		return -1;
	nt_advise_huge(p, ncap * a->sz);
	a->v = p;
	a->cap = ncap;
	return 0;
}

void nt_input_free(struct nt_input *in)
{
	free(in->recs);
	nt_header_free(&in->hdr);
	memset(in, 0, sizeof(*in));
}

