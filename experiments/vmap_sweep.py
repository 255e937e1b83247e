"""Batching as a first-class use: `jax.vmap` over solver hyper-parameters and over games.

1. A grid of DCFR (alpha, beta, gamma) configurations solved in one jitted
   `jax.vmap` program (the solver is built from traced hyper-parameters, and
   the exploitability of each average policy is evaluated in the same
   program), against the same configurations solved one after another by one
   jitted program that takes alpha, beta and gamma as traced scalars.
2. A batch of games of one compiled shape (the game with each terminal's
   payoffs scaled by a random positive factor exp(0.1 * normal)) solved with
   CFR+ by `jax.vmap` over the stacked `CompiledGame`, against a Python loop
   over the games with one jitted program.

Both sides run `jaxcfr.run` rather than the `jaxcfr.train` loop: a training
loop runs one solver on one game, where the batched side is one program over
many, and for a fair comparison the one-at-a-time side must do the same work
as one element of the batch, timed the same way (see `sweep_grid`).

Both sides of each comparison are compiled ahead of time (`.lower().compile()`)
and run once untimed (with 0 iterations) before the clock starts, so the
seconds cover solving and evaluation only. The batched exploitabilities must
equal the one-at-a-time ones to `--tolerance` (1e-5) after `--check-iterations`
(5); after `--iterations` they are only reported, since by then the solvers'
dynamics have amplified rounding differences (see `compare`).

Writes `vmap_sweep.json` and `vmap_sweep.md` into `--out`; prints the tables.

    python experiments/vmap_sweep.py --iterations 500 --games-in-batch 16
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np

# Submodules rather than `import jaxcfr`, as in convergence.py.
from jaxcfr import algorithms as registry
from jaxcfr import backend, compiler, evaluation, protocol, solvers

GRIDS = {
  'full': dict(alpha=(0.5, 1.0, 1.5, 2.0, 3.0), beta=(-1.0, 0.0, 0.5), gamma=(1.0, 2.0, 3.0)),
  'small': dict(alpha=(1.5, 3.0), beta=(-1.0, 0.0), gamma=(2.0,)),
}
DEFAULT_CONFIG = (1.5, 0.0, 2.0)  # DCFR's published defaults
TOLERANCE = 1e-5
CHECK_ITERATIONS = 5
PERTURBATION = 0.1  # payoff scale factors are exp(PERTURBATION * normal)
TOP = 10


def log(message: str) -> None:
  print(message, file=sys.stderr, flush=True)


def timed(function, *args, repeats: int = 1):
  """(result, best wall seconds over `repeats` calls), each call run to completion."""
  best = float('inf')
  for _ in range(repeats):
    start = time.perf_counter()
    result = jax.block_until_ready(function(*args))
    best = min(best, time.perf_counter() - start)
  return result, best


def aot(function, *args):
  """(`function` jitted and compiled for `args`, compile seconds)."""
  start = time.perf_counter()
  compiled = backend.jit(function).lower(*args).compile()
  return compiled, time.perf_counter() - start


# Part 1: the DCFR grid.


def dcfr_exploitability(game, alpha, beta, gamma, num_iterations):
  """`[]` exploitability of DCFR(alpha, beta, gamma)'s average policy after `num_iterations`.

  The factory rather than the registry: the registry validates plain numbers, and here
  the hyper-parameters are traced (vmapped, or arguments of one compiled program).
  """
  solver = solvers.dcfr(alpha, beta, gamma)
  state = protocol.run(solver, solver.init(game), game, num_iterations)
  return evaluation.exploitability(game, solver.average_policy(state, game))


def sweep_grid(game, grid: dict, iterations: int, check_iterations: int, repeats: int) -> dict:
  configs = list(itertools.product(grid['alpha'], grid['beta'], grid['gamma']))
  alpha, beta, gamma = (jnp.asarray(column, game.dtype) for column in zip(*configs, strict=True))
  steps = jnp.int32(iterations)
  batched, batched_jit = aot(
    jax.vmap(dcfr_exploitability, in_axes=(None, 0, 0, 0, None)), game, alpha, beta, gamma, steps
  )
  sequential, sequential_jit = aot(dcfr_exploitability, game, alpha[0], beta[0], gamma[0], steps)
  log(
    f'grid: {len(configs)} configurations; compiled batched in {batched_jit:.1f} s, '
    f'sequential in {sequential_jit:.1f} s'
  )

  def run_batched(n, alpha=alpha):
    return batched(game, alpha, beta, gamma, jnp.int32(n))

  scalars = [(alpha[i], beta[i], gamma[i]) for i in range(len(configs))]  # sliced once, outside the clock

  # The one-after-another baseline stays on this compiled program rather than `jaxcfr.train`:
  # train builds a solver with fixed hyper-parameters (a compilation per configuration),
  # starts with a one-iteration timing chunk, waits for every chunk, and keeps evaluation
  # out of its clock, where the batched side is one dispatch of exactly `n` iterations
  # and the evaluation. Here both sides do the same work, timed the same way.
  def run_sequential(n):
    # Dispatch every configuration, then wait: the loop never idles the device between programs.
    n = jnp.int32(n)
    return jnp.stack([sequential(game, a, b, g, n) for a, b, g in scalars])

  # Nudging every alpha by one ulp measures how far rounding alone moves the results.
  nudged = jnp.nextafter(alpha, jnp.asarray(np.inf, alpha.dtype))
  comparison = compare(
    run_batched,
    run_sequential,
    lambda n: run_batched(n, nudged),
    iterations,
    check_iterations,
    repeats,
    'grid',
  )
  batched_values, sequential_values = comparison.pop('batched'), comparison.pop('sequential')
  rows = [
    dict(alpha=a, beta=b, gamma=g, exploitability=float(v), sequential_exploitability=float(s))
    for (a, b, g), v, s in zip(configs, batched_values, sequential_values, strict=True)
  ]
  rows.sort(key=lambda row: row['exploitability'])
  for rank, row in enumerate(rows, 1):
    row['rank'] = rank
  return dict(
    configurations=len(configs),
    grid={k: list(v) for k, v in grid.items()},
    rows=rows,
    batched_compile_seconds=batched_jit,
    sequential_compile_seconds=sequential_jit,
    **comparison,
  )


def compare(
  run_batched, run_sequential, run_nudged, iterations: int, check_iterations: int, repeats: int, name: str
) -> dict:
  """Times both sides at `iterations`, and measures how far apart they are.

  Rounding differs between a batched and an unbatched program, and CFR's
  dynamics amplify it: after a few hundred iterations on Leduc, even in
  float64, a one-ulp change of the input moves the exploitability in its
  first or second digit. So the two sides must agree after
  `check_iterations` (before the amplification); after `iterations` their
  difference is reported next to `rounding_sensitivity`, the difference that
  a one-ulp nudge of the input makes to the batched results.
  """
  jax.block_until_ready((run_batched(0), run_sequential(0)))  # warm-up: the first call pays one-off costs
  batched, batched_seconds = timed(run_batched, iterations, repeats=repeats)
  log(f'{name}: batched {batched_seconds:.2f} s')
  sequential, sequential_seconds = timed(run_sequential, iterations, repeats=repeats)
  log(f'{name}: sequential {sequential_seconds:.2f} s')
  batched, sequential = np.asarray(batched), np.asarray(sequential)
  check = min(check_iterations, iterations)
  check_difference = float(np.max(np.abs(np.asarray(run_batched(check)) - np.asarray(run_sequential(check)))))
  sensitivity = float(np.max(np.abs(np.asarray(run_nudged(iterations)) - batched)))
  difference = float(np.max(np.abs(batched - sequential)))
  log(
    f'{name}: batched - sequential max abs {check_difference:.2e} after {check} iterations, '
    f'{difference:.2e} after {iterations} (a one-ulp nudge of the input: {sensitivity:.2e})'
  )
  return dict(
    batched=batched,
    sequential=sequential,
    batched_seconds=batched_seconds,
    sequential_seconds=sequential_seconds,
    speedup=sequential_seconds / batched_seconds,
    max_abs_difference=difference,
    check_iterations=check,
    check_difference=check_difference,
    rounding_sensitivity=sensitivity,
  )


# Part 2: a batch of games.


def perturbed_games(game, count: int, seed: int) -> list:
  """`count` copies of `game`, each terminal's payoffs (all players alike, so zero-sum stays
  zero-sum) scaled by its own factor exp(PERTURBATION * normal)."""
  key = jax.random.key(seed)
  games = []
  for index in range(count):
    keys = jax.random.split(jax.random.fold_in(key, index), game.num_depths)
    utility = tuple(
      u * jnp.exp(PERTURBATION * jax.random.normal(k, (u.shape[0], 1), u.dtype))
      for k, u in zip(keys, game.utility, strict=True)
    )
    games.append(game.replace(utility=utility))
  return games


def cfr_plus_exploitability(game, num_iterations):
  """`[]` exploitability of CFR+'s average policy after `num_iterations`."""
  solver = registry.make_solver('cfr+')
  state = protocol.run(solver, solver.init(game), game, num_iterations)
  return evaluation.exploitability(game, solver.average_policy(state, game))


def sweep_games(game, count: int, seed: int, iterations: int, check_iterations: int, repeats: int) -> dict:
  games = perturbed_games(game, count, seed)
  stacked = jax.tree.map(lambda *leaves: jnp.stack(leaves), *games)
  steps = jnp.int32(iterations)
  batched, batched_jit = aot(jax.vmap(cfr_plus_exploitability, in_axes=(0, None)), stacked, steps)
  sequential, sequential_jit = aot(cfr_plus_exploitability, games[0], steps)
  log(f'games: {count} games; compiled batched in {batched_jit:.1f} s, sequential in {sequential_jit:.1f} s')

  def run_batched(n, stacked=stacked):
    return batched(stacked, jnp.int32(n))

  def run_sequential(n):  # on one compiled `run`, not `jaxcfr.train`, as in `sweep_grid`
    return jnp.stack([sequential(g, jnp.int32(n)) for g in games])

  epsilon = jnp.finfo(game.dtype).eps
  nudged = stacked.replace(utility=tuple(u * (1 + epsilon) for u in stacked.utility))
  comparison = compare(
    run_batched,
    run_sequential,
    lambda n: run_batched(n, nudged),
    iterations,
    check_iterations,
    repeats,
    'games',
  )
  return dict(
    games=count,
    seed=seed,
    perturbation=PERTURBATION,
    exploitabilities=comparison.pop('batched').tolist(),
    sequential_exploitabilities=comparison.pop('sequential').tolist(),
    batched_compile_seconds=batched_jit,
    sequential_compile_seconds=sequential_jit,
    **comparison,
  )


# Reporting.


def grid_table(grid: dict) -> list[str]:
  """Markdown rows: the top configurations by exploitability, then the default if it is not among them."""
  lines = [
    '| rank | alpha | beta | gamma | exploitability | one at a time |',
    '|---:|---:|---:|---:|---:|---:|',
  ]
  rows = grid['rows'][:TOP]
  default = [r for r in grid['rows'] if (r['alpha'], r['beta'], r['gamma']) == DEFAULT_CONFIG]
  if default and default[0] not in rows:
    rows = rows + default
  for r in rows:
    mark = ' (default)' if (r['alpha'], r['beta'], r['gamma']) == DEFAULT_CONFIG else ''
    lines.append(
      f'| {r["rank"]} | {r["alpha"]:g} | {r["beta"]:g} | {r["gamma"]:g} | '
      f'{r["exploitability"]:.4e}{mark} | {r["sequential_exploitability"]:.4e} |'
    )
  return lines


def timing_table(grid: dict, games: dict) -> list[str]:
  lines = [
    '| sweep | problems | batched s | sequential s | sequential / batched |',
    '|---|---:|---:|---:|---:|',
  ]
  for name, result, size in (
    ('DCFR grid', grid, grid['configurations']),
    ('CFR+ games', games, games['games']),
  ):
    lines.append(
      f'| {name} | {size} | {result["batched_seconds"]:.3f} | '
      f'{result["sequential_seconds"]:.3f} | {result["speedup"]:.2f} |'
    )
  return lines


def agreement_table(grid: dict, games: dict, iterations: int) -> list[str]:
  lines = [
    '| sweep | check iterations | max abs difference there | max abs difference after '
    f'{iterations} | one-ulp nudge after {iterations} |',
    '|---|---:|---:|---:|---:|',
  ]
  for name, result in (('DCFR grid', grid), ('CFR+ games', games)):
    lines.append(
      f'| {name} | {result["check_iterations"]} | {result["check_difference"]:.2e} | '
      f'{result["max_abs_difference"]:.2e} | {result["rounding_sensitivity"]:.2e} |'
    )
  return lines


def markdown(results: dict) -> str:
  games = results['games']
  values = np.asarray(games['exploitabilities'])
  return '\n'.join(
    [
      f'# vmap sweep: {results["game"]}, {results["iterations"]} iterations, {results["dtype"]}',
      '',
      f'jax {results["jax"]} on {results["platform"]}; compile time excluded.',
      '',
      f'## DCFR grid ({results["grid"]["configurations"]} configurations), by exploitability',
      '',
      *grid_table(results['grid']),
      '',
      f'## CFR+ on {games["games"]} perturbed games (seed {games["seed"]})',
      '',
      f'exploitability min {values.min():.4e}, median {np.median(values):.4e}, max {values.max():.4e}',
      '',
      '## Batched (one vmap program) vs one at a time (one jitted program, called in a loop)',
      '',
      *timing_table(results['grid'], games),
      '',
      '## Batched vs one at a time: max abs difference of exploitabilities',
      '',
      'Must be below the tolerance after the check iterations; later, rounding differences are amplified by',
      "the solver's dynamics, as the last column (the inputs nudged by one ulp, batched) shows.",
      '',
      *agreement_table(results['grid'], games, results['iterations']),
      '',
    ]
  )


def main(argv: list[str] | None = None) -> None:
  parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
  parser.add_argument('--game', default='leduc', help='game spec')
  parser.add_argument('--iterations', type=int, default=500)
  parser.add_argument('--games-in-batch', type=int, default=16)
  parser.add_argument(
    '--grid',
    default='full',
    choices=sorted(GRIDS),
    help='full: 5 x 3 x 3 = 45 configurations; small: 2 x 2 x 1 = 4',
  )
  parser.add_argument('--seed', type=int, default=0)
  parser.add_argument('--repeats', type=int, default=1, help='timed runs per measurement; the best counts')
  parser.add_argument(
    '--check-iterations',
    type=int,
    default=CHECK_ITERATIONS,
    help='batched and sequential exploitabilities must agree after this many iterations',
  )
  parser.add_argument('--tolerance', type=float, default=TOLERANCE, help='for that agreement')
  parser.add_argument('--dtype', default='float32', choices=('float32', 'float64'))
  parser.add_argument('--out', default=os.path.join('experiments', 'results'))
  args = parser.parse_args(argv)
  if min(args.iterations, args.games_in_batch, args.repeats, args.check_iterations) < 1:
    parser.error('--iterations, --games-in-batch, --repeats and --check-iterations must be positive')

  if args.dtype == 'float64':
    jax.config.update('jax_enable_x64', True)
  os.makedirs(args.out, exist_ok=True)
  log(f'jax {jax.__version__} on {jax.devices()[0].platform}, dtype {args.dtype}')
  start = time.perf_counter()
  game = jax.block_until_ready(compiler.compile_game(args.game, dtype=args.dtype))
  log(
    f'{args.game}: compiled {game.num_histories:,} histories, {game.num_infosets:,} infosets '
    f'in {time.perf_counter() - start:.1f} s'
  )

  grid = sweep_grid(game, GRIDS[args.grid], args.iterations, args.check_iterations, args.repeats)
  games = sweep_games(
    game, args.games_in_batch, args.seed, args.iterations, args.check_iterations, args.repeats
  )
  results = dict(
    game=args.game,
    iterations=args.iterations,
    dtype=args.dtype,
    jax=jax.__version__,
    platform=jax.devices()[0].platform,
    repeats=args.repeats,
    tolerance=args.tolerance,
    grid=grid,
    games=games,
  )

  path = os.path.join(args.out, 'vmap_sweep.json')
  with open(path, 'w') as handle:
    json.dump(results, handle, indent=1)
  log(f'wrote {path}')
  text = markdown(results)
  path = os.path.join(args.out, 'vmap_sweep.md')
  with open(path, 'w') as handle:
    handle.write(text)
  log(f'wrote {path}')
  print(text)

  for name, result in (('grid', grid), ('games', games)):
    if not result['check_difference'] < args.tolerance:
      raise SystemExit(
        f'{name}: batched and sequential exploitabilities differ by '
        f'{result["check_difference"]:.2e} after {result["check_iterations"]} iterations '
        f'(tolerance {args.tolerance:g})'
      )


if __name__ == '__main__':
  main()
