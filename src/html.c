// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * html.c - the report as one self-contained HTML file (html.h).  Every I/O
 * (a row of src/script.c) adds its stages to its group's per-time-column
 * sketches: end_to_end in biolatency's log2 us bins (the heatmap), each
 * charted stage in 8 bins per power of two of ns (p50/p99 over time, within
 * 1/16 of the value).  The stacked bars use the report's own percentiles.
 */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "html.h"
#include "diagnose.h"
#include "escape.h"
#include "stages.h"

#define SKB 240		/* sketch bins: 8 per power of two of a 32-bit ns value */

/*
 * the stages charted, in row order: the ten, and what a block-only record
 * yields (blk_device, alone where nothing finer is known, and end_to_end)
 */
static int chart_stages(int *cs)
{
	int n = 0;

	for (int k = 0; k < NT_ST_NR; k++) {
		int s = nt_stage_at_row[k];

		if ((NT_TEN_MASK | NT_BLK_ONLY_MASK) & (1u << s))
			cs[n++] = s;
	}
	return n;
}

static const char *const palette[] = {
	"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948",
	"#b07aa1", "#ff9da7", "#9c755f", "#bab0ac", "#1f77b4", "#17becf",
};

static uint32_t sk_bin(uint32_t v)
{
	int m;

	if (v < 8)
		return v;
	m = 31 - __builtin_clz(v);
	return (uint32_t)(m - 2) * 8 + ((v >> (m - 3)) & 7);
}

static double sk_value(uint32_t b)
{
	int m;
	double lo, w;

	if (b < 8)
		return b;
	m = b / 8 + 2;
	lo = (double)((8 + b % 8) << (m - 3));
	w = (double)(1u << (m - 3));
	return lo + w / 2;
}

static int log2_us(uint64_t ns)
{
	uint64_t us = ns / 1000;
	int i = us > 1 ? 63 - __builtin_clzll(us) : 0;

	return i < NT_LOG2_BINS ? i : NT_LOG2_BINS - 1;
}

struct gdata {
	uint32_t heat[NT_HTML_TBINS][NT_LOG2_BINS];
	uint32_t sk[NT_ST_NR][NT_HTML_TBINS][SKB];	/* per chart stage (index into cs) */
};

struct html {
	const struct nt_report *rep;
	int cs[NT_ST_NR], ncs;
	int slot[NT_ST_NR];		/* stage -> index in cs, or -1 */
	uint64_t t_lo, t_hi;
	struct gdata **g;
	int ng;
	bool oom;
};

static int take_row(void *ctx, const struct nt_row *w)
{
	struct html *h = ctx;
	struct ntbpf_rec r = { .op = w->op, .bytes = w->bytes, .role = w->role, .dev = w->dev, .flags = w->flags,
			       .ctrl = w->ctrl, .qid = w->qid, .status = w->status };
	/* the report read the same files in the same order: its header of the row's file */
	const struct nt_header *hdr = w->file < h->rep->nins ? &h->rep->ins[w->file].hdr : NULL;
	int gi = nt_report_group_index(h->rep, &r, hdr), t;
	struct gdata *d;

	if (gi < 0 || gi >= h->ng)
		return 0;
	if (!h->g[gi] && !(h->g[gi] = calloc(1, sizeof(struct gdata)))) {
		h->oom = true;
		return -1;
	}
	d = h->g[gi];
	t = (int)((w->time < h->t_lo ? 0 : w->time - h->t_lo) * NT_HTML_TBINS / (h->t_hi - h->t_lo + 1));
	if (t >= NT_HTML_TBINS)
		t = NT_HTML_TBINS - 1;
	for (uint32_t left = w->mask; left; left &= left - 1) {
		int s = __builtin_ctz(left);

		if (h->slot[s] >= 0)
			d->sk[h->slot[s]][t][sk_bin(w->vals[s])]++;
		if (s == NT_ST_E2E)
			d->heat[t][log2_us(w->vals[s])]++;
	}
	return 0;
}

void nt_put_html(FILE *out, const char *s)
{
	for (; *s; s++)
		switch (*s) {
		case '&': fputs("&amp;", out); break;
		case '<': fputs("&lt;", out); break;
		case '>': fputs("&gt;", out); break;
		case '"': fputs("&quot;", out); break;
		case '\'': fputs("&#39;", out); break;
		default: fputc(*s, out);
		}
}

/* text printed by fn, HTML-escaped, in a <pre> */
static void put_pre(FILE *out, const char *cls, void (*fn)(FILE *, const struct nt_report *, int),
		    const struct nt_report *rep, int arg)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&buf, &len);

	if (!m)
		return;
	fn(m, rep, arg);
	fclose(m);
	fprintf(out, "<pre class=\"%s\">", cls);
	nt_put_html(out, buf);
	fputs("</pre>\n", out);
	free(buf);
}

static void head_fn(FILE *out, const struct nt_report *rep, int arg)
{
	nt_report_print_head(out, rep);
}

static void diagnosis_fn(FILE *out, const struct nt_report *rep, int arg)
{
	nt_diagnose_print_text(out, rep);
}

/* ---- charts ---- */

static double us(uint64_t ns)
{
	return ns / 1000.0;
}

/* the stages at p50 and at p99, side by side in one bar each */
static void svg_stacked(FILE *out, const struct html *h, const struct nt_group *g)
{
	static const double pcts[2] = { 50, 99 };
	const double W = 760, X0 = 80;
	double total[2] = { 0, 0 }, scale;
	int shown = 0;

	for (int k = 0; k < h->ncs; k++) {
		int s = h->cs[k];

		if (s == NT_ST_E2E || !g->h[s].count)
			continue;
		for (int p = 0; p < 2; p++)
			total[p] += us(nt_hist_percentile(&g->h[s], pcts[p]));
		shown++;
	}
	if (!shown)
		return;
	scale = (total[1] > total[0] ? total[1] : total[0]) > 0 ? W / (total[1] > total[0] ? total[1] : total[0]) : 0;
	fprintf(out, "<h3>Stages at p50 and p99 (each stage's own percentile, laid end to end)</h3>\n"
		"<svg class=\"chart\" width=\"%.0f\" height=\"%d\" viewBox=\"0 0 %.0f %d\" role=\"img\">\n",
		X0 + W + 100, 90 + 20 * ((shown + 3) / 4), X0 + W + 100, 90 + 20 * ((shown + 3) / 4));
	for (int p = 0; p < 2; p++) {
		double x = X0, y = 10 + p * 32;

		fprintf(out, "<text x=\"4\" y=\"%.0f\">p%g</text>\n", y + 17, pcts[p]);
		for (int k = 0; k < h->ncs; k++) {
			int s = h->cs[k];
			double v;

			if (s == NT_ST_E2E || !g->h[s].count)
				continue;
			v = us(nt_hist_percentile(&g->h[s], pcts[p]));
			fprintf(out, "<rect x=\"%.2f\" y=\"%.0f\" width=\"%.2f\" height=\"24\" fill=\"%s\"><title>%s p%g %.2f us"
				"</title></rect>\n", x, y, v * scale, palette[k % 12], nt_stage_name(s), pcts[p], v);
			x += v * scale;
		}
		fprintf(out, "<text x=\"%.2f\" y=\"%.0f\">%.1f us</text>\n", x + 6, y + 17, total[p]);
	}
	for (int k = 0, i = 0; k < h->ncs; k++) {
		int s = h->cs[k];
		double x, y;

		if (s == NT_ST_E2E || !g->h[s].count)
			continue;
		x = X0 + (i % 4) * 200;
		y = 84 + (i / 4) * 20;
		fprintf(out, "<rect x=\"%.0f\" y=\"%.0f\" width=\"12\" height=\"12\" fill=\"%s\"/>"
			"<text x=\"%.0f\" y=\"%.0f\" class=\"small\">%s</text>\n", x, y - 10, palette[k % 12], x + 16, y,
			nt_stage_name(s));
		i++;
	}
	fputs("</svg>\n", out);
}

/* end_to_end over time: a column per time slice, a row per log2 us bin, darker = more I/Os */
static void svg_heatmap(FILE *out, const struct html *h, const struct gdata *d)
{
	const int CW = 13, CH = 14, X0 = 110, Y0 = 8;
	int lo = NT_LOG2_BINS, hi = -1, rows;
	uint32_t top = 0;
	double span = (h->t_hi - h->t_lo) / 1e9;

	for (int t = 0; t < NT_HTML_TBINS; t++)
		for (int b = 0; b < NT_LOG2_BINS; b++)
			if (d->heat[t][b]) {
				lo = b < lo ? b : lo;
				hi = b > hi ? b : hi;
				top = d->heat[t][b] > top ? d->heat[t][b] : top;
			}
	if (hi < 0)
		return;
	rows = hi - lo + 1;
	fprintf(out, "<h3>%s over time (I/Os per log2 latency bin and time slice of %.3f s)</h3>\n"
		"<svg class=\"chart\" width=\"%d\" height=\"%d\" role=\"img\">\n", nt_stage_name(NT_ST_E2E), span / NT_HTML_TBINS,
		X0 + CW * NT_HTML_TBINS + 20, Y0 + CH * rows + 40);
	for (int b = hi; b >= lo; b--) {
		int y = Y0 + (hi - b) * CH;
		uint64_t l = (1ull << (b + 1)) >> 1, u = (1ull << (b + 1)) - 1;

		if (l == u)
			l--;
		fprintf(out, "<text x=\"%d\" y=\"%d\" class=\"small\" text-anchor=\"end\">%" PRIu64 "-%" PRIu64
			" us</text>\n", X0 - 4, y + CH - 3, l, u);
		for (int t = 0; t < NT_HTML_TBINS; t++) {
			uint32_t c = d->heat[t][b];
			double f = c ? log1p(c) / log1p(top) : 0;
			int r = (int)(247 + (8 - 247) * f), gg = (int)(251 + (48 - 251) * f), bl = (int)(255 + (107 - 255) * f);

			fprintf(out, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"rgb(%d,%d,%d)\">"
				"<title>%.3f s, %" PRIu64 "-%" PRIu64 " us: %u I/Os</title></rect>\n", X0 + t * CW, y, CW - 1,
				CH - 1, c ? r : 250, c ? gg : 250, c ? bl : 250, span * t / NT_HTML_TBINS, l, u, c);
		}
	}
	for (int t = 0; t <= NT_HTML_TBINS; t += NT_HTML_TBINS / 4)
		fprintf(out, "<text x=\"%d\" y=\"%d\" class=\"small\" text-anchor=\"middle\">%.2f s</text>\n",
			X0 + t * CW, Y0 + CH * rows + 16, span * t / NT_HTML_TBINS);
	fputs("</svg>\n", out);
}

/* nearest rank p of a sketch column; -1 when empty */
static double sk_pct(const uint32_t *col, double p)
{
	uint64_t n = 0, k, cum = 0;

	for (int b = 0; b < SKB; b++)
		n += col[b];
	if (!n)
		return -1;
	k = (uint64_t)ceil(p / 100.0 * n);
	k = k < 1 ? 1 : k;
	for (int b = 0; b < SKB; b++) {
		cum += col[b];
		if (cum >= k)
			return sk_value(b) / 1000.0;
	}
	return -1;
}

/* each charted stage's p50 (solid) and p99 (dashed) per time slice, small multiples */
static void svg_over_time(FILE *out, const struct html *h, const struct nt_group *g, const struct gdata *d)
{
	const int PW = 250, PH = 90, CW = 310, CH = 140, PER = 3;
	int n = 0;

	for (int k = 0; k < h->ncs; k++)
		n += g->h[h->cs[k]].count > 0;
	if (!n)
		return;
	fprintf(out, "<h3>Stages over time: p50 (solid) and p99 (dashed) per time slice</h3>\n"
		"<svg class=\"chart\" width=\"%d\" height=\"%d\" role=\"img\">\n", CW * PER, CH * ((n + PER - 1) / PER));
	for (int k = 0, i = 0; k < h->ncs; k++) {
		int s = h->cs[k], x0 = (i % PER) * CW + 50, y0 = (i / PER) * CH + 22;
		double v[2][NT_HTML_TBINS], top = 0;

		if (!g->h[s].count)
			continue;
		i++;
		for (int t = 0; t < NT_HTML_TBINS; t++) {
			v[0][t] = sk_pct(d->sk[k][t], 50);
			v[1][t] = sk_pct(d->sk[k][t], 99);
			top = v[1][t] > top ? v[1][t] : top;
		}
		if (top <= 0)
			top = 1;
		fprintf(out, "<text x=\"%d\" y=\"%d\">%s</text>\n", x0, y0 - 6, nt_stage_name(s));
		fprintf(out, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" class=\"frame\"/>\n", x0, y0, PW, PH);
		fprintf(out, "<text x=\"%d\" y=\"%d\" class=\"small\" text-anchor=\"end\">%.1f us</text>"
			"<text x=\"%d\" y=\"%d\" class=\"small\" text-anchor=\"end\">0</text>\n", x0 - 3, y0 + 9, top, x0 - 3,
			y0 + PH);
		for (int p = 0; p < 2; p++) {
			bool open = false;

			for (int t = 0; t < NT_HTML_TBINS; t++) {
				if (v[p][t] < 0) {
					if (open)
						fputs("\"/>\n", out);
					open = false;
					continue;
				}
				if (!open)
					fprintf(out, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"1.5\"%s points=\"",
						palette[k % 12], p ? " stroke-dasharray=\"4 2\"" : "");
				fprintf(out, "%.1f,%.1f ", x0 + (t + 0.5) * PW / NT_HTML_TBINS, y0 + PH - v[p][t] / top * PH);
				open = true;
			}
			if (open)
				fputs("\"/>\n", out);
		}
	}
	fputs("</svg>\n", out);
}

static const char css[] =
	"body{font-family:sans-serif;margin:16px;color:#222;background:#fff}"
	"pre{font-family:monospace;font-size:12px;background:#f6f6f6;padding:8px;overflow-x:auto}"
	"pre.head{border-left:4px solid #e15759}"
	"h1{font-size:20px}h2{font-size:16px;margin-top:28px;border-top:1px solid #ccc;padding-top:12px}"
	"h3{font-size:13px;font-weight:normal;color:#555}"
	"svg.chart text{font-size:12px;fill:#222}svg.chart text.small{font-size:10px}"
	"svg.chart rect.frame{fill:none;stroke:#bbb}";

int nt_report_html(FILE *out, const struct nt_report *rep, struct nt_rows *rows)
{
	struct html h = { .rep = rep, .t_lo = UINT64_MAX };
	int rc = 0;

	h.ncs = chart_stages(h.cs);
	for (int s = 0; s < NT_ST_NR; s++)
		h.slot[s] = -1;
	for (int k = 0; k < h.ncs; k++)
		h.slot[h.cs[k]] = k;
	for (int gi = 0; gi < rep->ngroups; gi++) {
		const struct nt_group *g = &rep->groups[gi];

		if (g->first_ns != UINT64_MAX) {
			h.t_lo = g->first_ns < h.t_lo ? g->first_ns : h.t_lo;
			h.t_hi = g->last_ns > h.t_hi ? g->last_ns : h.t_hi;
		}
	}
	if (h.t_lo == UINT64_MAX)
		h.t_lo = h.t_hi = 0;
	if (h.t_hi < h.t_lo)
		h.t_hi = h.t_lo;
	h.ng = rep->ngroups < NT_HTML_MAX_GROUPS ? rep->ngroups : NT_HTML_MAX_GROUPS;
	h.g = calloc(h.ng + 1, sizeof(*h.g));
	if (!h.g || (rows && nt_rows_each(rows, take_row, &h))) {
		rc = -1;
		goto out;
	}
	fprintf(out, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
		"<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">\n"
		"<title>ntbpf report</title><style>%s</style></head><body>\n<h1>ntbpf report</h1>\n", css);
	put_pre(out, "head", head_fn, rep, 0);
	if (rep->o->diagnose)	/* the findings on top, under what the report could not see */
		put_pre(out, "diagnosis", diagnosis_fn, rep, 0);
	if (!rep->ngroups)
		fprintf(out, "<p>%s</p>\n", nt_report_empty_why(rep));
	if (rep->ngroups > h.ng)
		fprintf(out, "<p>Charts for the first %d groups of %d; every group's table is below.</p>\n", h.ng,
			rep->ngroups);
	for (int gi = 0; gi < rep->ngroups; gi++) {
		const struct nt_group *g = &rep->groups[gi];
		char *line = NULL, *nl;
		size_t len = 0;
		FILE *m = open_memstream(&line, &len);

		if (!m) {
			rc = -1;
			goto out;
		}
		nt_report_print_group(m, rep, gi);
		fclose(m);
		nl = strchr(line, '\n');
		if (nl)
			*nl = '\0';
		fputs("<h2>", out);
		nt_put_html(out, line);
		fputs("</h2>\n<pre>", out);
		nt_put_html(out, nl ? nl + 1 : "");
		fputs("</pre>\n", out);
		free(line);
		svg_stacked(out, &h, g);
		if (gi < h.ng && h.g[gi]) {
			svg_heatmap(out, &h, h.g[gi]);
			svg_over_time(out, &h, g, h.g[gi]);
		}
	}
	fputs("</body></html>\n", out);
out:
	for (int gi = 0; h.g && gi < h.ng; gi++)
		free(h.g[gi]);
	free(h.g);
	return rc;
}
