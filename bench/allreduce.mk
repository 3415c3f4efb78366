# allreduce: the MPI transport plugin's AllReduce (a one-node graph run
# through a prepared callable) against a plain MPI_Allreduce on the same
# data, 1 to 64 MiB of float32; task 0 prints the bus bandwidth of both.
# Links MPI itself for the reference. `make bench-allreduce` runs it as a
# job of 2 processes.
if HAVE_MPI
noinst_PROGRAMS += bench/allreduce
bench_allreduce_SOURCES = bench/allreduce.c bench/bench_util.h
bench_allreduce_CPPFLAGS = $(AM_CPPFLAGS) $(MPI_CFLAGS)
bench_allreduce_LDADD = $(BENCH_LDADD) $(MPI_LIBS)

bench-allreduce: bench/allreduce
	mpirun --allow-run-as-root --oversubscribe --bind-to none \
	  --mca btl_vader_single_copy_mechanism none -np 2 bench/allreduce
endif
# bench-cross-host: the same and the data-parallel mlp between two test
# hosts (network namespaces, TCP; bench/cross_host.sh, as root).
bench-cross-host: bench/allreduce bench/data_parallel
	top_builddir=$(top_builddir) top_srcdir=$(top_srcdir) \
	  sh $(top_srcdir)/bench/cross_host.sh
.PHONY: bench-allreduce bench-cross-host
