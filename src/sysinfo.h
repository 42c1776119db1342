/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * sysinfo - what this host says about itself, for the record file header:
 * host, kernel, boot id, clocks, block devices, NVMe controllers.
 * Every function takes the root of /sys and /proc ("" on a live system) so
 * tests can point it at a fake tree.
 */
#ifndef NTBPF_SYSINFO_H
#define NTBPF_SYSINFO_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>
#include "recfile.h"

struct nt_devset {
	int n;
	uint32_t devt[NTBPF_MAX_DEVS];		/* kernel encoding: major << 20 | minor */
	char name[NTBPF_MAX_DEVS][32];
};

/*
 * Resolve a -d name ("nvme1n1", "loop0") into its dev_t, plus the hidden
 * per-path disks of an NVMe multipath head (nvme1c*n1), where I/O lands.
 * 0, or -1 with a one-line cause in err.
 */
int nt_dev_resolve(const char *root, const char *name, struct nt_devset *ds, char *err, size_t errlen);
/* ds names NVMe namespaces only (nvme1n1, and per-path disks nvme1c2n1): not partitions; false if empty */
bool nt_devs_nvme_only(const struct nt_devset *ds);
/* every whole disk in /sys/block (for naming devices when no -d was given) */
int nt_dev_all(const char *root, struct nt_devset *ds);
/*
 * The block layer's own count for the request-based devices of ds (those
 * with an mq directory; a bio-based one, an NVMe multipath head or a
 * device-mapper disk, issues no requests of its own): I/Os completed (reads,
 * writes, discards and flushes: fields 1, 5, 12 and 16 of
 * /sys/class/block/DEV/stat) and in flight (field 9), summed.  0, or -1
 * where one of them keeps no count (queue/iostats 0), cannot be read, or ds
 * has no request-based device.
 */
int nt_dev_iostat(const char *root, const struct nt_devset *ds, uint64_t *done, uint64_t *inflight);
/* nt_dev_iostat's counts at a recording's start and stop (ok: read) */
struct nt_kcount {
	bool ok;
	uint64_t done, inflight;
};
/*
 * I/Os no program run saw in a whole recording (ST_NOT_RUN), from the
 * devices' counts k0 (read once every hook was attached) and k1 (before any
 * was detached) and the BPF counters s at the stop.  Every I/O the devices
 * completed while recording, or still had in flight at its stop, is a record
 * or counted (lost, in flight at the start or at the stop), unless the
 * kernel ran none of the programs that would have seen it: such I/Os would
 * otherwise be missing without a trace, as the kernel counts no miss for
 * them (seen on a 6.18 kernel: a tracepoint's BPF program now and then not
 * run for an event that tracefs showed).  I/Os at the edges are counted by
 * both sides or by ntbpf alone, never by the devices alone: the figure is
 * never too high.  0 where either count is missing.
 */
uint64_t nt_dev_not_run(const struct nt_kcount *k0, const struct nt_kcount *k1, const uint64_t s[ST_NR]);
/* header DEV items "name=major:minor" */
void nt_dev_to_header(const struct nt_devset *ds, struct nt_header *h);

/* hostname, kernel release, boot id, clocks (read together), cmdline */
void nt_sys_identity(struct nt_header *h, int argc, char **argv);
/* NVMe over TCP controllers of this host from <root>/sys/class/nvme (initiator) */
int nt_sys_nvme_ctrls(const char *root, struct nt_header *h);
/*
 * Initiator, at the end of a recording: each controller's hostnqn and
 * subsysnqn where the header lacks them (connected after the start), and its
 * namespaces (block device, nsid) read anew from sysfs under root.
 */
void nt_sys_nvme_names(const char *root, struct nt_header *h);
/*
 * The initiator's I/O queues no recorded I/O went to: qid 1 .. queue_count - 1 (sysfs queue_count
 * counts the admin queue) of each controller in h with an instance, added with nothing known
 * (io_cpu and rx_queue -1, no connection) and each controller's queues sorted by qid: a report
 * can then tell one busy queue of two from a single queue.  Added count, or -1 out of memory.
 */
int nt_sys_nvme_idle_queues(const char *root, struct nt_header *h);
/* clock_gettime(c) in ns (CLOCK_MONOTONIC is bpf_ktime_get_ns's clock) */
uint64_t nt_clock_ns(clockid_t c);
/* ask for transparent huge pages on [p, p + len) before it is first written (large arrays: a
 * report over millions of records otherwise spends a fifth of its time in page faults) */
void nt_advise_huge(void *p, size_t len);
/* is capability CAP (e.g. 21, CAP_SYS_ADMIN) in this thread's effective set (capget; false if it fails) */
bool nt_sys_has_cap(int cap);
/* is kernel module NAME loaded (<root>/sys/module/NAME) */
int nt_sys_module_loaded(const char *root, const char *name);

/*
 * This binary: linked static (make static links a marker object, nt_linked_static, into
 * .output/ntbpf-static only; the same objects linked against shared libraries lack it).
 */
bool nt_build_static(void);
/* "ntbpf VERSION (ARCH, static|dynamic)": what --version prints; ARCH as uname -m names it */
const char *nt_version_line(void);

#endif
