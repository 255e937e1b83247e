"""`jaxcfr subgame` end to end: a river spot to its target, its JSON and strategy file, and one
clear line with exit status 2 for each kind of bad input."""

import json

import numpy as np
import pytest
from cli_runner import run_cli

from jaxcfr.poker.subgame import solving

SPOT = (
  'subgame', '--board', 'Td9d6hQc3s', '--pot', '200', '--stack', '900',
  '--oop-range', '66+,A8s+,A5s-A4s,AJo+,KQo,QTs+:0.5', '--ip-range', 'QQ-22,AQs-A2s,ATo+,K5s+',
)  # fmt: skip


def test_a_river_spot_reaches_its_target_and_writes_json_and_strategy(tmp_path):
  strategy, png, page = tmp_path / 'strategy.npz', tmp_path / 'grid.png', tmp_path / 'spot.html'
  code, out, err = run_cli(
    *SPOT, '--target', '0.5', '--json', '-', '--strategy-out', str(strategy), '--plot', str(png),
    '--node', 'b120', '--html', str(page),
  )  # fmt: skip
  assert code == 0, err
  assert png.read_bytes()[:8] == b'\x89PNG\r\n\x1a\n' and png.stat().st_size > 10_000
  assert '"path":["b120"]' in page.read_text()
  report = json.loads(out)  # nothing else on stdout
  assert report['exploitability_pct'] <= 0.5
  assert report['exploitability_pct'] == pytest.approx(100 * report['exploitability'] / 200)
  assert report['iterations'] % 10 == 0 and report['iterations'] <= 1000
  assert report['ev']['oop'] + report['ev']['ip'] == pytest.approx(200, abs=1e-3)
  assert report['equity']['oop'] + report['equity']['ip'] == pytest.approx(1, abs=1e-5)
  assert report['seconds'] > 0 and report['jit_seconds'] > 0 and report['memory_bytes'] > 0
  assert report['curve'][-1]['exploitability_pct'] == pytest.approx(report['exploitability_pct'])
  metadata, arrays = solving.load_strategy(str(strategy))
  d, a, h = arrays['probabilities'].shape
  assert (d, h) == (report['decision_nodes'], 190) and len(metadata['nodes']) == d  # the ranges' hands
  assert report['hands'] == 190 and arrays['hands'].shape == (190, 2)
  legal = np.array([[i < len(node['actions']) for i in range(a)] for node in metadata['nodes']])
  sums = arrays['probabilities'].sum(1)
  np.testing.assert_allclose(sums, 1, atol=1e-5)
  assert not arrays['probabilities'][~legal].any()
  assert metadata['nodes'][0] == {'player': 'oop', 'line': [], 'actions': ['check', 'bet 120', 'all-in 900']}


def test_progress_and_summary_go_to_stdout_without_json():
  code, out, err = run_cli(*SPOT, '--iterations', '20', '--target', '0')
  assert code == 0, err
  assert '20 iterations' in out and '% of the pot' in out and 'OOP first decision by hand class' in out


@pytest.mark.parametrize(
  'change,message',
  [
    (('--board', 'Td9dTd'), 'appears twice'),
    (('--board', 'Td9d'), 'a board has 3 (flop), 4 (turn) or 5 (river) cards'),
    (('--board', 'Td9d6hQcXx'), 'is not a card'),
    (('--oop-range', 'AKx'), "'AKx' is not a hand"),
    (('--ip-range', 'AKs:1.5'), 'AKs:1.5'),
    (('--oop-range', 'TdTh'), 'range is empty after the board'),
    (('--pot', '0'), 'must be positive'),
    (('--stack', '-5'), 'must be positive'),
    (('--pot', 'lots'), 'not a whole number'),
    (('--bets', '60'), "'60' is not a size"),
    (('--raises', '2.5y'), "'2.5y' is not a size"),
    (('--bets', '2x'), 'is a raise size'),
  ],
)
def test_bad_input_is_one_line_and_exit_status_2(change, message):
  args = list(SPOT)
  flag, value = change
  if flag in args:
    args[args.index(flag) + 1] = value
  else:
    args += [flag, value]
  code, out, err = run_cli(*args, '--iterations', '1')
  assert code == 2
  assert message in err and 'Traceback' not in err
  assert len([line for line in err.splitlines() if line.startswith('jaxcfr')]) == 1


def test_an_output_that_is_not_ours_is_refused_before_solving(tmp_path):
  mine = tmp_path / 'mine.json'
  mine.write_text('{"notes": 1}')
  code, _, err = run_cli(*SPOT, '--json', str(mine), '--force')
  assert code == 2 and 'not written by jaxcfr' in err
  assert mine.read_text() == '{"notes": 1}'


def test_a_tree_too_large_for_the_memory_limit_is_refused_before_any_array():
  code, _, err = run_cli(*SPOT, '--max-memory', '0.0001')
  assert code == 2
  # The hands of the two ranges on this river: 190, of which OOP holds 118 and IP 160.
  assert "public nodes x 190 hands (OOP's 118, IP's 160)" in err, err
  assert 'over the limit of 0.1 MiB (--max-memory)' in err


def test_help_lists_every_option_with_its_default():
  code, out, err = run_cli('subgame', '--help')
  assert code == 0, err
  for option in ('--board', '--pot', '--stack', '--oop-range', '--ip-range', '--bets', '--raises', '--target',
                 '--algorithm', '--strategy-out', '--json', '--max-memory'):  # fmt: skip
    assert option in out
  text = ' '.join(out.split())  # argparse wraps lines
  assert "(default '60%,e,a')" in text and 'exploitability in % of the pot' in text


@pytest.mark.slow  # the default suite's 10 minutes; host devices stay checked by tests/core/test_sharding.py
def test_threads_split_a_turn_spots_river_cards_over_host_devices(monkeypatch):
  """`jaxcfr subgame --threads N` in a fresh process, the array form (`JAXCFR_NO_NATIVE`; the native
  solve's threads give the same numbers, tests/poker/subgame/test_native_spot.py): the turn spot's
  river cards run on N host devices (the JSON's `devices`), and both answers are near-equilibria of
  the same game: their EVs differ by at most what the two exploitabilities allow (regret matching
  turns the rounding of sums in another order into other iterates, not another game)."""
  monkeypatch.setenv('JAXCFR_NO_NATIVE', '1')
  spot = ['subgame', '--board', 'Td9d6hQc', '--pot', '200', '--stack', '900', '--oop-range', 'QQ+,AK']
  spot += ['--ip-range', 'JJ+,AQ+,T9s', '--bets', '50%', '--raises', '']
  spot += ['--iterations', '30', '--target', '0']
  reports = {}
  for threads in (1, 2):  # each call a fresh process (`run_cli`), its devices set by --threads
    code, out, err = run_cli(*spot, '--threads', str(threads), '--json', '-', '--quiet')
    assert code == 0, err
    reports[threads] = json.loads(out)
  assert reports[1]['devices'] == 1 and reports[2]['devices'] == 2
  bound = 2 * (reports[1]['exploitability'] + reports[2]['exploitability'])  # NashConv each
  assert 0 < bound < 10
  for player in ('oop', 'ip'):
    assert abs(reports[2]['ev'][player] - reports[1]['ev'][player]) <= bound
