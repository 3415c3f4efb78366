# core/npy.mk — (being written)
