"""Many river or turn spots: `jaxcfr subgame --spots FILE` (one process) against one postflop-solver
process per spot, whole-process wall time, side by side, alternating.

The spots: `--count` river boards (`--street turn`: turn boards) drawn from `--seed` (distinct cards),
postflop-solver's README ranges, pot 200, stack 900, bets "60%,e,a", raises "2.5x", its thresholds
(`--add-all-in 1.5 --merge 0.1`), DCFR to 0.5% of the pot. The peer is
`experiments/postflop_solver_peer`'s `spot` binary, built with rayon; both get the same threads (one:
both pinned with `taskset -c 0`, `RAYON_NUM_THREADS=1`; two: both free on this 2-core machine).
`--peer none` times ours alone (on a machine without the peer, such as an accelerator's:
`experiments/gpu_spots.sh`). Reported: the wall time of all the peer's processes one after another,
ours for the one process (importing JAX, building, compiling or reading the compilation cache,
solving, writing), the spots per second, the largest difference of OOP's EV between the two on a
spot, and the spots whose EVs are further apart than the two exploitabilities added.

    python experiments/bench_spots.py [--count 100] [--rounds 3] [--threads 1,2] [--seed 0] [--batch]
        [--street river|turn] [--peer PATH|none] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

PEER = 'experiments/postflop_solver_peer/target/release/spot'
OOP = '66+,A8s+,A5s-A4s,AJo+,K9s+,KQo,QTs+,JTs,96s+,85s+,75s+,65s,54s'
IP = 'QQ-22,AQs-A2s,ATo+,K5s+,KJo+,Q8s+,J8s+,T7s+,96s+,86s+,75s+,64s+,53s+'
RANKS, SUITS = '23456789TJQKA', 'cdhs'
POT = 200


def boards(count: int, seed: int, cards: int = 5) -> list[str]:
  rng = np.random.default_rng(seed)
  deck = [r + s for r in RANKS for s in SUITS]
  return [''.join(deck[i] for i in rng.choice(52, cards, replace=False)) for _ in range(count)]


def peer(binary: str, spots: list[str], threads: int) -> tuple[float, list[float]]:
  pin = ['taskset', '-c', '0'] if threads == 1 else []
  env = {**os.environ, 'RAYON_NUM_THREADS': str(threads)}
  evs, start = [], time.perf_counter()
  for board in spots:
    command = [*pin, binary, board, str(POT), '900', OOP, IP, '60%, e, a', '2.5x', '1.5', '0.1', '0.5']
    done = subprocess.run(command, capture_output=True, text=True, env=env, check=True)
    report = json.loads(done.stdout.strip().splitlines()[-1])
    evs.append((report['ev'][0], report['exploitability_pct'] / 100 * POT))
  return time.perf_counter() - start, evs


def ours(spots: list[str], threads: int, folder: str, batch: bool = False) -> tuple[float, list[float]]:
  pin = ['taskset', '-c', '0'] if threads == 1 else []
  path = os.path.join(folder, 'spots.jsonl')
  with open(path, 'w') as file:
    for board in spots:
      line = {'board': board, 'pot': POT, 'stack': 900, 'oop_range': OOP, 'ip_range': IP}
      file.write(json.dumps(line) + '\n')
  command = [*pin, sys.executable, '-m', 'jaxcfr.cli', 'subgame', '--spots', path, '--bets', '60%,e,a']
  command += ['--raises', '2.5x', '--add-all-in', '1.5', '--merge', '0.1', '--target', '0.5', '--quiet']
  command += ['--batch'] if batch else []
  start = time.perf_counter()
  done = subprocess.run(command, capture_output=True, text=True, check=True)
  seconds = time.perf_counter() - start
  reports = [json.loads(line) for line in done.stdout.splitlines() if line.startswith('{')]
  if len(reports) != len(spots):
    raise RuntimeError(f'{len(reports)} results for {len(spots)} spots: {done.stderr[-2000:]}')
  return seconds, [(r['ev']['oop'], r['exploitability']) for r in sorted(reports, key=lambda r: r['line'])]


def main() -> None:
  parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
  parser.add_argument('--count', type=int, default=100)
  parser.add_argument('--rounds', type=int, default=3)
  parser.add_argument('--threads', default='1,2')
  parser.add_argument('--seed', type=int, default=0)
  parser.add_argument('--peer', default=PEER, help="the peer's spot binary, or 'none': ours alone")
  parser.add_argument('--batch', action='store_true', help='ours with --batch (river spots vmapped together)')
  parser.add_argument('--street', choices=('river', 'turn'), default='river')
  parser.add_argument('--json', help='also write every round and the table here (JSON)')
  args = parser.parse_args()
  spots = boards(args.count, args.seed, 5 if args.street == 'river' else 4)
  rows, runs = {}, []
  with tempfile.TemporaryDirectory() as folder:
    for round_ in range(args.rounds):
      for threads in map(int, args.threads.split(',')):
        peer_seconds, peer_evs = peer(args.peer, spots, threads) if args.peer != 'none' else (None, None)
        our_seconds, our_evs = ours(spots, threads, folder, args.batch)
        gap, beyond = None, None
        if peer_evs is not None:
          (peer_ev, peer_loss), (our_ev, our_loss) = np.array(peer_evs).T, np.array(our_evs).T
          gaps = np.abs(peer_ev - our_ev)
          gap, beyond = float(gaps.max()), int((gaps > peer_loss + our_loss).sum())
        line = {'round': round_, 'threads': threads, 'peer_s': peer_seconds, 'ours_s': our_seconds}
        line.update(max_ev_gap=gap, apart_beyond_exploitabilities=beyond)
        print(json.dumps(line), flush=True)
        runs.append(line)
        rows.setdefault(threads, []).append((peer_seconds, our_seconds, gap, beyond))
  processes = f'{args.count} postflop-solver processes, s'
  header = f'| threads | {processes} | jaxcfr --spots, s | ratio | largest EV gap | spots apart beyond |'
  table = [header, '| --- | --- | --- | --- | --- | --- |']
  for threads, each in rows.items():
    o = statistics.median(r[1] for r in each)
    if each[0][0] is None:  # --peer none
      table.append(f'| {threads} | - | {o:.2f} | - | - | - |')
      continue
    p, ratio = statistics.median(r[0] for r in each), statistics.median(r[0] / r[1] for r in each)
    gap, beyond = max(r[2] for r in each), max(r[3] for r in each)
    table.append(f'| {threads} | {p:.2f} | {o:.2f} | {ratio:.2f} | {gap:.3f} | {beyond} |')
  print('\n' + '\n'.join(table))
  if args.json:
    settings = {'count': args.count, 'seed': args.seed, 'street': args.street, 'batch': args.batch}
    with open(args.json, 'w') as file:
      json.dump({**settings, 'runs': runs, 'table': table}, file, indent=1)


if __name__ == '__main__':
  main()
