"""OpenSpiel interoperability (optional: needs `pip install jaxcfr[openspiel]`).

`load("leduc_poker")` returns a pyspiel game, which `compile_game` walks like
a native one: information-state keys are OpenSpiel's information-state
strings (of the turn-based game, for simultaneous-move games).
`to_tabular_policy` and `from_tabular_policy` convert `[I, A]` policies to
and from OpenSpiel's `TabularPolicy` by those keys; `jaxcfr.policies.to_dict`
gives the mapping that `pyspiel.exploitability` accepts.
"""

from __future__ import annotations

import contextlib
import os
import sys

import numpy as np

from jaxcfr.games.base import GameError


def _pyspiel():
  try:
    import pyspiel  # noqa: PLC0415
  except ImportError:
    raise GameError('OpenSpiel is not installed; install it with `pip install "jaxcfr[openspiel]"`') from None
  return pyspiel


@contextlib.contextmanager
def _silenced_stderr():
  """Sends file descriptor 2 (where OpenSpiel's C++ writes) to /dev/null."""
  sys.stderr.flush()
  saved = os.dup(2)
  try:
    with open(os.devnull, 'wb') as devnull:
      os.dup2(devnull.fileno(), 2)
      yield
  finally:
    os.dup2(saved, 2)
    os.close(saved)


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

  def information_state_tensor_size(self) -> int:
    """OpenSpiel's (flattened) tensor length, or 0 where the game provides no tensor."""
    return information_state_tensor_size(self.game)

  def __str__(self) -> str:
    return f'openspiel:{self.spec}'

  def __reduce__(self):
    # Loaded again from its spec (in a compile worker, say), simultaneous-move conversion included.
    return load, (self.spec,)


def information_state_tensor_size(game) -> int:
  """`game.information_state_tensor_size()` of a pyspiel game, or 0 where its type provides no
  information-state tensor (OpenSpiel would raise, and print to stderr, on asking)."""
  if not game.get_type().provides_information_state_tensor:
    return 0
  return game.information_state_tensor_size()


def load(spec: str) -> OpenSpielGame:
  """Loads an OpenSpiel game string; simultaneous-move games become turn-based."""
  pyspiel = _pyspiel()
  try:
    with _silenced_stderr():  # OpenSpiel prints its errors to stderr before raising them
      game = pyspiel.load_game(spec)
  except pyspiel.SpielError as error:
    reason = str(error).split('. Available games')[0].strip()  # not the list of ~130 names
    raise GameError(f'OpenSpiel cannot load {spec!r}: {reason}') from None
  game_type = game.get_type()
  if game_type.dynamics not in (pyspiel.GameType.Dynamics.SEQUENTIAL, pyspiel.GameType.Dynamics.SIMULTANEOUS):
    raise GameError(
      f'{spec!r} has {game_type.dynamics.name.lower()} dynamics; only sequential and '
      'simultaneous-move games can be compiled'
    )
  if game_type.dynamics == pyspiel.GameType.Dynamics.SIMULTANEOUS:
    game = pyspiel.convert_to_turn_based(game)
    game_type = game.get_type()
  if game_type.chance_mode == pyspiel.GameType.ChanceMode.SAMPLED_STOCHASTIC:
    raise GameError(f'{spec!r} has sampled chance; only explicit chance outcomes can be compiled')
  if not game_type.provides_information_state_string:
    raise GameError(f'{spec!r} provides no information-state string')
  return OpenSpielGame(game, spec)


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
