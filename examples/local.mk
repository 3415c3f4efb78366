# Small complete programs using the public API only.
noinst_PROGRAMS += examples/hello_graph examples/train_fashion
examples_hello_graph_SOURCES = examples/hello_graph.c
examples_hello_graph_LDADD = core/libweft.la
examples_train_fashion_SOURCES = examples/train_fashion.c
examples_train_fashion_LDADD = core/libweft.la
