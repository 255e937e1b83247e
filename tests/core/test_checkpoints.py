"""Checkpoints and blueprints: exact resume, crash survival, corrupt and mismatched
directories left as they were, and policies that `evaluate` reads back."""

import hashlib
import json
import logging
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import time

import jax
import numpy as np
import pytest
from cli_runner import run_cli
from conftest import FULL_WIDTH, compiled, jitted_run

import jaxcfr
from jaxcfr import checkpoints, cli


def snapshot(directory) -> dict:
  """Every file under `directory` with its SHA-256, size and mode."""
  files = {}
  for root, _, names in os.walk(directory):
    for name in names:
      path = os.path.join(root, name)
      with open(path, 'rb') as file:
        files[os.path.relpath(path, directory)] = (
          hashlib.sha256(file.read()).hexdigest(),
          os.stat(path).st_mode,
        )
  return files


def assert_states_equal(a, b):
  for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b), strict=True):
    np.testing.assert_array_equal(np.asarray(x), np.asarray(y))


IDENTITY = {'game': 'kuhn', 'algorithm': 'test'}


@pytest.mark.parametrize('name', sorted(FULL_WIDTH))
def test_200_plus_200_resumed_iterations_equal_400(name, tmp_path):
  game = compiled('kuhn', 'float32')
  solver = FULL_WIDTH[name]()
  run = jitted_run(solver)
  straight = run(solver.init(game), game, 400)

  checkpointer = checkpoints.Checkpointer(str(tmp_path / 'ck'))
  checkpointer.save(200, run(solver.init(game), game, 200), IDENTITY, {'iteration': 200}, 'test')
  checkpointer.close()
  restored, metadata = checkpoints.Checkpointer(str(tmp_path / 'ck')).restore(solver.init(game), IDENTITY)
  assert metadata['iteration'] == 200 and int(restored.iteration) == 200
  assert_states_equal(run(restored, game, 200), straight)


def test_prng_keys_survive_a_round_trip(tmp_path):
  state = {'key': jax.random.split(jax.random.key(7), 3), 'count': np.arange(4)}
  checkpointer = checkpoints.Checkpointer(str(tmp_path / 'ck'))
  checkpointer.save(1, state, IDENTITY, {}, 'test')
  restored, _ = checkpointer.restore(
    {'key': jax.random.split(jax.random.key(0), 3), 'count': np.zeros(4, int)}, IDENTITY
  )
  assert jax.dtypes.issubdtype(restored['key'].dtype, jax.dtypes.prng_key)
  np.testing.assert_array_equal(jax.random.key_data(restored['key']), jax.random.key_data(state['key']))
  np.testing.assert_array_equal(
    jax.random.uniform(restored['key'][1], (3,)), jax.random.uniform(state['key'][1], (3,))
  )


def test_only_the_last_k_are_kept(tmp_path):
  checkpointer = checkpoints.Checkpointer(str(tmp_path / 'ck'), keep=2)
  for step in (10, 20, 30, 40):
    checkpointer.save(step, {'x': np.full(3, step)}, IDENTITY, {'iteration': step}, 'test')
  assert checkpointer.steps() == [30, 40]
  restored, metadata = checkpointer.restore({'x': np.zeros(3, int)}, IDENTITY)
  assert metadata['iteration'] == 40 and list(restored['x']) == [40, 40, 40]


def solve_args(directory, *extra):
  return ['solve', 'kuhn', '--algorithm', 'dcfr', '--quiet', '--checkpoint', str(directory), *extra]


def test_cli_resume_equals_an_uninterrupted_run(tmp_path):
  straight, resumed = tmp_path / 'straight.npz', tmp_path / 'resumed.npz'
  assert cli.main(['solve', 'kuhn', '--iterations', '400', '--quiet', '--policy-out', str(straight)]) == 0
  directory = tmp_path / 'ck'
  assert cli.main(solve_args(directory, '--iterations', '200', '--checkpoint-every', '50')) == 0
  assert sorted(os.listdir(directory)) == ['100', '150', '200']  # the last three
  first = json.loads((tmp_path / 'ck' / '200' / 'metadata' / 'metadata').read_text())
  assert first['identity']['game'] == 'kuhn' and first['identity']['algorithm'] == 'dcfr'
  assert {'game_fingerprint', 'game_digest', 'hyperparameters', 'dtype', 'seed'} <= set(first['identity'])
  assert first['version'] == jaxcfr.__version__ and first['iteration'] == 200
  json_path = tmp_path / 'resumed.json'
  args = solve_args(directory, '--iterations', '400', '--resume', '--policy-out', str(resumed))
  assert cli.main([*args, '--json', str(json_path)]) == 0
  a, b = jaxcfr.load_policy(str(straight)), jaxcfr.load_policy(str(resumed))
  np.testing.assert_array_equal(a.probabilities, b.probabilities)
  result = json.loads(json_path.read_text())
  assert result['iterations'] == 400
  assert result['curve'][0]['iteration'] == 1  # the curve includes the first run's points
  assert [p['iteration'] for p in result['curve']] == sorted({p['iteration'] for p in result['curve']})
  assert result['exploitability'] == pytest.approx(b.metadata['exploitability'])


def test_a_killed_run_resumes_to_the_same_result(tmp_path):
  """SIGKILL at a random moment (often during a save), then --resume."""
  reference = tmp_path / 'reference.npz'
  assert cli.main(['solve', 'kuhn', '--iterations', '3000', '--quiet', '--policy-out', str(reference)]) == 0
  directory, result = tmp_path / 'ck', tmp_path / 'result.npz'
  args = [sys.executable, '-m', 'jaxcfr.cli', *solve_args(directory, '--iterations', '3000')]
  args += ['--checkpoint-every', '10', '--keep-checkpoints', '2', '--policy-out', str(result)]
  seed = random.randrange(1 << 30)
  delay = random.Random(seed).uniform(0.0, 1.5)
  process = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
  deadline = time.monotonic() + 120
  while not (os.path.isdir(directory) and any(n.isdigit() for n in os.listdir(directory))):
    assert process.poll() is None and time.monotonic() < deadline, 'no checkpoint appeared'
    time.sleep(0.01)
  time.sleep(delay)
  process.send_signal(signal.SIGKILL)
  process.wait()
  assert process.returncode == -signal.SIGKILL, f'finished before the kill (seed {seed})'
  assert not result.exists()
  code, out, err = run_cli(
    *solve_args(directory, '--iterations', '3000', '--resume', '--policy-out', str(result))
  )
  assert code == 0, f'seed {seed}: {err}'
  assert 'resumed from' in out
  np.testing.assert_array_equal(
    jaxcfr.load_policy(str(reference)).probabilities, jaxcfr.load_policy(str(result)).probabilities
  )


@pytest.fixture(scope='module')
def saved_run(tmp_path_factory):
  """A Kuhn run with checkpoints at 160, 180 and 200 (every tenth of the run, the last three)."""
  directory = tmp_path_factory.mktemp('saved') / 'ck'
  assert cli.main(['solve', 'kuhn', '--quiet', '--checkpoint', str(directory), '--iterations', '200']) == 0
  return directory


def damaged_copy(saved_run, tmp_path, damage):
  directory = tmp_path / 'ck'
  shutil.copytree(saved_run, directory)
  damage(directory / '200')
  return directory


def data_files(step):
  files = sorted(str(p) for p in (step / 'state').rglob('*') if p.is_file() and p.parent.name == 'd')
  assert files, 'orbax wrote no data files where expected'
  return files


def truncate(step):
  for path in data_files(step):
    with open(path, 'r+b') as file:
      file.truncate(os.path.getsize(path) // 2)


def flip_bytes(step):
  for path in data_files(step):
    data = bytearray(open(path, 'rb').read())
    data[len(data) // 2] ^= 0xFF
    open(path, 'wb').write(bytes(data))


def garble_metadata(step):
  (step / 'metadata' / 'metadata').write_text('{"format": "jaxcfr-checkpoint", "trunc')


STORAGE_TEXT = re.compile('tensorstore|ocdbt|zarr|OUT_OF_RANGE|DATA_LOSS|byte range|JSONDecodeError', re.I)


@pytest.mark.parametrize('damage', [truncate, flip_bytes, garble_metadata])
def test_a_corrupt_checkpoint_is_reported_and_left_alone(saved_run, tmp_path, damage):
  directory = damaged_copy(saved_run, tmp_path, damage)
  before = snapshot(directory)
  code, out, err = run_cli(
    'solve', 'kuhn', '--quiet', '--checkpoint', str(directory), '--resume', '--iterations', '300'
  )
  assert code == 2 and 'Traceback' not in err and len(err.strip().splitlines()) == 1
  assert f"checkpoint '{directory / '200'}' is corrupt or truncated" in err
  assert not STORAGE_TEXT.search(err), err
  assert f"step 180 reads back intact: move '{directory / '200'}' aside to resume from it" in err
  assert snapshot(directory) == before


def small_run(directory, keep, damaged):
  """Checkpoints at steps 10, 20, 30 (the last `keep` kept), the steps in `damaged`
  then truncated; returns the checkpointer."""
  checkpointer = checkpoints.Checkpointer(str(directory), keep=keep)
  for step in (10, 20, 30):
    checkpointer.save(step, {'x': np.full(64, step)}, IDENTITY, {'iteration': step}, 'test')
  checkpointer.close()
  for step in damaged:
    truncate(directory / str(step))
  return checkpointer


def test_the_newest_intact_checkpoint_is_named_when_newer_ones_are_corrupt(tmp_path):
  directory = tmp_path / 'ck'
  checkpointer = small_run(directory, 3, damaged=(20, 30))
  with pytest.raises(checkpoints.CheckpointError) as error:
    checkpointer.restore({'x': np.zeros(64, int)}, IDENTITY)
  message = str(error.value)
  assert f"checkpoint '{directory / '30'}' is corrupt or truncated" in message
  assert f"'{directory / '20'}' is corrupt or truncated" in message
  assert f"step 10 reads back intact: move '{directory / '30'}' and '{directory / '20'}' aside" in message
  assert not STORAGE_TEXT.search(message), message


@pytest.mark.parametrize('keep', [1, 3])
def test_every_kept_checkpoint_corrupt(tmp_path, keep):
  directory = tmp_path / 'ck'
  checkpointer = small_run(directory, keep, damaged=(10, 20, 30)[-keep:])
  before = snapshot(directory)
  with pytest.raises(checkpoints.CheckpointError) as error:
    checkpointer.restore({'x': np.zeros(64, int)}, IDENTITY)
  message = str(error.value)
  assert 'move' not in message and not STORAGE_TEXT.search(message), message
  assert message.count('is corrupt or truncated') == keep
  if keep == 1:
    assert (
      f"'{directory / '30'}' is corrupt or truncated (array leaf_000 cannot be read), and it is the only"
      in message
    )
  else:
    assert message.startswith(f"none of the 3 kept checkpoints in '{directory}' can be read: ")
    assert all(f"'{directory / str(step)}' is corrupt" in message for step in (10, 20, 30))
  assert 'choose another directory' in message
  assert snapshot(directory) == before


def empty_orbax_metadata(step):
  (step / '_CHECKPOINT_METADATA').write_text('')


def test_an_emptied_orbax_metadata_file_resumes_quietly(saved_run, tmp_path):
  directory = damaged_copy(saved_run, tmp_path, empty_orbax_metadata)
  code, out, err = run_cli('solve', 'kuhn', '--checkpoint', str(directory), '--resume', '--iterations', '220')
  assert code == 0, err
  assert 'resumed from' in out and err == ''


def test_orbax_logs_only_when_verbose(tmp_path, caplog):
  directory = tmp_path / 'ck'
  small_run(directory, 3, damaged=())
  empty_orbax_metadata(directory / '30')
  like = {'x': np.zeros(64, int)}
  caplog.set_level(logging.WARNING)
  checkpointer = checkpoints.Checkpointer(str(directory))
  restored, _ = checkpointer.restore(like, IDENTITY)
  checkpointer.save(40, restored, IDENTITY, {'iteration': 40}, 'test')  # the writer reads every step too
  checkpointer.close()
  assert list(restored['x']) == [30] * 64 and checkpointer.steps() == [20, 30, 40]
  assert not [r for r in caplog.records if r.name == 'absl'], caplog.text
  checkpoints.set_verbose(True)
  try:
    checkpointer.restore(like, IDENTITY)
  finally:
    checkpoints.set_verbose(False)
  assert 'Failed to json parse' in caplog.text  # the records hidden above do exist


@pytest.mark.parametrize(
  'path,shown',
  [
    ('notes.txt', 'notes.txt'),
    ('photos/beach.jpg', 'photos/'),
    ('7/holiday.jpg', '7/'),  # named like a step: keep-last-K would delete it
    ('200/notes.txt', '200/'),  # inside one of our steps
    ('100.orbax-checkpoint-tmp/notes.txt', '100.orbax-checkpoint-tmp/'),  # named like an unfinished save
  ],
)
@pytest.mark.parametrize('with_checkpoints', [False, True])
def test_a_directory_with_other_files_is_refused_and_left_alone(
  saved_run, tmp_path, capsys, path, shown, with_checkpoints
):
  directory = tmp_path / 'ck'
  if with_checkpoints:
    directory = damaged_copy(saved_run, tmp_path, lambda step: None)
  (directory / path).parent.mkdir(parents=True, exist_ok=True)
  (directory / path).write_text("the user's")
  before = snapshot(directory)
  with pytest.raises(checkpoints.CheckpointError, match='holds other files'):
    checkpoints.Checkpointer(str(directory)).check_writable()
  capsys.readouterr()
  assert cli.main(solve_args(directory, '--iterations', '250', *['--resume'] * with_checkpoints)) == 2
  assert capsys.readouterr().err == (
    f"jaxcfr: error: checkpoint directory '{directory}' holds other files ({shown}); "
    'choose a new or empty directory\n'
  )
  assert snapshot(directory) == before


def test_unfinished_saves_are_ours_and_cleaned_up(saved_run, tmp_path):
  directory = damaged_copy(saved_run, tmp_path, lambda step: None)
  shutil.copytree(directory / '200', directory / '210.orbax-checkpoint-tmp')  # as a kill mid-save leaves it
  checkpointer = checkpoints.Checkpointer(str(directory), keep=3)
  checkpointer.check_writable()
  assert checkpointer.steps() == [160, 180, 200]
  checkpointer.save(220, {'x': np.zeros(2)}, IDENTITY, {}, 'test')
  checkpointer.close()
  assert sorted(os.listdir(directory)) == ['180', '200', '220']


def test_a_failed_save_is_one_message(tmp_path):
  directory = tmp_path / 'ck'
  checkpointer = checkpoints.Checkpointer(str(directory))
  checkpointer.save(1, {'x': np.zeros(2)}, IDENTITY, {}, 'test')
  shutil.rmtree(directory)
  directory.write_text('the user put a file here')
  with pytest.raises(checkpoints.CheckpointError) as error:
    checkpointer.save(2, {'x': np.zeros(2)}, IDENTITY, {}, 'test')
  assert str(error.value) == f"cannot write checkpoint '{directory / '2'}': Not a directory"
  assert directory.read_text() == 'the user put a file here'


@pytest.mark.parametrize(
  'change,message',
  [
    (['--algorithm', 'cfr+'], "algorithm 'dcfr'"),
    (['--gamma', '3'], 'hyperparameters'),
    (['--dtype', 'float64'], "dtype 'float32'"),
    (['--seed', '5'], 'seed 0'),
  ],
)
def test_a_mismatched_resume_fails_and_changes_nothing(saved_run, tmp_path, change, message):
  directory = damaged_copy(saved_run, tmp_path, lambda step: None)
  before = snapshot(directory)
  code, _, err = run_cli('solve', 'kuhn', '--quiet', '--checkpoint', str(directory), '--resume', *change)
  assert code == 2 and 'Traceback' not in err
  assert 'belongs to another run' in err and message in err
  assert snapshot(directory) == before


def test_another_game_is_refused(saved_run, tmp_path):
  directory = damaged_copy(saved_run, tmp_path, lambda step: None)
  before = snapshot(directory)
  code, _, err = run_cli('solve', 'kuhn(players=3)', '--quiet', '--checkpoint', str(directory), '--resume')
  assert code == 2 and "game 'kuhn'" in err and 'belongs to another run' in err
  assert snapshot(directory) == before


def test_existing_checkpoints_need_resume(saved_run, tmp_path):
  directory = damaged_copy(saved_run, tmp_path, lambda step: None)
  before = snapshot(directory)
  code, _, err = run_cli('solve', 'kuhn', '--quiet', '--checkpoint', str(directory))
  assert code == 2 and '--resume' in err
  assert snapshot(directory) == before


def test_resume_when_the_total_is_already_reached(saved_run, tmp_path):
  directory = damaged_copy(saved_run, tmp_path, lambda step: None)
  before = snapshot(directory)
  code, out, err = run_cli(
    'solve',
    'kuhn',
    '--quiet',
    '--checkpoint',
    str(directory),
    '--resume',
    '--iterations',
    '200',
    '--json',
    '-',
  )
  assert code == 0, err
  assert json.loads(out)['iterations'] == 200
  assert snapshot(directory) == before


@pytest.mark.parametrize(
  'setup,message',
  [
    (lambda tmp: (tmp / 'file').write_text('x') and str(tmp / 'file'), 'not a directory'),
    (lambda tmp: str(tmp / 'missing' / 'ck'), 'does not exist'),
    pytest.param(
      lambda tmp: '/proc/ck',
      "checkpoint directory '/proc/ck' is not writable: cannot create files in '/proc'",
      marks=pytest.mark.skipif(not os.path.isdir('/proc'), reason='no /proc'),
    ),
  ],
)
def test_bad_checkpoint_paths(tmp_path, capsys, setup, message):
  path = setup(tmp_path)
  with pytest.raises(checkpoints.CheckpointError, match=re.escape(message)):
    checkpoints.Checkpointer(path).check_writable()
  capsys.readouterr()
  assert cli.main(['solve', 'kuhn', '--quiet', '--checkpoint', path]) == 2
  out, err = capsys.readouterr()
  assert out == '' and err.startswith('jaxcfr: error: ') and message in err and len(err.splitlines()) == 1


@pytest.mark.skipif(os.geteuid() == 0, reason='root can write to read-only directories')
def test_a_read_only_directory_is_refused(tmp_path):
  directory = tmp_path / 'ck'
  directory.mkdir(mode=0o500)
  code, _, err = run_cli('solve', 'kuhn', '--quiet', '--checkpoint', str(directory))
  assert code == 2 and 'not writable' in err


def test_resume_needs_a_directory():
  code, _, err = run_cli('solve', 'kuhn', '--resume')
  assert code == 2 and '--checkpoint' in err


# Blueprints.


@pytest.mark.parametrize('game,suffix', [('kuhn', '.json'), ('leduc', '.npz')])
def test_evaluate_reproduces_solve(tmp_path, game, suffix, capsys):
  policy_path, json_path = tmp_path / f'policy{suffix}', tmp_path / 'solve.json'
  args = ['solve', game, '--iterations', '300', '--quiet', '--json', str(json_path)]
  assert cli.main([*args, '--policy-out', str(policy_path)]) == 0
  solved = json.loads(json_path.read_text())
  capsys.readouterr()
  assert cli.main(['evaluate', game, '--policy', str(policy_path), '--json', '-', '--quiet']) == 0
  evaluated = json.loads(capsys.readouterr().out)
  assert evaluated['exploitability'] == solved['exploitability']
  assert evaluated['nash_conv'] == solved['nash_conv']
  assert evaluated['game_value'] == solved['game_value']
  assert evaluated['policy_metadata']['iterations'] == 300


def test_json_and_npz_blueprints_hold_the_same_policy(tmp_path):
  game = compiled('leduc', 'float64')
  solver = jaxcfr.cfr_plus()
  policy = jaxcfr.average_policy(jitted_run(solver)(solver.init(game), game, 50), game)
  for suffix in ('.json', '.npz'):
    jaxcfr.policies.save(str(tmp_path / f'p{suffix}'), game, policy, game='leduc', iterations=50)
  a, b = jaxcfr.load_policy(str(tmp_path / 'p.json')), jaxcfr.load_policy(str(tmp_path / 'p.npz'))
  assert a.keys == b.keys == game.infoset_keys and a.metadata['iterations'] == b.metadata['iterations'] == 50
  np.testing.assert_array_equal(a.policy_for(game), np.asarray(policy))
  np.testing.assert_array_equal(b.policy_for(game), np.asarray(policy))
  assert a.to_dict() == jaxcfr.policies.to_dict(game, policy)
  assert os.path.getsize(tmp_path / 'p.npz') < os.path.getsize(tmp_path / 'p.json') / 2


@pytest.mark.parametrize(
  'content,message',
  [
    (b'not json at all', 'not valid JSON'),
    (b'PK\x03\x04garbage', 'not a readable .npz'),
    (json.dumps({'policy': {'0': [[0, 0.7], [1, 0.7]]}}).encode(), 'sum to'),
    (json.dumps({'policy': {'0': [[0, 1.5]]}}).encode(), 'probability 1.5'),
    (json.dumps({'policy': {'0': [['x', 1]]}}).encode(), 'not [action, probability]'),
    (json.dumps({'game': 'kuhn'}).encode(), 'no "policy" object'),
  ],
)
def test_malformed_policies_give_one_message(tmp_path, content, message):
  path = tmp_path / 'policy.bin'
  path.write_bytes(content)
  with pytest.raises(jaxcfr.GameError, match=re.escape(message)):
    jaxcfr.load_policy(str(path))
  code, out, err = run_cli('evaluate', 'kuhn', '--policy', str(path))
  assert code == 2 and message in err and 'Traceback' not in err and out == ''


def test_evaluate_refuses_a_policy_for_another_game_or_a_missing_file(tmp_path):
  path = tmp_path / 'kuhn.npz'
  game = compiled('kuhn', 'float32')
  jaxcfr.policies.save(str(path), game, jaxcfr.average_policy(jaxcfr.cfr().init(game), game))
  code, _, err = run_cli('evaluate', 'leduc', '--policy', str(path))
  assert code == 2 and 'does not cover' in err and 'Traceback' not in err
  code, _, err = run_cli('evaluate', 'kuhn', '--policy', str(tmp_path / 'missing.json'))
  assert code == 2 and 'cannot read policy' in err
