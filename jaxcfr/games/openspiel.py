"""OpenSpiel interoperability (optional: needs `pip install jaxcfr[openspiel]`).

`load("leduc_poker")` returns a pyspiel game, which `compile_game` walks like
a native one: information-state keys are OpenSpiel's information-state
strings. `to_tabular_policy` and `from_tabular_policy` convert `[I, A]`
policies to and from OpenSpiel's `TabularPolicy` by those keys.
"""

from __future__ import annotations

import numpy as np

from jaxcfr.games.base import GameError


def _pyspiel():
  try:
    import pyspiel  # noqa: PLC0415
  except ImportError:
    raise GameError('OpenSpiel is not installed; install it with `pip install "jaxcfr[openspiel]"`') from None
  return pyspiel


class OpenSpielGame:
  """A pyspiel game with the string it was loaded from as its name."""

  def __init__(self, game, spec: str):
    self.game = game
    self.spec = spec

  def num_players(self) -> int:
    return self.game.num_players()

  def num_distinct_actions(self) -> int:
    return self.game.num_distinct_actions()

  def new_initial_state(self):
    return self.game.new_initial_state()

  def __str__(self) -> str:
    return f'openspiel:{self.spec}'


def load(spec: str) -> OpenSpielGame:
  """Loads an OpenSpiel game string; simultaneous-move games become turn-based."""
  pyspiel = _pyspiel()
  try:
    game = pyspiel.load_game(spec)
  except pyspiel.SpielError as error:
    raise GameError(f'OpenSpiel cannot load {spec!r}: {error}') from None
  game_type = game.get_type()
  if game_type.dynamics == pyspiel.GameType.Dynamics.SIMULTANEOUS:
    game = pyspiel.convert_to_turn_based(game)
    game_type = game.get_type()
  if game_type.chance_mode == pyspiel.GameType.ChanceMode.SAMPLED_STOCHASTIC:
    raise GameError(f'{spec!r} has sampled chance; only explicit chance outcomes can be compiled')
  if not game_type.provides_information_state_string:
    raise GameError(f'{spec!r} provides no information-state string')
  return OpenSpielGame(game, spec)


def to_policy_dict(compiled, policy) -> dict[str, list[tuple[int, float]]]:
  """`{information state: [(action, probability), ...]}` over legal actions,
  the mapping `pyspiel.exploitability` and `pyspiel.nash_conv` accept."""
  values = np.asarray(policy, np.float64)
  legal = np.asarray(compiled.legal_mask)
  return {
    key: [(int(a), float(values[row, a])) for a in np.flatnonzero(legal[row])]
    for row, key in enumerate(compiled.infoset_keys)
  }


def to_tabular_policy(compiled, policy, game):
  """An OpenSpiel `TabularPolicy` for `game` (pyspiel or `OpenSpielGame`)
  holding `policy` (`[I, A]`, rows keyed by `compiled.infoset_keys`)."""
  from open_spiel.python import policy as policy_lib  # noqa: PLC0415

  game = getattr(game, 'game', game)
  tabular = policy_lib.TabularPolicy(game)
  values = np.asarray(policy, np.float64)
  for row, key in enumerate(compiled.infoset_keys):
    index = tabular.state_lookup.get(key)
    if index is None:
      raise GameError(f'information state {key!r} is not in the OpenSpiel game {game}')
    tabular.action_probability_array[index] = values[row, : tabular.action_probability_array.shape[1]]
  return tabular


def from_tabular_policy(compiled, tabular) -> np.ndarray:
  """`[I, A]` policy of `compiled` read from an OpenSpiel `TabularPolicy`."""
  policy = np.zeros((compiled.num_infosets, compiled.num_actions))
  for row, key in enumerate(compiled.infoset_keys):
    policy[row] = tabular.policy_for_key(key)[: compiled.num_actions]
  return policy
