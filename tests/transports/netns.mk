# tests/transports/netns.mk: jobs across hosts, the hosts being network
# namespaces on this machine joined by a bridge, Open MPI over TCP between
# them (netns_hosts.sh sets them up, and removes them on exit).
#  - netns_results.sh: model-parallel and data-parallel jobs on 2 and 3
#    hosts give the results of one host (~10 s);
#  - netns_faults.sh: a link cut mid-training, a stopped task, a host that
#    loses power each end
#    the job with an error on every surviving task and mpirun's non-zero
#    exit within a stated bound; a new job resumes from the last checkpoint
#    to the uninterrupted accuracy (~1.5 min);
#  - netns_netem.sh: 5 ms latency and 1% loss slow a job but do not change
#    its result (skips saying so where the kernel has no netem).
# All skip (77) with the reason where namespaces cannot be made (not
# root), or mpirun or the data set is missing; every job runs under
# timeout(1). bench/cross_host.sh measures the same setting.
EXTRA_DIST += tests/transports/netns_hosts.sh tests/transports/netns_results.sh \
	tests/transports/netns_faults.sh tests/transports/netns_netem.sh \
	bench/cross_host.sh
if HAVE_MPI
TESTS += tests/transports/netns_results.sh tests/transports/netns_faults.sh \
	tests/transports/netns_netem.sh
endif
