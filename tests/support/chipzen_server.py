"""A Chipzen match server on 127.0.0.1 for the tests: the SDK's protocol (hello, match_start,
round_start, turn_request, turn_result, phase_change, round_result, match_end) over a real WebSocket,
the hands kept in a `TableHand`, the other seat an always-calling bot. Every turn_action of the bot
under test is checked: a `valid_actions` name, a raise inside [min_raise, max_raise], the request id
echoed, inside the clock.

    server = ChipzenServer(hands=20, blinds=(5, 10), ante=1, stack=1000)
    with server.running() as url:
      ...  # connect a bot to url
    server.errors, server.results   # what the bot got wrong; each hand's chips won by the bot
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
import time

import numpy as np
import websockets

from jaxcfr.poker.rules import nlhe
from jaxcfr.poker.rules.cards import card_text
from jaxcfr.poker.tables.chipzen import PHASES
from jaxcfr.poker.tables.hand import TableHand, TableRules


class ChipzenServer:
  def __init__(self, hands=10, blinds=(5, 10), ante=0, stack=1000, timeout_ms=2000, seed=0, reset=False):
    self.hands, self.rules, self.stack = hands, TableRules(*blinds, ante), stack
    self.timeout_ms, self.seed = timeout_ms, seed
    self.reset = reset  # stacks back to `stack` every hand (ACPC's way), else carried over (Chipzen's)
    self.errors, self.results, self.decisions = [], [], 0
    self.latencies_ms = []  # each turn_request to its turn_action, as the server saw it
    self.connected_at = None  # time.monotonic() when the bot connected
    self._seq = 0

  @contextlib.contextmanager
  def running(self):
    loop = asyncio.new_event_loop()
    ready = threading.Event()
    holder = {}

    async def main():
      async with websockets.serve(self._session, '127.0.0.1', 0) as server:
        holder['port'] = server.sockets[0].getsockname()[1]
        holder['stop'] = loop.create_future()
        ready.set()
        await holder['stop']

    thread = threading.Thread(target=loop.run_until_complete, args=(main(),), daemon=True)
    thread.start()
    ready.wait(10)
    try:
      yield f'ws://127.0.0.1:{holder["port"]}/ws/match/m_test/bot'
    finally:
      loop.call_soon_threadsafe(holder['stop'].set_result, None)
      thread.join(10)

  def _message(self, kind, **fields):
    self._seq += 1
    return json.dumps({'type': kind, 'match_id': 'm_test', 'seq': self._seq, **fields})

  async def _session(self, ws):
    self.connected_at = time.monotonic()
    await ws.recv()  # authenticate
    await ws.send(
      json.dumps(
        {
          'type': 'hello',
          'match_id': 'm_test',
          'seq': 0,
          'supported_versions': ['1.0'],
          'selected_version': '1.0',
          'game_type': 'nlhe_hu',
          'capabilities': [],
        }
      )
    )
    await ws.recv()  # the client's hello
    config = {
      'variant': 'nlhe',
      'starting_stack': self.stack,
      'small_blind': self.rules.small_blind,
      'big_blind': self.rules.big_blind,
      'ante': self.rules.ante,
      'total_hands': self.hands,
    }
    seats = [
      {'seat': 0, 'participant_id': 'p0', 'is_self': True},
      {'seat': 1, 'participant_id': 'p1', 'is_self': False},
    ]
    await ws.send(
      self._message('match_start', seats=seats, game_config=config, turn_timeout_ms=self.timeout_ms)
    )
    stacks = [self.stack, self.stack]
    rng = np.random.default_rng(self.seed)
    for number in range(1, self.hands + 1):
      if self.reset:
        stacks = [self.stack, self.stack]
      if min(stacks) <= 0:
        break
      dealer = number % 2  # the Chipzen seat on the button
      cards = [int(c) for c in rng.permutation(52)[:9]]
      ours = 0 if dealer == 0 else 1  # the bot's seat in nlhe's numbering (it is Chipzen seat 0)
      start = (stacks[dealer], stacks[1 - dealer])
      hand = TableHand(self.rules, start, ours, tuple(cards[:2]))
      history = []
      await ws.send(
        self._message(
          'round_start',
          round_id=f'r{number}',
          round_number=number,
          state={
            'hand_number': number,
            'dealer_seat': dealer,
            'your_hole_cards': [card_text(c) for c in cards[:2]],
            'stacks': list(stacks),
          },
        )
      )
      while not hand.finished:
        while len(hand.board) < nlhe.BOARD_SIZES[hand.street] and not hand.finished:
          hand.deal(cards[4 + len(hand.board) : 4 + nlhe.BOARD_SIZES[hand.street]])
          await ws.send(
            self._message(
              'phase_change',
              state={'phase': PHASES[hand.street], 'board': [card_text(c) for c in hand.board]},
            )
          )
        if hand.finished:
          break
        chipzen_seat = 0 if hand.to_act == ours else 1
        player = hand.to_act
        options = hand.legal()
        before, street = hand.committed[player], hand.street
        if chipzen_seat == 1:
          hand.apply(nlhe.CALL)
          added = hand.committed[player] - before
          name, amount = ('call', added) if added else ('check', 0)
        else:
          name, amount = await self._ask(ws, hand, number, history)
          self.decisions += 1
          kind = {
            'fold': nlhe.FOLD,
            'check': nlhe.CALL,
            'call': nlhe.CALL,
            'raise': nlhe.RAISE,
            'all_in': nlhe.RAISE,
          }[name]
          to = options.max_raise_to if name == 'all_in' else amount
          hand.apply(kind, to if kind == nlhe.RAISE else 0)
          added = hand.committed[player] - before
          amount = to if kind == nlhe.RAISE else added
        history.append(
          {
            'seat': chipzen_seat,
            'action': name,
            'amount': amount,
            'phase': PHASES[street],
            'is_timeout': False,
          }
        )
        await ws.send(
          self._message(
            'turn_result', is_timeout=False, details={'seat': chipzen_seat, 'action': name, 'amount': amount}
          )
        )
      won = _chips_won(hand, cards)
      stacks[dealer] += won[0]
      stacks[1 - dealer] += won[1]
      self.results.append(won[ours])
      await ws.send(
        self._message(
          'round_result',
          round_id=f'r{number}',
          round_number=number,
          result={'hand_number': number, 'stacks': list(stacks), 'action_history': history},
        )
      )
    await ws.send(self._message('match_end', reason='complete', results=[]))
    with contextlib.suppress(websockets.ConnectionClosed):
      await asyncio.wait_for(ws.recv(), 2)

  async def _ask(self, ws, hand, number, history):
    """Sends the bot its turn_request and returns its checked (action, amount); a wrong answer is
    recorded in `errors` and played as check or fold, as Chipzen plays a missed deadline."""
    options = hand.legal()
    to_call = options.call_to - hand.round_bet[hand.to_act]
    valid = (['fold', 'call'] if to_call > 0 else ['check']) + (
      ['raise', 'all_in'] if options.can_raise else []
    )
    behind = [hand.stacks[p] - hand.committed[p] for p in range(2)]
    request_id = f'q{self.decisions}'
    state = {
      'hand_number': number, 'phase': PHASES[hand.street], 'board': [card_text(c) for c in hand.board],
      'your_hole_cards': [card_text(c) for c in hand.hole], 'pot': sum(hand.committed),
      'your_stack': behind[hand.seat], 'opponent_stacks': [behind[1 - hand.seat]], 'to_call': to_call,
      'min_raise': options.min_raise_to, 'max_raise': options.max_raise_to,
      'action_history': list(history),
    }  # fmt: skip
    sent = time.monotonic()
    await ws.send(
      self._message(
        'turn_request',
        seat=0,
        request_id=request_id,
        timeout_ms=self.timeout_ms,
        valid_actions=valid,
        state=state,
      )
    )
    while True:
      reply = json.loads(await ws.recv())
      if reply.get('type') == 'turn_action':
        break
    self.latencies_ms.append((time.monotonic() - sent) * 1000)
    late = self.latencies_ms[-1] > self.timeout_ms
    name, params = reply.get('action'), reply.get('params') or {}
    amount = int(params.get('amount', 0) or 0)
    wrong = (
      late or reply.get('request_id') != request_id or name not in valid
      or name == 'raise' and not options.min_raise_to <= amount <= options.max_raise_to
    )  # fmt: skip
    if wrong:
      self.errors.append((number, reply, valid, state, late))
      return ('check', 0) if 'check' in valid else ('fold', 0)
    return name, amount


def _chips_won(hand: TableHand, cards) -> tuple[int, int]:
  """Chips won by seats 0 and 1 (nlhe numbering) of a finished hand (`TableHand.chips_won`, the
  showdown ranked by `nlhe.showdown_ranks`)."""
  if hand.folded is not None:
    return hand.chips_won()
  holes = np.zeros((1, 2, 2), np.int64)
  holes[0, hand.seat], holes[0, 1 - hand.seat] = cards[0:2], cards[2:4]
  return hand.chips_won(nlhe.showdown_ranks(nlhe.initial(holes, np.array([cards[4:9]])))[0])
