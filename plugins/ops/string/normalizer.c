/* plugins/ops/string/normalizer.c — StringNormalizer, as ONNX defines it
 * (ai.onnx, opset 10): drops the elements of a string vector that equal a
 * stopword, then changes the case of the rest. Its shape function, its
 * reference CPU kernel and the per-node state the kernel prepares once
 * (the locale, the stopwords ready to look up).
 *
 * Strings are decoded as UTF-8 (casemap.c) only where a case change or a
 * case-insensitive comparison needs them decoded; elsewhere they are bytes,
 * passed on unchanged, NUL bytes and all. Strings are not differentiable:
 * the op is registered as having no gradient. */
#include <config.h>

#include "strops.h"

#include <inttypes.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Messages do not name the node: the core prefixes them with it. */

/* A byte string that is not NUL-terminated. */
typedef struct sn_word {
  const char *s;
  size_t len;
} sn_word;

/* A node's attributes, ready to run: made by state_new, read-only
 * afterwards (several steps may run one node's kernel at once). */
typedef struct sn_state {
  str_case action; /* STR_CASE_NONE, _LOWER or _UPPER */
  int sensitive;   /* is_case_sensitive != 0 */
  locale_t loc;
  int64_t nstop;
  sn_word *stop; /* sorted by word_cmp; case folded unless sensitive */
} sn_state;

/* ---- attributes ---------------------------------------------------------- */

int str_shape_attr(const void *ctx, const char *name, int32_t type,
                   wf_attr_value *v, wf_status *st) {
  return wfx_shape_attr(ctx, name, type, v, st);
}

int str_kernel_attr(const void *ctx, const char *name, int32_t type,
                    wf_attr_value *v, wf_status *st) {
  return wfx_kernel_attr(ctx, name, type, v, st);
}

static int parse_action(const char *s, str_case *out, wf_status *st) {
  static const struct {
    const char *name;
    str_case how;
  } actions[] = {{"NONE", STR_CASE_NONE},
                 {"LOWER", STR_CASE_LOWER},
                 {"UPPER", STR_CASE_UPPER}};

  for (size_t i = 0; i < sizeof actions / sizeof actions[0]; i++)
    if (s && strcmp(s, actions[i].name) == 0) {
      *out = actions[i].how;
      return 0;
    }
  return wfx_fail(st, WF_INVALID_ARGUMENT,
                  "attribute 'case_change_action' is '%s'; expected NONE, "
                  "LOWER or UPPER",
                  s ? s : "");
}

/* Orders words by length, then bytes: what bsearch finds them by. */
static int word_cmp(const void *a, const void *b) {
  const sn_word *x = a, *y = b;

  if (x->len != y->len)
    return x->len < y->len ? -1 : 1;
  return x->len ? memcmp(x->s, y->s, x->len) : 0;
}

static void state_free(sn_state *s) {
  if (!s)
    return;
  freelocale(s->loc);
  wfx_host->free(s);
}

/* Reads and checks the attributes (get on ctx) into a new state, in one
 * host allocation with the stopwords' bytes after it: freed with
 * state_free. INVALID_ARGUMENT for an unknown case_change_action or a
 * stopword that is not UTF-8 where it is folded, NOT_FOUND for a locale
 * that does not load. */
static int state_new(str_attr_fn *get, const void *ctx, sn_state **out,
                     wf_status *st) {
  wf_attr_value action, sensitive, words, loc_name;
  str_case how = STR_CASE_NONE;
  locale_t loc = (locale_t)0;
  sn_state *s;
  size_t bytes = 0, head, len, bad;
  char *at;

  *out = NULL;
  if (get(ctx, "case_change_action", WF_ATTR_STRING, &action, st) ||
      get(ctx, "is_case_sensitive", WF_ATTR_INT, &sensitive, st) ||
      get(ctx, "stopwords", WF_ATTR_LIST | WF_ATTR_STRING, &words, st) ||
      get(ctx, "locale", WF_ATTR_STRING, &loc_name, st) ||
      parse_action(action.u.s, &how, st) ||
      str_locale_load(loc_name.u.s ? loc_name.u.s : "", "attribute 'locale'",
                      &loc, st))
    return wfx_code(st);

  /* The stopwords' bytes, folded where the comparison ignores case. */
  for (int64_t i = 0; i < words.count; i++) {
    const char *w = words.u.strings[i] ? words.u.strings[i] : "";

    if (sensitive.u.i) {
      len = strlen(w);
    } else if (str_map(w, strlen(w), STR_CASE_FOLD, loc, NULL, &len, &bad)) {
      wfx_fail(st, WF_INVALID_ARGUMENT,
               "attribute 'stopwords': item %" PRId64 " is not valid UTF-8 "
               "(byte %zu of its %zu is 0x%02x); comparing "
               "case-insensitively (is_case_sensitive 0) needs it decoded",
               i, bad, strlen(w), (unsigned)(unsigned char)w[bad]);
      goto fail;
    }
    bytes += len;
  }
  head = sizeof *s + (size_t)words.count * sizeof(sn_word);
  s = wfx_host->alloc(head + bytes + 1, 0);
  if (!s) {
    wfx_fail(st, WF_RESOURCE_EXHAUSTED,
             "out of memory for %" PRId64 " stopwords (%zu bytes)", words.count,
             head + bytes);
    goto fail;
  }
  *s = (sn_state){.action = how,
                  .sensitive = sensitive.u.i != 0,
                  .loc = loc,
                  .nstop = words.count,
                  .stop = (sn_word *)(s + 1)};
  at = (char *)s + head;
  for (int64_t i = 0; i < words.count; i++) {
    const char *w = words.u.strings[i] ? words.u.strings[i] : "";

    if (s->sensitive) {
      len = strlen(w);
      memcpy(at, w, len);
    } else {
      int mapped = str_map(w, strlen(w), STR_CASE_FOLD, loc, at, &len, &bad);
      assert(mapped == 0); /* measured above */
      (void)mapped;
    }
    s->stop[i] = (sn_word){at, len};
    at += len;
  }
  if (s->nstop > 1)
    qsort(s->stop, (size_t)s->nstop, sizeof *s->stop, word_cmp);
  *out = s;
  return 0;

fail:
  freelocale(loc);
  return wfx_code(st);
}

/* ---- the work, shared by the shape function and the kernel --------------- */

/* x must be (C) or (1, C); unknown ranks and dims pass. */
static int check_x(const wf_shape *s, wf_status *st) {
  char buf[WFX_SHAPE_STR_MAX];

  if (s->rank < 0 || s->rank == 1 ||
      (s->rank == 2 && (s->dims[0] == 1 || s->dims[0] < 0)))
    return 0;
  return wfx_fail(st, WF_INVALID_ARGUMENT,
                  "input 'x' has shape %s; it must be (C) or (1, C)",
                  wfx_shape_str(s, buf, sizeof buf));
}

static int bad_element(int64_t i, int64_t n, const char *p, size_t len,
                       size_t bad, const char *why, wf_status *st) {
  return wfx_fail(st, WF_INVALID_ARGUMENT,
                  "element %" PRId64 " of input 'x' (of %" PRId64 ") is not "
                  "valid UTF-8 (byte %zu of its %zu is 0x%02x); %s needs "
                  "it decoded",
                  i, n, bad, len, (unsigned)(unsigned char)p[bad], why);
}

static int is_stopword(const sn_state *s, const char *p, size_t len) {
  sn_word key = {p, len};

  return s->nstop > 0 &&
         bsearch(&key, s->stop, (size_t)s->nstop, sizeof key, word_cmp) != NULL;
}

/* Marks in keep[0..n) the elements of the string tensor x (n of them)
 * that equal no stopword, and counts them in *kept. INVALID_ARGUMENT
 * naming the element when one that must be folded is not UTF-8. */
static int filter(const sn_state *s, const wf_tensor *x, int64_t n,
                  uint8_t *keep, int64_t *kept, wf_status *st) {
  int fold = !s->sensitive && s->nstop > 0;
  size_t longest = 0, len, flen, bad;
  char *scratch = NULL;
  int rc = 0;

  *kept = 0;
  if (fold) {
    /* A code point of k bytes folds to one of at most 4. */
    for (int64_t i = 0; i < n; i++)
      if (wfx_host->tensor_string(x, i, &len) && len > longest)
        longest = len;
    if (longest > (SIZE_MAX - 1) / 4)
      return wfx_fail(st, WF_RESOURCE_EXHAUSTED,
                      "an element of %zu bytes is too long to fold", longest);
    scratch = wfx_host->alloc(4 * longest + 1, 0);
    if (!scratch)
      return wfx_fail(st, WF_RESOURCE_EXHAUSTED,
                      "out of memory for %zu bytes of folded text",
                      4 * longest + 1);
  }
  for (int64_t i = 0; i < n; i++) {
    const char *p = wfx_host->tensor_string(x, i, &len);

    assert(p);
    if (!fold) {
      keep[i] = !is_stopword(s, p, len);
    } else if (str_map(p, len, STR_CASE_FOLD, s->loc, scratch, &flen, &bad)) {
      rc = bad_element(i, n, p, len, bad,
                       "comparing it with the stopwords case-insensitively "
                       "(is_case_sensitive 0)",
                       st);
      goto done;
    } else {
      keep[i] = !is_stopword(s, scratch, flen);
    }
    *kept += keep[i];
  }

done:
  if (scratch)
    wfx_host->free(scratch);
  return rc;
}

/* ---- shape function ------------------------------------------------------ */

/* The output's last dimension for c input elements (-1: unknown), from
 * value, x's value when it is known (else NULL): c with no stopwords or
 * no elements; else the kept elements, one at least (the empty string
 * standing for none); unknown when that depends on values not known. */
static int out_dim(const sn_state *s, int64_t c, const wf_tensor *value,
                   int64_t *out, wf_status *st) {
  uint8_t *keep;
  int64_t n, kept;
  int rc;

  *out = -1;
  if (c == 0 || s->nstop == 0 || c == 1) {
    *out = c;
    return 0;
  }
  if (!value || wfx_dtype(value) != WF_STRING)
    return 0;
  n = wfx_count(value);
  if (n == 0) {
    *out = 0;
    return 0;
  }
  keep = wfx_host->alloc((size_t)n, 0);
  if (!keep)
    return wfx_fail(st, WF_RESOURCE_EXHAUSTED,
                    "out of memory for %" PRId64 " flags", n);
  rc = filter(s, value, n, keep, &kept, st);
  wfx_host->free(keep);
  if (rc == 0)
    *out = kept > 0 ? kept : 1;
  return rc;
}

/* y has x's rank, and as many elements as out_dim says. */
static int shape(wf_shape_ctx *ctx, wf_status *st) {
  sn_state *s = NULL;
  wf_shape xs, ys;
  int rc;

  rc = wfx_shape_input(ctx, 0, NULL, &xs, st) || check_x(&xs, st) ||
       state_new(str_shape_attr, ctx, &s, st);
  if (rc == 0 && xs.rank > 0) {
    ys = xs;
    if (ys.rank == 2)
      ys.dims[0] = 1;
    rc = out_dim(s, xs.dims[xs.rank - 1], wfx_host->shape_input_value(ctx, 0),
                 &ys.dims[ys.rank - 1], st);
    if (rc == 0)
      wfx_host->shape_set_output(ctx, 0, &ys);
  }
  state_free(s);
  return rc ? wfx_code(st) : 0;
}

/* ---- kernel -------------------------------------------------------------- */

static int create(wf_kernel_ctx *ctx, void **state, wf_status *st) {
  sn_state *s;

  if (state_new(str_kernel_attr, ctx, &s, st))
    return wfx_code(st);
  *state = s;
  return 0;
}

static void destroy(void *state) { state_free(state); }

/* x (C) or (1, C) -> y (C') or (1, C'): the elements that are no
 * stopword, in order, their case changed; (1) or (1, 1) holding "" when
 * none is left. */
static int compute(wf_kernel_ctx *ctx, void *state, wf_status *st) {
  const sn_state *s = state;
  const wf_tensor *x;
  wf_shape xs, ys;
  int64_t n, kept = 0, j = 0;
  const char **strs;
  size_t *lens, total = 0, len, bad;
  uint8_t *keep;
  void *block = NULL;
  char *text = NULL;
  wf_tensor *y = NULL;
  int rc = -1;
  const char *why = s->action == STR_CASE_LOWER ? "changing its case to LOWER"
                                                : "changing its case to UPPER";

  if (wfx_kernel_input(ctx, 0, &x, &xs, st) || check_x(&xs, st))
    return wfx_code(st);
  if (xs.rank < 1)
    return wfx_fail(st, WF_INVALID_ARGUMENT,
                    "input 'x' is a scalar; it must be (C) or (1, C)");
  n = wfx_count(x);
  block = wfx_host->alloc((size_t)(n > 0 ? n : 1) *
                              (sizeof *strs + sizeof *lens + sizeof *keep),
                          0);
  if (!block) {
    wfx_fail(st, WF_RESOURCE_EXHAUSTED,
             "out of memory for the %" PRId64 " elements of input 'x'", n);
    goto fail;
  }
  strs = block;
  lens = (size_t *)(strs + (n > 0 ? n : 1));
  keep = (uint8_t *)(lens + (n > 0 ? n : 1));
  if (filter(s, x, n, keep, &kept, st))
    goto fail;

  /* The kept strings, measured in their new case. */
  for (int64_t i = 0; i < n; i++) {
    if (!keep[i])
      continue;
    strs[j] = wfx_host->tensor_string(x, i, &lens[j]);
    if (s->action != STR_CASE_NONE) {
      if (str_map(strs[j], lens[j], s->action, s->loc, NULL, &len, &bad)) {
        bad_element(i, n, strs[j], lens[j], bad, why, st);
        goto fail;
      }
      total += len;
    }
    j++;
  }
  if (s->action != STR_CASE_NONE && kept > 0) {
    size_t used = 0;

    text = wfx_host->alloc(total + 1, 0);
    if (!text) {
      wfx_fail(st, WF_RESOURCE_EXHAUSTED,
               "out of memory for %zu bytes of output strings", total);
      goto fail;
    }
    for (j = 0; j < kept; j++) {
      int mapped =
          str_map(strs[j], lens[j], s->action, s->loc, text + used, &len, &bad);
      assert(mapped == 0); /* measured above */
      (void)mapped;
      strs[j] = text + used;
      lens[j] = len;
      used += len;
    }
  }

  ys = xs;
  ys.dims[ys.rank - 1] = kept;
  if (n > 0 && kept == 0) {
    ys.dims[ys.rank - 1] = 1;
    strs[0] = "";
    lens[0] = 0;
  }
  y = wfx_host->tensor_new_strings(&ys, strs, lens, st);
  if (y && wfx_host->kernel_output_set(ctx, 0, y, st) == 0)
    rc = 0;

fail:
  if (y)
    wfx_host->tensor_release(y);
  if (text)
    wfx_host->free(text);
  if (block)
    wfx_host->free(block);
  return rc ? wfx_code(st) : 0;
}

/* ---- definitions --------------------------------------------------------- */

/* A string attribute with a default. */
#define ATTR_STRING(nm, dflt, dc)                                              \
  {WF_STRUCT_INIT(wf_attr_def), .name = (nm), .type = WF_ATTR_STRING,          \
   .has_default = 1,                                                           \
   .default_value = {.type = WF_ATTR_STRING, .count = 1, .u = {.s = (dflt)}},  \
   .doc = (dc)}

static const wf_attr_def attrs[] = {
    WFX_ATTR_DTYPE("T", WF_DTYPE_BIT(WF_STRING),
                   "element type of x and y: string"),
    ATTR_STRING("case_change_action", "NONE",
                "NONE, LOWER or UPPER: the case the kept strings are changed "
                "to (towlower_l/towupper_l of the locale, code point by code "
                "point: one to one, so 'ß' stays 'ß')"),
    WFX_ATTR_INT("is_case_sensitive", 0,
                 "non-zero: an element is dropped when it equals a stopword "
                 "byte for byte; 0: when both are equal case folded "
                 "(towlower_l(towupper_l(c)) per code point of their "
                 "UTF-8)"),
    {WF_STRUCT_INIT(wf_attr_def), .name = "stopwords",
     .type = WF_ATTR_LIST | WF_ATTR_STRING, .has_default = 1,
     .default_value = {.type = WF_ATTR_LIST | WF_ATTR_STRING, .count = 0},
     .doc = "the strings to drop (default: none)"},
    ATTR_STRING("locale", "",
                "the locale whose case mappings are used, e.g. 'en_US' "
                "(tried as given, then with '.UTF-8'); '' is C.UTF-8"),
    WF_ATTR_END};

const wf_op_def str_normalizer_op = {
    WF_STRUCT_INIT(wf_op_def),
    .name = "StringNormalizer",
    .inputs = WFX_ARGS(WF_ARG_T("x", "T", "(C) or (1, C) strings")),
    .outputs = WFX_ARGS(WF_ARG_T(
        "y", "T",
        "(C') or (1, C'), x's rank: the elements of x that are no stopword")),
    .attrs = attrs,
    .shape_fn = shape,
    .doc = "ONNX's StringNormalizer (opset 10): drops every element of x "
           "that equals a stopword (compared case-insensitively unless "
           "is_case_sensitive), then changes the case of the rest as "
           "case_change_action says. When every element is dropped, y is "
           "(1) or (1, 1) holding one empty string. Strings are UTF-8 where "
           "a case change or a case-insensitive comparison decodes them "
           "(invalid UTF-8 there is an error naming the element); elsewhere "
           "bytes, NUL bytes included, pass unchanged."};

const wf_kernel_def str_normalizer_kernel =
    WFX_CPU_REFERENCE("StringNormalizer", "T", WF_DTYPE_BIT(WF_STRING), compute,
                      .create = create, .destroy = destroy);

const wf_gradient_def str_normalizer_gradient = {
    WF_STRUCT_INIT(wf_gradient_def), .op = "StringNormalizer",
    .flags = WF_GRAD_NOT_DIFFERENTIABLE};
