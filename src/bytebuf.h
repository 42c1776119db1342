/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * bytebuf - the record file's bytes, shared by its container (recfile.c)
 * and its column codec (colenc.c, coldec.c): little-endian integers encoded with
 * shifts (never by copying host memory, so a file moves between hosts of
 * any byte order), a growable output buffer, a bounds-checked input cursor,
 * and LEB128 varints on both.  Inline: the codec's loops call them per byte.
 */
#ifndef NTBPF_BYTEBUF_H
#define NTBPF_BYTEBUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

static inline void put16(uint8_t *p, uint16_t v)
{
	p[0] = v;
	p[1] = v >> 8;
}

static inline void put32(uint8_t *p, uint32_t v)
{
	p[0] = v;
	p[1] = v >> 8;
	p[2] = v >> 16;
	p[3] = v >> 24;
}

static inline void put64(uint8_t *p, uint64_t v)
{
	put32(p, v);
	put32(p + 4, v >> 32);
}

static inline uint16_t get16(const uint8_t *p)
{
	return p[0] | (uint16_t)p[1] << 8;
}

static inline uint32_t get32(const uint8_t *p)
{
	return p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

static inline uint64_t get64(const uint8_t *p)
{
	return get32(p) | (uint64_t)get32(p + 4) << 32;
}

/* Make room for need elements (no shrinking). */
static inline int grow(void **p, size_t *cap, size_t need, size_t elsize)
{
	void *np;

	if (need <= *cap)
		return 0;
	np = realloc(*p, need * elsize);
	if (!np)
		return -1;
	*p = np;
	*cap = need;
	return 0;
}

/* ---- output: a growable buffer; an allocation failure is sticky and checked once */

struct buf {
	uint8_t *p;
	size_t len, cap;
	bool oom;
};

static inline uint8_t *buf_room(struct buf *b, size_t n)
{
	uint8_t *p;

	if (b->oom)
		return NULL;
	if (b->len + n > b->cap) {
		size_t cap = b->cap ? b->cap * 2 : 4096;

		while (cap < b->len + n)
			cap *= 2;
		p = realloc(b->p, cap);
		if (!p) {
			b->oom = true;
			return NULL;
		}
		b->p = p;
		b->cap = cap;
	}
	p = b->p + b->len;
	b->len += n;
	return p;
}

static inline void buf_u8(struct buf *b, uint8_t v)
{
	uint8_t *p = buf_room(b, 1);

	if (p)
		*p = v;
}

static inline void buf_u16(struct buf *b, uint16_t v)
{
	uint8_t *p = buf_room(b, 2);

	if (p)
		put16(p, v);
}

static inline void buf_u32(struct buf *b, uint32_t v)
{
	uint8_t *p = buf_room(b, 4);

	if (p)
		put32(p, v);
}

static inline void buf_u64(struct buf *b, uint64_t v)
{
	uint8_t *p = buf_room(b, 8);

	if (p)
		put64(p, v);
}

/* LEB128: 7 bits per byte, low first, high bit set on all but the last. */
static inline void buf_uv(struct buf *b, uint64_t v)
{
	uint8_t *p = buf_room(b, 10), *q = p;

	if (!p)
		return;
	while (v >= 0x80) {
		*q++ = v | 0x80;
		v >>= 7;
	}
	*q++ = v;
	b->len -= 10 - (q - p);
}

/* ---- input: a bounds-checked cursor; any overrun sets bad and yields zeroes */

struct cur {
	const uint8_t *p;
	size_t len;
	bool bad;
};

static inline const uint8_t *cur_take(struct cur *c, size_t n)
{
	const uint8_t *p = c->p;

	if (c->bad || c->len < n) {
		c->bad = true;
		return NULL;
	}
	c->p += n;
	c->len -= n;
	return p;
}

static inline uint8_t cur_u8(struct cur *c)
{
	const uint8_t *p = cur_take(c, 1);

	return p ? *p : 0;
}

static inline uint16_t cur_u16(struct cur *c)
{
	const uint8_t *p = cur_take(c, 2);

	return p ? get16(p) : 0;
}

static inline uint32_t cur_u32(struct cur *c)
{
	const uint8_t *p = cur_take(c, 4);

	return p ? get32(p) : 0;
}

static inline uint64_t cur_u64(struct cur *c)
{
	const uint8_t *p = cur_take(c, 8);

	return p ? get64(p) : 0;
}

/* A varint of at most 10 bytes and 64 bits; longer: bad. */
static inline uint64_t cur_uv(struct cur *c)
{
	uint64_t v = 0;
	unsigned int i;

	for (i = 0; i < 10; i++) {
		uint8_t b = cur_u8(c);

		v |= (uint64_t)(b & 0x7f) << (7 * i);
		if (!(b & 0x80)) {
			if (i == 9 && b > 1)	/* past 64 bits */
				c->bad = true;
			return v;
		}
	}
	c->bad = true;		/* more than 10 bytes */
	return 0;
}

#endif
