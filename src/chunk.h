/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * chunk - the one fact the record file's container (src/recfile.h) and its
 * column codec (src/colcodec.h) share: how many records a chunk holds at
 * most.  Below both, so that neither includes the other's header for it.
 */
#ifndef NTBPF_CHUNK_H
#define NTBPF_CHUNK_H

#define NT_CHUNK_RECS 4096	/* records per chunk (a writer may flush earlier) */

#endif
