# examples: build rules (filled in by its owner)
