"""Duplicate matches of two policies at several stack depths (the same blinds, stacks reset each hand):
one JSON per depth and seed (`jaxcfr match --json`'s fields), then a table of mbb/hand with the 95%
intervals, plain and by AIVAT.

    python experiments/depth_matches.py pushfold bp.npz --depths 5,10,15 --hands 20000 --seed 1 \\
        --out experiments/records/depth/pushfold-vs-bp

A and B are policy specs as `jaxcfr match` takes them; a blueprint of another depth plays the hands
read into its own game (`jaxcfr.poker.eval.depth`). Files that exist are read, not replayed, so a later
run with more depths or seeds adds to them; pool seeds with `experiments/pool_matches.py`.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

from abstractions.betting import NoLimitRules
from jaxcfr.poker import bots
from jaxcfr.poker.eval import depth, match


def main() -> int:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument('policy_a')
  parser.add_argument('policy_b')
  parser.add_argument('--depths', required=True, help='stacks in big blinds, comma-separated')
  parser.add_argument('--hands', type=int, default=20_000)
  parser.add_argument('--seed', type=int, default=1)
  parser.add_argument(
    '--depth-aware-below', type=float, default=None, help='A as DepthAware with this threshold'
  )
  parser.add_argument('--out', required=True, help='directory of the per-depth JSON files')
  args = parser.parse_args()
  os.makedirs(args.out, exist_ok=True)
  policy_a, policy_b = bots.resolve_policy(args.policy_a), bots.resolve_policy(args.policy_b)
  if args.depth_aware_below is not None:
    policy_a = depth.DepthAware(policy_a, args.depth_aware_below)
  print('| depth (bb) | hands | mbb/hand | 95% CI | AIVAT mbb/hand | AIVAT 95% CI |')
  print('| ---: | ---: | ---: | --- | ---: | --- |')
  for stack in (float(d) for d in args.depths.split(',')):
    path = os.path.join(args.out, f'{stack:g}bb-s{args.seed}.json')
    if os.path.exists(path):
      with open(path) as file:
        report = json.load(file)
    else:
      rules = NoLimitRules(50, 100, round(100 * stack))
      result = match.play_match(policy_a, policy_b, args.hands, seed=args.seed, rules=rules)
      report = result.to_json()
      with open(path + '.partial', 'w') as file:
        json.dump(report, file, indent=1)
      os.replace(path + '.partial', path)
    aivat = report['aivat']
    print(
      f'| {stack:g} | {report["hands"]:,} | {report["mbb_per_hand"]:+.0f} | [{report["ci95_low"]:+.0f}, '
      f'{report["ci95_high"]:+.0f}] | {aivat["mbb_per_hand"]:+.0f} | [{aivat["ci95_low"]:+.0f}, '
      f'{aivat["ci95_high"]:+.0f}] |',
      flush=True,
    )
  return 0


if __name__ == '__main__':
  sys.exit(main())
