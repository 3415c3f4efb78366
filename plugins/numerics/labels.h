/* plugins/numerics/labels.h — the class labels of the sparse cross-entropy
 * (SparseSoftmaxCrossEntropyWithLogits): read from int32 or int64 and
 * checked to lie in [0, classes). ops-nn's reference kernel and the CPU
 * and CUDA plugins' kernels use this one copy, so that a bad label gets
 * the same error wherever the node runs. */
#ifndef WF_NUMERICS_LABELS_H
#define WF_NUMERICS_LABELS_H

#include <stdint.h>

#include <weft/plugin_aux.h>

/* *cls = labels' n values as int64 (host memory from host->alloc, which
 * the caller frees; NULL when n is 0). 0, or INVALID_ARGUMENT for labels
 * that are not int32 or int64 or a value outside [0, classes) (naming its
 * index and value), RESOURCE_EXHAUSTED; *cls is NULL after an error. */
int nx_sparse_labels(const wf_tensor *labels, int64_t n, int64_t classes,
                     int64_t **cls, wf_status *st);

#endif
