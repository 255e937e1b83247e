"""Local best response from the command line (a thin face over `poker.lbr.local_best_response`),
for `jaxcfr blueprint evaluate POLICY --lbr`:

    jaxcfr blueprint evaluate blueprint.npz --lbr --hands 20000 --json -
    jaxcfr blueprint evaluate equity --lbr --hands 2000 --seed 0 --json result.json

POLICY is a blueprint file or a baseline name (`poker.baselines.REGISTRY`). Imports nothing heavy
until it runs.
"""

from __future__ import annotations

import sys

from jaxcfr import outputs
from jaxcfr.cli.match import add_search_options, check_search_options, search_settings, whole_number
from jaxcfr.poker import defaults

DESCRIPTION = (
  "Local best response (Lisy & Bowling 2017) against a heads-up no-limit hold'em policy (blinds 50/100, "
  "stacks 20,000): LBR tracks the policy's range by Bayes' rule, checks or calls preflop and on the flop, "
  'and on the turn and river plays the best of fold, call, pot and all-in given its equity against that '
  "range and the policy's fold probability. Every deal is played in both seats. Prints LBR's winnings, a "
  "lower bound on the policy's exploitability, in milli-big-blinds per hand with a normal 95% confidence "
  'interval (paper: always-fold 750).'
)


def add_arguments(parser, policy: bool = True) -> None:
  """Adds LBR's arguments to `parser`: the POLICY positional (unless `policy` is False, for a command
  that has its own; `run` reads `args.policy`), --hands, --seed and --batch. The caller adds the output
  options that `run` also reads: --json, --force and --quiet."""
  if policy:
    names = ', '.join(defaults.BASELINES)
    parser.add_argument('policy', metavar='POLICY', help=f'a baseline ({names}) or a policy file')
  parser.add_argument(
    '--hands', type=whole_number(4), default=defaults.LBR_HANDS,
    help=f'hands to play (default {defaults.LBR_HANDS:,}; rounded up to whole deal pairs)',
  )  # fmt: skip
  parser.add_argument('--seed', type=whole_number(0), default=0, help='cards and sampling seed (default 0)')
  add_search_options(parser)
  parser.add_argument(
    '--batch',
    type=whole_number(2),
    default=defaults.LBR_BATCH,
    help=f'hands played at once (default {defaults.LBR_BATCH}; memory grows with it)',
  )


def run(args) -> int:
  """Runs LBR for parsed `args`; one line and exit status 2 on bad input."""
  from jaxcfr import progress  # noqa: PLC0415
  from jaxcfr.poker import bots  # noqa: PLC0415
  from jaxcfr.poker.eval import lbr  # noqa: PLC0415

  json_path, force = getattr(args, 'json', None), getattr(args, 'force', False)
  log = sys.stderr if json_path == '-' else sys.stdout
  try:
    outputs.check_file(json_path, '--json', force=force, suffixes=('.json',))
    check_search_options(args, args.policy)
    policy = bots.resolve_policy(args.policy, *search_settings(args))
    if args.hands < 4:
      raise ValueError('--hands must be at least 4 for a confidence interval')
    if args.batch < 2:
      raise ValueError('--batch must be at least 2 (a deal pair)')
    total = args.hands + args.hands % 2
    with progress.Progress(total=total, desc='lbr', unit='hands', quiet=getattr(args, 'quiet', False)) as bar:
      result = lbr.local_best_response(
        policy,
        args.hands,
        seed=args.seed,
        batch=args.batch,
        progress=lambda done: bar.update(done - bar.count),
      )
  except ValueError as error:  # OutputError and PokerInputError are ValueErrors
    print(f'jaxcfr: error: {error}', file=sys.stderr)
    return 2
  _print(result, log)
  if json_path:
    try:
      outputs.write_json(json_path, result.to_json(), force=force)
    except outputs.OutputError as error:
      print(f'jaxcfr: error: {error}', file=sys.stderr)
      return 2
    if json_path != '-':
      print(f'JSON written to {json_path}', file=log)
  return 0


def _print(result, log) -> None:
  seats = ', '.join(
    f'{name} {mbb:+.1f} [{low:+.1f}, {high:+.1f}]'
    for name, mbb, (low, high) in zip(
      ('as small blind', 'as big blind'), result.seat_mbb, result.seat_ci95, strict=True
    )
  )
  needed = result.hands_for_precision(0.1)
  precision = 'the estimate is 0' if needed is None else f'+-10% of the estimate needs about {needed:,} hands'
  print(
    f'LBR vs {result.policy}: {result.hands:,} hands ({result.deals:,} deals in both seats) in '
    f'{result.seconds:.1f} s ({result.hands_per_second:,.1f} hands/s; '
    f'{result.policy_seconds:.1f} s in the policy)\n'
    f'LBR: {result.lbr_mbb_per_hand:+.1f} mbb/hand, 95% CI [{result.ci95_low:+.1f}, {result.ci95_high:+.1f}]'
    f' ({precision})\n'
    f'  {seats}',
    file=log,
  )
