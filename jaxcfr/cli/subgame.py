"""`jaxcfr subgame`: solve one hold'em spot from the command line (a thin face over `poker.solve`).

    jaxcfr subgame --board Td9d6hQc3s --pot 200 --stack 900 \\
      --oop-range '66+,A8s+,A5s-A4s,AJo+,KQo,QTs+:0.5' --ip-range 'QQ-22,AQs-A2s,ATo+,K5s+' \\
      --bets '60%,e,a' --raises 2.5x --target 0.5 --json result.json --strategy-out strategy.npz

Imports nothing heavy until it runs.
"""

from __future__ import annotations

import collections
import concurrent.futures
import functools
import json
import sys

from jaxcfr import algorithms, backend, outputs
from jaxcfr.cli import common
from jaxcfr.poker import defaults

HELP = "solve a heads-up no-limit hold'em spot (flop, turn or river) with ranges"
DESCRIPTION = (
  "Solve a heads-up no-limit hold'em spot on the public tree: ranges over hole cards, bet sizes as "
  'postflop solvers write them, exact exploitability in % of the pot. Player OOP acts first. '
  "A saved strategy's grid or explorer: jaxcfr subgame show STRATEGY.npz "
  '(--plot PNG [--node PATH] | --html FILE.html).'
)


def add_parser(commands) -> None:
  """Adds the `subgame` subcommand to the `jaxcfr` parser's subcommands."""
  parser = commands.add_parser('subgame', help=HELP, description=DESCRIPTION)
  spot = parser.add_argument_group('the spot (each required, unless --spots gives many)')
  spot.add_argument('--board', help="3, 4 or 5 cards, e.g. 'Td9d6hQc3s'")
  spot.add_argument('--pot', type=common.positive_count, help='the pot at the start of the street, chips')
  spot.add_argument('--stack', type=common.positive_count, help='the effective stack behind, chips')
  spot.add_argument('--oop-range', help="e.g. '66+,A8s+,A5s-A4s,AJo+,KQo,QTs+:0.5'")
  spot.add_argument('--ip-range', help='the in-position range')
  spot.add_argument(
    '--spots', metavar='FILE',
    help='solve many spots in one process: JSON lines, one spot each (board, pot, stack, oop_range, '
    'ip_range; optional bets, raises, donk, raise_cap, force_all_in, add_all_in, merge, else the flags); '
    'one JSON result line per spot to --json (default stdout) as each finishes',
  )  # fmt: skip
  parser.add_argument(
    '--batch', action='store_true',
    help='with --spots: river spots of one shape solved together, one vmapped call (for GPUs: on a CPU '
    'tracing the batched programs costs more than it saves)',
  )  # fmt: skip
  add_size_options(parser)
  run = add_solve_options(parser)
  run.add_argument('--seconds', type=common.positive_seconds, help='at most this many solving seconds')
  run.add_argument(
    '--no-isomorphism', action='store_true',
    help='solve every turn or river card apart, also where suits are interchangeable (the same results, '
    'more time)',
  )  # fmt: skip
  run.add_argument(
    '--lock', action='append', metavar='NODE=SPEC',
    help="fix the acting player's strategy at a decision (repeatable): NODE a path as --node writes it "
    "('root'; '*' for any dealt card), SPEC a mix 'c:0.7,f:0.3', actions' ranges 'r360:QQ+,AK;c:rest' "
    '(hands no action names stay free) or a saved STRATEGY.npz (its strategy at NODE); the exploitability '
    "is then the locked game's (best responses keep the locks)",
  )  # fmt: skip
  out = parser.add_argument_group('outputs')
  out.add_argument(
    '--strategy-out', metavar='PATH', help='write the full strategy (.npz: per node, hand, action)'
  )
  _add_grid_options(out)
  common.add_output_options(out)


def add_size_options(parser) -> None:
  """The bet-size flags (`jaxcfr subgame` and `jaxcfr report`)."""
  sizes = parser.add_argument_group('bet sizes (the same on every street)')
  sizes.add_argument(
    '--bets', default=defaults.BETS, help=f"first bets (default '{defaults.BETS.replace('%', '%%')}')"
  )
  sizes.add_argument('--raises', default=defaults.RAISES, help=f"raises (default '{defaults.RAISES}')")
  sizes.add_argument(
    '--donk', help="OOP's lead on the turn and river after IP's bet (default: its usual bets)"
  )
  sizes.add_argument(
    '--raise-cap', type=common.positive_count, help='bets plus raises per street (default: the stacks)'
  )
  sizes.add_argument(
    '--force-all-in', type=common.non_negative_number, default=defaults.FORCE_ALL_IN, metavar='F',
    help='a bet leaving at most F times the pot (once called) behind is an all-in (default 0.15)',
  )  # fmt: skip
  sizes.add_argument(
    '--add-all-in', type=common.non_negative_number, default=0.0, metavar='T',
    help="add the all-in where it is at most T times the pot after a call (a raise's increment); "
    "postflop-solver's add_allin_threshold, 1.5 in its example (default 0: off)",
  )  # fmt: skip
  sizes.add_argument(
    '--merge', type=common.non_negative_number, default=0.0, metavar='T',
    help="drop a bet size close to a larger one, postflop-solver's (and PioSOLVER's) merging "
    'threshold, 0.1 in its example (default 0: off)',
  )  # fmt: skip
  sizes.add_argument(
    '--print-tree', action='store_true',
    help="print the betting tree (one decision node a line, as postflop-solver's tree) and stop",
  )  # fmt: skip


def add_solve_options(parser):
  """The solving flags both `jaxcfr subgame` and `jaxcfr report` take; their argument group."""
  run = parser.add_argument_group('solving')
  full_width = algorithms.names(algorithms.FULL_WIDTH)
  run.add_argument(
    '--algorithm',
    default=defaults.ALGORITHM,
    choices=full_width,
    help=f'the solver (default {defaults.ALGORITHM})',
  )
  run.add_argument(
    '--target', type=common.non_negative_number, default=defaults.TARGET_PCT, metavar='PCT',
    help=f'stop at this exploitability, %% of the pot (default {defaults.TARGET_PCT}); 0: run the budget',
  )  # fmt: skip
  run.add_argument(
    '--iterations', type=common.positive_count,
    help=f'at most this many iterations (default {defaults.MAX_ITERATIONS} without --seconds)',
  )  # fmt: skip
  run.add_argument(
    '--eval-every', type=common.positive_count, default=defaults.EVAL_EVERY, metavar='K',
    help=f'exact exploitability every K iterations (default {defaults.EVAL_EVERY})',
  )  # fmt: skip
  run.add_argument('--dtype', default='float32', choices=('float32', 'float64'), help='default float32')
  run.add_argument(
    '--threads', type=common.positive_count, metavar='N',
    help="CPU cores a spot's solve runs on: a flop's turn cards or a turn's river cards split over N "
    'threads (the native solve) or N host devices (the array form); with --spots, the spots solved at '
    'once instead (default: the cores this process may use; a GPU solve ignores it)',
  )  # fmt: skip
  run.add_argument(
    '--max-memory', type=common.non_negative_number, default=defaults.MAX_BYTES / 2**30, metavar='GIB',
    help=f'refuse a spot needing more memory (default {defaults.MAX_BYTES / 2**30:g} GiB; 0: no limit)',
  )  # fmt: skip
  run.add_argument(
    '--compact', action='store_true',
    help="keep each player's regrets and averages over that player's range alone: less memory, "
    'slower iterations (a turn or flop spot that fits --max-memory only so gets it anyway)',
  )  # fmt: skip
  run.add_argument(
    '--compress', action='store_true',
    help='keep the regrets and averages in 16 bits (scaled per action): half the float32 state, about '
    'as many iterations to a target; iterations as fast on a flop, slower on smaller trees',
  )  # fmt: skip
  return run


def _add_grid_options(group) -> None:
  group.add_argument(
    '--plot', metavar='PNG', help="draw the range grid (13 x 13 hand classes by action) of --node's decision"
  )
  group.add_argument(
    '--html',
    metavar='FILE.html',
    help='write a tree explorer: one self-contained page to click through actions and cards, with each '
    "decision's grid and action frequencies",
  )
  group.add_argument(
    '--node', metavar='PATH',
    help="the decision for --plot: actions and cards from the root, e.g. 'b120,c,Qh' (x check, c call, "
    'f fold, bN bet, rN raise, a all-in; default: the root)',
  )  # fmt: skip


def show_parser(parser_class):
  """`jaxcfr subgame show STRATEGY.npz`: the grid (--plot) or the explorer (--html) of a saved strategy;
  `parser_class` is the command line's parser (one error line)."""
  parser = parser_class(
    prog='jaxcfr subgame show',
    description='The range grid or the tree explorer of a strategy `jaxcfr subgame --strategy-out` wrote.',
  )
  parser.add_argument('strategy', metavar='STRATEGY.npz')
  group = parser.add_argument_group('outputs')
  _add_grid_options(group)
  group.add_argument('--force', action='store_true', help='replace a file an earlier jaxcfr run wrote')
  return parser


def show(argv: list[str], parser_class) -> int:
  """Runs `jaxcfr subgame show`: reads the strategy, then draws the grid or writes the explorer."""
  from jaxcfr.poker.subgame import solving  # noqa: PLC0415

  args = show_parser(parser_class).parse_args(argv)
  with common.bad_input(ValueError, OSError):
    if not (args.plot or args.html):
      raise ValueError('jaxcfr subgame show: nothing to do; give --plot PNG or --html FILE.html')
    if args.node and not args.plot:
      raise ValueError('--node names the decision --plot draws; give --plot PNG too')
    outputs.check_file(args.plot, '--plot', force=args.force, suffixes=('.png',))
    outputs.check_file(args.html, '--html', force=args.force, suffixes=('.html',))
    metadata, arrays = solving.load_strategy(args.strategy)
    if args.plot:
      _plot(args, metadata, arrays)
      print(f'grid written to {args.plot}')
  if args.html:
    _html(args, metadata, arrays)
    print(f'explorer written to {args.html}')
  return 0


def _html(args, metadata, arrays) -> None:
  from jaxcfr.poker.subgame import explorer  # noqa: PLC0415

  text = explorer.page(metadata, arrays).encode()
  outputs.write_file(args.html, lambda file: file.write(text), force=args.force, what='--html')


def _plot(args, metadata, arrays) -> None:
  from jaxcfr.poker.subgame import grid  # noqa: PLC0415

  row = grid.find_node(metadata['nodes'], args.node)
  outputs.write_png(args.plot, grid.figure(metadata, arrays, row), force=args.force)


def run(args) -> int:
  """Runs `jaxcfr subgame`: checks the outputs, builds the spot, solves, reports and writes."""
  import jax.numpy as jnp  # noqa: PLC0415

  from jaxcfr import progress  # noqa: PLC0415
  from jaxcfr.poker.subgame import solving  # noqa: PLC0415
  from jaxcfr.training import TrainingError  # noqa: PLC0415

  log = common.log_stream(args)
  if args.spots:
    return _run_spots(args, log)
  if args.batch:
    raise common.UsageError('--batch solves the river spots of --spots FILE together; give --spots')
  missing = [flag for flag in SPOT_FLAGS if getattr(args, flag[2:].replace('-', '_')) is None]
  if missing:
    raise common.UsageError(f'the following arguments are required: {", ".join(missing)} (or --spots FILE)')
  with common.bad_input(ValueError, TrainingError):  # PokerInputError and OutputError are ValueErrors
    common.check_json(args)
    outputs.check_file(args.strategy_out, '--strategy-out', force=args.force, suffixes=('.npz',))
    outputs.check_file(args.plot, '--plot', force=args.force, suffixes=('.png',))
    outputs.check_file(args.html, '--html', force=args.force, suffixes=('.html',))
    if args.node and not args.plot:
      raise ValueError('--node names the decision --plot draws; give --plot PNG too')
    spec = solving.SpotSpec(
      args.board, args.pot, args.stack, (args.oop_range, args.ip_range), args.bets, args.raises, args.donk,
      args.raise_cap, args.force_all_in, args.add_all_in, args.merge,
    )  # fmt: skip
    if args.print_tree:
      from jaxcfr.poker.subgame import tree  # noqa: PLC0415

      print('\n'.join(tree.betting_lines(spec.config())))
      return 0
    arrays = solving.state_arrays(args.algorithm)
    limit = int(args.max_memory * 2**30) or None
    if _natively(args, spec):
      _fits_natively(
        spec, limit, jnp.dtype(args.dtype), solve_threads(args), not args.no_isomorphism,
        functools.partial(
          spec.fit, state_arrays=arrays, compact=args.compact, isomorphism=not args.no_isomorphism
        ),
      )  # fmt: skip
      result = _solve_natively(args, spec)
      report = solving.report(result, spec)
      _print(result, log)
      return common.write_outputs(args, report, log)
    build = functools.partial(
      spec.build, jnp.dtype(args.dtype), limit, arrays, args.compact, compress=args.compress
    )
    game = build(isomorphism=not args.no_isomorphism)
    if args.lock:
      from jaxcfr.poker.subgame import locking  # noqa: PLC0415

      try:
        game = locking.lock(game, locking.rows(game, args.lock))
      except locking.AsymmetricLock:  # the locks tell apart suits the spot merged: solve every card
        game = build(isomorphism=False)
        game = locking.lock(game, locking.rows(game, args.lock))
    if args.plot:  # a --node off the tree fails before the solve
      from jaxcfr.poker.subgame import grid  # noqa: PLC0415

      info = game.tree.info
      decisions = [i for i in info.decisions if i >= 0]
      nodes = [{'line': solving.named_line(game, i), 'actions': info.nodes[i].labels} for i in decisions]
      grid.find_node(nodes, args.node)
    total = args.iterations or (None if args.seconds else defaults.MAX_ITERATIONS)
    with progress.Progress(total=total, desc=f'{args.algorithm}', unit='it', quiet=args.quiet) as bar:

      def show(update):
        bar.update(update.iteration - bar.count)
        if update.curve:
          bar.set_postfix_str(
            f'exploitability {update.curve[-1]["exploitability"] / args.pot * 100:.3f}% pot'
          )

      result = solving.solve(
        game, args.algorithm, target_pct=args.target or None, iterations=args.iterations,
        seconds=args.seconds, eval_every=args.eval_every, dtype=jnp.dtype(args.dtype), on_progress=show,
        compress=args.compress,
      )  # fmt: skip
  report = solving.report(result, spec)
  _print(result, log)
  wanted = args.strategy_out or args.plot or args.html
  strategy = solving.strategy_arrays(result) if wanted else None  # (metadata, arrays), once for all three
  save = lambda path: solving.write_strategy(path, *strategy, force=args.force)  # noqa: E731
  plot = lambda path: _plot(args, *strategy)  # noqa: E731
  page = lambda path: _html(args, *strategy)  # noqa: E731
  files = ('strategy', args.strategy_out, save), ('grid', args.plot, plot), ('explorer', args.html, page)
  return common.write_outputs(args, report, log, *files)


def _natively(args, spec) -> bool:
  """Whether one spot solves natively (`native_spot`): a spot on a CPU with the settings it has, and
  nothing asked of it that needs the array form's strategy (--strategy-out, --plot, --html, --lock)."""
  import jax.numpy as jnp  # noqa: PLC0415

  from jaxcfr.poker.subgame import native_spot  # noqa: PLC0415

  if args.strategy_out or args.plot or args.html or args.lock:
    return False
  if spec.config().street not in native_spot.STREETS:
    return False
  return native_spot.usable(args.algorithm, {}, jnp.dtype(args.dtype), args.seconds, args.compress)


def _fits_natively(spec, limit, dtype, threads, isomorphism, fit, trees=None) -> None:
  """`solving.MemoryLimitError` where the native solve of `spec` would hold more than `limit`: `fit`
  (`SpotSpec.fit` with the other settings) checks the array form's estimate, which is larger and
  quick; only a spot over it has the native solve's own worked out (`native_spot.check_memory`)."""
  from jaxcfr.poker.subgame import native_spot, solving  # noqa: PLC0415

  if limit is None:
    return
  try:
    fit(limit, dtype)
  except solving.MemoryLimitError:
    native_spot.check_memory(spec, limit, dtype, threads, isomorphism, trees)


def _solve_natively(args, spec):
  """`native_spot.solve` of one spot with the command's settings, its root kept for the summary."""
  import jax.numpy as jnp  # noqa: PLC0415

  from jaxcfr.poker.subgame import native_spot  # noqa: PLC0415

  return native_spot.solve(
    spec, args.algorithm, target_pct=args.target or None, iterations=args.iterations,
    eval_every=args.eval_every, dtype=jnp.dtype(args.dtype), root=True, threads=solve_threads(args),
    isomorphism=not args.no_isomorphism,
  )  # fmt: skip


def solve_threads(args) -> int:
  """--threads, else the cores this process may use."""
  if args.threads:
    return args.threads
  return backend.cores()


SPOT_FLAGS = ('--board', '--pot', '--stack', '--oop-range', '--ip-range')
# --spots pads each spot's hands (zero-weight hands the board leaves) to its ranges' hands rounded up
# to a multiple of this (`SpotSpec.study_hands`), so that spots of one tree and ranges on other boards
# share array shapes, and compile their programs once.
SPOTS_HANDS_MULTIPLE = 64
SPOT_KEYS = {
  'board': str, 'pot': int, 'stack': int, 'oop_range': str, 'ip_range': str, 'bets': str, 'raises': str,
  'donk': str, 'raise_cap': int, 'force_all_in': float, 'add_all_in': float, 'merge': float,
}  # fmt: skip


def _spot(line: str, args):
  """The `SpotSpec` of one JSON line; `ValueError` with what is wrong."""
  from jaxcfr.poker.subgame import solving  # noqa: PLC0415

  try:
    item = json.loads(line)
  except json.JSONDecodeError as error:
    raise ValueError(f'not JSON ({error.msg})') from None
  if not isinstance(item, dict):
    raise ValueError('a spot is a JSON object')
  unknown = sorted(set(item) - set(SPOT_KEYS))
  if unknown:
    raise ValueError(f'unknown keys {", ".join(unknown)} (a spot has {", ".join(SPOT_KEYS)})')
  missing = [key for key in (flag[2:].replace('-', '_') for flag in SPOT_FLAGS) if key not in item]
  if missing:
    raise ValueError(f'missing {", ".join(missing)}')
  values = {}
  for key, kind in SPOT_KEYS.items():
    value = item.get(key, getattr(args, key, None))
    if value is not None and key in item:
      if kind is int and not (isinstance(value, int) and not isinstance(value, bool)):
        raise ValueError(f'{key} must be a whole number, got {value!r}')
      if kind is float and not isinstance(value, int | float):
        raise ValueError(f'{key} must be a number, got {value!r}')
      if kind is str and not isinstance(value, str):
        raise ValueError(f'{key} must be a string, got {value!r}')
    values[key] = value
  spec = solving.SpotSpec(
    values['board'], values['pot'], values['stack'], (values['oop_range'], values['ip_range']),
    values['bets'], values['raises'], values['donk'], values['raise_cap'], values['force_all_in'],
    values['add_all_in'], values['merge'],
  )  # fmt: skip
  spec.config()  # the sizes and the board, checked now
  return spec


def _run_spots(args, log) -> int:
  """`--spots FILE`: every line's spot solved in this process, one JSON line each as it finishes (to
  --json, else stdout); a bad line is reported with its number and the rest still solve. Exit status
  2 if any line was bad, else 0."""
  import jax.numpy as jnp  # noqa: PLC0415

  from jaxcfr.poker.subgame import native_spot, solving  # noqa: PLC0415
  from jaxcfr.training import TrainingError  # noqa: PLC0415

  single = [flag for flag in (*SPOT_FLAGS, '--strategy-out', '--plot', '--html', '--node', '--lock')
            if getattr(args, flag[2:].replace('-', '_')) is not None]  # fmt: skip
  if single:
    raise common.UsageError(f'--spots takes each spot from its file; drop {", ".join(single)}')
  try:
    with open(args.spots, encoding='utf-8') as file:
      lines = file.read().splitlines()
  except (OSError, UnicodeDecodeError) as error:
    reason = getattr(error, 'strerror', None) or error
    raise common.UsageError(f'--spots {args.spots!r}: cannot read it ({reason})') from None
  to_stdout = args.json in (None, '-')
  with common.bad_input(ValueError):
    if not to_stdout:
      outputs.check_file(args.json, '--json', force=args.force, suffixes=('.json', '.jsonl'))
  dtype = jnp.dtype(args.dtype)
  results, bad, programs = [], 0, {}  # spots of one shape share their compiled programs
  pending = {}  # river spots by shape (`solving.batch_key`): [(line number, spec, game)]

  def emit(number, spec, result):
    # The producer first: the mark by which --force knows a file of these lines as jaxcfr's.
    report = {'producer': outputs.PRODUCER, 'line': number, **solving.report(result, spec)}
    report.pop('curve')
    results.append((number, json.dumps(report)))
    if to_stdout:
      print(results[-1][1], flush=True)
    if not args.quiet:  # a line a spot is the run's progress
      print(
        f'line {number}: {result.iterations} iterations, exploitability {result.exploitability_pct:.3f}% '
        f'of the pot, EV OOP {result.ev[0]:.2f}, IP {result.ev[1]:.2f}',
        file=log if not to_stdout else sys.stderr,
      )

  def solve_batch(key) -> int:
    """Solves and writes the pending spots of `key`; the count of bad lines (all of them, if the
    batch fails)."""
    numbers, specs, games = zip(*pending.pop(key), strict=True)
    try:
      if len(games) == 1:
        solved = [solving.solve(games[0], **solve_args, dtype=dtype, programs=programs)]
      else:
        solved = solving.solve_many(list(games), **solve_args)
    except (ValueError, TrainingError) as error:
      for number in numbers:
        print(f'jaxcfr: error: --spots {args.spots} line {number}: {error}', file=sys.stderr)
      return len(numbers)
    for number, spec, result in zip(numbers, specs, solved, strict=True):
      emit(number, spec, result)
    return 0

  solve_args = {
    'algorithm': args.algorithm, 'target_pct': args.target or None, 'iterations': args.iterations,
    'eval_every': args.eval_every, 'compress': args.compress,
  }  # fmt: skip
  trees = {}  # the tree of the last spot's sizing, built once for the spots that share it
  # Spots solve natively on a CPU (`native_spot`: one call a spot, the GIL released),
  # on --threads workers; their results are written in the lines' order with the others'.
  natively = functools.partial(
    native_spot.solve, algorithm=args.algorithm, target_pct=solve_args['target_pct'],
    iterations=args.iterations, eval_every=args.eval_every, dtype=dtype, trees=trees,
  )  # fmt: skip
  threads = solve_threads(args)
  # One thread solves in the loop: a worker would wait for the loop's turn with the GIL.
  workers = concurrent.futures.ThreadPoolExecutor(threads) if threads > 1 else None
  queued = collections.deque()  # (line number, spec, future) of the native solves, in order

  def submit(spec) -> concurrent.futures.Future:
    if workers is not None:
      return workers.submit(natively, spec)
    future = concurrent.futures.Future()
    try:
      future.set_result(natively(spec))
    except ValueError as error:
      future.set_exception(error)
    return future

  def drain(keep: int = 0) -> None:
    """Writes the queued native solves' results (all but the last `keep`) in the lines' order."""
    nonlocal bad
    while len(queued) > keep:
      number, spec, future = queued.popleft()
      try:
        emit(number, spec, future.result())
      except ValueError as error:
        bad += 1
        print(f'jaxcfr: error: --spots {args.spots} line {number}: {error}', file=sys.stderr)

  native = not args.batch and native_spot.usable(args.algorithm, {}, dtype, args.seconds, args.compress)
  limit, arrays = int(args.max_memory * 2**30) or None, solving.state_arrays(args.algorithm)
  try:
    for number, line in enumerate(lines, 1):
      if not line.strip():
        continue
      try:
        spec = _spot(line, args)
        if native and spec.config().street in native_spot.STREETS:
          if limit is not None:
            _, counts = solving.shared_tree(spec.config(), trees)
            fit = functools.partial(spec.fit, state_arrays=arrays, compact=args.compact, counts=counts)
            _fits_natively(spec, limit, dtype, 1, True, fit, trees)
          queued.append((number, spec, submit(spec)))
          drain(keep=4 * threads)  # a bounded queue: results written as they come
          continue
        drain()
        if ('nodes', spec.config()) not in trees:
          trees.clear()
        game = spec.build(
          dtype, limit, arrays, args.compact,
          spec.study_hands(SPOTS_HANDS_MULTIPLE), args.compress, trees=trees,
        )  # fmt: skip
        # With --batch, river spots of one shape solve together in one vmapped call (without a time
        # budget, which is each spot's own); the rest as they come.
        key = solving.batch_key(game) if args.batch and args.seconds is None else None
        if key is not None:
          pending.setdefault(key, []).append((number, spec, game))
          if len(pending[key]) == solving.BATCH_SPOTS:
            bad += solve_batch(key)
          continue
        result = solving.solve(game, **solve_args, seconds=args.seconds, dtype=dtype, programs=programs)
      except (ValueError, TrainingError) as error:
        bad += 1
        print(f'jaxcfr: error: --spots {args.spots} line {number}: {error}', file=sys.stderr)
        continue
      emit(number, spec, result)
    drain()
  finally:
    if workers is not None:
      workers.shutdown(cancel_futures=True)  # at once where a spot's error or Ctrl-C ends the loop
  for key in list(pending):
    bad += solve_batch(key)
  results = [text for _, text in sorted(results)]  # the file in the lines' order
  if not to_stdout:
    text = ''.join(f'{line}\n' for line in results).encode()
    outputs.write_file(args.json, lambda file: file.write(text), force=args.force, what='--json')
    print(f'{len(results)} spots written to {args.json}', file=log)
  return 2 if bad else 0


def _locked_note(result) -> str:
  """', in the game with N decisions locked' where the spot has locks, else ''."""
  if getattr(result, 'game', None) is None or result.game.lock is None:  # a native solve has no locks
    return ''
  from jaxcfr.poker.subgame import locking  # noqa: PLC0415

  locked = locking.summary(result.game)['locked']
  where = ', '.join(
    f'{item["node"]} ({item["player"].upper()}, {item["hands"]} hands)' for item in locked[:4]
  )
  more = f' and {len(locked) - 4} more' if len(locked) > 4 else ''
  return f', in the locked game (best responses keep the locks; locked: {where}{more})'


def _print(result, log) -> None:
  from jaxcfr.poker.subgame import solving  # noqa: PLC0415

  ms = 1000 * result.seconds / max(result.iterations, 1)
  print(
    f'{result.algorithm}: {result.iterations:,} iterations in {result.seconds:.3f} s ({ms:.2f} ms/iteration; '
    f'exploitability checks {result.check_seconds:.2f} s; compilation {result.jit_seconds:.1f} s)\n'
    f'exploitability {result.exploitability_pct:.3f}% of the pot ({result.exploitability:.4g} chips)'
    f'{_locked_note(result)}\n'
    f'EV: OOP {result.ev[0]:.2f}, IP {result.ev[1]:.2f} chips; equity: OOP {100 * result.equity[0]:.2f}%, '
    f'IP {100 * result.equity[1]:.2f}%',
    file=log,
  )
  merged = getattr(result, 'isomorphism', None) or solving.merged_cards(getattr(result, 'game', None))
  if merged:
    below = ''
    if 'river_cards' in merged:  # a native flop solve merges the river cards below its turn cards too
      below = f'; below them {merged["river_solved"]} of their {merged["river_cards"]} river cards'
    solved = f'{merged["solved"]} of the {merged["cards"]} {merged["street"]} cards solved'
    print(f'suit isomorphism: {solved}{below}, the others mapped onto them', file=log)
  rows = solving.root_summary(result)
  if rows:
    actions = list(rows[0][2])
    print(f'OOP first decision by hand class ({", ".join(actions)}):', file=log)
    cells = [f'{name:>4} ' + ' '.join(f'{100 * p:3.0f}' for p in mix.values()) for name, _, mix in rows]
    per_line = max(1, 100 // (len(cells[0]) + 3))
    for start in range(0, len(cells), per_line):
      print('  ' + ' | '.join(cells[start : start + per_line]), file=log)
