/* weft/npy.h — (being written) */
#ifndef WEFT_NPY_H
#define WEFT_NPY_H

#include <weft/export.h>
#include <weft/types.h>

#endif /* WEFT_NPY_H */
