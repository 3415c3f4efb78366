# plugins/ops/nn: build rules (filled in by its owner)
