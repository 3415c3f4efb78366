# tests/python: the Python package (python/), installed with pip into a
# temporary virtual environment and tested with pytest (test_python.sh).
# Its sources travel in the tarball so `make distcheck` runs it too.
TESTS += tests/python/test_python.sh
EXTRA_DIST += tests/python/test_python.sh \
	python/pyproject.toml python/setup.py python/README.md \
	python/src/weftpy.h python/src/module.c python/src/tensor.c \
	python/src/graph.c python/src/session.c python/src/model.c \
	python/src/data.c python/src/io.c \
	python/weft/__init__.py python/weft/_dtypes.py \
	python/weft/framework.py python/weft/session.py \
	python/weft/variables.py python/weft/initializers.py \
	python/weft/layers.py python/weft/train.py python/weft/data.py \
	python/weft/saved_model.py python/weft/ops.py python/weft/raw_ops.py \
	python/tests/conftest.py python/tests/test_graph.py \
	python/tests/test_session.py python/tests/test_errors.py \
	python/tests/test_train.py python/tests/test_data.py \
	python/tests/test_plugin.py \
	examples/python/train_fashion.py
