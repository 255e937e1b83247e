"""Local best response against two policies on the same deals and draws, and the paired difference of
the two: how much less (or more) LBR wins against A than against B, in mbb/hand with a 95% CI over
deal pairs. With the search bot over a blueprint as A and the blueprint as B, LBR plays both alike
until the search bot's first re-solve (the bots' preflop and flop play is the blueprint's, and LBR's
draws are the same), so the difference has far less variance than either LBR figure.

    python experiments/lbr_pair.py search:bp.npz bp.npz --search-streets river --search-iterations 60 \\
      --hands 500 --seed 1 --json lp1.json
    python experiments/lbr_pair.py search:bp.npz bp.npz --tables tables/ --search-streets flop,turn,river \
      --search-turn depth-limited --search-river-cards 6 --think-seconds 0.1 --hands 200 --seed 1 \
      --json dl1.json                                    # the depth-limited search bot of issue 42's match
    python experiments/lbr_pair.py --pool lp*.json            # several seeds' files as one result
    python experiments/lbr_pair.py --pool g*.json --against lp*.json   # two A's on the same deals

Each file keeps every deal pair's LBR result against both policies (mbb/hand), so pooled files give
the exact mean and interval over all their deal pairs.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time

import numpy as np

from jaxcfr import backend, outputs
from jaxcfr.cli import common
from jaxcfr.cli.common import whole_number
from jaxcfr.poker.eval import lbr, match
from jaxcfr.poker.rules import nlhe

SETTINGS = ('range_floor', 'lbr_actions', *common.SEARCH_OPTIONS)
POOLED = (*SETTINGS, 'bots')  # what files must share to pool: the options and the bots they made


def settings(args) -> dict:
  """The search settings a file was made with (files pool only when these agree)."""
  found = {name: getattr(args, name) for name in SETTINGS}
  for name in ('search_streets', 'search_warm_start'):  # tuples, as JSON writes them back
    if found[name] is not None and not isinstance(found[name], int):
      found[name] = list(found[name])
  return found


def bot_configs(policies) -> list:
  """Each policy's search configuration as JSON holds it (None: not a search bot): files pool only when
  their bots were the same, whatever the search bot's defaults were when each was made."""
  configs = [dataclasses.asdict(p.config) if hasattr(p, 'config') else None for p in policies]
  return json.loads(json.dumps(configs))


def interval(units: np.ndarray) -> dict:
  """The mean of `units` with its normal 95% interval, as the match engine gives it."""
  mean, low, high, _ = match._mean_ci(units)
  return {'mbb_per_hand': mean, 'ci95_low': low, 'ci95_high': high}


def report(a: str, b: str, units_a: np.ndarray, units_b: np.ndarray, extra: dict) -> dict:
  return {
    'policy_a': a,
    'policy_b': b,
    'deals': len(units_a),
    'hands': 2 * len(units_a),
    'lbr_a': interval(units_a),
    'lbr_b': interval(units_b),
    'a_minus_b': interval(units_a - units_b),
    'units_a': units_a.tolist(),
    'units_b': units_b.tolist(),
    **extra,
  }


def show(result: dict) -> None:
  line = lambda r: f'{r["mbb_per_hand"]:+.0f} [{r["ci95_low"]:+.0f}, {r["ci95_high"]:+.0f}]'  # noqa: E731
  print(f'{result["hands"]} hands ({result["deals"]} deal pairs); LBR mbb/hand, 95% CI')
  print(f'  against A ({result["policy_a"]}): {line(result["lbr_a"])}')
  print(f'  against B ({result["policy_b"]}): {line(result["lbr_b"])}')
  print(f'  A - B, paired: {line(result["a_minus_b"])}')
  if 'aivat_a_minus_b' in result:
    print(f'  A - B, paired, by AIVAT: {line(result["aivat_a_minus_b"])}')
  for side in 'ab':
    for street, row in result.get(f'decisions_{side}', {}).items():
      print(f'  {side.upper()} {street}: {json.dumps(row)}')


def pool(paths: list) -> dict:
  """The report of several seeds' files of one pair of policies and settings, deal pair by deal pair."""
  files = [json.load(open(path)) for path in paths]
  for f in files:  # files from before the setting was an option played the main setting
    f.setdefault('lbr_actions', lbr.DEFAULT_ACTIONS)
  kinds = {(f['policy_a'], f['policy_b'], json.dumps({k: f.get(k) for k in POOLED})) for f in files}
  if len(kinds) != 1:
    raise ValueError(f'--pool takes files of one pair of policies and settings, got {sorted(kinds)}')
  seeds = sorted(f['seed'] for f in files)
  if len(set(seeds)) != len(seeds):
    raise ValueError(f'--pool: two files share a seed ({seeds}): the same deals counted twice')
  files.sort(key=lambda f: f['seed'])
  units = [np.concatenate([np.asarray(f[k]) for f in files]) for k in ('units_a', 'units_b')]
  same = {k: files[0].get(k) for k in POOLED}
  if all('aivat_units_a' in f for f in files):
    a, b = (np.concatenate([np.asarray(f[k]) for f in files]) for k in ('aivat_units_a', 'aivat_units_b'))
    same['aivat_a_minus_b'] = interval(a - b)
  return report(files[0]['policy_a'], files[0]['policy_b'], *units, {'seeds': seeds, **same})


def main(argv=None) -> int:
  parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
  parser.add_argument(
    'policies', nargs='*', help='A and B (as `jaxcfr match` takes them), or the files with --pool'
  )
  parser.add_argument('--pool', action='store_true', help='pool the JSON files given instead of running')
  parser.add_argument(
    '--against', nargs='+', default=None, metavar='FILE',
    help='with --pool: compare the pooled A with the A of these files (the same seeds and B), paired',
  )  # fmt: skip
  parser.add_argument('--hands', type=whole_number(4), default=200)
  parser.add_argument('--seed', type=whole_number(0), default=0)
  parser.add_argument('--batch', type=whole_number(2), default=200)
  common.add_search_options(parser)
  parser.add_argument(
    '--tables', default=None, help="the blueprint files' abstraction tables (default: recorded)"
  )
  parser.add_argument(
    '--range-floor', type=float, default=None,
    help="a search: policy's share of each range spread evenly over the possible hands (default 0.001)",
  )  # fmt: skip
  parser.add_argument(
    '--lbr-actions',
    default=lbr.DEFAULT_ACTIONS,
    help="LBR's actions per street (`jaxcfr blueprint evaluate`)",
  )
  parser.add_argument('--json', default=None, metavar='PATH')
  parser.add_argument('--force', action='store_true')
  args = parser.parse_args(argv)
  try:
    args.lbr_actions = ','.join(lbr.parse_actions(args.lbr_actions))
    outputs.check_file(args.json, '--json', force=args.force, suffixes=('.json',))
    if args.pool:
      result = pool(args.policies)
      if args.against:
        other = pool(args.against)
        if other['seeds'] != result['seeds'] or other['units_b'] != result['units_b']:
          raise ValueError('--against: the files must hold the same seeds and the same B results (the deals)')
        label = lambda r: f'{r["policy_a"]} {json.dumps({k: r.get(k) for k in SETTINGS})}'  # noqa: E731
        units = [np.asarray(r['units_a']) for r in (result, other)]
        result = report(label(result), label(other), *units, {'seeds': result['seeds']})
    else:
      if args.against:
        raise ValueError('--against goes with --pool')
      if len(args.policies) != 2:
        raise ValueError('give two policies, A and B')
      common.check_search_options(args, True, '')
      policies = [common.resolve_policy(spec, args, tables=args.tables) for spec in args.policies]
      if args.range_floor is not None and not 0 <= args.range_floor < 1:
        raise ValueError(f'--range-floor must be in [0, 1), got {args.range_floor}')
      for policy in policies:
        if hasattr(policy, 'config') and args.range_floor is not None:  # a search bot
          policy.config = dataclasses.replace(policy.config, range_floor=args.range_floor)
      backend.enable_compilation_cache()
      units, aivat_units, seconds = [], [], []
      for policy in policies:
        started = time.perf_counter()
        run = lbr.local_best_response(
          policy,
          args.hands,
          seed=args.seed,
          batch=args.batch,
          rules=nlhe.DEFAULT_RULES,
          actions=args.lbr_actions,
        )
        units.append(run.deal_pair_mbb())
        aivat_units.append(run.deal_pair_mbb(aivat=True))
        if abs(units[-1].mean() - run.lbr_mbb_per_hand) > 1e-6 * max(1.0, abs(run.lbr_mbb_per_hand)):
          raise AssertionError('the deal pairs do not average to the LBR result')
        seconds.append(time.perf_counter() - started)
      extra = {'seed': args.seed, 'batch': args.batch, 'seconds': seconds, **settings(args)}
      extra['aivat_units_a'], extra['aivat_units_b'] = (u.tolist() for u in aivat_units)
      extra['aivat_a_minus_b'] = interval(aivat_units[0] - aivat_units[1])  # the same deals, less variance
      extra['bots'] = bot_configs(policies)
      for side, policy in zip('ab', policies, strict=True):
        if hasattr(policy, 'decisions'):  # a search bot: its think time and iterations per street
          extra[f'decisions_{side}'] = policy.decisions()
      result = report(*args.policies, *units, extra)
  except (ValueError, OSError, common.UsageError) as error:
    print(f'lbr_pair: error: {error}', file=sys.stderr)
    return 2
  show(result)
  if args.json:
    outputs.write_json(args.json, result, force=args.force)
  return 0


if __name__ == '__main__':
  sys.exit(main())
