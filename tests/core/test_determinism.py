"""Sampled solvers are deterministic by construction on every backend: lowered for a GPU, their
programs hold no float scatter-add (which a GPU runs with atomics, in a varying order; a CPU runs
it in order), and `tree.sorted_segment_sum`, which replaces it there, sums like a plain loop."""

import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conftest import compiled

import jaxcfr
from jaxcfr import deep_cfr, tree


def gpu_program(function, *args) -> str:
  """The StableHLO text of `function(*args)` lowered for CUDA GPUs (no GPU needed)."""
  return jax.export.export(jax.jit(function), platforms=['cuda'])(*args).mlir_module()


def float_scatter_adds(text: str) -> int:
  """How many scatters of the StableHLO `text` add floats (the nondeterministic kind on GPUs)."""
  count = 0
  lines = text.splitlines()
  for i, line in enumerate(lines):
    if 'stablehlo.scatter' in line:
      body = ' '.join(lines[i + 1 : i + 4])
      if re.search(r'stablehlo\.add', body) and re.search(r'tensor<(b?f|complex)', body):
        count += 1
  return count


def test_the_check_sees_a_scatter_add():
  text = (
    jax.jit(lambda v, r: jax.ops.segment_sum(v, r, 4)).lower(jnp.ones(6), jnp.zeros(6, jnp.int32)).as_text()
  )
  assert float_scatter_adds(text) == 1


@pytest.mark.parametrize('name', ['es-mccfr', 'os-mccfr', 'deep-cfr', 'sd-cfr'])
def test_sampled_updates_hold_no_float_scatter_add(name):
  game = compiled('kuhn', dtype='float32')
  small = {'batch_size': 64} if 'mccfr' in name else {'traversals': 64, 'advantage_capacity': 1024}
  solver = jaxcfr.make_solver(name, **small)
  state = solver.init(game, jax.random.key(0))
  assert float_scatter_adds(gpu_program(solver.update, state, game)) == 0
  assert float_scatter_adds(jax.jit(solver.update).lower(state, game).as_text()) > 0  # on a CPU: in order


def test_deep_cfr_average_policy_holds_no_float_scatter_add():
  """Deep CFR's average policy trains the strategy networks on the strategy reservoirs: on a GPU
  their minibatch gradients and reservoir sums are sorted sums too (a CPU keeps its scatter-adds)."""
  game = compiled('kuhn', dtype='float32')
  solver = jaxcfr.make_solver('deep-cfr', traversals=64, advantage_capacity=1024, strategy_capacity=1024)
  state = jax.jit(solver.update)(solver.init(game, jax.random.key(0)), game)
  assert float_scatter_adds(gpu_program(solver.average_policy, state, game)) == 0
  assert float_scatter_adds(jax.jit(solver.average_policy).lower(state, game).as_text()) > 0


def test_deep_cfr_minibatch_gradient_holds_no_float_scatter_add():
  """The gradient of gathering network rows would be a scatter-add; `_take_rows` sums it in order."""
  game = compiled('kuhn', dtype='float32')
  params = deep_cfr.mlp_init(jax.random.key(0), (game.num_features, 8, game.num_actions))
  buffer = deep_cfr.reservoir_init(64, game.num_actions, game.num_infosets)
  index = jnp.arange(32)  # more items than infosets: the gather path

  def loss(params):
    return deep_cfr.sample_loss(params, game, buffer, index, deep_cfr.advantage_loss)

  assert float_scatter_adds(gpu_program(jax.grad(loss), params)) == 0


@pytest.mark.parametrize('segment_sum', [tree.segment_sum, tree.sorted_segment_sum])
def test_segment_sum_equals_a_loop(segment_sum):
  rng = np.random.default_rng(0)
  for size, segments in [(1, 3), (200, 7), (300, 40)]:
    rows = rng.integers(0, segments + 2, size).astype(np.int32)  # some past the end: dropped
    values = rng.normal(size=(size, 3))
    expected = np.zeros((segments, 3))
    for row, value in zip(rows, values, strict=True):
      if row < segments:
        expected[row] += value
    got = jax.jit(segment_sum, static_argnums=2)(values, rows, segments)
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-12)
  empty = segment_sum(jnp.zeros((0, 2)), jnp.zeros((0,), jnp.int32), 3)
  np.testing.assert_array_equal(empty, np.zeros((3, 2)))


@pytest.mark.slow
@pytest.mark.parametrize('name', ['es-mccfr', 'os-mccfr'])
def test_the_gpu_summation_gives_the_cpu_results(name, monkeypatch):
  """MCCFR with the sorted sums a GPU runs (here on the CPU) equals the scatter-add's results
  up to float rounding, and repeats exactly."""
  game = compiled('kuhn', dtype='float64')
  run = jax.jit(jaxcfr.run, static_argnums=(0, 3))

  def solve():
    solver = jaxcfr.make_solver(name, batch_size=64)
    return run(solver, solver.init(game, jax.random.key(1)), game, 20)

  reference = solve()
  monkeypatch.setattr(tree, 'segment_sum', tree.sorted_segment_sum)
  first, second = solve(), solve()
  for field in ('cumulative_regret', 'cumulative_policy'):
    np.testing.assert_allclose(getattr(first, field), getattr(reference, field), rtol=1e-9, atol=1e-9)
    np.testing.assert_array_equal(getattr(first, field), getattr(second, field))


@pytest.mark.slow
@pytest.mark.parametrize('name', ['deep-cfr', 'sd-cfr'])
def test_deep_cfr_with_the_gpu_summation_gives_the_cpu_results(name, monkeypatch):
  """Deep CFR (traversals, reservoirs, network training, the average policy) with the sorted sums
  a GPU runs, here on the CPU: within float rounding of the scatter-add's results (measured:
  2e-6 on the networks' parameters after 5 iterations), and the same bits when run again."""
  game = compiled('kuhn', dtype='float32')

  small = {'traversals': 64, 'advantage_capacity': 1024, 'advantage_steps': 20}
  if name == 'deep-cfr':
    small.update(strategy_capacity=1024, strategy_steps=50)

  def solve():  # a new solver each time: its programs are traced again, with the sums in force
    solver = jaxcfr.make_solver(name, **small)
    state = jax.jit(jaxcfr.run, static_argnums=(0, 3))(solver, solver.init(game, jax.random.key(1)), game, 5)
    leaves = [
      leaf for leaf in jax.tree.leaves(state) if not jax.dtypes.issubdtype(leaf.dtype, jax.dtypes.prng_key)
    ]
    return [*leaves, jax.jit(solver.average_policy)(state, game)]

  reference = solve()
  monkeypatch.setattr(tree, 'segment_sum', tree.sorted_segment_sum)
  first, second = solve(), solve()
  for ours, again, theirs in zip(first, second, reference, strict=True):
    np.testing.assert_array_equal(ours, again)
    np.testing.assert_allclose(ours, theirs, rtol=0, atol=1e-4)
  assert np.abs(np.asarray(first[-1]) - 0.5).max() > 0.01  # the policy learned something
