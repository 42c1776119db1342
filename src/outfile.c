// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* outfile.c - the record file's creation, lock and renames (outfile.h). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>
#include "outfile.h"

static int create_locked(struct nt_outfile *o, char *err, size_t errlen)
{
	for (int attempt = 0; attempt < 2; attempt++) {
		struct stat a, b;
		int fd = open(o->tmp, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);

		if (fd >= 0) {
			/* locked, and still the file at that name (a stale-file cleaner may have raced us) */
			if (flock(fd, LOCK_EX | LOCK_NB) || fstat(fd, &a) || lstat(o->tmp, &b) || a.st_ino != b.st_ino ||
			    a.st_dev != b.st_dev) {
				close(fd);
				snprintf(err, errlen, "%s is being written by another ntbpf record", o->path);
				return -1;
			}
			return fd;
		}
		if (errno != EEXIST) {	/* the user's name, not the temporary file's: ENOENT, EACCES are its folder's */
			snprintf(err, errlen, "cannot write %s: %s", o->path, strerror(errno));
			return -1;
		}
		/* there already: held by a running recorder, or left by one that died */
		fd = open(o->tmp, O_RDWR | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
		if (fd < 0) {
			snprintf(err, errlen, "cannot write %s: %s exists (%s)", o->path, o->tmp,
				 errno == ELOOP ? "a symbolic link" : strerror(errno));
			return -1;
		}
		if (flock(fd, LOCK_EX | LOCK_NB)) {
			close(fd);
			snprintf(err, errlen, "%s is being written by another ntbpf record (it holds %s)", o->path,
				 o->tmp);
			return -1;
		}
		if (fstat(fd, &a) || !S_ISREG(a.st_mode) || a.st_uid != geteuid()) {
			close(fd);
			snprintf(err, errlen, "cannot write %s: %s exists and is not ours to replace", o->path, o->tmp);
			return -1;
		}
		unlink(o->tmp);	/* stale: nobody holds it */
		close(fd);
	}
	snprintf(err, errlen, "cannot write %s: %s keeps coming back", o->path, o->tmp);
	return -1;
}

static void close_files(struct nt_outfile *o)
{
	if (o->f)
		fclose(o->f);
	o->f = NULL;
	if (o->fd >= 0)
		close(o->fd);	/* the lock goes with it */
	o->fd = -1;
}

static const char *node_kind(mode_t m)
{
	return S_ISBLK(m) ? "a block device" : S_ISSOCK(m) ? "a socket" : S_ISDIR(m) ? "a directory" : "not a file";
}

/*
 * FILE exists and is a FIFO or a character device (/dev/null, a named pipe):
 * written in place as a stream, like "-" (perf and tcpdump write there too),
 * never renamed: moving /dev/null aside for a 0600 file would break the host.
 * Anything else that is not a regular file or a link is refused.
 */
static int open_node(struct nt_outfile *o, const char *path, const struct stat *sb, char *err, size_t errlen)
{
	struct stat st;

	if (!S_ISFIFO(sb->st_mode) && !S_ISCHR(sb->st_mode)) {
		snprintf(err, errlen, "cannot write %s: is %s", path, node_kind(sb->st_mode));
		return -1;
	}
	o->fd = open(path, O_WRONLY | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC);
	if (o->fd < 0) {
		snprintf(err, errlen, "cannot write %s: %s", path, strerror(errno));
		return -1;
	}
	if (fstat(o->fd, &st) || st.st_ino != sb->st_ino || st.st_dev != sb->st_dev) {
		snprintf(err, errlen, "cannot write %s: it changed while being opened", path);
		close_files(o);
		return -1;
	}
	if (isatty(o->fd)) {
		snprintf(err, errlen, "cannot write %s: is a terminal (a record file is binary)", path);
		close_files(o);
		return -1;
	}
	o->is_stream = true;
	snprintf(o->path, sizeof(o->path), "%s", path);
	o->f = fdopen(dup(o->fd), "wb");
	if (!o->f) {
		snprintf(err, errlen, "cannot write %s: %s", path, strerror(errno));
		close_files(o);
		return -1;
	}
	setvbuf(o->f, NULL, _IONBF, 0);
	return 0;
}

int nt_outfile_open(struct nt_outfile *o, const char *path, char *err, size_t errlen)
{
	char d[4096], b[4096];
	struct stat sb;
	int n;

	memset(o, 0, sizeof(*o));
	o->fd = -1;
	if (!strcmp(path, "-")) {
		if (isatty(STDOUT_FILENO)) {
			snprintf(err, errlen, "standard output is a terminal: -o - writes binary records "
				 "(redirect it to a file or pipe it, e.g. into ntbpf report -)");
			return -1;
		}
		/* the stream takes stdout; --interval lines and CMD's output go to stderr from here on */
		o->is_stream = true;
		snprintf(o->path, sizeof(o->path), "-");
		o->fd = dup(STDOUT_FILENO);
		o->f = o->fd >= 0 ? fdopen(dup(o->fd), "wb") : NULL;
		if (!o->f || dup2(STDERR_FILENO, STDOUT_FILENO) < 0) {
			snprintf(err, errlen, "cannot write to standard output: %s", strerror(errno));
			close_files(o);
			return -1;
		}
		return 0;
	}
	if (strlen(path) >= sizeof(d) - 16 || !path[0]) {
		snprintf(err, errlen, "bad output file name");
		return -1;
	}
	if (!stat(path, &sb) && S_ISDIR(sb.st_mode)) {
		snprintf(err, errlen, "cannot write %s: is a directory", path);
		return -1;
	}
	if (!lstat(path, &sb) && !S_ISREG(sb.st_mode) && !S_ISLNK(sb.st_mode))
		return open_node(o, path, &sb, err, errlen);
	snprintf(d, sizeof(d), "%s", path);
	snprintf(b, sizeof(b), "%s", path);
	n = snprintf(o->tmp, sizeof(o->tmp), "%s/.%s.ntbpf-tmp", dirname(d), basename(b));
	if (n < 0 || (size_t)n >= sizeof(o->tmp)) {
		snprintf(err, errlen, "bad output file name");
		return -1;
	}
	snprintf(o->path, sizeof(o->path), "%s", path);
	snprintf(o->old, sizeof(o->old), "%s.old", path);
	o->fd = create_locked(o, err, errlen);
	if (o->fd < 0)
		return -1;
	o->f = fdopen(dup(o->fd), "wb");
	if (!o->f) {
		snprintf(err, errlen, "cannot write %s: %s", o->path, strerror(errno));
		nt_outfile_abort(o);
		return -1;
	}
	setvbuf(o->f, NULL, _IONBF, 0);
	return 0;
}

int nt_outfile_start(struct nt_outfile *o, char *err, size_t errlen)
{
	struct stat sb;

	if (o->is_stream)
		return 0;
	if (lstat(o->path, &sb)) {
		if (errno == ENOENT)
			return 0;
		snprintf(err, errlen, "cannot write %s: %s", o->path, strerror(errno));
		return -1;
	}
	if (rename(o->path, o->old)) {
		snprintf(err, errlen, "cannot move %s to %s: %s", o->path, o->old, strerror(errno));
		return -1;
	}
	o->moved_old = true;
	return 0;
}

int nt_outfile_cut(struct nt_outfile *o, uint64_t len)
{
	clearerr(o->f);
	if (ftruncate(o->fd, len) || fseeko(o->f, len, SEEK_SET))
		return -1;
	return 0;
}

int nt_outfile_commit(struct nt_outfile *o, char *err, size_t errlen)
{
	int rc = 0;

	if (o->is_stream) {
		if (o->f && fflush(o->f)) {
			snprintf(err, errlen, "writing to %s failed: %s",
				 strcmp(o->path, "-") ? o->path : "standard output", strerror(errno));
			rc = -1;
		}
	} else if (fsync(o->fd) && errno != EINVAL) {
		snprintf(err, errlen, "writing %s failed: %s", o->path, strerror(errno));
		rc = -1;
	} else if (rename(o->tmp, o->path)) {	/* still locked while it gets its name */
		snprintf(err, errlen, "cannot rename %s to %s: %s", o->tmp, o->path, strerror(errno));
		rc = -1;
	}
	close_files(o);
	return rc;
}

void nt_outfile_abort(struct nt_outfile *o)
{
	if (o->fd >= 0 && !o->is_stream)
		unlink(o->tmp);
	close_files(o);
}
