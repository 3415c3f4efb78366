# tests/core/graph_file.mk — (being written)
