#!/usr/bin/env python3
"""Assertions on one lab result directory (report.json, report-initiator.json, fio.json).

    tests/lab/check.py DIR CHECK[:JSON-PARAMS]...       e.g. check.py out initiator_count_equals_fio
    tests/lab/check.py --scenario NAME DIR              the checks scenarios.py lists for NAME

Each check returns (ok, message); a check whose params carry "pending" is reported as SKIP.
"""
import json, os, re, sys

DEV_PREFIX = "nvme"   # nvme0n1 (nvme1n1 with a second subsystem), and path devices nvme0c0n1


def load(d, name):
    p = os.path.join(d, name)
    if not os.path.exists(p):
        raise AssertionError(f"{name} missing")
    with open(p) as f:
        return json.load(f)


def fio_job_ios(j):
    """every I/O one fio job completed, its fsyncs (flushes) included"""
    return sum(j[op]["total_ios"] for op in ("read", "write", "trim", "sync") if op in j)


def fio_total_ios(fio):
    """every I/O fio completed, its fsyncs (flushes) included"""
    return sum(fio_job_ios(j) for j in fio["jobs"])


def fio_clat_us(fio, pct):
    """fio's clat percentile (us) over all jobs/ops that did I/O (QD1 scenarios: one job)."""
    key = f"{float(pct):.6f}"
    vals = [j[op]["clat_ns"]["percentile"][key] / 1000.0 for j in fio["jobs"]
            for op in ("read", "write") if j[op]["total_ios"] > 0]
    if not vals:
        raise AssertionError("fio did no I/O")
    return max(vals)


def dev_groups(rep, op=None):
    return [g for g in rep.get("groups", []) if str(g.get("device", "")).startswith(DEV_PREFIX)
            and (op is None or g.get("op") == op)]


def stage_pct(rep, stage, pct, op=None):
    """count-weighted mean of a stage percentile over the device's groups (QD1: one group), or
    over the groups of one op (read, write)."""
    gs = [g for g in dev_groups(rep, op) if stage in g.get("stages", {})]
    if not gs:
        raise AssertionError(f"no '{stage}' stage for {DEV_PREFIX}*{' ' + op if op else ''} in the report")
    key = "avg_us" if pct == "avg" else f"p{pct}_us"
    n = sum(g["count"] for g in gs)
    return sum(g["stages"][stage][key] * g["count"] for g in gs) / max(n, 1)


# ---- the checks: f(dir, **params) -> message; raise AssertionError to fail ------------------
def fio_ok(d):
    fio = load(d, "fio.json")
    errs = [j.get("error", 0) for j in fio["jobs"]]
    assert not any(errs), f"fio job errors {errs}"
    n = fio_total_ios(fio)
    assert n > 0, "fio did no I/O"
    return f"fio {n} I/Os"


def initiator_count_equals_fio(d, slack=0):
    fio_n = fio_total_ios(load(d, "fio.json"))
    rep = load(d, "report-initiator.json")
    n = sum(g["count"] for g in dev_groups(rep))
    assert abs(n - fio_n) <= slack, f"initiator records {n} != fio total_ios {fio_n} (slack {slack})"
    return f"initiator {n} == fio {fio_n}"


def fio_lat(fio, what):
    """fio's total latency (submit start -> completion reaped), us: 'mean' or a percentile."""
    vals = []
    for j in fio["jobs"]:
        for op in ("read", "write"):
            if j[op]["total_ios"] == 0:
                continue
            lat = j[op]["lat_ns"]
            if what == "mean":
                vals.append(lat["mean"] / 1000.0)
            else:
                pc = lat.get("percentile")
                if not pc:
                    raise AssertionError("fio.json has no lat percentiles (--lat_percentiles=1)")
                vals.append(pc[f"{float(what):.6f}"] / 1000.0)
    if not vals:
        raise AssertionError("fio did no I/O")
    return max(vals)


def end_to_end_within_fio_lat(d, stat="avg", low=0.3, high=1.0, slack_us=0):
    """At QD1 every I/O's block-layer end_to_end lies inside fio's lat of the same I/O, so
    e2e <= fio lat holds exactly for the mean and for every percentile (fio's percentile
    buckets are ~3 % wide: give percentiles high=1.05).  The gap is the syscall/wake-up
    overhead, large under TCG: low is a sanity floor."""
    rep = load(d, "report-initiator.json")
    if stat == "avg":
        e2e = stage_pct(rep, "end_to_end", "avg"); ref = fio_lat(load(d, "fio.json"), "mean")
    else:
        e2e = stage_pct(rep, "end_to_end", stat); ref = fio_lat(load(d, "fio.json"), stat)
    r = e2e / ref
    assert ref * low <= e2e <= ref * high + slack_us, \
        f"end_to_end {stat} {e2e:.0f}us vs fio lat {ref:.0f}us: ratio {r:.2f} outside [{low}, {high}]"
    return f"{stat} {e2e:.0f}us vs fio lat {ref:.0f}us (ratio {r:.2f})"


def _skipped(rep):
    """records the kernel kept ntbpf from completing: program runs it skipped (a program
    re-entered on one CPU, e.g. from an interrupt) and completions it never delivered"""
    ld = rep.get("lost_detail", {})
    return ld.get("skipped_runs", 0) + ld.get("no_completion", 0)


def no_lost_records(d, max_frac=0.005, skipped_in=None):
    """nothing lost to ntbpf's own limits (ring buffer, maps, writing); what the kernel skipped
    is counted, and rare (under TCG, with I/Os in flight on several CPUs, a run in a thousand).
    skipped_in: the only programs whose runs may be skipped (record's warning names them, and
    their counts add up to the report's skipped_runs)"""
    rep = load(d, "report.json")
    lost, ld = rep.get("lost_records", 0), rep.get("lost_detail", {})
    own = {k: ld.get(k, 0) for k in ("ring_buffer_full", "map_full", "user_space")}
    assert not any(own.values()), f"lost_records {lost}: {own}"
    n = fio_total_ios(load(d, "fio.json"))
    # record names the programs whose runs the kernel skipped (record-*.log)
    which = []
    for role in ("initiator", "target"):
        p = os.path.join(d, f"record-{role}.log")
        if os.path.exists(p):
            which += [f"{role}: {l.split('CPU): ', 1)[1].strip()}" for l in open(p, errors="replace")
                      if "program runs skipped by the kernel" in l and "CPU): " in l]
    if skipped_in is not None and ld.get("skipped_runs", 0):
        named = {}
        for w in which:
            for item in w.split(": ", 1)[1].split(", "):
                prog, cnt = item.rsplit(" ", 1)
                named[prog] = named.get(prog, 0) + int(cnt)
        assert set(named) <= set(skipped_in) and sum(named.values()) == ld["skipped_runs"], \
            f"skipped runs {ld['skipped_runs']}, record named {named}: only {skipped_in} expected"
    assert lost == _skipped(rep) and lost <= max(1, max_frac * n), \
        f"lost_records {lost} ({ld}; {'; '.join(which) or 'programs not named'}) for {n} I/Os"
    return f"{lost} lost" + (f" (skipped by the kernel: {ld}; {'; '.join(which)})" if lost else "")


def nothing_in_flight_at_start(d, max=2):
    """ntbpf record wraps fio's whole life: no completion of an I/O issued before it began"""
    n = load(d, "report-initiator.json")["not_recorded"]["in_flight_at_start"]
    assert n <= max, f"{n} completions of I/Os ntbpf did not see start (flush sequences miscounted?)"
    return f"in flight at start: {n}"


def matched_fraction(d, min=0.99):
    rep = load(d, "report-initiator.json")
    n = sum(g["count"] for g in dev_groups(rep))
    m = load(d, "report.json").get("matched", 0)
    assert n > 0 and m / n >= min, f"matched {m} of {n} initiator I/Os < {min:.0%}"
    return f"matched {m}/{n}"


def target_records(d):
    rep = load(d, "report.json")
    roles = {i.get("role") for i in rep.get("inputs", [])}
    assert "target" in roles, "no target input in the report"
    m = rep.get("matched", 0) + rep.get("unmatched", {}).get("target", 0)
    assert m > 0, "target recorded nothing"
    return f"target records {m}"


def ops_present(d, ops=()):
    have = {g["op"] for g in dev_groups(load(d, "report-initiator.json"))}
    missing = set(ops) - have
    assert not missing, f"no groups for {sorted(missing)} (have {sorted(have)})"
    return "ops " + ",".join(sorted(have))


def stage_at_least(d, stage, percentile, us):
    v = stage_pct(load(d, "report.json"), stage, percentile)
    assert v >= us, f"{stage} p{percentile} {v:.0f}us < {us}us"
    return f"{stage} p{percentile} {v:.0f}us >= {us}us"


TEN = ["blk_submission", "nvme_tcp_submission", "nstack_submission", "nvmet_tcp_submission",
       "target_subsystem", "nvmet_tcp_completion", "network_transmission", "nstack_completion",
       "nvme_tcp_completion", "blk_completion"]


def stages_sum_to_end_to_end(d, stages=None):
    """Every matched I/O's ten stages sum to its end_to_end to the ns: the report's own per-I/O
    check (full_breakdown.max_residual_ns) is 0, and every I/O has all ten but those the report
    counts as unmatched or hit by a program run the kernel skipped.  Where every stage counts
    every I/O, also the other way: the averages are over the same I/Os, so the sum of the
    averages equals end_to_end's average (to the JSON's 0.001 us rounding per term)."""
    stages = stages or TEN
    rep = load(d, "report.json")
    excused = _skipped(rep) + rep.get("unmatched", {}).get("initiator", 0)
    short = 0
    for g in dev_groups(rep):
        st, fb = g["stages"], g["full_breakdown"]
        e2e = st["end_to_end"]
        assert fb["max_residual_ns"] == 0, \
            f"group {g['op']}/{g['size']}: an I/O's ten stages miss end_to_end by {fb['max_residual_ns']} ns"
        short += e2e["count"] - fb["ios"]
        missing = [x for x in stages if x not in st or st[x]["count"] != e2e["count"]]
        if missing:
            continue
        total = sum(st[x]["avg_us"] for x in stages)
        assert abs(total - e2e["avg_us"]) <= 0.001 * (len(stages) + 1), \
            f"group {g['op']}/{g['size']}: stages sum to {total:.3f}us, end_to_end {e2e['avg_us']:.3f}us"
    assert short <= excused, f"{short} I/Os without all ten stages; unmatched + skipped by the kernel: {excused}"
    return f"{len(stages)} stages sum to end_to_end" + (f" ({short} I/Os short: skipped by the kernel)" if short else "")


def _baseline(d, baseline):
    b = os.path.join(os.path.dirname(os.path.abspath(d)), baseline)
    return load(b, "report.json")


def ping_ms(d):
    """median ICMP round trip (ms) the initiator measured to the target before fio"""
    p = os.path.join(d, "ping.txt")
    if not os.path.exists(p):
        raise AssertionError("ping.txt missing")
    rtts = sorted(float(l.split("time=")[1].split()[0]) for l in open(p) if "time=" in l)
    if len(rtts) < 10:
        raise AssertionError(f"only {len(rtts)} ping replies")
    return rtts[len(rtts) // 2]


def injected_us(d, baseline, factor):
    """the delay really injected per I/O: factor x the median ping round trip's increase over
    the baseline (a read crosses the delayed link as often as a ping does: once between two
    guests, where the delay is on the initiator's egress; twice on loopback)."""
    return factor * (ping_ms(d) - ping_ms(os.path.join(os.path.dirname(os.path.abspath(d)), baseline))) * 1000


def stage_delta(d, baseline, stage, expect_us=None, tol=0.10, pct=50, ping_factor=None, ops=(None,), tol_us=0):
    """An injected delay moves this stage's median by the injected amount (+-tol, +-tol_us)
    against the baseline scenario (same topology and kernel, no delay), run just before; with
    ops, each op's groups separately.  With ping_factor the injected amount is measured
    (injected_us), else it is expect_us."""
    what = f"{expect_us}us"
    if ping_factor is not None:
        expect_us = injected_us(d, baseline, ping_factor)
        what = f"{expect_us:.0f}us injected (ping)"
    rep, brep = load(d, "report.json"), _baseline(d, baseline)
    msgs = []
    for op in ops:
        now = stage_pct(rep, stage, pct, op)
        base = stage_pct(brep, stage, pct, op)
        delta = now - base
        lbl = f"{op + ' ' if op else ''}{stage} p{pct}"
        assert abs(delta - expect_us) <= tol * expect_us + tol_us, \
            f"{lbl} moved {delta:.1f}us ({base:.1f} -> {now:.1f}), expected {what} +-{tol:.0%}"
        msgs.append(f"{lbl} +{delta:.1f}us ({base:.1f} -> {now:.1f})")
    return ", ".join(msgs) + f" (expected {what} +-{tol:.0%})"


def others_still(d, baseline, moved, max_us=None, pct=50, ping_factor=None, frac=0.10, ops=(None,)):
    """...and moves no other stage's median by more than max_us, or frac of the injected delay
    (with ops, each op's groups separately)."""
    rep, base = load(d, "report.json"), _baseline(d, baseline)
    if ping_factor is not None:
        max_us = frac * injected_us(d, baseline, ping_factor)
    bad = []
    worst = 0.0
    for op in ops:
        for x in TEN:
            if x in moved:
                continue
            delta = stage_pct(rep, x, pct, op) - stage_pct(base, x, pct, op)
            worst = max(worst, abs(delta))
            if abs(delta) > max_us:
                bad.append(f"{op + ' ' if op else ''}{x} {delta:+.1f}us")
    assert not bad, "other stages moved more than %gus: %s" % (max_us, ", ".join(bad))
    return f"other stages within {max_us}us (largest move {worst:.1f}us)"


def _inject_spun(d):
    """tests/lab/inject: how often each site spun in this fio run (inject-*.log):
    {site: n} and, for a schedule, {(phase, site): n}"""
    spun = {}
    for f in ("inject-both.log", "inject-initiator.log", "inject-target.log"):
        try:
            with open(os.path.join(d, f)) as fh:
                for line in fh:
                    w = line.split()
                    # "ntbpf-inject: SITE spun N passed M", "ntbpf-inject: phase P SITE spun N passed M"
                    if len(w) == 6 and w[0] == "ntbpf-inject:" and w[2] == "spun":
                        spun[w[1]] = spun.get(w[1], 0) + int(w[3])
                    elif len(w) == 8 and w[:2] == ["ntbpf-inject:", "phase"] and w[4] == "spun":
                        spun[(int(w[2]), w[3])] = int(w[5])
        except OSError:
            pass
    return spun


def _tick_align(d):
    """tests/lab/inject --align-tick's counts for this fio run (inject-both.log): {ios, waited,
    unanchored, ticks, in-io, off-grid}, or None"""
    try:
        with open(os.path.join(d, "inject-both.log")) as fh:
            for line in fh:
                w = line.split()
                # "ntbpf-inject: tick-align ios N waited N unanchored N ticks N in-io N off-grid N"
                if len(w) == 14 and w[:2] == ["ntbpf-inject:", "tick-align"]:
                    return {w[i]: int(w[i + 1]) for i in range(2, 14, 2)}
    except OSError:
        pass
    return None


def tick_kept_out(d, max_frac=0.01, off_grid_frac=0.02):
    """--tick-align: the injector aligned every nvme I/O (none before it saw a tick but the
    first few), the ticks came on Debian's 4 ms boundaries (its HZ is right: with a wrong one
    most would not; 1-23 of 2100-3500 came more than 100 us late, 2026-11-29, none inside an I/O),
    and at most max_frac of the I/Os had a tick while they ran (an I/O longer than the guard)."""
    t = _tick_align(d)
    assert t is not None, "no tick-align line in inject-both.log"
    assert t["ios"] > 0, f"tick-align saw no nvme I/O: {t}"
    assert t["off-grid"] <= off_grid_frac * t["ticks"], f"{t['off-grid']} of {t['ticks']} ticks off the 4 ms boundaries"
    assert t["unanchored"] <= 2, f"{t['unanchored']} of {t['ios']} I/Os before the first tick"
    assert t["in-io"] <= max_frac * t["ios"], f"{t['in-io']} ticks inside {t['ios']} I/Os"
    return f"tick kept out: {t['in-io']} ticks in {t['ios']} I/Os ({t['waited']} waited), {t['ticks']} ticks"


def _script_rows(d):
    """every I/O of DIR's recordings as `ntbpf script --format json` prints it (completion order)"""
    import subprocess
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    exe = os.environ.get("NTBPF_BIN", os.path.join(root, ".output", "ntbpf"))
    files = [os.path.join(d, f) for f in ("initiator.ntbpf", "target.ntbpf") if os.path.exists(os.path.join(d, f))]
    r = subprocess.run([exe, "script", "--format", "json", *files], capture_output=True, text=True)
    assert r.returncode == 0, f"ntbpf script: {r.stderr.strip()[:200]}"
    return [json.loads(l) for l in r.stdout.splitlines() if l.strip()]


def _nearest_rank(vals, pct):
    assert vals, "no values (a stage missing from every I/O?)"
    v = sorted(vals)
    return v[max(1, -(-len(v) * pct // 100)) - 1]


def known_answer_rows(d, every=0, phases=(), netem=None, ops=("read", "write"), tol=0.02, tol_us=1.0, others_us=2.0,
                      crossings=None, trailing=1, netem_skip=0, stages=None, exempt=None, pairs=(), netem_settle=False):
    """The measurements behind known_answers (below) and bench/lab-calibration: one row per
    delayed (phase or netem pair) and op: stage, site, op, want (us), d50 and d90 (how far its
    p50 and p90 moved), other and other_us (the other stage that moved most), spun and n (how
    often the site waited, for how many I/Os of its ops), ok (every target met).  stages: the
    stages compared (default the ten), for a kernel where ntbpf measures only some (5.10's
    initiator); exempt [(op, stages, max_us)]: those stages of that op may move up to max_us when
    another stage is delayed, and land within max_us of their own delay (each use says why).
    pairs [(k1, k2)]: phases (1-based, as in phases) that wait at the same site, k2 longer; a
    row each compares phase k2 with phase k1 (the stage moves by the difference, the others
    stay), not with the phases delaying other stages: both phases perturb the I/O's rhythm
    alike, as netem X against Y does.  netem_settle: a run at netem x, unchecked but for
    per_run, comes before netem x's run and one at netem y before netem y's (TCP settling on a
    new delay for up to ~200 writes)."""
    crossings = crossings or {"read": 2, "write": 4}
    stages = list(TEN) if stages is None else list(stages)
    assert stages and set(stages) <= set(TEN), f"stages {stages}: not among the ten"
    assert all(ph[1] in stages for ph in phases), "a phase delays a stage not compared"
    assert not netem or "network_transmission" in stages, "netem moves network_transmission: compare it"
    ex = {}
    for op, sts, us in (exempt or ()):
        for st in sts:
            ex[(op, st)] = max(us, ex.get((op, st), 0.0))
    runs = _ka_runs(d, phases, netem, netem_settle)
    for r in runs:
        assert os.path.isdir(r), f"no {r}"
    out = []
    nph = 1 + len(phases) if phases else 0
    rows = [x for x in _script_rows(runs[1]) if str(x.get("device", "")).startswith(DEV_PREFIX)] if phases else []
    # `trailing` phases without a wait end the schedule, unchecked: the last I/Os of a run can be
    # slower (6.1: nvme_tcp_completion +3.6 us for the last ~10 reads, whatever the phase)
    assert not phases or len(rows) == every * (nph + trailing), \
        f"{len(rows)} I/Os in the schedule run, expected {nph + trailing} phases x {every}"
    # val[p][op][stage][pct]: nearest-rank percentiles over phase p's I/Os of that op
    val = [{op: {st: {} for st in stages} for op in ops} for _ in range(nph)]
    for p in range(nph):
        mine = rows[p * every:(p + 1) * every]
        for op in ops:
            for st in stages:
                v = [x[st + "_ns"] / 1000 for x in mine if x["op"] == op and x.get(st + "_ns") is not None]
                assert len(v) >= every // 5, f"phase {p}: {len(v)} {op} I/Os with {st}"
                for pct in (50, 90):
                    val[p][op][st][pct] = _nearest_rank(v, pct)
    delayed = [None] + [ph[1] for ph in phases]
    spun = _inject_spun(runs[1]) if phases else {}

    def row(stage, site, op, want, moved_by, n=None, got=None):
        """moved_by(st, pct) -> us; the row for the delayed stage and the largest other move"""
        d50, d90 = moved_by(stage, 50), moved_by(stage, 90)
        band = max(tol * want, tol_us, ex.get((op, stage), 0.0))
        moves = [(st, moved_by(st, pct)) for st in stages if st != stage for pct in (50, 90)]
        other, other_us = max(moves, key=lambda t: abs(t[1]))
        ok = abs(d50 - want) <= band and abs(d90 - want) <= band and \
            all(abs(m) <= max(others_us, ex.get((op, st), 0.0)) for st, m in moves)
        if n is not None:
            ok = ok and n <= got <= n + 10
        out.append({"stage": stage, "site": site, "op": op, "want": want, "band": band, "d50": d50, "d90": d90,
                    "other": other, "other_us": other_us, "spun": got, "n": n, "ok": ok})

    for p in range(1, nph):
        site, stage, us, sops = phases[p - 1]
        n = sum(1 for x in rows[p * every:(p + 1) * every] if x["op"] in sops)
        for op in ops:
            def moved_by(st, pct, p=p, op=op):
                ref = sorted(val[q][op][st][pct] for q in range(nph) if delayed[q] != st)
                return val[p][op][st][pct] - ref[len(ref) // 2]
            row(stage, site, op, us if op in sops else 0.0, moved_by, n, spun.get((p, site), 0))
    for k1, k2 in pairs:
        s1, st1, us1, sops = phases[k1 - 1]
        s2, st2, us2, _ = phases[k2 - 1]
        assert (s1, st1) == (s2, st2) and us2 > us1, f"pair {k1},{k2}: not one site's two delays"
        n = sum(1 for x in rows[k2 * every:(k2 + 1) * every] if x["op"] in sops)
        for op in ops:
            row(st1, f"{s1} {us1}->{us2}us", op, (us2 - us1) if op in sops else 0.0,
                lambda st, pct, op=op: val[k2][op][st][pct] - val[k1][op][st][pct], n, spun.get((k2, s2), 0))
    if netem:
        # each netem run's first netem_skip I/Os are left out: TCP takes a while to settle on a
        # new delay (6.12, 128k writes after 41.3 -> 97.1 us: the target's receive of the data
        # took 4.3 us more for the first ~95 writes, then as before; its ACKs, sent from the
        # receive in nvmet_tcp_submission, change with the round trip TCP has measured)
        x, y = netem
        pv = []
        for r in _ka_netem_pair(runs, netem_settle):
            rs = [x for x in _script_rows(r) if str(x.get("device", "")).startswith(DEV_PREFIX)][netem_skip:]
            pv.append({(op, st, pct): _nearest_rank([x[st + "_ns"] / 1000 for x in rs
                                                     if x["op"] == op and x.get(st + "_ns") is not None], pct)
                       for op in ops for st in stages for pct in (50, 90)})
        for op in ops:
            row("network_transmission", f"netem {x}->{y}us", op, crossings[op] * (y - x),
                lambda st, pct, op=op: pv[1][(op, st, pct)] - pv[0][(op, st, pct)])
    return out


def _ka_runs(d, phases, netem, settle=False):
    """the fio runs of a known-answer boot: a warm-up, the schedule (with phases), (netem x to
    settle on,) netem x, (netem y to settle on,) netem y"""
    n = 1 + (1 if phases else 0) + ((4 if settle else 2) if netem else 0)
    return [os.path.join(d, f"fio{i}") for i in range(1, n + 1)]


def _ka_netem_pair(runs, settle=False):
    """netem x's run and netem y's, each after a run at its own delay when settle"""
    return [runs[-3], runs[-1]] if settle else runs[-2:]


def known_answers(d, every=0, phases=(), netem=None, per_run=(), **kw):
    """tests/lab/inject's known answers on one boot: fio run 1 warms the target's memory-backed
    null_blk (its first write to a block allocates the page, and fio writes the same blocks in
    every run); run 2 is a schedule of phases of `every` I/Os each, switched in the kernel as the
    I/Os enter nvme-tcp: phase 0 has every site's program attached without a wait, phase k waits
    delay_us at phases[k-1] = (site, stage, delay_us, ops), and one more phase without a wait ends
    it (unchecked: a run's last I/Os can be slower).  Per phase and op, each of the ten
    stages' p50 and p90 is taken over that phase's I/Os (`ntbpf script`, in completion order:
    at QD1, I/O order); a stage's reference is its median over the phases that do not delay it.
    The delayed stage moves by the delay (+-2 %, or +-1 us where larger; 0 for an op the site
    does not see), every other stage by at most 2 us, and the site spun once per I/O of its ops
    (plus the few admin and fabrics commands the target's sites also see).  netem (x_us, y_us):
    runs 3 and 4 put a netem delay of x, then y on the wire: network_transmission moves by
    crossings x (y - x) (2 for reads, 4 for R2T writes), the others stay.  Without phases (an
    arm64 guest: no injector there) run 2 is netem x and run 3 netem y.  Every run gets the
    checks in per_run."""
    bad, said = [], []
    for r in _ka_runs(d, phases, netem, kw.get("netem_settle", False)):
        got = []
        for name, params in per_run:
            try:
                msg = CHECKS[name](r, **params)
                if name in ("initiator_count_equals_fio", "matched_fraction", "report_same_on_arm64", "tick_kept_out"):
                    got.append(msg)
            except (AssertionError, KeyError, ValueError, TypeError, ZeroDivisionError) as e:
                bad.append(f"{os.path.basename(r)} {name}: {e}")
        if got:   # each run's counts, for the log
            said.append(f"{os.path.basename(r)}: {', '.join(got)}")
    for r in known_answer_rows(d, every, phases, netem, **kw):
        what = (f"{r['site']}: {r['op']} {r['stage']} p50 {r['d50']:+.2f} p90 {r['d90']:+.2f} for "
                f"{r['want']:+.2f} +-{r['band']:.2f}, largest other {r['other']} {r['other_us']:+.2f}")
        if r["n"] is not None:
            what += f", waited {r['spun']} times for {r['n']} I/Os"
        said.append(what)
        if not r["ok"]:
            bad.append(what)
    assert not bad, "; ".join(bad)
    return " | ".join(said)


def sampled_fraction(d, n, tol=0.3):
    """--sample n keeps about 1/n of fio's I/Os."""
    fio_n = fio_total_ios(load(d, "fio.json"))
    got = sum(g["count"] for g in dev_groups(load(d, "report-initiator.json")))
    want = fio_n / n
    assert abs(got - want) <= tol * want + 3, f"{got} records for {fio_n} I/Os at --sample {n} (want ~{want:.0f})"
    return f"{got} of {fio_n} I/Os recorded (~1/{n})"


def _doc_reader():
    """read_ntbpf() of docs/record-format.md's minimal Python reader, as the document has it"""
    top = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    doc = open(os.path.join(top, "docs", "record-format.md")).read()
    code = doc.split("## A minimal reader in Python", 1)[1].split("```python", 1)[1].split("```", 1)[0]
    ns = {}
    exec(code, ns)
    return ns["read_ntbpf"]


def _header_items(path):
    import struct
    b = open(path, "rb").read()
    plen, pos, items = struct.unpack_from("<I", b, 12)[0], 16, {}
    while pos < 16 + plen:
        tag, _, ln = struct.unpack_from("<HHI", b, pos)
        items.setdefault(tag, []).append(b[pos + 8:pos + 8 + ln])
        pos += 8 + ln
    return items


def sampling_windows(d, window_ms, n, slack_ms=1):
    """record --sample n --sample-window window_ms: both files say so, and every record's creating
    event (ev[2]: the initiator's queue_rq, nvme:nvme_setup_cmd; the target's nvmet:nvmet_req_init;
    tracepoints; the BPF side creates records only inside a window's exact edges) lies in a window
    of the guest's wall clock, within slack_ms (converting the monotonic clock to the wall clock).
    A target record without req_init (since 0.4, where cmd_pickup was noted) was created at
    cmd_pickup's time, ev[1] (later by at most the header's tail arriving during the pickup)"""
    import struct
    read, bad, total = _doc_reader(), [], 0
    for role in ("initiator", "target"):
        path = os.path.join(d, f"{role}.ntbpf")
        items = _header_items(path)
        mono, real, _ = struct.unpack("<QQQ", items[8][0][:24])
        got = struct.unpack("<II", items[9][0][:8]) if len(items[9][0]) >= 8 else (None, None)
        assert got == (n, window_ms), f"{role}: header says sample/window {got}, want {(n, window_ms)}"
        period, w = n * window_ms * 1000000, window_ms * 1000000
        for r in read(path):
            total += 1
            ev = 2 if r["ev_mask"] >> 2 & 1 else 1 if role == "target" and r["ev_mask"] >> 1 & 1 else None
            if ev is None:
                bad.append(f"{role} without ev[2]" + (" or ev[1]" if role == "target" else ""))
                continue
            at = (r["t0"] + r["ev"][ev] - mono + real) % period
            if w + slack_ms * 1000000 <= at <= period - slack_ms * 1000000:
                bad.append(f"{role} {at / 1e6:.1f}ms")
    assert total and not bad, f"{len(bad)} of {total} records outside the windows: {bad[:4]}"
    return f"{total} records, all inside {window_ms} ms windows (one in {n})"


def windows_detached(d, what, min_windows=2):
    """record --sample by time: both recorders say what they detached between windows (WHAT,
    as the summary line words it) and armed at least min_windows windows; with -v, how long
    arming took (attaching what was detached)"""
    import re
    out = []
    for role in ("initiator", "target"):
        log = open(os.path.join(d, f"record-{role}.log")).read()
        m = re.search(r"ntbpf record: (\d+) sampling windows of \d+ ms \(between them ([^)]*)\)", log)
        assert m, f"record-{role}.log has no sampling windows line"
        assert m.group(2) == what, f"{role}: between windows '{m.group(2)}', want '{what}'"
        assert int(m.group(1)) >= min_windows, f"{role}: {m.group(1)} windows, want {min_windows}+"
        armed = [float(x) for x in re.findall(r"window armed at [\d.]+ s \(wall clock\) in ([\d.]+) ms", log)]
        out.append(f"{role} {m.group(1)} windows" + (f", armed in up to {max(armed):.0f} ms" if armed else ""))
    assert "did not attach again" not in open(os.path.join(d, "record-initiator.log")).read() + \
        open(os.path.join(d, "record-target.log")).read(), "a hook did not attach again at a window"
    return f"{what}: " + "; ".join(out)


def functions_attached_as(d, kinds=("kprobe", "kretprobe")):
    """every function hook that attached used one of these attach types"""
    rep = load(d, "report.json")
    used = {h["attach"] for i in rep["inputs"] for h in i["hooks"]
            if h["status"] == "attached" and "!" in h["name"]}
    assert used and used <= set(kinds), f"function hooks attached as {sorted(used)}"
    return "function hooks as " + ",".join(sorted(used))


def _live(d):
    p = os.path.join(d, "live.jsonl")
    if not os.path.exists(p):
        raise AssertionError("live.jsonl missing")
    return [json.loads(l) for l in open(p) if l.strip()]


def _secs(t):
    """seconds of the day from live's time: RFC 3339 (2026-11-24T07:20:05.123+00:00) or HH:MM:SS"""
    if "T" in t:
        t = t.split("T", 1)[1][:8]
    h, m, s_ = (int(x) for x in t.split(":"))
    return h * 3600 + m * 60 + s_


def live_sum_equals_fio(d, tol=0.03):
    """the I/Os of every interval add up to fio's total (the last, partial interval included)"""
    n = sum(g["count"] for j in _live(d) for g in j["groups"] if str(g["device"]).startswith(DEV_PREFIX))
    lost = sum(j["lost_records"] for j in _live(d))
    fio_n = fio_total_ios(load(d, "fio.json"))
    assert abs(n + lost - fio_n) <= tol * fio_n, f"intervals add up to {n} (+{lost} lost), fio did {fio_n}"
    return f"intervals {n} (+{lost} lost) vs fio {fio_n}"


def live_matched(d, min=0.99):
    lines = _live(d)
    n = sum(g["count"] for j in lines for g in j["groups"])
    m = sum(j["matched"] for j in lines)
    assert n and m / n >= min, f"matched {m} of {n} I/Os across intervals"
    down = [j["time"] for j in lines if j.get("peer") != "connected"]
    assert not down, f"peer not connected at {down}"
    return f"matched {m}/{n}, peer connected throughout"


def live_netem_step(d, delay_us, tol=0.10):
    """netem switched on partway (one delayed crossing per read): the per-second
    network_transmission medians after the switch sit higher by the delay (+-tol); no interval
    before it rises, every one after it does."""
    at = _secs(open(os.path.join(d, "netem-at.txt")).read().strip())
    injected = delay_us
    before, after = [], []
    for j in _live(d):
        gs = [g for g in j["groups"] if "network_transmission" in g["stages"]]
        if not gs:
            continue
        v = gs[0]["stages"]["network_transmission"]["p50_us"]
        t = _secs(j["time"])
        if t < at:
            before.append(v)
        elif t >= at + 2:
            after.append(v)
    assert len(before) >= 2 and len(after) >= 2, f"intervals before/after the switch: {len(before)}/{len(after)}"
    mb, ma = sorted(before)[len(before) // 2], sorted(after)[len(after) // 2]
    assert abs((ma - mb) - injected) <= tol * injected, \
        f"network_transmission rose {ma - mb:.0f}us ({mb:.0f} -> {ma:.0f}), injected {injected:.0f}us +-{tol:.0%}"
    assert max(before) < mb + injected / 2, f"an interval before the switch already rose: {max(before):.0f}us"
    assert min(after) > mb + injected / 2, f"an interval after the switch did not rise: {min(after):.0f}us"
    return f"before {mb:.0f}us x{len(before)}, after {ma:.0f}us x{len(after)}, injected {injected:.0f}us"


def live_metrics(d, peer=True):
    """ntbpf live --metrics, scraped in the guest (busybox wget) after fio, once the intervals
    that hold its I/O are out: per stage, the histogram's _count is what the JSON lines counted
    (the same interval reports feed both), ntbpf_ios_total is the lines' I/O count, and with
    --peer ntbpf_peer_up is 1 and the target's stages (network_transmission) are there."""
    p = os.path.join(d, "metrics.txt")
    assert os.path.exists(p), "metrics.txt missing (the scrape failed: see the initiator's log)"
    m = {}
    for line in open(p):
        if line.strip() and not line.startswith("#"):
            k, _, v = line.rstrip("\n").rpartition(" ")
            m[k] = float(v)
    dev = re.compile(r'device="%s[^"]*"' % DEV_PREFIX)
    lines = _live(d)
    want_ios = sum(g["count"] for j in lines for g in j["groups"] if str(g["device"]).startswith(DEV_PREFIX))
    ios = sum(v for k, v in m.items() if k.startswith("ntbpf_ios_total{") and dev.search(k))
    assert ios == want_ios and ios > 0, f"ntbpf_ios_total {ios}, the lines {want_ios}"
    stages = {}
    for j in lines:
        for g in j["groups"]:
            if str(g["device"]).startswith(DEV_PREFIX):
                for x, st in g["stages"].items():
                    stages[x] = stages.get(x, 0) + st["count"]
    for x, n in stages.items():
        got = sum(v for k, v in m.items()
                  if k.startswith('ntbpf_stage_latency_seconds_count{stage="%s",' % x) and dev.search(k))
        assert got == n, f"{x}: histogram count {got}, the lines {n}"
    up = m.get('ntbpf_peer_up{role="initiator"}')
    if peer:
        assert up == 1, f"ntbpf_peer_up {up}"
        assert stages.get("network_transmission", 0) > 0.9 * ios, \
            f"network_transmission on {stages.get('network_transmission', 0)} of {ios} I/Os"
    else:
        assert up is None, f"ntbpf_peer_up {up} without --peer"
    return f"ntbpf_ios_total {ios:.0f}, {len(stages)} stages' counts as the lines'" + (", peer up" if peer else "")


def _unstamped(d):
    """I/Os that came without a start stamp before live attached block_rq_issue (its log line), or None"""
    t = open(os.path.join(d, "live-initiator.log"), errors="replace").read()
    m = re.search(r"ntbpf live: (\d+) I/O\(s\) came without a start stamp", t)
    return int(m.group(1)) if m else None


def live_issue_deferred(d, attached=False):
    """live on NVMe namespaces only starts without block_rq_issue (its start line says so), and
    attaches it (a line naming how many I/Os came without a start stamp) only where an I/O lacks
    rq->start_time_ns: attached=True where the queues keep no I/O statistics (--no-iostats)."""
    t = open(os.path.join(d, "live-initiator.log"), errors="replace").read()
    assert "block_rq_issue only if an I/O lacks its start stamp" in t, "the start line names no deferred block_rq_issue"
    n = _unstamped(d)
    if not attached:
        assert n is None, f"block_rq_issue attached: {n} I/Os came without a start stamp"
        return "block_rq_issue deferred, never needed"
    assert n and n > 0, "no I/O came without a start stamp, or block_rq_issue was not attached"
    return f"block_rq_issue attached after {n} I/Os without a start stamp"


def hooks_deferred(d, target_attached=False):
    """record -d nvme0n1 starts without block_rq_issue (the initiator) and the target without
    nvmet_try_send_data (their start lines say so), and neither attaches it where rq->start_time_ns
    is stamped and no queue runs without SQ head updates; with target_attached (the host connected
    with disable_sqflow) the target attaches it at the connect: its line says so, the file's hook
    says attached, and only the few I/Os before it (the kernel's partition scan) lack resp_sent,
    as many as the line counts."""
    import struct
    logs = {r: open(os.path.join(d, f"record-{r}.log"), errors="replace").read() for r in ("initiator", "target")}
    assert "block_rq_issue only if an I/O lacks its start stamp" in logs["initiator"], \
        "the initiator's start line names no deferred block_rq_issue"
    assert "nvmet_try_send_data only once a queue runs without SQ head updates" in logs["target"], \
        "the target's start line names no deferred nvmet_try_send_data"
    assert "came without a start stamp" not in logs["initiator"], "block_rq_issue was attached"
    rep = load(d, "report.json")
    hooks = {i["role"]: {h["name"]: h["status"] for h in i["hooks"]} for i in rep["inputs"]}
    assert hooks["initiator"].get("block:block_rq_issue", "").startswith("deferred"), hooks["initiator"]
    send = hooks["target"].get("nvmet_tcp!nvmet_try_send_data", "")
    m = re.search(r"a queue runs without SQ head updates .*?; (\d+) I/O\(s\) of such queues before it", logs["target"])
    if not target_attached:
        assert not m and send.startswith("deferred"), f"nvmet_try_send_data: {send}; {m and m.group(0)}"
        return "block_rq_issue and nvmet_try_send_data deferred, never needed"
    assert m and send == "attached", f"nvmet_try_send_data: '{send}', log line {m and m.group(0)}"
    n = no_resp = 0
    for r in _doc_reader()(os.path.join(d, "target.ntbpf")):
        n += 1
        no_resp += not (r["ev_mask"] >> 8 & 1)    # EV_T_RESP_SENT
    # the kernel reads the partition table as the namespace appears, before user space attaches
    # the hook: those I/Os are emitted at subsys_done and counted in the line, no others
    assert n and no_resp <= int(m.group(1)) <= 8, \
        f"{no_resp} of {n} target records without resp_sent, {m.group(1)} emitted early by the line"
    return (f"nvmet_try_send_data attached at the connect; {m.group(1)} I/O(s) before it emitted at subsys_done; "
            f"{n} target records, {no_resp} without resp_sent")


def live_failed_groups(d, status="blk:10"):
    """failed I/Os with histograms in the kernel (--bad-sectors: the target's null_blk fails
    them, the target answers with an error, the initiator's block layer ends them with
    BLK_STS_IOERR, 10): in groups of their own, status blk:10, as many as fio's errors (an I/O
    the intervals counted lost may be one of them); the ok groups hold fio's other I/Os."""
    lines = _live(d)
    bad = sum(g["count"] for j in lines for g in j["groups"] if g["status"] != "ok")
    ok = sum(g["count"] for j in lines for g in j["groups"] if g["status"] == "ok")
    other = sorted({g["status"] for j in lines for g in j["groups"]} - {"ok", status})
    lost = sum(j["lost_records"] for j in lines)
    job = load(d, "fio.json")["jobs"][0]
    err = job.get("total_err")
    assert err, "fio counted no errors (continue_on_error=all and --bad-sectors wanted)"
    assert not other, f"failed groups of another status: {other}"
    assert bad and abs(bad - err) <= lost, f"{bad} I/Os in failed groups, fio counted {err} errors ({lost} lost)"
    n = fio_total_ios(load(d, "fio.json"))
    assert abs(ok + bad + lost - n) <= lost + 2, f"ok {ok} + failed {bad} + lost {lost} vs fio's {n} I/Os"
    return f"{bad} I/Os in groups of status {status} (fio: {err} errors), {ok} ok, {lost} lost, fio {n} I/Os"


def record_failed_status(d, status):
    """failed I/Os in records (--bad-sectors: the target's null_blk fails them, nvmet answers
    with STATUS, e.g. 0x6006: Internal Error, More, DNR): in groups of their own, the NVMe status the
    response carried on both hosts (the initiator reads it only for an I/O whose block layer
    error says it failed: a status lost there would show the block error, 0x000a), as many as
    fio's errors; the ok groups hold fio's other I/Os, paired"""
    rep = _report(d)
    # the target's own groups (device nsidN) hold its unpaired records: the initiator kernel's
    # reads of the namespace at connect (partition scan, sector 0: failed too), before its recorder
    groups = [g for g in rep["groups"] if not g["device"].startswith("nsid")]
    bad = {}
    for g in groups:
        if g["status"] != "ok":
            bad[g["status"]] = bad.get(g["status"], 0) + g["count"]
    ok = sum(g["count"] for g in groups if g["status"] == "ok")
    fio = load(d, "fio.json")
    err = fio["jobs"][0].get("total_err")
    assert err, "fio counted no errors (continue_on_error=all and --bad-sectors wanted)"
    assert set(bad) == {status}, f"failed groups of status {sorted(bad)}, {status} wanted"
    assert bad[status] == err, f"{bad[status]} I/Os of status {status}, fio counted {err} errors"
    n = fio_total_ios(fio)
    assert ok + bad[status] == n, f"ok {ok} + failed {bad[status]} vs fio's {n} I/Os"
    for g in groups:
        m = g["stages"].get("target_residence", {}).get("count")
        assert m == g["count"], f"group {g['op']}/{g['status']}: {m} of {g['count']} I/Os paired with the target's"
    return f"{bad[status]} I/Os of status {status} (fio: {err} errors), {ok} ok, every I/O paired"


def live_host_stages_sum(d, min_intervals=3, rel=0.01, unstamped=False):
    """an initiator alone: over the run, each of its six host stages (remote for the target's
    part) covers every I/O and their totals add up to end_to_end's.  In-kernel histograms are
    read one after the other while I/O goes on, so a single interval's stages may differ by an
    I/O or two; they reconcile over the run.  Values the kernel could not file are counted lost.
    unstamped: no I/O has a start stamp (queues without I/O statistics), so none has a
    blk_submission; the N I/Os the log names came before block_rq_issue was attached, and
    end_to_end (from blk_issue then) misses exactly those; in the intervals after (every stage
    counted as often as end_to_end: the same I/Os) the other stages' means exceed its mean by
    the step from queue_rq to blk_issue inside nvme_tcp_queue_rq (a few us under TCG's host
    clock), never less and within 5 %.  (Over the whole run the two means are of different I/Os:
    on a loaded host the first I/Os' latency differs by hundreds of us, CI 2026-11-29.)"""
    host = ["blk_submission", "nvme_tcp_submission", "remote", "nstack_completion", "nvme_tcp_completion",
            "blk_completion"]
    cnt = {x: 0 for x in host + ["end_to_end"]}
    tot = {x: 0.0 for x in host + ["end_to_end"]}
    n = lost = 0
    same = {"n": 0, "e2e": 0.0, "stages": 0.0, "ios": 0}   # intervals whose stages are of the same I/Os
    for j in _live(d):
        lost += j["lost_records"]
        for g in j["groups"]:
            n += 1
            c, t = {}, {}
            for x in cnt:
                st = g["stages"].get(x)
                c[x], t[x] = (st["count"], st["count"] * st["avg_us"]) if st else (0, 0.0)
                cnt[x] += c[x]
                tot[x] += t[x]
            if c["end_to_end"] and all(abs(c[x] - c["end_to_end"]) <= 1 for x in host if x != "blk_submission"):
                same["n"] += 1
                same["ios"] += c["end_to_end"]
                same["e2e"] += t["end_to_end"]
                same["stages"] += sum(t[x] / c[x] * c["end_to_end"] for x in host if x != "blk_submission")
    assert n >= min_intervals, f"only {n} intervals with I/O"
    e2e = cnt["end_to_end"]
    if unstamped:
        u = _unstamped(d) or 0
        assert u > 0, "the log names no I/Os without a start stamp"
        assert cnt["blk_submission"] == 0, f"{cnt['blk_submission']} blk_submission values without a start stamp"
        off = {x: c - e2e for x, c in cnt.items()
               if x != "blk_submission" and abs(c - e2e - (0 if x == "end_to_end" else u)) > lost + 2}
        assert not off, f"stage counts differ from end_to_end's {e2e} by {off}, not by the {u} unstamped I/Os"
        assert same["n"] >= 2, f"{same['n']} intervals after block_rq_issue was attached"
        mean = same["stages"] / same["ios"]
        e2e_mean = same["e2e"] / same["ios"]
        # the stages run from queue_rq, end_to_end from blk_issue, which follows it inside
        # nvme_tcp_queue_rq: their means differ by that short step, never the other way
        assert 0 <= mean - e2e_mean <= 5 * rel * e2e_mean, \
            f"host stages' means {mean:.1f}us, end_to_end's (from blk_issue) {e2e_mean:.1f}us"
        return (f"{n} intervals, {e2e} I/Os with a start and {u} without; in the {same['n']} intervals after "
                f"(their {same['ios']} I/Os): host stages' means {mean:.1f}us, end_to_end's from blk_issue "
                f"{e2e_mean:.1f}us")
    off = {x: c - e2e for x, c in cnt.items() if abs(c - e2e) > lost + 2}
    assert not off, f"stage counts differ from end_to_end's {e2e} by {off} (lost {lost})"
    total = sum(tot[x] for x in host)
    assert abs(total - tot["end_to_end"]) <= rel * tot["end_to_end"], \
        f"host stages total {total:.0f}us, end_to_end {tot['end_to_end']:.0f}us"
    return f"{n} intervals, {e2e} I/Os: host stages total {total:.0f}us = end_to_end {tot['end_to_end']:.0f}us"


def ping_ms_file(p):
    rtts = sorted(float(l.split("time=")[1].split()[0]) for l in open(p) if "time=" in l)
    if len(rtts) < 10:
        raise AssertionError(f"{os.path.basename(p)}: only {len(rtts)} ping replies")
    return rtts[len(rtts) // 2]


def device_stage(d, device, stage, pct=50, low_us=None, high_us=None):
    """one device's stage percentile (its groups, count-weighted) lies in [low_us, high_us]"""
    gs = [g for g in load(d, "report.json").get("groups", [])
          if g.get("device") == device and stage in g.get("stages", {})]
    assert gs, f"no '{stage}' for device {device} in the report"
    n = sum(g["count"] for g in gs)
    v = sum(g["stages"][stage][f"p{pct}_us"] * g["count"] for g in gs) / max(n, 1)
    assert (low_us is None or v >= low_us) and (high_us is None or v <= high_us), \
        f"{device} {stage} p{pct} {v:.0f}us outside [{low_us}, {high_us}]"
    return f"{device} {stage} p{pct} {v:.0f}us in [{low_us}, {high_us}] ({n} I/Os)"


def paired_by_port(d):
    """every matched I/O was paired with both records carrying its queue's TCP port (the BPF
    programs read it on both hosts, and the two agree: pairing requires it)"""
    rep = load(d, "report.json")
    m, n = rep.get("matched", 0), rep.get("pairing", {}).get("by_port")
    assert m > 0 and n == m, f"{n} of {m} matched I/Os paired by queue port"
    ctrls = [l.split()[:2] for l in open(os.path.join(d, "cntlids.txt")) if l.strip()]
    return f"{n}/{m} paired by queue port; controllers (name, cntlid): {ctrls}"


def reconnected(d):
    """--reset-at: the controller was reset while recording, so every I/O queue reconnected on a new
    socket; both hosts' records carry the I/O queues' ports of both connections (the BPF programs
    read a connection's facts again after its connect command), and the same ones; the initiator's
    report lists the controller's one cntlid change (report.json's cntlid_changes)"""
    assert os.path.exists(os.path.join(d, "reset-at.txt")), "the controller was not reset (no reset-at.txt)"
    read = _doc_reader()
    ports = {}
    for role in ("initiator", "target"):
        ports[role] = sorted({r["port"] for r in read(os.path.join(d, f"{role}.ntbpf")) if r["qid"] >= 1})
    assert 0 not in ports["initiator"] and 0 not in ports["target"], f"records without a port: {ports}"
    assert len(ports["initiator"]) >= 2, f"initiator I/O queue ports {ports['initiator']}: one connection only"
    assert ports["initiator"] == ports["target"], f"ports: initiator {ports['initiator']}, target {ports['target']}"
    # the target's new controller: the initiator's recording says from when its cntlid holds
    rep = load(d, "report.json")
    ini = [i for i in rep["inputs"] if i["role"] == "initiator"][0]
    start = {c["instance"]: c["cntlid"] for c in ini["controllers"] if c["instance"] >= 0}
    ch = ini["cntlid_changes"]
    assert len(ch) == 1 and ch[0]["instance"] in start and ch[0]["cntlid"] != start[ch[0]["instance"]], \
        f"cntlid changes {ch}, controllers at the start {start}"
    return f"ports {ports['initiator']} on both hosts; nvme{ch[0]['instance']} cntlid {start[ch[0]['instance']]} -> {ch[0]['cntlid']}"


def multipath_failover(d, min_failed=1, lba_bytes=4096):
    """--multipath: two portals to one subsystem (round-robin), one path taken down mid-fio.
    Known answers, none of them ntbpf's: fio's I/O count and errors (none: multipath retried every
    bio on the path left), the kernel's own failed requests (ftrace's nvme:nvme_complete_rq with
    status != 0, failed-requests.txt), the records themselves (docs/record-format.md's reader) and
    an own pairing by queue port, qid, cid and the command's LBA (the target's slba against the
    initiator's sector).  Asserts: the requests that ended in a path error are records with that
    status, those of 0x371 as many as ftrace's on I/O queues, all on one path, each failed over (report
    'failover': retried, none unretried; script links each to a retry of the same LBA on the other
    path that started after it); ok records = fio's I/Os; report --group-by dev shows both paths,
    --group-by queue both controllers' queues; nothing mispaired (each pair ntbpf made is one of
    the own pairing's, its target_residence the target record's own)"""
    fio = load(d, "fio.json")
    assert not any(j.get("error", 0) for j in fio["jobs"]), "fio saw errors: multipath did not retry"
    assert not any(j.get("total_err", 0) for j in fio["jobs"]), "fio counted errors"
    nfio = fio_total_ios(fio)
    assert os.path.exists(os.path.join(d, "path-down-at.txt")), "no portal was taken down (path-down-at.txt)"
    # the kernel's failed requests: "... nvme_complete_rq: nvme1: qid=1, cmdid=..., status=0x371"
    ktr = {}
    for l in open(os.path.join(d, "failed-requests.txt")):
        m = re.search(r"nvme_complete_rq: (nvme\d+):.*?qid=(\d+), cmdid=(\d+).*status=(0x[0-9a-f]+)", l)
        if m and int(m.group(2)) >= 1:
            st = int(m.group(4), 16)
            ktr[st] = ktr.get(st, 0) + 1
    read = _doc_reader()
    ini = [r for r in read(os.path.join(d, "initiator.ntbpf")) if r["qid"] >= 1]
    tgt = [r for r in read(os.path.join(d, "target.ntbpf")) if r["qid"] >= 1]
    ok = [r for r in ini if r["status"] == 0]
    perr = [r for r in ini if r["status"] and (r["status"] >> 8) & 7 == 3]
    other = [r for r in ini if r["status"] and r not in perr]
    assert not other, f"{len(other)} initiator records failed other than by a path error"
    assert len(ok) == nfio, f"{len(ok)} ok initiator records, fio completed {nfio} I/Os"
    n371 = sum(1 for r in perr if r["status"] & 0x7ff == 0x371)
    assert n371 == ktr.get(0x371, 0), f"{n371} records of status 0x371, ftrace counted {ktr.get(0x371, 0)}"
    assert len(perr) >= min_failed, f"{len(perr)} requests ended in a path error (ftrace: {ktr}): none failed over"
    # the report: its failover line, both paths, both controllers' queues
    rep = _report(d)
    fo = rep.get("failover")
    assert fo, "report.json has no failover"
    assert fo["path_errors"] == len(perr), f"failover.path_errors {fo['path_errors']}, records {len(perr)}"
    assert fo["retries"] == len(perr) and fo["unretried"] == 0, f"failover {fo}: a failed request not retried"
    assert 1 <= fo["ios"] <= len(perr), f"failover {fo}"
    devs = {}
    for g in _report(d, "--group-by", "dev")["groups"]:
        devs.setdefault(g["device"], {}).setdefault(g["status"], 0)
        devs[g["device"]][g["status"]] += g["count"]
    paths = sorted(x for x in devs if re.fullmatch(r"nvme0c\d+n1", x))
    assert len(paths) == 2 and all(devs[p].get("ok") for p in paths), f"--group-by dev: {devs}"
    assert sum(devs[p].get("ok", 0) for p in paths) == nfio, f"--group-by dev ok I/Os {devs}, fio {nfio}"
    failed_on = {p: sum(v for k, v in devs[p].items() if k != "ok") for p in paths}
    assert sorted(failed_on.values()) == [0, len(perr)], f"path errors by path {failed_on}: one path's"
    queues = {g.get("queue") for g in _report(d, "--group-by", "queue")["groups"]}
    assert {"nvme0q1", "nvme1q1"} <= queues, f"--group-by queue: {sorted(map(str, queues))}"
    # script: each failed request and its retry, linked
    rows = _script_rows(d)
    first = {r["retry"].split(":")[-1]: r for r in rows if r.get("retry") and "failed_over:" in r["retry"]}
    retry = {}
    for r in rows:
        for part in (r.get("retry") or "").split(";"):
            if part.startswith("retry_of:"):
                retry[part.split(":")[1]] = r
    assert len(first) == len(perr) and set(first) == set(retry), \
        f"script: {len(first)} failed_over, {len(retry)} retry_of, {len(perr)} path errors"
    for k, a in first.items():
        b = retry[k]
        assert a["lba"] == b["lba"] and a["size"] == b["size"] and a["device"] != b["device"], f"link {k}: {a} / {b}"
        assert a["status"] != "ok" and b["time"] > a["time"], f"link {k}: {a['status']} {a['time']} -> {b['time']}"
    # nothing mispaired: an own pairing by port, qid, cid and LBA, in time order
    def key(r, tside):
        return (r["port"], r["qid"], r["cid"], r["sector"] if tside else r["sector"] * 512 // lba_bytes, r["op"])
    own = {}
    for r in tgt:
        own.setdefault(key(r, True), []).append(r)
    tres = {}
    for k, v in own.items():
        tres[k] = sorted(t["ev"][8] - t["ev"][0] for t in v if t["ev_mask"] >> 8 & 1 and t["ev_mask"] & 1)
    pairable = sum(1 for r in ini if key(r, False) in own)
    bad = 0
    byrow = {}
    for r in ini:
        byrow.setdefault((r["qid"], r["cid"], r["sector"], r["status"]), []).append(r)
    matched = [w for w in rows if w["match"] == "both"]
    for w in matched:
        cands = byrow.get((w["qid"], w["cid"], w["lba"], int(w["status"], 16) if w["status"] != "ok" else 0), [])
        ks = {key(r, False) for r in cands}
        res = w.get("target_residence_ns")
        if not any(k in own for k in ks) or (res is not None and not any(res in tres.get(k, []) for k in ks)):
            bad += 1
    assert bad == 0, f"{bad} of {len(matched)} pairs not the own pairing's (port, qid, cid, LBA; target_residence)"
    assert rep["matched"] <= pairable, f"ntbpf paired {rep['matched']}, the own pairing allows {pairable}"
    pe_matched = sum(1 for w in matched if w["status"] != "ok")
    return (f"fio {nfio} I/Os, no errors; {len(perr)} path errors (ftrace: { {hex(k): v for k, v in ktr.items()} }), all retried on the other "
            f"path ({fo['ios']} I/Os, end_to_end with the retry p50 {fo['end_to_end_us']['p50']:.0f} us, max "
            f"{fo['end_to_end_us']['max']:.0f}); paths {paths} ok {[devs[p].get('ok') for p in paths]}; "
            f"{len(matched)} pairs all consistent ({pe_matched} of the failed ones paired with the target's record)")


def hooks_state(d, role, hooks):
    """each named hook of ROLE has a status containing the given text ("attached", or the cause
    it was left out for), in the report's list of the inputs' hooks: what docs/stages.md says"""
    rep = load(d, "report.json")
    seen = {h["name"]: h["status"] for i in rep["inputs"] if i["role"] == role for h in i["hooks"]}
    bad = [f"{n}: '{seen.get(n, 'absent')}' lacks '{want}'" for n, want in hooks.items() if want not in seen.get(n, "")]
    assert not bad, "; ".join(bad)
    return f"{len(hooks)} {role} hooks as documented"


def records_as_documented(d, initiator, target, log_says=(), report_says=()):
    """record exited 0 on both roles with INITIATOR and TARGET records ("fio": as many as fio's
    I/Os), its logs say each of LOG_SAYS, report.txt each of REPORT_SAYS, and the report says
    so (0 records: 'no I/O recorded')"""
    status = open(os.path.join(d, "status-both")).read().split()
    assert status[:3] == ["0", "done", "ok"], f"guest status {' '.join(status)}"
    rep = load(d, "report.json")
    n = {i["role"]: i["records"] for i in rep["inputs"]}
    fio_n = fio_total_ios(load(d, "fio.json"))
    want = {"initiator": fio_n if initiator == "fio" else initiator, "target": fio_n if target == "fio" else target}
    assert n.get("initiator") == want["initiator"] and n.get("target") == want["target"], f"records {n}, want {want}"
    for role in ("initiator", "target"):
        log = open(os.path.join(d, f"record-{role}.log")).read()
        assert f"ntbpf record: {n[role]} records" in log, f"record-{role}.log has no summary line"
        for w in log_says:
            assert w in log, f"record-{role}.log does not say '{w}'"
    txt = open(os.path.join(d, "report.txt")).read()
    for w in report_says:
        assert w in txt, f"report.txt does not say '{w}'"
    if want["initiator"] == 0 and want["target"] == 0:
        assert "no I/O recorded" in txt, "report does not say 'no I/O recorded'"
    return f"records initiator {n['initiator']}, target {n['target']}; logs and report say so"


def stages_as_documented(d, present, absent):
    """an initiator whose kernel lets ntbpf see only some stages (docs/stages.md): each stage of
    PRESENT is measured for every I/O of every group (its count is end_to_end's), none of ABSENT
    appears in any group, and the present stages' averages add up to no more than end_to_end's
    (what is missing lies between them: a stage cannot be negative)"""
    gs = dev_groups(load(d, "report-initiator.json"))
    assert gs, "no initiator groups"
    for g in gs:
        st, n = g["stages"], g["stages"]["end_to_end"]["count"]
        short = [x for x in present if st.get(x, {}).get("count") != n]
        assert not short, f"group {g['op']}/{g['size']}: {short} not measured for all {n} I/Os"
        extra = [x for x in absent if x in st]
        assert not extra, f"group {g['op']}/{g['size']}: {extra} measured, documented as not seen"
        total = sum(st[x]["avg_us"] for x in present)
        assert total <= st["end_to_end"]["avg_us"] + 0.001 * len(present), \
            f"group {g['op']}/{g['size']}: present stages sum to {total:.3f}us > end_to_end {st['end_to_end']['avg_us']:.3f}us"
    return f"{len(present)} stages for every I/O, {len(absent)} absent as documented"


def _report(d, *args, files=None):
    """ntbpf report ARGS on the run's two files (or on files), as JSON"""
    import subprocess
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    exe = os.environ.get("NTBPF_BIN", os.path.join(root, ".output", "ntbpf"))
    if files is None:
        files = [os.path.join(d, f) for f in ("initiator.ntbpf", "target.ntbpf") if os.path.exists(os.path.join(d, f))]
    r = subprocess.run([exe, "report", "--format", "json", *args, *files], capture_output=True, text=True)
    assert r.returncode == 0, f"ntbpf report {' '.join(args)} {' '.join(map(os.path.basename, files))}: " \
                              f"{r.stderr.strip()[:200]}"
    return json.loads(r.stdout)


def report_same_on_arm64(d):
    """the arm64 static binary (make ARCH=arm64 static, under qemu-aarch64-static here) reports the
    run's files byte for byte as the host's binary does: text, JSON and --diagnose, stdout, stderr
    and exit status (tests/integration/arm64 does the same on synthetic and demo recordings)"""
    import subprocess
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    host = os.path.abspath(os.environ.get("NTBPF_BIN", os.path.join(root, ".output", "ntbpf")))
    arm = os.path.abspath(os.environ.get("NTBPF_ARM64_BIN", os.path.join(root, ".output", "arm64", "ntbpf-static")))
    assert os.access(arm, os.X_OK), f"{arm} not built (make ARCH=arm64 static)"
    import shutil
    assert shutil.which("qemu-aarch64-static"), "qemu-aarch64-static not installed (make deps)"
    files = [f for f in ("initiator.ntbpf", "target.ntbpf") if os.path.exists(os.path.join(d, f))]
    assert files, "no recordings"
    n = 0
    for args in (["report"], ["report", "--format", "json"], ["report", "--diagnose"]):
        a = subprocess.run([host, *args, *files], cwd=d, capture_output=True)
        b = subprocess.run(["qemu-aarch64-static", arm, *args, *files], cwd=d, capture_output=True)
        # the JSON names the binary's version (its commit): two builds of one tree may differ there only
        for r in (a, b):
            r.stdout = re.sub(rb'"ntbpf_version": "[^"]*"', b'"ntbpf_version": ""', r.stdout)
        assert (a.returncode, a.stdout, a.stderr) == (b.returncode, b.stdout, b.stderr), \
            f"ntbpf {' '.join(args)}: x86_64 and arm64 differ (exit {a.returncode} / {b.returncode}, " \
            f"{len(a.stdout)} / {len(b.stdout)} bytes)"
        n += len(a.stdout)
    return f"arm64's report, JSON and --diagnose the same ({n} bytes)"


def rotated_parts(d, min_parts):
    """record --rotate: every file of each host's series is whole on its own, and each one holding I/O
    lists its queues (io_cpu, both TCP ends) in its own header, not only the series' last file"""
    import glob
    for role in ("initiator", "target"):
        parts = sorted(glob.glob(os.path.join(d, f"{role}.ntbpf.[0-9][0-9][0-9][0-9]")))
        with_io = 0
        for p in parts:
            rep = _report(d, "--group-by", "queue", files=[p])
            assert rep["inputs"][0]["complete"], f"{os.path.basename(p)}: not a whole file"
            groups = [g for g in rep["groups"] if g["queue"] != "-" and g["status"] == "ok"]
            if not groups:
                continue
            with_io += 1
            for g in groups:
                assert g["io_cpu"] is not None and g["local"] and g["remote"], \
                    f"{os.path.basename(p)}: queue {g['queue']} has no header facts: {g}"
        assert with_io >= min_parts, f"{role}: {with_io} files with I/O of {len(parts)}, want {min_parts}"
    return f"every file with I/O lists its queues ({len(parts)} target files)"


REUSE_IOS = 256   # a request is reused within this many I/Os of its queue: the target cycles its
                  # 2 x sqsize (128) commands first in, first out; the initiator's 128 tags per CPU hint


def queues_listed(d, n=None, max_depth=None):
    """--group-by queue: each host's n queues carry io_cpu, both TCP ends (from the header) and a depth
    (at most max_depth, the requests fio can have outstanding: a depth that never went down would exceed it).
    A record lost to a run the kernel skipped (no_completion) counts in its queue's depth until its
    request is reused (then ntbpf lets it go): each such loss allows one more at the maximum, and raises
    the mean over at most REUSE_IOS I/Os (one more loss allowed: a request not reused before the end);
    a depth that never went down again would raise it for the rest of the run."""
    rep = _report(d, "--group-by", "queue")
    nocomp = load(d, "report.json").get("lost_detail", {}).get("no_completion", 0) if max_depth else 0
    seen = {}
    for g in rep["groups"]:
        if g["queue"] == "-" or g["status"] != "ok":
            continue
        role = "target" if g["queue"].startswith("cntlid") else "initiator"
        assert g["io_cpu"] is not None and g["local"] and g["remote"], f"queue {g['queue']}: no header facts: {g}"
        # the NIC queues: the lab's devices (lo, a one-queue virtio-net) set no TX mapping; keys there
        assert "rx_queue" in g and "tx_queue" in g, f"queue {g['queue']}: no NIC queue keys: {g}"
        key = "target_depth_max" if role == "target" else "depth_max"
        assert g[key] and g[key] >= 1, f"queue {g['queue']}: no depth"
        for k in ("depth_max", "target_depth_max"):
            assert max_depth is None or g[k] is None or g[k] <= max_depth + nocomp, \
                f"queue {g['queue']}: {k} {g[k]} > {max_depth} requests fio can have outstanding" + \
                (f" + {nocomp} lost without a completion" if nocomp else "")
            m, slack = g[k.replace("max", "mean")], (nocomp + 1) * REUSE_IOS / g["count"] + 0.005
            assert max_depth is None or m is None or m <= max_depth + slack, \
                f"queue {g['queue']}: {k.replace('max', 'mean')} {m} > {max_depth} + {slack:.3f}"
        seen.setdefault(role, {})[g["queue"]] = (g["io_cpu"], g["local"], g["remote"], g["depth_max"], g["target_depth_max"])
    got = len(seen.get("initiator", {}))
    assert got == n if n is not None else got >= 1, f"initiator queues {seen.get('initiator')}, want {n or 'some'}"
    for q, (cpu, loc, rem, dm, tdm) in seen["initiator"].items():
        assert dm and tdm, f"{q}: depth on both hosts wanted, got {dm}, {tdm}"
    return "; ".join(f"{q} io_cpu {v[0]} {v[1]} -> {v[2]} depth max {v[3]} / target {v[4]}"
                     for q, v in sorted(seen["initiator"].items())) + \
        (f"; {nocomp} lost without a completion" if nocomp else "")


def record_log_says(d, role, text):
    """record-ROLE.log has TEXT (a warning the recorder must give, e.g. a fallback it took)"""
    log = open(os.path.join(d, f"record-{role}.log"), errors="replace").read()
    line = next((l for l in log.splitlines() if text in l), None)
    assert line, f"record-{role}.log does not say '{text}'"
    return line.strip()[:200]


def skipped_ends(d, every):
    """NTBPF_TEST_SKIP_END=every: on both hosts the kernel 'skipped' every Nth run of the programs
    that end records.  Each such record is lost, counted as no_completion on its own host (once its
    request is reused), and nothing else is lost; the rest pair."""
    rep, ini = load(d, "report.json"), load(d, "report-initiator.json")
    ld, ild = rep.get("lost_detail", {}), ini.get("lost_detail", {})
    n = fio_total_ios(load(d, "fio.json"))
    want = n // every
    i_nc = ild.get("no_completion", 0)
    t_nc = ld.get("no_completion", 0) - i_nc
    other = {k: v for k, v in ld.items() if k != "no_completion" and v}
    assert not other, f"lost besides no_completion: {other}"
    # a request reused after the recording stopped leaves its lost record uncounted: a few fewer
    for who, got in (("initiator", i_nc), ("target", t_nc)):
        assert want // 2 <= got <= want + 1, f"{who}: {got} lost without a completion, want about {want} ({n} I/Os / {every})"
    m = rep.get("matched", 0)
    assert m >= n - 2 * (want + 1), f"matched {m} of {n}"
    return f"no_completion: initiator {i_nc}, target {t_nc} (about {want} each); matched {m}/{n}"


def live_queues(d, n, max_depth):
    """live --group-by queue (histograms in the kernel): over the intervals, n queues of the
    initiator, each with its io_cpu and TCP ends (read every interval) and a depth: at least 1,
    at most max_depth, the requests fio can have outstanding"""
    seen = {}
    for j in _live(d):
        for g in j["groups"]:
            q = g.get("queue")
            assert q is not None, f"a group without a queue: {g}"
            if q == "-":
                continue
            assert g["io_cpu"] is not None and g["local"] and g["remote"], f"queue {q}: no facts: {g}"
            assert g["depth_max"] and 1 <= g["depth_max"] <= max_depth, f"queue {q}: depth_max {g['depth_max']}"
            assert 1 <= g["depth_mean"] <= g["depth_max"], f"queue {q}: depth_mean {g['depth_mean']}"
            s = seen.setdefault(q, [0, 0, g["io_cpu"], g["local"]])
            s[0] += g["count"]
            s[1] = max(s[1], g["depth_max"])
    assert len(seen) == n, f"queues {sorted(seen)}, want {n}"
    return "; ".join(f"{q} io_cpu {v[2]} {v[3]}: {v[0]} I/Os, depth max {v[1]}" for q, v in sorted(seen.items()))


def finding(d, kind, present=True):
    """ntbpf report --diagnose names kind among its findings (present) or not"""
    rep = _report(d, "--diagnose")
    kinds = [f["kind"] for f in rep["findings"]]
    got = [f for f in rep["findings"] if f["kind"] == kind]
    assert bool(got) == present, f"{kind} {'missing' if present else 'found'}: findings {rep['findings']}"
    return got[0]["evidence"] if got else f"not found (findings: {kinds})"


def nqns_named(d):
    """--group-by host,subsys names the same (hostnqn, subsysnqn) from the target's file alone (read
    from nvmet's controller and subsystem by the BPF side) as from the initiator's (sysfs), and
    neither says unknown"""
    def keys(f):
        rep = _report(d, "--group-by", "host,subsys", files=[os.path.join(d, f)])
        return sorted({(g.get("host"), g.get("subsys")) for g in rep.get("groups", [])})
    ki, kt = keys("initiator.ntbpf"), keys("target.ntbpf")
    assert ki and all("unknown" not in k for k in ki + kt), f"initiator {ki}, target {kt}"
    assert ki == kt, f"initiator names {ki}, target names {kt}"
    return f"host, subsys: {kt}"


def time_shares(d, first, then, within=2, min_depth=0.0):
    """ntbpf report --diagnose ranks where the time goes (docs/diagnose.md), whether a rule fires or
    not: FIRST is the largest share of end_to_end, THEN is among the `within` largest, and THEN's
    entry carries the queue depth, at least min_depth (the submission wait of many I/Os on one
    queue)"""
    rep = _report(d, "--diagnose")
    ts = rep.get("time_shares") or {}
    st = ts.get("stages") or []
    names = [x["stage"] for x in st]
    ranked = [(x["stage"], round(100 * x["share"], 1)) for x in st[:4]]
    assert names[:1] == [first], f"ranked {ranked}, want {first} first"
    assert then in names[:within], f"ranked {ranked}, want {then} among the first {within}"
    depth = st[names.index(then)].get("mean_depth", 0.0)
    assert depth >= min_depth, f"{then}: mean depth {depth} < {min_depth}"
    return f"ranked {ranked}; {then} at a mean depth of {depth:.1f}; findings {[f['kind'] for f in rep['findings']]}"


def live_peers_isolated(d, min_matched=0.99, tol=0.03, min_each=0.85):
    """--hosts2 --live: the target serves live with a key per host (--key DIR), each host's peer
    (its own key, its own disk: live.jsonl for nvme0n1, live2.jsonl for nvme1n1) must see its
    own host's I/O and only that: its intervals add up to its fio job's I/Os (+-tol, fio's count:
    independent); no target record left unpaired beyond 1 % (the other host's records, were they
    sent to it, could pair with none: the other host did as many I/Os as its fio job); each
    peer connected throughout.  The target routes a controller's records once it has seen the
    controller's host at two interval ends in a row, so a controller's first records go to no
    peer (counted in the target's log): each peer pairs >= min_each of its I/Os, and the paired
    ones plus those sent to no peer are >= min_matched of all."""
    jobs = {j["jobname"]: fio_job_ios(j) for j in load(d, "fio.json")["jobs"]}
    t = open(os.path.join(d, "live-target.log"), errors="replace").read()
    nopeer = re.search(r"(\d+) records sent to no peer", t)
    nopeer = int(nopeer.group(1)) if nopeer else 0
    msg, n_all, m_all = [], 0, 0
    for fname, dev in (("live.jsonl", "nvme0n1"), ("live2.jsonl", "nvme1n1")):
        p = os.path.join(d, fname)
        assert os.path.exists(p), f"{fname} missing"
        lines = [json.loads(l) for l in open(p) if l.strip()]
        assert lines, f"{fname}: no interval"
        n = sum(g["count"] for j in lines for g in j["groups"])
        lost = sum(j["lost_records"] for j in lines)
        m = sum(j["matched"] for j in lines)
        ut = sum(j["unmatched"]["target"] for j in lines)
        want = jobs.get(dev)
        assert want, f"fio has no job {dev}: {sorted(jobs)}"
        other = sum(v for k, v in jobs.items() if k != dev)
        assert abs(n + lost - want) <= tol * want, f"{fname}: intervals add up to {n} (+{lost} lost), fio's {dev} did {want}"
        assert ut <= max(2, 0.01 * n), \
            f"{fname}: {ut} target records paired with none (the other host did {other} I/Os: its records reached this peer?)"
        assert m >= min_each * n, f"{fname}: matched {m} of {n}"
        down = [j["time"] for j in lines if j.get("peer") != "connected"]
        assert not down, f"{fname}: peer not connected at {down}"
        n_all += n; m_all += m
        msg.append(f"{dev}: {n} I/Os (fio {want}), matched {m}, unpaired target records {ut}")
    assert m_all + nopeer >= min_matched * n_all, f"matched {m_all} + {nopeer} sent to no peer of {n_all} I/Os"
    msg.append(f"target: {nopeer} records to no peer (controllers' first intervals)")
    return "; ".join(msg)


def host_groups_equal_fio(d, min_matched=0.99, tgt_tol=0.01):
    """--hosts2: one initiator guest as two hosts (two host NQNs, one namespace, a fio job each,
    their qids and command ids the same).  report --group-by host counts each host's own fio job:
    exactly from the initiator's file (its hostnqn from sysfs), within tgt_tol from the target's
    file alone (the hostnqn read from nvmet), and with both files each host's I/Os pair with its
    own target records (ntbpf script's rows: matched >= min_matched of its fio job)."""
    hosts = _hosts(d)
    want = {}
    for j in load(d, "fio.json")["jobs"]:
        assert j["jobname"] in hosts, f"fio job {j['jobname']} is no disk of hosts.txt {hosts}"
        want[hosts[j["jobname"]]] = fio_job_ios(j)
    assert len(want) == 2, f"want two hosts, hosts.txt and fio say {want}"

    def per_host(rep):
        n = {}
        for g in rep.get("groups", []):
            n[g.get("host")] = n.get(g.get("host"), 0) + g["count"]
        return n

    ini = per_host(_report(d, "--group-by", "host", files=[os.path.join(d, "initiator.ntbpf")]))
    tgt = per_host(_report(d, "--group-by", "host", files=[os.path.join(d, "target.ntbpf")]))
    both = _report(d, "--group-by", "host")
    assert None not in ini and None not in tgt, f"I/Os of an unknown host: initiator {ini}, target {tgt}"
    matched = {}
    for r in _script_rows(d):
        if r.get("match") == "both":
            matched[r.get("hostnqn")] = matched.get(r.get("hostnqn"), 0) + 1
    msg = []
    for nqn, n in want.items():
        assert ini.get(nqn) == n, f"host {nqn}: initiator's group {ini.get(nqn)} != its fio job's {n}"
        assert abs(tgt.get(nqn, 0) - n) <= tgt_tol * n, f"host {nqn}: target's group {tgt.get(nqn)} vs fio {n}"
        assert matched.get(nqn, 0) >= min_matched * n, f"host {nqn}: {matched.get(nqn, 0)} of {n} I/Os matched"
        names = {g.get("hostname") for g in both["groups"] if g.get("host") == nqn}
        assert len(names) == 1 and None not in names, f"host {nqn}: hostnames {names} in the report of both files"
        msg.append(f"{nqn.rsplit(':', 1)[-1][:8]}: fio {n}, initiator {ini[nqn]}, target {tgt.get(nqn)}, "
                   f"matched {matched.get(nqn, 0)}")
    return "; ".join(msg)


def _hosts(d):
    """hosts.txt (--hosts2): each disk's hostnqn"""
    hosts = {}
    with open(os.path.join(d, "hosts.txt")) as f:
        for line in f:
            if line.split():
                dev, nqn = line.split()[:2]
                hosts[dev] = nqn
    return hosts


def in_run(d, run, checks):
    """the checks on DIR/fioRUN, one fio run of a boot with several (--fio given more than once)"""
    r = os.path.join(d, f"fio{run}")
    said, bad = [], []
    for name, params in checks:
        try:
            said.append(f"{name}: {CHECKS[name](r, **params)}")
        except (AssertionError, KeyError, ValueError, TypeError, ZeroDivisionError, OSError) as e:
            bad.append(f"{name}: {e}")
    assert not bad, f"fio{run}: " + "; ".join(bad)
    return f"fio{run}: " + " | ".join(said)


def interference_found(d, victim="nvme0n1", cause="nvme1n1", min_windows=3, rate_band=(0.5, 2.0)):
    """report --diagnose (both files) finds interference with the host of disk `victim` as the
    victim and the host of disk `cause` as the cause (hosts.txt names each disk's hostnqn): at
    least min_windows busy and idle windows compared, the victim's target stages x1.5 or more in
    the busy ones, and the cause's MB/s in its busy windows within rate_band of fio's own bandwidth
    for the cause's job (fio's bytes over its runtime: an independent measure of the load)"""
    hosts = _hosts(d)
    rep = _report(d, "--diagnose")
    got = [f for f in rep["findings"] if f["kind"] == "interference"]
    assert got, f"no interference finding: findings {[f['kind'] for f in rep['findings']]}, " \
                f"note {rep.get('interference_note')}"
    f = got[0]
    assert f["victim"] == hosts[victim], f"victim {f['victim']}, want {victim}'s {hosts[victim]}"
    assert f["cause"] == hosts[cause], f"cause {f['cause']}, want {cause}'s {hosts[cause]}"
    w, v, c = f["windows"], f["victim_target_us"], f["cause_load"]
    assert w["busy"] >= min_windows and w["idle"] >= min_windows, f"windows {w}"
    assert v["busy"] >= 1.5 * v["idle"] > 0, f"victim's target stages {v}"
    job = [j for j in load(d, "fio.json")["jobs"] if j["jobname"] == cause][0]
    fio_mbs = sum(job[op]["io_bytes"] for op in ("read", "write")) / max(job["job_runtime"], 1) * 1000 / 1e6
    lo, hi = rate_band
    assert lo * fio_mbs <= c["mb_s"] <= hi * fio_mbs, f"cause's {c['mb_s']:.1f} MB/s in its busy windows vs " \
                                                     f"fio's {fio_mbs:.1f} MB/s"
    return (f"victim {victim} target stages {v['busy']:.1f} vs {v['idle']:.1f} us in {w['busy']} busy / "
            f"{w['idle']} idle windows of {w['width_ms']:.0f} ms, longer in {100 * f['separation']:.0f}% of busy-idle window pairs; cause "
            f"{cause} {c['iops']:.0f} IOPS {c['mb_s']:.1f} MB/s (fio {fio_mbs:.1f} MB/s); on {f['shared']}")


def interference_absent(d, says):
    """report --diagnose finds no interference, and says why (interference_note contains `says`:
    the reason expected, not a file that names no host)"""
    rep = _report(d, "--diagnose")
    got = [f for f in rep["findings"] if f["kind"] == "interference"]
    note = rep.get("interference_note") or ""
    assert not got, f"interference found: {got[0]['evidence']}"
    assert says in note, f"interference_note '{note}' does not say '{says}'"
    return f"none: {note}"


CHECKS = {f.__name__: f for f in (device_stage, tick_kept_out, report_same_on_arm64, multipath_failover, known_answers, paired_by_port, fio_ok, initiator_count_equals_fio, end_to_end_within_fio_lat,
                                  no_lost_records, nothing_in_flight_at_start, matched_fraction, target_records, ops_present,
                                  stage_at_least, stages_sum_to_end_to_end, stage_delta, others_still,
                                  sampled_fraction, functions_attached_as, live_sum_equals_fio, live_matched,
                                  live_netem_step, live_host_stages_sum, live_issue_deferred, hooks_deferred, live_failed_groups, record_failed_status, live_metrics, hooks_state,
                                  records_as_documented, stages_as_documented, sampling_windows, queues_listed, skipped_ends, reconnected,
                                  finding, live_queues, windows_detached, rotated_parts, record_log_says,
                                  host_groups_equal_fio, nqns_named, time_shares, live_peers_isolated, in_run,
                                  interference_found, interference_absent)}


def run_checks(d, checks, out=sys.stdout):
    """Runs (name, params) checks on DIR; prints one line each; returns the number failed."""
    failed = 0
    for name, params in checks:
        params = dict(params)
        pending = params.pop("pending", None)
        label = name + ("(" + ",".join(f"{k}={v}" for k, v in params.items()) + ")" if params else "")
        if pending:
            print(f"    SKIP  {label}: {pending}", file=out)
            continue
        try:
            msg = CHECKS[name](d, **params)
            print(f"    ok    {label}: {msg}", file=out)
        except (AssertionError, KeyError, ValueError, TypeError, ZeroDivisionError) as e:
            failed += 1
            print(f"    FAIL  {label}: {e}", file=out)
    return failed


def main(argv):
    if len(argv) >= 3 and argv[0] == "--scenario":
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        from scenarios import SCENARIOS
        sc = [s for s in SCENARIOS if s["name"] == argv[1]]
        if not sc:
            sys.exit(f"check: unknown scenario {argv[1]}")
        return 1 if run_checks(argv[2], sc[0]["checks"]) else 0
    if len(argv) < 2:
        sys.exit(__doc__)
    checks = []
    for a in argv[1:]:
        name, _, js = a.partition(":")
        checks.append((name, json.loads(js) if js else {}))
    return 1 if run_checks(argv[0], checks) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
