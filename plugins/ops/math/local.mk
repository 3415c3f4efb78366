# plugins/ops/math: build rules (filled in by its owner)
