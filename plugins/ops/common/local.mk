# plugins/ops/common: build rules (filled in by its owner)
