#!/bin/sh
# Regenerates the build system (configure, Makefile.in) from configure.ac
# and Makefile.am. Run once after a fresh clone, then ./configure && make.
set -e
cd "$(dirname "$0")"
mkdir -p m4 build-aux
autoreconf --force --install --verbose
