"""Convergence of the CFR family: exact exploitability against iterations and solve time.

For each game and algorithm, trains with `jaxcfr.train`, evaluating the exact
exploitability of the average policy at log-spaced iteration counts (1, 2, 3, 5,
10, 20, ..., or a geometric grid with `--growth`). The clock covers only the
solver: JIT compilation and evaluation are excluded.

Writes `convergence.csv` (game, algorithm, iteration, seconds, exploitability)
and one `convergence_<game>.png` per game into `--out`; prints a summary table,
and with `--targets` the first evaluated iteration at which each algorithm
reached each exploitability.

    python experiments/convergence.py --games kuhn,leduc --iterations 1000
    python experiments/convergence.py --games leduc --algorithms dcfr,dcfr+,pdcfr+ --dtype float64 \
        --iterations 3000 --growth 1.02 --targets 1e-3,1e-4
"""

from __future__ import annotations

import argparse
import csv
import math
import os
import sys
import time

import jax

# Submodules rather than `import jaxcfr`: these also resolve under a stale editable install
# that maps `jaxcfr` as a namespace package.
from jaxcfr import algorithms as registry
from jaxcfr import compiler, plots, training

FULL_WIDTH = [name for name, entry in registry.REGISTRY.items() if entry.family == registry.FULL_WIDTH]

DEFAULT_ITERATIONS = {'kuhn': 10_000, 'leduc': 10_000, 'liars_dice': 1_000}
FALLBACK_ITERATIONS = 1_000
DEFAULT_GAMES = ('kuhn', 'leduc', 'liars_dice')
MANTISSAS = (1, 2, 3, 5)


def log(message: str) -> None:
  print(message, file=sys.stderr, flush=True)


def checkpoints(total: int, growth: float | None = None) -> list[int]:
  """Iteration counts 1, 2, 3, 5, 10, 20, ... below `total` (or 1, 2, ... growing by
  `growth`), then `total`."""
  points = []
  if growth:
    point = 1.0
    while point < total:
      points.append(int(point))
      point = max(point * growth, int(point) + 1)
    return points + [total]
  for exponent in range(int(math.log10(max(total, 1))) + 1):
    points += [m * 10**exponent for m in MANTISSAS if m * 10**exponent < total]
  return points + [total]


def parse_list(text: str) -> list[str]:
  return [item.strip() for item in text.split(',') if item.strip()]


def parse_iterations(text: str | None, games: list[str]) -> dict[str, int]:
  """`1000` for every game, or `kuhn=10000,leduc=5000` per game (others keep their default)."""
  counts = {game: DEFAULT_ITERATIONS.get(game, FALLBACK_ITERATIONS) for game in games}
  if not text:
    return counts
  if '=' not in text:
    return dict.fromkeys(games, int(text))
  for item in parse_list(text):
    game, _, count = item.partition('=')
    counts[game.strip()] = int(count)
  return counts


def solve_curve(
  game, algorithm: str, total: int, growth=None
) -> tuple[list[tuple[int, float, float]], float]:
  """Trains `algorithm` for `total` iterations.

  Returns:
    rows: (iteration, solve seconds, exploitability) at each evaluation point.
    jit_seconds: time to compile the programs (not in the solve seconds).
  """
  result = training.train(
    game, registry.make_solver(algorithm), iterations=total, eval_at=checkpoints(total, growth)
  )
  rows = [(p['iteration'], p['seconds'], p['exploitability']) for p in result.curve]
  return rows, result.jit_seconds


def first_reached(rows, target: float) -> int | None:
  return next((iteration for iteration, _, value in rows if value <= target), None)


def plot(game_name: str, curves: dict[str, list[tuple[int, float, float]]], path: str) -> None:
  points = {
    algorithm: [{'iteration': i, 'seconds': t, 'exploitability': e} for i, t, e in rows]
    for algorithm, rows in curves.items()
  }
  figure = plots.convergence_figure(points, f'{game_name}: exploitability of the average policy')
  figure.savefig(path, dpi=120)
  plots.close(figure)


def summary_table(results: list[dict]) -> str:
  header = ('game', 'algorithm', 'iterations', 'solve s', 'ms/iter', 'jit s', 'exploitability')
  lines = ['{:<12} {:<9} {:>10} {:>9} {:>9} {:>7} {:>14}'.format(*header)]
  for r in results:
    iteration, seconds, value = r['rows'][-1]
    lines.append(
      f'{r["game"]:<12} {r["algorithm"]:<9} {iteration:>10} {seconds:>9.3f} '
      f'{1e3 * seconds / iteration:>9.4f} {r["jit_seconds"]:>7.2f} {value:>14.3e}'
    )
  return '\n'.join(lines)


def main(argv: list[str] | None = None) -> None:
  parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
  parser.add_argument('--games', default=','.join(DEFAULT_GAMES), help='comma-separated game specs')
  parser.add_argument(
    '--algorithms',
    default=','.join(FULL_WIDTH),
    help=f'comma-separated, from {",".join(registry.REGISTRY)}',
  )
  parser.add_argument(
    '--iterations',
    default=None,
    help='N for every game, or game=N,... (default: '
    + ', '.join(f'{g} {n}' for g, n in DEFAULT_ITERATIONS.items())
    + ')',
  )
  parser.add_argument('--dtype', default='float32', choices=('float32', 'float64'))
  parser.add_argument('--out', default=os.path.join('experiments', 'results'))
  parser.add_argument('--growth', type=float, help='evaluate on a geometric grid with this ratio (e.g. 1.02)')
  parser.add_argument(
    '--targets', default='', help='comma-separated exploitabilities: iterations to reach each'
  )
  args = parser.parse_args(argv)

  games = parse_list(args.games)
  algorithms = parse_list(args.algorithms)
  unknown = [a for a in algorithms if a not in registry.REGISTRY]
  if unknown:
    parser.error(f'unknown algorithms {unknown}; choose from {list(registry.REGISTRY)}')
  targets = [float(t) for t in parse_list(args.targets)]
  iterations = parse_iterations(args.iterations, games)
  if args.dtype == 'float64':
    jax.config.update('jax_enable_x64', True)
  os.makedirs(args.out, exist_ok=True)
  log(f'jax {jax.__version__} on {jax.devices()[0].platform}, dtype {args.dtype}')

  results = []
  for name in games:
    start = time.perf_counter()
    game = jax.block_until_ready(compiler.compile_game(name, dtype=args.dtype))
    log(
      f'{name}: compiled {game.num_histories:,} histories, {game.num_infosets:,} infosets '
      f'in {time.perf_counter() - start:.1f} s'
    )
    curves = {}
    for algorithm in algorithms:
      rows, jit_seconds = solve_curve(game, algorithm, iterations[name], args.growth)
      curves[algorithm] = rows
      results.append(dict(game=name, algorithm=algorithm, rows=rows, jit_seconds=jit_seconds))
      iteration, seconds, value = rows[-1]
      log(
        f'  {algorithm:<6} {iteration} iterations in {seconds:.2f} s (jit {jit_seconds:.1f} s), '
        f'exploitability {value:.3e}'
      )
    path = os.path.join(args.out, f'convergence_{name}.png')
    plot(name, curves, path)
    log(f'  wrote {path}')

  path = os.path.join(args.out, 'convergence.csv')
  with open(path, 'w', newline='') as handle:
    writer = csv.writer(handle)
    writer.writerow(('game', 'algorithm', 'iteration', 'seconds', 'exploitability'))
    for r in results:
      for iteration, seconds, value in r['rows']:
        writer.writerow((r['game'], r['algorithm'], iteration, f'{seconds:.6g}', f'{value:.6e}'))
  log(f'wrote {path}')
  print(summary_table(results))
  if targets:
    print('\n| game | algorithm | ' + ' | '.join(f'iterations to {t:g}' for t in targets) + ' |')
    print('|---|---|' + '---:|' * len(targets))
    for r in results:
      reached = [first_reached(r['rows'], t) for t in targets]
      cells = [f'{n:,}' if n is not None else f'>{r["rows"][-1][0]:,}' for n in reached]
      print(f'| {r["game"]} | {r["algorithm"]} | ' + ' | '.join(cells) + ' |')


if __name__ == '__main__':
  main()
