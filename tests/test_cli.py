"""The command line: the JSON contract, plots, and one clear message per bad input."""

import json
import os
import subprocess
import sys

import pytest

from jaxcfr import cli

CONTRACT_FIELDS = {
  'game',
  'algorithm',
  'iterations',
  'seconds',
  'compile_seconds',
  'evaluation_seconds',
  'exploitability',
  'nash_conv',
  'game_value',
  'num_histories',
  'num_infosets',
  'devices',
  'curve',
}


def run_cli(*args):
  """Runs `jaxcfr ARGS` in a subprocess; returns (exit code, stdout, stderr)."""
  process = subprocess.run(
    [sys.executable, '-m', 'jaxcfr.cli', *args],
    capture_output=True,
    text=True,
    timeout=300,
    env={**os.environ, 'JAX_PLATFORMS': 'cpu'},
  )
  return process.returncode, process.stdout, process.stderr


def test_solve_kuhn_cfr_plus_json_to_stdout():
  code, out, err = run_cli('solve', 'kuhn', '--algorithm', 'cfr+', '--iterations', '2000', '--json', '-')
  assert code == 0, err
  result = json.loads(out)  # nothing else on stdout
  assert CONTRACT_FIELDS <= set(result)
  assert result['iterations'] == 2000 and result['algorithm'] == 'cfr+' and result['devices'] == 1
  assert result['num_histories'] == 58 and result['num_infosets'] == 12
  assert abs(result['game_value'] - (-1 / 18)) < 1e-4
  assert result['exploitability'] < 4.5e-5  # OpenSpiel's CFRPlusSolver: 4.365e-5 here
  assert result['nash_conv'] == pytest.approx(2 * result['exploitability'])
  curve = result['curve']
  assert curve[-1]['iteration'] == 2000 and curve[-1]['exploitability'] == result['exploitability']
  assert all(
    a['iteration'] < b['iteration'] and a['seconds'] <= b['seconds']
    for a, b in zip(curve, curve[1:], strict=False)
  )
  assert result['evaluation_seconds'] > 0 and result['seconds'] > 0


def test_solve_writes_json_and_plot_files(tmp_path, capsys):
  json_path, plot_path = tmp_path / 'result.json', tmp_path / 'curve.png'
  code = cli.main(
    [
      'solve',
      'leduc(suit_isomorphism=True)',
      '--algorithm',
      'dcfr',
      '--iterations',
      '100',
      '--eval-every',
      '25',
      '--json',
      str(json_path),
      '--plot',
      str(plot_path),
      '--quiet',
    ]
  )
  assert code == 0
  result = json.loads(json_path.read_text())
  assert [p['iteration'] for p in result['curve']] == [25, 50, 75, 100]
  assert result['hyperparameters'] == {'alternating': True, 'alpha': 1.5, 'beta': 0.0, 'gamma': 2.0}
  assert plot_path.read_bytes()[:8] == b'\x89PNG\r\n\x1a\n'
  printed = capsys.readouterr().out
  assert 'exploitability' in printed and 'game value' in printed
  assert sorted(os.listdir(tmp_path)) == ['curve.png', 'result.json']  # no temporary files left
  umask = os.umask(0)
  os.umask(umask)
  assert json_path.stat().st_mode & 0o777 == 0o666 & ~umask  # the usual mode, not mkstemp's 0600


def test_seconds_budget_stops_the_solve(tmp_path):
  json_path = tmp_path / 'result.json'
  assert cli.main(['solve', 'kuhn', '--seconds', '0.3', '--json', str(json_path), '--quiet']) == 0
  result = json.loads(json_path.read_text())
  assert result['iterations'] > 10
  assert result['seconds'] < 1.0


def test_games_lists_sizes(capsys):
  assert cli.main(['games']) == 0
  out = capsys.readouterr().out
  assert 'leduc' in out and '9,457' in out and '936' in out and 'liars_dice' in out


@pytest.mark.parametrize(
  'args,message',
  [
    (['solve', 'chess_960'], 'unknown game'),
    (['solve', 'leduc(players=0)'], 'players'),
    (['solve', 'leduc(suit_isomorphism=3)'], 'suit_isomorphism'),
    (['solve', 'leduc('], 'malformed'),
    (['solve', 'kuhn', '--algorithm', 'magic'], 'invalid choice'),
    (['solve', 'kuhn', '--iterations', '0'], 'positive integer'),
    (['solve', 'kuhn', '--iterations', '-5'], 'positive integer'),
    (['solve', 'kuhn', '--seconds', '-1'], 'positive number'),
    (['solve', 'kuhn', '--algorithm', 'dcfr', '--alpha', '-2'], 'alpha'),
    (['solve', 'kuhn', '--algorithm', 'dcfr', '--gamma', 'nan'], 'finite'),
    (['solve', 'kuhn', '--devices', '4'], 'one device'),
    (['solve', 'kuhn', '--json', '/nonexistent/dir/out.json'], 'does not exist'),
    (['solve', 'kuhn', '--plot', 'curve.pdf'], 'PNG'),
    (['solve', 'kuhn', '--dtype', 'float16'], 'invalid choice'),
  ],
)
def test_bad_input_gives_one_clear_message(args, message, tmp_path):
  code, out, err = run_cli(*args)
  assert code == 2
  assert 'Traceback' not in err
  assert message in err
  assert err.strip().splitlines()[-1].startswith(('jaxcfr: error:', 'jaxcfr solve: error:'))
  assert out == ''


def test_failed_solve_leaves_existing_output_untouched(tmp_path):
  existing = tmp_path / 'result.json'
  existing.write_text('{"keep": true}')
  code, _, _ = run_cli('solve', 'unknown_game', '--json', str(existing))
  assert code == 2
  assert existing.read_text() == '{"keep": true}'
