/* tests/core/ckpt_fixture.c — writes a checkpoint for the shell tests of
 * `weft ckpt`, through wf_checkpoint_write:
 *   ckpt_fixture FILE [-m KEY=VALUE]... [NAME:DTYPE:DIMS:VALUE]...
 * Each tensor NAME has DTYPE (a weft dtype name), DIMS ("2x3"; empty for a
 * scalar) and every element equal to VALUE. Exits 1 with the message when
 * the write fails, 2 on bad arguments. */
#include <config.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <weft/weft.h>

static void fill(wf_tensor *t, double v) {
  void *p = wf_tensor_data(t);
  for (int64_t i = 0; i < wf_tensor_count(t); i++)
    switch (wf_tensor_dtype(t)) {
    case WF_FLOAT32:
      ((float *)p)[i] = (float)v;
      break;
    case WF_FLOAT64:
      ((double *)p)[i] = v;
      break;
    case WF_INT8:
      ((int8_t *)p)[i] = (int8_t)v;
      break;
    case WF_UINT8:
    case WF_BOOL:
      ((uint8_t *)p)[i] = (uint8_t)v;
      break;
    case WF_INT32:
      ((int32_t *)p)[i] = (int32_t)v;
      break;
    case WF_INT64:
      ((int64_t *)p)[i] = (int64_t)v;
      break;
    default: /* float16, bfloat16: the raw 16 bits */
      ((uint16_t *)p)[i] = (uint16_t)v;
    }
}

/* NAME:DTYPE:DIMS:VALUE into a new tensor; NULL (message printed) when
 * malformed. */
static wf_tensor *parse_spec(char *spec, const char **name) {
  char *parts[4], *save = NULL, *dims_text;
  int64_t dims[WF_MAX_RANK];
  int rank = 0;
  wf_dtype dt;
  wf_tensor *t;

  for (int i = 0; i < 4; i++) {
    parts[i] = i == 0 ? spec : strchr(parts[i - 1], ':');
    if (i > 0) {
      if (!parts[i])
        goto bad;
      *parts[i]++ = '\0';
    }
  }
  *name = parts[0];
  dt = wf_dtype_from_name(parts[1]);
  if (dt == WF_DTYPE_INVALID)
    goto bad;
  for (dims_text = strtok_r(parts[2], "x", &save); dims_text;
       dims_text = strtok_r(NULL, "x", &save)) {
    if (rank == WF_MAX_RANK)
      goto bad;
    dims[rank++] = strtoll(dims_text, NULL, 10);
  }
  t = wf_tensor_new(dt, dims, rank, NULL);
  if (!t)
    goto bad;
  fill(t, strtod(parts[3], NULL));
  return t;
bad:
  fprintf(stderr, "ckpt_fixture: bad tensor spec (NAME:DTYPE:DIMS:VALUE)\n");
  return NULL;
}

int main(int argc, char **argv) {
  const char *names[64], *keys[16], *values[16];
  wf_tensor *tensors[64];
  int n = 0, nmeta = 0, rc = 2;
  wf_status *st = wf_status_new();

  if (argc < 2 || !st) {
    fprintf(stderr, "usage: ckpt_fixture FILE [-m KEY=VALUE]... "
                    "[NAME:DTYPE:DIMS:VALUE]...\n");
    return 2;
  }
  for (int i = 2; i < argc; i++) {
    if (strcmp(argv[i], "-m") == 0 && i + 1 < argc && nmeta < 16) {
      char *eq = strchr(argv[++i], '=');
      if (!eq)
        goto out;
      *eq = '\0';
      keys[nmeta] = argv[i];
      values[nmeta++] = eq + 1;
    } else if (n < 64) {
      if (!(tensors[n] = parse_spec(argv[i], &names[n])))
        goto out;
      n++;
    }
  }
  rc = wf_checkpoint_write(argv[1], names, tensors, n, keys, values, nmeta, st)
           ? 1
           : 0;
  if (rc)
    fprintf(stderr, "ckpt_fixture: %s\n", wf_status_message(st));
out:
  for (int i = 0; i < n; i++)
    wf_tensor_release(tensors[i]);
  wf_status_free(st);
  return rc;
}
