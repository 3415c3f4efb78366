# plugins/ops/array: build rules (filled in by its owner)
