# Builds weft._weft against libweft as pkg-config describes it ("weft"):
# the installed weft.pc, or the build tree's sdk/weft-uninstalled.pc when
# PKG_CONFIG_PATH names BUILDDIR/sdk. The library directory is recorded as
# the extension's run path, so no LD_LIBRARY_PATH is needed afterwards.
import os
import shlex
import subprocess
import sys

from setuptools import Extension, setup

LIMITED = 0x030B0000


def pkg_config(*args):
    cmd = [os.environ.get("PKG_CONFIG", "pkg-config"), *args, "weft"]
    try:
        out = subprocess.run(cmd, check=True, capture_output=True, text=True)
    except FileNotFoundError:
        sys.exit("weft: pkg-config is not installed (Debian: pkg-config)")
    except subprocess.CalledProcessError as e:
        sys.exit("weft: pkg-config cannot find weft (%s). Install weft "
                 "(make install) or point PKG_CONFIG_PATH at a build tree's "
                 "sdk/ directory." % e.stderr.strip())
    return shlex.split(out.stdout)


cflags = pkg_config("--cflags")
libs = pkg_config("--libs")
include_dirs = [f[2:] for f in cflags if f.startswith("-I")]
library_dirs = [f[2:] for f in libs if f.startswith("-L")]
libraries = [f[2:] for f in libs if f.startswith("-l")]
extra_link = [f for f in libs if not f.startswith(("-L", "-l"))]
extra_compile = [f for f in cflags if not f.startswith("-I")]
extra_compile += ["-std=c11", "-Wall", "-Wno-missing-field-initializers"]
extra_compile += shlex.split(os.environ.get("WEFT_PY_CFLAGS", ""))
extra_link += shlex.split(os.environ.get("WEFT_PY_LDFLAGS", ""))

sources = ["module.c", "tensor.c", "graph.c", "session.c", "model.c",
           "data.c", "io.c"]

ext = Extension(
    "weft._weft",
    sources=[os.path.join("src", s) for s in sources],
    include_dirs=include_dirs,
    library_dirs=library_dirs,
    libraries=libraries,
    runtime_library_dirs=library_dirs,
    define_macros=[("Py_LIMITED_API", hex(LIMITED))],
    extra_compile_args=extra_compile,
    extra_link_args=extra_link,
    py_limited_api=True,
)

setup(packages=["weft"], ext_modules=[ext], options={"bdist_wheel": {"py_limited_api": "cp311"}})
