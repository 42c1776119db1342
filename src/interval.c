// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * interval.c - one host's report per interval (src/interval.h): the
 * records of the interval held (capped), grouped at its end through the
 * report's own aggregation and printed as the interval's lines.  What
 * "ntbpf record --interval" prints, and "ntbpf live" without a peer.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "interval.h"
#include "render.h"
#include "stream.h"

int nt_recvec_push(struct nt_recvec *v, const struct ntbpf_rec *r, size_t max)
{
	if (v->n >= max)
		return -1;
	if (v->n == v->cap) {
		size_t ncap = v->cap ? v->cap * 2 : 1024;
		struct ntbpf_rec *p = realloc(v->v, ncap * sizeof(*p));

		if (!p)
			return -1;
		v->v = p;
		v->cap = ncap;
	}
	v->v[v->n++] = *r;
	return 0;
}

void nt_interval_init(struct nt_interval *iv, const struct nt_config *cfg, const struct nt_header *local)
{
	memset(iv, 0, sizeof(*iv));
	nt_report_opts_of(cfg, &iv->o);
	iv->local.path = "live";
	iv->local.hdr = *local;	/* shares the caller's arrays: never freed here */
	iv->max_recs = NT_STREAM_MAX_RECS;
}

struct nt_interval *nt_interval_new(const struct nt_config *cfg, const struct nt_header *local)
{
	struct nt_interval *iv = malloc(sizeof(*iv));

	if (iv)
		nt_interval_init(iv, cfg, local);
	return iv;
}

void nt_interval_push(struct nt_interval *iv, const struct ntbpf_rec *r)
{
	if (nt_recvec_push(&iv->cur, r, iv->max_recs))
		iv->dropped++;
}

int nt_time_label(char *buf, size_t len, bool rfc3339)
{
	struct timespec ts;
	struct tm tm;
	char zone[8];
	size_t n;

	clock_gettime(CLOCK_REALTIME, &ts);
	if (!localtime_r(&ts.tv_sec, &tm))
		return -1;
	if (!rfc3339)
		return strftime(buf, len, "%H:%M:%S", &tm) ? 0 : -1;
	/* 2026-11-24T04:33:08.123+01:00: RFC 3339, local time with its offset */
	n = strftime(buf, len, "%Y-%m-%dT%H:%M:%S", &tm);
	if (!n || !strftime(zone, sizeof(zone), "%z", &tm) || strlen(zone) != 5)
		return -1;
	return snprintf(buf + n, len - n, ".%03ld%.3s:%s", ts.tv_nsec / 1000000, zone, zone + 3) < (int)(len - n) ? 0 : -1;
}

void nt_interval_when(const struct nt_interval *iv, char *buf, size_t len)
{
	nt_time_label(buf, len, iv->o.format != NT_FMT_TEXT);	/* JSON Lines and CSV: RFC 3339 */
}

void nt_interval_tick(struct nt_interval *iv, FILE *out, double secs, uint64_t lost)
{
	struct nt_report rep;
	struct nt_interval_info info = { .lost = lost + iv->dropped };
	char when[40];

	iv->dropped = 0;	/* over the cap: lost in this interval */
	nt_interval_when(iv, when, sizeof(when));
	nt_report_begin(&rep, &iv->local, 1, &iv->o);
	for (size_t k = 0; k < iv->cur.n; k++) {
		const struct ntbpf_rec *r = &iv->cur.v[k];

		if (r->role == NTBPF_ROLE_TARGET)
			nt_report_add(&rep, NULL, r);
		else
			nt_report_add(&rep, r, NULL);
	}
	nt_report_finish(&rep);
	nt_report_print_interval(out, &rep, when, secs, &info);
	nt_report_free(&rep);
	iv->cur.n = 0;
}

void nt_interval_fini(struct nt_interval *iv)
{
	free(iv->cur.v);
	iv->cur = (struct nt_recvec){ 0 };
}

void nt_interval_free(struct nt_interval *iv)
{
	if (!iv)
		return;
	nt_interval_fini(iv);
	free(iv);
}
