# core/saved_model.mk — saved models: the index, the checks between the
# graph file and the checkpoint, the atomic directory swap.
core_libweftcore_la_SOURCES += core/saved_model.c
