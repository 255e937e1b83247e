"""jaxcfr alone on the default JAX backend (a GPU or TPU when there is one): no OpenSpiel.

For each game and full-width algorithm: milliseconds per iteration (median of
timed chunks), solve seconds and iterations to each exploitability target
(`jaxcfr.train` for `--budget` solve seconds, evaluating every x1.25
iterations; evaluations and JIT excluded from the solve time), seconds per
exact exploitability; then external-sampling MCCFR traversals per second at
several batch sizes (`jaxcfr.train` for `--mccfr-seconds`). `--ablation` adds
the per-iteration time of each algorithm over histories and over sequences,
with and without `jaxcfr.compiler_options()`. Writes `bench_backend.md` and
`bench_backend.json`.

    python experiments/bench_backend.py --quick
    python experiments/bench_backend.py --games leduc,liars_dice --out results/gpu
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import statistics
import sys
import time

import jax
import jax.numpy as jnp

# Submodules rather than `import jaxcfr`, as in convergence.py.
from jaxcfr import algorithms as registry
from jaxcfr import backend, compiler, protocol, training


def log(message: str) -> None:
  print(message, file=sys.stderr, flush=True)


def parse_args(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument('--games', default='leduc,liars_dice')
  parser.add_argument('--algorithms', default='cfr+,dcfr,pcfr+')
  parser.add_argument('--targets', default='1e-3,1e-4,1e-5')
  parser.add_argument('--budget', type=float, default=20.0, help='solve seconds per (game, algorithm)')
  parser.add_argument('--repeats', type=int, default=5)
  parser.add_argument('--batch-sizes', default='1024,16384,131072', help='ES-MCCFR batches (Leduc)')
  parser.add_argument('--mccfr-seconds', type=float, default=5.0, help='timed seconds per batch size')
  parser.add_argument('--ablation', action='store_true', help='ms/iter: histories vs sequences, options')
  parser.add_argument('--quick', action='store_true', help='small budgets (a smoke test)')
  parser.add_argument('--out', default=os.path.join('experiments', 'results'))
  args = parser.parse_args(argv)
  if args.quick:
    args.budget, args.repeats, args.mccfr_seconds = 2.0, 3, 1.0
    args.batch_sizes = '1024'
  return args


GROWTH = 1.25  # evaluation grid: iteration counts 1, 2, ..., each about x1.25 the last


def timed(function, *args) -> float:
  start = time.perf_counter()
  jax.block_until_ready(function(*args))
  return time.perf_counter() - start


def ms_per_iteration(run, state, game, repeats: int) -> float:
  """Median ms/iteration of a compiled `run(state, game, n)`, over chunks of about 0.2 s."""
  timed(run, state, game, jnp.int32(1))  # warm-up
  chunk = max(1, int(0.2 / max(timed(run, state, game, jnp.int32(10)) / 10, 1e-7)))
  return statistics.median(timed(run, state, game, jnp.int32(chunk)) / chunk * 1e3 for _ in range(repeats))


def compiled_run(solver, game, **options):
  """`jaxcfr.run` of `solver`, compiled for `game` (the iteration count traced), and a fresh state."""
  state = solver.init(game)
  run = jax.jit(lambda s, g, n: protocol.run(solver, s, g, n), **options)
  return run.lower(state, game, jnp.int32(1)).compile(), state


def evaluation_grid(limit: int = 10**9) -> list[int]:
  """Iteration counts 1, 2, 3, ... growing by `GROWTH`, up to `limit`."""
  points, point = [], 1
  while point <= limit:
    points.append(point)
    point = max(point + 1, int(point * GROWTH))
  return points


def full_width(game, algorithm: str, targets: list[float], args) -> dict:
  solver = registry.make_solver(algorithm)
  # ms/iteration times chunks of a compiled `run` (no training run: no budget, no evaluations),
  # as the micro-measurement it is; the time to targets below is a training run.
  run, state = compiled_run(solver, game, compiler_options=backend.compiler_options())
  ms = ms_per_iteration(run, state, game, args.repeats)
  result = training.train(game, solver, seconds=args.budget, eval_at=evaluation_grid())
  reached = {}
  for point in result.curve:
    for target in targets:
      if target not in reached and point['exploitability'] <= target:
        reached[target] = (point['seconds'], point['iteration'])
  return {
    'algorithm': algorithm,
    'ms_per_iteration': ms,
    'jit_seconds': result.jit_seconds,
    'evaluation_seconds': result.evaluation_seconds,
    'targets': {f'{t:g}': reached.get(t) for t in targets},
    'final_exploitability': result.exploitability,
    'iterations': result.iterations,
  }


def ablation(game, algorithm: str, args) -> dict:
  """ms/iteration over histories and over sequences, with and without the compiler options.

  A microbenchmark of the compiled `run` alone: what differs is the compiler's input and
  options, so no training loop is involved.
  """
  solver = registry.make_solver(algorithm)
  row = {}
  for path, variant in (('histories', game.replace(sequence_form=None)), ('sequences', game)):
    for label, options in (('default', {}), ('compiler_options', backend.compiler_options())):
      run, state = compiled_run(solver, variant, compiler_options=options)
      row[f'{path}, {label}'] = ms_per_iteration(run, state, variant, args.repeats)
  return row


def external_sampling(game, batch_size: int, args) -> dict:
  solver = registry.make_solver('es-mccfr', batch_size=batch_size)
  # One evaluation, at the end (the solve seconds exclude it and the JIT either way).
  result = training.train(game, solver, key=0, seconds=args.mccfr_seconds, eval_at=())
  return {
    'batch_size': batch_size,
    'traversals_per_second': result.iterations * batch_size * game.num_players / result.seconds,
    'jit_seconds': result.jit_seconds,
    'iterations': result.iterations,
    'seconds': result.seconds,
    'exploitability': result.exploitability,
  }


def main(argv=None) -> None:
  args = parse_args(argv)
  targets = [float(t) for t in args.targets.split(',')]
  device = jax.devices()[0]
  info = {
    'date': datetime.datetime.now().isoformat(timespec='seconds'),
    'jax': jax.__version__,
    'backend': jax.default_backend(),
    'device': getattr(device, 'device_kind', str(device)),
    'budget': args.budget,
  }
  log(f'jax {info["jax"]} on {info["backend"]} ({info["device"]})')
  results = {'info': info, 'full_width': {}, 'es_mccfr': {}}
  for name in args.games.split(','):
    start = time.perf_counter()
    game = jax.block_until_ready(compiler.compile_game(name))
    log(f'{name}: {game.num_histories:,} histories, compiled in {time.perf_counter() - start:.2f} s')
    rows = []
    for algorithm in args.algorithms.split(','):
      row = full_width(game, algorithm, targets, args)
      log(f'  {algorithm}: {row["ms_per_iteration"]:.4f} ms/iteration, targets {row["targets"]}')
      if args.ablation:
        row['ablation_ms_per_iteration'] = ablation(game, algorithm, args)
        log(f'  {algorithm} ablation (ms/iteration): {row["ablation_ms_per_iteration"]}')
      rows.append(row)
    results['full_width'][name] = rows
  if args.batch_sizes:
    game = compiler.compile_game('leduc')
    for batch_size in [int(b) for b in args.batch_sizes.split(',')]:
      row = external_sampling(game, batch_size, args)
      log(f'  es-mccfr leduc batch {batch_size}: {row["traversals_per_second"]:,.0f} traversals/s')
      results['es_mccfr'].setdefault('leduc', []).append(row)
  os.makedirs(args.out, exist_ok=True)
  with open(os.path.join(args.out, 'bench_backend.json'), 'w') as handle:
    json.dump(results, handle, indent=2)
  lines = [f'# jaxcfr on {info["backend"]} ({info["device"]}), jax {info["jax"]}, {info["date"]}', '']
  header = ' | '.join(f's (iterations) to {t:g}' for t in targets)
  lines += [
    f'| game | algorithm | ms/iter | {header} | s/exploitability |',
    '|---' * (4 + len(targets)) + '|',
  ]
  for name, rows in results['full_width'].items():
    for row in rows:
      cells = ' | '.join(
        f'{v[0]:.3g} ({v[1]})' if v else f'>{args.budget:g}' for v in row['targets'].values()
      )
      ms, evaluation_seconds = row['ms_per_iteration'], row['evaluation_seconds']
      lines.append(f'| {name} | {row["algorithm"]} | {ms:.4f} | {cells} | {evaluation_seconds:.2e} |')
  ablations = [
    (name, row)
    for name, rows in results['full_width'].items()
    for row in rows
    if 'ablation_ms_per_iteration' in row
  ]
  if ablations:
    columns = list(ablations[0][1]['ablation_ms_per_iteration'])
    lines += ['', '| game | algorithm | ' + ' | '.join(f'ms/iter: {c}' for c in columns) + ' |']
    lines.append('|---' * (2 + len(columns)) + '|')
    for name, row in ablations:
      cells = ' | '.join(f'{row["ablation_ms_per_iteration"][c]:.4f}' for c in columns)
      lines.append(f'| {name} | {row["algorithm"]} | {cells} |')
  if results['es_mccfr']:
    lines += ['', '| game | ES-MCCFR batch | traversals/s | exploitability after |', '|---|---|---|---|']
    for name, rows in results['es_mccfr'].items():
      for row in rows:
        lines.append(
          f'| {name} | {row["batch_size"]} | {row["traversals_per_second"]:,.0f} | '
          f'{row["exploitability"]:.4f} ({row["seconds"]:.1f} s) |'
        )
  text = '\n'.join(lines) + '\n'
  with open(os.path.join(args.out, 'bench_backend.md'), 'w') as handle:
    handle.write(text)
  print(text)


if __name__ == '__main__':
  main()
