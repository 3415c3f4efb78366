# core/checkpoint.mk: checkpoints — safetensors files with a CRC-32C per
# tensor, written atomically; saving and restoring a session's variables,
# step counter and input positions; the Save and Restore graph ops.
# CRC-32C (core/crc32c.c) is shared with the tfrecord reader plugin, which
# compiles the same source in.
core_libweftcore_la_SOURCES += \
	core/checkpoint.c core/checkpoint_internal.h \
	core/checkpoint_ops.c \
	core/crc32c.c core/crc32c.h \
	core/safetensors.c core/safetensors.h
core_libweftcore_la_CFLAGS += $(JANSSON_CFLAGS)
core_libweftcore_la_LIBADD += $(JANSSON_LIBS)
