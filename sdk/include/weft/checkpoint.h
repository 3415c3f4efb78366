/* weft/checkpoint.h — (being written) */
#ifndef WEFT_CHECKPOINT_H
#define WEFT_CHECKPOINT_H

#include <weft/export.h>
#include <weft/types.h>

#endif /* WEFT_CHECKPOINT_H */
