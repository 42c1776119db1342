/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * outfile - how "ntbpf record" writes its file, as perf does and more:
 *
 *   open     ".FILE.ntbpf-tmp" next to FILE, created 0600 with O_EXCL|O_NOFOLLOW and
 *            flock()ed: the lock that keeps two recorders off one file (a leftover
 *            temporary file that nobody holds is replaced)
 *   start    once recording really runs: an existing FILE becomes FILE.old
 *   commit   the temporary file becomes FILE (rename: never follows a link at FILE)
 *   abort    the temporary file goes; FILE was never touched
 *
 * "-" is standard output, refused when that is a terminal.  An existing FIFO or
 * character device (/dev/null) is written in place as a stream, as "-" is; a
 * block device, a socket or a terminal is refused.
 *
 * The stream is unbuffered: each block the writer writes is one write(2), so
 * after a failed write (ENOSPC) the file is cut back to its last whole block.
 */
#ifndef NTBPF_OUTFILE_H
#define NTBPF_OUTFILE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

struct nt_outfile {
	char path[4096];
	char tmp[4096];
	char old[4096];
	int fd;
	FILE *f;		/* unbuffered, over fd */
	bool moved_old;		/* FILE was moved to FILE.old */
	bool is_stream;		/* "-" (standard output), or FILE a FIFO or a character device:
				   written in place, no temporary file, no rename, no lock */
};

/*
 * 0, or -1 with a one-line cause ("... is being written by another ntbpf record").
 * "-" is standard output: fd 1 then becomes stderr, so that nothing else lands in the stream.
 */
int nt_outfile_open(struct nt_outfile *o, const char *path, char *err, size_t errlen);
/* recording runs: FILE (if any) to FILE.old; 0 or -1 with the cause */
int nt_outfile_start(struct nt_outfile *o, char *err, size_t errlen);
/* drop what is after byte len (a partial block), continue writing there; 0 or -1 */
int nt_outfile_cut(struct nt_outfile *o, uint64_t len);
/* close and rename to FILE; 0 or -1 with the cause (the temporary file is left then) */
int nt_outfile_commit(struct nt_outfile *o, char *err, size_t errlen);
/* close and remove the temporary file */
void nt_outfile_abort(struct nt_outfile *o);

#endif
