# core/data — the input pipeline: datasets over reader plugins, map,
# shuffle, batch, prefetch, iterators and their graph ops. Above core/exec.
core_libweftcore_la_SOURCES += \
	core/data/data_codec.c \
	core/data/data_map.c \
	core/data/data_ops.c \
	core/data/data_source.c \
	core/data/dataset.c core/data/dataset.h \
	core/data/iterator.c \
	core/data/prefetch.c
