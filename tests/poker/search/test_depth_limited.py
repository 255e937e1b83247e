"""Depth-limited flop search (`jaxcfr.poker.search.depth_limited`): the round game's values and best responses
against the public-tree subgame on a river spot, its solver's convergence there, the leaf matrices
against a hand-by-hand recursion through the real game's engine (its showdowns and payoffs), the
flop trees' leaf lines in the real game, and the search bot on the flop."""

import time

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from test_search import (  # noqa: F401 (a fixture)
  BOARD,
  CATCHERS,
  VALUE,
  Scripted,
  ValueOnly,
  blueprint,
  random_states,
  warm_start_gaps,
)

import jaxcfr
from jaxcfr.poker import defaults
from jaxcfr.poker.eval import match
from jaxcfr.poker.rules import cards, nlhe
from jaxcfr.poker.rules.cards import parse_cards
from jaxcfr.poker.search import bot as search
from jaxcfr.poker.search import depth_limited
from jaxcfr.poker.subgame import game as subgame
from jaxcfr.poker.subgame import resolving, showdown, tree

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


def leaf(history, rules=nlhe.DEFAULT_RULES):
  """One hand of `rules` after `history` (kind, amount) from the deal with a fixed flop As Kd 7c and
  turn 2h (hole cards elsewhere)."""
  board = parse_cards('AsKd7c2h3s')
  hole = np.array([[parse_cards('9c9d'), parse_cards('QhJh')]])
  noise = np.random.default_rng(5).random((1, nlhe.max_actions(rules)))
  return nlhe.replay(
    nlhe.initial(hole, np.array([board]), rules, noise),
    np.array([[k for k, _ in history]]),
    np.array([[a for _, a in history]]),
  )


def turn_weight(board, runouts, first, second):
  """A turn runout's share of the mean of two hands (`depth_limited.Runouts.hand_weight`), from its
  definition: with n(h) the runout cards hand h holds and d the most common n over the hands the turn
  leaves, (R - 2d) / ((R - d - n(first)) (R - d - n(second)))."""
  cards = set(np.asarray(runouts).ravel().tolist())
  left = [c for c in range(52) if c not in set(board.tolist())]
  held = np.bincount([len(cards & {a, b}) for k, a in enumerate(left) for b in left[k + 1 :]], minlength=3)
  count, common = len(cards), int(held.argmax())
  return (count - 2 * common) / np.prod([count - common - len(cards & set(h)) for h in (first, second)])


def brute_force(policy, hand, runouts, seat1, seat0, chooser, continuations):
  """[C]: what seat 1 holding `seat1` wins from seat 0 holding `seat0` after `hand` when the chooser
  plays each continuation, by recursion through `nlhe` with one-pair queries (the chooser's
  probabilities of the biased kind times 5 and renormalised) and the engine's payoffs at the end:
  on the flop the mean over the runouts that share no card with them, on the turn their sum times
  `turn_weight` (the same with every river card, or where either hand holds the usual number of
  runout cards)."""
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

  runouts = np.asarray(runouts).reshape(len(runouts), -1)
  known = hand.board[0, : 5 - runouts.shape[1]].tolist()  # the flop, or the flop and the turn
  counted = 0
  for runout in runouts.tolist():
    if set(runout) & {*seat1, *seat0}:
      continue
    n = int(hand.num_actions[0])
    state = nlhe.initial(np.array([[seat0, seat1]]), np.array([[*known, *runout]]), noise=hand.noise)
    walk(nlhe.replay(state, hand.history[:, :n, 1], hand.history[:, :n, 2]), np.ones(continuations))
    counted += 1
  if not counted:
    return np.zeros(continuations)
  won = nlhe.payoffs(nlhe.concatenate(ends))[:, 1].astype(np.float64)
  total = (np.array(weights) * won[:, None]).sum(0)
  if runouts.shape[1] == 1:  # the turn
    return total * turn_weight(np.array(known), runouts, seat1, seat0)
  return total / counted


@pytest.mark.parametrize(
  'history,chooser',
  [
    ([(CALL, 0), (CALL, 0), (CALL, 0), (CALL, 0)], 0),  # limped, checked through the flop
    ([(CALL, 0), (CALL, 0), (RAISE, 150), (CALL, 0)], 1),  # a flop bet called
    ([(CALL, 0), (CALL, 0), (RAISE, 19_900), (CALL, 0)], 0),  # all-in on the flop: no decisions left
    ([(CALL, 0), (CALL, 0), (CALL, 0), (CALL, 0), (RAISE, 150), (CALL, 0)], 0),  # a turn bet called
    ([(CALL, 0), (CALL, 0), (CALL, 0), (CALL, 0), (CALL, 0), (CALL, 0)], 1),  # checked through the turn
  ],
)
def test_leaf_matrices_equal_a_hand_by_hand_recursion_through_the_engine(history, chooser):
  hand = leaf(history)
  turn = len(history) > 4
  board = hand.board[0]
  if turn:  # the turn's round: 3 of its 48 river cards (the search takes them all)
    runouts = depth_limited.runout_tables(board[:4], depth_limited.river_cards(board[:4])[::16])
  else:
    runouts = depth_limited.runout_tables(
      board[:3], depth_limited.sample_runouts(np.random.default_rng(1), board[:3], 3)
    )
  policy = Shallow()
  continuations = 1 if hand.finished[0] else 4
  matrices = depth_limited.leaf_matrices(policy, hand, runouts, chooser, continuations)
  assert matrices.shape == (continuations, *(2 * (1128 if turn else 1176,)))
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


# The turn (2) behind -m slow: the default suite's 10 minutes (the turn's brute-force check stays).
@pytest.mark.parametrize('street', [1, pytest.param(2, marks=pytest.mark.slow)])
def test_a_depth_limited_search_answers_legally_and_deterministically_and_converges(street):
  """The search bot on the flop and on the turn (depth-limited over a test blueprint; on the turn
  every river card): legal real actions that the match engine accepts, the same answer from a fresh
  bot, and a depth-limited game that more iterations solve further."""
  states = random_states(9, 32, 6)
  states = nlhe.take(states, np.flatnonzero(states.street == street)[:1])
  holes = states.hole[[0], states.to_act][:, None]
  answers, gaps = [], []
  for iterations in (2, 20, 20):
    bot = search.search_policy(
      Shallow(),
      think_seconds=None,
      iterations=iterations,
      target_pct=None,
      streets=(street,),
      runouts=2,
      turn_depth_limited=True,
      river_cards=None,
      gadget=None,
    )
    actions, probs = bot.strategy(states, holes)
    match.check_strategy(bot, actions, probs, 1)
    on = actions.valid[0]
    assert nlhe.is_legal(
      nlhe.take(states, np.zeros(on.sum(), int)), actions.kind[0, on], actions.amount[0, on]
    ).all()
    ((solved_street, done, gap, _),) = bot.solves
    assert solved_street == street and done == iterations
    answers.append(probs), gaps.append(gap)
  np.testing.assert_array_equal(answers[1], answers[2])
  assert gaps[1] < 0.2 * gaps[0]


@pytest.mark.parametrize('street', [1, 2])
def test_every_leaf_line_of_a_depth_limited_round_is_legal_in_the_real_game(street):
  """Flop and turn states after random play (off-tree sizes, raises, facing bets): each leaf's line
  of the round's tree, replayed through the real game, is legal and ends the round (the next street
  begins) or the betting (a called all-in)."""
  states = random_states(3, 64, 8)
  states = nlhe.take(states, np.flatnonzero(states.street == street)[:24])
  assert len(states.street) >= 12
  config = search.SearchConfig(streets=(street,), turn_depth_limited=True)
  leaves = 0
  for b in range(len(states.street)):
    nodes = tree.build(search.subgame_config(states, b, config), first_round_only=True)
    for i, node in enumerate(nodes):
      if node.kind == tree.LEAF:
        hand = depth_limited.leaf_state(states, b, nodes, i)
        over = hand.finished[0] and hand.folded[0] < 0
        assert over or hand.street[0] == street + 1 and hand.num_actions[0] > 0
        leaves += 1
  assert leaves >= 2 * len(states.street)


def test_a_turn_search_on_sampled_river_cards_draws_them_from_the_public_state():
  """`SearchConfig.river_cards`: a depth-limited turn's runouts are that many distinct river cards
  the board leaves, the same for the same public state and seed, others for another seed (every
  one of the 48 without it); the flop's runouts are unchanged by it; and the sampled game solves."""
  states = random_states(9, 64, 6)
  turn = nlhe.take(states, np.flatnonzero(states.street == 2)[:1])
  flop = nlhe.take(states, np.flatnonzero(states.street == 1)[:1])
  board = nlhe.visible_board(turn)[0][:4]
  every = search.round_runouts(
    turn, 0, search.SearchConfig(streets=(2,), turn_depth_limited=True, river_cards=None)
  )
  np.testing.assert_array_equal(every.cards, depth_limited.river_cards(board))
  drawn = [
    search.round_runouts(
      turn, 0, search.SearchConfig(streets=(2,), turn_depth_limited=True, river_cards=6, seed=s)
    )
    for s in (0, 0, 1)
  ]
  cards_drawn = drawn[0].cards[:, 0]
  assert drawn[0].cards.shape == (6, 1) and len(set(cards_drawn)) == 6
  assert set(cards_drawn) <= set(every.cards[:, 0])
  np.testing.assert_array_equal(drawn[1].cards, drawn[0].cards)
  assert not np.array_equal(drawn[2].cards, drawn[0].cards)
  plain, sampled = (
    search.round_runouts(flop, 0, search.SearchConfig(streets=(1,), runouts=2, river_cards=k))
    for k in (None, 6)
  )
  np.testing.assert_array_equal(sampled.cards, plain.cards)
  bot = search.search_policy(
    Shallow(), think_seconds=None, iterations=20, target_pct=None, streets=(2,), turn_depth_limited=True,
    river_cards=6, gadget=None,
  )  # fmt: skip
  actions, probs = bot.strategy(turn, turn.hole[[0], turn.to_act][:, None])
  match.check_strategy(bot, actions, probs, 1)
  ((_, done, gap, _),) = bot.solves
  assert done == 20 and 0 <= gap < 100


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
  game = depth_limited.search_game(
    Shallow(), state, 0, tree_config, ranges, search.round_runouts(state, 0, config)
  )
  played = search.round_warm_policy(Shallow(), state, 0, game, tree_config)
  average, done = depth_limited.solve(game, 0, warm=played, warm_iterations=3)
  assert done == 0
  reach = depth_limited._reach(game, played)
  checked = 0
  for n in game.decisions:
    reached = reach[n][game.player[n]] > 0
    np.testing.assert_allclose(average[n][:, reached], played[n][:, reached], rtol=1e-12, atol=1e-12)
    checked += reached.sum()
  assert checked > 1000


def test_a_flop_decision_takes_the_flop_seconds_and_the_others_the_think_seconds(monkeypatch):
  """`flop_seconds` sets a flop decision's deadline (from the decision's start, less its share of the
  range tracking); without it the flop takes `think_seconds` as every street does."""
  states = random_states(9, 32, 6)
  state = nlhe.take(states, np.flatnonzero(states.street == 1)[:1])
  asked = []
  real = search.resolve_round

  def timed(policy, state, b, ranges, config, cache=None, deadline=None):
    asked.append(deadline - time.perf_counter())
    return real(policy, state, b, ranges, config, cache, deadline)

  monkeypatch.setattr(search, 'resolve_round', timed)
  holes = np.broadcast_to(search.HOLES, (1, len(search.HOLES), 2))
  for flop_seconds in (30.0, None):
    config = dict(
      streets=(1,), runouts=2, think_seconds=0.5, flop_seconds=flop_seconds, iterations=2, gadget=None
    )
    search.search_policy(Shallow(), **config).strategy(state, holes)
  assert 29 < asked[0] <= 30 and 0.3 < asked[1] <= 0.5, asked
  assert search.SearchConfig(flop_seconds=0.8).seconds(1) == 0.8
  assert search.SearchConfig(flop_seconds=0.8).seconds(2) == defaults.THINK_SECONDS
  with pytest.raises(ValueError, match='flop_seconds must be positive'):
    search.SearchConfig(flop_seconds=0)


def test_a_depth_limited_turn_search_equals_a_brute_force_of_its_game():
  """The depth-limited game of a turn decision (its round, continuation leaves on 4 river cards, five
  hands in each range) against a brute force of the same game: every deal of two hands walked
  through the real engine along the round's lines, the folds' payoffs from the engine, each leaf's
  value per continuation by recursion through the rest of the hand (`brute_force`), the chooser's
  hand picking a continuation with the profile's probabilities. The solved profile's values and both
  players' best responses agree to 1e-6 (a best response that may pick a continuation per hand where
  it is the chooser), with the leaves factored (the default on the turn) and as matrices; one wrong
  entry of a leaf's matrices, or of one terminal's row of the factored leaves, where the deal is
  reached, breaks it."""
  state = leaf([(CALL, 0), (CALL, 0), (CALL, 0), (CALL, 0)])  # the turn, the big blind (seat 1) to act
  board = state.board[0]
  config = search.SearchConfig(
    streets=(2,), turn_depth_limited=True, turn_round_sizes=('50%,a', 'a'), think_seconds=None, iterations=1
  )
  tree_config = search.subgame_config(state, 0, config)
  runouts = depth_limited.runout_tables(board[:4], depth_limited.river_cards(board[:4])[::12], np.float64)
  holdings = {
    1: ['QhJh', '9c9d', 'AhKh', '5s4s', 'Tc9c'],  # seat 1: tree player 0
    0: ['AcQc', '8h8s', 'KcJd', '7d6d', '3c3d'],  # seat 0: tree player 1
  }
  rng = np.random.default_rng(4)
  ranges = np.zeros((2, 1326))
  index = {tuple(sorted(h)): k for k, h in enumerate(runouts.hands.tolist())}
  support = {}
  for seat, names in holdings.items():
    support[1 - seat] = [index[tuple(sorted(parse_cards(n)))] for n in names]
    pairs = [search.PAIR_INDEX[tuple(runouts.hands[k])] for k in support[1 - seat]]
    ranges[seat, pairs] = rng.random(len(pairs)) + 0.5
  game = depth_limited.search_game(Shallow(), state, 0, tree_config, ranges, runouts)
  assert game.factored is not None and not game.matrices
  dense = depth_limited.search_game(Shallow(), state, 0, tree_config, ranges, runouts, form='dense')
  policy, _ = depth_limited.solve(game, iterations=200)
  nodes = tree.build(tree_config, first_round_only=True)
  assert {n.kind for n in nodes} == {tree.DECISION, tree.FOLD, tree.LEAF}
  row = {int(o): r for r, o in enumerate(game.origin) if o >= 0}
  chooser_seat = 1 - int(state.to_act[0])
  chooser = 1 - chooser_seat  # the chooser as a tree player
  hands = runouts.hands

  # Every deal walked through the engine: fold payoffs and leaf values, seat 1's winnings.
  deals = [(i, j) for i in support[0] for j in support[1] if not set(hands[i]) & set(hands[j])]
  payoff = {}  # (node, i, j) -> [C] (one entry at folds and all-in leaves)
  single = set()  # the nodes with one value: folds, leaves after a called all-in
  for i, j in deals:
    hole = np.array([[hands[j], hands[i]]])  # seat 0, seat 1
    deal = nlhe.initial(hole, state.board, noise=state.noise)
    n = int(state.num_actions[0])
    states = {0: nlhe.replay(deal, state.history[:, :n, 1], state.history[:, :n, 2])}
    for k, node in enumerate(nodes):
      if k:
        kind, amount = depth_limited.line_action(node.label)
        states[k] = nlhe.apply(states[node.parent], np.array([kind]), np.array([amount]))
      if node.kind == tree.FOLD:
        payoff[k, i, j] = nlhe.payoffs(states[k])[:, 1].astype(np.float64)
        single.add(k)
      elif node.kind == tree.LEAF:
        count = 1 if states[k].finished[0] else 4
        single.update([k] if count == 1 else [])
        payoff[k, i, j] = brute_force(
          Shallow(), states[k], runouts.cards, hands[i].tolist(), hands[j].tolist(), chooser_seat, count
        )

  def strategy(node, hand):
    return policy[row[node]][:, hand]

  def best_response(node, player, hand, opponent):
    """Player `player`'s best-response value holding `hand` at `node`, summed over the opponent's hands
    weighted by `opponent` {hand: reach}."""
    kids = nodes[node].children
    win = lambda g: payoff[(node, hand, g) if player == 0 else (node, g, hand)] * (1 if player == 0 else -1)  # noqa: E731
    if nodes[node].kind == tree.DECISION:
      if nodes[node].player == player:
        return max(best_response(c, player, hand, opponent) for c in kids)
      return sum(
        best_response(c, player, hand, {g: w * strategy(node, g)[a] for g, w in opponent.items()})
        for a, c in enumerate(kids)
      )
    if node in single:
      return sum(w * win(g)[0] for g, w in opponent.items())
    if chooser == player:  # the best response picks its continuation
      return max(sum(w * win(g)[c] for g, w in opponent.items()) for c in range(4))
    return sum(w * strategy(node, g) @ win(g) for g, w in opponent.items())

  def brute(policy_game):
    """([2] values, [2] best-response values) per deal, by brute force."""
    reach = [{k: policy_game.ranges[p][k] for k in support[p]} for p in range(2)]
    mass = sum(reach[0][i] * reach[1][j] for i, j in deals)
    best = np.zeros(2)
    for p in range(2):
      for h, w in reach[p].items():
        opponent = {g: v for g, v in reach[1 - p].items() if not set(hands[g]) & set(hands[h])}
        best[p] += w * best_response(0, p, h, opponent)
    value = sum(reach[0][i] * reach[1][j] * expected(0, i, j) for i, j in deals)
    return np.array([value, -value]) / mass, best / mass

  def expected(node, i, j):
    kids = nodes[node].children
    if nodes[node].kind == tree.DECISION:
      p = strategy(node, i if nodes[node].player == 0 else j)
      return sum(p[a] * expected(c, i, j) for a, c in enumerate(kids))
    if node in single:
      return payoff[node, i, j][0]
    return strategy(node, i if chooser == 0 else j) @ payoff[node, i, j]

  brute_values, brute_best = brute(game)
  for form in (game, dense):
    values, best = depth_limited.evaluate(form, policy)
    np.testing.assert_allclose(values, brute_values, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(best, brute_best, rtol=1e-6, atol=1e-9)
    assert (best - values).min() > -1e-9 and (best - values).sum() / 2 < 0.05 * tree_config.pot
  # One wrong entry, at the heaviest deal (a deal that reaches some leaf): of each leaf's matrices;
  # of the factored leaves, the other seat's reach at one showdown of a leaf it reaches.
  pair = lambda k: search.PAIR_INDEX[tuple(hands[k])]  # noqa: E731
  i, j = max(deals, key=lambda d: ranges[1][pair(d[0])] * ranges[0][pair(d[1])])
  for m in {int(dense.matrix[z]) for z in dense.terminals if dense.matrix[z] >= 0}:
    dense.matrices[m] = np.array(dense.matrices[m])  # a leaf's block: every continuation's entry
    dense.matrices[m][..., i, j] += 0.05 * tree_config.pot
  dense._products = None
  assert not np.allclose(depth_limited.evaluate(dense, policy)[0], brute_values, rtol=1e-6, atol=1e-9)
  arrays = game.factored.arrays
  plain = np.asarray(arrays['plain']).copy()
  other = i if chooser == 1 else j  # the hand of the seat that plays the blueprint at the leaves
  z = int(np.flatnonzero(plain[:, other] != 0)[0])
  plain[z, other] *= 1.05
  arrays['plain'] = jnp.asarray(plain)
  assert not np.allclose(depth_limited.evaluate(game, policy)[0], brute_values, rtol=1e-6, atol=1e-9)


def test_factored_leaves_equal_the_matrices_and_weigh_every_river_card_one_in_44():
  """On every river card the factored leaves and the matrices are the same game (a random profile's
  values and best responses agree to 1e-9) and each river card weighs 1/44 in every pair's mean (the
  44 that two hands leave); on the flop only the matrices serve."""
  state = leaf([(CALL, 0), (CALL, 0), (CALL, 0), (CALL, 0)])
  board = state.board[0]
  config = search.SearchConfig(streets=(2,), turn_depth_limited=True, think_seconds=None, iterations=1)
  tree_config = search.subgame_config(state, 0, config)
  runouts = depth_limited.runout_tables(board[:4], depth_limited.river_cards(board[:4]), np.float64)
  scale, per_hand = runouts.hand_weight
  np.testing.assert_allclose(scale * per_hand**2, 1 / 44, rtol=1e-12)
  rng = np.random.default_rng(6)
  ranges = rng.random((2, 1326))
  games = [
    depth_limited.search_game(Shallow(), state, 0, tree_config, ranges, runouts, form=form)
    for form in ('factored', 'dense')
  ]
  assert games[0].factored is not None and games[1].factored is None
  policy = {n: rng.dirichlet(np.ones(len(games[0].children[n])), 1128).T for n in games[0].decisions}
  (values, best), (dense_values, dense_best) = (depth_limited.evaluate(g, policy) for g in games)
  np.testing.assert_allclose(values, dense_values, rtol=1e-9)
  np.testing.assert_allclose(best, dense_best, rtol=1e-9)
  assert np.abs(values).min() > 1 and (best > values).all()  # real values, not two zeros
  flop = leaf([(CALL, 0), (CALL, 0)])
  flop_config = search.subgame_config(
    flop, 0, search.SearchConfig(streets=(1,), think_seconds=None, iterations=1)
  )
  flop_runouts = depth_limited.runout_tables(board[:3], depth_limited.sample_runouts(rng, board[:3], 2))
  with pytest.raises(ValueError, match='factored on the turn'):
    depth_limited.search_game(Shallow(), flop, 0, flop_config, ranges, flop_runouts, form='factored')


def assert_same_rows(first, second):
  """Two lists of `depth_limited.leaves_rows` are equal bit for bit: reaches and runouts."""
  for a, b in zip(first, second, strict=True):
    np.testing.assert_array_equal(a.plain, b.plain)
    np.testing.assert_array_equal(a.chosen, b.chosen)
    np.testing.assert_array_equal(a.runout, b.runout)


class Pairwise:
  """A policy that answers pair by pair only (`strategy`, no `range_classes`)."""

  name = 'pairwise'

  def __init__(self, policy):
    self.policy = policy

  def strategy(self, state, holes):
    return self.policy.strategy(state, holes)


def test_a_blueprint_expands_leaves_by_buckets_as_pair_by_pair(blueprint, monkeypatch):  # noqa: F811 (the fixture)
  """A turn round's leaves expanded with the blueprint's reach per bucket (`range_classes`) give the
  rows that a pair-by-pair expansion gives, bit for bit (a bet called, a check-through, a called
  all-in with no decision left); a flop leaf, whose runouts change the street and the buckets, carries
  its reach per pair but asks by buckets, a street at a time, and gives the pair-by-pair rows too."""
  calls = []
  classes = blueprint.range_classes
  monkeypatch.setattr(blueprint, 'range_classes', lambda state: calls.append(1) or classes(state))
  turn = [(CALL, 0), (CALL, 0), (CALL, 0), (CALL, 0)]
  hands = [
    leaf(turn + line) for line in ([(RAISE, 150), (CALL, 0)], [(CALL, 0)] * 2, [(RAISE, 19_900), (CALL, 0)])
  ]
  board = hands[0].board[0]
  runouts = depth_limited.runout_tables(board[:4], depth_limited.river_cards(board[:4])[::8])
  for chooser in (0, 1):
    by_bucket = depth_limited.leaves_rows(blueprint, hands, runouts, chooser, 4)
    by_pair = depth_limited.leaves_rows(Pairwise(blueprint), hands, runouts, chooser, 4)
    assert_same_rows(by_bucket, by_pair)
    assert by_bucket[0].plain.any() and not np.allclose(by_bucket[0].chosen[0], by_bucket[0].chosen[1])
  assert calls  # the buckets served the river
  calls.clear()
  flop = leaf([(CALL, 0), (CALL, 0), (CALL, 0), (CALL, 0)])
  flop_runouts = depth_limited.runout_tables(
    board[:3], depth_limited.sample_runouts(np.random.default_rng(2), board[:3], 2)
  )
  by_bucket = depth_limited.leaves_rows(blueprint, [flop], flop_runouts, 0, 4)[0]
  by_pair = depth_limited.leaves_rows(Pairwise(blueprint), [flop], flop_runouts, 0, 4)[0]
  assert len(calls) > 2 and by_bucket.plain.any()  # the turn's and the river's decisions
  for a, b in ((by_bucket.plain, by_pair.plain), (by_bucket.chosen, by_pair.chosen)):
    np.testing.assert_array_equal(a, b)


class BucketsOnce:
  """`policy`, answering by buckets (`range_classes`) the first time it is asked only, then pair by pair."""

  name = 'buckets-once'

  def __init__(self, policy):
    self.policy, self.asked = policy, 0

  def strategy(self, state, holes):
    return self.policy.strategy(state, holes)

  def range_classes(self, state):
    self.asked += 1
    return self.policy.range_classes(state) if self.asked == 1 else None


def test_leaves_expand_alike_when_the_buckets_stop_answering_and_at_another_depth(blueprint, monkeypatch):  # noqa: F811 (the fixture)
  """A policy that answers by buckets, then not (a blueprint at another depth once a line parts from its
  game) gives the pair-by-pair rows, the terminals already found read per pair too; a 200-bb
  blueprint asked through `AtRules` about 100-bb hands answers by buckets while every line is in step
  and gives the rows of asking it pair by pair."""
  from jaxcfr.poker.rules.translation import AtRules  # noqa: PLC0415

  turn = [(CALL, 0), (CALL, 0), (CALL, 0), (CALL, 0)]
  lines = ([(RAISE, 150), (CALL, 0)], [(CALL, 0)] * 2)
  hands = [leaf(turn + line) for line in lines]
  board = hands[0].board[0]
  runouts = depth_limited.runout_tables(board[:4], depth_limited.river_cards(board[:4])[::8])
  for chooser in (0, 1):
    once = BucketsOnce(blueprint)
    switched = depth_limited.leaves_rows(once, hands, runouts, chooser, 4)
    by_pair = depth_limited.leaves_rows(Pairwise(blueprint), hands, runouts, chooser, 4)
    assert once.asked > 1
    assert_same_rows(switched, by_pair)
  deeper = nlhe.NoLimitRules(50, 100, 10_000)
  at = AtRules(blueprint, blueprint.tree.rules)
  answered = []
  classes = AtRules.range_classes
  counted = lambda self, state: answered.append(classes(self, state)) or answered[-1]  # noqa: E731
  monkeypatch.setattr(AtRules, 'range_classes', counted)
  deep_hands = [leaf(turn + line, deeper) for line in lines]
  for chooser in (0, 1):
    by_bucket = depth_limited.leaves_rows(at, deep_hands, runouts, chooser, 4)
    by_pair = depth_limited.leaves_rows(Pairwise(at), deep_hands, runouts, chooser, 4)
    assert_same_rows(by_bucket, by_pair)
  assert answered and all(answer is not None for answer in answered)


def test_the_leaf_cache_answers_as_a_fresh_build_and_keeps_at_most_its_entries():
  """`LeafCache` gives the matrices `leaves_matrices` builds, the same ones again from what it keeps,
  tells the two choosers apart, keeps a leaf's rows (the factored form) apart from its matrices, and
  keeps at most `entries` leaves and `boards` boards' tables."""
  hands = [
    leaf([(CALL, 0), (CALL, 0), (CALL, 0), (CALL, 0)]),
    leaf([(CALL, 0), (CALL, 0), (RAISE, 150), (CALL, 0)]),
  ]
  board = hands[0].board[0]
  cache = depth_limited.LeafCache(entries=2, boards=1)
  runouts = cache.runouts(board[:3], depth_limited.sample_runouts(np.random.default_rng(1), board[:3], 2))
  assert cache.runouts(board[:3], runouts.cards) is runouts
  fresh = depth_limited.leaves_matrices(Shallow(), hands, runouts, 0, 4)
  kept = cache.matrices(Shallow(), hands, runouts, 0, 4)
  again = cache.matrices(Shallow(), hands[::-1], runouts, 0, 4)
  for a, b, c in zip(fresh, kept, again[::-1], strict=True):
    np.testing.assert_array_equal(a, b)
    assert b is c  # kept, not built again
  other = cache.matrices(Shallow(), hands[:1], runouts, 1, 4)[0]
  assert not np.allclose(other, kept[0])  # the other seat chooses: other values
  rows = cache.leaves(Shallow(), hands[:1], runouts, 0, 4, 'factored')[0]  # the rows the matrices sum
  assert cache.leaves(Shallow(), hands[:1], runouts, 0, 4, 'factored')[0] is rows
  np.testing.assert_allclose(depth_limited._dense(runouts, rows), fresh[0], rtol=1e-6, atol=1e-6)
  assert len(cache._held) == 2
  cache.runouts(board[:4], depth_limited.river_cards(board[:4])[:2])
  assert len(cache._tables) == 1


def public_policy(game, round_game, policy):
  """A `RoundGame` profile {decision: [A, H]} of a river spot as the public tree's [D, A, H] (padding
  rows uniform over their legal actions)."""
  legal = np.asarray(game.tree.legal)
  out = legal / legal.sum(1, keepdims=True) * np.ones((1, 1, game.num_hands))
  row = {node: r for r, node in enumerate(game.tree.info.decisions)}
  for k in round_game.decisions:
    out[row[round_game.origin[k]]] = 0
    out[row[round_game.origin[k]], : len(round_game.children[k])] = policy[k]
  return jnp.asarray(out)


def safe_river_round():
  """A river spot as a `RoundGame` (and its public tree) whose opponent's prior leaves 30% of its hands
  out: (game, round_game, opponent, weak: 3 iterations' average, the alternatives: the opponent's
  best responses to it, best: the public tree's best-response values of the opponent, jitted)."""
  deck = cards.Deck(9, 4)
  board = cards.parse_board('Td9d6h5c3s', deck)
  config = tree.TreeConfig(3, 100, 250, (tree.street_sizes('50%,a', '2x'),) * 3, deck_size=deck.size)
  rng = np.random.default_rng(5)
  opponent = 1  # tree player 1, second to act
  ranges = rng.random((2, 1326))  # by tree player
  ranges[opponent] *= rng.random(1326) > 0.3
  game, round_game = river_round_game(config, board, ranges, deck)
  weak, _ = depth_limited.solve(round_game, iterations=3)
  alternatives = depth_limited.alternatives(round_game, weak, opponent)
  best = jax.jit(
    lambda game, policy: subgame.counterfactual_values(
      game, policy, subgame.reach_probabilities(game, policy), opponent, best_response=True
    )[0]
  )
  return game, round_game, opponent, weak, alternatives, best


@pytest.mark.parametrize(
  'gadget', [pytest.param('maxmargin', marks=pytest.mark.slow), 'resolve']
)  # the suite's time
def test_a_safe_round_re_solve_keeps_every_hand_at_or_below_its_alternative(gadget):
  """A river spot as a `RoundGame` (its values are the public tree's: the test above) whose opponent's
  prior leaves 30% of its hands out. The alternatives, the opponent's best responses to a weak
  strategy (3 iterations' average), equal the public tree's (`resolving.alternatives`). After 400
  iterations with the gadget no hand of the opponent gains more than 0.5% of the pot over its
  alternative by the public tree's best response (Maxmargin: every hand keeps a margin, each hand's
  the public-tree gadget's after as many iterations to 1e-5 of the pot: the same DCFR and rule); the
  unsafe solve lets some hand gain over 5%."""
  game, round_game, opponent, weak, alternatives, best = safe_river_round()
  pot = game.tree.info.config.pot
  theirs = resolving.alternatives(game, public_policy(game, round_game, weak), opponent)
  np.testing.assert_allclose(alternatives, theirs, rtol=1e-5, atol=1e-6 * np.abs(theirs).max())
  mass = depth_limited.compatible_mass(round_game.hands, round_game.ranges[1 - opponent][None])[0]
  assert (mass > 0).all()

  def gains(policy):
    return (np.asarray(best(game, public_policy(game, round_game, policy))) - alternatives) / mass

  unsafe, _ = depth_limited.solve(round_game, iterations=400)
  assert gains(unsafe).max() > 0.05 * pot, gains(unsafe).max()
  safe = depth_limited.Gadget(gadget, opponent, alternatives)
  policy, _ = depth_limited.solve(round_game, iterations=400, gadget=safe)
  assert gains(policy).max() <= 0.005 * pot, gains(policy).max()
  if gadget == 'maxmargin':
    solver = resolving.safe_subgame_solver('dcfr', 'maxmargin')
    public_safe = resolving.safe_subgame(game, public_policy(game, round_game, weak), opponent)
    state = jax.jit(lambda s, g: jaxcfr.run(solver, s, g, 400))(solver.init(public_safe), public_safe)
    public_best = np.asarray(best(game, solver.average_policy(state, public_safe)))
    public_gains = (public_best - np.asarray(public_safe.alternatives)) / mass
    assert gains(policy).max() < 0
    np.testing.assert_allclose(gains(policy), public_gains, atol=1e-5 * pot)  # the same DCFR and rule


def test_maxmargin_prior_trades_the_smallest_margin_for_the_prior_s_value():
  """Maxmargin-prior on the river round of the test above: its opponent enters half the time with the
  prior (its reach there `entering`'s: the prior scaled to Maxmargin's units) and half the time
  Maxmargin's pick, so the gadget's value, (1 - w) x the largest gain of a hand + w x the prior's gain
  (gains per unit of the player's compatible range, w = PRIOR_SHARE), is what its solve lowers: after
  400 iterations it is below both the unsafe solve's and Maxmargin's; its largest gain is below the
  unsafe solve's and its prior's gain below Maxmargin's."""
  game, round_game, opponent, _, alternatives, best = safe_river_round()
  pot = game.tree.info.config.pot
  mass = depth_limited.compatible_mass(round_game.hands, round_game.ranges[1 - opponent][None])[0]
  prior = round_game.ranges[opponent]
  reach, share = resolving.entering('maxmargin-prior', np.zeros((2, len(prior))), prior, mass, np)
  uniform = 1 / len(prior) / mass
  w = defaults.PRIOR_SHARE
  np.testing.assert_allclose(reach, (1 - w) * uniform + w * prior / (prior * mass).sum(), rtol=1e-12)
  np.testing.assert_allclose(share, 1 / len(prior))

  def gains(policy):  # (largest gain, the prior's gain), % of the pot
    gain = (np.asarray(best(game, public_policy(game, round_game, policy))) - alternatives) / mass
    return 100 * gain.max() / pot, 100 * (prior * mass * gain).sum() / (prior * mass).sum() / pot

  unsafe = gains(depth_limited.solve(round_game, iterations=400)[0])
  found = {
    kind: gains(
      depth_limited.solve(
        round_game, iterations=400, gadget=depth_limited.Gadget(kind, opponent, alternatives)
      )[0]
    )
    for kind in ('maxmargin', 'maxmargin-prior')
  }
  blend = found['maxmargin-prior']
  value = {kind: (1 - w) * g[0] + w * g[1] for kind, g in {'unsafe': unsafe, **found}.items()}
  assert value['maxmargin-prior'] < min(value['unsafe'], value['maxmargin']), value
  assert blend[0] < unsafe[0] and blend[1] < found['maxmargin'][1], (unsafe, found)


class TurnValueOnly(ValueOnly):
  """`ValueOnly` with its raise amount legal after the preflop (its probability stays 0 there)."""

  name = 'turn-value-only'

  def strategy(self, state, holes):
    actions, probs = super().strategy(state, holes)
    options = nlhe.legal(state)
    amount = actions.amount.copy()
    amount[:, 2] = np.where(options.can_raise, np.clip(300, options.min_raise_to, options.max_raise_to), 0)
    return actions._replace(amount=amount), probs


@pytest.mark.parametrize(  # plain Maxmargin behind -m slow: its prior-weighted form runs its code and more;
  # no gadget too (the default suite's 10 minutes): the gadget's own case is what this test is for
  'gadget',
  [
    pytest.param(None, marks=pytest.mark.slow),
    pytest.param('maxmargin', marks=pytest.mark.slow),
    'maxmargin-prior',
  ],
)
def test_a_gadget_on_a_depth_limited_turn_answers_the_hands_that_the_prior_leaves_out(gadget):
  """The river's known answer (test_search) on a depth-limited turn: the small blind's preflop raise
  shows the nut straight only, under the blueprint, which then checks and calls every bet; on the turn
  the small blind bets 437 (off the tree) into 600. Unsafe, the bluff-catcher answers that prior and
  folds; with Maxmargin it calls: the blueprint calls there, so a fold would let air (6-high, which the
  prior leaves out) win more than its alternative, its value against the blueprint through the leaves'
  continuations. Maxmargin-prior, whose opponent holds that prior half the time, calls too."""
  hole = np.array([[VALUE[0], CATCHERS[0]]])
  line = [(RAISE, 300), (CALL, 0), (CALL, 0), (CALL, 0), (CALL, 0), (RAISE, 437)]
  facing = nlhe.from_actions([line], hole, np.array([BOARD]))
  assert facing.street[0] == 2 and facing.to_act[0] == 1
  bot = search.search_policy(
    TurnValueOnly(), think_seconds=None, iterations=60, target_pct=None, streets=(2,),
    turn_depth_limited=True, river_cards=1, gadget=gadget,
  )  # fmt: skip
  actions, probs = bot.strategy(facing, np.array([[CATCHERS[0]]]))
  assert actions.kind[0, actions.valid[0]].tolist() == [FOLD, CALL, RAISE]
  assert actions.amount[0, 1] == 437
  call = probs[0, 0, 1]
  # The decision, after the re-solve of the bot's own check before it (its range: `track_own`).
  assert [(street, iterations) for street, iterations, _, _ in bot.solves] == [(2, 60)] * 2
  gap = bot.solves[-1][2]
  if gadget is None:
    assert call < 0.05, call
    assert gap >= 0
  else:
    assert call > 0.95, call
    assert np.isnan(gap)  # the safe solve plays another game than the tracked ranges'
