"""pokerkit as the referee of `jaxcfr.poker.rules.nlhe`: replays hands of our engine action by action.

pokerkit (PyPI, 0.7) with `player_count=2` reverses the blinds: its player 0 posts the big blind
and its player 1 is the button (our player 0). Everything but dealing and acting is automated,
runout-count selection included (otherwise an all-in waits for that choice); burn cards are
burnt by hand as unknown cards, so that pokerkit never draws from its own shuffled deck. Its `can_fold()` is
False when there is nothing to call, as ACPC's rules say. `total_pot_amount` counts the pots and
this round's bets; `payoffs` are chips won.
"""

from __future__ import annotations

from typing import NamedTuple

import pokerkit

from abstractions import NoLimitRules

_RANKS, _SUITS = '23456789TJQKA', 'cdhs'
AUTOMATIONS = (
  pokerkit.Automation.ANTE_POSTING,
  pokerkit.Automation.BET_COLLECTION,
  pokerkit.Automation.BLIND_OR_STRADDLE_POSTING,
  pokerkit.Automation.HOLE_CARDS_SHOWING_OR_MUCKING,
  pokerkit.Automation.HAND_KILLING,
  pokerkit.Automation.CHIPS_PUSHING,
  pokerkit.Automation.CHIPS_PULLING,
  pokerkit.Automation.RUNOUT_COUNT_SELECTION,
)


def card_text(cards) -> str:
  return ''.join(_RANKS[int(c) // 4] + _SUITS[int(c) % 4] for c in cards)


class View(NamedTuple):
  """What pokerkit says before an action, in our players' numbering and units."""

  actor: int
  can_fold: bool
  call: int  # chips to add to check or call
  can_raise: bool
  min_raise_to: int
  max_raise_to: int
  pot: int


class Replay(NamedTuple):
  views: list  # a View before each action
  payoffs: tuple  # chips won by our players 0 and 1
  finished_after: list  # whether pokerkit's hand needs no more actions after each action


def replay(hole, board, actions, rules: NoLimitRules | None = None) -> Replay:
  """Plays one hand through pokerkit: hole int [2, 2] (our players), board int [5], actions a list of
  (kind, amount) with kinds 0 fold, 1 check/call, 2 raise to amount (this round's total)."""
  rules = NoLimitRules() if rules is None else rules
  state = pokerkit.NoLimitTexasHoldem.create_state(
    AUTOMATIONS,
    True,
    rules.ante,
    (rules.small_blind, rules.big_blind),
    rules.big_blind,
    rules.stack,
    2,
  )
  state.deal_hole(card_text(hole[1]))  # pokerkit's player 0: the big blind, our player 1
  state.deal_hole(card_text(hole[0]))
  dealt = 0

  def deal_boards():
    nonlocal dealt
    while state.can_burn_card() or state.can_deal_board():
      if state.can_burn_card():  # an unknown card, so that pokerkit's own deck is not drawn from
        state.burn_card('??')
        continue
      count = 3 if dealt == 0 else 1
      state.deal_board(card_text(board[dealt : dealt + count]))
      dealt += count

  views, finished_after = [], []
  for kind, amount in actions:
    deal_boards()
    if state.actor_index is None:
      raise AssertionError('pokerkit has no player to act but our engine has an action')
    can_raise = state.can_complete_bet_or_raise_to()
    views.append(
      View(
        actor=1 - state.actor_index,
        can_fold=state.can_fold(),
        call=int(state.checking_or_calling_amount),
        can_raise=can_raise,
        min_raise_to=int(state.min_completion_betting_or_raising_to_amount) if can_raise else 0,
        max_raise_to=int(state.max_completion_betting_or_raising_to_amount) if can_raise else 0,
        pot=int(state.total_pot_amount),
      )
    )
    if kind == 0:
      state.fold()
    elif kind == 1:
      state.check_or_call()
    else:
      state.complete_bet_or_raise_to(int(amount))
    deal_boards()
    finished_after.append(state.actor_index is None)
  payoffs = state.payoffs  # pokerkit's players
  return Replay(views, (int(payoffs[1]), int(payoffs[0])), finished_after)
