"""The match engine and the baseline policies: exact results the rules dictate, duplicate symmetry,
per-hand payoffs recomputed by pokerkit, the confidence interval, and `jaxcfr match` end to end."""

import importlib.util
import itertools
import json

import jax
import numpy as np
import pytest
from cli_runner import run_cli

from abstractions import HOLES, NoLimitRules, hand_rank
from jaxcfr import cli
from jaxcfr.poker import bots
from jaxcfr.poker.eval import baselines, match
from jaxcfr.poker.rules import nlhe

POLICIES = {name: bots.resolve_policy(name) for name in baselines.REGISTRY}


def play(*args, **kwargs) -> match.MatchResult:
  """`match.play_match` without AIVAT's estimate: the hands it plays are the same with it
  (test_poker_aivat.py checks the estimate); its preflop Monte Carlo is most of these matches' time."""
  return match.play_match(*args, aivat=None, **kwargs)


@pytest.mark.parametrize(
  'name', [pytest.param(n, marks=pytest.mark.slow) if n == 'equity' else n for n in baselines.REGISTRY]
)  # equity's Monte Carlo is the slow one: behind -m slow for the suite's 10 minutes
def test_a_policy_against_itself_in_duplicate_scores_exactly_zero(name):
  result = play(POLICIES[name], POLICIES[name], hands=400, seed=3, batch=256)
  assert result.mbb_per_hand == 0 and result.ci95_low == result.ci95_high == 0
  # Not zero because nothing happens: each seat's result is the other's, with the sign flipped.
  assert result.seat_mbb[0] == -result.seat_mbb[1]
  if name != 'always-fold':  # always-fold against itself: the small blind folds every hand
    assert np.any(result.chips != 0) and result.hands == 400 and result.deals == 200


@pytest.mark.parametrize('rules', [NoLimitRules(), NoLimitRules(small_blind=25, big_blind=60, stack=1_000)])
def test_always_pot_against_always_fold_wins_what_the_rules_say(rules):
  # As the small blind it raises and the big blind folds: + big blind. As the big blind it faces the
  # small blind's fold of its 50: + small blind. Nothing else can happen.
  result = play(POLICIES['always-pot'], POLICIES['always-fold'], hands=300, seed=1, rules=rules)
  expected = 1000 * (rules.big_blind + rules.small_blind) / 2 / rules.big_blind
  assert result.mbb_per_hand == pytest.approx(expected, rel=1e-12)
  assert result.ci95_low == pytest.approx(expected) and result.ci95_high == pytest.approx(expected)
  assert result.seat_mbb == pytest.approx((1000, 1000 * rules.small_blind / rules.big_blind))
  np.testing.assert_array_equal(
    result.chips, np.where(result.a_seat == 0, rules.big_blind, rules.small_blind)
  )
  reverse = play(POLICIES['always-fold'], POLICIES['always-pot'], hands=300, seed=1, rules=rules)
  assert reverse.mbb_per_hand == pytest.approx(-expected)


def test_a_match_is_the_mean_of_its_hands_replayed_through_pokerkit():
  nlhe_oracle = pytest.importorskip('nlhe_oracle')
  result = play(POLICIES['random'], POLICIES['equity'], hands=300, seed=5, batch=128, keep_hands=True)
  final = result.final
  assert len(result.chips) == result.hands == 300 and final.finished.all()
  chips = []
  for b in range(result.hands):
    history = final.history[b, : final.num_actions[b]]
    actions = [(int(kind), int(amount)) for _, kind, amount in history]
    referee = nlhe_oracle.replay(final.hole[b], final.board[b], actions)
    chips.append(referee.payoffs[result.a_seat[b]])
  np.testing.assert_array_equal(result.chips, chips)
  assert result.mbb_per_hand == pytest.approx(np.mean(chips) / 100 * 1000, rel=1e-12)
  assert np.any(np.array(chips) != 0) and len(set(chips)) > 10


def test_the_confidence_interval_is_over_deal_pairs_in_duplicate_and_hands_otherwise():
  result = play(POLICIES['random'], POLICIES['always-call'], hands=600, seed=2, batch=200)
  pairs = []
  for start in range(0, 600, 200):  # each batch: its 100 deals with A in seat 0, then in seat 1
    chips, seats = result.chips[start : start + 200], result.a_seat[start : start + 200]
    assert seats.tolist() == [0] * 100 + [1] * 100
    pairs.append((chips[:100] + chips[100:]) / 2 * 10)  # mbb: chips / 100 * 1000
  pairs = np.concatenate(pairs)
  half = 1.959964 * pairs.std(ddof=1) / np.sqrt(len(pairs))
  assert result.mbb_per_hand == pytest.approx(pairs.mean())
  assert (result.ci95_low, result.ci95_high) == pytest.approx((pairs.mean() - half, pairs.mean() + half))
  assert result.ci95_low < result.mbb_per_hand < result.ci95_high

  single = play(POLICIES['random'], POLICIES['always-call'], hands=601, seed=2, duplicate=False)
  assert single.hands == 601 and single.a_seat.tolist() == [0, 1] * 300 + [0]
  mbb = single.chips * 10.0
  half = 1.959964 * mbb.std(ddof=1) / np.sqrt(601)
  assert (single.ci95_low, single.ci95_high) == pytest.approx((mbb.mean() - half, mbb.mean() + half))


def test_matches_are_deterministic_given_the_seed():
  seeded = lambda seed: play(POLICIES['random'], POLICIES['always-pot'], hands=200, seed=seed)
  first, again, other = seeded(7), seeded(7), seeded(8)
  np.testing.assert_array_equal(first.chips, again.chips)
  assert first.mbb_per_hand == again.mbb_per_hand
  assert not np.array_equal(first.chips, other.chips)
  # Odd hand counts in duplicate round up to whole deal pairs.
  assert play(POLICIES['random'], POLICIES['random'], hands=5, seed=0).hands == 6


class _Broken:
  """A policy whose probabilities or actions are wrong in a chosen way."""

  def __init__(self, fault):
    self.name, self.fault = f'broken-{fault}', fault

  def strategy(self, state, holes):
    actions, probs = POLICIES['always-call'].strategy(state, holes)
    if self.fault == 'sum':
      probs = probs * 0.5
    elif self.fault == 'illegal':  # a raise to 1 chip
      probs = np.zeros_like(probs)
      probs[..., 2] = 1
      amount = actions.amount.copy()
      amount[:, 2] = 1
      actions = actions._replace(amount=amount, valid=np.ones_like(actions.valid))
    elif self.fault == 'shape':
      probs = probs[:, 0]
    return actions, probs


@pytest.mark.parametrize(
  'fault,message', [('sum', 'sum to 1'), ('illegal', 'chose an illegal action'), ('shape', 'for 1024 hands')]
)
def test_a_policy_that_breaks_the_protocol_is_named(fault, message):
  with pytest.raises(ValueError, match=message):
    play(_Broken(fault), POLICIES['always-pot'], hands=2048, seed=0)


def test_bad_match_arguments_are_refused():
  with pytest.raises(ValueError, match='hands must be'):
    match.play_match(POLICIES['random'], POLICIES['random'], hands=3)
  with pytest.raises(ValueError, match='seed must be'):
    match.play_match(POLICIES['random'], POLICIES['random'], hands=10, seed=-1)


def _random_states(count: int, seed: int) -> nlhe.HandState:
  """Unfinished hands at random points of random play (all streets)."""
  rng = np.random.default_rng(seed)
  state = nlhe.deal(seed, count)
  stop = rng.integers(0, 8, count)
  for step in range(8):
    options = nlhe.legal(state)
    move = (step < stop) & ~state.finished
    raising = options.can_raise & (rng.random(count) < 0.3)
    state = nlhe.apply(state, np.where(raising, 2, 1), options.min_raise_to, move)
  return nlhe.take(state, ~state.finished)


@pytest.mark.parametrize('name', list(baselines.REGISTRY))
def test_baselines_give_legal_distributions(name):
  state = _random_states(600, seed=4)
  assert set(state.street.tolist()) == {0, 1, 2, 3}
  holes = state.hole[np.arange(len(state.street)), state.to_act][:, None]  # [B, 1, 2]
  actions, probs = POLICIES[name].strategy(state, holes)
  assert probs.shape == (len(state.street), 1, 3)
  np.testing.assert_allclose(probs.sum(-1), 1)
  assert np.all(probs[~np.broadcast_to(actions.valid[:, None], probs.shape)] == 0)
  for slot in range(3):
    valid = actions.valid[:, slot]
    assert nlhe.is_legal(
      nlhe.take(state, valid), actions.kind[valid, slot], actions.amount[valid, slot]
    ).all()
  options = nlhe.legal(state)
  if name == 'always-pot':
    raising = probs[:, 0, 2] == 1
    np.testing.assert_array_equal(raising, options.can_raise)
    np.testing.assert_array_equal(actions.amount[raising, 2], nlhe.pot_raise_to(state)[raising])
  if name == 'random':
    np.testing.assert_allclose(probs[:, 0], actions.valid / actions.valid.sum(1, keepdims=True))
    span = options.max_raise_to - options.min_raise_to
    position = (actions.amount[:, 2] - options.min_raise_to)[options.can_raise] / span[options.can_raise]
    assert 0 <= position.min() < 0.1 and 0.9 < position.max() <= 1  # spread over the whole range


def test_pot_raise_to_follows_the_pot_rule():
  state = nlhe.from_actions([[], [(2, 300)], [(1, 0), (1, 0)], [(1, 0), (1, 0), (2, 150)]])
  # Preflop: call 50, then raise the pot of 200 -> 300. Facing 300: call 200 (pot 600), raise to 900.
  # Flop, pot 200, nothing to call: bet 200. Facing a bet of 150 into 200: call (pot 500), raise to 650.
  assert nlhe.pot_raise_to(state).tolist() == [300, 900, 200, 650]


def _exact_equity(hole, board) -> float:
  """Equity against a random hand by enumerating every opponent hand and runout (brute force)."""
  shown = [int(c) for c in board if c >= 0]
  rest = np.array([c for c in range(52) if c not in set(shown) | {int(hole[0]), int(hole[1])}])
  subsets = lambda k: np.array(list(itertools.combinations(range(len(rest)), k)), int).reshape(
    -1 if k else 1, k
  )
  opponents, runouts = rest[subsets(2)], rest[subsets(5 - len(shown))]  # [O, 2], [R, 5 - shown]
  apart = ~(opponents[:, None, :, None] == runouts[None, :, None, :]).any(axis=(-1, -2))  # [O, R]
  o, r = np.nonzero(apart)
  full = np.concatenate([np.broadcast_to(shown, (len(o), len(shown))), runouts[r]], axis=1)
  ours = _rank(np.concatenate([np.broadcast_to(hole, (len(o), 2)), full], axis=1))
  theirs = _rank(np.concatenate([opponents[o], full], axis=1))
  return float(np.mean(np.where(ours > theirs, 1.0, np.where(ours == theirs, 0.5, 0.0))))


_rank = lambda cards: np.asarray(jax.jit(hand_rank)(cards.astype(np.int32)))


def test_hand_strength_against_enumeration_and_known_preflop_equities():
  rng = np.random.default_rng(0)
  for shown in (3, 4, 5, 3, 4):
    cards = rng.permutation(52)[:7]
    board = np.full(5, -1)
    board[:shown] = cards[2 : 2 + shown]
    strength = baselines.hand_strength(cards[None, :2], board[None])[0]
    exact = _exact_equity(cards[:2], board)
    if shown == 5:
      assert strength == pytest.approx(exact, abs=1e-6)
    else:  # Monte Carlo over 512 fixed draws: standard error <= 0.5 / sqrt(512) = 0.022
      assert abs(strength - exact) < 0.09, (shown, strength, exact)
  # Equity against a random hand, as published (e.g. pokerstove): AA 85.2%, KK 82.4%, AKs 67.0%,
  # 72o 34.6%, 32o 32.3%.
  cards = {'AA': (51, 50), 'KK': (47, 46), 'AKs': (51, 47), '72o': (20, 1), '32o': (4, 1)}
  published = {'AA': 0.852, 'KK': 0.824, 'AKs': 0.670, '72o': 0.346, '32o': 0.323}
  strength = baselines.hand_strength(np.array(list(cards.values())), np.full((5, 5), -1))
  np.testing.assert_allclose(strength, list(published.values()), atol=0.01)
  # The same hand strength whatever the batch around it (deterministic per hand).
  holes = HOLES[rng.choice(1326, 70, replace=False)]
  boards = np.array([rng.permutation([c for c in range(52) if c not in h])[:5] for h in holes])
  boards[:, 3:] = -1
  alone = [baselines.hand_strength(h[None], b[None])[0] for h, b in zip(holes[:3], boards[:3], strict=True)]
  np.testing.assert_array_equal(baselines.hand_strength(holes, boards)[:3], alone)


def test_the_equity_bot_follows_its_thresholds():
  state = _random_states(400, seed=6)
  holes = state.hole[np.arange(len(state.street)), state.to_act][:, None]
  actions, probs = POLICIES['equity'].strategy(state, holes)
  choice = probs[:, 0].argmax(-1)
  strength = baselines.hand_strength(holes[:, 0], nlhe.visible_board(state))
  options = nlhe.legal(state)
  to_call = options.call_to - state.round_bet[np.arange(len(choice)), state.to_act]
  odds = to_call / (nlhe.pot(state) + to_call)
  expected = np.where(
    (strength >= baselines.RAISE_EQUITY) & options.can_raise,
    2,
    np.where((strength >= odds) | ~options.can_fold, 1, 0),
  )
  np.testing.assert_array_equal(choice, expected)
  assert set(choice.tolist()) == {0, 1, 2}


def test_resolve_policy():
  assert bots.resolve_policy('equity').name == 'equity'
  with pytest.raises(ValueError, match='neither a baseline'):
    bots.resolve_policy('always-raise')
  if importlib.util.find_spec('jaxcfr.poker.blueprint') is None:
    with pytest.raises(ValueError, match='needs jaxcfr.poker.blueprint'):
      bots.resolve_policy(__file__)


def test_cli_plays_two_baselines_and_writes_json(tmp_path):
  path = tmp_path / 'match.json'
  code, out, err = run_cli('match', 'always-pot', 'always-fold', '--hands', '100', '--json', str(path))
  assert code == 0, err
  assert '+750.0 mbb/hand, 95% CI [+750.0, +750.0]' in out and '100 hands (50 deals in duplicate)' in out
  report = json.loads(path.read_text())
  assert {'mbb_per_hand', 'ci95_low', 'ci95_high', 'hands', 'seats', 'policy_a', 'policy_b'} <= set(report)
  assert report['mbb_per_hand'] == 750 and report['hands'] == 100 and report['duplicate'] is True
  code, out, err = run_cli('match', 'random', 'always-call', '--hands', '50', '--no-duplicate', '--json', '-')
  assert code == 0, err
  report = json.loads(out)  # nothing else on stdout
  assert report['hands'] == 50 and report['duplicate'] is False and report['ci95_low'] < report['ci95_high']


@pytest.mark.parametrize(
  'args,message',
  [
    (('always-call', 'nobody'), "'nobody' is neither a baseline"),
    (('always-call', 'random', '--hands', '3'), '--hands must be at least 4'),
    (('always-call', 'random', '--hands', 'many'), "'many' is not a whole number"),
    (('always-call', 'random', '--json', '/nonexistent/x.json'), 'does not exist'),
    (('always-call', 'random', '--json', 'EXISTING'), 'exists; pass --force to replace it'),
  ],
)
def test_cli_bad_input_is_one_line_and_exit_status_2(args, message, tmp_path, capsys):
  existing = tmp_path / 'existing.json'
  existing.write_text('{"producer": "jaxcfr"}')
  args = [str(existing) if arg == 'EXISTING' else arg for arg in args]
  try:
    code = cli.main(['match', *args, '--quiet'])
  except SystemExit as exit:  # argparse's own errors
    code = exit.code
  err = capsys.readouterr().err
  assert code == 2
  assert message in err and 'Traceback' not in err
  assert len([line for line in err.splitlines() if line.startswith('jaxcfr')]) == 1
  assert existing.read_text() == '{"producer": "jaxcfr"}'


def test_the_match_line_gives_slow_rates_in_significant_digits():
  """A search bot plays few hands a second: the match line says 0.45 hands/s, not 0."""
  from jaxcfr.cli.match import _rate  # noqa: PLC0415

  assert [_rate(x) for x in (0.45, 3.25, 12.6, 5900.2)] == ['0.45', '3.2', '13', '5,900']
