/* plugins/devices/cpu/cpu_winograd_lanes.h — the transforms of
 * cpu_winograd.c at one vector width, included there once per width with
 * these macros defined (and undefined after):
 *   WL_NAME(f)   the function's name at this width (f ## 8, f ## 16)
 *   WL_TARGET    its target attribute
 *   WL_LANES     floats to a vector
 *   WL_VEC       the vector type
 *   WL_LOAD(p), WL_STORE(p, v), WL_ZERO(), WL_ADD(a, b), WL_SUB(a, b)
 *   WL_RELU(v)   max(v, 0) as _mm256_max_ps(v, 0) gives it (0 for NaN)
 *   WL_MAX4(a, b, c, d)  a 2x2 window's maximum, cpu_max2x2's rule
 *   WL_MAX(a, b) the plain maximum, which gives the same bits after a ReLU
 *                (no value is NaN or -0)
 * Every lane does the same adds and subtracts in the same order at every
 * width, so the widths give the same bits; cpu_winograd.c runs the wide
 * one over whole vectors of channels and the narrow one over the rest.
 *
 * Each function takes the channels from c0 (a multiple of WL_LANES from
 * there on) while a whole vector of them is left, and returns the first
 * channel it did not take. */

/* V[p][t][c] = (B^T d B)[p] for the tiles t0 .. t0 + WINO_T - 1 (zeros
 * from end on). */
WL_TARGET static int64_t WL_NAME(input_lanes)(const wino_job *j, int64_t t0,
                                              int64_t end, float *V,
                                              int64_t c0) {
  const int64_t C = j->c, pstride = WINO_T * C, per_image = j->th * j->tw;
  const int64_t cend = c0 + (C - c0) / WL_LANES * WL_LANES;

  for (int t = 0; t < WINO_T; t++) {
    int64_t ti = t0 + t;

    if (ti >= end) {
      for (int p = 0; p < 16; p++)
        memset(V + p * pstride + t * C + c0, 0,
               (size_t)(cend - c0) * sizeof(float));
      continue;
    }
    int64_t img = ti / per_image, r = ti % per_image;
    int64_t iy0 = 2 * (r / j->tw) - j->pt, ix0 = 2 * (r % j->tw) - j->pl;
    const float *xn = j->x + img * j->h * j->w * C;
    int inside = iy0 >= 0 && iy0 + 3 < j->h && ix0 >= 0 && ix0 + 3 < j->w;

    for (int64_t c = c0; c < cend; c += WL_LANES) {
      WL_VEC d[4][4], e[4][4];

      /* (unrolled, so that d and e stay in registers: at -O2 GCC keeps
       * the arrays in memory and the transform takes 1.8x as long) */
      if (inside) {
        const float *q = xn + (iy0 * j->w + ix0) * C + c;
        WINO_UNROLL for (int a = 0; a < 4; a++)
          WINO_UNROLL for (int b = 0; b < 4; b++)
            d[a][b] = WL_LOAD(q + (a * j->w + b) * C);
      } else {
        WINO_UNROLL for (int a = 0; a < 4; a++)
          WINO_UNROLL for (int b = 0; b < 4; b++) {
            int64_t iy = iy0 + a, ix = ix0 + b;
            d[a][b] = iy >= 0 && iy < j->h && ix >= 0 && ix < j->w
                          ? WL_LOAD(xn + (iy * j->w + ix) * C + c)
                          : WL_ZERO();
          }
      }
      /* B^T d, B^T = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1] */
      WINO_UNROLL for (int b = 0; b < 4; b++) {
        e[0][b] = WL_SUB(d[0][b], d[2][b]);
        e[1][b] = WL_ADD(d[1][b], d[2][b]);
        e[2][b] = WL_SUB(d[2][b], d[1][b]);
        e[3][b] = WL_SUB(d[1][b], d[3][b]);
      }
      /* (B^T d) B */
      WINO_UNROLL for (int a = 0; a < 4; a++) {
        float *v = V + (a * 4) * pstride + t * C + c;
        WL_STORE(v, WL_SUB(e[a][0], e[a][2]));
        WL_STORE(v + pstride, WL_ADD(e[a][1], e[a][2]));
        WL_STORE(v + 2 * pstride, WL_SUB(e[a][2], e[a][1]));
        WL_STORE(v + 3 * pstride, WL_SUB(e[a][1], e[a][3]));
      }
    }
  }
  return cend;
}

/* y = A^T M A + bias (ReLU) for the block's tiles before end, where they
 * lie inside the output, A^T = [1 1 1 0; 0 1 -1 -1]: output channels from
 * k0. */
WL_TARGET static int64_t WL_NAME(output_lanes)(const wino_job *j, int64_t t0,
                                               int64_t end, const float *M,
                                               int64_t k0) {
  const int64_t K = j->k, ps = WINO_T * K, per_image = j->th * j->tw;
  const int64_t kend = k0 + (K - k0) / WL_LANES * WL_LANES;

  for (int t = 0; t < WINO_T && t0 + t < end; t++) {
    int64_t ti = t0 + t, img = ti / per_image, r = ti % per_image;
    int64_t oy = 2 * (r / j->tw), ox = 2 * (r % j->tw);
    int two_rows = oy + 1 < j->oh, two_cols = ox + 1 < j->ow;
    const float *mt = M + t * K;
    float *y0 = j->y + ((img * j->oh + oy) * j->ow + ox) * K;

    if (j->pool) {
      /* a half tile is no whole window: the pooling (no padding) drops
       * it */
      if (!two_rows || !two_cols)
        continue;
      y0 = j->y + ((img * (j->oh / 2) + oy / 2) * (j->ow / 2) + ox / 2) * K;
    }

    for (int64_t k = k0; k < kend; k += WL_LANES) {
      WL_VEC o[2][4], y00, y01, y10, y11, bias;

      /* A^T m, column by column */
      WINO_UNROLL for (int b = 0; b < 4; b++) {
        WL_VEC m0 = WL_LOAD(mt + (0 + b) * ps + k);
        WL_VEC m1 = WL_LOAD(mt + (4 + b) * ps + k);
        WL_VEC m2 = WL_LOAD(mt + (8 + b) * ps + k);
        WL_VEC m3 = WL_LOAD(mt + (12 + b) * ps + k);
        o[0][b] = WL_ADD(m0, WL_ADD(m1, m2));
        o[1][b] = WL_SUB(WL_SUB(m1, m2), m3);
      }
      bias = j->bias ? WL_LOAD(j->bias + k) : WL_ZERO();
      /* (A^T M) A */
      y00 = WL_ADD(WL_ADD(o[0][0], WL_ADD(o[0][1], o[0][2])), bias);
      y01 = WL_ADD(WL_SUB(WL_SUB(o[0][1], o[0][2]), o[0][3]), bias);
      y10 = WL_ADD(WL_ADD(o[1][0], WL_ADD(o[1][1], o[1][2])), bias);
      y11 = WL_ADD(WL_SUB(WL_SUB(o[1][1], o[1][2]), o[1][3]), bias);
      if (j->relu) {
        y00 = WL_RELU(y00), y01 = WL_RELU(y01);
        y10 = WL_RELU(y10), y11 = WL_RELU(y11);
      }
      if (j->pool) {
        WL_STORE(y0 + k, j->relu ? WL_MAX(WL_MAX(y00, y01), WL_MAX(y10, y11))
                                 : WL_MAX4(y00, y01, y10, y11));
        continue;
      }
      WL_STORE(y0 + k, y00);
      if (two_cols)
        WL_STORE(y0 + K + k, y01);
      if (two_rows) {
        float *y1 = y0 + j->ow * K;
        WL_STORE(y1 + k, y10);
        if (two_cols)
          WL_STORE(y1 + K + k, y11);
      }
    }
  }
  return kend;
}
