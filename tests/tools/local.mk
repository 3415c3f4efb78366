# The `weft` program and the examples, driven as a user would.
TESTS += tests/tools/test_cli.sh tests/tools/test_examples.sh
EXTRA_DIST += tests/tools/test_cli.sh tests/tools/test_examples.sh
