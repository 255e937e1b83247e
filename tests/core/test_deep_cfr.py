"""Deep CFR and SD-CFR: reservoir sampling, loss weighting, policies, convergence on Kuhn,
determinism and resume, agreement with OpenSpiel's exploitability, and the command line."""

import functools
import json

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from cli_runner import run_cli
from conftest import compiled

import jaxcfr
from jaxcfr import algorithms, checkpoints, deep_cfr, policies, solvers

# Small settings that still converge on Kuhn within a few seconds of solving.
KUHN = dict(
  traversals=256,
  advantage_steps=100,
  advantage_capacity=100_000,
  strategy_steps=1000,
  strategy_capacity=100_000,
)


@functools.cache
def kuhn_solver(name):
  """One solver per algorithm, so that the tests share its compiled update."""
  options = {k: v for k, v in KUHN.items() if name == 'deep-cfr' or not k.startswith('strategy')}
  return algorithms.REGISTRY[name].function()(**options)


def kuhn():
  return compiled('kuhn', 'float32')


_RUNS = {}


def run(solver, state, game, iterations):
  key = (id(solver), game.name)
  if key not in _RUNS:
    _RUNS[key] = jax.jit(lambda s, g, n: jaxcfr.run(solver, s, g, n))
  return _RUNS[key](state, game, iterations)


@pytest.fixture(scope='module')
def solved():
  """Deep CFR and SD-CFR after 60 iterations on Kuhn."""
  game = kuhn()
  results = {}
  for name in ('deep-cfr', 'sd-cfr'):
    solver = kuhn_solver(name)
    state = run(solver, solver.init(game, jax.random.key(0)), game, 60)
    results[name] = solver, state
  return results


def assert_states_equal(a, b):
  for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b), strict=True):
    if jax.dtypes.issubdtype(x.dtype, jax.dtypes.prng_key):
      x, y = jax.random.key_data(x), jax.random.key_data(y)
    np.testing.assert_array_equal(np.asarray(x), np.asarray(y))


# Reservoir sampling.


def stream_through_reservoir(key, capacity, batches, items_per_batch, valid_share):
  """Offers `batches` batches of `items_per_batch` rows (a random share of them valid), numbered by
  their order among the valid rows; returns `(kept numbers, valid count)`."""
  buffer = deep_cfr.reservoir_init(capacity, 1, empty_row=-1)
  offered = 0
  for b in range(batches):
    key, mask_key, add_key = jax.random.split(key, 3)
    valid = jax.random.uniform(mask_key, (items_per_batch,)) < valid_share
    numbers = offered + jnp.cumsum(valid) - 1
    buffer = deep_cfr.reservoir_add(buffer, add_key, numbers, b + 1.0, numbers[:, None] * 1.0, valid)
    offered = offered + valid.sum()
  return buffer, offered


def test_reservoir_keeps_every_item_with_equal_probability():
  """Over 4000 independent streams of about 90 valid items into 12 slots, offered in batches,
  each item's inclusion count is Binomial(4000, 12 / n): every count lies within 4.5 standard
  deviations and the chi-square statistic over items is plausible."""
  capacity, runs = 12, 4000
  stream = jax.jit(jax.vmap(lambda k: stream_through_reservoir(k, capacity, 6, 30, 0.5)))
  # Each run draws its own valid rows, so it offers its own number n of items: item j of a run with
  # n > j is expected in the reservoir with probability C / n.
  keys = jax.random.split(jax.random.key(5), runs)
  buffers, offered = stream(keys)
  infosets, seen = np.asarray(buffers.infoset), np.asarray(buffers.seen)
  np.testing.assert_array_equal(seen, np.asarray(offered))
  assert np.all(seen > capacity)  # every run overflowed the reservoir
  for row, n in zip(infosets, seen, strict=True):
    assert len(set(row.tolist())) == capacity and row.min() >= 0 and row.max() < n  # distinct, real items
  # Inclusion frequency of item j among runs whose stream has at least j + 1 items, against C / n.
  n_max = int(seen.max())
  kept = np.zeros((runs, n_max), bool)
  kept[np.repeat(np.arange(runs), capacity), infosets.reshape(-1)] = True
  expected = np.where(np.arange(n_max)[None, :] < seen[:, None], capacity / seen[:, None], 0.0)
  observed_counts, expected_counts = kept.sum(0), expected.sum(0)
  variance = (expected * (1 - expected)).sum(0)
  mask = expected_counts > 50
  z = (observed_counts[mask] - expected_counts[mask]) / np.sqrt(variance[mask])
  assert mask.sum() >= 80
  assert np.abs(z).max() < 4.5
  assert abs((z**2).mean() - 1) < 0.35  # chi-square / degrees of freedom near 1


def test_reservoir_fills_in_order_then_stays_full():
  buffer = deep_cfr.reservoir_init(5, 2, empty_row=99)
  valid = jnp.asarray([True, False, True, True])
  buffer = deep_cfr.reservoir_add(buffer, jax.random.key(0), jnp.arange(4), 1.0, jnp.ones((4, 2)), valid)
  np.testing.assert_array_equal(buffer.infoset, [0, 2, 3, 99, 99])
  assert int(buffer.seen) == 3 and int(deep_cfr.reservoir_size(buffer)) == 3
  buffer = deep_cfr.reservoir_add(buffer, jax.random.key(1), jnp.arange(10, 20), 2.0, jnp.ones((10, 2)), True)
  assert int(buffer.seen) == 13 and int(deep_cfr.reservoir_size(buffer)) == 5
  assert 99 not in np.asarray(buffer.infoset).tolist()
  assert set(np.asarray(buffer.weight).tolist()) <= {1.0, 2.0}


def test_reservoir_count_saturates_instead_of_overflowing():
  buffer = deep_cfr.reservoir_init(4, 1, empty_row=9)._replace(seen=jnp.asarray(2**31 - 3, jnp.int32))
  for i in range(3):
    buffer = deep_cfr.reservoir_add(buffer, jax.random.key(i), jnp.arange(8), 1.0, jnp.ones((8, 1)), True)
    assert 2**31 - 16 <= int(buffer.seen) <= 2**31 - 1
  assert set(np.asarray(buffer.infoset).tolist()) <= {*range(8), 9}


# Losses.


def weighted_buffer(game):
  """Items at two infosets of player 0: targets 0 (weight 1) and 3 (weight 2) at one, 1 at the other."""
  rows = jnp.asarray([0, 0, 0, 1])
  buffer = deep_cfr.reservoir_init(8, game.num_actions, game.num_infosets)
  targets = jnp.asarray([[0.0, 0.0], [3.0, 3.0], [3.0, 3.0], [1.0, -1.0]])
  for i, weight in enumerate([1.0, 1.0, 2.0, 1.0]):
    buffer = deep_cfr.reservoir_add(
      buffer, jax.random.key(i), rows[i : i + 1], weight, targets[i : i + 1], jnp.asarray([True])
    )
  return buffer


def test_whole_reservoir_loss_has_the_item_by_item_gradient():
  """Aggregating items per infoset changes the loss by a constant only: the gradient equals the
  weight-normalised mean over every item."""
  game = kuhn()
  buffer = weighted_buffer(game)
  params = deep_cfr.mlp_init(jax.random.key(3), (game.num_features, 16, game.num_actions))
  params = jax.tree.map(lambda x: x + 0.1 * jax.random.normal(jax.random.key(4), x.shape), params)
  index = jnp.arange(4)
  total_weight = buffer.weight[:4].sum()

  def item_by_item(p):
    return deep_cfr.sample_loss(p, game, buffer, index, deep_cfr.advantage_loss) * 4 / total_weight

  whole = deep_cfr.reservoir_loss(game, buffer, deep_cfr.advantage_loss)
  expected = jax.tree.leaves(jax.jit(jax.grad(item_by_item))(params))  # compiled: op by op is far slower
  actual = jax.tree.leaves(jax.jit(jax.grad(whole))(params))
  for a, b in zip(expected, actual, strict=True):
    np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
  assert max(np.abs(np.asarray(g)).max() for g in actual) > 1e-3


@pytest.mark.parametrize('batch_size', [None, 64])
def test_training_fits_the_iteration_weighted_mean(batch_size):
  """Targets 0 (iteration 1) and 3 (iteration 2, twice): the loss weighted by iteration has its
  minimum at (1 * 0 + 2 * 3 + 1 * 3) / 4 = 2.25, not at the plain mean 2."""
  game = kuhn()
  buffer = weighted_buffer(game)
  params = deep_cfr.mlp_init(jax.random.key(0), (game.num_features, 32, game.num_actions))
  fitted, _ = deep_cfr._train(
    optax.adam(1e-2),
    params,
    buffer,
    game,
    jax.random.key(1),
    1500,
    batch_size,
    deep_cfr.advantage_loss,
    jnp.asarray(2),
  )
  prediction = deep_cfr.mlp_apply(fitted, game.features[:2])
  legal = np.asarray(game.legal_mask[0])
  np.testing.assert_allclose(np.asarray(prediction[0])[legal], 2.25, atol=0.05)
  np.testing.assert_allclose(np.asarray(prediction[1])[legal], [1.0, -1.0], atol=0.05)


def test_advantage_matching():
  legal = jnp.asarray([[True, True, True], [True, True, False], [True, False, True]])
  advantages = jnp.asarray([[1.0, 3.0, -2.0], [-1.0, -0.5, 5.0], [0.0, 0.0, 0.0]])
  policy = deep_cfr.advantage_matching(advantages, legal)
  np.testing.assert_allclose(policy[0], [0.25, 0.75, 0.0])
  np.testing.assert_allclose(policy[1], [0.0, 1.0, 0.0])  # none positive: the best legal action
  assert float(policy[2].sum()) == 1.0 and bool(legal[2][int(jnp.argmax(policy[2]))])


# Solving.


def test_kuhn_nash_conv_falls_below_thresholds(solved):
  game = kuhn()
  solver, state = solved['deep-cfr']
  nash_conv = float(jaxcfr.nash_conv(game, solver.average_policy(state, game)))
  assert nash_conv < 0.08, nash_conv
  solver, state = solved['sd-cfr']
  nash_conv = float(jaxcfr.nash_conv(game, solver.average_policy(state, game)))
  assert nash_conv < 0.08, nash_conv
  uniform = solvers.normalize_policy(jnp.zeros(game.legal_mask.shape), game.legal_mask)
  assert float(jaxcfr.nash_conv(game, uniform)) > 0.9  # what it started from


def test_policies_are_distributions_over_legal_actions(solved):
  game = kuhn()
  for solver, state in solved.values():
    for policy in (solver.average_policy(state, game), solver.current_policy(state, game)):
      policy = np.asarray(policy)
      assert np.all(policy >= 0) and np.all(policy[~np.asarray(game.legal_mask)] == 0)
      np.testing.assert_allclose(policy.sum(-1), 1, atol=1e-5)


def test_memories_hold_samples_of_the_right_players(solved):
  game = kuhn()
  _, state = solved['deep-cfr']
  owners = np.asarray(game.infoset_player)
  for buffers in (state.advantage_buffers, state.strategy_buffers):
    for p in range(2):
      rows = np.asarray(buffers[p].infoset)
      rows = rows[rows < game.num_infosets]
      assert len(rows) > 1000 and np.all(owners[rows] == p)
      weights = np.asarray(buffers[p].weight)[: len(rows)]
      assert weights.min() >= 1 and weights.max() == 60  # iterations 1..60


def test_same_seed_same_result_and_chunks_do_not_matter():
  game = kuhn()
  solver = kuhn_solver('sd-cfr')
  whole = run(solver, solver.init(game, jax.random.key(4)), game, 6)
  parts = run(solver, run(solver, solver.init(game, jax.random.key(4)), game, 2), game, 4)
  assert_states_equal(whole, parts)
  other = run(solver, solver.init(game, jax.random.key(5)), game, 6)
  assert not np.array_equal(np.asarray(other.average), np.asarray(whole.average))


@pytest.mark.parametrize('name', ['deep-cfr', 'sd-cfr'])
def test_resumed_run_equals_an_uninterrupted_one(name, tmp_path):
  game = kuhn()
  solver = kuhn_solver(name)
  straight = run(solver, solver.init(game, jax.random.key(1)), game, 6)
  identity = {'game': 'kuhn', 'algorithm': name}
  checkpointer = checkpoints.Checkpointer(str(tmp_path / 'ck'))
  checkpointer.save(3, run(solver, solver.init(game, jax.random.key(1)), game, 3), identity, {}, 'test')
  checkpointer.close()
  template = solver.init(game, jax.random.key(0))
  restored, _ = checkpoints.Checkpointer(str(tmp_path / 'ck')).restore(template, identity)
  resumed = run(solver, restored, game, 3)
  assert_states_equal(resumed, straight)
  np.testing.assert_array_equal(solver.average_policy(resumed, game), solver.average_policy(straight, game))


def test_bad_hyperparameters_and_games_are_refused():
  with pytest.raises(ValueError, match='traversals must be a positive integer'):
    deep_cfr.deep_cfr(traversals=0)
  with pytest.raises(ValueError, match='learning_rate'):
    deep_cfr.deep_cfr(learning_rate=-1.0)
  with pytest.raises(ValueError, match='advantage_layers'):
    deep_cfr.deep_cfr(advantage_layers=(64, 0))
  with pytest.raises(ValueError, match='unknown Deep CFR hyper-parameters: momentum'):
    deep_cfr.deep_cfr(momentum=0.9)
  with pytest.raises(ValueError, match='sd-cfr has no strategy network'):
    deep_cfr.sd_cfr(strategy_steps=10)
  game = kuhn()
  featureless = game.replace(features=jnp.zeros((game.num_infosets, 0), jnp.float32))
  with pytest.raises(ValueError, match='no information-state features'):
    deep_cfr.deep_cfr().init(featureless, jax.random.key(0))


# OpenSpiel agrees on the network's policy.


def test_network_policy_exploitability_equals_openspiels(solved, tmp_path):
  pytest.importorskip('pyspiel')
  from open_spiel.python.algorithms import exploitability as os_exploitability  # noqa: PLC0415

  from jaxcfr.games import openspiel as bridge  # noqa: PLC0415

  game = compiled('kuhn', 'float64')
  solver, state = solved['deep-cfr']
  policy = np.asarray(solver.average_policy(state, kuhn()), np.float64)
  path = tmp_path / 'policy.json'
  policies.save_json(str(path), game, policy, game='kuhn', algorithm='deep-cfr')
  mapping, _ = policies.load_json(str(path))
  exported = policies.from_dict(game, mapping)
  os_game = bridge.load('kuhn_poker').game
  tabular = bridge.to_tabular_policy(game, exported, os_game)
  assert set(mapping) == set(tabular.state_lookup)
  ours = float(jaxcfr.exploitability(game, jnp.asarray(exported)))
  assert ours == pytest.approx(os_exploitability.exploitability(os_game, tabular), abs=1e-6)
  assert ours > 1e-4  # a network policy, not an equilibrium: the comparison is not trivial


# Command line.


@pytest.mark.slow  # the default suite's 10 minutes; Deep CFR's library tests stay
def test_cli_deep_cfr_json(tmp_path):
  out = tmp_path / 'deep.json'
  policy = tmp_path / 'deep.npz'
  code, _, err = run_cli(
    'solve', 'kuhn', '--algorithm', 'deep-cfr', '--iterations', '20', '--traversals', '128',
    '--advantage-steps', '20', '--strategy-steps', '100', '--memory', '20000', '--strategy-memory', '20000',
    '--eval-every', '10', '--json', str(out), '--policy-out', str(policy), '--quiet',
  )  # fmt: skip
  assert code == 0, err
  result = json.loads(out.read_text())
  assert result['algorithm'] == 'deep-cfr' and result['iterations'] == 20
  assert [p['iteration'] for p in result['curve']] == [10, 20]
  assert result['hyperparameters']['traversals'] == 128 and result['hyperparameters']['advantage_steps'] == 20
  assert result['trajectories'] == 20 * 128 * 2
  assert 0 < result['policy_seconds'] <= result['seconds']
  assert len(result['memory_size']) == 2 and min(result['memory_size']) > 0
  assert 0 < result['nash_conv'] < 1.0
  code, out_text, err = run_cli('evaluate', 'kuhn', '--policy', str(policy), '--json', '-')
  assert code == 0, err
  assert json.loads(out_text)['exploitability'] == pytest.approx(result['exploitability'], abs=1e-7)


@pytest.mark.parametrize(
  'args,message',
  [
    (['--algorithm', 'cfr', '--traversals', '10'], '--traversals does not apply to cfr (it is for deep-cfr'),
    (['--algorithm', 'sd-cfr', '--strategy-steps', '10'], '--strategy-steps does not apply to sd-cfr'),
    (['--algorithm', 'deep-cfr', '--advantage-layers', '64,x'], 'layer widths'),
    (['--algorithm', 'deep-cfr', '--advantage-batch-size', '0'], 'positive integer'),
    (['--algorithm', 'deep-cfr', '--devices', '2'], 'deep-cfr runs on one device'),
    (['--algorithm', 'sd-cfr', '--eval-every', '2', '--eval-every-seconds', '3'], 'not both'),
  ],
)
def test_cli_bad_deep_options(args, message):
  code, _, err = run_cli('solve', 'kuhn', *args)
  assert code == 2 and message in err, err
  assert 'Traceback' not in err


@pytest.mark.slow
def test_cli_resume_equals_an_uninterrupted_run(tmp_path):
  from jaxcfr import cli  # noqa: PLC0415

  common = ['solve', 'kuhn', '--algorithm', 'sd-cfr', '--traversals', '64', '--advantage-steps', '20']
  common += ['--memory', '5000', '--quiet']
  straight, resumed = tmp_path / 'straight.npz', tmp_path / 'resumed.npz'
  assert cli.main([*common, '--iterations', '6', '--policy-out', str(straight)]) == 0
  directory = str(tmp_path / 'ck')
  assert cli.main([*common, '--iterations', '3', '--checkpoint', directory]) == 0
  assert (
    cli.main(
      [*common, '--iterations', '6', '--checkpoint', directory, '--resume', '--policy-out', str(resumed)]
    )
    == 0
  )
  a, b = jaxcfr.load_policy(str(straight)), jaxcfr.load_policy(str(resumed))
  np.testing.assert_array_equal(a.probabilities, b.probabilities)
  code, _, err = run_cli(
    *common, '--iterations', '9', '--checkpoint', directory, '--resume', '--traversals', '32'
  )
  assert code == 2 and 'belongs to another run' in err, err


def test_cli_help_states_the_library_defaults():
  from jaxcfr import cli  # noqa: PLC0415

  parser = cli.build_parser()
  solve = next(a for a in parser._subparsers._group_actions[0].choices.values() if a.prog.endswith('solve'))
  helps = {action.dest: action.help for action in solve._actions}
  for name in ('deep-cfr', 'sd-cfr'):
    for parameter in algorithms.REGISTRY[name].hyperparameters:
      value = parameter.default
      text = helps[parameter.name]
      if isinstance(value, bool):
        assert name in text
      elif value is None:
        assert 'default off' in text, parameter.name
      else:
        assert f'default {parameter.shown()}' in text, (parameter.name, text)
