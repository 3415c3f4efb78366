/* examples/fashion_data.h — Fashion-MNIST from the gzip'd IDX files of
 * Debian's dataset-fashion-mnist, as float32 pixels in [0, 1] and int32
 * labels. (The idx reader plugin and the input pipeline replace this once
 * they exist.) */
#ifndef WF_EXAMPLES_FASHION_DATA_H
#define WF_EXAMPLES_FASHION_DATA_H

#include <stdint.h>

#define FASHION_DIR "/usr/share/datasets/fashion-mnist"

typedef struct fashion_set {
  float *images;  /* n * 784, row-major 28 x 28 */
  int32_t *labels; /* n */
  int n;
} fashion_set;

/* Loads "<dir>/<prefix>-images-idx3-ubyte.gz" and the matching labels
 * (prefix "train" or "t10k"), keeping at most limit samples (0: all).
 * Returns 0, or -1 after printing what is wrong with which file. */
int fashion_load(const char *dir, const char *prefix, int limit,
                 fashion_set *out);
void fashion_free(fashion_set *s);

#endif
