"""Where local best response wins: LBR's mbb/hand against a policy split by the street of the hand's
last action (a fold there, or the last call before the showdown), each part with its normal 95% CI
over hands, over the seeds given (the deals and draws of `experiments/lbr_pair.py`'s seeds).

    python experiments/lbr_streets.py bp.npz --seeds 1-10 --hands 400

The parts add up to LBR's result over the same hands. Against the search bot over a blueprint that
re-solves the river only, everything that LBR wins on hands ending before the river is the
blueprint's (the two play alike until then).
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

from jaxcfr import backend
from jaxcfr.cli.common import whole_number
from jaxcfr.poker import bots
from jaxcfr.poker.eval import lbr, match
from jaxcfr.poker.rules import nlhe

STREETS = ('preflop', 'flop', 'turn', 'river')


def seeds(text: str) -> list[int]:
  first, _, last = text.partition('-')
  return list(range(int(first), int(last or first) + 1))


def main(argv=None) -> int:
  parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
  parser.add_argument('policy', help='as `jaxcfr match` takes it')
  parser.add_argument('--seeds', type=seeds, default=[1], help='a seed or a range, e.g. 1-10 (default 1)')
  parser.add_argument('--hands', type=whole_number(4), default=400, help='hands per seed (default 400)')
  parser.add_argument('--batch', type=whole_number(2), default=200)
  args = parser.parse_args(argv)
  try:
    policy = bots.resolve_policy(args.policy)
  except ValueError as error:
    print(f'lbr_streets: error: {error}', file=sys.stderr)
    return 2
  backend.enable_compilation_cache()
  chips, streets = [], []
  for seed in args.seeds:
    run = lbr.local_best_response(
      policy, args.hands, seed=seed, batch=args.batch, rules=nlhe.DEFAULT_RULES, keep_hands=True
    )
    final = run.final
    last = final.history[np.arange(len(final.num_actions)), final.num_actions - 1, 0]
    chips.append(run.chips), streets.append(last)
  chips, streets = np.concatenate(chips).astype(np.float64), np.concatenate(streets)
  units = chips * 1000.0 / nlhe.DEFAULT_RULES.big_blind
  mean, low, high, _ = match._mean_ci(units)
  print(f'LBR against {args.policy}: {len(units)} hands, {mean:+.0f} mbb/hand [{low:+.0f}, {high:+.0f}]')
  for street, name in enumerate(STREETS):
    part = np.where(streets == street, units, 0.0)
    mean, low, high, _ = match._mean_ci(part)
    share = (streets == street).mean()
    print(
      f'  ended on the {name:<7} ({share:5.1%} of hands): {mean:+6.0f} mbb/hand [{low:+.0f}, {high:+.0f}]'
    )
  return 0


if __name__ == '__main__':
  sys.exit(main())
