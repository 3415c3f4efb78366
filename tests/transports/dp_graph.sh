#!/bin/sh
# tests/transports/dp_graph.sh — runs dp_graph (a job of one process: it
# joins MPI as a singleton) with the MPI tests' environment (mpi_env.sh:
# no leak checking under the sanitizers, since MPI keeps its allocations
# until exit).
set -eu
. "${top_srcdir:-.}/tests/transports/mpi_env.sh"
exec "${top_builddir:-.}/tests/transports/dp_graph"
