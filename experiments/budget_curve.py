"""The blueprint trainer's budget curve: each training setting at each budget, then LBR of every
blueprint and a duplicate match of each setting against the first at the same budget.

    python experiments/budget_curve.py --abstraction tables-small --bets default \\
        --budgets 300,600,1200,2400 --settings 'tabular' 'pcs --boards 1' 'pcs --boards 16' \\
        --hands 20000 --out runs/budget

Each step writes its own file in --out (the blueprint `S-B.npz`, `train-S-B.json`, `lbr-S-B.json`,
`match-S-vs-FIRST-B.json`, S the setting's name with spaces as underscores, B the budget in seconds)
and is skipped when its file exists, so the curve can be run in pieces across sessions, a budget or a
setting at a time. Run it alone on the machine (`taskset -c 0` for one core): training budgets are
wall-clock seconds. Prints one table row per setting and budget: LBR (main setting) and the match
against the first setting, mbb/hand with 95% CIs, by AIVAT where the file has it.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys


def _run(command: list[str], out: str) -> dict:
  """Runs one jaxcfr command writing its JSON to `out`, unless `out` exists; returns the JSON."""
  if not os.path.exists(out):
    print('$', shlex.join(command), file=sys.stderr, flush=True)
    subprocess.run(command, check=True, stdout=sys.stderr)  # the table alone on stdout
  with open(out) as file:
    return json.load(file)


def _interval(report: dict, key: str) -> str:
  figures = report.get('aivat') or {}
  mean = figures.get('mbb_per_hand', report[key])
  low, high = figures.get('ci95_low', report['ci95_low']), figures.get('ci95_high', report['ci95_high'])
  return f'{mean:+,.0f} [{low:+,.0f}, {high:+,.0f}]'


def main() -> int:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument('--abstraction', required=True, help='the tables of `jaxcfr abstract`')
  parser.add_argument('--bets', default='default', help='the bet preset (default: default)')
  parser.add_argument('--budgets', required=True, help='training seconds, comma-separated')
  parser.add_argument(
    '--settings', nargs='+', required=True, help="`blueprint train` flags per setting, e.g. 'pcs --boards 1'"
  )
  parser.add_argument('--hands', type=int, default=20_000, help='hands of each LBR run and each match')
  parser.add_argument('--seed', type=int, default=1)
  parser.add_argument('--out', required=True, help='directory of the runs (made if missing)')
  args = parser.parse_args()
  os.makedirs(args.out, exist_ok=True)
  jaxcfr = [sys.executable, '-m', 'jaxcfr.cli']
  names = [setting.replace(' ', '_').replace('--', '') for setting in args.settings]
  print('| setting | budget (s) | iterations | LBR mbb/hand | vs the first setting, mbb/hand |')
  print('| --- | ---: | ---: | ---: | ---: |')
  for budget in (int(b) for b in args.budgets.split(',')):
    files = {}
    for setting, name in zip(args.settings, names, strict=True):
      blueprint = os.path.join(args.out, f'{name}-{budget}.npz')
      flags = ['--algorithm', *setting.split()]
      train = _run(
        [*jaxcfr, 'blueprint', 'train', '--abstraction', args.abstraction, '--bets', args.bets,
         '--seconds', str(budget), '--seed', str(args.seed), *flags, '--out', blueprint, '--quiet',
         '--json', os.path.join(args.out, f'train-{name}-{budget}.json')],
        os.path.join(args.out, f'train-{name}-{budget}.json'),
      )  # fmt: skip
      lbr = _run(
        [*jaxcfr, 'blueprint', 'evaluate', blueprint, '--lbr', '--hands', str(args.hands), '--seed',
         str(args.seed), '--quiet', '--json', os.path.join(args.out, f'lbr-{name}-{budget}.json')],
        os.path.join(args.out, f'lbr-{name}-{budget}.json'),
      )  # fmt: skip
      files[name] = (blueprint, train, lbr)
    first = names[0]
    for name in names:
      blueprint, train, lbr = files[name]
      versus = ''
      if name != first:
        out = os.path.join(args.out, f'match-{name}-vs-{first}-{budget}.json')
        match = _run(
          [*jaxcfr, 'match', blueprint, files[first][0], '--hands', str(args.hands), '--seed',
           str(args.seed), '--quiet', '--json', out],
          out,
        )  # fmt: skip
        versus = _interval(match, 'mbb_per_hand')
      row = (
        f'| {name} | {budget:,} | {train["iterations"]:,} | {_interval(lbr, "lbr_mbb_per_hand")} | {versus} |'
      )
      print(row, flush=True)
  return 0


if __name__ == '__main__':
  sys.exit(main())
