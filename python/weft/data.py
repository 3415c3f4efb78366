"""The input pipeline (weft/data.h): datasets from reader plugins, their
stages (map with built-in maps or a Python function traced into a graph,
shuffle, batch, prefetch, cache, repeat, shard, zip), iterators that give
elements as dicts of arrays, and get_next() tensors a session reads."""

import itertools

from . import _weft
from ._dtypes import as_dtype
from .framework import (Graph, get_default_graph, placeholder, _runtimes,
                        convert_to_tensor)

_names = itertools.count()


class Dataset:
    """An immutable stream of elements with named fields. Each stage
    returns a new Dataset."""

    def __init__(self, cds):
        self._ds = cds

    @staticmethod
    def from_files(pattern, format=None, options=None, config=None):
        """Records of the files pattern names (a path or a glob), decoded
        by the reader plugin of format (or of each file's suffix). options:
        the reader's options as a dict."""
        rt, _ = _runtimes.get(config)
        opts = list((options or {}).items())
        return Dataset(_weft.dataset_from_files(rt, pattern, format, opts))

    @property
    def fields(self):
        """[(name, DType, shape)]"""
        return [(n, as_dtype(d), s) for n, d, s in self._ds.fields()]

    @property
    def element_spec(self):
        return {n: (d, s) for n, d, s in self.fields}

    def shuffle(self, buffer_size, seed=0):
        return Dataset(self._ds.shuffle(int(buffer_size), int(seed)))

    def batch(self, batch_size, drop_remainder=False):
        return Dataset(self._ds.batch(int(batch_size), bool(drop_remainder)))

    def prefetch(self, buffer_size):
        return Dataset(self._ds.prefetch(int(buffer_size)))

    def cache(self):
        return Dataset(self._ds.cache())

    def repeat(self, count=-1):
        return Dataset(self._ds.repeat(-1 if count is None else int(count)))

    def shard(self, num_shards, index):
        return Dataset(self._ds.shard(int(num_shards), int(index)))

    def shard_by_task(self, config=None):
        """This task's elements in a data-parallel job (weft/parallel.h):
        element i of each pass when i % size == task. Shuffle before with
        one seed on every task, then batch by parallel_task_batch()."""
        rt, _ = _runtimes.get(config)
        return Dataset(self._ds.shard_by_task(rt))

    def interleave(self, cycle_length, block_length=1):
        return Dataset(self._ds.interleave(int(cycle_length),
                                           int(block_length)))

    def zip(self, other):
        return Dataset(self._ds.zip(other._ds))

    def map_scale(self, field, scale, offset=0.0):
        return Dataset(self._ds.map_scale(field, float(scale), float(offset)))

    def map_cast(self, field, dtype):
        return Dataset(self._ds.map_cast(field, as_dtype(dtype).code))

    def map_one_hot(self, field, depth):
        return Dataset(self._ds.map_one_hot(field, int(depth)))

    def map(self, fn, config=None):
        """Applies fn to every element: fn receives a dict of tensors (one
        per field) and returns a dict of tensors; a returned name that is a
        field replaces it, others are appended. fn is traced once into a
        graph that each iterator runs."""
        g = Graph(config=config)
        with g.as_default():
            ins = {n: placeholder(d, s, name="in_" + n.replace("/", "_"))
                   for n, d, s in self.fields}
            outs = fn(dict(ins))
            if not isinstance(outs, dict):
                raise TypeError("weft: a map function returns a dict of "
                                "tensors")
            outs = {k: convert_to_tensor(v) for k, v in outs.items()}
        names = list(ins)
        ds = Dataset(self._ds.map_graph(g._g, names,
                                        [ins[n]._ref for n in names],
                                        list(outs),
                                        [t._ref for t in outs.values()]))
        ds._graph = g
        return ds

    def count(self):
        return self._ds.count()

    def files(self):
        return self._ds.files()

    def make_iterator(self, skip_bad_records=False):
        return Iterator(self, skip_bad_records)

    make_one_shot_iterator = make_iterator

    def __iter__(self):
        return iter(Iterator(self))


class Iterator:
    """Walks a dataset. next() gives a dict {field: array}; get_next()
    gives tensors that sessions running them fill from this iterator (it is
    attached to each session of the graph automatically)."""

    def __init__(self, dataset, skip_bad_records=False):
        self.dataset = dataset
        self._it = _weft.Iterator(dataset._ds, bool(skip_bad_records))
        self.name = "iterator_%d" % next(_names)
        self._fields = [n for n, _, _ in dataset.fields]

    def next(self):
        return dict(zip(self._fields, self._it.next()))

    def __iter__(self):
        return self

    def __next__(self):
        try:
            return self.next()
        except _weft.OutOfRangeError:
            raise StopIteration from None

    def reset(self):
        """Starts the next pass over the data."""
        self._it.reset()

    def save(self):
        """The position as bytes, for restore()."""
        return self._it.save()

    def restore(self, position):
        self._it.restore(position)

    @property
    def bad_records(self):
        return self._it.bad_records

    def close(self):
        self._it.close()

    def get_next(self, name=None, graph=None):
        """{field: tensor}: an IteratorGetNext node reading this iterator."""
        g = graph or get_default_graph()
        with g._lock:
            nid = _weft.add_get_next(g._g, self.name, self.dataset._ds, name)
        g.add_to_collection("_iterators", self)
        outs = g._op(nid).outputs
        return dict(zip(self._fields, outs))


def attach_graph_iterators(session):
    """Attaches the iterators whose get_next() the session's graph holds."""
    its = session.graph.get_collection("_iterators")
    done = session.__dict__.setdefault("_attached", set())
    for it in its:
        if it.name not in done:
            session.attach_iterator(it.name, it)
            done.add(it.name)


def parallel_task_batch(global_batch, config=None):
    """This task's batch of a global batch in a data-parallel job: the
    global batch divided by the job's size (InvalidArgumentError when the
    size does not divide it)."""
    rt, _ = _runtimes.get(config)
    return _weft.parallel_task_batch(rt, int(global_batch))
