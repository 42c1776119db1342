// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The devices' own counts (src/sysinfo.c: nt_dev_iostat, nt_dev_not_run) on
 * a fake /sys: request-based devices summed (reads, writes, discards,
 * flushes; in flight), bio-based ones (a multipath head, device-mapper) left
 * out, 11- and 15-field stat lines of older kernels, a device without
 * iostats or with a bad line refusing the whole count; and the I/Os no
 * program run saw, never negative and never claimed where a count is missing.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "sysinfo.h"

static char root[64];

static int setup(void **state)
{
	snprintf(root, sizeof(root), "/tmp/ntbpf-sysinfo-XXXXXX");
	assert_non_null(mkdtemp(root));
	return 0;
}

static int teardown(void **state)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", root);
	return system(cmd);
}

/* <root>/sys/class/block/NAME with its stat line; mq and iostats only where asked */
static void disk(const char *name, const char *stat, bool mq, const char *iostats)
{
	char p[256];
	FILE *f;

	snprintf(p, sizeof(p), "mkdir -p %s/sys/class/block/%s/queue", root, name);
	assert_int_equal(system(p), 0);
	if (mq) {
		snprintf(p, sizeof(p), "%s/sys/class/block/%s/mq", root, name);
		assert_int_equal(mkdir(p, 0755), 0);
	}
	if (iostats) {
		snprintf(p, sizeof(p), "%s/sys/class/block/%s/queue/iostats", root, name);
		f = fopen(p, "w");
		fprintf(f, "%s\n", iostats);
		fclose(f);
	}
	snprintf(p, sizeof(p), "%s/sys/class/block/%s/stat", root, name);
	f = fopen(p, "w");
	fprintf(f, "%s\n", stat);
	fclose(f);
}

static void add(struct nt_devset *ds, const char *name)
{
	snprintf(ds->name[ds->n], sizeof(ds->name[0]), "%s", name);
	ds->devt[ds->n] = 7u << 20 | (uint32_t)ds->n;
	ds->n++;
}

static void test_iostat_sums_request_based(void **state)
{
	struct nt_devset ds = { 0 };
	uint64_t done, inflight;

	/* reads 100, writes 20, in flight 3, discards 5, flushes 7 (17 fields, v5.5+) */
	disk("nvme0c0n1", "100 0 800 50 20 0 160 10 3 40 60 5 0 40 1 7 2", true, "1");
	/* the multipath head: bio-based, its I/Os are the path disk's requests */
	disk("nvme0n1", "999 0 0 0 999 0 0 0 9 0 0 0 0 0 0 0 0", false, "1");
	/* 15 fields (v4.18 .. v5.4): no flushes */
	disk("sdb", "10 0 80 5 2 0 16 1 1 6 6 4 0 32 1", true, "1");
	/* 11 fields (before v4.18): no discards */
	disk("sdc", "1 0 8 1 1 0 8 1 0 2 2", true, "1");
	add(&ds, "nvme0n1");
	add(&ds, "nvme0c0n1");
	add(&ds, "sdb");
	add(&ds, "sdc");
	assert_int_equal(nt_dev_iostat(root, &ds, &done, &inflight), 0);
	assert_int_equal(done, (100 + 20 + 5 + 7) + (10 + 2 + 4) + (1 + 1));
	assert_int_equal(inflight, 3 + 1 + 0);
}

static void test_iostat_refuses(void **state)
{
	struct nt_devset ds = { 0 }, off = { 0 }, bad = { 0 }, bio = { 0 }, gone = { 0 };
	uint64_t done, inflight;

	disk("loop0", "5 0 40 1 0 0 0 0 0 1 1 0 0 0 0 0 0", true, "1");
	disk("loop1", "5 0 40 1 0 0 0 0 0 1 1 0 0 0 0 0 0", true, "0");	/* keeps no count */
	disk("loop2", "5 0 40", true, "1");					/* too short */
	disk("dm-0", "5 0 40 1 0 0 0 0 0 1 1 0 0 0 0 0 0", false, "1");	/* bio-based only */
	add(&ds, "loop0");
	assert_int_equal(nt_dev_iostat(root, &ds, &done, &inflight), 0);
	assert_int_equal(done, 5);
	add(&off, "loop0");
	add(&off, "loop1");
	assert_int_equal(nt_dev_iostat(root, &off, &done, &inflight), -1);
	add(&bad, "loop2");
	assert_int_equal(nt_dev_iostat(root, &bad, &done, &inflight), -1);
	add(&bio, "dm-0");	/* no request-based device: nothing to compare with */
	assert_int_equal(nt_dev_iostat(root, &bio, &done, &inflight), -1);
	disk("loop3", "5 0 40 1 0 0 0 0 0 1 1 0 0 0 0 0 0", true, NULL);	/* no iostats file */
	add(&gone, "loop3");
	assert_int_equal(nt_dev_iostat(root, &gone, &done, &inflight), -1);
}

static void test_not_run(void **state)
{
	struct nt_kcount k0 = { .ok = true, .done = 1000, .inflight = 2 };
	struct nt_kcount k1 = { .ok = true, .done = 1500, .inflight = 1 };
	uint64_t s[ST_NR] = { 0 };

	/* 500 completed while recording and 1 in flight at the stop: 501 I/Os to account for */
	s[ST_EMITTED] = 490;
	s[ST_LOST_RINGBUF] = 1;
	s[ST_LOST_MAP_FULL] = 1;
	s[ST_NO_COMPLETE] = 2;
	s[ST_NO_START] = 2;		/* the 2 in flight at the start */
	s[ST_INFLIGHT_END] = 1;
	s[ST_PROG_MISSES] = 50;		/* runs, not I/Os: not part of it */
	s[ST_FILTERED] = 70;
	assert_int_equal(nt_dev_not_run(&k0, &k1, s), 501 - 497);
	/* ntbpf saw more than the devices counted (requeues, passthrough): 0, never negative */
	s[ST_EMITTED] = 600;
	assert_int_equal(nt_dev_not_run(&k0, &k1, s), 0);
	s[ST_EMITTED] = 490;
	/* a count missing at either end, or going backwards (the device came back): no claim */
	k1.ok = false;
	assert_int_equal(nt_dev_not_run(&k0, &k1, s), 0);
	k1.ok = true;
	k0.ok = false;
	assert_int_equal(nt_dev_not_run(&k0, &k1, s), 0);
	k0.ok = true;
	k1.done = 10;
	assert_int_equal(nt_dev_not_run(&k0, &k1, s), 0);
}

/* live defers block_rq_issue only where every device is an NVMe namespace (src/probes.h) */
static void test_nvme_only(void **state)
{
	struct nt_devset ds = { 0 };

	(void)state;
	assert_false(nt_devs_nvme_only(&ds));	/* no -d: every device */
	add(&ds, "nvme1n1");
	add(&ds, "nvme1c2n1");			/* a head's path disk */
	assert_true(nt_devs_nvme_only(&ds));
	add(&ds, "nvme10n12");
	assert_true(nt_devs_nvme_only(&ds));
	{
		const char *others[] = { "loop0", "nvme1n1p1", "nvme1", "nvme1n", "nvmeXn1", "nvme1n1x", "sda",
					 "nvme1c2n1p3", "nvme1c2" };

		for (size_t i = 0; i < sizeof(others) / sizeof(others[0]); i++) {
			struct nt_devset d2 = ds;

			add(&d2, others[i]);
			if (nt_devs_nvme_only(&d2))
				fail_msg("'%s' taken for an NVMe namespace", others[i]);
		}
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_iostat_sums_request_based, setup, teardown),
		cmocka_unit_test_setup_teardown(test_iostat_refuses, setup, teardown),
		cmocka_unit_test(test_not_run),
		cmocka_unit_test(test_nvme_only),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
