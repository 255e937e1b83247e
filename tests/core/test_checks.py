"""The messages a user gets for a policy, player or state that does not fit
the game, eagerly and under `jit` alike (shapes are static, so the checks run
while tracing), and the evaluation functions' own jit."""

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from absl.testing import parameterized
from conftest import compiled

import jaxcfr
from jaxcfr import checks, evaluation, solvers

LEDUC_NEEDS = 'but leduc needs (936, 3) ([num_infosets, num_actions])'


def _uniform(game, dtype=None):
  """`[I, A]` uniform over legal actions."""
  return solvers.normalize_policy(jnp.ones(game.legal_mask.shape, dtype or game.dtype), game.legal_mask)


# Every public evaluation function, as (name, fn(game, policy)).
ENTRY_POINTS = [
  ('exploitability', jaxcfr.exploitability),
  ('nash_conv', jaxcfr.nash_conv),
  ('expected_values', jaxcfr.expected_values),
  ('best_response_values', jaxcfr.best_response_values),
  ('best_response_value', lambda game, policy: jaxcfr.best_response_value(game, policy, 1)),
  ('best_response_policy', lambda game, policy: jaxcfr.best_response_policy(game, policy, 0)),
]


class PolicyChecks(chex.TestCase):
  @chex.variants(with_jit=True, without_jit=True)
  @parameterized.named_parameters(*ENTRY_POINTS)
  def test_kuhn_policy_on_leduc(self, evaluate):
    kuhn, leduc = compiled('kuhn'), compiled('leduc')
    with pytest.raises(checks.CheckError) as error:
      self.variant(evaluate)(leduc, _uniform(kuhn))
    assert str(error.value) == f'policy has shape (12, 2) {LEDUC_NEEDS}'

  @chex.variants(with_jit=True, without_jit=True)
  def test_one_action_short(self):
    leduc = compiled('leduc')
    with pytest.raises(checks.CheckError) as error:
      self.variant(jaxcfr.exploitability)(leduc, _uniform(leduc)[:, :-1])  # [I, A - 1]
    assert str(error.value) == f'policy has shape (936, 2) {LEDUC_NEEDS}'

  @chex.variants(with_jit=True, without_jit=True)
  def test_wrong_rank(self):
    leduc = compiled('leduc')
    for policy, shape in [(_uniform(leduc)[:, 0], '(936,)'), (jnp.float32(0.5), '()')]:
      with pytest.raises(checks.CheckError) as error:
        self.variant(jaxcfr.nash_conv)(leduc, policy)
      assert str(error.value) == f'policy has shape {shape} {LEDUC_NEEDS}'

  @chex.variants(with_jit=True, without_jit=True)
  def test_transposed_and_batched_policies_get_a_hint(self):
    leduc = compiled('leduc')
    policy = _uniform(leduc)
    with pytest.raises(checks.CheckError) as error:
      self.variant(jaxcfr.exploitability)(leduc, policy.T)
    assert str(error.value) == f'policy has shape (3, 936) {LEDUC_NEEDS}; transposed?'
    with pytest.raises(checks.CheckError) as error:
      self.variant(jaxcfr.exploitability)(leduc, jnp.stack([policy, policy]))
    assert str(error.value) == (
      f'policy has shape (2, 936, 3) {LEDUC_NEEDS}; a batch of policies? jax.vmap over the leading axes'
    )

  @chex.variants(with_jit=True, without_jit=True)
  def test_integer_policy_is_refused(self):
    kuhn = compiled('kuhn')
    with pytest.raises(checks.CheckError) as error:
      self.variant(jaxcfr.exploitability)(kuhn, kuhn.legal_mask.astype(jnp.int32))
    assert str(error.value) == 'policy has dtype int32; a policy holds probabilities: pass a float array'

  @chex.variants(with_jit=True, without_jit=True)
  def test_other_float_dtypes_are_cast_to_the_games(self):
    game32, game64 = compiled('kuhn', 'float32'), compiled('kuhn')
    value = self.variant(jaxcfr.exploitability)(game32, _uniform(game64, jnp.float64))
    chex.assert_type(value, jnp.float32)
    np.testing.assert_allclose(value, jaxcfr.exploitability(game32, _uniform(game32)))
    chex.assert_type(self.variant(jaxcfr.expected_values)(game64, _uniform(game32)), jnp.float64)

  @chex.variants(with_jit=True, without_jit=True)
  def test_a_check_error_is_a_value_error(self):
    with pytest.raises(ValueError, match=r'policy has shape \(12, 2\)'):
      self.variant(jaxcfr.exploitability)(compiled('leduc'), _uniform(compiled('kuhn')))


def test_player_out_of_range():
  leduc = compiled('leduc')
  with pytest.raises(checks.CheckError) as error:
    jaxcfr.best_response_value(leduc, _uniform(leduc), 2)
  assert str(error.value) == 'player 2 is out of range: leduc has players 0 to 1'


def test_traced_player_is_refused():
  kuhn = compiled('kuhn')
  with pytest.raises(checks.CheckError) as error:
    jax.jit(jaxcfr.best_response_policy)(kuhn, _uniform(kuhn), 0)
  assert str(error.value) == (
    'player must be a Python int from 0 to 1, got a traced value '
    "(make it static: jax.jit(..., static_argnames='player'))"
  )
  static = jax.jit(jaxcfr.best_response_value, static_argnames='player')
  np.testing.assert_allclose(
    static(kuhn, _uniform(kuhn), player=1), jaxcfr.best_response_value(kuhn, _uniform(kuhn), 1)
  )


def test_nested_lists_and_numpy_arrays_are_policies():
  kuhn = compiled('kuhn')
  policy = np.asarray(_uniform(kuhn))
  expected = jaxcfr.exploitability(kuhn, policy)
  np.testing.assert_allclose(jaxcfr.exploitability(kuhn, policy.tolist()), expected)
  np.testing.assert_allclose(expected, 11 / 24)  # uniform Kuhn: NashConv 11/12


class StateChecks(chex.TestCase):
  @chex.variants(with_jit=True, without_jit=True)
  def test_state_of_another_game(self):
    solver = jaxcfr.cfr_plus()
    like = jax.eval_shape(solver.init, compiled('leduc'))
    with pytest.raises(checks.CheckError) as error:
      self.variant(lambda state: checks.check_state(state, like))(solver.init(compiled('kuhn')))
    assert str(error.value) == (
      "state.cumulative_regret has shape (12, 2) but the solver's state for this game has (936, 3) "
      '(a state of another game?)'
    )

  @chex.variants(with_jit=True, without_jit=True)
  def test_state_of_another_dtype(self):
    solver = jaxcfr.cfr_plus()
    like = jax.eval_shape(solver.init, compiled('kuhn'))
    with pytest.raises(checks.CheckError) as error:
      self.variant(lambda state: checks.check_state(state, like))(solver.init(compiled('kuhn', 'float32')))
    assert str(error.value) == (
      "state.cumulative_regret has dtype float32 but the solver's state for this game has float64 "
      '(a game compiled with another dtype?)'
    )

  @chex.variants(with_jit=True, without_jit=True)
  def test_matching_state_passes(self):
    solver, kuhn = jaxcfr.cfr_plus(), compiled('kuhn')
    state = solver.init(kuhn)
    self.variant(lambda state: checks.check_state(state, jax.eval_shape(solver.init, kuhn)))(state)
    checks.check_state(state, solver.init(kuhn))  # arrays serve as `like` too


def test_state_of_another_solver():
  kuhn = compiled('kuhn')
  sampled = jaxcfr.mccfr.es_mccfr().init(kuhn, jax.random.key(0))
  with pytest.raises(checks.CheckError) as error:
    checks.check_state(sampled, jax.eval_shape(jaxcfr.cfr_plus().init, kuhn))
  assert str(error.value) == (
    "state is a MCCFRState but the solver's state is a CFRState (a state of another solver?)"
  )


def test_state_missing_a_field():
  like = {'regret': jax.ShapeDtypeStruct((12, 2), jnp.float32), 'step': jax.ShapeDtypeStruct((), jnp.int32)}
  with pytest.raises(checks.CheckError) as error:
    checks.check_state({'regret': jnp.zeros((12, 2), jnp.float32)}, like, what='train_state')
  assert str(error.value) == "train_state['step'] is missing: the solver's state has it"


def test_state_iteration_of_another_integer_type():
  kuhn, solver = compiled('kuhn'), jaxcfr.cfr_plus()
  state = solver.init(kuhn)
  with pytest.raises(checks.CheckError) as error:
    checks.check_state(state._replace(iteration=state.iteration.astype(jnp.int64)), solver.init(kuhn))
  assert str(error.value) == "state.iteration has dtype int64 but the solver's state for this game has int32"


# The evaluation functions jit themselves: quick eagerly, and they nest under a caller's jit and vmap.


def test_evaluation_nests_under_jit_and_vmap():
  leduc = compiled('leduc')
  keys = jax.random.split(jax.random.key(0), 3)
  weights = jax.vmap(lambda k: jax.random.uniform(k, leduc.legal_mask.shape, leduc.dtype))(keys)
  policies = jax.vmap(solvers.normalize_policy, in_axes=(0, None))(weights, leduc.legal_mask)  # [3, I, A]
  eager = np.stack([jaxcfr.exploitability(leduc, p) for p in policies])
  np.testing.assert_allclose(jax.vmap(jaxcfr.exploitability, in_axes=(None, 0))(leduc, policies), eager)
  np.testing.assert_allclose(
    jax.jit(jax.vmap(jaxcfr.nash_conv, in_axes=(None, 0)))(leduc, policies), 2 * eager, rtol=1e-12
  )
  closed_over = jax.jit(lambda: jaxcfr.best_response_values(leduc, policies[0]))()
  np.testing.assert_allclose(closed_over, jaxcfr.best_response_values(leduc, policies[0]))


def test_an_eager_evaluation_compiles_once_per_game_shape():
  kuhn = compiled('kuhn')
  policy = _uniform(kuhn)
  jaxcfr.nash_conv(kuhn, policy)
  before = evaluation._nash_conv._cache_size()
  for seed in range(3):
    noise = jax.random.uniform(jax.random.key(seed), policy.shape, policy.dtype)
    jaxcfr.nash_conv(kuhn, solvers.normalize_policy(policy + noise, kuhn.legal_mask))
  jaxcfr.nash_conv(kuhn.replace(utility=tuple(2 * u for u in kuhn.utility)), policy)  # other payoffs
  assert evaluation._nash_conv._cache_size() == before


def test_evaluation_vmaps_over_games():
  kuhn = compiled('kuhn')
  games = [kuhn.replace(utility=tuple(u * scale for u in kuhn.utility)) for scale in (1.0, 3.0)]
  stacked = jax.tree.map(lambda *leaves: jnp.stack(leaves), *games)
  policy = _uniform(kuhn)
  batched = jax.vmap(jaxcfr.exploitability, in_axes=(0, None))(stacked, policy)
  np.testing.assert_allclose(batched, [jaxcfr.exploitability(game, policy) for game in games], rtol=1e-12)
