"""Depth-limited flop search (`jaxcfr.poker.search.depth_limited`): the round game's values and best responses
against the public-tree subgame on a river spot, its solver's convergence there, the leaf matrices
against a hand-by-hand recursion through the real game's engine (its showdowns and payoffs), the
flop trees' leaf lines in the real game, and the search bot on the flop."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from test_search import Scripted, random_states, warm_start_gaps

from jaxcfr.poker.eval import match
from jaxcfr.poker.rules import cards, nlhe
from jaxcfr.poker.rules.cards import parse_cards
from jaxcfr.poker.search import bot as search
from jaxcfr.poker.search import depth_limited
from jaxcfr.poker.subgame import game as subgame
from jaxcfr.poker.subgame import showdown, tree

FOLD, CALL, RAISE = nlhe.FOLD, nlhe.CALL, nlhe.RAISE


class Shallow(Scripted):
  """`Scripted` with at most one bet or raise a round, so that whole continuation trees stay small."""

  name = 'shallow'

  def strategy(self, state, holes):
    actions, probs = super().strategy(state, holes)
    valid = actions.valid & ((actions.kind != RAISE) | (state.raises[:, None] < 1))
    probs = probs * valid[:, None, :]
    return actions._replace(valid=valid), probs / probs.sum(2, keepdims=True)


def river_round_game(config, board, ranges, deck):
  """A river spot as the public-tree subgame (float64) and as a `RoundGame` (showdowns by a sign
  matrix)."""
  game = subgame.build_subgame(config, board, ranges, deck, dtype=jnp.float64)
  nodes = game.tree.info.nodes
  hands = np.asarray(game.spot.hands)
  sign = showdown.sign_matrix(hands, showdown.strengths(hands, np.array([board])))[0].astype(np.float32)
  outcomes = {i: (0, config.pot / 2 + n.added[0]) for i, n in enumerate(nodes) if n.kind == tree.SHOWDOWN}
  round_game = depth_limited.round_game(
    nodes, np.asarray(game.spot.ranges), hands, config.pot, outcomes, 0, [sign]
  )
  return game, round_game


def test_the_round_game_values_a_river_spot_as_the_public_tree_does():
  deck = cards.Deck(9, 4)  # 2 to T: 465 hands on the river, the same code as the full deck's 1,081
  board = cards.parse_board('Td9d6h5c3s', deck)
  config = tree.TreeConfig(3, 200, 900, (tree.street_sizes('50%,a', 'a'),) * 3, deck_size=deck.size)
  rng = np.random.default_rng(0)
  game, round_game = river_round_game(config, board, rng.random((2, 1326)), deck)
  legal = np.asarray(game.tree.legal)
  policy = rng.random((legal.shape[0], legal.shape[1], game.num_hands)) * legal
  policy /= policy.sum(1, keepdims=True)
  row = {node: r for r, node in enumerate(game.tree.info.decisions)}
  mine = {k: policy[row[round_game.origin[k]], : len(round_game.children[k])] for k in round_game.decisions}
  values, best = depth_limited.evaluate(round_game, mine)
  both = jax.jit(
    lambda game, policy: (subgame.expected_values(game, policy), subgame.best_response_values(game, policy))
  )
  theirs, their_best = both(game, jnp.asarray(policy))
  np.testing.assert_allclose(values, theirs, rtol=1e-5)  # the round game's products are float32
  np.testing.assert_allclose(best, their_best, rtol=1e-5)
  assert abs(values.sum()) < 1e-5 * abs(values).max()  # zero-sum
  # Solved, it is near equilibrium by this evaluation (the one checked above).
  average, iterations = depth_limited.solve(round_game, iterations=100)
  assert iterations == 100 and depth_limited.exploitability(round_game, average) < 0.005 * config.pot


def leaf(history):
  """One hand after `history` (kind, amount) from the deal with a fixed flop As Kd 7c (hole cards
  elsewhere)."""
  board = parse_cards('AsKd7c2h3s')
  hole = np.array([[parse_cards('9c9d'), parse_cards('QhJh')]])
  return nlhe.replay(
    nlhe.initial(hole, np.array([board]), noise=np.random.default_rng(5).random((1, 210))),
    np.array([[k for k, _ in history]]),
    np.array([[a for _, a in history]]),
  )


def brute_force(policy, hand, runouts, seat1, seat0, chooser, continuations):
  """[C]: what seat 1 holding `seat1` wins from seat 0 holding `seat0` after `hand` when the chooser
  plays each continuation, the mean over the runouts that share no card with them, by recursion
  through `nlhe` with one-pair queries (the chooser's probabilities of the biased kind times 5 and
  renormalised) and the engine's payoffs at the end."""
  kinds = {1: FOLD, 2: CALL, 3: RAISE}
  ends, weights = [], []  # terminal states and their probabilities per continuation

  def walk(state, reach):
    if state.finished[0]:
      ends.append(state), weights.append(reach)
      return
    seat = int(state.to_act[0])
    actions, probs = policy.strategy(state, state.hole[:, seat][:, None])
    p = np.repeat(np.asarray(probs)[0, :1], continuations, 0)  # [C, A]
    if seat == chooser:
      for c in range(1, continuations):
        p[c] *= np.where(actions.valid[0] & (actions.kind[0] == kinds[c]), 5.0, 1.0)
        p[c] /= p[c].sum()
    for a in np.flatnonzero(actions.valid[0]):
      walk(nlhe.apply(state, actions.kind[:, a], actions.amount[:, a]), reach * p[:, a])

  flop = hand.board[0, :3].tolist()
  counted = 0
  for turn, river in runouts:
    if {int(turn), int(river)} & {*seat1, *seat0}:
      continue
    n = int(hand.num_actions[0])
    state = nlhe.initial(np.array([[seat0, seat1]]), np.array([[*flop, turn, river]]), noise=hand.noise)
    walk(nlhe.replay(state, hand.history[:, :n, 1], hand.history[:, :n, 2]), np.ones(continuations))
    counted += 1
  if not counted:
    return np.zeros(continuations)
  won = nlhe.payoffs(nlhe.concatenate(ends))[:, 1].astype(np.float64)
  return (np.array(weights) * won[:, None]).sum(0) / counted


@pytest.mark.parametrize(
  'history,chooser',
  [
    ([(CALL, 0), (CALL, 0), (CALL, 0), (CALL, 0)], 0),  # limped, checked through the flop
    ([(CALL, 0), (CALL, 0), (RAISE, 150), (CALL, 0)], 1),  # a flop bet called
    ([(CALL, 0), (CALL, 0), (RAISE, 19_900), (CALL, 0)], 0),  # all-in on the flop: no decisions left
  ],
)
def test_leaf_matrices_equal_a_hand_by_hand_recursion_through_the_engine(history, chooser):
  hand = leaf(history)
  flop = hand.board[0, :3]
  runouts = depth_limited.runout_tables(flop, depth_limited.sample_runouts(np.random.default_rng(1), flop, 3))
  policy = Shallow()
  continuations = 1 if hand.finished[0] else 4
  matrices = depth_limited.leaf_matrices(policy, hand, runouts, chooser, continuations)
  assert matrices.shape == (continuations, 1176, 1176)
  rng = np.random.default_rng(2)
  hands = runouts.hands
  checked = 0
  for i, j in rng.integers(0, len(hands), (12, 2)):
    seat1, seat0 = hands[i].tolist(), hands[j].tolist()
    expected = np.zeros(continuations)
    if not set(seat1) & set(seat0):
      expected = brute_force(policy, hand, runouts.cards, seat1, seat0, chooser, continuations)
    np.testing.assert_allclose(matrices[:, i, j], expected, rtol=1e-4, atol=1e-3)
    checked += np.count_nonzero(expected)
  assert checked >= 8 * continuations  # the checks met real values
  if continuations > 1:  # the biases change what the chooser does
    assert not np.allclose(matrices[0], matrices[1]) and not np.allclose(matrices[0], matrices[3])


def test_a_flop_search_answers_legally_and_deterministically_and_converges():
  """The search bot on the flop (depth-limited over a test blueprint): legal real actions that the
  match engine accepts, the same answer from a fresh bot, and a depth-limited game that more
  iterations solve further."""
  states = random_states(9, 32, 6)
  states = nlhe.take(states, np.flatnonzero(states.street == 1)[:1])
  holes = states.hole[[0], states.to_act][:, None]
  answers, gaps = [], []
  for iterations in (2, 20, 20):
    bot = search.search_policy(
      Shallow(), think_seconds=None, iterations=iterations, target_pct=None, streets=(1,), runouts=2
    )
    actions, probs = bot.strategy(states, holes)
    match.check_strategy(bot, actions, probs, 1)
    on = actions.valid[0]
    assert nlhe.is_legal(
      nlhe.take(states, np.zeros(on.sum(), int)), actions.kind[0, on], actions.amount[0, on]
    ).all()
    ((street, done, gap, _),) = bot.solves
    assert street == 1 and done == iterations
    answers.append(probs), gaps.append(gap)
  np.testing.assert_array_equal(answers[1], answers[2])
  assert gaps[1] < 0.2 * gaps[0]


def test_every_leaf_line_of_a_flop_round_is_legal_in_the_real_game():
  """Flop states after random play (off-tree sizes, raises, facing bets): each leaf's line of the
  flop round's tree, replayed through the real game, is legal and ends the round (the turn begins)
  or the betting (a called all-in)."""
  states = random_states(3, 64, 8)
  states = nlhe.take(states, np.flatnonzero(states.street == 1)[:24])
  assert len(states.street) == 24
  config = search.SearchConfig(streets=(1,))
  leaves = 0
  for b in range(len(states.street)):
    nodes = tree.build(search.subgame_config(states, b, config), first_round_only=True)
    for i, node in enumerate(nodes):
      if node.kind == tree.LEAF:
        hand = depth_limited.leaf_state(states, b, nodes, i)
        assert hand.finished[0] and hand.folded[0] < 0 or hand.street[0] == 2 and hand.num_actions[0] > 0
        leaves += 1
  assert leaves >= 48


def test_a_warm_start_carries_the_blueprint_into_flop_re_solves():
  """As on the river (`test_search`), through the round game's own solver: after K warm-start
  iterations alone the average strategy is the one played (wherever its player's reach is positive),
  and one DCFR iteration after K = 30 moves the root by at most that iteration's weight in DCFR's
  average, 31^3 / (1^3 + ... + 31^3) = 0.121 (the root's reach is the range in every iteration), from
  the blueprint's strategy on the search tree (the opponent's leaf choice: the blueprint's
  continuation); without a warm start the root is further from it."""
  states = random_states(9, 32, 6)
  state = nlhe.take(states, np.flatnonzero(states.street == 1)[:1])
  (cold, _), (warm, _) = warm_start_gaps(Shallow(), state, 1, (0, 30), runouts=2)
  assert warm <= 31**3 / sum(t**3 for t in range(1, 32)) + 1e-9 and cold > 0.2, (cold, warm)
  config = search.SearchConfig(streets=(1,), runouts=2)
  tree_config = search.subgame_config(state, 0, config)
  ranges = search.floor_ranges(search.track_ranges(Shallow(), state)[0], nlhe.visible_board(state)[0], 1e-3)
  game = depth_limited.flop_game(
    Shallow(), state, 0, tree_config, ranges, search.flop_runouts(state, 0, config)
  )
  played = search.flop_warm_policy(Shallow(), state, 0, game, tree_config)
  average, done = depth_limited.solve(game, 0, warm=played, warm_iterations=3)
  assert done == 0
  reach = depth_limited._reach(game, played)
  checked = 0
  for n in game.decisions:
    reached = reach[n][game.player[n]] > 0
    np.testing.assert_allclose(average[n][:, reached], played[n][:, reached], rtol=1e-12, atol=1e-12)
    checked += reached.sum()
  assert checked > 1000
