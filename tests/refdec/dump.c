/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * dump.c - .output/tests/refdec-dump: what ntbpf's reader (libntcore.a's
 * nt_reader_*) makes of record files, every header field and every record
 * field, as the "key value" lines of tests/refdec/ntbpf_refdec.py's lines(),
 * so that tests/refdec/test_refdec.py can hold the C reader to the reference
 * decoder line by line.
 *
 *   refdec-dump OUTDIR [--as-is] FILE...
 *   refdec-dump --synth DIR N
 *
 * For the i-th FILE (from 0): OUTDIR/i.ntbpf is the record file read (the
 * fuzz pre-image fixed up by the fuzz harness's own nt_fuzz_fixup(),
 * tests/fuzz/fuzz_recfile.c; with --as-is none: FILE itself is read),
 * OUTDIR/i.c the lines.  Strings are printed in hex ("-" when empty): no escaping to get wrong.
 *
 * --synth writes DIR/synth-coded (CHNK chunks, record -z), DIR/synth-packed
 * (RECP chunks, record's default) and DIR/synth-mixed (both) with the product's
 * writer (nt_writer_*): the same N pseudo-random records in each, in stretches
 * of several kinds (every field random, all ones, realistic I/O with the
 * patterns the writer's modes are for, constant records, values left in slots
 * outside ev_mask), chunks cut short by flushes at pseudo-random places, and a
 * header with every item (strings longer than their fields among them).
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


/* ---- --synth: files written by the product's writer ---------------------------------------- */

static uint64_t sx = 0x243f6a8885a308d3ull;

static uint64_t rnd(void)
{
	sx ^= sx << 13;
	sx ^= sx >> 7;
	sx ^= sx << 17;
	return sx;
}

static uint64_t below(uint64_t n)
{
	return n ? rnd() % n : 0;
}

static void synth_hdr(struct nt_header *h)
{
	static const char *const attach[] = { "tp_btf", "raw_tp", "fentry", "kprobe", "" };
	char longs[600];

	memset(longs, 'x', sizeof(longs) - 1);
	longs[sizeof(longs) - 1] = '\0';
	nt_header_init(h, NTBPF_ROLE_INITIATOR);
	snprintf(h->hostname, sizeof(h->hostname), "%s", longs);
	snprintf(h->kernel, sizeof(h->kernel), "6.12.117+deb12-cloud-amd64");
	snprintf(h->boot_id, sizeof(h->boot_id), "510c3b69-a3fa-429a-b8db-2f0b5df43a07");
	snprintf(h->cmdline, sizeof(h->cmdline), "ntbpf record -z -d nvme0n1 -o x.ntbpf -- fio job.fio");
	h->mono_ns = 123456789012345ull;
	h->real_ns = 1764000000000000000ull;
	h->boot_ns = 123456789999999ull;
	h->sample = 100;
	h->sample_window_ms = 1000;
	h->ndevs = 2;
	snprintf(h->devs[0], sizeof(h->devs[0]), "nvme0n1=259:0");
	snprintf(h->devs[1], sizeof(h->devs[1]), "%s", longs);
	for (int i = 0; i < 7; i++) {
		struct nt_hook_info *k = nt_header_add_hook(h);

		if (!k)
			exit(1);
		snprintf(k->name, sizeof(k->name), "nvme_tcp!hook_%d", i);
		snprintf(k->attach, sizeof(k->attach), "%s", attach[i % 5]);
		snprintf(k->status, sizeof(k->status), "%s", i == 3 ? longs : "attached");
		snprintf(k->boundary, sizeof(k->boundary), "boundary %d", i);
	}
	for (int i = 0; i < 3; i++) {
		struct nt_ctrl_info *c = nt_header_add_ctrl(h);

		if (!c)
			exit(1);
		c->instance = i == 2 ? -1 : i;
		c->cntlid = 7 + i;
		snprintf(c->transport, sizeof(c->transport), "tcp");
		snprintf(c->subsysnqn, sizeof(c->subsysnqn), "nqn.2014-08.org.nvmexpress:uuid:%d", i);
		snprintf(c->hostnqn, sizeof(c->hostnqn), "%s", i == 1 ? longs : "nqn.2024-01.io.ntbpf:lab");
		snprintf(c->address, sizeof(c->address), "traddr=127.0.0.1,trsvcid=4420,src_addr=127.0.0.1");
		for (int q = 0; q < 3 * i; q++) {
			struct nt_queue_info *qi = nt_ctrl_add_queue(c);

			if (!qi)
				exit(1);
			qi->qid = q + 1;
			qi->io_cpu = q == 1 ? -1 : q;
			snprintf(qi->saddr, sizeof(qi->saddr), "%s", q == 2 ? longs : "127.0.0.1");
			qi->sport = 40000 + q;
			snprintf(qi->daddr, sizeof(qi->daddr), "127.0.0.2");
			qi->dport = 4420;
			qi->rx_queue = q == 0 ? -1 : q;
			qi->tx_queue = q + 10;
		}
		c->nns = i == 0 ? 20 : i;
		for (uint32_t n = 0; n < c->nns && n < NT_CTRL_NS; n++) {
			c->ns[n].dev = 259u << 20 | n;
			c->ns[n].nsid = n + 1;
		}
	}
	nt_header_add_cntlid_change(h, 0, 11, 200000000000000ull);
	nt_header_add_cntlid_change(h, 1, 12, 150000000000000ull);
	nt_header_add_cntlid_change(h, 0, 13, 250000000000000ull);
}

/* record k of a stretch of kind `kind`; *t, *sector: the realistic kind's clock and position */
static void synth_rec(struct ntbpf_rec *r, int kind, uint64_t *t, uint64_t *sector, uint16_t gen[8][128])
{
	static const uint16_t ports[] = { 40001, 40002, 65535, 1, 0 };

	memset(r, 0, sizeof(*r));
	switch (kind) {
	case 0:	/* every field random */
		r->t0 = rnd();
		r->sector = rnd();
		r->dev = rnd();
		r->bytes = rnd();
		r->ev_mask = rnd();
		r->ctrl = rnd();
		r->qid = rnd();
		r->cid = rnd();
		r->op = rnd();
		r->opcode = rnd();
		r->flags = rnd();
		r->role = rnd();
		r->status = rnd();
		for (int i = 0; i < NTBPF_MAX_EV; i++)
			r->ev[i] = below(3) ? rnd() : 0;	/* outside ev_mask too */
		r->port = rnd();
		r->depth = rnd();
		break;
	case 1:	/* all ones */
		memset(r, 0xff, sizeof(*r));
		break;
	case 2:	/* constant */
		r->t0 = 5;
		r->ev_mask = 0x3cf;
		r->ev[0] = 1;
		r->ev[3] = 7;
		r->qid = 1;
		r->port = 40000;
		break;
	default: {	/* realistic: the patterns the modes are for */
		uint16_t qid = 1 + below(4), tag = below(64);
		uint32_t at = 100 + below(2000);

		*t += below(20000);
		r->t0 = *t;
		r->qid = qid;
		r->cid = (uint16_t)(gen[qid][tag]++ % 16 << 12 | tag);
		r->bytes = below(8) ? 4096 : 131072;
		r->sector = below(3) ? *sector : below(1ull << 31);
		*sector = r->sector + r->bytes / 512;
		r->dev = 259u << 20 | (uint32_t)below(2);
		r->op = below(10) < 7 ? 0 : 1;
		r->opcode = r->op ? 1 : 2;
		r->role = 1;
		r->ctrl = 0;
		r->status = below(100) ? 0 : 0x4004;
		r->ev_mask = 0x3cf;
		r->ev[0] = 0;
		r->ev[1] = below(5) ? 300 + below(50) : 0;
		r->ev[2] = -(uint32_t)below(700);	/* before the slot below it: mode 2 */
		r->ev[3] = at;
		r->ev[6] = (uint32_t)(((*t / 50000) + 1) * 50000 - *t);	/* a shared arrival: mode 1 */
		r->ev[7] = r->ev[6] + below(3000);
		r->ev[8] = r->ev[7] + below(900);
		r->ev[9] = r->ev[8] + below(100000);
		if (below(50) == 0)
			r->ev[12] = 77;	/* outside ev_mask: xmask */
		r->port = ports[qid - 1];
		r->depth = below(33);
		break;
	}
	}
}

static int synth(const char *dir, uint64_t n)
{
	static const char *const name[] = { "synth-coded", "synth-packed", "synth-mixed" };
	static uint16_t gen[3][8][128];
	struct nt_writer *w[3];
	struct nt_header h;
	FILE *f[3];
	uint64_t t[3] = { 1000000000ull, 1000000000ull, 1000000000ull }, sector[3] = { 0 }, k = 0;
	char path[4096];

	synth_hdr(&h);
	for (int i = 0; i < 3; i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, name[i]);
		f[i] = fopen(path, "wb");
		if (!f[i] || !(w[i] = nt_writer_open(f[i], &h))) {
			fprintf(stderr, "refdec-dump: %s: cannot write\n", path);
			return 1;
		}
		nt_writer_set_raw(w[i], i == 1);
	}
	nt_header_free(&h);
	while (k < n) {
		int kind = below(8);
		uint64_t len = 1 + below(kind > 2 ? 6000 : kind == 2 ? 5000 : 300);
		uint64_t seed = sx;

		kind = kind > 3 ? 3 : kind;
		for (int i = 0; i < 3; i++) {
			sx = seed;	/* the same records in the three files */
			if (i == 2)
				nt_writer_set_raw(w[i], below(2));
			for (uint64_t j = 0; j < len && k + j < n; j++) {
				struct ntbpf_rec r;

				synth_rec(&r, kind, &t[i], &sector[i], gen[i]);
				if (nt_writer_add(w[i], &r))
					return 1;
			}
			if (below(2) && nt_writer_flush(w[i]))
				return 1;
		}
		k += len;
	}
	for (int i = 0; i < 3; i++) {
		struct nt_trailer tr = { .records = n < k ? n : k, .lost_user = 3, .end_mono_ns = t[i] + 1 };

		for (int s = 0; s < ST_NR; s++)
			tr.stats[s] = s * 1000 + i;
		if (nt_writer_close(w[i], &tr) || fclose(f[i]))
			return 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	int as_is = 0, first = 2;

	if (argc == 4 && !strcmp(argv[1], "--synth"))
		return synth(argv[2], strtoull(argv[3], NULL, 10));
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
		if (as_is) {	/* read where it is */
			snprintf(path, sizeof(path), "%s", argv[i]);
		} else {
			snprintf(path, sizeof(path), "%s/%d.ntbpf", argv[1], i - first);
			o = fopen(path, "wb");
			if (!o || (b.len && fwrite(b.p, 1, b.len, o) != b.len) || fclose(o)) {
				fprintf(stderr, "refdec-dump: %s: %s\n", path, strerror(errno));
				return 1;
			}
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
