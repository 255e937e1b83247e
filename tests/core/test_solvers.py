"""The CFR family: known values, a NumPy reference, OpenSpiel's C++ solvers,
invariants with and without jit and under vmap, vmap over games and
hyper-parameters, the solver protocol's names and hyper-parameters."""

import functools

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from absl.testing import parameterized
from conftest import FULL_WIDTH, compiled, solve
from reference import ReferenceCFR

import jaxcfr
from jaxcfr import protocol, solvers

KUHN_VALUE = -1 / 18
LEDUC_VALUE = -0.085606

# (algorithm, iterations, exploitability bound) on Kuhn and Leduc, float64; measured values
# (Kuhn: 9.4e-4, 8.7e-5, 9.4e-5, 1.5e-4, 2.4e-8, 1.1e-4, 2.5e-13;
# Leduc: 3.6e-2, 2.3e-3, 1.2e-2, 1.2e-3, 3.0e-3, 1.4e-3, 3.2e-3) plus margin. Leduc's discounted
# runs part ways after about 30 iterations wherever regrets that are zero in exact arithmetic
# round to +-1e-17 differently (regret matching then plays such an action alone): DCFR after 300
# iterations reaches 8.7e-4 over histories, 1.06e-3 over sequences with one padded table per
# level and 1.24e-3 with the bucketed tables, all correct runs; the bounds cover that spread.
KUHN_TARGETS = [
  ('cfr', 1000, 1.2e-3),
  ('cfr+', 1000, 1e-4),
  ('lcfr', 1000, 1.2e-4),
  ('dcfr', 1000, 2e-4),
  ('pcfr+', 1000, 1e-7),
  ('dcfr+', 1000, 1.4e-4),
  ('pdcfr+', 1000, 1e-11),
]
LEDUC_TARGETS = [
  ('cfr', 300, 4e-2),
  ('cfr+', 300, 2.6e-3),
  ('lcfr', 300, 1.8e-2),
  ('dcfr', 300, 1.5e-3),
  ('pcfr+', 300, 3.5e-3),
  ('dcfr+', 300, 1.7e-3),
  ('pdcfr+', 300, 3.7e-3),
]

# The rules that clip regrets at 0 (regret matching+).
RM_PLUS = ('cfr+', 'pcfr+', 'dcfr+', 'pdcfr+')


@pytest.mark.parametrize('algorithm,iterations,bound', KUHN_TARGETS)
def test_kuhn_converges_to_known_value(algorithm, iterations, bound):
  game = compiled('kuhn')
  state = solve(FULL_WIDTH[algorithm](), game, iterations)
  policy = jaxcfr.average_policy(state, game)
  assert float(jaxcfr.exploitability(game, policy)) < bound
  assert float(jaxcfr.expected_values(game, policy)[0]) == pytest.approx(KUHN_VALUE, abs=2e-3)


@pytest.mark.parametrize('algorithm,iterations,bound', LEDUC_TARGETS)
def test_leduc_converges_to_known_value(algorithm, iterations, bound):
  game = compiled('leduc')
  state = solve(FULL_WIDTH[algorithm](), game, iterations)
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


REFERENCE_ITERATIONS = 6


@functools.cache
def _reference(spec: str, algorithm: str, alternating: bool) -> ReferenceCFR:
  """The recursion after `REFERENCE_ITERATIONS`, shared by both regret paths."""
  reference = ReferenceCFR(jaxcfr.load_game(spec), algorithm, alternating=alternating)
  for _ in range(REFERENCE_ITERATIONS):
    reference.iterate()
  return reference


# Both regret computations, over sequences (the default) and over histories. Three-player Kuhn
# has infosets whose actions tie exactly: the recursion and the history passes sum the same
# terms in the same order and both get a regret of exactly 0, while the sums over sequences
# round to +-1e-17, which regret matching turns into a different policy. There the sequence
# path is held to the history path call by call (`test_sequence_form.py`), not over iterations.
# Two-player Kuhn has such a tie under alternating PDCFR+ (infoset '1p' at iteration 3: betting
# and checking are worth the same against the pure policies the prediction has produced).
EXACT_TIES = {('pdcfr+', True, 'kuhn', 'sequences')}


REFERENCE_CASES = [
  ('kuhn', 'sequences'),
  ('kuhn', 'histories'),
  ('kuhn(players=3)', 'histories'),
  ('leduc(suit_isomorphism=True)', 'sequences'),
  ('leduc(suit_isomorphism=True)', 'histories'),
]
# Simultaneous updates run by default on the two games whose paths differ most (three players on
# histories; Leduc on sequences); every other simultaneous case runs with -m slow.
SIMULTANEOUS_BY_DEFAULT = {REFERENCE_CASES[2], REFERENCE_CASES[3]}


@pytest.mark.parametrize('algorithm', list(FULL_WIDTH))
@pytest.mark.parametrize(
  'alternating, spec, path',
  [(True, *case) for case in REFERENCE_CASES]
  + [
    pytest.param(False, *case, marks=() if case in SIMULTANEOUS_BY_DEFAULT else pytest.mark.slow)
    for case in REFERENCE_CASES
  ],
)
def test_matches_numpy_reference(algorithm, alternating, spec, path):
  """Regrets, current and average policies equal a textbook recursion for 6 iterations."""
  if (algorithm, alternating, spec, path) in EXACT_TIES:
    pytest.skip('an exact tie that the sums over sequences round (see EXACT_TIES)')
  game = compiled(spec)
  assert game.sequence_form is not None
  if path == 'histories':
    game = game.replace(sequence_form=None)
  solver = FULL_WIDTH[algorithm](alternating=alternating)
  reference = _reference(spec, algorithm, alternating)
  state = solver.init(game)
  update = jax.jit(solver.update)
  for _ in range(REFERENCE_ITERATIONS):
    state = update(state, game)
  current = np.asarray(solver.current_policy(state, game))
  average = np.asarray(solver.average_policy(state, game))
  for row, key in enumerate(game.infoset_keys):
    np.testing.assert_allclose(
      np.asarray(state.cumulative_regret[row]), reference.next_regret(key), atol=1e-10
    )
    np.testing.assert_allclose(current[row], reference.policy(key), atol=1e-10)
    np.testing.assert_allclose(average[row], reference.average_policy(key), atol=1e-10)


@pytest.mark.parametrize(
  'spec, os_spec, algorithm',
  [
    ('kuhn', 'kuhn_poker', 'cfr'),
    ('kuhn', 'kuhn_poker', 'cfr+'),
    ('leduc', 'leduc_poker', 'cfr+'),
    pytest.param('leduc', 'leduc_poker', 'cfr', marks=pytest.mark.slow),  # CFR+ covers Leduc by default
  ],
)
def test_curves_equal_openspiel_cpp(spec, os_spec, algorithm):
  """Iteration for iteration, float64: our exploitability curve is OpenSpiel's."""
  pyspiel = pytest.importorskip('pyspiel')
  os_game = pyspiel.load_game(os_spec)
  os_solver = {'cfr': pyspiel.CFRSolver, 'cfr+': pyspiel.CFRPlusSolver}[algorithm](os_game)
  game = compiled(spec)
  solver = FULL_WIDTH[algorithm]()
  state = solver.init(game)
  update = jax.jit(solver.update)
  exploitability = jax.jit(lambda s, g: jaxcfr.exploitability(g, jaxcfr.average_policy(s, g)))
  for _ in range(50):
    os_solver.evaluate_and_update_policy()
    state = update(state, game)
    expected = pyspiel.exploitability(os_game, os_solver.average_policy())
    assert float(exploitability(state, game)) == pytest.approx(expected, abs=1e-9)


def _assert_policy(policy, game, name):
  """`policy` is a distribution over the legal actions of every infoset."""
  policy, legal = np.asarray(policy), np.asarray(game.legal_mask)
  np.testing.assert_allclose(policy.sum(-1), 1.0, atol=1e-12, err_msg=name)
  assert np.all(policy[~legal] == 0), name
  assert np.all(policy >= 0), name


class InvariantsTest(chex.TestCase):
  """Every rule on Leduc, iteration by iteration, compiled and op by op."""

  @chex.variants(with_jit=True, without_jit=True)
  @parameterized.named_parameters((name, name) for name in FULL_WIDTH)
  def test_policies_sum_to_one_and_rm_plus_regrets_stay_non_negative(self, name):
    game = compiled('leduc')
    solver = FULL_WIDTH[name]()
    update = self.variant(solver.update)
    policies = self.variant(
      lambda state, game: (solver.current_policy(state, game), solver.average_policy(state, game))
    )
    state = solver.init(game)
    for _ in range(20):
      state = update(state, game)
      for policy in policies(state, game):
        _assert_policy(policy, game, name)
      if name in RM_PLUS:
        assert float(state.cumulative_regret.min()) >= 0, name
    assert float(state.cumulative_regret.max()) > 0, name


def _stack(trees):
  return jax.tree.map(lambda *leaves: jnp.stack(leaves), *trees)


def _row(tree, index):
  return jax.tree.map(lambda x: x[index], tree)


def test_vmap_over_games_equals_a_python_loop():
  """Games of one compiled shape (Kuhn with different stakes) solve as a batch."""
  base = compiled('kuhn')
  games = [base.replace(utility=tuple(u * scale for u in base.utility)) for scale in (1.0, 2.0, 0.5)]
  solver = jaxcfr.cfr_plus()
  batched = jax.jit(jax.vmap(lambda g: jaxcfr.run(solver, solver.init(g), g, 50)))(_stack(games))
  for index, game in enumerate(games):
    alone = solve(solver, game, 50)
    chex.assert_trees_all_close(_row(batched, index), alone, atol=1e-12, rtol=1e-7)


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
  nash_conv = jax.jit(lambda s, g: jaxcfr.nash_conv(g, jaxcfr.average_policy(s, g)))
  for index, game in enumerate(games):
    assert float(nash_conv(_row(batched, index), game)) < 0.05


# name -> (hyper-parameter names, grid of values); the first row is the factory's default.
HYPERPARAMETER_GRIDS = {
  'dcfr': (('alpha', 'beta', 'gamma'), [[1.5, 0.0, 2.0], [1.0, 1.0, 1.0], [2.0, 0.5, 3.0], [3.0, -1.0, 0.0]]),
  'dcfr+': (('alpha', 'gamma'), [[1.5, 4.0], [1.0, 1.0], [3.0, 0.0]]),
  'pdcfr+': (('alpha', 'gamma'), [[2.3, 5.0], [1.0, 2.0], [0.0, 0.0]]),
}


@pytest.mark.parametrize('name', list(HYPERPARAMETER_GRIDS))
def test_vmap_over_hyperparameters_equals_a_python_loop(name):
  """Traced hyper-parameters in a batch: each row is the solver built from Python numbers (both
  compiled: run op by op, outside `jit`, the sums round differently by 1e-17, which 100 iterations
  of regret matching+ can amplify where regrets are zero up to rounding), and the invariants
  hold in every row."""
  game = compiled('kuhn')
  names, grid = HYPERPARAMETER_GRIDS[name]

  def solve_with(*values):
    solver = FULL_WIDTH[name](**dict(zip(names, values, strict=True)))
    state = jaxcfr.run(solver, solver.init(game), game, 100)
    policies = solver.current_policy(state, game), solver.average_policy(state, game)
    return state, policies, jaxcfr.exploitability(game, policies[1])

  batched = jax.jit(jax.vmap(solve_with))(*jnp.asarray(grid).T)
  for row, values in enumerate(grid):
    state, policies, exploitability = _row(batched, row)
    single = jax.jit(lambda values=values: solve_with(*values))()  # the numbers as constants
    chex.assert_trees_all_close((state, policies, exploitability), single, atol=1e-12, rtol=1e-7)
    for policy in policies:
      _assert_policy(policy, game, f'{name}{values}')
    if name in RM_PLUS:
      assert float(state.cumulative_regret.min()) >= 0


def test_dcfr_with_alpha_beta_gamma_one_is_linear_cfr_up_to_scale():
  """DCFR(1, 1, 1) discounts regrets by t / (t + 1): the same policies as LCFR."""
  game = compiled('leduc(suit_isomorphism=True)')
  linear = solve(jaxcfr.linear_cfr(), game, 30)
  discounted = solve(jaxcfr.dcfr(1.0, 1.0, 1.0), game, 30)
  chex.assert_trees_all_close(
    jaxcfr.average_policy(linear, game), jaxcfr.average_policy(discounted, game), atol=1e-10, rtol=1e-7
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
  'name, kwargs',
  [
    ('dcfr', {'alpha': -1.0}),
    ('dcfr', {'gamma': -0.5}),
    ('dcfr', {'alpha': float('nan')}),
    ('dcfr', {'beta': float('inf')}),
    ('dcfr+', {'alpha': -1.0}),
    ('dcfr+', {'gamma': float('inf')}),
    ('pdcfr+', {'alpha': float('nan')}),
    ('pdcfr+', {'gamma': -0.5}),
  ],
)
def test_out_of_range_hyperparameters_are_rejected(name, kwargs):
  with pytest.raises(ValueError, match=next(iter(kwargs))):
    FULL_WIDTH[name](**kwargs)


DEFAULT_HYPERPARAMETERS = {
  'cfr': {'alternating': True},
  'cfr+': {'alternating': True},
  'lcfr': {'alternating': True},
  'dcfr': {'alternating': True, 'alpha': 1.5, 'beta': 0.0, 'gamma': 2.0},
  'pcfr+': {'alternating': True},
  'dcfr+': {'alternating': True, 'alpha': 1.5, 'gamma': 4.0},
  'pdcfr+': {'alternating': True, 'alpha': 2.3, 'gamma': 5.0},
}


@pytest.mark.parametrize('name', list(FULL_WIDTH))
def test_every_factory_returns_the_protocol_solver(name):
  solver = FULL_WIDTH[name]()
  assert isinstance(solver, protocol.Solver)
  assert solver.name == name
  assert dict(solver.hyperparameters) == DEFAULT_HYPERPARAMETERS[name]
  assert dict(FULL_WIDTH[name](alternating=False).hyperparameters)['alternating'] is False
  assert solver.average_policy is solvers.average_policy
  assert not solver.costly_policy
  game = compiled('kuhn')
  chex.assert_trees_all_equal(solver.init(game), solver.init(game, jax.random.key(0)))


def test_solvers_exposes_the_protocol():
  assert solvers.Solver is protocol.Solver
  assert solvers.run is protocol.run
  assert set(DEFAULT_HYPERPARAMETERS) == set(FULL_WIDTH)


def test_a_bare_family_is_custom():
  solver = solvers.cfr_family(solvers.chain(solvers.accumulate(), solvers.predict()), 1.0, alternating=False)
  assert solver.name == 'custom'
  assert dict(solver.hyperparameters) == {'averaging_power': 1.0, 'alternating': False}


def _largest_instant_regret() -> solvers.RegretTransform:
  """A step with state of its own, `[I]`: the largest |r| each infoset has seen."""

  def update(cumulative, instant, largest, t):
    return cumulative, instant, jnp.maximum(largest, jnp.abs(instant).max(-1))

  return solvers.RegretTransform(lambda cumulative: jnp.zeros(cumulative.shape[:1], cumulative.dtype), update)


def test_a_rule_carries_its_own_state():
  """Each rule's state lives in `rule_state`, shaped by the rule alone; a new stateful step
  composes with the others and leaves their results untouched."""
  game = compiled('leduc(suit_isomorphism=True)')
  shape = game.legal_mask.shape
  assert solvers.cfr().init(game).rule_state == ()
  chex.assert_trees_all_equal(
    jaxcfr.pcfr_plus().init(game).rule_state, ((), (), jnp.zeros(shape, game.dtype))
  )
  chex.assert_trees_all_equal(
    solvers.pdcfr_plus().init(game).rule_state, ((), (), (), jnp.zeros(shape, game.dtype))
  )

  rule = solvers.chain(
    solvers.accumulate(), solvers.clip_negative(), _largest_instant_regret(), solvers.predict()
  )
  tracked = solve(solvers.cfr_family(rule, 2.0), game, 10)
  plain = solve(jaxcfr.pcfr_plus(), game, 10)
  chex.assert_trees_all_equal(tracked.cumulative_regret, plain.cumulative_regret)
  chex.assert_trees_all_equal(tracked.cumulative_policy, plain.cumulative_policy)
  chex.assert_trees_all_equal(tracked.rule_state[3], plain.rule_state[2])
  largest = tracked.rule_state[2]
  chex.assert_shape(largest, shape[:1])
  assert np.all(np.asarray(largest) >= np.abs(np.asarray(plain.rule_state[2])).max(-1))
  assert float(largest.min()) > 0
