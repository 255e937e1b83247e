"""Subgame spots against postflop-solver at equal threads: whole commands, side by side, alternating.

Each round runs, per spot and thread count, postflop-solver's `spot` binary
(`experiments/postflop_solver_peer`, built with rayon: `RAYON_NUM_THREADS` = our threads) and then
`jaxcfr subgame` on the same spot, tree and target (DCFR to 0.5% of the pot, checked every 10
iterations). One thread: both pinned with `taskset -c 0`; two: both free on this 2-core machine.
Reported per solver: the solve loop with its checks (`seconds`; ours: `seconds + check_seconds`,
which leaves out building the tree and compiling, reported as `jit_seconds`), the iterations, the
exploitability, each player's EV, the solver's memory figure (postflop-solver's `memory_usage`; ours
`memory_bytes`: the solver's state and the spot's arrays) and the process's peak resident memory
(`/usr/bin/time`). Medians over the rounds. Ours solves a spot natively (`native_spot`, no
compilation) unless `--compress` (and `--compact`) ask for the array form; `JAXCFR_NO_NATIVE=1` in the
environment times the array form everywhere.

The spots (trees identical in both: postflop-solver's thresholds as ours, `--add-all-in 1.5
--merge 0.1`):
- `turn`: the turn benchmark spot (Td9d6hQc, full ranges, pot 200, stack 900, bets 60%, e, a,
  raises 2.5x, a river donk bet of 50%);
- `flop`: Qs8h3c with postflop-solver's README ranges, the same sizes (no donk bet);
- `flop-allin`: the same flop, check or all-in on every street;
- `flop-compact`: `flop` with `--compact` (ours only differs: each player's state over its range);
- `flop-compress`, `flop-allin-compress`: `flop` and `flop-allin` with `--compress` (ours keeps its
  regrets and averages in 16 bits; the peer stays in f32), and `flop-compact-compress` with both;
  `flop-compress-both`: `flop-compress` against the peer's own 16-bit compression;
- `twotone` (Td9d6h), `monotone` (Td7d2d), `paired` (Qs8hQc): the README ranges and sizes on boards
  with interchangeable suits, with `--compress`; `-noiso` (e.g. `twotone-noiso`): ours with
  `--no-isomorphism`; `flop-twotone`, `flop-monotone`, `flop-paired`: the same boards in float32
  (ours natively);
- `turn-twotone` (Td9d6hQh: two suits, the other two interchangeable), `turn-monotone` (Td9d6dQd:
  three interchangeable), `turn-paired` (Qs8hQc3d: spades and clubs swap): the turn spot's ranges and
  sizes on turn boards whose river cards both solvers merge.

    python experiments/bench_threads.py [--rounds 3] [--threads 1,2] [--spots turn,flop-allin,flop]
      [--peer experiments/postflop_solver_peer/target/release/spot] [--out results.jsonl]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile

PEER = 'experiments/postflop_solver_peer/target/release/spot'
FULL = '22+,A2+,K2+,Q2+,J2+,T2+,92+,82+,72+,62+,52+,42+,32'
OOP = '66+,A8s+,A5s-A4s,AJo+,K9s+,KQo,QTs+,JTs,96s+,85s+,75s+,65s,54s'
IP = 'QQ-22,AQs-A2s,ATo+,K5s+,KJo+,Q8s+,J8s+,T7s+,96s+,86s+,75s+,64s+,53s+'
SPOTS = {
  'turn': {'board': 'Td9d6hQc', 'ranges': (FULL, FULL), 'bets': '60%,e,a', 'raises': '2.5x', 'donk': '50%'},
  'flop': {'board': 'Qs8h3c', 'ranges': (OOP, IP), 'bets': '60%,e,a', 'raises': '2.5x'},
  'flop-allin': {'board': 'Qs8h3c', 'ranges': (OOP, IP), 'bets': 'a', 'raises': 'a'},
  'flop-compact': {
    'board': 'Qs8h3c',
    'ranges': (OOP, IP),
    'bets': '60%,e,a',
    'raises': '2.5x',
    'compact': True,
  },
}
for _name in ('flop', 'flop-allin', 'flop-compact'):
  SPOTS[f'{_name}-compress'] = {**SPOTS[_name], 'compress': True}
SPOTS['flop-compress-both'] = {**SPOTS['flop-compress'], 'peer_compress': True}
# Boards with interchangeable suits (postflop-solver merges their turn and river cards; ours its turn
# cards, `subgame.isomorphism`), 16-bit state (below the peer's float32 memory); `-noiso` solves every
# card apart (ours only).
for _name, _board in (
  ('turn-twotone', 'Td9d6hQh'),
  ('turn-monotone', 'Td9d6dQd'),
  ('turn-paired', 'Qs8hQc3d'),
):
  SPOTS[_name] = {**SPOTS['turn'], 'board': _board}
for _name, _board in (('twotone', 'Td9d6h'), ('monotone', 'Td7d2d'), ('paired', 'Qs8hQc')):
  SPOTS[_name] = {'board': _board, 'ranges': (OOP, IP), 'bets': '60%,e,a', 'raises': '2.5x', 'compress': True}
  SPOTS[f'{_name}-noiso'] = {**SPOTS[_name], 'no_isomorphism': True}
  SPOTS[f'flop-{_name}'] = {**SPOTS['flop'], 'board': _board}  # the native solve's float32


def timed(command: list[str], threads: int, env: dict) -> tuple[str, int]:
  """(stdout, peak resident kB) of `command`, pinned to core 0 for one thread."""
  pin = ['taskset', '-c', '0'] if threads == 1 else []
  with tempfile.NamedTemporaryFile('r', suffix='.time') as log:
    done = subprocess.run(
      ['/usr/bin/time', '-f', '%M', '-o', log.name, *pin, *command], capture_output=True, text=True, env=env
    )
    if done.returncode:
      raise RuntimeError(f'{command[0]} failed ({done.returncode}): {done.stderr[-2000:]}')
    return done.stdout, int(log.read().split()[-1])


def peer(binary: str, spot: dict, threads: int) -> dict:
  sizes = lambda text: ', '.join(text.split(','))  # noqa: E731  (its syntax: '60%, e, a')
  command = [binary, spot['board'], '200', '900', *spot['ranges'], sizes(spot['bets']), sizes(spot['raises'])]
  compress = '1' if spot.get('peer_compress') else '0'
  command += ['1.5', '0.1', '0.5', compress] + ([spot['donk']] if 'donk' in spot else [])
  out, rss = timed(command, threads, {**os.environ, 'RAYON_NUM_THREADS': str(threads)})
  result = json.loads(out.strip().splitlines()[-1])
  pot = 200
  return {
    'seconds': result['seconds'],
    'iterations': result['iterations'],
    'exploitability_pct': result['exploitability_pct'],
    'ev': result['ev'],
    'memory_bytes': result['memory_bytes'],
    'peak_rss_bytes': rss * 1024,
    'pot': pot,
  }


def ours(spot: dict, threads: int) -> dict:
  command = [sys.executable, '-m', 'jaxcfr.cli', 'subgame', '--board', spot['board'], '--pot', '200']
  command += ['--stack', '900', '--oop-range', spot['ranges'][0], '--ip-range', spot['ranges'][1]]
  command += ['--bets', spot['bets'], '--raises', spot['raises'], '--add-all-in', '1.5', '--merge', '0.1']
  command += ['--target', '0.5', '--json', '-', '--quiet']
  command += (
    (['--donk', spot['donk']] if 'donk' in spot else [])
    + (['--compact'] if spot.get('compact') else [])
    + (['--compress'] if spot.get('compress') else [])
    + (['--no-isomorphism'] if spot.get('no_isomorphism') else [])
  )
  out, rss = timed(command, threads, dict(os.environ))
  report = json.loads(out)
  return {
    'seconds': report['seconds'] + report['check_seconds'],
    'iterations': report['iterations'],
    'exploitability_pct': report['exploitability_pct'],
    'ev': [report['ev']['oop'], report['ev']['ip']],
    'memory_bytes': report['memory_bytes'],
    'peak_rss_bytes': rss * 1024,
    'jit_seconds': report['jit_seconds'],
  }


def main() -> None:
  parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
  parser.add_argument('--rounds', type=int, default=3)
  parser.add_argument('--threads', default='1,2')
  parser.add_argument('--spots', default='turn,flop-allin,flop')
  parser.add_argument('--peer', default=PEER)
  parser.add_argument('--out', help='append each solve as a JSON line here')
  args = parser.parse_args()
  names = args.spots.split(',')
  unknown = [n for n in names if n not in SPOTS]
  if unknown or not re.fullmatch(r'[12](,[12])*', args.threads):
    parser.error(f'spots are {", ".join(SPOTS)}; threads 1 and/or 2 (got {args.spots!r}, {args.threads!r})')
  rows = {}
  for round_ in range(args.rounds):
    for name in names:
      for threads in map(int, args.threads.split(',')):
        pair = {'peer': peer(args.peer, SPOTS[name], threads), 'ours': ours(SPOTS[name], threads)}
        for who, result in pair.items():
          line = {'round': round_, 'spot': name, 'threads': threads, 'solver': who, **result}
          print(json.dumps(line), flush=True)
          if args.out:
            with open(args.out, 'a') as file:
              file.write(json.dumps(line) + '\n')
          rows.setdefault((name, threads, who), []).append(result)
  print(
    '\n| spot | threads | postflop-solver s | ours s | ratio (peer / ours) | iterations '
    '| memory, peer / ours | peak RSS, peer / ours |'
  )
  print('| --- | --- | --- | --- | --- | --- | --- | --- |')
  median = lambda key, runs: statistics.median(r[key] for r in runs)  # noqa: E731
  for name in names:
    for threads in map(int, args.threads.split(',')):
      p, o = rows[(name, threads, 'peer')], rows[(name, threads, 'ours')]
      ratio = statistics.median(a['seconds'] / b['seconds'] for a, b in zip(p, o, strict=True))
      print(
        f'| {name} | {threads} | {median("seconds", p):.2f} | {median("seconds", o):.2f} | {ratio:.2f} | '
        f'{median("iterations", p):.0f} / {median("iterations", o):.0f} | '
        f'{median("memory_bytes", p) / 1e6:,.0f} / {median("memory_bytes", o) / 1e6:,.0f} MB | '
        f'{median("peak_rss_bytes", p) / 1e6:,.0f} / {median("peak_rss_bytes", o) / 1e6:,.0f} MB |'
      )


if __name__ == '__main__':
  main()
