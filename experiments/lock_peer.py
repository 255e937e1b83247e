"""Node locking against postflop-solver's own: one river spot with every OOP decision locked to a
made-up strategy that differs by hand and action, solved by both; IP's EV (its best response's value,
as OOP has no choice left) compared in % of the pot.

    python experiments/lock_peer.py --out experiments/records/locking/lock-peer-river.json

The peer is `experiments/postflop_solver_peer` (its `lock` binary, src/bin/lock.rs; build it as its
Cargo.toml says), run with RAYON_NUM_THREADS=1 for a fixed number of DCFR iterations; jaxcfr solves
the same tree (`--print-tree` equals the peer's) to a small exploitability of the locked game. The
lock goes to the peer as a JSON file: per OOP decision its line of actions, its actions, OOP's hands
by their cards and each hand's probabilities.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

from jaxcfr.poker.rules import cards
from jaxcfr.poker.subgame import grid, locking, solving

PEER = os.path.join(os.path.dirname(__file__), 'postflop_solver_peer', 'target', 'release', 'lock')
# postflop-solver's README ranges, on a river board of its example.
SPOT = solving.SpotSpec(
  board='Td9d6hQc3s', pot=200, stack=900,
  ranges=(
    '66+,A8s+,A5s-A4s,AJo+,K9s+,KQo,QTs+,JTs,96s+,85s+,75s+,65s,54s',
    'QQ-22,AQs-A2s,ATo+,K5s+,KJo+,Q8s+,J8s+,T7s+,96s+,86s+,75s+,64s+,53s+',
  ),
  bets='60%,a', raises='2.5x',
)  # fmt: skip


def made_up(game) -> np.ndarray:
  """[D, A, H] a strategy at every OOP decision (NaN elsewhere): weights 1 + (3 c0 + 11 c1 + 7 a) mod
  13 over each node's actions, normalised, for OOP's hands."""
  tree, info = game.tree, game.tree.info
  hands = np.asarray(game.spot.hands)
  rows = np.full((tree.num_decisions, tree.num_actions, game.num_hands), np.nan)
  for row, node in enumerate(info.decisions):
    if node >= 0 and info.nodes[node].player == 0:
      count = len(info.nodes[node].labels)
      weights = 1.0 + (3 * hands[:, 0] + 11 * hands[:, 1] + 7 * np.arange(count)[:, None]) % 13
      rows[row] = 0.0
      rows[row, :count] = weights / weights.sum(0)
  rows[:, :, np.asarray(game.spot.ranges[0]) == 0] = np.nan
  return rows


def lock_file(game, rows: np.ndarray) -> dict:
  """The peer's lock file of `rows` (`lock.rs`'s format)."""
  info, lines = game.tree.info, solving.decision_lines(game)
  hands = np.asarray(game.spot.hands)
  nodes = []
  for row, line in lines.items():
    fixed = ~np.isnan(rows[row, 0])
    if not fixed.any():
      continue
    labels = info.nodes[info.decisions[row]].labels
    nodes.append({
      'line': list(line),
      'actions': [grid.token(label) for label in labels],
      'hands': [cards.hand_text(pair) for pair in hands[fixed]],
      'strategy': rows[row, : len(labels)][:, fixed].T.tolist(),
    })  # fmt: skip
  return {'nodes': nodes}


def main() -> int:
  parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
  parser.add_argument('--iterations', type=int, default=1000, help="the peer's DCFR iterations")
  parser.add_argument('--target', type=float, default=0.002, help="jaxcfr's target, % of the pot")
  parser.add_argument('--out', help='write the record (JSON) here')
  args = parser.parse_args()
  if not os.path.exists(PEER):
    print(f'no peer binary at {PEER}: build experiments/postflop_solver_peer first', file=sys.stderr)
    return 2
  game = SPOT.build()
  rows = made_up(game)
  with tempfile.NamedTemporaryFile('w', suffix='.json', delete=False) as file:
    json.dump(lock_file(game, rows), file)
  try:
    command = [PEER, SPOT.board, str(SPOT.pot), str(SPOT.stack), *SPOT.ranges, SPOT.bets, SPOT.raises]
    env = {**os.environ, 'RAYON_NUM_THREADS': '1'}
    done = subprocess.run(
      [*command, str(args.iterations), file.name], capture_output=True, text=True, env=env
    )
  finally:
    os.unlink(file.name)
  if done.returncode:
    print(done.stderr, file=sys.stderr)
    return 1
  peer = json.loads(done.stdout.strip().splitlines()[-1])
  ours = solving.solve(locking.lock(game, rows), target_pct=args.target, eval_every=20)
  difference = 100 * (ours.ev[1] - peer['ev'][1]) / SPOT.pot
  record = {
    'spot': {'board': SPOT.board, 'pot': SPOT.pot, 'stack': SPOT.stack, 'ranges': SPOT.ranges,
             'bets': SPOT.bets, 'raises': SPOT.raises},
    'locked_nodes': locking.summary(ours.game)['nodes'],
    'jaxcfr': {'ev': ours.ev, 'exploitability_pct': ours.exploitability_pct, 'iterations': ours.iterations},
    'postflop_solver': peer,
    'ip_ev_difference_pct_of_pot': difference,
  }  # fmt: skip
  print(json.dumps(record, indent=1))
  print(
    f'IP EV: jaxcfr {ours.ev[1]:.4f}, postflop-solver {peer["ev"][1]:.4f} ({difference:+.4f}% of the pot)'
  )
  if args.out:
    os.makedirs(os.path.dirname(args.out) or '.', exist_ok=True)
    with open(args.out, 'w', encoding='utf-8') as file:
      json.dump(record, file, indent=1)
      file.write('\n')
  return 0


if __name__ == '__main__':
  sys.exit(main())
