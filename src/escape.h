/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * escape - strings from record files (hostnames, kernels, hook names, device
 * names, messages) on their way out.  They are untrusted bytes: a hostname
 * with a newline would print a fake report line, one with ESC would drive the
 * terminal, a byte that is not UTF-8 would make the JSON unparseable.
 *
 *   term   valid UTF-8 as it is, except: control bytes (C0, DEL), C1 controls,
 *          bidirectional overrides, backslash and bytes that are not UTF-8
 *          become \xNN (backslash: \\), so the output is one line of printable text
 *   json   a JSON string with its quotes: " \ and controls escaped, bytes that
 *          are not UTF-8 as U+FFFD; always valid UTF-8 and valid JSON
 *   csv    a field: the term form, quoted (RFC 4180) when it holds , " or a space
 *          at either end
 */
#ifndef NTBPF_ESCAPE_H
#define NTBPF_ESCAPE_H

#include <stddef.h>
#include <stdio.h>

/* the term form into buf (cut at a character, always NUL-terminated); returns buf */
const char *nt_esc_term(char *buf, size_t len, const char *s);
void nt_put_term(FILE *out, const char *s);
void nt_put_json(FILE *out, const char *s);
void nt_put_csv(FILE *out, const char *s);

#endif
