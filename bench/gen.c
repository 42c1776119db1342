// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * bench/gen: writes a synthetic initiator.ntbpf and target.ntbpf of N matched
 * 4k reads on 4 queues at QD32, with lognormal-ish stage times (synth.h), so
 * that "ntbpf report" throughput and bytes per I/O can be measured at any
 * size.
 *
 *   gen N DIR
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "recfile.h"
#include "synth.h"

static struct nt_writer *open_w(const char *dir, const char *name, int role, FILE **f)
{
	char path[512];
	struct nt_header h;
	struct nt_writer *w;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	*f = fopen(path, "wb");
	if (!*f) {
		perror(path);
		exit(1);
	}
	synth_header(&h, role);
	w = nt_writer_open(*f, &h);
	nt_header_free(&h);
	if (!w) {
		perror("writer");
		exit(1);
	}
	return w;
}

int main(int argc, char **argv)
{
	uint64_t n = argc > 1 ? strtoull(argv[1], NULL, 10) : 1000000;
	const char *dir = argc > 2 ? argv[2] : ".";
	FILE *fi, *ft;
	struct nt_writer *wi = open_w(dir, "initiator.ntbpf", NTBPF_ROLE_INITIATOR, &fi);
	struct nt_writer *wt = open_w(dir, "target.ntbpf", NTBPF_ROLE_TARGET, &ft);
	struct synth sy;

	synth_init(&sy);
	for (uint64_t k = 0; k < n; k++) {
		struct ntbpf_rec i, g;

		synth_pair(&sy, k, &i, &g);
		if (nt_writer_add(wi, &i) || nt_writer_add(wt, &g)) {
			perror("write");
			return 1;
		}
	}
	{
		struct nt_trailer tr = { .records = n };

		tr.stats[ST_EMITTED] = n;
		if (nt_writer_close(wi, &tr) || nt_writer_close(wt, &tr) || fclose(fi) || fclose(ft)) {
			perror("close");
			return 1;
		}
	}
	return 0;
}
