"""The exact preflop equities and the push-or-fold equilibrium: the shipped table against direct
enumeration of the boards, the class matrix against its own identities and a published value, the
equilibrium against exact best responses and against loops over single hands, the baseline in the real
engine against the game's value, and the command line."""

import itertools
import json

import numpy as np
import pytest
from cli_runner import run_cli

from abstractions import HOLES, ranking
from abstractions.betting import NoLimitRules
from jaxcfr.poker import pushfold
from jaxcfr.poker.eval import baselines, match
from jaxcfr.poker.pushfold import equity as preflop_equity
from jaxcfr.poker.rules import nlhe, ranges
from jaxcfr.poker.rules.cards import parse_card

CLASS = {name: k for k, name in enumerate(ranges.HAND_CLASSES)}


def _pair(text: str) -> int:
  cards = sorted([parse_card(text[:2]), parse_card(text[2:])])
  return int(np.flatnonzero((np.sort(HOLES, axis=1) == cards).all(axis=1))[0])


def _enumerated_equity(first: int, second: int) -> float:
  """Wins plus half the ties of one pair against another over every board of the other 48 cards."""
  used = set(HOLES[first]) | set(HOLES[second])
  boards = np.array(list(itertools.combinations([c for c in range(52) if c not in used], 5)), np.int32)
  assert len(boards) == preflop_equity.BOARDS_PER_MATCHUP
  rank = lambda pair: ranking.hand_rank(
    np.concatenate([np.broadcast_to(HOLES[pair], (len(boards), 2)), boards], 1)
  )
  ours, theirs = rank(first), rank(second)
  return (np.count_nonzero(ours > theirs) + 0.5 * np.count_nonzero(ours == theirs)) / len(boards)


@pytest.mark.parametrize('first, second', [('7h2s', 'Ad7d')])
def test_the_table_matches_enumerating_every_board(first, second):
  # 7h2s is not its class's representative: the lookup goes through a suit permutation.
  assert preflop_equity.REPRESENTATIVES[CLASS['72o']] != _pair(first)
  expected = _enumerated_equity(_pair(first), _pair(second))
  assert preflop_equity.pair_equity(_pair(first), _pair(second)) == expected


@pytest.mark.slow
@pytest.mark.parametrize(
  'first, second', [('AhAs', 'KcKd'), ('Ts9s', 'Jh9d'), ('5c5d', 'AcKd'), ('QsJs', 'Qh2s')]
)
def test_more_pairs_match_enumerating_every_board(first, second):
  expected = _enumerated_equity(_pair(first), _pair(second))
  assert preflop_equity.pair_equity(_pair(first), _pair(second)) == expected
  assert preflop_equity.pair_equity(_pair(second), _pair(first)) == pytest.approx(1 - expected, abs=1e-15)


def test_the_pair_matrix_is_every_pairs_lookup_and_zero_sum():
  matrix = preflop_equity.pair_matrix()
  disjoint = ~(HOLES[:, None, :, None] == HOLES[None, :, None, :]).any(axis=(2, 3))
  assert not matrix[~disjoint].any()
  np.testing.assert_allclose((matrix + matrix.T)[disjoint], 1.0, atol=1e-12)  # wins + losses, suits permuted
  first, second = _pair('7h2s'), _pair('Ad7d')  # enumerated in the test above
  assert matrix[first, second] == preflop_equity.pair_equity(first, second)
  for a, b in np.random.default_rng(3).integers(len(HOLES), size=(20, 2)):
    if disjoint[a, b]:
      assert matrix[a, b] == preflop_equity.pair_equity(a, b)


def test_the_class_matrix_keeps_its_identities_and_a_published_value():
  equity, pairs = preflop_equity.class_matrix()
  assert pairs.sum() == 1326 * 1225  # every ordered pair of disjoint pairs once
  np.testing.assert_array_equal(pairs, pairs.T)
  np.testing.assert_allclose(equity * pairs + (equity * pairs).T, pairs, atol=1e-9)  # wins + losses
  assert pairs[CLASS['AA'], CLASS['AA']] == 6 and pairs[CLASS['AKs'], CLASS['AKo']] == 4 * 6
  # AA against KK: 81.95% (the classes' mean, as equity calculators quote it).
  assert equity[CLASS['AA'], CLASS['KK']] == pytest.approx(0.8195, abs=5e-5)
  assert equity[CLASS['AKo'], CLASS['QQ']] == pytest.approx(0.4324, abs=5e-5)


@pytest.mark.parametrize(
  'stack, ante', [(1.0, 0.0), (2.5, 0.0), (8.0, 0.125), (10.0, 0.0), (17.3, 0.1), (60.0, 1.0)]
)
def test_the_equilibrium_is_unexploitable_by_exact_best_responses(stack, ante):
  solution = pushfold.solve(stack, ante)
  g = pushfold.game(stack, ante)
  assert abs(solution.exploitability) <= 1e-9
  assert pushfold.exploitability(g, solution.push, solution.call) == solution.exploitability
  # Neither side gains by any pure deviation of one class.
  for side in ('push', 'call'):
    for k in range(169):
      deviated = {'push': solution.push.copy(), 'call': solution.call.copy()}
      deviated[side][k] = 1 - round(deviated[side][k])
      changed = pushfold.value(g, deviated['push'], deviated['call'])
      assert (changed - solution.value) * (1 if side == 'push' else -1) <= 1e-9


def test_a_cruder_solution_is_measured_exploitable():
  g = pushfold.game(10.0)
  solution = pushfold.solve(10.0)
  assert pushfold.exploitability(g, np.ones(169), solution.call) > 0.01  # pushing everything
  assert pushfold.exploitability(g, solution.push, np.ones(169)) > 0.01  # calling everything


@pytest.mark.parametrize('hand', ['Kd4c', '9h8h', 'Qs6s', '3c3d'])
def test_a_hands_push_value_matches_a_loop_over_the_big_blinds_hands(hand):
  # The small blind's result of pushing one hand against the equilibrium's calls, summed pair by pair
  # over the 1,225 hands the big blind can hold, with each pair's own equity.
  stack, ante = 12.0, 0.1
  solution = pushfold.solve(stack, ante)
  first = _pair(hand)
  stolen, folded = min(stack, 1 + ante), min(stack, 0.5 + ante)
  total = 0.0
  others = [v for v in range(1326) if not set(HOLES[v]) & set(HOLES[first])]
  for v in others:
    call = solution.call[ranges.class_of_hands(HOLES[v])]
    total += (1 - call) * stolen + call * stack * (2 * preflop_equity.pair_equity(first, v) - 1)
  push_value = total / len(others)
  g = pushfold.game(stack, ante)
  k = ranges.class_of_hands(HOLES[first])
  share = preflop_equity.COMBOS[k] / 1326
  margin = (g.gain + g.matrix @ solution.call)[k] / share  # push's value minus fold's, per hand
  assert push_value + folded == pytest.approx(margin, abs=1e-12)
  if abs(push_value + folded) > 1e-9:  # a pure hand plays its best response
    assert solution.push[k] == (1.0 if push_value > -folded else 0.0)


def test_strategies_follow_hand_strength_and_depth():
  shallow, deep = pushfold.solve(3.0), pushfold.solve(40.0)
  for solution in (shallow, deep):
    assert solution.push[CLASS['AA']] == 1 and solution.call[CLASS['AA']] == 1
    assert solution.push[CLASS['72o']] == 0 or solution is shallow
  share = lambda strategy: strategy @ preflop_equity.COMBOS / 1326
  assert share(shallow.push) > share(deep.push) and share(shallow.call) > share(deep.call)
  assert pushfold.solve(1.0).push.all()  # at one big blind every hand goes in


def test_the_chart_agrees_with_the_solves_it_reads():
  chart = pushfold.chart(max_stack=6.0, step=0.5)
  np.testing.assert_allclose(chart.stacks, np.arange(1.0, 6.01, 0.5))
  for k in range(169):
    for stack in chart.stacks:
      solution = pushfold.solve(float(stack))
      if stack > chart.push[k]:
        assert solution.push[k] < 0.5
      if stack > chart.call[k]:
        assert solution.call[k] < 0.5
    if chart.push[k] > 0:
      assert pushfold.solve(float(chart.push[k])).push[k] >= 0.5
  assert chart.push[CLASS['AA']] == 6.0 and chart.push[CLASS['72o']] < 2.0


@pytest.mark.parametrize(
  'stack, ante, small_blind, message',
  [
    (0.5, 0.0, 0.5, 'at least one big blind'),
    (10.0, 1.5, 0.5, 'ante must be between 0 and the big blind'),
    (10.0, -0.1, 0.5, 'ante must be between 0'),
    (10.0, 0.0, 0.0, 'small blind must be positive'),
    (float('nan'), 0.0, 0.5, 'finite'),
  ],
)
def test_a_game_that_cannot_start_is_one_line(stack, ante, small_blind, message):
  with pytest.raises(ValueError, match=message):
    pushfold.solve(stack, ante, small_blind)


def test_the_baseline_wins_what_the_game_says_against_always_call():
  # 10 bb: as the small blind it pushes its range and always-call calls; as the big blind it shoves its
  # calling range over the limp and always-call calls, else it checks the hand down for one big blind.
  rules = NoLimitRules(small_blind=50, big_blind=100, stack=1000)
  result = match.play_match(
    baselines.PushOrFold(), baselines.AlwaysCall(), 20_000, seed=3, rules=rules, aivat=None
  )
  solution = pushfold.solve(10.0)
  g = pushfold.game(10.0)
  equity, pairs = preflop_equity.class_matrix()
  weight = pairs / pairs.sum()
  as_small_blind = pushfold.value(g, solution.push, np.ones(169))
  shove = solution.call[:, None]  # the big blind's class (rows of the matrix: its hand)
  as_big_blind = np.sum(weight * (shove * 10.0 * (2 * equity - 1) + (1 - shove) * (2 * equity - 1)))
  expected = 1000 * (as_small_blind + as_big_blind) / 2  # mbb/hand over both seats
  assert result.ci95_low <= expected <= result.ci95_high, (expected, result)


def test_the_baseline_shoves_its_ranges_and_gives_up_otherwise():
  rules = NoLimitRules(small_blind=50, big_blind=100, stack=1500)  # 15 bb
  solution = pushfold.solve(15.0)
  policy = baselines.PushOrFold()
  every = np.broadcast_to(HOLES, (1, 1326, 2))
  classes = ranges.class_of_hands(HOLES)
  state = nlhe.deal(0, 1, rules)
  actions, probs = policy.strategy(state, every)  # the small blind opens
  assert actions.amount[0, 2] == 1500 and actions.valid[0].tolist() == [True, True, True]
  np.testing.assert_allclose(probs[0, :, 2], solution.push[classes])
  np.testing.assert_allclose(probs[0, :, 0], 1 - solution.push[classes])
  raised = nlhe.apply(state, np.array([nlhe.RAISE]), np.array([300]))  # a min-raise, not a push
  actions, probs = policy.strategy(raised, every)
  assert actions.amount[0, 2] == 1500
  np.testing.assert_allclose(probs[0, :, 2], solution.call[classes])  # shoves its calling range
  pushed = nlhe.apply(state, np.array([nlhe.RAISE]), np.array([1500]))
  actions, probs = policy.strategy(pushed, every)
  assert not actions.valid[0, 2]
  np.testing.assert_allclose(probs[0, :, 1], solution.call[classes])  # calls the push
  limped = nlhe.apply(state, np.array([nlhe.CALL]), np.array([100]))
  checked = nlhe.apply(limped, np.array([nlhe.CALL]), np.array([100]))  # the flop: the big blind acts
  actions, probs = policy.strategy(checked, every)
  assert checked.street[0] == 1 and np.all(probs[0, :, 1] == 1)  # checks
  bet = nlhe.apply(
    nlhe.apply(checked, np.array([nlhe.CALL]), np.array([0])), np.array([nlhe.RAISE]), np.array([200])
  )
  actions, probs = policy.strategy(bet, every)
  assert bet.to_act[0] == 1 and np.all(probs[0, :, 0] == 1)  # folds to a bet after the flop


def test_pushfold_command_prints_ranges_and_chart_and_writes_json(tmp_path):
  path = tmp_path / 'pf.json'
  code, out, err = run_cli(
    'pushfold', '--stack', '10', '--chart-max', '4', '--chart-step', '1', '--json', str(path)
  )
  assert code == 0, err
  assert 'the small blind pushes 58.' in out and 'exploitability' in out
  assert 'the largest stack (bb) at which the small blind pushes' in out
  report = json.loads(path.read_text())
  solution = pushfold.solve(10.0)
  assert report['push'] == dict(zip(ranges.HAND_CLASSES, solution.push.tolist(), strict=True))
  assert report['push']['AA'] == 1.0
  assert report['chart']['push_up_to_bb']['AA'] == 4.0
  code, out, err = run_cli('pushfold', '--stack', '10', '--no-chart', '--json', str(path))
  assert code == 2 and '--force' in err  # an earlier run's output is replaced only with --force
  code, out, err = run_cli('pushfold', '--stack', '10', '--no-chart', '--json', str(path), '--force')
  assert code == 0 and 'chart' not in json.loads(path.read_text())


@pytest.mark.parametrize(
  'args, message',
  [
    (['--stack', '0.5'], 'at least one big blind'),
    (['--stack', '10', '--ante', '2'], 'ante must be between 0 and the big blind'),
    (['--stack', '-3'], 'must be a positive number'),
    (['--stack', '10', '--chart-max', '0.5'], 'at least one big blind'),
  ],
)
def test_pushfold_bad_input_is_one_line_and_exit_2(args, message):
  code, out, err = run_cli('pushfold', *args)
  assert code == 2 and message in err and len(err.strip().splitlines()) <= 2, err
