"""Regrets over sequences (`sequence_form`) against the passes over histories,
and the fallbacks for games it does not cover."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conftest import FULL_WIDTH, compiled, solve
from test_evaluation import HiddenCount, HiddenCountState

import jaxcfr
from jaxcfr import sequence_form, solvers


class ForgetfulState(HiddenCountState):
  """HiddenCount where player 0 forgets its first choice: imperfect recall."""

  def child(self, action):
    return ForgetfulState(self.payoffs, self.history + (action,))

  def information_state_string(self, player):
    if player == 1:
      return super().information_state_string(player)
    h = self.history
    own = h[3:] if h[1] == 1 else h[2:]
    return f'coin {h[0]} p0 decision {len(own)}'


class Forgetful(HiddenCount):
  short_name = 'forgetful'

  def new_initial_state(self):
    return ForgetfulState(self.payoffs)


def _random_policy(game, seed):
  """Skewed, with some exact zeros (unreached subtrees)."""
  weights = jax.random.uniform(jax.random.key(seed), game.legal_mask.shape, game.dtype) ** 3
  return solvers.normalize_policy(jnp.where(weights < 0.01, 0, weights), game.legal_mask)


def _assert_regrets_match(game, seeds=(0, 1)):
  """Regrets, average increments, best responses and expected values over
  sequences equal those over histories."""
  fast = jax.jit(solvers.player_regrets, static_argnums=2)
  slow = jax.jit(solvers.history_regrets, static_argnums=2)
  best_response_values = jax.jit(jaxcfr.best_response_values)
  expected_values = jax.jit(jaxcfr.expected_values)
  histories = game.replace(sequence_form=None)
  for seed in seeds:
    policy = _random_policy(game, seed)
    np.testing.assert_allclose(
      best_response_values(game, policy), best_response_values(histories, policy), atol=1e-12
    )
    np.testing.assert_allclose(expected_values(game, policy), expected_values(histories, policy), atol=1e-12)
    for player in range(game.num_players):
      regret, reach_policy = fast(game, policy, player)
      expected_regret, expected_reach_policy = slow(game, policy, player)
      assert np.abs(np.asarray(expected_regret)).max() > 1e-3  # not trivially zero
      np.testing.assert_allclose(regret, expected_regret, rtol=0, atol=1e-12)
      np.testing.assert_allclose(reach_policy, expected_reach_policy, rtol=0, atol=1e-12)


@pytest.mark.parametrize(
  'spec',
  [
    'kuhn',
    'leduc',
    'leduc(suit_isomorphism=True)',
    'kuhn(players=3)',
    'liars_dice(dice_sides=3)',
    'rps',
    'matrix(payoffs=[[1,-2,0],[0,3,-1]])',
  ],
)
def test_sequence_regrets_equal_history_regrets(spec):
  game = compiled(spec, dtype='float64')
  assert game.sequence_form is not None
  _assert_regrets_match(game)


def test_sequence_regrets_when_infosets_span_depths():
  game = jaxcfr.compile_game(HiddenCount(1), dtype='float64')  # general-sum, infosets at two depths
  assert not game.depth_consistent and game.sequence_form is not None
  _assert_regrets_match(game)


def test_imperfect_recall_keeps_to_histories():
  game = jaxcfr.compile_game(Forgetful(2), dtype='float64')
  assert game.sequence_form is None
  solver = jaxcfr.cfr_plus()
  state = jaxcfr.run(solver, solver.init(game), game, 50)
  policy = jaxcfr.average_policy(state, game)
  np.testing.assert_allclose(policy.sum(-1), 1.0, atol=1e-12)


def test_tables_that_would_pad_badly_keep_to_histories(monkeypatch):
  monkeypatch.setattr(sequence_form, '_MAX_PADDING', 0)
  game = jaxcfr.compile_game('leduc', dtype=jnp.float64)
  assert game.sequence_form is None
  reference = compiled('leduc', dtype='float64')
  solver = jaxcfr.cfr_plus()
  states = [jaxcfr.run(solver, solver.init(g), g, 20) for g in (game, reference)]
  np.testing.assert_allclose(states[0].cumulative_regret, states[1].cumulative_regret, atol=1e-10)
  np.testing.assert_allclose(states[0].cumulative_policy, states[1].cumulative_policy, atol=1e-10)


def test_payoffs_are_read_from_the_game():
  """The structure holds no payoffs: a game rebuilt with other utilities or
  chance probabilities gets regrets for those."""
  game = compiled('leduc', dtype='float64')
  policy = _random_policy(game, 3)
  changed = game.replace(
    utility=tuple(u * 2 for u in game.utility),
    chance_table=game.chance_table.at[0].set(jnp.arange(1.0, 7.0) / 21.0),
  )
  fast = jax.jit(solvers.player_regrets, static_argnums=2)
  slow = jax.jit(solvers.history_regrets, static_argnums=2)
  for player in (0, 1):
    regret, _ = fast(changed, policy, player)
    expected, _ = slow(changed, policy, player)
    assert np.abs(np.asarray(regret - fast(game, policy, player)[0])).max() > 1e-3  # the change shows
    np.testing.assert_allclose(regret, expected, atol=1e-12)


def test_compiler_options_change_speed_not_results():
  game = compiled('leduc')
  solver = jaxcfr.dcfr()
  options = jaxcfr.compiler_options()
  if jax.default_backend() == 'cpu':
    assert isinstance(options, dict)
  run = lambda opts: jax.jit(jaxcfr.run, static_argnums=0, compiler_options=opts)  # noqa: E731
  states = [run(opts)(solver, solver.init(game), game, 30) for opts in (options, {})]
  np.testing.assert_allclose(states[0].cumulative_policy, states[1].cumulative_policy, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize('algorithm, bound', [('cfr', 0.01), ('cfr+', 1e-4)])
def test_three_player_kuhn_converges_over_sequences(algorithm, bound):
  """NashConv of 1000 iterations (uniform play: 2.06; both paths measured 0.0044 / 0.0039 for
  CFR and 3.2e-5 for CFR+)."""
  game = compiled('kuhn(players=3)')
  assert game.sequence_form is not None
  state = solve(FULL_WIDTH[algorithm](), game, 1000)
  nash_conv = jax.jit(lambda s, g: jaxcfr.nash_conv(g, jaxcfr.average_policy(s, g)))
  assert float(nash_conv(state, game)) < bound


@pytest.mark.parametrize(
  'spec',
  [pytest.param('leduc', marks=pytest.mark.slow), 'kuhn(players=3)', 'leduc(suit_isomorphism=True)'],
)  # Leduc without isomorphism: the same layouts as with it, at twice the cost
def test_levels_split_into_buckets_give_the_same_regrets(spec, monkeypatch):
  """With no cost per bucket, the levels' terminals are split into several tables of
  different widths and put back in order through `cells`: still exact."""
  monkeypatch.setattr(sequence_form, '_OVERHEAD', 0)
  game = jaxcfr.compile_game(spec, dtype=jnp.float64)
  levels = [level for player_levels in game.sequence_form.levels for level in player_levels]
  assert any(level.cells is not None and len(level.terminals) > 1 for level in levels)
  _assert_regrets_match(game)
  solver = jaxcfr.cfr_plus()
  reference = compiled(spec, dtype='float64')
  states = [solve(solver, g, 20) for g in (game, reference)]
  # Summation order differs between the layouts: the sums agree to the last bits (an entry of 0.073
  # once differed by 9e-14, 1.3e-12 relative), so the same absolute bound as the regrets above.
  np.testing.assert_allclose(states[0].cumulative_policy, states[1].cumulative_policy, rtol=1e-12, atol=1e-12)


def _layout_cost(counts, widths):
  """Padded entries plus `_OVERHEAD` per gather of a level's terminal tables (`widths`: buckets,
  or None for one table of every edge)."""
  overhead = sequence_form._OVERHEAD
  if widths is None:
    return len(counts) * counts.max() + overhead
  bucket = np.searchsorted(widths, counts[counts > 0])
  return int((np.asarray(widths)[bucket]).sum()) + overhead * (len(widths) + 1) + len(counts)


@pytest.mark.parametrize('seed', range(20))
def test_bucket_widths_are_the_cheapest_split(seed):
  """`_widths` against every way of cutting the sorted distinct counts into consecutive buckets."""
  rng = np.random.default_rng(seed)
  counts = rng.choice(rng.integers(1, 3000, size=rng.integers(1, 8)), size=rng.integers(1, 60))
  counts = np.concatenate([counts, np.zeros(rng.integers(0, 20), np.int64)])
  values = np.unique(counts[counts > 0])
  best = _layout_cost(counts, None)
  for cuts in range(2 ** (len(values) - 1)):  # a bit per gap between consecutive values: cut there
    widths = [v for i, v in enumerate(values[:-1]) if cuts >> i & 1] + [values[-1]]
    best = min(best, _layout_cost(counts, widths))
  widths = sequence_form._widths(counts)
  assert _layout_cost(counts, widths) == best
  if widths is not None:
    assert list(widths) == sorted(set(widths)) and widths[-1] == counts.max()


def test_bucket_widths_with_many_distinct_counts():
  """Past 256 distinct counts the candidate widths are a grid 5% apart: the split found costs no
  more than buckets at powers of two, and pads these 5,000 edges by less than 10%."""
  counts = np.random.default_rng(0).integers(1, 100_000, size=5000)
  widths = sequence_form._widths(counts)
  assert widths is not None and widths[-1] == counts.max()
  powers = [w for w in 2 ** np.arange(17) if w < counts.max()] + [counts.max()]
  assert _layout_cost(counts, widths) <= _layout_cost(counts, powers)
  padded = np.asarray(widths)[np.searchsorted(widths, counts)]
  assert np.all(padded >= counts) and padded.sum() < 1.1 * counts.sum()


@pytest.mark.slow
def test_large_levels_pad_little():
  """3-player Leduc's showdown edges hold up to 3,864 terminals where most hold 30: one padded
  table per level took 335 bytes per history; the buckets keep every level within 1.5x of its
  terminals (plus `_OVERHEAD` per bucket)."""
  pytest.importorskip('pyspiel')
  game = jaxcfr.compile_game('openspiel:leduc_poker(players=3)', dtype=jnp.float32)
  form = game.sequence_form
  num_terminals = form.terminal_history.shape[0]
  for player_levels in form.levels:
    for level in player_levels:
      entries = sum(table.size for table in level.terminals)
      filled = sum(int((np.asarray(table) < num_terminals).sum()) for table in level.terminals)
      assert entries <= 1.5 * filled + sequence_form._OVERHEAD * len(level.terminals)
  assert jaxcfr.memory.nbytes(game) / game.num_histories < 80  # 377 with one table per level
