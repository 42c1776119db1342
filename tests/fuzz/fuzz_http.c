/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * fuzz_http.c - the metrics endpoint's HTTP request handling
 * (nt_metrics_http_reply: request line, headers, Accept) on any bytes
 * (make fuzz-ci, make fuzz FUZZ_TARGET=http).  The reply must be a status
 * line with a status the server sends, whatever came in.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "metrics.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct nt_metrics *m;
	char *req = malloc(size + 1), *out = NULL;
	size_t olen = 0;
	FILE *f;
	int st;

	if (!m)
		m = nt_metrics_new("initiator");
	if (!req || !m) {
		free(req);
		return 0;
	}
	memcpy(req, data, size);
	req[size] = '\0';
	f = open_memstream(&out, &olen);
	if (!f) {
		free(req);
		return 0;
	}
	st = nt_metrics_http_reply(f, m, req, size);
	fclose(f);
	if (st < 200 || st > 599 || olen < 12 || memcmp(out, "HTTP/1.", 7))
		abort();	/* every request gets a status line */
	free(out);
	free(req);
	return 0;
}
