"""Two-player matrix (normal-form) games as a sequential game.

Player 0 picks a row, then player 1 picks a column without seeing it; both
information states are fixed strings, so the tree is the normal form.
`payoffs` is player 0's payoff matrix; `column_payoffs` (player 1's) defaults
to its negation (zero-sum).
"""

from __future__ import annotations

import numpy as np

from jaxcfr.games import base

ROCK_PAPER_SCISSORS = ((0, -1, 1), (1, 0, -1), (-1, 1, 0))
MATCHING_PENNIES = ((1, -1), (-1, 1))


class MatrixState(base.State):
  __slots__ = ('_game', '_moves')

  def __init__(self, game: MatrixGame, moves: tuple[int, ...]):
    self._game = game
    self._moves = moves

  def current_player(self) -> int:
    return len(self._moves) if len(self._moves) < 2 else base.TERMINAL_PLAYER

  def legal_actions(self):
    if len(self._moves) >= 2:
      return []
    return list(range(self._game.row_payoffs.shape[len(self._moves)]))

  def child(self, action: int) -> MatrixState:
    if action not in self.legal_actions():
      raise ValueError(f'action {action} is not legal here')
    return MatrixState(self._game, self._moves + (action,))

  def returns(self):
    if len(self._moves) < 2:
      return [0.0, 0.0]
    row, column = self._moves
    return [float(self._game.row_payoffs[row, column]), float(self._game.column_payoffs[row, column])]

  def information_state_string(self, player: int) -> str:
    return f'player {player}'

  def information_state_tensor(self, player: int) -> list[float]:
    """The player one-hot: each player has one information state."""
    return [float(player == 0), float(player == 1)]


class MatrixGame(base.Game):
  short_name = 'matrix'

  def __init__(self, payoffs=ROCK_PAPER_SCISSORS, column_payoffs=None, *, name: str | None = None):
    row = _payoff_matrix('payoffs', payoffs)
    column = -row if column_payoffs is None else _payoff_matrix('column_payoffs', column_payoffs)
    if column.shape != row.shape:
      raise base.GameError(f'matrix: column_payoffs has shape {column.shape}, payoffs has shape {row.shape}')
    if name is None:
      params = {'payoffs': row.tolist()}
      if column_payoffs is not None:
        params['column_payoffs'] = column.tolist()
      super().__init__(**params)
    else:
      super().__init__()
      self.short_name = name
    self.row_payoffs, self.column_payoffs = row, column

  def num_players(self) -> int:
    return 2

  def num_distinct_actions(self) -> int:
    return max(self.row_payoffs.shape)

  def new_initial_state(self) -> MatrixState:
    return MatrixState(self, ())

  def information_state_tensor_size(self) -> int:
    return 2


def _payoff_matrix(name: str, value) -> np.ndarray:
  try:
    matrix = np.asarray(value, dtype=np.float64)
  except (TypeError, ValueError):
    raise base.GameError(f'matrix: {name} must be a list of rows of numbers, got {value!r}') from None
  if matrix.ndim != 2 or min(matrix.shape) < 1 or not np.all(np.isfinite(matrix)):
    raise base.GameError(f'matrix: {name} must be a non-empty 2-D list of finite numbers, got {value!r}')
  return matrix


def rock_paper_scissors() -> MatrixGame:
  return MatrixGame(ROCK_PAPER_SCISSORS, name='rps')


def matching_pennies() -> MatrixGame:
  return MatrixGame(MATCHING_PENNIES, name='matching_pennies')
