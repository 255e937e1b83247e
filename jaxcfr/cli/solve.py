"""`jaxcfr games`, `jaxcfr solve` and `jaxcfr evaluate`: the built-in games, solving a game, and
measuring a saved policy (thin faces over `jaxcfr.train`, `jaxcfr.game_cache` and
`jaxcfr.training.evaluate_policy`).

    jaxcfr games [--json PATH|-]
    jaxcfr solve GAME [--algorithm A] [--iterations N] [--seconds S] [hyper-parameter flags] ...
    jaxcfr evaluate GAME --policy PATH [--dtype D] [--json PATH|-]

The hyper-parameter flags, their help and their validation come from the algorithm registry.
Imports nothing heavy until it runs.
"""

from __future__ import annotations

import argparse
import os
import time

from jaxcfr import algorithms, outputs
from jaxcfr.cli import common
from jaxcfr.version import __version__

DEFAULT_ITERATIONS = 1000
DEFAULT_KEEP = 3


def add_parsers(commands) -> None:
  """Adds `games`, `solve` and `evaluate` to the `jaxcfr` parser's subcommands."""
  games = commands.add_parser('games', help='list the built-in games with their sizes')
  common.add_output_options(games, quiet=False)
  _add_solve(commands)
  evaluate = commands.add_parser('evaluate', help='exploitability, NashConv and value of a saved policy')
  evaluate.add_argument('game', help='the game the policy was made for')
  evaluate.add_argument('--policy', required=True, metavar='PATH', help='a policy file (.json or .npz)')
  evaluate.add_argument(
    '--dtype', choices=('float32', 'float64'), help='evaluation dtype (default: the one it was solved in)'
  )
  evaluate.add_argument(
    '--max-histories', type=common.positive_count, default=50_000_000, help=argparse.SUPPRESS
  )
  common.add_output_options(evaluate)


def _add_solve(commands) -> None:
  solve = commands.add_parser('solve', help='solve a game and report exploitability')
  solve.add_argument('game', help="game spec, e.g. leduc, 'leduc(suit_isomorphism=True)', openspiel:NAME")
  solve.add_argument(
    '--algorithm',
    default=algorithms.DEFAULT,
    choices=list(algorithms.REGISTRY),
    help=f'the solver (default {algorithms.DEFAULT}: Discounted CFR)',
  )
  count, seconds = common.positive_count, common.positive_seconds
  budget = solve.add_argument_group('budget and evaluation')
  budget.add_argument(
    '--iterations', type=count, help=f'total iterations (default {DEFAULT_ITERATIONS} without --seconds)'
  )
  budget.add_argument('--seconds', type=seconds, help='budget of solving seconds (default: none)')
  budget.add_argument(
    '--eval-every', type=count, metavar='K', help='exact exploitability every K iterations '
    '(default: about 10 points per decade; deep-cfr: every tenth of the budget)',
  )  # fmt: skip
  budget.add_argument(
    '--eval-every-seconds', type=seconds, metavar='S', help='exact exploitability every S solve seconds'
  )
  budget.add_argument('--seed', type=common.seed, default=0, help='PRNG seed of sampled solvers (default 0)')
  budget.add_argument('--dtype', default='float32', choices=('float32', 'float64'), help='default float32')
  budget.add_argument(
    '--devices', type=count, default=1,
    help="devices to split over: sampled MCCFR batches, or full-width solvers' game and state (default 1)",
  )  # fmt: skip
  budget.add_argument(
    '--max-histories', type=count, default=50_000_000, help='refuse larger games (default 50,000,000)'
  )
  algorithms.add_flags(solve)
  out = solve.add_argument_group('outputs')
  out.add_argument('--plot', metavar='PNG', help='write exploitability against iterations and seconds')
  out.add_argument(
    '--policy-out', metavar='PATH', help='write the average policy (the blueprint): .json, or compact .npz'
  )
  common.add_output_options(out)
  saves = solve.add_argument_group('checkpoints')
  saves.add_argument('--checkpoint', metavar='DIR', help='save the solver state to DIR (orbax) as it runs')
  saves.add_argument(
    '--checkpoint-every', type=count, metavar='N', help='save every N iterations (default: 10 saves a run)'
  )
  saves.add_argument(
    '--checkpoint-seconds', type=seconds, metavar='S', help='also save every S seconds (default: off)'
  )
  saves.add_argument(
    '--keep-checkpoints', type=count, metavar='K', help=f'keep the last K (default {DEFAULT_KEEP})'
  )
  saves.add_argument('--resume', action='store_true', help='continue from the newest checkpoint in DIR')
  common.add_process_options(solve)


def games(args) -> int:
  """Runs `jaxcfr games`: each built-in game's sizes, compiled in float32 (through the game cache)."""
  common.check_json(args)
  from jaxcfr import game_cache, memory  # noqa: PLC0415
  from jaxcfr.games import REGISTRY  # noqa: PLC0415

  rows = []
  for name, entry in REGISTRY.items():
    game = game_cache.load_or_compile(name)[0]
    row = {'name': name, 'aliases': list(entry.aliases), 'description': entry.description}
    row.update(num_histories=game.num_histories, num_infosets=game.num_infosets, **memory.accounting(game))
    rows.append(row)
  if args.json:
    outputs.write_json(args.json, {'games': rows}, force=args.force)
  if args.json != '-':
    print(f'{"game":<18}{"histories":>12}{"infosets":>10}{"memory":>10}{"bytes/history":>15}  description')
    for row in rows:
      print(
        f'{row["name"]:<18}{row["num_histories"]:>12,}{row["num_infosets"]:>10,}'
        f'{memory.format_bytes(row["game_bytes"]):>10}{row["bytes_per_history"]:>15.1f}  {row["description"]}'
      )
    print(
      '\nParameters follow OpenSpiel syntax, e.g. leduc(suit_isomorphism=True); sizes are for the defaults;'
      '\nmemory is the compiled game on the device in float32.'
    )
    print('Any OpenSpiel game: openspiel:GAME_STRING (needs `pip install "jaxcfr[openspiel]"`).')
  return 0


def solve(args) -> int:
  """Runs `jaxcfr solve`: checks the input and the outputs, solves, reports and writes."""
  algorithm = algorithms.REGISTRY[args.algorithm]
  given = _check_solve(args, algorithm)
  log = common.log_stream(args)
  import jaxcfr  # noqa: PLC0415
  from jaxcfr import checkpoints, memory, training  # noqa: PLC0415

  keep = args.keep_checkpoints or DEFAULT_KEEP
  with common.bad_input(jaxcfr.GameError, checkpoints.CheckpointError, ValueError):
    if args.checkpoint:
      training.open_checkpoints(args.checkpoint, keep, args.resume)
    solver = algorithm.make(devices=args.devices, **given)
    game, compile_seconds, cache_status = _compile(args, log)
    split = args.devices > 1 and algorithm.family == algorithms.FULL_WIDTH
    solve_game = jaxcfr.shard_game(game, args.devices) if split else game
    with _ProgressBar(args) as bar:
      result = training.train(
        solve_game, solver, key=args.seed, iterations=args.iterations, seconds=args.seconds,
        eval_every=args.eval_every, eval_every_seconds=args.eval_every_seconds,
        checkpoint_dir=args.checkpoint, checkpoint_every=args.checkpoint_every,
        checkpoint_seconds=args.checkpoint_seconds, keep_checkpoints=keep, resume=args.resume,
        identity={'devices': args.devices}, on_progress=bar.update,
        log=lambda message: print(message, file=log),
      )  # fmt: skip
    if split:
      result = result._replace(policy=jaxcfr.unpad_policy(result.policy, solve_game))
  report = _report(args, game, solver, result, compile_seconds, cache_status)
  print(memory.describe(report), file=log)
  done, seconds, sampled = result.iterations, result.seconds, report.get('trajectories')
  rate = f', {sampled:,} traversals, {sampled / max(seconds, 1e-9):,.0f}/s' if sampled else ''
  print(
    f'{args.algorithm}: {done:,} iterations in {seconds:.3f} s ({1000 * seconds / max(done, 1):.3f} '
    f'ms/iteration{rate})\nexploitability {result.exploitability:.6g} '
    f'(NashConv {result.nash_conv:.6g}), game value {result.values[0]:.6f} for player 0; '
    f'one exact evaluation takes {1000 * result.evaluation_seconds:.2f} ms',
    file=log,
  )
  return common.write_outputs(
    args, report, log,
    ('policy', args.policy_out, lambda path: _save_policy(path, args, game, result, report)),
    ('plot', args.plot, lambda path: _plot(path, report, force=args.force)),
  )  # fmt: skip


def _check_solve(args, algorithm) -> dict:
  """`jaxcfr solve`'s input and outputs checked before any work; returns the hyper-parameters given."""
  with common.bad_input(ValueError):
    given = algorithms.given_flags(args, algorithm)
  if args.iterations is None and args.seconds is None:
    args.iterations = DEFAULT_ITERATIONS
  if args.eval_every and args.eval_every_seconds:
    raise common.UsageError('give --eval-every or --eval-every-seconds, not both')
  if not args.checkpoint:
    for flag in ('resume', 'checkpoint_every', 'checkpoint_seconds', 'keep_checkpoints'):
      if getattr(args, flag):
        raise common.UsageError(f'--{flag.replace("_", "-")} needs --checkpoint DIR')
  common.check_json(args)
  outputs.check_file(args.plot, '--plot', force=args.force, suffixes=('.png',))
  outputs.check_file(args.policy_out, '--policy-out', force=args.force, suffixes=('.json', '.npz'))
  return given


def _report(args, game, solver, result, compile_seconds, cache_status) -> dict:
  import jax  # noqa: PLC0415

  from jaxcfr import memory, training  # noqa: PLC0415

  report = training.summary(game, solver, result)
  curve = report.pop('curve')
  report.update(
    compile_seconds=compile_seconds,
    game_cache=cache_status,
    **memory.accounting(game, result.state),
    devices=args.devices,
    backend=jax.default_backend(),
    dtype=args.dtype,
    seed=args.seed,
    checkpoint=os.path.abspath(args.checkpoint) if args.checkpoint else None,
    curve=curve,
  )
  return report


def _save_policy(path, args, game, result, report) -> None:
  from jaxcfr import policies  # noqa: PLC0415

  names = ('game', 'algorithm', 'hyperparameters', 'iterations', 'exploitability', 'nash_conv', 'game_value')
  metadata = {k: report[k] for k in (*names, 'dtype', 'version')}
  policies.save(
    path, game, result.policy, force=args.force, game_fingerprint=game.info.fingerprint, **metadata
  )


def _compile(args, log):
  """`(game, seconds, cache_status)`: the game of `args.game`, from the game cache when it holds
  it (`cache_status` 'hit'), else compiled ('miss'; 'off' with --no-cache or JAXCFR_NO_CACHE=1)."""
  import jax.numpy as jnp  # noqa: PLC0415

  from jaxcfr import game_cache, progress  # noqa: PLC0415

  start, bars = time.perf_counter(), []

  def report(depth: int, histories: int) -> None:  # shown once compiling takes more than a second
    if not bars and time.perf_counter() - start > 1.0:
      bars.append(progress.Progress(desc='compiling', unit='histories', quiet=args.quiet))
    if bars:
      bars[0].update(histories - bars[0].count)
      bars[0].set_postfix_str(f'depth {depth + 1}')

  cache = not args.no_cache and game_cache.enabled()
  try:
    game, compile_seconds, hit = game_cache.load_or_compile(
      args.game,
      dtype=jnp.dtype(args.dtype),
      max_histories=args.max_histories,
      progress=report,
      cache=cache,
      log=lambda message: print(message, file=log),
    )
  finally:
    for bar in bars:
      bar.close()
  how = 'loaded from the game cache' if hit else 'compiled'
  print(
    f'{game.name}: {game.num_histories:,} histories, {game.num_infosets:,} infosets, '
    f'{game.num_players} players; {how} in {compile_seconds:.2f} s',
    file=log,
  )
  return game, compile_seconds, 'hit' if hit else 'miss' if cache else 'off'


def evaluate(args) -> int:
  """Runs `jaxcfr evaluate`: a saved policy's exploitability, NashConv and value in its game."""
  common.check_json(args)
  log = common.log_stream(args)
  import jax  # noqa: PLC0415

  import jaxcfr  # noqa: PLC0415
  from jaxcfr import memory, training  # noqa: PLC0415

  with common.bad_input(jaxcfr.GameError):
    blueprint = jaxcfr.load_policy(args.policy)
    jaxcfr.load_game(args.game)  # a bad spec fails before the dtype is decided
    if args.dtype is None:
      recorded = blueprint.metadata.get('dtype')
      args.dtype = recorded if recorded in ('float32', 'float64') else 'float64'
      if args.dtype == 'float64':
        jax.config.update('jax_enable_x64', True)
    game, compile_seconds, cache_status = _compile(args, log)
    policy = blueprint.policy_for(game)
  report = {
    'game': game.name,
    'policy': os.path.abspath(args.policy),
    **training.evaluate_policy(game, policy),
    'compile_seconds': compile_seconds,
    'game_cache': cache_status,
    **memory.accounting(game),
    'dtype': args.dtype,
    'policy_metadata': {k: v for k, v in blueprint.metadata.items() if k not in ('format', 'format_version')},
    'version': __version__,
  }
  print(
    f'exploitability {report["exploitability"]:.6g} (NashConv {report["nash_conv"]:.6g}), '
    f'game value {report["game_value"]:.6f} for player 0',
    file=log,
  )
  return common.write_outputs(args, report, log)


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
      from jaxcfr import deep_cfr  # noqa: PLC0415

      parts.append(deep_cfr.describe(report.state))
    if report.curve:
      parts.append(f'exploitability {report.curve[-1]["exploitability"]:.3g}')
    self._bar.set_postfix_str(' '.join(parts))
    self._bar.update(report.iteration - self._bar.count)

  def __enter__(self):
    return self

  def __exit__(self, *exception):
    if self._bar is not None:
      self._bar.close()


def _plot(path: str, report: dict, force: bool = False) -> None:
  from jaxcfr import plots  # noqa: PLC0415

  title = f'{report["game"]}: final exploitability {report["exploitability"]:.3g}'
  figure = plots.convergence_figure({f'{report["algorithm"]} ({report["dtype"]})': report['curve']}, title)
  try:
    outputs.write_png(path, figure, force=force)
  finally:
    plots.close(figure)
