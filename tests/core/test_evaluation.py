"""Exact evaluation: best responses against brute force and OpenSpiel, on
games whose infosets span several depths too."""

import itertools

import jax
import numpy as np
import pytest
from conftest import compiled

import jaxcfr
from jaxcfr.games import base


class HiddenCountState(base.State):
  """Chance flips a coin; player 1 moves once or twice; player 0, who sees
  only the coin, then picks x and, seeing its own x, picks y. Player 0's
  infosets therefore lie at two depths (perfect recall still holds)."""

  def __init__(self, payoffs, history=()):
    self.payoffs = payoffs
    self.history = history

  def _stage(self):
    h = self.history
    if not h:
      return 'chance'
    if len(h) == 1:
      return 'p1'
    if h[1] == 1 and len(h) == 2:
      return 'p1'
    own = len(h) - (3 if h[1] == 1 else 2)
    return ('p0', 'p0', 'end')[own]

  def current_player(self):
    return {'chance': base.CHANCE_PLAYER, 'p1': 1, 'p0': 0, 'end': base.TERMINAL_PLAYER}[self._stage()]

  def legal_actions(self):
    return [] if self._stage() == 'end' else [0, 1]

  def chance_outcomes(self):
    return [(0, 0.3), (1, 0.7)]

  def child(self, action):
    return HiddenCountState(self.payoffs, self.history + (action,))

  def returns(self):
    if self._stage() != 'end':
      return [0.0, 0.0]
    index = int(''.join(map(str, self.history)).ljust(5, '0'), 2)
    return [self.payoffs[index], -0.5 * self.payoffs[index]]  # general-sum

  def information_state_string(self, player):
    h = self.history
    if player == 1:
      return f'coin {h[0]} p1 {h[1:]}'
    own = h[3:] if h[1] == 1 else h[2:]
    return f'coin {h[0]} p0 {own}'


class HiddenCount(base.Game):
  short_name = 'hidden_count'

  def __init__(self, seed=0):
    super().__init__()
    self.payoffs = np.random.default_rng(seed).normal(size=32).round(3).tolist()

  def num_players(self):
    return 2

  def num_distinct_actions(self):
    return 2

  def new_initial_state(self):
    return HiddenCountState(self.payoffs)


def _brute_force_best_response(game_def, compiled_game, policy, player):
  """Best-response value by enumerating every pure strategy of `player`."""
  keys = [
    k for i, k in enumerate(compiled_game.infoset_keys) if int(compiled_game.infoset_player[i]) == player
  ]
  row = {k: i for i, k in enumerate(compiled_game.infoset_keys)}
  policy = np.asarray(policy)

  def value(state, pure):
    if state.is_terminal():
      return state.returns()[player]
    if state.is_chance_node():
      return sum(p * value(state.child(a), pure) for a, p in state.chance_outcomes())
    acting = state.current_player()
    key = state.information_state_string(acting)
    if acting == player:
      return value(state.child(pure[key]), pure)
    return sum(policy[row[key], a] * value(state.child(a), pure) for a in state.legal_actions())

  return max(
    value(game_def.new_initial_state(), dict(zip(keys, choice, strict=True)))
    for choice in itertools.product([0, 1], repeat=len(keys))
  )


@pytest.mark.parametrize('seed', [0, 1, 2])
def test_best_response_when_infosets_span_depths(seed):
  game_def = HiddenCount(seed)
  game = jaxcfr.compile_game(game_def, dtype='float64')
  assert not game.depth_consistent and not game.members
  policy = jax.random.dirichlet(jax.random.key(seed), np.ones(2), (game.num_infosets,))
  for player in (0, 1):
    expected = _brute_force_best_response(game_def, game, policy, player)
    assert float(jaxcfr.best_response_value(game, policy, player)) == pytest.approx(expected, abs=1e-12)
    response = jaxcfr.best_response_policy(game, policy, player)
    assert float(jaxcfr.expected_values(game, response)[player]) == pytest.approx(expected, abs=1e-12)


def test_solvers_converge_when_infosets_span_depths():
  game = jaxcfr.compile_game(HiddenCount(3), dtype='float64')
  solver = jaxcfr.pcfr_plus()
  state = jaxcfr.run(solver, solver.init(game), game, 500)
  assert float(jaxcfr.nash_conv(game, jaxcfr.average_policy(state, game))) < 1e-3


@pytest.mark.parametrize('spec', ['kuhn', 'leduc(suit_isomorphism=True)'])
def test_best_response_policy_attains_best_response_value(spec):
  game = compiled(spec)
  policy = jax.random.dirichlet(jax.random.key(7), np.ones(game.num_actions), (game.num_infosets,))
  policy = jaxcfr.solvers.normalize_policy(policy, game.legal_mask)
  for player in range(game.num_players):
    response = jaxcfr.best_response_policy(game, policy, player)
    assert float(jaxcfr.expected_values(game, response)[player]) == pytest.approx(
      float(jaxcfr.best_response_value(game, policy, player)), abs=1e-12
    )


@pytest.mark.parametrize(
  'spec,os_spec',
  [
    ('kuhn', 'kuhn_poker'),
    ('leduc', 'leduc_poker'),
    ('kuhn(players=3)', 'kuhn_poker(players=3)'),
    ('liars_dice(dice_sides=3)', 'liars_dice(dice_sides=3)'),
  ],
)
def test_exploitability_equals_openspiel_for_random_policies(spec, os_spec):
  pyspiel = pytest.importorskip('pyspiel')
  from open_spiel.python.algorithms import exploitability as os_exploitability

  from jaxcfr.games import openspiel as bridge

  game = compiled(spec)
  os_game = pyspiel.load_game(os_spec)
  for seed in range(2):
    weights = jax.random.uniform(jax.random.key(seed), (game.num_infosets, game.num_actions), 'float64')
    policy = jaxcfr.solvers.normalize_policy(weights**4, game.legal_mask)
    tabular = bridge.to_tabular_policy(game, policy, os_game)
    assert float(jaxcfr.nash_conv(game, policy)) == pytest.approx(
      os_exploitability.nash_conv(os_game, tabular), abs=1e-9
    )
    if game.num_players == 2:
      assert float(jaxcfr.exploitability(game, policy)) == pytest.approx(
        pyspiel.exploitability(os_game, jaxcfr.policies.to_dict(game, policy)), abs=1e-9
      )


def test_evaluation_is_jittable_and_float32_close_to_float64():
  game32, game64 = compiled('leduc', 'float32'), compiled('leduc')
  policy = jaxcfr.solvers.normalize_policy(np.ones((game64.num_infosets, 3)), game64.legal_mask)
  value32 = jax.jit(jaxcfr.exploitability)(game32, policy.astype('float32'))
  value64 = jax.jit(jaxcfr.exploitability)(game64, policy)
  assert value32.dtype == np.float32
  assert float(value32) == pytest.approx(float(value64), rel=1e-5)
