"""The native flop, turn and river solve (`native_spot`, `spot_solve.cc`) against the array form of the
subgame solver, its oracle here (itself held to brute force and OpenSpiel in test_poker_subgame and
test_poker_oracle): the same algorithm, so the same numbers iteration for iteration where rounding
cannot tip regret matching (at a regret of exactly zero in exact arithmetic the strategy jumps, so
on some boards any two summation orders part early: the array form's two showdown methods part there
too, and on a turn spot from the third iteration on every board tried), and the same values once
solved on every board; its merged river cards against its own plain solve; and `jaxcfr subgame
--spots` with it."""

from __future__ import annotations

import json

import numpy as np
import pytest
from cli_runner import run_cli

from jaxcfr.poker.subgame import isomorphism, native_spot, solving

OOP = '66+,A8s+,A5s-A4s,AJo+,K9s+,KQo,QTs+,JTs,96s+,85s+,75s+,65s,54s'  # postflop-solver's README ranges
IP = 'QQ-22,AQs-A2s,ATo+,K5s+,KJo+,Q8s+,J8s+,T7s+,96s+,86s+,75s+,64s+,53s+'
# Boards on which the two forms agree to rounding from the first iteration (see the docstring).
STEADY = ('ThQd5dKd8h', 'JcJd4dQs2d', '5h8c7d7c2s')
PARTING = ('9s8d5d6cQc', 'TcAdAs8d5d')  # boards where rounding tips early iterations apart
SIZES = {'bets': '60%,e,a', 'raises': '2.5x', 'force_all_in': 0.0, 'add_all_in': 1.5, 'merge': 0.1}


@pytest.fixture(autouse=True, scope='module')
def _built():
  """The native solve, built by the first test that runs here (not at collection, where every
  pytest-xdist worker would build it)."""
  if not native_spot.usable('dcfr', {}, np.float32):
    pytest.skip('no C++ compiler: the native solve is not built')


def spot(board: str, **sizes) -> solving.SpotSpec:
  return solving.SpotSpec(board, 200, 900, (OOP, IP), **{**SIZES, **sizes})


def both(board: str, algorithm: str, iterations: int, target_pct=None, **sizes):
  """(native, array form, the array form's root average and hands over either range's hands) of one
  spot in float64 (the tests run with it), checked every iteration."""
  ours = native_spot.solve(
    spot(board, **sizes), algorithm, target_pct=target_pct, iterations=iterations, eval_every=1,
    dtype=np.float64, root=True,
  )  # fmt: skip
  theirs = solving.solve(
    spot(board, **sizes), algorithm, target_pct=target_pct, iterations=iterations, eval_every=1,
    dtype=np.float64,
  )  # fmt: skip
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
    same_root(ours, root, hands)


def same_root(ours, root, hands) -> None:
  """The native root average (its own order of hands) equals the array form's `root` over `hands`."""
  key = lambda pairs: np.sort(pairs, 1) @ [52, 1]  # noqa: E731  # a hand by its cards
  order = np.argsort(key(ours.hole_cards))[np.searchsorted(np.sort(key(ours.hole_cards)), key(hands))]
  np.testing.assert_allclose(ours.root[:, order], root[: len(ours.root)], atol=1e-9)  # rows: actions


# A turn tree with one size (the chance nodes, their river trees and an all-in's dealt showdowns): the
# array form's program for it compiles in seconds.
TURN_SIZES = {'bets': '50%,a', 'raises': 'a'}


@pytest.mark.parametrize('board', ['ThQd5dKd', pytest.param('5h8c7d7c', marks=pytest.mark.slow)])
def test_a_turn_spot_iteration_for_iteration(board):
  """A turn spot's first iterations (where no summation order tips regret matching yet: see the
  docstring) equal the array form's: exploitability, EVs, equities, the root's average."""
  ours, theirs, root, hands = both(board, 'dcfr', 2, **TURN_SIZES)
  assert ours.iterations == theirs.iterations == 2 and ours.hands == len(hands)
  assert ours.nodes == theirs.game.tree.num_nodes and exploitabilities(ours)[-1] > 1
  np.testing.assert_allclose(exploitabilities(ours), exploitabilities(theirs), rtol=1e-12)
  np.testing.assert_allclose(ours.ev, theirs.ev, rtol=1e-12)
  np.testing.assert_allclose(ours.equity, theirs.equity, rtol=1e-12)
  same_root(ours, root, hands)


def plain_and_merged(board: str, iterations: int, **settings):
  return [
    native_spot.solve(
      spot(board, **TURN_SIZES), 'dcfr', target_pct=None, iterations=iterations, eval_every=1,
      dtype=np.float64, root=True, isomorphism=merge, **settings,
    )
    for merge in (False, True)
  ]  # fmt: skip


@pytest.mark.parametrize(
  ('board', 'iterations', 'solved'),
  [('Td9d6hQh', 2, 35), ('Qs8hQc3d', 5, 36), ('Td9d6dQd', 3, 22)],  # two suits alike, a pair's, three
)
def test_merged_river_cards_give_the_plain_solves_numbers(board, iterations, solved):
  """The river cards merged by suit isomorphism (solved once per class, the others' values mapped)
  give the plain solve's numbers iteration for iteration (before rounding tips regret matching, which
  on these boards it does after the iterations compared), and on two threads too; the report says
  what merged."""
  plain, merged = plain_and_merged(board, iterations)
  assert plain.isomorphism is None
  assert merged.isomorphism == {'street': 'river', 'cards': 48, 'solved': solved}
  assert merged.memory_bytes < plain.memory_bytes  # the merged cards' river trees keep no state
  (threads,) = (
    native_spot.solve(
      spot(board, **TURN_SIZES), 'dcfr', target_pct=None, iterations=iterations, eval_every=1,
      dtype=np.float64, root=True, threads=2,
    ),
  )  # fmt: skip
  for other in (merged, threads):
    np.testing.assert_allclose(exploitabilities(other), exploitabilities(plain), rtol=1e-12)
    np.testing.assert_allclose(other.ev, plain.ev, rtol=1e-12)
    np.testing.assert_allclose(other.root, plain.root, atol=1e-12)
  assert solving.report(merged)['isomorphism'] == merged.isomorphism
  assert 'isomorphism' not in solving.report(plain)


# A flop tree of check or all-in, narrow ranges: the array form's program for it compiles in seconds.
FLOP_RANGES = ('AA,KK,QQ,AKs,T9s,98s,76s', 'JJ,TT,99,AQs,KQs,J9s,87s')
FLOP_SIZES = {'bets': 'a', 'raises': 'a'}


def flop(board: str, merge: bool, threads: int = 1, iterations: int = 2):
  spec = solving.SpotSpec(board, 200, 900, FLOP_RANGES, **{**SIZES, **FLOP_SIZES})
  return native_spot.solve(
    spec, 'dcfr', target_pct=None, iterations=iterations, eval_every=1, dtype=np.float64, root=True,
    isomorphism=merge, threads=threads,
  )  # fmt: skip


def test_a_flop_spot_iteration_for_iteration():
  """A flop spot (two deals: each turn card's trees, and below them each river card's) equals the
  array form in its first iterations: exploitability, EVs, equities, the root's average."""
  spec = solving.SpotSpec('Td9d6h', 200, 900, FLOP_RANGES, **{**SIZES, **FLOP_SIZES})
  ours = flop('Td9d6h', merge=False)
  theirs = solving.solve(spec, 'dcfr', target_pct=None, iterations=2, eval_every=1, dtype=np.float64)
  assert ours.iterations == theirs.iterations == 2 and ours.nodes == theirs.game.tree.num_nodes
  assert exploitabilities(ours)[-1] > 1
  np.testing.assert_allclose(exploitabilities(ours), exploitabilities(theirs), rtol=1e-12)
  np.testing.assert_allclose(ours.ev, theirs.ev, rtol=1e-12)
  np.testing.assert_allclose(ours.equity, theirs.equity, rtol=1e-12)


@pytest.mark.parametrize(
  ('board', 'turn', 'river'),
  [('Td9d6h', 36, (1728, 1429)), ('Td7d2d', 23, (1104, 675))],  # two suits alike, three alike
)
def test_a_flops_merged_turn_and_river_cards_give_the_plain_solves_numbers(board, turn, river):
  """On a flop, suit isomorphism merges the turn cards and, below each turn card solved, the river
  cards its board leaves interchangeable: the plain solve's numbers per iteration and per hand of
  the root, on one thread and two; the result says what merged."""
  plain, merged, threads = flop(board, False), flop(board, True), flop(board, True, threads=2)
  assert plain.isomorphism is None
  assert merged.isomorphism == {
    'street': 'turn',
    'cards': 49,
    'solved': turn,
    'river_cards': river[0],
    'river_solved': river[1],
  }
  assert merged.memory_bytes < plain.memory_bytes
  for other in (merged, threads):
    np.testing.assert_allclose(exploitabilities(other), exploitabilities(plain), rtol=1e-12)
    np.testing.assert_allclose(other.ev, plain.ev, rtol=1e-12)
    np.testing.assert_allclose(other.root, plain.root, atol=1e-12)


def test_a_wrong_suit_map_is_seen(monkeypatch):
  """The comparison above has the power to fail: merged cards whose hands are not relabelled."""
  real = isomorphism.symmetry

  def wrong(*args, **kwargs):
    found = real(*args, **kwargs)
    return isomorphism.Symmetry(found.permutations, np.tile(found.pulls[0], (len(found.pulls), 1)))

  monkeypatch.setattr(isomorphism, 'symmetry', wrong)
  plain, merged = plain_and_merged('Td9d6hQh', 1)
  assert merged.isomorphism['solved'] == 35
  assert abs(exploitabilities(merged)[0] - exploitabilities(plain)[0]) > 1e-3
  plain, merged = flop('Td7d2d', False, iterations=1), flop('Td7d2d', True, iterations=1)
  assert merged.isomorphism['solved'] == 23
  assert abs(exploitabilities(merged)[0] - exploitabilities(plain)[0]) > 1e-3


@pytest.mark.slow  # two turn solves to the target
def test_a_merged_turn_solve_agrees_with_the_plain_one_once_solved():
  """On the monotone board, where the two part after the first iteration, both solved to 0.5% of the
  pot have EVs within the two exploitabilities."""
  plain, merged = (
    native_spot.solve(spot('Td9d6dQd'), 'dcfr', target_pct=0.5, isomorphism=merge) for merge in (False, True)
  )
  assert plain.exploitability_pct <= 0.5 and merged.exploitability_pct <= 0.5
  assert abs(plain.ev[0] - merged.ev[0]) <= plain.exploitability + merged.exploitability


def test_a_wrong_rule_is_seen():
  """The comparison above has the power to fail: DCFR's native numbers against CFR+'s array form."""
  ours = native_spot.solve(
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


def test_spots_solve_river_and_turn_spots_natively_in_the_lines_order(tmp_path):
  """`--spots`: river and turn spots go native (their `hands` count those of either range; the array
  form pads them to a study's shape), the results in the lines' order, a bad line named by number
  while the rest solve; the results are the same on two threads but for the timings."""
  lines = [dict(board=board, pot=200, stack=900, oop_range=OOP, ip_range=IP) for board in STEADY]
  lines.insert(1, {**lines[0], 'oop_range': 'AsKs', 'ip_range': 'AsKs'})  # no pair of hands apart
  turn = {**lines[0], 'board': 'ThQd5dKd', 'oop_range': 'QQ+', 'ip_range': 'JJ+', 'bets': 'a'}
  lines.insert(3, turn)
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
  for threads in ('1', '2'):
    path, out = tmp_path / f'spots-{threads}.jsonl', tmp_path / f'out-{threads}.jsonl'
    path.write_text(''.join(json.dumps(line) + '\n' for line in lines))
    code, _, err = run_cli(
      'subgame', '--spots', str(path), *flags, '--threads', threads, '--json', str(out), '--quiet'
    )
    assert code == 2 and err.count('error') == 1 and 'line 2: ' in err and 'no pair of hands' in err, err
    runs[threads] = [json.loads(text) for text in out.read_text().splitlines()]
  results = runs['1']
  assert [r['line'] for r in results] == [1, 3, 4, 5]
  solved = [spot(board) for board in STEADY]
  solved.insert(2, solving.SpotSpec('ThQd5dKd', 200, 900, ('QQ+', 'JJ+'), **{**SIZES, 'bets': 'a'}))
  for result, spec in zip(results, solved, strict=True):
    alone = native_spot.solve(spec, 'dcfr', target_pct=0.5)
    assert result['spot']['board'] == spec.board and result['nodes'] == alone.nodes
    assert result['hands'] == alone.hands and result['ev']['oop'] == alone.ev[0]
    assert result['exploitability_pct'] <= 0.5 and result['iterations'] == alone.iterations
  assert results[2]['nodes'] > 100  # the turn's river trees
  timed = {'seconds', 'check_seconds', 'evaluation_seconds', 'curve'}
  untimed = lambda results: [{k: v for k, v in r.items() if k not in timed} for r in results]  # noqa: E731
  assert untimed(runs['2']) == untimed(results)


def test_one_turn_spot_solves_natively_with_its_summary_on_any_threads():
  """`jaxcfr subgame` of one turn spot without outputs that need the array form's strategy: the
  native solve (no compilation), its summary (the merged river cards, OOP's first decision by hand
  class), and the same numbers on one thread and two."""
  spot = ['subgame', '--board', 'Td9d6hQh', '--pot', '200', '--stack', '900', '--oop-range', OOP]
  spot += ['--ip-range', IP, '--bets', '50%,a', '--raises', 'a', '--target', '0.5']
  reports = {}
  for threads in ('1', '2'):
    code, out, err = run_cli(*spot, '--threads', threads, '--json', '-')
    assert code == 0, err
    reports[threads] = json.loads(out)
    assert 'suit isomorphism: 35 of the 48 river cards solved' in err and 'OOP first decision' in err
  report = reports['1']
  spec = solving.SpotSpec('Td9d6hQh', 200, 900, (OOP, IP), bets='50%,a', raises='a')
  alone = native_spot.solve(spec, 'dcfr', target_pct=0.5)
  assert report['jit_seconds'] == 0 and report['exploitability_pct'] <= 0.5 and report['devices'] == 1
  assert report['ev']['oop'] == alone.ev[0] and report['nodes'] == alone.nodes
  assert report['isomorphism'] == {'street': 'river', 'cards': 48, 'solved': 35}
  # The timings differ, and the memory by the second thread's working arrays.
  timed = {'seconds', 'check_seconds', 'evaluation_seconds', 'curve', 'memory_bytes'}
  assert {k: v for k, v in reports['2'].items() if k not in timed} == {
    k: v for k, v in report.items() if k not in timed
  }
  assert reports['2']['memory_bytes'] > report['memory_bytes']


def test_the_memory_estimate_is_what_the_solve_holds():
  """`estimated_bytes` (what `--max-memory` checks for a spot that solves natively, worked out without
  solving) equals the solve's `memory_bytes` on a river, a turn and a flop spot, on one thread and
  two; `check_memory` takes a limit at it and refuses one below."""
  flop_spec = solving.SpotSpec('Td9d6h', 200, 900, FLOP_RANGES, **{**SIZES, **FLOP_SIZES})
  for spec in (spot(STEADY[0]), spot('ThQd5dKd', **TURN_SIZES), flop_spec):
    for threads in (1, 2):
      solved = native_spot.solve(spec, 'dcfr', target_pct=None, iterations=1, threads=threads)
      assert native_spot.estimated_bytes(spec, threads=threads) == solved.memory_bytes
  native_spot.check_memory(flop_spec, solved.memory_bytes, threads=2)
  with pytest.raises(solving.MemoryLimitError, match=r'needs about 6\.\d MiB, over the limit'):
    native_spot.check_memory(flop_spec, solved.memory_bytes - 1, threads=2)


def test_max_memory_holds_the_native_solve_to_its_own_memory():
  """`jaxcfr subgame --max-memory`: a flop spot over the array form's (larger) estimate but within the
  native solve's solves natively; below the native solve's it is refused in one line, exit 2."""
  command = ['subgame', '--board', 'Td9d6h', '--pot', '200', '--stack', '900']
  command += ['--oop-range', FLOP_RANGES[0], '--ip-range', FLOP_RANGES[1], '--bets', 'a', '--raises', 'a']
  command += ['--force-all-in', '0', '--add-all-in', '1.5', '--merge', '0.1', '--iterations', '2']
  command += ['--target', '0', '--threads', '1', '--json', '-']
  spec = solving.SpotSpec('Td9d6h', 200, 900, FLOP_RANGES, **{**SIZES, **FLOP_SIZES})
  native = native_spot.estimated_bytes(spec)
  with pytest.raises(solving.MemoryLimitError):
    spec.fit(native + 2**20, np.float32)  # the array form's estimate is over it
  code, out, err = run_cli(*command, '--max-memory', str((native + 2**20) / 2**30))
  assert code == 0, err
  assert json.loads(out)['memory_bytes'] == native and json.loads(out)['jit_seconds'] == 0
  code, _, err = run_cli(*command, '--max-memory', str((native - 2**20) / 2**30))
  assert code == 2 and 'over the limit' in err and err.count('\n') == 1, err
