# core/exec — running compiled graphs: executors, kernel contexts,
# rendezvous, variables, run metadata, sessions and the core's
# own ops. Above core/compile.
core_libweftcore_la_SOURCES += \
	core/exec/core_ops.c core/exec/core_ops.h \
	core/exec/executor.c core/exec/executor.h \
	core/exec/iterators.c core/exec/iterators.h \
	core/exec/kernel.c core/exec/kernel.h \
	core/exec/metadata.c \
	core/exec/rendezvous.c core/exec/rendezvous.h \
	core/exec/session.c core/exec/session_internal.h \
	core/exec/variables.c core/exec/variables.h
