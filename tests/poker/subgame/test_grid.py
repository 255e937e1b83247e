"""The range grid (`jaxcfr subgame --plot`, `jaxcfr subgame show`) against plain loops over hands."""

from __future__ import annotations

import json

import numpy as np
import pytest
from cli_runner import run_cli

from jaxcfr.poker.rules import cards
from jaxcfr.poker.rules.cards import PokerInputError
from jaxcfr.poker.subgame import grid, solving

RANK = {r: i for i, r in enumerate(cards.RANKS)}


def _strategy(seed=0):
  """A made-up turn strategy: OOP checks or bets, IP folds, calls or raises, then a river card and
  OOP again; random probabilities and ranges over every hand the board leaves."""
  rng = np.random.default_rng(seed)
  board = cards.parse_cards('Td9d6hQc')
  hands = cards.hands(cards.FULL_DECK, board)
  nodes = [
    {'player': 'oop', 'line': [], 'actions': ['check', 'bet 120']},
    {'player': 'ip', 'line': ['bet 120'], 'actions': ['fold', 'call', 'raise 300']},
    {'player': 'oop', 'line': ['bet 120', 'call', 'deal 3s'], 'actions': ['check', 'bet 200', 'all-in 780']},
  ]
  probabilities = np.zeros((3, 3, len(hands)), np.float32)
  for row, node in enumerate(nodes):
    mix = rng.dirichlet(np.ones(len(node['actions'])), size=len(hands)).T
    probabilities[row, : len(node['actions'])] = mix
  metadata = {'board': ['Td', '9d', '6h', 'Qc'], 'pot': 200, 'nodes': nodes}
  arrays = {'probabilities': probabilities, 'hands': hands, 'ranges': rng.uniform(size=(2, len(hands)))}
  return metadata, arrays


def _name(pair) -> str:
  (r1, s1), (r2, s2) = sorted(((c // 4, c % 4) for c in pair), reverse=True)
  high, low = cards.RANKS[r1], cards.RANKS[r2]
  return high * 2 if r1 == r2 else high + low + ('s' if s1 == s2 else 'o')


def test_cells_equal_a_loop_over_hands():
  """The river decision: OOP's range times its bet at the root, hands holding the 3s out; each cell the
  class's weighted mix, at the row and column a chart puts it."""
  metadata, arrays = _strategy()
  row = grid.find_node(metadata['nodes'], 'b120,c,3s')
  assert row == 2
  total, mix, actions, combos = grid.cells(metadata, arrays, row)
  assert actions == ['check', 'bet 200', 'all-in 780']
  three = cards.parse_card('3s')
  expect_total, expect_mix, expect_combos = {}, {}, {}
  for h, pair in enumerate(arrays['hands']):
    name = _name(pair)
    weight = 0.0 if three in pair else arrays['ranges'][0][h] * arrays['probabilities'][0, 1, h]
    expect_total[name] = expect_total.get(name, 0.0) + weight
    expect_combos[name] = expect_combos.get(name, 0) + 1
    expect_mix[name] = expect_mix.get(name, 0.0) + weight * arrays['probabilities'][2, :3, h]
  for r in range(13):
    for c in range(13):
      name = grid.class_name(r, c)
      if name not in expect_total:
        assert total[r, c] == 0 and combos[r, c] == 0, name
        continue
      assert total[r, c] == pytest.approx(expect_total[name], rel=1e-6), name
      assert combos[r, c] == expect_combos[name], name
      assert mix[r, c] == pytest.approx(expect_mix[name] / expect_total[name], rel=1e-5), name
  # A chart's places: AKs top row, AKo first column, pairs on the diagonal.
  assert (grid.class_name(0, 1), grid.class_name(1, 0), grid.class_name(4, 4)) == ('AKs', 'AKo', 'TT')


def test_the_opponents_actions_do_not_change_a_players_range():
  metadata, arrays = _strategy()
  reach = grid.reach(metadata, arrays, 1)  # IP facing the bet: its own range, untouched
  np.testing.assert_array_equal(reach, arrays['ranges'][1])


@pytest.mark.parametrize(
  ('path', 'message'),
  [('b999', "no 'b999' after the root"), ('b120,c', 'add a dealt card'), ('x', 'leads to no further')],
)
def test_a_path_off_the_tree_names_what_follows(path, message):
  metadata, _ = _strategy()
  with pytest.raises(PokerInputError, match=message):
    grid.find_node(metadata['nodes'], path)


def test_all_in_and_case_are_forgiven():
  metadata, _ = _strategy()
  assert grid.find_node(metadata['nodes'], 'B120, C, 3S') == 2
  assert grid.find_node(metadata['nodes'], '') == 0


def write_strategy(path):
  """The made-up strategy as a file `jaxcfr subgame --strategy-out` would write (no solve)."""
  metadata, arrays = _strategy()
  metadata = {**metadata, 'format': solving.STRATEGY_FORMAT, 'stack': 900, 'exploitability_pct': 1.0}
  np.savez_compressed(path, **arrays, metadata=np.frombuffer(json.dumps(metadata).encode(), np.uint8))


def test_show_draws_a_saved_strategys_grid(tmp_path):
  strategy, png = tmp_path / 'strategy.npz', tmp_path / 'grid.png'
  write_strategy(strategy)
  code, out, err = run_cli('subgame', 'show', str(strategy), '--node', 'b120,c,3s', '--plot', str(png))
  assert code == 0, err
  assert png.read_bytes()[:8] == b'\x89PNG\r\n\x1a\n' and png.stat().st_size > 10_000
  no = tmp_path / 'no.png'
  code, out, err = run_cli('subgame', 'show', str(strategy), '--node', 'b7', '--plot', str(no))
  assert code == 2 and 'Traceback' not in err and "no 'b7'" in err
  assert not no.exists()


def test_a_bad_node_fails_before_the_solve(tmp_path):
  code, out, err = run_cli(
    'subgame', '--board', 'Td9d6hQc3s', '--pot', '200', '--stack', '900', '--oop-range', 'QQ+,AK',
    '--ip-range', 'JJ+,AQ+', '--bets', '50%', '--raises', '', '--node', 'r5',
    '--plot', str(tmp_path / 'g.png'),
  )  # fmt: skip
  assert code == 2 and "no 'r5'" in err and 'Traceback' not in err
  assert not list(tmp_path.iterdir())
