# Built-in plugins: each family keeps its rules beside its sources.
#
# Every plugin's fragment builds it the same way (sdk/DISTRIBUTING.md says
# how to choose):
#  - its module, plugins/<dir>/<module>.la: installed into the plugin
#    directory when configure selected it (--enable-plugins) and plugins
#    are shared; otherwise built only for `make check` (PLUGIN_CHECK_LDFLAGS),
#    so that every plugin's tests run in every configuration;
#  - with --enable-static-plugins, when selected, also the same sources as a
#    convenience library plugins/static/<module>.la (PLUGIN_STATIC_*), which
#    libweft preloads (WF_PRELOADED). Code that several plugins share comes
#    from convenience libraries (libopcommon; libnumerics, which the op and
#    the device plugins share, plugins/numerics): a module links the ones
#    it needs; libweft links each of them once (WF_PRELOADED_HELPERS), so
#    that nothing is defined twice in it. A device plugin links no library
#    of plugins/ops and includes no header from there (tests/test_wall.sh).
# The CUDA device plugin is the exception: built when configure finds CUDA
# (--with-cuda), always as an installed module (plugins/devices/cuda).
include plugins/numerics/local.mk
include plugins/ops/common/local.mk
include plugins/ops/math/local.mk
include plugins/ops/array/local.mk
include plugins/ops/nn/local.mk
include plugins/devices/cpu/local.mk
include plugins/ops/state/local.mk
include plugins/ops/random/local.mk
include plugins/ops/train/local.mk
include plugins/readers/idx/local.mk
include plugins/readers/csv/local.mk
include plugins/readers/tfrecord/local.mk
include plugins/readers/fixed/local.mk
include plugins/ops/rnn/local.mk
include plugins/ops/string/local.mk
include plugins/devices/cuda/local.mk
include plugins/transports/mpi/local.mk
include plugins/importers/onnx/local.mk
