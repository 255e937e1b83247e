"""Liar's Dice, with OpenSpiel's `liars_dice` rules and information states.

Each player rolls `numdice` dice with `dice_sides` sides (the highest face is
wild). Players bid "quantity-face" in increasing order (bid id =
(quantity - 1) * dice_sides + face - 1) or call "Liar" (the last action id);
after a call the bidder wins if at least `quantity` dice show the face or the
wild face, else the caller wins. Winner +1, loser -1.
"""

from __future__ import annotations

from jaxcfr.games import base


class LiarsDiceState(base.State):
  __slots__ = ('_game', '_dice', '_bids', '_returns')

  def __init__(self, game: LiarsDice, dice: tuple[tuple[int, ...], ...], bids: tuple[int, ...]):
    self._game = game
    self._dice = dice  # per player, faces 1..dice_sides (sorted once all are rolled)
    self._bids = bids
    self._returns = self._resolve() if bids and bids[-1] == game.liar_action else None

  def _rolled(self) -> int:
    return sum(len(d) for d in self._dice)

  def current_player(self) -> int:
    if self._rolled() < self._game.total_dice:
      return base.CHANCE_PLAYER
    if self._returns is not None:
      return base.TERMINAL_PLAYER
    return len(self._bids) % self._game.players

  def legal_actions(self):
    if self._rolled() < self._game.total_dice:
      return list(range(self._game.dice_sides))
    if self._returns is not None:
      return []
    first = self._bids[-1] + 1 if self._bids else 0
    actions = list(range(first, self._game.liar_action))
    if self._bids:
      actions.append(self._game.liar_action)
    return actions

  def chance_outcomes(self):
    sides = self._game.dice_sides
    return [(face, 1.0 / sides) for face in range(sides)]

  def child(self, action: int) -> LiarsDiceState:
    game = self._game
    if self._rolled() < game.total_dice:
      roller = next(p for p in range(game.players) if len(self._dice[p]) < game.numdice)
      dice = list(self._dice)
      dice[roller] = dice[roller] + (action + 1,)
      if sum(len(d) for d in dice) == game.total_dice:
        dice = [tuple(sorted(d)) for d in dice]
      return LiarsDiceState(game, tuple(dice), self._bids)
    if action not in self.legal_actions():
      raise ValueError(f'action {action} is not legal here')
    return LiarsDiceState(game, self._dice, self._bids + (action,))

  def _resolve(self) -> tuple[float, ...]:
    game = self._game
    bid = self._bids[-2]
    quantity, face = bid // game.dice_sides + 1, bid % game.dice_sides + 1
    matches = sum(d == face or d == game.dice_sides for dice in self._dice for d in dice)
    caller = (len(self._bids) - 1) % game.players
    bidder = (len(self._bids) - 2) % game.players
    winner, loser = (bidder, caller) if matches >= quantity else (caller, bidder)
    returns = [0.0] * game.players
    returns[winner], returns[loser] = 1.0, -1.0
    return tuple(returns)

  def returns(self):
    return list(self._returns) if self._returns is not None else [0.0] * self._game.players

  def information_state_string(self, player: int) -> str:
    sides = self._game.dice_sides
    words = [''.join(str(d) for d in self._dice[player])]
    for bid in self._bids:
      if bid == self._game.liar_action:
        words.append('Liar')
      else:
        words.append(f'{bid // sides + 1}-{bid % sides + 1}')
    return ' '.join(words)

  def information_state_tensor(self, player: int) -> list[float]:
    """OpenSpiel's layout: player one-hot [N], a face one-hot per own die [numdice, dice_sides]
    (sorted once all dice are rolled), then one bit per bid made so far, Liar last [liar + 1]."""
    game = self._game
    values = [0.0] * game.information_state_tensor_size()
    values[player] = 1.0
    for die, face in enumerate(self._dice[player]):
      values[game.players + die * game.dice_sides + face - 1] = 1.0
    offset = game.players + game.numdice * game.dice_sides
    for bid in self._bids:
      values[offset + bid] = 1.0
    return values


class LiarsDice(base.Game):
  short_name = 'liars_dice'

  def __init__(self, players: int = 2, numdice: int = 1, dice_sides: int = 6):
    base.check_int('liars_dice', 'players', players, 2, 2)
    base.check_int('liars_dice', 'numdice', numdice, 1, 5)
    base.check_int('liars_dice', 'dice_sides', dice_sides, 2, 12)
    params = {}
    if numdice != 1:
      params['numdice'] = numdice
    if dice_sides != 6:
      params['dice_sides'] = dice_sides
    super().__init__(**params)
    self.players, self.numdice, self.dice_sides = players, numdice, dice_sides
    self.total_dice = players * numdice
    self.liar_action = self.total_dice * dice_sides

  def num_players(self) -> int:
    return self.players

  def num_distinct_actions(self) -> int:
    return self.liar_action + 1

  def new_initial_state(self) -> LiarsDiceState:
    return LiarsDiceState(self, ((),) * self.players, ())

  def information_state_tensor_size(self) -> int:
    return self.players + self.numdice * self.dice_sides + self.liar_action + 1
