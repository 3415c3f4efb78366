# Benchmarks: programs that print one JSON line per result (`make bench`).
BENCH_LDADD = core/libweft.la $(LIBM)
noinst_PROGRAMS += bench/dispatch
bench_dispatch_SOURCES = bench/dispatch.c bench/bench_util.h
bench_dispatch_LDADD = $(BENCH_LDADD)

bench: $(noinst_PROGRAMS)
	bench/dispatch
.PHONY: bench
