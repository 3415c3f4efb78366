# The `weft` program and the examples, driven as a user would.
TESTS += tests/tools/test_cli.sh tests/tools/test_examples.sh \
	tests/tools/test_train.sh
EXTRA_DIST += tests/tools/test_cli.sh tests/tools/test_examples.sh \
	tests/tools/test_train.sh
