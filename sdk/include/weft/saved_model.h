/* weft/saved_model.h — (being written) */
#ifndef WEFT_SAVED_MODEL_H
#define WEFT_SAVED_MODEL_H

#include <weft/export.h>
#include <weft/types.h>

#endif /* WEFT_SAVED_MODEL_H */
