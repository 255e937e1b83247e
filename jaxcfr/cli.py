"""The `jaxcfr` command line (contract in the README): argument parsing and output.

    jaxcfr games [--json PATH|-]
    jaxcfr solve GAME [--algorithm A] [--iterations N] [--seconds S] [hyper-parameter flags] ...
    jaxcfr evaluate GAME --policy PATH [--dtype D] [--json PATH|-]
    jaxcfr abstract [--profile default|small] --out DIR  (see abstractions/)

The work is library code (`jaxcfr.train`, `jaxcfr.algorithms`); the hyper-parameter
flags, their help and their validation come from the algorithm registry. Bad input
ends in one message on stderr and exit status 2; outputs are checked before any work
and written atomically, and nothing that jaxcfr did not write is replaced.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time

from jaxcfr import algorithms, outputs

DEFAULT_ITERATIONS = 1000
DEFAULT_KEEP = 3
CACHE_ENV, NO_CACHE_ENV = 'JAXCFR_CACHE_DIR', 'JAXCFR_NO_CACHE'


class UsageError(Exception):
  """Bad input: printed as one line, exit status 2."""


class _Parser(argparse.ArgumentParser):
  """Prints one error line and where help is, not the whole usage block."""

  def error(self, message):
    self.exit(2, f"{self.prog}: error: {message}\nsee '{self.prog} --help'\n")


def _number(kind, check):
  def parse(text):
    try:
      value = kind(text)
    except ValueError:
      raise argparse.ArgumentTypeError(f'expected {check.__doc__}, got {text!r}') from None
    if not check(value):
      raise argparse.ArgumentTypeError(f'expected {check.__doc__}, got {text}')
    return value

  return parse


def _is_positive(value):
  """a positive number"""
  return value > 0 and math.isfinite(value)


def _is_finite(value):
  """a finite number"""
  return math.isfinite(value)


def _is_positive_int(value):
  """a positive integer"""
  return value > 0


def _is_nonnegative_int(value):
  """a non-negative integer"""
  return value >= 0


_positive_int = _number(int, _is_positive_int)
_positive_float = _number(float, _is_positive)
_finite_float = _number(float, _is_finite)


def _layers(text: str) -> tuple[int, ...]:
  try:
    layers = tuple(int(part) for part in text.split(','))
  except ValueError:
    raise argparse.ArgumentTypeError(f'expected comma-separated layer widths, got {text!r}') from None
  if not layers or min(layers) <= 0:
    raise argparse.ArgumentTypeError(f'expected positive layer widths, got {text!r}')
  return layers


def _batch(text: str) -> int | None:
  return None if text == 'all' else _positive_int(text)


def _flag_type(parameter: algorithms.Hyperparameter):
  if parameter.kind == 'layers':
    return _layers
  if parameter.kind == 'batch':
    return _batch
  if parameter.kind == 'int':
    return _positive_int if parameter.low >= 1 else _number(int, _is_nonnegative_int)
  return _finite_float


def _shown(value) -> str:
  if value is None:
    return 'off'
  if isinstance(value, tuple):
    return ','.join(map(str, value))
  return f'{value:,}' if isinstance(value, int) and not isinstance(value, bool) else f'{value:g}'


def hyperparameter_flags() -> dict[str, list[tuple[str, algorithms.Hyperparameter]]]:
  """CLI flag -> [(algorithm, hyper-parameter)] for every algorithm that takes it."""
  flags: dict[str, list] = {}
  for algorithm in algorithms.REGISTRY.values():
    for parameter in algorithm.hyperparameters:
      flags.setdefault(parameter.cli_flag, []).append((algorithm.name, parameter))
  return flags


def _add_hyperparameter_flags(solve) -> None:
  groups = {}
  for flag, takers in hyperparameter_flags().items():
    parameter = takers[0][1]
    names = [name for name, _ in takers]
    family = algorithms.REGISTRY[names[0]].family
    if family not in groups:
      groups[family] = solve.add_argument_group(f'{family} hyper-parameters')
    defaults = {_shown(p.default) for _, p in takers}
    if parameter.kind == 'bool':
      where = f'[{", ".join(names)}]'
    elif len(defaults) == 1:
      where = f'[{", ".join(names)}; default {defaults.pop()}]'
    else:
      where = '[' + '; '.join(f'{name} {_shown(p.default)}' for name, p in takers) + ']'
    options = dict(dest=parameter.name, default=argparse.SUPPRESS, help=f'{parameter.help} {where}')
    if parameter.negated:
      groups[family].add_argument(flag, action='store_false', **options)
    elif parameter.kind == 'bool':
      groups[family].add_argument(flag, action=argparse.BooleanOptionalAction, **options)
    else:
      metavar = {'layers': 'W,W', 'batch': 'N|all', 'int': 'N'}.get(parameter.kind, 'X')
      groups[family].add_argument(flag, type=_flag_type(parameter), metavar=metavar, **options)


def build_parser() -> argparse.ArgumentParser:
  parser = _Parser(prog='jaxcfr', description='Solve imperfect-information games with CFR.')
  parser.add_argument('--version', action='version', version=f'jaxcfr {_version()}')
  commands = parser.add_subparsers(dest='command', required=True)

  games = commands.add_parser('games', help='list the built-in games with their sizes')
  _add_output_options(games, quiet=False)

  solve = commands.add_parser('solve', help='solve a game and report exploitability')
  solve.add_argument('game', help="game spec, e.g. leduc, 'leduc(suit_isomorphism=True)', openspiel:NAME")
  solve.add_argument(
    '--algorithm',
    default=algorithms.DEFAULT,
    choices=list(algorithms.REGISTRY),
    help=f'the solver (default {algorithms.DEFAULT}: Discounted CFR)',
  )
  budget = solve.add_argument_group('budget and evaluation')
  budget.add_argument(
    '--iterations',
    type=_positive_int,
    help=f'total iterations (default {DEFAULT_ITERATIONS} without --seconds)',
  )
  budget.add_argument('--seconds', type=_positive_float, help='budget of solving seconds (default: none)')
  budget.add_argument(
    '--eval-every', type=_positive_int, metavar='K', help='exact exploitability every K iterations '
    '(default: about 10 points per decade; deep-cfr: every tenth of the budget)',
  )  # fmt: skip
  budget.add_argument(
    '--eval-every-seconds',
    type=_positive_float,
    metavar='S',
    help='exact exploitability every S solve seconds',
  )
  budget.add_argument('--seed', type=int, default=0, help='PRNG seed of sampled solvers (default 0)')
  budget.add_argument('--dtype', default='float32', choices=('float32', 'float64'), help='default float32')
  budget.add_argument(
    '--devices', type=_positive_int, default=1, help='devices to split sampled MCCFR batches over (default 1)'
  )
  budget.add_argument(
    '--max-histories', type=_positive_int, default=50_000_000, help='refuse larger games (default 50,000,000)'
  )
  _add_hyperparameter_flags(solve)
  out = solve.add_argument_group('outputs')
  out.add_argument('--plot', metavar='PNG', help='write exploitability against iterations and seconds')
  out.add_argument(
    '--policy-out', metavar='PATH', help='write the average policy (the blueprint): .json, or compact .npz'
  )
  _add_output_options(out)
  saves = solve.add_argument_group('checkpoints')
  saves.add_argument('--checkpoint', metavar='DIR', help='save the solver state to DIR (orbax) as it runs')
  saves.add_argument(
    '--checkpoint-every',
    type=_positive_int,
    metavar='N',
    help='save every N iterations (default: 10 saves a run)',
  )
  saves.add_argument(
    '--checkpoint-seconds', type=_positive_float, metavar='S', help='also save every S seconds (default: off)'
  )
  saves.add_argument(
    '--keep-checkpoints', type=_positive_int, metavar='K', help=f'keep the last K (default {DEFAULT_KEEP})'
  )
  saves.add_argument('--resume', action='store_true', help='continue from the newest checkpoint in DIR')

  evaluate = commands.add_parser('evaluate', help='exploitability, NashConv and value of a saved policy')
  evaluate.add_argument('game', help='the game the policy was made for')
  evaluate.add_argument('--policy', required=True, metavar='PATH', help='a policy file (.json or .npz)')
  evaluate.add_argument(
    '--dtype', choices=('float32', 'float64'), help='evaluation dtype (default: the one it was solved in)'
  )
  evaluate.add_argument('--max-histories', type=_positive_int, default=50_000_000, help=argparse.SUPPRESS)
  _add_output_options(evaluate)

  try:  # the hold'em abstraction tools ship beside jaxcfr; jaxcfr itself never needs them
    from abstractions import cli as abstract_cli  # noqa: PLC0415
  except ImportError:
    pass
  else:
    abstract_cli.add_parser(commands)
  return parser


def _add_output_options(parser, quiet: bool = True) -> None:
  parser.add_argument('--json', metavar='PATH', help='write the result as JSON (- for stdout)')
  parser.add_argument('--force', action='store_true', help='replace outputs that an earlier jaxcfr run wrote')
  if quiet:
    parser.add_argument('--quiet', action='store_true', help='no progress output')
    parser.add_argument('--verbose', action='store_true', help="show the libraries' own log messages")
    parser.add_argument(
      '--no-cache',
      action='store_true',
      help=f'do not use the persistent compilation cache ({_cache_dir()}; ${CACHE_ENV} moves it)',
    )


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
    if args.command == 'abstract':
      return _abstract(args)
    _start_jax(args)
    return _evaluate_command(args) if args.command == 'evaluate' else _solve(args)
  except (UsageError, outputs.OutputError) as error:
    print(f'jaxcfr: error: {error}', file=sys.stderr)
    return 2
  except KeyboardInterrupt:
    print('jaxcfr: interrupted', file=sys.stderr)
    return 130


def _games(args) -> int:
  from jaxcfr.games import REGISTRY  # noqa: PLC0415

  outputs.check_file(args.json, '--json', force=args.force, suffixes=('.json',))
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
    outputs.write_json(args.json, {'games': rows}, force=args.force)
  if args.json != '-':
    print(f'{"game":<18}{"histories":>12}{"infosets":>10}  description')
    for row in rows:
      print(f'{row["name"]:<18}{row["num_histories"]:>12,}{row["num_infosets"]:>10,}  {row["description"]}')
    print(
      '\nParameters follow OpenSpiel syntax, e.g. leduc(suit_isomorphism=True); sizes are for the defaults.'
    )
    print('Any OpenSpiel game: openspiel:GAME_STRING (needs `pip install "jaxcfr[openspiel]"`).')
  return 0


def _cache_dir() -> str:
  base = os.environ.get('XDG_CACHE_HOME') or os.path.join(os.path.expanduser('~'), '.cache')
  return os.environ.get(CACHE_ENV) or os.path.join(base, 'jaxcfr', 'jax')


def _start_jax(args) -> None:
  """Host devices, float64, the persistent compilation cache and quiet logs, before JAX starts."""
  flags = os.environ.get('XLA_FLAGS', '')
  devices = getattr(args, 'devices', 1)
  if devices > 1 and 'xla_force_host_platform_device_count' not in flags:
    # On a CPU, N host devices run N traversal shards on N threads (cores); other backends ignore
    # this. It takes effect if no JAX backend has started yet (importing jax starts none).
    os.environ['XLA_FLAGS'] = f'{flags} --xla_force_host_platform_device_count={devices}'.strip()
  import jax  # noqa: PLC0415 (keep `jaxcfr --help` fast)

  from jaxcfr import checkpoints  # noqa: PLC0415

  checkpoints.set_verbose(args.verbose)
  if args.dtype == 'float64':  # evaluate's default dtype is decided when the policy is read
    jax.config.update('jax_enable_x64', True)
  if not args.no_cache and os.environ.get(NO_CACHE_ENV, '') in ('', '0'):
    directory = _cache_dir()
    try:
      os.makedirs(directory, exist_ok=True)
    except OSError:
      return  # an unwritable cache costs speed, not the run
    jax.config.update('jax_compilation_cache_dir', directory)
    jax.config.update('jax_persistent_cache_min_compile_time_secs', 0.0)
    jax.config.update('jax_persistent_cache_min_entry_size_bytes', 0)


def _solve(args) -> int:
  from jaxcfr import training  # noqa: PLC0415

  algorithm = algorithms.REGISTRY[args.algorithm]
  given = _given_hyperparameters(args, algorithm)
  if args.iterations is None and args.seconds is None:
    args.iterations = DEFAULT_ITERATIONS
  if args.eval_every and args.eval_every_seconds:
    raise UsageError('give --eval-every or --eval-every-seconds, not both')
  if not args.checkpoint:
    for flag in ('resume', 'checkpoint_every', 'checkpoint_seconds', 'keep_checkpoints'):
      if getattr(args, flag):
        raise UsageError(f'--{flag.replace("_", "-")} needs --checkpoint DIR')
  outputs.check_file(args.json, '--json', force=args.force, suffixes=('.json',))
  outputs.check_file(args.plot, '--plot', force=args.force, suffixes=('.png',))
  outputs.check_file(args.policy_out, '--policy-out', force=args.force, suffixes=('.json', '.npz'))
  log = sys.stderr if args.json == '-' else sys.stdout
  import jaxcfr  # noqa: PLC0415
  from jaxcfr import checkpoints  # noqa: PLC0415

  keep = args.keep_checkpoints or DEFAULT_KEEP
  try:
    if args.checkpoint:
      training.open_checkpoints(args.checkpoint, keep, args.resume)
    solver = algorithm.make(devices=args.devices, **given)
    game_spec = jaxcfr.load_game(args.game)
    game, compile_seconds = _compile(args, game_spec, log)
    bar = _ProgressBar(args)
    result = training.train(
      game,
      solver,
      key=args.seed,
      iterations=args.iterations,
      seconds=args.seconds,
      eval_every=args.eval_every,
      eval_every_seconds=args.eval_every_seconds,
      checkpoint_dir=args.checkpoint,
      checkpoint_every=args.checkpoint_every,
      checkpoint_seconds=args.checkpoint_seconds,
      keep_checkpoints=keep,
      resume=args.resume,
      identity={'devices': args.devices},
      on_progress=bar.update,
      log=lambda message: print(message, file=log),
    )
    bar.close()
  except (jaxcfr.GameError, checkpoints.CheckpointError, ValueError) as error:
    raise UsageError(str(error)) from None
  report = _report(args, game, solver, result, compile_seconds)
  done, seconds = result.iterations, result.seconds
  print(
    f'{args.algorithm}: {done:,} iterations in {seconds:.3f} s ({1000 * seconds / max(done, 1):.3f} '
    f'ms/iteration{_sampling_text(report, seconds)})\nexploitability {result.exploitability:.6g} '
    f'(NashConv {result.nash_conv:.6g}), game value {result.values[0]:.6f} for player 0; '
    f'one exact evaluation takes {1000 * result.evaluation_seconds:.2f} ms',
    file=log,
  )
  return _write_outputs(args, report, log, lambda path: _save_policy(path, args, game, result, report))


def _given_hyperparameters(args, algorithm) -> dict:
  """The hyper-parameter flags on the command line; one that `algorithm` does not take is an error."""
  given = {}
  for flag, takers in hyperparameter_flags().items():
    name = takers[0][1].name
    if name not in vars(args):
      continue
    parameter = algorithm.parameter(name)
    if parameter is None or parameter.cli_flag != flag:
      names = ', '.join(taker for taker, _ in takers)
      raise UsageError(f'{flag} does not apply to {algorithm.name} (it is for {names})')
    try:
      given[name] = parameter.check(getattr(args, name), algorithm.name)
    except ValueError as error:
      raise UsageError(f'{flag}: {error}') from None
  return given


def _report(args, game, solver, result, compile_seconds) -> dict:
  import jax  # noqa: PLC0415

  import jaxcfr  # noqa: PLC0415
  from jaxcfr import training  # noqa: PLC0415

  report = {
    'game': game.name,
    'algorithm': args.algorithm,
    'hyperparameters': training.jsonable(solver.hyperparameters),
    'iterations': result.iterations,
    'seconds': result.seconds,
    'compile_seconds': compile_seconds,
    'jit_seconds': result.jit_seconds,
    'evaluation_seconds': result.evaluation_seconds,
    **_result_fields(game, result.nash_conv, result.values),
    'devices': args.devices,
    'backend': jax.default_backend(),
    'dtype': args.dtype,
    'seed': args.seed,
    'version': jaxcfr.__version__,
    'checkpoint': os.path.abspath(args.checkpoint) if args.checkpoint else None,
    'curve': result.curve,
  }
  family = algorithms.REGISTRY[args.algorithm].family
  if family == algorithms.DEEP:
    from jaxcfr import deep_cfr  # noqa: PLC0415

    state = result.state
    loss, size, seen = jax.device_get(
      (
        state.advantage_loss,
        [deep_cfr.reservoir_size(b) for b in state.advantage_buffers],
        [b.seen for b in state.advantage_buffers],
      )
    )
    report.update(
      policy_seconds=result.policy_seconds,
      advantage_loss=[float(x) for x in loss],
      memory_size=[int(x) for x in size],
      memory_seen=[int(x) for x in seen],
    )
  if family != algorithms.FULL_WIDTH:
    per_player = solver.hyperparameters['batch_size' if family == algorithms.SAMPLED else 'traversals']
    report['batch_size'] = per_player
    report['trajectories'] = result.iterations * per_player * game.num_players
  return report


def _sampling_text(report: dict, seconds: float) -> str:
  if 'trajectories' not in report:
    return ''
  return f', {report["trajectories"]:,} traversals, {report["trajectories"] / max(seconds, 1e-9):,.0f}/s'


def _save_policy(path, args, game, result, report) -> None:
  from jaxcfr import policies  # noqa: PLC0415

  metadata = {k: report[k] for k in ('game', 'algorithm', 'hyperparameters', 'iterations')}
  metadata.update({k: report[k] for k in ('exploitability', 'nash_conv', 'game_value', 'dtype', 'version')})
  policies.save(
    path, game, result.policy, force=args.force, game_fingerprint=game.info.fingerprint, **metadata
  )


def _write_outputs(args, report: dict, log, save_policy=None) -> int:
  """Writes the requested files. A write that fails now (the disk filled, the directory went)
  prints the result so it is not lost, then one message: exit status 2."""
  try:
    if save_policy is not None and args.policy_out:
      save_policy(args.policy_out)
      print(f'policy written to {args.policy_out}', file=log)
    if getattr(args, 'plot', None):
      _plot(args.plot, report, force=args.force)
      print(f'plot written to {args.plot}', file=log)
    if args.json:
      outputs.write_json(args.json, report, force=args.force)
      if args.json != '-':
        print(f'JSON written to {args.json}', file=log)
  except outputs.OutputError:
    if args.json != '-':
      print(json.dumps(report, indent=2))
    raise
  return 0


def _abstract(args) -> int:
  from abstractions import AbstractionError  # noqa: PLC0415
  from abstractions import cli as abstract_cli  # noqa: PLC0415

  try:
    return abstract_cli.run(args)
  except AbstractionError as error:
    raise UsageError(str(error)) from None


def _result_fields(game, nash_conv, values) -> dict:
  return {
    'exploitability': float(nash_conv) / game.num_players,
    'nash_conv': float(nash_conv),
    'game_value': float(values[0]),
    'values': [float(v) for v in values],
    'num_players': game.num_players,
    'num_histories': game.num_histories,
    'num_infosets': game.num_infosets,
  }


def _compile(args, game_spec, log):
  import jax.numpy as jnp  # noqa: PLC0415

  from jaxcfr import compiler, progress  # noqa: PLC0415

  start, bars = time.perf_counter(), []

  def report(depth: int, histories: int) -> None:  # shown once compiling takes more than a second
    if not bars and time.perf_counter() - start > 1.0:
      bars.append(progress.Progress(desc='compiling', unit='histories', quiet=args.quiet))
    if bars:
      bars[0].update(histories - bars[0].count)
      bars[0].set_postfix_str(f'depth {depth + 1}')

  try:
    game, compile_seconds = compiler.timed_compile(
      game_spec, dtype=jnp.dtype(args.dtype), max_histories=args.max_histories, progress=report
    )
  finally:
    for bar in bars:
      bar.close()
  print(
    f'{game.name}: {game.num_histories:,} histories, {game.num_infosets:,} infosets, '
    f'{game.num_players} players; compiled in {compile_seconds:.2f} s',
    file=log,
  )
  return game, compile_seconds


def _evaluate_command(args) -> int:
  outputs.check_file(args.json, '--json', force=args.force, suffixes=('.json',))
  log = sys.stderr if args.json == '-' else sys.stdout
  import jax  # noqa: PLC0415
  import jax.numpy as jnp  # noqa: PLC0415

  import jaxcfr  # noqa: PLC0415
  from jaxcfr import backend, training  # noqa: PLC0415

  try:
    blueprint = jaxcfr.load_policy(args.policy)
    game_spec = jaxcfr.load_game(args.game)
    if args.dtype is None:
      recorded = blueprint.metadata.get('dtype')
      args.dtype = recorded if recorded in ('float32', 'float64') else 'float64'
      jax.config.update('jax_enable_x64', args.dtype == 'float64')
    game, compile_seconds = _compile(args, game_spec, log)
    policy = jnp.asarray(blueprint.policy_for(game), game.dtype)
  except jaxcfr.GameError as error:
    raise UsageError(str(error)) from None
  evaluate = backend.jit(training.evaluate_profile).lower(policy, game).compile()
  nash_conv, values = jax.device_get(evaluate(policy, game))
  report = {
    'game': game.name,
    'policy': os.path.abspath(args.policy),
    **_result_fields(game, nash_conv, values),
    'compile_seconds': compile_seconds,
    'evaluation_seconds': training.median_seconds(evaluate, policy, game),
    'dtype': args.dtype,
    'policy_metadata': {k: v for k, v in blueprint.metadata.items() if k not in ('format', 'format_version')},
    'version': jaxcfr.__version__,
  }
  print(
    f'exploitability {report["exploitability"]:.6g} (NashConv {report["nash_conv"]:.6g}), '
    f'game value {report["game_value"]:.6f} for player 0',
    file=log,
  )
  return _write_outputs(args, report, log)


class _ProgressBar:
  """The solve's progress (one rule for every command: see `jaxcfr.progress`)."""

  def __init__(self, args):
    self._args = args
    self._deep = algorithms.REGISTRY[args.algorithm].family == algorithms.DEEP
    self._bar = None

  def update(self, report) -> None:
    from jaxcfr import progress  # noqa: PLC0415

    if self._bar is None:  # a resumed run starts where its checkpoint was
      args = self._args
      self._bar = progress.Progress(args.iterations, args.algorithm, 'it', args.quiet, initial=report.start)
    parts = []
    if self._deep:
      import jax  # noqa: PLC0415

      from jaxcfr import deep_cfr  # noqa: PLC0415

      buffers = report.state.advantage_buffers
      size, loss = jax.device_get(
        ([deep_cfr.reservoir_size(b) for b in buffers], report.state.advantage_loss)
      )
      parts.append(f'memory {min(size) / buffers[0].infoset.shape[-1]:.0%}')
      parts.append('loss ' + ','.join(f'{x:.3g}' for x in loss))
    if report.curve:
      parts.append(f'exploitability {report.curve[-1]["exploitability"]:.3g}')
    self._bar.set_postfix_str(' '.join(parts))
    self._bar.update(report.iteration - self._bar.count)

  def close(self) -> None:
    if self._bar is not None:
      self._bar.close()


def _plot(path: str, result: dict, force: bool = False) -> None:
  import matplotlib  # noqa: PLC0415

  matplotlib.use('Agg')
  import matplotlib.pyplot as plt  # noqa: PLC0415

  curve = [p for p in result['curve'] if p['exploitability'] > 0]
  figure, (by_iteration, by_second) = plt.subplots(1, 2, figsize=(10, 4))
  label = f'{result["algorithm"]} ({result["dtype"]})'
  exploitability = [p['exploitability'] for p in curve]
  for axes, key, name in ((by_iteration, 'iteration', 'iterations'), (by_second, 'seconds', 'solve seconds')):
    x = [max(p[key], 1e-6) for p in curve]
    axes.loglog(x, exploitability, label=label)
    axes.set_xlabel(name)
    axes.set_ylabel('exploitability')
    _log_ticks(axes.xaxis, x)
    _log_ticks(axes.yaxis, exploitability)
    axes.grid(True, which='both', alpha=0.3)
    axes.legend()
  figure.suptitle(f'{result["game"]}: final exploitability {result["exploitability"]:.3g}')
  figure.tight_layout()
  try:
    outputs.write_png(path, figure, force=force)
  finally:
    plt.close(figure)


def _log_ticks(axis, values) -> None:
  """Labelled ticks on a log axis however narrow its range: 1, 2, 5 per decade, or every
  digit when the data spans less than a decade."""
  import matplotlib.ticker as ticker  # noqa: PLC0415

  if not values:
    return
  span = max(values) / max(min(values), 1e-300)
  subs = (1.0,) if span > 1e4 else (1.0, 2.0, 5.0) if span > 10 else tuple(float(s) for s in range(1, 10))
  axis.set_major_locator(ticker.LogLocator(base=10, subs=subs))
  axis.set_major_formatter(ticker.FuncFormatter(lambda value, _: f'{value:.3g}'))
  axis.set_minor_formatter(ticker.NullFormatter())


if __name__ == '__main__':
  sys.exit(main())
