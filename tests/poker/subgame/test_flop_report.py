"""Aggregated flop reports (`flop_report`, `jaxcfr report`): a flop's frequencies are those of its
solve's laid-out strategy (and of a NumPy loop over the hands); a stopped report resumes to the same
files as an unstopped one, solving nothing twice; bad input is one line and exit status 2, before any
solve where it can be.

Solves run on a short deck (ranks 2 to 6), where a flop's tree compiles and solves in seconds; the
command's checks need no solve (full deck)."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

from jaxcfr import cli
from jaxcfr.poker.rules import cards
from jaxcfr.poker.subgame import flop_report, flops, grid, native_spot, solving

DECK = cards.Deck(5, 4)
SPEC = solving.SpotSpec('6d4c2h', 40, 100, ('33+,64,53', '22+,65,54,43'), 'a', 'a', num_ranks=5)
FLOPS = tuple(flops.make_flop(cards.parse_board(b, DECK), w) for b, w in (('6d4c2h', 1.0), ('5h3d2c', 3.0)))
OPTIONS = {'target_pct': 1.0, 'algorithm': 'dcfr', 'eval_every': 10, 'node': 'x'}
PROGRAMS: dict = {}  # one compile for every report here: the flops share a shape


def report(directory) -> flop_report.Report:
  return flop_report.Report(SPEC, FLOPS, str(directory), **OPTIONS, programs=PROGRAMS)


@pytest.mark.parametrize(
  'native',
  # The array form (with --compress, or JAXCFR_NO_NATIVE=1) compiles a flop's programs: minutes of the
  # default suite, so behind `-m slow`; the default path, native on a CPU, runs by default.
  [True, pytest.param(False, marks=pytest.mark.slow)],
  ids=['native', 'array form'],
)
def test_a_stopped_report_resumes_to_the_same_files_and_its_frequencies_are_the_strategys(
  tmp_path, monkeypatch, native
):
  """Both ways a flop solves (natively where it can, `JAXCFR_NO_NATIVE=1` the array form)."""
  if not native:
    monkeypatch.setenv('JAXCFR_NO_NATIVE', '1')
  elif not native_spot.usable('dcfr', {}, np.float32):
    pytest.skip('no C++ compiler: the native solve is not built')
  whole = report(tmp_path / 'whole')
  done = whole.open()
  assert done == {}
  for flop in whole.to_solve(done):
    done[flop.board] = whole.solve(flop)
  summary = whole.write(done)

  first = report(tmp_path / 'stopped')
  done = first.open()
  done[FLOPS[0].board] = first.solve(FLOPS[0])  # then stopped
  again = report(tmp_path / 'stopped')  # as the command run again makes it
  done = again.open()
  assert list(done) == [FLOPS[0].board] and again.to_solve(done) == [FLOPS[1]]
  results = []
  module = native_spot if native else solving
  real = module.solve
  monkeypatch.setattr(
    module, 'solve', lambda *args, **kwargs: results.append(real(*args, **kwargs)) or results[-1]
  )
  for flop in again.to_solve(done):
    done[flop.board] = again.solve(flop)
  assert len(results) == 1  # the flop not solved before, alone
  assert again.write(done) == summary
  for name in (*flop_report.FILES, *(f'solved/{f.board}.json' for f in FLOPS)):
    assert (tmp_path / 'whole' / name).read_bytes() == (tmp_path / 'stopped' / name).read_bytes(), name

  # The flop's frequencies: those of its solve's strategy (the array form's laid out whole, the turn's
  # and river's decisions too; the native solve's before the turn card), and at the root those of a
  # loop over the hands.
  record = done[FLOPS[1].board]
  assert results[0].ev == [record['ev']['oop'], record['ev']['ip']]
  # Built apart (its own tree, not the report's shared one), the flop solves to the same numbers.
  spot = again.spot(FLOPS[1])
  if native:
    result = real(spot, 'dcfr', target_pct=1.0, eval_every=10, first_street=True)
    metadata, arrays = native_spot.strategy_arrays(results[0], spot)
  else:
    alone = spot.build(hands_multiple=flop_report.HANDS_MULTIPLE)
    assert alone.tree is not results[0].game.tree
    result = real(alone, target_pct=1.0, eval_every=10, programs=PROGRAMS)
    metadata, arrays = solving.strategy_arrays(results[0])
  assert (result.iterations, result.ev) == (record['iterations'], results[0].ev)
  for key, path in (('root', None), ('node', 'x')):
    row = grid.find_node(metadata['nodes'], path)
    total, mix, actions, _ = grid.cells(metadata, arrays, row)
    expected = dict(zip(actions, grid.frequencies(total, mix), strict=True))
    assert record[key]['frequencies'] == pytest.approx(expected, abs=1e-6)
  policy, weights = arrays['probabilities'][0], arrays['ranges'][0].astype(np.float64)
  for a, action in enumerate(metadata['nodes'][0]['actions']):
    share = sum(weights[h] * policy[a, h] for h in range(len(weights))) / weights.sum()
    assert record['root']['frequencies'][action] == pytest.approx(share, abs=1e-6)
  assert (record['root']['player'], record['node']['player'], record['node']['node']) == ('oop', 'ip', 'x')

  records = [json.loads(line) for line in (tmp_path / 'whole' / 'flops.jsonl').read_text().splitlines()]
  assert [r['flop'] for r in records] == [f.board for f in FLOPS]
  weights = np.array([1.0, 3.0]) / 4
  for action, share in summary['overall']['root'].items():
    expected = sum(w * r['root']['frequencies'][action] for w, r in zip(weights, records, strict=True))
    assert share == pytest.approx(expected)
  assert summary['groups']['high'].keys() == {'6', '5'}
  rows = (tmp_path / 'whole' / 'flops.csv').read_text().splitlines()
  assert rows[0].startswith('flop,weight,high,pairing,suits,connectedness,ev_oop') and len(rows) == 3
  assert 'root: check' in rows[0] and 'node: check' in rows[0]

  other = flop_report.Report(SPEC, FLOPS, str(tmp_path / 'whole'), **{**OPTIONS, 'target_pct': 0.5})
  with pytest.raises(ValueError, match=r'holds a report of other settings \(solve differ\)'):
    other.open()
  assert other.open(force=True) == {}  # its own files removed, the new settings kept
  assert sorted(os.listdir(tmp_path / 'whole')) == ['settings.json', 'solved']


FULL = [
  '--pot',
  '200',
  '--stack',
  '900',
  '--oop-range',
  'AA',
  '--ip-range',
  'KK',
  '--bets',
  'a',
  '--raises',
  'a',
]


def test_the_command_refuses_bad_input_before_any_solve(tmp_path, capsys, monkeypatch):
  def solved(*args, **kwargs):
    raise AssertionError('no solve: the input is refused first')

  monkeypatch.setattr(flop_report.Report, 'solve', solved)
  out = tmp_path / 'study'
  cases = [
    (['--flops', '0'], 'a subset has 1 to 1,755 flops'),
    (['--flops', '25', '--node', 'x,b9'], "no 'b9' after x"),
    (['--flops', '25', '--oop-range', 'AZ'], 'AZ'),
    (['--flops', '25', '--max-memory', '0.000001'], 'over the limit'),
  ]
  for extra, message in cases:
    code = cli.main(['report', *FULL, '--out', str(out), *extra, '--quiet'])
    err = capsys.readouterr().err
    assert code == 2 and message in err and err.count('\n') == 1, err
  assert not out.exists()  # nothing made
  out.mkdir()
  (out / 'notes.txt').write_text('mine')
  assert cli.main(['report', *FULL, '--flops', '25', '--out', str(out), '--quiet']) == 2
  assert 'holds files of another kind' in capsys.readouterr().err
  assert (out / 'notes.txt').read_text() == 'mine'


def test_the_command_names_unsolvable_flops_and_stops_cleanly(tmp_path, capsys, monkeypatch):
  flop_file = tmp_path / 'flops.txt'
  flop_file.write_text('AhAdAc\nAsAhAd\n')  # AA: no combo left on either
  out = tmp_path / 'study'
  code = cli.main(['report', *FULL, '--flops', str(flop_file), '--out', str(out), '--quiet'])
  err = capsys.readouterr().err
  assert code == 2
  assert 'flop 1 (AhAdAc): ' in err and 'flop 2 (AsAhAd): ' in err and 'the OOP' in err
  assert json.loads((out / 'summary.json').read_text())['flops'] == 0

  def stop(*args, **kwargs):
    raise KeyboardInterrupt

  monkeypatch.setattr(flop_report.Report, 'solve', stop)
  flop_file.write_text('Kh7d2c\n')
  code = cli.main(['report', *FULL, '--flops', str(flop_file), '--out', str(tmp_path / 'other'), '--quiet'])
  err = capsys.readouterr().err
  assert (
    code == 130 and 'stopped with 0 of 1 flops solved' in err and 'the same command solves the rest' in err
  )
  assert sorted(os.listdir(tmp_path / 'other')) == ['settings.json', 'solved']
