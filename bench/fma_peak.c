/* bench/fma_peak.c — the machine's measured float32 FMA peak: each thread
 * runs independent chains of fused multiply-adds on vector registers (no
 * memory traffic), for about --seconds, with the widest instruction set
 * the CPU offers (AVX-512F, else AVX2+FMA, else plain C that the compiler
 * may or may not vectorise). One JSON line per thread count (1 .. --threads)
 * with GFLOP/s counting an FMA as 2 flops; bench/compare divides each
 * workload's achieved GFLOP/s by the line of 2 threads (the roofline
 * column). It measures the arithmetic ceiling only: no memory bandwidth,
 * no other instruction mix.
 *
 *   bench/fma_peak [--threads 2] [--seconds 0.5] */
#define _GNU_SOURCE /* sched_setaffinity */
#include <config.h>

#include <getopt.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define FMA_X86 1
#endif

/* Independent accumulators per thread: enough to cover the FMA latency
 * (4-5 cycles) on 2 ports. */
#define CHAINS 12

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* Each kernel runs `iters` rounds of CHAINS FMAs of `lanes` floats and
 * returns a value depending on every chain (so none is optimised away). */
/* The 12 chains spelled out: a loop over an array of accumulators would
 * leave them in memory at -O2. */
#define FMA12(f, a, b)                                                         \
  do {                                                                         \
    c0 = f(c0, a, b), c1 = f(c1, a, b), c2 = f(c2, a, b);                      \
    c3 = f(c3, a, b), c4 = f(c4, a, b), c5 = f(c5, a, b);                      \
    c6 = f(c6, a, b), c7 = f(c7, a, b), c8 = f(c8, a, b);                      \
    c9 = f(c9, a, b), c10 = f(c10, a, b), c11 = f(c11, a, b);                  \
  } while (0)
#define SUM12(add)                                                             \
  add(add(add(add(c0, c1), add(c2, c3)), add(add(c4, c5), add(c6, c7))),       \
      add(add(c8, c9), add(c10, c11)))

#ifdef FMA_X86
__attribute__((target("avx512f"))) static float run_avx512(int64_t iters) {
  const __m512 a = _mm512_set1_ps(0.999999f), b = _mm512_set1_ps(1e-7f);
  __m512 c0 = _mm512_set1_ps(0), c1 = _mm512_set1_ps(1), c2 = _mm512_set1_ps(2),
         c3 = _mm512_set1_ps(3), c4 = _mm512_set1_ps(4), c5 = _mm512_set1_ps(5),
         c6 = _mm512_set1_ps(6), c7 = _mm512_set1_ps(7), c8 = _mm512_set1_ps(8),
         c9 = _mm512_set1_ps(9), c10 = _mm512_set1_ps(10),
         c11 = _mm512_set1_ps(11);
  for (int64_t i = 0; i < iters; i++)
    FMA12(_mm512_fmadd_ps, a, b);
  return _mm512_reduce_add_ps(SUM12(_mm512_add_ps));
}

__attribute__((target("avx2,fma"))) static float run_avx2(int64_t iters) {
  const __m256 a = _mm256_set1_ps(0.999999f), b = _mm256_set1_ps(1e-7f);
  __m256 c0 = _mm256_set1_ps(0), c1 = _mm256_set1_ps(1), c2 = _mm256_set1_ps(2),
         c3 = _mm256_set1_ps(3), c4 = _mm256_set1_ps(4), c5 = _mm256_set1_ps(5),
         c6 = _mm256_set1_ps(6), c7 = _mm256_set1_ps(7), c8 = _mm256_set1_ps(8),
         c9 = _mm256_set1_ps(9), c10 = _mm256_set1_ps(10),
         c11 = _mm256_set1_ps(11);
  for (int64_t i = 0; i < iters; i++)
    FMA12(_mm256_fmadd_ps, a, b);
  float out[8], s = 0;
  _mm256_storeu_ps(out, SUM12(_mm256_add_ps));
  for (int k = 0; k < 8; k++)
    s += out[k];
  return s;
}
#endif

static float run_plain(int64_t iters) {
  float acc[CHAINS][8];
  for (int c = 0; c < CHAINS; c++)
    for (int k = 0; k < 8; k++)
      acc[c][k] = (float)(c + k);
  for (int64_t i = 0; i < iters; i++)
    for (int c = 0; c < CHAINS; c++)
      for (int k = 0; k < 8; k++)
        acc[c][k] = acc[c][k] * 0.999999f + 1e-7f;
  float s = 0;
  for (int c = 0; c < CHAINS; c++)
    for (int k = 0; k < 8; k++)
      s += acc[c][k];
  return s;
}

typedef float kernel_fn(int64_t iters);

typedef struct job {
  kernel_fn *fn;
  int64_t iters;
  int cpu; /* -1: not pinned */
  float sink;
} job;

static void *worker(void *arg) {
  job *j = arg;
  if (j->cpu >= 0) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(j->cpu, &set);
    sched_setaffinity(0, sizeof set, &set); /* best effort */
  }
  j->sink = j->fn(j->iters);
  return NULL;
}

/* Seconds for `threads` threads each running fn(iters); cpus[] the CPUs
 * this process may use (one per thread when there are enough). */
static double timed(kernel_fn *fn, int64_t iters, int threads,
                    const int *cpus, int ncpus, float *sink) {
  pthread_t tid[64];
  job jobs[64];
  double t0 = now();
  for (int t = 0; t < threads; t++) {
    jobs[t] = (job){fn, iters, t < ncpus ? cpus[t] : -1, 0};
    if (pthread_create(&tid[t], NULL, worker, &jobs[t])) {
      fprintf(stderr, "fma_peak: cannot start thread %d\n", t);
      exit(1);
    }
  }
  for (int t = 0; t < threads; t++) {
    pthread_join(tid[t], NULL);
    *sink += jobs[t].sink;
  }
  return now() - t0;
}

int main(int argc, char **argv) {
  int threads = 2;
  double seconds = 0.5;
  static const struct option longopts[] = {
      {"threads", required_argument, NULL, 't'},
      {"seconds", required_argument, NULL, 's'},
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0}};
  int c;
  while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
    switch (c) {
    case 't': threads = atoi(optarg); break;
    case 's': seconds = atof(optarg); break;
    case 'h':
      printf("usage: bench/fma_peak [--threads N] [--seconds S]\n");
      return 0;
    default:
      fprintf(stderr, "usage: bench/fma_peak [--threads N] [--seconds S]\n");
      return 2;
    }
  }
  if (threads < 1 || threads > 64 || !(seconds > 0) || optind != argc) {
    fprintf(stderr, "fma_peak: --threads must be 1..64 and --seconds > 0\n");
    return 2;
  }

  kernel_fn *fn = run_plain;
  const char *isa = "plain C";
  int lanes = 8;
#ifdef FMA_X86
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) {
    fn = run_avx512;
    isa = "avx512f";
    lanes = 16;
  } else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
    fn = run_avx2;
    isa = "avx2+fma";
    lanes = 8;
  }
#endif

  int cpus[64], ncpus = 0;
  cpu_set_t mine;
  if (sched_getaffinity(0, sizeof mine, &mine) == 0)
    for (int i = 0; i < CPU_SETSIZE && ncpus < 64; i++)
      if (CPU_ISSET(i, &mine))
        cpus[ncpus++] = i;

  /* Calibrate on one thread to runs of about a twentieth of --seconds (the
   * fastest of 3, so that a moment of load does not shrink them), then
   * repeat runs for --seconds per thread count and keep the fastest. */
  float sink = 0;
  int64_t iters = 1 << 20; /* at least ~2 ms even at 200 GFLOP/s */
  double dt;
  for (;;) {
    dt = 1e30;
    for (int r = 0; r < 3; r++) {
      double s = timed(fn, iters, 1, cpus, ncpus, &sink);
      if (s < dt)
        dt = s;
    }
    if (dt >= seconds / 20)
      break;
    iters *= 2;
  }
  for (int t = 1; t <= threads; t++) {
    double best = 1e30, spent = 0;
    int runs = 0;
    while (spent < seconds || runs < 3) {
      double s = timed(fn, iters, t, cpus, ncpus, &sink);
      spent += s;
      runs++;
      if (s < best)
        best = s;
    }
    double flops = 2.0 * CHAINS * lanes * (double)iters * t;
    printf("{\"bench\":\"fma-peak\",\"isa\":\"%s\",\"threads\":%d,"
           "\"gflops\":%.1f,\"gflops_per_thread\":%.1f,\"runs\":%d,"
           "\"seconds_per_run\":%.4f}\n",
           isa, t, flops / best * 1e-9, flops / best * 1e-9 / t, runs, best);
  }
  /* Every chain's result is used: the compiler cannot drop the loops. */
  volatile float keep = sink;
  (void)keep;
  return 0;
}
