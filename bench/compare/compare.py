#!/usr/bin/env python3
"""bench/compare/compare.py — runs weft's bench programs and the same
workloads in PyTorch 2 (torch_bench.py: eager and torch.compile), TensorFlow
2 (tf_bench.py: a tf.function step, XLA off and on) and, for the cnn
inference, ONNX Runtime (ort_bench.py), each run in a process of its own,
the sides interleaved per workload for --rounds rounds; then prints one
table: each side's median (and best), weft's ratio to each peer, the
targets of issue 24 with met / not met, each side's spread (slowest /
fastest run) and weft's achieved GFLOP/s as a fraction of the machine's
FMA peak (bench/fma_peak). It builds nothing (run.sh does) and judges
nothing beyond printing whether a target holds in this run.

Of a peer's modes (PyTorch eager / compiled, TensorFlow XLA off / on) the
one with the better median is kept per workload, and the table names it.

With --burst BUSY/PERIOD every timed run (each side's alike) has
bench/burst beside it, busy BUSY ms of every PERIOD ms on the last CPU:
a disturbance that can be repeated, where the host's own comes when it
will; the spread and the fall from a run without it show how much of a
core's short absences each side turns into lost speed.

  python3 compare.py --top BUILD [--python PY] [--rounds 3] [--limit N]
                     [--only mlp,transformer] [--modes eager,compile]
                     [--burst 2/10] [--accuracy] [--markdown]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
BIG = str(1 << 30)  # glibc malloc thresholds "raised": 1 GiB
# PyTorch's allocator and thread settings: large tensors stay on the heap
# instead of being mmapped and unmapped every step (measured to help its
# training). Both sides keep GNU OpenMP's default spin (on a loaded
# machine, GOMP_SPINCOUNT=1000 in the environment helps both alike).
TORCH_ENV = {"MALLOC_MMAP_THRESHOLD_": BIG, "MALLOC_TRIM_THRESHOLD_": BIG}

# Multiply-adds counted as 2 flops, of the matrix products and
# convolutions only (elementwise work, softmax and normalisation are left
# out); training counts 3x the forward pass (forward, input and weight
# gradients) less the first layer's input gradient, which no framework
# computes (the images need none).
FWD_FLOPS = {
    "mlp": 2 * (784 * 256 + 256 * 128 + 128 * 10),
    "cnn": 2 * (28 * 28 * 16 * 9 + 14 * 14 * 32 * 9 * 16 + 1568 * 10),
    "transformer": 2 * (28 * 28 * 64                       # token embedding
                        + 2 * (4 * 28 * 64 * 64            # q, k, v, output
                               + 2 * 28 * 28 * 64          # q k^T, p v
                               + 2 * 28 * 64 * 128)        # the MLP
                        + 64 * 10),
}


# The first layer's forward flops: its input gradient is never computed.
FIRST_LAYER_FLOPS = {
    "mlp": 2 * 784 * 256,
    "cnn": 2 * 28 * 28 * 16 * 9,
    "transformer": 2 * 28 * 28 * 64,
}


# Every side times whole training epochs until this many seconds have
# passed, so that each side's figure covers a like span of the machine's
# load: a figure timed over one second moves with one slow moment of this
# machine far more than one timed over ten, and fixed work would give the
# fastest side the shortest window and so the widest spread. A side whose
# single epoch takes longer times that one epoch.
TRAIN_SECONDS = {"mlp": 3, "cnn": 6, "transformer": 10}


def train_flops(model):
    return 3 * FWD_FLOPS[model] - FIRST_LAYER_FLOPS[model]


class Burst:
    """bench/burst running beside each timed run while the context lasts
    (nothing when spec is empty)."""

    def __init__(self, program, spec):
        self.cmd = None
        if spec:
            busy, period = spec.split("/")
            self.cmd = [program, "--busy", busy, "--period", period]
        self.proc = None
        self.shares = []  # the CPU share each burst process had

    def __enter__(self):
        if self.cmd:
            self.proc = subprocess.Popen(self.cmd, stdout=subprocess.PIPE,
                                         text=True)
        return self

    def __exit__(self, *exc):
        if self.proc:
            self.proc.terminate()
            out, _ = self.proc.communicate()
            for line in out.splitlines():
                if line.startswith("{"):
                    self.shares.append(json.loads(line).get("cpu_share"))
            self.proc = None
        return False


def burst_spec(text):
    """'BUSY/PERIOD' in ms, 0 < BUSY <= PERIOD; argparse's type."""
    try:
        busy, period = (float(x) for x in text.split("/"))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"'{text}' is not BUSY/PERIOD in milliseconds (e.g. 2/10)")
    if not 0 < busy <= period:
        raise argparse.ArgumentTypeError(
            f"'{text}': BUSY must be above 0 and at most PERIOD")
    return text


def describe(env):
    return " ".join(f"{k}={v}" for k, v in env.items()) or "default"


def run_json(cmd, env=None, log=None):
    """Runs cmd, returns its JSON lines (None when it failed: the failure is
    reported and the table shows '-')."""
    full = dict(os.environ)
    full.update(env or {})
    t0 = time.time()
    p = subprocess.run(cmd, env=full, capture_output=True, text=True)
    shown = " ".join([os.path.basename(c) for c in cmd[:2]] + cmd[2:])
    if log:
        log.write(p.stderr)
    if p.returncode:
        print(f"  FAILED ({p.returncode}): {shown}\n{p.stderr[-2000:]}",
              file=sys.stderr, flush=True)
        return None
    out = [json.loads(l) for l in p.stdout.splitlines() if l.startswith("{")]
    print(f"  {time.time() - t0:6.1f} s  {shown}", file=sys.stderr, flush=True)
    for r in out:  # the raw lines too, so that a cut-short run keeps them
        print(f"           {json.dumps(r)}", file=sys.stderr, flush=True)
    return out


def pick(records, bench, key, **match):
    for r in records or []:
        if r.get("bench") == bench and all(r.get(k) == v
                                           for k, v in match.items()):
            return r.get(key)
    return None


def load():
    return "load average %.2f %.2f %.2f" % os.getloadavg()


# The workloads, in the order they run (names for --only).
WORKLOADS = ("mlp", "cnn", "transformer", "cnn-infer", "gemm", "dispatch")


class Side:
    """One framework: per workload a list of modes, each a command; every
    round runs every mode once and records its JSON lines."""

    def __init__(self, name):
        self.name = name
        self.runs = {}  # (workload, mode) -> [records of each round]

    def add(self, workload, mode, records):
        self.runs.setdefault((workload, mode), []).append(records)

    def series(self, workload, bench, key, **match):
        """{mode: [value per round]} of one figure."""
        out = {}
        for (w, mode), rounds in self.runs.items():
            if w != workload:
                continue
            vals = [pick(r, bench, key, **match) for r in rounds]
            vals = [v for v in vals if v is not None]
            if vals:
                out[mode] = vals
        return out


def summarise(series, higher):
    """(median, best, spread, mode) of the mode with the better median;
    spread = slowest / fastest run (>= 1). None when nothing ran."""
    best = None
    for mode, vals in series.items():
        med = statistics.median(vals)
        top = max(vals) if higher else min(vals)
        spread = (max(vals) / min(vals)) if min(vals) > 0 else float("inf")
        cand = (med, top, spread, mode, len(vals))
        if best is None or (med > best[0] if higher else med < best[0]):
            best = cand
    return best


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--top", default=os.path.dirname(os.path.dirname(HERE)),
                   help="weft's build tree (holds bench/train etc.)")
    p.add_argument("--python", default=sys.executable,
                   help="the interpreter with torch, tensorflow, onnxruntime")
    p.add_argument("--rounds", type=int, default=3,
                   help="interleaved rounds per workload (median and best)")
    p.add_argument("--limit", type=int, default=0,
                   help="train the peers on every (60000/LIMIT)-th sample "
                        "only, weft too (samples/s over a partial epoch)")
    p.add_argument("--only", default="",
                   help="comma-separated workloads to run (default all): "
                        + ", ".join(WORKLOADS))
    p.add_argument("--peers", default="torch,tf,ort",
                   help="which peers run (torch, tf, ort)")
    p.add_argument("--torch-modes", default="eager,compile",
                   help="PyTorch modes tried (eager, compile)")
    p.add_argument("--tf-modes", default="off,on",
                   help="TensorFlow XLA settings tried (off, on)")
    p.add_argument("--accuracy", action="store_true",
                   help="also train the transformer 3 epochs on each side "
                        "and print the test accuracies (slow)")
    p.add_argument("--burst", type=burst_spec, default=None,
                   help="BUSY/PERIOD: bench/burst beside every timed run, "
                        "busy BUSY ms of every PERIOD ms on the last CPU")
    p.add_argument("--markdown", action="store_true",
                   help="print the table in Markdown")
    a = p.parse_args()
    only = [w for w in a.only.split(",") if w]
    for w in only:
        if w not in WORKLOADS:
            p.error(f"--only: unknown workload '{w}' (known: "
                    f"{', '.join(WORKLOADS)})")
    peers = [x for x in a.peers.split(",") if x]
    bench = lambda name: os.path.join(a.top, "bench", name)
    py = lambda script: [a.python, os.path.join(HERE, script)]
    start_load = load()
    print(f"compare: start, {start_load}", file=sys.stderr, flush=True)

    # The best of three: one read in a slow moment of the machine would
    # put the workloads above 100% of it.
    peaks = [pick(run_json([bench("fma_peak"), "--threads", "2"]),
                  "fma-peak", "gflops", threads=2) for _ in range(3)]
    peaks = [p for p in peaks if p]
    peak = max(peaks) if peaks else None

    lim = ["--limit", str(a.limit)] if a.limit else []
    tmodes = [m for m in a.torch_modes.split(",") if m]
    xmodes = [m for m in a.tf_modes.split(",") if m]

    def torch_cmds(args, compiled):
        return [(m, py("torch_bench.py") + args + ["--compile", "on" if m ==
                                                    "compile" else "off"],
                 TORCH_ENV)
                for m in (tmodes if compiled else ["eager"])]

    def tf_cmds(args, xla):
        return [(f"XLA {m}", py("tf_bench.py") + args + ["--xla", m], {})
                for m in (xmodes if xla else ["off"])]

    # workload: (weft command, {peer: [(mode, command, env)]})
    plan = {}
    for model in ("mlp", "cnn", "transformer"):
        # (a --limit run is a quick look: each program's own default)
        secs = [] if a.limit else ["--min-seconds", str(TRAIN_SECONDS[model])]
        targs = ["train", "--model", model] + lim + secs
        plan[model] = ([bench("train"), "--model", model] + lim + secs,
                       {"torch": torch_cmds(targs, True),
                        "tf": tf_cmds(targs, True)})
    plan["cnn-infer"] = ([bench("cnn_infer")],
                         {"torch": torch_cmds(["infer"], True),
                          "tf": tf_cmds(["infer"], True),
                          "ort": [("", py("ort_bench.py"), {})]})
    plan["gemm"] = ([bench("gemm")], {"torch": torch_cmds(["gemm"], False),
                                      "tf": tf_cmds(["gemm"], False)})
    plan["dispatch"] = ([bench("dispatch"), "50"],  # 50 timed runs
                        {"torch": torch_cmds(["dispatch"], False),
                         "tf": tf_cmds(["dispatch"], False)})

    sides = {n: Side(n) for n in ("weft", "torch", "tf", "ort")}
    burst = Burst(bench("burst"), a.burst)
    loads = {}
    for name in WORKLOADS:
        if only and name not in only:
            continue
        wcmd, pcmds = plan[name]
        print(f"{name} ({load()}):", file=sys.stderr, flush=True)
        for r in range(a.rounds):
            with burst:
                sides["weft"].add(name, "", run_json(wcmd))
            for peer in ("torch", "tf", "ort"):
                if peer not in peers:
                    continue
                for mode, cmd, env in pcmds.get(peer, []):
                    with burst:
                        sides[peer].add(name, mode, run_json(cmd, env))
        loads[name] = load()

    accuracy = {}
    if a.accuracy and (not only or "transformer" in only):
        ex = os.path.join(a.top, "examples", "train_fashion")
        out = subprocess.run([ex, "--model", "transformer", "--epochs", "3",
                              "--quiet"], capture_output=True, text=True)
        for line in out.stdout.splitlines():
            if "test accuracy" in line:
                accuracy["weft"] = line.strip()
        for peer, script in (("torch", "torch_bench.py"),
                             ("tf", "tf_bench.py")):
            if peer in peers:
                recs = run_json(py(script) + ["train", "--model",
                                              "transformer", "--epochs", "3",
                                              "--eval"],
                                TORCH_ENV if peer == "torch" else {})
                acc = pick(recs, "train", "test_accuracy")
                accuracy[peer] = f"test accuracy {acc} after 3 epochs"
    end_load = load()

    # Rows: (label, workload, bench, key, match, unit, higher is better,
    #        flops per unit for the roofline or None, targets)
    # A target: (peer or None, needed ratio or absolute bound, text);
    # ("spread:" peer, None, text): weft's spread no worse than the peer's.
    rows = []
    for model, t_need, x_need in (("mlp", 2.5, 3.5), ("cnn", 2.5, 2.0),
                                  ("transformer", 1.5, 1.5)):
        rows.append((f"{model} training", model, "train", "samples_per_s", {},
                     "samples/s", True, train_flops(model),
                     [("torch", t_need, f">= {t_need}x PyTorch"),
                      ("tf", x_need, f">= {x_need}x TF"),
                      ("spread:torch", None, "spread <= PyTorch's")]))
    rows.append(("cnn-infer batch 1", "cnn-infer", "cnn-infer", "latency_ms",
                 {"batch": 1}, "ms", False, ("latency", FWD_FLOPS["cnn"]),
                 [("ort", 1.5, ">= 1.5x ORT"),
                  ("spread:ort", None, "spread <= ORT's")]))
    rows.append(("cnn-infer batch 64", "cnn-infer", "cnn-infer",
                 "samples_per_s", {"batch": 64}, "samples/s", True,
                 FWD_FLOPS["cnn"], [("ort", 1.3, ">= 1.3x ORT"),
                                    ("spread:ort", None, "spread <= ORT's")]))
    for n in (512, 1024, 2048):
        rows.append((f"gemm N={n}", "gemm", "gemm", "graph_gflops", {"n": n},
                     "GFLOP/s", True, ("gflops",),
                     [("direct", 0.97, ">= 0.97x direct call")]))
    # the median step of each run: the mean of 50 steps of 1 ms moves by
    # 10-40% with one slow moment of this shared machine, on every side
    rows.append(("dispatch", "dispatch", "dispatch", "us_per_node_median", {},
                 "us/node", False, None, [(None, 0.10, "<= 0.10 us")]))
    rows.append(("cnn training peak RSS", "cnn", "train-peak-rss",
                 "peak_rss_mib", {}, "MiB", False, None,
                 [(None, 200, "<= 200 MiB")]))
    rows.append(("transformer training peak RSS", "transformer",
                 "train-peak-rss", "peak_rss_mib", {}, "MiB", False, None,
                 [("torch", 2.0, "<= 0.5x PyTorch")]))

    peer_key = {"torch": "samples_per_s", "tf": "samples_per_s"}
    fmt = lambda v: "-" if v is None else ("%.3g" % v if v < 10 else
                                           "%.1f" % v if v < 1000 else
                                           "%.0f" % v)
    head = ["benchmark", "unit", "weft", "PyTorch", "TensorFlow", "ORT",
            "vs PyTorch", "vs TF", "vs ORT", "target", "met",
            "spread w/pt/tf/ort", "GFLOP/s (of peak)"]
    table = []
    for (label, work, bname, key, match, unit, hib, flops,
         targets) in rows:
        if only and work not in only:
            continue
        stats = {}
        for side in ("weft", "torch", "tf", "ort"):
            k = key
            if side != "weft" and bname == "gemm":
                k = "gflops"
            stats[side] = summarise(sides[side].series(work, bname, k,
                                                       **match), hib)
        w = stats["weft"]
        if w is None:
            table.append([label, unit] + ["-"] * (len(head) - 2))
            continue

        def ratio(other):
            if other is None or not other[0] or not w[0]:
                return None
            return w[0] / other[0] if hib else other[0] / w[0]

        cells = [label, unit, f"{fmt(w[0])} (best {fmt(w[1])})"]
        for side in ("torch", "tf", "ort"):
            s = stats[side]
            cells.append("-" if s is None else
                         fmt(s[0]) + (f" [{s[3]}]" if s[3] else ""))
        for side in ("torch", "tf", "ort"):
            r = ratio(stats[side])
            cells.append("-" if r is None else "%.2fx" % r)
        texts, mets = [], []
        for peer, need, text in targets:
            texts.append(text)
            if peer is None:
                ok = w[0] <= need if not hib else w[0] >= need
            elif peer.startswith("spread:"):
                # steady speed: weft's slowest / fastest run no worse
                # than the peer's over the same interleaved rounds
                other = stats[peer.split(":", 1)[1]]
                ok = None if other is None else w[2] <= other[2]
            elif peer == "direct":
                rr = [pick(r, "gemm", "graph_vs_best_direct", **match)
                      for r in sides["weft"].runs.get(("gemm", ""), [])]
                rr = [x for x in rr if x is not None]
                ok = None if not rr else statistics.median(rr) >= need
                if rr:
                    texts[-1] += f" ({statistics.median(rr):.3f})"
            else:
                r = ratio(stats[peer])
                ok = None if r is None else r >= need
            mets.append("-" if ok is None else "met" if ok else "NOT met")
        cells.append("; ".join(texts))
        cells.append("; ".join(mets))
        cells.append("/".join("-" if stats[s] is None else
                              "%.2f" % stats[s][2]
                              for s in ("weft", "torch", "tf", "ort")))
        roof = "-"
        if flops is not None and w[0]:
            if isinstance(flops, tuple) and flops[0] == "gflops":
                g = w[0]
            elif isinstance(flops, tuple):  # ("latency", flops per call)
                g = flops[1] / (w[0] * 1e-3) * 1e-9
            else:
                g = w[0] * flops * 1e-9
            roof = "%.1f" % g + (f" ({g / peak:.0%})" if peak else "")
        cells.append(roof)
        table.append(cells)

    if a.markdown:
        print("| " + " | ".join(head) + " |")
        print("|" + "|".join("---" for _ in head) + "|")
        for r in table:
            print("| " + " | ".join(r) + " |")
    else:
        widths = [max(len(r[i]) for r in [head] + table)
                  for i in range(len(head))]
        line = lambda r: "  ".join(c.ljust(widths[i]) for i, c in
                                   enumerate(r))
        print(line(head))
        print("  ".join("-" * x for x in widths))
        for r in table:
            print(line(r))
    print()
    print(f"medians of {a.rounds} interleaved round(s), each run a process of "
          f"its own; ratios > 1 mean weft is better (higher throughput, or "
          f"lower latency/time/memory); spread = slowest / fastest run of "
          f"each side; [mode] = the peer's mode kept (better median).")
    print(f"FMA peak (bench/fma_peak, 2 threads): "
          f"{fmt(peak)} GFLOP/s; workload GFLOP/s count the products and "
          f"convolutions only, training as 3x the forward pass less the "
          f"first layer's input gradient, by the direct algorithm: "
          f"Winograd's convolutions do fewer multiply-adds, so a row "
          f"using them may pass 100%.")
    vers = []
    for side, bname in (("torch", "train"), ("tf", "train"),
                        ("ort", "cnn-infer")):
        for rounds in sides[side].runs.values():
            v = next((r.get("runtime") for recs in rounds for r in recs or []
                      if r.get("runtime")), None)
            if v:
                vers.append(v)
                break
    if vers:
        print("peers: " + ", ".join(vers) + "; PyTorch with "
              f"torch.set_num_threads(2) and {describe(TORCH_ENV)}; "
              "TensorFlow intra_op 2, inter_op 1; ONNX Runtime 2 intra-op "
              "threads")
    for side, text in accuracy.items():
        print(f"transformer accuracy, {side}: {text}")
    if burst.shares:
        shares = [x for x in burst.shares if x is not None]
        print(f"beside every timed run: bench/burst, busy {a.burst} ms on "
              f"the last CPU; the CPU share it had: "
              f"{min(shares):.3f}-{max(shares):.3f}" if shares else
              f"beside every timed run: bench/burst {a.burst}")
    for name, l in loads.items():
        print(f"  after {name}: {l}")
    print(f"machine: {os.cpu_count()} cpus; {start_load} at start, "
          f"{end_load} at end")


if __name__ == "__main__":
    sys.exit(main())
