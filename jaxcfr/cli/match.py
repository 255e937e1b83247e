"""`jaxcfr match`: two policies play heads-up no-limit hold'em (a thin face over `poker.match.play_match`).

    jaxcfr match always-pot equity --hands 20000 --seed 0 --json result.json
    jaxcfr match blueprint.npz random --hands 100000 --no-duplicate
    jaxcfr match search:blueprint.npz blueprint.npz --hands 2000 --think-seconds 0.5

A and B are baseline names (`poker.baselines.REGISTRY`), policy files, or search: and either (the
search bot over it): `jaxcfr.cli.common.resolve_policy`. Imports nothing heavy until it runs.
"""

from __future__ import annotations

from jaxcfr.cli import common
from jaxcfr.poker import defaults

SEARCH_ONLY = 'applies to a search: policy only (e.g. search:bp.npz)'


def _rate(per_second: float) -> str:
  """A rate as people read it: whole numbers from 10 up, two significant digits below (where a slow
  policy's rate, a search bot's, would round to nothing)."""
  return f'{per_second:,.0f}' if per_second >= 10 else f'{per_second:.2g}'


HELP = "play two hold'em policies against each other (mbb/hand with a 95%% CI)"
DESCRIPTION = (
  "Heads-up no-limit hold'em (blinds 50/100, stacks 20,000): policy A against policy B, in duplicate "
  "by default (each deal played twice with the seats swapped). Prints A's result in milli-big-blinds "
  'per hand with a normal 95% confidence interval.'
)


def add_parser(commands) -> None:
  """Adds the `match` subcommand to the `jaxcfr` parser's subcommands."""
  parser = commands.add_parser('match', help=HELP, description=DESCRIPTION)
  names = ', '.join(defaults.BASELINES)
  parser.add_argument(
    'policy_a', metavar='A', help=f'a baseline ({names}), a policy file, or search:FILE (the search bot)'
  )
  parser.add_argument('policy_b', metavar='B', help='the opponent, the same way')
  parser.add_argument(
    '--hands', type=common.positive_count, default=None,
    help=f'hands to play (default {defaults.MATCH_HANDS:,}; in duplicate rounded up to whole deal pairs); '
    f'with --carry-stacks the hand limit of each match (default {defaults.CARRY_HANDS:,})',
  )  # fmt: skip
  parser.add_argument('--seed', type=common.seed, default=0, help='cards and sampling seed (default 0)')
  common.add_game_options(parser)
  parser.add_argument(
    '--carry-stacks', action='store_true',
    help="Chipzen's matches: the stacks carry over from hand to hand (from --stack) until a player cannot "
    'post the big blind or --hands hands are played; reports the share of matches won and mbb/hand',
  )  # fmt: skip
  parser.add_argument(
    '--matches', type=common.whole_number(2), default=defaults.CARRY_MATCHES,
    help=f'with --carry-stacks: matches to play, in mirrored pairs (default {defaults.CARRY_MATCHES})',
  )  # fmt: skip
  common.add_search_options(parser)
  parser.add_argument(
    '--no-duplicate', action='store_true', help='deal every hand once, seats alternating (more variance)'
  )
  parser.add_argument(
    '--batch',
    type=common.whole_number(2),
    default=defaults.MATCH_BATCH,
    help=f'hands played at once (default {defaults.MATCH_BATCH})',
  )
  parser.add_argument(
    '--aivat',
    choices=('equity', 'rollouts', 'ranges', 'public', 'off'),
    default=None,
    help="AIVAT's value function (an unbiased estimate with less variance, reported beside the plain "
    "one): equity, the check-down value (default); rollouts, B's own value by playouts of B against "
    "itself (B a fast policy, e.g. the blueprint under search:); ranges, both players' hole cards as "
    'imaginary observations (each policy asked for all 1,326 pairs at its decisions); public, ranges '
    "and every public action and board card corrected by the ranges' check-down value; off",
  )
  parser.add_argument(
    '--aivat-rollouts',
    type=common.whole_number(1),
    default=defaults.AIVAT_ROLLOUTS,
    help=f'playouts per node with --aivat rollouts (default {defaults.AIVAT_ROLLOUTS})',
  )
  common.add_output_options(parser)


def run(args) -> int:
  """Runs `jaxcfr match`: checks the input, plays, reports and writes."""
  from jaxcfr import progress  # noqa: PLC0415
  from jaxcfr.poker.eval import match  # noqa: PLC0415

  log = common.log_stream(args)
  common.check_json(args)
  searching = any(common.is_search(spec) for spec in (args.policy_a, args.policy_b))
  common.check_search_options(args, searching, SEARCH_ONLY)
  rules = common.game_rules(args)
  if args.carry_stacks:
    return _carry(args, rules, log)
  if args.matches != defaults.CARRY_MATCHES:
    raise common.UsageError('--matches goes with --carry-stacks')
  args.hands = defaults.MATCH_HANDS if args.hands is None else args.hands
  args.aivat = 'equity' if args.aivat is None else args.aivat
  policy_a = common.resolve_policy(args.policy_a, args)
  policy_b = common.resolve_policy(args.policy_b, args)
  duplicate = not args.no_duplicate
  if args.hands < (4 if duplicate else 2):
    raise common.UsageError(f'--hands must be at least {4 if duplicate else 2} for a confidence interval')
  total = args.hands + args.hands % 2 if duplicate else args.hands
  if args.aivat == 'rollouts' and (common.is_search(args.policy_b) or args.policy_b.startswith('chipzen:')):
    raise common.UsageError('--aivat rollouts plays B against itself at every node: B must be a fast policy')
  aivat = None if args.aivat == 'off' else args.aivat
  with common.bad_input(ValueError), progress.Progress(total, 'match', 'hands', args.quiet) as bar:
    result = match.play_match(
      policy_a, policy_b, args.hands, seed=args.seed, duplicate=duplicate, batch=args.batch, rules=rules,
      on_progress=lambda done: bar.update(done - bar.count), aivat=aivat, aivat_rollouts=args.aivat_rollouts,
    )  # fmt: skip
  _print(result, log)
  return common.write_outputs(args, result.to_json(), log)


def _carry(args, rules, log) -> int:
  """`jaxcfr match --carry-stacks`: matches to a bust or the hand limit, their share won."""
  from jaxcfr import progress  # noqa: PLC0415
  from jaxcfr.poker.eval import match  # noqa: PLC0415

  for flag, given in (('--no-duplicate', args.no_duplicate), ('--aivat', args.aivat is not None)):
    if given:
      raise common.UsageError(f'{flag} does not apply to --carry-stacks (mirrored match pairs, no AIVAT)')
  hands = defaults.CARRY_HANDS if args.hands is None else args.hands
  policy_a = common.resolve_policy(args.policy_a, args)
  policy_b = common.resolve_policy(args.policy_b, args)
  matches = args.matches + args.matches % 2
  with common.bad_input(ValueError), progress.Progress(matches * hands, 'match', 'hands', args.quiet) as bar:
    result = match.play_carry_matches(
      policy_a, policy_b, args.matches, seed=args.seed, rules=rules, max_hands=hands,
      on_progress=lambda done: bar.update(done - bar.count),
    )  # fmt: skip
  print(
    f'{result.policy_a} vs {result.policy_b}, stacks carried over from {rules.stack / rules.big_blind:g} bb '
    f'at {rules.small_blind}/{rules.big_blind}{_ante(rules.ante)}: {result.matches:,} matches '
    f'({result.matches // 2:,} '
    f'mirrored pairs), {result.hands:,} hands in {result.seconds:.1f} s; {result.busted:,} ended by a bust\n'
    f'{result.policy_a} won {result.won:g} of {result.matches:,}: {100 * result.win_share:.1f}%, 95% CI '
    f'[{100 * result.win_ci95_low:.1f}%, {100 * result.win_ci95_high:.1f}%]; {result.mbb_per_hand:+.1f} '
    f'mbb/hand, 95% CI [{result.ci95_low:+.1f}, {result.ci95_high:+.1f}]',
    file=log,
  )
  return common.write_outputs(args, result.to_json(), log)


def _ante(ante: int) -> str:
  return f' ante {ante}' if ante else ''


def _print(result, log) -> None:
  mode = f'{result.deals:,} deals in duplicate' if result.duplicate else 'seats alternating'
  game = ''
  if (result.small_blind, result.big_blind, result.stack, result.ante) != (50, 100, 20_000, 0):
    deep = result.stack / result.big_blind
    game = f' at {result.small_blind}/{result.big_blind}{_ante(result.ante)}, {deep:g} bb deep'
  print(
    f'{result.policy_a} vs {result.policy_b}{game}: {result.hands:,} hands ({mode}) in '
    f'{result.seconds:.1f} s ({_rate(result.hands_per_second)} hands/s)\n'
    f'{result.policy_a}: {result.mbb_per_hand:+.1f} mbb/hand, 95% CI [{result.ci95_low:+.1f}, '
    f'{result.ci95_high:+.1f}]\n'
    f'  {seats_line(result)}',
    file=log,
  )
  if result.aivat is not None:
    aivat = result.aivat
    ratio = aivat['hands_ratio']
    gain = f': {ratio:.2g}x fewer hands for the same interval' if ratio == ratio else ''  # nan: no spread
    print(
      f'AIVAT ({aivat["value_function"]} values): {aivat["mbb_per_hand"]:+.1f} mbb/hand, 95% CI '
      f'[{aivat["ci95_low"]:+.1f}, {aivat["ci95_high"]:+.1f}] (sd {aivat["sd_mbb"]:,.0f} against '
      f'{result.sd_mbb:,.0f}{gain})',
      file=log,
    )


def seats_line(result) -> str:
  """'as small blind +X [lo, hi], as big blind ...': a match's or LBR's result by seat."""
  return ', '.join(
    f'{name} {mbb:+.1f} [{low:+.1f}, {high:+.1f}]'
    for name, mbb, (low, high) in zip(
      ('as small blind', 'as big blind'), result.seat_mbb, result.seat_ci95, strict=True
    )
  )
