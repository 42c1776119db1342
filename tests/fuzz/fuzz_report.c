/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * fuzz_report.c - ntbpf report and script over two record files whose
 * records are valid but adversarial (make fuzz-ci, make fuzz
 * FUZZ_TARGET=report): clock jumps, command ids reused, counts at their
 * limits, as many groups as the fields allow.  The input is two record-file
 * pre-images (tests/fuzz/fuzz_recfile.c: each chunk's payload its raw bytes,
 * the CRCs recomputed by nt_fuzz_fixup), the first one's length in the first
 * 4 bytes (little endian); both go through the report's whole path (pairing,
 * groups, --diagnose, --hist, JSON and text), the duplicate check, and
 * script's rows.  ASan and UBSan say what went wrong; libFuzzer's leak check
 * that nothing stayed allocated.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../fuzz/fuzz_recfile.c"
#include "report.h"
#include "script.h"

static int row(void *ctx, const struct nt_row *w)
{
	(*(uint64_t *)ctx) += w->vals[0] + w->time;
	return 0;
}

static void report_pair(const struct fz_buf *b, enum nt_format fmt, FILE *sink)
{
	static const char *const names[2] = { "a.ntbpf", "b.ntbpf" };
	struct nt_report_opts o = { .version = "fuzz", .npcts = 3, .pcts = { 50, 99, 99.999999 }, .format = fmt,
				    .group_by = NT_GB_OP | NT_GB_SIZE | NT_GB_DEV | NT_GB_QUEUE, .hist = true,
				    .diagnose = true, .window_ns = 100000000 };
	struct nt_input ins[2], ins2[2];
	struct nt_report rep;
	struct nt_rows *rows = NULL;
	FILE *f[2];
	char err[1200];
	uint64_t sum = 0;

	memset(ins, 0, sizeof(ins));
	memset(ins2, 0, sizeof(ins2));
	for (int k = 0; k < 2; k++)
		f[k] = fmemopen(b[k].len ? b[k].p : (uint8_t *)"", b[k].len ? b[k].len : 1, "rb");
	if (f[0] && f[1]) {
		if (!nt_report_build_files(&rep, ins, f, names, 2, &o, sink, err, sizeof(err)))
			nt_report_print(sink, &rep);
		nt_report_free(&rep);
		if (!nt_rows_open(&rows, ins2, f, names, 2, "fuzz", sink))
			nt_rows_each(rows, row, &sum);
		nt_rows_free(rows);
	}
	for (int k = 0; k < 2; k++) {
		if (f[k])
			fclose(f[k]);
		nt_input_free(&ins[k]);
		nt_input_free(&ins2[k]);
	}
	__asm__ volatile("" : : "r"(sum));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static FILE *sink;
	struct fz_buf b[2] = { { 0 }, { 0 } };
	size_t n0;

	if (size < 4)
		return 0;
	if (!sink)
		sink = fopen("/dev/null", "w");
	n0 = fz_get32(data);
	n0 = n0 > size - 4 ? size - 4 : n0;
	if (!nt_fuzz_fixup(data + 4, n0, &b[0]) && !nt_fuzz_fixup(data + 4 + n0, size - 4 - n0, &b[1])) {
		report_pair(b, (data[0] & 1) ? NT_FMT_JSON : NT_FMT_TEXT, sink);
	}
	free(b[0].p);
	free(b[1].p);
	return 0;
}
