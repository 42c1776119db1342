#!/usr/bin/env python3
"""tests/lab/test_scenarios.py (make check, no guest): every scenario of tests/lab/scenarios.py
(SCENARIOS and EXTRA) names checks that tests/lab/check.py has (CHECKS), with parameters each
check takes, so that a typo fails here and not 40 minutes into `make test`; names are unique."""
import inspect, os, sys, unittest

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, here)
import check  # noqa: E402
import scenarios  # noqa: E402


class Scenarios(unittest.TestCase):
    def all(self):
        return list(scenarios.SCENARIOS) + list(getattr(scenarios, "EXTRA", []))

    def test_names_unique(self):
        names = [s["name"] for s in self.all()]
        self.assertEqual(len(names), len(set(names)), [n for n in names if names.count(n) > 1])

    def test_checks_exist_with_their_parameters(self):
        for s in self.all():
            checks = list(s["checks"])
            # in_run's checks (one fio run of several) are checks too
            checks += [c for name, params in s["checks"] if name == "in_run" for c in params.get("checks", ())]
            for name, params in checks:
                with self.subTest(scenario=s["name"], check=name):
                    self.assertIn(name, check.CHECKS, f"{s['name']}: no check {name} in check.py's CHECKS")
                    sig = inspect.signature(check.CHECKS[name])
                    args = [a for a in list(sig.parameters)[1:]   # the first is the run's directory
                            if sig.parameters[a].kind not in (inspect.Parameter.VAR_KEYWORD,
                                                              inspect.Parameter.VAR_POSITIONAL)]
                    anykw = any(v.kind == inspect.Parameter.VAR_KEYWORD for v in sig.parameters.values())
                    for p in params if not anykw else ():
                        self.assertIn(p, args, f"{s['name']}: {name} takes no parameter {p} ({args})")
                    missing = [a for a in args if sig.parameters[a].default is inspect.Parameter.empty
                               and a not in params]
                    self.assertFalse(missing, f"{s['name']}: {name} needs {missing}")


class TraceArgs(unittest.TestCase):
    """tests/lab/run --trace-events / --trace-buffer: what the runner refuses (no guest starts)"""
    def test_refusals(self):
        import subprocess
        for args, says in scenarios.REFUSALS:
            if not any(a.startswith("--trace-") for a in args):
                continue
            with self.subTest(args=args):
                p = subprocess.run([os.path.join(here, "run"), *args], capture_output=True, text=True, timeout=60)
                line = (p.stderr.strip().splitlines() or [""])[-1]
                self.assertEqual(p.returncode, 1, line)
                self.assertTrue(line.startswith("lab: FAILED at args: ") and says in line, line)

    def test_help_documents_it(self):
        text = open(os.path.join(here, "run")).read()
        self.assertIn("--trace-events", text.split("# Exit 0")[0])
        self.assertIn("--trace-buffer", text.split("# Exit 0")[0])


if __name__ == "__main__":
    unittest.main(verbosity=1)
