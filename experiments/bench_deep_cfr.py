"""jaxcfr's Deep CFR against OpenSpiel's JAX Deep CFR: NashConv against wall-clock seconds, side by side.

For each game both solvers run, one after the other (never concurrently), for
the same wall-clock budget (`--seconds`) with the same `--seed`, on the same
JAX platform (`--platform`, CPU by default), and each records a curve of
(seconds, iterations, NashConv). NashConv is exact on both sides, and the time
spent computing it is not counted.

OpenSpiel (`open_spiel.python.jax.deep_cfr.DeepCFRSolver`, in this process):
the issue's reference configuration, (64, 64) policy and advantage networks and
150 traversals per player per iteration, otherwise OpenSpiel's defaults (see
the `--openspiel-*` options). `solve()` runs a fixed number of iterations, so
its loop is replicated here with the solver's own methods, exactly as `solve()`
calls them: per iteration and player, `_traverse_game_tree` from the root
`num_traversals` times, `_reinitialize_advantage_network`, then
`_learn_advantage_network`. At every evaluation point (each
`--eval-every-seconds` of solving, by default a tenth of the budget, and at the
end) the policy network is trained with `_learn_strategy_network`, as `solve()`
does once at its end, and `exploitability.nash_conv` is computed on
`policy.tabular_policy_from_callable(game, solver.action_probabilities)`. A
point's seconds are the time of all iterations so far plus that one policy
training, which is what `solve()` with that many iterations would take; the
NashConv computation and the policy trainings of earlier points are excluded.
After each evaluation the policy network, its Adam state and the solver's PRNG
key are restored to what they were before it, so the run continues exactly as
if it had not been evaluated (traversals use only the advantage networks and
NumPy's global generator, which the evaluation does not touch) and every
point's policy network is trained from its initial weights, as `solve()`
would. Everything else OpenSpiel does is counted, including its jit
compilations: with whole-buffer batches (its default) the training steps are
recompiled every iteration as the buffers grow, so compilation cannot be
separated from solving. The run stops when the next iteration plus the final
policy training would pass the budget.

Two OpenSpiel 2.0.2 behaviours under the installed flax (0.12) are measured as
they are, not corrected: `_reinitialize_advantage_network` and
`_reinitialize_policy_network` restore a state that holds references to the
live variables, so they do nothing (advantage networks and their Adam states
are warm-started from the previous iteration, whatever
`reinitialize_advantage_networks` says), and `_learn_strategy_network` trains
for `advantage_network_train_steps` (750) steps, ignoring
`policy_network_train_steps`. The restore above does not depend on the former.

jaxcfr: `jaxcfr solve GAME --algorithm deep-cfr --seconds S --seed N --json
PATH --quiet` in a subprocess (`python -m jaxcfr.cli` of this checkout, which
trains with `jaxcfr.train`), plus `--jaxcfr-args`. The CLI then evaluates every tenth of the budget, like
the OpenSpiel side. Its curve's `seconds` are the CLI's solve wall-clock: jit
compilation and exact exploitability evaluation excluded, training the
strategy network for each evaluated policy included (as on the OpenSpiel side).

Writes the curves to `--csv` (game, solver, seconds, iterations, nash_conv),
log-log plots of NashConv against seconds to `--plot`, the jaxcfr JSON results
and a Markdown copy of the table beside the CSV, and prints the table: per
game, each solver's NashConv at fractions of the budget (the last point at or
before that time), the final NashConv of each, and the first time jaxcfr's
curve is at or below OpenSpiel's final NashConv, also as a fraction of
OpenSpiel's total seconds (the project's target: at most 0.2).

    python experiments/bench_deep_cfr.py --seconds kuhn=120,leduc=900   # the table in docs/benchmarks.md
    python experiments/bench_deep_cfr.py --games kuhn --seconds 60 --only openspiel
    python experiments/bench_deep_cfr.py --only jaxcfr --openspiel-csv experiments/results/openspiel.csv
"""

from __future__ import annotations

import argparse
import csv
import datetime
import gc
import importlib.metadata
import json
import os
import shlex
import subprocess
import sys
import time

DEFAULT_SECONDS = {'kuhn': 120.0, 'leduc': 900.0}
FALLBACK_SECONDS = 900.0
OPENSPIEL_NAMES = {'kuhn': 'kuhn_poker', 'leduc': 'leduc_poker'}
SOLVERS = ('openspiel', 'jaxcfr')
FIELDS = ('game', 'solver', 'seconds', 'iterations', 'nash_conv')
TOLERANCE = 1.02  # a point counts at time t if its seconds <= 1.02 t: runs end a little past the budget


def log(message: str) -> None:
  print(message, file=sys.stderr, flush=True)


def per_game(text: str | None, games: list[str], convert, defaults: dict, fallback) -> dict:
  """`'X'` (every game) or `'game=X,game=X'` (the rest from `defaults`, else `fallback`) -> {game: X}."""
  values = {game: defaults.get(game, fallback) for game in games}
  if text is None:
    return values
  if '=' not in text:
    return dict.fromkeys(games, convert(text))
  for item in text.split(','):
    game, _, value = item.partition('=')
    values[game.strip()] = convert(value.strip())
  return values


def int_or_auto(text: str) -> int | None:
  return None if text == 'auto' else int(text)


def layers(text: str) -> tuple[int, ...]:
  return tuple(int(size) for size in text.split(',') if size.strip())


def optional_int(text: str) -> int | None:
  return None if text.lower() == 'none' else int(text)


def parse_args(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument('--games', default='kuhn,leduc')
  parser.add_argument(
    '--seconds',
    help='wall-clock budget per run: one number for all games, or per game (default kuhn=120,leduc=900)',
  )
  parser.add_argument(
    '--eval-every-seconds',
    help='OpenSpiel evaluation interval, like --seconds (default: a tenth of the budget)',
  )
  parser.add_argument('--seed', type=int, default=0, help='seed for both solvers')
  parser.add_argument('--only', choices=SOLVERS, help='run one side only')
  parser.add_argument('--platform', default='cpu', help='JAX_PLATFORMS for both sides (default cpu)')
  parser.add_argument('--fractions', default='0.1,0.25,0.5,1', help='table times, as fractions of the budget')
  parser.add_argument('--csv', default=os.path.join('experiments', 'results', 'bench_deep_cfr.csv'))
  parser.add_argument('--plot', default=os.path.join('experiments', 'results', 'bench_deep_cfr.png'))
  parser.add_argument(
    '--openspiel-csv', help='take the OpenSpiel curves from a CSV this script wrote instead of running it'
  )
  jaxcfr = parser.add_argument_group('jaxcfr')
  jaxcfr.add_argument('--jaxcfr-algorithm', default='deep-cfr')
  jaxcfr.add_argument(
    '--jaxcfr-eval-every',
    default='auto',
    help="jaxcfr's --eval-every (iterations), like --seconds; 'auto' (default): the CLI's schedule, "
    'which for deep-cfr/sd-cfr evaluates every tenth of the budget, like the OpenSpiel side',
  )
  jaxcfr.add_argument(
    '--jaxcfr-args', default='', help='more `jaxcfr solve` arguments, e.g. "--batch-size 512"'
  )
  openspiel = parser.add_argument_group('OpenSpiel DeepCFRSolver (defaults: the issue reference)')
  openspiel.add_argument('--openspiel-policy-layers', type=layers, default=(64, 64))
  openspiel.add_argument('--openspiel-advantage-layers', type=layers, default=(64, 64))
  openspiel.add_argument('--openspiel-traversals', type=int, default=150, help='per player per iteration')
  openspiel.add_argument('--openspiel-learning-rate', type=float, default=1e-4)
  openspiel.add_argument('--openspiel-batch-size-advantage', type=optional_int, default=None)
  openspiel.add_argument('--openspiel-batch-size-strategy', type=optional_int, default=None)
  openspiel.add_argument('--openspiel-memory-capacity', type=float, default=1e6)
  openspiel.add_argument('--openspiel-advantage-train-steps', type=int, default=750)
  openspiel.add_argument(
    '--openspiel-policy-train-steps', type=int, default=5000, help='ignored by OpenSpiel 2.0.2 (see above)'
  )
  args = parser.parse_args(argv)
  args.games = [game.strip() for game in args.games.split(',') if game.strip()]
  args.budgets = per_game(args.seconds, args.games, float, DEFAULT_SECONDS, FALLBACK_SECONDS)
  tenths = {game: budget / 10 for game, budget in args.budgets.items()}
  args.eval_every_seconds = per_game(args.eval_every_seconds, args.games, float, tenths, None)
  args.jaxcfr_eval_every = per_game(args.jaxcfr_eval_every, args.games, int_or_auto, {}, None)
  args.fractions = [float(f) for f in args.fractions.split(',')]
  if args.only == 'openspiel' and args.openspiel_csv:
    parser.error('--openspiel-csv with --only openspiel: nothing to run')
  return args


# OpenSpiel.


def openspiel_hyperparameters(args) -> dict:
  return dict(
    policy_network_layers=args.openspiel_policy_layers,
    advantage_network_layers=args.openspiel_advantage_layers,
    num_traversals=args.openspiel_traversals,
    learning_rate=args.openspiel_learning_rate,
    batch_size_advantage=args.openspiel_batch_size_advantage,
    batch_size_strategy=args.openspiel_batch_size_strategy,
    memory_capacity=int(args.openspiel_memory_capacity),
    policy_network_train_steps=args.openspiel_policy_train_steps,
    advantage_network_train_steps=args.openspiel_advantage_train_steps,
    reinitialize_advantage_networks=True,
  )


def run_openspiel(name: str, budget: float, eval_every: float, args) -> list[dict]:
  """OpenSpiel's Deep CFR for `budget` seconds: `solve()`'s loop, evaluated every `eval_every` seconds."""
  import flax.nnx as nn  # noqa: PLC0415
  import jax  # noqa: PLC0415
  import jax.numpy as jnp  # noqa: PLC0415
  import numpy as np  # noqa: PLC0415
  import pyspiel  # noqa: PLC0415
  from open_spiel.python import policy as policy_lib  # noqa: PLC0415
  from open_spiel.python.algorithms import exploitability  # noqa: PLC0415
  from open_spiel.python.jax import deep_cfr  # noqa: PLC0415

  game = pyspiel.load_game(OPENSPIEL_NAMES.get(name, name))
  np.random.seed(args.seed)  # chance and opponent sampling in `_traverse_game_tree`
  solver = deep_cfr.DeepCFRSolver(game, seed=args.seed, **openspiel_hyperparameters(args))
  policy_modules = (solver._policy_network, solver._policy_opt)
  # A copy of the arrays: `nn.state` alone holds the live variables (see the module docstring).
  initial_policy = jax.tree.map(jnp.copy, nn.state(policy_modules))

  def iteration() -> None:  # one pass of the body of `solve()`'s loop
    for player in range(solver._num_players):
      for _ in range(solver._num_traversals):
        solver._traverse_game_tree(solver._root_node, player)
      if solver._reinitialize_advantage_networks:
        solver._reinitialize_advantage_network(player)
      solver._learn_advantage_network(player)
    solver._iteration += 1
    jax.block_until_ready(nn.state(tuple(solver._advantage_networks)))

  def train_policy() -> None:  # what `solve()` does after its loop
    solver._learn_strategy_network()
    jax.block_until_ready(nn.state(policy_modules))

  def nash_conv() -> float:
    solver._cached_policy.clear()
    tabular = policy_lib.tabular_policy_from_callable(game, solver.action_probabilities)
    return float(exploitability.nash_conv(game, tabular))

  points, clock, iterations = [], 0.0, 0
  policy_seconds, next_eval = 0.0, eval_every
  while True:
    start = time.perf_counter()
    iteration()
    elapsed = time.perf_counter() - start
    clock += elapsed
    iterations += 1
    if iterations == 1:
      log(f'  openspiel {name}: first iteration (with its jit compilation) {elapsed:.1f} s')
    final = clock + policy_seconds + 0.5 * elapsed >= budget
    if final or clock >= next_eval:
      key = solver._rngkey
      start = time.perf_counter()
      train_policy()
      policy_seconds = time.perf_counter() - start
      start = time.perf_counter()
      value = nash_conv()
      evaluation_seconds = time.perf_counter() - start
      nn.update(policy_modules, jax.tree.map(jnp.copy, initial_policy))
      solver._cached_policy.clear()
      solver._rngkey = key
      points.append(dict(seconds=clock + policy_seconds, iterations=iterations, nash_conv=value))
      log(
        f'  openspiel {name}: {clock + policy_seconds:7.1f} s, {iterations:4d} iterations, NashConv '
        f'{value:.4g} (policy training {policy_seconds:.1f} s counted; NashConv {evaluation_seconds:.1f} s, '
        'not counted)'
      )
      while next_eval <= clock:
        next_eval += eval_every
    if final:
      return points


# jaxcfr.


REPOSITORY = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def jaxcfr_command() -> list[str]:
  """This checkout's CLI (`jaxcfr_environment` puts it first on the path), not whichever
  `jaxcfr` console script is installed: that one may belong to another checkout."""
  return [sys.executable, '-m', 'jaxcfr.cli']


def jaxcfr_environment(platform: str) -> dict:
  path = os.pathsep.join(p for p in (REPOSITORY, os.environ.get('PYTHONPATH')) if p)
  return dict(os.environ, JAX_PLATFORMS=platform, PYTHONPATH=path)


def run_jaxcfr(name: str, budget: float, eval_every: int | None, json_path: str, args) -> list[dict]:
  """`jaxcfr solve` in a subprocess; its curve as points like OpenSpiel's."""
  command = [*jaxcfr_command(), 'solve', name, '--algorithm', args.jaxcfr_algorithm]
  command += ['--seconds', f'{budget:g}', '--seed', str(args.seed), '--json', json_path, '--quiet']
  if eval_every is not None:
    command += ['--eval-every', str(eval_every)]
  command += shlex.split(args.jaxcfr_args)
  log(f'  $ {shlex.join(command)}')
  if os.path.exists(json_path):
    os.remove(json_path)  # never read a stale result (and the CLI writes no file over another)
  completed = subprocess.run(command, stdout=sys.stderr, env=jaxcfr_environment(args.platform))
  if completed.returncode != 0:
    raise RuntimeError(f'jaxcfr exited with status {completed.returncode}')
  with open(json_path) as file:
    result = json.load(file)
  players = result.get('num_players', 2)
  curve = list(result['curve'])
  if not curve or curve[-1]['iteration'] != result['iterations']:
    curve.append(
      dict(
        iteration=result['iterations'],
        seconds=result['seconds'],
        exploitability=result['exploitability'],
      )
    )
  points = [
    dict(
      seconds=point['seconds'],  # includes training the strategy network the point was evaluated with
      iterations=point['iteration'],
      nash_conv=players * point['exploitability'],
    )
    for point in curve
  ]
  log(f'  jaxcfr {name}: hyperparameters {json.dumps(result.get("hyperparameters"))}')
  for point in points:
    seconds, iterations, value = point['seconds'], point['iterations'], point['nash_conv']
    log(f'  jaxcfr {name}: {seconds:7.1f} s, {iterations:6d} iterations, NashConv {value:.4g}')
  return points


# Report.


def at_or_before(points: list[dict], seconds: float) -> dict | None:
  before = [p for p in points if p['seconds'] <= TOLERANCE * seconds]
  return before[-1] if before else None


def first_at_or_below(points: list[dict], nash_conv: float) -> dict | None:
  return next((p for p in points if p['nash_conv'] <= nash_conv), None)


def fmt_seconds(seconds: float) -> str:
  return f'{seconds:.0f}' if seconds >= 100 else f'{seconds:.1f}' if seconds >= 1 else f'{seconds:.2g}'


def fmt_point(point: dict | None) -> str:
  if point is None:
    return '–'
  return f'{point["nash_conv"]:.3g} ({fmt_seconds(point["seconds"])} s, {point["iterations"]} it)'


def markdown(curves: dict, args) -> str:
  settings = ', '.join(f'{key}={value}' for key, value in openspiel_hyperparameters(args).items())
  command = f'jaxcfr solve GAME --algorithm {args.jaxcfr_algorithm} {args.jaxcfr_args}'.rstrip()
  caption = (
    f'JAX platform {args.platform}, {os.cpu_count()} CPUs visible; open_spiel {version("open_spiel")}, '
    f'flax {version("flax")}, jax {version("jax")}; seed {args.seed}. OpenSpiel DeepCFRSolver({settings}): '
    'its seconds include the policy-network training of each point and its jit compilations. '
    f'jaxcfr `{command}`: its seconds exclude jit compilation. Exact NashConv, never timed. Cells: NashConv '
    '(seconds, iterations) of the last point at or before that fraction of the budget; the last columns: '
    "the first jaxcfr point at or below OpenSpiel's final NashConv, and its seconds as a fraction of "
    "OpenSpiel's total seconds (target: at most 0.2)."
  )
  now = datetime.datetime.now().isoformat(timespec='seconds')
  lines = [f'# jaxcfr Deep CFR vs OpenSpiel Deep CFR ({now})', '', caption, '']
  header = ['game', 'budget s']
  for fraction in args.fractions:
    header += [f'{fraction:.0%} OpenSpiel', f'{fraction:.0%} jaxcfr']
  header += ['OpenSpiel final', 'jaxcfr final', "jaxcfr to OpenSpiel's final", 'ratio']
  lines.append('| ' + ' | '.join(header) + ' |')
  lines.append('|' + '|'.join(['---'] * 2 + ['---:'] * (len(header) - 2)) + '|')
  for game in args.games:
    budget = args.budgets[game]
    theirs, ours = curves[game].get('openspiel', []), curves[game].get('jaxcfr', [])
    cells = [game, f'{budget:g}']
    for fraction in args.fractions:
      cells += [fmt_point(at_or_before(points, fraction * budget)) for points in (theirs, ours)]
    cells += [fmt_point(theirs[-1] if theirs else None), fmt_point(ours[-1] if ours else None)]
    if theirs and ours:
      reached = first_at_or_below(ours, theirs[-1]['nash_conv'])
      if reached is None:
        cells += [
          f'> {fmt_seconds(ours[-1]["seconds"])} s',
          f'> {ours[-1]["seconds"] / theirs[-1]["seconds"]:.2f}',
        ]
      else:
        cells += [fmt_point(reached), f'{reached["seconds"] / theirs[-1]["seconds"]:.3f}']
    else:
      cells += ['–', '–']
    lines.append('| ' + ' | '.join(cells) + ' |')
  return '\n'.join(lines) + '\n'


def plot(path: str, curves: dict, args) -> None:
  import matplotlib  # noqa: PLC0415

  matplotlib.use('Agg')
  import matplotlib.pyplot as plt  # noqa: PLC0415

  figure, axes = plt.subplots(1, len(args.games), figsize=(5.5 * len(args.games), 4.2), squeeze=False)
  for ax, game in zip(axes[0], args.games, strict=True):
    for solver, style in zip(SOLVERS, ('o-', 's-'), strict=True):
      points = [p for p in curves[game].get(solver, []) if p['nash_conv'] > 0 and p['seconds'] > 0]
      if points:
        ax.loglog([p['seconds'] for p in points], [p['nash_conv'] for p in points], style, label=solver, ms=4)
    theirs = curves[game].get('openspiel')
    if theirs:
      final = theirs[-1]
      ax.axhline(final['nash_conv'], color='gray', ls=':', lw=1, label='OpenSpiel final')
      ax.axvline(final['seconds'] / 5, color='gray', ls='--', lw=1, label='1/5 of OpenSpiel time')
    ax.set_title(game)
    ax.set_xlabel('wall-clock seconds')
    ax.set_ylabel('NashConv')
    ax.grid(True, which='both', alpha=0.3)
    if ax.get_legend_handles_labels()[0]:
      ax.legend(fontsize=8)
  figure.suptitle('Deep CFR: NashConv against seconds')
  figure.tight_layout()
  figure.savefig(path, dpi=100)
  plt.close(figure)


def version(package: str) -> str:
  try:
    return importlib.metadata.version(package)
  except importlib.metadata.PackageNotFoundError:
    return 'unknown'


def read_csv(path: str, solver: str) -> dict:
  curves = {}
  with open(path, newline='') as file:
    for row in csv.DictReader(file):
      if row['solver'] == solver:
        point = dict(
          seconds=float(row['seconds']), iterations=int(row['iterations']), nash_conv=float(row['nash_conv'])
        )
        curves.setdefault(row['game'], []).append(point)
  return curves


def main(argv=None) -> None:
  args = parse_args(argv)
  os.environ['JAX_PLATFORMS'] = args.platform  # before anything imports jax
  out = os.path.dirname(args.csv) or '.'
  os.makedirs(out, exist_ok=True)
  stem = os.path.splitext(args.csv)[0]
  reused = read_csv(args.openspiel_csv, 'openspiel') if args.openspiel_csv else {}
  curves = {game: {} for game in args.games}
  for game in args.games:
    budget = args.budgets[game]
    log(f'{game}: {budget:g} s per solver')
    if game in reused:
      curves[game]['openspiel'] = reused[game]
      log(f'  openspiel {game}: {len(reused[game])} points from {args.openspiel_csv}')
    elif args.only != 'jaxcfr':
      curves[game]['openspiel'] = run_openspiel(game, budget, args.eval_every_seconds[game], args)
      gc.collect()  # release OpenSpiel's buffers before jaxcfr starts
    if args.only != 'openspiel':
      try:
        json_path = f'{stem}_{game}_jaxcfr.json'
        curves[game]['jaxcfr'] = run_jaxcfr(game, budget, args.jaxcfr_eval_every[game], json_path, args)
      except (OSError, RuntimeError, KeyError, ValueError) as error:
        log(f'  jaxcfr {game}: failed: {type(error).__name__}: {error}')

  with open(args.csv, 'w', newline='') as file:
    writer = csv.DictWriter(file, fieldnames=FIELDS)
    writer.writeheader()
    for game in args.games:
      for solver, points in curves[game].items():
        for point in points:
          writer.writerow(dict(game=game, solver=solver, **point))
  table = markdown(curves, args)
  print(table)
  with open(stem + '.md', 'w') as file:
    file.write(table)
  if args.plot:
    plot(args.plot, curves, args)
  log(f'wrote {args.csv}, {stem}.md' + (f' and {args.plot}' if args.plot else ''))


if __name__ == '__main__':
  main()
