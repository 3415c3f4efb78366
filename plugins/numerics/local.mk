# plugins/numerics: what several plugins must compute alike, bit for bit,
# and so share as one copy that neither the op plugins nor the device
# plugins own (libnumerics, a libtool convenience library that uses only
# the host table, never libweft):
#  - philox.c: the Philox-4x32-10 streams (ops-random, ops-nn's Dropout,
#    the CUDA plugin);
#  - epilogue.c: the fused ops' bias-and-activation epilogue (ops-math,
#    ops-nn, the CPU device plugin);
#  - optim.c: the optimizer update rules, their checks and the lock order
#    of a variable and its slots (ops-train, the CPU and CUDA plugins);
#  - window.c: the sliding-window geometry of Conv2D and the pools (ops-nn,
#    the CPU and CUDA plugins);
#  - labels.c: the sparse cross-entropy's class labels, read and checked
#    with one message (ops-nn, the CPU and CUDA plugins).
# Nothing else belongs here: a device kernel reads the shapes an op's own
# shape function gives (the host's kernel_output_shape) instead of
# repeating the op's checks, and declines what it cannot run (the kernel's
# supports hook). A plugin links the library whole; a build with static
# plugins links it once into libweft (WF_PRELOADED_HELPERS).
noinst_LTLIBRARIES += plugins/numerics/libnumerics.la
plugins_numerics_libnumerics_la_SOURCES = \
	plugins/numerics/philox.c plugins/numerics/philox.h \
	plugins/numerics/epilogue.c plugins/numerics/epilogue.h \
	plugins/numerics/optim.c plugins/numerics/optim.h \
	plugins/numerics/window.c plugins/numerics/window.h \
	plugins/numerics/labels.c plugins/numerics/labels.h
plugins_numerics_libnumerics_la_CPPFLAGS = $(PLUGIN_CPPFLAGS)
# The update rules vectorize (with the dynamic cost model, which allows a
# loop epilogue) only without errno from sqrt; no contraction into fused
# multiply-adds keeps every result the same bits in every plugin.
plugins_numerics_libnumerics_la_CFLAGS = $(AM_CFLAGS) -fno-math-errno \
	-ffp-contract=off -ftree-vectorize -fvect-cost-model=dynamic
# Where the plugins find the headers.
NUMERICS_CPPFLAGS = -I$(top_srcdir)/plugins/numerics
