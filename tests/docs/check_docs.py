#!/usr/bin/env python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""The documents agree with the binary and with each other (make check).

What the user reads in three places says the same thing:
  - every option of `ntbpf CMD --help` has an OPTIONS entry in man/ntbpf.8.in under CMD's
    subsection, and the page documents no option the command lacks;
  - the bytes a record takes (uncoded and with -z) are the same figure in `record --help`, the
    README, the man page and docs/cost.md, and that figure is the one docs/record-format.md's
    packed layout gives (initiator and target records) and the benchmark measured (-z);
  - every stage `report --help` lists is in the README's legend and the man page's STAGES, and
    no other; the legend's host and events are docs/stages.md's;
  - the README's cost table is docs/cost.md's (each ratio and instruction count is there);
  - the man pages render without groff warnings, and each generated ntbpf-CMD(8) has its
    EXAMPLES as a section (not swallowed into the last option's paragraph);
  - the README stays short (issue 32: ~250 lines);
  - every file path docs/architecture.md names exists.

usage: tests/docs/check_docs.py [path/to/ntbpf]   (default .output/ntbpf; run from the top)
"""
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

NTBPF = ".output/ntbpf"
CMDS = ("record", "report", "script", "live", "probe")
COMMON = {"--help", "--usage", "--version", "-?", "-V", "-h"}


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def helptext(cmd):
    r = subprocess.run([NTBPF, cmd, "--help"], capture_output=True, text=True)
    if r.returncode:
        raise AssertionError(f"{NTBPF} {cmd} --help: exit {r.returncode}: {r.stderr.strip()}")
    return r.stdout


def help_options(cmd):
    """The options of argp's table: '-d, --device=DEV', '--kprobe', ...: short and long names."""
    opts = set()
    for line in helptext(cmd).split("\n"):
        m = re.match(r"^ {2,6}(-\S.*?)(?: {2,}|$)", line)
        if not m:
            continue
        for o in re.findall(r"(?<![\w-])(--?[a-zA-Z?][\w-]*)", m.group(1)):
            opts.add(o)
    return opts


def unescape(s):
    return s.replace("\\-", "-").replace("\\(->", "->")


def man_sections(text):
    """{".SH name": [lines]} and, under OPTIONS, {".SS title": [lines]}."""
    sh, ss, cur_sh, cur_ss = {}, {}, None, None
    for line in text.split("\n"):
        if line.startswith(".SH "):
            cur_sh, cur_ss = unescape(line[4:].strip('" ')), None
            sh[cur_sh] = []
            continue
        if line.startswith(".SS ") and cur_sh == "OPTIONS":
            cur_ss = unescape(line[4:].strip().strip('"'))
            ss[cur_ss] = []
            continue
        if cur_sh:
            sh[cur_sh].append(line)
        if cur_ss:
            ss[cur_ss].append(line)
    return sh, ss


def tp_tags(lines):
    """the tag line of every .TP entry, unescaped"""
    return [unescape(lines[i + 1]) for i, l in enumerate(lines[:-1]) if l.strip() == ".TP"]


def tag_options(tag):
    # the tag's words: ".BR -o \", \" --output =\\fIFILE\\fR" -> -o, --output
    tag = re.sub(r"\\f[BIRP]", "", tag)
    return set(re.findall(r"(?<![\w-])(--?[a-zA-Z?][\w-]*)", tag.split(" ", 1)[1] if " " in tag else tag))


class Docs(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.readme = read("README.md")
        cls.man = read("man/ntbpf.8.in")
        cls.sh, cls.ss = man_sections(cls.man)
        cls.cost = read("docs/cost.md")

    # ---- options ----
    def test_every_option_has_a_man_entry(self):
        common = set()
        for tag in tp_tags(self.ss.get("All commands", [])):
            common |= tag_options(tag)
        self.assertTrue(COMMON - {"-h"} <= common, f"'All commands' lacks {COMMON - common}")
        for cmd in CMDS:
            with self.subTest(cmd=cmd):
                titles = [t for t in self.ss if t.startswith(f"ntbpf {cmd} ")]
                self.assertEqual(len(titles), 1, f"man/ntbpf.8.in: one OPTIONS subsection 'ntbpf {cmd} ...'")
                man = set()
                for tag in tp_tags(self.ss[titles[0]]):
                    man |= tag_options(tag)
                want = help_options(cmd) - COMMON
                self.assertGreater(len(want), 0)
                self.assertEqual(sorted(want - man), [], f"ntbpf {cmd} --help options without a man entry")
                self.assertEqual(sorted(man - want), [], f"man entries for options ntbpf {cmd} lacks")

    # ---- figures ----
    def record_figures(self):
        h = " ".join(helptext("record").split())
        m = re.search(r"~(\d+) bytes each: .*?-z codes .*?~(\d+) bytes each", h)
        self.assertIsNotNone(m, "record --help: '~N bytes each' ... '-z ... ~M bytes each'")
        return int(m.group(1)), int(m.group(2))

    def test_bytes_per_record_agree(self):
        raw, z = self.record_figures()
        flat = lambda s: " ".join(s.split())
        readme, cost = flat(self.readme), flat(self.cost)
        m = re.search(r"~(\d+) bytes a record as recorded, ~(\d+) with `record -z`", readme)
        self.assertIsNotNone(m, "README: '~N bytes a record as recorded, ~M with `record -z`'")
        self.assertEqual((int(m.group(1)), int(m.group(2))), (raw, z), "README against record --help")
        m = re.search(r"\*\*~(\d+) bytes a record\*\*.*?\*\*~(\d+) bytes a record\*\*", cost)
        self.assertIsNotNone(m, "docs/cost.md: '**~N bytes a record**' ... '**~M bytes a record**'")
        self.assertEqual((int(m.group(1)), int(m.group(2))), (raw, z), "docs/cost.md against record --help")
        rec = " ".join(unescape(l) for l in self.ss[[t for t in self.ss if t.startswith("ntbpf record ")][0]])
        rec = flat(re.sub(r"\\f[BIRP]", "", rec))
        self.assertIn(f"~{raw} bytes a record, packed", rec, "man ntbpf(8), record")
        self.assertIn(f"~{z} bytes a record", rec.split("--compress", 1)[1], "man ntbpf(8), record -z")

    def test_bytes_per_record_true(self):
        """the uncoded figure is what docs/record-format.md's packed layout gives, -z's what the bench measured"""
        raw, z = self.record_figures()
        fmt = " ".join(read("docs/record-format.md").split())
        fixed = int(re.search(r"`u32 fixed`: (\d+), the bytes every packed record has", fmt).group(1))
        m = re.search(r"an initiator's 4k read: (\d+) of the 16 slots, (\d+) bytes; a target's: (\d+), (\d+) bytes", fmt)
        self.assertIsNotNone(m, "docs/record-format.md: the packed sizes of an initiator's and a target's record")
        ki, bi, kt, bt = map(int, m.groups())
        self.assertEqual((fixed + 4 * ki, fixed + 4 * kt), (bi, bt), "docs/record-format.md: 44 + 4 per event slot")
        self.assertLessEqual(abs(raw - (bi + bt) / 2), 2, f"~{raw} bytes against {bi} and {bt}")
        m = re.search(r"\| bytes per I/O on disk \| ([\d.]+) / ([\d.]+) \(synthetic", self.cost)
        self.assertIsNotNone(m, "docs/cost.md: the benchmark's bytes per I/O on disk")
        self.assertLessEqual(abs(z - (float(m.group(1)) + float(m.group(2))) / 2), 1, f"-z ~{z} bytes against the bench")

    def test_readme_cost_table_is_docs_cost(self):
        sec = self.readme.split("## What it costs", 1)[1].split("\n## ", 1)[0]
        rows = [l for l in sec.split("\n") if l.startswith("| `")]
        self.assertGreaterEqual(len(rows), 4)
        for row in rows:
            cells = [c.strip() for c in row.strip("|").split("|")]
            with self.subTest(row=cells[0]):
                self.assertIn(cells[1], self.cost, "the ratio in docs/cost.md")
                self.assertIn(cells[2].split(" (")[0], self.cost, "the instructions in docs/cost.md")

    # ---- stages ----
    def test_stages_agree(self):
        h = helptext("report")
        stages = h.split("STAGES (docs/stages.md):", 1)[1].split()
        self.assertIn("end_to_end", stages)
        legend = re.findall(r"^\| `([a-z_0-9]+)` \| (initiator|target|both) \| `([a-z_]+)` [→−] `([a-z_]+)` \|",
                            self.readme, re.M)
        self.assertEqual(sorted(r[0] for r in legend), sorted(stages), "README's stage legend against report --help")
        # host and events as docs/stages.md's table has them (tests/unit/test_stages.c holds that to the code)
        table = read("docs/stages.md").split("<!-- stages-table: begin -->")[1].split("<!-- stages-table: end -->")[0]
        defs = {}
        for row in table.strip().split("\n")[2:]:
            c = [x.strip() for x in row.strip("|").split("|")]
            defs[c[0]] = (c[1], c[2], c[3])
        for name, host, frm, to in legend:
            with self.subTest(stage=name):
                self.assertEqual((host, frm, to), defs[name], "README's legend against docs/stages.md")
        lines = self.sh["STAGES"]
        man = [re.sub(r"^\.B ", "", unescape(t)).strip() for t in tp_tags(lines)]
        self.assertEqual(sorted(man), sorted(stages), "man ntbpf(8) STAGES against report --help")

    def test_readme_short(self):
        self.assertLessEqual(self.readme.count("\n"), 250)

    # ---- the pages render ----
    @unittest.skipUnless(shutil.which("man"), "man (man-db) not installed")
    def test_man_pages_render(self):
        with tempfile.TemporaryDirectory() as d:
            pages = [os.path.join(d, "ntbpf.8")]
            with open(pages[0], "w") as f:
                f.write(self.man.replace("@VERSION@", "test"))
            for cmd in CMDS:
                p = os.path.join(d, f"ntbpf-{cmd}.8")
                r = subprocess.run(["scripts/man-from-help", NTBPF, cmd, "test", "summary"],
                                   capture_output=True, text=True)
                self.assertEqual(r.returncode, 0, r.stderr)
                with open(p, "w") as f:
                    f.write(r.stdout)
                sh, _ = man_sections(r.stdout)
                with self.subTest(page=f"ntbpf-{cmd}.8"):
                    self.assertIn("EXAMPLES", sh, "EXAMPLES is a section")
                    self.assertFalse(any("EXAMPLES" in l for l in sh["OPTIONS"]), "EXAMPLES inside OPTIONS")
                pages.append(p)
            for p in pages:
                r = subprocess.run(["man", "--warnings", "-l", p], capture_output=True, text=True,
                                   env=dict(os.environ, MANPAGER="cat", PAGER="cat", MANWIDTH="100"))
                with self.subTest(page=os.path.basename(p)):
                    self.assertEqual(r.returncode, 0)
                    self.assertEqual(r.stderr.strip(), "", "groff warnings")

    # ---- docs/architecture.md ----
    def test_architecture_paths_exist(self):
        text = read("docs/architecture.md")
        paths = set(re.findall(r"(?<![\w./-])((?:src|bpf|include|tests|docs|scripts|bench|man|contrib|vmlinux)"
                               r"/[\w.*/-]*[\w*])", text))
        paths |= set(re.findall(r"(?<![\w./-])(Makefile|README\.md)(?![\w.])", text))
        self.assertGreater(len(paths), 10, "docs/architecture.md names files")
        missing = sorted(p for p in paths if not glob.glob(p))
        self.assertEqual(missing, [], "docs/architecture.md names files that do not exist")


if __name__ == "__main__":
    if len(sys.argv) > 1:
        NTBPF = sys.argv.pop(1)
    unittest.main(verbosity=1)
