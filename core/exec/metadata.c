/* core/exec/metadata.c — run metadata: per-node timings of a step and the
 * kernel each node ran, the peak bytes of the step per device, the
 * placement fallbacks and config notes of its signature, and their export
 * as Chrome trace-event JSON. Filling it is the executor's job. */
#include <config.h>

#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "base/alloc.h"
#include "exec/executor.h"
#include "graph/graph_internal.h"
#include "plugin/runtime_internal.h"
#include "base/status_internal.h"

wf_run_metadata *wf_run_metadata_new(void) {
  return wf__calloc(1, sizeof(wf_run_metadata));
}

static void clear_placements(wf_run_metadata *md) {
  for (int i = 0; i < md->num_placements; i++) {
    wf__free((char *)md->placements[i].node);
    wf__free((char *)md->placements[i].requested);
    wf__free((char *)md->placements[i].device);
    wf__free((char *)md->placements[i].reason);
  }
  wf__free(md->placements);
  md->placements = NULL;
  md->num_placements = 0;
}

void wf__metadata_hold(wf_run_metadata *md, wf__exec *x) {
  if (x)
    wf__exec_retain(x);
  wf__exec_release(md->held);
  md->held = x;
}

void wf_run_metadata_free(wf_run_metadata *md) {
  if (!md)
    return;
  wf__metadata_hold(md, NULL);
  clear_placements(md);
  wf__free(md->nodes);
  wf__free(md->kernels);
  wf__free(md->peak_devices);
  wf__free(md->peak_bytes);
  wf__free(md);
}

int wf__metadata_set_placements(wf_run_metadata *md, const wf__exec *x) {
  clear_placements(md);
  const wf__placement *p = &x->placement;
  if (p->num_notes == 0)
    return 0;
  md->placements = wf__calloc((size_t)p->num_notes, sizeof *md->placements);
  if (!md->placements)
    return -1;
  for (int i = 0; i < p->num_notes; i++) {
    const wf__placement_note *n = &p->notes[i];
    wf_placement_info *o = &md->placements[md->num_placements++];
    o->node = wf__strdup(n->node->name);
    o->requested = wf__strdup(n->requested);
    o->device = wf__strdup(x->rt->devices[n->device].desc.name);
    o->reason = wf__strdup(n->reason);
    if (!o->node || !o->requested || !o->device || !o->reason)
      return -1;
  }
  return 0;
}

int wf_run_metadata_num_placements(const wf_run_metadata *md) {
  return md->num_placements;
}

void wf_run_metadata_placement(const wf_run_metadata *md, int i,
                               wf_placement_info *out) {
  *out = md->placements[i];
}

int wf__metadata_reset(wf_run_metadata *md, int n) {
  if (n > md->cap_nodes) {
    wf_node_stats *nodes = wf__calloc((size_t)n, sizeof *nodes);
    const wf__kernel **kernels = wf__calloc((size_t)n, sizeof *kernels);
    if (!nodes || !kernels) {
      wf__free(nodes);
      wf__free(kernels);
      return -1;
    }
    wf__free(md->nodes);
    wf__free(md->kernels);
    md->nodes = nodes;
    md->kernels = kernels;
    md->cap_nodes = n;
  } else if (n > 0) {
    memset(md->nodes, 0, (size_t)n * sizeof *md->nodes);
    memset(md->kernels, 0, (size_t)n * sizeof *md->kernels);
  }
  md->num_nodes = n;
  md->step_ns = 0;
  return 0;
}

int wf__metadata_reserve_peaks(wf_run_metadata *md, int n) {
  md->num_peaks = 0;
  if (n <= md->cap_peaks)
    return 0;
  const char **devices = wf__calloc((size_t)n, sizeof *devices);
  int64_t *bytes = wf__calloc((size_t)n, sizeof *bytes);
  if (!devices || !bytes) {
    wf__free(devices);
    wf__free(bytes);
    return -1;
  }
  wf__free(md->peak_devices);
  wf__free(md->peak_bytes);
  md->peak_devices = devices;
  md->peak_bytes = bytes;
  md->cap_peaks = n;
  return 0;
}

void wf__metadata_add_peak(wf_run_metadata *md, const char *device,
                           int64_t bytes) {
  assert(md->num_peaks < md->cap_peaks);
  md->peak_devices[md->num_peaks] = device;
  md->peak_bytes[md->num_peaks++] = bytes;
}

int64_t wf_run_metadata_peak_bytes(const wf_run_metadata *md,
                                   const char *device) {
  int64_t sum = 0;
  assert(md);
  for (int i = 0; i < md->num_peaks; i++)
    if (!device || !device[0] || strcmp(device, md->peak_devices[i]) == 0)
      sum += md->peak_bytes[i];
  return sum;
}

int wf_run_metadata_num_nodes(const wf_run_metadata *md) {
  return md->num_nodes;
}

void wf_run_metadata_node(const wf_run_metadata *md, int i,
                          wf_node_stats *out) {
  *out = md->nodes[i];
}

const char *wf_run_metadata_node_kernel(const wf_run_metadata *md, int i) {
  assert(md && i >= 0 && i < md->num_nodes);
  const wf__kernel *k = md->kernels[i];
  return k && k->def.label ? k->def.label : "";
}

const char *wf_run_metadata_node_kernel_plugin(const wf_run_metadata *md,
                                               int i) {
  assert(md && i >= 0 && i < md->num_nodes);
  return md->kernels[i] ? md->kernels[i]->plugin : "";
}

int64_t wf_run_metadata_step_ns(const wf_run_metadata *md) {
  return md->step_ns;
}

int wf_run_metadata_num_notes(const wf_run_metadata *md) {
  return md->held ? md->held->placement.num_config_notes : 0;
}

const char *wf_run_metadata_note(const wf_run_metadata *md, int i) {
  assert(i >= 0 && i < wf_run_metadata_num_notes(md));
  return md->held->placement.config_notes[i].text;
}

/* Writes s as a JSON string body (quotes and control characters escaped). */
static void json_escape(FILE *f, const char *s) {
  for (; s && *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\')
      fprintf(f, "\\%c", c);
    else if (c < 0x20)
      fprintf(f, "\\u%04x", c);
    else
      fputc(c, f);
  }
}

int wf_run_metadata_write_trace(const wf_run_metadata *md, const char *path,
                                wf_status *st) {
  FILE *f = fopen(path, "w");
  if (!f)
    return wf_status_set(st, WF_PERMISSION_DENIED,
                         "trace file '%s': cannot open for writing: %s", path,
                         strerror(errno));
  /* Complete events ("ph":"X") in microseconds; one track per thread. */
  fprintf(f, "{\"traceEvents\":[\n");
  for (int i = 0; i < md->num_nodes; i++) {
    const wf_node_stats *n = &md->nodes[i];
    fprintf(f, "%s{\"name\":\"", i ? ",\n" : "");
    json_escape(f, n->node);
    fprintf(f, "\",\"cat\":\"");
    json_escape(f, n->op);
    fprintf(f,
            "\",\"ph\":\"X\",\"pid\":1,\"tid\":%d,\"ts\":%.3f,\"dur\":%.3f,"
            "\"args\":{\"op\":\"",
            n->thread + 1, (double)n->start_ns / 1000.0,
            (double)(n->end_ns - n->start_ns) / 1000.0);
    json_escape(f, n->op);
    fprintf(f, "\",\"device\":\"");
    json_escape(f, n->device);
    fprintf(f, "\",\"kernel\":\"");
    json_escape(f, wf_run_metadata_node_kernel(md, i));
    fprintf(f, "\",\"kernel_plugin\":\"");
    json_escape(f, wf_run_metadata_node_kernel_plugin(md, i));
    fprintf(f, "\"");
    for (int p = 0; p < md->num_placements; p++) {
      const wf_placement_info *pl = &md->placements[p];
      if (strcmp(pl->node, n->node) != 0)
        continue;
      fprintf(f, ",\"requested\":\"");
      json_escape(f, pl->requested);
      fprintf(f, "\",\"placement\":\"");
      json_escape(f, pl->reason);
      fprintf(f, "\"");
      break;
    }
    fprintf(f, ",\"output_bytes\":%lld}}", (long long)n->output_bytes);
  }
  fprintf(f, "\n],\"displayTimeUnit\":\"ns\",\"otherData\":{\"step_ns\":%lld",
          (long long)md->step_ns);
  fprintf(f, ",\"peak_bytes\":{");
  for (int i = 0; i < md->num_peaks; i++) {
    fprintf(f, "%s\"", i ? "," : "");
    json_escape(f, md->peak_devices[i]);
    fprintf(f, "\":%lld", (long long)md->peak_bytes[i]);
  }
  fprintf(f, "}");
  /* What did not go as configured: placement fallbacks (also in the args
   * of the nodes that ran) and config items that named nothing loaded. */
  fprintf(f, ",\"placements\":[");
  for (int p = 0; p < md->num_placements; p++) {
    const wf_placement_info *pl = &md->placements[p];
    fprintf(f, "%s{\"node\":\"", p ? "," : "");
    json_escape(f, pl->node);
    fprintf(f, "\",\"requested\":\"");
    json_escape(f, pl->requested);
    fprintf(f, "\",\"device\":\"");
    json_escape(f, pl->device);
    fprintf(f, "\",\"reason\":\"");
    json_escape(f, pl->reason);
    fprintf(f, "\"}");
  }
  fprintf(f, "],\"notes\":[");
  for (int i = 0; i < wf_run_metadata_num_notes(md); i++) {
    fprintf(f, "%s\"", i ? "," : "");
    json_escape(f, wf_run_metadata_note(md, i));
    fprintf(f, "\"");
  }
  fprintf(f, "]}}\n");
  int bad = ferror(f);
  if (fclose(f) != 0 || bad)
    return wf_status_set(st, WF_DATA_LOSS, "trace file '%s': write failed: %s",
                         path, strerror(errno));
  return 0;
}
