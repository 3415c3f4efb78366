# tests/core/saved_model.mk — (being written)
