"""The public-tree solver's fused per-edge passes against the plain `[D, A, H]` form
(`tests/subgame_reference.py`, the tests' reference), side by side in one process on the benchmark
turn spot (Td9d6hQc, pot 200, stack 900, bets '60%,e,a', raises 2.5x, full ranges, DCFR): CPU
milliseconds per iteration (process time, all threads), medians of `--repeats` rounds of 10
iterations, the two alternating.

    python experiments/bench_subgame_layout.py [--board Td9d6hQc] [--repeats 5]
    python experiments/bench_subgame_layout.py --breakdown   # the fused solver: wall ms per iteration,
                                                             # whole and without the terminal values

`--breakdown` times the fused solver's iteration as it is and with `subgame.terminal_values` replaced
by zeros of the same shapes (so the rest is the tree passes: strategies, reaches, values, updates),
alternating, wall-clock milliseconds.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import jax
import jax.numpy as jnp

sys.path.insert(0, os.path.join(os.path.dirname(__file__), '..', 'tests'))
sys.path.insert(0, os.path.dirname(__file__))

import bench_subgame  # noqa: E402
from subgame_reference import reference_solver  # noqa: E402

import jaxcfr  # noqa: E402
from jaxcfr import backend  # noqa: E402
from jaxcfr.poker import cards, ranges, subgame  # noqa: E402
from jaxcfr.poker.solver import subgame_solver  # noqa: E402


def main() -> None:
  parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
  parser.add_argument('--board', default='Td9d6hQc')
  parser.add_argument('--repeats', type=int, default=5)
  parser.add_argument('--iterations', type=int, default=10)
  parser.add_argument(
    '--breakdown', action='store_true', help='whole iteration against the tree passes alone'
  )
  args = parser.parse_args()
  full = ranges.parse_range(bench_subgame.FULL)
  game = subgame.build_subgame(bench_subgame.config(args.board), cards.parse_board(args.board), (full, full))
  if args.breakdown:
    breakdown(game, args.repeats, args.iterations)
    return
  runs = {}
  for name, make in (('fused', subgame_solver), ('plain', reference_solver)):
    solver = make('dcfr')
    state = solver.init(game)
    step = jax.jit(lambda s, g, solver=solver: jaxcfr.run(solver, s, g, args.iterations))
    jax.block_until_ready(step(state, game))
    runs[name] = (step, state, [])
  for _ in range(args.repeats):
    for step, state, times in runs.values():
      start = time.process_time()
      jax.block_until_ready(step(state, game))
      times.append((time.process_time() - start) / args.iterations * 1e3)
  medians = {name: statistics.median(times) for name, (_, _, times) in runs.items()}
  for name, median in medians.items():
    print(f'{name}: {median:.1f} CPU ms per iteration ({", ".join(f"{t:.0f}" for t in runs[name][2])})')
  print(f'plain / fused: {medians["plain"] / medians["fused"]:.2f}x  (load average {os.getloadavg()[0]:.1f})')


def breakdown(game: subgame.Subgame, repeats: int, iterations: int) -> None:
  """Wall ms per iteration of the fused solver, whole and with the terminal values stubbed out."""
  real = subgame.terminal_values

  def zeros(game, reach, player):
    tree = game.tree
    shapes = ((tree.fold_player.shape[0], game.num_hands), (tree.showdown_slot.shape[0], game.num_hands))
    return tuple(jnp.zeros(shape, game.dtype) for shape in shapes)

  runs = {}
  for name, values in (('whole iteration', real), ('tree passes only', zeros)):
    subgame.terminal_values = values  # the solver looks it up in the module when it is traced
    try:
      solver = subgame_solver('dcfr')
      state = solver.init(game)
      step = backend.jit(lambda s, g, solver=solver: jaxcfr.run(solver, s, g, iterations), game)
      state = jax.block_until_ready(step(state, game))
    finally:
      subgame.terminal_values = real
    runs[name] = (step, state, [])
  for _ in range(repeats):
    for step, state, times in runs.values():
      start = time.perf_counter()
      jax.block_until_ready(step(state, game))
      times.append((time.perf_counter() - start) / iterations * 1e3)
  medians = {name: statistics.median(times) for name, (_, _, times) in runs.items()}
  for name, median in medians.items():
    print(f'{name}: {median:.1f} ms per iteration ({", ".join(f"{t:.0f}" for t in runs[name][2])})')
  whole, passes = medians['whole iteration'], medians['tree passes only']
  print(f'terminal values (both players): {whole - passes:.1f} ms  (load average {os.getloadavg()[0]:.1f})')


if __name__ == '__main__':
  main()
