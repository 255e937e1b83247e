"""The `jaxcfr` command line (contract in the README).

    jaxcfr games [--json PATH|-]
    jaxcfr solve GAME [--algorithm A] [--iterations N] [--seconds S] [--eval-every K]
                      [--seed S] [--dtype float32|float64] [--devices N] [--simultaneous]
                      [--alpha A --beta B --gamma G] [--json PATH|-] [--plot PNG]
                      [--policy-out PATH.json|PATH.npz]
                      [--checkpoint DIR [--checkpoint-every N] [--checkpoint-seconds S]
                       [--keep-checkpoints K] [--resume]]
    jaxcfr evaluate GAME --policy PATH [--dtype D] [--json PATH|-]
    jaxcfr abstract [--profile default|small] [--buckets 169,200,200,200] --out DIR  (see abstractions/)

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

FULL_WIDTH = ('cfr', 'cfr+', 'lcfr', 'dcfr', 'pcfr+')
SAMPLED = ('es-mccfr', 'os-mccfr')
DEEP = ('deep-cfr', 'sd-cfr')
ALGORITHM_NAMES = FULL_WIDTH + SAMPLED + DEEP
DEFAULT_ALGORITHM = 'dcfr'
DEFAULT_ITERATIONS = 1000
PROGRESS_SECONDS = 10.0  # longest run between progress-bar updates


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


def _nonnegative_int(text: str) -> int:
  try:
    value = int(text)
  except ValueError:
    raise argparse.ArgumentTypeError(f'expected a non-negative integer, got {text!r}') from None
  if value < 0:
    raise argparse.ArgumentTypeError(f'expected a non-negative integer, got {value}')
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


def _batch_size(text: str) -> int | str:
  return text if text == 'all' else _positive_int(text)


def _layers(text: str) -> tuple[int, ...]:
  try:
    layers = tuple(int(part) for part in text.split(','))
  except ValueError:
    raise argparse.ArgumentTypeError(f'expected comma-separated layer widths, got {text!r}') from None
  if not layers or min(layers) <= 0:
    raise argparse.ArgumentTypeError(f'expected positive layer widths, got {text!r}')
  return layers


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
  solve.add_argument(
    '--eval-every-seconds',
    type=_positive_float,
    metavar='S',
    help='exact exploitability every S solve seconds (deep-cfr/sd-cfr default: a tenth of the budget)',
  )
  solve.add_argument('--seed', type=int, default=0, help='PRNG seed (full-width solvers are deterministic)')
  solve.add_argument('--dtype', default='float32', choices=('float32', 'float64'))
  solve.add_argument(
    '--devices',
    type=_positive_int,
    default=1,
    help='devices to split MCCFR batches over (on a CPU, one per core helps; full-width: 1)',
  )
  solve.add_argument(
    '--simultaneous', action='store_true', help='simultaneous instead of alternating updates'
  )
  solve.add_argument('--alpha', type=_finite_float, default=1.5, help='DCFR positive-regret discount (1.5)')
  solve.add_argument('--beta', type=_finite_float, default=0.0, help='DCFR negative-regret discount (0)')
  solve.add_argument('--gamma', type=_finite_float, default=2.0, help='DCFR averaging power (2)')
  sampled = solve.add_argument_group('sampled MCCFR (es-mccfr, os-mccfr)')
  sampled.add_argument(
    '--batch-size', type=_positive_int, default=1024, help='traversals per player per iteration'
  )
  sampled.add_argument('--exploration', type=_finite_float, default=0.6, help='os-mccfr exploration (0.6)')
  sampled.add_argument(
    '--linear-until',
    type=_nonnegative_int,
    default=10**9,
    metavar='N',
    help='linear weighting (Pluribus discounting) until iteration N; 0 turns it off (default: always)',
  )
  sampled.add_argument(
    '--discount-interval', type=_positive_int, default=1, metavar='N', help='discount every N'
  )
  sampled.add_argument(
    '--prune-threshold', type=_finite_float, help='es-mccfr: prune actions with regret below this'
  )
  sampled.add_argument(
    '--prune-probability', type=_finite_float, default=0.95, help='share of pruned traversals'
  )
  sampled.add_argument(
    '--prune-after', type=_nonnegative_int, default=0, metavar='N', help='no pruning before N'
  )
  sampled.add_argument('--regret-floor', type=_finite_float, help='regrets never fall below this')
  deep = solve.add_argument_group('Deep CFR (deep-cfr, sd-cfr); defaults in jaxcfr.deep_cfr.DEFAULTS')
  deep.add_argument(
    '--traversals', type=_positive_int, metavar='N', help='traversals per player per iteration (2048)'
  )
  deep.add_argument('--advantage-layers', type=_layers, metavar='W,W', help='hidden widths (64,64)')
  deep.add_argument('--advantage-steps', type=_positive_int, metavar='N', help='Adam steps each time (100)')
  deep.add_argument(
    '--advantage-batch-size',
    type=_batch_size,
    metavar='N|all',
    help="minibatch size, or 'all': the whole reservoir each step (default)",
  )
  deep.add_argument(
    '--memory', type=_positive_int, metavar='N', help='advantage reservoir per player (4,000,000)'
  )
  deep.add_argument(
    '--reinitialize',
    action=argparse.BooleanOptionalAction,
    help='train advantage networks from scratch each iteration, as in the paper (default: warm start)',
  )
  deep.add_argument('--strategy-layers', type=_layers, metavar='W,W', help='deep-cfr: hidden widths (64,64)')
  deep.add_argument('--strategy-steps', type=_positive_int, metavar='N', help='deep-cfr: Adam steps (2000)')
  deep.add_argument(
    '--strategy-batch-size', type=_batch_size, metavar='N|all', help="deep-cfr: minibatch size or 'all'"
  )
  deep.add_argument(
    '--strategy-memory',
    type=_positive_int,
    metavar='N',
    help='deep-cfr: strategy reservoir per player (4,000,000)',
  )
  deep.add_argument('--learning-rate', type=_positive_float, metavar='R', help='Adam learning rate (0.001)')
  solve.add_argument('--json', metavar='PATH', help='write the result as JSON (- for stdout)')
  solve.add_argument('--plot', metavar='PNG', help='write exploitability against iterations and seconds')
  solve.add_argument(
    '--policy-out',
    metavar='PATH',
    help='write the average policy (the blueprint) keyed by information state: .json, or compact .npz',
  )
  solve.add_argument('--checkpoint', metavar='DIR', help='save the solver state to DIR (orbax) as it runs')
  solve.add_argument(
    '--checkpoint-every',
    type=_positive_int,
    metavar='N',
    help='save every N iterations (default: 10 saves per run)',
  )
  solve.add_argument(
    '--checkpoint-seconds', type=_positive_float, metavar='S', help='also save every S seconds'
  )
  solve.add_argument(
    '--keep-checkpoints', type=_positive_int, default=3, metavar='K', help='keep the last K (3)'
  )
  solve.add_argument(
    '--resume', action='store_true', help='continue from the newest checkpoint in --checkpoint DIR'
  )
  solve.add_argument(
    '--max-histories',
    type=_positive_int,
    default=50_000_000,
    help='refuse games with more histories than this',
  )
  solve.add_argument('--quiet', action='store_true', help='no progress bar')

  evaluate = commands.add_parser('evaluate', help='exploitability, NashConv and value of a saved policy')
  evaluate.add_argument('game', help='the game the policy was made for')
  evaluate.add_argument('--policy', required=True, metavar='PATH', help='a policy file (.json or .npz)')
  evaluate.add_argument(
    '--dtype',
    choices=('float32', 'float64'),
    help='evaluation dtype (default: the one the policy was solved in)',
  )
  evaluate.add_argument('--json', metavar='PATH', help='write the result as JSON (- for stdout)')
  evaluate.add_argument('--max-histories', type=_positive_int, default=50_000_000, help=argparse.SUPPRESS)
  evaluate.add_argument('--quiet', action='store_true', help='no progress output')

  try:  # the hold'em abstraction tools ship beside jaxcfr; jaxcfr itself never needs them
    from abstractions import cli as abstract_cli  # noqa: PLC0415
  except ImportError:
    pass
  else:
    abstract_cli.add_parser(commands)
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
    if args.command == 'evaluate':
      return _evaluate_command(args)
    if args.command == 'abstract':
      return _abstract(args)
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


def _eval_schedule(every: int | None):
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
  sampled, deep = args.algorithm in SAMPLED, args.algorithm in DEEP
  if args.devices != 1 and not sampled:
    raise UsageError(f'{args.algorithm} runs on one device (MCCFR splits over --devices); got {args.devices}')
  if args.simultaneous and args.algorithm not in FULL_WIDTH:
    raise UsageError(f'{args.algorithm} alternates traversers; --simultaneous is for full-width solvers')
  if args.eval_every and args.eval_every_seconds:
    raise UsageError('give --eval-every or --eval-every-seconds, not both')
  _check_option_groups(args)
  if args.resume and not args.checkpoint:
    raise UsageError('--resume needs --checkpoint DIR')
  _check_writable(args.json, '--json')
  _check_writable(args.plot, '--plot')
  _check_writable(args.policy_out, '--policy-out')
  if args.plot and not args.plot.lower().endswith('.png'):
    raise UsageError(f'--plot writes a PNG file; got {args.plot!r}')
  if args.policy_out and not args.policy_out.lower().endswith(('.json', '.npz')):
    raise UsageError(f'--policy-out writes a .json or .npz file; got {args.policy_out!r}')
  log = sys.stderr if args.json == '-' else sys.stdout

  jax, jnp = _import_jax(args.dtype, devices=args.devices)
  import jaxcfr  # noqa: PLC0415
  from jaxcfr import backend, checkpoints, deep_cfr, mccfr, solvers  # noqa: PLC0415

  checkpointer = None
  if args.checkpoint:
    try:
      checkpointer = checkpoints.Checkpointer(args.checkpoint, keep=args.keep_checkpoints)
      checkpointer.check_writable()
      existing = checkpointer.steps()
    except checkpoints.CheckpointError as error:
      raise UsageError(str(error)) from None
    if existing and not args.resume:
      raise UsageError(
        f'{args.checkpoint!r} already holds checkpoints (newest: iteration {existing[-1]}); '
        'pass --resume to continue that run, or choose another directory'
      )
  try:
    game_spec = jaxcfr.load_game(args.game)
    if sampled:
      hyperparameters = _sampled_hyperparameters(args)
      solver = mccfr.ALGORITHMS[args.algorithm](devices=args.devices, **hyperparameters)
      module, init = mccfr, lambda g: solver.init(g, jax.random.key(args.seed))
      average_policy = mccfr.average_policy
    elif deep:
      options = _deep_hyperparameters(args)
      solver = deep_cfr.ALGORITHMS[args.algorithm](**options)
      hyperparameters = {k: list(v) if isinstance(v, tuple) else v for k, v in solver.hyperparameters.items()}
      module, init = deep_cfr, lambda g: solver.init(g, jax.random.key(args.seed))
      average_policy = solver.average_policy
    else:
      hyperparameters = {'alternating': not args.simultaneous}
      if args.algorithm == 'dcfr':
        hyperparameters.update(alpha=args.alpha, beta=args.beta, gamma=args.gamma)
      solver = solvers.ALGORITHMS[args.algorithm](**hyperparameters)
      module, init = solvers, solver.init
      average_policy = solvers.average_policy
  except (jaxcfr.GameError, ValueError) as error:
    raise UsageError(str(error)) from None
  game, compile_seconds = _compile(args, game_spec, log)

  run_chunk = backend.jit(lambda state, g, n: module.run(solver, state, g, n))
  # Producing the policy counts as solving (Deep CFR trains its strategy networks here); judging it does not.
  make_policy = backend.jit(average_policy)
  jit_start = time.perf_counter()
  try:
    state = init(game)
  except ValueError as error:
    raise UsageError(str(error)) from None
  run_chunk = run_chunk.lower(state, game, jnp.asarray(1, jnp.int32)).compile()
  make_policy = make_policy.lower(state, game).compile()
  jit_seconds = time.perf_counter() - jit_start
  start = time.perf_counter()
  policy = jax.block_until_ready(make_policy(state, game))
  policy_seconds_once = time.perf_counter() - start
  jit_start = time.perf_counter()
  evaluate = backend.jit(_evaluate).lower(policy, game).compile()
  jit_seconds += time.perf_counter() - jit_start
  evaluation_seconds = _time_evaluation(jax, evaluate, policy, game)

  identity = {
    'game': game.name,
    'game_fingerprint': game.info.fingerprint,
    'game_digest': checkpoints.game_digest(game),
    'algorithm': args.algorithm,
    'hyperparameters': hyperparameters,
    'dtype': args.dtype,
    'seed': args.seed,
    'devices': args.devices,
  }
  done, seconds, curve = 0, 0.0, []
  if checkpointer is not None and existing:
    try:
      state, saved = checkpointer.restore(state, identity)
    except checkpoints.CheckpointError as error:
      raise UsageError(str(error)) from None
    done, seconds, curve = saved['iteration'], saved['seconds'], saved['curve']
    print(f'resumed from {args.checkpoint} at iteration {done:,} ({seconds:.2f} solve seconds)', file=log)
  elif args.resume:
    print(f'no checkpoint in {args.checkpoint} yet; starting from iteration 0', file=log)

  def save(state, done, seconds, curve):
    progress = {'iteration': done, 'seconds': seconds, 'curve': curve}
    try:
      checkpointer.save(done, state, identity, progress, jaxcfr.__version__)
    except checkpoints.CheckpointError as error:
      raise UsageError(str(error)) from None

  every = args.checkpoint_every
  if checkpointer is not None and every is None and args.checkpoint_seconds is None:
    if args.iterations is not None:
      every = max(1, math.ceil(args.iterations / 10))
    else:
      args.checkpoint_seconds = 60.0
  eval_seconds = args.eval_every_seconds
  if deep and args.eval_every is None and eval_seconds is None:  # each policy costs a network training
    if args.seconds is not None:
      eval_seconds = args.seconds / 10
    else:
      args.eval_every = max(1, math.ceil(args.iterations / 10))
  schedule = _eval_schedule(args.eval_every)
  next_eval = next(schedule)
  while next_eval <= done:
    next_eval = next(schedule)
  if eval_seconds is not None:
    next_eval, next_eval_time = None, (seconds // eval_seconds + 1) * eval_seconds
  next_save = (done // every + 1) * every if every else None
  last_save_time, saved_at = time.perf_counter(), done
  per_iteration, evaluated = None, None
  # Deep CFR's final policy is one more network training: the budget keeps room for it.
  reserve = policy_seconds_once if deep else 0.0
  policy_seconds = 0.0
  bar = _progress_bar(args, done)

  def produce_and_evaluate(state):
    nonlocal seconds, policy_seconds, reserve
    start = time.perf_counter()
    policy = jax.block_until_ready(make_policy(state, game))
    elapsed = time.perf_counter() - start
    seconds += elapsed
    policy_seconds += elapsed
    if deep:
      reserve = elapsed
    return policy, jax.device_get(evaluate(policy, game))

  try:
    while not _finished(args, done, seconds + reserve, per_iteration):
      limits = [t - done for t in (next_eval, args.iterations, next_save) if t is not None]
      steps = min(limits) if limits else 1
      if per_iteration is not None:
        room = [PROGRESS_SECONDS]
        if args.seconds is not None:
          room.append(args.seconds - seconds - reserve)
        if eval_seconds is not None:
          room.append(next_eval_time - seconds)
        steps = max(1, min(steps, int(min(room) / per_iteration)))
      start = time.perf_counter()
      state = jax.block_until_ready(run_chunk(state, game, jnp.asarray(steps, jnp.int32)))
      elapsed = time.perf_counter() - start
      seconds += elapsed
      done += steps
      per_iteration = elapsed / steps
      if eval_seconds is not None:
        due_eval = seconds >= next_eval_time - 0.5 * per_iteration
      else:
        due_eval = done >= next_eval
      if due_eval or _finished(args, done, seconds + reserve, per_iteration):
        policy, evaluated = produce_and_evaluate(state)  # the last one is the final result
        curve.append(
          {'iteration': done, 'seconds': seconds, 'exploitability': float(evaluated[0]) / game.num_players}
        )
        if eval_seconds is not None:
          next_eval_time = (seconds // eval_seconds + 1) * eval_seconds
        else:
          while next_eval <= done:
            next_eval = next(schedule)
      if bar is not None:
        bar.set_postfix_str(_progress_text(deep, state, curve, jax))
        bar.update(steps)
      due = next_save is not None and done >= next_save
      overdue = (
        args.checkpoint_seconds is not None
        and time.perf_counter() - last_save_time >= args.checkpoint_seconds
      )
      if checkpointer is not None and (due or overdue):
        save(state, done, seconds, curve)
        last_save_time, saved_at = time.perf_counter(), done
        if every:
          next_save = (done // every + 1) * every
  except KeyboardInterrupt:
    if checkpointer is not None and done > saved_at:
      save(state, done, seconds, curve)
      print(f'\ninterrupted; checkpoint saved at iteration {done:,}', file=sys.stderr)
    raise
  finally:
    if bar is not None:
      bar.close()
  if checkpointer is not None:
    if done > saved_at or not checkpointer.steps():
      save(state, done, seconds, curve)
    checkpointer.close()

  if evaluated is None:  # resumed at or past the total: nothing ran, evaluate what was restored
    policy, evaluated = produce_and_evaluate(state)
    if not curve or curve[-1]['iteration'] != done:
      curve.append(
        {'iteration': done, 'seconds': seconds, 'exploitability': float(evaluated[0]) / game.num_players}
      )
  nash_conv, values = evaluated
  result = {
    'game': game.name,
    'algorithm': args.algorithm,
    'hyperparameters': hyperparameters,
    'iterations': done,
    'seconds': seconds,
    'compile_seconds': compile_seconds,
    'jit_seconds': jit_seconds,
    'evaluation_seconds': evaluation_seconds,
    **_result_fields(game, nash_conv, values),
    'devices': args.devices,
    'backend': jax.default_backend(),
    'dtype': args.dtype,
    'seed': args.seed,
    'version': jaxcfr.__version__,
    'checkpoint': os.path.abspath(args.checkpoint) if args.checkpoint else None,
    'curve': curve,
  }
  if deep:
    stats = jax.device_get(
      (
        state.advantage_loss,
        [deep_cfr.reservoir_size(b) for b in state.advantage_buffers],
        [b.seen for b in state.advantage_buffers],
      )
    )
    result.update(
      policy_seconds=policy_seconds,
      advantage_loss=[float(x) for x in stats[0]],
      memory_size=[int(x) for x in stats[1]],
      memory_seen=[int(x) for x in stats[2]],
    )
  sampling = ''
  if sampled or deep:
    per_player = args.batch_size if sampled else solver.hyperparameters['traversals']
    result['batch_size'] = per_player
    result['trajectories'] = done * per_player * game.num_players
    sampling = (
      f', {result["trajectories"]:,} traversals, {result["trajectories"] / max(seconds, 1e-9):,.0f}/s'
    )
  print(
    f'{args.algorithm}: {done:,} iterations in {seconds:.3f} s '
    f'({1000 * seconds / max(done, 1):.3f} ms/iteration{sampling})\n'
    f'exploitability {result["exploitability"]:.6g} (NashConv {result["nash_conv"]:.6g}), '
    f'game value {result["game_value"]:.6f} for player 0; one exact evaluation takes '
    f'{1000 * evaluation_seconds:.2f} ms',
    file=log,
  )
  if args.policy_out:
    from jaxcfr import policies  # noqa: PLC0415

    policies.save(
      args.policy_out,
      game,
      policy,
      game=game.name,
      algorithm=args.algorithm,
      hyperparameters=hyperparameters,
      iterations=done,
      exploitability=result['exploitability'],
      nash_conv=result['nash_conv'],
      game_value=result['game_value'],
      dtype=args.dtype,
      game_fingerprint=game.info.fingerprint,
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


def _abstract(args) -> int:
  from abstractions import AbstractionError  # noqa: PLC0415
  from abstractions import cli as abstract_cli  # noqa: PLC0415

  try:
    return abstract_cli.run(args)
  except AbstractionError as error:
    raise UsageError(str(error)) from None


def _check_option_groups(args) -> None:
  """Options of one algorithm family given to another are errors, not silently ignored."""
  deep_options = [name for name in _DEEP_OPTIONS if getattr(args, name) is not None]
  if deep_options and args.algorithm not in DEEP:
    flag = '--' + deep_options[0].replace('_', '-')
    raise UsageError(f'{flag} is a Deep CFR option (deep-cfr, sd-cfr), not for {args.algorithm}')
  strategy = [name for name in deep_options if name.startswith('strategy_')]
  if strategy and args.algorithm == 'sd-cfr':
    flag = '--' + strategy[0].replace('_', '-')
    raise UsageError(f'{flag}: sd-cfr has no strategy network')


_DEEP_OPTIONS = {
  'traversals': 'traversals',
  'advantage_layers': 'advantage_layers',
  'advantage_steps': 'advantage_steps',
  'advantage_batch_size': 'advantage_batch_size',
  'memory': 'advantage_capacity',
  'reinitialize': 'reinitialize',
  'strategy_layers': 'strategy_layers',
  'strategy_steps': 'strategy_steps',
  'strategy_batch_size': 'strategy_batch_size',
  'strategy_memory': 'strategy_capacity',
  'learning_rate': 'learning_rate',
}


def _deep_hyperparameters(args) -> dict:
  """The Deep CFR options given on the command line (`deep_cfr.DEFAULTS` fill the rest);
  a batch size of `all` is None: the whole reservoir."""
  given = {name: getattr(args, option) for option, name in _DEEP_OPTIONS.items()}
  return {name: None if value == 'all' else value for name, value in given.items() if value is not None}


def _progress_text(deep: bool, state, curve, jax) -> str:
  parts = []
  if deep:
    from jaxcfr import deep_cfr  # noqa: PLC0415

    buffers = state.advantage_buffers
    size, loss = jax.device_get(([deep_cfr.reservoir_size(b) for b in buffers], state.advantage_loss))
    capacity = buffers[0].infoset.shape[-1]
    parts.append(f'memory {min(size) / capacity:.0%}')
    parts.append('loss ' + ','.join(f'{x:.3g}' for x in loss))
  if curve:
    parts.append(f'exploitability {curve[-1]["exploitability"]:.3g}')
  return ' '.join(parts)


def _sampled_hyperparameters(args) -> dict:
  hyperparameters = {
    'batch_size': args.batch_size,
    'linear_until': args.linear_until,
    'discount_interval': args.discount_interval,
    'prune_threshold': args.prune_threshold,
    'prune_probability': args.prune_probability,
    'prune_after': args.prune_after,
    'regret_floor': args.regret_floor,
  }
  if args.algorithm == 'os-mccfr':
    hyperparameters['exploration'] = args.exploration
  return hyperparameters


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


def _finished(args, done: int, seconds: float, per_iteration: float | None) -> bool:
  if args.iterations is not None and done >= args.iterations:
    return True
  if args.seconds is None:
    return False
  margin = 0.5 * per_iteration if per_iteration is not None else 0.0
  return seconds >= args.seconds - margin


def _import_jax(dtype: str, devices: int = 1):
  flags = os.environ.get('XLA_FLAGS', '')
  if devices > 1 and 'xla_force_host_platform_device_count' not in flags:
    # On a CPU, N host devices run N traversal shards on N threads (cores); other backends ignore
    # this. It takes effect if no JAX backend has started yet (importing jax starts none).
    os.environ['XLA_FLAGS'] = f'{flags} --xla_force_host_platform_device_count={devices}'.strip()
  import jax  # noqa: PLC0415 (keep `jaxcfr --help` fast)

  if dtype == 'float64':
    jax.config.update('jax_enable_x64', True)
  import jax.numpy as jnp  # noqa: PLC0415

  return jax, jnp


def _compile(args, game_spec, log):
  import jax.numpy as jnp  # noqa: PLC0415

  import jaxcfr  # noqa: PLC0415
  from jaxcfr import compiler  # noqa: PLC0415

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
  return game, compile_seconds


def _time_evaluation(jax, evaluate, state, game) -> float:
  """Median seconds of one exact evaluation (three runs)."""
  times = []
  for _ in range(3):
    start = time.perf_counter()
    jax.block_until_ready(evaluate(state, game))
    times.append(time.perf_counter() - start)
  return statistics.median(times)


def _evaluate_command(args) -> int:
  _check_writable(args.json, '--json')
  log = sys.stderr if args.json == '-' else sys.stdout
  from jaxcfr import games, policies  # noqa: PLC0415

  try:
    blueprint = policies.load_policy(args.policy)
    game_spec = games.load_game(args.game)
  except games.GameError as error:
    raise UsageError(str(error)) from None
  if args.dtype is None:
    recorded = blueprint.metadata.get('dtype')
    args.dtype = recorded if recorded in ('float32', 'float64') else 'float64'
  jax, jnp = _import_jax(args.dtype)
  import jaxcfr  # noqa: PLC0415
  from jaxcfr import backend  # noqa: PLC0415

  game, compile_seconds = _compile(args, game_spec, log)
  try:
    policy = blueprint.policy_for(game)
  except jaxcfr.GameError as error:
    raise UsageError(f'{args.policy}: {error}') from None
  policy = jnp.asarray(policy, game.dtype)
  evaluate = backend.jit(_evaluate).lower(policy, game).compile()
  nash_conv, values = jax.device_get(evaluate(policy, game))
  evaluation_seconds = _time_evaluation(jax, evaluate, policy, game)
  result = {
    'game': game.name,
    'policy': os.path.abspath(args.policy),
    **_result_fields(game, nash_conv, values),
    'compile_seconds': compile_seconds,
    'evaluation_seconds': evaluation_seconds,
    'dtype': args.dtype,
    'policy_metadata': {k: v for k, v in blueprint.metadata.items() if k not in ('format', 'format_version')},
    'version': jaxcfr.__version__,
  }
  print(
    f'exploitability {result["exploitability"]:.6g} (NashConv {result["nash_conv"]:.6g}), '
    f'game value {result["game_value"]:.6f} for player 0',
    file=log,
  )
  if args.json:
    _emit_json(args.json, result)
  return 0


def _evaluate(policy, game):
  from jaxcfr import evaluation  # noqa: PLC0415

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


def _progress_bar(args, done: int):
  if args.quiet:
    return None
  from tqdm import tqdm  # noqa: PLC0415

  return tqdm(
    total=args.iterations,
    initial=done,
    desc=args.algorithm,
    unit='it',
    file=sys.stderr,
    disable=None,
    leave=False,
  )


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
