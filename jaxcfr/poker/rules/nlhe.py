"""Heads-up no-limit hold'em, the real game, as batched array code (NumPy on the host, int64 chips).

Rules (`abstractions.NoLimitRules`, ACPC / Slumbot by default: blinds 50/100, stacks 20,000 reset every hand,
no ante; an ante is posted by each player before the blinds, dead money: in `committed` and the pot, not in a
round's bets): player 0 is the small blind and the button, acts first preflop and last on the flop, turn and
river. A bet or raise must add at least max(big blind, the last bet or raise increment of the round) unless it
puts the player all-in; an all-in for less is always allowed and does not lower the next minimum; folding when
not facing a bet is illegal; after a call of an all-in the board runs out. `abstractions.betting` is the
scalar reference of these rules and pokerkit the oracle of the tests.

Every function works on a batch of B hands at once, vectorised over B (no Python loop per hand):

    state = nlhe.deal(seed, batch=4096)                 # HandState of 4096 hands, blinds posted
    can_fold, call_to, min_to, max_to, can_raise = nlhe.legal(state)
    state = nlhe.apply(state, kind, amount, mask)        # kind 0 fold, 1 check/call, 2 bet/raise to amount
    chips = nlhe.payoffs(state)                          # int64 [B, 2] once every hand is finished

Glossary: B hands, L = `max_actions(rules)` history slots, A actions of an `ActionSet`, K candidate
hole-card pairs of a policy query. Card ids are `4 * rank + suit` (rank 0 = deuce .. 12 = ace).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from typing import NamedTuple, Protocol

import numpy as np

from abstractions.betting import NoLimitRules

DEFAULT_RULES = NoLimitRules()  # ACPC / Slumbot: blinds 50/100, stacks 20,000
FOLD, CALL, RAISE = 0, 1, 2  # action kinds; CALL is a check when nothing is to call
BOARD_SIZES = np.array([0, 3, 4, 5], np.int8)  # visible board cards by street


class HandState(NamedTuple):
  """A batch of B hands of heads-up no-limit hold'em; every array leads with B.

  `committed` counts the blinds; amounts of a round (`round_bet`, raise-to amounts) are the chips a
  player has put in during that round. History rows are (street, kind, the actor's round total after
  the action: the raise-to amount of a raise, the call-to amount of a call, unchanged for a fold or a
  check); kind -1 marks an empty slot. A finished hand keeps the street of its last action (an all-in
  preflop stays street 0); its showdown uses all five board cards.
  """

  hole: np.ndarray  # int8 [B, 2, 2]  hole cards of (player, card)
  board: np.ndarray  # int8 [B, 5]  all five dealt up front; street s shows board[:, :BOARD_SIZES[s]]
  street: np.ndarray  # int8 [B]  0 preflop .. 3 river
  committed: np.ndarray  # int64 [B, 2]  chips each player has put in over the hand
  round_bet: np.ndarray  # int64 [B, 2]  chips put in this round
  to_act: np.ndarray  # int8 [B]  the player to act
  last_increment: np.ndarray  # int64 [B]  the largest bet or raise increment of this round (0: none yet)
  raises: np.ndarray  # int8 [B]  bets and raises this round
  acted: np.ndarray  # bool [B, 2]  whether each player has acted since the last bet or raise
  folded: np.ndarray  # int8 [B]  -1, or the player who folded
  finished: np.ndarray  # bool [B]
  history: np.ndarray  # int64 [B, L, 3]  (street, kind, round total after the action); kind -1 = empty
  num_actions: np.ndarray  # int16 [B]
  noise: np.ndarray  # float64 [B, L]  uniform draws fixed at the deal (randomised translation)
  rules: NoLimitRules = DEFAULT_RULES


class ActionSet(NamedTuple):
  """A finite set of real actions per hand (kinds as in `apply`); `valid` marks the legal slots."""

  kind: np.ndarray  # int8 [B, A]
  amount: np.ndarray  # int64 [B, A]  the raise-to amount of a raise (this round's total), else ignored
  valid: np.ndarray  # bool [B, A]


class Policy(Protocol):
  """A stateless policy: everything it needs comes from the state and the candidate hole cards, so
  hypothetical states can be queried (e.g. by local best response)."""

  name: str

  def strategy(self, state: HandState, holes: np.ndarray) -> tuple[ActionSet, np.ndarray]:
    """Distribution over a finite set of real actions for the player to act in every hand of the batch.

    holes: int [B, K, 2] candidate hole cards of that player (K = 1 to act, K = 1,326 for range
    queries). Returns an ActionSet ([B, A], real and legal actions) and probabilities float [B, K, A]
    (0 on invalid slots, rows sum to 1).
    """
    ...


class Legal(NamedTuple):
  """The legal actions of the player to act, per hand (all False / 0 in finished hands)."""

  can_fold: np.ndarray  # bool [B]  facing a bet
  call_to: np.ndarray  # int64 [B]  the actor's round total after checking or calling
  min_raise_to: np.ndarray  # int64 [B]  smallest raise-to amount (0 where no raise is allowed)
  max_raise_to: np.ndarray  # int64 [B]  the all-in raise-to amount (0 where no raise is allowed)
  can_raise: np.ndarray  # bool [B]


def max_actions(rules: NoLimitRules = DEFAULT_RULES) -> int:
  """History slots L that any hand fits in: every bet or raise but an all-in adds at least a big blind
  to the round's top bet, and each round has at most two checks or calls besides its raises."""
  return math.ceil(rules.stack / rules.big_blind) + 10


def generator(key_or_seed) -> np.random.Generator:
  """A NumPy generator from an int seed or a `jax.random.key` (a seed s and `jax.random.key(s)` give
  the same stream)."""
  import jax  # noqa: PLC0415

  if isinstance(key_or_seed, int | np.integer) and not isinstance(key_or_seed, bool):
    key_or_seed = jax.random.key(int(key_or_seed))
  try:
    data = np.asarray(jax.random.key_data(key_or_seed)).astype(np.uint32).reshape(-1)
  except (TypeError, ValueError):
    raise ValueError(f'need an int seed or a jax.random.key, got {key_or_seed!r}') from None
  return np.random.default_rng([int(word) for word in data])


def deal(key_or_seed, batch: int, rules: NoLimitRules = DEFAULT_RULES) -> HandState:
  """B = `batch` new hands with the blinds posted: nine distinct cards per hand (two hole cards per
  player, then the five board cards) and the noise, drawn deterministically from the seed or key."""
  if not isinstance(batch, int | np.integer) or batch < 0:
    raise ValueError(f'batch must be a non-negative integer, got {batch!r}')
  rng = generator(key_or_seed)
  cards = np.argsort(rng.random((batch, 52)), axis=1)[:, :9].astype(np.int8)  # [B, 9]
  noise = rng.random((batch, max_actions(rules)))
  return initial(cards[:, :4].reshape(batch, 2, 2), cards[:, 4:], rules, noise)


def initial(hole, board, rules: NoLimitRules = DEFAULT_RULES, noise=None) -> HandState:
  """New hands from given cards, hole int [B, 2, 2] and board int [B, 5] (distinct ids per hand), with
  the antes and blinds posted; noise float [B, L] (default: zeros)."""
  hole = np.asarray(hole).astype(np.int8)
  board = np.asarray(board).astype(np.int8)
  batch = hole.shape[0]
  if hole.shape != (batch, 2, 2) or board.shape != (batch, 5):
    raise ValueError(f'need hole [B, 2, 2] and board [B, 5], got {hole.shape} and {board.shape}')
  cards = np.concatenate([hole.reshape(batch, 4), board], axis=1).astype(np.int64)
  if np.any((cards < 0) | (cards > 51)):
    raise ValueError('card ids must be in 0..51')
  ordered = np.sort(cards, axis=1)
  if np.any(ordered[:, 1:] == ordered[:, :-1]):
    raise ValueError('the nine cards of a hand must be distinct')
  length = max_actions(rules)
  noise = np.zeros((batch, length)) if noise is None else np.asarray(noise, np.float64)
  if noise.shape != (batch, length):
    raise ValueError(f'need noise [B, {length}], got {noise.shape}')
  blinds = np.broadcast_to(np.array([rules.small_blind, rules.big_blind], np.int64), (batch, 2))
  return HandState(
    hole=hole,
    board=board,
    street=np.zeros(batch, np.int8),
    committed=blinds + rules.ante,
    round_bet=blinds.copy(),
    to_act=np.zeros(batch, np.int8),
    last_increment=np.full(batch, rules.big_blind, np.int64),
    raises=np.zeros(batch, np.int8),
    acted=np.zeros((batch, 2), bool),
    folded=np.full(batch, -1, np.int8),
    finished=np.zeros(batch, bool),
    history=np.full((batch, length, 3), -1, np.int64),
    num_actions=np.zeros(batch, np.int16),
    noise=noise,
    rules=rules,
  )


def pot(state: HandState) -> np.ndarray:
  """Chips in the pot, int64 [B]: both players' commitments over the hand, this round's included."""
  return state.committed.sum(axis=1)


def stacks(state: HandState) -> np.ndarray:
  """Chips each player has behind, int64 [B, 2]."""
  return state.rules.stack - state.committed


def actor(state: HandState) -> np.ndarray:
  """The player to act, int8 [B], -1 in finished hands."""
  return np.where(state.finished, -1, state.to_act).astype(np.int8)


def board_size(state: HandState) -> np.ndarray:
  """Board cards visible at the current street, int8 [B] (0, 3, 4 or 5)."""
  return BOARD_SIZES[state.street]


def visible_board(state: HandState) -> np.ndarray:
  """The board as the players see it now, int8 [B, 5], -1 for cards not yet shown."""
  shown = np.arange(5) < board_size(state)[:, None]
  return np.where(shown, state.board, -1).astype(np.int8)


def take(state: HandState, index) -> HandState:
  """The sub-batch of hands at `index` (int positions or a bool mask [B])."""
  return state._replace(**{name: getattr(state, name)[index] for name in state._fields if name != 'rules'})


def concatenate(states: Sequence[HandState]) -> HandState:
  """One batch of the hands of several states (the same rules), in order."""
  if not states or any(state.rules != states[0].rules for state in states):
    raise ValueError('concatenate needs at least one state, all with the same rules')
  fields = {
    name: np.concatenate([getattr(state, name) for state in states]) for name in HandState._fields[:-1]
  }
  return HandState(**fields, rules=states[0].rules)


def raise_basis(state: HandState) -> tuple[np.ndarray, np.ndarray]:
  """(the top bet of the round, the pot once the player to act has called), int64 [B] each: a raise
  to T is a raise of (T - top) / (pot after calling) of the pot, the fraction that bet abstractions
  and their translation use."""
  *_, mine, theirs = _actor_view(state)
  top = np.maximum(mine, theirs)
  return top, pot(state) + top - mine


def pot_raise_to(state: HandState) -> np.ndarray:
  """The raise-to amount int64 [B] of a pot-size bet or raise, clamped to the legal range: calling
  first, then raising by the pot after the call (top bet + pot + to call); 0 where no raise is allowed."""
  options = legal(state)
  top, after_call = raise_basis(state)
  wanted = top + after_call
  return np.where(options.can_raise, np.clip(wanted, options.min_raise_to, options.max_raise_to), 0)


def _actor_view(state: HandState):
  """(batch positions, actor, opponent, actor's round bet, opponent's round bet), each [B]."""
  rows = np.arange(state.street.shape[0])
  player = state.to_act.astype(np.int64)
  return rows, player, 1 - player, state.round_bet[rows, player], state.round_bet[rows, 1 - player]


def legal(state: HandState) -> Legal:
  """The legal actions of the player to act in every hand (see `Legal`)."""
  rows, player, other, mine, theirs = _actor_view(state)
  behind = stacks(state)
  mine_behind, theirs_behind = behind[rows, player], behind[rows, other]
  live = ~state.finished
  to_call = np.maximum(theirs - mine, 0)
  all_in_to = mine + mine_behind
  can_raise = live & (mine_behind > to_call) & (theirs_behind > 0)
  lowest = np.minimum(
    np.maximum(mine, theirs) + np.maximum(state.last_increment, state.rules.big_blind), all_in_to
  )
  return Legal(
    can_fold=live & (to_call > 0),
    call_to=np.where(live, mine + np.minimum(to_call, mine_behind), 0),
    min_raise_to=np.where(can_raise, lowest, 0),
    max_raise_to=np.where(can_raise, all_in_to, 0),
    can_raise=can_raise,
  )


def is_legal(state: HandState, kind, amount) -> np.ndarray:
  """Whether each action (kind int [B], amount int [B], as in `apply`) is legal, bool [B]; False in
  finished hands."""
  batch = state.street.shape[0]
  kind = np.broadcast_to(np.asarray(kind, np.int64), (batch,))
  amount = np.broadcast_to(np.asarray(amount), (batch,))
  return _is_legal(state, legal(state), kind, amount)


def _is_legal(state: HandState, options: Legal, kind: np.ndarray, amount: np.ndarray) -> np.ndarray:
  raise_ok = options.can_raise & (amount >= options.min_raise_to) & (amount <= options.max_raise_to)
  return ~state.finished & ((kind == CALL) | (kind == FOLD) & options.can_fold | (kind == RAISE) & raise_ok)


def fold_call_raise(state: HandState, raise_to: np.ndarray) -> ActionSet:
  """Three actions per hand, as the baselines offer them: [fold, check/call, raise to `raise_to`],
  int8/int64/bool [B, 3]. Finished hands offer a nominal check (policies are only asked about hands in
  play)."""
  options = legal(state)
  batch = options.can_fold.shape[0]
  kind = np.broadcast_to(np.array([FOLD, CALL, RAISE], np.int8), (batch, 3)).copy()
  amount = np.stack([np.zeros(batch, np.int64), options.call_to, np.where(options.can_raise, raise_to, 0)], 1)
  valid = np.stack([options.can_fold, np.ones(batch, bool), options.can_raise], axis=1)
  return ActionSet(kind, amount, valid)


def apply(state: HandState, kind, amount=None, mask=None) -> HandState:
  """The hands after the player to act takes an action in every hand where `mask` [B] is True
  (default: every unfinished hand); the other hands are unchanged.

  kind int [B]: 0 fold, 1 check or call, 2 bet or raise to `amount` int [B] (this round's total for
  the actor; ignored for other kinds). Raises ValueError, naming the first such hand, if a masked hand
  is finished or its action is illegal. Pure: returns a new state.
  """
  batch = state.street.shape[0]
  kind = np.broadcast_to(np.asarray(kind, np.int64), (batch,))
  amount = np.zeros(batch, np.int64) if amount is None else np.asarray(amount)
  if amount.dtype.kind not in 'iu':
    if np.any(amount != np.round(amount)):
      raise ValueError('raise amounts must be whole chips')
    amount = amount.astype(np.int64)
  amount = np.broadcast_to(amount.astype(np.int64), (batch,))
  mask = ~state.finished if mask is None else np.broadcast_to(np.asarray(mask, bool), (batch,))
  rules = state.rules
  options = legal(state)
  is_fold, is_call, is_raise = mask & (kind == FOLD), mask & (kind == CALL), mask & (kind == RAISE)
  bad = mask & ~_is_legal(state, options, kind, amount)
  if bad.any():
    hand = int(np.flatnonzero(bad)[0])
    why = 'the hand is over' if state.finished[hand] else f'kind {kind[hand]}, amount {amount[hand]}'
    raise ValueError(
      f'illegal action in hand {hand} ({why}); legal: fold {bool(options.can_fold[hand])}, call to '
      f'{options.call_to[hand]}, raise {bool(options.can_raise[hand])} to '
      f'{options.min_raise_to[hand]}..{options.max_raise_to[hand]}'
    )
  rows, player, other, mine, theirs = _actor_view(state)
  top = np.maximum(mine, theirs)
  new_mine = np.where(is_call, options.call_to, np.where(is_raise, amount, mine))
  round_bet = state.round_bet.copy()
  committed = state.committed.copy()
  round_bet[rows, player] = new_mine
  committed[rows, player] += new_mine - mine
  acted = state.acted.copy()
  acted[rows, player] |= mask
  acted[rows, other] &= ~is_raise
  raises = state.raises + is_raise
  last_increment = np.where(is_raise, np.maximum(state.last_increment, amount - top), state.last_increment)
  # An all-in call for less than the bet: the unmatched part goes back to the bettor.
  short = is_call & (new_mine < theirs)
  excess = np.where(short, theirs - new_mine, 0)
  round_bet[rows, other] -= excess
  committed[rows, other] -= excess
  behind = rules.stack - committed
  someone_all_in = (behind == 0).any(axis=1)
  closed = (is_call | is_raise) & (
    acted.all(axis=1) & (round_bet[:, 0] == round_bet[:, 1]) | is_call & someone_all_in | short
  )
  ends = closed & ((state.street == 3) | someone_all_in)
  advance = closed & ~ends
  history = state.history.copy()
  slot = np.minimum(state.num_actions.astype(np.int64), history.shape[1] - 1)
  written = np.stack([state.street.astype(np.int64), kind, new_mine], axis=1)  # [B, 3]
  history[rows[mask], slot[mask]] = written[mask]
  return state._replace(
    street=(state.street + advance).astype(np.int8),
    committed=committed,
    round_bet=np.where(advance[:, None], 0, round_bet),
    to_act=np.where(advance, 1, np.where(mask, other, state.to_act)).astype(np.int8),
    last_increment=np.where(advance, 0, last_increment),
    raises=np.where(advance, 0, raises).astype(np.int8),
    acted=np.where(advance[:, None], False, acted),
    folded=np.where(is_fold, player, state.folded).astype(np.int8),
    finished=state.finished | is_fold | ends,
    history=history,
    num_actions=(state.num_actions + mask).astype(np.int16),
  )


@functools.cache
def _hand_rank():
  import jax  # noqa: PLC0415

  from abstractions import hand_rank  # noqa: PLC0415

  return jax.jit(hand_rank)


def showdown_ranks(state: HandState) -> np.ndarray:
  """Each player's best five-card hand value on the full board, int32 [B, 2] (`abstractions.hand_rank`,
  higher is stronger)."""
  batch = state.street.shape[0]
  board = np.broadcast_to(state.board[:, None, :], (batch, 2, 5))
  cards = np.concatenate([state.hole, board], axis=2).astype(np.int32)  # [B, 2, 7]
  if batch == 0:
    return np.zeros((0, 2), np.int32)
  size = 1 << (batch - 1).bit_length()  # padded to a power of two: few compiled shapes
  cards = np.concatenate([cards, np.repeat(cards[:1], size - batch, axis=0)])
  return np.asarray(_hand_rank()(cards))[:batch]


def payoffs(state: HandState) -> np.ndarray:
  """Chips won by each player, int64 [B, 2], zero-sum: a fold loses what the folder put in; a showdown
  gives the better hand the other's commitment, a tie splits (commitments are equal by then). Raises
  ValueError if a hand is not finished."""
  if not state.finished.all():
    raise ValueError(f'{int((~state.finished).sum())} hands are not finished')
  ranks = showdown_ranks(state)
  folded = state.folded.astype(np.int64)
  # Winner's sign for player 0: +1, -1, or 0 on a tie.
  sign = np.where(folded >= 0, np.where(folded == 0, -1, 1), np.sign(ranks[:, 0] - ranks[:, 1]))
  won = sign * np.where(sign > 0, state.committed[:, 1], state.committed[:, 0])
  return np.stack([won, -won], axis=1).astype(np.int64)


def from_actions(
  actions: Sequence[Sequence[tuple[int, int]]],
  hole=None,
  board=None,
  rules: NoLimitRules = DEFAULT_RULES,
  noise=None,
) -> HandState:
  """Hands after the given actions: `actions[b]` lists (kind, amount) pairs of hand b in order (amount
  only read for raises). Cards default to a fixed arrangement (hole 0-3, board 4-8) when not given;
  the actions must be legal (ValueError otherwise)."""
  batch = len(actions)
  if hole is None:
    hole = np.broadcast_to(np.arange(4).reshape(1, 2, 2), (batch, 2, 2))
  if board is None:
    board = np.broadcast_to(np.arange(4, 9), (batch, 5))
  state = initial(hole, board, rules, noise)
  steps = max((len(row) for row in actions), default=0)
  kinds = np.full((batch, steps), -1, np.int64)
  amounts = np.zeros((batch, steps), np.int64)
  for b, row in enumerate(actions):
    for t, (kind, amount) in enumerate(row):
      kinds[b, t], amounts[b, t] = kind, amount
  return replay(state, kinds, amounts)


def replay(state: HandState, kinds, amounts) -> HandState:
  """Applies actions kinds / amounts int [B, T] column by column; kind -1 pads (no action)."""
  kinds, amounts = np.asarray(kinds, np.int64), np.asarray(amounts, np.int64)
  for t in range(kinds.shape[1]):
    state = apply(state, kinds[:, t], amounts[:, t], kinds[:, t] >= 0)
  return state
