"""Sessions: running a graph with feeds, fetches (any nesting of lists,
tuples, dicts and namedtuples) and targets; prepared callables; run
options and metadata (Chrome traces). Arrays cross without copies where
their layout allows; the GIL is released while a step runs."""

import collections.abc
import os
import tempfile

import numpy as _np

from . import _weft
from .framework import (Graph, Operation, Tensor, get_default_graph,
                        config_items, _runtimes)

FULL_TRACE = 1
NO_TRACE = 0


class RunOptions:
    """trace_level: NO_TRACE or FULL_TRACE (per-node timings into the
    run metadata); timeout_ms: cancel the step after this long (0: never)."""

    def __init__(self, trace_level=NO_TRACE, timeout_ms=0):
        self.trace_level = int(trace_level)
        self.timeout_ms = int(timeout_ms)


class RunMetadata:
    """Filled by a run given it: step_ns, nodes() (traced runs), placements(),
    notes(), peak_bytes(device), write_trace(path), chrome_trace()."""

    def __init__(self):
        self._md = _weft.RunMetadata()

    @property
    def step_ns(self):
        return self._md.step_ns

    def nodes(self):
        return self._md.nodes()

    def placements(self):
        return self._md.placements()

    def notes(self):
        return self._md.notes()

    def peak_bytes(self, device=None):
        return self._md.peak_bytes(device)

    def write_trace(self, path):
        """Writes the node timings as Chrome trace-event JSON."""
        self._md.write_trace(path)

    def chrome_trace(self):
        """The node timings as Chrome trace-event JSON text."""
        fd, path = tempfile.mkstemp(suffix=".json")
        os.close(fd)
        try:
            self._md.write_trace(path)
            with open(path, encoding="utf-8") as f:
                return f.read()
        finally:
            os.unlink(path)


def _md(m):
    if m is None:
        return None
    if not isinstance(m, RunMetadata):
        raise TypeError("weft: run_metadata must be a weft.RunMetadata")
    return m._md


def _is_namedtuple(x):
    return isinstance(x, tuple) and hasattr(x, "_fields")


class _Fetches:
    """A nested fetch structure flattened into tensors and targets, and
    rebuilt from their values."""

    def __init__(self, graph, fetches):
        self.graph = graph
        self.tensors = []
        self.targets = []
        self.index = {}
        self.structure = self._flatten(fetches)

    def _leaf(self, x):
        e = self.graph.as_graph_element(x)
        if isinstance(e, Operation):
            self.targets.append(e._id)
            return ("op",)
        key = e._ref
        if key not in self.index:
            self.index[key] = len(self.tensors)
            self.tensors.append(key)
        return ("t", self.index[key])

    def _flatten(self, x):
        if isinstance(x, dict):
            return ("dict", type(x), [(k, self._flatten(v))
                                      for k, v in x.items()])
        if _is_namedtuple(x):
            return ("nt", type(x), [self._flatten(v) for v in x])
        if isinstance(x, (list, tuple)):
            return ("seq", type(x), [self._flatten(v) for v in x])
        return self._leaf(x)

    def build(self, values, s=None):
        s = self.structure if s is None else s
        kind = s[0]
        if kind == "t":
            return values[s[1]]
        if kind == "op":
            return None
        if kind == "dict":
            d = s[1]()
            for k, v in s[2]:
                d[k] = self.build(values, v)
            return d
        if kind == "nt":
            return s[1](*[self.build(values, v) for v in s[2]])
        return s[1](self.build(values, v) for v in s[2])


class Session:
    """Runs steps of a graph (default: the default graph). config (a dict
    {section: {key: value}} or an INI path) applies to this session: when
    it differs from the graph's, the session runs a copy of the graph made
    under its own runtime, kept up to date with nodes added later."""

    def __init__(self, graph=None, config=None, target=None):
        if target not in (None, ""):
            raise _weft.UnimplementedError("weft: sessions run in-process "
                                           "(target must be empty)")
        self.graph = graph if graph is not None else get_default_graph()
        if not isinstance(self.graph, Graph):
            raise TypeError("weft: Session needs a weft.Graph")
        self._shadow = None
        if config is not None:
            rt, key = _runtimes.get(config)
            if key != self.graph._config_key:
                self._shadow = _weft.Graph(rt)
        self._sync()
        self._s = _weft.Session(self._shadow or self.graph._g)
        self._closed = False

    def _sync(self):
        if self._shadow is not None:
            n = self._shadow.num_nodes()
            if n < self.graph._g.num_nodes():
                self.graph._g.copy_to(self._shadow, n)
        if getattr(self, "_s", None) is not None and \
                self.graph._collections.get("_iterators"):
            from .data import attach_graph_iterators
            attach_graph_iterators(self)

    # -- lifetime
    def close(self):
        """Cancels running steps and waits for them; later runs raise
        FailedPreconditionError. Idempotent."""
        if not self._closed:
            self._closed = True
            self._s.close()

    @property
    def closed(self):
        return self._closed

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    # -- feeds
    def _feeds(self, feed_dict):
        keys, values = [], []
        if not feed_dict:
            return keys, values
        if not isinstance(feed_dict, collections.abc.Mapping):
            raise TypeError("weft: feed_dict must be a dict")
        for k, v in feed_dict.items():
            if hasattr(k, "_as_graph_element"):
                k = k._as_graph_element()
            e = self.graph.as_graph_element(k)
            if not isinstance(e, Tensor):
                raise TypeError("weft: feed key %r is not a tensor" % (k,))
            keys.append(e._ref)
            values.append(v)
        return keys, values

    def run(self, fetches, feed_dict=None, options=None, run_metadata=None,
            targets=None):
        """Runs one step: the values of fetches (same nesting; None for
        operations, which run as targets) with feed_dict's values in place
        of its tensors. Fetched arrays are read-only views of the tensors.
        """
        f = _Fetches(self.graph, fetches)
        tg = list(f.targets)
        for t in targets or ():
            e = self.graph.as_graph_element(t)
            tg.append((e.op if isinstance(e, Tensor) else e)._id)
        keys, values = self._feeds(feed_dict)
        self._sync()
        trace = options.trace_level if options is not None else 0
        timeout = options.timeout_ms if options is not None else 0
        fed = dict(zip(keys, values))
        fetch = [t for t in f.tensors if t not in fed]
        out = self._s.run(keys, values, fetch, tg, trace, timeout,
                          _md(run_metadata))
        if len(fetch) != len(f.tensors):
            # A fed tensor fetched is its fed value (as TensorFlow does).
            it = iter(out)
            out = [_np.asarray(fed[t]) if t in fed else next(it)
                   for t in f.tensors]
        return f.build(out)

    def make_callable(self, fetches, feed_list=(), targets=()):
        """A function of the feeds in feed_list's order returning fetches'
        values, prepared once: its calls do no name or graph work. A single
        tensor or a flat list of tensors is served by the C callable
        directly."""
        feeds = []
        for k in feed_list:
            if hasattr(k, "_as_graph_element"):
                k = k._as_graph_element()
            e = self.graph.as_graph_element(k)
            if not isinstance(e, Tensor):
                raise TypeError("weft: feed %r is not a tensor" % (k,))
            feeds.append(e._ref)
        f = _Fetches(self.graph, fetches if fetches is not None else [])
        tg = list(f.targets)
        for t in targets or ():
            e = self.graph.as_graph_element(t)
            tg.append((e.op if isinstance(e, Tensor) else e)._id)
        self._sync()
        single = f.structure[0] == "t" and len(f.tensors) == 1
        c = self._s.prepare(feeds, f.tensors, tg, single)
        if single:
            return c
        st = f.structure
        if st[0] == "seq" and st[1] is list and \
                all(x[0] == "t" for x in st[2]) and \
                [x[1] for x in st[2]] == list(range(len(st[2]))):
            return c
        if st[0] == "op":
            def run_target(*args):
                c(*args)
                return None
            run_target.run_with = c.run_with
            return run_target

        def run_nested(*args):
            return f.build(c(*args))
        run_nested.run_with = lambda values, **kw: f.build(
            c.run_with(values, **kw))
        return run_nested

    # -- input pipelines
    def attach_iterator(self, name, iterator):
        """Makes iterator the one IteratorGetNext nodes named `name` read in
        this session's runs (None detaches it)."""
        it = getattr(iterator, "_it", iterator)
        _weft.attach_iterator(self._s, name, it)

    @property
    def _csession(self):
        return self._s

