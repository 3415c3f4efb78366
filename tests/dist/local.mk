# tests/dist: custom distributions (sdk/DISTRIBUTING.md).
#  - test_preloaded.sh (`make check` of a build with --enable-static-plugins
#    only): the plugins linked into libweft, as `weft plugins` lists them.
#  - check_static_dist.sh: configures, builds and distchecks a subset with
#    static plugins in a temporary directory and trains with the statically
#    linked example; minutes long, so not part of `make check` (CI runs it).
EXTRA_DIST += tests/dist/check_static_dist.sh tests/dist/test_preloaded.sh

if WF_STATIC_PLUGINS
TESTS += tests/dist/test_preloaded.sh
# The modules of the plugins linked into libweft (their libtool names, one
# a line), for test_preloaded.sh.
check_DATA += tests/dist/preloaded.list
endif
CLEANFILES += tests/dist/preloaded.list
tests/dist/preloaded.list: Makefile
	$(AM_V_GEN)$(MKDIR_P) tests/dist && \
	for m in $(filter $(addprefix %/,$(notdir $(WF_PRELOADED))),$(WF_PLUGIN_MODULES)); \
	do echo "$$m"; done >$@.tmp && mv $@.tmp $@
