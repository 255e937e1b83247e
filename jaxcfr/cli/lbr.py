"""Local best response from the command line (a thin face over `poker.lbr.local_best_response`),
for `jaxcfr blueprint evaluate POLICY --lbr`:

    jaxcfr blueprint evaluate blueprint.npz --lbr --hands 20000 --json -
    jaxcfr blueprint evaluate equity --lbr --hands 2000 --seed 0 --json result.json

POLICY is a blueprint file, a baseline name (`poker.baselines.REGISTRY`) or search: and either
(`jaxcfr.cli.common.resolve_policy`). Imports nothing heavy until it runs.
"""

from __future__ import annotations

from jaxcfr.cli import common
from jaxcfr.cli.match import SEARCH_ONLY, seats_line
from jaxcfr.poker import defaults

DESCRIPTION = (
  "Local best response (Lisy & Bowling 2017) against a heads-up no-limit hold'em policy (blinds 50/100, "
  "stacks 20,000): LBR tracks the policy's range by Bayes' rule and plays the best of its street's actions "
  "(fold, call, pot, all-in) given its equity against that range and the policy's fold probability; by "
  'default it checks or calls preflop and on the flop (--lbr-actions). Every deal is played in both seats. '
  "Prints LBR's winnings, a lower bound on the policy's exploitability, in milli-big-blinds per hand with a "
  'normal 95% confidence interval (paper: always-fold 750).'
)


def add_arguments(parser, policy: bool = True) -> None:
  """Adds LBR's arguments to `parser`: the POLICY positional (unless `policy` is False, for a command
  that has its own; `run` reads `args.policy`), --hands, --seed, the search options and --batch. The
  caller adds the output options that `run` also reads: --json, --force and --quiet."""
  if policy:
    names = ', '.join(defaults.BASELINES)
    parser.add_argument('policy', metavar='POLICY', help=f'a baseline ({names}) or a policy file')
  parser.add_argument(
    '--hands', type=common.whole_number(4), default=defaults.LBR_HANDS,
    help=f'hands to play (default {defaults.LBR_HANDS:,}; rounded up to whole deal pairs)',
  )  # fmt: skip
  parser.add_argument('--seed', type=common.seed, default=0, help='cards and sampling seed (default 0)')
  parser.add_argument(
    '--lbr-actions',
    default=defaults.LBR_ACTIONS,
    metavar='SETS',
    help="LBR's actions per street, preflop,flop,turn,river, of f (fold), c (check/call), p (pot), a "
    f"(all-in), or all-streets / turn-river (default {defaults.LBR_ACTIONS}, the paper's main setting)",
  )
  common.add_game_options(parser)
  common.add_search_options(parser)
  parser.add_argument(
    '--batch',
    type=common.whole_number(2),
    default=defaults.LBR_BATCH,
    help=f'hands played at once (default {defaults.LBR_BATCH}; memory grows with it)',
  )


def run(args) -> int:
  """Runs LBR for parsed `args`: checks the input, plays, reports and writes."""
  from jaxcfr import progress  # noqa: PLC0415
  from jaxcfr.poker.eval import lbr  # noqa: PLC0415

  log = common.log_stream(args)
  common.check_json(args)
  common.check_search_options(args, common.is_search(args.policy), SEARCH_ONLY)
  with common.bad_input(ValueError):
    actions = lbr.parse_actions(args.lbr_actions)
  rules = common.game_rules(args)
  policy = common.resolve_policy(args.policy, args)
  total = args.hands + args.hands % 2
  quiet = getattr(args, 'quiet', False)
  with common.bad_input(ValueError), progress.Progress(total, 'lbr', 'hands', quiet) as bar:
    result = lbr.local_best_response(
      policy,
      args.hands,
      seed=args.seed,
      batch=args.batch,
      progress=lambda done: bar.update(done - bar.count),
      actions=actions,
      rules=rules,
    )
  _print(result, log)
  return common.write_outputs(args, result.to_json(), log)


def lbr_setting(result) -> str:
  from jaxcfr.poker.eval import lbr  # noqa: PLC0415

  return lbr.setting_name(result.actions)


def _print(result, log) -> None:
  needed = result.hands_for_precision(0.1)
  precision = 'the estimate is 0' if needed is None else f'+-10% of the estimate needs about {needed:,} hands'
  print(
    f'LBR ({lbr_setting(result)}) vs {result.policy}: {result.hands:,} hands ({result.deals:,} deals in '
    f'both seats) in {result.seconds:.1f} s ({result.hands_per_second:,.1f} hands/s; '
    f'{result.policy_seconds:.1f} s in the policy)\n'
    f'LBR: {result.lbr_mbb_per_hand:+.1f} mbb/hand, 95% CI [{result.ci95_low:+.1f}, {result.ci95_high:+.1f}]'
    f' ({precision})\n'
    f'  {seats_line(result)}',
    file=log,
  )
  if result.aivat is not None:
    aivat = result.aivat
    print(
      f'AIVAT: {aivat["mbb_per_hand"]:+.1f} mbb/hand, 95% CI [{aivat["ci95_low"]:+.1f}, '
      f'{aivat["ci95_high"]:+.1f}] ({aivat["hands_ratio"]:.2g}x fewer hands for the same interval)',
      file=log,
    )
