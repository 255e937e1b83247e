"""Lockstep of an exported bot with the library: the decision states of real matches (a blueprint
against the Chipzen SDK's example bots and jaxcfr's baselines, every query the blueprint was asked,
on every street), answered by the library's policy (`blueprint.load_policy`: the full abstraction
tables) and by the exported directory's own runtime in a fresh Python where importing JAX fails (its
copied files, its packed tables: the river by equity code). Prints the states per street, whether
every action set is the same, and the largest difference of a probability, of each state's own pair
and of range queries (all 1,326 pairs of some states; the pairs its board blocks are no hands and
are left out).

    jaxcfr bot export bp-300.npz --out bot/ --tier free
    python experiments/export_lockstep.py bp-300.npz bot/ --states 10000 --json lockstep.json
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

from jaxcfr.poker import bots
from jaxcfr.poker.blueprint import load_policy
from jaxcfr.poker.eval import match
from jaxcfr.poker.rules import nlhe

STREETS = ('preflop', 'flop', 'turn', 'river')
OPPONENTS = ('chipzen:call', 'chipzen:random', 'chipzen:tight-aggressive', 'equity', 'random', 'always-pot')

# Run by the exported bot's own Python: its runtime alone on the path, JAX refused.
IN_THE_BOT = r"""
import importlib.abc, json, sys
class NoJax(importlib.abc.MetaPathFinder):
  def find_spec(self, name, path=None, target=None):
    if name.partition('.')[0] in ('jax', 'jaxlib'):
      raise ImportError('no JAX in an exported bot')
sys.meta_path.insert(0, NoJax())
bot, states_path, answers_path = sys.argv[1:4]
sys.path.insert(0, bot + '/runtime')
import numpy as np
from jaxcfr.poker.rules import nlhe
from jaxcfr.poker.tables.bundle import load_policy
policy = load_policy(bot + '/data')
out = {}
with np.load(states_path) as data:
  for part in ('own', 'range'):
    names = [n for n in data.files if n.startswith(part + '_') and not n.endswith('_holes')]
    state = nlhe.HandState(**{n[len(part) + 1:]: data[n] for n in names})
    actions, probabilities = policy.strategy(state, data[part + '_holes'])
    out.update({f'{part}_{k}': v for k, v in actions._asdict().items()})
    out[part + '_probabilities'] = probabilities
np.savez(answers_path, **out)
ours = ('jaxcfr', 'abstractions')
loaded = [getattr(m, '__file__', None) or '' for n, m in sys.modules.items() if n.partition('.')[0] in ours]
print(json.dumps({'from_the_bot': all(f.startswith(bot) for f in loaded if f), 'jax': 'jax' in sys.modules}))
"""


class Recorder:
  """A policy that keeps every query it answers (the states and the hole pairs asked)."""

  def __init__(self, policy):
    self.policy, self.name, self.queries = policy, policy.name, []

  def strategy(self, state, holes):
    self.queries.append((state, np.asarray(holes)))
    return self.policy.strategy(state, holes)


def record(blueprint_path: str, states: int, seed: int) -> tuple[nlhe.HandState, np.ndarray]:
  """At least `states` decision states of the blueprint in duplicate matches against `OPPONENTS`."""
  recorder = Recorder(load_policy(blueprint_path))
  hands = 2 * ((states // len(OPPONENTS)) // 5 + 2)  # about 5 decisions of the blueprint a deal pair
  for number, opponent in enumerate(OPPONENTS):
    match.play_match(recorder, bots.resolve_policy(opponent), hands, seed=seed + number)
  state = nlhe.concatenate([q[0] for q in recorder.queries])
  return state, np.concatenate([q[1] for q in recorder.queries])


def _possible(state: nlhe.HandState, pairs: np.ndarray) -> np.ndarray:
  """bool [n, K]: whether each pair [n, K, 2] shares no card with its state's visible board."""
  board = nlhe.visible_board(state)  # [n, 5], -1 unseen
  return ~(pairs[:, :, :, None] == board[:, None, None, :]).any((2, 3))


def fields(prefix: str, state: nlhe.HandState) -> dict:
  return {f'{prefix}_{k}': v for k, v in state._asdict().items() if k != 'rules'}


def main() -> None:
  parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
  parser.add_argument('blueprint')
  parser.add_argument('bot', help='the directory `jaxcfr bot export BLUEPRINT` wrote')
  parser.add_argument('--states', type=int, default=10_000)
  parser.add_argument('--range-states', type=int, default=300, help='states also asked for all 1,326 pairs')
  parser.add_argument('--seed', type=int, default=0)
  parser.add_argument('--json')
  args = parser.parse_args()
  started = time.monotonic()
  state, holes = record(args.blueprint, args.states, args.seed)
  rng = np.random.default_rng(args.seed)
  chosen = np.sort(rng.choice(len(state.street), min(args.range_states, len(state.street)), replace=False))
  ranged = nlhe.take(state, chosen)
  all_pairs = np.broadcast_to(
    np.array([[a, b] for a in range(52) for b in range(a + 1, 52)]), (len(chosen), 1326, 2)
  )
  library = load_policy(args.blueprint)
  expected = {'own': library.strategy(state, holes), 'range': library.strategy(ranged, all_pairs)}
  with tempfile.TemporaryDirectory() as scratch:
    np.savez(
      os.path.join(scratch, 's.npz'),
      own_holes=holes,
      range_holes=all_pairs,
      **fields('own', state),
      **fields('range', ranged),
    )
    with open(os.path.join(scratch, 'in_the_bot.py'), 'w') as f:
      f.write(IN_THE_BOT)
    bot = os.path.abspath(args.bot)
    script, states_file, answers_file = (
      os.path.join(scratch, n) for n in ('in_the_bot.py', 's.npz', 'a.npz')
    )
    command = [sys.executable, '-I', script, bot, states_file, answers_file]
    done = subprocess.run(command, capture_output=True, text=True, check=False, cwd=scratch)
    if done.returncode:
      sys.exit(done.stderr)
    where = json.loads(done.stdout.splitlines()[-1])
    with np.load(os.path.join(scratch, 'a.npz')) as answers:
      same_actions, largest = True, {}
      for part, (actions, probabilities) in expected.items():
        for name, value in actions._asdict().items():
          same_actions &= bool(np.array_equal(answers[f'{part}_{name}'], value))
        gap = np.abs(answers[f'{part}_probabilities'] - probabilities).max(-1)  # [n, K]
        if part == 'range':  # the pairs a state's visible board leaves (the others are no hands)
          gap = np.where(_possible(ranged, all_pairs), gap, 0.0)
        largest[part] = float(gap.max())
  report = {
    'blueprint': args.blueprint, 'bot': args.bot, 'states': int(len(state.street)),
    'states_by_street': {name: int((state.street == i).sum()) for i, name in enumerate(STREETS)},
    'range_states': int(len(chosen)), 'opponents': OPPONENTS, 'same_actions': same_actions,
    'largest_probability_difference': largest, 'runtime_from_the_bot': where['from_the_bot'],
    'jax_in_the_bot': where['jax'], 'seconds': round(time.monotonic() - started, 1),
  }  # fmt: skip
  text = json.dumps(report, indent=1)
  print(text)
  if args.json:
    with open(args.json, 'x') as f:
      f.write(text + '\n')


if __name__ == '__main__':
  main()
