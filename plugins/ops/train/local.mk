# plugins/ops/train: the train op plugin (ops_train.so): fused optimizer
# updates on resource variables (dense and sparse), ClipByGlobalNorm and
# learning-rate schedules. Links libopcommon statically; needs nothing from
# libweft.
pkgplugin_LTLIBRARIES += plugins/ops/train/ops_train.la
plugins_ops_train_ops_train_la_SOURCES = \
	plugins/ops/train/train.h \
	plugins/ops/train/plugin.c \
	plugins/ops/train/vars.c \
	plugins/ops/train/apply.c \
	plugins/ops/train/clip.c \
	plugins/ops/train/schedule.c
plugins_ops_train_ops_train_la_CPPFLAGS = $(PLUGIN_CPPFLAGS) \
	-I$(top_srcdir)/plugins/ops/common
plugins_ops_train_ops_train_la_LDFLAGS = $(PLUGIN_LDFLAGS)
plugins_ops_train_ops_train_la_LIBADD = \
	plugins/ops/common/libopcommon.la $(LIBM)
