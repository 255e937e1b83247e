"""What deterministic accumulation costs sampled MCCFR: iterations per second with
the scatter-add (`jax.ops.segment_sum`: deterministic on a CPU, which runs it in
order, and what `tree.segment_sum` uses there) against `tree.sorted_segment_sum`
(sort, segmented prefix sum, gather: what every other backend runs, since a GPU's
float atomics add in a varying order), both forced on the current backend, side by
side in one run.

    python experiments/bench_determinism.py
    python experiments/bench_determinism.py --games leduc --batch-size 4096 --seconds 5
    python experiments/bench_determinism.py --games kuhn --algorithms deep-cfr,sd-cfr --seconds 5

Deep CFR's batch is its traversals per player per iteration (`--batch-size`); its iterations
also train the advantage networks, whose minibatch gradients sum repeated rows the same way.
"""

from __future__ import annotations

import argparse
import time

import jax

import jaxcfr
from jaxcfr import tree

DEFAULT = tree.segment_sum


def scatter_add(values, rows, num_segments):
  return jax.ops.segment_sum(values, rows, num_segments)


def iterations_per_second(game, algorithm, batch_size, seconds, accumulate) -> float:
  tree.segment_sum = accumulate
  try:
    sized = {'batch_size': batch_size} if 'mccfr' in algorithm else {'traversals': batch_size}  # Deep CFR
    solver = jaxcfr.make_solver(algorithm, **sized)
    run = jax.jit(jaxcfr.run, static_argnums=(0, 3))
    state = solver.init(game, jax.random.key(0))
    state = jax.block_until_ready(run(solver, state, game, 10))  # compile
    begin = time.perf_counter()
    state = jax.block_until_ready(run(solver, state, game, 10))
    steps = max(10, int(10 * seconds / (time.perf_counter() - begin)))
    begin = time.perf_counter()
    jax.block_until_ready(run(solver, state, game, steps))
    return steps / (time.perf_counter() - begin)
  finally:
    tree.segment_sum = DEFAULT


def main(argv=None) -> None:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument('--games', default='kuhn,leduc')
  parser.add_argument('--algorithms', default='es-mccfr,os-mccfr')
  parser.add_argument('--batch-size', type=int, default=1024)
  parser.add_argument('--seconds', type=float, default=2.0, help='length of each timed run')
  parser.add_argument('--repeats', type=int, default=2, help='alternating measurements; the best is kept')
  args = parser.parse_args(argv)
  print(f'backend {jax.default_backend()}, {args.batch_size} traversals per player per iteration')
  print(f'{"game":<8}{"algorithm":<10}{"scatter-add it/s":>18}{"sorted it/s":>14}{"ratio":>8}')
  for name in args.games.split(','):
    game = jaxcfr.compile_game(name)
    for algorithm in args.algorithms.split(','):
      best = {'scatter': 0.0, 'sorted': 0.0}
      for _ in range(args.repeats):  # alternate, so load on the machine hits both alike
        for label, accumulate in (('scatter', scatter_add), ('sorted', tree.sorted_segment_sum)):
          rate = iterations_per_second(game, algorithm, args.batch_size, args.seconds, accumulate)
          best[label] = max(best[label], rate)
      ratio = best['sorted'] / best['scatter']
      print(f'{name:<8}{algorithm:<10}{best["scatter"]:>18.1f}{best["sorted"]:>14.1f}{ratio:>8.2f}')


if __name__ == '__main__':
  main()
