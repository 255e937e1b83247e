"""The command line: the JSON contract, plots, and one clear message per bad input."""

import json
import os
import subprocess
import sys

import cli_runner
import pytest
from cli_runner import run_cli

from jaxcfr import cli, plots

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


def test_the_cli_runner_gives_what_a_plain_subprocess_gives(tmp_path, monkeypatch):
  """`run_cli` forks a server that imported the CLI (`cli_runner`): the exit status, stdout, stderr
  and files of a call are those of `python -m jaxcfr.cli`, in the caller's working directory, and a
  call's configuration does not reach the next one."""
  env = {**os.environ, 'JAX_PLATFORMS': 'cpu'}
  monkeypatch.chdir(tmp_path)
  calls = [
    ['solve', 'kuhn', '--iterations', '0'],
    ['solve', 'kuhn', '--dtype', 'float64', '--iterations', '3', '--json', '{}a.json', '--quiet'],
    ['solve', 'kuhn', '--iterations', '3', '--json', '{}b.json', '--quiet'],  # float32 again
  ]
  forked = [cli_runner.run([arg.format('f') for arg in args], env, timeout=300) for args in calls]
  plain = [cli_runner._subprocess([arg.format('p') for arg in args], env, timeout=300) for args in calls[:2]]
  assert forked[0] == plain[0] and forked[0][0] == 2 and 'positive integer' in forked[0][2]
  (code, out, err), (plain_code, plain_out, _) = forked[1], plain[1]
  assert code == plain_code == 0 and forked[2][0] == 0, err
  first, last = out.splitlines()[0].split(';')[0], out.splitlines()[-1]  # the line's end times compiling
  assert first == plain_out.splitlines()[0].split(';')[0] == 'kuhn: 58 histories, 12 infosets, 2 players'
  assert last.replace('fa.json', 'pa.json') == plain_out.splitlines()[-1] == 'JSON written to pa.json'
  reports = [json.loads((tmp_path / name).read_text()) for name in ('fa.json', 'fb.json', 'pa.json')]
  assert [report['dtype'] for report in reports] == ['float64', 'float32', 'float64']


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
    (['solve', 'kuhn', '--json', '/nonexistent/dir/out.json'], 'does not exist'),
    (['solve', 'kuhn', '--algorithm', 'cfr+', '--alpha', '2'], '--alpha does not apply to cfr+'),
    (['solve', 'kuhn', '--algorithm', 'dcfr', '--batch-size', '8'], '--batch-size does not apply to dcfr'),
    (['solve', 'kuhn', '--checkpoint-every', '5'], '--checkpoint-every needs --checkpoint'),
    (['solve', 'kuhn', '--keep-checkpoints', '5'], '--keep-checkpoints needs --checkpoint'),
    (['solve', 'leduc(foo=1)'], 'foo'),
    (['solve', 'kuhn', '--plot', 'curve.pdf'], 'PNG'),
    (['solve', 'kuhn', '--dtype', 'float16'], 'invalid choice'),
  ],
)
def test_bad_input_gives_one_clear_message(args, message, tmp_path):
  code, out, err = run_cli(*args)
  assert code == 2
  assert 'Traceback' not in err
  assert message in err
  lines = err.strip().splitlines()
  errors = [line for line in lines if line.startswith(('jaxcfr: error:', 'jaxcfr solve: error:'))]
  assert len(errors) == 1 and message in errors[0], err
  assert 'usage:' not in err  # the error line, not the whole usage block
  assert lines[-1] in (errors[0], "see 'jaxcfr solve --help'")
  assert out == ''


def test_failed_solve_leaves_existing_output_untouched(tmp_path):
  existing = tmp_path / 'result.json'
  existing.write_text('{"keep": true}')
  code, _, _ = run_cli('solve', 'unknown_game', '--json', str(existing))
  assert code == 2
  assert existing.read_text() == '{"keep": true}'


def test_help_describes_every_option_with_its_default_and_algorithms(capsys):
  with pytest.raises(SystemExit):
    cli.main(['solve', '--help'])
  text = ' '.join(capsys.readouterr().out.split())
  assert 'default dcfr' in text
  assert '--alpha X positive-regret discount exponent [dcfr 1.5; dcfr+ 1.5; pdcfr+ 2.3]' in text
  assert '--batch-size N traversals per player per iteration [es-mccfr, os-mccfr; default 1,024]' in text
  parser = cli.build_parser()
  solve = parser._subparsers._group_actions[0].choices['solve']
  for action in solve._actions:
    assert action.help, action.option_strings  # every option says what it does


def test_checkpoint_every_without_a_directory_is_an_error_not_a_slowdown(capsys):
  code = cli.main(['solve', 'kuhn', '--iterations', '100', '--checkpoint-every', '10', '--quiet'])
  assert code == 2
  assert '--checkpoint-every needs --checkpoint DIR' in capsys.readouterr().err


def test_resuming_with_a_smaller_total_is_refused(tmp_path, capsys):
  directory = str(tmp_path / 'ck')
  assert cli.main(['solve', 'kuhn', '--iterations', '50', '--checkpoint', directory, '--quiet']) == 0
  code = cli.main(['solve', 'kuhn', '--iterations', '20', '--checkpoint', directory, '--resume', '--quiet'])
  assert code == 2
  assert 'is at iteration 50, past the total of 20' in capsys.readouterr().err


def test_plot_axes_have_several_labelled_ticks():
  import matplotlib

  matplotlib.use('Agg')
  import matplotlib.pyplot as plt

  figure, axes = plt.subplots()
  for values in ([0.11, 0.13, 0.16], [1, 30, 900], [1e-6, 1e-1]):
    axes.loglog(values, values)
    plots.log_ticks(axes.xaxis, values)
    axes.set_xlim(min(values), max(values))
    figure.canvas.draw()
    low, high = axes.get_xlim()
    shown = [t for t in axes.get_xticks() if low <= t <= high]
    labels = [t.get_text() for t in axes.get_xticklabels() if t.get_text()]
    assert len(shown) >= 2 and len(labels) >= 2, values
  plt.close(figure)


def test_the_compilation_cache_is_used_and_can_be_turned_off(tmp_path):
  cache = tmp_path / 'cache'
  env = {**os.environ, 'JAX_PLATFORMS': 'cpu', 'JAXCFR_CACHE_DIR': str(cache)}
  command = [sys.executable, '-m', 'jaxcfr.cli', 'solve', 'kuhn', '--iterations', '10', '--json', '-']
  process = subprocess.run([*command, '--no-cache'], capture_output=True, text=True, env=env, timeout=300)
  assert process.returncode == 0, process.stderr
  assert not cache.exists() or not any(cache.iterdir())
  process = subprocess.run(command, capture_output=True, text=True, env=env, timeout=300)
  assert process.returncode == 0, process.stderr
  assert len(list(cache.iterdir())) >= 3  # the update, policy and evaluation programs
  assert json.loads(process.stdout)['jit_seconds'] > 0


@pytest.mark.parametrize('option', ['--policy-out', '--json', '--plot'])
def test_outputs_never_replace_a_users_file_or_directory(option, tmp_path, capsys):
  suffix = {'--policy-out': '.npz', '--json': '.json', '--plot': '.png'}[option]
  mine = tmp_path / f'mine{suffix}'
  mine.write_bytes(b'a user file')
  folder = tmp_path / f'folder{suffix}'
  folder.mkdir()
  (folder / 'notes.txt').write_text('keep')
  for target, force in ((mine, False), (mine, True), (folder, True)):
    arguments = ['solve', 'kuhn', '--iterations', '10', '--quiet', option, str(target)]
    assert cli.main(arguments + (['--force'] if force else [])) == 2
    captured = capsys.readouterr()
    assert captured.out == ''  # refused before compiling anything
    assert option in captured.err and str(target) in captured.err
  assert mine.read_bytes() == b'a user file'
  assert os.listdir(folder) == ['notes.txt'] and (folder / 'notes.txt').read_text() == 'keep'
  assert sorted(os.listdir(tmp_path)) == sorted([mine.name, folder.name])


def test_an_earlier_result_is_replaced_only_with_force(tmp_path, capsys):
  path = tmp_path / 'result.json'
  arguments = ['solve', 'kuhn', '--iterations', '10', '--quiet', '--json', str(path)]
  assert cli.main(arguments) == 0
  first = path.read_text()
  assert json.loads(first)['producer'] == 'jaxcfr'
  assert cli.main(arguments) == 2
  assert 'pass --force to replace it' in capsys.readouterr().err and path.read_text() == first
  assert cli.main([*arguments, '--iterations', '20', '--force']) == 0
  assert json.loads(path.read_text())['iterations'] == 20


@pytest.mark.skipif(not os.path.isdir('/proc/self'), reason='needs /proc')
@pytest.mark.parametrize(
  'arguments',
  [
    ['solve', 'kuhn', '--json', '/proc/x.json'],
    ['solve', 'kuhn', '--plot', '/proc/x.png'],
    ['solve', 'kuhn', '--policy-out', '/proc/p.json'],
    ['solve', 'kuhn', '--checkpoint', '/proc/ck'],
    ['evaluate', 'kuhn', '--policy', 'missing.json', '--json', '/proc/e.json'],
  ],
)
def test_unwritable_outputs_fail_before_any_work(arguments, capsys):
  assert cli.main([*arguments, '--quiet']) == 2
  captured = capsys.readouterr()
  assert captured.out == '' and 'Traceback' not in captured.err
  assert '/proc' in captured.err and len(captured.err.strip().splitlines()) == 1


def test_a_reader_that_goes_away_ends_the_command_quietly():
  """`jaxcfr ... | head -1`: the command stops at the closed pipe with no traceback (status 141)."""
  command = [sys.executable, '-m', 'jaxcfr.cli', 'games']
  process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, bufsize=0)
  process.stdout.close()  # gone before the first line
  err = process.stderr.read().decode()
  assert process.wait(timeout=120) == 141
  assert 'Traceback' not in err and 'Broken pipe' not in err
