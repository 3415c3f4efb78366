#!/usr/bin/env python3
"""bench/startup.py — what starting weft costs, process start included: the
wall time of one `weft run` of the cnn saved model on eight images (the
README's model) and of one `weft plugins`, the CPU time (user + system) of
each, and the peak resident memory of each process. One JSON line per
result; nothing is judged.

  bench/startup.py [--runs N] [--model DIR --sample FILE.npy]
                   [--compare OTHER_BUILDDIR] [BUILDDIR]

BUILDDIR (default: $top_builddir or .) is a configured build tree; its
weft is run as installed programs are, without libtool's wrapper script
(tools/.libs/weft with the tree's libweft on LD_LIBRARY_PATH), with
WEFT_CONFIG and WEFT_PLUGIN_PATH unset, so it loads every in-tree plugin.
Without --model the cnn is trained for one short epoch and exported
(examples/train_fashion). --compare runs another build's weft the same
way, the two alternating call by call so that both see the same machine
load, and adds one line with the ratios (other / this)."""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time


def weft_command(builddir):
    """The weft program of builddir and the environment it runs in."""
    real = os.path.join(builddir, "tools", ".libs", "weft")
    env = {k: v for k, v in os.environ.items()
           if k not in ("WEFT_CONFIG", "WEFT_PLUGIN_PATH")}
    if os.access(real, os.X_OK):
        lib = os.path.join(builddir, "core", ".libs")
        env["LD_LIBRARY_PATH"] = lib + (":" + env["LD_LIBRARY_PATH"]
                                        if env.get("LD_LIBRARY_PATH") else "")
        return [real], env
    return [os.path.join(builddir, "tools", "weft")], env


def run_once(cmd, env):
    """(wall ms, cpu ms, peak RSS KiB) of one run of cmd, which must
    succeed."""
    start = time.perf_counter()
    p = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE)
    _, status, usage = os.wait4(p.pid, 0)
    wall = (time.perf_counter() - start) * 1e3
    err = p.stderr.read().decode(errors="replace")
    p.stderr.close()
    p.returncode = os.waitstatus_to_exitcode(status)
    if p.returncode != 0:
        sys.exit("bench/startup.py: %s failed (%d): %s"
                 % (" ".join(cmd), p.returncode, err))
    cpu = (usage.ru_utime + usage.ru_stime) * 1e3
    return wall, cpu, usage.ru_maxrss


def summary(samples):
    walls = [s[0] for s in samples]
    cpus = [s[1] for s in samples]
    return {"ms_median": round(statistics.median(walls), 2),
            "ms_min": round(min(walls), 2),
            "ms_mean": round(statistics.fmean(walls), 2),
            "cpu_ms_median": round(statistics.median(cpus), 2),
            "rss_mib": round(max(s[2] for s in samples) / 1024.0, 1),
            "runs": len(samples)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("builddir", nargs="?",
                    default=os.environ.get("top_builddir", "."))
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--model")
    ap.add_argument("--sample")
    ap.add_argument("--compare", metavar="OTHER_BUILDDIR")
    a = ap.parse_args()
    if bool(a.model) != bool(a.sample):
        ap.error("--model and --sample go together")

    with tempfile.TemporaryDirectory() as tmp:
        model, sample = a.model, a.sample
        if not model:
            model, sample = os.path.join(tmp, "cnn"), os.path.join(
                tmp, "sample.npy")
            subprocess.run([os.path.join(a.builddir, "examples",
                                         "train_fashion"),
                            "--model", "cnn", "--epochs", "1", "--limit",
                            "640", "--quiet", "--export", model,
                            "--sample", sample],
                           check=True, stdout=subprocess.DEVNULL)
        builds = {"this": a.builddir}
        if a.compare:
            builds["other"] = a.compare
        cmds = {}
        for name, d in builds.items():
            weft, env = weft_command(d)
            cmds[name] = {
                "run": (weft + ["run", model, "--input", "image=" + sample,
                                "--output", os.path.join(tmp, "out-" + name)],
                        env),
                "plugins": (weft + ["plugins"], env),
            }
        samples = {(b, c): [] for b in builds for c in ("run", "plugins")}
        for c in ("run", "plugins"):  # one warm-up call each (page cache)
            for b in builds:
                run_once(*cmds[b][c])
        for _ in range(a.runs):
            for c in ("run", "plugins"):
                for b in builds:
                    samples[(b, c)].append(run_once(*cmds[b][c]))
        results = {}
        for (b, c), s in samples.items():
            r = summary(s)
            results[(b, c)] = r
            print(json.dumps(dict(bench="startup", command="weft " + c,
                                  build=os.path.abspath(builds[b]), **r)))
        if a.compare:
            ratio = {}
            for c in ("run", "plugins"):
                t, o = results[("this", c)], results[("other", c)]
                ratio[c] = {
                    "ms_median": round(o["ms_median"] / t["ms_median"], 2),
                    "cpu_ms_median": round(o["cpu_ms_median"]
                                           / t["cpu_ms_median"], 2),
                    "rss": round(o["rss_mib"] / t["rss_mib"], 2)}
            print(json.dumps({"bench": "startup", "ratio_other_over_this":
                              ratio, "runs": a.runs}))


if __name__ == "__main__":
    main()
