# core/checkpoint.mk — (being written)
