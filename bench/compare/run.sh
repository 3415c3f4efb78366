#!/bin/sh
# bench/compare/run.sh — builds weft's bench programs, then runs them and the
# same workloads in PyTorch, TensorFlow and ONNX Runtime (compare.py) and
# prints the side-by-side table. Installs nothing: see README.md for the
# virtual environment the peers live in. A peer that the interpreter cannot
# import is left out (with a message), unless --peers names it.
#
#   bench/compare/run.sh [compare.py options]      (from weft's build tree)
#   PYTHON=/path/to/python bench/compare/run.sh --rounds 5
set -eu
export PYTHONDONTWRITEBYTECODE=1
here=$(cd "$(dirname "$0")" && pwd)
top=${WEFT_TOP:-$(cd "$here/../.." && pwd)}

if [ -z "${PYTHON:-}" ]; then
  PYTHON=python3
  for venv in /opt/weft-peers /opt/weft-compare; do
    if [ -x "$venv/bin/python" ]; then
      PYTHON=$venv/bin/python
      break
    fi
  done
fi
if ! "$PYTHON" -c 'import numpy' 2>/dev/null; then
  echo "run.sh: $PYTHON cannot import numpy; see bench/compare/README.md" \
       "(or set PYTHON)" >&2
  exit 1
fi
peers=
for p in torch:torch tensorflow:tf onnxruntime:ort; do
  mod=${p%%:*}
  if "$PYTHON" -c "import $mod" 2>/dev/null; then
    peers=$peers${peers:+,}${p#*:}
  else
    echo "run.sh: $PYTHON cannot import $mod: that peer is left out" >&2
  fi
done
case " $* " in
  *" --peers "*) set -- "$@" ;;
  *) set -- --peers "${peers:-none}" "$@" ;;
esac
if [ ! -f "$top/Makefile" ]; then
  echo "run.sh: $top has no Makefile: run ./configure there first" >&2
  exit 1
fi
make -C "$top" -j2 bench/train bench/cnn_infer bench/gemm bench/dispatch \
  bench/fma_peak bench/burst examples/train_fashion >&2
exec "$PYTHON" "$here/compare.py" --top "$top" --python "$PYTHON" "$@"
