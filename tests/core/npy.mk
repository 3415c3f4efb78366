# tests/core/npy.mk — (being written)
