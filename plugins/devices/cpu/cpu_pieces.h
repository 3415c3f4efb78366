/* plugins/devices/cpu/cpu_pieces.h — a loop's iterations [0, total) cut
 * for the parts of cpu_team (cpu_kernels.h) so that a part which finishes
 * early takes on what a slower one has not begun.
 *
 * Each of `shares` threads owns a share (the contiguous range a fixed
 * split gives it, so that step after step it touches the same memory)
 * cut into about CPU_PIECES_PER_SHARE pieces of whole `unit`s; a part
 * takes the pieces of its own share first, then those left in the
 * others'.
 *
 * Why: on a shared machine (a virtual one, a busy host) one core now and
 * then runs at a fraction of its speed for seconds while the others do
 * not. A fixed split holds the whole team to the slow core's pace (the
 * op takes as long as its slowest share); taking pieces in turn, the fast
 * cores finish the slow one's share, and the op runs at about the mean
 * speed of the cores.
 *
 * Use: fill the job's cpu_pieces with cpu_pieces_init(&p, total, unit,
 * least, cpu_team_size()) before cpu_team; in part t,
 *     cpu_piece_walk w = cpu_pieces_walk(&p, t);
 *     while (cpu_pieces_take(&w, &begin, &end)) ... [begin, end) ...
 * Every iteration is handed out exactly once, whatever the team's actual
 * size (a part walks every share before it stops); only loops whose
 * results do not depend on which thread computes an iteration may use
 * it. Depends on nothing but C11 atomics. */
#ifndef WF_PLUGINS_DEVICES_CPU_CPU_PIECES_H
#define WF_PLUGINS_DEVICES_CPU_CPU_PIECES_H

#include <stdatomic.h>
#include <stdint.h>

#define CPU_PIECE_SLOTS 32 /* the most shares: more threads share shares */
#define CPU_PIECES_PER_SHARE 8

typedef struct cpu_pieces {
  struct {
    _Atomic int64_t next; /* the share's first iteration not yet taken */
    int64_t end;
    char pad[64 - 2 * sizeof(int64_t)]; /* a cache line each */
  } share[CPU_PIECE_SLOTS];
  int shares;
  int64_t grain; /* iterations a piece: a multiple of the unit */
} cpu_pieces;

typedef struct cpu_piece_walk {
  cpu_pieces *p;
  int first, visited;
} cpu_piece_walk;

/* total >= 0 iterations, unit >= 1 (pieces start at multiples of it),
 * least >= 0: the fewest iterations of a piece (rounded up to whole
 * units; a share's last piece may be shorter), so that a loop of little
 * work is not cut finer than taking a piece costs — at a small batch
 * each share is one piece, the fixed split; shares >= 1 (more than
 * CPU_PIECE_SLOTS: that many). */
void cpu_pieces_init(cpu_pieces *p, int64_t total, int64_t unit,
                     int64_t least, int shares);
/* Part t's walk: its own share (t modulo the shares) first. */
cpu_piece_walk cpu_pieces_walk(cpu_pieces *p, int t);
/* The walk's next piece [*begin, *end): 1, or 0 when none is left. */
int cpu_pieces_take(cpu_piece_walk *w, int64_t *begin, int64_t *end);

#endif
