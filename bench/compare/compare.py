#!/usr/bin/env python3
"""bench/compare/compare.py — runs weft's bench programs, the same workloads
in PyTorch (torch_bench.py) and the cnn inference in ONNX Runtime
(ort_bench.py) in one go, and prints a table: benchmark, weft, PyTorch,
ONNX Runtime, the ratios and the target of issue 6. It does not build
anything (run.sh does) and never judges beyond printing whether a target
holds in this run.

PyTorch first runs a short search over its thread/allocator settings
(environment variables, which must be set before the process starts):
quick mlp and cnn training runs on a subset under each setting; the setting
with the best geometric mean of samples/s is then used for every PyTorch
workload, and the table names it. Then each workload runs on each side back
to back (weft, PyTorch, ONNX Runtime), --repeat times, keeping each side's
best run, so that a change in the machine's load hits both sides.

  python3 compare.py --top /work/main [--python PY] [--skip-search]
                     [--repeat N] [--limit N] [--only cnn-infer,gemm]
"""
import argparse
import json
import math
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
BIG = str(1 << 30)  # glibc malloc thresholds "raised": 1 GiB
SETTINGS = [
    {},
    {"OPENBLAS_NUM_THREADS": "1"},
    {"MALLOC_MMAP_THRESHOLD_": BIG, "MALLOC_TRIM_THRESHOLD_": BIG},
    {"OPENBLAS_NUM_THREADS": "1", "MALLOC_MMAP_THRESHOLD_": BIG,
     "MALLOC_TRIM_THRESHOLD_": BIG},
]


def describe(env):
    return " ".join(f"{k}={v}" for k, v in env.items()) or "default"


def run_json(cmd, env=None, cwd=None):
    """Runs cmd, echoes its stderr, returns its JSON lines."""
    full = dict(os.environ)
    full.update(env or {})
    t0 = time.time()
    p = subprocess.run(cmd, env=full, cwd=cwd, capture_output=True, text=True)
    sys.stderr.write(p.stderr)
    if p.returncode:
        raise SystemExit(f"compare: {' '.join(cmd)} exited {p.returncode}")
    out = [json.loads(l) for l in p.stdout.splitlines() if l.startswith("{")]
    shown = [os.path.basename(c) for c in cmd[:2]] + cmd[2:]
    print(f"  {time.time() - t0:6.1f} s  {describe(env or {})}  "
          f"{' '.join(shown)}", file=sys.stderr, flush=True)
    return out


def pick(records, bench, key, **match):
    for r in records:
        if r.get("bench") == bench and all(r.get(k) == v
                                           for k, v in match.items()):
            return r.get(key)
    return None


# The figure that ranks repeated runs of a result: key, higher is better.
PRIMARY = [("samples_per_s", True), ("latency_ms", False),
           ("graph_gflops", True), ("gflops", True), ("us_per_node", False),
           ("peak_rss_mib", False)]


def best_of(kept, new):
    """kept and new are the lines of two runs of one command; returns, line
    by line, the better of the two by its primary figure."""
    if not kept:
        return new
    out = []
    for k, n in zip(kept, new):
        for key, higher in PRIMARY:
            if key in k and key in n:
                out.append(n if (n[key] > k[key]) == higher and
                           n[key] != k[key] else k)
                break
        else:
            out.append(k)
    return out


# The workloads, in the order they run (names for --only).
WORKLOADS = ("mlp", "cnn", "cnn-infer", "gemm", "dispatch")


def load():
    return "load average %.2f %.2f %.2f" % os.getloadavg()


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--top", default=os.path.dirname(os.path.dirname(HERE)),
                   help="weft's build tree (holds bench/train etc.)")
    p.add_argument("--python", default=sys.executable,
                   help="the interpreter with torch and onnxruntime")
    p.add_argument("--skip-search", action="store_true",
                   help="run PyTorch at OPENBLAS_NUM_THREADS=1 with raised "
                        "malloc thresholds without searching")
    p.add_argument("--search-limit", type=int, default=3000,
                   help="training samples of each search run")
    p.add_argument("--repeat", type=int, default=1,
                   help="run each workload N times per side, keep the best")
    p.add_argument("--limit", type=int, default=0,
                   help="train PyTorch on every (60000/LIMIT)-th sample only "
                        "(samples/s over a partial epoch; for quick runs)")
    p.add_argument("--only", default="",
                   help="comma-separated workloads to run (default all): "
                        + ", ".join(WORKLOADS))
    a = p.parse_args()
    only = [w for w in a.only.split(",") if w]
    for w in only:
        if w not in WORKLOADS:
            p.error(f"--only: unknown workload '{w}' (known: "
                    f"{', '.join(WORKLOADS)})")
    bench = lambda name: os.path.join(a.top, "bench", name)
    py = lambda script: [a.python, os.path.join(HERE, script)]
    start_load = load()
    print(f"compare: start, {start_load}", file=sys.stderr)

    print("PyTorch settings:", file=sys.stderr)
    search = []
    if a.skip_search:
        best = SETTINGS[-1]
    else:
        lim = ["--limit", str(a.search_limit)]
        for env in SETTINGS:
            m = pick(run_json(py("torch_bench.py") + ["train", "--model", "mlp"]
                              + lim, env), "train", "samples_per_s")
            c = pick(run_json(py("torch_bench.py") + ["train", "--model", "cnn"]
                              + lim, env), "train", "samples_per_s")
            search.append((env, m, c, math.sqrt(m * c)))
        best = max(search, key=lambda s: s[3])[0]

    # Each workload on each side back to back, so that a change in the
    # machine's load hits both; --repeat keeps each side's best run.
    print(f"workloads (PyTorch at {describe(best)}):", file=sys.stderr)
    lim = ["--limit", str(a.limit)] if a.limit else []
    weft, torch, ort = [], [], []
    workloads = [
        ("mlp", [bench("train"), "--model", "mlp"],
         py("torch_bench.py") + ["train", "--model", "mlp"] + lim, None),
        ("cnn", [bench("train"), "--model", "cnn"],
         py("torch_bench.py") + ["train", "--model", "cnn"] + lim, None),
        ("cnn-infer", [bench("cnn_infer")], py("torch_bench.py") + ["infer"],
         py("ort_bench.py")),
        ("gemm", [bench("gemm")], py("torch_bench.py") + ["gemm"], None),
        ("dispatch", [bench("dispatch")], py("torch_bench.py") + ["dispatch"],
         None),
    ]
    for name, wcmd, tcmd, ocmd in workloads:
        if only and name not in only:
            continue
        w, t, o = [], [], []
        for _ in range(a.repeat):
            w = best_of(w, run_json(wcmd))
            t = best_of(t, run_json(tcmd, best))
            if ocmd:
                o = best_of(o, run_json(ocmd))
        weft += w
        torch += t
        ort += o
    end_load = load()

    # (name, unit, higher is better, weft, PyTorch, ORT, target text,
    #  target test on (weft, torch, ort))
    rows = []
    for model, need in (("mlp", 2.0), ("cnn", 1.5)):
        rows.append((f"{model} training", "samples/s", True,
                     pick(weft, "train", "samples_per_s", model=model),
                     pick(torch, "train", "samples_per_s", model=model), None,
                     f">= {need}x PyTorch",
                     lambda w, t, o, need=need: w >= need * t))
    rows.append(("cnn-infer batch 1", "ms", False,
                 pick(weft, "cnn-infer", "latency_ms", batch=1),
                 pick(torch, "cnn-infer", "latency_ms", batch=1),
                 pick(ort, "cnn-infer", "latency_ms", batch=1),
                 "<= ONNX Runtime", lambda w, t, o: w <= o))
    rows.append(("cnn-infer batch 64", "samples/s", True,
                 pick(weft, "cnn-infer", "samples_per_s", batch=64),
                 pick(torch, "cnn-infer", "samples_per_s", batch=64),
                 pick(ort, "cnn-infer", "samples_per_s", batch=64),
                 ">= ONNX Runtime", lambda w, t, o: w >= o))
    for n in (512, 1024, 2048):
        ratio = pick(weft, "gemm", "graph_vs_best_direct", n=n)
        rows.append((f"gemm N={n}", "GFLOP/s", True,
                     pick(weft, "gemm", "graph_gflops", n=n),
                     pick(torch, "gemm", "gflops", n=n), None,
                     f"graph >= 0.97x direct ({ratio})" if ratio else
                     "graph >= 0.97x direct",
                     lambda w, t, o, r=ratio: r is not None and r >= 0.97))
    rows.append(("dispatch", "us/node", False,
                 pick(weft, "dispatch", "us_per_node"),
                 pick(torch, "dispatch", "us_per_node"), None, "<= 0.2 us",
                 lambda w, t, o: w <= 0.2))
    rows.append(("cnn training peak RSS", "MiB", False,
                 pick(weft, "train-peak-rss", "peak_rss_mib"),
                 pick(torch, "train-peak-rss", "peak_rss_mib"), None,
                 "<= PyTorch", lambda w, t, o: w <= t))

    def ratio(hib, w, other):
        if w is None or other is None or not w or not other:
            return "-"
        return "%.2fx" % (w / other if hib else other / w)

    fmt = lambda v: "-" if v is None else ("%.4g" % v if v < 10 else
                                           "%.1f" % v)
    head = ("benchmark", "unit", "weft", "PyTorch", "ONNX Runtime",
            "ratio vs PyTorch", "ratio vs ORT", "target", "met")
    table = [head]
    for name, unit, hib, w, t, o, target, test in rows:
        if w is None and t is None and o is None:
            continue  # a workload --only left out
        try:
            met = "yes" if test(w, t, o) else "no"
        except TypeError:
            met = "-"
        table.append((name, unit, fmt(w), fmt(t), fmt(o), ratio(hib, w, t),
                      ratio(hib, w, o), target, met))
    widths = [max(len(r[i]) for r in table) for i in range(len(head))]
    line = lambda r: "  ".join(c.ljust(widths[i]) for i, c in enumerate(r))
    print(line(head))
    print("  ".join("-" * w for w in widths))
    for r in table[1:]:
        print(line(r))
    print()
    print("ratios: > 1 means weft is better (higher throughput, or lower "
          "latency/time/memory).")
    print(f"PyTorch setting: "
          f"{describe(best)}, torch.set_num_threads(2)"
          + (" (chosen by search)" if search else " (not searched)"))
    for env, m, c, g in search:
        print(f"  search: mlp {m:.1f} samples/s, cnn {c:.1f} samples/s "
              f"({a.search_limit} samples) at {describe(env)}")
    if pick(weft, "train", "data") is not None:
        print(f"weft training data: {pick(weft, 'train', 'data')}; PyTorch: "
              f"{pick(torch, 'train', 'data')}"
              + (f", partial epoch ({a.limit} samples)" if a.limit else ""))
    if ort:
        print(f"ONNX Runtime: {pick(ort, 'cnn-infer', 'runtime')}, 2 "
              f"intra-op threads")
    print(f"each figure: the best of {a.repeat} run(s) per side, the sides "
          f"run back to back per workload")
    print(f"machine: {os.cpu_count()} cpus; {start_load} at start, "
          f"{end_load} at end")


if __name__ == "__main__":
    sys.exit(main())
