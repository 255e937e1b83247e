"""Per-infoset features: `CompiledGame.features` (`[I, F]` float32) holds each infoset's
information-state tensor, from its player's view; learned policies (Deep CFR) see these, never the
infoset index.

OpenSpiel (`pyspiel`) is the oracle for the layout of the native twins; the tests that need it skip
when it is not installed, the rest run without it.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conftest import compiled

import jaxcfr
from jaxcfr.games import REGISTRY
from jaxcfr.games.matrix import MatrixGame

# (native spec, OpenSpiel game string, F) for the same game.
TWINS = [
  ('kuhn', 'kuhn_poker', 11),
  ('kuhn(players=3)', 'kuhn_poker(players=3)', 17),
  ('leduc', 'leduc_poker', 30),
  ('leduc(suit_isomorphism=True)', 'leduc_poker(suit_isomorphism=True)', 24),
  ('liars_dice(dice_sides=3)', 'liars_dice(dice_sides=3)', 12),
  ('liars_dice(numdice=2, dice_sides=2)', 'liars_dice(numdice=2,dice_sides=2)', 15),
  ('leduc(players=3)', 'leduc_poker(players=3)', 47),
  ('liars_dice', 'liars_dice', 21),
]
# Small enough to walk (and compile) every history; the others (leduc(players=3) has 1.8M
# histories, liars_dice 295k) are sampled.
EXHAUSTIVE = [twin[:2] for twin in TWINS[:6]]
SAMPLED = [twin[:2] for twin in TWINS[6:]]
NUM_TRAJECTORIES = 300
# A small stand-in for a registered game whose default tree takes seconds to compile.
SMALL = {'liars_dice': 'liars_dice(dice_sides=3)'}


def twin(spiel_spec):
  pyspiel = pytest.importorskip('pyspiel')
  return pyspiel.load_game(spiel_spec)


def decision_histories(spiel_game):
  """Every decision history of a pyspiel game, depth first."""
  stack = [spiel_game.new_initial_state()]
  while stack:
    state = stack.pop()
    if state.is_terminal():
      continue
    if not state.is_chance_node():
      yield state
    stack.extend(state.child(a) for a in state.legal_actions())


def assert_same_tensors(native, spiel, num_players, path):
  for p in range(num_players):
    assert list(native.information_state_tensor(p)) == list(spiel.information_state_tensor(p)), (
      f'after actions {path}, player {p}'
    )


@pytest.mark.parametrize('native_spec,spiel_spec,size', TWINS)
def test_tensor_size_is_openspiels(native_spec, spiel_spec, size):
  assert jaxcfr.load_game(native_spec).information_state_tensor_size() == size
  assert twin(spiel_spec).information_state_tensor_size() == size


@pytest.mark.parametrize('native_spec,spiel_spec', EXHAUSTIVE)
def test_tensor_is_openspiels_at_every_decision_history(native_spec, spiel_spec):
  spiel_game = twin(spiel_spec)
  game = jaxcfr.load_game(native_spec)
  stack = [(game.new_initial_state(), spiel_game.new_initial_state(), ())]
  while stack:
    native, spiel, path = stack.pop()
    if native.is_terminal():
      continue
    if not native.is_chance_node():
      assert_same_tensors(native, spiel, game.num_players(), path)
    stack.extend((native.child(a), spiel.child(a), path + (a,)) for a in native.legal_actions())


@pytest.mark.parametrize('native_spec,spiel_spec', SAMPLED)
def test_tensor_is_openspiels_along_random_trajectories(native_spec, spiel_spec):
  spiel_game = twin(spiel_spec)
  game = jaxcfr.load_game(native_spec)
  rng = np.random.default_rng(20240601)
  for _ in range(NUM_TRAJECTORIES):
    native, spiel, path = game.new_initial_state(), spiel_game.new_initial_state(), ()
    while not native.is_terminal():
      if not native.is_chance_node():
        assert_same_tensors(native, spiel, game.num_players(), path)
      action = int(rng.choice(native.legal_actions()))
      native, spiel, path = native.child(action), spiel.child(action), path + (action,)


def assert_rows_are_tensors(game, spiel_game):
  """Row i of `game.features` is the tensor of infoset i's player at every history of infoset i."""
  row = {key: i for i, key in enumerate(game.infoset_keys)}
  features = np.asarray(game.features)
  for state in decision_histories(spiel_game):
    player = state.current_player()
    expected = np.asarray(state.information_state_tensor(player), np.float32)
    np.testing.assert_array_equal(features[row[state.information_state_string(player)]], expected)


@pytest.mark.parametrize('native_spec,spiel_spec', EXHAUSTIVE)
def test_compiled_features_are_the_actors_openspiel_tensors(native_spec, spiel_spec):
  """Row i of `features` is the tensor of infoset i's player at every history of infoset i."""
  spiel_game = twin(spiel_spec)
  game = compiled(native_spec)  # float64: the features stay float32
  assert_rows_are_tensors(game, spiel_game)


def test_kuhn_features_by_hand():
  """Player one-hot [2], card one-hot [3], pass / bet one-hot per betting turn [3, 2]."""
  game = compiled('kuhn')
  features = dict(zip(game.infoset_keys, np.asarray(game.features).tolist(), strict=True))
  assert features['0'] == [1, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0]
  assert features['2b'] == [0, 1, 0, 0, 1, 0, 1, 0, 0, 0, 0]
  assert features['1pb'] == [1, 0, 0, 1, 0, 1, 0, 0, 1, 0, 0]


# Every registered native game, and the other parameterisations: one feature vector per infoset.
DISTINCT = [SMALL.get(name, name) for name in REGISTRY] + [
  'kuhn(players=3)',
  'leduc(suit_isomorphism=True)',
  'liars_dice(numdice=2, dice_sides=2)',
  pytest.param('liars_dice', marks=pytest.mark.slow),
]


@pytest.mark.parametrize('spec', DISTINCT)
def test_features_tell_apart_the_infosets_of_each_player(spec):
  game = compiled(spec)
  features, owner = np.asarray(game.features), np.asarray(game.infoset_player)
  assert game.num_features > 0
  for p in range(game.num_players):
    mine = features[owner == p]
    assert len(np.unique(mine, axis=0)) == len(mine), f'player {p}'


@pytest.mark.parametrize('spec', [SMALL.get(name, name) for name in REGISTRY] + ['kuhn(players=3)'])
def test_features_are_float32_infosets_by_tensor_size(spec):
  for dtype in ('float32', 'float64'):
    game = compiled(spec, dtype)
    size = jaxcfr.load_game(spec).information_state_tensor_size()
    assert game.features.shape == (game.num_infosets, size) and game.num_features == size
    assert game.features.dtype == jnp.float32


class _Featureless(MatrixGame):
  def information_state_tensor_size(self) -> int:
    return 0


def test_a_game_without_a_tensor_has_no_features():
  plain = jaxcfr.compile_game(MatrixGame())
  featureless = jaxcfr.compile_game(_Featureless())
  assert featureless.features.shape == (2, 0) and featureless.features.dtype == jnp.float32
  assert plain.infoset_keys == featureless.infoset_keys
  assert plain.info != featureless.info  # F is part of the shape fingerprint


def test_features_stack_under_jit_and_vmap():
  base = compiled('kuhn')
  games = [base.replace(utility=tuple(u * scale for u in base.utility)) for scale in (1.0, 2.0)]
  stacked = jax.tree.map(lambda *leaves: jnp.stack(leaves), *games)
  assert stacked.features.shape == (2, base.num_infosets, base.num_features)
  total = jax.jit(jax.vmap(lambda game: game.features.sum()))(stacked)
  np.testing.assert_array_equal(total, [base.features.sum()] * 2)


# The OpenSpiel bridge.


@pytest.mark.parametrize(
  'spiel_spec', ['kuhn_poker', 'leduc_poker(suit_isomorphism=True)', 'goofspiel(num_cards=3)']
)
def test_bridged_features_are_pyspiels_tensors(spiel_spec):
  twin(spiel_spec)
  from jaxcfr.games import openspiel as bridge  # noqa: PLC0415 (needs pyspiel)

  game = compiled(f'openspiel:{spiel_spec}')
  spiel_game = bridge.load(spiel_spec).game  # turn-based, as compiled
  assert game.num_features == spiel_game.information_state_tensor_size()
  assert_rows_are_tensors(game, spiel_game)


@pytest.mark.parametrize('native_spec,spiel_spec', [EXHAUSTIVE[0], EXHAUSTIVE[3]])
def test_native_and_bridged_features_agree(native_spec, spiel_spec):
  twin(spiel_spec)
  native, bridged = compiled(native_spec), compiled(f'openspiel:{spiel_spec}')
  by_key = dict(zip(bridged.infoset_keys, np.asarray(bridged.features), strict=True))
  np.testing.assert_array_equal(np.stack([by_key[key] for key in native.infoset_keys]), native.features)


def test_bridged_game_without_a_tensor_has_no_features():
  spiel_spec = 'oshi_zumo(coins=4,size=1,horizon=3)'
  assert not twin(spiel_spec).get_type().provides_information_state_tensor
  game = compiled(f'openspiel:{spiel_spec}')
  assert game.features.shape == (game.num_infosets, 0)
