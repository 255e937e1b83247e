"""The `jaxcfr` command line (contract in the README).

    jaxcfr games [--json PATH|-]
    jaxcfr solve GAME [--algorithm A] [--iterations N] [--seconds S] [--eval-every K]
                      [--seed S] [--dtype float32|float64] [--devices N] [--simultaneous]
                      [--alpha A --beta B --gamma G] [--json PATH|-] [--plot PNG]

Bad input ends in one message on stderr and exit status 2; nothing is
written unless the solve succeeds, and files are written atomically.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import time

ALGORITHM_NAMES = ('cfr', 'cfr+', 'lcfr', 'dcfr', 'pcfr+')
DEFAULT_ALGORITHM = 'dcfr'
DEFAULT_ITERATIONS = 1000


class UsageError(Exception):
  """Bad input: printed as one line, exit status 2."""


def _positive_int(text: str) -> int:
  try:
    value = int(text)
  except ValueError:
    raise argparse.ArgumentTypeError(f'expected a positive integer, got {text!r}') from None
  if value <= 0:
    raise argparse.ArgumentTypeError(f'expected a positive integer, got {value}')
  return value


def _positive_float(text: str) -> float:
  try:
    value = float(text)
  except ValueError:
    raise argparse.ArgumentTypeError(f'expected a positive number, got {text!r}') from None
  if not (value > 0 and math.isfinite(value)):
    raise argparse.ArgumentTypeError(f'expected a positive number, got {text}')
  return value


def _finite_float(text: str) -> float:
  try:
    value = float(text)
  except ValueError:
    raise argparse.ArgumentTypeError(f'expected a number, got {text!r}') from None
  if not math.isfinite(value):
    raise argparse.ArgumentTypeError(f'expected a finite number, got {text}')
  return value


def build_parser() -> argparse.ArgumentParser:
  parser = argparse.ArgumentParser(prog='jaxcfr', description='Solve imperfect-information games with CFR.')
  parser.add_argument('--version', action='version', version=f'jaxcfr {_version()}')
  commands = parser.add_subparsers(dest='command', required=True)

  games = commands.add_parser('games', help='list the built-in games with their sizes')
  games.add_argument('--json', metavar='PATH', help='write the list as JSON (- for stdout)')

  solve = commands.add_parser('solve', help='solve a game and report exploitability')
  solve.add_argument('game', help="game spec, e.g. leduc, 'leduc(suit_isomorphism=True)', openspiel:NAME")
  solve.add_argument('--algorithm', default=DEFAULT_ALGORITHM, choices=ALGORITHM_NAMES)
  solve.add_argument(
    '--iterations',
    type=_positive_int,
    help=f'total iterations (default {DEFAULT_ITERATIONS} without --seconds)',
  )
  solve.add_argument('--seconds', type=_positive_float, help='budget of solving seconds')
  solve.add_argument(
    '--eval-every',
    type=_positive_int,
    help='exact exploitability every K iterations (default: about 10 points per decade)',
  )
  solve.add_argument('--seed', type=int, default=0, help='PRNG seed (full-width solvers are deterministic)')
  solve.add_argument('--dtype', default='float32', choices=('float32', 'float64'))
  solve.add_argument('--devices', type=_positive_int, default=1, help='devices to use (full-width: 1)')
  solve.add_argument(
    '--simultaneous', action='store_true', help='simultaneous instead of alternating updates'
  )
  solve.add_argument('--alpha', type=_finite_float, default=1.5, help='DCFR positive-regret discount (1.5)')
  solve.add_argument('--beta', type=_finite_float, default=0.0, help='DCFR negative-regret discount (0)')
  solve.add_argument('--gamma', type=_finite_float, default=2.0, help='DCFR averaging power (2)')
  solve.add_argument('--json', metavar='PATH', help='write the result as JSON (- for stdout)')
  solve.add_argument('--plot', metavar='PNG', help='write exploitability against iterations and seconds')
  solve.add_argument(
    '--policy-out', metavar='PATH', help='write the average policy as JSON keyed by information state'
  )
  solve.add_argument(
    '--max-histories',
    type=_positive_int,
    default=50_000_000,
    help='refuse games with more histories than this',
  )
  solve.add_argument('--quiet', action='store_true', help='no progress bar')
  return parser


def _version() -> str:
  from importlib import metadata  # noqa: PLC0415

  try:
    return metadata.version('jaxcfr')
  except metadata.PackageNotFoundError:
    return 'unknown'


def main(argv: list[str] | None = None) -> int:
  args = build_parser().parse_args(argv)
  try:
    if args.command == 'games':
      return _games(args)
    return _solve(args)
  except UsageError as error:
    print(f'jaxcfr: error: {error}', file=sys.stderr)
    return 2
  except KeyboardInterrupt:
    print('jaxcfr: interrupted', file=sys.stderr)
    return 130


# Output helpers.


def _check_writable(path: str | None, what: str) -> None:
  """Fails early, before any solving, if `path` cannot be written."""
  if path is None or path == '-':
    return
  directory = os.path.dirname(os.path.abspath(path)) or '.'
  if not os.path.isdir(directory):
    raise UsageError(f'{what}: directory {directory!r} does not exist')
  if not os.access(directory, os.W_OK):
    raise UsageError(f'{what}: directory {directory!r} is not writable')
  if os.path.isdir(path):
    raise UsageError(f'{what}: {path!r} is a directory')


def _emit_json(path: str, payload: dict) -> None:
  from jaxcfr import policies  # noqa: PLC0415

  text = json.dumps(payload, indent=2) + '\n'
  if path == '-':
    sys.stdout.write(text)
  else:
    policies.write_atomic(path, lambda file: file.write(text.encode()))


# Commands.


def _games(args) -> int:
  from jaxcfr.games import REGISTRY  # noqa: PLC0415

  _check_writable(args.json, '--json')
  rows = [
    {
      'name': name,
      'aliases': list(entry.aliases),
      'description': entry.description,
      'num_histories': entry.sizes[0],
      'num_infosets': entry.sizes[1],
    }
    for name, entry in REGISTRY.items()
  ]
  if args.json:
    _emit_json(args.json, {'games': rows})
  if args.json != '-':
    print(f'{"game":<18}{"histories":>12}{"infosets":>10}  description')
    for row in rows:
      print(f'{row["name"]:<18}{row["num_histories"]:>12,}{row["num_infosets"]:>10,}  {row["description"]}')
    print(
      '\nParameters follow OpenSpiel syntax, e.g. leduc(suit_isomorphism=True); sizes are for the defaults.'
    )
    print('Any OpenSpiel game: openspiel:GAME_STRING (needs `pip install "jaxcfr[openspiel]"`).')
  return 0


def _eval_schedule(total: int | None, every: int | None):
  """Iteration counts at which to evaluate: multiples of `every`, or about
  ten log-spaced points per decade (1, 2, 3, 4, 5, 6, 8, 10, 13, 16, 20, ...)."""
  if every is not None:
    k = every
    while True:
      yield k
      k += every
  k = 1
  while True:
    yield k
    k = max(k + 1, int(round(k * 10**0.1)))


def _solve(args) -> int:
  if args.iterations is None and args.seconds is None:
    args.iterations = DEFAULT_ITERATIONS
  if args.devices != 1:
    raise UsageError(f'full-width solvers run on one device; got --devices {args.devices}')
  _check_writable(args.json, '--json')
  _check_writable(args.plot, '--plot')
  _check_writable(args.policy_out, '--policy-out')
  if args.plot and not args.plot.lower().endswith('.png'):
    raise UsageError(f'--plot writes a PNG file; got {args.plot!r}')
  if args.policy_out and not args.policy_out.lower().endswith('.json'):
    raise UsageError(f'--policy-out writes a .json file; got {args.policy_out!r}')
  quiet_stdout = args.json == '-'
  log = sys.stderr if quiet_stdout else sys.stdout

  import jax  # noqa: PLC0415 (keep `jaxcfr --help` fast)

  if args.dtype == 'float64':
    jax.config.update('jax_enable_x64', True)
  import jax.numpy as jnp  # noqa: PLC0415

  import jaxcfr  # noqa: PLC0415
  from jaxcfr import compiler, evaluation, policies, solvers  # noqa: PLC0415

  try:
    game_spec = jaxcfr.load_game(args.game)
    factory = solvers.ALGORITHMS[args.algorithm]
    hyperparameters = {'alternating': not args.simultaneous}
    if args.algorithm == 'dcfr':
      hyperparameters.update(alpha=args.alpha, beta=args.beta, gamma=args.gamma)
    solver = factory(**hyperparameters)
  except (jaxcfr.GameError, ValueError) as error:
    raise UsageError(str(error)) from None

  progress = _CompileProgress(enabled=not args.quiet)
  try:
    game, compile_seconds = compiler.timed_compile(
      game_spec, dtype=jnp.dtype(args.dtype), max_histories=args.max_histories, progress=progress
    )
  except jaxcfr.GameError as error:
    raise UsageError(str(error)) from None
  finally:
    progress.close()
  print(
    f'{game.name}: {game.num_histories:,} histories, {game.num_infosets:,} infosets, '
    f'{game.num_players} players; compiled in {compile_seconds:.2f} s',
    file=log,
  )

  run_chunk = jax.jit(lambda state, g, n: solvers.run(solver, state, g, n))
  evaluate = jax.jit(lambda state, g: _evaluate(evaluation, solvers.average_policy(state, g), g))
  jit_start = time.perf_counter()
  state = solver.init(game)
  count = jnp.asarray(1, jnp.int32)
  run_chunk = run_chunk.lower(state, game, count).compile()
  evaluate = evaluate.lower(state, game).compile()
  jit_seconds = time.perf_counter() - jit_start
  evaluation_times = []
  for _ in range(3):
    start = time.perf_counter()
    jax.block_until_ready(evaluate(state, game))
    evaluation_times.append(time.perf_counter() - start)
  evaluation_seconds = statistics.median(evaluation_times)

  curve = []
  seconds = 0.0
  done = 0
  schedule = _eval_schedule(args.iterations, args.eval_every)
  next_eval = next(schedule)
  per_iteration = None
  bar = _progress_bar(args, game)
  try:
    while True:
      target = next_eval if args.iterations is None else min(next_eval, args.iterations)
      steps = target - done
      if args.seconds is not None and per_iteration is not None:
        remaining = args.seconds - seconds
        steps = max(1, min(steps, int(remaining / per_iteration)))
      start = time.perf_counter()
      state = jax.block_until_ready(run_chunk(state, game, jnp.asarray(steps, jnp.int32)))
      elapsed = time.perf_counter() - start
      seconds += elapsed
      done += steps
      per_iteration = elapsed / steps
      finished = (args.iterations is not None and done >= args.iterations) or (
        args.seconds is not None and seconds >= args.seconds - 0.5 * per_iteration
      )
      if done >= next_eval or finished:
        nash_conv, values = jax.device_get(evaluate(state, game))  # the last one is the final result
        exploitability = float(nash_conv) / game.num_players
        curve.append({'iteration': done, 'seconds': seconds, 'exploitability': exploitability})
        if bar is not None:
          bar.set_postfix_str(f'exploitability {exploitability:.3g}')
        while next_eval <= done:
          next_eval = next(schedule)
      if bar is not None:
        bar.update(steps)
      if finished:
        break
  finally:
    if bar is not None:
      bar.close()

  result = {
    'game': game.name,
    'algorithm': args.algorithm,
    'hyperparameters': hyperparameters,
    'iterations': done,
    'seconds': seconds,
    'compile_seconds': compile_seconds,
    'jit_seconds': jit_seconds,
    'evaluation_seconds': evaluation_seconds,
    'exploitability': float(nash_conv) / game.num_players,
    'nash_conv': float(nash_conv),
    'game_value': float(values[0]),
    'values': [float(v) for v in values],
    'num_players': game.num_players,
    'num_histories': game.num_histories,
    'num_infosets': game.num_infosets,
    'devices': 1,
    'backend': jax.default_backend(),
    'dtype': args.dtype,
    'seed': args.seed,
    'version': jaxcfr.__version__,
    'curve': curve,
  }
  print(
    f'{args.algorithm}: {done:,} iterations in {seconds:.3f} s ({1000 * seconds / done:.3f} ms/iteration)\n'
    f'exploitability {result["exploitability"]:.6g} (NashConv {result["nash_conv"]:.6g}), '
    f'game value {result["game_value"]:.6f} for player 0; one exact evaluation takes '
    f'{1000 * evaluation_seconds:.2f} ms',
    file=log,
  )
  if args.policy_out:
    policies.save_json(
      args.policy_out,
      game,
      solvers.average_policy(state, game),
      game=game.name,
      algorithm=args.algorithm,
      hyperparameters=hyperparameters,
      iterations=done,
      exploitability=result['exploitability'],
      nash_conv=result['nash_conv'],
      version=jaxcfr.__version__,
    )
    print(f'policy written to {args.policy_out}', file=log)
  if args.plot:
    _plot(args.plot, result)
    print(f'plot written to {args.plot}', file=log)
  if args.json:
    _emit_json(args.json, result)
    if args.json != '-':
      print(f'JSON written to {args.json}', file=log)
  return 0


def _evaluate(evaluation, policy, game):
  values = evaluation.expected_values(game, policy)
  return (evaluation.best_response_values(game, policy) - values).sum(), values


class _CompileProgress:
  """A spinner-like status line on stderr for long compilations."""

  def __init__(self, enabled: bool):
    self._enabled = enabled and sys.stderr.isatty()
    self._start = time.perf_counter()
    self._shown = False

  def __call__(self, depth: int, histories: int) -> None:
    if self._enabled and time.perf_counter() - self._start > 1.0:
      sys.stderr.write(f'\rcompiling: depth {depth + 1}, {histories:,} histories')
      sys.stderr.flush()
      self._shown = True

  def close(self) -> None:
    if self._shown:
      sys.stderr.write('\n')


def _progress_bar(args, game):
  if args.quiet:
    return None
  from tqdm import tqdm  # noqa: PLC0415

  total = args.iterations
  return tqdm(total=total, desc=args.algorithm, unit='it', file=sys.stderr, disable=None, leave=False)


def _plot(path: str, result: dict) -> None:
  import matplotlib  # noqa: PLC0415

  from jaxcfr import policies  # noqa: PLC0415

  matplotlib.use('Agg')
  import matplotlib.pyplot as plt  # noqa: PLC0415
  import matplotlib.ticker  # noqa: PLC0415

  curve = [p for p in result['curve'] if p['exploitability'] > 0]
  figure, (by_iteration, by_second) = plt.subplots(1, 2, figsize=(10, 4))
  label = f'{result["algorithm"]} ({result["dtype"]})'
  by_iteration.loglog([p['iteration'] for p in curve], [p['exploitability'] for p in curve], label=label)
  by_iteration.set_xlabel('iterations')
  by_second.loglog(
    [max(p['seconds'], 1e-6) for p in curve], [p['exploitability'] for p in curve], label=label
  )
  by_second.set_xlabel('solve seconds')
  for axes in (by_iteration, by_second):
    axes.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    axes.set_ylabel('exploitability')
    axes.grid(True, which='both', alpha=0.3)
    axes.legend()
  figure.suptitle(f'{result["game"]}: final exploitability {result["exploitability"]:.3g}')
  figure.tight_layout()
  policies.write_atomic(path, lambda file: figure.savefig(file, format='png', dpi=100))
  plt.close(figure)


if __name__ == '__main__':
  sys.exit(main())
