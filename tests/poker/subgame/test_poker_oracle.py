"""The OpenSpiel `universal_poker` oracle (`tests/oracles/poker_oracle.py`) checked against hand
computations, OpenSpiel's own dealing and evaluation, and `abstractions.hand_rank`."""

import numpy as np
import pytest

pyspiel = pytest.importorskip('pyspiel')

import jax.numpy as jnp  # noqa: E402
import poker_oracle as oracle  # noqa: E402

import abstractions  # noqa: E402
import jaxcfr  # noqa: E402

cards = oracle.parse_cards

# The river tree of pot 100, 300 chips behind: (betting, kind, contributions).
RIVER_100_300 = [
  ('', 'p0', (50, 50)),
  ('c', 'p1', (50, 50)),
  ('cc', 'showdown', (50, 50)),
  ('cp', 'p0', (50, 150)),
  ('cpf', 'fold', (50, 150)),
  ('cpc', 'showdown', (150, 150)),
  ('cpa', 'p1', (350, 150)),
  ('cpaf', 'fold', (350, 150)),
  ('cpac', 'showdown', (350, 350)),
  ('ca', 'p0', (50, 350)),
  ('caf', 'fold', (50, 350)),
  ('cac', 'showdown', (350, 350)),
  ('p', 'p1', (150, 50)),
  ('pf', 'fold', (150, 50)),
  ('pc', 'showdown', (150, 150)),
  ('pa', 'p0', (150, 350)),
  ('paf', 'fold', (150, 350)),
  ('pac', 'showdown', (350, 350)),
  ('a', 'p1', (350, 50)),
  ('af', 'fold', (350, 50)),
  ('ac', 'showdown', (350, 350)),
]


def one_hand(hole: str) -> np.ndarray:
  weights = np.zeros(len(oracle.HOLES))
  weights[oracle.hole_index(cards(hole))] = 1.0
  return weights


def compile64(spot):
  return jaxcfr.compile_game(spot, dtype=jnp.float64)


def uniform_value_by_hand(tree, winner_sign: int) -> float:
  """Player 0's value under uniform play on a betting tree where player 0's showdown
  result is `winner_sign`: a recursion over the dumped nodes."""
  nodes = {betting: (kind, spent) for betting, kind, spent in tree}

  def value(betting: str) -> float:
    kind, (spent0, spent1) = nodes[betting]
    if kind == 'fold':
      folder = (len(betting) - 1) % 2  # player 0 acts at even positions
      return -spent0 if folder == 0 else spent1
    if kind == 'showdown':
      return winner_sign * (spent1 if winner_sign > 0 else spent0)
    children = [b for b in nodes if len(b) == len(betting) + 1 and b.startswith(betting)]
    return sum(value(child) for child in children) / len(children)

  return value('')


def test_river_betting_tree_pot_and_all_in_sizes():
  spot = oracle.universal_poker_spot(
    6, 4, cards('7s6h4d2c2d'), 100, 300, (one_hand('6c6d'), one_hand('4c4h'))
  )
  assert oracle.betting_tree(spot) == RIVER_100_300
  # Where the pot raise is exactly all-in it is action 2 (pot) and there is no action 3.
  even = oracle.universal_poker_spot(
    6, 4, cards('7s6h4d2c2d'), 100, 100, (one_hand('6c6d'), one_hand('4c4h'))
  )
  assert [(b, k) for b, k, _ in oracle.betting_tree(even)] == [
    ('', 'p0'),
    ('c', 'p1'),
    ('cc', 'showdown'),
    ('cp', 'p0'),
    ('cpf', 'fold'),
    ('cpc', 'showdown'),
    ('p', 'p1'),
    ('pf', 'fold'),
    ('pc', 'showdown'),
  ]


def test_one_hand_each_river_values_by_hand():
  # 66 makes sixes full over 4s full: player 0 wins every showdown and both know it.
  spot = oracle.universal_poker_spot(
    6, 4, cards('7s6h4d2c2d'), 100, 300, (one_hand('6c6d'), one_hand('4c4h'))
  )
  assert oracle.showdown_sign(spot, cards('6c6d'), cards('4c4h')) == 1
  values = oracle.oracle_values(spot, iterations=200)
  assert values['game_value'] == pytest.approx(uniform_value_by_hand(RIVER_100_300, 1), abs=1e-9)
  assert values['game_value'] == pytest.approx(3650 / 27, abs=1e-9)
  # Player 1 folds to any bet, so player 0 wins the pot: +pot / 2.
  assert values['solved_value'] == pytest.approx(50.0, abs=0.1)
  assert values['solved_exploitability'] < 0.1
  assert values['tree'] == RIVER_100_300


def test_always_call_value_is_the_range_weighted_showdown():
  board = cards('7h5d3c2c2d')
  rng = np.random.default_rng(0)
  live = oracle.full_range(6, 3, board)
  ranges = (live * rng.random(len(live)) * (rng.random(len(live)) < 0.5), live * rng.random(len(live)))
  spot = oracle.universal_poker_spot(6, 3, board, 40, 100, ranges)
  compiled = compile64(spot)
  seen = set()

  def always_call(info: oracle.InfoState):
    seen.add((info.player, info.betting))
    assert info.board == tuple(sorted(board)) and ranges[info.player][info.hole_index] > 0
    return [0.0, 1.0, 0.0, 0.0]

  result = oracle.evaluate(compiled, oracle.policy_array(compiled, spot, always_call))
  assert seen == {(int(kind[1]), betting) for betting, kind, _ in oracle.betting_tree(spot) if kind[0] == 'p'}
  holes = np.array(oracle.HOLES)
  ranks = np.asarray(
    abstractions.hand_rank(jnp.asarray(np.concatenate([holes, np.tile(board, (len(holes), 1))], 1)))
  )
  total = expected = 0.0
  for h0, w0 in enumerate(ranges[0]):
    for h1, w1 in enumerate(ranges[1]):
      if w0 * w1 and not set(oracle.HOLES[h0]) & set(oracle.HOLES[h1]):
        total += w0 * w1
        expected += w0 * w1 * 20 * np.sign(int(ranks[h0]) - int(ranks[h1]))
  assert result['values'][0] == pytest.approx(expected / total, abs=1e-9)
  assert result['values'].sum() == pytest.approx(0.0, abs=1e-9)


def test_full_ranges_match_openspiel_dealing_and_evaluation():
  """With full ranges the spot is OpenSpiel's own subgame (card-by-card deal): same uniform
  value, and the same exploitability by OpenSpiel's own evaluator."""
  from open_spiel.python import policy as policy_lib  # noqa: PLC0415
  from open_spiel.python.algorithms import exploitability  # noqa: PLC0415

  board = cards('5c4d3h2c2d')
  live = oracle.full_range(4, 3, board)
  spot = oracle.universal_poker_spot(4, 3, board, 20, 60, (live, live))
  ours = oracle.evaluate(compiled := compile64(spot), oracle.uniform_policy(compiled))
  raw = oracle.evaluate(compile64(spot.game), oracle.uniform_policy(compile64(spot.game)))
  np.testing.assert_allclose(ours['values'], raw['values'], atol=1e-9)
  assert ours['exploitability'] == pytest.approx(raw['exploitability'], abs=1e-9)
  uniform = policy_lib.UniformRandomPolicy(spot.game)
  assert ours['nash_conv'] == pytest.approx(exploitability.nash_conv(spot.game, uniform), abs=1e-9)


def test_turn_spot_deals_the_river_and_player_0_acts_first():
  board = cards('6h5d3c2c')
  ranges = (one_hand('6c6d'), one_hand('4c4h'))
  spot = oracle.universal_poker_spot(5, 3, board, 100, 300, ranges)
  tree = oracle.betting_tree(spot)
  assert ('cc/', 'p0', (50, 50)) in tree and ('pc/', 'p0', (150, 150)) in tree
  assert ('pc/p', 'p1', (150, 150)) not in tree  # 300 in the pot, 200 behind: all-in only
  assert ('pc/a', 'p1', (350, 150)) in tree and ('ac/', 'showdown', (350, 350)) in tree
  compiled = compile64(spot)
  keys = [oracle.parse_information_state(key, 100, 300) for key in compiled.infoset_keys]
  assert {k.betting for k in keys if k.player == 0 and len(k.board) == 5} >= {'cc/', 'pc/', 'cpc/'}
  result = oracle.evaluate(compiled, oracle.policy_array(compiled, spot, lambda info: [0, 1, 0, 0]))
  rivers = [c for c in oracle.deck(5, 3) if c not in board + cards('6c6d4c4h')]
  signs = [oracle.showdown_signs(5, 3, np.array([cards('6c6d4c4h') + board + (r,)]))[0] for r in rivers]
  assert result['values'][0] == pytest.approx(50 * np.mean(signs), abs=1e-9)


def test_parse_information_state():
  info = oracle.parse_information_state(
    '[Round 1][Player: 0][Pot: 300][Money: 200 200][Private: 2s2h][Public: 7s6h5d4c3c][Sequences: r150c|]',
    100,
    300,
  )
  assert info == oracle.InfoState(
    0, (2, 3), oracle.hole_index((2, 3)), tuple(sorted(cards('7s6h5d4c3c'))), 'pc/'
  )
  key = '[Round 0][Player: 1][Pot: 700][Money: 0 0][Private: 4h4c][Public: 7s6h4d2d2c][Sequences: cr150r350]'
  assert oracle.parse_information_state(key, 100, 300).betting == 'cpa'
  key = '[Round 0][Player: 1][Pot: 200][Money: 250 250][Private: 4h4c][Public: 7s6h4d2d2c][Sequences: r350]'
  assert oracle.parse_information_state(key, 100, 300).betting == 'a'
  key = '[Round 0][Player: 1][Pot: 200][Money: 0 100][Private: 4h4c][Public: 7s6h4d2d2c][Sequences: r150]'
  assert oracle.parse_information_state(key, 100, 100).betting == 'p'  # the pot bet is all-in


def test_hand_reaches_order_and_card_removal():
  """OpenSpiel's handReaches (52-card deck only): our conversion puts each weight on the right
  pair, and P(h0, h1) is w0(h0) w1(h1) normalised over disjoint pairs."""
  w0, w1 = np.zeros(len(oracle.HOLES)), np.zeros(len(oracle.HOLES))
  w0[oracle.hole_index(cards('AsKs'))], w0[oracle.hole_index(cards('QdJc'))] = 1.0, 3.0
  w1[oracle.hole_index(cards('2c2d'))], w1[oracle.hole_index(cards('AsQs'))] = 1.0, 5.0
  parameters = oracle.universal_poker_parameters(13, 4, cards('Kh9d5c4s2h'), 100, 300)
  parameters['handReaches'] = oracle.hand_reaches_string((w0, w1))
  state = pyspiel.load_game('universal_poker', parameters).new_initial_state()
  dealt = {}
  for action, probability in state.chance_outcomes():
    if probability > 0:
      child = state.child(action)
      holes = [child.information_state_string(p).split('Private: ')[1][:4] for p in (0, 1)]
      dealt[tuple(tuple(sorted(cards(h))) for h in holes)] = probability
  pair = lambda text: tuple(sorted(cards(text)))  # noqa: E731
  assert dealt == pytest.approx(
    {
      (pair('QdJc'), pair('2c2d')): 3 / 19,
      (pair('QdJc'), pair('AsQs')): 15 / 19,
      (pair('AsKs'), pair('2c2d')): 1 / 19,
    }
  )


def showdowns_agree(num_ranks, num_suits, deals):
  signs = oracle.showdown_signs(num_ranks, num_suits, deals)
  ranks = [
    np.asarray(abstractions.hand_rank(jnp.asarray(np.concatenate([deals[:, i : i + 2], deals[:, 4:]], 1))))
    for i in (0, 2)
  ]
  np.testing.assert_array_equal(np.sign(ranks[0].astype(np.int64) - ranks[1]), signs)
  assert 0 < (signs == 0).mean() < 0.5  # ties happen, and are compared too


@pytest.mark.parametrize(('num_ranks', 'num_suits'), [(13, 4), (6, 4), (6, 3), (5, 3)])
def test_showdowns_agree_with_hand_rank(num_ranks, num_suits):
  showdowns_agree(
    num_ranks, num_suits, oracle.random_deals(num_ranks, num_suits, 5000, seed=num_ranks * 10 + num_suits)
  )


@pytest.mark.slow
def test_showdowns_agree_with_hand_rank_on_every_5x3_deal():
  showdowns_agree(5, 3, oracle.all_deals(5, 3))
