/* core/graph/attr.h — deep copies, comparison and text of attribute values. */
#ifndef WF_CORE_ATTR_H
#define WF_CORE_ATTR_H

#include <stdio.h>
#include <weft/types.h>

/* Deep-copies src into *dst (strings, arrays; tensors are retained).
 * Returns 0, or -1 when out of memory (dst then holds nothing to free). */
int wf__attr_copy(wf_attr_value *dst, const wf_attr_value *src);
/* Frees what wf__attr_copy allocated; leaves *v as WF_ATTR_NONE. */
void wf__attr_clear(wf_attr_value *v);
/* 1 when equal in type and value (tensors: same dtype, shape and bytes). */
int wf__attr_equal(const wf_attr_value *a, const wf_attr_value *b);
/* "int", "list(float)", ... */
const char *wf__attr_type_name(int type);
/* Writes a short readable form of v ("3", "[1, 2]", "float32", "(2, ?)",
 * "<tensor float32 (2, 3)>") into buf; returns buf. */
char *wf__attr_str(const wf_attr_value *v, char *buf, size_t len);
/* A hash of type and value, consistent with wf__attr_equal. */
uint64_t wf__attr_hash(const wf_attr_value *v, uint64_t seed);

#endif
