// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* escape.c - untrusted strings made safe for a terminal, JSON and CSV (escape.h). */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include "escape.h"

/*
 * Length of the valid UTF-8 sequence at s (RFC 3629: no overlongs, no
 * surrogates, at most U+10FFFF), 0 if the bytes there are not one; *cp its
 * code point.
 */
static size_t utf8_len(const unsigned char *s, uint32_t *cp)
{
	unsigned char c = s[0];
	uint32_t v, min;
	size_t n, i;

	if (c < 0x80) {
		*cp = c;
		return 1;
	}
	if (c >= 0xc2 && c <= 0xdf)
		n = 2, v = c & 0x1f, min = 0x80;
	else if (c >= 0xe0 && c <= 0xef)
		n = 3, v = c & 0x0f, min = 0x800;
	else if (c >= 0xf0 && c <= 0xf4)
		n = 4, v = c & 0x07, min = 0x10000;
	else
		return 0;
	for (i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)	/* also stops at the NUL */
			return 0;
		v = v << 6 | (s[i] & 0x3f);
	}
	if (v < min || v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff))
		return 0;
	*cp = v;
	return n;
}

/* code points a terminal acts on or that reorder what is shown */
static bool cp_unsafe(uint32_t cp)
{
	return cp < 0x20 || cp == 0x7f || (cp >= 0x80 && cp <= 0x9f) ||
	       (cp >= 0x202a && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069) ||
	       cp == 0x200e || cp == 0x200f || cp == 0x061c;
}

/*
 * The term form, piece by piece: emit(ctx, bytes, n) for each piece, stopping
 * when it returns false.
 */
static void term_walk(const char *str, bool (*emit)(void *, const char *, size_t), void *ctx)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *s = (const unsigned char *)str;

	while (*s) {
		uint32_t cp;
		size_t n = utf8_len(s, &cp);

		if (n && *s == '\\') {
			if (!emit(ctx, "\\\\", 2))
				return;
		} else if (n && !cp_unsafe(cp)) {
			if (!emit(ctx, (const char *)s, n))
				return;
		} else {
			/* every byte of an unsafe character, or one byte that is not UTF-8 */
			size_t k, m = n ? n : 1;

			for (k = 0; k < m; k++) {
				char e[4] = { '\\', 'x', hex[s[k] >> 4], hex[s[k] & 15] };

				if (!emit(ctx, e, 4))
					return;
			}
		}
		s += n ? n : 1;
	}
}

struct sbuf {
	char *p;
	size_t len, at;
};

static bool emit_buf(void *ctx, const char *s, size_t n)
{
	struct sbuf *b = ctx;

	if (b->at + n >= b->len)
		return false;	/* cut before a character that does not fit */
	memcpy(b->p + b->at, s, n);
	b->at += n;
	b->p[b->at] = '\0';
	return true;
}

static bool emit_file(void *ctx, const char *s, size_t n)
{
	fwrite(s, 1, n, ctx);
	return true;
}

const char *nt_esc_term(char *buf, size_t len, const char *s)
{
	struct sbuf b = { buf, len, 0 };

	if (!len)
		return buf;
	buf[0] = '\0';
	term_walk(s, emit_buf, &b);
	return buf;
}

void nt_put_term(FILE *out, const char *s)
{
	term_walk(s, emit_file, out);
}

void nt_put_json(FILE *out, const char *str)
{
	const unsigned char *s = (const unsigned char *)str;

	fputc('"', out);
	while (*s) {
		uint32_t cp;
		size_t n = utf8_len(s, &cp);

		if (!n) {
			fputs("\\ufffd", out);	/* not UTF-8: the replacement character */
			s++;
			continue;
		}
		if (cp == '"' || cp == '\\')
			fprintf(out, "\\%c", (int)cp);
		else if (cp < 0x20 || cp == 0x7f || (cp >= 0x80 && cp <= 0x9f))
			fprintf(out, "\\u%04x", (unsigned int)cp);
		else
			fwrite(s, 1, n, out);
		s += n;
	}
	fputc('"', out);
}

static bool emit_csv(void *ctx, const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (s[i] == '"')
			fputc('"', ctx);
		fputc(s[i], ctx);
	}
	return true;
}

void nt_put_csv(FILE *out, const char *s)
{
	size_t n = strlen(s);
	bool quote = strpbrk(s, ",\"") || (n && (s[0] == ' ' || s[n - 1] == ' '));

	if (!quote) {
		nt_put_term(out, s);	/* no control bytes, so no line breaks */
		return;
	}
	fputc('"', out);
	term_walk(s, emit_csv, out);
	fputc('"', out);
}
