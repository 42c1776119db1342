// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The record file's creation (src/outfile.c), no root: mode 0600, the lock
 * between two recorders, a stale temporary file, a symbolic link planted at
 * the temporary name or at FILE, FILE.old only once recording starts, the
 * cut back to a whole block; a FIFO or a character device (/dev/null) written
 * as a stream, never renamed; a block device, a socket or a terminal refused.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <unistd.h>
#include "outfile.h"

static char dir[64], path[128], tmp[160];

static int setup(void **state)
{
	snprintf(dir, sizeof(dir), "/tmp/ntbpf-outfile-XXXXXX");
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/r.ntbpf", dir);
	snprintf(tmp, sizeof(tmp), "%s/.r.ntbpf.ntbpf-tmp", dir);
	return 0;
}

static int teardown(void **state)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	return system(cmd);
}

static void put(const char *p, const char *s)
{
	FILE *f = fopen(p, "w");

	fputs(s, f);
	fclose(f);
}

static char *get(const char *p)
{
	static char buf[256];
	FILE *f = fopen(p, "r");
	size_t n;

	if (!f)
		return NULL;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = 0;
	fclose(f);
	return buf;
}

static void test_create_start_commit(void **state)
{
	struct nt_outfile o, o2;
	struct stat sb;
	char err[512], old[160];

	put(path, "precious");
	assert_int_equal(nt_outfile_open(&o, path, err, sizeof(err)), 0);
	assert_int_equal(stat(tmp, &sb), 0);
	assert_int_equal(sb.st_mode & 0777, 0600);
	/* a second recorder on the same file: refused while the first holds it */
	assert_int_equal(nt_outfile_open(&o2, path, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "is being written by another ntbpf record"));
	/* nothing happened to FILE until recording starts */
	assert_string_equal(get(path), "precious");
	assert_int_equal(nt_outfile_start(&o, err, sizeof(err)), 0);
	snprintf(old, sizeof(old), "%s.old", path);
	assert_string_equal(get(old), "precious");
	assert_int_equal(fwrite("new", 1, 3, o.f), 3);
	assert_int_equal(nt_outfile_commit(&o, err, sizeof(err)), 0);
	assert_string_equal(get(path), "new");
	assert_int_equal(stat(path, &sb), 0);
	assert_int_equal(sb.st_mode & 0777, 0600);
	assert_int_equal(access(tmp, F_OK), -1);
}

static void test_abort_keeps_file(void **state)
{
	struct nt_outfile o;
	char err[512], old[160];

	put(path, "precious");
	assert_int_equal(nt_outfile_open(&o, path, err, sizeof(err)), 0);
	nt_outfile_abort(&o);
	assert_string_equal(get(path), "precious");
	snprintf(old, sizeof(old), "%s.old", path);
	assert_int_equal(access(old, F_OK), -1);
	assert_int_equal(access(tmp, F_OK), -1);
}

static void test_stale_and_planted(void **state)
{
	struct nt_outfile o;
	char err[512], victim[160];

	/* left by a recorder that died (nobody holds it): replaced */
	put(tmp, "stale");
	assert_int_equal(nt_outfile_open(&o, path, err, sizeof(err)), 0);
	assert_int_equal(fwrite("x", 1, 1, o.f), 1);
	assert_int_equal(nt_outfile_commit(&o, err, sizeof(err)), 0);
	assert_string_equal(get(path), "x");
	/* a symbolic link planted at the temporary name: never followed */
	snprintf(victim, sizeof(victim), "%s/victim", dir);
	put(victim, "victim");
	assert_int_equal(symlink(victim, tmp), 0);
	assert_int_equal(nt_outfile_open(&o, path, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "a symbolic link"));
	assert_string_equal(get(victim), "victim");
	unlink(tmp);
	/* a symbolic link at FILE: replaced by the new file, its target untouched */
	unlink(path);
	assert_int_equal(symlink(victim, path), 0);
	assert_int_equal(nt_outfile_open(&o, path, err, sizeof(err)), 0);
	assert_int_equal(nt_outfile_start(&o, err, sizeof(err)), 0);
	assert_int_equal(fwrite("new", 1, 3, o.f), 3);
	assert_int_equal(nt_outfile_commit(&o, err, sizeof(err)), 0);
	assert_string_equal(get(victim), "victim");
	assert_string_equal(get(path), "new");
	/* a directory */
	assert_int_equal(nt_outfile_open(&o, dir, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "is a directory"));
}

static void test_cut(void **state)
{
	struct nt_outfile o;
	struct stat sb;
	char err[512];

	assert_int_equal(nt_outfile_open(&o, path, err, sizeof(err)), 0);
	assert_int_equal(fwrite("0123456789", 1, 10, o.f), 10);
	assert_int_equal(nt_outfile_cut(&o, 4), 0);
	assert_int_equal(fwrite("ab", 1, 2, o.f), 2);
	assert_int_equal(nt_outfile_commit(&o, err, sizeof(err)), 0);
	assert_int_equal(stat(path, &sb), 0);
	assert_int_equal(sb.st_size, 6);
	assert_string_equal(get(path), "0123ab");
}

/* path is still a node of this type, and no FILE.old nor temporary file was made */
static void assert_node_kept(const char *p, mode_t type)
{
	char other[200];
	struct stat sb;

	assert_int_equal(lstat(p, &sb), 0);
	assert_int_equal(sb.st_mode & S_IFMT, type);
	snprintf(other, sizeof(other), "%s.old", p);
	assert_int_equal(access(other, F_OK), -1);
	snprintf(other, sizeof(other), "%s/.%s.ntbpf-tmp", dir, strrchr(p, '/') + 1);
	assert_int_equal(access(other, F_OK), -1);
}

/*
 * -o onto what is not a regular file.  Before: the node itself was moved to
 * FILE.old and a regular file put in its place, so `record -o /dev/null` as
 * root replaced /dev/null with a 0600 file.
 */
static void test_special_files(void **state)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char p[160], err[512], got[16] = "";
	struct nt_outfile o;
	int rfd, sfd, m;

	/* a FIFO: written as a stream (a reader is there) */
	snprintf(p, sizeof(p), "%s/fifo", dir);
	assert_int_equal(mkfifo(p, 0600), 0);
	rfd = open(p, O_RDONLY | O_NONBLOCK);
	assert_true(rfd >= 0);
	assert_int_equal(nt_outfile_open(&o, p, err, sizeof(err)), 0);
	assert_int_equal(nt_outfile_start(&o, err, sizeof(err)), 0);
	assert_int_equal(fwrite("stream", 1, 6, o.f), 6);
	assert_int_equal(nt_outfile_commit(&o, err, sizeof(err)), 0);
	assert_int_equal(read(rfd, got, sizeof(got) - 1), 6);
	assert_string_equal(got, "stream");
	close(rfd);
	assert_node_kept(p, S_IFIFO);

	/* a socket: refused, left as it is */
	snprintf(p, sizeof(p), "%s/sock", dir);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", p);
	sfd = socket(AF_UNIX, SOCK_STREAM, 0);
	assert_int_equal(bind(sfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(nt_outfile_open(&o, p, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "is a socket"));
	close(sfd);
	assert_node_kept(p, S_IFSOCK);

	/* a terminal: refused (binary on a terminal), also as standard output */
	m = posix_openpt(O_RDWR | O_NOCTTY);
	if (m >= 0 && !grantpt(m) && !unlockpt(m) && ptsname(m)) {
		int saved = dup(STDOUT_FILENO), t;

		snprintf(p, sizeof(p), "%s", ptsname(m));
		assert_int_equal(nt_outfile_open(&o, p, err, sizeof(err)), -1);
		assert_non_null(strstr(err, "is a terminal"));
		t = open(p, O_RDWR | O_NOCTTY);
		assert_true(t >= 0 && saved >= 0);
		fflush(stdout);
		dup2(t, STDOUT_FILENO);
		rfd = nt_outfile_open(&o, "-", err, sizeof(err));
		dup2(saved, STDOUT_FILENO);
		close(saved);
		close(t);
		assert_int_equal(rfd, -1);
		assert_non_null(strstr(err, "standard output is a terminal"));
	}
	if (m >= 0)
		close(m);

	/* device nodes (only root can make them) */
	if (geteuid() != 0)
		return;
	snprintf(p, sizeof(p), "%s/null", dir);
	assert_int_equal(mknod(p, S_IFCHR | 0666, makedev(1, 3)), 0);
	assert_int_equal(nt_outfile_open(&o, p, err, sizeof(err)), 0);
	assert_int_equal(nt_outfile_start(&o, err, sizeof(err)), 0);
	assert_int_equal(fwrite("gone", 1, 4, o.f), 4);
	assert_int_equal(nt_outfile_commit(&o, err, sizeof(err)), 0);
	assert_node_kept(p, S_IFCHR);
	snprintf(p, sizeof(p), "%s/blk", dir);
	assert_int_equal(mknod(p, S_IFBLK | 0600, makedev(7, 250)), 0);
	assert_int_equal(nt_outfile_open(&o, p, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "is a block device"));
	assert_node_kept(p, S_IFBLK);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_create_start_commit, setup, teardown),
		cmocka_unit_test_setup_teardown(test_abort_keeps_file, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stale_and_planted, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cut, setup, teardown),
		cmocka_unit_test_setup_teardown(test_special_files, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
