# Small complete programs using the public API only.
noinst_PROGRAMS += examples/hello_graph
examples_hello_graph_SOURCES = examples/hello_graph.c
examples_hello_graph_LDADD = core/libweft.la
