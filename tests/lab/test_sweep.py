#!/usr/bin/env python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""Unit tests of tests/lab/sweep without a guest: reading a point's files, the table (text, CSV,
JSON) and the HTML charts from fixture numbers, the HTML file's mode and .old copy, the argument
errors, and that its stage list is docs/stages.md's.  Run by `make check`."""
import csv
import importlib.machinery
import importlib.util
import io
import json
import os
import re
import stat
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(os.path.dirname(HERE))
_loader = importlib.machinery.SourceFileLoader("sweep", os.path.join(HERE, "sweep"))
_spec = importlib.util.spec_from_loader("sweep", _loader)
sweep = importlib.util.module_from_spec(_spec)
_loader.exec_module(sweep)

ALL = [sweep.E2E] + sweep.STAGES


def point(q, depth, iops, base, jobs=2, missing=()):
    """a point whose stage s has p50 = base + index of s, p99 = 2 x p50"""
    st = {s: None if s in missing else (base + i, 2 * (base + i)) for i, s in enumerate(ALL)}
    return {"queues": q, "jobs": jobs, "iodepth": depth, "outstanding": jobs * depth, "iops": iops,
            "ios": 4000, "fio_lat": (base * 3, base * 7), "records": 4000, "matched": 3990, "lost": 1,
            "stages": st, "dir": "x"}


POINTS = [point(2, 8, 18000.4, 200), point(1, 1, 12000, 10), point(1, 8, 15000, 100),
          point(2, 1, 13000.6, 11, missing=("target_subsystem",))]


class Text(unittest.TestCase):
    def render(self):
        buf = io.StringIO()
        sweep.render_text(POINTS, buf, "a <title>")
        return buf.getvalue()

    def blocks(self):
        """{queues: {row name: [cells]}}"""
        out, cur = {}, None
        for line in self.render().splitlines():
            m = re.match(r"nr_io_queues=(\d+)$", line)
            if m:
                cur = out.setdefault(int(m.group(1)), {})
            elif cur is not None and line.strip():
                name = re.match(r"(.*?)\s{2,}", line).group(1)
                cur[name] = line[len(name):].split()
        return out

    def test_one_block_per_queue_count_in_order(self):
        t = self.render()
        self.assertTrue(t.startswith("# a <title>\n"))
        self.assertLess(t.index("nr_io_queues=1"), t.index("nr_io_queues=2"))
        self.assertEqual(sorted(self.blocks()), [1, 2])

    def test_every_stage_row_with_p50_p99_per_point(self):
        b = self.blocks()
        names = list(b[1])
        self.assertEqual(names[:3], ["outstanding (jobs x qd)", "IOPS", "fio lat"])
        self.assertEqual(names[3:3 + len(ALL)], ALL)
        # columns ascend by outstanding I/O: 2 then 16
        self.assertEqual(b[1]["outstanding (jobs x qd)"], ["2", "(2x1)", "16", "(2x8)"])
        for i, s in enumerate(ALL):
            self.assertEqual(b[1][s], [f"{10 + i:.2f}/{20 + 2 * i:.2f}",
                                       f"{100 + i:.1f}/{200 + 2 * i:.1f}"])
        self.assertEqual(b[2]["IOPS"], ["13001", "18000"])
        self.assertEqual(b[2]["target_subsystem"][0], "-")      # not measured: a dash, not 0
        i = ALL.index("target_subsystem")
        self.assertEqual(b[2]["target_subsystem"][1], f"{200 + i:.1f}/{400 + 2 * i:.1f}")
        self.assertEqual(b[1]["matched/I/Os"], ["3990/4000", "3990/4000"])
        self.assertEqual(b[1]["lost records"], ["1", "1"])


class Csv(unittest.TestCase):
    def test_header_and_values(self):
        buf = io.StringIO()
        sweep.render_csv(POINTS, buf)
        rows = list(csv.DictReader(io.StringIO(buf.getvalue())))
        self.assertEqual([(r["queues"], r["outstanding"]) for r in rows], [("1", "2"), ("1", "16"), ("2", "2"), ("2", "16")])
        for s in ALL:
            self.assertIn(f"{s}_p50_us", rows[0])
            self.assertIn(f"{s}_p99_us", rows[0])
        self.assertEqual(float(rows[1]["nvme_tcp_submission_p50_us"]), 100 + ALL.index("nvme_tcp_submission"))
        self.assertEqual(float(rows[1]["nvme_tcp_submission_p99_us"]), 2 * (100 + ALL.index("nvme_tcp_submission")))
        self.assertEqual(rows[2]["target_subsystem_p50_us"], "")
        self.assertEqual(float(rows[3]["iops"]), 18000.4)
        self.assertEqual(float(rows[0]["fio_lat_p99_us"]), 70)


class Json(unittest.TestCase):
    def test_points(self):
        buf = io.StringIO()
        sweep.render_json(POINTS, buf)
        j = json.loads(buf.getvalue())["points"]
        self.assertEqual([p["outstanding"] for p in j], [2, 16, 2, 16])
        self.assertEqual(j[3]["stages"]["end_to_end"], {"p50_us": 200, "p99_us": 400})
        self.assertIsNone(j[2]["stages"]["target_subsystem"])
        self.assertEqual(j[0]["lost_records"], 1)


class Html(unittest.TestCase):
    def render(self, pts=POINTS, title="t <&> 'x'"):
        buf = io.StringIO()
        sweep.render_html(pts, buf, title)
        return buf.getvalue()

    def charts(self, h):
        return re.findall(r"<svg.*?</svg>", h, re.S)

    def test_self_contained_and_escaped(self):
        h = self.render()
        self.assertNotIn("<script", h.lower())
        self.assertIsNone(re.search(r"(src|href)=", h))
        self.assertIn("default-src 'none'", h)
        self.assertIn("t &lt;&amp;&gt; &#39;x&#39;", h)
        self.assertNotIn("t <&>", h)

    def test_a_chart_for_iops_end_to_end_and_each_stage(self):
        c = self.charts(self.render())
        self.assertEqual(len(c), 2 + len(sweep.STAGES))
        titles = [re.search(r"<title>(.*?)</title>", x).group(1) for x in c]
        self.assertEqual(titles, ["IOPS", "end_to_end p50 and p99"] + sweep.STAGES)
        # IOPS: one solid line per queue count; a stage: p50 solid and p99 dashed per queue count
        self.assertEqual(c[0].count("<polyline"), 2)
        self.assertEqual(c[0].count("stroke-dasharray"), 0)
        for x in c[1:]:
            self.assertEqual(x.count("<polyline"), 4, x[:200])
            self.assertEqual(x.count("stroke-dasharray"), 2)

    def lines(self, chart):
        """{polyline title: [(x, y)...]}"""
        out = {}
        for pts, t in re.findall(r'<polyline[^>]*points="([^"]*)"><title>(.*?)</title>', chart):
            out[t] = [tuple(float(v) for v in p.split(",")) for p in pts.split()]
        return out

    def test_lines_follow_the_numbers(self):
        c = self.charts(self.render())
        iops = self.lines(c[0])
        q1, q2 = iops["nr_io_queues=1"], iops["nr_io_queues=2"]
        self.assertEqual(len(q1), 2)
        self.assertLess(q1[0][0], q1[1][0])              # x grows with outstanding
        self.assertGreater(q1[0][1], q1[1][1])           # 15000 above 12000: smaller y
        self.assertAlmostEqual(q1[0][0], q2[0][0])        # same outstanding, same x
        # the y axis is linear from 0 to 20000 (18000.4 -> top 20000): frame y 24, height 150
        self.assertAlmostEqual(q1[0][1], 24 + 150 - 12000 / 20000 * 150, places=1)
        # latencies on a decade scale: end_to_end p50 10 (q1, 2 outstanding) and 100 (q1, 16) one
        # decade apart, p99 = 2 x p50 log10(2) of a decade above; the axis runs 1e1 .. 1e3
        e2e = self.lines(c[1])
        y10, y100 = e2e["nr_io_queues=1 p50"][0][1], e2e["nr_io_queues=1 p50"][1][1]
        self.assertAlmostEqual(y10, 24 + 150, places=1)
        self.assertAlmostEqual(y10 - y100, 150 / 2, places=1)
        self.assertAlmostEqual(y10 - e2e["nr_io_queues=1 p99"][0][1], 150 / 2 * 0.30103, places=1)
        self.assertIn("(us, log scale)", c[1])
        self.assertNotIn("log scale", c[0])
        ts = self.lines(c[2 + sweep.STAGES.index("target_subsystem")])
        self.assertEqual(len(ts["nr_io_queues=2 p50"]), 1)  # the point without the stage is left out
        self.assertEqual(len(ts["nr_io_queues=1 p99"]), 2)

    def test_one_point(self):
        c = self.charts(self.render([point(1, 4, 1000, 5)]))
        self.assertEqual(len(c), 2 + len(sweep.STAGES))
        self.assertEqual(len(self.lines(c[0])["nr_io_queues=1"]), 1)

    def test_axis(self):
        self.assertEqual(sweep._axis(18000.4), (20000, 5000))
        self.assertEqual(sweep._axis(4.09), (5, 1))
        self.assertEqual(sweep._axis(100), (100, 20))
        self.assertEqual(sweep._axis(0), (1.0, 0.2))


class Files(unittest.TestCase):
    def test_private_and_old_kept(self):
        with tempfile.TemporaryDirectory() as d:
            p = os.path.join(d, "s.html")
            sweep.write_private(p, lambda f: f.write("one"))
            self.assertEqual(stat.S_IMODE(os.stat(p).st_mode), 0o600)
            sweep.write_private(p, lambda f: f.write("two"))
            for path, want in ((p, "two"), (p + ".old", "one")):
                with open(path) as f:
                    self.assertEqual(f.read(), want)
            self.assertEqual(stat.S_IMODE(os.stat(p).st_mode), 0o600)

    def fixture(self, d, fio_error=0, groups=None):
        fio = {"jobs": [{"error": fio_error, "read": {"iops": 1234.5, "total_ios": 40, "lat_ns": {
            "percentile": {"50.000000": 60000, "99.000000": 90000}}}}]}
        st = {s: {"p50_us": 1.0 + i, "p99_us": 2.0 + i} for i, s in enumerate(ALL)}
        rep = {"matched": 39, "lost_records": 2, "groups": groups if groups is not None else [
            {"op": "read", "device": "nsid1", "status": "ok", "count": 50, "stages": {}},
            {"op": "read", "device": "nvme0n1", "status": "0x4004", "count": 90, "stages": {}},
            {"op": "read", "device": "nvme0n1", "status": "ok", "count": 40, "stages": st}]}
        for name, v in (("fio.json", fio), ("report.json", rep)):
            with open(os.path.join(d, name), "w") as f:
                json.dump(v, f)

    def test_read_point(self):
        with tempfile.TemporaryDirectory() as d:
            self.fixture(d)
            p = sweep.read_point(d, 2, 2, 4)
            self.assertEqual((p["outstanding"], p["iops"], p["ios"], p["records"], p["matched"], p["lost"]),
                             (8, 1234.5, 40, 40, 39, 2))
            self.assertEqual(p["stages"]["nvme_tcp_submission"], (1.0 + ALL.index("nvme_tcp_submission"),
                                                                  2.0 + ALL.index("nvme_tcp_submission")))
            self.assertEqual(p["fio_lat"], (60.0, 90.0))

    def test_read_point_refuses(self):
        with tempfile.TemporaryDirectory() as d:
            self.fixture(d, fio_error=5)
            self.assertRaisesRegex(sweep.SweepError, "fio job errors", sweep.read_point, d, 1, 1, 1)
            self.fixture(d, groups=[])
            self.assertRaisesRegex(sweep.SweepError, "no read group", sweep.read_point, d, 1, 1, 1)
            self.fixture(d, groups=[{"op": "read", "device": "nvme0n1", "status": "ok", "count": 1,
                                     "stages": {"end_to_end": {"p50_us": 1}}}])
            self.assertRaisesRegex(sweep.SweepError, "not as fio and ntbpf write them .KeyError: 'p99_us'",
                                   sweep.read_point, d, 1, 1, 1)
            with open(os.path.join(d, "fio.json"), "w") as f:
                f.write('{"jobs": [7]}')
            self.assertRaisesRegex(sweep.SweepError, "AttributeError", sweep.read_point, d, 1, 1, 1)
            os.unlink(os.path.join(d, "report.json"))
            self.assertRaisesRegex(sweep.SweepError, "report.json", sweep.read_point, d, 1, 1, 1)


class Cli(unittest.TestCase):
    def run_sweep(self, *args):
        return subprocess.run([os.path.join(HERE, "sweep"), *args], capture_output=True, text=True, timeout=30)

    def test_refusals_name_the_cause(self):
        for args, says in ((["--depths", "0,2"], "--depths wants numbers 1-1024"),
                           (["--queues", "x"], "--queues wants numbers"),
                           (["--format", "xml"], "--format must be text, csv or json"),
                           (["--clock", "virtual"], "--clock must be icount or host"),
                           (["--ios", "-3"], "--ios wants a number"),
                           (["--bogus"], "unknown argument '--bogus'"),
                           (["--out"], "--out wants a value")):
            p = self.run_sweep(*args, "--no-run")
            self.assertEqual(p.returncode, 1, args)
            self.assertEqual(p.stdout, "")
            lines = p.stderr.strip().splitlines()
            self.assertEqual(len(lines), 1, p.stderr)
            self.assertTrue(lines[0].startswith("sweep: FAILED at ") and says in lines[0], lines[0])

    def test_no_run_renders_what_is_there(self):
        with tempfile.TemporaryDirectory() as d:
            pd = os.path.join(d, sweep.boot_name(1, 2), "d4")
            os.makedirs(pd)
            Files.fixture(None, pd)
            p = self.run_sweep("--no-run", "--out", d, "--depths", "4", "--queues", "1", "--format", "csv",
                               "--html", os.path.join(d, "s.html"))
            self.assertEqual(p.returncode, 0, p.stderr)
            rows = list(csv.DictReader(io.StringIO(p.stdout)))
            self.assertEqual((rows[0]["outstanding"], rows[0]["iops"]), ("8", "1234.5"))
            with open(os.path.join(d, "s.html")) as f:
                self.assertEqual(len(re.findall("<svg", f.read())), 2 + len(sweep.STAGES))
            p = self.run_sweep("--no-run", "--out", d, "--depths", "4,8", "--queues", "1")
            self.assertEqual(p.returncode, 1)
            self.assertIn("sweep: FAILED at q1-j2-d8: fio.json", p.stderr)


class Boots(unittest.TestCase):
    """sweep() with a stand-in for tests/lab/run: one run per queue count, a --fio per depth, the
    points renamed to dD, --resume skipping what is there, a failed run named"""
    FAKE = """#!/bin/sh
echo "$*" >> "$CALLS"
out=; q=; n=0; prev=
for a in "$@"; do
  [ "$prev" = --out ] && out=$a; [ "$prev" = --queues ] && q=$a; [ "$prev" = --fio ] && n=$((n + 1)); prev=$a
done
[ "$q" = 9 ] && { echo "lab: FAILED at both:fio: fio exited with 1" >&2; exit 1; }
fios=; for a in "$@"; do case $a in rw=*) fios="${fios:+$fios|}$a" ;; esac; done
echo "lab: topology=one target=6.12 initiator=6.12 fio='$fios' queues=$q accel=tcg clock=icount" >&2
i=1; while [ $i -le $n ]; do
  d=$out; [ $n -gt 1 ] && d=$out/fio$i; mkdir -p $d; cp "$FIXTURE"/*.json $d/; i=$((i + 1))
done
echo "lab: ok in 1s -> $out" >&2
"""

    def test_one_boot_per_queue_count(self):
        with tempfile.TemporaryDirectory() as t:
            here = os.path.join(t, "lab")
            os.makedirs(os.path.join(t, "fixture"))
            os.makedirs(here)
            with open(os.path.join(here, "run"), "w") as f:
                f.write(self.FAKE)
            os.chmod(os.path.join(here, "run"), 0o755)
            Files.fixture(None, os.path.join(t, "fixture"))
            os.environ["CALLS"], os.environ["FIXTURE"] = os.path.join(t, "calls"), os.path.join(t, "fixture")
            old, sweep.HERE = sweep.HERE, here
            try:
                out = os.path.join(t, "out")
                pts = sweep.sweep([1, 8], [1, 2], 2, 100, out=out, log=io.StringIO())
                with open(os.environ["CALLS"]) as f:
                    calls = f.read().splitlines()
                self.assertEqual(len(calls), 2)
                self.assertIn("--queues 1 --fio rw=randread bs=4k iodepth=1 numjobs=2", calls[0])
                self.assertIn("--fio rw=randread bs=4k iodepth=8 numjobs=2 runtime=1 number_ios=100", calls[0])
                self.assertTrue(calls[1].endswith(f"--out {out}/q2-j2"), calls[1])
                self.assertEqual([(p["queues"], p["outstanding"]) for p in pts], [(1, 2), (1, 16), (2, 2), (2, 16)])
                self.assertTrue(os.path.isfile(os.path.join(out, "q2-j2", "d8", "report.json")))
                self.assertFalse(os.path.exists(os.path.join(out, "q2-j2", "fio1")))
                sweep.sweep([1, 8], [1, 2], 2, 100, out=out, resume=True, log=io.StringIO())
                with open(os.environ["CALLS"]) as f:
                    self.assertEqual(len(f.read().splitlines()), 2)     # nothing ran again
                sweep.sweep([1, 8], [1, 2], 2, 200, out=out, resume=True, log=io.StringIO())
                with open(os.environ["CALLS"]) as f:
                    self.assertEqual(len(f.read().splitlines()), 4)     # other fio words: both again
                pts = sweep.sweep([4], [3], 1, 100, out=out, log=io.StringIO())   # one depth: no fio1
                self.assertEqual(pts[0]["outstanding"], 4)
                self.assertRaisesRegex(sweep.SweepError, "^q9-j2: both:fio: fio exited with 1$", sweep.sweep,
                                       [1], [9], 2, 100, out=out, log=io.StringIO())
            finally:
                sweep.HERE = old


class Checks(unittest.TestCase):
    """the sweep's lab checks on fixture points: each passes on numbers that meet it and fails on
    numbers that do not"""
    def test_grows_steady_fewer_queues(self):
        c = sweep.CHECKS
        c["stage_grows"](POINTS, "", queues=1, stage="end_to_end", factor=9.9)        # 10 -> 100
        self.assertRaises(AssertionError, c["stage_grows"], POINTS, "", queues=1, stage="end_to_end", factor=10.1)
        self.assertRaises(AssertionError, c["stage_steady"], POINTS, "", queues=2, stage="end_to_end", tol=0.1)
        c["stage_steady"](POINTS, "", queues=2, stage="end_to_end", tol=18)            # 11 -> 200
        c["fewer_queues_wait"]([point(1, 8, 1, 100), point(2, 8, 1, 10)], "", stage="end_to_end", factor=10)
        self.assertRaises(AssertionError, c["fewer_queues_wait"], POINTS, "", stage="end_to_end", factor=1)
        self.assertRaisesRegex(AssertionError, "no target_subsystem", c["stage_grows"], POINTS, "", queues=2,
                               stage="target_subsystem", factor=1)

    def test_depth_grows(self):
        """depth_grows reads each point's queues from ntbpf report --group-by queue (a fake ntbpf here:
        the depths its JSON gives, weighted by the I/Os; the target's queues and '-' left out)"""
        c = sweep.CHECKS
        with tempfile.TemporaryDirectory() as t:
            fake = os.path.join(t, "ntbpf")
            with open(fake, "w") as f:
                f.write("#!/usr/bin/env python3\nimport json, os, sys\n"
                        "d = os.path.dirname(sys.argv[-1])\n"
                        "print(open(os.path.join(d, 'groups.json')).read())\n")
            os.chmod(fake, 0o700)

            def pt(depth, name, groups):
                p = dict(point(1, depth, 5, 1), dir=os.path.join(t, name))
                os.makedirs(p["dir"])
                with open(os.path.join(p["dir"], "groups.json"), "w") as f:
                    json.dump({"groups": groups}, f)
                return p

            def q(name, mean, count, status="ok"):
                return {"queue": name, "depth_mean": mean, "count": count, "status": status}

            lo = pt(1, "lo", [q("nvme0q1", 1.0, 100), q("nvme0q2", 2.0, 100), q("cntlid1q1", 9.0, 100), q("-", 9.0, 5)])
            hi = pt(8, "hi", [q("nvme0q1", 3.0, 300), q("nvme0q2", 7.0, 100), q("nvme0q3", 50.0, 9, "few")])
            old = sweep.NTBPF
            sweep.NTBPF = fake
            try:
                self.assertIn("depth mean 1.50 -> 4.00", c["depth_grows"]([lo, hi], "", queues=1, factor=2.6))
                self.assertRaisesRegex(AssertionError, r"1.50 -> 4.00 .*want x2.7", c["depth_grows"], [lo, hi], "",
                                       queues=1, factor=2.7)
                none = pt(1, "none", [q("cntlid1q1", 1.0, 100)])
                self.assertRaisesRegex(AssertionError, "no initiator queue", c["depth_grows"], [none, hi], "",
                                       queues=1, factor=1)
                sweep.NTBPF = os.path.join(t, "missing")
                self.assertRaises(OSError, c["depth_grows"], [lo, hi], "", queues=1, factor=1)
            finally:
                sweep.NTBPF = old

    def test_points_complete_and_table(self):
        c = sweep.CHECKS
        full = [dict(p, matched=4000, lost=0) for p in POINTS]
        c["points_complete"](full, "", depths=[1, 8], queues=[1, 2])
        self.assertRaisesRegex(AssertionError, "points", c["points_complete"], full, "", depths=[1, 4, 8], queues=[1, 2])
        self.assertRaisesRegex(AssertionError, "matched 3990", c["points_complete"], POINTS, "", depths=[1, 8],
                               queues=[1, 2], min_matched=1.0)
        self.assertRaisesRegex(AssertionError, "IOPS 0", c["points_complete"], [dict(full[0], iops=0)] + full[1:], "",
                               depths=[1, 8], queues=[1, 2])
        c["table_complete"](full[:3], "")
        self.assertRaisesRegex(AssertionError, "target_subsystem: cells", c["table_complete"], POINTS, "")


class Stages(unittest.TestCase):
    def test_the_ten_as_docs_stages_md_lists_them(self):
        with open(os.path.join(TOP, "docs", "stages.md")) as f:
            doc = f.read()
        table = doc.split("<!-- stages-table: begin -->")[1].split("<!-- stages-table: end -->")[0]
        rows = [l.split("|")[1].strip() for l in table.splitlines() if l.startswith("| ") and "---" not in l][1:]
        ten = [r for r in rows if r not in ("blk_device", "remote", "target_residence", "end_to_end")]
        self.assertEqual(sweep.STAGES, ten)
        self.assertIn(sweep.E2E, rows)


if __name__ == "__main__":
    unittest.main(verbosity=1)
