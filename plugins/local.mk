# Built-in plugins: each family keeps its rules beside its sources.
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
