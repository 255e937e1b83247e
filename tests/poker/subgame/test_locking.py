"""Node locking (`locking`, `jaxcfr subgame --lock`): locked hands play their locked strategy, the rest
converges against it, and exploitability is the locked game's.

Oracles: a node locked to the equilibrium's own strategy leaves both EVs where they were; with every
OOP decision locked, IP's value is its best response to that strategy, computed here by a plain loop
over IP's hands with pokerkit's hand ranking; the blocked turn solver agrees with the whole tree's.
`experiments/lock_peer.py` holds the same river spot against postflop-solver's own locking.
"""

from __future__ import annotations

import json

import jax.numpy as jnp
import numpy as np
import pokerkit
import pytest
from cli_runner import run_cli

from jaxcfr.poker.rules import cards, ranges
from jaxcfr.poker.rules.cards import PokerInputError
from jaxcfr.poker.subgame import explorer, grid, locking, solving
from jaxcfr.poker.subgame import game as subgame
from jaxcfr.poker.subgame.tree import DECISION, FOLD

RIVER = solving.SpotSpec(
  board='Td9d6hQc3s', pot=200, stack=900,
  ranges=('AA,KK,QQ,JJ,AK,AQ,KQ,QJs,T9s,98s,76s,A5s', 'TT,99,66,33,AJ,KJ,QT,JT,T8s,87s,KTs'),
  bets='60%,a', raises='2.5x',
)  # fmt: skip
TURN = solving.SpotSpec(
  board='Td9d6hQc', pot=200, stack=300,
  ranges=('AA,KK,QQ,AK,AQ,JT,98s', 'JJ,TT,99,AJ,KQ,T8s'), bets='a', raises='a',
)  # fmt: skip


@pytest.fixture(scope='module')
def river():
  game = RIVER.build()
  return game, solving.solve(game, target_pct=0.02)


def made_up(game: subgame.Subgame, player: int, shift: int = 0) -> np.ndarray:
  """[D, A, H] a strategy for every decision of `player` (NaN elsewhere) that differs by hand and
  action: weights 1 + (7 c0 + 13 c1 + 5 a + shift) mod 11 over each node's actions, normalised."""
  tree, info = game.tree, game.tree.info
  hands = np.asarray(game.spot.hands)
  rows = np.full((tree.num_decisions, tree.num_actions, game.num_hands), np.nan)
  for row, node in enumerate(info.decisions):
    if node < 0 or info.nodes[node].player != player:
      continue
    count = len(info.nodes[node].labels)
    weights = 1.0 + (7 * hands[:, 0] + 13 * hands[:, 1] + 5 * np.arange(count)[:, None] + shift) % 11
    rows[row] = 0.0
    rows[row, :count] = weights / weights.sum(0)
  rows[:, :, np.asarray(game.spot.ranges[player]) == 0] = np.nan
  return rows


def best_response_by_loop(game: subgame.Subgame, locked: np.ndarray) -> float:
  """IP's best-response value per deal against OOP's strategy `locked` [D, A, H] at every OOP
  decision of a river spot: a recursion over the tree for each IP hand, OOP's hands a loop at the
  leaves, the showdowns ranked by pokerkit."""
  info, pot = game.tree.info, game.tree.info.config.pot
  hands = np.asarray(game.spot.hands)
  weights = np.asarray(game.spot.ranges, np.float64)
  board = ''.join(cards.card_text(int(c)) for c in np.asarray(game.spot.board))
  strength = [pokerkit.StandardHighHand.from_game(cards.hand_text(pair), board) for pair in hands]
  row_of = {node: row for row, node in enumerate(info.decisions) if node >= 0}
  nodes = info.nodes
  oop_hands = [o for o in range(len(hands)) if weights[0, o] > 0]

  def value(node: int, ip: int, reach: dict) -> float:
    item = nodes[node]
    if item.kind == DECISION:
      children = item.children
      if item.player == 1:
        return max(value(child, ip, reach) for child in children)
      row = row_of[node]
      return sum(
        value(child, ip, {o: r * locked[row, a, o] for o, r in reach.items()})
        for a, child in enumerate(children)
      )
    total = 0.0
    for o, r in reach.items():
      if set(hands[o]) & set(hands[ip]):
        continue
      if item.kind == FOLD:
        total += r * (-(pot / 2 + item.added[1]) if item.player == 1 else pot / 2 + item.added[0])
      else:
        sign = (strength[ip] > strength[o]) - (strength[ip] < strength[o])
        total += r * sign * (pot / 2 + item.added[0])
    return total

  root = {o: weights[0, o] for o in oop_hands}
  ip_total = sum(weights[1, h] * value(0, h, root) for h in range(len(hands)) if weights[1, h] > 0)
  return ip_total / float(subgame.normalizer(game))


def test_a_lock_on_the_equilibriums_own_strategy_keeps_both_evs(river):
  game, free = river
  policy = np.asarray(free.policy, np.float64)
  rows = np.full(policy.shape, np.nan)
  ip_check = solving.decision_lines(game)
  ip_row = next(row for row, line in ip_check.items() if line == ('x',))
  for row, player in ((0, 0), (ip_row, 1)):
    rows[row] = policy[row] / policy[row].sum(0)
    rows[row][:, np.asarray(game.spot.ranges[player]) == 0] = np.nan
  locked_game = locking.lock(game, rows)
  result = solving.solve(locked_game, target_pct=0.02)
  tolerance = free.exploitability + result.exploitability
  np.testing.assert_allclose(result.ev, free.ev, atol=tolerance)
  average = np.asarray(result.policy)
  for row in (0, ip_row):  # the locked hands play the lock, whatever their reach
    fixed = ~np.isnan(rows[row, 0])
    np.testing.assert_allclose(average[row][:, fixed], rows[row][:, fixed], atol=1e-6)
  assert locking.summary(locked_game)['nodes'] == 2


def test_locked_at_every_oop_decision_ip_earns_its_best_response(river):
  game, _ = river
  rows = made_up(game, 0)
  locked_game = locking.lock(game, rows)
  result = solving.solve(locked_game, target_pct=0.02, eval_every=20)
  pot = RIVER.pot
  expected = best_response_by_loop(game, rows) + pot / 2  # IP's share of the pot
  assert abs(result.ev[1] - expected) <= 0.0005 * pot, (result.ev[1], expected)
  assert result.ev[1] <= expected + 1e-3  # no strategy of IP's beats its best response
  # The locked game's best responses keep the locks: OOP, locked everywhere, gains nothing.
  policy = jnp.asarray(result.policy)
  best = np.asarray(subgame.best_response_values(locked_game, policy))
  values = np.asarray(subgame.expected_values(locked_game, policy))
  assert abs(best[0] - values[0]) < 1e-3
  assert abs(result.exploitability - (best[1] - values[1]) / 2) < 1e-3
  # Without the lock OOP's best response gains a lot against this made-up strategy.
  free_best = np.asarray(subgame.best_response_values(game, policy))
  assert free_best[0] - values[0] > 1.0


def test_a_wrong_lock_fails_the_oracle(river):
  """The oracle can fail: a solve locked to another strategy than the loop's is far from its value."""
  game, _ = river
  rows = made_up(game, 0)
  result = solving.solve(locking.lock(game, made_up(game, 0, shift=3)), iterations=100, eval_every=50)
  assert abs(result.ev[1] - (best_response_by_loop(game, rows) + RIVER.pot / 2)) > 0.0005 * RIVER.pot


# The packed layout (`compact`) runs the same lock code through `_unpacked`: behind -m slow.
# Both behind -m slow for the default suite's 10 minutes (the river's lock tests run by default).
@pytest.mark.parametrize(
  'layout', [pytest.param('blocks', marks=pytest.mark.slow), pytest.param('compact', marks=pytest.mark.slow)]
)
def test_a_blocked_turn_solve_keeps_the_locks_and_agrees_with_the_whole_trees(layout):
  board = cards.parse_board(TURN.board)
  weights = [ranges.parse_range(text) for text in TURN.ranges]
  games = {}
  for name, options in (
    ('whole', {'blocks': False}),
    (layout, {'blocks': True, 'per_player': layout == 'compact'}),
  ):
    game = subgame.build_subgame(TURN.config(), board, weights, range_hands=True, **options)
    specs = ['root=x:0.4,a300:0.6', 'x,x,*=a300:AA,KK,JT;x:rest', 'x,a300=c:AA,KK,AK;f:rest']
    games[name] = locking.lock(game, locking.rows(game, specs))
  assert games[layout].blocks is not None
  results = {name: solving.solve(game, target_pct=0.05) for name, game in games.items()}
  tolerance = sum(result.exploitability for result in results.values())
  np.testing.assert_allclose(results['whole'].ev, results[layout].ev, atol=tolerance)
  game, result = games[layout], results[layout]
  locked = np.asarray(subgame.locked_rows(game))
  average = np.asarray(result.policy)
  fixed = ~np.isnan(locked[:, 0])  # [D, H]
  assert fixed.sum() > 0
  np.testing.assert_allclose(average.transpose(0, 2, 1)[fixed], locked.transpose(0, 2, 1)[fixed], atol=1e-6)
  # The check from the solver's state and the one from the laid-out policy: one locked game.
  profile = game.evaluate_profile(jnp.asarray(average))
  np.testing.assert_allclose(float(profile[0]) / 2, result.exploitability, atol=2e-3)


def test_lock_specs_read_as_the_module_says(river, tmp_path):
  game, free = river
  lines = solving.decision_lines(game)
  root = 0  # the first decision's row
  assert [grid.token(label) for label in game.tree.info.nodes[0].labels] == ['x', 'b120', 'a900']
  mix = locking.rows(game, ['root=x:0.25,b120:0.75'])
  oop = np.asarray(game.spot.ranges[0]) > 0
  np.testing.assert_allclose(mix[root, :3][:, oop], np.array([[0.25], [0.75], [0.0]]) * np.ones(oop.sum()))
  assert np.isnan(mix[root][:, ~oop]).all() and np.isnan(np.delete(mix, root, 0)).all()
  by_range = locking.rows(game, ['root=b120:QQ+,AK:0.5;x:rest'])
  hands = np.asarray(game.spot.hands)
  text = [cards.hand_text(pair) for pair in hands]
  aces = text.index('AsAh') if 'AsAh' in text else text.index('AhAs')
  ace_king = next(h for h, t in enumerate(text) if t[0] == 'A' and t[2] == 'K' and oop[h])
  seventy_six = next(h for h, t in enumerate(text) if t[0] == '7' and oop[h])
  np.testing.assert_allclose(by_range[root, :3, aces], [0, 1, 0])
  np.testing.assert_allclose(by_range[root, :3, ace_king], [0.5, 0.5, 0])
  np.testing.assert_allclose(by_range[root, :3, seventy_six], [1, 0, 0])
  some = locking.rows(game, ['root=b120:QQ+'])  # no 'rest': the other hands stay free
  assert not np.isnan(some[root, 0, aces]) and np.isnan(some[root, 0, seventy_six])
  # A saved strategy's node: the same probabilities, hands matched by their cards.
  path = tmp_path / 'free.npz'
  solving.save_strategy(str(path), free)
  saved = locking.rows(game, [f'x,b120={path}'])
  row = next(r for r, line in lines.items() if line == ('x', 'b120'))
  assert int(game.tree.decision_player[row]) == 0  # OOP's answer to the bet
  policy = np.asarray(free.policy)[row][:, oop]
  np.testing.assert_allclose(saved[row][:, oop], policy / policy.sum(0), atol=1e-6)
  assert np.isnan(saved[row][:, ~oop]).all()
  # '*' stands for any dealt card: on the turn spot every river card's decision.
  turn = TURN.build()
  wild = locking.rows(turn, ['x,x,*=x:1'])
  locked = {row for row in range(wild.shape[0]) if not np.isnan(wild[row, 0]).all()}
  assert len(locked) == 48 and all(solving.decision_lines(turn)[row][:2] == ('x', 'x') for row in locked)


@pytest.mark.parametrize(
  ('spec', 'message'),
  [
    ('b120', 'write NODE=SPEC'),
    ('root=x:0.5,b120:0.4', 'sum to 0.9, not 1'),
    ('root=b200:1', "no action 'b200' there; the node has x, b120, a900"),
    ('zz=x:1', "no 'zz' after the root"),
    ('root=b120:AA:0.5', "add ';ACTION:rest'"),
    ('root=b120:AA;x:AA', 'is given more than all of it'),
    ('root=b120:AA;x:rest;a:rest', "'rest' given twice"),
    ('root=b120:ZZ', "range 'ZZ'"),
    ('root=nothing.npz', "no file 'nothing.npz'"),
  ],
)
def test_a_bad_lock_is_one_clear_line(river, spec, message):
  game, _ = river
  with pytest.raises(PokerInputError, match=None) as error:
    locking.rows(game, [spec])
  assert message in str(error.value) and '\n' not in str(error.value)


def test_a_hand_locked_twice_and_the_wrong_player_are_refused(river):
  game, _ = river
  with pytest.raises(PokerInputError, match='already locked at root'):
    locking.rows(game, ['root=x:1', 'root=b120:AA;x:rest'])
  with pytest.raises(PokerInputError, match='OOP acts there, not IP'):
    locking.rows(game, ['root=x:1'], player=1)
  with pytest.raises(ValueError, match='sum to 1'):
    rows = np.full((game.tree.num_decisions, game.tree.num_actions, game.num_hands), np.nan)
    rows[0, :, 0] = [0.5, 0.2, 0.0]
    locking.lock(game, rows)


def test_the_command_locks_reports_and_marks_the_explorer(tmp_path):
  report, strategy = tmp_path / 'locked.json', tmp_path / 'locked.npz'
  spot = [
    '--board', RIVER.board, '--pot', str(RIVER.pot), '--stack', str(RIVER.stack),
    '--oop-range', RIVER.ranges[0], '--ip-range', RIVER.ranges[1], '--bets', RIVER.bets,
    '--raises', RIVER.raises, '--target', '0.1',
  ]  # fmt: skip
  code, out, err = run_cli(
    'subgame', *spot, '--lock', 'root=x:1', '--lock', 'x,b120=c:QQ+;f:rest', '--json', str(report),
    '--strategy-out', str(strategy), '--quiet',
  )  # fmt: skip
  assert code == 0, err
  payload = json.loads(report.read_text())
  assert payload['locked']['nodes'] == 2
  assert {item['node'] for item in payload['locked']['locked']} == {'root', 'x,b120'}
  metadata, arrays = solving.load_strategy(str(strategy))
  assert metadata['nodes'][0]['locked'] > 0 and 'locked' not in metadata['nodes'][1]
  np.testing.assert_allclose(arrays['probabilities'][0, 0][arrays['ranges'][0] > 0], 1.0)
  page = explorer.data(metadata, arrays)
  assert [node['locked'] > 0 for node in page['nodes']].count(True) == 2
  code, out, err = run_cli('subgame', *spot, '--lock', 'root=x:0.5')
  assert code == 2 and err.strip().count('\n') == 0 and 'sum to 0.5, not 1' in err
