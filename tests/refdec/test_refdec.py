#!/usr/bin/env python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""test_refdec.py - ntbpf's C reader held to the reference decoder (tests/refdec/ntbpf_refdec.py).

    python3 tests/refdec/test_refdec.py .output/tests/refdec-dump [FILE...]

Every input of the record file fuzzer (tests/fuzz/seeds, corpus and regress: pre-images, fixed up
by the harness's nt_fuzz_fixup() inside refdec-dump), real recordings of this version (the lab
recordings of tests/refdec/files, as they are; older ones are among the seeds), files of ntbpf's
writer (refdec-dump --synth), and mutants and crafted corners of those (tests/refdec/mutate.py)
goes through both readers: refdec-dump (libntcore.a's nt_reader_*) prints every header field, every
field of every record, the record count, how reading ended (ok, truncated, corrupt) and the
trailer; the reference decoder makes the same lines.  They must be equal, line by line: the same
refusal at open, the same records up to the same stop, the same status.  A difference fails the
test with the input, the first differing field, both values and both readers' messages, and keeps
the file read in .output/tests/refdec-failed/.

The corpus grew on format version 3's reader; its pre-images of version 3 and 4 were made version 5
in tests/fuzz when ntbpf stopped reading those (the same file: 5 is 4 plus RECP chunks, 4 is 3 plus
RECS chunks; the fix-up recomputes the header's CRC), and a pre-image of version 3 or 4 added since
is compared the same way, with its version field made 5.  Record files of version 3 or 4 (as FILEs)
are refused by both readers alike.  With FILEs: those record files (as they are) only.
REFDEC_MUTANTS=N: N mutants (default 1000).
"""
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import mutate  # noqa: E402
import ntbpf_refdec  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(HERE))
FUZZ = os.path.join(HERE, "..", "fuzz")


def inputs():
    """(path, pre-image?) of every file compared"""
    out = []
    for sub in ("seeds", "corpus", "regress"):
        d = os.path.join(FUZZ, sub)
        out += [(os.path.join(d, n), True) for n in sorted(os.listdir(d)) if not n.startswith(".")]
    d = os.path.join(HERE, "files")
    if os.path.isdir(d):
        out += [(os.path.join(d, n), False) for n in sorted(os.listdir(d)) if not n.startswith(".")]
    return out


def restamp(path, tmp, n):
    """a pre-image of version 3 or 4 as version 5 (the fix-up recomputes the header's CRC): version 5
    is version 4 plus RECP chunks, 4 is 3 plus RECS chunks, so the file means the same"""
    with open(path, "rb") as f:
        b = bytearray(f.read())
    if b[:8] != b"NTBPFREC" or len(b) < 10 or b[8] | b[9] << 8 not in (3, 4):
        return path
    b[8:10] = ntbpf_refdec.VERSION.to_bytes(2, "little")
    out = os.path.join(tmp, "v5-%s" % n)
    with open(out, "wb") as f:
        f.write(b)
    return out


def run_dump(dump, tmp, files, as_is, label):
    """refdec-dump over files, in batches; returns [(the file read, C lines)]"""
    out = []
    for at in range(0, len(files), 200):
        batch = files[at:at + 200]
        sub = os.path.join(tmp, "%s-read%d" % (label, at))
        os.mkdir(sub)
        subprocess.run([dump, sub] + (["--as-is"] if as_is else []) + batch, check=True)
        for i in range(len(batch)):
            with open(os.path.join(sub, "%d.c" % i)) as f:
                out.append((batch[i] if as_is else os.path.join(sub, "%d.ntbpf" % i), f.read()))
    return out


def compare(name, fixed, ctext):
    """None when both agree; else a text that says where first"""
    with open(fixed, "rb") as f:
        res = ntbpf_refdec.decode(f.read())
    cut = ctext.find("\n# ")                    # refdec-dump's messages, last: shown, not compared
    cmsg = ctext[cut + 3:].strip().replace("\n# ", " | ") if cut >= 0 else ""
    ctext = (ctext[:cut] if cut >= 0 else ctext).rstrip("\n")
    rtext = "\n".join(ntbpf_refdec.lines(res))
    if ctext == rtext:
        return None
    clines, rlines = ctext.split("\n"), rtext.split("\n")
    for i in range(max(len(clines), len(rlines))):
        c = clines[i] if i < len(clines) else "(nothing)"
        r = rlines[i] if i < len(rlines) else "(nothing)"
        if c != r:
            ck, _, cv = c.partition(" ")
            rk, _, rv = r.partition(" ")
            if ck == rk:
                where = "first differing field %s: C reader %s, reference %s" % (ck, cv, rv)
            else:
                where = "line %d: C reader '%s', reference '%s'" % (i + 1, c, r)
            return ("%s: %s\n    C reader: %s\n    reference: %s (%s)"
                    % (name, where, cmsg or "-", res.status, res.message or "-"))
    return None


def check(dump, tmp, label, files, as_is, tally):
    """files through both readers; tally: {'bad': [...], 'agreed': n, 'statuses': {}, ...}"""
    fed = files if as_is else [restamp(p, tmp, "%s%d" % (label, n)) for n, p in enumerate(files)]
    tally["restamped"] += sum(a != b for a, b in zip(files, fed))
    got = run_dump(dump, tmp, fed, as_is, label)
    failed_dir = os.path.join(os.path.dirname(os.path.abspath(dump)), "refdec-failed")
    for p, (fixed, clines) in zip(files, got):
        name = os.path.relpath(p) if p.startswith(ROOT) else "%s %s" % (label, os.path.basename(p))
        why = compare(name, fixed, clines)
        if why:
            os.makedirs(failed_dir, exist_ok=True)
            keep = os.path.join(failed_dir, "%s-%d" % (label, len(tally["bad"])))
            shutil.copyfile(fixed, keep)
            tally["bad"].append("%s\n    the file read: %s" % (why, os.path.relpath(keep)))
        else:
            tally["agreed"] += 1
            at = clines.rfind("\nstatus ")
            st = clines[at + 8:clines.index("\n", at + 1)] if at >= 0 else "refused at open"
            tally["statuses"][st] = tally["statuses"].get(st, 0) + 1
    return got


def main(argv):
    if len(argv) < 2:
        print("usage: test_refdec.py REFDEC-DUMP [FILE...]", file=sys.stderr)
        return 2
    dump, t = argv[1], time.monotonic()
    nmut = int(os.environ.get("REFDEC_MUTANTS", "1000"))
    tally = {"bad": [], "agreed": 0, "statuses": {}, "restamped": 0}
    parts = []
    shm = "/dev/shm" if os.access("/dev/shm", os.W_OK) else None   # thousands of small files: not on a disk
    with tempfile.TemporaryDirectory(prefix="refdec.", dir=shm) as tmp:
        if argv[2:]:
            check(dump, tmp, "file", argv[2:], True, tally)
            parts.append("%d files" % len(argv[2:]))
        else:
            # the fuzzer's inputs: pre-images, fixed up by the harness
            pre = [p for p, is_pre in inputs() if is_pre]
            got = check(dump, tmp, "fuzz", pre, False, tally)
            parts.append("%d fuzz inputs (%d of version 3 or 4 compared as 5)" % (len(pre), tally["restamped"]))
            # files of the product's writer: 3 x 6000 records, and 3 x 400 to mutate
            for name, n in (("synth", 6000), ("small", 400)):
                d = os.path.join(tmp, name)
                os.mkdir(d)
                subprocess.run([dump, "--synth", d, str(n)], check=True)
            synth = [os.path.join(tmp, "synth", n) for n in sorted(os.listdir(os.path.join(tmp, "synth")))]
            check(dump, tmp, "synth", synth, True, tally)
            parts.append("%d files of the writer" % len(synth))
            # real recordings of this version (lab guests: RECP chunks, the header's newest items)
            real = [p for p, is_pre in inputs() if not is_pre]
            check(dump, tmp, "real", real, True, tally)
            parts.append("%d lab recordings" % len(real))
            # mutants of the seeds (whole recordings, as version 5) and of the small files
            base = []
            for p, (fixed, _) in zip(pre, got):
                if os.path.basename(os.path.dirname(p)) == "seeds":
                    with open(fixed, "rb") as f:
                        b = f.read()
                    if ntbpf_refdec.decode(b).status == "ok":
                        base.append(b)
            for p in real:
                with open(p, "rb") as f:
                    base.append(f.read())
            for n in sorted(os.listdir(os.path.join(tmp, "small"))):
                with open(os.path.join(tmp, "small", n), "rb") as f:
                    base.append(f.read())
            mdir = os.path.join(tmp, "mutants")
            os.mkdir(mdir)
            files = []
            for i, b in enumerate(mutate.mutants(base, nmut, 20261129)):
                files.append(os.path.join(mdir, "m%d" % i))
                with open(files[-1], "wb") as f:
                    f.write(b)
            check(dump, tmp, "mutant", files, True, tally)
            parts.append("%d mutants of %d of them" % (len(files), len(base)))
            # the corners the spec names, crafted on each of them
            cdir = os.path.join(tmp, "crafted")
            os.mkdir(cdir)
            files = []
            for i, b in enumerate(base):
                for name, f in mutate.crafted(b):
                    files.append(os.path.join(cdir, "%s-of-%d" % (name, i)))
                    with open(files[-1], "wb") as fo:
                        fo.write(f)
            check(dump, tmp, "crafted", files, True, tally)
            parts.append("%d crafted files" % len(files))
    for why in tally["bad"]:
        print("FAIL " + why)
    print("refdec: %s: the C reader and the reference decoder agree on %d (%s), disagree on %d; "
          "%.1f s"
          % (", ".join(parts), tally["agreed"], ", ".join("%s %d" % kv for kv in sorted(tally["statuses"].items())),
             len(tally["bad"]), time.monotonic() - t))
    return 1 if tally["bad"] else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
