// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * names.c - names of operations, statuses, times, devices, controllers and
 * namespaces as every output prints them (src/names.h).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "names.h"

static const char *const op_names[NTBPF_OP_NR] = {
	[NTBPF_OP_READ] = "read", [NTBPF_OP_WRITE] = "write", [NTBPF_OP_FLUSH] = "flush",
	[NTBPF_OP_DISCARD] = "discard", [NTBPF_OP_WRITE_ZEROES] = "write_zeroes",
	[NTBPF_OP_OTHER] = "other",
};

const char *nt_op_name(uint8_t op)
{
	return op < NTBPF_OP_NR ? op_names[op] : "other";
}

/* ---- status ---- */

/* the NVMe base specification's status codes (SCT << 8 | SC), the ones a data path meets */
static const struct {
	uint16_t sc;
	const char *name;
} nvme_status_names[] = {
	{ 0x000, "success" }, { 0x001, "invalid command opcode" }, { 0x002, "invalid field in command" },
	{ 0x003, "command id conflict" }, { 0x004, "data transfer error" },
	{ 0x005, "aborted: power loss" }, { 0x006, "internal error" }, { 0x007, "aborted by request" },
	{ 0x008, "aborted: SQ deleted" }, { 0x00b, "invalid namespace or format" },
	{ 0x00c, "command sequence error" }, { 0x080, "LBA out of range" }, { 0x081, "capacity exceeded" },
	{ 0x082, "namespace not ready" }, { 0x083, "reservation conflict" }, { 0x084, "format in progress" },
	{ 0x280, "write fault" }, { 0x281, "unrecovered read error" }, { 0x282, "end-to-end guard check error" },
	{ 0x283, "end-to-end application tag check error" }, { 0x284, "end-to-end reference tag check error" },
	{ 0x285, "compare failure" }, { 0x286, "access denied" }, { 0x287, "deallocated or unwritten block" },
	{ 0x300, "internal path error" }, { 0x301, "ANA persistent loss" }, { 0x302, "ANA inaccessible" },
	{ 0x303, "ANA transition" }, { 0x360, "controller pathing error" }, { 0x370, "host pathing error" },
	{ 0x371, "command aborted by host" },
};

bool nt_status_is_nvme(const struct ntbpf_rec *r)
{
	/* the initiator's nvme_complete_rq or the target's cqe; else block_rq_complete's blk_status_t */
	return r->role == NTBPF_ROLE_TARGET || (r->flags & NTBPF_F_NVME);
}

const char *nt_status_name(uint16_t status, bool nvme)
{
	if (!status)
		return "success";
	if (!nvme)
		return "block layer error";	/* blk_status_t values are the kernel's: not named here */
	for (size_t i = 0; i < sizeof(nvme_status_names) / sizeof(nvme_status_names[0]); i++)
		if (nvme_status_names[i].sc == (status & 0x7ff))	/* less CRD, More, DNR */
			return nvme_status_names[i].name;
	return "";
}

void nt_status_label(uint16_t status, bool nvme, char *buf, size_t len)
{
	if (!status)
		snprintf(buf, len, "ok");
	else if (nvme)
		snprintf(buf, len, "0x%04x", status);
	else
		snprintf(buf, len, "blk:%u", status);
}

void nt_fmt_wall(uint64_t ns, char *buf, size_t len)
{
	time_t t = (time_t)(ns / 1000000000u);
	struct tm tm;

	if (!gmtime_r(&t, &tm) || !strftime(buf, len, "%Y-%m-%dT%H:%M:%S", &tm)) {
		snprintf(buf, len, "-");
		return;
	}
	snprintf(buf + strlen(buf), len - strlen(buf), ".%09" PRIu64 "Z", ns % 1000000000u);
}

const struct nt_ctrl_info *nt_ctrl_of(const struct nt_header *h, uint8_t role, uint8_t flags, uint16_t r_ctrl)
{
	if (!h)
		return NULL;
	if (role == NTBPF_ROLE_TARGET) {
		for (uint32_t k = 0; k < h->nctrls; k++)
			if (h->ctrls[k].instance < 0 && h->ctrls[k].cntlid == r_ctrl)
				return &h->ctrls[k];
		return NULL;
	}
	return (flags & NTBPF_F_NVME) ? nt_header_ctrl(h, r_ctrl) : NULL;
}

uint32_t nt_nsid_of(const struct nt_header *h, uint8_t role, uint8_t flags, uint16_t r_ctrl, uint32_t dev)
{
	const struct nt_ctrl_info *c;

	if (role == NTBPF_ROLE_TARGET)
		return dev;
	c = nt_ctrl_of(h, role, flags, r_ctrl);
	for (uint32_t i = 0; c && i < c->nns && i < NT_CTRL_NS; i++)
		if (c->ns[i].dev == dev)
			return c->ns[i].nsid;
	return 0;
}

uint64_t nt_wall_offset(const struct nt_header *h)
{
	return h->real_ns ? h->real_ns - h->mono_ns : 0;
}

/* header DEV items are "name=major:minor" */
void nt_dev_name_in(const struct nt_input *ins, int nins, int role, uint32_t dev, char *buf, size_t len)
{
	unsigned int maj = dev >> 20, min = dev & 0xfffff;

	if (role == NTBPF_ROLE_TARGET) {
		snprintf(buf, len, "nsid%u", dev);
		return;
	}
	for (int i = 0; i < nins; i++) {
		const struct nt_header *h = &ins[i].hdr;

		if (h->role == NTBPF_ROLE_TARGET)
			continue;
		for (uint32_t k = 0; k < h->ndevs; k++) {
			const char *eq = strchr(h->devs[k], '=');
			unsigned int a, b;

			if (eq && sscanf(eq + 1, "%u:%u", &a, &b) == 2 && a == maj && b == min) {
				snprintf(buf, len, "%.*s", (int)(eq - h->devs[k]), h->devs[k]);
				return;
			}
		}
	}
	if (dev == NTBPF_NO_DEV)
		snprintf(buf, len, "-");
	else
		snprintf(buf, len, "%u:%u", maj, min);
}

struct mp_key {
	const char *subsys, *host;
	uint32_t i;
};

static int mp_key_cmp(const void *a, const void *b)
{
	const struct mp_key *x = a, *y = b;
	int c = strcmp(x->subsys, y->subsys);

	return c ? c : strcmp(x->host, y->host);
}

bool nt_mpath_of(struct nt_mpath *mp, const struct nt_header *h)
{
	struct mp_key *k;
	uint32_t n = 0;
	bool any = false;

	if (!h)
		return false;
	if (mp->h == h && mp->n == h->nctrls)
		return mp->shared != NULL;
	free(mp->shared);
	mp->shared = NULL;
	mp->h = h;
	mp->n = h->nctrls;
	k = h->nctrls > 1 ? malloc(h->nctrls * sizeof(*k)) : NULL;
	if (!k)
		return false;
	for (uint32_t i = 0; i < h->nctrls; i++)
		if (h->ctrls[i].instance >= 0 && h->ctrls[i].subsysnqn[0])
			k[n++] = (struct mp_key){ h->ctrls[i].subsysnqn, h->ctrls[i].hostnqn, i };
	qsort(k, n, sizeof(*k), mp_key_cmp);
	for (uint32_t i = 0; i + 1 < n; i++) {
		if (mp_key_cmp(&k[i], &k[i + 1]))
			continue;
		if (!mp->shared && !(mp->shared = calloc(h->nctrls, 1)))
			break;
		mp->shared[k[i].i] = mp->shared[k[i + 1].i] = 1;
		any = true;
	}
	free(k);
	return any;
}

void nt_mpath_free(struct nt_mpath *mp)
{
	free(mp->shared);
	memset(mp, 0, sizeof(*mp));
}

uint16_t nt_path_of(struct nt_mpath *mp, const struct nt_header *h, uint32_t dev, uint16_t ctrl)
{
	const struct nt_ctrl_info *c;
	size_t i;

	if (!nt_mpath_of(mp, h))
		return 0;
	c = nt_ctrl_of(h, NTBPF_ROLE_INITIATOR, NTBPF_F_NVME, ctrl);
	i = c ? (size_t)(c - h->ctrls) : SIZE_MAX;
	if (i >= h->nctrls || !mp->shared[i])
		return 0;
	/* the controller's own disk (multipath off): no path */
	for (uint32_t k = 0; k < c->nns && k < NT_CTRL_NS; k++)
		if (c->ns[k].dev == dev)
			return 0;
	return (uint16_t)(ctrl + 1);
}

void nt_path_name(const char *head, uint16_t p, char *buf, size_t len)
{
	unsigned int s, n;
	char tail;

	if (sscanf(head, "nvme%un%u%c", &s, &n, &tail) == 2)
		snprintf(buf, len, "nvme%uc%un%u", s, p - 1u, n);
	else
		snprintf(buf, len, "%.40s:c%u", head, p - 1u);
}
