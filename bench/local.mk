# Benchmarks: programs that print one JSON line per result (`make bench`).
BENCH_LDADD = core/libweft.la $(LIBM)
noinst_PROGRAMS += bench/dispatch
bench_dispatch_SOURCES = bench/dispatch.c bench/bench_util.h
bench_dispatch_LDADD = $(BENCH_LDADD)

noinst_PROGRAMS += bench/cnn_infer
bench_cnn_infer_SOURCES = bench/cnn_infer.c bench/bench_util.h
bench_cnn_infer_LDADD = $(BENCH_LDADD)

bench: bench/dispatch bench/cnn_infer
	bench/dispatch
	bench/cnn_infer
.PHONY: bench
