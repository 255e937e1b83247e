"""One hand of heads-up no-limit hold'em at a real table, scalar, in the table's own chips.

A table client (ACPC, Chipzen) keeps the hand it plays in a `TableHand` and asks its bot about it; the
rules are `nlhe`'s, generalised to what real tables have and `nlhe`'s game does not:

- blinds of any size (small blind <= big blind), an ante posted by both players before the blinds
  (dead money: in the pot, never in a round's bets), and stacks that differ;
- short stacks: a player whose stack does not cover the ante and the blind posts what they have, the
  ante first (the other's ante is then cut to the same, as pokerkit trims antes); a player all-in from
  the blinds leaves the other at most a fold or a call, and nothing at all where nothing is to call
  (the part of a bet nobody can call goes back).

Seats as `nlhe`: 0 is the button and small blind (acts first preflop), 1 the big blind (acts first on
the flop, turn and river). Amounts of actions are round totals: a raise to 300 means 300 put in during
this betting round (the blinds count preflop, antes never), as `nlhe.apply` reads them. A bet or raise
adds at least max(big blind, the largest bet or raise increment of the round) unless it is all-in; an
all-in for less does not raise that minimum; folding with nothing to call is illegal; a player who is
all-in, or whose opponent is, cannot raise; a call for less than the bet (all-in) gives back the
excess; once a call leaves a player all-in the betting is over and the board runs out.

    hand = TableHand(TableRules(50, 100), (20_000, 20_000), seat=0, hole=(51, 47))
    hand.legal()                       # Legal(can_fold=True, call_to=100, min_raise_to=200, ...)
    hand.apply(nlhe.RAISE, 300)        # ValueError with one line if illegal
    hand.apply(nlhe.CALL)
    hand.deal([0, 5, 10])              # the flop, once the round has closed

pokerkit is the referee of these rules in the tests, `nlhe` their batched twin on the default game.
Imports no JAX of its own (only `nlhe`'s constants).
"""

from __future__ import annotations

import dataclasses
import numbers
from collections.abc import Sequence
from typing import NamedTuple

from jaxcfr.poker.rules.nlhe import BOARD_SIZES, CALL, FOLD, RAISE

STREET_NAMES = ('preflop', 'flop', 'turn', 'river')
KIND_NAMES = {FOLD: 'fold', CALL: 'check/call', RAISE: 'raise'}


def _is_int(value) -> bool:
  return isinstance(value, numbers.Integral) and not isinstance(value, bool)


@dataclasses.dataclass(frozen=True)
class TableRules:
  """A table's blinds and ante, in its chips."""

  small_blind: int
  big_blind: int
  ante: int = 0  # posted by both players before the blinds; dead money, not part of any round's bets

  def __post_init__(self):
    for name in ('small_blind', 'big_blind', 'ante'):
      value = getattr(self, name)
      if not _is_int(value) or value < 0:
        raise ValueError(f'TableRules: {name} must be a whole number of chips >= 0, got {value!r}')
      object.__setattr__(self, name, int(value))
    if self.big_blind < 1 or self.small_blind > self.big_blind:
      raise ValueError(
        f'TableRules: need 0 <= small blind <= big blind and a big blind of at least 1 chip, got '
        f'{self.small_blind}/{self.big_blind}'
      )


class Legal(NamedTuple):
  """The legal actions of the player to act, as `nlhe.Legal` for one hand (all False / 0 once the hand
  is over)."""

  can_fold: bool  # facing a bet
  call_to: int  # the actor's round total after checking or calling
  min_raise_to: int  # smallest raise-to amount (0 where no raise is allowed)
  max_raise_to: int  # the all-in raise-to amount (0 where no raise is allowed)
  can_raise: bool


class TableHand:
  """One hand at a table, seen from `seat` (ours), with the blinds and antes posted.

  Fields (read them; change the hand only through `apply` and `deal`):
    rules, stacks: the table's rules and each seat's chips at the start of the hand, before antes and
      blinds (tuple of 2 ints, may differ).
    seat, hole: our seat (0 button / small blind, 1 big blind) and our two cards (ids 4 * rank + suit).
    board: the board cards dealt so far (list, 0 to 5 ids).
    street: the betting round, 0 preflop .. 3 river; a finished hand keeps the street of its last action
      (its board may still run out to five cards).
    actions: (street, kind, the actor's round total after the action) per action in order, as
      `nlhe.HandState.history` rows (unchanged amount for a fold or a check).
    to_act, finished, folded: the seat to act (meaningless once finished), whether the betting is over,
      and the seat that folded (None).
    committed, round_bet: chips each seat has put in over the hand (antes and blinds included) and in
      this round (blinds preflop, antes never); lists of 2 ints.
    antes: the ante each seat posted (tuple of 2 ints).
    last_increment, raises, acted: the largest bet or raise increment of this round (the big blind
      preflop), the bets and raises of this round, and whether each seat has acted since the last bet
      or raise (list of 2 bools), as in `nlhe.HandState`.
  """

  def __init__(self, rules: TableRules, stacks: Sequence[int], seat: int, hole: Sequence[int]):
    if not isinstance(rules, TableRules):
      raise ValueError(f'TableHand: rules must be TableRules, got {rules!r}')
    stacks = tuple(stacks)
    if len(stacks) != 2 or not all(_is_int(s) and s >= 1 for s in stacks):
      raise ValueError(f'TableHand: need two stacks of at least 1 chip, got {stacks!r}')
    if seat not in (0, 1):
      raise ValueError(f'TableHand: seat must be 0 or 1, got {seat!r}')
    self.rules = rules
    self.stacks = tuple(int(s) for s in stacks)
    self.seat = int(seat)
    self.hole = tuple(int(c) for c in hole)
    if len(self.hole) != 2:
      raise ValueError(f'TableHand: need two hole cards, got {hole!r}')
    _check_cards(self.hole, (), 'hole cards')
    self.board: list[int] = []
    self.street = 0
    self.actions: list[tuple[int, int, int]] = []
    self.folded: int | None = None
    ante = min(rules.ante, *self.stacks)  # the shorter stack's ante caps both (pokerkit trims antes)
    self.antes = (ante, ante)
    blinds = [min(rules.small_blind, self.stacks[0] - ante), min(rules.big_blind, self.stacks[1] - ante)]
    self.round_bet = blinds
    self.committed = [ante + blinds[0], ante + blinds[1]]
    self.to_act = 0
    self.last_increment = rules.big_blind
    self.raises = 0
    self.acted = [False, False]
    self.finished = False
    behind = self.behind
    if 0 in behind and not (behind[0] > 0 and blinds[0] < blinds[1]):
      # All-in from the blinds with nothing left to decide: the uncallable part goes back.
      self._return_excess()
      self.finished = True

  # What the hand looks like.

  @property
  def behind(self) -> tuple[int, int]:
    """Chips each seat has left."""
    return (self.stacks[0] - self.committed[0], self.stacks[1] - self.committed[1])

  @property
  def pot(self) -> int:
    """Chips in the pot: both seats' commitments over the hand, antes and this round's bets included."""
    return self.committed[0] + self.committed[1]

  @property
  def actor(self) -> int | None:
    """The seat to act, None once the betting is over."""
    return None if self.finished else self.to_act

  @property
  def cards_due(self) -> int:
    """How many board cards `deal` takes next: the street's cards while the betting waits for them (3
    for the flop, 1 for the turn or river), a showdown's runout once the betting is over; else 0."""
    if self.folded is not None or len(self.board) >= 5:
      return 0
    if not self.finished and len(self.board) >= BOARD_SIZES[self.street]:
      return 0
    return 3 if not self.board else 1

  def legal(self) -> Legal:
    """The legal actions of the seat to act (see `Legal`)."""
    if self.finished:
      return Legal(False, 0, 0, 0, False)
    player = self.to_act
    mine, theirs = self.round_bet[player], self.round_bet[1 - player]
    mine_behind, theirs_behind = self.behind[player], self.behind[1 - player]
    to_call = max(theirs - mine, 0)
    can_raise = mine_behind > to_call and theirs_behind > 0
    lowest = min(max(mine, theirs) + max(self.last_increment, self.rules.big_blind), mine + mine_behind)
    return Legal(
      can_fold=to_call > 0,
      call_to=mine + min(to_call, mine_behind),
      min_raise_to=lowest if can_raise else 0,
      max_raise_to=mine + mine_behind if can_raise else 0,
      can_raise=can_raise,
    )

  def chips_won(self, ranks: Sequence[int] | None = None) -> tuple[int, int]:
    """Chips each seat won, zero-sum, once the hand is over: a fold loses what the folder put in; a
    showdown, with `ranks` the seats' hand values (higher is stronger), gives the winner the loser's
    commitment, nothing on a tie (commitments are equal by then)."""
    if not self.finished:
      raise ValueError('the hand is not over')
    if self.folded is not None:
      won = self.committed[self.folded] * (1 if self.folded == 1 else -1)
    else:
      if ranks is None or len(ranks) != 2:
        raise ValueError('a showdown needs both hands ranked')
      first, second = int(ranks[0]), int(ranks[1])
      sign = (first > second) - (first < second)
      won = sign * self.committed[1 if sign > 0 else 0]
    return (won, -won)

  def copy(self) -> TableHand:
    """An independent copy (to try actions on)."""
    other = object.__new__(TableHand)
    other.__dict__.update(self.__dict__)
    for name in ('board', 'actions', 'committed', 'round_bet', 'acted'):
      setattr(other, name, list(getattr(self, name)))
    return other

  def __repr__(self) -> str:
    state = 'over' if self.finished else f'seat {self.to_act} to act'
    return (
      f'TableHand({STREET_NAMES[self.street]}, {state}, committed {self.committed}, round {self.round_bet}, '
      f'stacks {self.stacks}, board {self.board})'
    )

  # Changing the hand.

  def apply(self, kind: int, amount: int = 0) -> None:
    """The seat to act folds (kind 0), checks or calls (1), or bets or raises to `amount` (2: its round
    total after the raise). ValueError with one line if the hand is over, waits for board cards, or
    the action is illegal."""
    if self.finished:
      raise ValueError('illegal action: the hand is over')
    if self.cards_due:
      raise ValueError(f'illegal action: the {STREET_NAMES[self.street]} has not been dealt')
    options = self.legal()
    if kind == RAISE and _is_int(amount) and options.can_raise:
      ok = options.min_raise_to <= amount <= options.max_raise_to
    else:
      ok = kind == CALL or kind == FOLD and options.can_fold
    if not ok:
      shown = f'raise to {amount}' if kind == RAISE else KIND_NAMES.get(kind, f'kind {kind!r}')
      raise ValueError(
        f'illegal action ({shown}) for seat {self.to_act}: fold {options.can_fold}, call to '
        f'{options.call_to}, raise {options.can_raise}'
        + (f' to {options.min_raise_to}..{options.max_raise_to}' if options.can_raise else '')
      )
    player, other = self.to_act, 1 - self.to_act
    mine, theirs = self.round_bet[player], self.round_bet[other]
    top = max(mine, theirs)
    new = options.call_to if kind == CALL else int(amount) if kind == RAISE else mine
    self.actions.append((self.street, int(kind), new))
    if kind == FOLD:
      self.folded, self.finished = player, True
      return
    self.round_bet[player] = new
    self.committed[player] += new - mine
    self.acted[player] = True
    if kind == RAISE:
      self.acted[other] = False
      self.raises += 1
      self.last_increment = max(self.last_increment, new - top)
    short = kind == CALL and new < theirs
    if short:  # an all-in call for less than the bet: the unmatched part goes back to the bettor
      self._return_excess()
    all_in = 0 in self.behind
    closed = all(self.acted) and self.round_bet[0] == self.round_bet[1] or kind == CALL and all_in or short
    if not closed:
      self.to_act = other
    elif self.street == 3 or all_in:
      self.finished = True
    else:
      self.street += 1
      self.round_bet = [0, 0]
      self.to_act = 1
      self.last_increment = 0
      self.raises = 0
      self.acted = [False, False]

  def deal(self, cards: Sequence[int]) -> None:
    """Adds the next street's board cards (3 for the flop, then 1 at a time), when the betting waits
    for them or a showdown runs out the board; ValueError with one line otherwise, or for a card
    already seen."""
    cards = [int(c) for c in cards]
    due = self.cards_due
    if not due:
      raise ValueError(f'no board cards are due ({len(self.board)} dealt, {STREET_NAMES[self.street]})')
    if len(cards) != due:
      raise ValueError(f'the next street takes {due} board card{"s" * (due > 1)}, got {len(cards)}')
    _check_cards(cards, (*self.hole, *self.board), 'board cards')
    self.board.extend(cards)

  def _return_excess(self) -> None:
    """Gives back the part of the larger round bet that the other seat cannot match (it is all-in)."""
    low = min(self.round_bet)
    for player in (0, 1):
      excess = self.round_bet[player] - low
      self.round_bet[player] -= excess
      self.committed[player] -= excess


def _check_cards(cards: Sequence[int], seen: Sequence[int], what: str) -> None:
  if any(not 0 <= c <= 51 for c in cards) or len(set(cards)) != len(cards) or set(cards) & set(seen):
    raise ValueError(f'{what} {list(cards)}: need distinct card ids 0..51 not already dealt')
