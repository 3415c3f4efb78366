# core/compile — from a user's graph to placed, partitioned and planned
# graphs: pruning, the graph passes, placement, partitioning, memory
# planning, automatic differentiation, Graphviz views. Above core/plugin.
core_libweftcore_la_SOURCES += \
	core/compile/compile.c core/compile/compile.h \
	core/compile/dot.c \
	core/compile/gradients.c core/compile/gradients.h \
	core/compile/memplan.c core/compile/memplan.h \
	core/compile/optimize.c core/compile/optimize.h core/compile/passes.h \
	core/compile/pass_constant_folding.c \
	core/compile/pass_cse.c \
	core/compile/partition.c core/compile/partition.h \
	core/compile/placement.c core/compile/placement.h \
	core/compile/plan.h \
	core/compile/plugin_passes.c core/compile/plugin_passes.h \
	core/compile/prune.c core/compile/prune.h \
	core/compile/work.c core/compile/work.h
