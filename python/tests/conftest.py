# python/tests/conftest.py — fixtures of the weft package's tests: a fresh
# graph as the default, and the SDK's example op plugin (Swish) built from
# the source tree for the custom-op tests.
import os
import shutil
import subprocess

import numpy as np
import pytest

import weft

SRCDIR = os.environ.get("top_srcdir") or os.path.abspath(
    os.path.join(os.path.dirname(__file__), "..", ".."))


@pytest.fixture
def graph():
    g = weft.Graph()
    with g.as_default():
        yield g


@pytest.fixture(scope="session")
def swish_plugin(tmp_path_factory):
    """Path of swish.so built from sdk/examples/op_plugin (no libweft)."""
    src = os.path.join(SRCDIR, "sdk", "examples", "op_plugin", "swish.c")
    cc = os.environ.get("CC") or shutil.which("cc") or "gcc"
    out = tmp_path_factory.mktemp("plugin") / "swish.so"
    cmd = [cc, "-std=c11", "-O2", "-fPIC", "-shared",
           "-I" + os.path.join(SRCDIR, "sdk", "include"), "-o", str(out),
           src, "-lm"]
    # The compiler runs without the sanitizer runtime an ASan build of
    # libweft preloads into this process.
    env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
    subprocess.run(cmd, check=True, env=env)
    return str(out)


def fashion_dir():
    d = "/usr/share/datasets/fashion-mnist"
    return d if os.path.exists(os.path.join(
        d, "t10k-images-idx3-ubyte.gz")) else None
