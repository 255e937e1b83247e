"""The CFR family: known values, a NumPy reference, OpenSpiel's C++ solvers,
invariants, vmap over games and hyper-parameters."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conftest import compiled, solve
from reference import ReferenceCFR

import jaxcfr
from jaxcfr import solvers

KUHN_VALUE = -1 / 18
LEDUC_VALUE = -0.085606

# (algorithm, iterations, exploitability bound) on Kuhn and Leduc, float64; measured values
# (Kuhn: 9.4e-4, 8.7e-5, 9.4e-5, 1.5e-4, 2.4e-8; Leduc: 3.6e-2, 2.3e-3, 1.5e-2, 1.1e-3, 3.0e-3) plus margin.
KUHN_TARGETS = [
  ('cfr', 1000, 1.2e-3),
  ('cfr+', 1000, 1e-4),
  ('lcfr', 1000, 1.2e-4),
  ('dcfr', 1000, 2e-4),
  ('pcfr+', 1000, 1e-7),
]
LEDUC_TARGETS = [
  ('cfr', 300, 4e-2),
  ('cfr+', 300, 2.6e-3),
  ('lcfr', 300, 1.8e-2),
  ('dcfr', 300, 1.2e-3),
  ('pcfr+', 300, 3.5e-3),
]


@pytest.mark.parametrize('algorithm,iterations,bound', KUHN_TARGETS)
def test_kuhn_converges_to_known_value(algorithm, iterations, bound):
  game = compiled('kuhn')
  state = solve(solvers.ALGORITHMS[algorithm](), game, iterations)
  policy = jaxcfr.average_policy(state, game)
  assert float(jaxcfr.exploitability(game, policy)) < bound
  assert float(jaxcfr.expected_values(game, policy)[0]) == pytest.approx(KUHN_VALUE, abs=2e-3)


@pytest.mark.parametrize('algorithm,iterations,bound', LEDUC_TARGETS)
def test_leduc_converges_to_known_value(algorithm, iterations, bound):
  game = compiled('leduc')
  state = solve(solvers.ALGORITHMS[algorithm](), game, iterations)
  policy = jaxcfr.average_policy(state, game)
  assert float(jaxcfr.exploitability(game, policy)) < bound
  assert float(jaxcfr.expected_values(game, policy)[0]) == pytest.approx(LEDUC_VALUE, abs=1e-2)


def test_kuhn_value_precisely_in_float32():
  """CFR+ after 2000 iterations: OpenSpiel's CFRPlusSolver is at 4.365e-5 there; PCFR+ far lower."""
  game = compiled('kuhn', 'float32')
  for solver, bound in ((jaxcfr.cfr_plus(), 4.5e-5), (jaxcfr.pcfr_plus(), 1e-7)):
    policy = jaxcfr.average_policy(solve(solver, game, 2000), game)
    assert float(jaxcfr.expected_values(game, policy)[0]) == pytest.approx(KUHN_VALUE, abs=1e-5)
    assert float(jaxcfr.exploitability(game, policy)) < bound


# Both regret computations, over sequences (the default) and over histories. Three-player Kuhn
# has infosets whose actions tie exactly: the recursion and the history passes sum the same
# terms in the same order and both get a regret of exactly 0, while the sums over sequences
# round to +-1e-17, which regret matching turns into a different policy. There the sequence
# path is held to the history path call by call (`test_sequence_form.py`), not over iterations.
@pytest.mark.parametrize('algorithm', list(solvers.ALGORITHMS))
@pytest.mark.parametrize('alternating', [True, False])
@pytest.mark.parametrize(
  'spec, path',
  [
    ('kuhn', 'sequences'),
    ('kuhn', 'histories'),
    ('kuhn(players=3)', 'histories'),
    ('leduc(suit_isomorphism=True)', 'sequences'),
    ('leduc(suit_isomorphism=True)', 'histories'),
  ],
)
def test_matches_numpy_reference(algorithm, alternating, spec, path):
  """Regrets and average policies equal a textbook recursion for 6 iterations."""
  game = compiled(spec)
  assert game.sequence_form is not None
  if path == 'histories':
    game = game.replace(sequence_form=None)
  solver = solvers.ALGORITHMS[algorithm](alternating=alternating)
  reference = ReferenceCFR(jaxcfr.load_game(spec), algorithm, alternating=alternating)
  state = solver.init(game)
  update = jax.jit(solver.update)
  for _ in range(6):
    state = update(state, game)
    reference.iterate()
  average = np.asarray(jaxcfr.average_policy(state, game))
  for row, key in enumerate(game.infoset_keys):
    np.testing.assert_allclose(np.asarray(state.cumulative_regret[row]), reference.regret[key], atol=1e-10)
    np.testing.assert_allclose(average[row], reference.average_policy(key), atol=1e-10)


@pytest.mark.parametrize('spec,os_spec', [('kuhn', 'kuhn_poker'), ('leduc', 'leduc_poker')])
@pytest.mark.parametrize('algorithm', ['cfr', 'cfr+'])
def test_curves_equal_openspiel_cpp(spec, os_spec, algorithm):
  """Iteration for iteration, float64: our exploitability curve is OpenSpiel's."""
  pyspiel = pytest.importorskip('pyspiel')
  os_game = pyspiel.load_game(os_spec)
  os_solver = {'cfr': pyspiel.CFRSolver, 'cfr+': pyspiel.CFRPlusSolver}[algorithm](os_game)
  game = compiled(spec)
  solver = solvers.ALGORITHMS[algorithm]()
  state = solver.init(game)
  update = jax.jit(solver.update)
  exploitability = jax.jit(lambda s, g: jaxcfr.exploitability(g, jaxcfr.average_policy(s, g)))
  for _ in range(50):
    os_solver.evaluate_and_update_policy()
    state = update(state, game)
    expected = pyspiel.exploitability(os_game, os_solver.average_policy())
    assert float(exploitability(state, game)) == pytest.approx(expected, abs=1e-9)


def test_policies_sum_to_one_over_legal_actions():
  game = compiled('leduc')
  for name, factory in solvers.ALGORITHMS.items():
    solver = factory()
    state = solve(solver, game, 7)
    for policy in (solver.current_policy(state, game), jaxcfr.average_policy(state, game)):
      policy = np.asarray(policy)
      legal = np.asarray(game.legal_mask)
      np.testing.assert_allclose(policy.sum(-1), 1.0, atol=1e-12, err_msg=name)
      assert np.all(policy[~legal] == 0), name
      assert np.all(policy >= 0), name


@pytest.mark.parametrize('factory', [jaxcfr.cfr_plus, jaxcfr.pcfr_plus])
def test_regret_matching_plus_keeps_regrets_non_negative(factory):
  game = compiled('leduc')
  solver = factory()
  state = solver.init(game)
  update = jax.jit(solver.update)
  for _ in range(20):
    state = update(state, game)
    assert float(state.cumulative_regret.min()) >= 0
  assert float(state.cumulative_regret.max()) > 0


def _stack(trees):
  return jax.tree.map(lambda *leaves: jnp.stack(leaves), *trees)


def test_vmap_over_games_equals_a_python_loop():
  """Games of one compiled shape (Kuhn with different stakes) solve as a batch."""
  base = compiled('kuhn')
  games = [base.replace(utility=tuple(u * scale for u in base.utility)) for scale in (1.0, 2.0, 0.5)]
  solver = jaxcfr.cfr_plus()
  batched = jax.jit(jax.vmap(lambda g: jaxcfr.run(solver, solver.init(g), g, 50)))(_stack(games))
  for index, game in enumerate(games):
    alone = solve(solver, game, 50)
    np.testing.assert_allclose(batched.cumulative_policy[index], alone.cumulative_policy, atol=1e-12)
    np.testing.assert_allclose(batched.cumulative_regret[index], alone.cumulative_regret, atol=1e-12)


def test_vmap_over_random_matrix_games():
  base = compiled('matrix(payoffs=[[1,2,3],[4,5,6]])')
  key = jax.random.key(0)
  payoffs = jax.random.normal(key, (4, 2, 3), jnp.float64)
  games = [
    base.replace(utility=(base.utility[0], base.utility[1], jnp.stack([p.reshape(-1), -p.reshape(-1)], -1)))
    for p in payoffs
  ]
  solver = jaxcfr.dcfr()
  batched = jax.vmap(lambda g: jaxcfr.run(solver, solver.init(g), g, 100))(_stack(games))
  for index, game in enumerate(games):
    policy = jaxcfr.average_policy(jax.tree.map(lambda x, i=index: x[i], batched), game)
    assert float(jaxcfr.nash_conv(game, policy)) < 0.05


def test_vmap_over_dcfr_hyperparameters_equals_a_python_loop():
  game = compiled('kuhn')
  grid = jnp.array([[1.5, 0.0, 2.0], [1.0, 1.0, 1.0], [2.0, 0.5, 3.0], [3.0, -1.0, 0.0]])

  def exploitability_after(alpha, beta, gamma):
    solver = jaxcfr.dcfr(alpha, beta, gamma)
    state = jaxcfr.run(solver, solver.init(game), game, 100)
    return jaxcfr.exploitability(game, jaxcfr.average_policy(state, game))

  batched = jax.jit(jax.vmap(exploitability_after))(grid[:, 0], grid[:, 1], grid[:, 2])
  for row, (alpha, beta, gamma) in enumerate(grid.tolist()):
    assert float(batched[row]) == pytest.approx(float(exploitability_after(alpha, beta, gamma)), abs=1e-12)


def test_dcfr_with_alpha_beta_gamma_one_is_linear_cfr_up_to_scale():
  """DCFR(1, 1, 1) discounts regrets by t / (t + 1): the same policies as LCFR."""
  game = compiled('leduc(suit_isomorphism=True)')
  linear = solve(jaxcfr.linear_cfr(), game, 30)
  discounted = solve(jaxcfr.dcfr(1.0, 1.0, 1.0), game, 30)
  np.testing.assert_allclose(
    jaxcfr.average_policy(linear, game), jaxcfr.average_policy(discounted, game), atol=1e-10
  )


def test_update_compiles_once():
  game = compiled('kuhn')
  traces = []
  solver = jaxcfr.cfr_plus()

  def update(state, g):
    traces.append(1)
    return solver.update(state, g)

  update = jax.jit(update)
  state = solver.init(game)
  for _ in range(5):
    state = update(state, game)
  run = jax.jit(lambda s, g, n: jaxcfr.run(solver, s, g, n))
  for n in (1, 5, 17):
    state = run(state, game, n)
  assert len(traces) == 1
  assert run._cache_size() == 1


@pytest.mark.parametrize(
  'kwargs', [{'alpha': -1.0}, {'gamma': -0.5}, {'alpha': float('nan')}, {'beta': float('inf')}]
)
def test_out_of_range_hyperparameters_are_rejected(kwargs):
  with pytest.raises(ValueError, match=next(iter(kwargs))):
    jaxcfr.dcfr(**kwargs)
