/* lib/train/model.h — the model behind weft/layers.h, shared by the
 * layers (lib/train/layers.c) and the optimizer step (lib/train/optimizer.c). */
#ifndef WF_TRAIN_MODEL_H
#define WF_TRAIN_MODEL_H

#include <weft/layers.h>


typedef struct train_var {
  char *name;           /* the session variable's name (shared_name) */
  wf_dtype dtype;
  wf_shape shape;
  wf_output handle;     /* VarHandle */
  wf_node *assign;      /* its initializer's AssignVariable */
  wf_output read_train; /* its value as read in the last training pass */
  int trainable;
  int is_kernel;        /* a layer's weight matrix or filter (L2 applies) */
} train_var;

struct wf_model {
  wf_graph *g;
  uint64_t seed;
  int training;
  train_var **vars;       /* each allocated on its own: pointers stay valid */
  int num_vars, cap_vars;
  char **counter_keys;   /* pass-local name counters: the names (owned) */
  int *counter_vals;     /* and how often each was asked for */
  int num_counter_keys;
  wf_node **updates;     /* batch-norm moving-average assignments */
  int num_updates;
  int num_updates_pass;
  int num_random;        /* op seeds handed out to dropout */
  train_var *global_step; /* created by wf_model_global_step / minimize */
  /* Set by a data-parallel minimize: the init op ends with a broadcast of
   * every variable from task 0, in buckets of this size (0: default). */
  int data_parallel;
  int64_t bucket_bytes;
};

wf_output train_op(wf_model *m, const char *op, const wf_output *in, int n,
                   const wf_attr_item *attrs, int nattrs, wf_status *st);
/* A Const holding t (t's reference is taken over). */
wf_output train_const_tensor(wf_model *m, wf_tensor *t, wf_status *st);
wf_output train_scalar(wf_model *m, wf_dtype dt, double v, wf_status *st);
/* The model variable called name in this pass (made or reused). */
train_var *train_variable(wf_model *m, const char *name, wf_dtype dtype,
                         const int64_t *dims, int rank, wf_init init,
                         double init_value, int trainable, wf_status *st);
wf_output train_read(wf_model *m, const train_var *v, wf_status *st);
int train_add_update(wf_model *m, wf_node *n, wf_status *st);
/* The broadcast of every variable of m from task 0 (lib/train/data_parallel.c);
 * after_init: it reads them only after their initializers ran. */
wf_node *train_broadcast(wf_model *m, int after_init, wf_status *st);

#endif
