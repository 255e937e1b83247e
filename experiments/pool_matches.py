"""Pools duplicate matches of the same two policies run with different seeds (the JSON files of
`jaxcfr match --json` or `experiments/search_match.py --json`) into one result: mbb/hand over all
deal pairs with the normal 95% CI of the pooled mean, per-seat means, and the think time per street
where the files have it.

    python experiments/pool_matches.py runs/r*.json

Files of `jaxcfr match --carry-stacks` pool their mirrored match pairs instead: the share of matches
won and mbb/hand, each with its 95% CI over the pairs.

Each file's unit is a deal pair's mean (its `sd_mbb` over its `deals`), so the pooled mean weighs the
files by their deal pairs and its variance is sum(n_i sd_i^2) / N^2.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys

Z95 = 1.959963984540054


def pool(reports: list[dict]) -> dict:
  """The pooled figures of `reports` (one policy pair, duplicate mode)."""
  pairs = {(r['policy_a'], r['policy_b']) for r in reports}
  if len(pairs) != 1 or not all(r['duplicate'] for r in reports):
    raise ValueError(f'the files must be duplicate matches of one pair of policies, got {sorted(pairs)}')
  deals = sum(r['deals'] for r in reports)
  mean = sum(r['deals'] * r['mbb_per_hand'] for r in reports) / deals
  half = Z95 * math.sqrt(sum(r['deals'] * r['sd_mbb'] ** 2 for r in reports)) / deals
  pooled = {
    'policy_a': reports[0]['policy_a'],
    'policy_b': reports[0]['policy_b'],
    'files': len(reports),
    'seeds': sorted(r['seed'] for r in reports),
    'hands': sum(r['hands'] for r in reports),
    'deals': deals,
    'mbb_per_hand': mean,
    'ci95_low': mean - half,
    'ci95_high': mean + half,
    'seat_mbb': [sum(r['deals'] * r['seats'][s]['mbb_per_hand'] for r in reports) / deals for s in (0, 1)],
    'seconds': sum(r['seconds'] for r in reports),
  }
  if all(r.get('aivat') for r in reports):  # AIVAT's estimates pool the same way
    values = {r['aivat']['value_function'] for r in reports}
    if len(values) != 1:
      raise ValueError(f'the files used different AIVAT value functions: {sorted(values)}')
    mean = sum(r['deals'] * r['aivat']['mbb_per_hand'] for r in reports) / deals
    half = Z95 * math.sqrt(sum(r['deals'] * r['aivat']['sd_mbb'] ** 2 for r in reports)) / deals
    plain_sd = math.sqrt(sum(r['deals'] * r['sd_mbb'] ** 2 for r in reports) / deals)
    aivat_sd = math.sqrt(sum(r['deals'] * r['aivat']['sd_mbb'] ** 2 for r in reports) / deals)
    pooled['aivat'] = {
      'value_function': values.pop(),
      'mbb_per_hand': mean,
      'ci95_low': mean - half,
      'ci95_high': mean + half,
      'hands_ratio': (plain_sd / aivat_sd) ** 2 if aivat_sd > 0 else float('nan'),
    }
  streets = {}
  for report in reports:
    for street, row in report.get('decisions', {}).items():
      streets.setdefault(street, []).append(row)
  pooled['decisions'] = {
    street: {
      'count': sum(row['count'] for row in rows),
      'median_of_medians_seconds': statistics.median(row['median_seconds'] for row in rows),
      'median_iterations': statistics.median(
        row['median_iterations'] for row in rows if row['median_iterations'] is not None
      )
      if any(row['median_iterations'] is not None for row in rows)
      else None,
    }
    for street, rows in streets.items()
  }
  return pooled


def pool_carried(reports: list[dict]) -> dict:
  """The pooled figures of `jaxcfr match --carry-stacks` files (one policy pair, one start): the share
  of matches A won and A's mbb/hand, each with the normal 95% CI over the mirrored match pairs."""
  keys = {(r['policy_a'], r['policy_b'], r['start_stack'], r['big_blind']) for r in reports}
  if len(keys) != 1:
    raise ValueError(
      f'the files must be carried-stack matches of one pair from one start, got {sorted(keys)}'
    )
  scores, mbb = [], []
  for report in reports:
    stacks = report['final_stacks']
    score = [1.0 if a > b else 0.0 if a < b else 0.5 for a, b in stacks]
    hands = report['hands_played']
    for k in range(0, len(stacks), 2):
      scores.append((score[k] + score[k + 1]) / 2)
      chips = stacks[k][0] + stacks[k + 1][0] - 2 * report['start_stack']
      mbb.append(chips * 1000.0 / report['big_blind'] / max(hands[k] + hands[k + 1], 1))

  def interval(values):
    mean = statistics.fmean(values)
    half = Z95 * statistics.stdev(values) / math.sqrt(len(values)) if len(values) > 1 else float('nan')
    return mean, mean - half, mean + half

  return {
    'policy_a': reports[0]['policy_a'], 'policy_b': reports[0]['policy_b'], 'files': len(reports),
    'seeds': sorted(r['seed'] for r in reports), 'matches': 2 * len(scores),
    'start_bb': reports[0]['start_stack'] / reports[0]['big_blind'], 'win_share': interval(scores),
    'mbb_per_hand': interval(mbb), 'hands': sum(r['hands'] for r in reports),
  }  # fmt: skip


def main(argv=None) -> int:
  parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
  parser.add_argument('files', nargs='+', help='JSON results of duplicate matches')
  args = parser.parse_args(argv)
  try:
    reports = []
    for path in args.files:
      with open(path) as file:
        reports.append(json.load(file))
    if all('final_stacks' in r for r in reports):
      result = pool_carried(reports)
      share, mbb = result['win_share'], result['mbb_per_hand']
      print(
        f'{result["policy_a"]} vs {result["policy_b"]}, carried from {result["start_bb"]:g} bb: '
        f'{result["files"]} files, {result["matches"]:,} matches, {result["hands"]:,} hands: won '
        f'{100 * share[0]:.1f}%, 95% CI [{100 * share[1]:.1f}%, {100 * share[2]:.1f}%]; {mbb[0]:+.1f} '
        f'mbb/hand, 95% CI [{mbb[1]:+.1f}, {mbb[2]:+.1f}]'
      )
      return 0
    result = pool(reports)
  except (OSError, ValueError, KeyError) as error:
    print(f'pool_matches: error: {error}', file=sys.stderr)
    return 2
  print(
    f'{result["policy_a"]} vs {result["policy_b"]}: {result["files"]} files, {result["hands"]:,} hands '
    f'({result["deals"]:,} deal pairs), {result["seconds"]:.0f} s: {result["mbb_per_hand"]:+.1f} mbb/hand, '
    f'95% CI [{result["ci95_low"]:+.1f}, {result["ci95_high"]:+.1f}]'
  )
  if 'aivat' in result:
    aivat = result['aivat']
    print(
      f'  AIVAT ({aivat["value_function"]}): {aivat["mbb_per_hand"]:+.1f} mbb/hand, 95% CI '
      f'[{aivat["ci95_low"]:+.1f}, {aivat["ci95_high"]:+.1f}] ({aivat["hands_ratio"]:.2g}x fewer hands)'
    )
  print(f'  A in seat 0 (button): {result["seat_mbb"][0]:+.1f}, in seat 1: {result["seat_mbb"][1]:+.1f}')
  for street, row in result['decisions'].items():
    print(f'  {street}: {json.dumps(row)}')
  return 0


if __name__ == '__main__':
  sys.exit(main())
