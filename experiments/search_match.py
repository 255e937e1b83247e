"""The search bot against its own blueprint in duplicate: mbb/hand with the 95% CI, and the think time
per decision by street (median, and the 90th percentile), with each street's re-solve iterations and
exploitability at the end (% of the pot: the river's, and the flop's depth-limited game's).

    python experiments/search_match.py bp-3600.npz --tables tables-small/ \\
      --hands 200 --think-seconds 1 --json search_match.json
    python experiments/search_match.py bp-3600.npz --streets river --iterations 60   # deterministic
    python experiments/search_match.py bp-3600.npz --streets flop,turn,river          # + the flop
    python experiments/search_match.py bp-3600.npz --streets river --gadget maxmargin  # safe re-solving
    python experiments/search_match.py bp-3600.npz --turn depth-limited               # the turn's round
    python experiments/search_match.py bp-3600.npz --turn depth-limited --river-cards 12   # 12 of 48

Its defaults are the first measured bot's (the turn to the end of the hand and the river, unsafe, 1 s a
decision), so that the commands in docs/benchmarks.md keep their meaning; the search bot's own default
(`jaxcfr.poker.defaults`) is `--streets flop,turn,river --turn depth-limited --river-cards 6
--think-seconds 0.1 --gadget maxmargin-prior`. The same match without the timings: `jaxcfr match
search:BP BP --think-seconds 1 --search-streets turn,river --search-turn full --search-gadget none`.
Compiled programs are cached on disk (`jaxcfr.backend.enable_compilation_cache`), so a second run skips
most compiling; the first decisions of each tree shape include compiling and are slow (the medians
mostly are not).
"""

from __future__ import annotations

import argparse
import json
import sys

from jaxcfr import backend, outputs
from jaxcfr.cli.common import positive_seconds, whole_number
from jaxcfr.poker import defaults
from jaxcfr.poker.blueprint import load_policy
from jaxcfr.poker.eval import match
from jaxcfr.poker.search import bot as search
from jaxcfr.poker.search import depth_limited


def main(argv=None) -> int:
  parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
  parser.add_argument('blueprint', help='a blueprint file (.npz)')
  parser.add_argument('--tables', default=None, help="the blueprint's abstraction tables (default: recorded)")
  parser.add_argument('--hands', type=whole_number(4), default=200, help='hands (default 200)')
  parser.add_argument('--seed', type=whole_number(0), default=0)
  parser.add_argument('--batch', type=whole_number(2), default=200, help='hands played at once (default 200)')
  parser.add_argument('--think-seconds', type=positive_seconds, default=1.0)
  parser.add_argument(
    '--flop-seconds', type=positive_seconds, default=None,
    help='a flop decision\'s seconds, where they differ from --think-seconds',
  )  # fmt: skip
  parser.add_argument(
    '--iterations',
    type=whole_number(1),
    default=None,
    help='re-solve for exactly this many iterations instead of --think-seconds (deterministic)',
  )
  parser.add_argument(
    '--streets',
    default='turn,river',
    help="streets re-solved (default 'turn,river'; 'flop' is depth-limited)",
  )
  parser.add_argument(
    '--runouts', type=whole_number(1), default=depth_limited.RUNOUTS,
    help=f'sampled runouts of a flop search (default {depth_limited.RUNOUTS})',
  )  # fmt: skip
  parser.add_argument(
    '--turn', choices=defaults.TURN_SEARCHES, default=defaults.TURN_SEARCHES[0],
    help="a turn re-solve: to the end of the hand (default 'full'), or its round alone with the "
    'continuation leaves over every river card',
  )  # fmt: skip
  parser.add_argument(
    '--river-cards', type=whole_number(1), default=None,
    help='a depth-limited turn: its leaves on this many sampled river cards (default: all 48)',
  )  # fmt: skip
  parser.add_argument(
    '--batch-resolves', choices=('auto', 'on', 'off'), default='auto',
    help='solve the turn and river re-solves of one query together (default auto: on a GPU or TPU)',
  )  # fmt: skip
  parser.add_argument(
    '--gadget', choices=search.GADGETS, default=None,
    help='re-solve safely against the blueprint (river, flop, depth-limited turn; default: unsafe)',
  )  # fmt: skip
  parser.add_argument('--json', default=None, metavar='PATH')
  parser.add_argument('--force', action='store_true')
  args = parser.parse_args(argv)
  try:
    streets = tuple(search.STREET_NAMES.index(name.strip()) for name in args.streets.split(','))
    outputs.check_file(args.json, '--json', force=args.force, suffixes=('.json',))
    blueprint = load_policy(args.blueprint, args.tables)
    budget = {'think_seconds': args.think_seconds, 'flop_seconds': args.flop_seconds}
    if args.iterations is not None:
      budget = {'think_seconds': None, 'iterations': args.iterations, 'target_pct': None}
    batch_resolves = {'auto': None, 'on': True, 'off': False}[args.batch_resolves]
    bot = search.search_policy(
      blueprint,
      **budget,
      seed=args.seed,
      streets=streets,
      runouts=args.runouts,
      batch_resolves=batch_resolves,
      gadget=args.gadget,
      turn_depth_limited=args.turn == 'depth-limited',
      river_cards=args.river_cards,
    )
  except ValueError as error:
    print(f'search_match: error: {error}', file=sys.stderr)
    return 2
  backend.enable_compilation_cache()
  result = match.play_match(bot, blueprint, args.hands, seed=args.seed, batch=args.batch)
  report = result.to_json()
  report['think_seconds'] = None if args.iterations is not None else args.think_seconds
  report['flop_seconds'] = None if args.iterations is not None else args.flop_seconds
  report['iterations'] = args.iterations
  report['streets'] = [search.STREET_NAMES[s] for s in streets]
  report['batch_resolves'] = bot.batch_resolves
  report['gadget'] = args.gadget
  report['turn'] = args.turn
  report['river_cards'] = args.river_cards
  report['decisions'] = bot.decisions()
  print(
    f'{result.policy_a} vs {result.policy_b}: {result.hands} hands in {result.seconds:.0f} s: '
    f'{result.mbb_per_hand:+.1f} mbb/hand, 95% CI [{result.ci95_low:+.1f}, {result.ci95_high:+.1f}]'
  )
  for name, row in report['decisions'].items():
    print(f'  {name}: {json.dumps(row)}')
  if args.json:
    outputs.write_json(args.json, report, force=args.force)
  return 0


if __name__ == '__main__':
  sys.exit(main())
