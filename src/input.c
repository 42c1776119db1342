// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * input.c - reading record files for the report and the tests: a file's
 * header, records, status and trailer (src/recfile.c decodes them).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
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

int nt_input_load_stream(struct nt_input *in, FILE *f, const char *name, char *err, size_t errlen)
{
	struct nt_vec v = { .sz = sizeof(struct ntbpf_rec) };
	int rc = nt_input_scan(in, f, name, err, errlen, keep_record, &v);

	if (rc) {
		free(v.v);
		in->recs = NULL;
	}
	return rc;
}

int nt_input_load(struct nt_input *in, const char *path, char *err, size_t errlen)
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

void nt_input_free(struct nt_input *in)
{
	free(in->recs);
	nt_header_free(&in->hdr);
	memset(in, 0, sizeof(*in));
}

