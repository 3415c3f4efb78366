# plugins/ops/train: the train op plugin (ops_train.so): fused optimizer
# updates on resource variables (dense and sparse), ClipByGlobalNorm and
# learning-rate schedules. Links libopcommon and libnumerics (the update
# rules, their checks and the lock order of a variable and its slots,
# which the device plugins run too); needs nothing from libweft.
# plugins/local.mk says how a plugin is built in each configuration.
OPS_TRAIN_SOURCES = \
	plugins/ops/train/train.h \
	plugins/ops/train/plugin.c \
	plugins/ops/train/apply.c \
	plugins/ops/train/clip.c \
	plugins/ops/train/schedule.c
OPS_TRAIN_CPPFLAGS = $(PLUGIN_CPPFLAGS) -I$(top_srcdir)/plugins/ops/common \
	$(NUMERICS_CPPFLAGS)
# The update rules vectorize (with the dynamic cost model, which allows a
# loop epilogue) only without errno from sqrt; no contraction
# into fused multiply-adds keeps every clone's results bit-identical.
OPS_TRAIN_CFLAGS = $(AM_CFLAGS) -fno-math-errno -ffp-contract=off \
	-ftree-vectorize -fvect-cost-model=dynamic
OPS_TRAIN_HELPERS = plugins/numerics/libnumerics.la \
	plugins/ops/common/libopcommon.la
OPS_TRAIN_LIBS = $(LIBM)

WF_PLUGIN_MODULES += plugins/ops/train/ops_train.la
plugins_ops_train_ops_train_la_SOURCES = $(OPS_TRAIN_SOURCES)
plugins_ops_train_ops_train_la_CPPFLAGS = $(OPS_TRAIN_CPPFLAGS)
plugins_ops_train_ops_train_la_CFLAGS = $(OPS_TRAIN_CFLAGS)
plugins_ops_train_ops_train_la_LDFLAGS = $(PLUGIN_LDFLAGS)
plugins_ops_train_ops_train_la_LIBADD = $(OPS_TRAIN_HELPERS) $(OPS_TRAIN_LIBS)
if WF_PLUGIN_OPS_TRAIN_SHARED
pkgplugin_LTLIBRARIES += plugins/ops/train/ops_train.la
else
check_LTLIBRARIES += plugins/ops/train/ops_train.la
plugins_ops_train_ops_train_la_LDFLAGS += $(PLUGIN_CHECK_LDFLAGS)
endif

if WF_PLUGIN_OPS_TRAIN_STATIC
noinst_LTLIBRARIES += plugins/static/ops_train.la
WF_PRELOADED += plugins/static/ops_train.la
WF_PRELOADED_HELPERS += $(OPS_TRAIN_HELPERS)
endif
plugins_static_ops_train_la_SOURCES = $(OPS_TRAIN_SOURCES)
plugins_static_ops_train_la_CPPFLAGS = $(OPS_TRAIN_CPPFLAGS) $(PLUGIN_STATIC_CPPFLAGS)
plugins_static_ops_train_la_CFLAGS = $(OPS_TRAIN_CFLAGS)
plugins_static_ops_train_la_LDFLAGS = $(PLUGIN_STATIC_LDFLAGS)
plugins_static_ops_train_la_LIBADD = $(OPS_TRAIN_LIBS)
