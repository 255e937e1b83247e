"""AIVAT (`poker.eval.aivat`): its equities against loops, the martingale its chance corrections rest on,
and the estimate's mean against the exact value of a small hold'em game computed by a full pass over
its betting tree (an independent oracle: the test's own rules, not the engine's), for both value
functions; a correction made wrong on purpose misses it."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from abstractions.betting import NoLimitRules
from abstractions.ranking import hand_rank
from jaxcfr.poker.eval import aivat, match
from jaxcfr.poker.rules import nlhe
from jaxcfr.poker.rules.cards import parse_cards

FOLD, CALL, RAISE = nlhe.FOLD, nlhe.CALL, nlhe.RAISE


def share(mine, theirs) -> float:
  return 1.0 if mine > theirs else 0.5 if mine == theirs else 0.0


def loop_equity(hole, board) -> float:
  """Player 0's showdown share by a loop over every runout of the unseen cards (NumPy evaluator)."""
  dead = {int(c) for c in (*hole[0], *hole[1], *board)}
  unseen = [c for c in range(52) if c not in dead]
  runouts = list(itertools.combinations(unseen, 5 - len(board)))
  rows = [[*hand, *board, *rest] for rest in runouts for hand in hole]
  ranks = hand_rank(np.array(rows, np.int32)).reshape(len(runouts), 2)
  return float(np.mean([share(a, b) for a, b in ranks]))


SPOTS = [
  'AsKd QhQc 2c7h9d',
  'Jc9c Ah8h Tc8c2d',
  '7h7d 7c2s 2hKsAd8c',
  'AcKc AdKd 5h6h7h8s',
  '5c4c 6d6s 7c8c9s2d3h',
]


def spot(text):
  first, second, board = text.split()
  return np.array([parse_cards(first), parse_cards(second)]), parse_cards(board)


@pytest.mark.parametrize('text', SPOTS)
def test_street_equity_matches_a_loop_over_runouts(text):
  hole, board = spot(text)
  padded = np.array([*board, *([0] * (5 - len(board)))])
  got = aivat.street_equity(hole[None], padded[None], np.array([len(board)]))[0]
  assert got == pytest.approx(loop_equity(hole, board), abs=1e-6)


@pytest.mark.parametrize('text', ['AsKd QhQc 2c7h9d', '5c4c 6d6s 7c8c9s'])
def test_the_next_cards_average_to_the_value_before_them(text):
  """A chance node's correction is v(after) - v(before) only because equity is a martingale: the mean
  of the turn's equity over every turn card is the flop's, and the river's over every river the turn's."""
  hole, flop = spot(text)
  dead = {*hole.ravel().tolist(), *flop}
  turns = [c for c in range(52) if c not in dead]
  boards = np.array([[*flop, t, 0] for t in turns])
  holes = np.repeat(hole[None], len(turns), axis=0)
  on_turn = aivat.street_equity(holes, boards, np.full(len(turns), 4))
  on_flop = aivat.street_equity(hole[None], boards[:1], np.array([3]))[0]
  assert on_turn.mean() == pytest.approx(on_flop, abs=1e-6)
  turn = boards[0, :4]
  rivers = [c for c in turns if c != turn[3]]
  river_boards = np.array([[*turn, r] for r in rivers])
  on_river = aivat.street_equity(np.repeat(hole[None], len(rivers), 0), river_boards, np.full(len(rivers), 5))
  assert on_river.mean() == pytest.approx(on_turn[0], abs=1e-6)


@pytest.mark.slow
def test_preflop_equity_is_an_unbiased_monte_carlo_mean():
  import jax

  hole = np.array([parse_cards('AhKh'), parse_cards('QsQc')])
  unseen = [c for c in range(52) if c not in set(hole.ravel().tolist())]
  boards = np.array(list(itertools.combinations(unseen, 5)), np.int32)  # all 1,712,304
  from abstractions.evaluator import hand_rank as jax_rank

  ranks = [
    np.asarray(jax.jit(jax_rank)(np.concatenate([np.broadcast_to(h, (len(boards), 2)), boards], 1)))
    for h in hole
  ]
  exact = float(np.mean(np.where(ranks[0] > ranks[1], 1.0, np.where(ranks[0] == ranks[1], 0.5, 0.0))))
  estimates = aivat.preflop_equity(np.repeat(hole[None], 16, 0), jax.random.key(3), samples=4096)
  sd = math.sqrt(exact * (1 - exact) / (16 * 4096))
  assert abs(estimates.mean() - exact) < 4 * sd
  assert len(set(estimates.round(9).tolist())) > 8  # each hand its own boards
  again = aivat.preflop_equity(np.repeat(hole[None], 16, 0), jax.random.key(3), samples=4096)
  np.testing.assert_array_equal(estimates, again)


def test_sample_boards_are_distinct_cards_uniform_over_positions():
  import jax

  boards = np.asarray(aivat.sample_boards(jax.random.key(0), 48, 20_000))
  assert boards.shape == (20_000, 5) and boards.min() >= 0 and boards.max() < 48
  assert all(len(set(row)) == 5 for row in boards[:2000].tolist())
  counts = np.bincount(boards.ravel(), minlength=48)
  expected = 20_000 * 5 / 48
  assert np.abs(counts - expected).max() < 5 * math.sqrt(expected)


# A small hold'em game with an exactly computable value: stacks of 2 big blinds, so every bet is all-in,
# and policies that see their hole cards and the street but not the board. The oracle walks the
# betting tree with its own rules and values a showdown by the exact preflop equity of the two hands.

RULES = NoLimitRules(small_blind=50, big_blind=100, stack=200)


def probabilities(top, street, can_fold, can_raise, style: float):
  """(fold, call, raise) of a hand whose higher card has rank `top` (0 = deuce .. 12 = ace); works on
  numbers and on arrays alike."""
  strength = np.asarray(top) / 12
  raise_p = np.where(can_raise, 0.15 + 0.6 * strength * style + 0.05 * np.asarray(street), 0.0)
  fold_p = np.where(can_fold, 0.6 * (1 - strength) * (1 - 0.1 * np.asarray(street)), 0.0)
  call_p = np.maximum(1.0 - raise_p - fold_p, 0.05)
  total = raise_p + fold_p + call_p
  return fold_p / total, call_p / total, raise_p / total


class HoleStrength:
  """A card-dependent policy that does not look at the board (`probabilities`)."""

  def __init__(self, style: float):
    self.style, self.name = style, f'hole-strength-{style}'

  def strategy(self, state, holes):
    n = len(state.street)
    options = nlhe.legal(state)
    top = np.asarray(holes).max(axis=2) // 4  # [n, K]
    column = lambda x: np.asarray(x)[:, None]  # noqa: E731
    probs = np.stack(
      probabilities(
        top, column(state.street), column(options.can_fold), column(options.can_raise), self.style
      ),
      axis=-1,
    )  # [n, K, 3]
    kind = np.tile(np.array([FOLD, CALL, RAISE], np.int8), (n, 1))
    amount = np.stack([np.zeros(n, np.int64), np.zeros(n, np.int64), options.max_raise_to], axis=1)
    valid = np.stack([options.can_fold, np.ones(n, bool), options.can_raise], axis=1)
    return nlhe.ActionSet(kind, amount, valid), probs


def tree_value(top, e: float, styles, street: int = 0) -> float:
  """Player 0's expected chips when hands whose higher cards have ranks `top` (two ints) play the
  policies of `styles` from the start of `street`, with e player 0's expected showdown share (the
  policies never look at the board, so the value is affine in e): a walk over the betting tree,
  where a fold loses what the folder put in and a showdown pays (2 e - 1) * 100 or * 200. Preflop
  starts with the blinds; a later street with 100 each in, the big blind first."""
  probabilities_of = lambda *args: tuple(float(p) for p in probabilities(*args))  # noqa: E731

  def walk(street, actor, committed, facing, checked):
    """Value for player 0; `facing`: the actor faces a bet; `checked`: the other checked this street."""
    fold_p, call_p, raise_p = probabilities_of(top[actor], street, facing, not facing, styles[actor])
    total = 0.0
    if facing:
      total += fold_p * (-committed[0] if actor == 0 else committed[1])
      return total + call_p * (2 * e - 1) * 200  # a call of the all-in goes to the showdown
    shove = list(committed)
    shove[actor] = 200
    total += raise_p * walk(street, 1 - actor, tuple(shove), True, False)
    if checked or (street == 0 and actor == 1):  # the round closes
      total += call_p * ((2 * e - 1) * 100 if street == 3 else walk(street + 1, 1, committed, False, False))
    else:
      total += call_p * walk(street, 1 - actor, committed, False, True)
    return total

  if street > 0:
    return walk(street, 1, (100, 100), False, False)
  # Preflop the small blind faces the big blind: fold, complete (call to 100) or shove.
  fold_p, call_p, raise_p = probabilities_of(top[0], 0, True, True, styles[0])
  return (
    fold_p * -50
    + call_p * walk(0, 1, (100, 100), False, False)
    + raise_p * walk(0, 1, (200, 100), True, False)
  )


def exact_value(hole, styles) -> float:
  """Player 0's expected chips with hole [2, 2] when policies of `styles` play seats 0 and 1
  (`tree_value` with e the exact preflop equity of the two hands, by enumerating every board)."""
  unseen = [c for c in range(52) if c not in set(hole.ravel().tolist())]
  boards = np.array(list(itertools.combinations(unseen, 5)), np.int32)
  ranks = [hand_rank(np.concatenate([np.broadcast_to(h, (len(boards), 2)), boards], 1)) for h in hole]
  e = float(np.mean(np.where(ranks[0] > ranks[1], 1.0, np.where(ranks[0] == ranks[1], 0.5, 0.0))))
  return tree_value([int(h.max()) // 4 for h in hole], e, styles)


def play_fixed_holes(hole, styles, hands, seed, tracker_for):
  """Plays `hands` hands with the hole cards `hole` and uniform boards; returns the payoffs and the
  tracker's estimates of player 0's chips."""
  import jax

  rng = np.random.default_rng(seed)
  unseen = np.array([c for c in range(52) if c not in set(hole.ravel().tolist())])
  boards = np.array([rng.permutation(unseen)[:5] for _ in range(hands)])
  state = nlhe.initial(np.repeat(hole[None], hands, 0), boards, RULES)
  draws = rng.random((hands, nlhe.max_actions(RULES)))
  policies = (HoleStrength(styles[0]), HoleStrength(styles[1]))
  tracker = tracker_for(state, policies, jax.random.key(seed))
  final = match._play_batch(policies, state, np.zeros(hands, np.int8), draws, tracker)
  payoffs = nlhe.payoffs(final)
  return payoffs[:, 0].astype(np.float64), tracker.estimate(final, payoffs), tracker


def equity_tracker(state, policies, key):
  return aivat.Tracker(state, aivat.preflop_equity(state.hole, key, samples=256))


def rollout_tracker(state, policies, key):
  rng = nlhe.generator(key)
  return aivat.RolloutTracker(state, policies[1], rng, 4, match._play_batch)


def interval(values):
  half = 1.959963984540054 * values.std(ddof=1) / math.sqrt(len(values))
  return values.mean() - half, values.mean() + half


HOLE = np.array([parse_cards('Kh9c'), parse_cards('Qs7s')])
STYLES = (1.0, 0.2)


@pytest.fixture(scope='module')
def exact():
  return exact_value(HOLE, STYLES)


def test_the_equity_estimate_has_the_exact_value_as_its_mean(exact):
  plain, estimate, tracker = play_fixed_holes(HOLE, STYLES, 6000, 1, equity_tracker)
  low, high = interval(plain)
  assert low <= exact <= high
  # The deal's own correction has mean 0 over deals only; with the hole cards fixed it is put back.
  low, high = interval(estimate + tracker.deal)
  assert low <= exact <= high
  assert (estimate + tracker.deal).std() < 0.8 * plain.std()  # and it is worth having


@pytest.mark.slow
def test_the_rollout_estimate_has_the_exact_value_as_its_mean(exact):
  plain, estimate, _ = play_fixed_holes(HOLE, STYLES, 3000, 4, rollout_tracker)
  low, high = interval(estimate)
  assert low <= exact <= high
  assert estimate.std() < 0.8 * plain.std()


def test_a_wrong_correction_misses_the_exact_value(exact, monkeypatch):
  """The decision correction's expectation taken under uniform probabilities instead of the policy's:
  the mean moves well outside the interval."""
  right = aivat.Tracker.decide

  def uniform(self, index, state, actions, probs, choice, policy=None):
    valid = np.asarray(actions.valid, np.float64)
    right(self, index, state, actions, valid / valid.sum(axis=1, keepdims=True), choice, policy)

  monkeypatch.setattr(aivat.Tracker, 'decide', uniform)
  _, estimate, tracker = play_fixed_holes(HOLE, STYLES, 6000, 1, equity_tracker)
  low, high = interval(estimate + tracker.deal)
  assert not low <= exact <= high


def test_match_reports_aivat_beside_the_plain_estimate_and_the_same_deals():
  from jaxcfr.poker.baselines import REGISTRY

  a, b = REGISTRY['always-pot'](), REGISTRY['random']()
  with_aivat = match.play_match(a, b, 64, seed=4, batch=32)
  without = match.play_match(a, b, 64, seed=4, batch=32, aivat=None)
  np.testing.assert_array_equal(with_aivat.chips, without.chips)  # AIVAT's draws are its own
  assert without.aivat is None and 'aivat' in without.to_json()
  figures = with_aivat.to_json()['aivat']
  assert (
    figures['value_function'] == 'equity'
    and figures['ci95_low'] < figures['mbb_per_hand'] < figures['ci95_high']
  )
  assert len(with_aivat.aivat_chips) == 64
  again = match.play_match(a, b, 64, seed=4, batch=32)
  np.testing.assert_array_equal(again.aivat_chips, with_aivat.aivat_chips)  # deterministic given the seed
  with pytest.raises(ValueError, match='aivat must be'):
    match.play_match(a, b, 64, aivat='bogus')


def test_a_policy_against_itself_scores_exactly_zero_under_aivat_in_duplicate():
  from jaxcfr.poker.baselines import REGISTRY

  policy = REGISTRY['always-pot']()
  for value in ('equity', 'rollouts'):
    result = match.play_match(policy, policy, 32, seed=5, batch=32, aivat=value, aivat_rollouts=2)
    np.testing.assert_allclose(result.aivat['mbb_per_hand'], 0.0, atol=1e-6)


# Range values: both players' hole cards as imaginary observations.


def test_showdown_value_matches_a_loop_over_pairs_of_pairs():
  from abstractions import HOLES

  rng = np.random.default_rng(4)
  board = np.array(parse_cards('Ah7d7c2s9h'))
  free = ~np.isin(HOLES, board).any(axis=1)
  weights = []
  for _ in range(2):
    w = np.zeros(len(HOLES))
    chosen = rng.choice(np.flatnonzero(free), 12, replace=False)
    w[chosen] = rng.random(12)
    w[rng.choice(np.flatnonzero(~free), 3)] = 1.0  # blocked by the board: ignored
    weights.append(w)
  got = aivat.showdown_value(weights[0][None], weights[1][None], board[None])[0]
  total = value = 0.0
  for h0 in np.flatnonzero(weights[0] * free):
    for h1 in np.flatnonzero(weights[1] * free):
      if set(HOLES[h0].tolist()) & set(HOLES[h1].tolist()):
        continue
      mine = hand_rank(np.array([[*HOLES[h0], *board]], np.int32))[0]
      theirs = hand_rank(np.array([[*HOLES[h1], *board]], np.int32))[0]
      weight = weights[0][h0] * weights[1][h1]
      total += weight
      value += weight * np.sign(int(mine) - int(theirs))
  assert got == pytest.approx(value / total, abs=1e-9)


def test_the_range_estimate_is_the_posterior_mean_of_the_payoff():
  """For finished hands, the estimate is the payoff averaged over both players' hole cards weighted by
  each policy's probability of its actions with them: here recomputed by replaying every hand's
  actions pair by pair with the policies' own answers."""
  from jaxcfr.poker.baselines import REGISTRY

  from abstractions import HOLES

  policies = (HoleStrength(1.0), REGISTRY['random']())
  result = match.play_match(*policies, 16, seed=6, batch=16, aivat='ranges', keep_hands=True)
  final = result.final
  checked = 0
  for b in np.flatnonzero(final.folded < 0)[:3]:
    history = [tuple(row[1:]) for row in final.history[b] if row[1] >= 0]
    reach = np.ones((2, len(HOLES)))
    state = nlhe.from_actions([[]], final.hole[b][None], final.board[b][None], final.rules)
    for kind, amount in history:
      seat = int(state.to_act[0])
      policy = policies[0] if seat == int(result.a_seat[b]) else policies[1]
      actions, probs = policy.strategy(state, HOLES[None].astype(np.int8))
      same = np.asarray(actions.valid[0]) & (np.asarray(actions.kind[0]) == kind)
      if kind == RAISE:
        same &= np.asarray(actions.amount[0]) == amount
      reach[seat] *= np.asarray(probs)[0][:, same].sum(axis=1)
      state = nlhe.apply(state, kind, amount)
    mine = aivat.showdown_value(reach[0][None], reach[1][None], final.board[b][None])[0]
    expected = mine * final.committed[b].min()
    sign = 1 if result.a_seat[b] == 0 else -1
    assert result.aivat_chips[b] == pytest.approx(sign * expected, rel=1e-9, abs=1e-6)
    checked += 1
  assert checked >= 2
  folded = final.folded >= 0
  np.testing.assert_allclose(result.aivat_chips[folded], result.chips[folded])  # a fold's payoff is public


@pytest.mark.slow
def test_the_range_estimate_agrees_with_the_plain_one_and_cancels_in_self_play():
  from jaxcfr.poker.baselines import REGISTRY

  a, b = HoleStrength(1.0), REGISTRY['always-call']()
  result = match.play_match(a, b, 600, seed=9, aivat='ranges')
  figures = result.aivat
  assert result.ci95_low <= figures['mbb_per_hand'] <= result.ci95_high  # two unbiased estimates
  assert figures['sd_mbb'] < 0.5 * result.sd_mbb
  itself = match.play_match(a, a, 64, seed=9, aivat='ranges')
  assert itself.aivat['mbb_per_hand'] == pytest.approx(0.0, abs=1e-6)


# Public values: the ranges' check-down value at every public action and board card.


@pytest.mark.parametrize('text', ['', 'Ah7d7c', 'Ah7d7c2s', 'Ah7d7c2s9h'])
def test_range_values_match_a_loop_over_pairs_and_runouts(text):
  """g[h] = sum over the range's pairs that share no card with h or the board of weight * the mean
  score difference over every runout (a NumPy loop; preflop the shipped exact table, checked against
  enumeration elsewhere, is compared with `pushfold.equity.pair_equity`), d[h] their weight."""
  from abstractions import HOLES
  from jaxcfr.poker.pushfold import equity

  rng = np.random.default_rng(len(text))
  board = np.array(parse_cards(text) if text else [], np.int64)
  weights = np.zeros(len(HOLES))
  chosen = rng.choice(len(HOLES), 12, replace=False)
  weights[chosen] = rng.random(12)
  g, d = aivat.range_values(board, weights)
  free = [h for h in range(len(HOLES)) if not set(HOLES[h].tolist()) & set(board.tolist())]
  for h in rng.choice(free, 2, replace=False):
    total = mass = 0.0
    for v in np.flatnonzero(weights):
      dead = {*HOLES[h].tolist(), *HOLES[v].tolist(), *board.tolist()}
      if len(dead) < 4 + len(board):
        continue
      mass += weights[v]
      if not len(board):
        total += weights[v] * (2 * equity.pair_equity(h, v) - 1)
        continue
      runouts = list(itertools.combinations([c for c in range(52) if c not in dead], 5 - len(board)))
      rows = [[*pair, *board, *rest] for pair in (HOLES[h], HOLES[v]) for rest in runouts]
      ranks = hand_rank(np.array(rows, np.int32)).astype(np.int64).reshape(2, len(runouts))
      total += weights[v] * np.sign(ranks[0] - ranks[1]).mean()
    assert g[h] == pytest.approx(total, abs=1e-9) and d[h] == pytest.approx(mass, abs=1e-12)
  blocked = [h for h in range(len(HOLES)) if set(HOLES[h].tolist()) & set(board.tolist())]
  assert not np.any(g[blocked]) and not np.any(d[blocked])


TURN = np.array(parse_cards('Kd8s5c2h'))


def turn_game_value(styles) -> float:
  """Player 0's expected chips when both hole pairs are dealt uniformly off `TURN` and the policies of
  `styles` play from the turn on (100 each in): the mean over every pair of pairs of `tree_value`,
  affine in the pair's showdown share over the 44 rivers (a NumPy loop over the rivers)."""
  from abstractions import HOLES

  rivers = [c for c in range(52) if c not in TURN]
  rows = np.array([[*pair, *TURN, river] for river in rivers for pair in HOLES], np.int32)
  ranks = hand_rank(rows).astype(np.int64).reshape(len(rivers), len(HOLES))
  share = np.zeros((len(HOLES), len(HOLES)))
  for r, river in enumerate(rivers):
    live = ~np.isin(HOLES, [*TURN, river]).any(axis=1)
    score = np.sign(ranks[r][:, None] - ranks[r][None, :]) * 0.5 + 0.5
    share += np.where(live[:, None] & live[None, :], score, 0.0)
  disjoint = ~(HOLES[:, None, :, None] == HOLES[None, :, None, :]).any(axis=(2, 3))
  free = ~np.isin(HOLES, TURN).any(axis=1)
  pairs = disjoint & free[:, None] & free[None, :]
  e = share / 44
  top = HOLES.max(axis=1) // 4
  base = np.array([[tree_value((a, b), 0.0, styles, 2) for b in range(13)] for a in range(13)])
  slope = np.array([[tree_value((a, b), 1.0, styles, 2) for b in range(13)] for a in range(13)]) - base
  values = base[top[:, None], top[None, :]] + slope[top[:, None], top[None, :]] * e
  return float(values[pairs].mean())


def play_from_the_turn(hands, seed, tracker_type):
  """`hands` hands dealt uniformly off `TURN` (the river at random), checked to the turn, played to
  the end by the `STYLES` policies: the payoffs and the tracker's estimates of player 0's chips."""
  rng = np.random.default_rng(seed)
  unseen = np.array([c for c in range(52) if c not in TURN])
  cards = np.array([rng.permutation(unseen)[:5] for _ in range(hands)])
  boards = np.concatenate([np.broadcast_to(TURN, (hands, 4)), cards[:, 4:]], 1)
  checks = [
    [(CALL, 0)] * 4
  ] * hands  # preflop the small blind completes and the big blind checks; the flop checks through
  state = nlhe.from_actions(checks, cards[:, :4].reshape(hands, 2, 2), boards, RULES)
  assert (state.street == 2).all()
  draws = rng.random((hands, nlhe.max_actions(RULES)))
  policies = (HoleStrength(STYLES[0]), HoleStrength(STYLES[1]))
  tracker = tracker_type(state)
  final = match._play_batch(policies, state, np.zeros(hands, np.int8), draws, tracker)
  payoffs = nlhe.payoffs(final)
  return payoffs[:, 0].astype(np.float64), tracker.estimate(final, payoffs)


@pytest.fixture(scope='module')
def turn_exact():
  return turn_game_value(STYLES)


def test_the_public_estimate_has_the_exact_value_as_its_mean(turn_exact):
  """Both hole pairs random, the river card random, decisions on the turn and the river: the public
  estimate's interval holds the exact value, as the plain one's does, and is far narrower."""
  plain, estimate = play_from_the_turn(400, 3, aivat.PublicTracker)
  low, high = interval(plain)
  assert low <= turn_exact <= high
  low, high = interval(estimate)
  assert low <= turn_exact <= high
  assert estimate.std() < 0.2 * plain.std()


def test_a_wrong_public_correction_misses_the_exact_value(turn_exact):
  """The decisions' expectations taken with the probabilities of the actions in reverse order (the
  raise's for the fold and the fold's for the raise): the interval no longer holds the exact value."""

  class Reversed(aivat.PublicTracker):
    @staticmethod
    def chances(reach, mass, probs):
      return aivat.PublicTracker.chances(reach, mass, probs[:, ::-1])

  _, estimate = play_from_the_turn(400, 3, Reversed)
  low, high = interval(estimate)
  assert not low <= turn_exact <= high


def test_public_values_play_the_batchs_own_hands_a_few_deals_at_a_time(monkeypatch):
  """`play_match(aivat='public')` plays a batch's deals in groups (`aivat.PUBLIC_DEALS`) so that their
  boards' tables stay cached: the hands, their order and the estimates are those of one group (the
  runout sums replaced by a cheap stand-in: this checks the engine, not the values)."""
  from jaxcfr.poker.baselines import REGISTRY

  monkeypatch.setattr(aivat, '_board_tables', lambda board: None)
  monkeypatch.setattr(aivat, '_runout_sums', lambda tables, weights: np.full(len(weights), weights.sum()))
  a, b = HoleStrength(1.0), REGISTRY['always-call']()
  plain = match.play_match(a, b, 24, seed=2, batch=24, aivat=None)
  runs, progress = [], []
  for deals in (3, 100):
    monkeypatch.setattr(aivat, 'PUBLIC_DEALS', deals)
    runs.append(match.play_match(a, b, 24, seed=2, batch=24, aivat='public', on_progress=progress.append))
  assert progress[:4] == [6, 12, 18, 24]  # each group of 3 deals (6 hands) reported as it ends
  for run in runs:
    np.testing.assert_array_equal(run.chips, plain.chips)
    np.testing.assert_array_equal(run.a_seat, plain.a_seat)
  np.testing.assert_allclose(runs[0].aivat_chips, runs[1].aivat_chips, rtol=1e-12, atol=1e-9)
  assert runs[0].aivat['value_function'] == 'public'
  monkeypatch.setattr(aivat, 'PUBLIC_DEALS', 3)
  single = match.play_match(a, b, 10, seed=2, batch=10, duplicate=False, aivat='public')  # 3, 3, 3 and 1
  np.testing.assert_array_equal(
    single.chips, match.play_match(a, b, 10, seed=2, batch=10, duplicate=False, aivat=None).chips
  )
