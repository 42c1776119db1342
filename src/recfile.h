/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * recfile - the ntbpf record file (docs/record-format.md).
 *
 *   header   magic "NTBPFREC", version, then TLV items (host, kernel, clocks,
 *            hooks, controllers, queues, ...), CRC32
 *   chunks   "RECP" (record's default), record count, the records packed
 *            (each with only the event slots it has), a Fletcher check; or
 *            "CHNK" (record -z), the records as bit-packed columns with a
 *            prediction chosen per column (colenc.c), zlib, CRC32; or
 *            "RECS" (uncoded, as version 4 wrote them: read, never written)
 *   trailer  "TRLR", record count, BPF counters, end time, CRC32
 *
 * One format version, NT_FILE_VERSION, is written and read; a file of
 * another is refused with a one-line cause (an older one: record again, or
 * read it with the ntbpf that wrote it).  Pure functions over stdio
 * streams; no BPF, no root.
 */
#ifndef NTBPF_RECFILE_H
#define NTBPF_RECFILE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <linux/types.h>
#include "chunk.h"
#include "ntbpf.h"

#define NT_FILE_VERSION 5	/* written and read, alone: 4 and RECP chunks (packed uncoded records) */

struct nt_hook_info {
	char name[64];		/* e.g. "block:block_rq_issue", "nvme_tcp:nvme_tcp_queue_rq" */
	char attach[16];	/* "tp_btf", "raw_tp", "fentry", "fexit", "kprobe", "kretprobe", "" */
	char status[96];	/* "attached", or why not ("module nvme_tcp not loaded", ...) */
	char boundary[128];	/* the stage boundary this hook gives, or the stand-in used */
};

/*
 * A queue of a controller: part of the header's CTRL item.  ntbpf record
 * fills the list in at the end of the recording from the BPF side's queue
 * table (each queue's connection, read at its first recorded I/O), and
 * rewrites the header in place (nt_header_rewrite: the header was written
 * with room for it).
 */
struct nt_queue_info {
	uint16_t qid;
	int32_t io_cpu;		/* initiator: nvme_tcp's io_cpu; target: the CPU of the queue's io_work; -1 unknown */
	char saddr[48];		/* local address of the queue's TCP connection */
	uint16_t sport;
	char daddr[48];		/* remote address */
	uint16_t dport;
	int32_t rx_queue;	/* sk_rx_queue_mapping: NIC RX queue of the connection, -1 unknown */
	int32_t tx_queue;	/* sk_tx_queue_mapping: NIC TX queue of the connection, -1 unknown */
};

#define NT_CTRL_NS 16

struct nt_ctrl_info {
	int32_t instance;	/* nvmeN on the initiator, -1 on the target */
	uint16_t cntlid;
	char transport[16];	/* "tcp" */
	char subsysnqn[256];
	char hostnqn[256];
	char address[160];	/* "traddr=...,trsvcid=...,src_addr=..." as in sysfs */
	uint32_t nqueues;
	struct nt_queue_info *queues;	/* owned by the header */
	uint32_t nns;			/* initiator: the controller's namespaces (sysfs), the first NT_CTRL_NS */
	struct nt_ctrl_ns {
		uint32_t dev;		/* its block device, dev_t as records hold it (major << 20 | minor) */
		uint32_t nsid;
	} ns[NT_CTRL_NS];
};

/*
 * A reconnect gives an initiator's controller a new cntlid (the target makes
 * a new controller): from from_mono_ns on (the first I/O issued on the new
 * connection), controller `instance` has this cntlid.  Noted by the BPF side;
 * the header's controller list has the cntlid at the recording's start.
 */
struct nt_cntlid_change {
	uint64_t from_mono_ns;
	int32_t instance;
	uint16_t cntlid;
};
#define NT_MAX_CNTLID_CHANGES 64

struct nt_header {
	uint16_t version;		/* the file's: NT_FILE_VERSION (the writer ignores it) */
	uint8_t role;			/* enum ntbpf_role */
	uint32_t rec_size;		/* sizeof(struct ntbpf_rec) of the writer */
	uint32_t nev;			/* NTBPF_MAX_EV of the writer */
	char ntbpf_version[32];
	char hostname[256];
	char kernel[128];		/* uname -r */
	char boot_id[40];		/* /proc/sys/kernel/random/boot_id */
	char cmdline[512];		/* how ntbpf record was invoked */
	uint64_t mono_ns;		/* CLOCK_MONOTONIC  } read together at start: */
	uint64_t real_ns;		/* CLOCK_REALTIME   } t_wall = t_mono - mono_ns + real_ns */
	uint64_t boot_ns;		/* CLOCK_BOOTTIME   } */
	uint32_t sample;		/* 1 = every I/O, N = about 1 in N */
	uint32_t sample_window_ms;	/* N > 1: every I/O of one window of this many ms in N (the
					 * hooks attached only then); 0: a per-I/O hash chose */
	uint32_t ndevs;
	char devs[NTBPF_MAX_DEVS][32];	/* -d filters as given, resolved names */
	uint32_t nhooks;
	struct nt_hook_info *hooks;	/* owned by the header */
	uint32_t nctrls;
	struct nt_ctrl_info *ctrls;	/* owned by the header */
	struct nt_ctrl_index *ctrl_index;	/* nt_header_index(): lookups in O(1); owned */
	uint32_t ncchanges;		/* initiator: cntlid changes, by from_mono_ns (more: left out) */
	struct nt_cntlid_change cchanges[NT_MAX_CNTLID_CHANGES];
	uint32_t reserve;		/* writer: bytes of padding (a PAD item) for a later nt_header_rewrite */
};

struct nt_trailer {
	uint64_t records;		/* records written */
	uint64_t stats[ST_NR];		/* BPF counters (enum ntbpf_stat) */
	uint64_t lost_user;		/* records user space could not write */
	uint64_t end_mono_ns;		/* CLOCK_MONOTONIC at stop */
};

/* records the kernel side lost, from the BPF counters (enum ntbpf_stat): the one place this sum is made */
static inline uint64_t nt_lost_sum(const uint64_t stats[ST_NR])
{
	return stats[ST_LOST_RINGBUF] + stats[ST_LOST_MAP_FULL] + stats[ST_NO_COMPLETE] + stats[ST_PROG_MISSES] +
	       stats[ST_NOT_RUN];
}

/* Result of reading a file to its end. */
enum nt_read_status {
	NT_READ_OK = 0,		/* header, chunks and trailer all good */
	NT_READ_TRUNCATED,	/* cut short: every whole chunk before the cut was returned */
	NT_READ_CORRUPT,	/* a CRC or a structure was wrong: chunks before it were returned */
};

/* header helpers */
void nt_header_init(struct nt_header *h, uint8_t role);	/* zeroes, fills version/sizes */
struct nt_hook_info *nt_header_add_hook(struct nt_header *h);	/* appends a zeroed entry */
struct nt_ctrl_info *nt_header_add_ctrl(struct nt_header *h);
struct nt_queue_info *nt_ctrl_add_queue(struct nt_ctrl_info *c);
void nt_header_free(struct nt_header *h);
/*
 * Controller lookups by hash (a file may name tens of thousands of
 * controllers): nt_reader_open() indexes the header it read; a header built
 * in memory is indexed by nt_header_index() once its controllers are filled
 * in (-1: out of memory).  Without an index (or after nt_header_add_ctrl) the
 * lookups scan the list: the same answers, slower.
 */
int nt_header_index(struct nt_header *h);
/*
 * Controller `instance`'s cntlid for an I/O issued at mono_ns (the header's
 * cntlid changes, then its controller list); false if the header names no
 * such controller.
 */
bool nt_header_cntlid_at(const struct nt_header *h, uint16_t instance, uint64_t mono_ns, uint16_t *cntlid);
/* note a change (kept in from_mono_ns order; a full list or a repeat of the cntlid in force: ignored) */
void nt_header_add_cntlid_change(struct nt_header *h, int32_t instance, uint16_t cntlid, uint64_t from_mono_ns);
/* the first controller whose instance (nvmeN) is this one, or NULL */
const struct nt_ctrl_info *nt_header_ctrl(const struct nt_header *h, uint16_t instance);
/*
 * Initiator controllers (instance >= 0) with this cntlid: how many; *other
 * (if not NULL): whether one of them has an instance other than `instance`.
 */
uint32_t nt_header_cntlid_ctrls(const struct nt_header *h, uint16_t cntlid, uint16_t instance, bool *other);

/*
 * Write header h over the first len bytes of f (a header written with
 * room: its reserve), padded to exactly len bytes; f's position is kept.
 * 0, -E2BIG if h no longer fits in len, or -errno.
 */
int nt_header_rewrite(FILE *f, const struct nt_header *h, uint64_t len);

/* writer */
struct nt_writer;
struct nt_writer *nt_writer_open(FILE *f, const struct nt_header *h);	/* writes the header */
int nt_writer_add(struct nt_writer *w, const struct ntbpf_rec *r);	/* flushes a full chunk */
/* n records in a row (one loop for packed chunks); *added: how many it took before an error */
int nt_writer_add_run(struct nt_writer *w, const struct ntbpf_rec *r, size_t n, size_t *added);
/*
 * A record in the record layout (112 bytes, little endian) and back: what a
 * RECS chunk holds.  A little-endian host writes and reads its memory as it
 * is; these are the big-endian path (and the test that both agree).
 */
void nt_rec_put(uint8_t *p, const struct ntbpf_rec *r);
void nt_rec_get(struct ntbpf_rec *r, const uint8_t *p);
/* the checks of a RECS and a RECP chunk's body (docs/record-format.md) */
uint32_t nt_raw_check(const uint8_t *p, size_t len);
uint32_t nt_pack_check(const uint8_t *p, size_t len);
/* the sums behind both checks (SSE2 where there is), and the plain loop they must equal (tests) */
void nt_fletcher64(const uint8_t *p, size_t len, uint64_t *pa, uint64_t *pb);
void nt_fletcher64_ref(const uint8_t *p, size_t len, uint64_t *pa, uint64_t *pb);
/* one record as a RECP chunk has it (docs/record-format.md) into p (room: 108 bytes); returns its length */
size_t nt_rec_pack(uint8_t *p, const struct ntbpf_rec *r);
/* chunks of packed uncoded records from now on (record's default: ~6x the bytes, a fraction of the CPU) */
void nt_writer_set_raw(struct nt_writer *w, bool raw);
int nt_writer_flush(struct nt_writer *w);	/* writes the pending records as a chunk (none: no-op), fflush */
int nt_writer_close(struct nt_writer *w, const struct nt_trailer *t);	/* flush, trailer, free; not fclose */
uint64_t nt_writer_bytes(const struct nt_writer *w);	/* bytes written so far */
uint64_t nt_writer_records(const struct nt_writer *w);	/* records in the whole chunks written so far */
/*
 * After a failed write on an unbuffered stream (setvbuf _IONBF: every block is
 * one write, counted only when whole), the caller cut the file back to
 * nt_writer_bytes(): forget the failure and the pending records, so that
 * nt_writer_close() can end the file with a trailer counting what it holds.
 */
void nt_writer_recover(struct nt_writer *w);

/* reader */
struct nt_reader;
/* NULL on failure with a one-line cause in err (not a record file, bad version, header corrupt, ...) */
struct nt_reader *nt_reader_open(FILE *f, struct nt_header *h, char *err, size_t errlen);
/* 1: *r filled; 0: no more records (see nt_reader_status); records come in file order */
int nt_reader_next(struct nt_reader *rd, struct ntbpf_rec *r);
/* the same a chunk at a time, without copying: the rest of the current chunk, valid until the next call; 0 at the end */
size_t nt_reader_chunk(struct nt_reader *rd, const struct ntbpf_rec **recs);
/* valid after nt_reader_next returned 0; err gets a one-line cause unless OK */
enum nt_read_status nt_reader_status(const struct nt_reader *rd, char *err, size_t errlen);
/* the trailer, or NULL when the file had none (truncated) */
const struct nt_trailer *nt_reader_trailer(const struct nt_reader *rd);
void nt_reader_close(struct nt_reader *rd);	/* not fclose */

const char *nt_role_name(uint8_t role);	/* "initiator", "target", "unknown" */
int nt_role_parse(const char *s);	/* enum ntbpf_role, or -1 */

#endif
