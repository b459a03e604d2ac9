#!/usr/bin/env python3
"""Reliability figures of docs/reliability.md, measured on this machine.

    scripts/reliability.py [--build build] [--asan-build build-asan]
                           [--fuzz-runs N] [--run-asan] [--skip PLATFORM ...]
                           [--no-write]

- determinism: every platform file under platforms/ run twice with the same
  seed; stats.json (host timings aside) and every other output file must be
  byte-identical;
- silent corruption vs bit-error rate: sweeps/reliability/ber.yaml (an
  all-reduce on a GroqNode, BER 1e-12..1e-4, 8 seeds) run by `fabricvp sweep`
  into SQLite, summed per rate;
- fuzzing: scripts/fuzz.sh --all <asan build> --runs N (when --fuzz-runs is
  given; the million-execution table above the figures is kept by hand);
- the sanitizer suite: ctest in the AddressSanitizer/UBSan tree (--run-asan).

The figures replace the block between the reliability-figures markers in
docs/reliability.md (unless --no-write) and are printed. Exit status 1 if a
check fails (a platform not deterministic, a silent corruption, a fuzz
finding, a failing sanitizer test).
"""

import argparse
import datetime
import filecmp
import json
import os
import re
import sqlite3
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BEGIN = "<!-- reliability-figures:begin (scripts/reliability.py writes this block) -->"
END = "<!-- reliability-figures:end -->"
# Host measurements: differ between two runs of the same simulation.
HOST_KEYS = {"wall_s", "setup_wall_s", "load_wall_s", "sim_wall_s", "check_wall_s", "peak_rss_mib",
             "sim_ns_per_wall_s", "rtl_eval_s"}


def platform_args(name):
    """What each platform runs for the determinism check (small, but every part of it)."""
    name = os.path.basename(name)
    if name.startswith("pspin"):
        return ["--handlers", os.path.join(ROOT, "sw/handlers/kernels/reduce.c"), "--messages", "4"]
    if name == "groq-dragonfly-10440.yaml":
        return ["--bytes", "64KiB"]
    return ["--bytes", "256KiB"]


def without_host(stats):
    run = stats.get("run", {})
    for k in HOST_KEYS:
        run.pop(k, None)
    return stats


def same_outputs(a, b):
    """(files compared, first difference or None)."""
    n = 0
    for dirpath, _, files in os.walk(a):
        for f in sorted(files):
            pa = os.path.join(dirpath, f)
            rel = os.path.relpath(pa, a)
            pb = os.path.join(b, rel)
            n += 1
            if not os.path.exists(pb):
                return n, f"{rel} only in the first run"
            if f == "stats.json":
                with open(pa) as fa, open(pb) as fb:
                    if without_host(json.load(fa)) != without_host(json.load(fb)):
                        return n, "stats.json differs"
            elif not filecmp.cmp(pa, pb, shallow=False):
                return n, f"{rel} differs"
    return n, None


def determinism(fabricvp, skip, tmp):
    rows, ok = [], True
    names = []
    for dirpath, _, files in os.walk(os.path.join(ROOT, "platforms")):
        names += [os.path.relpath(os.path.join(dirpath, f), os.path.join(ROOT, "platforms")) for f in files]
    for name in sorted(names):
        if not name.endswith(".yaml") or name in skip:
            continue
        args = [fabricvp, "run", os.path.join(ROOT, "platforms", name), "--seed", "7", "-q"] + platform_args(name)
        outs, codes, t0 = [], [], time.time()
        for i in range(2):
            out = os.path.join(tmp, "det", name, str(i))
            r = subprocess.run(args + ["-o", out], capture_output=True, text=True)
            outs.append(out)
            codes.append(r.returncode)
        wall = (time.time() - t0) / 2
        if codes != [0, 0]:
            rows.append((name, " ".join(platform_args(name)).replace(ROOT + "/", ""), 0, f"exit {codes}", wall))
            ok = False
            continue
        n, diff = same_outputs(outs[0], outs[1])
        rows.append((name, " ".join(platform_args(name)).replace(ROOT + "/", ""), n, diff or "identical", wall))
        ok &= diff is None
    lines = ["| platform | run | files compared | two runs, seed 7 | wall per run |", "|---|---|---:|---|---:|"]
    for name, a, n, verdict, wall in rows:
        lines.append(f"| {name} | `{a}` | {n} | {verdict} | {wall:.1f} s |")
    return lines, ok


def ber(fabricvp, tmp, jobs):
    db = os.path.join(tmp, "ber.sqlite")
    r = subprocess.run([fabricvp, "sweep", os.path.join(ROOT, "sweeps/reliability/ber.yaml"), "--jobs", str(jobs),
                        "-q", "-o", os.path.join(tmp, "ber"), "--db", db], capture_output=True, text=True)
    if r.returncode != 0:
        return [f"BER sweep failed (exit {r.returncode}): {r.stdout[-400:]} {r.stderr[-400:]}"], False
    q = """SELECT "--ber", count(*), sum(status = 'ok'), sum("phy.codewords"), sum("phy.bit_errors"),
                  sum("phy.corrected_codewords"), sum("phy.uncorrectable_codewords"),
                  sum("phy.miscorrected_codewords"), sum("phy.silent_corrupted_vectors"),
                  sum("workload.mismatched_elements"), sum("workload.replays")
           FROM runs GROUP BY 1 ORDER BY CAST("--ber" AS REAL)"""
    lines = ["| BER | runs (ok) | bits sent | bit errors | corrected codewords | uncorrectable | miscorrected "
             "| silently corrupted vectors | wrong elements in results | replays |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    ok = True
    with sqlite3.connect(db) as c:
        for (rate, n, nok, cw, errs, corr, unc, mis, silent, wrong, replays) in c.execute(q):
            bits = cw * 544 * 10  # RS(544,514) codewords of 10-bit symbols
            lines.append(f"| {float(rate):.0e} | {n} ({nok}) | {bits:.2e} | {errs:,} | {corr:,} | {unc:,} | {mis:,} "
                         f"| {silent:,} | {wrong:,} | {replays:,} |")
            ok &= nok == n and silent == 0 and wrong == 0
    return lines, ok


def fuzz(asan_build, runs):
    r = subprocess.run([os.path.join(ROOT, "scripts/fuzz.sh"), "--all", asan_build, "--runs", str(runs)],
                       capture_output=True, text=True)
    lines = ["| target | executions | exec/s | seconds | corpus | result |", "|---|---:|---:|---:|---:|---|"]
    for row in r.stdout.splitlines()[1:]:
        f = row.split(None, 5)
        if len(f) == 6:
            lines.append("| " + " | ".join(f) + " |")
    return lines, r.returncode == 0


def asan_suite(asan_build):
    t0 = time.time()
    r = subprocess.run(["ctest", "--test-dir", asan_build, "-j2"], capture_output=True, text=True)
    m = re.search(r"(\d+)% tests passed, (\d+) tests failed out of (\d+)", r.stdout)
    wall = time.time() - t0
    if not m:
        return [f"ctest in {asan_build} gave no summary (exit {r.returncode})"], False
    failed, total = int(m.group(2)), int(m.group(3))
    return [f"{total - failed} of {total} tests pass in the clang AddressSanitizer + UBSan tree "
            f"(`ctest --test-dir {os.path.relpath(asan_build, ROOT)} -j2`, {wall / 60:.0f} min)."], failed == 0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--asan-build", default=os.path.join(ROOT, "build-asan"))
    ap.add_argument("--fuzz-runs", type=int, default=0, help="executions per fuzz target (0: skip)")
    ap.add_argument("--run-asan", action="store_true", help="run the sanitizer suite (about 12 min)")
    ap.add_argument("--skip", nargs="*", default=[], help="platform files to leave out of the determinism check")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--no-write", action="store_true", help="print only; leave docs/reliability.md alone")
    a = ap.parse_args()
    fabricvp = os.path.join(os.path.abspath(a.build), "bin", "fabricvp")
    if not os.access(fabricvp, os.X_OK):
        sys.exit(f"reliability.py: {fabricvp} not found; build first (make run)")
    ok = True
    out = [BEGIN, "",
           f"Measured {datetime.date.today().isoformat()} on this machine ({os.cpu_count()} cores) by "
           f"`scripts/reliability.py{' --fuzz-runs %d' % a.fuzz_runs if a.fuzz_runs else ''}"
           f"{' --run-asan' if a.run_asan else ''}`.", ""]
    with tempfile.TemporaryDirectory(prefix="fabricvp-reliability-") as tmp:
        print("determinism over every platform file ...", file=sys.stderr)
        lines, good = determinism(fabricvp, set(a.skip), tmp)
        out += ["**Determinism**: every platform file run twice with the same seed; stats.json (host timings "
                "aside) and every other output byte for byte.", ""] + lines + [""]
        ok &= good
        print("BER sweep ...", file=sys.stderr)
        lines, good = ber(fabricvp, tmp, a.jobs)
        out += ["**Silent corruption vs bit-error rate** (`sweeps/reliability/ber.yaml`: a 16 MiB all-reduce on "
                "a GroqNode, 8 seeds per rate, RS(544,514) FEC on every C2C link, every result checked against "
                "the host reference):", ""] + lines + [""]
        ok &= good
        if a.fuzz_runs:
            print("fuzzing ...", file=sys.stderr)
            lines, good = fuzz(os.path.abspath(a.asan_build), a.fuzz_runs)
            out += [f"**Fuzzing**, {a.fuzz_runs:,} executions per target from the committed seeds:", ""] + lines + [""]
            ok &= good
        if a.run_asan:
            print("sanitizer suite ...", file=sys.stderr)
            lines, good = asan_suite(os.path.abspath(a.asan_build))
            out += ["**Sanitizers**: " + lines[0], ""]
            ok &= good
    out.append(END)
    block = "\n".join(out)
    print(block)
    if not a.no_write:
        doc = os.path.join(ROOT, "docs/reliability.md")
        text = open(doc).read()
        if BEGIN in text and END in text:
            text = text[:text.index(BEGIN)] + block + text[text.index(END) + len(END):]
        else:
            text = text.rstrip("\n") + "\n\n## Figures\n\n" + block + "\n"
        open(doc, "w").write(text)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
