/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * dump.c - .output/tests/refdec-dump: what ntbpf's reader (libntcore.a's
 * nt_reader_*) makes of record files, every header field and every record
 * field, as the "key value" lines of tests/refdec/ntbpf_refdec.py's lines(),
 * so that tests/refdec/test_refdec.py can hold the C reader to the reference
 * decoder line by line.
 *
 *   refdec-dump OUTDIR [--as-is] FILE...
 *
 * For the i-th FILE (from 0): OUTDIR/i.ntbpf is the record file read (a
 * fuzz pre-image fixed up by the fuzz harness's own nt_fuzz_fixup(),
 * tests/fuzz/fuzz_recfile.c; with --as-is the file itself), OUTDIR/i.c the
 * lines.  Strings are printed in hex ("-" when empty): no escaping to get wrong.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../fuzz/fuzz_recfile.c"

static void hex(FILE *o, const char *s)
{
	if (!*s)
		fputc('-', o);
	for (; *s; s++)
		fprintf(o, "%02x", (unsigned char)*s);
}

static void sfield(FILE *o, const char *key, const char *s)
{
	fprintf(o, "header.%s ", key);
	hex(o, s);
	fputc('\n', o);
}

static void dump_header(FILE *o, const struct nt_header *h)
{
	fprintf(o, "header.version %u\nheader.role %u\nheader.rec_size %u\nheader.nev %u\n", h->version, h->role,
		h->rec_size, h->nev);
	fprintf(o, "header.mono_ns %" PRIu64 "\nheader.real_ns %" PRIu64 "\nheader.boot_ns %" PRIu64 "\n", h->mono_ns,
		h->real_ns, h->boot_ns);
	fprintf(o, "header.sample %u\nheader.sample_window_ms %u\n", h->sample, h->sample_window_ms);
	sfield(o, "ntbpf_version", h->ntbpf_version);
	sfield(o, "hostname", h->hostname);
	sfield(o, "kernel", h->kernel);
	sfield(o, "boot_id", h->boot_id);
	sfield(o, "cmdline", h->cmdline);
	fprintf(o, "header.ndevs %u\n", h->ndevs);
	for (uint32_t i = 0; i < h->ndevs; i++) {
		fprintf(o, "header.dev[%u] ", i);
		hex(o, h->devs[i]);
		fputc('\n', o);
	}
	fprintf(o, "header.nhooks %u\n", h->nhooks);
	for (uint32_t i = 0; i < h->nhooks; i++) {
		const struct nt_hook_info *k = &h->hooks[i];

		fprintf(o, "header.hook[%u] ", i);
		hex(o, k->name);
		fputc(' ', o);
		hex(o, k->attach);
		fputc(' ', o);
		hex(o, k->status);
		fputc(' ', o);
		hex(o, k->boundary);
		fputc('\n', o);
	}
	fprintf(o, "header.nctrls %u\n", h->nctrls);
	for (uint32_t i = 0; i < h->nctrls; i++) {
		const struct nt_ctrl_info *c = &h->ctrls[i];

		fprintf(o, "header.ctrl[%u] %d %u ", i, c->instance, c->cntlid);
		hex(o, c->transport);
		fputc(' ', o);
		hex(o, c->subsysnqn);
		fputc(' ', o);
		hex(o, c->hostnqn);
		fputc(' ', o);
		hex(o, c->address);
		fprintf(o, " %u %u\n", c->nqueues, c->nns);
		for (uint32_t j = 0; j < c->nqueues; j++) {
			const struct nt_queue_info *q = &c->queues[j];

			fprintf(o, "header.ctrl[%u].queue[%u] %u %d ", i, j, q->qid, q->io_cpu);
			hex(o, q->saddr);
			fprintf(o, " %u ", q->sport);
			hex(o, q->daddr);
			fprintf(o, " %u %d %d\n", q->dport, q->rx_queue, q->tx_queue);
		}
		for (uint32_t j = 0; j < c->nns && j < NT_CTRL_NS; j++)
			fprintf(o, "header.ctrl[%u].ns[%u] %u %u\n", i, j, c->ns[j].dev, c->ns[j].nsid);
	}
	fprintf(o, "header.ncntlid_changes %u\n", h->ncchanges);
	for (uint32_t i = 0; i < h->ncchanges && i < NT_MAX_CNTLID_CHANGES; i++)
		fprintf(o, "header.cntlid_change[%u] %d %u %" PRIu64 "\n", i, h->cchanges[i].instance,
			h->cchanges[i].cntlid, h->cchanges[i].from_mono_ns);
}

static void dump_rec(FILE *o, uint64_t i, const struct ntbpf_rec *r)
{
	fprintf(o, "rec[%" PRIu64 "].t0 %llu\n", i, (unsigned long long)r->t0);
	fprintf(o, "rec[%" PRIu64 "].sector %llu\n", i, (unsigned long long)r->sector);
	fprintf(o, "rec[%" PRIu64 "].dev %u\n", i, r->dev);
	fprintf(o, "rec[%" PRIu64 "].bytes %u\n", i, r->bytes);
	fprintf(o, "rec[%" PRIu64 "].ev_mask %u\n", i, r->ev_mask);
	fprintf(o, "rec[%" PRIu64 "].ctrl %u\n", i, r->ctrl);
	fprintf(o, "rec[%" PRIu64 "].qid %u\n", i, r->qid);
	fprintf(o, "rec[%" PRIu64 "].cid %u\n", i, r->cid);
	fprintf(o, "rec[%" PRIu64 "].op %u\n", i, r->op);
	fprintf(o, "rec[%" PRIu64 "].opcode %u\n", i, r->opcode);
	fprintf(o, "rec[%" PRIu64 "].flags %u\n", i, r->flags);
	fprintf(o, "rec[%" PRIu64 "].role %u\n", i, r->role);
	fprintf(o, "rec[%" PRIu64 "].status %u\n", i, r->status);
	for (int k = 0; k < NTBPF_MAX_EV; k++)
		fprintf(o, "rec[%" PRIu64 "].ev[%d] %u\n", i, k, r->ev[k]);
	fprintf(o, "rec[%" PRIu64 "].port %u\n", i, r->port);
	fprintf(o, "rec[%" PRIu64 "].depth %u\n", i, r->depth);
	fprintf(o, "rec[%" PRIu64 "].reserved %u %u\n", i, r->reserved[0], r->reserved[1]);
}

/* the file's lines into o; -1 if it could not be opened at all */
static int dump(FILE *o, const char *path)
{
	static const char *const st_name[] = { "ok", "truncated", "corrupt" };
	struct nt_header h;
	struct nt_reader *rd;
	const struct ntbpf_rec *r;
	const struct nt_trailer *t;
	enum nt_read_status st;
	char err[512];
	uint64_t n = 0;
	size_t k;
	FILE *f = fopen(path, "rb");

	if (!f)
		return -1;
	rd = nt_reader_open(f, &h, err, sizeof(err));
	if (!rd) {
		fprintf(o, "open refused\n# %s\n", err);
		fclose(f);
		return 0;
	}
	fprintf(o, "open ok\n");
	dump_header(o, &h);
	while ((k = nt_reader_chunk(rd, &r)) > 0)
		for (size_t j = 0; j < k; j++)
			dump_rec(o, n++, &r[j]);
	st = nt_reader_status(rd, err, sizeof(err));
	fprintf(o, "records %" PRIu64 "\nstatus %s\n", n, st_name[st]);
	t = nt_reader_trailer(rd);
	if (st == NT_READ_OK && t) {
		fprintf(o, "trailer %" PRIu64 " %" PRIu64 " %" PRIu64, t->records, t->lost_user, t->end_mono_ns);
		for (int s = 0; s < ST_NR; s++)
			fprintf(o, " %" PRIu64, t->stats[s]);
		fputc('\n', o);
	}
	if (st != NT_READ_OK)
		fprintf(o, "# %s\n", err);
	nt_reader_close(rd);
	nt_header_free(&h);
	fclose(f);
	return 0;
}

static uint8_t *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf = NULL;
	size_t cap = 0, n = 0, got;

	if (!f)
		return NULL;
	do {
		if (n == cap) {
			uint8_t *nb = realloc(buf, cap = cap ? 2 * cap : 65536);

			if (!nb) {
				free(buf);
				fclose(f);
				return NULL;
			}
			buf = nb;
		}
		got = fread(buf + n, 1, cap - n, f);
		n += got;
	} while (got);
	fclose(f);
	*len = n;
	return buf;
}

int main(int argc, char **argv)
{
	int as_is = 0, first = 2;

	if (argc < 2) {
		fprintf(stderr, "usage: refdec-dump OUTDIR [--as-is] FILE...\n");
		return 2;
	}
	if (argc > 2 && !strcmp(argv[2], "--as-is")) {
		as_is = 1;
		first = 3;
	}
	for (int i = first; i < argc; i++) {
		char path[4096], cpath[4096];
		struct fz_buf b = { 0 };
		size_t len;
		uint8_t *in = slurp(argv[i], &len);
		FILE *o;

		if (!in) {
			fprintf(stderr, "refdec-dump: %s: %s\n", argv[i], strerror(errno));
			return 1;
		}
		if (as_is) {
			b.p = in;
			b.len = len;
		} else {
			if (nt_fuzz_fixup(in, len, &b)) {
				fprintf(stderr, "refdec-dump: %s: out of memory\n", argv[i]);
				return 1;
			}
			free(in);
		}
		snprintf(path, sizeof(path), "%s/%d.ntbpf", argv[1], i - first);
		o = fopen(path, "wb");
		if (!o || (b.len && fwrite(b.p, 1, b.len, o) != b.len) || fclose(o)) {
			fprintf(stderr, "refdec-dump: %s: %s\n", path, strerror(errno));
			return 1;
		}
		free(b.p);
		snprintf(cpath, sizeof(cpath), "%s/%d.c", argv[1], i - first);
		o = fopen(cpath, "w");
		if (!o) {
			fprintf(stderr, "refdec-dump: %s: %s\n", cpath, strerror(errno));
			return 1;
		}
		if (dump(o, path) || fclose(o)) {
			fprintf(stderr, "refdec-dump: %s: cannot read back\n", argv[i]);
			return 1;
		}
	}
	return 0;
}
