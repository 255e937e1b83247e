"""The public-tree solver's fused per-edge passes against the plain `[D, A, H]` form
(`tests/oracles/subgame_reference.py`, the tests' reference), side by side in one process on the benchmark
turn spot (Td9d6hQc, pot 200, stack 900, bets '60%,e,a', raises 2.5x, full ranges, DCFR): CPU
milliseconds per iteration (process time, all threads), medians of `--repeats` rounds of 10
iterations, the two alternating.

    python experiments/bench_subgame_layout.py [--board Td9d6hQc] [--repeats 5]
    python experiments/bench_subgame_layout.py --breakdown   # the fused solver: wall ms per iteration,
                                                             # whole and without the terminal values
    python experiments/bench_subgame_layout.py --breakdown --layout whole   # the turn tree not in blocks
    python experiments/bench_subgame_layout.py --layout both   # blocked against whole, alternating

`--breakdown` times the fused solver's iteration as it is, with `subgame.terminal_values` replaced
by zeros of the same shapes (so the rest is the tree passes: strategies, reaches, values, updates),
and with only its fold or only its showdown values replaced, alternating, wall-clock milliseconds.
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
from jaxcfr.poker.rules import cards, ranges  # noqa: E402
from jaxcfr.poker.subgame import game as subgame  # noqa: E402
from jaxcfr.poker.subgame.solver import subgame_solver  # noqa: E402


def main() -> None:
  parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
  parser.add_argument('--board', default='Td9d6hQc')
  parser.add_argument('--repeats', type=int, default=5)
  parser.add_argument('--iterations', type=int, default=10)
  parser.add_argument(
    '--breakdown', action='store_true', help='whole iteration against the tree passes alone'
  )
  parser.add_argument(
    '--layout',
    choices=('auto', 'blocked', 'whole', 'both'),
    default='auto',
    help="the turn tree in blocks (its river part card by card, the CPU's default) or whole; 'both' "
    'times the fused solver on each, alternating',
  )
  args = parser.parse_args()
  full = ranges.parse_range(bench_subgame.FULL)
  config, board = bench_subgame.config(args.board), cards.parse_board(args.board)
  if args.layout == 'both':
    games = {
      name: subgame.build_subgame(config, board, (full, full), blocks=name == 'blocked')
      for name in ('blocked', 'whole')
    }
    layouts(games, args.repeats, args.iterations)
    return
  blocks = {'auto': None, 'blocked': True, 'whole': False}[args.layout]
  game = subgame.build_subgame(config, board, (full, full), blocks=blocks)
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


def layouts(games: dict, repeats: int, iterations: int) -> None:
  """Wall ms per iteration of the fused solver on the turn tree in blocks and whole, alternating."""
  runs = {}
  for name, game in games.items():
    solver = subgame_solver('dcfr')
    step = backend.jit(lambda s, g, solver=solver: jaxcfr.run(solver, s, g, iterations), game)
    state = jax.block_until_ready(step(solver.init(game), game))
    runs[name] = (step, state, game, [])
  for _ in range(repeats):
    for step, state, game, times in runs.values():
      start = time.perf_counter()
      jax.block_until_ready(step(state, game))
      times.append((time.perf_counter() - start) / iterations * 1e3)
  for name, (*_, times) in runs.items():
    print(f'{name}: {statistics.median(times):.1f} ms per iteration ({", ".join(f"{t:.0f}" for t in times)})')
  ratios = [w / b for w, b in zip(runs['whole'][3], runs['blocked'][3], strict=True)]
  load = os.getloadavg()[0]
  print(f'whole / blocked: {statistics.median(ratios):.2f}x (median of rounds)  (load average {load:.1f})')


def breakdown(game: subgame.Subgame, repeats: int, iterations: int) -> None:
  """Wall ms per iteration of the fused solver, whole and with the terminal values stubbed out."""
  real = subgame.terminal_values

  def without(kinds):
    def values(game, reach, player):
      parts = real(game, reach, player)
      return tuple(
        jnp.zeros_like(part) if kind in kinds else part for kind, part in zip('fs', parts, strict=True)
      )

    return values

  cases = (
    ('whole iteration', real),
    ('tree passes only', without('fs')),
    ('without fold values', without('f')),
    ('without showdown values', without('s')),
  )
  runs = {}
  for name, values in cases:
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
  folds, showdowns = (whole - medians[f'without {kind} values'] for kind in ('fold', 'showdown'))
  print(
    f'terminal values (both players): {whole - passes:.1f} ms, of which folds {folds:.1f} and showdowns '
    f'{showdowns:.1f}  (load average {os.getloadavg()[0]:.1f})'
  )


if __name__ == '__main__':
  main()
