/* weft/graph_file.h — (being written) */
#ifndef WEFT_GRAPH_FILE_H
#define WEFT_GRAPH_FILE_H

#include <weft/export.h>
#include <weft/types.h>

#endif /* WEFT_GRAPH_FILE_H */
