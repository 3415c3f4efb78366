# tests/core/checkpoint.mk — (being written)
