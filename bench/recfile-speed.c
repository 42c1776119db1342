// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * bench/recfile-speed: the record file codec alone (container and column
 * codec, file version NT_FILE_VERSION) on the synthetic I/O of bench/gen
 * (synth.h): N I/Os, so 2N records (initiator and target), written to and
 * read from memory.  Thread CPU time; the best of ROUNDS rounds (the machine
 * is shared).
 *
 *   recfile-speed [N [ROUNDS]]
 *
 * Prints one markdown row, as bench/run does:
 *   encode   nt_writer_add + nt_writer_close, records per CPU second
 *   decode   nt_reader_next to the end (inflate included), records per CPU second
 *   size     file bytes per record (header and trailer included)
 * and checks that every record reads back exactly as written.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "recfile.h"
#include "synth.h"

static volatile uint64_t sink;	/* what was read is used */

static double cpu_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

struct mem {
	char *buf;
	size_t len;
};

static void die(const char *what)
{
	fprintf(stderr, "recfile-speed: %s\n", what);
	exit(1);
}

static struct nt_writer *open_w(FILE **f, struct mem *m, int role)
{
	struct nt_header h;
	struct nt_writer *w;

	*f = open_memstream(&m->buf, &m->len);
	if (!*f)
		die("open_memstream");
	nt_header_init(&h, role);
	w = nt_writer_open(*f, &h);
	nt_header_free(&h);
	if (!w)
		die("nt_writer_open");
	return w;
}

/* Both files, records interleaved as a recorder pair would produce them. */
static double encode(const struct ntbpf_rec *ini, const struct ntbpf_rec *tgt, size_t n,
		     struct mem m[2])
{
	FILE *fi, *ft;
	struct nt_writer *wi, *wt;
	double t;
	size_t k;

	wi = open_w(&fi, &m[0], NTBPF_ROLE_INITIATOR);
	wt = open_w(&ft, &m[1], NTBPF_ROLE_TARGET);
	t = cpu_now();
	for (k = 0; k < n; k++)
		if (nt_writer_add(wi, &ini[k]) || nt_writer_add(wt, &tgt[k]))
			die("nt_writer_add");
	if (nt_writer_close(wi, NULL) || nt_writer_close(wt, NULL))
		die("nt_writer_close");
	t = cpu_now() - t;
	if (fclose(fi) || fclose(ft))
		die("fclose");
	return t;
}

/* Read one file to its end; check (untimed) or just sum (timed). */
static double decode(const struct mem *m, const struct ntbpf_rec *want, size_t n, uint64_t *sum)
{
	struct ntbpf_rec r;
	struct nt_reader *rd;
	struct nt_header h;
	char err[200];
	size_t got = 0;
	double t;
	FILE *f = fmemopen(m->buf, m->len, "r");

	if (!f)
		die("fmemopen");
	rd = nt_reader_open(f, &h, err, sizeof(err));
	if (!rd)
		die(err);
	if (h.version != NT_FILE_VERSION)
		die("wrong version written");
	t = cpu_now();
	if (want) {
		while (nt_reader_next(rd, &r)) {
			if (got >= n || memcmp(&r, &want[got], sizeof(r)))
				die("a record did not read back as written");
			got++;
		}
	} else {
		while (nt_reader_next(rd, &r)) {
			*sum += r.t0 + r.ev[9] + r.cid;
			got++;
		}
	}
	t = cpu_now() - t;
	if (nt_reader_status(rd, err, sizeof(err)) != NT_READ_OK)
		die(err);
	if (got != n)
		die("record count");
	nt_reader_close(rd);
	nt_header_free(&h);
	fclose(f);
	return t;
}

int main(int argc, char **argv)
{
	size_t n = argc > 1 ? strtoull(argv[1], NULL, 10) : 2000000, k;
	int rounds = argc > 2 ? atoi(argv[2]) : 3, r;
	struct ntbpf_rec *ini = malloc(n * sizeof(*ini)), *tgt = malloc(n * sizeof(*tgt));
	struct synth sy;
	uint64_t sum = 0;

	if (!ini || !tgt || !n || rounds < 1)
		die("usage: recfile-speed [N [ROUNDS]] (out of memory?)");
	synth_init(&sy);
	for (k = 0; k < n; k++)
		synth_pair(&sy, k, &ini[k], &tgt[k]);
	{
		double te = 1e9, td = 1e9, t;
		struct mem m[2];

		for (r = 0; r < rounds; r++) {
			t = encode(ini, tgt, n, m);
			te = t < te ? t : te;
			if (r == 0) {
				decode(&m[0], ini, n, NULL);
				decode(&m[1], tgt, n, NULL);
			}
			t = decode(&m[0], NULL, n, &sum) + decode(&m[1], NULL, n, &sum);
			td = t < td ? t : td;
			if (r < rounds - 1) {
				free(m[0].buf);
				free(m[1].buf);
			}
		}
		printf("| record codec, file version %d (columns, modes) | %.2f M records/s encode, %.2f M records/s decode (%.0f / %.0f ns per record), %.2f bytes per record |\n",
		       NT_FILE_VERSION, 2 * n / te / 1e6, 2 * n / td / 1e6, te * 1e9 / (2 * n),
		       td * 1e9 / (2 * n), (double)(m[0].len + m[1].len) / (2 * n));
		free(m[0].buf);
		free(m[1].buf);
	}
	sink = sum;
	free(ini);
	free(tgt);
	return 0;
}
