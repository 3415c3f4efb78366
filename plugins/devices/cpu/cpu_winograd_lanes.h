/* plugins/devices/cpu/cpu_winograd_lanes.h — the transforms of
 * cpu_winograd.c at one vector width, included there once per width with
 * these macros defined (this header undefines them at its end):
 *   WL_NAME(f)   the function's name at this width (f ## 8, f ## 16)
 *   WL_TARGET    its target attribute
 *   WL_LANES     floats to a vector
 *   WL_VEC       the vector type
 *   WL_LOAD(p), WL_STORE(p, v), WL_ZERO(), WL_ADD(a, b), WL_SUB(a, b)
 *   WL_FMA(a, b, c)  a * b + c, one rounding; WL_SET1(x) x in every lane
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
    float *y0 = j->y ? j->y + ((img * j->oh + oy) * j->ow + ox) * K : NULL;
    /* a half tile is no whole window: the pooling (no padding) drops it */
    float *p0 = j->pool && two_rows && two_cols
                    ? j->py + ((img * (j->oh / 2) + oy / 2) * (j->ow / 2) +
                               ox / 2) *
                                  K
                    : NULL;

    if (!y0 && !p0)
      continue;

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
      if (p0)
        WL_STORE(p0 + k, j->relu ? WL_MAX(WL_MAX(y00, y01), WL_MAX(y10, y11))
                                 : WL_MAX4(y00, y01, y10, y11));
      if (!y0)
        continue;
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

/* ---- F(4x4,3x3): tiles of 4x4 outputs from 6x6 inputs ------------------ */

/* One column (or row) of B^T d for F(4x4,3x3), B^T =
 * [4 0 -5 0 1 0; 0 -4 -4 1 1 0; 0 4 -4 -1 1 0; 0 -2 -1 2 1 0;
 *  0 2 -1 -2 1 0; 0 4 0 -5 0 1]. */
#define WL_BT6(d0, d1, d2, d3, d4, d5, e0, e1, e2, e3, e4, e5)                \
  do {                                                                         \
    WL_VEC a_ = WL_FMA(m4, d2, d4), b_ = WL_FMA(m4, d1, d3);                   \
    WL_VEC c_ = WL_SUB(d4, d2), h_ = WL_SUB(d3, d1);                           \
    h_ = WL_ADD(h_, h_);                                                       \
    (e0) = WL_FMA(p4, d0, WL_FMA(m5, d2, d4));                                 \
    (e1) = WL_ADD(a_, b_);                                                     \
    (e2) = WL_SUB(a_, b_);                                                     \
    (e3) = WL_ADD(c_, h_);                                                     \
    (e4) = WL_SUB(c_, h_);                                                     \
    (e5) = WL_FMA(p4, d1, WL_FMA(m5, d3, d5));                                 \
  } while (0)

/* V[p][t][c] = (B^T d B)[p], p < 36, for the tiles t0 .. t0 + WINO_T - 1
 * (zeros from end on). */
WL_TARGET static int64_t WL_NAME(input4_lanes)(const wino_job *j, int64_t t0,
                                               int64_t end, float *V,
                                               int64_t c0) {
  const int64_t C = j->c, pstride = WINO_T * C, per_image = j->th * j->tw;
  const int64_t cend = c0 + (C - c0) / WL_LANES * WL_LANES;
  const WL_VEC p4 = WL_SET1(4.0f), m4 = WL_SET1(-4.0f), m5 = WL_SET1(-5.0f);

  for (int t = 0; t < WINO_T; t++) {
    int64_t ti = t0 + t;

    if (ti >= end) {
      for (int p = 0; p < 36; p++)
        memset(V + p * pstride + t * C + c0, 0,
               (size_t)(cend - c0) * sizeof(float));
      continue;
    }
    int64_t img = ti / per_image, r = ti % per_image;
    int64_t iy0 = 4 * (r / j->tw) - j->pt, ix0 = 4 * (r % j->tw) - j->pl;
    const float *xn = j->x + img * j->h * j->w * C;
    int inside = iy0 >= 0 && iy0 + 5 < j->h && ix0 >= 0 && ix0 + 5 < j->w;

    for (int64_t c = c0; c < cend; c += WL_LANES) {
      WL_VEC e[6][6];

      /* B^T d, a column of d at a time */
      WINO_UNROLL6 for (int b = 0; b < 6; b++) {
        WL_VEC d[6];
        int64_t ix = ix0 + b;

        if (inside) {
          const float *q = xn + (iy0 * j->w + ix) * C + c;
          WINO_UNROLL6 for (int a = 0; a < 6; a++) d[a] =
              WL_LOAD(q + a * j->w * C);
        } else {
          WINO_UNROLL6 for (int a = 0; a < 6; a++) {
            int64_t iy = iy0 + a;
            d[a] = iy >= 0 && iy < j->h && ix >= 0 && ix < j->w
                       ? WL_LOAD(xn + (iy * j->w + ix) * C + c)
                       : WL_ZERO();
          }
        }
        WL_BT6(d[0], d[1], d[2], d[3], d[4], d[5], e[0][b], e[1][b], e[2][b],
               e[3][b], e[4][b], e[5][b]);
      }
      /* (B^T d) B, a row at a time */
      WINO_UNROLL6 for (int a = 0; a < 6; a++) {
        WL_VEC v0, v1, v2, v3, v4, v5;
        float *v = V + (a * 6) * pstride + t * C + c;

        WL_BT6(e[a][0], e[a][1], e[a][2], e[a][3], e[a][4], e[a][5], v0, v1,
               v2, v3, v4, v5);
        WL_STORE(v, v0);
        WL_STORE(v + pstride, v1);
        WL_STORE(v + 2 * pstride, v2);
        WL_STORE(v + 3 * pstride, v3);
        WL_STORE(v + 4 * pstride, v4);
        WL_STORE(v + 5 * pstride, v5);
      }
    }
  }
  return cend;
}

/* One column (or row) of A^T m for F(4x4,3x3), A^T =
 * [1 1 1 1 1 0; 0 1 -1 2 -2 0; 0 1 1 4 4 0; 0 1 -1 8 -8 1]. */
#define WL_AT6(m0, m1, m2, m3, m4, m5, o0, o1, o2, o3)                         \
  do {                                                                         \
    WL_VEC s12_ = WL_ADD(m1, m2), d12_ = WL_SUB(m1, m2);                       \
    WL_VEC s34_ = WL_ADD(m3, m4), d34_ = WL_SUB(m3, m4);                       \
    (o0) = WL_ADD(WL_ADD(m0, s12_), s34_);                                     \
    (o1) = WL_FMA(p2, d34_, d12_);                                             \
    (o2) = WL_FMA(p4, s34_, s12_);                                             \
    (o3) = WL_ADD(WL_FMA(p8, d34_, d12_), m5);                                 \
  } while (0)

/* y = A^T M A + bias (ReLU) for the block's 4x4 tiles before end, where
 * they lie inside the output; pooled (2x2, stride 2), each whole window
 * of a tile stores its maximum. Output channels from k0. */
WL_TARGET static int64_t WL_NAME(output4_lanes)(const wino_job *j,
                                                int64_t t0, int64_t end,
                                                const float *M, int64_t k0) {
  const int64_t K = j->k, ps = WINO_T * K, per_image = j->th * j->tw;
  const int64_t kend = k0 + (K - k0) / WL_LANES * WL_LANES;
  const WL_VEC p2 = WL_SET1(2.0f), p4 = WL_SET1(4.0f), p8 = WL_SET1(8.0f);

  for (int t = 0; t < WINO_T && t0 + t < end; t++) {
    int64_t ti = t0 + t, img = ti / per_image, r = ti % per_image;
    int64_t oy = 4 * (r / j->tw), ox = 4 * (r % j->tw);
    int rows = j->oh - oy < 4 ? (int)(j->oh - oy) : 4;
    int cols = j->ow - ox < 4 ? (int)(j->ow - ox) : 4;
    const float *mt = M + t * K;

    for (int64_t k = k0; k < kend; k += WL_LANES) {
      WL_VEC o[4][6], bias;

      /* A^T m, a column of m at a time */
      WINO_UNROLL6 for (int b = 0; b < 6; b++) {
        WL_VEC m[6];

        WINO_UNROLL6 for (int a = 0; a < 6; a++) m[a] =
            WL_LOAD(mt + (a * 6 + b) * ps + k);
        WL_AT6(m[0], m[1], m[2], m[3], m[4], m[5], o[0][b], o[1][b], o[2][b],
               o[3][b]);
      }
      bias = j->bias ? WL_LOAD(j->bias + k) : WL_ZERO();
      /* (A^T M) A, two rows at a time (a pooling window's), stored
       * where they lie inside the output */
      WINO_UNROLL for (int i = 0; i < 4; i += 2) {
        WL_VEC ya[4], yb[4];

        WL_AT6(o[i][0], o[i][1], o[i][2], o[i][3], o[i][4], o[i][5], ya[0],
               ya[1], ya[2], ya[3]);
        WL_AT6(o[i + 1][0], o[i + 1][1], o[i + 1][2], o[i + 1][3],
               o[i + 1][4], o[i + 1][5], yb[0], yb[1], yb[2], yb[3]);
        WINO_UNROLL for (int b = 0; b < 4; b++) {
          ya[b] = WL_ADD(ya[b], bias), yb[b] = WL_ADD(yb[b], bias);
          if (j->relu)
            ya[b] = WL_RELU(ya[b]), yb[b] = WL_RELU(yb[b]);
        }
        if (j->pool && i + 1 < rows) {
          /* the windows wholly inside the output (no padding) */
          float *py = j->py + ((img * (j->oh / 2) + oy / 2 + i / 2) *
                                   (j->ow / 2) +
                               ox / 2) *
                                  K +
                      k;
          WINO_UNROLL for (int b = 0; b < 4; b += 2) if (b + 1 < cols)
              WL_STORE(py + b / 2 * K,
                       j->relu ? WL_MAX(WL_MAX(ya[b], ya[b + 1]),
                                        WL_MAX(yb[b], yb[b + 1]))
                               : WL_MAX4(ya[b], ya[b + 1], yb[b], yb[b + 1]));
        }
        if (!j->y)
          continue;
        float *yr = j->y + ((img * j->oh + oy + i) * j->ow + ox) * K + k;
        if (i < rows)
          WINO_UNROLL for (int b = 0; b < 4; b++) if (b < cols)
              WL_STORE(yr + b * K, ya[b]);
        if (i + 1 < rows)
          WINO_UNROLL for (int b = 0; b < 4; b++) if (b < cols)
              WL_STORE(yr + j->ow * K + b * K, yb[b]);
      }
    }
  }
  return kend;
}

#undef WL_BT6
#undef WL_AT6
#undef WL_NAME
#undef WL_TARGET
#undef WL_LANES
#undef WL_VEC
#undef WL_LOAD
#undef WL_STORE
#undef WL_ZERO
#undef WL_ADD
#undef WL_SUB
#undef WL_FMA
#undef WL_SET1
#undef WL_RELU
#undef WL_MAX4
#undef WL_MAX
