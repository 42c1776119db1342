// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * sysinfo.c - the host as /sys and /proc show it: which block devices to trace and their
 * completion counters (for not_run), the NVMe controllers and their namespaces, host and
 * subsystem NQNs, idle queues, the host's identity for the header, capabilities and the
 * version line.  Every file read is bounded; nothing here touches BPF.
 */
#include <dirent.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/capability.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>
#include "sysinfo.h"

/* first line of a small sysfs file, newline stripped; 0 or -1 */
static int read_line(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "r");
	size_t n;

	if (!f)
		return -1;
	if (!fgets(buf, len, f)) {
		fclose(f);
		return -1;
	}
	fclose(f);
	n = strlen(buf);
	while (n && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
		buf[--n] = 0;
	return 0;
}

static int dev_of(const char *root, const char *name, uint32_t *devt)
{
	char path[512], buf[32];
	unsigned int maj, min;

	snprintf(path, sizeof(path), "%s/sys/class/block/%s/dev", root, name);
	if (read_line(path, buf, sizeof(buf)) || sscanf(buf, "%u:%u", &maj, &min) != 2)
		return -1;
	*devt = maj << 20 | min;
	return 0;
}

static int add_dev(struct nt_devset *ds, const char *name, uint32_t devt)
{
	for (int i = 0; i < ds->n; i++)
		if (ds->devt[i] == devt)
			return 0;
	if (ds->n == NTBPF_MAX_DEVS)
		return -1;
	ds->devt[ds->n] = devt;
	snprintf(ds->name[ds->n], sizeof(ds->name[0]), "%s", name);
	ds->n++;
	return 0;
}

int nt_dev_resolve(const char *root, const char *name, struct nt_devset *ds, char *err, size_t errlen)
{
	unsigned int subsys, nsid;
	uint32_t devt;
	char tail;

	if (dev_of(root, name, &devt)) {
		snprintf(err, errlen, "unknown device '%s' (no %s/sys/class/block/%s)", name, root, name);
		return -1;
	}
	if (add_dev(ds, name, devt)) {
		snprintf(err, errlen, "too many devices (at most %d)", NTBPF_MAX_DEVS);
		return -1;
	}
	/* native NVMe multipath: I/O to nvmeXnY is issued on the hidden nvmeXcZnY */
	if (sscanf(name, "nvme%un%u%c", &subsys, &nsid, &tail) == 2) {
		char dir[512];
		DIR *d;
		struct dirent *e;

		snprintf(dir, sizeof(dir), "%s/sys/class/block", root);
		d = opendir(dir);
		while (d && (e = readdir(d))) {
			unsigned int s, c, n;
			char t;

			if (sscanf(e->d_name, "nvme%uc%un%u%c", &s, &c, &n, &t) == 3 && s == subsys &&
			    n == nsid && !dev_of(root, e->d_name, &devt) && add_dev(ds, e->d_name, devt)) {
				snprintf(err, errlen, "too many devices (at most %d)", NTBPF_MAX_DEVS);
				closedir(d);
				return -1;
			}
		}
		if (d)
			closedir(d);
	}
	return 0;
}

int nt_dev_all(const char *root, struct nt_devset *ds)
{
	char dir[512];
	DIR *d;
	struct dirent *e;
	uint32_t devt;

	snprintf(dir, sizeof(dir), "%s/sys/block", root);
	d = opendir(dir);
	if (!d)
		return -1;
	while ((e = readdir(d)))
		if (e->d_name[0] != '.' && !dev_of(root, e->d_name, &devt))
			add_dev(ds, e->d_name, devt);
	closedir(d);
	/* hidden multipath disks are not in /sys/block on every kernel */
	snprintf(dir, sizeof(dir), "%s/sys/class/block", root);
	d = opendir(dir);
	while (d && (e = readdir(d))) {
		unsigned int s, c, n;
		char t;

		if (sscanf(e->d_name, "nvme%uc%un%u%c", &s, &c, &n, &t) == 3 && !dev_of(root, e->d_name, &devt))
			add_dev(ds, e->d_name, devt);
	}
	if (d)
		closedir(d);
	return 0;
}

bool nt_devs_nvme_only(const struct nt_devset *ds)
{
	if (ds->n <= 0)
		return false;
	for (int i = 0; i < ds->n && i < NTBPF_MAX_DEVS; i++) {
		unsigned int s, c, n;
		char t;

		if (sscanf(ds->name[i], "nvme%un%u%c", &s, &n, &t) != 2 &&
		    sscanf(ds->name[i], "nvme%uc%un%u%c", &s, &c, &n, &t) != 3)
			return false;
	}
	return true;
}

int nt_dev_iostat(const char *root, const struct nt_devset *ds, uint64_t *done, uint64_t *inflight)
{
	int counted = 0;

	*done = *inflight = 0;
	for (int i = 0; i < ds->n; i++) {
		char path[512], buf[512];
		unsigned long long f[17] = { 0 };
		struct stat sb;
		int n;

		snprintf(path, sizeof(path), "%s/sys/class/block/%s/mq", root, ds->name[i]);
		if (stat(path, &sb) || !S_ISDIR(sb.st_mode))
			continue;
		snprintf(path, sizeof(path), "%s/sys/class/block/%s/queue/iostats", root, ds->name[i]);
		if (read_line(path, buf, sizeof(buf)) || strcmp(buf, "1"))
			return -1;
		snprintf(path, sizeof(path), "%s/sys/class/block/%s/stat", root, ds->name[i]);
		if (read_line(path, buf, sizeof(buf)))
			return -1;
		/* 11 fields before v4.18 (no discards), 15 before v5.5 (no flushes) */
		n = sscanf(buf, "%llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu",
			   &f[0], &f[1], &f[2], &f[3], &f[4], &f[5], &f[6], &f[7], &f[8], &f[9], &f[10], &f[11],
			   &f[12], &f[13], &f[14], &f[15], &f[16]);
		if (n < 11)
			return -1;
		*done += f[0] + f[4] + f[11] + f[15];
		*inflight += f[8];
		counted++;
	}
	return counted ? 0 : -1;
}

uint64_t nt_dev_not_run(const struct nt_kcount *k0, const struct nt_kcount *k1, const uint64_t s[ST_NR])
{
	uint64_t kernel, seen;

	if (!k0->ok || !k1->ok || k1->done < k0->done)
		return 0;
	kernel = k1->done - k0->done + k1->inflight;
	seen = s[ST_EMITTED] + s[ST_LOST_RINGBUF] + s[ST_LOST_MAP_FULL] + s[ST_NO_COMPLETE] + s[ST_NO_START] +
	       s[ST_INFLIGHT_END];
	return kernel > seen ? kernel - seen : 0;
}

void nt_dev_to_header(const struct nt_devset *ds, struct nt_header *h)
{
	for (int i = 0; i < ds->n && h->ndevs < NTBPF_MAX_DEVS; i++)
		snprintf(h->devs[h->ndevs++], sizeof(h->devs[0]), "%.20s=%u:%u", ds->name[i],
			 ds->devt[i] >> 20, ds->devt[i] & 0xfffff);
}

uint64_t nt_clock_ns(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

void nt_sys_identity(struct nt_header *h, int argc, char **argv)
{
	struct utsname u;
	size_t off = 0;
	uint64_t m0, m1;

	if (gethostname(h->hostname, sizeof(h->hostname) - 1))
		snprintf(h->hostname, sizeof(h->hostname), "unknown");
	if (!uname(&u))
		snprintf(h->kernel, sizeof(h->kernel), "%s", u.release);
	if (read_line("/proc/sys/kernel/random/boot_id", h->boot_id, sizeof(h->boot_id)))
		h->boot_id[0] = 0;
	/* realtime and boottime bracketed by two monotonic reads: take the midpoint */
	m0 = nt_clock_ns(CLOCK_MONOTONIC);
	h->real_ns = nt_clock_ns(CLOCK_REALTIME);
	h->boot_ns = nt_clock_ns(CLOCK_BOOTTIME);
	m1 = nt_clock_ns(CLOCK_MONOTONIC);
	h->mono_ns = m0 + (m1 - m0) / 2;
	for (int i = 0; i < argc && off + 2 < sizeof(h->cmdline); i++)
		off += snprintf(h->cmdline + off, sizeof(h->cmdline) - off, "%s%s", i ? " " : "", argv[i]);
	snprintf(h->ntbpf_version, sizeof(h->ntbpf_version), "%s", NTBPF_VERSION);
}

/* controller c's namespaces: the block devices under its sysfs directory (nvmeXnY, or nvmeXcYnZ with multipath) */
static void ctrl_namespaces(const char *cdir, struct nt_ctrl_info *c)
{
	char path[1024], buf[64];
	struct dirent *e;
	DIR *d = opendir(cdir);

	if (!d)
		return;
	c->nns = 0;
	while ((e = readdir(d)) && c->nns < NT_CTRL_NS) {
		unsigned int maj, min;
		unsigned long nsid;
		char *end;

		if (strncmp(e->d_name, "nvme", 4) || !strchr(e->d_name + 4, 'n'))
			continue;
		snprintf(path, sizeof(path), "%s/%s/nsid", cdir, e->d_name);
		if (read_line(path, buf, sizeof(buf)))
			continue;
		nsid = strtoul(buf, &end, 10);
		if (end == buf || !nsid || nsid > UINT32_MAX)
			continue;
		snprintf(path, sizeof(path), "%s/%s/dev", cdir, e->d_name);
		if (read_line(path, buf, sizeof(buf)) || sscanf(buf, "%u:%u", &maj, &min) != 2)
			continue;
		c->ns[c->nns].dev = (maj & 0xfff) << 20 | (min & 0xfffff);	/* the kernel's dev_t, as records hold it */
		c->ns[c->nns++].nsid = (uint32_t)nsid;
	}
	closedir(d);
}

void nt_sys_nvme_names(const char *root, struct nt_header *h)
{
	char dir[512], path[768];

	for (uint32_t i = 0; i < h->nctrls; i++) {
		struct nt_ctrl_info *c = &h->ctrls[i];

		if (c->instance < 0)
			continue;
		snprintf(dir, sizeof(dir), "%s/sys/class/nvme/nvme%d", root, c->instance);
		if (!c->hostnqn[0]) {
			snprintf(path, sizeof(path), "%s/hostnqn", dir);
			read_line(path, c->hostnqn, sizeof(c->hostnqn));
		}
		if (!c->subsysnqn[0]) {
			snprintf(path, sizeof(path), "%s/subsysnqn", dir);
			read_line(path, c->subsysnqn, sizeof(c->subsysnqn));
		}
		ctrl_namespaces(dir, c);
	}
}

int nt_sys_nvme_ctrls(const char *root, struct nt_header *h)
{
	char dir[512], path[768], buf[256];
	DIR *d;
	struct dirent *e;
	int n = 0;

	snprintf(dir, sizeof(dir), "%s/sys/class/nvme", root);
	d = opendir(dir);
	if (!d)
		return 0;
	while ((e = readdir(d))) {
		struct nt_ctrl_info *c;
		int inst;
		char t;

		if (sscanf(e->d_name, "nvme%d%c", &inst, &t) != 1)
			continue;
		snprintf(path, sizeof(path), "%s/%s/transport", dir, e->d_name);
		if (read_line(path, buf, sizeof(buf)))
			continue;
		c = nt_header_add_ctrl(h);
		if (!c)
			break;
		c->instance = inst;
		snprintf(c->transport, sizeof(c->transport), "%s", buf);
		snprintf(path, sizeof(path), "%s/%s/cntlid", dir, e->d_name);
		if (!read_line(path, buf, sizeof(buf)))
			c->cntlid = (uint16_t)strtoul(buf, NULL, 0);
		snprintf(path, sizeof(path), "%s/%s/subsysnqn", dir, e->d_name);
		read_line(path, c->subsysnqn, sizeof(c->subsysnqn));
		snprintf(path, sizeof(path), "%s/%s/hostnqn", dir, e->d_name);
		read_line(path, c->hostnqn, sizeof(c->hostnqn));
		snprintf(path, sizeof(path), "%s/%s/address", dir, e->d_name);
		read_line(path, c->address, sizeof(c->address));
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		ctrl_namespaces(path, c);
		n++;
	}
	closedir(d);
	return n;
}

static int cmp_qid(const void *a, const void *b)
{
	const struct nt_queue_info *x = a, *y = b;

	return (int)x->qid - (int)y->qid;
}

int nt_sys_nvme_idle_queues(const char *root, struct nt_header *h)
{
	char path[512], buf[32];
	int added = 0;

	for (uint32_t i = 0; i < h->nctrls; i++) {
		struct nt_ctrl_info *c = &h->ctrls[i];
		unsigned long qc;
		char *end;

		if (c->instance < 0)
			continue;
		snprintf(path, sizeof(path), "%s/sys/class/nvme/nvme%d/queue_count", root, c->instance);
		if (read_line(path, buf, sizeof(buf)))
			continue;	/* gone, or not exposed: the queues seen are all it lists */
		qc = strtoul(buf, &end, 10);
		if (end == buf || qc > 65536)
			continue;
		for (unsigned long qid = 1; qid < qc; qid++) {
			struct nt_queue_info *q;
			uint32_t k;

			for (k = 0; c->queues && k < c->nqueues; k++)
				if (c->queues[k].qid == qid)
					break;
			if (c->queues && k < c->nqueues)
				continue;
			q = nt_ctrl_add_queue(c);
			if (!q)
				return -1;
			memset(q, 0, sizeof(*q));
			q->qid = (uint16_t)qid;
			q->io_cpu = -1;
			q->rx_queue = -1;
			q->tx_queue = -1;
			added++;
		}
		if (c->queues && c->nqueues > 1)
			qsort(c->queues, c->nqueues, sizeof(*c->queues), cmp_qid);
	}
	return added;
}

int nt_sys_module_loaded(const char *root, const char *name)
{
	char path[512];
	struct stat st;

	snprintf(path, sizeof(path), "%s/sys/module/%s", root, name);
	return stat(path, &st) == 0;
}

void nt_advise_huge(void *p, size_t len)
{
	/*
	 * Whole 4 KiB pages, rounded outwards: advising only the 2 MiB-aligned
	 * interior would split glibc's mapping in three, and realloc's mremap
	 * then fails over to copying everything.
	 */
	const uintptr_t page = 4096;
	uintptr_t a = (uintptr_t)p & ~(page - 1), b = ((uintptr_t)p + len + page - 1) & ~(page - 1);

	if (len >= (2u << 20))
		madvise((void *)a, b - a, MADV_HUGEPAGE);	/* advice only: failure is harmless */
}

bool nt_sys_has_cap(int cap)
{
	struct __user_cap_header_struct hdr = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct data[2];

	if (cap < 0 || cap >= 64 || syscall(SYS_capget, &hdr, data))
		return false;
	return data[cap / 32].effective & (1u << (cap % 32));
}

/* defined only by the marker object that make static links in (Makefile: $(OUTPUT)/static-mark.o) */
extern const char nt_linked_static[] __attribute__((weak));

bool nt_build_static(void)
{
	return nt_linked_static != NULL;
}

#if defined(__x86_64__)
#define NT_ARCH "x86_64"
#elif defined(__aarch64__)
#define NT_ARCH "aarch64"
#elif defined(__i386__)
#define NT_ARCH "i686"
#else
#define NT_ARCH "unknown-arch"
#endif

const char *nt_version_line(void)
{
	return nt_build_static() ? "ntbpf " NTBPF_VERSION " (" NT_ARCH ", static)"
				 : "ntbpf " NTBPF_VERSION " (" NT_ARCH ", dynamic)";
}
