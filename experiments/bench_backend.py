"""jaxcfr alone on the default JAX backend (a GPU or TPU when there is one): no OpenSpiel.

For each game and full-width algorithm: milliseconds per iteration (median of
timed chunks), solve seconds and iterations to each exploitability target
(checks every x1.25 iterations, excluded from the solve time), seconds per
exact exploitability; then external-sampling MCCFR traversals per second at
several batch sizes. `--ablation` adds the per-iteration time of each
algorithm over histories and over sequences, with and without
`jaxcfr.compiler_options()`. Writes `bench_backend.md` and `bench_backend.json`.

    python experiments/bench_backend.py --quick
    python experiments/bench_backend.py --games leduc,liars_dice --out results/gpu
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import statistics
import sys
import time

import jax
import jax.numpy as jnp

from jaxcfr import backend, compiler, evaluation, mccfr, protocol, solvers


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


def timed(function, *args) -> float:
  start = time.perf_counter()
  jax.block_until_ready(function(*args))
  return time.perf_counter() - start


def ms_per_iteration(run, state, game, repeats: int) -> float:
  """Median ms/iteration of a compiled `run(state, game, n)`, over chunks of about 0.2 s."""
  timed(run, state, game, jnp.int32(1))  # warm-up
  chunk = max(1, int(0.2 / max(timed(run, state, game, jnp.int32(10)) / 10, 1e-7)))
  return statistics.median(timed(run, state, game, jnp.int32(chunk)) / chunk * 1e3 for _ in range(repeats))


def full_width(game, algorithm: str, targets: list[float], args) -> dict:
  solver = solvers.ALGORITHMS[algorithm]()
  state = solver.init(game)
  start = time.perf_counter()
  run = backend.jit(solvers.run, static_argnums=0).lower(solver, state, game, jnp.int32(1)).compile()
  exploit = (
    backend.jit(lambda s, g: evaluation.exploitability(g, solvers.average_policy(s, g)))
    .lower(state, game)
    .compile()
  )
  jit_seconds = time.perf_counter() - start
  ms = ms_per_iteration(run, state, game, args.repeats)
  evaluation_seconds = statistics.median(timed(exploit, state, game) for _ in range(args.repeats))
  reached, seconds, done, point = {}, 0.0, 0, 1
  value = math.inf
  while seconds < args.budget and len(reached) < len(targets):
    start = time.perf_counter()
    state = jax.block_until_ready(run(state, game, jnp.int32(point - done)))
    seconds += time.perf_counter() - start
    done = point
    value = float(exploit(state, game))
    for target in targets:
      if target not in reached and value <= target:
        reached[target] = (seconds, done)
    point = max(point + 1, int(point * 1.25))
  return {
    'algorithm': algorithm,
    'ms_per_iteration': ms,
    'jit_seconds': jit_seconds,
    'evaluation_seconds': evaluation_seconds,
    'targets': {f'{t:g}': reached.get(t) for t in targets},
    'final_exploitability': value,
    'iterations': done,
  }


def ablation(game, algorithm: str, args) -> dict:
  """ms/iteration over histories and over sequences, with and without the compiler options."""
  solver = solvers.ALGORITHMS[algorithm]()
  row = {}
  for path, variant in (('histories', game.replace(sequence_form=None)), ('sequences', game)):
    for label, options in (('default', {}), ('compiler_options', backend.compiler_options())):
      state = solver.init(variant)
      run = jax.jit(solvers.run, static_argnums=0, compiler_options=options)
      run = run.lower(solver, state, variant, jnp.int32(1)).compile()
      row[f'{path}, {label}'] = ms_per_iteration(run, state, variant, args.repeats)
  return row


def external_sampling(game, batch_size: int, args) -> dict:
  solver = mccfr.es_mccfr(batch_size=batch_size)
  run = backend.jit(lambda s, g, n: protocol.run(solver, s, g, n))
  state = solver.init(game, jax.random.key(0))
  start = time.perf_counter()
  state = jax.block_until_ready(run(state, game, 1))
  jit_seconds = time.perf_counter() - start
  iterations, seconds = 0, 0.0
  count = 1
  while seconds < args.mccfr_seconds:
    start = time.perf_counter()
    state = jax.block_until_ready(run(state, game, count))
    seconds += time.perf_counter() - start
    iterations += count
    count *= 2
  exploitability = float(evaluation.exploitability(game, mccfr.average_policy(state, game)))
  return {
    'batch_size': batch_size,
    'traversals_per_second': iterations * batch_size * game.num_players / seconds,
    'jit_seconds': jit_seconds,
    'iterations': iterations + 1,
    'seconds': seconds,
    'exploitability': exploitability,
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
