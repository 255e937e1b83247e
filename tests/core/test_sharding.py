"""One game over several devices (`jaxcfr.sharding`): padding changes no number, and four
forced CPU devices give the one-device results (in subprocesses: the device count is set
before JAX starts)."""

import json
import subprocess
import sys

import jax
import numpy as np
import pytest
from conftest import compiled, host_devices_env, import_paths
from test_evaluation import HiddenCount
from test_sequence_form import Forgetful

import jaxcfr
from jaxcfr import sharding

# kuhn (sequence form); liars_dice(3) (no depth a multiple of 4); HiddenCount (10 infosets, spanning
# depths, general-sum); Forgetful (imperfect recall: no sequence form); Leduc over sequences and histories.
GAMES = {
  'kuhn': lambda: compiled('kuhn', dtype='float64'),
  'liars_dice': lambda: compiled('liars_dice(dice_sides=3)', dtype='float64'),
  'hidden_count': lambda: jaxcfr.compile_game(HiddenCount(1), dtype='float64'),
  'forgetful': lambda: jaxcfr.compile_game(Forgetful(2), dtype='float64'),
  'leduc': lambda: compiled('leduc', dtype='float64'),
  'leduc_histories': lambda: compiled('leduc', dtype='float64').replace(sequence_form=None),
}


@pytest.mark.parametrize(
  'name',
  [
    'kuhn',
    'hidden_count',
    pytest.param('liars_dice', marks=pytest.mark.slow),
    pytest.param('forgetful', marks=pytest.mark.slow),
  ],
)
def test_padding_changes_no_number(name):
  game = GAMES[name]()
  padded = sharding.pad_game(game, 5)
  assert all(size % 5 == 0 for size in padded.depth_sizes) and padded.num_infosets % 5 == 0
  assert len(padded.infoset_keys) == game.num_infosets
  solver = jaxcfr.pdcfr_plus()
  run = jax.jit(jaxcfr.run, static_argnums=(0, 3))
  states = [run(solver, solver.init(g), g, 10) for g in (game, padded)]
  rows = game.num_infosets
  for field in ('cumulative_regret', 'cumulative_policy'):
    one, other = getattr(states[0], field), getattr(states[1], field)
    np.testing.assert_allclose(other[:rows], one, rtol=0, atol=1e-12)
    np.testing.assert_array_equal(other[rows:], 0)
  policies = [jaxcfr.average_policy(s, g) for s, g in zip(states, (game, padded), strict=True)]
  np.testing.assert_allclose(jaxcfr.unpad_policy(policies[1], padded), policies[0], atol=1e-12)
  np.testing.assert_allclose(
    jaxcfr.best_response_values(padded, policies[1]),
    jaxcfr.best_response_values(game, policies[0]),
    atol=1e-12,
  )
  np.testing.assert_allclose(
    jaxcfr.expected_values(padded, policies[1]), jaxcfr.expected_values(game, policies[0]), atol=1e-12
  )


_SCRIPT = """
import json, sys
import jax
jax.config.update('jax_enable_x64', True)
import numpy as np
sys.path[:0] = {paths!r}
import jaxcfr
from jaxcfr import sharding
from test_sharding import GAMES
out = {{'count': jax.device_count(), 'runs': []}}
for name, algorithm in {cases!r}:
  game = GAMES[name]()
  split = jaxcfr.shard_game(game, 4)
  solver = jaxcfr.make_solver(algorithm)
  one, four = (jaxcfr.train(g, solver, iterations={iterations}, eval_at=[]) for g in (game, split))
  policy = np.asarray(jaxcfr.unpad_policy(four.policy, split))
  state = np.asarray(regret := four.state.cumulative_regret)[: game.num_infosets]
  out['runs'].append({{
    'name': name, 'algorithm': algorithm,
    'exploitability': [one.exploitability, four.exploitability],
    'policy_error': float(np.abs(policy - np.asarray(one.policy)).max()),
    'regret_error': float(np.abs(state - np.asarray(one.state.cumulative_regret)).max()),
    'regret_shards': sorted({{tuple(s.data.shape) for s in regret.addressable_shards}}),
    'regret_shape': list(regret.shape),
    'game_bytes': sum(np.asarray(leaf).nbytes for leaf in jax.tree.leaves(game)),
    'bytes_per_device': sorted(sharding.bytes_per_device(split).values()),
  }})
print(json.dumps(out))
"""


def _run_four_devices(cases, iterations):
  script = _SCRIPT.format(paths=import_paths(__file__), cases=cases, iterations=iterations)
  env = host_devices_env(4)
  process = subprocess.run(
    [sys.executable, '-c', script], capture_output=True, text=True, env=env, timeout=900
  )
  assert process.returncode == 0, process.stderr
  result = json.loads(process.stdout.splitlines()[-1])
  assert result['count'] == 4
  for run in result['runs']:
    label = f'{run["name"]} {run["algorithm"]}'
    one, four = run['exploitability']
    assert abs(one - four) <= 1e-6, label
    assert run['policy_error'] <= 1e-6 and run['regret_error'] <= 1e-6, label
    rows, actions = run['regret_shape']
    assert run['regret_shards'] == [[rows // 4, actions]], label  # the state is split four ways
    assert max(run['bytes_per_device']) < run['game_bytes'], label  # and so is the game
  return result['runs']


def test_four_devices_equal_one():
  """10 infosets padded to 12, with and without a sequence form, through `jaxcfr.train`."""
  _run_four_devices([('hidden_count', 'pdcfr+'), ('forgetful', 'dcfr')], iterations=10)


@pytest.mark.slow
def test_four_devices_equal_one_where_depths_are_not_multiples_of_four():
  _run_four_devices([('kuhn', 'cfr'), ('liars_dice', 'cfr+'), ('liars_dice', 'dcfr+')], iterations=10)


@pytest.mark.slow
def test_four_devices_equal_one_on_leduc_for_every_full_width_algorithm():
  algorithms = ['cfr', 'cfr+', 'lcfr', 'dcfr', 'pcfr+', 'dcfr+', 'pdcfr+']
  runs = _run_four_devices(
    [('leduc', a) for a in algorithms] + [('leduc_histories', a) for a in ('cfr+', 'pdcfr+')], iterations=30
  )
  leduc = next(run for run in runs if run['name'] == 'leduc')
  # Most of Leduc's bytes are split: each device holds well under half of the game.
  assert max(leduc['bytes_per_device']) < 0.5 * leduc['game_bytes']


@pytest.mark.slow
def test_cli_solves_over_four_devices():
  from cli_runner import run_cli  # noqa: PLC0415

  reports = []
  for devices in ('1', '4'):
    code, out, err = run_cli(
      'solve', 'leduc', '--algorithm', 'dcfr', '--iterations', '50', '--dtype', 'float64',
      '--devices', devices, '--json', '-',
    )  # fmt: skip
    assert code == 0, err
    reports.append(json.loads(out))
  assert reports[1]['devices'] == 4
  assert abs(reports[0]['exploitability'] - reports[1]['exploitability']) <= 1e-6
  assert reports[0]['num_infosets'] == reports[1]['num_infosets'] == 936
