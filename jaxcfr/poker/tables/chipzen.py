"""Chipzen (the `chipzen-bot` SDK, an optional extra: `pip install 'jaxcfr[chipzen]'`): jaxcfr's bots
at Chipzen's tables, and Chipzen bots in jaxcfr's matches.

    seat = ChipzenSeat(Seat(policy))                  # no SDK needed: what a Chipzen bot does
    bot = bot_class()(seat)                           # a `chipzen.Bot` that plays the policy
    policy = chipzen_policy('chipzen:call')           # the SDK's call bot as an `nlhe.Policy`

Chipzen's numbers (facts of the SDK 0.6.0 and its protocol): `match_start.game_config` has the blinds,
the ante and the starting stack; stacks carry over from hand to hand; the dealer is the small blind
and acts first preflop; a `turn_request` carries the hand's `action_history` ({seat, action, amount,
phase}: blinds and antes posted as `post_*`, then fold, check, call, raise, all_in, the amount of a
raise or all-in its raise-to total or the chips added, and of a call the chips added), `pot`, both
stacks behind, `to_call`, `min_raise` and `max_raise` (raise-to totals) and `valid_actions`; the
match's `turn_timeout_ms` is the decision clock.

`ChipzenSeat.decide` reads the request into a `TableHand` (`table_hand`: the starting stacks are the
stacks behind plus what each player has put in; a raise's amount is read as the raise-to total, or as
the chips added where only that agrees with the request's pot and amount to call), asks its `Seat`
with the deadline the match's clock leaves, and answers an action that is in `valid_actions` and
inside [min_raise, max_raise] whatever happened: a fault of its own is one line on stderr and a
check or call. Before any `match_start` (a validator's smoke test) it plays its own game's blinds.

A Chipzen bot as a policy (`ChipzenPolicy`, spec `chipzen:MODULE:CLASS`, `chipzen:FILE.py[:CLASS]` or
the SDK's examples `chipzen:call`, `chipzen:random`, `chipzen:tight-aggressive`): each query becomes a
`GameState` as a Chipzen table would send it (amounts of calls as chips added, of raises as raise-to
totals) and its answer the legal action nearest to it (a fold with nothing to call a check, a raise
where none is allowed a call, a size clamped into the legal range). A bot answers one action, not a
distribution: a range query asks it once per hole pair (each answer a sample of its strategy); its
`random` module is seeded from the hand's noise before each call, so a match is the same for a seed.
It sees `on_match_start` once (the game's numbers); the per-hand hooks are not called, since the
match engine plays many hands at once.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import random
import sys
import time

import numpy as np

from jaxcfr.poker.rules import nlhe
from jaxcfr.poker.rules.cards import card_text, parse_card
from jaxcfr.poker.tables import hand as table_lib
from jaxcfr.poker.tables.seat import Seat

PREFIX = 'chipzen:'
PHASES = ('preflop', 'flop', 'turn', 'river')
TRANSPORT_SECONDS = 0.25  # kept back from Chipzen's clock for the way to the server (at most 20% of it)
DEFAULT_TIMEOUT_MS = 2000  # the bot-vs-bot clock, where a match does not announce its own
EXAMPLES = {
  'call': 'chipzen.examples.call_bot:CallBot',
  'random': 'chipzen.examples.random_bot:RandomBot',
  'tight-aggressive': 'chipzen.examples.tight_aggressive:TightAggressiveBot',
}


class ChipzenError(ValueError):
  """A Chipzen bot spec that names no bot, or the SDK missing."""


# jaxcfr's bots at Chipzen's tables.


def game_rules(game_config: dict) -> table_lib.TableRules:
  """The table's blinds and ante from a `match_start.game_config`."""
  big = int(game_config.get('big_blind', 0))
  small = int(game_config.get('small_blind', big // 2))
  return table_lib.TableRules(small, big, int(game_config.get('ante', 0) or 0))


def table_hand(state, rules: table_lib.TableRules) -> table_lib.TableHand:
  """The `TableHand` of a turn request (`chipzen.GameState`: `your_seat`, `dealer_seat`, cards, stacks,
  `action_history`), our seat to act; see the module for how amounts are read. ValueError if no
  reading of the history is a legal hand."""
  seat = 0 if state.your_seat == state.dealer_seat else 1
  seat_of = lambda chipzen_seat: 0 if int(chipzen_seat) == state.dealer_seat else 1  # noqa: E731
  hole = tuple(parse_card(str(card)) for card in state.hole_cards)
  board = [parse_card(str(card)) for card in state.board]
  moves = [
    (seat_of(entry.get('seat', 0)), str(entry.get('action', '')), int(entry.get('amount', 0) or 0),
     str(entry.get('phase', '')))
    for entry in state.action_history
    if not str(entry.get('action', '')).startswith('post')
  ]  # fmt: skip
  behind = [0, 0]
  behind[seat], behind[1 - seat] = int(state.your_stack), int(state.opponent_stacks[0])
  found = None
  for raises_are_totals in (True, False):
    put_in = _put_in(rules, moves, raises_are_totals)
    try:
      hand = _replay(
        rules, (behind[0] + put_in[0], behind[1] + put_in[1]), seat, hole, board, moves, raises_are_totals
      )
    except ValueError:
      continue
    options = hand.legal()
    agrees = sum(hand.committed) == int(state.pot) and options.call_to - hand.round_bet[seat] == state.to_call
    if agrees and not hand.finished and hand.to_act == seat:
      return hand
    found = found or hand
  if found is None or found.finished or found.to_act != seat:
    raise ValueError('the action history is no legal hand')
  return found


def _put_in(rules, moves, raises_are_totals: bool) -> tuple[int, int]:
  """The chips each seat has put in over the hand by the history's own amounts (the ante, the blinds,
  calls as chips added, raises read as totals or as chips added): with the stacks behind, the stacks
  the hand began with."""
  round_bet, earlier, street = [rules.small_blind, rules.big_blind], [rules.ante, rules.ante], 'preflop'
  for player, action, amount, phase in moves:
    if phase and phase != street:
      earlier = [earlier[p] + round_bet[p] for p in range(2)]
      round_bet, street = [0, 0], phase
    if action == 'call':
      round_bet[player] += amount if amount else max(round_bet) - round_bet[player]
    elif action in ('raise', 'bet', 'all_in') and amount:
      round_bet[player] = amount if raises_are_totals else round_bet[player] + amount
  return earlier[0] + round_bet[0], earlier[1] + round_bet[1]


def _replay(rules, stacks, seat, hole, board, moves, raises_are_totals: bool) -> table_lib.TableHand:
  """The hand after `moves` [(our seat numbering, Chipzen action, amount, phase)], cards dealt as the
  board shows them."""
  hand = table_lib.TableHand(rules, stacks, seat, hole)
  sizes = nlhe.BOARD_SIZES
  for player, action, amount, _ in moves:
    _deal(hand, board, sizes)
    if hand.finished or hand.to_act != player:
      raise ValueError(f'seat {player} acts out of turn')
    options = hand.legal()
    if action == 'fold':
      hand.apply(nlhe.FOLD)
    elif action in ('check', 'call'):
      hand.apply(nlhe.CALL)
    elif action == 'all_in' and (not amount or not options.can_raise):
      hand.apply(nlhe.RAISE, options.max_raise_to) if options.can_raise else hand.apply(nlhe.CALL)
    elif action in ('raise', 'bet', 'all_in'):
      to = amount if raises_are_totals else hand.round_bet[player] + amount
      hand.apply(nlhe.RAISE, min(to, options.max_raise_to) if action == 'all_in' else to)
    else:
      raise ValueError(f'unknown action {action!r}')
  _deal(hand, board, sizes)
  return hand


def _deal(hand, board, sizes) -> None:
  """Deals the board's cards of each street the hand has reached and not yet been dealt."""
  while not hand.finished and len(hand.board) < sizes[hand.street] <= len(board):
    hand.deal(board[len(hand.board) : sizes[hand.street]])


def chipzen_answer(kind: int, amount: int, state) -> tuple[str, int]:
  """(Chipzen action name, raise-to amount) for (kind, amount): one of the request's `valid_actions`,
  a raise inside [min_raise, max_raise]."""
  valid = set(state.valid_actions)
  if kind == nlhe.RAISE and ('raise' in valid or 'all_in' in valid):
    if 'all_in' in valid and (amount >= state.max_raise or 'raise' not in valid):
      return 'all_in', 0
    return 'raise', int(min(max(amount, state.min_raise), state.max_raise))
  if kind == nlhe.FOLD and 'fold' in valid and state.to_call > 0:
    return 'fold', 0
  for name in ('check', 'call') if state.to_call <= 0 else ('call', 'check'):
    if name in valid:
      return name, 0
  if 'all_in' in valid:  # a call for more than the stack behind, offered as the all-in
    return 'all_in', 0
  return ('fold' if 'fold' in valid else sorted(valid)[0]), 0


def safe_answer(state) -> tuple[str, int]:
  """Check where free, else call, else what the request allows."""
  return chipzen_answer(nlhe.CALL, 0, state)


class ChipzenSeat:
  """A `Seat` at a Chipzen table, without the SDK: the hooks keep the match's numbers, `decide` answers
  (action name, amount) for `chipzen.Action(name, amount)`."""

  def __init__(self, seat: Seat, *, transport: float = TRANSPORT_SECONDS, log=sys.stderr):
    self.seat = seat
    self.transport = transport
    self.rules = None  # TableRules, from match_start
    self.timeout_ms = DEFAULT_TIMEOUT_MS
    self.faults = 0
    self.decisions = []  # (phase, seconds, answered by) of each decision
    self._log = log

  def match_start(self, message: dict) -> None:
    self.rules = game_rules(message.get('game_config') or {})
    self.timeout_ms = int(message.get('turn_timeout_ms') or DEFAULT_TIMEOUT_MS)

  def decide(self, state) -> tuple[str, int]:
    started = time.monotonic()
    clock = self.timeout_ms / 1000
    deadline = started + clock - min(self.transport, 0.2 * clock)
    try:
      if self.rules is None or self.rules.big_blind <= 0:
        own = self.seat.rules
        self.rules = table_lib.TableRules(own.small_blind, own.big_blind)
        print(
          f'jaxcfr: no match_start gave the blinds: playing {own.small_blind}/{own.big_blind}', file=self._log
        )
      hand = table_hand(state, self.rules)
      kind, amount = self.seat.act(hand, deadline, hand_key=int(state.hand_number))
      answer, by = chipzen_answer(kind, amount, state), self.seat.last.by
    except Exception as error:  # noqa: BLE001 (a table gets an action whatever happened here)
      self.faults += 1
      print(
        f'jaxcfr: hand {state.hand_number}: {type(error).__name__}: {error}; checking or calling',
        file=self._log,
      )
      answer, by = safe_answer(state), 'fault'
    self.decisions.append((state.phase, time.monotonic() - started, by))
    return answer


def bot_class():
  """The `chipzen.Bot` subclass that plays a `ChipzenSeat` (imports the SDK)."""
  chipzen = sdk()

  class JaxcfrBot(chipzen.Bot):
    """A jaxcfr policy at a Chipzen table (`ChipzenSeat`)."""

    def __init__(self, seat: ChipzenSeat):
      self.seat = seat

    def on_match_start(self, match_info: dict) -> None:
      self.seat.match_start(match_info)

    def decide(self, state):
      name, amount = self.seat.decide(state)
      return chipzen.Action(action=name, amount=amount)

  return JaxcfrBot


def sdk():
  try:
    import chipzen  # noqa: PLC0415
  except ImportError:
    raise ChipzenError("the Chipzen SDK is not installed: pip install 'jaxcfr[chipzen]'") from None
  return chipzen


# Chipzen bots in jaxcfr's matches.


def load_bot_class(spec: str):
  """The `chipzen.Bot` subclass a spec names (see the module); ChipzenError with one line otherwise."""
  chipzen = sdk()
  target = spec[len(PREFIX) :] if spec.startswith(PREFIX) else spec
  target = EXAMPLES.get(target, target)
  where, _, name = target.rpartition(':') if target.count(':') else (target, '', '')
  if target.endswith('.py'):
    where, name = target, ''
  try:
    if where.endswith('.py'):
      if not os.path.isfile(where):
        raise ChipzenError(f'{spec!r}: no file {where}')
      module_spec = importlib.util.spec_from_file_location(f'chipzen_bot_{abs(hash(where))}', where)
      module = importlib.util.module_from_spec(module_spec)
      module_spec.loader.exec_module(module)
    else:
      module = importlib.import_module(where)
  except ChipzenError:
    raise
  except Exception as error:  # noqa: BLE001 (a user's module: whatever it raises is one line)
    raise ChipzenError(f'{spec!r}: cannot import {where}: {type(error).__name__}: {error}') from None
  classes = [
    value for key, value in vars(module).items()
    if isinstance(value, type) and issubclass(value, chipzen.Bot) and value is not chipzen.Bot
    and (key == name if name else value.__module__ == module.__name__)
  ]  # fmt: skip
  if len(classes) != 1:
    what = f'no Bot subclass {name!r}' if name else f'{len(classes)} Bot subclasses (name one: FILE:CLASS)'
    raise ChipzenError(f'{spec!r}: {where} has {what}')
  return classes[0]


class ChipzenPolicy:
  """A Chipzen bot as an `nlhe.Policy` (see the module); `invalid` counts answers that were not legal
  as sent (mapped to the nearest legal action)."""

  def __init__(self, bot_class, name: str, rules: nlhe.NoLimitRules = nlhe.DEFAULT_RULES):
    self.bot = bot_class()
    self.name = name
    self.rules = rules
    self.invalid = 0
    self._chipzen = sdk()
    self.bot.on_match_start(
      {
        'type': 'match_start',
        'seats': [{'seat': 0, 'is_self': True}, {'seat': 1, 'is_self': False}],
        'game_config': {
          'variant': 'nlhe', 'starting_stack': rules.stack, 'small_blind': rules.small_blind,
          'big_blind': rules.big_blind, 'ante': 0, 'total_hands': 0,
        },
        'turn_timeout_ms': DEFAULT_TIMEOUT_MS,
      }
    )  # fmt: skip

  def strategy(self, state: nlhe.HandState, holes: np.ndarray) -> tuple[nlhe.ActionSet, np.ndarray]:
    """One action per candidate hole pair, as one-hot probabilities over [fold, check/call, the raises
    it chose] ([B, A], [B, K, A])."""
    holes = np.asarray(holes)
    batch, count = holes.shape[:2]
    options = nlhe.legal(state)
    chosen = np.zeros((batch, count, 2), np.int64)  # (kind, amount)
    for b in range(batch):
      request = self._request(state, b)
      for k in range(count):
        random.seed(int(state.noise[b, min(int(state.num_actions[b]), state.noise.shape[1] - 1)] * 2**52) + k)
        request.hole_cards = [self._chipzen.Card.from_str(card_text(int(c))) for c in holes[b, k]]
        chosen[b, k] = self._action(self.bot.decide(request), options, b)
    # Slots: fold, check/call, then each distinct raise-to amount a hand chose.
    raises = [np.unique(chosen[b, :, 1][chosen[b, :, 0] == nlhe.RAISE]) for b in range(batch)]
    width = 2 + max((len(r) for r in raises), default=0)
    kind = np.full((batch, width), nlhe.RAISE, np.int8)
    kind[:, 0], kind[:, 1] = nlhe.FOLD, nlhe.CALL
    amount = np.zeros((batch, width), np.int64)
    amount[:, 1] = options.call_to
    valid = np.zeros((batch, width), bool)
    valid[:, 0], valid[:, 1] = options.can_fold, True
    probabilities = np.zeros((batch, count, width))
    for b in range(batch):
      amount[b, 2 : 2 + len(raises[b])] = raises[b]
      valid[b, 2 : 2 + len(raises[b])] = True
      slot = np.where(
        chosen[b, :, 0] == nlhe.RAISE, 2 + np.searchsorted(raises[b], chosen[b, :, 1]), chosen[b, :, 0]
      )
      probabilities[b, np.arange(count), slot] = 1.0
    return nlhe.ActionSet(kind, amount, valid), probabilities

  def _request(self, state: nlhe.HandState, b: int):
    """The `chipzen.GameState` of hand b for its player to act (hole cards filled in per candidate)."""
    player = int(state.to_act[b])
    options = nlhe.legal(nlhe.take(state, [b]))
    behind = nlhe.stacks(state)[b]
    valid = (['fold'] if options.can_fold[0] else []) + ['call' if options.can_fold[0] else 'check']
    if options.can_raise[0]:
      valid += ['raise', 'all_in']
    history = [
      {'seat': 0, 'action': 'post_small_blind', 'amount': self.rules.small_blind, 'phase': 'preflop'},
      {'seat': 1, 'action': 'post_big_blind', 'amount': self.rules.big_blind, 'phase': 'preflop'},
    ]
    history += _history(state, b)
    shown = int(nlhe.BOARD_SIZES[state.street[b]])
    return self._chipzen.GameState(
      hand_number=b + 1,
      phase=PHASES[int(state.street[b])],
      board=[self._chipzen.Card.from_str(card_text(int(c))) for c in state.board[b, :shown]],
      pot=int(nlhe.pot(state)[b]),
      your_stack=int(behind[player]),
      opponent_stacks=[int(behind[1 - player])],
      your_seat=player,
      dealer_seat=0,
      to_call=int(options.call_to[0] - state.round_bet[b, player]),
      min_raise=int(options.min_raise_to[0]),
      max_raise=int(options.max_raise_to[0]),
      valid_actions=valid,
      action_history=history,
    )

  def _action(self, action, options: nlhe.Legal, b: int) -> tuple[int, int]:
    """(kind, amount) of the bot's answer, the nearest legal action (counted in `invalid` if it was not
    legal as sent)."""
    name = getattr(action, 'action', None)
    amount = int(getattr(action, 'amount', 0) or 0)
    can_raise, low, high = (
      bool(options.can_raise[b]),
      int(options.min_raise_to[b]),
      int(options.max_raise_to[b]),
    )
    if name == 'fold' and options.can_fold[b]:
      return nlhe.FOLD, 0
    if name == 'all_in' and can_raise:
      return nlhe.RAISE, high
    if name == 'raise' and can_raise:
      if not low <= amount <= high:
        self.invalid += 1
      return nlhe.RAISE, min(max(amount, low), high)
    if name not in ('check', 'call', 'all_in'):
      self.invalid += 1
    return nlhe.CALL, int(options.call_to[b])


def _history(state: nlhe.HandState, b: int) -> list[dict]:
  """Hand b's actions as Chipzen's `action_history` entries (calls as chips added, raises as raise-to
  totals), each actor found by replaying the hand."""
  entries = []
  replay = nlhe.initial(state.hole[b : b + 1], state.board[b : b + 1], state.rules)
  for t in range(int(state.num_actions[b])):
    street, kind, total = (int(x) for x in state.history[b, t])
    player = int(replay.to_act[0])
    added = total - int(replay.round_bet[0, player])
    if kind == nlhe.FOLD:
      name, amount = 'fold', 0
    elif kind == nlhe.CALL:
      name, amount = ('call', added) if added > 0 else ('check', 0)
    else:
      name, amount = 'raise', total
    entries.append(
      {'seat': player, 'action': name, 'amount': amount, 'phase': PHASES[street], 'is_timeout': False}
    )
    replay = nlhe.apply(replay, kind, total)
  return entries


def chipzen_policy(spec: str, rules: nlhe.NoLimitRules = nlhe.DEFAULT_RULES) -> ChipzenPolicy:
  """The Chipzen bot a `chipzen:` spec names, as an `nlhe.Policy`."""
  return ChipzenPolicy(load_bot_class(spec), spec, rules)
