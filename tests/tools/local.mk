# The `weft` program and the examples, driven as a user would.
TESTS += tests/tools/test_cli.sh tests/tools/test_examples.sh \
	tests/tools/test_train.sh
EXTRA_DIST += tests/tools/test_cli.sh tests/tools/test_examples.sh \
	tests/tools/test_train.sh
# A quick run of the GRU example (examples/train_rnn).
TESTS += tests/tools/test_train_rnn.sh
EXTRA_DIST += tests/tools/test_train_rnn.sh
TESTS += tests/tools/test_graph_cli.sh
TESTS += tests/tools/test_ckpt.sh
