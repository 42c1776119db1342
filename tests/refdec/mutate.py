# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""mutate.py - deterministic mutants of version 5 record files for tests/refdec/test_refdec.py.

The fuzz corpus was grown on format 3's reader and its fix-up leaves RECP chunks as they are, so
it rarely reaches what version 5 added.  These mutants do, each a whole file with its CRCs and
checks made right again (so that the mutation, not a checksum, decides): header items changed,
dropped, repeated, or crafted (a CTRL whose lists disagree with its queue count); a CHNK's raw bytes
changed byte by byte, cut, or given extra columns, or its layout given one more event slot or
fewer; RECP and RECS bodies and sizes changed; chunks rewritten as RECS; trailers changed; files
cut anywhere.  The C reader and the reference decoder must agree on each.
"""
import random
import struct
import zlib

import ntbpf_refdec as R


def parse(b):
    """(items [(tag, value)], blocks [[magic, f1, f2, f3, f4, body]], trailer payload or None, rest)"""
    plen = R.u32(b, 12)
    pos, items = 16, []
    while pos < 16 + plen:
        tag, ln = R.u16(b, pos), R.u32(b, pos + 4)
        items.append([tag, bytes(b[pos + 8:pos + 8 + ln])])
        pos += 8 + ln
    pos = 16 + plen + 4
    blocks = []
    while b[pos:pos + 4] in (b"CHNK", b"RECP", b"RECS"):
        f = list(struct.unpack_from("<IIII", b, pos + 4))
        blen = f[2]                              # clen, or RECP's and RECS's len
        blocks.append([bytes(b[pos:pos + 4])] + f + [bytes(b[pos + 20:pos + 20 + blen])])
        pos += 20 + blen
    trailer = None
    if b[pos:pos + 4] == b"TRLR":
        ln = R.u32(b, pos + 4)
        trailer = bytes(b[pos + 8:pos + 8 + ln])
        pos += 12 + ln
    return items, blocks, trailer, bytes(b[pos:])


def header(items, version=R.VERSION):
    p = b"".join(struct.pack("<HHI", t, 0, len(v)) + v for t, v in items)
    h = b"NTBPFREC" + struct.pack("<HHI", version, 0, len(p)) + p
    return h + struct.pack("<I", zlib.crc32(h))


def chnk(nrec, raw, level=0):
    z = zlib.compress(raw, level)
    return b"CHNK" + struct.pack("<IIII", nrec, len(raw), len(z), zlib.crc32(z)) + z


def recp(nrec, body):
    return b"RECP" + struct.pack("<IIII", nrec, 44, len(body), R.recp_check(body)) + body


def recs(nrec, body):
    return b"RECS" + struct.pack("<IIII", nrec, 112, len(body), R.recs_check(body)) + body


def trailer(payload):
    t = b"TRLR" + struct.pack("<I", len(payload)) + payload
    return t + struct.pack("<I", zlib.crc32(t))


def block_bytes(blk):
    """a block as parsed, its check made right"""
    magic, nrec, body = blk[0], blk[1], blk[5]
    if magic == b"CHNK":
        return b"CHNK" + struct.pack("<IIII", nrec, blk[2], len(body), zlib.crc32(body)) + body
    if magic == b"RECP":
        return b"RECP" + struct.pack("<IIII", nrec, blk[2], blk[3], R.recp_check(body)) + body
    return b"RECS" + struct.pack("<IIII", nrec, blk[2], blk[3], R.recs_check(body)) + body


def file_of(items, blocks, trl, rest=b""):
    return header(items) + b"".join(blocks) + (trailer(trl) if trl is not None else b"") + rest


def trailer_for(trl, nrec):
    """the trailer payload with its record count set"""
    return struct.pack("<Q", nrec) + trl[8:] if trl is not None and len(trl) >= 8 else trl


def rec_bytes(r):
    """a record as the record table has it (112 bytes): what RECS holds"""
    return struct.pack("<QQIIIHHHBBBBH16IHHHH", *[r[k] for k in R.REC_FIELDS], *r["ev"], r["port"], r["depth"],
                       0, 0)


def descriptors(raw):
    """[(start, end)] of each column descriptor's bytes, and where the exceptions start"""
    ncols, pos, out = R.u32(raw, 4), 8, []
    for _ in range(ncols):
        start = pos
        _, pos = R.varint(raw, pos + 1, len(raw))
        _, pos = R.varint(raw, pos, len(raw))
        out.append((start, pos))
    return out, pos


def add_slot(raw, nev, mode=0):
    """one more event slot (an empty column before port)"""
    desc, _ = descriptors(raw)
    raw = bytearray(raw)
    at = desc[14 + nev][0]
    raw[at:at] = bytes([mode << 6, 0, 0])
    struct.pack_into("<I", raw, 4, len(desc) + 1)
    return bytes(raw)


def drop_slots(raw, nev, d):
    """the last d event slots' columns taken out"""
    desc, _ = descriptors(raw)
    raw = bytearray(raw)
    del raw[desc[14 + nev - d][0]:desc[14 + nev - 1][1]]
    struct.pack_into("<I", raw, 4, len(desc) - d)
    return bytes(raw)


def mutate_raw(rng, raw, nrec, nev, items):
    """a CHNK's raw bytes changed; returns (raw, items, what every other chunk needs (a new layout), or None)"""
    raw = bytearray(raw)
    k = rng.randrange(9)
    if k == 0 and raw:                           # a byte anywhere
        raw[rng.randrange(len(raw))] = rng.randrange(256)
    elif k == 1 and raw:                         # a byte of the counts and descriptors
        raw[rng.randrange(min(len(raw), 120))] ^= 1 << rng.randrange(8)
    elif k == 2 and raw:                         # a bit of the packed bits
        raw[len(raw) - 1 - rng.randrange(min(len(raw), 400))] ^= 1 << rng.randrange(8)
    elif k == 3:                                 # cut or grown
        raw = raw[:rng.randrange(len(raw) + 1)] if rng.randrange(2) else raw + bytes(rng.randrange(1, 9))
    elif k == 4 and raw:                         # 0xff: escapes everywhere
        at = rng.randrange(len(raw))
        raw[at:at + 4] = b"\xff" * len(raw[at:at + 4])
    else:
        try:
            desc, exc_at = descriptors(bytes(raw))
        except (R.BadEncoding, IndexError):
            return bytes(raw), items, None
        ncols = len(desc)
        if k == 5 and ncols < 32 + nev:          # extra columns of a later writer: skipped
            b = rng.choice((0, 0, 1, 7, 56))
            d = bytes([b, rng.randrange(128), 0])
            raw[exc_at:exc_at] = d
            raw += bytes((nrec * b + 7) // 8) if rng.randrange(4) else b""
            struct.pack_into("<I", raw, 4, ncols + 1)
        elif k == 6:                             # a descriptor's mode or width
            s, _ = desc[rng.randrange(ncols)]
            raw[s] = rng.randrange(256) if rng.randrange(2) else raw[s] ^ 0x40
        elif k == 7 and nev < 32 and ncols >= 16 + nev:   # one more event slot (an empty column), nev + 1
            return (add_slot(bytes(raw), nev, rng.randrange(3) if not rng.randrange(4) else 0),
                    set_layout(items, nev + 1), lambda r: add_slot(r, nev))
        elif k == 8 and nev > 0 and ncols >= 16 + nev:    # the last event slots' columns dropped, nev - d
            d = 1 + rng.randrange(min(nev, 12))
            return drop_slots(bytes(raw), nev, d), set_layout(items, nev - d), lambda r: drop_slots(r, nev, d)
    return bytes(raw), items, None


def set_layout(items, nev):
    out = []
    for t, v in items:
        if t == 3 and len(v) >= 8:
            v = struct.pack("<II", max(R.u32(v, 0), 40 + 4 * nev), nev) + v[8:]
        out.append([t, v])
    return out


def mutate_items(rng, items):
    items = [list(x) for x in items]
    k = rng.randrange(8)
    i = rng.randrange(len(items)) if items else 0
    if k == 0 and items:                         # a byte of a value
        v = bytearray(items[i][1])
        if v:
            v[rng.randrange(len(v))] = rng.randrange(256)
        items[i][1] = bytes(v)
    elif k == 1 and items:                       # a value cut or grown
        v = items[i][1]
        items[i][1] = v[:rng.randrange(len(v) + 1)] if rng.randrange(2) else v + bytes(rng.randrange(1, 6))
    elif k == 2 and items:                       # dropped
        del items[i]
    elif k == 3 and items:                       # repeated, elsewhere
        items.insert(rng.randrange(len(items) + 1), list(items[i]))
    elif k == 4:                                 # a crafted CTRL: lists that disagree with nqueues
        nq, nrx, ntx, nns = rng.randrange(3), rng.randrange(4), rng.randrange(4), rng.randrange(19)
        v = struct.pack("<iH", rng.randrange(-1, 3), rng.randrange(4)) + b"".join(
            struct.pack("<H", len(s)) + s for s in (b"tcp", b"nqn.sub\0hidden", b"nqn.host", b"traddr=1"))
        v += struct.pack("<I", nq) + b"".join(struct.pack("<Hi", q + 1, q) + b"\x03\x00a.b" + struct.pack("<H", 9)
                                             + b"\x00\x00" + struct.pack("<H", 4420) for q in range(nq))
        v += struct.pack("<I", nrx) + b"".join(struct.pack("<i", 100 + j) for j in range(nrx))
        v += struct.pack("<I", ntx) + b"".join(struct.pack("<i", 200 + j) for j in range(ntx))
        v += struct.pack("<I", nns) + b"".join(struct.pack("<II", j, j + 1) for j in range(nns))
        v = v[:len(v) - rng.choice((0, 0, 0, 1, 2, 3, 4, 5, 8))]
        items.insert(rng.randrange(len(items) + 1), [12, v])
    elif k == 5:                                 # cntlid changes: out of order, repeated, in force already
        for _ in range(rng.randrange(1, 6)):
            v = struct.pack("<iHQ", rng.choice((-1, 0, 1, 2, 70000)), rng.randrange(4), rng.randrange(4) * 1000)
            items.append([14, v])
    elif k == 6:                                 # SAMPLE with and without its window, twice
        items.append([9, struct.pack("<II", 100, 500)])
        items.append([9, struct.pack("<I", 7) + bytes(rng.randrange(4))])
    else:                                        # the layout
        for it in items:
            if it[0] == 3 and len(it[1]) >= 8:
                v = bytearray(it[1])
                struct.pack_into("<I", v, rng.choice((0, 4)), rng.choice((0, 8, 16, 17, 32, 33, 103, 104, 112,
                                                                          168, 4096, 4097)))
                it[1] = bytes(v)
    return items


def mutants(base, n, seed):
    """n mutants of the version 5 files in base (bytes each), deterministic in seed"""
    rng = random.Random(seed)
    parsed, decoded = [], {}
    for b in base:
        items, blocks, trl, rest = parse(b)
        parsed.append((b, items, blocks, trl, rest))
    out = []
    while len(out) < n:
        b, items, blocks, trl, rest = parsed[rng.randrange(len(parsed))]
        nev = next((R.u32(v, 4) for t, v in items if t == 3 and len(v) >= 8), 16)
        k = rng.randrange(10)
        enc = [block_bytes(x) for x in blocks]
        try:
            if k == 0:                           # cut anywhere
                out.append(b[:rng.randrange(len(b))])
            elif k == 1:                         # header items
                out.append(file_of(mutate_items(rng, items), enc, trl, rest))
            elif k in (2, 3, 4) and any(x[0] == b"CHNK" for x in blocks):
                j = rng.choice([i for i, x in enumerate(blocks) if x[0] == b"CHNK"])
                raw = zlib.decompress(blocks[j][5])
                raw2, items2, relayout = mutate_raw(rng, raw, blocks[j][1], nev, items)
                if relayout:                     # a new layout: every chunk follows it
                    enc = [chnk(x[1], raw2 if i == j else relayout(zlib.decompress(x[5]))) if x[0] == b"CHNK"
                           else block_bytes(x) for i, x in enumerate(blocks)]
                else:
                    enc[j] = chnk(blocks[j][1], raw2, rng.choice((0, 1, 6)))
                out.append(file_of(items2, enc, trl, rest))
            elif k == 5 and blocks:              # a body byte, the check made right
                j = rng.randrange(len(blocks))
                x = list(blocks[j])
                v = bytearray(x[5] if x[0] != b"CHNK" else zlib.decompress(x[5]))
                if v:
                    at = rng.randrange(len(v))
                    v[at] = rng.randrange(256) if rng.randrange(2) else v[at] ^ 1 << rng.randrange(8)
                if x[0] == b"CHNK":
                    enc[j] = chnk(x[1], bytes(v))
                else:
                    x[5] = bytes(v)
                    enc[j] = block_bytes(x)
                out.append(file_of(items, enc, trl, rest))
            elif k == 6 and blocks:              # a block's size fields
                j = rng.randrange(len(blocks))
                x = list(blocks[j])
                f = rng.randrange(1, 4)
                x[f] = rng.choice((0, 1, x[f] - 1, x[f] + 1, x[f] + 8, x[f] * 2, 4096, 4097, 0xffffffff)) & 0xffffffff
                enc[j] = block_bytes(x) if x[0] != b"CHNK" or f == 1 else (
                    x[0] + struct.pack("<IIII", x[1], x[2], x[3], zlib.crc32(x[5])) + x[5])
                out.append(file_of(items, enc, trl, rest))
            elif k == 7 and blocks:              # a chunk rewritten as RECS (version 4's kind, read in 5)
                if b not in decoded:
                    decoded[b] = R.decode(b).records
                j = rng.randrange(len(blocks))
                at = sum(x[1] for x in blocks[:j])
                recs_ = decoded[b][at:at + blocks[j][1]]
                if len(recs_) == blocks[j][1]:
                    enc[j] = recs(len(recs_), b"".join(rec_bytes(r) for r in recs_))
                out.append(file_of(items, enc, trl, rest))
            elif k == 8 and trl is not None:     # the trailer
                v = bytearray(trl)
                c = rng.randrange(4)
                if c == 0:
                    struct.pack_into("<Q", v, 0, R.u64(v, 0) + rng.choice((1, -1 & R.M64)))
                elif c == 1:
                    struct.pack_into("<I", v, 8, rng.choice((0, 1, 9, 10, 11, 4096, 4097, 1 << 29)))
                elif c == 2:
                    v = v[:-8] if rng.randrange(2) else v + bytes(8)
                    struct.pack_into("<I", v, 8, (len(v) - 28) // 8)
                else:
                    v = v[:rng.randrange(len(v))]
                out.append(file_of(items, enc, bytes(v), rest))
            else:                                # blocks dropped, repeated or swapped; bytes after
                enc2 = list(enc)
                if enc2 and rng.randrange(2):
                    i = rng.randrange(len(enc2))
                    enc2.insert(rng.randrange(len(enc2) + 1), enc2[i]) if rng.randrange(2) else enc2.pop(i)
                out.append(file_of(items, enc2, trailer_for(trl, sum(R.u32(e, 4) for e in enc2)),
                                   rest + bytes(rng.randrange(3))))
        except (struct.error, zlib.error, R.BadEncoding, IndexError, ValueError):
            continue
    return out


def stored(raw, final=True):
    """raw as one stored deflate block (no zlib header)"""
    return bytes([1 if final else 0]) + struct.pack("<HH", len(raw), len(raw) ^ 0xffff) + raw


def zchnk(nrec, raw_len, z):
    return b"CHNK" + struct.pack("<IIII", nrec, raw_len, len(z), zlib.crc32(z)) + z


def crafted(b):
    """[(name, file)]: the corners the spec names, from one version 5 file of CHNK chunks (b)"""
    items, blocks, trl, rest = parse(b)
    enc = [block_bytes(x) for x in blocks]
    out = []
    rp = [x for x in blocks if x[0] == b"RECP"]
    if rp:                                       # a RECP chunk with padding that is not zero
        x = rp[0]
        out.append(("recp-padding-nonzero", file_of(items, [recp(x[1], bytes(x[5][:-1]) + b"\1")], trl, rest)))
    if trl is not None:                          # the trailer: none of the counters, more than ntbpf knows
        recs_, tail = trl[:8], trl[-16:]
        for ns in (0, 11, 4096):
            out.append(("trailer-%d-counters" % ns, file_of(items, enc, recs_ + struct.pack("<I", ns) + b"".join(
                struct.pack("<Q", 1000 + i) for i in range(ns)) + tail, rest)))
    # CTRL items whose lists are longer or shorter than nqueues (ntbpf writes nrx = ntx = nqueues)
    for name, nq, nrx, ntx, nns in (("ctrl-nrx-past-nqueues", 1, 2, 1, 1), ("ctrl-ntx-past-nqueues", 1, 1, 3, 2),
                                    ("ctrl-lists-short", 3, 1, 2, 17), ("ctrl-nns-runs-past", 1, 1, 1, 2)):
        v = struct.pack("<iH", 5, 9) + b"".join(struct.pack("<H", len(x)) + x for x in (b"tcp", b"s", b"h", b"a"))
        v += struct.pack("<I", nq) + b"".join(struct.pack("<Hi", q + 1, q) + b"\0\0" + struct.pack("<H", 1)
                                             + b"\0\0" + struct.pack("<H", 2) for q in range(nq))
        v += struct.pack("<I", nrx) + b"".join(struct.pack("<i", 100 + i) for i in range(nrx))
        v += struct.pack("<I", ntx) + b"".join(struct.pack("<i", 200 + i) for i in range(ntx))
        v += struct.pack("<I", nns) + b"".join(struct.pack("<II", i, i + 1) for i in range(nns))
        if name == "ctrl-nns-runs-past":
            v = v[:-8]
        out.append((name, file_of(items + [[12, v]], enc, trl, rest)))
    j = next((i for i, x in enumerate(blocks) if x[0] == b"CHNK"), None)
    if j is None:
        return out
    nrec = blocks[j][1]
    raw = zlib.decompress(blocks[j][5])
    desc, exc_at = descriptors(raw)

    def with_chunk(name, chunk, its=items):
        e = list(enc)
        e[j] = chunk
        out.append((name, file_of(its, e, trl, rest)))

    def extra_col(d, exc, bits):
        """raw with one more column after the last: descriptor d, its exceptions after the others', bits"""
        r = bytearray(raw)
        ex_end = exc_at + sum(elen_of(raw, s) for s, _ in desc)
        r[ex_end:ex_end] = exc
        r[exc_at:exc_at] = d
        r += bits
        struct.pack_into("<I", r, 4, len(desc) + 1)
        return bytes(r)

    ones = bytes([0xff]) * ((nrec + 7) // 8)
    z = b"\x78\x01"
    for name, d, exc, bits in (
            ("extra-column-exceptions-used", bytes([1, 0]) + uv(nrec), bytes(nrec), ones),
            ("extra-column-exceptions-left", bytes([1, 0]) + uv(nrec + 1), bytes(nrec + 1), ones),
            ("extra-column-exceptions-short", bytes([1, 0, 1]), bytes(1), ones),
            ("extra-column-mode-1", bytes([0x40, 0, 0]), b"", b""),
            ("extra-column-57-bits", bytes([57, 0, 0]), b"", bytes((nrec * 57 + 7) // 8)),
            ("extra-column-exception-wraps", bytes([1, 1, 10]), b"\xff" * 9 + b"\x01", ones)):
        with_chunk(name, chnk(nrec, extra_col(d, exc, bits)))
    # the zlib stream: bytes after its end, no final block, a dictionary, a bad window, Adler-32 wrong
    with_chunk("zlib-bytes-after-end", zchnk(nrec, len(raw), z + stored(raw) + b"\0\0\0\0garbage"))
    with_chunk("zlib-no-final-block", zchnk(nrec, len(raw), z + stored(raw, False)))
    with_chunk("zlib-adler-wrong", zchnk(nrec, len(raw), z + stored(raw) + b"\1\2\3\4"))
    with_chunk("zlib-no-adler", zchnk(nrec, len(raw), z + stored(raw)))
    with_chunk("zlib-fdict", zchnk(nrec, len(raw), b"\x78\x20" + stored(raw) + b"\0\0\0\0"))
    with_chunk("zlib-window-64k", zchnk(nrec, len(raw), b"\x88\x1c" + stored(raw) + b"\0\0\0\0"))
    with_chunk("zlib-two-blocks", zchnk(nrec, len(raw), z + stored(raw[:9], False) + stored(raw[9:]) + b"\0" * 4))
    with_chunk("zlib-inflates-longer", zchnk(nrec, len(raw) - 1, z + stored(raw) + b"\0" * 4))
    # sizes at their bounds
    with_chunk("nrec-16-per-byte", b"CHNK" + struct.pack("<IIII", 16 * (20 + 30) + 1, len(raw), 30, 0) + bytes(30))
    with_chunk("raw-1032-per-byte", b"CHNK" + struct.pack("<IIII", 1, 1032 * 12 + 1, 12, 0) + bytes(12))
    # the layout: rec_size and nev only (8 bytes), nev 0, nev 32 / 33, rec_size 4097
    out.append(("layout-8-bytes", file_of([[t, v[:8] if t == 3 else v] for t, v in items], enc, trl, rest)))
    for ns, nv in ((40, 0), (168, 32), (172, 33), (4097, 16), (103, 16)):
        out.append(("layout-%d-%d" % (ns, nv), file_of(
            [[t, struct.pack("<II", ns, nv) + v[8:] if t == 3 else v] for t, v in items], enc, trl, rest)))
    return out


def uv(v):
    """LEB128"""
    out = bytearray()
    while True:
        out.append(v & 0x7f | (0x80 if v >> 7 else 0))
        v >>= 7
        if not v:
            return bytes(out)


def elen_of(raw, s):
    _, p = R.varint(raw, s + 1, len(raw))
    return R.varint(raw, p, len(raw))[0]
