"""No-limit bet abstraction: rules, abstract bet sizes, legal actions, and
translation of off-tree bets (pseudo-harmonic mapping).

Host-side game definition in plain Python: a betting state is small and the
abstract tree is built once. Two players (heads-up); chips are integers.

No-limit rules used here: each player's ante (if any) and the small and big blinds
are posted (an ante is dead money: in the pot, not part of a round's bets); preflop the small
blind (the button) acts first and the big blind keeps the option to raise a call;
after the flop the big blind acts first. A bet or raise must add at least the
larger of the big blind and the last bet or raise increment of the round, unless
it puts the player all-in; a short all-in does not lower the next minimum. A
player never puts in more than their stack; a call for less than the bet is an
all-in call and the unmatched part goes back.
"""

from __future__ import annotations

import dataclasses
import math
import random
from typing import NamedTuple

STREETS = ('preflop', 'flop', 'turn', 'river')


@dataclasses.dataclass(frozen=True)
class NoLimitRules:
  """Blinds, starting stacks (the same for both players, before anything is posted) and each
  player's ante (dead money posted before the blinds, 0 by default), in chips."""

  small_blind: int = 50
  big_blind: int = 100
  stack: int = 20_000
  ante: int = 0

  def __post_init__(self):
    if not (0 < self.small_blind <= self.big_blind < self.stack - self.ante) or self.ante < 0:
      raise ValueError(f'need 0 < small_blind <= big_blind < stack - ante and ante >= 0, got {self}')


def rules_dict(rules: NoLimitRules) -> dict:
  """The rules as a dict for files and fingerprints: without the ante where it is 0, so that what
  was written before antes existed reads and hashes as it did."""
  out = dataclasses.asdict(rules)
  if not out['ante']:
    del out['ante']
  return out


@dataclasses.dataclass(frozen=True)
class BetAbstraction:
  """Abstract bet sizes as fractions of the pot, per street and raise depth.

  fractions[street][depth] lists the sizes (fraction of the pot after calling)
  allowed for the depth-th bet or raise of the round (depth 0 = the first bet; the
  last entry is used for deeper raises). raise_cap limits bets plus raises per
  round (the all-in included): one number for every street, or one per street
  (preflop, flop, turn, river); all_in adds the all-in to every raise choice.
  """

  fractions: tuple[tuple[tuple[float, ...], ...], ...] = (((0.33, 0.75, 1.5), (0.75, 1.5)),) * 4
  raise_cap: int | tuple[int, int, int, int] = 3
  all_in: bool = True

  def __post_init__(self):
    if len(self.fractions) != 4 or any(not street for street in self.fractions):
      raise ValueError('fractions needs, for each of the 4 streets, at least one raise depth')
    for street in self.fractions:
      for sizes in street:
        if any(not (f > 0 and math.isfinite(f)) for f in sizes):
          raise ValueError(f'bet sizes must be positive fractions of the pot, got {sizes}')
    caps = self.raise_cap if isinstance(self.raise_cap, tuple) else (self.raise_cap,) * 4
    if len(caps) != 4 or any(isinstance(c, bool) or not isinstance(c, int) or c < 0 for c in caps):
      raise ValueError(
        f'raise_cap must be an integer >= 0 or four of them (one per street), got {self.raise_cap}'
      )

  def cap(self, street: int) -> int:
    """Bets plus raises allowed in a round of `street` (0 preflop .. 3 river)."""
    return self.raise_cap[street] if isinstance(self.raise_cap, tuple) else self.raise_cap

  def sizes(self, street: int, depth: int) -> tuple[float, ...]:
    by_depth = self.fractions[street]
    return tuple(sorted(by_depth[min(depth, len(by_depth) - 1)]))


class Action(NamedTuple):
  """kind: 'fold', 'check', 'call', 'bet' (a bet or raise to `amount` chips in this round in total)."""

  kind: str
  amount: int = 0


@dataclasses.dataclass(frozen=True)
class BettingState:
  """Public betting state of a heads-up no-limit hand.

  committed: chips each player has put in the pot over the whole hand; round_bet:
  chips each put in during this round; to_act: 0 (small blind / button) or 1;
  raises: bets and raises so far this round; last_increment: size of the last
  bet or raise this round (the minimum next increment, at least the big blind);
  acted: whether each player has acted this round; folded: the folding player or None.
  """

  rules: NoLimitRules
  street: int = 0
  committed: tuple[int, int] = (0, 0)
  round_bet: tuple[int, int] = (0, 0)
  to_act: int = 0
  raises: int = 0
  last_increment: int = 0
  acted: tuple[bool, bool] = (False, False)
  folded: int | None = None
  finished: bool = False

  @property
  def pot(self) -> int:
    return sum(self.committed)

  def stack_left(self, player: int) -> int:
    return self.rules.stack - self.committed[player]

  @property
  def to_call(self) -> int:
    return max(self.round_bet) - self.round_bet[self.to_act]


def initial_state(rules: NoLimitRules) -> BettingState:
  """Antes and blinds posted; the small blind (player 0) acts first preflop."""
  blinds = (rules.small_blind, rules.big_blind)
  posted = (rules.ante + rules.small_blind, rules.ante + rules.big_blind)
  return BettingState(rules, 0, posted, blinds, 0, 0, rules.big_blind, (False, False))


def min_raise_to(state: BettingState) -> int:
  """The smallest legal raise-to amount (this round's total) for the player to act, or
  their all-in if that is smaller."""
  player = state.to_act
  target = max(state.round_bet) + max(state.last_increment, state.rules.big_blind)
  return min(target, state.round_bet[player] + state.stack_left(player))


def legal_actions(state: BettingState, abstraction: BetAbstraction | None = None) -> list[Action]:
  """Legal actions of the player to act; with an abstraction, only its bet sizes.

  Without an abstraction every legal bet-to amount is listed (fold, check/call, then
  each integer raise-to from the minimum to all-in).
  """
  if state.finished:
    return []
  player = state.to_act
  actions = []
  to_call = state.to_call
  stack = state.stack_left(player)
  if to_call > 0:
    actions.append(Action('fold'))
    actions.append(Action('call', state.round_bet[player] + min(to_call, stack)))
  else:
    actions.append(Action('check'))
  opponent_all_in = state.stack_left(1 - player) == 0
  if stack <= to_call or opponent_all_in:
    return actions
  all_in_to = state.round_bet[player] + stack
  lowest = min_raise_to(state)
  if abstraction is None:
    return actions + [Action('bet', amount) for amount in range(lowest, all_in_to + 1)]
  if state.raises >= abstraction.cap(state.street):
    return actions
  pot_after_call = state.pot + to_call
  amounts = set()
  for fraction in abstraction.sizes(state.street, state.raises):
    raise_to = max(state.round_bet) + int(round(fraction * pot_after_call))
    amounts.add(min(max(raise_to, lowest), all_in_to))
  if abstraction.all_in:
    amounts.add(all_in_to)
  return actions + [Action('bet', amount) for amount in sorted(amounts)]


def is_legal(state: BettingState, action: Action) -> bool:
  """Whether an action follows the no-limit rules (any size, not only abstract ones)."""
  if state.finished:
    return False
  player = state.to_act
  to_call, stack = state.to_call, state.stack_left(player)
  if action.kind == 'fold':
    return to_call > 0
  if action.kind == 'check':
    return to_call == 0
  if action.kind == 'call':
    return to_call > 0 and action.amount == state.round_bet[player] + min(to_call, stack)
  if action.kind == 'bet':
    if stack <= to_call or state.stack_left(1 - player) == 0:
      return False
    return min_raise_to(state) <= action.amount <= state.round_bet[player] + stack
  return False


def apply_action(state: BettingState, action: Action) -> BettingState:
  """The state after a legal action (raises ValueError on an illegal one)."""
  if not is_legal(state, action):
    raise ValueError(f'illegal action {action} in {state}')
  player, other = state.to_act, 1 - state.to_act
  committed, round_bet = list(state.committed), list(state.round_bet)
  acted = [*state.acted]
  acted[player] = True
  if action.kind == 'fold':
    return dataclasses.replace(state, folded=player, finished=True, acted=tuple(acted))
  raises, increment = state.raises, state.last_increment
  if action.kind in ('call', 'bet'):
    added = action.amount - round_bet[player]
    committed[player] += added
    round_bet[player] = action.amount
  if action.kind == 'bet':
    raises += 1
    increment = max(increment, action.amount - max(state.round_bet))
    acted[other] = False
  state = dataclasses.replace(
    state,
    committed=tuple(committed),
    round_bet=tuple(round_bet),
    to_act=other,
    raises=raises,
    last_increment=increment,
    acted=tuple(acted),
  )
  round_closed = (
    all(acted)
    and round_bet[0] == round_bet[1]
    or (action.kind == 'call' and (state.stack_left(player) == 0 or state.stack_left(other) == 0))
  )
  if action.kind == 'call' and round_bet[player] < round_bet[other]:  # an all-in call for less
    excess = round_bet[other] - round_bet[player]
    committed[other] -= excess
    round_bet[other] -= excess
    state = dataclasses.replace(state, committed=tuple(committed), round_bet=tuple(round_bet))
    round_closed = True
  if not round_closed:
    return state
  if state.street == 3 or state.stack_left(0) == 0 or state.stack_left(1) == 0:
    return dataclasses.replace(state, finished=True)
  # Next street: the big blind (player 1) acts first after the flop.
  return dataclasses.replace(
    state,
    street=state.street + 1,
    round_bet=(0, 0),
    to_act=1,
    raises=0,
    last_increment=0,
    acted=(False, False),
  )


def pseudo_harmonic(x: float, a: float, b: float) -> float:
  """Probability of mapping a bet x (pot fraction) to the smaller abstract size a < x < b.

  Ganzfried & Sandholm (IJCAI 2013): f(x) = ((b - x)(1 + a)) / ((b - a)(1 + x)).
  Equals 1 at x = a and 0 at x = b, and decreases in between.
  """
  if not a < b:
    raise ValueError(f'need a < b, got a={a}, b={b}')
  return ((b - x) * (1 + a)) / ((b - a) * (1 + x))


def translate(x: float, sizes, rng: random.Random | None = None) -> float:
  """Maps an off-tree bet x (fraction of the pot) to one of the abstract sizes.

  Below the smallest size or above the largest, the nearest end; between two
  neighbours a < x < b, a with probability `pseudo_harmonic(x, a, b)`: drawn
  from `rng` (randomised), or a exactly when that probability is at least 1/2
  (deterministic, rng None).
  """
  sizes = sorted(float(s) for s in sizes)
  if not sizes:
    raise ValueError('translate needs at least one abstract size')
  if x <= sizes[0]:
    return sizes[0]
  if x >= sizes[-1]:
    return sizes[-1]
  upper = next(i for i, s in enumerate(sizes) if s >= x)
  a, b = sizes[upper - 1], sizes[upper]
  if x == b:
    return b
  p = pseudo_harmonic(x, a, b)
  if rng is None:
    return a if p >= 0.5 else b
  return a if rng.random() < p else b
