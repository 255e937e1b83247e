"""jaxcfr's batched MCCFR against OpenSpiel's C++ MCCFR solvers, side by side in one run.

For each game and sampling scheme (external, outcome), each implementation
runs for every wall-clock budget in `--budgets` (seconds of solving; jit
compilation and exploitability checks excluded on both sides), and the
table reports the exact exploitability of its average policy at that budget,
the iterations done and the traversals per second. One OpenSpiel iteration
is one traversal per player (as one jaxcfr iteration is `--batch-size` per
player), so traversals per second compare like with like.

OpenSpiel: `pyspiel.ExternalSamplingMCCFRSolver` / `OutcomeSamplingMCCFRSolver`
(simple averaging, exploration 0.6), single-threaded C++, run in timed chunks
that stop at each budget. jaxcfr: the registry's `es-mccfr` / `os-mccfr` with
`--batch-size` traversals per player per iteration, linear weighting on, split
over `--devices` (on a CPU, host devices: one per core), in one `jaxcfr.train`
run of the largest budget that evaluates at every budget mark (its solve
seconds include producing each average policy, a normalisation).

    python experiments/bench_mccfr.py --quick
    python experiments/bench_mccfr.py --devices 2 --budgets 2,6,20,60 --out results/mccfr
"""

from __future__ import annotations

import argparse
import os
import sys


def parse_args(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument('--games', default='kuhn,leduc')
  parser.add_argument('--schemes', default='external,outcome')
  parser.add_argument('--budgets', default='2,6,20,60', help='solve seconds, comma-separated')
  parser.add_argument('--batch-size', type=int, default=1024)
  parser.add_argument(
    '--devices', type=int, default=os.cpu_count() or 1, help='jaxcfr devices (default: cores)'
  )
  parser.add_argument('--seed', type=int, default=0)
  parser.add_argument('--quick', action='store_true', help='budgets 2 and 6 only')
  parser.add_argument('--out', help='directory for results.md and results.json')
  return parser.parse_args(argv)


ARGS = parse_args()
if ARGS.devices > 1 and 'xla_force_host_platform_device_count' not in os.environ.get('XLA_FLAGS', ''):
  os.environ['XLA_FLAGS'] = (
    os.environ.get('XLA_FLAGS', '') + f' --xla_force_host_platform_device_count={ARGS.devices}'
  )

import datetime  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import time  # noqa: E402

import jax  # noqa: E402

# Submodules rather than `import jaxcfr`, as in convergence.py.
from jaxcfr import algorithms as registry  # noqa: E402
from jaxcfr import compiler, training  # noqa: E402

OPENSPIEL_NAMES = {'kuhn': 'kuhn_poker', 'leduc': 'leduc_poker'}


def log(message: str) -> None:
  print(message, file=sys.stderr, flush=True)


def run_budgets(label, step, exploitability, traversals_per_iteration, budgets, first_chunk) -> list[dict]:
  """Runs `step(n)` (n iterations) in timed chunks that stop at each budget of solve seconds
  (chunks are sized to about a quarter second), and records the exploitability there."""
  rows, seconds, iterations, chunk = [], 0.0, 0, first_chunk
  for budget in budgets:
    while seconds < budget:
      start = time.perf_counter()
      step(chunk)
      elapsed = time.perf_counter() - start
      seconds += elapsed
      iterations += chunk
      rate = chunk / max(elapsed, 1e-6)
      chunk = max(1, min(int(0.25 * rate), int((budget - seconds) * rate) + 1))
    value = exploitability()
    traversals = iterations * traversals_per_iteration
    rows.append(
      dict(
        budget=budget,
        seconds=seconds,
        iterations=iterations,
        traversals=traversals,
        traversals_per_second=traversals / seconds,
        exploitability=value,
      )
    )
    log(f'  {label} {budget:>4g} s: exploitability {value:.4g} after {iterations:,} iterations')
  return rows


def run_openspiel(name: str, scheme: str, budgets: list[float], seed: int) -> list[dict]:
  import pyspiel  # noqa: PLC0415

  game = pyspiel.load_game(OPENSPIEL_NAMES.get(name, name))
  if scheme == 'external':
    solver = pyspiel.ExternalSamplingMCCFRSolver(game, seed=seed)
  else:
    solver = pyspiel.OutcomeSamplingMCCFRSolver(game, seed=seed)

  def step(count):
    for _ in range(count):
      solver.run_iteration()

  return run_budgets(
    f'openspiel {name} {scheme}',
    step,
    lambda: pyspiel.exploitability(game, solver.average_policy()),
    game.num_players(),
    budgets,
    1000,
  )


def evaluation_interval(budgets: list[float]) -> float:
  """The longest interval (to the millisecond) of which every budget is a multiple, so that
  evaluating every that many solve seconds evaluates at each budget."""
  return math.gcd(*(max(1, round(1000 * budget)) for budget in budgets)) / 1000


def run_jaxcfr(name: str, scheme: str, budgets: list[float], args) -> tuple[list[dict], float]:
  """One `jaxcfr.train` run of `max(budgets)` solve seconds, evaluated at every budget mark;
  each budget's row is the evaluation nearest to it."""
  game = compiler.compile_game(name)
  algorithm = 'es-mccfr' if scheme == 'external' else 'os-mccfr'
  solver = registry.make_solver(
    algorithm, devices=args.devices, batch_size=args.batch_size, linear_until=10**9
  )
  result = training.train(
    game,
    solver,
    key=args.seed,
    seconds=max(budgets),
    eval_every_seconds=evaluation_interval(budgets),
  )
  traversals_per_iteration = args.batch_size * game.num_players
  rows = []
  for budget in budgets:
    point = min(result.curve, key=lambda point: abs(point['seconds'] - budget))
    traversals = point['iteration'] * traversals_per_iteration
    rows.append(
      dict(
        budget=budget,
        seconds=point['seconds'],
        iterations=point['iteration'],
        traversals=traversals,
        traversals_per_second=traversals / point['seconds'],
        exploitability=point['exploitability'],
      )
    )
    log(
      f'  jaxcfr    {name} {scheme} {budget:>4g} s: exploitability {point["exploitability"]:.4g} '
      f'after {point["iteration"]:,} iterations ({point["seconds"]:.2f} s)'
    )
  return rows, result.jit_seconds


def main() -> None:
  args = ARGS
  budgets = [2.0, 6.0] if args.quick else [float(b) for b in args.budgets.split(',')]
  results = []
  for name in args.games.split(','):
    for scheme in args.schemes.split(','):
      log(f'{name} / {scheme} sampling')
      ours, jit_seconds = run_jaxcfr(name, scheme, budgets, args)
      theirs = run_openspiel(name, scheme, budgets, args.seed)
      results.append(dict(game=name, scheme=scheme, jaxcfr=ours, openspiel=theirs, jit_seconds=jit_seconds))
  lines = [
    f'jaxcfr {args.batch_size} traversals per player per iteration on {args.devices} '
    f'{jax.default_backend()} device(s), linear weighting; OpenSpiel C++ single-threaded. '
    'Exploitability of the average policy at equal solve seconds (jit and evaluation excluded).',
    '',
    '| game | sampling | budget (s) | OpenSpiel exploitability | jaxcfr exploitability | '
    'OpenSpiel traversals/s | jaxcfr traversals/s | traversals/s ratio |',
    '|---|---|---:|---:|---:|---:|---:|---:|',
  ]
  for result in results:
    for ours, theirs in zip(result['jaxcfr'], result['openspiel'], strict=True):
      ratio = ours['traversals_per_second'] / theirs['traversals_per_second']
      lines.append(
        f'| {result["game"]} | {result["scheme"]} | {ours["budget"]:g} | {theirs["exploitability"]:.4g} | '
        f'{ours["exploitability"]:.4g} | {theirs["traversals_per_second"]:,.0f} | '
        f'{ours["traversals_per_second"]:,.0f} | {ratio:.1f}x |'
      )
  table = '\n'.join(lines)
  print(table)
  if args.out:
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, 'results.md'), 'w') as file:
      file.write(table + '\n')
    with open(os.path.join(args.out, 'results.json'), 'w') as file:
      meta = dict(date=datetime.datetime.now().isoformat(), args=vars(args), backend=jax.default_backend())
      json.dump(dict(meta=meta, results=results), file, indent=2)


if __name__ == '__main__':
  main()
