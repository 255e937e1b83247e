"""The library training loop and the algorithm registry."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conftest import compiled, solve

import jaxcfr
from jaxcfr import algorithms


def test_train_equals_the_plain_loop_and_keeps_a_curve():
  game = compiled('kuhn')
  solver = jaxcfr.make_solver('cfr+')
  result = jaxcfr.train(game, solver, iterations=300, eval_every=100)
  state = solve(solver, game, 300)
  np.testing.assert_array_equal(result.policy, jaxcfr.average_policy(state, game))
  assert [p['iteration'] for p in result.curve] == [100, 200, 300]
  assert result.iterations == 300 and result.resumed_from is None
  assert result.exploitability == result.curve[-1]['exploitability']
  assert result.exploitability == pytest.approx(float(jaxcfr.exploitability(game, result.policy)), abs=1e-12)
  assert result.values[0] == pytest.approx(-1 / 18, abs=1e-3)
  assert result.jit_seconds > 0 and result.evaluation_seconds > 0 and result.seconds > 0


def test_a_warm_up_run_changes_nothing_but_the_clock():
  """`warm_up` runs the compiled iteration once before the clock starts and discards its result: the
  same iterations, policy and curve as without it."""
  game, solver = compiled('kuhn'), jaxcfr.make_solver('dcfr')
  cold, warm = (jaxcfr.train(game, solver, iterations=40, eval_every=20, warm_up=w) for w in (False, True))
  np.testing.assert_array_equal(warm.policy, cold.policy)
  assert warm.iterations == cold.iterations == 40
  assert [p['exploitability'] for p in warm.curve] == [p['exploitability'] for p in cold.curve]
  np.testing.assert_array_equal(warm.policy, jaxcfr.average_policy(solve(solver, game, 40), game))


def test_log_spaced_evaluations_by_default():
  result = jaxcfr.train(compiled('kuhn'), jaxcfr.make_solver('dcfr'), iterations=30)
  assert [p['iteration'] for p in result.curve] == [1, 2, 3, 4, 5, 6, 8, 10, 13, 16, 20, 25, 30]


def test_a_target_stops_at_the_first_evaluation_that_reaches_it():
  game, solver = compiled('kuhn'), jaxcfr.make_solver('cfr+')
  full = jaxcfr.train(game, solver, iterations=400, eval_every=20)
  target = full.curve[4]['exploitability']  # reached at iteration 100
  first = next(p['iteration'] for p in full.curve if p['exploitability'] <= target)
  result = jaxcfr.train(game, solver, iterations=400, eval_every=20, target=target)
  assert result.iterations == first <= 100
  assert result.exploitability <= target
  with pytest.raises(jaxcfr.TrainingError, match='target'):
    jaxcfr.train(game, solver, iterations=10, target=-1.0)


def test_a_seconds_budget_stops_the_loop():
  result = jaxcfr.train(compiled('kuhn'), jaxcfr.make_solver('cfr'), seconds=0.3)
  assert result.iterations > 10 and result.seconds < 1.0


@pytest.mark.parametrize(
  'name,options',
  [
    ('es-mccfr', {'batch_size': 64}),
    pytest.param(
      'sd-cfr', {'traversals': 32, 'advantage_steps': 5, 'advantage_capacity': 2000}, marks=pytest.mark.slow
    ),  # the suite's 10 minutes
  ],
)
def test_every_family_trains_through_the_same_loop(name, options):
  game = compiled('kuhn')
  result = jaxcfr.train(game, jaxcfr.make_solver(name, **options), key=jax.random.key(3), iterations=4)
  again = jaxcfr.train(game, jaxcfr.make_solver(name, **options), key=jax.random.key(3), iterations=4)
  np.testing.assert_array_equal(result.policy, again.policy)  # deterministic given the key
  legal = np.asarray(game.legal_mask)
  np.testing.assert_allclose(np.asarray(result.policy).sum(-1), 1, atol=1e-6)
  assert np.all(np.asarray(result.policy)[~legal] == 0)


def test_checkpointed_training_resumes_bit_identically(tmp_path):
  game = compiled('kuhn')
  solver = jaxcfr.make_solver('pcfr+')
  straight = jaxcfr.train(game, solver, iterations=60, eval_every=20)
  directory = str(tmp_path / 'run')
  first = jaxcfr.train(
    game, solver, iterations=40, eval_every=20, checkpoint_dir=directory, checkpoint_every=20
  )
  messages = []
  resumed = jaxcfr.train(
    game, solver, iterations=60, eval_every=20, checkpoint_dir=directory, resume=True, log=messages.append
  )
  assert first.iterations == 40 and resumed.resumed_from == 40
  assert len(first.checkpoint_seconds) == 2 and resumed.checkpoint_seconds  # saved at 20 and 40; then some
  assert all(s > 0 for s in first.checkpoint_seconds) and straight.checkpoint_seconds == ()
  assert any('resumed' in m for m in messages)
  np.testing.assert_array_equal(straight.policy, resumed.policy)
  assert [p['iteration'] for p in resumed.curve] == [20, 40, 60]


def test_resuming_past_the_total_is_refused(tmp_path):
  game = compiled('kuhn')
  solver = jaxcfr.make_solver('cfr')
  directory = str(tmp_path / 'run')
  jaxcfr.train(game, solver, iterations=50, checkpoint_dir=directory)
  with pytest.raises(jaxcfr.TrainingError, match='iteration 50, past the total of 30'):
    jaxcfr.train(game, solver, iterations=30, checkpoint_dir=directory, resume=True)


@pytest.mark.parametrize(
  'options,message',
  [
    ({'iterations': 10, 'checkpoint_every': 5}, 'need a checkpoint directory'),
    ({'iterations': 10, 'resume': True}, 'need a checkpoint directory'),
    ({}, 'give a budget'),
    ({'iterations': 0}, 'positive integer'),
    ({'seconds': math.nan}, 'positive number'),
    ({'iterations': 5, 'eval_every': 1, 'eval_every_seconds': 1.0}, 'not both'),
  ],
)
def test_bad_requests_fail_before_any_work(options, message):
  with pytest.raises(jaxcfr.TrainingError, match=message):
    jaxcfr.train(compiled('kuhn'), jaxcfr.make_solver('cfr'), **options)


def test_the_registry_is_the_one_list_of_algorithms():
  names = set(algorithms.REGISTRY)
  assert {'cfr', 'cfr+', 'lcfr', 'dcfr', 'pcfr+', 'dcfr+', 'pdcfr+', 'es-mccfr', 'os-mccfr'} <= names
  for name, entry in algorithms.REGISTRY.items():
    keywords = [h.name for h in entry.hyperparameters]
    assert len(set(keywords)) == len(keywords), name  # one schema entry per keyword
    solver = entry.make()
    assert solver.name == name
    assert set(solver.hyperparameters) >= {h.name for h in entry.hyperparameters}
    for parameter in entry.hyperparameters:  # library defaults are the registry's
      assert solver.hyperparameters[parameter.name] == parameter.default, (name, parameter.name)


@pytest.mark.parametrize(
  'name,options,message',
  [
    ('cfr+', {'alpha': 2.0}, "cfr\\+ takes no hyper-parameter 'alpha'"),
    ('dcfr', {'alpha': -1.0}, r'alpha must be in \[0, inf\)'),
    ('dcfr', {'gamma': math.inf}, 'finite'),
    ('es-mccfr', {'batch_size': 0}, 'batch_size must be a positive integer'),
    ('os-mccfr', {'exploration': 0.0}, r'exploration must be in \(0, 1\]'),
    ('deep-cfr', {'advantage_layers': (64, 0)}, 'positive layer widths'),
    ('cfr', {'alternating': 1}, 'true or false'),
    ('magic', {}, 'unknown algorithm'),
  ],
)
def test_the_registry_validates_hyperparameters(name, options, message):
  with pytest.raises(ValueError, match=message):
    jaxcfr.make_solver(name, **options)


def test_deep_cfr_alone_takes_no_devices():
  assert jaxcfr.make_solver('dcfr', devices=2).name == 'dcfr'  # the sharded game carries the devices
  with pytest.raises(ValueError, match='one device'):
    jaxcfr.make_solver('deep-cfr', devices=2)


def test_a_custom_solver_trains_too():
  game = compiled('kuhn')
  solver = jaxcfr.cfr_family(jaxcfr.chain(jaxcfr.accumulate(), jaxcfr.clip_negative()), 1.0)
  result = jaxcfr.train(game, solver, iterations=200, eval_every=200)
  reference = solve(jaxcfr.cfr_plus(), game, 200)
  np.testing.assert_array_equal(result.policy, jaxcfr.average_policy(reference, game))
  assert result.policy.dtype == jnp.float64


def test_time_only_budgets_run_long_chunks():
  calls = []
  result = jaxcfr.train(
    compiled('kuhn'),
    jaxcfr.make_solver('cfr'),
    seconds=0.5,
    eval_every_seconds=0.25,
    on_progress=calls.append,
  )
  assert result.iterations > 100
  assert len(calls) < 30  # a chunk per evaluation interval, not one per iteration


def test_a_game_too_large_to_evaluate_trains_without_evaluations(tmp_path):
  game = compiled('kuhn')
  solver = jaxcfr.make_solver('cfr+')
  result = jaxcfr.train(game, solver, iterations=30, evaluate=False, checkpoint_dir=str(tmp_path / 'run'))
  reference = jaxcfr.train(game, solver, iterations=30, eval_every=30)
  np.testing.assert_array_equal(result.policy, reference.policy)  # the same solve, unjudged
  assert result.curve == [] and math.isnan(result.exploitability) and result.evaluation_seconds == 0
  with pytest.raises(jaxcfr.TrainingError, match='need evaluate=True'):
    jaxcfr.train(game, solver, iterations=30, evaluate=False, target=0.1)
