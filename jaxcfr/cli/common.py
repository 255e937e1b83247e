"""What every `jaxcfr` command shares: argument types, the output options and the output tail, the one
error line with exit status 2, and the search bot's options with the policy specs they go with.

Imports nothing heavy: the parser is built from this module and the command modules alone.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys

from jaxcfr import outputs
from jaxcfr.poker import defaults


class UsageError(Exception):
  """Bad input: printed as one line, exit status 2."""


def fail(error) -> int:
  """Prints `error` as the one line of bad input; returns its exit status, 2."""
  print(f'jaxcfr: error: {error}', file=sys.stderr)
  return 2


@contextlib.contextmanager
def bad_input(*errors: type[BaseException]):
  """Turns the `errors` raised inside (a library's one-line errors) into `UsageError`."""
  try:
    yield
  except errors as error:
    raise UsageError(str(error)) from None


# Argument types: one message for each kind of bad value, 'argument --FLAG: ...' from argparse.


def whole_number(low: int = 1):
  """An argparse type: a whole number at least `low`."""
  need = {0: 'non-negative (a whole number)', 1: 'positive (a positive integer)'}.get(low, f'at least {low}')

  def parse(text: str) -> int:
    try:
      value = int(text)
    except ValueError:
      raise argparse.ArgumentTypeError(f'{text!r} is not a whole number') from None
    if value < low:
      raise argparse.ArgumentTypeError(f'must be {need}, got {text}')
    return value

  return parse


def number(positive: bool = True, unit: str = ''):
  """An argparse type: a finite number, positive (or, with `positive` False, non-negative), of `unit`."""
  need = f'a {"positive" if positive else "non-negative"} number{unit}'

  def parse(text: str) -> float:
    try:
      value = float(text)
    except ValueError:
      raise argparse.ArgumentTypeError(f'{text!r} is not a number') from None
    if not (value > 0 if positive else value >= 0) or value == float('inf'):
      raise argparse.ArgumentTypeError(f'must be {need}, got {text}')
    return value

  return parse


positive_count = whole_number(1)
seed = whole_number(0)
non_negative_number = number(positive=False)
positive_seconds = number(unit=' of seconds')


# Several processes (`jaxcfr.distributed`): the layout, read before JAX starts.


def add_process_options(parser) -> None:
  """--coordinator, --num-processes and --process-id: one run over several processes (hosts)."""
  group = parser.add_argument_group(
    'several processes (jax.distributed; see docs/scaling.md)',
    'one process per host, the same command in each; --devices counts the devices of all of them. '
    'Defaults: JAX_COORDINATOR_ADDRESS, JAXCFR_NUM_PROCESSES, JAXCFR_PROCESS_ID, or what JAX detects '
    'on a cluster (Slurm)',
  )
  group.add_argument(
    '--coordinator', metavar='HOST:PORT', help="process 0's address, which every process dials"
  )
  group.add_argument('--num-processes', type=positive_count, metavar='N', help='the number of processes')
  group.add_argument('--process-id', type=seed, metavar='I', help="this process's index, 0 to N - 1")


# Outputs: checked before any work, written at the end; a failed write keeps the result on stdout.


def add_output_options(parser, quiet: bool = True) -> None:
  """--json and --force; with `quiet`, also --quiet, --verbose and --no-cache."""
  parser.add_argument('--json', metavar='PATH', help='write the result as JSON (- for stdout)')
  parser.add_argument('--force', action='store_true', help='replace outputs that an earlier jaxcfr run wrote')
  if quiet:
    parser.add_argument('--quiet', action='store_true', help='no progress output')
    parser.add_argument('--verbose', action='store_true', help="show the libraries' own log messages")
    parser.add_argument(
      '--no-cache',
      action='store_true',
      help='do not use the persistent compilation cache (see jaxcfr.backend.cache_directory)',
    )


def log_stream(args):
  """Where progress and summaries go: stderr when the JSON result takes stdout (--json -)."""
  return sys.stderr if getattr(args, 'json', None) == '-' else sys.stdout


def check_json(args) -> None:
  """Refuses an unwritable --json (`OutputError`) before any work."""
  outputs.check_file(getattr(args, 'json', None), '--json', force=args.force, suffixes=('.json',))


def write_outputs(args, report: dict, log, *files) -> int:
  """Writes `files`, each `(what, path, write)` with `write(path)` (none where `path` is None), then
  --json; says where each went. A write that fails now (the disk filled, the directory went) prints
  the result so it is not lost, then raises its `OutputError` (one line, exit status 2)."""
  json_path = getattr(args, 'json', None)
  try:
    for what, path, write in files:
      if path:
        write(path)
        print(f'{what} written to {path}', file=log)
    if json_path:
      outputs.write_json(json_path, report, force=args.force)
      if json_path != '-':
        print(f'JSON written to {json_path}', file=log)
  except outputs.OutputError:
    if json_path != '-':
      print(json.dumps(report, indent=2))
    raise
  return 0


# The game: blinds and stack depth.


def blinds(text: str) -> tuple[int, int]:
  """An argparse type: 'SMALL/BIG' in whole chips, 0 < small <= big."""
  small, slash, big = text.partition('/')
  try:
    small, big = int(small), int(big)
  except ValueError:
    raise argparse.ArgumentTypeError(f'{text!r} is not SMALL/BIG in whole chips, e.g. 50/100') from None
  if not slash or not 0 < small <= big:
    raise argparse.ArgumentTypeError(f'need positive blinds with the small at most the big, got {text!r}')
  return small, big


def add_game_options(parser) -> None:
  """--blinds and --stack: the game's blinds and every hand's starting stacks."""
  parser.add_argument(
    '--blinds', type=blinds, default=(defaults.SMALL_BLIND, defaults.BIG_BLIND), metavar='SMALL/BIG',
    help=f'the blinds in chips (default {defaults.SMALL_BLIND}/{defaults.BIG_BLIND})',
  )  # fmt: skip
  parser.add_argument(
    '--stack', type=number(unit=' of big blinds'), default=defaults.STACK_BB, metavar='BB',
    help=f"each player's stack at the start of every hand, in big blinds (default {defaults.STACK_BB:g}); "
    'a blueprint of another depth plays these hands read into its own game',
  )  # fmt: skip
  parser.add_argument(
    '--ante', type=int, default=0, metavar='CHIPS',
    help="each player's ante in chips, posted before the blinds out of the stack (default 0); a "
    'blueprint trained without one plays these hands with the pot short by the antes',
  )  # fmt: skip


def game_rules(args):
  """The game of --blinds, --stack and --ante (`nlhe.NoLimitRules`); `UsageError` with one line where
  no game can start (a stack of at most one big blind, or one that is not a whole number of chips, a
  negative ante, or one that leaves at most a big blind behind)."""
  from abstractions.betting import NoLimitRules  # noqa: PLC0415

  small, big = args.blinds
  chips = args.stack * big
  ante = args.ante
  if args.stack <= 1:
    raise UsageError(f'--stack must be more than one big blind, got {args.stack:g}')
  if abs(chips - round(chips)) > 1e-9:
    raise UsageError(f'--stack {args.stack:g} big blinds of {big} chips is not a whole number of chips')
  if ante < 0 or round(chips) - ante <= big:
    raise UsageError(f'--ante must be 0 or more and leave more than a big blind behind, got {ante}')
  return NoLimitRules(small, big, int(round(chips)), ante)


# The search bot: its options, declared and checked once, and policy specs.


def search_streets(text: str) -> tuple[int, ...]:
  """An argparse type: streets among 'flop', 'turn' and 'river', comma-separated, as street numbers."""
  names = {'flop': 1, 'turn': 2, 'river': 3}
  parts = [part.strip() for part in text.split(',')]
  if not parts or any(part not in names for part in parts):
    raise argparse.ArgumentTypeError(
      f"{text!r}: the search bot re-solves on 'flop', 'turn' and 'river', comma-separated (e.g. 'turn,river')"
    )
  return tuple(sorted({names[part] for part in parts}))


def warm_starts(text: str) -> tuple[int, int]:
  """An argparse type: 'K' (flop and river) or 'FLOP,RIVER', whole numbers >= 0."""
  parts = text.split(',')
  if len(parts) in (1, 2) and all(part.strip().isdigit() for part in parts):
    counts = tuple(int(part) for part in parts)
    return counts * 2 if len(counts) == 1 else counts
  raise argparse.ArgumentTypeError(f"{text!r}: give K or FLOP,RIVER, whole numbers >= 0 (e.g. '1,0')")


def river_card_count(text: str) -> int:
  """An argparse type: a whole number of river cards, 1..48."""
  value = whole_number(1)(text)
  if value > 48:
    raise argparse.ArgumentTypeError(f'a turn leaves 48 river cards, got {text}')
  return value


SEARCH_OPTIONS = (
  'think_seconds',
  'flop_seconds',
  'search_iterations',
  'search_streets',
  'search_warm_start',
  'search_gadget',
  'search_turn',
  'search_river_cards',
)


def add_search_options(parser) -> None:
  """The search bot's options (a search: policy, or `jaxcfr play --search`); all default to None,
  the bot's own defaults."""
  parser.add_argument(
    '--think-seconds', type=positive_seconds, metavar='S',
    help=f"the search bot's seconds per decision, the depth-limited rounds' leaf values included "
    f'(default {defaults.THINK_SECONDS:g})',
  )  # fmt: skip
  parser.add_argument(
    '--flop-seconds', type=positive_seconds, metavar='S',
    help="the search bot's seconds per flop decision, where they differ from --think-seconds (the "
    'depth-limited flop spends most of a short budget on its leaf values)',
  )  # fmt: skip
  parser.add_argument(
    '--search-iterations', type=positive_count, metavar='N',
    help='instead of --think-seconds: exactly N solver iterations per re-solve (deterministic play)',
  )  # fmt: skip
  parser.add_argument(
    '--search-streets', type=search_streets, metavar='STREETS',
    help="where the search bot re-solves: any of 'flop' (depth-limited), 'turn', 'river', comma-separated "
    "(default 'flop,turn,river')",
  )  # fmt: skip
  parser.add_argument(
    '--search-warm-start', type=warm_starts, metavar='K|FLOP,RIVER',
    help="iterations of the blueprint's strategy that the search bot's flop and river re-solves start "
    f"from (default {','.join(map(str, defaults.WARM_START))}: from uniform regrets)",
  )  # fmt: skip
  parser.add_argument(
    '--search-gadget', choices=(*defaults.GADGETS, defaults.NO_GADGET),
    help="how the river, the flop and a depth-limited turn are re-solved: each of the opponent's hands may "
    'take its best-response value against the blueprint instead; maxmargin-prior (the default) plays '
    "half the time for the tracked range, with no guarantee; 'none': unsafe re-solving",
  )  # fmt: skip
  parser.add_argument(
    '--search-turn', choices=defaults.TURN_SEARCHES,
    help="a turn re-solve: its betting round alone with the blueprint's continuations at its leaves "
    "('depth-limited', the default), or to the end of the hand ('full')",
  )  # fmt: skip
  parser.add_argument(
    '--search-river-cards', type=river_card_count, metavar='N',
    help='a depth-limited turn: its leaves on N of the 48 river cards, drawn from the seed and the public '
    f'state (default {defaults.RIVER_CARDS}; 48: every one)',
  )  # fmt: skip


def check_search_options(args, searching: bool, requirement: str) -> None:
  """The search options mean something only to a search bot: `UsageError` '{flag} {requirement}' when
  one is given and nothing searches (`searching` False), rather than ignoring it; --think-seconds (or
  --flop-seconds) and --search-iterations are two budgets, one at a time."""
  for seconds in ('think_seconds', 'flop_seconds'):
    if getattr(args, seconds) is not None and args.search_iterations is not None:
      flag = '--' + seconds.replace('_', '-')
      raise UsageError(f'{flag} and --search-iterations are two budgets: give one')
  if searching:
    if args.search_river_cards is not None and args.search_turn == 'full':
      raise UsageError('--search-river-cards applies to a depth-limited turn, not --search-turn full')
    return
  for name in SEARCH_OPTIONS:
    if getattr(args, name) is not None:
      raise UsageError(f'--{name.replace("_", "-")} {requirement}')


def resolve_policy(spec: str, args, *, seed: int = 0, tables: str | None = None):
  """The policy that `spec` names (`jaxcfr.poker.bots.resolve_policy`: a baseline, a policy file, or
  search: and either), the search bot with the search options of `args`, its sampling `seed` and a
  blueprint's abstraction `tables`; `UsageError` with one line when it cannot be made."""
  from jaxcfr.poker import bots  # noqa: PLC0415

  with bad_input(ValueError):  # PokerInputError and BlueprintError are ValueErrors
    return bots.resolve_policy(
      spec, args.think_seconds, args.search_streets, args.search_iterations, args.search_warm_start,
      args.search_gadget, None if args.search_turn is None else args.search_turn == 'depth-limited',
      seed=seed, tables=tables, river_cards=args.search_river_cards, flop_seconds=args.flop_seconds,
    )  # fmt: skip


def table_policy(spec: str, args, *, seed: int = 0):
  """`resolve_policy` for a bot at a real table, which keeps the table's clock for a search bot at the
  top of the spec only: the depth-aware bot over a search (depth:search:...) is refused in one line."""
  if spec.startswith('depth:') and 'search:' in spec:
    raise UsageError(
      f'--bot {spec}: at a table the search bot keeps the clock only as search:BLUEPRINT; the depth-aware '
      'bot takes blueprints here (depth:A.npz,B.npz)'
    )
  return resolve_policy(spec, args, seed=seed)


def is_search(spec: str) -> bool:
  """Whether a policy spec is the search bot (alone or inside the depth-aware bot, depth:search:...)."""
  return spec.removeprefix('depth:').startswith('search:')


def plain_path(path: str) -> str:
  """`path` as a policy spec that names that file, even where it reads as a baseline's name."""
  named = path in defaults.BASELINES or is_search(path) or path.startswith('depth:')
  return os.path.join(os.curdir, path) if named else path
