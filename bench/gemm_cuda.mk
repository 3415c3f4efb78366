# gemm_cuda: MatMul through a one-node graph on cuda:0 next to a direct
# cublasSgemm in the same process (N = 1024, 2048, 4096), built when
# configure found CUDA. It calls the CUDA runtime and cuBLAS itself, so it
# links them (with their directory as run path, as the plugin does). It
# prints a line saying why and exits 0 where cuda:0 is unusable, so
# `make bench-cuda` runs anywhere it is built.
if HAVE_CUDA
noinst_PROGRAMS += bench/gemm_cuda
bench_gemm_cuda_SOURCES = bench/gemm_cuda.c bench/bench_util.h
bench_gemm_cuda_CPPFLAGS = $(AM_CPPFLAGS) $(CUDA_CPPFLAGS)
bench_gemm_cuda_LDADD = $(BENCH_LDADD) -L$(CUDA_LIBDIR) -lcublas -lcudart
bench_gemm_cuda_LDFLAGS = -R$(CUDA_LIBDIR)

bench-cuda: bench/gemm_cuda
	bench/gemm_cuda
.PHONY: bench-cuda
endif
