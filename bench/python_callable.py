#!/usr/bin/env python3
"""bench/python_callable.py — what a prepared run costs from Python: one
small feed (float32 (1, 8)) and one fetch through Session.make_callable,
against the same wf_callable_run loop made from C in the same process
(Callable.time_c: feeds converted once, no GIL), alternating rounds. Prints
one JSON line; the goal is at most 3 us per call over C.

    PYTHONPATH=... python3 bench/python_callable.py [--graph add|identity]
        [--calls N] [--rounds R]"""

import argparse
import json
import statistics
import time

import numpy as np

import weft


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--graph", choices=("add", "identity"), default="add")
    p.add_argument("--calls", type=int, default=20000)
    p.add_argument("--rounds", type=int, default=7)
    a = p.parse_args()
    g = weft.Graph()
    with g.as_default():
        x = weft.placeholder(weft.float32, (1, 8), name="x")
        y = x + 1.0 if a.graph == "add" else weft.identity(x)
    feed = np.ones((1, 8), np.float32)
    with weft.Session(g) as s:
        f = s.make_callable(y, [x])
        for _ in range(2000):       # warm caches and the executor
            f(feed)
        f.time_c(2000, feed)
        py, c = [], []
        for _ in range(a.rounds):
            t0 = time.perf_counter()
            for _ in range(a.calls):
                f(feed)
            py.append((time.perf_counter() - t0) / a.calls)
            c.append(f.time_c(a.calls, feed) / a.calls)
    mp, mc = statistics.median(py), statistics.median(c)
    print(json.dumps({"bench": "python-callable", "graph": a.graph,
                      "calls": a.calls, "rounds": a.rounds,
                      "python_us": round(mp * 1e6, 3),
                      "c_us": round(mc * 1e6, 3),
                      "overhead_us": round((mp - mc) * 1e6, 3)}))


if __name__ == "__main__":
    main()
