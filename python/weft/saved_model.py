"""Saved models (weft/saved_model.h): export a session's signatures into a
directory; load one and run its signatures on arrays."""

import os as _os

from . import _weft
from .framework import _runtimes


def export(session, directory, signatures):
    """signatures: {name: {"inputs": {key: placeholder}, "outputs": {key:
    tensor}}}. Writes the nodes the outputs need and the variables they
    read; the directory is replaced atomically."""
    g = session.graph
    sigs = []
    for name, sig in signatures.items():
        ins = sig.get("inputs", {})
        outs = sig.get("outputs", {})
        sigs.append((name, list(ins), [g.as_graph_element(t)._ref
                                       for t in ins.values()],
                     list(outs), [g.as_graph_element(t)._ref
                                  for t in outs.values()]))
    session._sync()
    _weft.saved_model_export(session._csession, directory, sigs)


class SavedModel:
    """A loaded saved model: .signatures {name: {"inputs": [...],
    "outputs": [...]}}; run(inputs, signature=None) -> {key: array}."""

    def __init__(self, directory, config=None):
        rt, _ = _runtimes.get(config)
        self._m = _weft.SavedModel(rt, directory)
        self.signatures = self._m.signatures()

    def run(self, inputs, signature=None):
        return self._m.run(signature, dict(inputs))


def load(directory, config=None):
    return SavedModel(_os.fspath(directory), config)


def import_model(path, directory, format=None, config=None):
    """Imports a model file of another framework (ONNX: format "onnx", or
    chosen by the file's name and first bytes) with the runtime's importer
    plugins, writes it into directory as a saved model, and loads it."""
    rt, _ = _runtimes.get(config)
    _weft.import_saved_model(rt, _os.fspath(path), format,
                             _os.fspath(directory))
    return SavedModel(_os.fspath(directory), config)
