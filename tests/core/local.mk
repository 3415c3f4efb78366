# tests/core: build rules (filled in by its owner)
