# Small complete programs using the public API only.
noinst_PROGRAMS += examples/hello_graph examples/train_fashion
examples_hello_graph_SOURCES = examples/hello_graph.c
examples_hello_graph_LDADD = core/libweft.la
examples_train_fashion_SOURCES = examples/train_fashion.c
examples_train_fashion_LDADD = core/libweft.la

# With --enable-static-plugins --enable-static: train_fashion linked with
# libtool's -static, i.e. libweft and the plugins in it from their static
# archives, so that it runs without libweft.so and without any plugin file.
# The system's libraries stay shared (-all-static cannot work on Debian 12:
# libhwloc.a needs libudev, which has no static archive, and oneDNN has
# none either). tests/dist/check_static_dist.sh trains with it.
if WF_STATIC_EXAMPLE
noinst_PROGRAMS += examples/train_fashion_static
examples_train_fashion_static_SOURCES = examples/train_fashion.c
examples_train_fashion_static_LDADD = core/libweft.la
examples_train_fashion_static_LDFLAGS = -static $(WF_STATIC_LINK_FLAGS)
endif
