"""Local best response in several action settings against one policy on the same deals and draws, and
each setting's paired difference from the first: does betting on more streets find more? In mbb/hand
with 95% CIs over deal pairs.

    python experiments/lbr_settings.py bp.npz --settings turn-river,all-streets,flop-on --hands 2000 \
      --seed 1 --json ls1.json
    python experiments/lbr_settings.py --pool ls*.json          # several seeds' files as one result

A setting is a name of `lbr.SETTINGS` or four groups of f, c, p, a (`lbr.parse_actions`); settings are
separated by semicolons when they contain commas ('turn-river;c,fcpa,fcpa,fcpa'). Each file keeps every
deal pair's result per setting, so pooled files give the exact paired intervals.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np

from jaxcfr import backend, outputs
from jaxcfr.cli import common
from jaxcfr.cli.common import whole_number
from jaxcfr.poker.eval import lbr, match


def interval(units: np.ndarray) -> dict:
  mean, low, high, _ = match._mean_ci(units)
  return {'mbb_per_hand': mean, 'ci95_low': low, 'ci95_high': high}


def compare(units: dict) -> tuple[dict, dict]:
  """Each setting's interval, and each one's paired difference from the first setting."""
  names = list(units)
  first = np.asarray(units[names[0]])
  each = {name: interval(np.asarray(u)) for name, u in units.items()}
  return each, {name: interval(np.asarray(u) - first) for name, u in units.items() if name != names[0]}


def report(policy: str, units: dict, aivat_units: dict, extra: dict) -> dict:
  """Each setting's LBR and its difference from the first setting, paired deal by deal, plain and by
  AIVAT (the same deals; AIVAT's intervals are the narrower)."""
  names = list(units)
  lbr_plain, minus_plain = compare(units)
  lbr_aivat, minus_aivat = compare(aivat_units)
  return {
    'policy': policy,
    'deals': len(units[names[0]]),
    'hands': 2 * len(units[names[0]]),
    'settings': names,
    'lbr': lbr_plain,
    'minus_first': minus_plain,
    'aivat': lbr_aivat,
    'aivat_minus_first': minus_aivat,
    'units': {name: np.asarray(u).tolist() for name, u in units.items()},
    'aivat_units': {name: np.asarray(u).tolist() for name, u in aivat_units.items()},
    **extra,
  }


def show(result: dict) -> None:
  line = lambda r: f'{r["mbb_per_hand"]:+.0f} [{r["ci95_low"]:+.0f}, {r["ci95_high"]:+.0f}]'  # noqa: E731
  print(
    f'LBR against {result["policy"]}: {result["hands"]} hands ({result["deals"]} deal pairs), '
    'mbb/hand, 95% CI'
  )
  first = result['settings'][0]
  for kind, label in (('', 'plain'), ('aivat_', 'AIVAT')):
    print(f'  {label}:')
    for name in result['settings']:
      own = result['aivat' if kind else 'lbr'][name]
      paired = '' if name == first else f'; minus {first}, paired: {line(result[kind + "minus_first"][name])}'
      print(f'    {lbr.setting_name(name.split(","))}: {line(own)}{paired}')


def pool(paths: list) -> dict:
  files = sorted((json.load(open(path)) for path in paths), key=lambda f: f['seed'])
  kinds = {(f['policy'], tuple(f['settings']), f['batch']) for f in files}
  if len(kinds) != 1:
    raise ValueError(f'--pool takes files of one policy, settings and batch, got {sorted(kinds)}')
  seeds = [f['seed'] for f in files]
  if len(set(seeds)) != len(seeds):
    raise ValueError(f'--pool: two files share a seed ({seeds}): the same deals counted twice')
  names = files[0]['settings']
  units = {name: np.concatenate([f['units'][name] for f in files]) for name in names}
  aivat_units = {name: np.concatenate([f['aivat_units'][name] for f in files]) for name in names}
  return report(files[0]['policy'], units, aivat_units, {'seeds': seeds, 'batch': files[0]['batch']})


def main(argv=None) -> int:
  parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
  parser.add_argument(
    'policy', nargs='+', help='the policy (as `jaxcfr match` takes it), or files with --pool'
  )
  parser.add_argument('--pool', action='store_true', help='pool the JSON files given instead of running')
  parser.add_argument('--settings', default='turn-river;all-streets', help='settings, first the reference')
  parser.add_argument('--hands', type=whole_number(4), default=1000)
  parser.add_argument('--seed', type=whole_number(0), default=0)
  parser.add_argument('--batch', type=whole_number(2), default=200)
  common.add_search_options(parser)
  parser.add_argument('--json', default=None, metavar='PATH')
  parser.add_argument('--force', action='store_true')
  args = parser.parse_args(argv)
  try:
    outputs.check_file(args.json, '--json', force=args.force, suffixes=('.json',))
    if args.pool:
      result = pool(args.policy)
    else:
      if len(args.policy) != 1:
        raise ValueError('give one policy')
      separator = ';' if ';' in args.settings else ','
      names = [','.join(lbr.parse_actions(text)) for text in args.settings.split(separator)]
      if len(set(names)) != len(names):
        raise ValueError(f'--settings names one setting twice: {names}')
      common.check_search_options(args, common.is_search(args.policy[0]), '')
      policy = common.resolve_policy(args.policy[0], args)
      backend.enable_compilation_cache()
      units, aivat_units, seconds = {}, {}, {}
      for name in names:
        started = time.perf_counter()
        run = lbr.local_best_response(policy, args.hands, seed=args.seed, batch=args.batch, actions=name)
        units[name], aivat_units[name] = run.deal_pair_mbb(), run.deal_pair_mbb(aivat=True)
        seconds[name] = time.perf_counter() - started
      extra = {'seed': args.seed, 'batch': args.batch, 'seconds': seconds}
      result = report(args.policy[0], units, aivat_units, extra)
  except (ValueError, OSError, common.UsageError) as error:
    print(f'lbr_settings: error: {error}', file=sys.stderr)
    return 2
  if args.json:  # the per-deal results first: a pooled run's figures print from its files
    outputs.write_json(args.json, result, force=args.force)
  show(result)
  return 0


if __name__ == '__main__':
  sys.exit(main())
