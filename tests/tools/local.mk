# The `weft` program, driven as a user would.
TESTS += tests/tools/test_cli.sh
EXTRA_DIST += tests/tools/test_cli.sh
