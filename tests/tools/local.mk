# tests/tools: build rules (filled in by its owner)
