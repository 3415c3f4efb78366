/* tools/cmd_run.c — `weft run`: runs a signature of a saved model on inputs
 * read from .npy files and writes each output as a .npy file. It does not
 * train or change the model; `--show` lists the signatures instead. */
#include <config.h>

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "commands.h"

#define MAX_INPUTS 64

const char weft_run_summary[] = "run a saved model's signature on .npy files";
const char weft_run_help[] =
    "usage: weft run MODEL [--signature NAME] --input KEY=FILE.npy ...\n"
    "                [--output DIR]\n"
    "       weft run MODEL --show\n\n"
    "Loads the saved model in directory MODEL (its graph, variables and\n"
    "signatures), feeds each input KEY of the signature from FILE.npy and\n"
    "writes each output to DIR/KEY.npy (DIR is created; default: the\n"
    "current directory). NAME may be left out when the model has one\n"
    "signature. A line per output tells its dtype, shape and first values.\n\n"
    "  --signature NAME   the signature to run\n"
    "  --input KEY=FILE   an input, as a .npy file (repeat for each input)\n"
    "  --output DIR       where the outputs go\n"
    "  --show             list the signatures: inputs and outputs with their\n"
    "                     dtypes and shapes ([-1] means any size)\n"
    "  --config FILE      the runtime's config (before `run`)\n";

static void print_arg(const char *what, const wf_signature_arg *a) {
  char shape[160];
  printf("    %s %-16s %-8s %-20s (%s)\n", what, a->key, wf_dtype_name(a->dtype),
         wf_shape_str(&a->shape, shape, sizeof shape), a->tensor);
}

static void show(const wf_saved_model *m, const char *dir) {
  int n = wf_saved_model_num_signatures(m);
  printf("saved model %s: %d signature%s\n", dir, n, n == 1 ? "" : "s");
  for (int i = 0; i < n; i++) {
    printf("  signature %s\n", wf_saved_model_signature_name(m, i));
    wf_signature_arg a;
    for (int j = 0; j < wf_saved_model_num_inputs(m, i); j++) {
      wf_saved_model_input(m, i, j, &a);
      print_arg("input ", &a);
    }
    for (int j = 0; j < wf_saved_model_num_outputs(m, i); j++) {
      wf_saved_model_output(m, i, j, &a);
      print_arg("output", &a);
    }
  }
}

/* "key: dtype (shape) -> path  [first values...]", on one line. */
static void describe(const char *key, const char *path, const wf_tensor *t) {
  char buf[512];
  wf_tensor_str(t, 8, buf, sizeof buf);
  char *values = strchr(buf, '[');
  if (values)
    values[-1] = '\0';
  printf("%s: %s -> %s%s%s\n", key, buf, path, values ? "  " : "",
         values ? values : "");
}

static int make_dir(const char *dir) {
  struct stat sb;
  if (stat(dir, &sb) == 0) {
    if (S_ISDIR(sb.st_mode))
      return 0;
    fprintf(stderr, "weft run: output '%s' exists and is not a directory\n",
            dir);
    return 1;
  }
  if (mkdir(dir, 0777) != 0) {
    fprintf(stderr, "weft run: creating output directory '%s': %s\n", dir,
            strerror(errno));
    return 1;
  }
  return 0;
}

int weft_cmd_run(int argc, char **argv, const char *config) {
  const char *signature = NULL, *output = ".";
  const char *keys[MAX_INPUTS];
  char *files[MAX_INPUTS];
  wf_tensor *values[MAX_INPUTS] = {0};
  int ninputs = 0, show_only = 0, rc = 1, sig = -1, nout = 0;
  static const struct option longopts[] = {
      {"signature", required_argument, NULL, 's'},
      {"input", required_argument, NULL, 'i'},
      {"output", required_argument, NULL, 'o'},
      {"show", no_argument, NULL, 'l'},
      {NULL, 0, NULL, 0}};
  int c;
  /* One run, then exit: OpenMP's workers sleep between parallel regions
   * instead of spinning, which on a small input cost more than the
   * regions themselves (the README's model on 8 images: 39 against 32 ms
   * a call on 2 cores; on 2,048 images no different). Set before the CPU
   * plugin loads libgomp; a value the user set is kept. */
  setenv("OMP_WAIT_POLICY", "passive", 0);
  optind = 1;
  opterr = 0;
  while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
    switch (c) {
    case 's': signature = optarg; break;
    case 'o': output = optarg; break;
    case 'l': show_only = 1; break;
    case 'i': {
      char *eq = strchr(optarg, '=');
      if (!eq || eq == optarg || !eq[1]) {
        fprintf(stderr, "weft run: --input wants KEY=FILE.npy, not '%s'\n",
                optarg);
        return 2;
      }
      if (ninputs == MAX_INPUTS) {
        fprintf(stderr, "weft run: at most %d inputs\n", MAX_INPUTS);
        return 2;
      }
      *eq = '\0';
      keys[ninputs] = optarg;
      files[ninputs++] = eq + 1;
      break;
    }
    default:
      fprintf(stderr, "weft run: unknown option '%s' (see weft run --help)\n",
              argv[optind - 1]);
      return 2;
    }
  }
  if (optind + 1 != argc) {
    fprintf(stderr, "weft run: give one saved model directory (see weft run "
                    "--help)\n");
    return 2;
  }
  const char *dir = argv[optind];

  wf_status *st = wf_status_new();
  wf_runtime *rt = weft_open_runtime(config);
  wf_saved_model *m = NULL;
  wf_tensor **outs = NULL;
  if (!st || !rt)
    goto done;
  m = wf_saved_model_load(rt, dir, st);
  if (!m) {
    fprintf(stderr, "weft run: %s\n", wf_status_message(st));
    goto done;
  }
  if (show_only) {
    show(m, dir);
    rc = 0;
    goto done;
  }
  sig = wf_saved_model_find_signature(m, signature);
  if (sig < 0) {
    fprintf(stderr, "weft run: %s '%s'; it has:",
            signature ? "no signature" : "name a signature of",
            signature ? signature : dir);
    for (int i = 0; i < wf_saved_model_num_signatures(m); i++)
      fprintf(stderr, " %s", wf_saved_model_signature_name(m, i));
    fprintf(stderr, "\n");
    rc = 2;
    goto done;
  }
  for (int j = 0; j < ninputs; j++) {
    values[j] = wf_npy_read(files[j], st);
    if (!values[j]) {
      fprintf(stderr, "weft run: input '%s': %s\n", keys[j],
              wf_status_message(st));
      goto done;
    }
  }
  nout = wf_saved_model_num_outputs(m, sig);
  outs = calloc((size_t)nout, sizeof *outs);
  if (!outs) {
    fprintf(stderr, "weft run: out of memory\n");
    goto done;
  }
  if (wf_saved_model_run(m, sig, keys, values, ninputs, outs, st)) {
    fprintf(stderr, "weft run: %s\n", wf_status_message(st));
    goto done;
  }
  if (make_dir(output))
    goto done;
  for (int j = 0; j < nout; j++) {
    wf_signature_arg a;
    char path[4096];
    wf_saved_model_output(m, sig, j, &a);
    snprintf(path, sizeof path, "%s/%s.npy", output, a.key);
    if (wf_npy_write(path, outs[j], st)) {
      fprintf(stderr, "weft run: output '%s': %s\n", a.key,
              wf_status_message(st));
      goto done;
    }
    describe(a.key, path, outs[j]);
  }
  rc = 0;
done:
  for (int j = 0; outs && j < nout; j++)
    wf_tensor_release(outs[j]);
  free(outs);
  for (int j = 0; j < ninputs; j++)
    wf_tensor_release(values[j]);
  wf_saved_model_free(m);
  wf_runtime_free(rt);
  wf_status_free(st);
  return rc;
}
