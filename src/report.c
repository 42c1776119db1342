// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * report.c - "ntbpf report": read the files, build the report (src/groups.c),
 * print it in the format asked for (src/render.c: text, JSON, CSV; src/html.c:
 * HTML, with src/script.c's rows for its charts).
 */
#define _GNU_SOURCE	/* fopencookie */
#include <errno.h>
#include <inttypes.h>
#include <time.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include "report.h"
#include "escape.h"
#include "html.h"
#include "outfile.h"
#include "pairing.h"
#include "script.h"

void nt_report_print(FILE *out, const struct nt_report *rep)
{
	switch (rep->o->format) {
	case NT_FMT_JSON:
		nt_report_print_json(out, rep);
		break;
	case NT_FMT_CSV:
		nt_report_print_csv(out, rep);
		break;
	case NT_FMT_HTML:
		nt_report_html(out, rep, NULL);	/* tables only: the charts need the files again (nt_report_cmd) */
		break;
	default:
		nt_report_print_text(out, rep);
	}
}

/* the report into out, or (-o FILE) into FILE: 0600, an existing FILE kept as FILE.old; 0 or -1 */
static int write_report(const struct nt_config *cfg, const char *buf, size_t len, FILE *out, FILE *err)
{
	struct nt_outfile of = { .fd = -1 };
	char msg[400];

	if (!cfg->report_output || !strcmp(cfg->report_output, "-")) {
		errno = 0;
		if (fwrite(buf, 1, len, out) != len || fflush(out) || ferror(out)) {
			fprintf(err, "ntbpf report: cannot write the report to standard output: %s\n",
				strerror(errno ? errno : EIO));
			return -1;
		}
		return 0;
	}
	if (nt_outfile_open(&of, cfg->report_output, msg, sizeof(msg)) || nt_outfile_start(&of, msg, sizeof(msg))) {
		if (of.f)
			nt_outfile_abort(&of);
		fprintf(err, "ntbpf report: %s\n", msg);
		return -1;
	}
	if (fwrite(buf, 1, len, of.f) != len) {
		nt_outfile_abort(&of);
		fprintf(err, "ntbpf report: cannot write %s: %s\n", nt_esc_term(msg, sizeof(msg), cfg->report_output),
			strerror(errno));
		return -1;
	}
	if (nt_outfile_commit(&of, msg, sizeof(msg))) {
		fprintf(err, "ntbpf report: %s\n", msg);
		return -1;
	}
	return 0;
}

/* a stream that drops what is written: no /dev/null needed (a container or a bare chroot may lack /dev) */
static ssize_t discard_write(void *cookie, const char *buf, size_t size)
{
	return size;
}

static FILE *discard_stream(void)
{
	static const cookie_io_functions_t io = { .write = discard_write };

	return fopencookie(NULL, "w", io);
}

/*
 * -o FILE must not replace what the report reads: FILE is one of the inputs
 * (the same file, by device and inode: a name twice, a link), or an ntbpf
 * record file (a forgotten output name: "report -o initiator.ntbpf
 * target.ntbpf").  0, or -1 with a one-line cause in msg.
 */
int nt_output_check(const char *output, const char *const *inputs, int n, const char *prog, char *msg, size_t len)
{
	char path[256], in[256], magic[8];
	struct stat so, si;
	FILE *f;

	if (!output || !strcmp(output, "-") || stat(output, &so))
		return 0;	/* standard output, or a new file */
	nt_esc_term(path, sizeof(path), output);
	for (int i = 0; i < n; i++) {
		int rc = strcmp(inputs[i], "-") ? stat(inputs[i], &si) : fstat(STDIN_FILENO, &si);

		if (!rc && si.st_dev == so.st_dev && si.st_ino == so.st_ino) {
			snprintf(msg, len, "%s: -o %s is an input (%s): the report would replace it; give another name",
				 prog, path, strcmp(inputs[i], "-") ? nt_esc_term(in, sizeof(in), inputs[i]) :
				 "standard input");
			return -1;
		}
	}
	if (S_ISREG(so.st_mode) && (f = fopen(output, "rb"))) {
		bool rec = fread(magic, 1, sizeof(magic), f) == sizeof(magic) && !memcmp(magic, "NTBPFREC", 8);

		fclose(f);
		if (rec) {
			snprintf(msg, len, "%s: -o %s is an ntbpf record file: the report would replace it; give "
				 "another name", prog, path);
			return -1;
		}
	}
	return 0;
}

int nt_report_cmd(const struct nt_config *cfg, FILE *out, FILE *err)
{
	bool html = cfg->format == NT_FMT_HTML;
	struct nt_input *ins = calloc(cfg->nfiles, sizeof(*ins)), *ins2 = html ? calloc(cfg->nfiles, sizeof(*ins2)) : NULL;
	FILE **files = calloc(cfg->nfiles, sizeof(*files)), *m = NULL, *quiet = NULL;
	struct nt_rows *rows = NULL;
	struct nt_report_opts o;
	struct nt_report rep;
	char msg[1200], *buf = NULL;
	size_t len = 0;
	int rc = 0;

	if (!ins || !files || (html && !ins2)) {
		free(ins);
		free(ins2);
		free(files);
		return 1;
	}
	nt_report_opts_of(cfg, &o);
	if (nt_output_check(cfg->report_output, (const char *const *)cfg->files, cfg->nfiles, "ntbpf report", msg,
			    sizeof(msg))) {
		fprintf(err, "%s\n", msg);
		rc = 1;
		goto out;
	}
	/* html reads the files twice: standard input copied first */
	if (nt_pair_open(files, (const char *const *)cfg->files, cfg->nfiles, html, "ntbpf report", err)) {
		rc = 1;
		goto out;
	}
	if (nt_report_build_files(&rep, ins, files, (const char *const *)cfg->files, cfg->nfiles, &o, err, msg,
				  sizeof(msg))) {
		fprintf(err, "ntbpf report: %s\n", msg);
		nt_report_free(&rep);
		rc = 1;
		goto out;
	}
	for (int i = 0; i < cfg->nfiles; i++)
		if (ins[i].status != NT_READ_OK)
			rc = 1;	/* warned; still report what the whole chunks hold */
	/* the charts: every I/O again (the warnings were given once) */
	quiet = html ? discard_stream() : NULL;
	if (html && (!quiet || nt_rows_open(&rows, ins2, files, (const char *const *)cfg->files, cfg->nfiles,
					    "ntbpf report", quiet))) {
		fprintf(err, "ntbpf report: cannot read the files again for the charts\n");
		nt_report_free(&rep);
		rc = 1;
		goto out;
	}
	m = open_memstream(&buf, &len);
	if (!m) {
		fprintf(err, "ntbpf report: out of memory\n");
		nt_report_free(&rep);
		rc = 1;
		goto out;
	}
	if (html) {
		if (nt_report_html(m, &rep, rows)) {
			fprintf(err, "ntbpf report: out of memory, or the files could not be read again\n");
			rc = 1;
		}
	} else {
		nt_report_print(m, &rep);
	}
	nt_report_free(&rep);
	if (fclose(m)) {
		fprintf(err, "ntbpf report: out of memory\n");
		rc = 1;
	} else if (write_report(cfg, buf, len, out, err)) {
		rc = 1;
	}
out:
	free(buf);
	if (quiet)
		fclose(quiet);
	nt_rows_free(rows);
	for (int i = 0; i < cfg->nfiles; i++) {
		if (files[i])
			fclose(files[i]);
		nt_input_free(&ins[i]);
		if (ins2)
			nt_input_free(&ins2[i]);
	}
	free(files);
	free(ins);
	free(ins2);
	return rc;
}
