/* core/compile/memplan.c — memory planning for the partitions of a signature (the
 * offsets of statically sized outputs in one arena per partition, shared by
 * outputs whose lifetimes do not overlap; and, per partition, a few plans
 * placed by the shapes a step's kernels actually asked for, keyed by the
 * step's feed shapes) and the arenas that step states own: views handed
 * out from them, the hold each live view keeps on its buffer, and the
 * meter of what a step allocates beyond its arena.
 *
 * It does not decide what kernels compute or where nodes run, and it never
 * moves a tensor that is already made. See memplan.h for the rules. */
#include <config.h>

#include "compile/memplan.h"

#include <assert.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "compile/plan.h"
#include "plugin/runtime_internal.h"
#include "graph/graph_internal.h"
#include "plugin/runtime_internal.h"
#include "plugin/settings.h"
#include "base/status_internal.h"
#include "graph/tensor_internal.h"

/* Dependencies are tracked as ancestor bit sets up to this many nodes per
 * partition (2 MiB of bits at most); larger partitions share buffers by the
 * order one thread would run them, which the arena's holds keep safe when
 * threads run them otherwise. */
#define ANCESTORS_MAX_NODES 4096
#define BUFFER_ALIGN ((size_t)WF_TENSOR_ALIGN)
/* Up to this many planned outputs, buffers are chosen largest output
 * first (quadratic); beyond, in one pass in run order. */
#define GREEDY_MAX_OUTPUTS 4096
/* The most outputs one buffer is followed through (see collect_uses). */
#define FORWARD_WALK_MAX 64
/* Outputs this large share arena bytes only with outputs of their own
 * size, as the tensor cache (core/graph/tensor.c) reuses blocks. Sharing them
 * more tightly saves memory but costs time: the threads of a kernel keep
 * in their own caches the lines they wrote the step before, and another
 * tensor's kernel, splitting its work otherwise, drags those lines across
 * cores (measured: the cnn's inference at batch 64 ran 12% slower on two
 * intra-op threads when its convolutions' outputs overlapped). */
#define SHARE_EXACT_BYTES ((size_t)256 << 10)
/* Plans from actual shapes kept per partition (least recently used out),
 * and feed shapes remembered as missed once. While the cache has room, a
 * step that misses records and its plan is built at once (so the new
 * buffer is first touched by the next step, usually still a warm-up
 * one); once it is full, only feed shapes that missed before evict a
 * plan, so steps cycling through more shapes than it holds build a plan
 * every other visit at most, and shapes seen once cost none. */
#define PLANS_MAX 4
#define MISSED_MAX 8

static atomic_long stat_arenas, stat_views, stat_fallbacks, stat_in_place,
    stat_plans;
static atomic_int stats_on;

void wf__memplan_stats_enable(void) { atomic_store(&stats_on, 1); }

/* Adds one to counter c while counting is on. */
static void count(atomic_long *c) {
  if (atomic_load_explicit(&stats_on, memory_order_relaxed))
    atomic_fetch_add_explicit(c, 1, memory_order_relaxed);
}

void wf__memplan_stats_get(wf__memplan_stats *out) {
  out->arenas = atomic_load_explicit(&stat_arenas, memory_order_relaxed);
  out->views = atomic_load_explicit(&stat_views, memory_order_relaxed);
  out->fallbacks = atomic_load_explicit(&stat_fallbacks, memory_order_relaxed);
  out->in_place = atomic_load_explicit(&stat_in_place, memory_order_relaxed);
  out->plans = atomic_load_explicit(&stat_plans, memory_order_relaxed);
}

void wf__memplan_count_in_place(void) { count(&stat_in_place); }

/* ---- the plan ------------------------------------------------------------ */

typedef struct planned {
  int32_t out;     /* its output slot */
  wf_dtype dtype;
  wf_shape shape;
  size_t nbytes;
  size_t offset;   /* in the arena */
  /* The segments its bytes cover: [seg_begin, seg_end). A segment is a
   * run of arena bytes between two consecutive output boundaries; a view
   * holds every segment it covers while it lives. */
  int32_t seg_begin, seg_end;
} planned;

typedef struct plan_cache plan_cache;

/* A partition's static plan (built with the executor, owned by its
 * partition) or a plan from actual shapes (reference counted: its cache
 * holds one reference and every arena using it another). Both are
 * immutable once built; only last_used moves. */
struct wf__memplan {
  int num_out_slots, num_in_slots;
  int32_t *view_of;   /* per output slot: index into planned, or -1 */
  planned *planned;
  int num_planned;
  int num_segs;
  size_t bytes;       /* the arena */
  unsigned char *fed; /* per input slot (the static plan's) */
  /* Per output slot: 1 on output 0 of a node that probably writes it over
   * its input 0 (in_place_guess); the executor takes inputs over only
   * there. */
  unsigned char *in_place;
  /* The static plan: its partition and how its steps run (for plans
   * built later), and its cache of plans from actual shapes (NULL when
   * every output that could be planned has a known shape). */
  const wf__part *pt;
  int threaded;
  plan_cache *cache;
  /* A plan from actual shapes: the feed shapes it is for. */
  int dynamic;
  atomic_long refs;
  wf_shape *key;           /* one per feed of the executor */
  atomic_ullong last_used; /* its cache's clock when a step last chose it */
};

/* One feed-shape key missed once (see MISSED_MAX). */
typedef struct missed {
  wf_shape *key; /* NULL: unused */
  unsigned long long when;
} missed;

struct plan_cache {
  pthread_mutex_t mu;       /* guards plans and missed */
  wf__memplan *plans[PLANS_MAX]; /* NULL: unused */
  missed missed[MISSED_MAX];
  int nfeeds;
  atomic_ullong clock;
};

static void plan_destroy(wf__memplan *p) {
  wf__free(p->view_of);
  wf__free(p->planned);
  wf__free(p->fed);
  wf__free(p->in_place);
  wf__free(p->key);
  wf__free(p);
}

static wf__memplan *plan_retain(wf__memplan *p) {
  atomic_fetch_add_explicit(&p->refs, 1, memory_order_relaxed);
  return p;
}

static void plan_unref(wf__memplan *p) {
  if (p && atomic_fetch_sub_explicit(&p->refs, 1, memory_order_acq_rel) == 1)
    plan_destroy(p);
}

static void cache_free(plan_cache *c) {
  if (!c)
    return;
  for (int i = 0; i < PLANS_MAX; i++)
    plan_unref(c->plans[i]);
  for (int i = 0; i < MISSED_MAX; i++)
    wf__free(c->missed[i].key);
  pthread_mutex_destroy(&c->mu);
  wf__free(c);
}

void wf__memplan_free(wf__memplan *p) {
  if (!p)
    return;
  assert(!p->dynamic);
  cache_free(p->cache);
  plan_destroy(p);
}

int wf__memplan_num_cached(const wf__memplan *p) {
  int n = 0;
  if (!p || !p->cache)
    return 0;
  pthread_mutex_lock(&p->cache->mu);
  for (int i = 0; i < PLANS_MAX; i++)
    n += p->cache->plans[i] != NULL;
  pthread_mutex_unlock(&p->cache->mu);
  return n;
}

size_t wf__memplan_bytes(const wf__memplan *p) { return p ? p->bytes : 0; }
int wf__memplan_num_planned(const wf__memplan *p) {
  return p ? p->num_planned : 0;
}
int wf__memplan_num_segments(const wf__memplan *p) {
  return p ? p->num_segs : 0;
}

/* What building one partition's plan works with (freed together). */
typedef struct builder {
  const wf__part *pt;
  int n;                /* nodes */
  int32_t *order;       /* node at each position */
  int32_t *pos;         /* position of each node */
  int32_t *node_of_out; /* output slot -> node */
  /* Per output slot: the nodes that read its buffer (consumers, and
   * consumers of outputs that may forward it), as [use_begin, use_end) in
   * uses; escapes: 1 when the buffer may leave the partition's step. */
  int32_t *use_begin, *use_end, *uses;
  int num_uses, cap_uses;
  unsigned char *escapes;
  int32_t *last_pos;    /* per output slot: last position its buffer is read */
  uint64_t *anc;        /* n rows of words: strict ancestors, or NULL */
  int words;
  int32_t *stamp;       /* per output slot / node: visit marks */
  int32_t *queue;
  /* Plans from actual shapes: per output slot, whether a kernel allocated
   * it in the recorded step, and the shape it asked for; NULL for the
   * static plan. */
  const unsigned char *made;
  const wf_shape *made_shape;
  unsigned char *in_place; /* per node: in_place_guess */
} builder;

static void builder_free(builder *b) {
  wf__free(b->order);
  wf__free(b->pos);
  wf__free(b->node_of_out);
  wf__free(b->use_begin);
  wf__free(b->use_end);
  wf__free(b->uses);
  wf__free(b->escapes);
  wf__free(b->last_pos);
  wf__free(b->anc);
  wf__free(b->stamp);
  wf__free(b->queue);
  wf__free(b->in_place);
}

/* The order in which one thread runs the partition (the executor's drive()
 * without a pool: the first expensive successor next, the others and the
 * cheap ones on the inline stack). Every node gets a position: nodes the
 * simulation never reaches (they wait on another partition) follow in plan
 * order, which is topological within the partition for what they feed. */
static int simulate_order(builder *b) {
  const wf__part *pt = b->pt;
  int n = b->n, count = 0, sp = 0;
  int32_t *pending = wf__calloc((size_t)n + 1, sizeof *pending);
  int32_t *stack = wf__calloc((size_t)n + 1, sizeof *stack);
  if (!pending || !stack) {
    wf__free(pending);
    wf__free(stack);
    return -1;
  }
  for (int i = 0; i < n; i++) {
    pending[i] = pt->nodes[i].pending;
    b->pos[i] = -1;
  }
  /* Roots 1.. first and root 0 last, as exec_run starts them. */
  for (int r = 1; r <= pt->num_roots; r++) {
    int32_t next = pt->roots[r % pt->num_roots];
    for (;;) {
      if (next < 0) {
        if (sp == 0)
          break;
        next = stack[--sp];
      }
      int32_t cur = next;
      next = -1;
      if (b->pos[cur] >= 0)
        continue;
      b->pos[cur] = count;
      b->order[count++] = cur;
      const wf__xnode *xn = &pt->nodes[cur];
      for (int e = xn->edge_begin; e < xn->edge_end; e++) {
        int32_t d = pt->edges[e].dst_node;
        if (d < 0 || --pending[d] != 0)
          continue;
        if (pt->nodes[d].cheap || next >= 0)
          stack[sp++] = d;
        else
          next = d;
      }
      for (int c = xn->ctrl_begin; c < xn->ctrl_end; c++) {
        int32_t d = pt->ctrl[c];
        if (--pending[d] != 0)
          continue;
        if (pt->nodes[d].cheap || next >= 0)
          stack[sp++] = d;
        else
          next = d;
      }
    }
  }
  /* Whatever was not reached keeps its plan order after the rest; a node
   * is only unreached when an in-edge comes from outside the simulation,
   * and planning stays safe then because arenas check every hold. */
  for (int i = 0; i < n; i++)
    if (b->pos[i] < 0) {
      b->pos[i] = count;
      b->order[count++] = i;
    }
  wf__free(pending);
  wf__free(stack);
  return 0;
}

static int push_use(builder *b, int32_t node) {
  if (b->num_uses == b->cap_uses) {
    int cap = b->cap_uses ? b->cap_uses * 2 : 256;
    int32_t *grown = wf__realloc(b->uses, (size_t)cap * sizeof *grown);
    if (!grown)
      return -1;
    b->uses = grown;
    b->cap_uses = cap;
  }
  b->uses[b->num_uses++] = node;
  return 0;
}

/* Whether output m of node c may be input j's tensor passed on (Identity,
 * Reshape: cheap kernels whose output has the input's dtype and element
 * count); the buffer then lives as long as that output. Only a guess that
 * makes plans better: the arena's holds keep any kernel safe. */
static int may_forward(const wf__xnode *c, int j, int m) {
  const wf_node *nd = c->node;
  const wf_node *src = nd->inputs[j].node;
  int si = nd->inputs[j].index;
  if (!c->cheap || nd->output_dtypes[m] != src->output_dtypes[si])
    return 0;
  int64_t a = wf_shape_count(&nd->output_shapes[m]);
  int64_t b = wf_shape_count(&src->output_shapes[si]);
  return a < 0 || b < 0 || a == b;
}

/* may_forward, or output 0 written over input 0 (in_place_guess),
 * knowing that an output allocated in the recorded step is a buffer of
 * its own. */
static int passes_on(const builder *b, const wf__xnode *c, int j, int m) {
  if (b->made && b->made[c->output_base + m])
    return 0;
  if (j == 0 && m == 0 && b->in_place[c - b->pt->nodes])
    return 1;
  return may_forward(c, j, m);
}

/* Whether output m of xn is probably one of its inputs passed on (then it
 * needs no memory of its own). */
static int forwards(const builder *b, const wf__xnode *xn, int m) {
  for (int j = 0; j < xn->num_inputs; j++)
    if (passes_on(b, xn, j, m))
      return 1;
  return 0;
}

/* Whether a consumer takes the tensor out of the partition's step. */
static int leaves_partition(const wf__xnode *c) {
  return c->node->op->def.name[0] == '_' &&
         strncmp(c->node->op->def.name, "_Send", 5) == 0;
}

/* Collects the readers of output slot o's buffer (and whether it escapes):
 * a walk over consumers and the outputs that may forward it. A buffer
 * passed on through more outputs than FORWARD_WALK_MAX is left unplanned
 * (counted as escaping), which keeps the walks linear in the graph. */
static int collect_uses(builder *b, int32_t o, int32_t mark) {
  const wf__part *pt = b->pt;
  int head = 0, tail = 0;
  b->use_begin[o] = b->num_uses;
  b->queue[tail++] = o;
  b->stamp[o] = mark;
  while (head < tail) {
    int32_t cur = b->queue[head++];
    int32_t i = b->node_of_out[cur];
    int k = cur - pt->nodes[i].output_base;
    const wf__xnode *xn = &pt->nodes[i];
    for (int e = xn->edge_begin; e < xn->edge_end; e++) {
      const wf__edge *ed = &pt->edges[e];
      if (ed->src_output != k)
        continue;
      if (ed->dst_node < 0) {
        b->escapes[o] = 1; /* fetched */
        continue;
      }
      const wf__xnode *c = &pt->nodes[ed->dst_node];
      if (leaves_partition(c))
        b->escapes[o] = 1;
      if (push_use(b, ed->dst_node))
        return -1;
      int j = ed->dst_slot - c->input_base;
      for (int m = 0; m < c->num_outputs; m++) {
        int32_t fo = c->output_base + m;
        if (b->stamp[fo] == mark || !passes_on(b, c, j, m))
          continue;
        if (tail == FORWARD_WALK_MAX) {
          b->escapes[o] = 1;
          continue;
        }
        b->stamp[fo] = mark;
        b->queue[tail++] = fo;
      }
    }
  }
  b->use_end[o] = b->num_uses;
  int32_t last = b->pos[b->node_of_out[o]];
  for (int u = b->use_begin[o]; u < b->use_end[o]; u++)
    if (b->pos[b->uses[u]] > last)
      last = b->pos[b->uses[u]];
  b->last_pos[o] = last;
  return 0;
}

/* Strict ancestors of every node through data and control edges. */
static int compute_ancestors(builder *b) {
  const wf__part *pt = b->pt;
  b->words = (b->n + 63) / 64;
  b->anc = wf__calloc((size_t)b->n * (size_t)b->words + 1, sizeof *b->anc);
  if (!b->anc)
    return -1;
  for (int p = 0; p < b->n; p++) {
    int32_t u = b->order[p];
    const wf__xnode *xn = &pt->nodes[u];
    const uint64_t *au = &b->anc[(size_t)u * (size_t)b->words];
    for (int e = xn->edge_begin; e < xn->edge_end; e++) {
      int32_t d = pt->edges[e].dst_node;
      if (d < 0)
        continue;
      uint64_t *ad = &b->anc[(size_t)d * (size_t)b->words];
      for (int w = 0; w < b->words; w++)
        ad[w] |= au[w];
      ad[u / 64] |= UINT64_C(1) << (u % 64);
    }
    for (int c = xn->ctrl_begin; c < xn->ctrl_end; c++) {
      int32_t d = pt->ctrl[c];
      uint64_t *ad = &b->anc[(size_t)d * (size_t)b->words];
      for (int w = 0; w < b->words; w++)
        ad[w] |= au[w];
      ad[u / 64] |= UINT64_C(1) << (u % 64);
    }
  }
  return 0;
}

static int is_ancestor(const builder *b, int32_t a, int32_t of) {
  const uint64_t *row = &b->anc[(size_t)of * (size_t)b->words];
  return (row[a / 64] >> (a % 64)) & 1;
}

/* Whether node `node` runs only after everything that reads output slot
 * `tenant`'s buffer let it go (so the buffer may be its output's). */
static int buffer_free_for(const builder *b, int32_t tenant, int32_t node) {
  int32_t producer = b->node_of_out[tenant];
  if (!b->anc)
    return b->last_pos[tenant] < b->pos[node];
  if (producer == node || !is_ancestor(b, producer, node))
    return 0;
  for (int u = b->use_begin[tenant]; u < b->use_end[tenant]; u++)
    if (b->uses[u] == node || !is_ancestor(b, b->uses[u], node))
      return 0;
  return 1;
}

static int plannable_kind(const wf__xnode *xn, int k);

/* Marks in in_place (per node) the nodes that will write output 0 over
 * input 0 (WF_KERNEL_IN_PLACE) when their steps run as planned: input 0
 * arrives by the only edge of its producer's output (no other reader, no
 * fetch: the slot gets the producer's reference), the producer makes
 * that output in a buffer of the core's (a kind that may be planned, and
 * not an input a cheap kernel passes on, which could be anyone's), and
 * dtype and element count match. Plans count the output as the input's
 * buffer passed on, and the executor takes an input over only where this
 * says so (wf__arena_in_place), so the two agree; the arena's rules
 * (wf__arena_may_overwrite) still decide each time. */
static int in_place_guess(const wf__part *pt, unsigned char *in_place) {
  int32_t *edge_to = wf__calloc((size_t)pt->num_slots + 1, sizeof *edge_to);
  int32_t *src_of = wf__calloc((size_t)pt->num_slots + 1, sizeof *src_of);
  if (!edge_to || !src_of) {
    wf__free(edge_to);
    wf__free(src_of);
    return -1;
  }
  for (int k = 0; k < pt->num_slots; k++)
    edge_to[k] = -1;
  for (int i = 0; i < pt->num_nodes; i++)
    for (int e = pt->nodes[i].edge_begin; e < pt->nodes[i].edge_end; e++)
      if (pt->edges[e].dst_node >= 0) {
        edge_to[pt->edges[e].dst_slot] = e;
        src_of[pt->edges[e].dst_slot] = i;
      }
  for (int ci = 0; ci < pt->num_nodes; ci++) {
    const wf__xnode *c = &pt->nodes[ci];
    in_place[ci] = 0;
    if (!c->kernel || !(c->kernel->def.flags & WF_KERNEL_IN_PLACE) ||
        c->num_inputs < 1 || c->num_outputs < 1 ||
        edge_to[c->input_base] < 0)
      continue;
    const wf__edge *in = &pt->edges[edge_to[c->input_base]];
    const wf__xnode *src = &pt->nodes[src_of[c->input_base]];
    int k = in->src_output, readers = 0;
    for (int e = src->edge_begin; e < src->edge_end; e++)
      readers += pt->edges[e].src_output == k;
    if (readers != 1 || !plannable_kind(src, k))
      continue;
    int passed_on = 0;
    for (int j = 0; j < src->num_inputs && !passed_on; j++)
      passed_on = may_forward(src, j, k);
    if (passed_on)
      continue;
    const wf_node *nd = c->node, *sn = src->node;
    int64_t a = wf_shape_count(&nd->output_shapes[0]);
    int64_t b = wf_shape_count(&sn->output_shapes[k]);
    in_place[ci] = nd->output_dtypes[0] == sn->output_dtypes[k] &&
                   (a < 0 || b < 0 || a == b);
  }
  wf__free(edge_to);
  wf__free(src_of);
  return 0;
}

/* Whether output k of node xn is of a kind that may be planned, whatever
 * its shape. */
static int plannable_kind(const wf__xnode *xn, int k) {
  const wf_node *nd = xn->node;
  /* Sources without inputs (Const) mostly hand out a tensor they hold. */
  if (!xn->kernel || xn->num_inputs == 0 ||
      (xn->kernel->def.flags & WF_KERNEL_ASYNC) ||
      (nd->op->def.flags & (WF_OP_STATEFUL | WF_OP_SOURCE_FED)))
    return 0;
  wf_dtype dt = nd->output_dtypes[k];
  return dt != WF_RESOURCE && wf_dtype_size(dt) != 0;
}

/* The shape output k of xn is planned with: the one its kernel asked for
 * in the recorded step, else the static one when fully known, else NULL. */
static const wf_shape *plan_shape(const builder *b, const wf__xnode *xn,
                                  int k) {
  int32_t o = xn->output_base + k;
  if (b->made && b->made[o])
    return &b->made_shape[o];
  const wf_shape *s = &xn->node->output_shapes[k];
  return wf_shape_is_known(s) ? s : NULL;
}

/* Whether output k of node xn may be planned (before its uses are known). */
static int plannable(const builder *b, const wf__xnode *xn, int k,
                     size_t *nbytes) {
  if (!plannable_kind(xn, k))
    return 0;
  wf_dtype dt = xn->node->output_dtypes[k];
  const wf_shape *s = plan_shape(b, xn, k);
  if (!s)
    return 0;
  if (wf__tensor_check(dt, s->dims, s->rank, nbytes, NULL) || *nbytes == 0)
    return 0;
  return 1;
}

static size_t align_up(size_t n) {
  return (n + BUFFER_ALIGN - 1) / BUFFER_ALIGN * BUFFER_ALIGN;
}

/* An output to place: its slot, run position and size. */
typedef struct candidate {
  int32_t out;
  int32_t at;
  size_t nbytes;
} candidate;

/* Largest first; ties in run order. */
static int by_size(const void *pa, const void *pb) {
  const candidate *a = pa, *b = pb;
  if (a->nbytes != b->nbytes)
    return a->nbytes > b->nbytes ? -1 : 1;
  return (a->at > b->at) - (a->at < b->at);
}

/* Whether output slots x and y may be alive at once (neither's producer
 * runs only after every reader of the other). */
static int may_overlap(const builder *b, int32_t x, int32_t y) {
  return !buffer_free_for(b, y, b->node_of_out[x]) &&
         !buffer_free_for(b, x, b->node_of_out[y]);
}

/* Whether outputs of a and b bytes may ever share arena bytes. */
static int may_share(size_t a, size_t b) {
  return (a < SHARE_EXACT_BYTES && b < SHARE_EXACT_BYTES) ||
         align_up(a) == align_up(b);
}

/* Records output slot o of node_of_out[o] as planned at offset. */
static void add_planned(wf__memplan *p, const wf__part *pt, const builder *b,
                        int32_t o, size_t offset, size_t nbytes) {
  const wf__xnode *xn = &pt->nodes[b->node_of_out[o]];
  int k = o - xn->output_base;
  planned *v = &p->planned[p->num_planned];
  v->out = o;
  v->dtype = xn->node->output_dtypes[k];
  v->shape = *plan_shape(b, xn, k);
  v->nbytes = nbytes;
  v->offset = offset;
  p->view_of[o] = p->num_planned++;
  if (offset + align_up(nbytes) > p->bytes)
    p->bytes = offset + align_up(nbytes);
}

/* An extent of the arena taken by a placed output. */
typedef struct extent {
  size_t begin, end;
} extent;

static int by_begin(const void *pa, const void *pb) {
  const extent *a = pa, *b = pb;
  return (a->begin > b->begin) - (a->begin < b->begin);
}

static int by_value(const void *pa, const void *pb) {
  size_t a = *(const size_t *)pa, b = *(const size_t *)pb;
  return (a > b) - (a < b);
}

/* Index of v in the sorted array bounds[0 .. n) (v is there). */
static int32_t bound_index(const size_t *bounds, int n, size_t v) {
  int lo = 0, hi = n - 1;
  while (lo < hi) {
    int mid = lo + (hi - lo) / 2;
    if (bounds[mid] < v)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

/* Splits the arena into segments at every output's first and last byte,
 * and gives each output its range of them. */
static int make_segments(wf__memplan *p) {
  int n = 0;
  size_t *bounds = wf__calloc((size_t)p->num_planned * 2 + 1, sizeof *bounds);
  if (!bounds)
    return -1;
  for (int v = 0; v < p->num_planned; v++) {
    bounds[n++] = p->planned[v].offset;
    bounds[n++] = p->planned[v].offset + align_up(p->planned[v].nbytes);
  }
  qsort(bounds, (size_t)n, sizeof *bounds, by_value);
  int u = 0;
  for (int i = 0; i < n; i++)
    if (u == 0 || bounds[u - 1] != bounds[i])
      bounds[u++] = bounds[i];
  p->num_segs = u > 0 ? u - 1 : 0;
  for (int v = 0; v < p->num_planned; v++) {
    planned *pl = &p->planned[v];
    pl->seg_begin = bound_index(bounds, u, pl->offset);
    pl->seg_end = bound_index(bounds, u, pl->offset + align_up(pl->nbytes));
  }
  wf__free(bounds);
  return 0;
}

/* Greedy by size: largest output first, each at the lowest offset of the
 * smallest gap left between the outputs already placed that it may be
 * alive with (or after the last of them). */
static int place_by_size(wf__memplan *p, const wf__part *pt,
                         const builder *b, candidate *cand, int ncand) {
  extent *busy = wf__calloc((size_t)ncand + 1, sizeof *busy);
  if (!busy)
    return -1;
  qsort(cand, (size_t)ncand, sizeof *cand, by_size);
  for (int c = 0; c < ncand; c++) {
    int32_t o = cand[c].out;
    size_t need = align_up(cand[c].nbytes);
    int nbusy = 0;
    for (int v = 0; v < p->num_planned; v++) {
      const planned *pl = &p->planned[v];
      if (!may_share(cand[c].nbytes, pl->nbytes) || may_overlap(b, o, pl->out))
        busy[nbusy++] = (extent){pl->offset, pl->offset + align_up(pl->nbytes)};
    }
    qsort(busy, (size_t)nbusy, sizeof *busy, by_begin);
    size_t at = 0, best = SIZE_MAX, best_gap = SIZE_MAX;
    for (int i = 0; i < nbusy; i++) {
      if (busy[i].begin > at && busy[i].begin - at >= need &&
          busy[i].begin - at < best_gap) {
        best = at;
        best_gap = busy[i].begin - at;
      }
      if (busy[i].end > at)
        at = busy[i].end;
    }
    add_planned(p, pt, b, o, best != SIZE_MAX ? best : at, cand[c].nbytes);
  }
  wf__free(busy);
  return 0;
}

/* One pass in run order for very large partitions: each output takes the
 * smallest free buffer that holds it, else grows the largest free one,
 * else starts a new one; buffers are laid end to end. */
static int place_in_order(wf__memplan *p, const wf__part *pt,
                          const builder *b, const candidate *cand,
                          int ncand) {
  int32_t *tenant = wf__calloc((size_t)ncand + 1, sizeof *tenant);
  int32_t *buf_of = wf__calloc((size_t)ncand + 1, sizeof *buf_of);
  size_t *size = wf__calloc((size_t)ncand + 1, sizeof *size);
  int nbufs = 0;
  if (!tenant || !buf_of || !size) {
    wf__free(tenant);
    wf__free(buf_of);
    wf__free(size);
    return -1;
  }
  for (int c = 0; c < ncand; c++) {
    int32_t o = cand[c].out, i = b->node_of_out[o];
    size_t need = align_up(cand[c].nbytes);
    int best = -1, largest = -1;
    for (int f = 0; f < nbufs; f++) {
      if (!buffer_free_for(b, tenant[f], i) ||
          ((need >= SHARE_EXACT_BYTES || size[f] >= SHARE_EXACT_BYTES) &&
           size[f] != need))
        continue;
      if (size[f] >= need && (best < 0 || size[f] < size[best]))
        best = f;
      if (largest < 0 || size[f] > size[largest])
        largest = f;
    }
    if (best < 0)
      best = largest;
    if (best < 0)
      best = nbufs++;
    if (size[best] < need)
      size[best] = need;
    tenant[best] = o;
    buf_of[c] = best;
  }
  /* Offsets once the sizes are final. */
  size_t total = 0;
  size_t *off = wf__calloc((size_t)nbufs + 1, sizeof *off);
  if (!off) {
    wf__free(tenant);
    wf__free(buf_of);
    wf__free(size);
    return -1;
  }
  for (int f = 0; f < nbufs; f++) {
    off[f] = total;
    total += size[f];
  }
  for (int c = 0; c < ncand; c++)
    add_planned(p, pt, b, cand[c].out, off[buf_of[c]], cand[c].nbytes);
  wf__free(off);
  wf__free(tenant);
  wf__free(buf_of);
  wf__free(size);
  return 0;
}

/* Builds pt's plan into *out. `threaded`: its steps may run nodes on
 * several threads at once. made and made_shape: per output slot, what a
 * recorded step allocated (see builder), or NULL for the static plan. */
static int plan_part(const wf__part *pt, int threaded,
                     const unsigned char *made, const wf_shape *made_shape,
                     wf__memplan **out) {
  builder b;
  memset(&b, 0, sizeof b);
  b.pt = pt;
  b.made = made;
  b.made_shape = made_shape;
  b.n = pt->num_nodes;
  int nout = pt->num_out_slots;
  wf__memplan *p = wf__calloc(1, sizeof *p);
  candidate *cand = NULL;
  int ncand = 0;
  *out = NULL;
  if (!p)
    goto oom;
  p->num_out_slots = nout;
  p->num_in_slots = pt->num_slots;
  b.order = wf__calloc((size_t)b.n + 1, sizeof *b.order);
  b.pos = wf__calloc((size_t)b.n + 1, sizeof *b.pos);
  b.node_of_out = wf__calloc((size_t)nout + 1, sizeof *b.node_of_out);
  b.use_begin = wf__calloc((size_t)nout + 1, sizeof *b.use_begin);
  b.use_end = wf__calloc((size_t)nout + 1, sizeof *b.use_end);
  b.escapes = wf__calloc((size_t)nout + 1, 1);
  b.last_pos = wf__calloc((size_t)nout + 1, sizeof *b.last_pos);
  b.stamp = wf__calloc((size_t)nout + 1, sizeof *b.stamp);
  b.queue = wf__calloc((size_t)nout + 1, sizeof *b.queue);
  p->view_of = wf__calloc((size_t)nout + 1, sizeof *p->view_of);
  p->planned = wf__calloc((size_t)nout + 1, sizeof *p->planned);
  p->fed = wf__calloc((size_t)pt->num_slots + 1, 1);
  p->in_place = wf__calloc((size_t)nout + 1, 1);
  b.in_place = wf__calloc((size_t)b.n + 1, 1);
  if (!b.order || !b.pos || !b.node_of_out || !b.use_begin || !b.use_end ||
      !b.escapes || !b.last_pos || !b.stamp || !b.queue || !p->view_of ||
      !p->planned || !p->fed || !p->in_place || !b.in_place ||
      in_place_guess(pt, b.in_place))
    goto oom;
  for (int i = 0; i < b.n; i++)
    if (b.in_place[i])
      p->in_place[pt->nodes[i].output_base] = 1;
  for (int i = 0; i < b.n; i++)
    for (int k = 0; k < pt->nodes[i].num_outputs; k++)
      b.node_of_out[pt->nodes[i].output_base + k] = i;
  if (simulate_order(&b))
    goto oom;
  for (int o = 0; o < nout; o++) {
    b.stamp[o] = -1;
    p->view_of[o] = -1;
  }
  for (int o = 0; o < nout; o++)
    if (collect_uses(&b, o, o))
      goto oom;
  if (threaded && b.n <= ANCESTORS_MAX_NODES && compute_ancestors(&b))
    goto oom;

  /* The outputs to place, in run order. */
  cand = wf__calloc((size_t)nout + 1, sizeof *cand);
  if (!cand)
    goto oom;
  for (int at = 0; at < b.n; at++) {
    const wf__xnode *xn = &pt->nodes[b.order[at]];
    for (int k = 0; k < xn->num_outputs; k++) {
      int32_t o = xn->output_base + k;
      size_t nbytes;
      if (!b.escapes[o] && plannable(&b, xn, k, &nbytes) &&
          !forwards(&b, xn, k))
        cand[ncand++] = (candidate){o, at, nbytes};
    }
  }
  if (ncand <= GREEDY_MAX_OUTPUTS ? place_by_size(p, pt, &b, cand, ncand)
                                   : place_in_order(p, pt, &b, cand, ncand))
    goto oom;
  if (make_segments(p))
    goto oom;
  wf__free(cand);
  builder_free(&b);
  *out = p;
  return 0;
oom:
  wf__free(cand);
  builder_free(&b);
  wf__memplan_free(p);
  return -1;
}

/* Whether some output of pt could be planned but for its unknown shape
 * (then its steps learn plans from the shapes they allocate). */
static int needs_cache(const wf__part *pt) {
  for (int i = 0; i < pt->num_nodes; i++) {
    const wf__xnode *xn = &pt->nodes[i];
    for (int k = 0; k < xn->num_outputs; k++)
      if (plannable_kind(xn, k) &&
          !wf_shape_is_known(&xn->node->output_shapes[k]))
        return 1;
  }
  return 0;
}

static plan_cache *cache_new(int nfeeds) {
  plan_cache *c = wf__calloc(1, sizeof *c);
  if (!c)
    return NULL;
  pthread_mutex_init(&c->mu, NULL);
  c->nfeeds = nfeeds;
  return c;
}

int wf__memplan_build(const wf_runtime *rt, wf__part *parts, int num_parts,
                      int nfeeds, wf_status *st) {
  const wf_config *cfg = rt->cfg;
  int32_t inter, intra;
  if (!cfg->memory_plan)
    return 0;
  wf__threads(cfg, &inter, &intra);
  for (int p = 0; p < num_parts; p++) {
    wf__part *pt = &parts[p];
    if (pt->memory)
      continue; /* device memory: the device's allocator caches */
    /* A session runs steps on the caller's thread alone unless it has
     * executor threads or the device pinned threads of its own (see
     * core/exec/session.c). */
    const wf_device_desc *dd = &rt->devices[pt->device].desc;
    int threaded = inter > 1 || (dd->cpus[0] && cfg->pin);
    if (plan_part(pt, threaded, NULL, NULL, &pt->mem) ||
        (needs_cache(pt) && !(pt->mem->cache = cache_new(nfeeds))))
      return wf_status_set(st, WF_RESOURCE_EXHAUSTED,
                           "memory planning of the %d nodes on %s: out of "
                           "memory",
                           pt->num_nodes,
                           rt->devices[pt->device].desc.name);
    pt->mem->pt = pt;
    pt->mem->threaded = threaded;
    /* The slots the caller fills: never written in place. */
    for (int k = 0; k < pt->feed_begin[nfeeds]; k++)
      pt->mem->fed[pt->feed_slots[k]] = 1;
    for (int k = 0; pt->bound && k < pt->num_slots; k++)
      if (pt->bound[k])
        pt->mem->fed[k] = 1; /* a constant's value: never written */
  }
  return 0;
}

/* ---- arenas --------------------------------------------------------------- */

/* One plan's buffer: reference counted by the arena using it and by every
 * live view of it, so it outlives an arena that moved to another plan, or
 * a step state freed while its views are still held. */
typedef struct store store;

/* A planned output's view: the tensor struct handed out, and what its last
 * release needs (the plan may be gone by then: the store can outlive its
 * executor while a view escapes). */
typedef struct view_rec {
  wf_tensor t;
  store *s;
  int32_t seg_begin, seg_end; /* the segments it holds */
} view_rec;

struct store {
  atomic_long refs;        /* the arena's, and one per live view */
  unsigned char *base;     /* the plan's bytes */
  _Atomic int32_t *holder; /* per segment: the planned output whose view
                              is alive over it, or -1 */
  view_rec *views;         /* per planned output */
};

struct wf__arena {
  /* The partition's static plan, and the plan this step state uses now
   * (the static one, or one from actual shapes it holds a reference on);
   * both valid while the step state holds the arena. */
  const wf__memplan *base_plan;
  const wf__memplan *plan;
  store *store;         /* plan's buffer; NULL when it places nothing */
  wf__meter *meter;
  /* Learning (only when base_plan has a cache): the feed shapes of the
   * step, whether it records, and per output slot what its kernels
   * allocated. Written by the step's kernels, each its own slots; read
   * once the step is over. */
  wf_shape *key;
  int recording;
  unsigned char *made;
  wf_shape *made_shape;
};

static void store_unref(store *s) {
  if (!s || atomic_fetch_sub_explicit(&s->refs, 1, memory_order_acq_rel) != 1)
    return;
  wf__free(s->base);
  wf__free((void *)s->holder);
  wf__free(s->views);
  wf__free(s);
}

/* A store for plan (NULL when out of memory); its buffer is allocated
 * here, once. */
static store *store_new(const wf__memplan *plan) {
  store *s = wf__calloc(1, sizeof *s);
  if (!s)
    return NULL;
  atomic_init(&s->refs, 1);
  s->base = wf__alloc(plan->bytes, WF_TENSOR_ALIGN);
  s->holder = wf__calloc((size_t)plan->num_segs, sizeof *s->holder);
  s->views = wf__calloc((size_t)plan->num_planned, sizeof *s->views);
  if (!s->base || !s->holder || !s->views) {
    store_unref(s);
    return NULL;
  }
  for (int g = 0; g < plan->num_segs; g++)
    atomic_init(&s->holder[g], -1);
  for (int v = 0; v < plan->num_planned; v++) {
    s->views[v].s = s;
    s->views[v].seg_begin = plan->planned[v].seg_begin;
    s->views[v].seg_end = plan->planned[v].seg_end;
  }
  count(&stat_arenas);
  return s;
}

/* Lets go of a's plan: the store (views keep theirs alive) and, for a plan
 * from actual shapes, the reference on it. */
static void arena_drop_plan(wf__arena *a) {
  store_unref(a->store);
  a->store = NULL;
  if (a->plan && a->plan->dynamic)
    plan_unref((wf__memplan *)a->plan);
  a->plan = NULL;
}

void wf__arena_release(wf__arena *a) {
  if (!a)
    return;
  arena_drop_plan(a);
  wf__meter_unref(a->meter);
  wf__free(a->key);
  wf__free(a->made);
  wf__free(a->made_shape);
  wf__free(a);
}

wf__arena *wf__arena_new(const wf__memplan *plan) {
  wf__arena *a = wf__calloc(1, sizeof *a);
  if (!a)
    return NULL;
  a->base_plan = plan;
  a->plan = plan;
  a->meter = wf__calloc(1, sizeof *a->meter);
  if (!a->meter) {
    wf__free(a);
    return NULL;
  }
  atomic_init(&a->meter->refs, 1);
  if (plan && plan->num_planned > 0 && !(a->store = store_new(plan)))
    goto fail;
  if (plan && plan->cache) {
    int nout = plan->num_out_slots;
    a->key = wf__calloc((size_t)plan->cache->nfeeds + 1, sizeof *a->key);
    a->made = wf__calloc((size_t)nout + 1, 1);
    a->made_shape = wf__calloc((size_t)nout + 1, sizeof *a->made_shape);
    if (!a->key || !a->made || !a->made_shape)
      goto fail;
  }
  return a;
fail:
  wf__arena_release(a);
  return NULL;
}

static int key_equal(const wf_shape *a, const wf_shape *b, int n) {
  for (int f = 0; f < n; f++)
    if (!wf_shape_equal(&a[f], &b[f]))
      return 0;
  return 1;
}

static void touch(plan_cache *c, wf__memplan *p) {
  atomic_store_explicit(
      &p->last_used,
      atomic_fetch_add_explicit(&c->clock, 1, memory_order_relaxed) + 1,
      memory_order_relaxed);
}

/* Notes key as missed (under c->mu); 1 when it was missed before. */
static int note_miss(plan_cache *c, const wf_shape *key) {
  int oldest = 0;
  for (int i = 0; i < MISSED_MAX; i++) {
    missed *m = &c->missed[i];
    if (m->key && key_equal(m->key, key, c->nfeeds))
      return 1;
    if (!m->key || (c->missed[oldest].key && m->when < c->missed[oldest].when))
      oldest = i;
  }
  missed *m = &c->missed[oldest];
  if (!m->key)
    m->key = wf__calloc((size_t)c->nfeeds + 1, sizeof *m->key);
  if (m->key) {
    memcpy(m->key, key, (size_t)c->nfeeds * sizeof *key);
    m->when = atomic_fetch_add_explicit(&c->clock, 1, memory_order_relaxed);
  }
  return 0;
}

/* Makes p (a reference the caller gives) a's plan, unless its buffer
 * cannot be had (then a keeps its plan). */
static void arena_adopt(wf__arena *a, wf__memplan *p) {
  store *s = NULL;
  if (p->num_planned > 0 && !(s = store_new(p))) {
    plan_unref(p);
    return;
  }
  arena_drop_plan(a);
  a->plan = p;
  a->store = s;
}

void wf__arena_begin(wf__arena *a, wf_tensor *const *feeds, int nfeeds) {
  wf__meter *m = a->meter;
  atomic_fetch_add_explicit(&m->epoch, 1, memory_order_relaxed);
  atomic_store_explicit(&m->live, 0, memory_order_relaxed);
  atomic_store_explicit(&m->peak, 0, memory_order_relaxed);
  a->recording = 0;
  if (!a->base_plan || !a->base_plan->cache)
    return;
  plan_cache *c = a->base_plan->cache;
  assert(nfeeds == c->nfeeds && (nfeeds == 0 || feeds));
  for (int f = 0; f < nfeeds; f++)
    a->key[f] = feeds[f]->shape;
  /* The plan the step state already uses: no lock. */
  if (a->plan->dynamic && key_equal(a->plan->key, a->key, nfeeds)) {
    touch(c, (wf__memplan *)a->plan);
    return;
  }
  wf__memplan *hit = NULL;
  int again = 0;
  pthread_mutex_lock(&c->mu);
  for (int i = 0; i < PLANS_MAX && !hit; i++)
    if (c->plans[i] && key_equal(c->plans[i]->key, a->key, nfeeds)) {
      hit = plan_retain(c->plans[i]);
      touch(c, hit);
    }
  if (!hit) {
    again = note_miss(c, a->key);
    for (int i = 0; i < PLANS_MAX; i++)
      again |= c->plans[i] == NULL;
  }
  pthread_mutex_unlock(&c->mu);
  if (hit) {
    arena_adopt(a, hit);
    return;
  }
  /* No plan for these shapes: the step runs with the plan it has (outputs
   * of other shapes are allocated), and records (see PLANS_MAX). */
  if (again) {
    a->recording = 1;
    memset(a->made, 0, (size_t)a->base_plan->num_out_slots);
  }
}

void wf__arena_end(wf__arena *a, int ok) {
  if (!a->recording)
    return;
  a->recording = 0;
  if (!ok)
    return;
  const wf__memplan *base = a->base_plan;
  plan_cache *c = base->cache;
  wf__memplan *p = NULL, *evicted = NULL;
  if (plan_part(base->pt, base->threaded, a->made, a->made_shape, &p))
    return; /* out of memory: steps go on as they were */
  p->dynamic = 1;
  atomic_init(&p->refs, 1);
  p->key = wf__calloc((size_t)c->nfeeds + 1, sizeof *p->key);
  if (!p->key) {
    plan_destroy(p);
    return;
  }
  memcpy(p->key, a->key, (size_t)c->nfeeds * sizeof *p->key);
  pthread_mutex_lock(&c->mu);
  int slot = -1, dup = 0;
  /* An unused entry, else the least recently used. */
  for (int i = 0; i < PLANS_MAX; i++) {
    wf__memplan *q = c->plans[i];
    if (!q) {
      if (slot < 0 || c->plans[slot])
        slot = i;
      continue;
    }
    if (key_equal(q->key, p->key, c->nfeeds))
      dup = 1;
    if (slot < 0 ||
        (c->plans[slot] &&
         atomic_load_explicit(&q->last_used, memory_order_relaxed) <
             atomic_load_explicit(&c->plans[slot]->last_used,
                                  memory_order_relaxed)))
      slot = i;
  }
  if (!dup) {
    evicted = c->plans[slot];
    c->plans[slot] = p;
    touch(c, p);
    p = NULL;
    for (int i = 0; i < MISSED_MAX; i++)
      if (c->missed[i].key &&
          key_equal(c->missed[i].key, a->key, c->nfeeds)) {
        wf__free(c->missed[i].key);
        c->missed[i].key = NULL;
      }
    count(&stat_plans);
  }
  pthread_mutex_unlock(&c->mu);
  if (p) {
    plan_destroy(p);
  } else {
    /* The blocks the unplanned steps left in the tensor cache are not
     * needed once their outputs come from the plan's buffer: give them
     * back before that buffer is made, so the two do not add up. */
    wf__tensor_cache_clear();
  }
  plan_unref(evicted);
}

int64_t wf__arena_peak_bytes(const wf__arena *a) {
  return (int64_t)wf__memplan_bytes(a->plan) +
         (int64_t)atomic_load_explicit(&a->meter->peak, memory_order_relaxed);
}

/* Lets go of segments [from, to). */
static void unhold(store *s, int32_t from, int32_t to) {
  for (int32_t g = from; g < to; g++)
    atomic_store_explicit(&s->holder[g], -1, memory_order_release);
}

/* Takes every segment of planned output idx, or none (0) when a live view
 * holds any of them. Never waits: two outputs that race for a segment may
 * both go without. */
static int hold(store *s, int32_t idx, int32_t from, int32_t to) {
  for (int32_t g = from; g < to; g++) {
    int32_t free_mark = -1;
    if (!atomic_compare_exchange_strong_explicit(
            &s->holder[g], &free_mark, idx, memory_order_acquire,
            memory_order_relaxed)) {
      unhold(s, from, g);
      return 0;
    }
  }
  return 1;
}

/* The last reference to a view went: its bytes are free again. */
static void view_done(void *data, size_t len, void *arg) {
  view_rec *r = arg;
  store *s = r->s;
  (void)data;
  (void)len;
  unhold(s, r->seg_begin, r->seg_end);
  store_unref(s);
}

wf_tensor *wf__arena_output(wf__arena *a, int32_t out, wf_dtype dtype,
                            const wf_shape *shape, wf_status *st) {
  const wf__memplan *p = a->plan;
  if (a->recording && out >= 0 && out < a->base_plan->num_out_slots) {
    a->made[out] = 1;
    a->made_shape[out] = *shape;
  }
  if (p && out >= 0 && out < p->num_out_slots && p->view_of[out] >= 0) {
    int32_t idx = p->view_of[out];
    const planned *v = &p->planned[idx];
    store *s = a->store;
    if (v->dtype == dtype && wf_shape_equal(&v->shape, shape) &&
        hold(s, idx, v->seg_begin, v->seg_end)) {
      view_rec *r = &s->views[idx];
      atomic_fetch_add_explicit(&s->refs, 1, memory_order_relaxed);
      wf__tensor_init_view(&r->t, dtype, shape, s->base + v->offset,
                           v->nbytes, view_done, r);
      count(&stat_views);
      return &r->t;
    }
    count(&stat_fallbacks);
  }
  return wf__tensor_new_metered(
      dtype, shape, a->meter,
      atomic_load_explicit(&a->meter->epoch, memory_order_relaxed), st);
}

int wf__arena_in_place(const wf__arena *a, int32_t out) {
  const wf__memplan *p = a->base_plan;
  return p && out >= 0 && out < p->num_out_slots && p->in_place[out];
}

int wf__arena_may_overwrite(const wf__arena *a, int32_t in, const wf_tensor *t,
                            wf_dtype dtype, const wf_shape *shape) {
  const wf__memplan *p = a->base_plan;
  if (!p || in < 0 || in >= p->num_in_slots || p->fed[in] || !t)
    return 0;
  if (t->wrapped != WF__TENSOR_OWNED && t->wrapped != WF__TENSOR_VIEW)
    return 0;
  if (t->dtype != dtype || dtype == WF_RESOURCE ||
      !wf_shape_equal(&t->shape, shape))
    return 0;
  /* The input slot's reference is the only one: no other reader exists,
   * and none can appear (a new reference needs an existing one). */
  return atomic_load_explicit(&t->refs, memory_order_acquire) == 1;
}
