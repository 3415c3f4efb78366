# core/npy.mk: NumPy .npy files (weft/npy.h), part of the core library.
core_libweftcore_la_SOURCES += core/npy.c
