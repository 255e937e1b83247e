"""Runs over several real processes (`jaxcfr.distributed`): two processes with one CPU device each
against one process with two, on localhost, collectives over gloo.

Sampled MCCFR splits its batch over the devices, so the same seed and device count give the same
bits however many processes hold the devices; a wrong layout (the processes' seeds differ) does
not. A checkpoint moves between layouts; a lost process ends the other with one message, at once;
one that never starts, after the initialisation timeout.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
from conftest import host_devices_env
from processes import free_port, run_processes

from jaxcfr import distributed

SOLVE = [
  'solve',
  'leduc',
  '--algorithm',
  'es-mccfr',
  '--devices',
  '2',
  '--batch-size',
  '32',
  '--eval-every',
  '10',
]
TIMEOUT = 180  # seconds a run may take on a loaded machine; an idle one needs a tenth


def _one_process(args, cwd, **env):
  """`jaxcfr ARGS` in one process with two host devices: (exit status, stdout, stderr)."""
  run = subprocess.run(
    [sys.executable, '-m', 'jaxcfr.cli', *args], capture_output=True, text=True, timeout=TIMEOUT, cwd=cwd,
    env=host_devices_env(2, **env),
  )  # fmt: skip
  return run.returncode, run.stdout, run.stderr


def _probabilities(path) -> np.ndarray:
  with np.load(path) as saved:
    return saved['probabilities']


def _ok(runs) -> None:
  for i, run in enumerate(runs):
    assert run.code == 0, f'process {i} ended with {run.code}:\n{run.err[-3000:]}'


@pytest.fixture(scope='module')
def reference(tmp_path_factory):
  """One process, two devices, 20 iterations, a checkpoint at 10 and 20: (directory, policy)."""
  where = tmp_path_factory.mktemp('one-process')
  args = [
    *SOLVE,
    '--iterations',
    '20',
    '--checkpoint',
    'run',
    '--checkpoint-every',
    '10',
    '--policy-out',
    'p.npz',
  ]
  code, _, err = _one_process(args, where)
  assert code == 0, err
  return where, _probabilities(where / 'p.npz')


@pytest.fixture(scope='module')
def two_processes(tmp_path_factory):
  """The reference's run on two processes with one device each: (directory, their runs)."""
  where = tmp_path_factory.mktemp('two-processes')
  args = [*SOLVE, '--iterations', '20', '--checkpoint', 'run', '--checkpoint-every', '10']
  runs = run_processes([*args, '--policy-out', 'p.npz', '--json', 'r.json'], timeout=TIMEOUT, cwd=where)
  _ok(runs)
  return where, runs


def test_two_processes_give_the_bits_of_one_process_with_two_devices(reference, two_processes):
  where, runs = two_processes
  np.testing.assert_array_equal(_probabilities(where / 'p.npz'), reference[1])
  # Process 0 alone prints and writes (the outputs' paths were the same for both).
  assert 'es-mccfr: 20 iterations' in runs[0].out
  assert 'iterations' not in runs[1].out + runs[1].err
  report = json.loads((where / 'r.json').read_text())
  assert report['iterations'] == 20 and report['devices'] == 2


@pytest.mark.slow  # the default suite's minutes; the comparison it guards runs by default
def test_a_wrong_layout_gives_other_bits(tmp_path, reference):
  """Each process with its own seed: the comparison above would fail."""
  runs = run_processes(
    [*SOLVE, '--iterations', '20', '--policy-out', 'p.npz'], timeout=TIMEOUT, cwd=tmp_path,
    per_process=lambda i: ['--seed', str(i)],
  )  # fmt: skip
  _ok(runs)
  assert not np.array_equal(_probabilities(tmp_path / 'p.npz'), reference[1])


def _from_step_10(source, target):
  """A copy of the checkpoints in `source` without the last step (20), to resume at 10."""
  shutil.copytree(source, target)
  shutil.rmtree(target / '20')


def test_a_checkpoint_of_two_processes_resumes_in_one(tmp_path, reference, two_processes):
  _from_step_10(two_processes[0] / 'run', tmp_path / 'run')
  args = [*SOLVE, '--iterations', '20', '--checkpoint', 'run', '--resume', '--policy-out', 'p.npz']
  code, out, err = _one_process(args, tmp_path)
  assert code == 0, err
  assert 'resumed from run at iteration 10' in out
  np.testing.assert_array_equal(_probabilities(tmp_path / 'p.npz'), reference[1])


@pytest.mark.slow  # the default suite's minutes; 2 -> 1 runs by default
def test_a_checkpoint_of_one_process_resumes_in_two(tmp_path, reference):
  _from_step_10(reference[0] / 'run', tmp_path / 'run')
  args = [*SOLVE, '--iterations', '20', '--checkpoint', 'run', '--resume', '--policy-out', 'p.npz']
  runs = run_processes(args, timeout=TIMEOUT, cwd=tmp_path)
  _ok(runs)
  assert 'resumed from run at iteration 10' in runs[0].out
  np.testing.assert_array_equal(_probabilities(tmp_path / 'p.npz'), reference[1])


@pytest.mark.slow  # the default suite's minutes; the sampled runs over two processes run by default
def test_a_sharded_full_width_solve_over_two_processes_is_the_one_process_solve(tmp_path):
  """DCFR on Leduc with the game and the state split over two devices: each process places and
  updates only its own shards; the policy is the one-process run's, bit for bit."""
  args = ['solve', 'leduc', '--algorithm', 'dcfr', '--devices', '2', '--iterations', '10',
          '--eval-every', '10', '--policy-out', 'p.npz']  # fmt: skip
  (tmp_path / 'one').mkdir()
  code, _, err = _one_process(args, tmp_path / 'one')
  assert code == 0, err
  runs = run_processes(args, timeout=TIMEOUT, cwd=tmp_path)
  _ok(runs)
  assert 'dcfr: 10 iterations' in runs[0].out
  one = _probabilities(tmp_path / 'one' / 'p.npz')
  np.testing.assert_array_equal(_probabilities(tmp_path / 'p.npz'), one)


@pytest.mark.slow  # the default suite's minutes; the two-process run itself stays in it
def test_a_lost_process_ends_the_other_with_one_message(tmp_path):
  killed = []

  def kill_process_1(processes, outs):
    deadline = time.monotonic() + TIMEOUT
    while 'Gloo' not in open(outs[0]).read():  # the first collective: both run the solve
      assert time.monotonic() < deadline and processes[0].poll() is None, 'the run never started'
      time.sleep(0.05)
    os.kill(processes[1].pid, signal.SIGKILL)
    killed.append(time.monotonic())

  before = time.monotonic()
  runs = run_processes(
    [*SOLVE, '--seconds', '600'], timeout=TIMEOUT, cwd=tmp_path, after_start=kill_process_1
  )
  assert runs[0].code == 1, runs[0].err[-3000:]
  assert runs[0].seconds - (killed[0] - before) < 30  # at once (the collective fails), not at a timeout
  lines = runs[0].err.strip().splitlines()
  assert len(lines) == 1 and lines[0].startswith('jaxcfr: error: the run over 2 processes stopped'), lines
  assert 'another process died' in lines[0]


def test_a_process_that_never_starts_ends_the_other_at_the_timeout(tmp_path):
  port = free_port()
  args = ['solve', 'kuhn', '--algorithm', 'es-mccfr', '--devices', '2', '--iterations', '5']
  args += ['--coordinator', f'127.0.0.1:{port}', '--num-processes', '2', '--process-id', '0']
  start = time.monotonic()
  code, _, err = _one_process(args, tmp_path, JAXCFR_DISTRIBUTED_TIMEOUT='3', XLA_FLAGS='')
  assert code == 1
  assert err.strip().splitlines() == [
    f'jaxcfr: error: process 0 of 2 waited 3 s for the others at the coordinator 127.0.0.1:{port}; '
    'is every process started, with the same --coordinator and --num-processes?'
  ]
  assert time.monotonic() - start < 60


def test_the_layout_comes_from_flags_then_the_environment():
  environ = {'JAX_COORDINATOR_ADDRESS': 'head:1234', 'JAXCFR_NUM_PROCESSES': '4', 'JAXCFR_PROCESS_ID': '3'}
  assert distributed.layout(environ={}) is None
  assert distributed.layout(num_processes=1, environ=environ) is None
  assert distributed.layout(environ=environ) == ('head:1234', 4, 3)
  assert distributed.layout('other:1', 2, 1, environ=environ) == ('other:1', 2, 1)
  assert distributed.layout(environ={'JAXCFR_NUM_PROCESSES': '2'}) == (None, 2, None)  # JAX detects the rest
  with pytest.raises(distributed.DistributedError, match='not below the process count'):
    distributed.layout('h:1', 2, 2, environ={})
  with pytest.raises(distributed.DistributedError, match='is not a whole number'):
    distributed.layout(environ={'JAXCFR_PROCESS_ID': 'x'})
