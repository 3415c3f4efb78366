# Benchmarks: programs that print one JSON line per result (`make bench`).
BENCH_LDADD = core/libweft.la $(LIBM)
noinst_PROGRAMS += bench/dispatch
bench_dispatch_SOURCES = bench/dispatch.c bench/bench_util.h
bench_dispatch_LDADD = $(BENCH_LDADD)

noinst_PROGRAMS += bench/cnn_infer
bench_cnn_infer_SOURCES = bench/cnn_infer.c bench/bench_util.h
bench_cnn_infer_LDADD = $(BENCH_LDADD)

# pipeline: the input pipeline over any reader next to a raw read of the
# same bytes, and the input wait of an mlp training step; links zlib for
# the raw reference.
noinst_PROGRAMS += bench/pipeline
bench_pipeline_SOURCES = bench/pipeline.c bench/bench_util.h
bench_pipeline_CFLAGS = $(AM_CFLAGS) $(ZLIB_CFLAGS)
bench_pipeline_LDADD = $(BENCH_LDADD) $(ZLIB_LIBS)


# gemm: matrix products through a one-node graph next to direct library
# calls; gemm_backends: the measurement behind the CPU plugin's choice of
# library per shape (plugins/devices/cpu/cpu_gemm.c). Both call the
# libraries directly, so they link them.
noinst_PROGRAMS += bench/gemm
bench_gemm_SOURCES = bench/gemm.c bench/bench_util.h
bench_gemm_CPPFLAGS = $(AM_CPPFLAGS)
bench_gemm_LDADD = $(BENCH_LDADD)
if HAVE_OPENBLAS
bench_gemm_CPPFLAGS += $(OPENBLAS_CFLAGS)
bench_gemm_LDADD += $(OPENBLAS_LIBS)
endif
if HAVE_DNNL
bench_gemm_LDADD += $(DNNL_LIBS) -lgomp
if HAVE_OPENBLAS
noinst_PROGRAMS += bench/gemm_backends
bench_gemm_backends_SOURCES = bench/gemm_backends.c bench/bench_util.h
bench_gemm_backends_CPPFLAGS = $(AM_CPPFLAGS) $(OPENBLAS_CFLAGS)
bench_gemm_backends_LDADD = $(OPENBLAS_LIBS) $(DNNL_LIBS) -lgomp $(LIBM)
endif
endif

bench: bench/dispatch bench/cnn_infer bench/pipeline bench/gemm
	bench/dispatch
	bench/cnn_infer
	bench/gemm
	bench/pipeline
	bench/pipeline --mode wait
.PHONY: bench

# train: mlp, cnn and transformer training throughput over one epoch of Fashion-MNIST
# (after a warm-up epoch that fills the pipeline's cache), and the peak RSS
# of the cnn run. `make bench` runs it before the programs above.
noinst_PROGRAMS += bench/train
bench_train_SOURCES = bench/train.c bench/bench_util.h
bench_train_LDADD = $(BENCH_LDADD)

bench: bench-train
bench-train: bench/train
	bench/train --model mlp
	bench/train --model cnn
	bench/train --model transformer
.PHONY: bench-train
include bench/data_parallel.mk
include bench/allreduce.mk
include bench/gemm_cuda.mk

# crowded: bench/train alone, two side by side, beside a busy loop and
# beside bursts (bench/burst), with the CPU plugin's [threads] adapt off and
# on (bench/crowded.sh).
EXTRA_DIST += bench/crowded.sh

# serve: `weft serve` under wrk on loopback against the cnn saved model
# (bench/serve.sh), and serve_inproc, the same run in-process.
noinst_PROGRAMS += bench/serve_inproc
bench_serve_inproc_SOURCES = bench/serve_inproc.c bench/bench_util.h
bench_serve_inproc_LDADD = $(BENCH_LDADD)
EXTRA_DIST += bench/serve.sh

# startup: the wall and CPU time of one `weft run` of the cnn saved model
# and one `weft plugins`, process start included, and their peak RSS
# (bench/startup.py; --compare OTHER_BUILDDIR alternates with another
# build and prints the ratios).
EXTRA_DIST += bench/startup.py
bench: bench-startup
bench-startup: tools/weft examples/train_fashion
	top_builddir=$(top_builddir) $(srcdir)/bench/startup.py
.PHONY: bench-startup

# onnx_infer: an ONNX model through the importer plugin, batch latency and
# throughput; bench/onnx_vs_ort.py runs it next to ONNX Runtime.
noinst_PROGRAMS += bench/onnx_infer
bench_onnx_infer_SOURCES = bench/onnx_infer.c bench/bench_util.h
bench_onnx_infer_LDADD = $(BENCH_LDADD)
EXTRA_DIST += bench/onnx_vs_ort.py

# fma_peak: the machine's float32 FMA peak, the roofline that bench/compare
# divides each workload's GFLOP/s by. Needs nothing from weft.
noinst_PROGRAMS += bench/fma_peak
bench_fma_peak_SOURCES = bench/fma_peak.c
bench_fma_peak_LDADD = $(PTHREAD_LIBS)

# burst: a load busy a few milliseconds of every few on one CPU, until
# killed; what bench/crowded.sh and bench/compare's --burst run beside a
# benchmark. Needs nothing from weft.
noinst_PROGRAMS += bench/burst
bench_burst_SOURCES = bench/burst.c
