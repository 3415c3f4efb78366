/* plugins/devices/cpu/cpu_pieces.c — a loop cut into pieces that a team's
 * threads take in turn, each its own share's first (cpu_pieces.h). */
#include <config.h>

#include "cpu_pieces.h"

void cpu_pieces_init(cpu_pieces *p, int64_t total, int64_t unit,
                     int64_t least, int shares) {
  int64_t units = (total + unit - 1) / unit, per;
  int64_t fewest = (least + unit - 1) / unit;

  p->shares = shares < 1 ? 1 : shares > CPU_PIECE_SLOTS ? CPU_PIECE_SLOTS
                                                        : shares;
  /* shares of whole units, the last one ending at total */
  for (int s = 0; s < p->shares; s++) {
    int64_t b = units * s / p->shares * unit;
    int64_t e = units * (s + 1) / p->shares * unit;
    atomic_init(&p->share[s].next, b < total ? b : total);
    p->share[s].end = e < total ? e : total;
  }
  per = (units + p->shares - 1) / p->shares;
  per = (per + CPU_PIECES_PER_SHARE - 1) / CPU_PIECES_PER_SHARE;
  if (per < fewest)
    per = fewest;
  p->grain = (per > 0 ? per : 1) * unit;
}

cpu_piece_walk cpu_pieces_walk(cpu_pieces *p, int t) {
  cpu_piece_walk w = {p, (t < 0 ? 0 : t) % p->shares, 0};
  return w;
}

int cpu_pieces_take(cpu_piece_walk *w, int64_t *begin, int64_t *end) {
  cpu_pieces *p = w->p;

  while (w->visited < p->shares) {
    int s = (w->first + w->visited) % p->shares;
    int64_t e = p->share[s].end;

    /* a drained share is seen by a load: late walkers do not write the
     * line its owner may still be taking from */
    if (atomic_load_explicit(&p->share[s].next, memory_order_relaxed) < e) {
      int64_t b = atomic_fetch_add_explicit(&p->share[s].next, p->grain,
                                            memory_order_relaxed);
      if (b < e) {
        *begin = b;
        *end = e - b > p->grain ? b + p->grain : e;
        return 1;
      }
    }
    w->visited++;
  }
  return 0;
}
