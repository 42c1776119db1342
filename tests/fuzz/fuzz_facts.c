/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * fuzz_facts.c - the facts file parser (nt_facts_parse: "ntbpf probe
 * --facts", NTBPF_FACTS=FILE, tests/unit/facts-*.txt) on any bytes (make
 * fuzz-ci, make fuzz FUZZ_TARGET=facts).  What parses must print and parse
 * back to the same text (a round trip), and the hook decision must run on
 * it for each role.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hooks.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct nt_facts f, g;
	static struct nt_hook_choice c[64];
	char err[256], *a = NULL, *b = NULL;
	size_t al = 0, bl = 0;
	FILE *in = fmemopen((void *)(size ? data : (const uint8_t *)""), size ? size : 1, "r"), *o;

	if (!in)
		return 0;
	memset(&f, 0, sizeof(f));
	if (nt_facts_parse(in, &f, err, sizeof(err))) {
		fclose(in);
		if (!memchr(err, '\0', sizeof(err)) || !err[0])
			abort();	/* a refusal says why */
		return 0;
	}
	fclose(in);
	o = open_memstream(&a, &al);
	nt_facts_print(o, &f);
	fclose(o);
	in = fmemopen(a, al ? al : 1, "r");
	memset(&g, 0, sizeof(g));
	if (nt_facts_parse(in, &g, err, sizeof(err)))
		abort();	/* what it printed must parse */
	fclose(in);
	o = open_memstream(&b, &bl);
	nt_facts_print(o, &g);
	fclose(o);
	if (al != bl || memcmp(a, b, al))
		abort();	/* and print the same */
	for (int role = 0; role <= 2 && nt_hooks_count() <= 64; role++) {
		memset(c, 0, sizeof(c));
		nt_hooks_decide(&f, c, nt_hooks_count(), role, role == 2);
	}
	free(a);
	free(b);
	return 0;
}
