/* plugins/devices/cpu/cpu_crowding.h — whether other work crowds the cores
 * this process runs on, so that the intra-op teams (cpu_team's regions and
 * the oneDNN plans made from then on) shrink to the calling thread while
 * it does, and grow back when a core is free again.
 *
 * Why: OpenMP's threads (libgomp) wait for one another by spinning, for
 * milliseconds, before they sleep. When another busy process shares the
 * cores, a part of a team that is not running holds the others spinning
 * at every join, and their spinning takes the cores from the part that
 * would finish: on 2 cores, two mlp trainings side by side ran at 2.5k
 * samples/s each (133k alone), one beside a busy loop on one core at 41k.
 * A team of one thread never joins anyone.
 *
 * How: every CPU_CROWD_PERIOD_NS, one thread that asks (cpu_crowd_poll)
 * samples two things over the period:
 *   - wait: how long this process's threads waited for a core (the sum of
 *     the run-queue delays in /proc/self/task/ * /schedstat), in cores
 *     (seconds waited a second);
 *   - idle: how long the CPUs this process may run on were idle
 *     (/proc/stat), in cores;
 * and cpu_crowd_decide turns them into the state. Crowded when the
 * threads waited for more than CPU_CROWD_WAIT of a core in
 * CPU_CROWD_STRIKES periods in a row (alone on the machine, a training's
 * threads wait about a tenth of one, the data pipeline's thread taking a
 * core now and then; more only for a period while a program starts: its
 * plans made, its data decoded); no longer crowded when,
 * the hold over, the CPUs were idle for more than CPU_CROWD_IDLE of a core
 * (a thread would find a core free). The hold starts at CPU_CROWD_HOLD_NS
 * and doubles, up to CPU_CROWD_HOLD_MAX_NS, each time crowding comes back
 * within CPU_CROWD_RELAPSE_NS of leaving, so that a machine busy in bursts
 * does not switch the teams every period.
 *
 * Where /proc is not readable (not Linux, a sandbox), the process is never
 * crowded. Depends on nothing of the plugin: tests/devices/test_cpu_crowding
 * compiles it alone. */
#ifndef WF_PLUGINS_DEVICES_CPU_CPU_CROWDING_H
#define WF_PLUGINS_DEVICES_CPU_CPU_CROWDING_H

#include <stdint.h>

#define CPU_CROWD_PERIOD_NS ((int64_t)200 * 1000 * 1000)
#define CPU_CROWD_WAIT 0.4
#define CPU_CROWD_STRIKES 2
#define CPU_CROWD_IDLE 0.6
#define CPU_CROWD_HOLD_NS ((int64_t)400 * 1000 * 1000)
#define CPU_CROWD_HOLD_MAX_NS ((int64_t)16 * 1000 * 1000 * 1000)
#define CPU_CROWD_RELAPSE_NS ((int64_t)4 * 1000 * 1000 * 1000)

typedef struct cpu_crowd {
  int crowded;
  int strikes;        /* uncrowded periods in a row with waits over the bar */
  int64_t hold_ns;    /* how long the present crowding lasts at least */
  int64_t changed_ns; /* when the state last changed (0: never) */
} cpu_crowd;

/* The state after a period in which this process's threads waited `wait`
 * cores and the CPUs were idle `idle` cores, at time now_ns (monotonic).
 * Returns the new c->crowded. */
int cpu_crowd_decide(cpu_crowd *c, double wait, double idle, int64_t now_ns);

/* What the samplers read, cumulative since the threads or CPUs started:
 * the run-queue delay of every thread of this process (threads that ended
 * take theirs with them), and the idle time of the CPUs in this thread's
 * affinity mask, both in nanoseconds. 0, or -1 when /proc cannot say. */
int cpu_crowd_read(int64_t *wait_ns, int64_t *idle_ns);

/* Turns adapting on or off (the config's [threads] adapt; off until
 * told); off leaves the process uncrowded. */
void cpu_crowd_enable(int on);

/* 1 while the process is crowded. Cheap (a counter; a coarse clock read
 * every 16th call) except once a period, when the calling thread samples
 * /proc (about 15 us) and decides. */
int cpu_crowd_poll(void);

/* The state as last decided, sampling nothing. */
int cpu_crowded(void);

#endif
