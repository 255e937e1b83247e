"""Outputs never clobber a user's data: checks before any work, atomic writes, the
jaxcfr markers; policy formats told apart; one progress rule for every command."""

import io
import json
import os
import subprocess
import sys

import numpy as np
import pytest

import jaxcfr
from jaxcfr import cli, outputs, policies
from jaxcfr.progress import Progress


@pytest.fixture(scope='module')
def kuhn():
  game = jaxcfr.compile_game('kuhn')
  legal = np.asarray(game.legal_mask, np.float64)
  return game, legal / legal.sum(-1, keepdims=True)


def figure():
  import matplotlib  # noqa: PLC0415

  matplotlib.use('Agg')
  import matplotlib.pyplot as plt  # noqa: PLC0415

  figure, axes = plt.subplots(figsize=(2, 2))
  axes.plot([1, 2, 3])
  return figure


def listing(directory):
  return sorted(os.listdir(directory))


def test_none_and_stdout_pass():
  outputs.check_file(None, '--json')
  outputs.check_file('-', '--json', suffixes=('.json',))
  outputs.check_directory(None, '--out', is_ours_dir=lambda path: True, files=())


def test_unrelated_files_are_refused_even_with_force(tmp_path):
  user_files = {
    'notes.json': b'{"mine": true}\n',
    'plot.png': b'\x89PNG\r\n\x1a\n' + b'\0' * 40,
    'data.npz': b'PK\x03\x04 not really a zip',
    'results.txt': b'keep me',
  }
  for name, content in user_files.items():
    (tmp_path / name).write_bytes(content)
  for name in user_files:
    for force in (False, True):
      with pytest.raises(outputs.OutputError, match='was not written by jaxcfr; choose another path'):
        outputs.check_file(str(tmp_path / name), '--json', force=force)
      with pytest.raises(outputs.OutputError, match='not written by jaxcfr'):
        outputs.write_file(str(tmp_path / name), lambda file: file.write(b'new'), force=force, what='--json')
  for name, content in user_files.items():
    assert (tmp_path / name).read_bytes() == content
  assert listing(tmp_path) == sorted(user_files)  # no temporary file left behind


def test_our_outputs_are_replaced_only_with_force(tmp_path, kuhn):
  game, policy = kuhn
  made = {
    'result.json': lambda path, force: outputs.write_json(path, {'exploitability': 0.1}, force=force),
    'curve.png': lambda path, force: outputs.write_png(path, figure(), force=force),
    'policy.json': lambda path, force: policies.save(path, game, policy, force=force, game='kuhn'),
    'policy.npz': lambda path, force: policies.save(path, game, policy, force=force, game='kuhn'),
  }
  for name, make in made.items():
    path = str(tmp_path / name)
    make(path, False)
    assert outputs.is_ours(path), name
    with pytest.raises(outputs.OutputError, match=r"--json: '.*' exists; pass --force to replace it"):
      outputs.check_file(path, '--json')
    outputs.check_file(path, '--json', force=True)
    with pytest.raises(outputs.OutputError, match='exists; pass (--force|force=True) to replace it'):
      make(path, False)
    make(path, True)
  assert listing(tmp_path) == sorted(made)
  assert json.loads((tmp_path / 'result.json').read_text()) == {'producer': 'jaxcfr', 'exploitability': 0.1}
  assert jaxcfr.load_policy(str(tmp_path / 'policy.npz')).metadata['format'] == 'jaxcfr-policy'
  # The marker stays first whatever the metadata says.
  policies.save(str(tmp_path / 'policy.json'), game, policy, force=True, format='mine')
  assert (tmp_path / 'policy.json').read_text().startswith('{"format": "jaxcfr-policy"')


def test_check_file_refusals(tmp_path):
  (tmp_path / 'dir').mkdir()
  (tmp_path / 'target.json').write_text('{}')
  os.symlink(tmp_path / 'target.json', tmp_path / 'link.json')
  os.mkfifo(tmp_path / 'fifo.json')
  cases = [
    (tmp_path / 'dir', 'is a directory'),
    (f'{tmp_path}/new/', 'names a directory'),
    (tmp_path / 'missing' / 'out.json', 'does not exist'),
    (tmp_path / 'link.json', 'symbolic link'),
    (tmp_path / 'fifo.json', 'not a regular file'),
    ('', 'empty'),
  ]
  for path, message in cases:
    with pytest.raises(outputs.OutputError, match=message):
      outputs.check_file(str(path), '--json', force=True)
  with pytest.raises(
    outputs.OutputError, match=r"--plot: '.*curve.pdf' must name a PNG file \(ending in .png\)"
  ):
    outputs.check_file(str(tmp_path / 'curve.pdf'), '--plot', suffixes=('.png',))
  outputs.check_file(str(tmp_path / 'CURVE.PNG'), '--plot', suffixes=('.png',))
  assert listing(tmp_path) == ['dir', 'fifo.json', 'link.json', 'target.json']  # the probe is removed


@pytest.mark.skipif(not os.path.isdir('/proc/self'), reason='needs /proc')
def test_unwritable_directory_is_found_by_trying():
  """Permission bits say yes to root on /proc; creating a file there fails."""
  with pytest.raises(
    outputs.OutputError, match=r"--json: cannot write '/proc/x.json': cannot create a file in '/proc'"
  ):
    outputs.check_file('/proc/x.json', '--json')
  with pytest.raises(outputs.OutputError, match='cannot create a directory'):
    outputs.write_directory('/proc/abs', lambda d: None, is_ours_dir=lambda d: True, files=())
  with pytest.raises(outputs.OutputError, match='cannot write'):
    outputs.write_json('/proc/x.json', {'a': 1})


def test_write_file_leaves_nothing_behind_on_failure(tmp_path):
  path = tmp_path / 'result.json'
  outputs.write_json(str(path), {'first': 1})
  before = path.read_bytes()

  def full_disk(file):
    file.write(b'{"producer": "jaxcfr"')
    raise OSError(28, 'No space left on device')

  with pytest.raises(
    outputs.OutputError, match=r"--json: cannot write '.*result.json' \(No space left on device\)"
  ):
    outputs.write_file(str(path), full_disk, force=True, what='--json')

  def broken(file):
    raise RuntimeError('figure failed')

  with pytest.raises(RuntimeError, match='figure failed'):
    outputs.write_file(str(path), broken, force=True)
  assert path.read_bytes() == before
  assert listing(tmp_path) == ['result.json']


def test_write_file_refuses_a_file_that_appeared_meanwhile(tmp_path):
  path = tmp_path / 'result.json'
  outputs.check_file(str(path), '--json')

  def user_saves_meanwhile(file):
    path.write_text('the user wrote this')
    file.write(b'{}')

  with pytest.raises(outputs.OutputError, match='not written by jaxcfr'):
    outputs.write_file(str(path), user_saves_meanwhile, force=True, what='--json')
  assert path.read_text() == 'the user wrote this'
  assert listing(tmp_path) == ['result.json']


def test_a_file_that_appears_after_the_last_check_is_kept(tmp_path, monkeypatch):
  """Where nothing was there, the new file is hard-linked into place: it cannot replace a
  file that appears between the last check and the link."""
  path = tmp_path / 'result.json'
  check = outputs._check_existing_file

  def user_saves_right_after(*args):
    found = check(*args)
    path.write_text('the user wrote this')
    monkeypatch.setattr(outputs, '_check_existing_file', check)
    return found

  monkeypatch.setattr(outputs, '_check_existing_file', user_saves_right_after)
  with pytest.raises(outputs.OutputError, match='not written by jaxcfr'):
    outputs.write_json(str(path), {'a': 1}, force=True)
  assert path.read_text() == 'the user wrote this'
  assert listing(tmp_path) == ['result.json']


def test_written_files_get_the_usual_mode(tmp_path):
  umask = os.umask(0o022)
  try:
    outputs.write_json(str(tmp_path / 'a.json'), {})
  finally:
    os.umask(umask)
  assert (tmp_path / 'a.json').stat().st_mode & 0o777 == 0o644


def test_write_json_to_stdout(capsys):
  outputs.write_json('-', {'game': 'kuhn', 'producer': 'someone'})
  assert json.loads(capsys.readouterr().out) == {'producer': 'jaxcfr', 'game': 'kuhn'}


def test_directory_outputs(tmp_path):
  mine = lambda path: os.path.exists(os.path.join(path, 'marker'))
  files = ('marker', 'data')

  def write(directory, text='new'):
    for name in files:
      with open(os.path.join(directory, name), 'w') as file:
        file.write(text)

  out = tmp_path / 'out'
  outputs.check_directory(str(out), '--out', is_ours_dir=mine, files=files)
  outputs.write_directory(str(out), write, is_ours_dir=mine, files=files)
  with pytest.raises(outputs.OutputError, match='pass --force'):
    outputs.check_directory(str(out), '--out', is_ours_dir=mine, files=files)
  outputs.write_directory(str(out), lambda d: write(d, 'newer'), force=True, is_ours_dir=mine, files=files)
  assert (out / 'data').read_text() == 'newer'
  (out / 'notes.txt').write_text('mine')
  refused = r'also holds files jaxcfr did not write \(notes.txt\); choose another path'
  with pytest.raises(outputs.OutputError, match=refused):
    outputs.check_directory(str(out), '--out', force=True, is_ours_dir=mine, files=files)
  with pytest.raises(outputs.OutputError, match=refused):
    outputs.write_directory(str(out), write, force=True, what='--out', is_ours_dir=mine, files=files)
  assert (out / 'notes.txt').read_text() == 'mine' and (out / 'data').read_text() == 'newer'
  (tmp_path / 'empty').mkdir()
  outputs.write_directory(str(tmp_path / 'empty'), write, is_ours_dir=mine, files=files)
  assert listing(tmp_path / 'empty') == ['data', 'marker']
  assert listing(tmp_path) == ['empty', 'out']


def test_garbage_policy_files_are_named_by_their_format(tmp_path, capsys):
  cases = {
    'policy.npz': r'is not a \.npz archive \(it is not a zip file\)',
    'broken.json': 'is not valid JSON',
    'policy.bin': 'is not a .npz archive and not valid JSON',
  }
  for name, message in cases.items():
    (tmp_path / name).write_bytes(b'\x00\x01garbage bytes')
    with pytest.raises(jaxcfr.GameError, match=message):
      jaxcfr.load_policy(str(tmp_path / name))
  (tmp_path / 'truncated.npz').write_bytes(b'PK\x03\x04 truncated')
  with pytest.raises(jaxcfr.GameError, match='not a readable .npz archive'):
    jaxcfr.load_policy(str(tmp_path / 'truncated.npz'))
  assert cli.main(['evaluate', 'kuhn', '--policy', str(tmp_path / 'policy.npz')]) == 2
  error = capsys.readouterr().err
  assert 'zip' in error and 'JSON' not in error


def test_progress_on_a_log_writes_a_few_plain_lines():
  stream = io.StringIO()
  progress = Progress(total=1000, desc='flop histograms', unit='board', stream=stream, min_interval=0)
  for _ in range(1000):
    progress.update(1)
  progress.set_postfix_str('done')
  progress.close()
  progress.close()
  lines = stream.getvalue().splitlines()
  assert len(lines) == 10  # each tenth, then the final line
  assert lines[0].startswith('flop histograms: 100/1,000 board (10%), ')
  assert lines[-1].startswith('flop histograms: 1,000 board done in ') and lines[-1].endswith(', done')
  assert '\r' not in stream.getvalue()

  stream = io.StringIO()  # a loop quicker than min_interval: nothing; an unknown total likewise
  with Progress(total=1000, stream=stream) as progress:
    progress.update(1000)
  with Progress(stream=stream, unit='traversal') as progress:
    progress.update(5)
  assert stream.getvalue() == ''
  with Progress(stream=stream, unit='traversal', min_interval=0) as progress:
    progress.update(5)
  assert stream.getvalue().count('\n') == 1 and '5 traversal done' in stream.getvalue()


def test_progress_says_the_time_left_at_the_runs_rate(monkeypatch):
  clock = iter(range(0, 1000, 10))  # each call 10 s later: the start, then one per update
  monkeypatch.setattr('jaxcfr.progress.time.monotonic', lambda: next(clock))
  stream = io.StringIO()
  progress = Progress(total=100, desc='flops', unit='flop', stream=stream, initial=40, min_interval=0)
  for _ in range(10):  # 10 flops in 100 s, 50 to go: 500 s
    progress.update(1)
  assert stream.getvalue().splitlines()[-1] == 'flops: 50/100 flop (50%), 100 s, about 500 s left'
  assert len(stream.getvalue().splitlines()) == 1  # a line a tenth
  stream = io.StringIO()
  progress = Progress(total=100, unit='flop', stream=stream, min_interval=0, lines=100)
  for _ in range(5):  # a line a hundredth
    progress.update(1)
  assert len(stream.getvalue().splitlines()) == 5


def test_progress_quiet_and_terminal():
  stream = io.StringIO()
  with Progress(total=10, stream=stream, quiet=True, min_interval=0) as progress:
    progress.update(10)
  assert stream.getvalue() == ''

  class Terminal(io.StringIO):
    def isatty(self):
      return True

  terminal = Terminal()
  with Progress(total=10, desc='cfr', stream=terminal) as progress:
    progress.update(10)
  assert '\r' in terminal.getvalue() and '10/10' in terminal.getvalue()  # a tqdm bar


def test_outputs_and_progress_import_nothing_heavy():
  """The modules themselves, loaded by path (jaxcfr/__init__.py imports JAX)."""
  script = (
    'import importlib.util, sys\n'
    f'for path in {[outputs.__file__, sys.modules[Progress.__module__].__file__]!r}:\n'
    '  spec = importlib.util.spec_from_file_location("module", path)\n'
    '  spec.loader.exec_module(importlib.util.module_from_spec(spec))\n'
    'print(sorted(m for m in ("jax", "numpy", "tqdm", "matplotlib") if m in sys.modules))\n'
  )
  result = subprocess.run([sys.executable, '-c', script], capture_output=True, text=True, check=True)
  assert result.stdout.strip() == '[]'
