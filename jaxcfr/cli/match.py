"""`jaxcfr match`: two policies play heads-up no-limit hold'em (a thin face over `poker.match.play_match`).

    jaxcfr match always-pot equity --hands 20000 --seed 0 --json result.json
    jaxcfr match blueprint.npz random --hands 100000 --no-duplicate

A and B are baseline names (`poker.baselines.REGISTRY`) or policy files. Imports nothing heavy until
it runs.
"""

from __future__ import annotations

import argparse
import sys

from jaxcfr import outputs
from jaxcfr.poker import defaults


def whole_number(low: int):
  """An argparse type: a whole number at least `low` (also used by `lbr_cli`)."""

  def parse(text: str) -> int:
    try:
      value = int(text)
    except ValueError:
      raise argparse.ArgumentTypeError(f'{text!r} is not a whole number') from None
    if value < low:
      raise argparse.ArgumentTypeError(f'must be at least {low}, got {text}')
    return value

  return parse


def positive(kind, what: str = 'positive'):
  """An argparse type: a positive finite `kind` (int or float); 'must be {what}, got ...' otherwise."""

  def parse(text: str):
    try:
      value = kind(text)
    except ValueError:
      raise argparse.ArgumentTypeError(f'{text!r} is not a number') from None
    if not value > 0 or value == float('inf'):
      raise argparse.ArgumentTypeError(f'must be {what}, got {text}')
    return value

  return parse


positive_seconds = positive(float, 'a positive number of seconds')


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


def check_search_options(args, *specs: str) -> None:
  """--think-seconds, --search-iterations, --search-streets, --search-warm-start and --search-gadget mean
  something only to a search: policy: ValueError (one line, exit status 2) when one is given and no
  policy is one, rather than ignoring it; --think-seconds and --search-iterations are two budgets, one
  at a time."""
  if args.think_seconds is not None and args.search_iterations is not None:
    raise ValueError('--think-seconds and --search-iterations are two budgets: give one')
  if any(spec.startswith('search:') for spec in specs):
    return
  for flag, value in (
    ('--think-seconds', args.think_seconds),
    ('--search-iterations', args.search_iterations),
    ('--search-streets', args.search_streets),
    ('--search-warm-start', args.search_warm_start),
    ('--search-gadget', args.search_gadget),
  ):
    if value is not None:
      raise ValueError(f'{flag} applies to a search: policy only (e.g. search:bp.npz)')


def add_search_options(parser) -> None:
  """--think-seconds, --search-iterations, --search-streets, --search-warm-start and --search-gadget of
  search: policies (also used by `lbr_cli`)."""
  parser.add_argument(
    '--think-seconds', type=positive_seconds, default=None, metavar='S',
    help=f'seconds per decision of a search: policy (on the flop: of solving, after the leaf values; '
    f'default {defaults.THINK_SECONDS:g})',
  )  # fmt: skip
  parser.add_argument(
    '--search-iterations', type=whole_number(1), default=None, metavar='N',
    help='instead of --think-seconds: exactly N solver iterations per re-solve (deterministic play)',
  )  # fmt: skip
  parser.add_argument(
    '--search-streets', type=search_streets, default=None, metavar='STREETS',
    help="where a search: policy re-solves: 'turn,river' (default), or any of 'flop' (depth-limited), "
    "'turn', 'river', comma-separated",
  )  # fmt: skip
  parser.add_argument(
    '--search-warm-start', type=warm_starts, default=None, metavar='K|FLOP,RIVER',
    help="iterations of the blueprint's strategy that flop and river re-solves start from (default "
    f"{','.join(map(str, defaults.WARM_START))}: from uniform regrets)",
  )  # fmt: skip
  parser.add_argument(
    '--search-gadget', choices=defaults.GADGETS, default=None,
    help="re-solve the river safely: each of the opponent's hands may take its best-response value "
    "against the blueprint instead (default: unsafe re-solving)",
  )  # fmt: skip


def search_settings(args) -> tuple:
  """The search options of parsed `args` in `bots.resolve_policy`'s order, after the spec."""
  when_and_where = (args.think_seconds, args.search_streets, args.search_iterations)
  return (*when_and_where, args.search_warm_start, args.search_gadget)


def _rate(per_second: float) -> str:
  """A rate as people read it: whole numbers from 10 up, two significant digits below (a search bot
  plays about 1 hand a second)."""
  return f'{per_second:,.0f}' if per_second >= 10 else f'{per_second:.2g}'


def add_parser(commands, add_output_options) -> None:
  """Adds the `match` subcommand to the `jaxcfr` parser's subcommands."""
  parser = commands.add_parser(
    'match',
    help="play two hold'em policies against each other (mbb/hand with a 95%% CI)",
    description="Heads-up no-limit hold'em (blinds 50/100, stacks 20,000): policy A against policy B, "
    "in duplicate by default (each deal played twice with the seats swapped). Prints A's result in "
    'milli-big-blinds per hand with a normal 95% confidence interval.',
  )
  names = ', '.join(defaults.BASELINES)
  parser.add_argument(
    'policy_a', metavar='A', help=f'a baseline ({names}), a policy file, or search:FILE (the search bot)'
  )
  parser.add_argument('policy_b', metavar='B', help='the opponent, the same way')
  parser.add_argument(
    '--hands', type=whole_number(1), default=defaults.MATCH_HANDS,
    help=f'hands to play (default {defaults.MATCH_HANDS:,}; in duplicate rounded up to whole deal pairs)',
  )  # fmt: skip
  parser.add_argument('--seed', type=whole_number(0), default=0, help='cards and sampling seed (default 0)')
  add_search_options(parser)
  parser.add_argument(
    '--no-duplicate', action='store_true', help='deal every hand once, seats alternating (more variance)'
  )
  parser.add_argument(
    '--batch',
    type=whole_number(2),
    default=defaults.MATCH_BATCH,
    help=f'hands played at once (default {defaults.MATCH_BATCH})',
  )
  add_output_options(parser)


def run(args) -> int:
  """Runs `jaxcfr match`; one line and exit status 2 on bad input."""
  from jaxcfr import progress  # noqa: PLC0415
  from jaxcfr.poker import bots  # noqa: PLC0415
  from jaxcfr.poker.eval import match  # noqa: PLC0415

  log = sys.stderr if args.json == '-' else sys.stdout
  try:
    outputs.check_file(args.json, '--json', force=args.force, suffixes=('.json',))
    check_search_options(args, args.policy_a, args.policy_b)
    search = search_settings(args)
    policy_a = bots.resolve_policy(args.policy_a, *search)
    policy_b = bots.resolve_policy(args.policy_b, *search)
    duplicate = not args.no_duplicate
    if args.hands < (4 if duplicate else 2):
      raise ValueError(f'--hands must be at least {4 if duplicate else 2} for a confidence interval')
    total = args.hands + args.hands % 2 if duplicate else args.hands
    with progress.Progress(total=total, desc='match', unit='hands', quiet=args.quiet) as bar:
      result = match.play_match(
        policy_a, policy_b, args.hands, seed=args.seed, duplicate=duplicate, batch=args.batch,
        on_progress=lambda done: bar.update(done - bar.count),
      )  # fmt: skip
  except ValueError as error:  # OutputError and PokerInputError are ValueErrors
    print(f'jaxcfr: error: {error}', file=sys.stderr)
    return 2
  _print(result, log)
  if args.json:
    try:
      outputs.write_json(args.json, result.to_json(), force=args.force)
    except outputs.OutputError as error:
      print(f'jaxcfr: error: {error}', file=sys.stderr)
      return 2
    if args.json != '-':
      print(f'JSON written to {args.json}', file=log)
  return 0


def _print(result, log) -> None:
  mode = f'{result.deals:,} deals in duplicate' if result.duplicate else 'seats alternating'
  seats = ', '.join(
    f'{name} {mbb:+.1f} [{low:+.1f}, {high:+.1f}]'
    for name, mbb, (low, high) in zip(
      ('as small blind', 'as big blind'), result.seat_mbb, result.seat_ci95, strict=True
    )
  )
  print(
    f'{result.policy_a} vs {result.policy_b}: {result.hands:,} hands ({mode}) in {result.seconds:.1f} s '
    f'({_rate(result.hands_per_second)} hands/s)\n'
    f'{result.policy_a}: {result.mbb_per_hand:+.1f} mbb/hand, 95% CI [{result.ci95_low:+.1f}, '
    f'{result.ci95_high:+.1f}]\n'
    f'  {seats}',
    file=log,
  )
