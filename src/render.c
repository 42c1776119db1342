// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * render.c - a built report as text (an ntprof-like table), JSON
 * (docs/report-json.md) or CSV, whole or one live interval at a time
 * (src/render.h).  Reads the groups (src/groups.h); the HTML report
 * (src/html.c) prints the text report's head and tables from here.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include "diagnose.h"
#include "escape.h"
#include "names.h"
#include "render.h"
#include "sysinfo.h"

/* ---- naming ---- */

static void queue_name(const struct nt_group *g, char *buf, size_t len)
{
	if (!g->has_queue)
		snprintf(buf, len, "-");
	else if (g->dev_role == NTBPF_ROLE_TARGET)
		snprintf(buf, len, "cntlid%uq%u", g->ctrl, g->qid);
	else
		snprintf(buf, len, "nvme%uq%u", g->ctrl, g->qid);
}

/* "addr:port" ("[addr]:port" for IPv6), or "" unknown; the address is from a file: escape it on output */
static void endpoint(const char *addr, uint16_t port, char *buf, size_t len)
{
	if (!addr[0])
		snprintf(buf, len, "%s", "");
	else if (strchr(addr, ':'))
		snprintf(buf, len, "[%s]:%u", addr, port);
	else
		snprintf(buf, len, "%s:%u", addr, port);
}

/* a queue group's facts, as the outputs print them */
struct qfacts {
	int io_cpu, rx_queue, tx_queue;	/* -1 unknown */
	char local[80], remote[80];	/* "" unknown */
	double dmean[2];		/* depth: initiator, target; 0 none */
	uint32_t dmax[2];
};

static void qfacts_of(const struct nt_report *rep, const struct nt_group *g, struct qfacts *f)
{
	const struct nt_queue_info *q = nt_report_group_queue(rep, g);

	memset(f, 0, sizeof(*f));
	f->io_cpu = q ? q->io_cpu : -1;
	f->rx_queue = q ? q->rx_queue : -1;
	f->tx_queue = q ? q->tx_queue : -1;
	if (q) {
		endpoint(q->saddr, q->sport, f->local, sizeof(f->local));
		endpoint(q->daddr, q->dport, f->remote, sizeof(f->remote));
	}
	for (int k = 0; k < 2; k++) {
		f->dmean[k] = g->dep_n[k] ? (double)g->dep_sum[k] / g->dep_n[k] : 0;
		f->dmax[k] = g->dep_max[k];
	}
}

/* percentile k's key: "p50", "p99.9", "p99.999999" (as the user spelled it) */
static void pct_key(const struct nt_report_opts *o, int k, char *buf, size_t len)
{
	buf[0] = 'p';
	nt_pct_label(o->pcts[k], o->pct_labels[k], buf + 1, len - 1);
}

static double us(uint64_t ns)
{
	return ns / 1000.0;
}

/* hooks of every input that did not attach */
static int hooks_missing(const struct nt_report *rep)
{
	int n = 0;

	for (int i = 0; i < rep->nins; i++)
		for (uint32_t k = 0; k < rep->ins[i].hdr.nhooks; k++)
			n += strcmp(rep->ins[i].hdr.hooks[k].status, "attached") != 0 &&
			     strncmp(rep->ins[i].hdr.hooks[k].status, "deferred", 8) != 0;
	return n;
}

/*
 * A group's rate: over a live interval (secs > 0), or over its span, from
 * its first I/O's start to its last one's end.  0: no span (one I/O, or
 * in-kernel histograms).
 */
static double group_secs(const struct nt_group *g, double secs)
{
	if (secs > 0)
		return secs;
	/* one I/O has no rate: its span is its own latency */
	return g->count > 1 && g->last_ns > g->first_ns && g->first_ns != UINT64_MAX ?
		(g->last_ns - g->first_ns) / 1e9 : 0;
}

/*
 * A group's span (report only), IOPS and MB/s in one output's formats:
 * f[0] the span (a double), f[1] IOPS and MB/s (two doubles), f[2] no rate.
 */
static void put_rate(FILE *out, const struct nt_group *g, double secs, const char *const f[3])
{
	double rate = group_secs(g, secs);

	if (secs <= 0)
		fprintf(out, f[0], rate);
	if (rate > 0)
		fprintf(out, f[1], g->count / rate, g->bytes / rate / 1e6);
	else
		fputs(f[2], out);
}

/* I/Os by status, over the groups (failed I/Os are in groups of their own): how many kinds */
struct status_count {
	uint16_t status;
	bool nvme;
	uint64_t ios;
};

static int status_counts(const struct nt_report *rep, struct status_count *sc, int max)
{
	int n = 0;

	for (int gi = 0; gi < rep->ngroups; gi++) {
		const struct nt_group *g = &rep->groups[gi];
		int k;

		for (k = 0; k < n; k++)
			if (sc[k].status == g->status && (!g->status || sc[k].nvme == g->status_nvme))
				break;
		if (k == n) {
			if (n == max)
				continue;	/* cannot happen: at most one kind per group */
			sc[n++] = (struct status_count){ .status = g->status, .nvme = g->status_nvme };
		}
		sc[k].ios += g->count;
	}
	return n;
}

/* ---- text ---- */

/* "# I/Os by status: ok 1987; 0x0002 (invalid field in command) 3" */
static void print_status_text(FILE *out, const struct nt_report *rep)
{
	struct status_count *sc = calloc(rep->ngroups + 1, sizeof(*sc));
	int n = sc ? status_counts(rep, sc, rep->ngroups + 1) : 0;
	bool failed = false;
	char label[32];

	if (!n) {
		free(sc);
		return;
	}
	fputs("# I/Os by status:", out);
	for (int k = 0; k < n; k++) {
		const char *name = nt_status_name(sc[k].status, sc[k].nvme);

		nt_status_label(sc[k].status, sc[k].nvme, label, sizeof(label));
		fprintf(out, "%s %s", k ? ";" : "", label);
		if (sc[k].status && *name)
			fprintf(out, " (%s)", name);
		fprintf(out, " %" PRIu64, sc[k].ios);
		failed |= sc[k].status != 0;
	}
	if (failed)
		fputs("; failed I/Os are in groups of their own (status=), out of the others' percentiles", out);
	fputc('\n', out);
	free(sc);
}

/*
 * "# failed over: 12 requests ended in a path error, their bios retried on another path: 12 I/Os,
 * end_to_end including the retry avg ... us" (native multipath; failover.h)
 */
static void print_failover_text(FILE *out, const struct nt_report *rep)
{
	const struct nt_fo_summary *f = &rep->fo_sum;

	if (!f->path_errors)
		return;
	fprintf(out, "# failed over: %" PRIu64 " requests ended in a path error (status= groups); ", f->path_errors);
	fprintf(out, "%" PRIu64 " I/Os retried on another path (%" PRIu64 " retry requests), %s including "
		"the retry avg %.2f us, p50 %.2f, p99 %.2f, max %.2f", f->ios, f->retries, nt_stage_name(NT_ST_E2E),
		f->e2e_avg_us, f->e2e_p50_us, f->e2e_p99_us, f->e2e_max_us);
	if (f->unretried)
		fprintf(out, "; %" PRIu64 " with no retry among the records", f->unretried);
	fputc('\n', out);
}

/* how input in was sampled, in words */
static void sampling_text(const struct nt_input *in, char *buf, size_t len)
{
	if (in->hdr.sample > 1 && in->hdr.sample_window_ms)
		snprintf(buf, len, "%u ms windows, one in %u", in->hdr.sample_window_ms, in->hdr.sample);
	else if (in->hdr.sample > 1)
		snprintf(buf, len, "about 1 I/O in %u", in->hdr.sample);
	else
		snprintf(buf, len, "not sampled");
}

/*
 * The first initiator and target inputs whose sampling differs (--sample,
 * --sample-window, by time or by I/O): only I/Os both hosts recorded can
 * pair, e.g. an initiator and a target of ntbpf versions with different
 * default windows.  NULL where they agree or a side is missing.
 */
static const struct nt_input *sampling_differs(const struct nt_report *rep, const struct nt_input **init)
{
	const struct nt_input *a = NULL;

	for (int i = 0; i < rep->nins && !a; i++)
		if (rep->ins[i].hdr.role == NTBPF_ROLE_INITIATOR)
			a = &rep->ins[i];
	for (int i = 0; a && i < rep->nins; i++) {
		const struct nt_input *b = &rep->ins[i];
		uint32_t sa = a->hdr.sample > 1 ? a->hdr.sample : 1, sb = b->hdr.sample > 1 ? b->hdr.sample : 1;

		if (b->hdr.role != NTBPF_ROLE_TARGET)
			continue;
		if (sa != sb || (sa > 1 && a->hdr.sample_window_ms != b->hdr.sample_window_ms)) {
			*init = a;
			return b;
		}
	}
	return NULL;
}

/* the recordings' span on the wall clock: the earliest start, the latest end (0: not known, a file without trailer) */
static void recorded_span(const struct nt_report *rep, uint64_t *from, uint64_t *to)
{
	*from = *to = 0;
	for (int i = 0; i < rep->nins; i++) {
		uint64_t a = rep->ins[i].hdr.real_ns, b = 0;

		if (rep->ins[i].has_trailer && a && rep->ins[i].trailer.end_mono_ns >= rep->ins[i].hdr.mono_ns)
			b = rep->ins[i].trailer.end_mono_ns - rep->ins[i].hdr.mono_ns + a;
		if (a && (!*from || a < *from))
			*from = a;
		if (!b) {
			*to = UINT64_MAX;	/* one end not known: none */
		} else if (*to != UINT64_MAX && b > *to) {
			*to = b;
		}
	}
	if (*to == UINT64_MAX)
		*to = 0;
}

const char *nt_report_empty_why(const struct nt_report *rep)
{
	if ((rep->since_set || rep->until_set) && rep->outside)
		return "no I/O in the time window (--since/--until): every recorded I/O started outside it";
	if (rep->since_set || rep->until_set)
		return "no I/O in the time window (--since/--until), and none recorded";
	return "no I/O recorded";
}

static void print_notes_text(FILE *out, const struct nt_report *rep)
{
	fprintf(out, "# lost records: %" PRIu64, rep->lost);
	if (rep->lost) {
		/* what each count means for the report: a skipped run loses events, not the record */
		static const char *const why[sizeof(rep->lost_why) / sizeof(rep->lost_why[0])] = {
			"ring buffer full", "in-flight map full",
			"program runs the kernel skipped (their I/Os miss the events those runs would have taken)",
			"completions never seen", "not written by user space",
			"I/Os no program run saw (the devices' own counts have them: the kernel skipped the runs)",
		};
		const char *sep = " (";

		for (size_t k = 0; k < sizeof(why) / sizeof(why[0]); k++)
			if (rep->lost_why[k]) {
				fprintf(out, "%s%s: %" PRIu64, sep, why[k], rep->lost_why[k]);
				sep = "; ";
			}
		if (strcmp(sep, " ("))
			fputc(')', out);
	}
	fputc('\n', out);
	fprintf(out, "# matched: %" PRIu64 "; unmatched: initiator %" PRIu64 ", target %" PRIu64 "\n",
		rep->matched, rep->unmatched_init, rep->unmatched_tgt);
	print_status_text(out, rep);
	print_failover_text(out, rep);
	for (int i = 0; i < rep->nins; i++)
		if (rep->ins[i].hdr.sample > 1) {
			fprintf(out, "# sampled inputs: IOPS and MB/s count the recorded I/Os only\n");
			break;
		}
	{
		const struct nt_input *ini = NULL, *tgt = sampling_differs(rep, &ini);
		char a[64], b[64];

		if (tgt) {
			sampling_text(ini, a, sizeof(a));
			sampling_text(tgt, b, sizeof(b));
			fprintf(out, "# sampled differently: initiator %s, target %s: only I/Os both recorded can pair "
				"(record both with the same --sample and --sample-window)\n", a, b);
		}
	}
	if (rep->no_start || rep->inflight_end)
		fprintf(out, "# in flight when recording began: %" PRIu64 ", when it stopped: %" PRIu64
			" (not recorded)\n", rep->no_start, rep->inflight_end);
	if (rep->admin)
		fprintf(out, "# admin-queue commands left out: %" PRIu64 "\n", rep->admin);
	if (rep->m.have_offset && rep->n_tgt && rep->n_init) {
		fprintf(out, "# target clock = initiator clock %+.3f ms (estimated from %zu I/Os", rep->m.offset_ns / 1e6,
			rep->m.offset_votes);
		/* below 10 us it is the estimates' own spread */
		if (rep->m.offset_drift_ns >= 10000 || rep->m.offset_drift_ns <= -10000)
			fprintf(out, "; drifting %+.3f ms by the end, followed", rep->m.offset_drift_ns / 1e6);
		fprintf(out, "; used only to pair I/Os)\n");
	}
	if (rep->m.no_cntlid)
		fprintf(out, "# initiator I/Os whose controller the header does not name (cannot match): %zu\n",
			rep->m.no_cntlid);
	if (rep->matched > rep->m.by_port)
		fprintf(out, "# paired without the queue's TCP port (a file from an older ntbpf, or from an initiator"
			" whose kernel has no BTF for nvme_tcp, e.g. 5.10): %" PRIu64 "\n",
			rep->matched - (uint64_t)rep->m.by_port);
	if (rep->m.shared_cntlid && rep->n_tgt)
		fprintf(out, "# initiator I/Os on controllers that share a cntlid (two subsystems) and lack"
			" the queue's TCP port: %zu; paired by queue, command id and timing only\n",
			rep->m.shared_cntlid);
	if (rep->since_set || rep->until_set) {
		uint64_t from, to;
		char a[48], b[48], c[48], d[48];

		recorded_span(rep, &from, &to);
		nt_fmt_wall((uint64_t)rep->since_ns, a, sizeof(a));
		nt_fmt_wall((uint64_t)rep->until_ns, b, sizeof(b));
		nt_fmt_wall(from, c, sizeof(c));
		nt_fmt_wall(to, d, sizeof(d));
		fprintf(out, "# time window: I/Os that started from %s to %s; the recordings: %s to %s\n",
			rep->since_set ? a : "the start", rep->until_set ? b : "the end", from ? c : "-",
			to ? d : "(end not known)");
		fprintf(out, "# I/Os that started outside --since/--until, left out: %" PRIu64 "\n", rep->outside);
	}
	if (rep->m.slow_init || rep->m.slow_tgt)
		fprintf(out, "# I/Os slower than the pairing window (--window %.3g s): initiator %zu, target %zu;"
			" paired only where the partner was still held\n", rep->m.window_ns / 1e9, rep->m.slow_init,
			rep->m.slow_tgt);
	if (rep->neg_network)
		fprintf(out, "# %s left out where negative: %" PRIu64 " I/Os\n", nt_stage_name(NT_ST_NETWORK),
			rep->neg_network);
	for (int i = 0; i < rep->nins; i++) {
		const struct nt_header *h = &rep->ins[i].hdr;

		for (uint32_t k = 0; k < h->nhooks; k++)
			if (strcmp(h->hooks[k].status, "attached")) {
				fprintf(out, "# %s: hook ", nt_role_name(h->role));
				nt_put_term(out, h->hooks[k].name);
				/* deferred: loaded, attached only where the kernel showed it was needed (never, here) */
				fputs(strncmp(h->hooks[k].status, "deferred", 8) ? " not attached (" : " (", out);
				nt_put_term(out, h->hooks[k].status);
				fputs("); ", out);
				nt_put_term(out, h->hooks[k].boundary[0] ? h->hooks[k].boundary : "its stage is not measured");
				fputc('\n', out);
			}
	}
	/* only what a block-only record yields (the stage table's events): none seen at all (an empty window): no claim */
	if (!(rep->stages_seen & ~NT_BLK_ONLY_MASK) && rep->n_init && rep->stages_seen)
		fprintf(out, "# no nvme_tcp events: %s ends at block_rq_issue; the rest is %s\n", nt_stage_name(NT_ST_BLK_SUB),
			nt_stage_name(NT_ST_BLK_DEVICE));
	if (rep->n_init && !rep->n_tgt)
		fprintf(out, "# no target records: target stages and %s not measured\n", nt_stage_name(NT_ST_NETWORK));
	if (rep->n_tgt && !rep->n_init)
		fprintf(out, "# no initiator records: host stages and %s not measured\n", nt_stage_name(NT_ST_NETWORK));
}

/* biolatency's print_log2_hist: "    16 -> 31         : 120      |*****     |" */
static void print_log2_text(FILE *out, const char *name, const struct nt_hist *h)
{
	uint64_t bins[NT_LOG2_BINS], top = 0;
	int n = nt_hist_log2_us(h, bins);

	for (int i = 0; i < n; i++)
		top = bins[i] > top ? bins[i] : top;
	fprintf(out, "\n%s\n%5s%-19s : count    distribution\n", name, "", "usecs");
	for (int i = 0; i < n; i++) {
		uint64_t lo = (1ull << (i + 1)) >> 1, hi = (1ull << (i + 1)) - 1;
		int stars = top ? (int)(bins[i] * 40 / top) : 0;

		if (lo == hi)
			lo--;
		fprintf(out, "%10" PRIu64 " -> %-10" PRIu64 " : %-8" PRIu64 " |%.*s%*s|\n", lo, hi, bins[i], stars,
			"****************************************", 40 - stars, "");
	}
}

/* --group-by host, subsys, ns: " host=NQN (hostname) subsys=NQN ns=1", names from files escaped */
static void print_keys_text(FILE *out, const struct nt_report *rep, const struct nt_group *g)
{
	unsigned int gb = rep->o->group_by;

	if (gb & NT_GB_HOST) {
		const char *hn = nt_report_host_hostname(rep, g->host);

		fputs(" host=", out);
		nt_put_term(out, nt_report_key_name(rep, NT_KEY_HOST, g->host));
		if (*hn) {
			fputs(" (", out);
			nt_put_term(out, hn);
			fputc(')', out);
		}
	}
	if (gb & NT_GB_SUBSYS) {
		fputs(" subsys=", out);
		nt_put_term(out, nt_report_key_name(rep, NT_KEY_SUBSYS, g->subsys));
	}
	if (gb & NT_GB_NS)
		fprintf(out, " ns=%s", nt_report_key_name(rep, NT_KEY_NS, g->ns));
}

/* one group's table; secs > 0 adds IOPS (live intervals) */
static void print_group_text(FILE *out, const struct nt_report *rep, const struct nt_group *g, double secs)
{
	const struct nt_report_opts *o = rep->o;
	char name[64], q[32], key[NT_PCT_LABEL + 8];

	nt_report_group_dev(rep, g, name, sizeof(name));
	queue_name(g, q, sizeof(q));
	if (o->group_by & NT_GB_SIZE)
		snprintf(q, sizeof(q), "%u", g->size);
	else
		snprintf(q, sizeof(q), "all");
	fprintf(out, "group: op=%s size=%s dev=", g->op == 0xff ? "all" : nt_op_name(g->op), q);
	nt_put_term(out, (o->group_by & NT_GB_DEV) ? name : "all");	/* a name from a file */
	queue_name(g, q, sizeof(q));
	if (o->group_by & NT_GB_QUEUE)
		fprintf(out, " queue=%s", q);
	print_keys_text(out, rep, g);
	if (g->status) {
		const char *sname = nt_status_name(g->status, g->status_nvme);

		nt_status_label(g->status, g->status_nvme, q, sizeof(q));
		fprintf(out, " status=%s", q);
		if (*sname)
			fprintf(out, " (%s)", sname);
	}
	fprintf(out, " I/Os=%" PRIu64, g->count);
	put_rate(out, g, secs, (const char *const[]){ " span=%.3fs", " IOPS=%.0f MB/s=%.2f\n", " IOPS=- MB/s=-\n" });
	if ((o->group_by & NT_GB_QUEUE) && g->has_queue) {
		struct qfacts f;

		qfacts_of(rep, g, &f);
		fputs("queue:", out);
		if (f.io_cpu >= 0)
			fprintf(out, " io_cpu=%d", f.io_cpu);
		else
			fputs(" io_cpu=-", out);
		fputs(" local=", out);
		nt_put_term(out, f.local[0] ? f.local : "-");
		fputs(" remote=", out);
		nt_put_term(out, f.remote[0] ? f.remote : "-");
		if (f.rx_queue >= 0)
			fprintf(out, " rx_queue=%d", f.rx_queue);
		else
			fputs(" rx_queue=-", out);
		if (f.tx_queue >= 0)
			fprintf(out, " tx_queue=%d", f.tx_queue);
		else
			fputs(" tx_queue=-", out);
		for (int k = 0; k < 2; k++)
			if (g->dep_n[k])
				fprintf(out, " %s=%.1f/%u", k ? "target_depth(mean/max)" : "depth(mean/max)", f.dmean[k],
					f.dmax[k]);
		fputc('\n', out);
	}
	fprintf(out, "%-22s %10s %10s %10s", "stage", "count", "avg_us", "min_us");
	for (int p = 0; p < o->npcts; p++) {
		pct_key(o, p, key, sizeof(key));
		strcat(key, "_us");
		fprintf(out, " %10s", key);
	}
	fprintf(out, " %10s\n", "max_us");
	for (int k = 0; k < NT_ST_NR; k++) {
		/* the stages that add up, then end_to_end, then the two spans they split */
		int s = nt_stage_at_row[k];
		const struct nt_hist *h = &g->h[s];

		if (!h->count && !o->verbose)
			continue;
		if (s == NT_ST_E2E)
			fputs("----\n", out);
		fprintf(out, "%-22s %10" PRIu64 " %10.2f %10.2f", nt_stage_name(s), h->count,
			h->count ? nt_hist_mean(h) / 1000.0 : 0.0, us(nt_hist_percentile(h, 0)));
		for (int p = 0; p < o->npcts; p++)
			fprintf(out, " %10.2f", us(nt_hist_percentile(h, o->pcts[p])));
		fprintf(out, " %10.2f", us(nt_hist_percentile(h, 100)));
		if (g->stand_in[s])
			fprintf(out, "  (stand-in on %" PRIu64 ")", g->stand_in[s]);
		fputc('\n', out);
	}
	for (int k = 0; k < NT_ST_NR && o->hist; k++)
		if (g->h[nt_stage_at_row[k]].count)
			print_log2_text(out, nt_stage_name(nt_stage_at_row[k]), &g->h[nt_stage_at_row[k]]);
}

/* where a file's recording began and ended on the wall clock; 0: not known */
static void file_span(const struct nt_input *in, uint64_t *from, uint64_t *to)
{
	*from = in->hdr.real_ns;
	*to = in->has_trailer && in->hdr.real_ns && in->trailer.end_mono_ns >= in->hdr.mono_ns ?
		in->trailer.end_mono_ns - in->hdr.mono_ns + in->hdr.real_ns : 0;
}

/* -v: what a file's header and trailer say of the recording */
static void print_facts_text(FILE *out, const struct nt_input *in)
{
	const struct nt_header *h = &in->hdr;
	uint64_t from, to;
	char t1[48], t2[48];

	fputs("#   command: ", out);
	nt_put_term(out, h->cmdline[0] ? h->cmdline : "-");
	fputs("; ntbpf ", out);
	nt_put_term(out, h->ntbpf_version[0] ? h->ntbpf_version : "-");
	fputc('\n', out);
	file_span(in, &from, &to);
	nt_fmt_wall(from, t1, sizeof(t1));
	if (to) {
		nt_fmt_wall(to, t2, sizeof(t2));
		fprintf(out, "#   recorded: %s to %s (%.3f s)", t1, t2, (to - from) / 1e9);
	} else {
		fprintf(out, "#   recorded: from %s (no trailer: end not known)", from ? t1 : "-");
	}
	if (h->sample > 1 && h->sample_window_ms)
		fprintf(out, "; sampling: every I/O of one %u ms window in %u\n", h->sample_window_ms, h->sample);
	else if (h->sample > 1)
		fprintf(out, "; sampling: about 1 I/O in %u (by a hash of each I/O)\n", h->sample);
	else
		fprintf(out, "; sampling: none (every I/O)\n");
	for (uint32_t k = 0; k < h->nctrls; k++) {
		const struct nt_ctrl_info *c = &h->ctrls[k];

		fputs("#   subsystem ", out);
		nt_put_term(out, c->subsysnqn[0] ? c->subsysnqn : "-");
		fputs(" at ", out);
		nt_put_term(out, c->address[0] ? c->address : "-");
		if (c->instance >= 0)
			fprintf(out, " (nvme%d, cntlid %u", c->instance, c->cntlid);
		else
			fprintf(out, " (cntlid %u", c->cntlid);
		fputs(", ", out);
		nt_put_term(out, c->transport[0] ? c->transport : "-");
		fprintf(out, ", %u queues; host ", c->nqueues);
		nt_put_term(out, c->hostnqn[0] ? c->hostnqn : "-");
		fputs(")\n", out);
	}
	for (uint32_t k = 0; k < h->ncchanges && k < NT_MAX_CNTLID_CHANGES; k++) {
		const struct nt_cntlid_change *c = &h->cchanges[k];

		nt_fmt_wall(c->from_mono_ns >= h->mono_ns ? c->from_mono_ns - h->mono_ns + h->real_ns : h->real_ns,
			    t1, sizeof(t1));
		fprintf(out, "#   nvme%d reconnected: cntlid %u from %s\n", c->instance, c->cntlid, t1);
	}
}

void nt_report_print_text(FILE *out, const struct nt_report *rep)
{
	nt_report_print_head(out, rep);
	for (int gi = 0; gi < rep->ngroups; gi++) {
		fputc('\n', out);
		print_group_text(out, rep, &rep->groups[gi], 0);
	}
	if (!rep->ngroups)
		fprintf(out, "\n%s\n", nt_report_empty_why(rep));
	if (rep->o->diagnose)
		nt_diagnose_print_text(out, rep);
}

void nt_report_print_group(FILE *out, const struct nt_report *rep, int gi)
{
	print_group_text(out, rep, &rep->groups[gi], 0);
}

void nt_report_print_head(FILE *out, const struct nt_report *rep)
{
	fprintf(out, "# ntbpf report\n");
	for (int i = 0; i < rep->nins; i++) {
		const struct nt_input *in = &rep->ins[i];

		/* the strings come from the file: escaped, so that they cannot make lines or drive the terminal */
		fputs("# input ", out);
		nt_put_term(out, in->path);
		fprintf(out, ": %s on ", nt_role_name(in->hdr.role));
		nt_put_term(out, in->hdr.hostname);
		fputs(", kernel ", out);
		nt_put_term(out, in->hdr.kernel);
		fprintf(out, ", %zu records", in->n);
		if (in->hdr.sample > 1) {
			char how[64];

			sampling_text(in, how, sizeof(how));
			fprintf(out, ", sampled: %s", how);
		}
		fputs(in->status == NT_READ_OK ? "" : ", ", out);
		nt_put_term(out, in->status == NT_READ_OK ? "" : in->status_msg);
		fputc('\n', out);
		if (rep->o->verbose)
			print_facts_text(out, in);
	}
	print_notes_text(out, rep);
}

/* ---- JSON ---- */

/* strings from files are untrusted: valid UTF-8 and valid JSON whatever they hold (escape.c) */
static void json_str(FILE *out, const char *s)
{
	nt_put_json(out, s);
}

/* a key's name, or null where it is unknown */
static void json_key(FILE *out, const char *field, const char *name, bool known)
{
	fprintf(out, ", \"%s\": ", field);
	if (known)
		json_str(out, name);
	else
		fputs("null", out);
}

/* --group-by host, subsys, ns: "host" (hostnqn), "hostname", "subsys", "ns" (a number); null unknown */
static void print_keys_json(FILE *out, const struct nt_report *rep, const struct nt_group *g)
{
	unsigned int gb = rep->o->group_by;

	if (gb & NT_GB_HOST) {
		const char *hn = nt_report_host_hostname(rep, g->host);

		json_key(out, "host", nt_report_key_name(rep, NT_KEY_HOST, g->host), g->host != NT_KEY_UNKNOWN);
		json_key(out, "hostname", hn, *hn);
	}
	if (gb & NT_GB_SUBSYS)
		json_key(out, "subsys", nt_report_key_name(rep, NT_KEY_SUBSYS, g->subsys), g->subsys != NT_KEY_UNKNOWN);
	if (gb & NT_GB_NS) {
		fputs(", \"ns\": ", out);
		if (g->ns == NT_KEY_UNKNOWN)
			fputs("null", out);
		else if (g->ns == NT_KEY_OTHER)
			fputs("\"other\"", out);
		else
			fputs(nt_report_key_name(rep, NT_KEY_NS, g->ns), out);	/* digits only */
	}
}

/* the "groups" array's members; secs > 0 adds "iops" (live intervals) */
/* the groups as a JSON array's elements: laid out on lines (report), or on one line (live) */
static void print_groups_json(FILE *out, const struct nt_report *rep, double secs, bool one_line)
{
	const struct nt_report_opts *o = rep->o;
	char name[64], q[32], key[NT_PCT_LABEL + 8];
	bool first;

	for (int gi = 0; gi < rep->ngroups; gi++) {
		const struct nt_group *g = &rep->groups[gi];

		nt_report_group_dev(rep, g, name, sizeof(name));
		queue_name(g, q, sizeof(q));
		fprintf(out, "%s%s{\"op\": ", gi ? "," : "", one_line ? "" : "\n  ");
		json_str(out, g->op == 0xff ? "all" : nt_op_name(g->op));
		fprintf(out, ", \"size\": %u, \"device\": ", g->size);
		json_str(out, (o->group_by & NT_GB_DEV) ? name : "all");
		if (o->group_by & NT_GB_QUEUE) {
			struct qfacts f;

			fprintf(out, ", \"queue\": ");
			json_str(out, q);
			qfacts_of(rep, g, &f);
			if (f.io_cpu >= 0)
				fprintf(out, ", \"io_cpu\": %d", f.io_cpu);
			else
				fputs(", \"io_cpu\": null", out);
			fputs(", \"local\": ", out);
			if (f.local[0])
				json_str(out, f.local);
			else
				fputs("null", out);
			fputs(", \"remote\": ", out);
			if (f.remote[0])
				json_str(out, f.remote);
			else
				fputs("null", out);
			if (f.rx_queue >= 0)
				fprintf(out, ", \"rx_queue\": %d", f.rx_queue);
			else
				fputs(", \"rx_queue\": null", out);
			if (f.tx_queue >= 0)
				fprintf(out, ", \"tx_queue\": %d", f.tx_queue);
			else
				fputs(", \"tx_queue\": null", out);
			for (int k = 0; k < 2; k++)
				if (g->dep_n[k])
					fprintf(out, ", \"%sdepth_mean\": %.2f, \"%sdepth_max\": %u", k ? "target_" : "",
						f.dmean[k], k ? "target_" : "", f.dmax[k]);
				else
					fprintf(out, ", \"%sdepth_mean\": null, \"%sdepth_max\": null", k ? "target_" : "",
						k ? "target_" : "");
		}
		print_keys_json(out, rep, g);
		fprintf(out, ", \"count\": %" PRIu64, g->count);
		nt_status_label(g->status, g->status_nvme, q, sizeof(q));
		fprintf(out, ", \"status\": \"%s\"", q);
		if (g->status)
			fprintf(out, ", \"status_name\": \"%s\"", nt_status_name(g->status, g->status_nvme));
		fprintf(out, ", \"full_breakdown\": {\"ios\": %" PRIu64 ", \"max_residual_ns\": %" PRIu64 "}",
			g->full, g->full_resid);
		put_rate(out, g, secs, (const char *const[]){ ", \"span_s\": %.6f", ", \"iops\": %.1f, \"mb_s\": %.3f",
							      ", \"iops\": null, \"mb_s\": null" });
		fprintf(out, ",%s\"stages\": {", one_line ? "" : "\n   ");
		first = true;
		for (int s = 0; s < NT_ST_NR; s++) {
			const struct nt_hist *h = &g->h[s];

			if (!h->count)
				continue;
			fprintf(out, "%s%s\"%s\": {\"count\": %" PRIu64 ", \"avg_us\": %.3f, \"min_us\": %.3f",
				first ? "" : ",", one_line ? "" : "\n    ", nt_stage_name(s), h->count,
				nt_hist_mean(h) / 1000.0, us(nt_hist_percentile(h, 0)));
			for (int p = 0; p < o->npcts; p++) {
				pct_key(o, p, key, sizeof(key));
				fprintf(out, ", \"%s_us\": %.3f", key, us(nt_hist_percentile(h, o->pcts[p])));
			}
			fprintf(out, ", \"max_us\": %.3f", us(nt_hist_percentile(h, 100)));
			if (o->hist) {
				uint64_t bins[NT_LOG2_BINS];
				int nb = nt_hist_log2_us(h, bins);

				fputs(", \"log2_us\": [", out);
				for (int i = 0; i < nb; i++)
					fprintf(out, "%s%" PRIu64, i ? ", " : "", bins[i]);
				fputc(']', out);
			}
			if (g->stand_in[s])
				fprintf(out, ", \"stand_in\": %" PRIu64, g->stand_in[s]);
			fputc('}', out);
			first = false;
		}
		fprintf(out, "}}");
	}
}

/* "io_status": I/Os by status, success first */
static void print_status_json(FILE *out, const struct nt_report *rep)
{
	struct status_count *sc = calloc(rep->ngroups + 1, sizeof(*sc));
	int n = sc ? status_counts(rep, sc, rep->ngroups + 1) : 0;
	char label[32];

	fprintf(out, " \"io_status\": [");
	for (int k = 0; k < n; k++) {
		nt_status_label(sc[k].status, sc[k].nvme, label, sizeof(label));
		fprintf(out, "%s{\"status\": \"%s\", \"name\": \"%s\", \"kind\": \"%s\", \"ios\": %" PRIu64 "}",
			k ? ", " : "", label, nt_status_name(sc[k].status, sc[k].nvme),
			!sc[k].status ? "none" : sc[k].nvme ? "nvme" : "block", sc[k].ios);
	}
	fprintf(out, "],\n");
	free(sc);
}

/* "failover": multipath's retries (only where a request ended in a path error) */
static void print_failover_json(FILE *out, const struct nt_report *rep)
{
	const struct nt_fo_summary *f = &rep->fo_sum;

	if (!f->path_errors)
		return;
	fprintf(out, " \"failover\": {\"path_errors\": %" PRIu64 ", \"ios\": %" PRIu64 ", \"retries\": %" PRIu64
		", \"unretried\": %" PRIu64 ", \"end_to_end_us\": {\"avg\": %.3f, \"p50\": %.3f, \"p99\": %.3f, "
		"\"max\": %.3f}},\n", f->path_errors, f->ios, f->retries, f->unretried, f->e2e_avg_us, f->e2e_p50_us,
		f->e2e_p99_us, f->e2e_max_us);
}

/* "k1": "v1", "k2": "v2" ... from { k1, v1, k2, v2, ..., NULL }, the values escaped */
static void json_fields(FILE *out, const char *const *kv)
{
	for (int i = 0; kv[i]; i += 2) {
		fprintf(out, "%s\"%s\": ", i ? ", " : "", kv[i]);
		json_str(out, kv[i + 1]);
	}
}

/* what the file says of its recording: command line, start and end, controllers */
static void print_facts_json(FILE *out, const struct nt_input *in)
{
	const struct nt_header *h = &in->hdr;
	uint64_t from, to;
	char t[48];

	fprintf(out, ",\n   \"cmdline\": ");
	json_str(out, h->cmdline);
	file_span(in, &from, &to);
	nt_fmt_wall(from, t, sizeof(t));
	fprintf(out, ", \"start\": ");
	if (from)
		fprintf(out, "\"%s\"", t);
	else
		fputs("null", out);
	nt_fmt_wall(to, t, sizeof(t));
	fprintf(out, ", \"end\": ");
	if (to)
		fprintf(out, "\"%s\", \"duration_s\": %.6f", t, (to - from) / 1e9);
	else
		fputs("null, \"duration_s\": null", out);
	fprintf(out, ",\n   \"controllers\": [");
	for (uint32_t k = 0; k < h->nctrls; k++) {
		const struct nt_ctrl_info *c = &h->ctrls[k];

		fprintf(out, "%s{\"instance\": %d, \"cntlid\": %u, ", k ? ", " : "", c->instance, c->cntlid);
		json_fields(out, (const char *const[]){ "transport", c->transport, "subsysnqn", c->subsysnqn,
							"hostnqn", c->hostnqn, "address", c->address, NULL });
		fprintf(out, ", \"queues\": %u}", c->nqueues);
	}
	fputc(']', out);
	/* a reconnect while recording: the controller's new cntlid, and from when */
	fprintf(out, ",\n   \"cntlid_changes\": [");
	for (uint32_t k = 0; k < h->ncchanges && k < NT_MAX_CNTLID_CHANGES; k++) {
		const struct nt_cntlid_change *c = &h->cchanges[k];

		nt_fmt_wall(c->from_mono_ns >= h->mono_ns ? c->from_mono_ns - h->mono_ns + h->real_ns : h->real_ns,
			    t, sizeof(t));
		fprintf(out, "%s{\"instance\": %d, \"cntlid\": %u, \"from\": \"%s\"}", k ? ", " : "", c->instance,
			c->cntlid, t);
	}
	fputc(']', out);
}

void nt_report_print_json(FILE *out, const struct nt_report *rep)
{
	const struct nt_report_opts *o = rep->o;

	fprintf(out, "{\"ntbpf_version\": ");
	json_str(out, o->version ? o->version : "");
	fprintf(out, ",\n \"inputs\": [");
	for (int i = 0; i < rep->nins; i++) {
		const struct nt_input *in = &rep->ins[i];

		fprintf(out, "%s\n  {\"file\": ", i ? "," : "");
		json_str(out, in->path);
		fprintf(out, ", \"role\": ");
		json_str(out, nt_role_name(in->hdr.role));
		fprintf(out, ", \"hostname\": ");
		json_str(out, in->hdr.hostname);
		fprintf(out, ", \"kernel\": ");
		json_str(out, in->hdr.kernel);
		fprintf(out, ", \"records\": %zu, \"complete\": %s", in->n, in->status == NT_READ_OK ? "true" : "false");
		if (in->hdr.sample > 1)
			fprintf(out, ", \"sample\": %u, \"sample_window_ms\": %u", in->hdr.sample, in->hdr.sample_window_ms);
		if (in->status != NT_READ_OK) {
			fprintf(out, ", \"error\": ");
			json_str(out, in->status_msg);
		}
		print_facts_json(out, in);
		fprintf(out, ",\n   \"hooks\": [");
		for (uint32_t k = 0; k < in->hdr.nhooks; k++) {
			const struct nt_hook_info *hk = &in->hdr.hooks[k];

			fputs(k ? ", {" : "{", out);
			json_fields(out, (const char *const[]){ "name", hk->name, "attach", hk->attach, "status", hk->status,
								"boundary", hk->boundary, NULL });
			fputc('}', out);
		}
		fprintf(out, "]}");
	}
	fprintf(out, "],\n \"lost_records\": %" PRIu64 ", \"matched\": %" PRIu64
		", \"unmatched\": {\"initiator\": %" PRIu64 ", \"target\": %" PRIu64 "},\n",
		rep->lost, rep->matched, rep->unmatched_init, rep->unmatched_tgt);
	print_status_json(out, rep);
	print_failover_json(out, rep);
	fprintf(out, " \"lost_detail\": {\"ring_buffer_full\": %" PRIu64 ", \"map_full\": %" PRIu64
		", \"skipped_runs\": %" PRIu64 ", \"no_completion\": %" PRIu64 ", \"user_space\": %" PRIu64 ", \"not_run\": %" PRIu64 "},\n",
		rep->lost_why[0], rep->lost_why[1], rep->lost_why[2], rep->lost_why[3], rep->lost_why[4], rep->lost_why[5]);
	fprintf(out, " \"not_recorded\": {\"in_flight_at_start\": %" PRIu64 ", \"in_flight_at_stop\": %" PRIu64
		", \"admin\": %" PRIu64 ", \"negative_network\": %" PRIu64 "},\n",
		rep->no_start, rep->inflight_end, rep->admin, rep->neg_network);
	fprintf(out, " \"pairing\": {\"by_port\": %zu, \"no_cntlid\": %zu, \"shared_cntlid\": %zu", rep->m.by_port,
		rep->m.no_cntlid, rep->m.shared_cntlid);
	if (rep->m.have_offset)
		fprintf(out, ", \"clock_offset_ns\": %" PRId64 ", \"clock_drift_ns\": %" PRId64 ", \"clock_votes\": %zu",
			rep->m.offset_ns, rep->m.offset_drift_ns, rep->m.offset_votes);
	else
		fprintf(out, ", \"clock_offset_ns\": null, \"clock_drift_ns\": null, \"clock_votes\": 0");
	if (rep->m.slow_init || rep->m.slow_tgt)
		fprintf(out, ", \"window_ns\": %" PRIu64 ", \"slower_than_window\": {\"initiator\": %zu, \"target\": %zu}",
			rep->m.window_ns, rep->m.slow_init, rep->m.slow_tgt);
	{
		const struct nt_input *ini = NULL;

		if (sampling_differs(rep, &ini))
			fprintf(out, ", \"sampling_differs\": true");
	}
	fprintf(out, "},\n");
	if (rep->since_set || rep->until_set) {
		fputs(" \"time_window\": {\"since_ns\": ", out);
		rep->since_set ? fprintf(out, "%" PRId64, rep->since_ns) : fputs("null", out);
		fputs(", \"until_ns\": ", out);
		rep->until_set ? fprintf(out, "%" PRId64, rep->until_ns) : fputs("null", out);
		fprintf(out, ", \"left_out\": %" PRIu64 "},\n", rep->outside);
		{
			uint64_t from, to;

			recorded_span(rep, &from, &to);
			fprintf(out, " \"recorded\": {\"from_ns\": %" PRIu64 ", \"to_ns\": ", from);
			to ? fprintf(out, "%" PRIu64, to) : fputs("null", out);
			fputs("},\n", out);
		}
	}
	fprintf(out, " \"hooks_not_attached\": %d,\n \"groups\": [", hooks_missing(rep));
	print_groups_json(out, rep, 0, false);
	fprintf(out, "]");
	if (rep->o->diagnose) {
		char scope[512];

		if (nt_diagnose_scope(rep, scope, sizeof(scope))) {	/* one host: what the findings cannot see */
			fputs(",\n \"diagnosis_scope\": ", out);
			nt_put_json(out, scope);
		}
		{	/* several hosts: why interference did not fire, what its windows could not hold */
			char note[1024];

			if (nt_diagnose_interference_note(rep, note, sizeof(note))) {
				fputs(",\n \"interference_note\": ", out);
				nt_put_json(out, note);
			}
		}
		fputs(",\n \"time_shares\": ", out);	/* where the time goes, whether a rule fired or not */
		nt_diagnose_print_shares_json(out, rep);
		fprintf(out, ",\n \"findings\": [");
		nt_diagnose_print_json(out, rep);
		fprintf(out, "]");
	}
	fprintf(out, "}\n");
}

/* ---- CSV ---- */

/* the header line; live's rows start with the interval's time (RFC 3339) and length */
static void csv_header(FILE *out, const struct nt_report_opts *o, bool timed)
{
	char key[NT_PCT_LABEL + 8];

	fprintf(out, "%sop,size,device,queue,group_count,stage,count,avg_us", timed ? "time,interval_s," : "");
	for (int p = 0; p < o->npcts; p++) {
		pct_key(o, p, key, sizeof(key));
		fprintf(out, ",%s_us", key);
	}
	/* added later: after the percentiles, so that columns keep their places */
	fprintf(out, ",min_us,max_us,status,span_s,iops,mb_s");
	/* --group-by queue's facts, empty elsewhere */
	fprintf(out, ",io_cpu,local,remote,rx_queue,depth_mean,depth_max,target_depth_mean,target_depth_max");
	/* added later still: at the end */
	fprintf(out, ",tx_queue");
	/* --group-by host, subsys or ns: their columns, at the end */
	if (o->group_by & (NT_GB_HOST | NT_GB_SUBSYS | NT_GB_NS))
		fprintf(out, ",host,hostname,subsys,ns");
	fputc('\n', out);
}

/* --group-by host, subsys or ns: a row's host,hostname,subsys,ns (empty: not grouped by it, or unknown) */
static void csv_keys(FILE *out, const struct nt_report *rep, const struct nt_group *g)
{
	unsigned int gb = rep->o->group_by;

	if (!(gb & (NT_GB_HOST | NT_GB_SUBSYS | NT_GB_NS)))
		return;
	fputc(',', out);
	if ((gb & NT_GB_HOST) && g->host != NT_KEY_UNKNOWN)
		nt_put_csv(out, nt_report_key_name(rep, NT_KEY_HOST, g->host));
	fputc(',', out);
	if (gb & NT_GB_HOST)
		nt_put_csv(out, nt_report_host_hostname(rep, g->host));
	fputc(',', out);
	if ((gb & NT_GB_SUBSYS) && g->subsys != NT_KEY_UNKNOWN)
		nt_put_csv(out, nt_report_key_name(rep, NT_KEY_SUBSYS, g->subsys));
	fputc(',', out);
	if ((gb & NT_GB_NS) && g->ns != NT_KEY_UNKNOWN)
		nt_put_csv(out, nt_report_key_name(rep, NT_KEY_NS, g->ns));
}

/* a row's queue columns (empty but for --group-by queue), and its end */
static void csv_queue(FILE *out, const struct nt_report *rep, const struct nt_group *g)
{
	struct qfacts f;

	if (!(rep->o->group_by & NT_GB_QUEUE) || !g->has_queue) {
		fputs(",,,,,,,,,", out);
		csv_keys(out, rep, g);
		fputc('\n', out);
		return;
	}
	qfacts_of(rep, g, &f);
	fputc(',', out);
	if (f.io_cpu >= 0)
		fprintf(out, "%d", f.io_cpu);
	fputc(',', out);
	nt_put_csv(out, f.local);
	fputc(',', out);
	nt_put_csv(out, f.remote);
	fputc(',', out);
	if (f.rx_queue >= 0)
		fprintf(out, "%d", f.rx_queue);
	for (int k = 0; k < 2; k++)
		if (g->dep_n[k])
			fprintf(out, ",%.2f,%u", f.dmean[k], f.dmax[k]);
		else
			fputs(",,", out);
	fputc(',', out);
	if (f.tx_queue >= 0)
		fprintf(out, "%d", f.tx_queue);
	csv_keys(out, rep, g);
	fputc('\n', out);
}

/* one row per group and stage; when: NULL, or live's interval (its time and length first) */
static void csv_rows(FILE *out, const struct nt_report *rep, const char *when, double secs)
{
	const struct nt_report_opts *o = rep->o;
	char name[64], q[32];

	for (int gi = 0; gi < rep->ngroups; gi++) {
		const struct nt_group *g = &rep->groups[gi];
		double rate = group_secs(g, secs);
		char status[32];

		nt_report_group_dev(rep, g, name, sizeof(name));
		queue_name(g, q, sizeof(q));
		nt_status_label(g->status, g->status_nvme, status, sizeof(status));
		for (int s = 0; s < NT_ST_NR; s++) {
			const struct nt_hist *h = &g->h[s];

			if (!h->count)
				continue;
			if (when)
				fprintf(out, "%s,%.3f,", when, secs);
			fprintf(out, "%s,%u,", g->op == 0xff ? "all" : nt_op_name(g->op), g->size);
			nt_put_csv(out, (o->group_by & NT_GB_DEV) ? name : "all");	/* a name from a file */
			fprintf(out, ",%s,%" PRIu64 ",%s,%" PRIu64 ",%.3f", q, g->count, nt_stage_name(s),
				h->count, nt_hist_mean(h) / 1000.0);
			for (int p = 0; p < o->npcts; p++)
				fprintf(out, ",%.3f", us(nt_hist_percentile(h, o->pcts[p])));
			fprintf(out, ",%.3f,%.3f,%s,%.6f,", us(nt_hist_percentile(h, 0)), us(nt_hist_percentile(h, 100)),
				status, rate);
			if (rate > 0)
				fprintf(out, "%.1f,%.3f", g->count / rate, g->bytes / rate / 1e6);
			else
				fputs(",", out);
			csv_queue(out, rep, g);
		}
	}
}

void nt_report_print_csv(FILE *out, const struct nt_report *rep)
{
	csv_header(out, rep->o, false);
	csv_rows(out, rep, NULL, 0);
}

void nt_report_interval_header(FILE *out, const struct nt_report_opts *o)
{
	if (o->format == NT_FMT_CSV) {
		csv_header(out, o, true);
		fflush(out);
	}
}

void nt_report_print_interval(FILE *out, const struct nt_report *rep, const char *when, double secs,
			      const struct nt_interval_info *info)
{
	uint64_t n = 0;

	if (rep->o->on_interval)
		rep->o->on_interval(rep->o->on_interval_ctx, rep, info);
	for (int gi = 0; gi < rep->ngroups; gi++)
		n += rep->groups[gi].count;
	if (rep->o->format == NT_FMT_JSON) {
		fprintf(out, "{\"time\": \"%s\", \"interval_s\": %.3f, \"iops\": %.1f, \"lost_records\": %" PRIu64
			", \"matched\": %" PRIu64 ", \"unmatched\": {\"initiator\": %" PRIu64 ", \"target\": %" PRIu64 "}",
			when, secs, n / secs, info->lost, info->matched, info->unmatched_init, info->unmatched_tgt);
		if (info->peer) {	/* may name the peer's host, from its header: untrusted */
			fputs(", \"peer\": ", out);
			json_str(out, info->peer);
		}
		fprintf(out, ", \"groups\": [");
		print_groups_json(out, rep, secs, true);	/* one line per interval, for pipelines */
		fprintf(out, "]}\n");
	} else if (rep->o->format == NT_FMT_CSV) {
		csv_rows(out, rep, when, secs);	/* the header: nt_report_interval_header() */
	} else {
		fprintf(out, "%s  IOPS %.0f", when, n / secs);
		if (info->lost)
			fprintf(out, "  lost %" PRIu64, info->lost);
		if (info->peer) {
			fputs("  peer ", out);
			nt_put_term(out, info->peer);
			fprintf(out, ": matched %" PRIu64 ", unmatched %" PRIu64 " initiator / %" PRIu64 " target",
				info->matched, info->unmatched_init, info->unmatched_tgt);
		}
		fputc('\n', out);
		for (int gi = 0; gi < rep->ngroups; gi++)
			print_group_text(out, rep, &rep->groups[gi], secs);
		fputc('\n', out);
	}
	fflush(out);
}
