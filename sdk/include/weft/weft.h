/* weft/weft.h — the application API in one include. Plugins include
 * weft/plugin.h instead. */
#ifndef WEFT_WEFT_H
#define WEFT_WEFT_H

#include <weft/export.h>
#include <weft/types.h>
#include <weft/status.h>
#include <weft/tensor.h>
#include <weft/runtime.h>
#include <weft/graph.h>
#include <weft/session.h>
#include <weft/gradients.h>
#include <weft/layers.h>
#include <weft/data.h>
#include <weft/graph_file.h>
#include <weft/checkpoint.h>
#include <weft/npy.h>
#include <weft/saved_model.h>
#include <weft/import.h>
#include <weft/cluster.h>
#include <weft/parallel.h>

#endif /* WEFT_WEFT_H */
