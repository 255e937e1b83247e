"""Local best response (`jaxcfr.poker.eval.lbr`): exact results against always-fold, the range tracking
and the equities against brute-force loops (pokerkit as the hand evaluator where a loop is short enough),
LBR's choices against a direct evaluation of the paper's formulas, determinism, and
`jaxcfr blueprint evaluate --lbr` end to end."""

import itertools
import json

import numpy as np
import pytest
from cli_runner import run_cli

from abstractions import HOLES, NoLimitRules, hand_rank
from abstractions.ranking import hand_rank as numpy_rank
from jaxcfr import cli
from jaxcfr.poker import bots
from jaxcfr.poker.eval import lbr
from jaxcfr.poker.rules import nlhe
from jaxcfr.poker.rules.cards import parse_cards

FOLD, CALL, RAISE = nlhe.FOLD, nlhe.CALL, nlhe.RAISE


class Scripted:
  """A test bot with mixed, pair-dependent probabilities over four slots: fold (when facing a bet), check
  or call, the pot raise, and the pot raise again (a duplicate slot, which Bayes' rule must add up).
  The weight of slot j for pair (a, b) after n actions is 1 + (7a + 13b + 5n + 3j) mod 11 (`weight`)."""

  name = 'scripted'

  @staticmethod
  def weight(a: int, b: int, n: int, j: int) -> int:
    return 1 + (7 * a + 13 * b + 5 * n + 3 * j) % 11

  def strategy(self, state, holes):
    holes = np.asarray(holes, np.int64)
    options = nlhe.legal(state)
    batch = len(state.street)
    pot_to = nlhe.pot_raise_to(state)
    kind = np.tile(np.array([FOLD, CALL, RAISE, RAISE], np.int8), (batch, 1))
    amount = np.stack([np.zeros(batch, np.int64), options.call_to, pot_to, pot_to], axis=1)
    valid = np.stack([options.can_fold, np.ones(batch, bool), options.can_raise, options.can_raise], axis=1)
    n = state.num_actions.astype(np.int64)[:, None, None]
    raw = 1 + (7 * holes[..., :1] + 13 * holes[..., 1:] + 5 * n + 3 * np.arange(4)) % 11  # [B, K, 4]
    raw = raw * valid[:, None, :]
    return nlhe.ActionSet(kind, amount, valid), raw / raw.sum(axis=2, keepdims=True)


def test_against_always_fold_lbr_wins_exactly_750_mbb_per_hand():
  """The paper's calibration, exact in every deal pair. Bot as small blind: facing the big blind's 100
  with 50 in, it folds, so LBR wins the small blind (500 mbb). Bot as big blind: LBR (small blind) only
  calls preflop; the bot checks (folding is illegal when nothing is to call), both check the flop, the
  bot checks the turn, and LBR compares U(check) = wp * pot with U(pot bet) = fp * pot = pot, since the
  bot folds every pair (fp = 1): it bets and the bot folds, so LBR wins the big blind (1000 mbb); where
  wp = 1 the tie goes to the check and LBR wins the big blind at showdown. Mean (500 + 1000) / 2."""
  result = lbr.local_best_response(bots.resolve_policy('always-fold'), hands=200, seed=4, batch=64)
  assert result.hands == 200 and result.deals == 100
  assert result.lbr_mbb_per_hand == 750 and result.ci95_low == result.ci95_high == 750
  assert result.seat_mbb == (1000, 500)
  np.testing.assert_array_equal(result.chips, np.where(result.lbr_seat == 0, 100, 50))
  # AIVAT's estimate (check-down values) is unbiased, not exact: its interval holds the known value.
  assert result.aivat['ci95_low'] <= 750 <= result.aivat['ci95_high'] and result.aivat['sd_mbb'] > 0


@pytest.mark.parametrize(
  'rules',
  [NoLimitRules(small_blind=25, big_blind=60, stack=1_000), NoLimitRules(small_blind=40, big_blind=80)],
)
def test_against_always_fold_with_other_blinds_lbr_wins_the_average_of_the_blinds(rules):
  """The same two lines as at 50/100: + small blind as big blind, + big blind as small blind, so
  1000 * (small + big) / 2 / big mbb/hand (708.3 at 25/60)."""
  result = lbr.local_best_response(bots.resolve_policy('always-fold'), hands=64, seed=1, rules=rules)
  expected = 1000 * (rules.small_blind + rules.big_blind) / 2 / rules.big_blind
  assert result.lbr_mbb_per_hand == pytest.approx(expected, rel=1e-12)
  assert (result.ci95_low, result.ci95_high) == pytest.approx((expected, expected))
  assert result.seat_mbb == pytest.approx((1000, 1000 * rules.small_blind / rules.big_blind))


def test_lbr_beats_always_call_significantly():
  result = lbr.local_best_response(bots.resolve_policy('always-call'), hands=256, seed=0, batch=128)
  assert result.hands == 256 and result.ci95_low > 0
  assert result.ci95_low < result.lbr_mbb_per_hand < result.ci95_high
  # The deal pairs' means make the interval: recomputed here from the per-hand chips.
  units = []
  for start in range(0, 256, 128):
    chips, seats = result.chips[start : start + 128], result.lbr_seat[start : start + 128]
    assert seats.tolist() == [0] * 64 + [1] * 64
    units.append((chips[:64] + chips[64:]) / 2 * 10)
  units = np.concatenate(units)
  half = 1.959964 * units.std(ddof=1) / np.sqrt(len(units))
  assert (result.ci95_low, result.ci95_high) == pytest.approx((units.mean() - half, units.mean() + half))


def test_the_result_is_deterministic_given_the_seed():
  policy = bots.resolve_policy('random')
  first = lbr.local_best_response(policy, hands=96, seed=7, batch=32)
  again = lbr.local_best_response(policy, hands=96, seed=7, batch=32)
  other = lbr.local_best_response(policy, hands=96, seed=8, batch=32)
  np.testing.assert_array_equal(first.chips, again.chips)
  assert first.lbr_mbb_per_hand == again.lbr_mbb_per_hand
  assert not np.array_equal(first.chips, other.chips)


# The range: LBR's tracking during play against a per-pair loop over each hand's history.


def brute_force_range(hole, board, lbr_seat, history):
  """The bot's range after `history` (rows (street, kind, amount)) as LBR in `lbr_seat` sees it,
  recomputed pair by pair: the prior over the 1,326 pairs, each bot action's likelihood from
  `Scripted.weight` summed over the slots holding the action taken, and card removal."""
  actions = [(int(kind), int(amount)) for _, kind, amount in history]
  weights = np.ones(len(HOLES))
  for step in range(len(actions) + 1):
    state = nlhe.from_actions([actions[:step]], hole[None], board[None])
    seen = {int(c) for c in board[: nlhe.BOARD_SIZES[state.street[0]]]} | {int(c) for c in hole[lbr_seat]}
    for h, (a, b) in enumerate(HOLES):
      if int(a) in seen or int(b) in seen:
        weights[h] = 0.0
    if step == len(actions) or state.to_act[0] == lbr_seat:
      continue
    kind, amount = actions[step]
    options = nlhe.legal(state)
    pot_to = int(nlhe.pot_raise_to(state)[0])
    slots = [(FOLD, bool(options.can_fold[0])), (CALL, True), (RAISE, bool(options.can_raise[0]))]
    slots.append(slots[2])
    taken = [valid and k == kind and (k != RAISE or pot_to == amount) for k, valid in slots]
    for h, (a, b) in enumerate(HOLES):
      raw = [Scripted.weight(int(a), int(b), step, j) if valid else 0 for j, (_, valid) in enumerate(slots)]
      weights[h] *= sum(w for w, t in zip(raw, taken, strict=True) if t) / sum(raw)
    weights /= weights.sum()
  return weights / weights.sum()


def test_the_range_follows_bayes_rule_pair_by_pair_and_lbr_only_calls_before_the_turn():
  state = nlhe.deal(11, 6)
  state = nlhe.concatenate([state, state])
  lbr_seat = np.repeat(np.array([0, 1], np.int8), 6)
  draws = nlhe.generator(12).random(state.noise.shape)
  seen = []

  def on_step(step_state, weights, kind, amount):
    lbr_turn = ~step_state.finished & (step_state.to_act == lbr_seat)
    for b in np.flatnonzero(lbr_turn):
      seen.append((b, step_state.history[b, : step_state.num_actions[b]].copy(), weights[b], kind[b]))
      if step_state.street[b] < 2:
        assert kind[b] == CALL

  final = lbr.play(Scripted(), state, lbr_seat, draws, on_step=on_step)
  assert final.finished.all()
  assert len({b for b, *_ in seen}) >= 8 and any(len(history) >= 4 for _, history, *_ in seen)
  checked = 0
  for b, history, weights, _ in seen[:: max(1, len(seen) // 10)]:  # about ten decisions, checked in full
    expected = brute_force_range(state.hole[b], state.board[b], int(lbr_seat[b]), history)
    np.testing.assert_allclose(weights, expected, rtol=1e-9, atol=1e-15)
    checked += 1
  assert checked >= 8


class Careless(Scripted):
  """Scripted, with nonsense (nan) for the pairs that the visible board blocks."""

  name = 'careless'

  def strategy(self, state, holes):
    actions, probs = super().strategy(state, holes)
    impossible = lbr.blocked(nlhe.visible_board(state))[:, :, None]  # [B, H, 1] (holes: all pairs)
    return actions, np.where(impossible, np.nan, probs)


def test_what_a_policy_says_for_impossible_hole_cards_is_ignored():
  state = nlhe.deal(2, 16)
  state = nlhe.concatenate([state, state])
  lbr_seat = np.repeat(np.array([0, 1], np.int8), 16)
  draws = nlhe.generator(3).random(state.noise.shape)
  careful = lbr.play(Scripted(), state, lbr_seat, draws)
  careless = lbr.play(Careless(), state, lbr_seat, draws)
  np.testing.assert_array_equal(careful.history, careless.history)
  assert np.isin(careful.street, (2, 3)).any()


def test_policies_that_break_the_protocol_are_named():
  class Unnormalised(Scripted):
    name = 'unnormalised'

    def strategy(self, state, holes):
      actions, probs = super().strategy(state, holes)
      return actions, probs * 2

  with pytest.raises(ValueError, match='policy unnormalised: probabilities must sum to 1'):
    lbr.local_best_response(Unnormalised(), hands=4)

  class Broken(Scripted):
    def __init__(self, how):
      self.name, self.how = how, how

    def strategy(self, state, holes):
      actions, probs = super().strategy(state, holes)
      probs = np.array(probs, np.float64)
      possible = ~lbr.blocked(nlhe.visible_board(state))
      b, h = 0, int(np.flatnonzero(possible[0])[0])  # a pair the board leaves
      if self.how == 'invalid':  # weight on a slot that is not valid, the row still summing to 1
        slot = int(np.flatnonzero(~np.asarray(actions.valid)[b])[0])
        probs[b, h] *= 0.5
        probs[b, h, slot] = 0.5
      else:
        probs[b, h, int(np.flatnonzero(np.asarray(actions.valid)[b])[0])] = {
          'nan': np.nan,
          'inf': np.inf,
        }.get(self.how, -0.5)
      return actions, probs

  for how in ('nan', 'inf', 'negative', 'invalid'):
    with pytest.raises(
      ValueError, match=f'policy {how}: probabilities must be finite, non-negative, and 0 on'
    ):
      # the big blind checks or raises (fold is not valid); facing 300
      lbr.query(Broken(how), nlhe.from_actions([[(CALL, 0)], [(RAISE, 300)]]))


def test_observe_adds_up_duplicate_slots_and_renormalises():
  state = nlhe.from_actions([[(CALL, 0)], [(RAISE, 300)]])  # the big blind to act: check or raise; facing 300
  actions, probs = lbr.query(Scripted(), state)
  prior = lbr.initial_range(state, np.array([0, 0]))
  choice = np.array([3, 0])  # the second pot-raise slot, a fold
  posterior = lbr.observe(prior, actions, probs, choice)
  for b in range(2):
    likelihood = np.array(
      [sum(probs[b, h, j] for j in ({2, 3} if choice[b] == 3 else {0})) for h in range(1326)]
    )
    expected = prior[b] * likelihood
    np.testing.assert_allclose(posterior[b], expected / expected.sum(), rtol=1e-12)
  assert posterior[0, HOLES.tolist().index([0, 1])] == 0  # LBR's own cards (0, 1) are not in the range


# Equity: the showdown scores against loops over the opponent's pairs (and the river cards).


def brute_force_scores(hole, board, only=None):
  """LBR's score against each pair on a flop, turn or river board by loops: 1 win, 1/2 tie, 0 loss,
  averaged over the runouts (the turn and river, or the river) that neither hand nor board holds; 0 for
  blocked pairs (and for pairs not in `only`, a set of pair indices, if given). float64 [1326]."""
  dead = {int(c) for c in (*hole, *board)}
  unseen = [c for c in range(52) if c not in dead]
  runouts = list(itertools.combinations(unseen, 5 - len(board)))
  rows, keys = [], []
  for r in runouts:
    full = list(board) + list(r)
    rows.append([*hole, *full])
    keys.append((r, -1))
    for h, (a, b) in enumerate(HOLES):
      if (
        int(a) not in dead
        and int(b) not in dead
        and a not in r
        and b not in r
        and (only is None or h in only)
      ):
        rows.append([a, b, *full])
        keys.append((r, h))
  ranks = dict(zip(keys, np.asarray(hand_rank(np.array(rows, np.int32))).tolist(), strict=True))
  total, count = np.zeros(len(HOLES)), np.zeros(len(HOLES))
  for (r, h), rank in ranks.items():
    if h >= 0:
      mine = ranks[(r, -1)]
      total[h] += 1.0 if mine > rank else 0.5 if mine == rank else 0.0
      count[h] += 1
  return np.where(count > 0, total / np.maximum(count, 1), 0.0)


def pokerkit_equity(hole, board, pairs, weights):
  """LBR's equity against `pairs` (hole pairs) weighted `weights`, every hand valued by pokerkit."""
  pokerkit = pytest.importorskip('pokerkit')
  text = lambda cards: ''.join('23456789TJQKA'[c // 4] + 'cdhs'[c % 4] for c in cards)
  dead = {int(c) for c in (*hole, *board)}
  rivers = [c for c in range(52) if c not in dead] if len(board) == 4 else [None]
  value = lambda two, full: pokerkit.StandardHighHand.from_game(text(two), text(full))
  total = 0.0
  for (a, b), w in zip(pairs, weights, strict=True):
    outcomes = []
    for r in rivers:
      if r in (a, b):
        continue
      full = list(board) + ([r] if r is not None else [])
      mine, theirs = value(hole, full), value([a, b], full)
      outcomes.append(1.0 if mine > theirs else 0.5 if mine == theirs else 0.0)
    total += w * np.mean(outcomes)
  return total / np.sum(weights)


@pytest.mark.parametrize('cards', ['AsKd 2c7h9dTsJh', 'QhQs QdJc8h3s', '5c4c 6c7c8h9c', '8d8s 8c8hAdKd'])
def test_showdown_scores_match_a_loop_over_pairs_and_rivers(cards):
  hole_text, board_text = cards.split()
  hole, board = parse_cards(hole_text), parse_cards(board_text)
  padded = np.array([*board, *([0] * (5 - len(board)))])
  scores = lbr.showdown_scores(np.array([hole]), padded[None], np.array([len(board)]))[0]
  np.testing.assert_allclose(scores, brute_force_scores(hole, board), rtol=0, atol=1e-6)
  rng = np.random.default_rng(len(board))
  dead = {*hole, *board}
  unblocked = np.array([not {int(a), int(b)} & dead for a, b in HOLES])
  assert np.all(scores[~unblocked] == 0) and np.any(scores[unblocked] > 0)
  weights = rng.random(len(HOLES)) * unblocked * (rng.random(len(HOLES)) < 0.3)
  expected = (weights * brute_force_scores(hole, board)).sum() / weights.sum()
  assert lbr.equity(weights[None], scores[None])[0] == pytest.approx(expected, abs=1e-6)


@pytest.mark.slow
def test_showdown_scores_on_a_flop_average_every_turn_and_river():
  hole, board = parse_cards('Th9h'), parse_cards('8h7c2h')
  padded = np.array([*board, 0, 0])
  scores = lbr.showdown_scores(np.array([hole]), padded[None], np.array([3]))[0]
  free = np.flatnonzero(~np.isin(HOLES, [*hole, *board]).any(axis=1))
  only = set(np.random.default_rng(3).choice(free, 40, replace=False).tolist())
  loops = brute_force_scores(hole, board, only)
  index = sorted(only)
  np.testing.assert_allclose(scores[index], loops[index], rtol=0, atol=1e-6)
  assert np.all(scores[np.isin(HOLES, [*hole, *board]).any(axis=1)] == 0)


def test_preflop_scores_average_the_sample_boards_that_miss_the_pair():
  """Preflop LBR's scores are a Monte Carlo mean over PREFLOP_SAMPLES boards from the hand's key: the
  same boards, drawn again here, give the same scores pair by pair in a loop; and the estimate of an
  equity is within its noise of the exact one."""
  import jax

  from jaxcfr.poker.eval.aivat import sample_boards

  hole = parse_cards('AhKh')
  key = jax.random.key(7)
  scores = lbr.showdown_scores(np.array([hole]), np.zeros((1, 5)), np.array([0]), keys=key[None])[0]
  unseen = np.array([c for c in range(52) if c not in hole])
  boards = unseen[np.asarray(sample_boards(key, 50, lbr.PREFLOP_SAMPLES))]  # [K, 5]
  rng = np.random.default_rng(0)
  pairs = rng.choice(np.flatnonzero(~np.isin(HOLES, hole).any(axis=1)), 12, replace=False)
  for h in pairs:
    a, b = HOLES[h]
    kept = boards[~np.isin(boards, (a, b)).any(axis=1)]
    mine = numpy_rank(np.concatenate([np.broadcast_to(hole, (len(kept), 2)), kept], 1))
    theirs = numpy_rank(np.concatenate([np.broadcast_to((a, b), (len(kept), 2)), kept], 1))
    expected = np.mean(np.where(mine > theirs, 1.0, np.where(mine == theirs, 0.5, 0.0)))
    assert scores[h] == pytest.approx(expected, abs=1e-6)
  assert np.all(scores[np.isin(HOLES, hole).any(axis=1)] == 0)
  aces = pair_of('AsAd')  # AKs against aces: about 12%
  assert 0.08 < scores[aces] < 0.17


def pair_of(text):
  a, b = parse_cards(text)
  return int(lbr.PAIR_INDEX[a, b])


def test_showdown_scores_refuse_what_they_cannot_value():
  with pytest.raises(ValueError, match='0, 3, 4 or 5'):
    lbr.showdown_scores(np.array([[0, 1]]), np.array([[4, 5, 0, 0, 0]]), np.array([2]))
  with pytest.raises(ValueError, match='need keys'):
    lbr.showdown_scores(np.array([[0, 1]]), np.zeros((1, 5)), np.array([0]))


@pytest.mark.parametrize('cards', ['AsKd 2c7h9dTs', 'Jc9c Tc8c2dQh', '7h7d 7c2s2hKs'])
def test_equity_against_a_small_range_matches_pokerkit(cards):
  hole_text, board_text = cards.split()
  hole, board = parse_cards(hole_text), parse_cards(board_text)
  padded = np.array([*board, *([0] * (5 - len(board)))])
  rng = np.random.default_rng(3)
  open_pairs = [h for h, (a, b) in enumerate(HOLES) if not {int(a), int(b)} & {*hole, *board}]
  pairs = rng.choice(open_pairs, 24, replace=False)
  weights = rng.random(24) + 0.1
  full = np.zeros(len(HOLES))
  full[pairs] = weights
  scores = lbr.showdown_scores(np.array([hole]), padded[None], np.array([len(board)]))
  expected = pokerkit_equity(hole, board, HOLES[pairs], weights)
  assert lbr.equity(full[None], scores)[0] == pytest.approx(expected, abs=1e-6)


# LBR's choice against the formulas evaluated directly.

# (LBR's cards, the bot's cards, board, actions before LBR's decision, LBR's seat, pot raise-to, all-in)
SPOTS = [
  # River, LBR (small blind, last to act) facing a 200 bet into 200: pot 400, call 200, pot raise to 800.
  ('AhKh', 'QcQd', 'Ks9h4c2d7s', [(1, 0), (1, 0), (1, 0), (1, 0), (1, 0), (1, 0), (2, 200)], 0, 800, 19900),
  # Turn, LBR (big blind) first to act on a checked pot of 200: a pot bet is 200.
  ('7c6c', 'AsJd', '8c5c2hKd3s', [(1, 0), (1, 0), (1, 0), (1, 0)], 1, 200, 19900),
  # Turn, LBR (small blind) facing 150 into 200: pot 350, call 150, pot raise to 150 + 350 + 150.
  ('TdTs', '9h9c', 'Jh8d3c4s6h', [(1, 0), (1, 0), (1, 0), (1, 0), (2, 150)], 0, 650, 19900),
  # River, LBR (big blind) facing an all-in after a 300 raise preflop: fold or call only.
  (
    '5d5h',
    'AcKc',
    'Qh7d2s9c3h',
    [(2, 300), (1, 0), (1, 0), (1, 0), (1, 0), (1, 0), (1, 0), (2, 19700)],
    1,
    0,
    0,
  ),
  # River, LBR (small blind) with a weak hand after checks: betting is worth something through folds.
  ('3d2c', 'KhQh', 'As9d8c7h4s', [(1, 0), (1, 0), (1, 0), (1, 0), (1, 0), (1, 0), (1, 0)], 0, 200, 19900),
]


def direct_values(lbr_hole, board, shown, actions, hole, weights, raise_tos, only=None):
  """U(fold), U(call), U(pot), U(all-in) of the formulas, with pair-by-pair loops: wp over the scores of
  `brute_force_scores`, fp from the bot queried at the state after each raise (replayed from scratch)."""
  scores = brute_force_scores(lbr_hole, board[:shown], only)  # `only`: the pairs with weight
  state = nlhe.from_actions([actions], hole[None], board[None])
  seat = int(state.to_act[0])
  mine, theirs = int(state.round_bet[0, seat]), int(state.round_bet[0, 1 - seat])
  pot, to_call = int(state.committed.sum()), theirs - mine
  wp = sum(w * s for w, s in zip(weights, scores, strict=True)) / sum(weights)
  values = [0.0 if to_call > 0 else np.nan, wp * pot - (1 - wp) * to_call]
  for raise_to in raise_tos:
    if not raise_to:
      values.append(np.nan)
      continue
    after = nlhe.from_actions([[*actions, (RAISE, raise_to)]], hole[None], board[None])
    _, probs = Scripted().strategy(after, HOLES[None])
    fold = probs[0, :, 0]
    fp = sum(w * f for w, f in zip(weights, fold, strict=True)) / sum(weights)
    kept = weights * (1 - fold)
    wp_called = sum(k * s for k, s in zip(kept, scores, strict=True)) / sum(kept)
    bet = raise_to - max(mine, theirs)
    values.append(fp * pot + (1 - fp) * (wp_called * (pot + bet) - (1 - wp_called) * (to_call + bet)))
  return np.array(values)


def test_decisions_match_the_formulas_on_hand_made_spots():
  rng = np.random.default_rng(5)
  holes, boards, histories, weights, raise_tos, seats = [], [], [], [], [], []
  for mine_text, theirs_text, board_text, actions, seat, pot_to, all_in in SPOTS:
    hole = np.zeros((2, 2), np.int64)
    hole[seat], hole[1 - seat] = parse_cards(mine_text), parse_cards(theirs_text)
    holes.append(hole)
    boards.append(np.array(parse_cards(board_text)))
    histories.append(actions)
    seats.append(seat)
    raise_tos.append((pot_to, all_in))
  state = nlhe.from_actions(histories, np.stack(holes), np.stack(boards))
  assert state.to_act.tolist() == seats and np.isin(state.street, (2, 3)).all()
  prior = lbr.initial_range(state, np.array(seats))
  weights = prior * rng.random(prior.shape) * (rng.random(prior.shape) < 0.5)
  shown = nlhe.board_size(state)
  lbr_holes = state.hole[np.arange(len(seats)), seats]
  scores = lbr.showdown_scores(lbr_holes, state.board, shown)
  decision = lbr.decide(Scripted(), state, weights, scores)
  np.testing.assert_array_equal(decision.raise_to, np.array(raise_tos))
  kinds = set()
  for b in range(len(SPOTS)):
    expected = direct_values(
      lbr_holes[b], state.board[b], shown[b], histories[b], state.hole[b], weights[b], raise_tos[b]
    )
    np.testing.assert_allclose(decision.utility[b], expected, rtol=1e-9, atol=1e-6)
    offered = np.where(np.isnan(expected), -np.inf, expected)
    best = int(np.argmax(offered[1:])) + 1
    if offered[best] <= 0 and not np.isnan(expected[0]):
      best = 0
    kind, amount = [(FOLD, 0), (CALL, 0), (RAISE, raise_tos[b][0]), (RAISE, raise_tos[b][1])][best]
    assert (decision.kind[b], decision.amount[b]) == (kind, amount)
    kinds.add(kind)
  assert len(kinds) >= 2  # the spots do not all end in the same choice


@pytest.mark.parametrize(
  'text,expected',
  [
    ('turn-river', ('c', 'c', 'fcpa', 'fcpa')),
    ('all-streets', ('fcpa', 'fcpa', 'fcpa', 'fcpa')),
    ('c,cf,apc,fc', ('c', 'fc', 'cpa', 'fc')),
  ],
)
def test_action_sets_parse_into_fcpa_order(text, expected):
  assert lbr.parse_actions(text) == expected
  assert lbr.setting_name(expected) == '/'.join(group.upper() for group in expected)


@pytest.mark.parametrize('text', ['c,c,fcpa', 'c,c,fpa,fcpa', 'c,c,fcpx,fcpa', 'c,,c,c', 'everything'])
def test_bad_action_sets_are_refused_in_one_line(text):
  with pytest.raises(ValueError, match='four comma-separated groups'):
    lbr.parse_actions(text)


@pytest.mark.slow
def test_decisions_on_the_flop_match_the_formulas_when_lbr_bets_there():
  """The flop spot of the all-street setting: U of every action against the direct evaluation with the
  brute-force flop scores, and the choice is the best of them."""
  rng = np.random.default_rng(8)
  hole = np.zeros((2, 2), np.int64)
  hole[1], hole[0] = parse_cards('Th9h'), parse_cards('AcJd')
  board = np.array(parse_cards('8h7c2hKs3d'))
  actions = [(1, 0), (1, 0)]  # limp, check: LBR (big blind) first on the flop
  state = nlhe.from_actions([actions], hole[None], board[None])
  assert state.street[0] == 1 and state.to_act[0] == 1
  weights = lbr.initial_range(state, np.array([1])) * rng.random((1, len(HOLES)))
  weights *= rng.random(weights.shape) < 0.04  # a sparse range: the loops visit its pairs only
  only = set(np.flatnonzero(weights[0]).tolist())
  scores = lbr.showdown_scores(state.hole[:, 1], state.board, nlhe.board_size(state))
  decision = lbr.decide(Scripted(), state, weights, scores, 'all-streets')
  raise_tos = tuple(decision.raise_to[0])
  expected = direct_values(hole[1], board, 3, actions, state.hole[0], weights[0], raise_tos, only)
  np.testing.assert_allclose(decision.utility[0], expected, rtol=1e-9, atol=1e-6)
  best = int(np.nanargmax(expected[1:])) + 1
  kind = [FOLD, CALL, RAISE, RAISE][best]
  assert decision.kind[0] == kind
  calls = lbr.decide(Scripted(), state, weights, scores, 'turn-river')  # the main setting only calls there
  assert calls.kind[0] == CALL and np.isnan(calls.utility).all()


def test_all_street_lbr_against_always_fold_raises_preflop_and_wins_750_too():
  result = lbr.local_best_response(
    bots.resolve_policy('always-fold'), 40, seed=1, batch=16, actions='all-streets'
  )
  assert result.lbr_mbb_per_hand == 750 and result.to_json()['setting'] == 'FCPA/FCPA/FCPA/FCPA'


@pytest.mark.slow
def test_settings_are_paired_on_the_same_deals():
  policy = bots.resolve_policy('always-call')
  runs = [
    lbr.local_best_response(policy, 8, seed=2, batch=8, actions=a, keep_hands=True)
    for a in ('turn-river', 'all-streets')
  ]
  np.testing.assert_array_equal(runs[0].final.hole, runs[1].final.hole)
  np.testing.assert_array_equal(runs[0].final.board, runs[1].final.board)
  assert runs[0].to_json()['lbr_actions'] == 'c,c,fcpa,fcpa'
  assert runs[1].to_json()['lbr_actions'] == 'fcpa,fcpa,fcpa,fcpa'


def test_lbr_checks_or_calls_before_the_turn_without_looking():
  state = nlhe.from_actions([[(2, 300)], [(1, 0), (1, 0)]])  # preflop facing a raise; the flop
  weights = lbr.initial_range(state, state.to_act)
  decision = lbr.decide(Scripted(), state, weights, np.zeros_like(weights))
  assert decision.kind.tolist() == [CALL, CALL] and np.isnan(decision.utility).all()


# The command line.


def test_lbr_command_end_to_end(tmp_path):
  code, out, err = run_cli(
    'blueprint',
    'evaluate',
    '--lbr',
    'always-fold',
    '--hands',
    '40',
    '--seed',
    '3',
    '--batch',
    '16',
    '--json',
    '-',
  )
  assert code == 0, err
  result = json.loads(out)  # nothing else on stdout
  assert {'lbr_mbb_per_hand', 'ci95_low', 'ci95_high', 'hands', 'seats'} <= set(result)
  assert result['lbr_mbb_per_hand'] == 750 and result['ci95_low'] == result['ci95_high'] == 750
  assert result['hands'] == 40 and result['policy'] == 'always-fold'
  assert 'LBR: +750.0 mbb/hand, 95% CI [+750.0, +750.0]' in err
  assert result['setting'] == 'C/C/FCPA/FCPA' and 'LBR (C/C/FCPA/FCPA) vs always-fold' in err


def test_lbr_command_writes_json_and_replaces_only_its_own(tmp_path, capsys):
  path = tmp_path / 'lbr.json'
  assert (
    cli.main(
      [
        'blueprint',
        'evaluate',
        '--lbr',
        'random',
        '--hands',
        '8',
        '--batch',
        '8',
        '--json',
        str(path),
        '--quiet',
      ]
    )
    == 0
  )
  assert 'JSON written' in capsys.readouterr().out
  assert json.loads(path.read_text())['hands'] == 8
  assert (
    cli.main(['blueprint', 'evaluate', '--lbr', 'random', '--hands', '8', '--json', str(path), '--quiet'])
    == 2
  )  # exists
  assert (
    cli.main(
      ['blueprint', 'evaluate', '--lbr', 'random', '--hands', '8', '--json', str(path), '--force', '--quiet']
    )
    == 0
  )


@pytest.mark.parametrize(
  'args,message',
  [
    (('nosuch-bot',), "'nosuch-bot' is neither a baseline"),
    (('random', '--hands', '3'), 'must be at least 4'),
    (('random', '--batch', '1'), 'must be at least 2'),
    (('random', '--seed', 'x'), "'x' is not a whole number"),
    (('random', '--lbr-actions', 'c,c,c'), 'four comma-separated groups'),
    (('random', '--json', '/nonexistent/x.json'), 'does not exist'),
    (('random', '--json', 'FOREIGN', '--force'), 'FOREIGN'),
  ],
)
def test_lbr_command_bad_input_is_one_line_and_exit_status_2(args, message, tmp_path, capsys):
  foreign = tmp_path / 'foreign.json'
  foreign.write_text('{"mine": 1}')
  args = [str(foreign) if arg == 'FOREIGN' else arg for arg in args]
  message = message.replace('FOREIGN', str(foreign))
  try:
    code = cli.main(['blueprint', 'evaluate', '--lbr', *args, '--quiet'])
  except SystemExit as exit:  # argparse's own errors
    code = exit.code
  err = capsys.readouterr().err
  assert code == 2 and message in err and 'Traceback' not in err
  assert len([line for line in err.splitlines() if line.startswith('jaxcfr')]) == 1
  assert foreign.read_text() == '{"mine": 1}'
