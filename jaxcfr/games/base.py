"""The game protocol shared by native games and the OpenSpiel bridge.

A game follows OpenSpiel's state protocol, so that the compiler walks native
states and `pyspiel` states alike:

- `Game`: `num_players()`, `num_distinct_actions()`, `new_initial_state()`,
  `information_state_tensor_size()` (0: the game has no tensor).
- `State`: `current_player()` (`CHANCE_PLAYER` at chance nodes,
  `TERMINAL_PLAYER` at terminals), `is_terminal()`, `is_chance_node()`,
  `legal_actions()`, `chance_outcomes()` (list of `(action, probability)`),
  `child(action)` (a new state; the parent is unchanged), `returns()` (one
  utility per player), `information_state_string(player)`, and, for a game
  whose `information_state_tensor_size()` is positive,
  `information_state_tensor(player)`.

Native states are immutable value objects: `child` builds a new one.
"""

from __future__ import annotations

import abc
from collections.abc import Sequence

CHANCE_PLAYER = -1  # OpenSpiel's kChancePlayerId.
TERMINAL_PLAYER = -4  # OpenSpiel's kTerminalPlayerId.


class GameError(ValueError):
  """A game spec or parameter that cannot be honoured; the message says why."""


class State(abc.ABC):
  """One history of a native game (see the module docstring)."""

  @abc.abstractmethod
  def current_player(self) -> int:
    """The acting player, `CHANCE_PLAYER` or `TERMINAL_PLAYER`."""

  def is_terminal(self) -> bool:
    return self.current_player() == TERMINAL_PLAYER

  def is_chance_node(self) -> bool:
    return self.current_player() == CHANCE_PLAYER

  @abc.abstractmethod
  def legal_actions(self) -> Sequence[int]:
    """Legal action ids in increasing order (chance outcomes at chance nodes)."""

  def chance_outcomes(self) -> Sequence[tuple[int, float]]:
    raise NotImplementedError('not a chance node')

  @abc.abstractmethod
  def child(self, action: int) -> State:
    """The state after `action`."""

  @abc.abstractmethod
  def returns(self) -> Sequence[float]:
    """Utility of each player (zero before the end)."""

  @abc.abstractmethod
  def information_state_string(self, player: int) -> str:
    """What `player` knows here, as OpenSpiel spells it for the same game."""

  def information_state_tensor(self, player: int) -> Sequence[float]:
    """What `player` knows here as `information_state_tensor_size()` numbers, laid out as
    OpenSpiel's `information_state_tensor` for the same game: the input encoding of learned
    policies (Deep CFR), which must tell apart any two information states of one player."""
    raise NotImplementedError(f'{type(self).__name__} has no information-state tensor')


class Game(abc.ABC):
  """A native game: parameters plus the factory for its initial state."""

  #: Registered short name, e.g. `"leduc"`.
  short_name: str = ''

  def __init__(self, **params):
    self.params = dict(params)

  @abc.abstractmethod
  def num_players(self) -> int: ...

  @abc.abstractmethod
  def num_distinct_actions(self) -> int: ...

  @abc.abstractmethod
  def new_initial_state(self) -> State: ...

  def information_state_tensor_size(self) -> int:
    """Length of `State.information_state_tensor`; 0 for a game without one."""
    return 0

  def __str__(self) -> str:
    if not self.params:
      return self.short_name
    body = ','.join(f'{k}={format_value(v)}' for k, v in self.params.items())
    return f'{self.short_name}({body})'

  __repr__ = __str__


def format_value(value) -> str:
  """A parameter value in spec syntax (lists without spaces)."""
  if isinstance(value, (list, tuple)):
    return '[' + ','.join(format_value(v) for v in value) + ']'
  return str(value)


def check_int(game: str, name: str, value, low: int, high: int) -> int:
  """`value` as an int in [low, high], or a `GameError` naming the parameter."""
  if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
    raise GameError(f'{game}: {name} must be an integer from {low} to {high}, got {value!r}')
  return value


def check_bool(game: str, name: str, value) -> bool:
  if not isinstance(value, bool):
    raise GameError(f'{game}: {name} must be true or false, got {value!r}')
  return value
