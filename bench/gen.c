// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * bench/gen: writes a synthetic initiator.ntbpf and target.ntbpf of N matched
 * 4k reads on 4 queues at QD32, with lognormal-ish stage times, so that
 * "ntbpf report" throughput and bytes per I/O can be measured at any size.
 *
 *   gen N DIR
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "recfile.h"

static uint64_t x = 0x9E3779B97F4A7C15ull;

static uint32_t rnd(uint32_t base, uint32_t spread)
{
	x ^= x << 13, x ^= x >> 7, x ^= x << 17;
	/* a long tail: base + spread * u^3 * 8 */
	double u = (x >> 11) * (1.0 / 9007199254740992.0);

	return base + (uint32_t)(spread * u * u * u * 8);
}

static void set(struct ntbpf_rec *r, int ev, uint64_t at)
{
	r->ev[ev] = (uint32_t)(at - r->t0);
	r->ev_mask |= 1u << ev;
}

static struct nt_writer *open_w(const char *dir, const char *name, int role, FILE **f)
{
	char path[512];
	struct nt_header h;
	struct nt_ctrl_info *c;
	struct nt_writer *w;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	*f = fopen(path, "wb");
	if (!*f) {
		perror(path);
		exit(1);
	}
	nt_header_init(&h, role);
	snprintf(h.hostname, sizeof(h.hostname), role == NTBPF_ROLE_TARGET ? "bench-target" : "bench-initiator");
	snprintf(h.kernel, sizeof(h.kernel), "synthetic");
	snprintf(h.boot_id, sizeof(h.boot_id), role == NTBPF_ROLE_TARGET ? "t" : "i");
	h.mono_ns = 1000000000ull;
	h.real_ns = 1700000000000000000ull;
	h.sample = 1;
	h.ndevs = 1;
	snprintf(h.devs[0], sizeof(h.devs[0]), "nvme0n1=259:0");
	c = nt_header_add_ctrl(&h);
	c->instance = 0;
	c->cntlid = 1;
	w = nt_writer_open(*f, &h);
	nt_header_free(&h);
	if (!w) {
		perror("writer");
		exit(1);
	}
	return w;
}

int main(int argc, char **argv)
{
	uint64_t n = argc > 1 ? strtoull(argv[1], NULL, 10) : 1000000;
	const char *dir = argc > 2 ? argv[2] : ".";
	FILE *fi, *ft;
	struct nt_writer *wi = open_w(dir, "initiator.ntbpf", NTBPF_ROLE_INITIATOR, &fi);
	struct nt_writer *wt = open_w(dir, "target.ntbpf", NTBPF_ROLE_TARGET, &ft);
	uint64_t t = 2000000000ull;
	int64_t off = 7777777;	/* target clock ahead */
	uint16_t gen[4][32] = { { 0 } };

	for (uint64_t k = 0; k < n; k++) {
		struct ntbpf_rec i = { 0 }, g = { 0 };
		uint16_t q = k % 4, tag = (k / 4) % 32;
		uint16_t cid = (uint16_t)(((gen[q][tag]++ & 0xf) << 12) | tag);
		uint64_t qrq, sent, arr, tarr, pick, exec, done, rs, proc, nd;

		t += 3000;	/* ~330k IOPS */
		i.role = NTBPF_ROLE_INITIATOR;
		i.flags = NTBPF_F_NVME;
		i.op = NTBPF_OP_READ;
		i.opcode = 2;
		i.bytes = 4096;
		i.dev = 259u << 20;
		i.qid = q + 1;
		i.cid = cid;
		i.sector = k * 8;
		i.t0 = t;
		qrq = t + rnd(400, 200);
		sent = qrq + rnd(2000, 3000);
		tarr = sent + rnd(8000, 2000);
		pick = tarr + rnd(3000, 3000);
		exec = pick + rnd(2000, 1000);
		done = exec + rnd(20000, 20000);
		rs = done + rnd(4000, 4000);
		arr = rs + rnd(8000, 2000);
		proc = arr + rnd(3000, 3000);
		nd = proc + rnd(1500, 1000);
		set(&i, EV_I_BLK_START, t);
		set(&i, EV_I_BLK_ISSUE, qrq + 200);
		set(&i, EV_I_QUEUE_RQ, qrq);
		set(&i, EV_I_CMD_SENT, sent);
		set(&i, EV_I_RESP_ARRIVE, arr);
		set(&i, EV_I_RESP_PROC, proc);
		set(&i, EV_I_NVME_DONE, nd);
		set(&i, EV_I_BLK_DONE, nd + rnd(500, 300));
		g.role = NTBPF_ROLE_TARGET;
		g.flags = NTBPF_F_NVME;
		g.op = NTBPF_OP_READ;
		g.opcode = 2;
		g.bytes = 4096;
		g.dev = 1;
		g.ctrl = 1;
		g.qid = q + 1;
		g.cid = cid;
		g.sector = k;
		g.t0 = tarr + off;
		set(&g, EV_T_CMD_ARRIVE, tarr + off);
		set(&g, EV_T_CMD_PICKUP, pick + off);
		set(&g, EV_T_REQ_INIT, pick + off + 300);
		set(&g, EV_T_EXEC, exec + off);
		set(&g, EV_T_SUBSYS_DONE, done + off);
		set(&g, EV_T_RESP_QUEUED, done + off + 200);
		set(&g, EV_T_RESP_SENT, rs + off);
		if (nt_writer_add(wi, &i) || nt_writer_add(wt, &g)) {
			perror("write");
			return 1;
		}
	}
	{
		struct nt_trailer tr = { .records = n };

		tr.stats[ST_EMITTED] = n;
		if (nt_writer_close(wi, &tr) || nt_writer_close(wt, &tr) || fclose(fi) || fclose(ft)) {
			perror("close");
			return 1;
		}
	}
	return 0;
}
