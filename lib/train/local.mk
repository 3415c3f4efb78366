# lib/train — layers, optimizers (with learning-rate schedules) and
# data-parallel training (weft/layers.h, weft/parallel.h): a library on the
# public API alone. It is compiled without the core's include path, so it
# cannot reach inside the core, and linked into libweft.
noinst_LTLIBRARIES += lib/train/libwefttrain.la
lib_train_libwefttrain_la_SOURCES = \
	lib/train/data_parallel.c \
	lib/train/layers.c \
	lib/train/model.h \
	lib/train/optimizer.c
lib_train_libwefttrain_la_CPPFLAGS = -I$(top_srcdir)/sdk/include \
	-I$(top_builddir) -I$(top_srcdir)/lib/train
lib_train_libwefttrain_la_LIBADD = $(LIBM)
