# data_parallel: mlp training throughput of a data-parallel job (gradients
# averaged over MPI with the transport plugin's AllReduce), printed by
# task 0 with the job's size. `make bench-data-parallel` runs it alone and
# as a job of 2 processes.
if HAVE_MPI
noinst_PROGRAMS += bench/data_parallel
bench_data_parallel_SOURCES = bench/data_parallel.c bench/bench_util.h
bench_data_parallel_LDADD = $(BENCH_LDADD)

bench-data-parallel: bench/data_parallel
	bench/data_parallel
	mpirun --allow-run-as-root --oversubscribe -np 2 bench/data_parallel
endif
.PHONY: bench-data-parallel
