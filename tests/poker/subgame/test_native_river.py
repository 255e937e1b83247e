"""The native river solve (`native_river`, `river_solve.cc`) against the array form of the subgame
solver, its oracle here (itself held to brute force and OpenSpiel in test_poker_subgame and
test_poker_oracle): the same algorithm, so the same numbers iteration for iteration where rounding
cannot tip regret matching (at a regret of exactly zero in exact arithmetic the strategy jumps, so
on some boards any two summation orders part early: the array form's two showdown methods part there
too), and the same values once solved on every board; and `jaxcfr subgame --spots` with it."""

from __future__ import annotations

import json

import numpy as np
import pytest
from cli_runner import run_cli

from jaxcfr.poker.subgame import native_river, solving

OOP = '66+,A8s+,A5s-A4s,AJo+,K9s+,KQo,QTs+,JTs,96s+,85s+,75s+,65s,54s'  # postflop-solver's README ranges
IP = 'QQ-22,AQs-A2s,ATo+,K5s+,KJo+,Q8s+,J8s+,T7s+,96s+,86s+,75s+,64s+,53s+'
# Boards on which the two forms agree to rounding from the first iteration (see the docstring).
STEADY = ('ThQd5dKd8h', 'JcJd4dQs2d', '5h8c7d7c2s')
PARTING = ('9s8d5d6cQc', 'TcAdAs8d5d')  # boards where rounding tips early iterations apart
SIZES = {'bets': '60%,e,a', 'raises': '2.5x', 'force_all_in': 0.0, 'add_all_in': 1.5, 'merge': 0.1}

pytestmark = pytest.mark.skipif(
  not native_river.usable('dcfr', {}, np.float32), reason='no C++ compiler: the native solve is not built'
)


def spot(board: str) -> solving.SpotSpec:
  return solving.SpotSpec(board, 200, 900, (OOP, IP), **SIZES)


def both(board: str, algorithm: str, iterations: int, target_pct=None):
  """(native, array form, the array form's root average and hands over either range's hands) of one
  spot in float64 (the tests run with it), checked every iteration."""
  ours = native_river.solve(
    spot(board), algorithm, target_pct=target_pct, iterations=iterations, eval_every=1, dtype=np.float64,
    root=True,
  )  # fmt: skip
  theirs = solving.solve(
    spot(board), algorithm, target_pct=target_pct, iterations=iterations, eval_every=1, dtype=np.float64
  )
  root = np.asarray(theirs.root_policy())
  hands = np.asarray(theirs.game.spot.hands)
  held = np.asarray(theirs.game.spot.ranges).sum(0) > 0
  return ours, theirs, root[:, held], hands[held]


def exploitabilities(result) -> np.ndarray:
  return np.array([point['exploitability'] for point in result.curve])


@pytest.mark.parametrize(
  'algorithm', ['dcfr', *(pytest.param(a, marks=pytest.mark.slow) for a in ('cfr+', 'cfr', 'lcfr', 'dcfr+'))]
)
def test_iteration_for_iteration_the_array_forms_numbers(algorithm):
  """Each iteration's exploitability, the EVs, the equities and the root's average strategy (the
  array form's hands of either range, which are the native solve's) equal the array form's."""
  for board in STEADY[:1] if algorithm == 'dcfr' else STEADY:  # the default suite's minutes
    ours, theirs, root, hands = both(board, algorithm, 6)
    assert ours.iterations == theirs.iterations == 6 and ours.hands == len(hands)
    assert exploitabilities(ours)[0] > 1  # far from solved: the comparison sees every update
    np.testing.assert_allclose(exploitabilities(ours), exploitabilities(theirs), rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(ours.ev, theirs.ev, rtol=1e-12)
    np.testing.assert_allclose(ours.equity, theirs.equity, rtol=1e-12)
    key = lambda pairs: np.sort(pairs, 1) @ [52, 1]  # noqa: E731  # a hand by its cards
    order = np.argsort(key(ours.hole_cards))[np.searchsorted(np.sort(key(ours.hole_cards)), key(hands))]
    np.testing.assert_allclose(ours.root[:, order], root[: len(ours.root)], atol=1e-9)  # rows: actions


def test_a_wrong_rule_is_seen():
  """The comparison above has the power to fail: DCFR's native numbers against CFR+'s array form."""
  ours = native_river.solve(
    spot(STEADY[0]), 'dcfr', target_pct=None, iterations=6, eval_every=1, dtype=np.float64
  )
  theirs = solving.solve(
    spot(STEADY[0]), 'cfr+', target_pct=None, iterations=6, eval_every=1, dtype=np.float64
  )
  assert np.abs(exploitabilities(ours) - exploitabilities(theirs)).max() > 1e-2


@pytest.mark.slow  # the default suite's minutes: two solves to the target on each board
def test_solved_to_the_target_the_values_agree_on_every_board():
  """On boards where rounding parts the early iterations, the two solves to 0.5% of the pot still
  agree: EVs within the two exploitabilities, the check-down equities to rounding."""
  for board in PARTING:
    ours, theirs, _, _ = both(board, 'dcfr', 1000, target_pct=0.5)
    assert ours.exploitability_pct <= 0.5 and theirs.exploitability_pct <= 0.5
    assert abs(ours.ev[0] - theirs.ev[0]) <= ours.exploitability + theirs.exploitability
    np.testing.assert_allclose(ours.equity, theirs.equity, rtol=1e-12)


def test_spots_solve_river_spots_natively_in_the_lines_order(tmp_path):
  """`--spots`: river spots go native (their `hands` count those of either range; the array form pads
  them to a study's shape), the results in the lines' order, a bad line named by number while the
  rest solve, a turn spot in between by the array form; the river spots' results are the same on two
  threads but for the timings."""
  lines = [dict(board=board, pot=200, stack=900, oop_range=OOP, ip_range=IP) for board in STEADY]
  lines.insert(1, {**lines[0], 'oop_range': 'AsKs', 'ip_range': 'AsKs'})  # no pair of hands apart
  turn = {**lines[0], 'board': 'ThQd5dKd', 'oop_range': 'QQ+', 'ip_range': 'JJ+', 'bets': 'a'}
  flags = (
    '--bets',
    '60%,e,a',
    '--raises',
    '2.5x',
    '--force-all-in',
    '0',
    '--add-all-in',
    '1.5',
    '--merge',
    '0.1',
  )
  runs = {}
  for threads, spots in (('1', [*lines[:3], turn, *lines[3:]]), ('2', lines)):  # no turn spot to recompile
    path, out = tmp_path / f'spots-{threads}.jsonl', tmp_path / f'out-{threads}.jsonl'
    path.write_text(''.join(json.dumps(line) + '\n' for line in spots))
    code, _, err = run_cli(
      'subgame', '--spots', str(path), *flags, '--threads', threads, '--json', str(out), '--quiet'
    )
    assert code == 2 and err.count('error') == 1 and 'line 2: ' in err and 'no pair of hands' in err, err
    runs[threads] = [json.loads(text) for text in out.read_text().splitlines()]
  results = runs['1']
  assert [r['line'] for r in results] == [1, 3, 4, 5]
  river = [results[0], results[1], results[3]]
  for result, board in zip(river, STEADY, strict=True):
    alone = native_river.solve(spot(board), 'dcfr', target_pct=0.5)
    assert result['hands'] == alone.hands and result['ev']['oop'] == alone.ev[0]
    assert result['exploitability_pct'] <= 0.5 and result['iterations'] == alone.iterations
  assert results[2]['spot']['board'] == 'ThQd5dKd' and results[2]['exploitability_pct'] <= 0.5
  timed = {'line', 'seconds', 'check_seconds', 'evaluation_seconds', 'curve'}
  untimed = lambda results: [{k: v for k, v in r.items() if k not in timed} for r in results]  # noqa: E731
  assert [r['line'] for r in runs['2']] == [1, 3, 4] and untimed(runs['2']) == untimed(river)
