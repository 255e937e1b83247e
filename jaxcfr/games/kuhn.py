"""Kuhn poker, with OpenSpiel's `kuhn_poker` rules and information states.

N players, N + 1 cards, ante 1, one betting round: pass (0) or bet (1).
Once someone bets, every later player may call (bet) or fold (pass); the
highest card among those still in wins the pot.
"""

from __future__ import annotations

from jaxcfr.games import base

PASS, BET = 0, 1


class KuhnState(base.State):
  __slots__ = ('_game', '_cards', '_history')

  def __init__(self, game: KuhnPoker, cards: tuple[int, ...], history: tuple[int, ...]):
    self._game = game
    self._cards = cards  # dealt cards, in player order
    self._history = history  # betting actions so far

  def _num_players(self) -> int:
    return self._game.players

  def _first_bet(self) -> int | None:
    return self._history.index(BET) if BET in self._history else None

  def _finished(self) -> bool:
    n = self._num_players()
    first_bet = self._first_bet()
    if first_bet is None:
      return len(self._history) == n
    return len(self._history) == first_bet + n

  def current_player(self) -> int:
    if len(self._cards) < self._num_players():
      return base.CHANCE_PLAYER
    if self._finished():
      return base.TERMINAL_PLAYER
    return len(self._history) % self._num_players()

  def legal_actions(self):
    player = self.current_player()
    if player == base.CHANCE_PLAYER:
      return [card for card, _ in self.chance_outcomes()]
    return [] if player == base.TERMINAL_PLAYER else [PASS, BET]

  def chance_outcomes(self):
    remaining = [c for c in range(self._num_players() + 1) if c not in self._cards]
    return [(c, 1.0 / len(remaining)) for c in remaining]

  def child(self, action: int) -> KuhnState:
    if self.is_chance_node():
      return KuhnState(self._game, self._cards + (action,), self._history)
    return KuhnState(self._game, self._cards, self._history + (action,))

  def returns(self):
    n = self._num_players()
    if not self._finished():
      return [0.0] * n
    first_bet = self._first_bet()
    contributed = [1.0] * n
    if first_bet is None:
      contenders = list(range(n))
    else:
      contenders = []
      for i in range(first_bet, len(self._history)):
        if self._history[i] == BET:
          player = i % n
          contenders.append(player)
          contributed[player] += 1.0
    winner = max(contenders, key=lambda p: self._cards[p])
    pot = sum(contributed)
    return [(pot if p == winner else 0.0) - contributed[p] for p in range(n)]

  def information_state_string(self, player: int) -> str:
    return str(self._cards[player]) + ''.join('pb'[a] for a in self._history)

  def information_state_tensor(self, player: int) -> list[float]:
    """OpenSpiel's layout: player one-hot [N], own card one-hot [N + 1], then per betting turn
    (at most 2N - 1) a pass / bet one-hot [2N - 1, 2]."""
    n = self._num_players()
    values = [0.0] * self._game.information_state_tensor_size()
    values[player] = 1.0
    if len(self._cards) > player:
      values[n + self._cards[player]] = 1.0
    offset = 2 * n + 1
    for turn, action in enumerate(self._history):
      values[offset + 2 * turn + action] = 1.0
    return values


class KuhnPoker(base.Game):
  short_name = 'kuhn'

  def __init__(self, players: int = 2):
    base.check_int('kuhn', 'players', players, 2, 10)
    super().__init__(**({} if players == 2 else {'players': players}))
    self.players = players

  def num_players(self) -> int:
    return self.players

  def num_distinct_actions(self) -> int:
    return 2

  def new_initial_state(self) -> KuhnState:
    return KuhnState(self, (), ())

  def information_state_tensor_size(self) -> int:
    return 6 * self.players - 1
