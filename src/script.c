// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * script.c - "ntbpf script": every I/O as a row (script.h).  Pass 1 pairs
 * (items, and each target record's stages); pass 2 merges the files by
 * completion time and prints through a min-heap of NT_SCRIPT_WINDOW rows.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include "escape.h"
#include "failover.h"
#include "input.h"
#include "match.h"
#include "names.h"
#include "pairing.h"
#include "script.h"
#include "stages.h"

static const char *const match_names[] = { "both", "initiator_only", "target_only" };

/* pass 1 (nt_pair_whole): each target record's stages (tag: its file), and multipath's retries */
struct pass1 {
	const struct nt_input *ins;
	const struct nt_header *h;	/* the last initiator record's file's header */
	const struct nt_header *th;	/* the last target record's, and its file */
	uint16_t tf;
	uint32_t n_init;	/* initiator records so far: the next one's global index */
	struct nt_failover fo;	/* multipath's retries, by the initiators' global index */
	uint32_t host;		/* the file's host number (nt_fo_host) */
	bool mp;		/* its header names a multipath namespace: only then are its records fed */
	struct nt_mpath mpath;
};

static int take(void *ctx, const struct ntbpf_rec *r, const struct nt_header *h, uint8_t role, void *pay)
{
	struct pass1 *c = ctx;
	struct nt_sum *s = pay;
	if (role == NTBPF_ROLE_TARGET) {
		if (h != c->th) {
			for (c->tf = 0; &c->ins[c->tf].hdr != h; c->tf++)
				;
			c->th = h;
		}
		nt_sum_of(r, NTBPF_ROLE_TARGET, s);
		s->tag = c->tf;
		return 0;
	}
	if (h != c->h) {	/* a file's first initiator record */
		c->h = h;
		c->host = nt_fo_host(h);
		c->mp = nt_mpath_of(&c->mpath, h);
	}
	if (c->mp && nt_fo_feed(&c->fo, r, c->host, c->n_init))
		return -1;
	c->n_init++;
	return 0;
}

/* pass 2: one reader per file, each with its next row */
struct src {
	struct nt_reader *rd;
	struct nt_header hdr;
	size_t next_i, next_t;	/* global index of its next initiator record, and of its next target record
				 * (a file may hold both: its records' roles are their own) */
	struct nt_row ahead;
	bool has;
};

struct nt_rows {
	struct nt_input *ins;
	FILE *const *files;
	int n;
	/* pass 1's: the pairing (p.m), each target record's stages (p.pay[1]: struct nt_sum, tag: its
	 * file), where each file's records start (p.at), whether a file was cut short or damaged (p.cut) */
	struct nt_paired p;
	struct src *src;
	struct fo_mark {	/* initiator requests of a failover link, by global index */
		uint64_t idx;
		uint32_t failed_over, retry_of;
	} *marks;
	size_t nmarks;
	struct {		/* nt_path_dev per (file, head, controller), direct-mapped by controller */
		int f;
		uint32_t head;
		uint16_t ctrl, path;
	} pathc[8];
	struct nt_mpath mpath;	/* the last file's multipath facts (nt_path_of) */
};

static void fill_row(struct nt_rows *sc, int f, const struct ntbpf_rec *r, const struct nt_sum *si,
		     const struct nt_sum *st, struct nt_row *w)
{
	uint64_t vals[NT_ST_NR];
	uint32_t stand_in;
	bool neg;

	memset(w, 0, sizeof(*w));
	w->time = r->t0 + nt_rec_end(r) + nt_wall_offset(&sc->ins[f].hdr);
	w->lba = r->sector;
	w->dev = r->dev;
	/* a namespace reached by several paths (native multipath): the path this I/O took */
	if (r->role != NTBPF_ROLE_TARGET && (r->flags & NTBPF_F_NVME)) {
		typeof(sc->pathc[0]) *e = &sc->pathc[r->ctrl & 7];

		if (e->f != f + 1 || e->head != r->dev || e->ctrl != r->ctrl) {
			e->f = f + 1;
			e->head = r->dev;
			e->ctrl = r->ctrl;
			e->path = nt_path_of(&sc->mpath, &sc->ins[f].hdr, r->dev, r->ctrl);
		}
		w->path = e->path;
	}
	w->bytes = r->bytes;
	w->qid = r->qid;
	w->cid = r->cid;
	w->ctrl = r->ctrl;
	w->flags = r->flags;
	w->status = r->status;
	w->status_nvme = nt_status_is_nvme(r);
	w->op = r->op;
	w->role = r->role;
	w->file = (uint16_t)f;
	w->tfile = st && si ? (uint16_t)st->tag : UINT16_MAX;
	w->match = si && st ? NT_ROW_BOTH : si ? NT_ROW_INIT : NT_ROW_TGT;
	w->mask = nt_sum_combine(si, st, vals, &stand_in, &neg);
	for (uint32_t left = w->mask; left; left &= left - 1)
		w->vals[__builtin_ctz(left)] = (uint32_t)vals[__builtin_ctz(left)];
}

static int mark_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = ((const struct fo_mark *)b)->idx;

	return x < y ? -1 : x > y;
}

static int mark_sort(const void *a, const void *b)
{
	return mark_cmp(&((const struct fo_mark *)a)->idx, b);
}

/* pass 1's failover links as marks on their requests (link N: the Nth by its first request's start) */
static int marks_of(struct nt_rows *sc, struct nt_failover *fo)
{
	size_t n = 0;

	if (nt_fo_finish(fo))
		return -1;
	if (!fo->nlinks)
		return 0;
	sc->marks = calloc(2 * fo->nlinks, sizeof(*sc->marks));
	if (!sc->marks)
		return -1;
	for (size_t i = 0; i < fo->nlinks; i++) {
		sc->marks[n++] = (struct fo_mark){ .idx = fo->links[i].first.idx, .failed_over = (uint32_t)i + 1 };
		sc->marks[n++] = (struct fo_mark){ .idx = fo->links[i].retry.idx, .retry_of = (uint32_t)i + 1 };
	}
	qsort(sc->marks, n, sizeof(*sc->marks), mark_sort);
	/* a retry that failed again: one mark with both */
	sc->nmarks = 0;
	for (size_t i = 0; i < n; i++) {
		if (sc->nmarks && sc->marks[sc->nmarks - 1].idx == sc->marks[i].idx) {
			struct fo_mark *m = &sc->marks[sc->nmarks - 1];

			m->failed_over = m->failed_over ? m->failed_over : sc->marks[i].failed_over;
			m->retry_of = m->retry_of ? m->retry_of : sc->marks[i].retry_of;
			continue;
		}
		sc->marks[sc->nmarks++] = sc->marks[i];
	}
	return 0;
}

/* the file's next row: 1, or 0 at its end */
static int advance(struct nt_rows *sc, int f)
{
	struct src *s = &sc->src[f];
	const struct nt_sum *ts = sc->p.pay[1].v;
	struct ntbpf_rec r;

	while (nt_reader_next(s->rd, &r) == 1) {
		struct nt_sum si, st;
		size_t k;

		if (r.flags & NTBPF_F_ADMIN)
			continue;
		/* pass 1's count of this file's records of that role bounds pass 2 (a file grown since: its end) */
		k = r.role == NTBPF_ROLE_TARGET ? s->next_t++ : s->next_i++;
		if (k >= sc->p.at[r.role == NTBPF_ROLE_TARGET][f + 1])
			break;
		if (r.role == NTBPF_ROLE_TARGET) {
			if (sc->p.m.tgt_matched[k])
				continue;	/* printed with its initiator I/O */
			nt_sum_of(&r, NTBPF_ROLE_TARGET, &st);
			fill_row(sc, f, &r, NULL, &st, &s->ahead);
		} else {
			nt_sum_of(&r, NTBPF_ROLE_INITIATOR, &si);
			fill_row(sc, f, &r, &si, sc->p.m.pidx[k] ? &ts[sc->p.m.pidx[k] - 1] : NULL, &s->ahead);
			if (sc->nmarks) {
				uint64_t key = k;
				const struct fo_mark *mk = bsearch(&key, sc->marks, sc->nmarks, sizeof(*mk), mark_cmp);

				if (mk) {
					s->ahead.failed_over = mk->failed_over;
					s->ahead.retry_of = mk->retry_of;
				}
			}
		}
		return s->has = 1;
	}
	return s->has = 0;
}

/* pass 2 */
int nt_rows_each(struct nt_rows *sc, int (*each)(void *ctx, const struct nt_row *w), void *ctx)
{
	int rc = 0;

	if (!sc->src)
		sc->src = calloc(sc->n, sizeof(*sc->src));
	if (!sc->src)
		return -1;
	for (int f = 0; f < sc->n; f++) {
		struct src *s = &sc->src[f];
		char sub[200];

		if (s->rd) {
			nt_reader_close(s->rd);
			nt_header_free(&s->hdr);
		}
		memset(s, 0, sizeof(*s));
		if (fseek(sc->files[f], 0, SEEK_SET) || !(s->rd = nt_reader_open(sc->files[f], &s->hdr, sub, sizeof(sub))))
			return -1;
		s->next_i = sc->p.at[0][f];
		s->next_t = sc->p.at[1][f];
		advance(sc, f);
	}
	for (;;) {
		int best = -1;

		for (int f = 0; f < sc->n; f++)
			if (sc->src[f].has && (best < 0 || sc->src[f].ahead.time < sc->src[best].ahead.time))
				best = f;
		if (best < 0)
			break;
		if (each(ctx, &sc->src[best].ahead)) {
			rc = -1;
			break;
		}
		advance(sc, best);
	}
	return rc;
}

bool nt_rows_cut(const struct nt_rows *rs)
{
	return rs->p.cut;
}

void nt_rows_free(struct nt_rows *sc)
{
	if (!sc)
		return;
	for (int f = 0; sc->src && f < sc->n; f++)
		if (sc->src[f].rd) {
			nt_reader_close(sc->src[f].rd);
			nt_header_free(&sc->src[f].hdr);
		}
	free(sc->src);
	nt_paired_free(&sc->p);
	free(sc->marks);
	nt_mpath_free(&sc->mpath);
	free(sc);
}

int nt_rows_open(struct nt_rows **out, struct nt_input *ins, FILE *const *files, const char *const *names, int n,
		 const char *prog, FILE *err)
{
	struct nt_rows *sc = calloc(1, sizeof(*sc));
	struct pass1 c = { .ins = ins };
	struct nt_pair_ops ops = { .payload = { 0, sizeof(struct nt_sum) }, .take = take, .ctx = &c };
	int rc = -1;

	*out = sc;
	if (!sc) {
		fprintf(err, "%s: out of memory\n", prog);
		goto out;
	}
	if (n > UINT16_MAX) {
		fprintf(err, "%s: at most %u files\n", prog, UINT16_MAX);
		goto out;
	}
	sc->ins = ins;
	sc->files = files;
	sc->n = n;
	if (nt_pair_whole(&sc->p, ins, files, names, n, &ops, prog, err))
		goto out;
	if (marks_of(sc, &c.fo)) {
		fprintf(err, "%s: out of memory\n", prog);
		goto out;
	}
	rc = 0;
out:
	nt_fo_free(&c.fo);
	nt_mpath_free(&c.mpath);
	return rc;
}

/* ---- "ntbpf script": printing through a reorder buffer ---- */

struct script {
	const struct nt_input *ins;
	int n;
	struct nt_row *heap;
	size_t nheap;
	uint64_t last, late;
	enum nt_format fmt;
	FILE *out;
};

static void print_header(struct script *sc)
{
	if (sc->fmt != NT_FMT_CSV)
		return;
	fputs("time,host,target_host,device,op,size,lba,qid,cid,status,match", sc->out);
	for (int s = 0; s < NT_ST_NR; s++)
		fprintf(sc->out, ",%s_ns", nt_stage_name(s));
	/* added later: at the end */
	fputs(",hostnqn,subsysnqn,nsid,retry\n", sc->out);
}

/* a row's initiator host (hostnqn), subsystem and namespace from its file's controller: "" and 0 unknown */
static void row_keys(const struct script *sc, const struct nt_row *w, const char **host, const char **subsys,
		     uint32_t *nsid)
{
	const struct nt_header *h = &sc->ins[w->file].hdr;
	const struct nt_ctrl_info *c = nt_ctrl_of(h, w->role, w->flags, w->ctrl);

	*host = c ? c->hostnqn : "";
	*subsys = c ? c->subsysnqn : "";
	*nsid = (w->role == NTBPF_ROLE_TARGET || (w->flags & NTBPF_F_NVME))
			? nt_nsid_of(h, w->role, w->flags, w->ctrl, w->dev) : 0;
}

/* multipath: "failed_over:N" (this request's bios were retried: link N), "retry_of:N", both, or "" */
static void retry_label(const struct nt_row *w, char *buf, size_t len)
{
	if (w->failed_over && w->retry_of)
		snprintf(buf, len, "retry_of:%u;failed_over:%u", w->retry_of, w->failed_over);
	else if (w->failed_over)
		snprintf(buf, len, "failed_over:%u", w->failed_over);
	else if (w->retry_of)
		snprintf(buf, len, "retry_of:%u", w->retry_of);
	else
		*buf = 0;
}

static void print_row(struct script *sc, const struct nt_row *w)
{
	FILE *out = sc->out;
	bool csv = sc->fmt == NT_FMT_CSV, nvme = w->flags & NTBPF_F_NVME;
	char t[48], dev[64], status[32], retry[48];
	const char *thost = w->tfile != UINT16_MAX ? sc->ins[w->tfile].hdr.hostname : "";
	const char *hostnqn, *subsysnqn;
	uint32_t nsid;

	if (w->time < sc->last)
		sc->late++;
	else
		sc->last = w->time;
	nt_fmt_wall(w->time, t, sizeof(t));
	nt_dev_name_in(sc->ins, sc->n, w->role, w->dev, dev, sizeof(dev));
	if (w->path) {
		char head[64];

		snprintf(head, sizeof(head), "%s", dev);
		nt_path_name(head, w->path, dev, sizeof(dev));
	}
	nt_status_label(w->status, w->status_nvme, status, sizeof(status));
	row_keys(sc, w, &hostnqn, &subsysnqn, &nsid);
	if (csv) {
		fprintf(out, "%s,", t);
		nt_put_csv(out, sc->ins[w->file].hdr.hostname);
		fputc(',', out);
		nt_put_csv(out, thost);
		fputc(',', out);
		nt_put_csv(out, dev);
		fprintf(out, ",%s,%u,%" PRIu64 ",", nt_op_name(w->op), w->bytes, w->lba);
		if (nvme)
			fprintf(out, "%u,%u", w->qid, w->cid);
		else
			fputc(',', out);
		fprintf(out, ",%s,%s", status, match_names[w->match]);
		for (int s = 0; s < NT_ST_NR; s++)
			if (w->mask & (1u << s))
				fprintf(out, ",%u", w->vals[s]);
			else
				fputc(',', out);
		fputc(',', out);
		nt_put_csv(out, hostnqn);
		fputc(',', out);
		nt_put_csv(out, subsysnqn);
		fputc(',', out);
		if (nsid)
			fprintf(out, "%u", nsid);
		fputc(',', out);
		retry_label(w, retry, sizeof(retry));
		fprintf(out, "%s\n", retry);
		return;
	}
	fprintf(out, "{\"time\": \"%s\", \"host\": ", t);
	nt_put_json(out, sc->ins[w->file].hdr.hostname);
	fputs(", \"target_host\": ", out);
	if (*thost)
		nt_put_json(out, thost);
	else
		fputs("null", out);
	fputs(", \"device\": ", out);
	nt_put_json(out, dev);
	fprintf(out, ", \"op\": \"%s\", \"size\": %u, \"lba\": %" PRIu64, nt_op_name(w->op), w->bytes, w->lba);
	if (nvme)
		fprintf(out, ", \"qid\": %u, \"cid\": %u", w->qid, w->cid);
	else
		fputs(", \"qid\": null, \"cid\": null", out);
	fprintf(out, ", \"status\": \"%s\", \"match\": \"%s\"", status, match_names[w->match]);
	for (int s = 0; s < NT_ST_NR; s++)
		if (w->mask & (1u << s))
			fprintf(out, ", \"%s_ns\": %u", nt_stage_name(s), w->vals[s]);
		else
			fprintf(out, ", \"%s_ns\": null", nt_stage_name(s));
	fputs(", \"hostnqn\": ", out);
	*hostnqn ? nt_put_json(out, hostnqn) : (void)fputs("null", out);
	fputs(", \"subsysnqn\": ", out);
	*subsysnqn ? nt_put_json(out, subsysnqn) : (void)fputs("null", out);
	nsid ? fprintf(out, ", \"nsid\": %u", nsid) : fputs(", \"nsid\": null", out);
	retry_label(w, retry, sizeof(retry));
	*retry ? fprintf(out, ", \"retry\": \"%s\"", retry) : fputs(", \"retry\": null", out);
	fputs("}\n", out);
}

/* the reorder buffer: a min-heap on time */
static void heap_push(struct script *sc, const struct nt_row *w)
{
	size_t i = sc->nheap++;

	while (i && sc->heap[(i - 1) / 2].time > w->time) {
		sc->heap[i] = sc->heap[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	sc->heap[i] = *w;
}

static void heap_pop_print(struct script *sc)
{
	struct nt_row last;
	size_t i = 0;

	print_row(sc, &sc->heap[0]);
	last = sc->heap[--sc->nheap];
	for (;;) {
		size_t c = 2 * i + 1;

		if (c >= sc->nheap)
			break;
		if (c + 1 < sc->nheap && sc->heap[c + 1].time < sc->heap[c].time)
			c++;
		if (sc->heap[c].time >= last.time)
			break;
		sc->heap[i] = sc->heap[c];
		i = c;
	}
	if (sc->nheap)
		sc->heap[i] = last;
}

static int script_row(void *ctx, const struct nt_row *w)
{
	struct script *sc = ctx;

	if (sc->nheap == NT_SCRIPT_WINDOW)
		heap_pop_print(sc);
	heap_push(sc, w);
	return 0;
}

/* what the rows cannot show, as the report says it: records lost while recording, admin commands left out */
static void note_unseen(FILE *err, const struct nt_input *ins, int n, const struct nt_rows *rs)
{
	struct nt_unseen u;

	nt_inputs_unseen(ins, n, &u);
	if (u.lost || u.no_start + u.inflight_end || rs->p.m.admin)
		fprintf(err, "ntbpf script: not in the rows: %" PRIu64 " records lost while recording, %" PRIu64
			" I/Os in flight at its start or stop, %zu admin commands (ntbpf report says why)\n", u.lost,
			u.no_start + u.inflight_end, rs->p.m.admin);
}

int nt_script_cmd(const struct nt_config *cfg, FILE *out, FILE *err)
{
	int n = cfg->nfiles, rc = 1;
	struct nt_input *ins = calloc(n, sizeof(*ins));
	FILE **files = calloc(n, sizeof(*files));
	struct nt_rows *rs = NULL;
	struct script sc = { .ins = ins, .n = n, .fmt = cfg->format == NT_FMT_JSON ? NT_FMT_JSON : NT_FMT_CSV,
			     .out = out };

	if (!ins || !files || !(sc.heap = malloc(NT_SCRIPT_WINDOW * sizeof(*sc.heap)))) {
		fprintf(err, "ntbpf script: out of memory\n");
		goto out;
	}
	if (nt_pair_open(files, (const char *const *)cfg->files, n, true, "ntbpf script", err))
		goto out;
	if (nt_rows_open(&rs, ins, files, (const char *const *)cfg->files, n, "ntbpf script", err))
		goto out;
	print_header(&sc);
	if (nt_rows_each(rs, script_row, &sc)) {
		fprintf(err, "ntbpf script: cannot read the files again\n");
		goto out;
	}
	while (sc.nheap)
		heap_pop_print(&sc);
	note_unseen(err, ins, n, rs);
	if (sc.late)
		fprintf(err, "ntbpf script: warning: %" PRIu64 " rows out of time order (a file's records more than %d"
			" completions apart)\n", sc.late, NT_SCRIPT_WINDOW);
	errno = 0;
	if (fflush(out) || ferror(out)) {
		fprintf(err, "ntbpf script: cannot write the rows to standard output: %s\n", strerror(errno ? errno : EIO));
		goto out;
	}
	rc = nt_rows_cut(rs);
out:
	nt_rows_free(rs);
	free(sc.heap);
	for (int i = 0; i < n && files; i++) {
		if (files[i])
			fclose(files[i]);
		if (ins)
			nt_input_free(&ins[i]);
	}
	free(files);
	free(ins);
	return rc;
}
