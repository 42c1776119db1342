// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * pairing.c - the input-and-pairing pass (src/pairing.h) of "ntbpf report"
 * (src/groups.c), its HTML charts and "ntbpf script" (src/script.c): the
 * files opened, read (src/input.c), checked (one recording twice, a file cut
 * short) and paired by an engine of src/match.h, each record handed to the
 * output's take() and each I/O to its emit().  Streaming (nt_pair_files):
 * the sources (a file, or a "record --rotate" series read as one), one
 * initiator against one target in bounded memory (nt_smatch_run), more of
 * both a fleet (nt_smatch_fleet), or whole when a file cannot be read again.
 * Whole (nt_pair_whole, and the fleet's fallback): items and payloads in
 * memory, nt_match_items.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include "escape.h"
#include "pairing.h"

/* ---- opening the inputs ---- */

FILE *nt_open_input(const char *name)
{
	FILE *in, *tmp;
	char buf[65536];
	size_t n;

	if (strcmp(name, "-"))
		return fopen(name, "rb");
	tmp = tmpfile();	/* 0600, unlinked */
	in = fdopen(dup(STDIN_FILENO), "rb");
	if (!tmp || !in) {
		if (tmp)
			fclose(tmp);
		if (in)
			fclose(in);
		return NULL;
	}
	while ((n = fread(buf, 1, sizeof(buf), in)) > 0)
		if (fwrite(buf, 1, n, tmp) != n)
			break;
	if (ferror(in) || ferror(tmp) || fflush(tmp)) {
		fclose(in);
		fclose(tmp);
		errno = EIO;
		return NULL;
	}
	fclose(in);
	rewind(tmp);
	return tmp;
}

int nt_pair_open(FILE **files, const char *const *names, int n, bool again, const char *prog, FILE *err)
{
	for (int i = 0; i < n; i++) {
		/* "-": standard input, read front to back like any file (a pipe will do), or copied to read twice */
		files[i] = again ? nt_open_input(names[i]) :
			   strcmp(names[i], "-") ? fopen(names[i], "rb") : fdopen(dup(STDIN_FILENO), "rb");
		if (!files[i]) {
			char path[256];

			fprintf(err, "%s: cannot open %s: %s\n", prog, nt_esc_term(path, sizeof(path), names[i]),
				strerror(errno));
			return -1;
		}
	}
	return 0;
}

/* ---- whole: every record's item and payload in memory, then nt_match_items ---- */

/* per side ([0] initiator, [1] target): each record's item (pairing) and payload (the output's) */
struct whole {
	struct nt_matching *m;
	const struct nt_pair_ops *ops;
	struct nt_vec items[2], pay[2];
	size_t *at[2];			/* file f's records: [at[f], at[f + 1]) */
	const struct nt_header **hdrs;
};

static int whole_init(struct whole *w, struct nt_matching *m, const struct nt_pair_ops *ops, int n)
{
	*w = (struct whole){ .m = m, .ops = ops, .items[0].sz = sizeof(struct nt_mitem),
			     .items[1].sz = sizeof(struct nt_mitem), .pay[0].sz = ops->payload[0],
			     .pay[1].sz = ops->payload[1] };
	w->at[0] = calloc(n + 1, sizeof(size_t));
	w->at[1] = calloc(n + 1, sizeof(size_t));
	w->hdrs = calloc(n + 1, sizeof(*w->hdrs));
	return w->at[0] && w->at[1] && w->hdrs ? 0 : -1;
}

static void whole_free(struct whole *w)
{
	for (int s = 0; s < 2; s++) {
		free(w->items[s].v);
		free(w->pay[s].v);
		free(w->at[s]);
	}
	free(w->hdrs);
}

/* one record: straight into the arrays, its payload filled by the output's take() */
static int collect(struct whole *w, const struct nt_header *h, const struct ntbpf_rec *r)
{
	struct nt_mitem *x;
	void *s = NULL;
	bool no_cntlid;
	int side;

	if (r->flags & NTBPF_F_ADMIN) {
		w->m->admin++;
		return 0;
	}
	side = r->role == NTBPF_ROLE_TARGET;
	x = nt_vec_push(&w->items[side]);
	if (!x || (w->pay[side].sz && !(s = nt_vec_push(&w->pay[side]))))
		return -1;
	nt_mitem_of(r, h, x, &no_cntlid);
	x->idx = (uint32_t)(w->items[side].n - 1);
	w->m->no_cntlid += no_cntlid;
	return w->ops->take(w->ops->ctx, r, h, side ? NTBPF_ROLE_TARGET : NTBPF_ROLE_INITIATOR, s);
}

static int collect_in(void *ctx, struct nt_input *in, const struct ntbpf_rec *r)
{
	return collect(ctx, &in->hdr, r);
}

/* file i is read: where its records end */
static void whole_file_done(struct whole *w, int i, const struct nt_header *h)
{
	w->hdrs[i] = h;
	w->at[0][i + 1] = w->items[0].n;
	w->at[1][i + 1] = w->items[1].n;
}

static int whole_pair(struct whole *w, int n)
{
	w->m->n_init = w->items[0].n;
	w->m->n_tgt = w->items[1].n;
	return nt_match_items(w->m, w->items[0].v, w->at[0], w->items[1].v, w->at[1], w->hdrs, n);
}

/* each I/O to emit(): every initiator's with its partner's, then the targets left alone */
static int whole_emit(const struct whole *w)
{
	const struct nt_matching *m = w->m;
	const unsigned char *si = w->pay[0].v, *st = w->pay[1].v;
	size_t zi = w->pay[0].sz, zt = w->pay[1].sz;

	for (size_t k = 0; k < m->n_init; k++)
		if (w->ops->emit(w->ops->ctx, (const void *)(si + k * zi),
				 m->pidx[k] ? (const void *)(st + (m->pidx[k] - 1) * zt) : NULL))
			return -1;
	for (size_t k = 0; k < m->n_tgt; k++)
		if (!m->tgt_matched[k] && w->ops->emit(w->ops->ctx, NULL, (const void *)(st + k * zt)))
			return -1;
	return 0;
}

int nt_pair_whole(struct nt_paired *p, struct nt_input *ins, FILE *const *files, const char *const *names, int n,
		  const struct nt_pair_ops *ops, const char *prog, FILE *err)
{
	struct whole w;
	char path[1024];
	int rc = -1;

	memset(p, 0, sizeof(*p));
	if (whole_init(&w, &p->m, ops, n)) {
		fprintf(err, "%s: out of memory\n", prog);
		goto out;
	}
	for (int i = 0; i < n; i++) {
		char sub[200];

		if (fseek(files[i], 0, SEEK_SET)) {
			fprintf(err, "%s: %s: cannot read it again\n", prog, nt_esc_term(path, sizeof(path), names[i]));
			goto out;
		}
		if (nt_input_scan(&ins[i], files[i], names[i], sub, sizeof(sub), collect_in, &w)) {
			fprintf(err, "%s: %s: ", prog, nt_esc_term(path, sizeof(path), names[i]));
			nt_put_term(err, sub);
			fputc('\n', err);
			goto out;
		}
		if (ins[i].status != NT_READ_OK) {
			fprintf(err, "%s: warning: ", prog);
			nt_put_term(err, names[i]);
			fputs(": ", err);
			nt_put_term(err, ins[i].status_msg);
			fputc('\n', err);
			p->cut = true;
		}
		whole_file_done(&w, i, &ins[i].hdr);
	}
	if (nt_inputs_twice(ins, n, true, path, sizeof(path))) {	/* would count I/Os twice */
		fprintf(err, "%s: %s\n", prog, path);
		goto out;
	}
	if (whole_pair(&w, n)) {
		fprintf(err, "%s: out of memory\n", prog);
		goto out;
	}
	/* only the pairing, the payloads and where each file's start stay */
	for (int s = 0; s < 2; s++) {
		p->pay[s] = w.pay[s];
		p->at[s] = w.at[s];
		w.pay[s].v = NULL;
		w.at[s] = NULL;
	}
	rc = 0;
out:
	whole_free(&w);
	return rc;
}

void nt_paired_free(struct nt_paired *p)
{
	nt_match_free(&p->m);
	for (int s = 0; s < 2; s++) {
		free(p->pay[s].v);
		free(p->at[s]);
	}
	memset(p, 0, sizeof(*p));
}

/* ---- streaming: sources, each a file or a series ---- */

struct file_src {
	struct nt_input *in;
	struct nt_reader *rd;
	FILE *f;
};

/*
 * The files of one source: one file, or the series one "record --rotate"
 * wrote (same role, host, boot and command line), read as one stream in the
 * order of their start.  The source's header is the current file's.
 */
struct series {
	struct file_src **fs;
	int n, cur;
	struct nt_ssrc *src;
};

static size_t series_chunk(void *ctx, const struct ntbpf_rec **recs)
{
	struct series *se = ctx;

	for (; se->cur < se->n; se->cur++) {
		struct file_src *f = se->fs[se->cur];
		size_t k;

		se->src->hdr = &f->in->hdr;
		if ((k = nt_input_chunk(f->in, f->rd, recs)))
			return k;
	}
	return 0;
}

/* a series read again from the start (struct nt_ssrc's reopen), each regular file through a descriptor of its own */
struct series_again {
	const struct series *se;
	int cur;
	struct nt_input in;
	struct nt_reader *rd;
	FILE *f;
	struct nt_ssrc *self;
};

static void again_end(struct series_again *a)
{
	if (a->rd)
		nt_reader_close(a->rd);
	if (a->f)
		fclose(a->f);
	nt_header_free(&a->in.hdr);
	a->rd = NULL;
	a->f = NULL;
}

/* file a->cur of the series, open again: 0, or -1 (not a regular file, or unreadable) */
static int again_open(struct series_again *a)
{
	FILE *orig = a->se->fs[a->cur]->f;
	struct stat st;
	char path[64], err[200];

	if (fileno(orig) < 0 || fstat(fileno(orig), &st) || !S_ISREG(st.st_mode))
		return -1;
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fileno(orig));
	a->f = fopen(path, "rb");
	if (!a->f || !(a->rd = nt_input_open(&a->in, a->f, path, err, sizeof(err)))) {
		again_end(a);
		return -1;
	}
	a->self->hdr = &a->in.hdr;
	return 0;
}

static size_t again_chunk(void *ctx, const struct ntbpf_rec **recs)
{
	struct series_again *a = ctx;
	size_t k = 0;

	while (a->rd && !(k = nt_reader_chunk(a->rd, recs))) {
		again_end(a);
		if (++a->cur >= a->se->n || again_open(a))
			return 0;
	}
	return k;
}

static void again_close(struct nt_ssrc *again)
{
	struct series_again *a = again->ctx;

	again_end(a);
	free(a);
}

static int series_reopen(void *ctx, struct nt_ssrc *again)
{
	struct series_again *a = calloc(1, sizeof(*a));

	if (!a)
		return -1;
	a->se = ctx;
	a->self = again;
	*again = (struct nt_ssrc){ .chunk = again_chunk, .ctx = a, .close = again_close };
	if (again_open(a)) {
		free(a);
		return -1;
	}
	return 0;
}

static int start_cmp(const void *a, const void *b)
{
	const struct file_src *x = *(struct file_src *const *)a, *y = *(struct file_src *const *)b;

	return x->in->hdr.mono_ns < y->in->hdr.mono_ns ? -1 : x->in->hdr.mono_ns > y->in->hdr.mono_ns;
}

/* file b continues file a's series: both written by one "record --rotate" (else files are never joined) */
static bool same_series(const struct nt_header *a, const struct nt_header *b)
{
	return a->role == b->role && a->boot_id[0] && strstr(a->cmdline, "--rotate") && !strcmp(a->boot_id, b->boot_id) &&
	       !strcmp(a->hostname, b->hostname) && !strcmp(a->cmdline, b->cmdline);
}

/*
 * The sources: each file alone, or with the rest of its series.  se[] gets
 * them (se[k].fs points into order[]), src[] their nt_ssrc; returns how
 * many, or -1.
 */
static int sources_of(struct file_src *fs, int n, struct file_src **order, struct series *se, struct nt_ssrc *src)
{
	int ns = 0, used = 0;
	bool *taken = calloc(n ? n : 1, sizeof(*taken));

	if (!taken)
		return -1;
	for (int i = 0; i < n; i++) {
		if (taken[i])
			continue;
		se[ns] = (struct series){ .fs = &order[used], .src = &src[ns] };
		for (int j = i; j < n; j++)
			if (j == i || (!taken[j] && same_series(&fs[i].in->hdr, &fs[j].in->hdr))) {
				taken[j] = true;
				order[used++] = &fs[j];
				se[ns].n++;
			}
		qsort(se[ns].fs, se[ns].n, sizeof(se[ns].fs[0]), start_cmp);
		src[ns] = (struct nt_ssrc){ .hdr = &se[ns].fs[0]->in->hdr, .chunk = series_chunk, .ctx = &se[ns],
					    .reopen = series_reopen };
		ns++;
	}
	free(taken);
	return ns;
}


/* more files of both sides, a source not readable again: every record's item and payload in memory */
static int build_whole(struct nt_matching *m, struct nt_input *ins, struct file_src *fs, int n,
		       const struct nt_pair_ops *ops)
{
	const struct ntbpf_rec *r;
	struct whole w;
	int rc = -1;

	if (whole_init(&w, m, ops, n))
		goto out;
	for (int i = 0; i < n; i++) {
		size_t k;

		while ((k = nt_input_chunk(&ins[i], fs[i].rd, &r)))
			for (size_t j = 0; j < k; j++)
				if (collect(&w, &ins[i].hdr, &r[j]))
					goto out;
		whole_file_done(&w, i, &ins[i].hdr);
	}
	if (whole_pair(&w, n))
		goto out;
	rc = whole_emit(&w);
out:
	whole_free(&w);
	return rc;
}

/*
 * One initiator (a file, or a series) against one target, and any number of
 * sources with nothing to pair: read side by side in bounded memory
 * (src/match.h, nt_smatch_run).  More of both sides, a fleet: every
 * initiator source against every target source (nt_smatch_fleet), or from
 * standard input whole (nt_match_items).
 */
static int build_sources(struct nt_matching *m, struct nt_input *ins, struct file_src *fs, int n, uint64_t window,
			 const struct nt_pair_ops *ops)
{
	struct nt_smatch_ops so = { .payload = ops->payload[0], .take = ops->take, .emit = ops->emit,
				    .ctx = ops->ctx };
	struct file_src **order = calloc(n ? n : 1, sizeof(*order));
	struct series *se = calloc(n ? n : 1, sizeof(*se));
	struct nt_ssrc *src = calloc(n ? n : 1, sizeof(*src));
	int ns = -1, a = -1, b = -1, na = 0, nb = 0, rc = -1;

	if (!order || !se || !src || (ns = sources_of(fs, n, order, se, src)) < 0)
		goto out;
	for (int k = 0; k < ns; k++) {
		if (src[k].hdr->role == NTBPF_ROLE_INITIATOR) {
			a = k;
			na++;
		} else if (src[k].hdr->role == NTBPF_ROLE_TARGET) {
			b = k;
			nb++;
		}
	}
	if (na && nb && na + nb > 2) {
		if (ops->rereads)
			*ops->rereads = true;	/* a fleet's runs may read an initiator's records more than once */
		rc = nt_smatch_fleet(m, src, ns, window, &so);
		if (ops->rereads)
			*ops->rereads = rc != -2;
		if (rc == -2)
			rc = build_whole(m, ins, fs, n, ops);
		goto out;
	}
	rc = 0;
	if (na == 1 && nb == 1)
		rc = nt_smatch_run(m, &src[a], &src[b], window, &so);
	else
		a = b = -1;
	for (int k = 0; !rc && k < ns; k++)
		if (k != a && k != b)
			rc = nt_smatch_run(m, src[k].hdr->role == NTBPF_ROLE_TARGET ? NULL : &src[k],
					   src[k].hdr->role == NTBPF_ROLE_TARGET ? &src[k] : NULL, 0, &so);
out:
	free(order);
	free(se);
	free(src);
	return rc;
}

int nt_pair_files(struct nt_matching *m, struct nt_input *ins, FILE *const *files, const char *const *names, int n,
		  uint64_t window_ns, const struct nt_pair_ops *ops, const char *prog, FILE *warn, char *err,
		  size_t errlen)
{
	struct file_src *fs = calloc(n ? n : 1, sizeof(*fs));
	int opened = 0, rc = -1;

	if (!fs) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	for (int i = 0; i < n; i++, opened++) {
		char sub[200];

		fs[i].in = &ins[i];
		fs[i].f = files[i];
		fs[i].rd = nt_input_open(&ins[i], files[i], names[i], sub, sizeof(sub));
		if (!fs[i].rd) {
			char path[256];

			snprintf(err, errlen, "%s: %s", nt_esc_term(path, sizeof(path), names[i]), sub);
			goto out;
		}
	}
	if (nt_inputs_twice(ins, n, false, err, errlen))	/* the same recording twice: before reading it */
		goto out;
	if (ops->start)
		ops->start(ops->ctx, ins, n);
	if (build_sources(m, ins, fs, n, window_ns ? window_ns : NT_PAIR_WINDOW_NS, ops)) {
		snprintf(err, errlen, "out of memory");
		goto out;
	}
	rc = 0;
out:
	for (int i = 0; i < opened; i++) {
		nt_input_close(&ins[i], fs[i].rd);
		if (!rc && ins[i].status != NT_READ_OK && warn) {
			fprintf(warn, "%s: warning: ", prog);
			nt_put_term(warn, names[i]);
			fputs(": ", warn);
			nt_put_term(warn, ins[i].status_msg);
			fputc('\n', warn);
		}
	}
	free(fs);
	if (!rc && nt_inputs_twice(ins, n, true, err, errlen))	/* recordings that overlap: their ends are known now */
		rc = -1;
	return rc;
}
