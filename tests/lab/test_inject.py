#!/usr/bin/env python3
"""tests/lab/test_inject.py (make check, no guest): the known-answer sites agree everywhere.

docs/stages.md's inject-table, tests/lab/inject/inject.c's SITES and tests/lab/scenarios.py's
KA_PHASES name the same sites, stages, functions and filters; every one of the ten stages
(docs/stages.md's stages-table) has a site; every kernel a row marks "yes" has a known-answer
scenario in SCENARIOS that delays every one of its sites; a stage the table calls "not measured"
on a kernel is one docs/stages.md lists as absent there.
"""
import os, re, sys, unittest

here = os.path.dirname(os.path.abspath(__file__))
top = os.path.dirname(os.path.dirname(here))
sys.path.insert(0, here)
import scenarios  # noqa: E402

KERNELS = ["6.1", "6.12", "7.2", "5.10"]
TEN = ["blk_submission", "nvme_tcp_submission", "nstack_submission", "nvmet_tcp_submission",
       "target_subsystem", "nvmet_tcp_completion", "network_transmission", "nstack_completion",
       "nvme_tcp_completion", "blk_completion"]


def md_table(name):
    with open(os.path.join(top, "docs", "stages.md")) as f:
        text = f.read()
    m = re.search(rf"<!-- {name}: begin -->\n(.*?)<!-- {name}: end -->", text, re.S)
    assert m, f"no {name} in docs/stages.md"
    rows = [[c.strip() for c in l.strip().strip("|").split("|")] for l in m.group(1).strip().splitlines()]
    head, rows = rows[0], rows[2:]
    return [dict(zip(head, r)) for r in rows]


def c_sites():
    with open(os.path.join(here, "inject", "inject.c")) as f:
        text = f.read()
    body = text[text.index("static const struct site SITES"):text.index("};", text.index("static const struct site SITES"))]
    out = []
    for m in re.finditer(r"\[INJ_\w+\] = \{(.*?)\}(?:,\n|\n)", body, re.S):
        fields = dict(re.findall(r"\.(\w+) = \"((?:[^\"\\]|\\.)*)\"", m.group(1)))
        out.append(fields)
    return out


class InjectTable(unittest.TestCase):
    def setUp(self):
        self.doc = md_table("inject-table")
        self.code = c_sites()

    def test_code_and_doc_agree(self):
        doc = {r["site"]: r for r in self.doc if r["site"] != "netem"}
        self.assertEqual(sorted(doc), sorted(s["name"] for s in self.code))
        for s in self.code:
            r = doc[s["name"]]
            for col, key in (("stage", "stage"), ("function", "func"), ("at", "at"), ("when", "when")):
                self.assertEqual(r[col], s[key].replace("\\'", "'"), f"{s['name']}: {col}")

    def test_every_stage_has_a_site_on_every_kernel(self):
        stages = [r["stage"] for r in md_table("stages-table")]
        for st in TEN:
            self.assertIn(st, stages)
            rows = [r for r in self.doc if r["stage"] == st]
            self.assertTrue(rows, f"{st}: no known-answer site")
            for k in KERNELS:
                self.assertTrue(all(r[k] in ("yes", "extra", "no", "not measured") for r in rows), f"{st} on {k}")
                self.assertTrue(all(r[k] != "" for r in rows))
        for k in ("6.1", "6.12", "7.2"):
            for r in self.doc:
                self.assertIn(r[k], ("yes", "extra"), f"{r['site']} on {k}: every stage needs its known answer")

    def test_extra_means_an_extra_scenario(self):
        """"extra": the kernel's known answers are in scenarios.py EXTRA (tests/lab/test --extra),
        not in make test; every site of it there"""
        extra = [s for s in scenarios.EXTRA if "-known-answers" in s["name"]]
        for k in KERNELS:
            if any(r[k] == "extra" for r in self.doc):
                mine = [s for s in extra if s["args"][s["args"].index("--kernel") + 1] == k]
                self.assertTrue(mine, f"kernel {k}: the table says extra, no scenario in EXTRA")
                self.assertFalse([s for s in scenarios.SCENARIOS if "-known-answers" in s["name"]
                                  and s["args"][s["args"].index("--kernel") + 1] == k],
                                 f"kernel {k}: in make test, so 'yes'")
                for s in mine:
                    (name, params), = [c for c in s["checks"] if c[0] == "known_answers"]
                    self.assertEqual([p[0] for p in params["phases"]], [p[0] for p in scenarios.KA_PHASES])

    def test_yes_means_a_scenario(self):
        ka = [s for s in scenarios.SCENARIOS if "-known-answers" in s["name"]]
        planned = {site for site, *_ in scenarios.KA_PHASES}
        self.assertEqual(planned, {s["name"] for s in self.code}, "KA_PHASES delays every site once")
        for k in KERNELS:
            if any(r[k] == "yes" for r in self.doc):
                names = [s["name"] for s in ka if s["args"][s["args"].index("--kernel") + 1] == k]
                self.assertTrue(names, f"kernel {k}: the table says yes, no one-{k}-icount-known-answers scenario")
                with_netem = []
                for s in ka:
                    if s["args"][s["args"].index("--kernel") + 1] != k:
                        continue
                    (name, params), = [c for c in s["checks"] if c[0] == "known_answers"]
                    # every site the table marks yes on this kernel, in KA_PHASES's order (all of
                    # them where every row is yes: 6.1, 6.12, 7.2), and netem where its row is yes
                    # (in one scenario of the kernel at least: 7.2's generic one has none)
                    yes = {r["site"] for r in self.doc if r[k] == "yes"}
                    self.assertEqual([p[0] for p in params["phases"]],
                                     [p[0] for p in scenarios.KA_PHASES if p[0] in yes], s["name"])
                    if params.get("netem"):
                        with_netem.append(s["name"])
                    if "stages" in params:  # a kernel that measures only these: exactly its yes rows' stages
                        self.assertEqual(set(params["stages"]),
                                         {r["stage"] for r in self.doc if r[k] == "yes"}, s["name"])
                if any(r[k] == "yes" and r["site"] == "netem" for r in self.doc):
                    self.assertTrue(with_netem, f"kernel {k}: no known-answer scenario with netem")

    def test_phase_stage_matches_site(self):
        by = {s["name"]: s["stage"] for s in self.code}
        for site, stage, us, ops in scenarios.KA_PHASES:
            self.assertEqual(by[site], stage, site)
            self.assertNotEqual(us, round(us), f"{site}: not a round number")
        delays = [us for *_, us, _ in scenarios.KA_PHASES]
        self.assertEqual(len(set(delays)), len(delays), "every site its own delay")


if __name__ == "__main__":
    unittest.main(verbosity=1)
