#!/usr/bin/env python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""ntbpf_refdec.py - a reference decoder of the ntbpf record file, format version 5.

Written from docs/record-format.md alone (not from src/recfile.c, src/rechdr.c,
src/recsum.c, src/colenc.c or src/coldec.c), in Python 3 with the standard library only, so
that the C reader can be held to the spec by an implementation that shares no
code with it (tests/refdec/test_refdec.py).  It reads what the spec says a reader
reads and refuses what it says a reader refuses, and stops where the spec says
the C reader stops: every record of every whole chunk before the first problem,
never one of a bad or partial chunk.  Every other version is refused, as
ntbpf refuses it: both read version 5 alone.

    ntbpf_refdec.py FILE            header, records (one a line) and the status, as text
    ntbpf_refdec.py --lines FILE    the canonical "key value" lines the test compares

decode(bytes) -> Result (header, records, trailer, status, message).
"""
import itertools
import struct
import sys
import zlib

VERSION = 5
MAX_EV = 16                      # the reader's ev[] slots (struct ntbpf_rec)
CHUNK_RECS = 4096
M64 = (1 << 64) - 1

# struct nt_header's string fields, in bytes without the NUL: the spec's "readers cut strings longer
# than their in-memory field"; docs/record-format.md lists them (Header, "String sizes")
STR_CAP = {
    "ntbpf_version": 31, "hostname": 255, "kernel": 127, "boot_id": 39, "cmdline": 511, "dev": 31,
    "hook.name": 63, "hook.attach": 15, "hook.status": 95, "hook.boundary": 127,
    "ctrl.transport": 15, "ctrl.subsysnqn": 255, "ctrl.hostnqn": 255, "ctrl.address": 159,
    "queue.saddr": 47, "queue.daddr": 47,
}

MAX_DEVS = 64
MAX_CNTLID_CHANGES = 64
MAX_NS = 16
MAX_HOOKS = 4096
MAX_CTRLS = 65536
MAX_QUEUES = 1 << 18
MAX_PAYLOAD = 16 << 20
NSTATS = 10                      # enum ntbpf_stat: emitted .. not_run

REC_FIELDS = ("t0", "sector", "dev", "bytes", "ev_mask", "ctrl", "qid", "cid", "op", "opcode", "flags",
              "role", "status")


class Refused(Exception):
    """kind: 'header' (the file is refused at open), 'truncated' or 'corrupt' (reading stops)"""

    def __init__(self, kind, msg):
        super().__init__(msg)
        self.kind = kind
        self.msg = msg


class Result:
    def __init__(self):
        self.header = None       # dict, or None when the file is refused at open
        self.records = []        # dicts, in file order
        self.trailer = None      # dict when a good trailer was read
        self.status = None       # 'ok', 'truncated', 'corrupt', or 'header' (refused at open)
        self.message = ""


def u16(b, o):
    return b[o] | b[o + 1] << 8


def u32(b, o):
    return int.from_bytes(b[o:o + 4], "little")


def u64(b, o):
    return int.from_bytes(b[o:o + 8], "little")


def s32(v):
    return v - (1 << 32) if v >> 31 else v


# ---- header ------------------------------------------------------------------------------------

class Item:
    """a TLV item's value, read field by field; running past its end is 'item T too short'"""

    def __init__(self, tag, val):
        self.tag, self.v, self.at = tag, val, 0

    def need(self, n):
        if self.at + n > len(self.v):
            raise Refused("header", "header corrupt (item %d too short)" % self.tag)

    def u8(self):
        self.need(1)
        self.at += 1
        return self.v[self.at - 1]

    def u16(self):
        self.need(2)
        self.at += 2
        return u16(self.v, self.at - 2)

    def u32(self):
        self.need(4)
        self.at += 4
        return u32(self.v, self.at - 4)

    def i32(self):
        return s32(self.u32())

    def u64(self):
        self.need(8)
        self.at += 8
        return u64(self.v, self.at - 8)

    def str(self, cap):
        n = self.u16()
        self.need(n)
        self.at += n
        return bytes(self.v[self.at - n:self.at]).split(b"\0")[0][:cap]   # up to a NUL, cut to the field

    def left(self):
        return len(self.v) - self.at


def new_header():
    return {
        "version": 0, "flags": 0, "ntbpf_version": b"", "role": 0, "rec_size": 0, "nev": 0,
        "hostname": b"", "kernel": b"", "boot_id": b"", "cmdline": b"",
        "mono_ns": 0, "real_ns": 0, "boot_ns": 0, "sample": 0, "sample_window_ms": 0,
        "devs": [], "hooks": [], "ctrls": [], "cntlid_changes": [],
    }


def read_ctrl(it, h, nqueues_total):
    c = {"instance": it.i32(), "cntlid": it.u16(),
         "transport": it.str(STR_CAP["ctrl.transport"]), "subsysnqn": it.str(STR_CAP["ctrl.subsysnqn"]),
         "hostnqn": it.str(STR_CAP["ctrl.hostnqn"]), "address": it.str(STR_CAP["ctrl.address"]),
         "queues": [], "ns": []}
    nq = it.u32()
    if nqueues_total + nq > MAX_QUEUES:
        raise Refused("header", "header corrupt (more than %d queues)" % MAX_QUEUES)
    for _ in range(nq):
        c["queues"].append({"qid": it.u16(), "io_cpu": it.i32(), "saddr": it.str(STR_CAP["queue.saddr"]),
                            "sport": it.u16(), "daddr": it.str(STR_CAP["queue.daddr"]), "dport": it.u16(),
                            "rx_queue": -1, "tx_queue": -1})
    for key in ("rx_queue", "tx_queue"):         # appended later: absent in older files
        if it.left() < 4:
            return c
        n = it.u32()
        for i in range(n):
            v = it.i32()
            if i < nq:
                c["queues"][i][key] = v
    if it.left() < 4:
        return c
    for i in range(it.u32()):                    # namespaces: readers keep the first 16
        dev, nsid = it.u32(), it.u32()
        if i < MAX_NS:
            c["ns"].append((dev, nsid))
    return c


def cntlid_at(h, inst, t):
    """the cntlid of controller inst at t: the latest change by then, else the first CTRL item's"""
    for i, c, f in reversed(h["cntlid_changes"]):
        if i == inst and f <= t:
            return c
    return next((c["cntlid"] for c in h["ctrls"] if c["instance"] == inst), None)


def add_cntlid_change(h, inst, cntlid, t):
    """kept in time order; ignored: an instance outside 0..65535, a full list, the cntlid in force"""
    lst = h["cntlid_changes"]
    if inst < 0 or inst > 0xffff or len(lst) >= MAX_CNTLID_CHANGES or cntlid_at(h, inst, t) == cntlid:
        return
    k = len(lst)
    while k and lst[k - 1][2] > t:
        k -= 1
    lst.insert(k, (inst, cntlid, t))


def read_header(b, res):
    if len(b) == 0:
        raise Refused("header", "file is empty")
    if b[:8] != b"NTBPFREC"[:len(b[:8])]:
        raise Refused("header", "not an ntbpf record file (bad magic)")
    if len(b) < 10:
        raise Refused("header", "file ends inside the header")
    ver = u16(b, 8)
    if ver > VERSION:
        raise Refused("header", "record file version %d is newer than this ntbpf (%d)" % (ver, VERSION))
    if ver != VERSION:
        raise Refused("header", "record file version %d is older than this ntbpf reads (%d): record again, "
                      "or read it with the ntbpf that wrote it" % (ver, VERSION))
    if len(b) < 16:
        raise Refused("header", "file ends inside the header")
    plen = u32(b, 12)
    if plen > MAX_PAYLOAD:
        raise Refused("header", "header corrupt (payload length too large)")
    if len(b) < 16 + plen + 4:
        raise Refused("header", "file ends inside the header")
    if zlib.crc32(b[:16 + plen]) != u32(b, 16 + plen):
        raise Refused("header", "header corrupt (CRC mismatch)")
    h = new_header()
    h["version"], h["flags"] = ver, u16(b, 10)
    have_layout = False
    nqueues = 0
    pos, end = 16, 16 + plen
    while pos < end:
        if end - pos < 8:
            raise Refused("header", "header corrupt (item runs past its end)")
        tag, ln = u16(b, pos), u32(b, pos + 4)
        if ln > end - pos - 8:
            raise Refused("header", "header corrupt (item runs past its end)")
        it = Item(tag, b[pos + 8:pos + 8 + ln])
        pos += 8 + ln
        if tag == 1:
            h["ntbpf_version"] = it.str(STR_CAP["ntbpf_version"])
        elif tag == 2:
            h["role"] = it.u8()
        elif tag == 3:
            h["rec_size"], h["nev"] = it.u32(), it.u32()   # nfields and the list: for other tools
            have_layout = True
        elif tag == 4:
            h["hostname"] = it.str(STR_CAP["hostname"])
        elif tag == 5:
            h["kernel"] = it.str(STR_CAP["kernel"])
        elif tag == 6:
            h["boot_id"] = it.str(STR_CAP["boot_id"])
        elif tag == 7:
            h["cmdline"] = it.str(STR_CAP["cmdline"])
        elif tag == 8:
            h["mono_ns"], h["real_ns"], h["boot_ns"] = it.u64(), it.u64(), it.u64()
        elif tag == 9:
            h["sample"] = it.u32()
            if it.left() >= 4:                   # absent: as it was (0, or an earlier SAMPLE's)
                h["sample_window_ms"] = it.u32()
        elif tag == 10:
            if len(h["devs"]) < MAX_DEVS:         # the others are not read
                h["devs"].append(it.str(STR_CAP["dev"]))
        elif tag == 11:
            if len(h["hooks"]) >= MAX_HOOKS:
                raise Refused("header", "header corrupt (more than %d hooks)" % MAX_HOOKS)
            h["hooks"].append({"name": it.str(STR_CAP["hook.name"]), "attach": it.str(STR_CAP["hook.attach"]),
                               "status": it.str(STR_CAP["hook.status"]),
                               "boundary": it.str(STR_CAP["hook.boundary"])})
        elif tag == 12:
            if len(h["ctrls"]) >= MAX_CTRLS:
                raise Refused("header", "header corrupt (more than %d controllers)" % MAX_CTRLS)
            c = read_ctrl(it, h, nqueues)
            nqueues += len(c["queues"])
            h["ctrls"].append(c)
        elif tag == 14:
            add_cntlid_change(h, it.i32(), it.u16(), it.u64())
        # 13 (PAD) and tags this version does not know: skipped
    if not have_layout:
        raise Refused("header", "header corrupt (no record layout)")
    if h["nev"] > 32 or not 40 + 4 * h["nev"] <= h["rec_size"] <= 4096:
        raise Refused("header", "unsupported record layout (%d bytes, %d events)" % (h["rec_size"], h["nev"]))
    res.header = h
    return 16 + plen + 4


# ---- chunks ------------------------------------------------------------------------------------

def compress_bound(n):
    return n + (n >> 12) + (n >> 14) + (n >> 25) + 13


def fmix64(k):
    k ^= k >> 33
    k = k * 0xff51afd7ed558ccd & M64
    k ^= k >> 33
    k = k * 0xc4ceb9fe1a85ec53 & M64
    return k ^ k >> 33


def fletcher(body):
    """a = the sum of the little-endian 64-bit words, c = the sum of a after each word (mod 2^64)"""
    if sys.byteorder == "little":
        ws = memoryview(body).cast("B").cast("Q")
    else:
        ws = [w for (w,) in struct.iter_unpack("<Q", body)]
    return sum(ws) & M64, sum(itertools.accumulate(ws)) & M64


def recp_check(body):
    a, c = fletcher(body)
    x = fmix64((a + fmix64(c)) & M64)
    return (x ^ x >> 32) & 0xffffffff


def recs_check(body):
    a, c = fletcher(body)
    a ^= c * 0x9e3779b97f4a7c15 & M64
    return (a ^ a >> 32) & 0xffffffff


def new_rec():
    r = dict.fromkeys(REC_FIELDS, 0)
    r["ev"] = [0] * MAX_EV
    r["port"] = r["depth"] = 0
    return r


PACKED = struct.Struct("<QQIIIHHHBBBBHHH")


def packed_records(body, nrec):
    """RECP: 44 bytes, then ev[i] for each bit i < 16 of ev_mask"""
    recs, at = [], 0
    for _ in range(nrec):
        if at + 44 > len(body):
            raise ValueError("a packed record runs past the chunk")
        v = PACKED.unpack_from(body, at)
        r = dict(zip(REC_FIELDS, v))
        r["port"], r["depth"] = v[13], v[14]
        at += 44
        slots = [k for k in range(MAX_EV) if r["ev_mask"] >> k & 1]
        if at + 4 * len(slots) > len(body):
            raise ValueError("a packed record runs past the chunk")
        ev = [0] * MAX_EV
        for k, x in zip(slots, struct.unpack_from("<%dI" % len(slots), body, at)):
            ev[k] = x
        r["ev"] = ev
        at += 4 * len(slots)
        recs.append(r)
    if len(body) - at >= 8 or any(body[at:]):
        raise ValueError("bytes after its last packed record")
    return recs


def uncoded_records(body, nrec):
    """RECS: each record as the record table has it; reserved read as 0"""
    recs = []
    for i in range(nrec):
        v = struct.unpack_from("<QQIIIHHHBBBBH16IHH", body, i * 112)
        r = new_rec()
        r.update(zip(REC_FIELDS, v[:13]))
        r["ev"] = list(v[13:29])
        r["port"], r["depth"] = v[29], v[30]
        recs.append(r)
    return recs


class BadEncoding(Exception):
    pass


def varint(raw, pos, end):
    v = sh = 0
    for n in range(10):
        if pos >= end:
            raise BadEncoding("varint past the end")
        c = raw[pos]
        pos += 1
        v |= (c & 0x7f) << sh
        sh += 7
        if c < 0x80:
            if v >> 64:
                raise BadEncoding("varint above 64 bits")
            return v, pos
    raise BadEncoding("varint longer than 10 bytes")


def columns(raw, nrec, nev):
    """the records of a CHNK chunk's raw bytes (docs/record-format.md, Columns)"""
    if len(raw) < 8:
        raise BadEncoding("raw bytes shorter than their counts")
    if u32(raw, 0) != nrec:
        raise BadEncoding("record count differs from the chunk's")
    ncols = u32(raw, 4)
    if ncols < 16 + nev or ncols > 32 + nev:
        raise BadEncoding("column count")
    end = len(raw)
    width = [64, 32, 32, 64, 32, 16, 16, 12, 8, 8, 8, 8, 16, 32] + [32] * nev + [32, 4, 16] + [64] * 15
    modes = [1] * len(width)
    modes[3] = 2
    for k in range(nev):
        modes[14 + k] = 3
    modes[15 + nev] = 2
    pos, desc = 8, []
    for k in range(ncols):
        if pos >= end:
            raise BadEncoding("descriptors past the end")
        d = raw[pos]
        base, pos = varint(raw, pos + 1, end)
        elen, pos = varint(raw, pos, end)
        b, mode = d & 63, d >> 6
        if b > 56 or b > width[k]:
            raise BadEncoding("bit width")
        if mode >= modes[k]:
            raise BadEncoding("mode")
        if base >> width[k]:
            raise BadEncoding("base")
        if b == 0 and elen:
            raise BadEncoding("exceptions without bits")
        desc.append([b, base, elen, mode])
    for dsc in desc:                             # the exceptions' ranges
        if dsc[2] > end - pos:
            raise BadEncoding("exceptions past the end")
        start, pos = pos, pos + dsc[2]
        dsc[2] = start                           # [b, base, exceptions at, mode, exceptions end]
        dsc.append(pos)
    bits_at = pos

    def column(k, count):
        nonlocal bits_at
        b, base, exc, mode, exc_end = desc[k]
        nbytes = (count * b + 7) // 8
        if nbytes > end - bits_at:
            raise BadEncoding("packed bits overrun")
        w = width[k]
        out = []
        if b == 0:
            out = [base] * count
        else:
            chunk = int.from_bytes(raw[bits_at:bits_at + nbytes], "little")
            mask = (1 << b) - 1
            for i in range(count):
                off = chunk >> (i * b) & mask
                if off == mask:                  # the escape
                    x, exc = varint(raw, exc, exc_end)
                    off += x
                    if off >> w:
                        raise BadEncoding("exception too large")
                out.append((base + off) & ((1 << w) - 1))
        if exc != exc_end:
            raise BadEncoding("exceptions not used up")
        bits_at += nbytes
        return out

    v = [column(k, nrec) for k in range(14)]
    recs = []
    t0 = sector = pbytes = 0
    slots_of = []
    for i in range(nrec):
        r = new_rec()
        t0 = (t0 + v[0][i]) & M64
        r["t0"], r["dev"], r["bytes"] = t0, v[1][i], v[2][i]
        sector = v[3][i] if desc[3][3] else (sector + pbytes // 512 + v[3][i]) & M64
        pbytes = r["bytes"]
        r["sector"] = sector
        r["ev_mask"], r["ctrl"], r["qid"], r["cid"] = v[4][i], v[5][i], v[6][i], v[7][i]
        r["op"], r["opcode"], r["flags"], r["role"], r["status"] = v[8][i], v[9][i], v[10][i], v[11][i], v[12][i]
        xmask = v[13][i]
        if xmask & r["ev_mask"] or xmask >> nev:
            raise BadEncoding("xmask")
        slots_of.append((r["ev_mask"] & ((1 << nev) - 1)) | xmask)
        recs.append(r)
    # the packed bits stay in column order: ev[] columns, then port, cid >> 12, depth, the rest
    evcols = []
    for k in range(nev):
        evcols.append(column(14 + k, sum(1 for s in slots_of if s >> k & 1)))
    ports_x = column(14 + nev, nrec)
    gen_x = column(15 + nev, nrec)
    depth = column(16 + nev, nrec) if ncols > 16 + nev else [0] * nrec
    for k in range(17 + nev, ncols):             # fields of a later writer: skipped
        column(k, nrec)
    if bits_at != end:
        raise BadEncoding("packed bits do not fill the raw bytes")
    ports = []
    for r, x in zip(recs, ports_x):
        if x >= len(ports):
            if x - len(ports) > 65535:
                raise BadEncoding("port")
            ports.append(x - len(ports))
            x = len(ports) - 1
        r["port"] = ports[x]
    table = [0] * 4096
    for r, x in zip(recs, gen_x):
        if desc[15 + nev][3]:
            s = ((r["cid"] & 0xfff) + r["qid"] * 128) % 4096
            x = (x + table[s]) % 16
            table[s] = (x + 1) % 16
        r["cid"] |= x << 12
    for r, x in zip(recs, depth):
        r["depth"] = x
    ev = [[0] * nev for _ in range(nrec)]
    for k in range(nev):
        vals = iter(evcols[k])
        mode = desc[14 + k][3]
        acc = recs[0]["t0"] & 0xffffffff if recs else 0
        for i, r in enumerate(recs):
            if not slots_of[i] >> k & 1:
                continue
            x = next(vals)
            if mode == 0:
                below = slots_of[i] & ((1 << k) - 1)
                prev = ev[i][below.bit_length() - 1] if below else 0
                ev[i][k] = (prev + x) & 0xffffffff
            elif mode == 1:
                acc = (acc + x) & 0xffffffff
                ev[i][k] = (acc - r["t0"]) & 0xffffffff
            else:
                ev[i][k] = x
    for i, r in enumerate(recs):
        r["ev"] = ev[i][:MAX_EV] + [0] * (MAX_EV - min(nev, MAX_EV))
        if nev != MAX_EV:
            r["ev_mask"] &= (1 << min(nev, MAX_EV)) - 1
    return recs


def inflate(body, raw_len):
    """a zlib stream's header checked, then raw deflate to exactly raw_len bytes, ending exactly 4 bytes
    before the stream's end: its Adler-32, unverified"""
    if len(body) < 2:
        return None
    cmf, flg = body[0], body[1]
    if cmf & 15 != 8 or cmf >> 4 > 7 or (cmf << 8 | flg) % 31 or flg & 0x20:
        return None
    d = zlib.decompressobj(-15)
    try:
        out = d.decompress(body[2:], raw_len + 1)
    except zlib.error:
        return None
    if len(out) != raw_len or not d.eof or len(d.unused_data) != 4:   # then exactly the Adler-32
        return None
    return out


def read_blocks(b, pos, res):
    h = res.header
    nev, n = h["nev"], 0
    while True:
        if pos == len(b):
            raise Refused("truncated", "truncated after %d records (no trailer): the recording was "
                          "interrupted (the file ends between two chunks, at offset %d)" % (n, pos))
        magic = bytes(b[pos:pos + 4])
        if len(magic) < 4:
            raise Refused("truncated", "truncated after %d records: cut %d bytes into the chunk or trailer "
                          "at offset %d, inside its header" % (n, len(b) - pos, pos))
        where = "corrupt after %d records: chunk at offset %d" % (n, pos)
        if magic == b"TRLR":
            return read_trailer(b, pos, n, res)
        if magic not in (b"CHNK", b"RECP", b"RECS"):
            raise Refused("corrupt", "corrupt after %d records: no chunk or trailer at offset %d" % (n, pos))
        if len(b) - pos < 20:
            raise Refused("truncated", "truncated after %d records: cut %d bytes into the chunk or trailer "
                          "at offset %d, inside its header" % (n, len(b) - pos, pos))
        nrec, f8, f12, f16 = struct.unpack_from("<IIII", b, pos + 4)
        if magic == b"CHNK":
            raw_len, clen, crc = f8, f12, f16
            if (nrec == 0 or nrec > CHUNK_RECS or nrec > 16 * (20 + clen) or raw_len > 128 << 20
                    or raw_len > 1032 * clen or raw_len > 4096 + 1024 * nrec
                    or clen == 0 or clen > compress_bound(raw_len) + 64):
                raise Refused("corrupt", where + " has bad sizes")
            blen = clen
        elif magic == b"RECP":
            fixed, blen, check = f8, f12, f16
            if nrec == 0 or nrec > CHUNK_RECS or fixed != 44 or blen % 8 or not 44 * nrec <= blen <= 108 * nrec + 7:
                raise Refused("corrupt", where + " has bad sizes")
            if h["rec_size"] != 112 or nev != 16:
                raise Refused("corrupt", where + " holds packed records of this version's layout, but the "
                              "header's is %d bytes with %d events" % (h["rec_size"], nev))
        else:
            rec_size, blen, check = f8, f12, f16
            if nrec == 0 or nrec > CHUNK_RECS or rec_size != 112 or blen != nrec * 112:
                raise Refused("corrupt", where + " has bad sizes")
            if h["rec_size"] != 112 or nev != 16:
                raise Refused("corrupt", where + " holds uncoded records of this version's layout, but the "
                              "header's is %d bytes with %d events" % (h["rec_size"], nev))
        if len(b) - pos - 20 < blen:
            raise Refused("truncated", "truncated after %d records: the file was cut %d of the %d bytes of "
                          "the chunk at offset %d" % (n, len(b) - pos, 20 + blen, pos))
        body = b[pos + 20:pos + 20 + blen]
        if magic == b"CHNK":
            if zlib.crc32(body) != crc:
                raise Refused("corrupt", where + " (CRC mismatch)")
            raw = inflate(body, raw_len)
            if raw is None:
                raise Refused("corrupt", where + " (decompression failed)")
            try:
                recs = columns(raw, nrec, nev)
            except BadEncoding as e:
                raise Refused("corrupt", where + " (bad record encoding: %s)" % e)
        else:
            if (recp_check if magic == b"RECP" else recs_check)(body) != check:
                raise Refused("corrupt", where + " (check mismatch)")
            try:
                recs = packed_records(body, nrec) if magic == b"RECP" else uncoded_records(body, nrec)
            except ValueError as e:
                raise Refused("corrupt", where + ": " + str(e))
        res.records.extend(recs)
        n += nrec
        pos += 20 + blen


def read_trailer(b, pos, n, res):
    if len(b) - pos < 8:
        raise Refused("truncated", "truncated after %d records: cut %d bytes into the chunk or trailer at "
                      "offset %d, inside its header" % (n, len(b) - pos, pos))
    ln = u32(b, pos + 4)
    if ln < 28 or ln > 28 + 8 * 4096 or (ln - 28) % 8:      # before reading it: corrupt, not cut
        raise Refused("corrupt", "corrupt after %d records: bad trailer (length %d)" % (n, ln))
    if len(b) - pos < 8 + ln + 4:
        raise Refused("truncated", "truncated after %d records (inside the trailer): the file was cut %d of "
                      "the %d bytes of its trailer (at offset %d)" % (n, len(b) - pos, 12 + ln, pos))
    if zlib.crc32(b[pos:pos + 8 + ln]) != u32(b, pos + 8 + ln):
        raise Refused("corrupt", "corrupt after %d records: bad trailer (CRC mismatch)" % n)
    nstats = u32(b, pos + 16)
    if ln != 28 + 8 * nstats:
        raise Refused("corrupt", "corrupt after %d records: bad trailer (%d counters)" % (n, nstats))
    records = u64(b, pos + 8)
    if records != n:
        raise Refused("corrupt", "corrupt after %d records: the trailer says %d" % (n, records))
    stats = [u64(b, pos + 20 + 8 * i) for i in range(min(nstats, NSTATS))]
    stats += [0] * (NSTATS - len(stats))
    res.trailer = {"records": records, "stats": stats, "lost_user": u64(b, pos + 20 + 8 * nstats),
                   "end_mono_ns": u64(b, pos + 28 + 8 * nstats)}


def decode(b):
    """the whole file, as the C reader reads it (docs/record-format.md, Reading)"""
    b = bytes(b)
    res = Result()
    try:
        pos = read_header(b, res)
        read_blocks(b, pos, res)
        res.status = "ok"
    except Refused as e:
        res.status, res.message = e.kind, e.msg
    return res


# ---- canonical lines (what tests/refdec/test_refdec.py compares with the C reader's) -------------

def hexs(s):
    return s.hex() or "-"


REC_LINES = "\n".join(["rec[{0}].%s {%d}" % (k, 1 + n) for n, k in enumerate(REC_FIELDS)]
                      + ["rec[{0}].ev[%d] {%d}" % (k, 14 + k) for k in range(MAX_EV)]
                      + ["rec[{0}].port {30}", "rec[{0}].depth {31}", "rec[{0}].reserved 0 0"])


def lines(res):
    """the result as 'key value' lines: the format of .output/tests/refdec-dump (tests/refdec/dump.c)"""
    out = []
    if res.header is None:
        out.append("open refused")
        return out
    h = res.header
    out.append("open ok")
    for k in ("version", "role", "rec_size", "nev", "mono_ns", "real_ns", "boot_ns", "sample",
              "sample_window_ms"):
        out.append("header.%s %d" % (k, h[k]))
    for k in ("ntbpf_version", "hostname", "kernel", "boot_id", "cmdline"):
        out.append("header.%s %s" % (k, hexs(h[k])))
    out.append("header.ndevs %d" % len(h["devs"]))
    for i, d in enumerate(h["devs"]):
        out.append("header.dev[%d] %s" % (i, hexs(d)))
    out.append("header.nhooks %d" % len(h["hooks"]))
    for i, k in enumerate(h["hooks"]):
        out.append("header.hook[%d] %s %s %s %s" % (i, hexs(k["name"]), hexs(k["attach"]), hexs(k["status"]),
                                                    hexs(k["boundary"])))
    out.append("header.nctrls %d" % len(h["ctrls"]))
    for i, c in enumerate(h["ctrls"]):
        out.append("header.ctrl[%d] %d %d %s %s %s %s %d %d" % (
            i, c["instance"], c["cntlid"], hexs(c["transport"]), hexs(c["subsysnqn"]), hexs(c["hostnqn"]),
            hexs(c["address"]), len(c["queues"]), len(c["ns"])))
        for j, q in enumerate(c["queues"]):
            out.append("header.ctrl[%d].queue[%d] %d %d %s %d %s %d %d %d" % (
                i, j, q["qid"], q["io_cpu"], hexs(q["saddr"]), q["sport"], hexs(q["daddr"]), q["dport"],
                q["rx_queue"], q["tx_queue"]))
        for j, (dev, nsid) in enumerate(c["ns"]):
            out.append("header.ctrl[%d].ns[%d] %d %d" % (i, j, dev, nsid))
    out.append("header.ncntlid_changes %d" % len(h["cntlid_changes"]))
    for i, (inst, cntlid, t) in enumerate(h["cntlid_changes"]):
        out.append("header.cntlid_change[%d] %d %d %d" % (i, inst, cntlid, t))
    for i, r in enumerate(res.records):
        out.append(REC_LINES.format(i, *[r[k] for k in REC_FIELDS], *r["ev"], r["port"], r["depth"]))
    out.append("records %d" % len(res.records))
    out.append("status %s" % res.status)
    if res.trailer:
        t = res.trailer
        out.append("trailer %d %d %d %s" % (t["records"], t["lost_user"], t["end_mono_ns"],
                                             " ".join(str(s) for s in t["stats"])))
    return out


def main(argv):
    as_lines = argv[1:2] == ["--lines"]
    args = argv[2:] if as_lines else argv[1:]
    if len(args) != 1:
        print("usage: ntbpf_refdec.py [--lines] FILE", file=sys.stderr)
        return 2
    with open(args[0], "rb") as f:
        res = decode(f.read())
    if as_lines:
        print("\n".join(lines(res)))
    else:
        if res.header is None:
            print("%s: %s" % (args[0], res.message), file=sys.stderr)
            return 1
        for k, v in res.header.items():
            print("# %s: %s" % (k, v))
        for r in res.records:
            print(" ".join("%s=%s" % (k, v) for k, v in r.items()))
        print("# status: %s %s" % (res.status, res.message))
        if res.trailer:
            print("# trailer: %s" % res.trailer)
    return 0 if res.status == "ok" else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
