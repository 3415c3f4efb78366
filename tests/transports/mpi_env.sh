# tests/transports/mpi_env.sh — sourced by the MPI tests: how they start a
# job on this machine (as root, more processes than cores, shared memory
# without the ptrace-based single copy that containers forbid) and the
# config every process reads (one thread each; a short heartbeat timeout).
MPIRUN="mpirun --allow-run-as-root --oversubscribe --bind-to none \
  --mca btl_vader_single_copy_mechanism none"
mpi_config() {
  cat > "$1" <<CONF
[threads]
inter_op = 1
intra_op = 1
pin = false
[cluster]
heartbeat_timeout_ms = ${2:-3000}
CONF
}
# Under AddressSanitizer: MPI's libraries keep their allocations until
# exit by design, so leak checking is off for MPI processes (use-after-free,
# overflows and undefined behaviour are still caught).
ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
export ASAN_OPTIONS
