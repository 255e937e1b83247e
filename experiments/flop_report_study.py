"""Flop reports measured: how well an N-flop subset stands for all 1,755 flops, and the time per flop
against postflop-solver solving the same flops one process each.

    python experiments/flop_report_study.py run --flops 25          # the subset's report (resumes)
    python experiments/flop_report_study.py run --flops all         # all 1,755, in a seeded random order
    python experiments/flop_report_study.py compare --flops 25      # subset against all (so far)
    python experiments/flop_report_study.py time --flops 25 --threads 1   # ours against the peer

The spot (`SPOT`): pot 200, stack 900, postflop-solver's README ranges narrowed to their top (so that
1,755 flops take hours, not days), one bet size per street and the all-in (50% and all-in; raises
all-in), 1% of the pot. Reports go to `experiments/records/reports/<N>/` (the report's own
directory: `solved/` keeps each flop as it finishes, so a stopped run picks up where it was, also in
a later session). All 1,755 run from a file that lists them in a seeded random order with their
weights: while it is partial, the flops solved so far are a random sample of the 1,755, and
`compare` gives the full report's frequencies with a 95% interval from that sample (a weighted
ratio estimate, without-replacement correction).

`time` runs our report as one process (start, compiling and every flop included; into
`experiments/records/reports/<N>/` when that is not there yet, so that `compare` reads it) against the peer's
`spot` binary once per flop (`experiments/postflop_solver_peer`), at equal threads (one thread
pinned to core 0 for both; `RAYON_NUM_THREADS` = ours), and checks each flop's EVs agree within the
two exploitabilities (`--peer none`: ours alone, as on an accelerator, `experiments/gpu_spots.sh`).
It appends a JSON line to `experiments/records/reports/timing.jsonl`.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import subprocess
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RECORDS = os.path.join(ROOT, 'experiments', 'records', 'reports')
PEER = os.path.join(ROOT, 'experiments', 'postflop_solver_peer', 'target', 'release', 'spot')
SPOT = {
  'pot': '200',
  'stack': '900',
  'oop': '99+,ATs+,KJs+,QJs,AQo+',
  'ip': 'JJ-66,AJs-A9s,KTs+,QTs+,JTs,T9s,AJo+,KQo',
  'bets': '50%,a',
  'raises': 'a',
  'target': '1',
}
SEED = 1755


def report_command(flops: str, out: str, threads: int) -> list[str]:
  command = [sys.executable, '-m', 'jaxcfr.cli', 'report', '--flops', flops, '--pot', SPOT['pot']]
  command += ['--stack', SPOT['stack'], '--oop-range', SPOT['oop'], '--ip-range', SPOT['ip']]
  command += ['--bets', SPOT['bets'], '--raises', SPOT['raises'], '--target', SPOT['target']]
  return [*command, '--threads', str(threads), '--out', out]


def shuffled_file() -> str:
  """All 1,755 flops with their weights, in a seeded random order (written once)."""
  from jaxcfr.poker.subgame import flops  # noqa: PLC0415

  path = os.path.join(RECORDS, f'all-shuffled-{SEED}.txt')
  if not os.path.exists(path):
    every = list(flops.all_flops())
    random.Random(SEED).shuffle(every)
    os.makedirs(RECORDS, exist_ok=True)
    with open(path, 'w', encoding='utf-8') as file:
      file.write(f'# the 1,755 flops with their weights, shuffled with seed {SEED}\n')
      file.writelines(f'{f.board} {f.weight:g}\n' for f in every)
  return path


def directory(flops: str) -> str:
  return os.path.join(RECORDS, 'all' if flops == 'all' else flops)


def run(args) -> None:
  source = shuffled_file() if args.flops == 'all' else args.flops
  command = report_command(source, directory(args.flops), args.threads)
  pin = ['taskset', '-c', '0'] if args.threads == 1 else []
  print(' '.join(command), file=sys.stderr)
  raise SystemExit(subprocess.call([*pin, *command], cwd=ROOT))


def solved(flops: str) -> list[dict]:
  folder = os.path.join(directory(flops), 'solved')
  records = []
  for name in sorted(os.listdir(folder)) if os.path.isdir(folder) else []:
    with open(os.path.join(folder, name), encoding='utf-8') as file:
      records.append(json.load(file))
  return records


def compare(args) -> None:
  subset, every = solved(args.flops), solved('all')
  if not subset or not every:
    raise SystemExit('run both reports first (run --flops N, run --flops all)')
  actions = list(subset[0]['root']['frequencies'])
  w_sub = np.array([r['weight'] for r in subset])
  w_all = np.array([r['weight'] for r in every])
  total_flops = 1755
  rows = {}
  for action in actions:
    x_sub = np.array([r['root']['frequencies'][action] for r in subset])
    x_all = np.array([r['root']['frequencies'][action] for r in every])
    mine = float(w_sub @ x_sub / w_sub.sum())
    estimate = float(w_all @ x_all / w_all.sum())
    n = len(every)
    # The ratio estimator's standard error from a simple random sample of n of the 1,755 flops.
    residual = w_all * (x_all - estimate) / w_all.mean()
    se = 0.0 if n < 2 else math.sqrt((1 - n / total_flops) * residual.var(ddof=1) / n)
    rows[action] = {
      'subset': mine,
      'all': estimate,
      'all_ci95': 1.96 * se,
      'difference_pp': 100 * (mine - estimate),
    }
  payload = {
    'subset_flops': len(subset),
    'all_flops_solved': len(every),
    'spot': SPOT,
    'root': rows,
    'date': time.strftime('%Y-%m-%d'),
  }
  print(json.dumps(payload, indent=2))
  with open(os.path.join(RECORDS, f'compare-{args.flops}.json'), 'w', encoding='utf-8') as file:
    json.dump(payload, file, indent=2)


def timed(command: list[str], threads: int, env: dict | None = None) -> tuple[str, float]:
  pin = ['taskset', '-c', '0'] if threads == 1 else []
  start = time.perf_counter()
  done = subprocess.run([*pin, *command], capture_output=True, text=True, env=env, cwd=ROOT)
  if done.returncode:
    raise RuntimeError(f'{command[:3]} failed ({done.returncode}): {done.stderr[-2000:]}')
  return done.stdout, time.perf_counter() - start


def time_both(args) -> None:
  import jax  # noqa: PLC0415

  from jaxcfr.poker.subgame import flops  # noqa: PLC0415

  chosen = flops.flop_set(args.flops)
  out = directory(args.flops)  # the first timed run is the subset's report `compare` reads
  if os.path.exists(out):
    out = os.path.join(RECORDS, f'timing-{args.flops}-{args.threads}t-{int(time.time())}')
  _, ours_seconds = timed(report_command(args.flops, out, args.threads), args.threads)
  env = {**os.environ, 'RAYON_NUM_THREADS': str(args.threads)}
  peer_seconds, disagree = 0.0, []
  records = {r['flop']: r for r in (json.loads(x) for x in open(os.path.join(out, 'flops.jsonl')))}
  for flop in chosen if args.peer != 'none' else ():
    command = [args.peer, flop.board, SPOT['pot'], SPOT['stack'], SPOT['oop'], SPOT['ip']]
    command += [SPOT['bets'].replace(',', ', '), SPOT['raises'], '0', '0', SPOT['target']]
    text, seconds = timed(command, args.threads, env)
    peer_seconds += seconds
    peer = json.loads(text.strip().splitlines()[-1])
    mine = records[flop.board]
    tolerance = (peer['exploitability_pct'] + mine['exploitability_pct']) / 100 * float(SPOT['pot'])
    apart = abs(peer['ev'][0] - mine['ev']['oop'])
    if apart > tolerance:
      disagree.append({'flop': flop.board, 'apart': apart, 'tolerance': tolerance})
  row = {
    'flops': args.flops,
    'count': len(chosen),
    'threads': args.threads,
    'ours_seconds': ours_seconds,
    'peer_seconds': peer_seconds if args.peer != 'none' else None,
    'ours_per_flop': ours_seconds / len(chosen),
    'peer_per_flop': peer_seconds / len(chosen) if args.peer != 'none' else None,
    'ratio': peer_seconds / ours_seconds if args.peer != 'none' else None,
    'backend': jax.default_backend(),
    'ev_disagreements': disagree,
    'spot': SPOT,
    'date': time.strftime('%Y-%m-%d'),
  }
  print(json.dumps(row))
  with open(os.path.join(RECORDS, 'timing.jsonl'), 'a', encoding='utf-8') as file:
    file.write(json.dumps(row) + '\n')


def main() -> None:
  parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
  parser.add_argument('mode', choices=('run', 'compare', 'time'))
  parser.add_argument('--flops', default='25', help="'all' or a count (run); a count (compare, time)")
  parser.add_argument('--threads', type=int, default=2)
  parser.add_argument('--peer', default=PEER, help="time: the peer's spot binary, or 'none' (ours alone)")
  args = parser.parse_args()
  {'run': run, 'compare': compare, 'time': time_both}[args.mode](args)


if __name__ == '__main__':
  main()
