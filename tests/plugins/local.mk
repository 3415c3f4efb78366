# tests/plugins: build rules (filled in by its owner)
