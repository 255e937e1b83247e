"""The blueprint trainers over two real processes (`jaxcfr.distributed`, gloo on localhost): two
processes with one CPU device each train the bits of one process with two devices, for the tabular
trainer (each device samples its own share of the deals) and the vector-form one (the boards split
over the devices); a wrong layout (each process its own seed) does not."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from conftest import host_devices_env
from processes import run_processes
from standin import write_tables

from jaxcfr.poker.blueprint import files

TIMEOUT = 240  # seconds a run may take on a loaded machine; an idle one needs a tenth
ALGORITHMS = {
  'tabular': ['--algorithm', 'tabular', '--batch-size', '32'],
  'pcs': ['--algorithm', 'pcs', '--boards', '2'],
}
# The default suite's minutes: pcs over two processes runs with -m slow (its split of the boards over
# devices against one device runs by default in test_blueprint_vector).
PARAMS = ['tabular', pytest.param('pcs', marks=pytest.mark.slow)]


@pytest.fixture(scope='module')
def tables(tmp_path_factory):
  return write_tables(tmp_path_factory.mktemp('tables') / 'small')


def _args(tables, algorithm):
  return ['blueprint', 'train', '--abstraction', tables, '--iterations', '2', '--devices', '2',
          *ALGORITHMS[algorithm], '--out', 'b.npz', '--quiet']  # fmt: skip


def _probabilities(path):
  return files.load_blueprint(str(path)).probabilities


@pytest.fixture(scope='module', params=PARAMS)
def one_process(request, tables, tmp_path_factory):
  """(algorithm, the blueprint's probabilities) of one process with two host devices."""
  where = tmp_path_factory.mktemp(f'one-{request.param}')
  run = subprocess.run(
    [sys.executable, '-m', 'jaxcfr.cli', *_args(tables, request.param)], capture_output=True, text=True,
    timeout=TIMEOUT, cwd=where, env=host_devices_env(2),
  )  # fmt: skip
  assert run.returncode == 0, run.stderr[-3000:]
  return request.param, _probabilities(where / 'b.npz')


@pytest.mark.slow  # the default suite's 10 minutes; two processes: tests/core/test_distributed.py
def test_two_processes_train_the_blueprint_of_one_process_with_two_devices(tables, one_process, tmp_path):
  algorithm, reference = one_process
  runs = run_processes(_args(tables, algorithm), timeout=TIMEOUT, cwd=tmp_path)
  for i, run in enumerate(runs):
    assert run.code == 0, f'process {i} ended with {run.code}:\n{run.err[-3000:]}'
  np.testing.assert_array_equal(_probabilities(tmp_path / 'b.npz'), reference)


@pytest.mark.slow  # the default suite's minutes; the comparison it guards runs by default
def test_a_wrong_layout_trains_another_blueprint(tables, one_process, tmp_path):
  algorithm, reference = one_process
  runs = run_processes(
    _args(tables, algorithm), timeout=TIMEOUT, cwd=tmp_path, per_process=lambda i: ['--seed', str(i)]
  )
  for i, run in enumerate(runs):
    assert run.code == 0, f'process {i} ended with {run.code}:\n{run.err[-3000:]}'
  assert not np.array_equal(_probabilities(tmp_path / 'b.npz'), reference)
