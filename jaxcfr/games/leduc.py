"""Leduc poker, with OpenSpiel's `leduc_poker` rules and information states.

N players, a deck of N + 1 ranks in two suits (card id = 2 * rank + suit),
ante 1, two betting rounds with raise sizes 2 and 4 and at most two raises
per round, one public card between the rounds. At showdown a private card
that pairs the public card wins, else the higher rank; equal hands split.

`suit_isomorphism=True` deals ranks instead of cards (OpenSpiel's option):
1,939 histories and 288 information states instead of 9,457 and 936.
"""

from __future__ import annotations

from jaxcfr.games import base

FOLD, CALL, RAISE = 0, 1, 2
_STARTING_MONEY = 100
_RAISE_AMOUNT = {1: 2, 2: 4}
_MAX_RAISES = 2
_INVALID = -10000  # OpenSpiel's kInvalidCard


class LeducState(base.State):
  __slots__ = (
    '_game',
    '_player',
    '_num_calls',
    '_num_raises',
    '_round',
    '_stakes',
    '_pot',
    '_public',
    '_deck',
    '_dealt',
    '_remaining',
    '_private',
    '_money',
    '_ante',
    '_folded',
    '_sequences',
    '_returns',
  )

  def _copy(self) -> LeducState:
    new = object.__new__(LeducState)
    for name in LeducState.__slots__:
      setattr(new, name, getattr(self, name))
    return new

  @classmethod
  def initial(cls, game: LeducPoker) -> LeducState:
    n = game.players
    state = object.__new__(cls)
    state._game = game
    state._player = base.CHANCE_PLAYER
    state._num_calls = 0
    state._num_raises = 0
    state._round = 1
    state._stakes = 1
    state._pot = n
    state._public = _INVALID
    state._deck = tuple(range(2 * (n + 1)))  # _INVALID once dealt
    state._dealt = 0
    state._remaining = n
    state._private = (_INVALID,) * n
    state._money = (_STARTING_MONEY - 1,) * n
    state._ante = (1,) * n
    state._folded = (False,) * n
    state._sequences = ((), ())
    state._returns = None
    return state

  # Protocol.

  def current_player(self) -> int:
    return base.TERMINAL_PLAYER if self._returns is not None else self._player

  def legal_actions(self):
    if self._returns is not None:
      return []
    if self._player == base.CHANCE_PLAYER:
      return [a for a, _ in self.chance_outcomes()]
    actions = []
    if self._stakes > self._ante[self._player]:
      actions.append(FOLD)
    actions.append(CALL)
    if self._num_raises < _MAX_RAISES:
      actions.append(RAISE)
    return actions

  def chance_outcomes(self):
    deck, remaining = self._deck, sum(c != _INVALID for c in self._deck)
    if self._game.suit_isomorphism:
      outcomes = []
      for rank in range(len(deck) // 2):
        copies = (deck[2 * rank] != _INVALID) + (deck[2 * rank + 1] != _INVALID)
        if copies:
          outcomes.append((rank, copies / remaining))
      return outcomes
    return [(card, 1.0 / remaining) for card in range(len(deck)) if deck[card] != _INVALID]

  def child(self, action: int) -> LeducState:
    state = self._copy()
    if self._player == base.CHANCE_PLAYER:
      state._deal(action)
    else:
      state._bet(action)
    return state

  def returns(self):
    if self._returns is None:
      return [0.0] * self._game.players
    return list(self._returns)

  def information_state_string(self, player: int) -> str:
    parts = [
      f'[Observer: {player}][Private: {self._private[player]}]',
      f'[Round {self._round}][Player: {self._player}][Pot: {self._pot}]',
      f'[Money: {" ".join(str(m) for m in self._money)}]',
    ]
    if self._public != _INVALID:
      parts.append(f'[Public: {self._public}]')
    round1, round2 = (' '.join(str(a) for a in s) for s in self._sequences)
    parts.append(f'[Round1: {round1}][Round2: {round2}]')
    return ''.join(parts)

  def information_state_tensor(self, player: int) -> list[float]:
    """OpenSpiel's layout: player one-hot [N], own card one-hot [C], public card one-hot [C]
    (C cards, or C ranks under suit isomorphism), then per round and bet a call / raise one-hot
    [2, 3N - 2, 2] (a fold keeps its place in the sequence but sets neither bit)."""
    game = self._game
    n, cards = game.players, game.num_observable_cards()
    values = [0.0] * game.information_state_tensor_size()
    values[player] = 1.0
    if self._private[player] != _INVALID:
      values[n + self._private[player]] = 1.0
    if self._public != _INVALID:
      values[n + cards + self._public] = 1.0
    offset, bets = n + 2 * cards, game.max_bets_per_round()
    for round_index, sequence in enumerate(self._sequences):
      for i, action in enumerate(sequence):
        if action != FOLD:
          values[offset + 2 * (round_index * bets + i) + action - 1] = 1.0
    return values

  # Rules (OpenSpiel's LeducState::DoApplyAction and helpers).

  def _take_from_deck(self, action: int) -> int:
    deck = list(self._deck)
    if self._game.suit_isomorphism:
      slot = 2 * action if deck[2 * action] != _INVALID else 2 * action + 1
      card = action
    else:
      slot, card = action, deck[action]
    if deck[slot] == _INVALID:
      raise ValueError(f'card {action} is not in the deck')
    deck[slot] = _INVALID
    self._deck = tuple(deck)
    return card

  def _deal(self, action: int) -> None:
    card = self._take_from_deck(action)
    n = self._game.players
    if self._dealt < n:
      private = list(self._private)
      private[self._dealt] = card
      self._private = tuple(private)
      self._dealt += 1
      if self._dealt == n:
        self._player = 0
    else:
      self._public = card
      self._player = self._next_player()

  def _next_player(self) -> int:
    n = self._game.players
    start = n - 1 if self._player == base.CHANCE_PLAYER else self._player
    for i in range(1, n + 1):
      player = (start + i) % n
      if not self._folded[player]:
        return player
    raise AssertionError('no player left')

  def _put_in(self, player: int, amount: int) -> None:
    self._pot += amount
    self._ante = _replace(self._ante, player, self._ante[player] + amount)
    self._money = _replace(self._money, player, self._money[player] - amount)

  def _bet(self, action: int) -> None:
    player = self._player
    if action not in self.legal_actions():
      raise ValueError(f'action {action} is not legal here')
    sequences = list(self._sequences)
    sequences[self._round - 1] += (action,)
    self._sequences = tuple(sequences)
    if action == RAISE:
      call_amount = self._stakes - self._ante[player]
      if call_amount > 0:
        self._put_in(player, call_amount)
      raise_amount = _RAISE_AMOUNT[self._round]
      self._stakes += raise_amount
      self._put_in(player, raise_amount)
      self._num_raises += 1
      self._num_calls = 0
      self._player = self._next_player()
      return
    if action == FOLD:
      self._folded = _replace(self._folded, player, True)
      self._remaining -= 1
    else:
      self._put_in(player, self._stakes - self._ante[player])
      self._num_calls += 1
    if self._remaining == 1 or (self._round == 2 and self._ready_for_next_round()):
      self._resolve()
    elif self._ready_for_next_round():
      self._round = 2
      self._num_raises = 0
      self._num_calls = 0
      self._player = base.CHANCE_PLAYER
    else:
      self._player = self._next_player()

  def _ready_for_next_round(self) -> bool:
    if self._num_raises == 0:
      return self._num_calls == self._remaining
    return self._num_calls == self._remaining - 1

  def _hand_rank(self, player: int) -> int:
    low, high = sorted((self._public, self._private[player]))
    if self._game.suit_isomorphism:
      num_ranks = len(self._deck) // 2
      if low == high:
        return num_ranks * num_ranks + low
      return high * num_ranks + low
    num_cards = len(self._deck)
    if low % 2 == 0 and high == low + 1:
      return num_cards * num_cards + low
    return (high // 2) * num_cards + low // 2

  def _resolve(self) -> None:
    n = self._game.players
    money = [float(m) for m in self._money]
    alive = [p for p in range(n) if not self._folded[p]]
    if len(alive) == 1:
      winners = alive
    else:
      ranks = {p: self._hand_rank(p) for p in alive}
      best = max(ranks.values())
      winners = [p for p in alive if ranks[p] == best]
    for p in winners:
      money[p] += self._pot / len(winners)
    self._returns = tuple(m - _STARTING_MONEY for m in money)


def _replace(values: tuple, index: int, value) -> tuple:
  return values[:index] + (value,) + values[index + 1 :]


class LeducPoker(base.Game):
  short_name = 'leduc'

  def __init__(self, players: int = 2, suit_isomorphism: bool = False):
    base.check_int('leduc', 'players', players, 2, 10)
    base.check_bool('leduc', 'suit_isomorphism', suit_isomorphism)
    params = {}
    if players != 2:
      params['players'] = players
    if suit_isomorphism:
      params['suit_isomorphism'] = True
    super().__init__(**params)
    self.players = players
    self.suit_isomorphism = suit_isomorphism

  def num_players(self) -> int:
    return self.players

  def num_distinct_actions(self) -> int:
    return 3

  def new_initial_state(self) -> LeducState:
    return LeducState.initial(self)

  def num_observable_cards(self) -> int:
    """Distinct private or public cards a player can see: ranks under suit isomorphism."""
    return self.players + 1 if self.suit_isomorphism else 2 * (self.players + 1)

  def max_bets_per_round(self) -> int:
    """The longest betting sequence of one round (OpenSpiel's MaxBetsPerRound)."""
    return 3 * self.players - 2

  def information_state_tensor_size(self) -> int:
    return self.players + 2 * self.num_observable_cards() + 4 * self.max_bets_per_round()
