# tests/sdk: the installed SDK as a plugin author uses it.
# test_sdk_install.sh installs this build into a temporary DESTDIR, builds
# the examples of sdk/examples/ with pkg-config alone and runs their tests.
TESTS += tests/sdk/test_sdk_install.sh
EXTRA_DIST += tests/sdk/test_sdk_install.sh sdk/README.md \
	sdk/examples/op_plugin/Makefile sdk/examples/op_plugin/swish.c \
	sdk/examples/op_plugin/test_swish.c \
	sdk/examples/reader_plugin/Makefile sdk/examples/reader_plugin/labeled.c \
	sdk/examples/reader_plugin/test_labeled.c

# The compiler and flags the examples are built with: this build's, so that
# a sanitizer build's examples carry its runtime too.
check_DATA += tests/sdk/build-env.sh
CLEANFILES += tests/sdk/build-env.sh
tests/sdk/build-env.sh: Makefile
	$(AM_V_GEN)$(MKDIR_P) tests/sdk && { \
	  echo "CC='$(CC)'"; \
	  echo "CFLAGS='$(CFLAGS)'"; \
	  echo "CPPFLAGS='$(CPPFLAGS)'"; \
	  echo "LDFLAGS='$(LDFLAGS)'"; \
	  echo "PLUGIN_ZDEFS='$(PLUGIN_ZDEFS)'"; \
	  echo "MAKE='$(MAKE)'"; \
	} >$@.tmp && mv $@.tmp $@
