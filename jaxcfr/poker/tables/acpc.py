"""jaxcfr's bots at an ACPC dealer's table (the Annual Computer Poker Competition's protocol 2.0.0, the
University of Alberta's `project_acpc_server`).

    game = load_game(open('holdem.nolimit.2p.reverse_blinds.game').read())   # GameError if unplayable
    with HandLog.create('hands.jsonl', header={'bot': 'equity'}) as log:
      result = play('localhost', 18791, Seat(policy), game=game, log=log)    # until the dealer hangs up
    result.mbb_per_hand, result.ci95_low, result.ci95_high

The protocol (facts of the dealer's source, dealer.c and game.c): the client connects over TCP and
sends `VERSION:2.0.0`; the dealer then sends `MATCHSTATE:<position>:<hand>:<betting>:<cards>` to both
players after every event, lines ending in CR LF; the player to act answers with the same state and
`:<action>`: `f`, `c` (check or call) or `r<N>`, a raise to N chips **in total this hand** (blinds
and earlier rounds included; `TableHand` counts raises in round totals, so the two are converted
here). Rounds are separated by `/` in the betting and the cards (`hole|hole/flop/turn/river`, the
opponent's hole cards empty until a showdown). Lines starting `#` or `;` are comments. Positions rotate
every hand; a game's blinds, stacks and first players belong to positions: the position that acts
first preflop (`firstPlayer`) is `nlhe`'s seat 0 (the button, the smaller blind) and the other seat 1,
read from the game definition, never assumed (in `holdem.nolimit.2p.reverse_blinds.game` position 0 is
the big blind). Stacks reset every hand.

The client keeps each hand in a `TableHand`, advanced from every state the dealer sends: the betting
must extend what came before, every action must be legal, the board, our cards and our position must
not change, and the action the dealer records for us must be the one we sent; anything else, a line
that is no match state, a close in the middle of a hand, or silence for `timeout` seconds once the
match has begun, is a `ProtocolError` (one line). At our turn the `Seat` answers inside the budget
(`t_response` seconds after the state arrived, less `TRANSPORT_SECONDS`), and the answer is checked
against the hand once more (and the dealer's own limit of 64 actions a round) before it is sent: a
seat that fails or answers an illegal action is replaced by a check or a call. Each finished hand is
one JSON line of the `HandLog`, flushed at once; the chips won come from the final state (a fold, or
the showdown's cards).
"""

from __future__ import annotations

import dataclasses
import datetime
import json
import math
import re
import socket
import statistics
import sys
import time
from typing import NamedTuple

import numpy as np

from jaxcfr import outputs
from jaxcfr.poker import defaults
from jaxcfr.poker.eval import match
from jaxcfr.poker.rules import nlhe
from jaxcfr.poker.rules.cards import card_text
from jaxcfr.poker.tables.hand import TableHand, TableRules

VERSION = 'VERSION:2.0.0'
LOG_FORMAT = 'jaxcfr-acpc-log'
TRANSPORT_SECONDS = 0.05  # kept back from the response budget for the answer's way to the dealer
MAX_ROUND_ACTIONS = 64  # the dealer's MAX_NUM_ACTIONS: no raise once a round's actions + 2 would pass it
MAX_LINE = 4096  # the dealer's READBUF_LEN: no longer line is a match state
UNLIMITED = 2**31 - 1  # the dealer's INT32_MAX: a stack or raise cap that the file does not give
# Heads-up no-limit hold'em with reversed blinds, as the ACPC ran it (holdem.nolimit.2p.reverse_blinds).
DEFAULT_GAME = """\
GAMEDEF
nolimit
numPlayers = 2
numRounds = 4
stack = 20000 20000
blind = 100 50
firstPlayer = 2 1 1 1
numSuits = 4
numRanks = 13
numHoleCards = 2
numBoardCards = 0 3 1 1
END GAMEDEF
"""
_RANKS, _SUITS = '23456789TJQKA', 'cdhs'
_CARD = re.compile(r'[2-9TJQKA][cdhs]')
_ROUND = re.compile(r'(?:[fc]|r\d+)*')
_ACTION = re.compile(r'[fc]|r\d+')
# Keys of a game definition as the dealer reads them (a line starting with the key, case ignored).
_KEYS = (
  'stack', 'blind', 'raisesize', 'limit', 'nolimit', 'numplayers', 'numrounds', 'firstplayer',
  'maxraises', 'numsuits', 'numranks', 'numholecards', 'numboardcards',
)  # fmt: skip


class GameError(ValueError):
  """A game definition that cannot be read, or a game jaxcfr cannot play: one line."""


class ProtocolError(RuntimeError):
  """The dealer's side broke the match (a malformed line, a state that does not follow, a close in
  the middle of a hand, silence): one line."""


# The game definition.


@dataclasses.dataclass(frozen=True)
class AcpcGame:
  """An ACPC game definition, by position (the dealer's `Game`; first players 0-based)."""

  nolimit: bool
  num_players: int
  num_rounds: int
  stack: tuple[int, ...]
  blind: tuple[int, ...]
  first_player: tuple[int, ...]  # per round, the position that acts first
  max_raises: tuple[int, ...]  # per round; UNLIMITED where not given (a cap of 64 or more never binds)
  num_suits: int
  num_ranks: int
  num_hole_cards: int
  num_board_cards: tuple[int, ...]  # per round

  def seat(self, position: int) -> int:
    """`nlhe`'s seat of a position: 0 for the one that acts first preflop, else 1."""
    return 0 if position == self.first_player[0] else 1

  def position(self, seat: int) -> int:
    """The position of an `nlhe` seat."""
    return self.first_player[0] if seat == 0 else 1 - self.first_player[0]

  @property
  def rules(self) -> TableRules:
    return TableRules(self.blind[self.position(0)], self.blind[self.position(1)])

  @property
  def stacks(self) -> tuple[int, int]:
    """Each seat's stack at the start of every hand."""
    return (self.stack[self.position(0)], self.stack[self.position(1)])

  @property
  def big_blind(self) -> int:
    return max(self.blind)

  def to_json(self) -> dict:
    return {
      'betting': 'nolimit' if self.nolimit else 'limit',
      'stack': list(self.stack),
      'blind': list(self.blind),
      'first_player': [p + 1 for p in self.first_player],
    }


def parse_game(text: str) -> AcpcGame:
  """The game definition in `text` (`GAMEDEF` ... `END GAMEDEF`, read as the dealer reads it: keys by
  their first letters, case ignored, `=` optional, `#` comments); GameError with one line for a line
  that is no key, a value that is not a whole number, or what the dealer itself would refuse."""
  values, nolimit = {}, False
  for number, raw in enumerate(text.splitlines(), 1):
    line = raw.strip()
    lower = line.lower()
    if not line or line.startswith('#') or lower.startswith('gamedef'):
      continue
    if lower.startswith('end gamedef'):
      break
    key = next((k for k in sorted(_KEYS, key=len, reverse=True) if lower.startswith(k)), None)
    if key is None:
      raise GameError(f'game definition line {number}: {raw.strip()!r} is not a key of a game definition')
    if key in ('limit', 'nolimit'):
      nolimit = key == 'nolimit'
      continue
    items = line[len(key) :].replace('=', ' ').split()
    if not items or not all(item.isdigit() for item in items):
      raise GameError(f'game definition line {number}: {key} needs whole numbers, got {raw.strip()!r}')
    values[key] = tuple(int(item) for item in items)
  players = values.get('numplayers', (0,))[0]
  rounds = values.get('numrounds', (0,))[0]
  if not 2 <= players <= 10 or not 1 <= rounds <= 4:
    raise GameError(
      f'the game definition needs numPlayers (2..10) and numRounds (1..4), got {players}, {rounds}'
    )
  for key, count in (('blind', players), ('numboardcards', rounds)):
    if len(values.get(key, ())) < count:
      raise GameError(f'the game definition needs {count} values of {key}, got {len(values.get(key, ()))}')
  first = values.get('firstplayer', (1,) * rounds)
  if len(first) < rounds or not all(1 <= p <= players for p in first[:rounds]):
    raise GameError(f'the game definition needs a firstPlayer of 1..{players} for each of {rounds} rounds')
  stack = values.get('stack', (UNLIMITED,) * players)
  if len(stack) < players:
    raise GameError(f'the game definition needs {players} values of stack, got {len(stack)}')
  return AcpcGame(
    nolimit=nolimit,
    num_players=players,
    num_rounds=rounds,
    stack=stack[:players],
    blind=values['blind'][:players],
    first_player=tuple(p - 1 for p in first[:rounds]),
    max_raises=(values.get('maxraises', ()) + (UNLIMITED,) * rounds)[:rounds],
    num_suits=values.get('numsuits', (0,))[0],
    num_ranks=values.get('numranks', (0,))[0],
    num_hole_cards=values.get('numholecards', (0,))[0],
    num_board_cards=values['numboardcards'][:rounds],
  )


def check_game(game: AcpcGame) -> None:
  """Refuses, with a GameError of one line, a game that jaxcfr's bots cannot play: anything but heads-up
  no-limit hold'em (2 players, 4 rounds, 52 cards, 2 hole cards, boards of 0 3 1 1) with no cap on
  raises, the small blind acting first preflop and last after it, and stacks larger than the big blind
  (where a stack is not, the dealer asks a check of a player whose opponent is all-in from the blinds,
  a move hold'em and `TableHand` do not have)."""
  problems = [
    (not game.nolimit, 'it is a limit game; jaxcfr plays no-limit'),
    (game.num_players != 2, f'it has {game.num_players} players; jaxcfr plays heads-up (2)'),
    (game.num_rounds != 4, f"it has {game.num_rounds} rounds; hold'em has 4"),
    (
      (game.num_suits, game.num_ranks) != (4, 13),
      f"its deck is {game.num_ranks} ranks x {game.num_suits} suits; hold'em uses 13 x 4",
    ),
    (game.num_hole_cards != 2, f"it deals {game.num_hole_cards} hole cards; hold'em deals 2"),
    (
      game.num_board_cards != (0, 3, 1, 1),
      f"its boards are {' '.join(map(str, game.num_board_cards))}; hold'em's are 0 3 1 1",
    ),
    (
      any(m < MAX_ROUND_ACTIONS for m in game.max_raises),
      'it caps raises (maxRaises); jaxcfr plays without a cap',
    ),
  ]
  for bad, why in problems:
    if bad:
      raise GameError(f'the game definition cannot be played: {why}')
  first = game.first_player
  if any(p == first[0] for p in first[1:]):
    raise GameError(
      'the game definition cannot be played: the player who acts first preflop must act last after it '
      f'(firstPlayer {" ".join(str(p + 1) for p in first)})'
    )
  small, big = game.blind[first[0]], game.blind[1 - first[0]]
  if small > big or big < 1:
    raise GameError(
      f'the game definition cannot be played: the player who acts first preflop posts {small} and the '
      f'other {big}; jaxcfr needs the first to post the small blind, and a big blind of at least 1'
    )
  if any(s == UNLIMITED for s in game.stack):
    raise GameError('the game definition cannot be played: no-limit needs a stack for each player')
  if min(game.stack) <= big:
    raise GameError(
      f'the game definition cannot be played: every stack must be larger than the big blind ({big}), '
      f'got {" ".join(map(str, game.stack))}'
    )


def load_game(text: str | None = None) -> AcpcGame:
  """`parse_game` and `check_game` of `text` (default `DEFAULT_GAME`)."""
  game = parse_game(DEFAULT_GAME if text is None else text)
  check_game(game)
  return game


# Match states.


class MatchState(NamedTuple):
  """One `MATCHSTATE` line of the dealer, parsed."""

  text: str  # the line without its end: what an answer repeats before `:<action>`
  position: int
  hand: int
  betting: str
  rounds: tuple[tuple[str, ...], ...]  # each round's actions ('f', 'c', 'r<N>'); one per '/' plus one
  holes: tuple[tuple[int, ...], ...]  # per position: its hole cards, () where not shown
  board: tuple[int, ...]  # the board cards shown, rounds in order


def parse_state(line: str, game: AcpcGame) -> MatchState:
  """A dealer's line as a `MatchState`; ProtocolError naming the problem if it is none."""
  parts = line.split(':')
  if len(parts) != 5 or parts[0] != 'MATCHSTATE':
    raise ProtocolError(f'the dealer sent a line that is no match state: {_clip(line)!r}')
  _, position, hand, betting, cards = parts
  if not position.isdigit() or int(position) >= game.num_players or not hand.isdigit():
    raise ProtocolError(f'the dealer sent a match state with a bad position or hand number: {_clip(line)!r}')
  rounds = betting.split('/')
  if len(rounds) > game.num_rounds or not all(_ROUND.fullmatch(r) for r in rounds):
    raise ProtocolError(f'the dealer sent a match state with malformed betting: {_clip(line)!r}')
  streets = cards.split('/')
  holes = streets[0].split('|')
  if len(streets) != len(rounds) or len(holes) != game.num_players:
    raise ProtocolError(f'the dealer sent a match state whose cards do not fit its betting: {_clip(line)!r}')
  shown = [_cards(h, (0, game.num_hole_cards), line) for h in holes]
  board = [_cards(s, (game.num_board_cards[r],), line) for r, s in enumerate(streets[1:], 1)]
  everything = [c for group in (*shown, *board) for c in group]
  if len(set(everything)) != len(everything):
    raise ProtocolError(f'the dealer sent a match state with a card twice: {_clip(line)!r}')
  return MatchState(
    text=line,
    position=int(position),
    hand=int(hand),
    betting=betting,
    rounds=tuple(tuple(m.group(0) for m in _ACTION.finditer(r)) for r in rounds),
    holes=tuple(tuple(h) for h in shown),
    board=tuple(c for group in board for c in group),
  )


def _cards(text: str, counts: tuple[int, ...], line: str) -> list[int]:
  found = _CARD.findall(text)
  if ''.join(found) != text or len(found) not in counts:
    raise ProtocolError(f'the dealer sent a match state with malformed cards: {_clip(line)!r}')
  return [4 * _RANKS.index(c[0]) + _SUITS.index(c[1]) for c in found]


def _clip(line: str, width: int = 120) -> str:
  return line if len(line) <= width else line[:width] + '...'


def cards_text(cards) -> str:
  """Cards as the dealer writes them, 'AsKd'."""
  return ''.join(card_text(int(c)) for c in cards)


# The hand log.


class HandLog:
  """The match's finished hands as JSON lines, written as they finish: a first line that says what the
  file is (`{"producer": "jaxcfr", "format": "jaxcfr-acpc-log", ...}`, so that jaxcfr knows the file
  as its own), then one line per hand, each written whole and flushed."""

  def __init__(self, file, path: str):
    self._file = file
    self.path = path

  @classmethod
  def create(cls, path: str, header: dict, *, force: bool = False, what: str = '--log') -> HandLog:
    """Writes the header line to `path` as jaxcfr writes every output (`outputs.write_file`: never a
    user's file, ours only with `force`), then opens it for the hands."""
    line = json.dumps({'producer': outputs.PRODUCER, 'format': LOG_FORMAT, **header}) + '\n'
    outputs.write_file(path, lambda file: file.write(line.encode()), force=force, what=what)
    try:
      return cls(open(path, 'a', encoding='utf-8'), path)  # noqa: SIM115 (closed by `close`)
    except OSError as error:
      raise outputs.OutputError(f'{what}: cannot write {path!r} ({error.strerror or error})') from None

  def write(self, record: dict) -> None:
    self._file.write(json.dumps(record) + '\n')
    self._file.flush()

  def close(self) -> None:
    self._file.close()

  def __enter__(self) -> HandLog:
    return self

  def __exit__(self, *exc) -> None:
    self.close()


def read_log(path: str) -> list[dict]:
  """The hand records of a `HandLog` file (its header line left out)."""
  with open(path, encoding='utf-8') as file:
    return [record for record in map(json.loads, file) if 'hand' in record]


# The result.


@dataclasses.dataclass(frozen=True)
class AcpcResult:
  """Our result over a match: chips won per hand (int64 [hands]) and our `nlhe` seat in each (int8
  [hands]; 0 the button), in mbb/hand (chips / big blind x 1000) with a normal 95% interval over hands;
  the decisions we made, how long they took, and how many a fallback answered."""

  bot: str
  hands: int
  big_blind: int
  mbb_per_hand: float
  ci95_low: float
  ci95_high: float
  sd_mbb: float
  seat_mbb: tuple[float, float]
  seat_ci95: tuple[tuple[float, float], tuple[float, float]]
  seconds: float
  decisions: int
  think_median: float  # seconds, over our decisions (nan without any)
  think_max: float
  fallbacks: int  # decisions answered by a check or call because the seat failed or answered illegally
  chips: np.ndarray = dataclasses.field(repr=False)
  seats: np.ndarray = dataclasses.field(repr=False)

  @property
  def total_chips(self) -> int:
    return int(self.chips.sum())

  def to_json(self) -> dict:
    finite = lambda x: x if math.isfinite(x) else None  # noqa: E731
    return dict(
      bot=self.bot,
      hands=self.hands,
      chips=self.total_chips,
      big_blind=self.big_blind,
      mbb_per_hand=finite(self.mbb_per_hand),
      ci95_low=finite(self.ci95_low),
      ci95_high=finite(self.ci95_high),
      sd_mbb=finite(self.sd_mbb),
      seats=[
        dict(
          seat=seat,
          hands=int((self.seats == seat).sum()),
          mbb_per_hand=finite(self.seat_mbb[seat]),
          ci95_low=finite(low),
          ci95_high=finite(high),
        )
        for seat, (low, high) in enumerate(self.seat_ci95)
      ],  # fmt: skip
      seconds=self.seconds,
      decisions=self.decisions,
      think_median_seconds=finite(self.think_median),
      think_max_seconds=finite(self.think_max),
      fallbacks=self.fallbacks,
    )


def summarise(bot: str, chips, seats, big_blind: int, seconds: float, think, fallbacks: int) -> AcpcResult:
  """The `AcpcResult` of per-hand chips and seats (`match`'s normal interval, hands as units)."""
  chips_array, seats_array = np.asarray(chips, np.int64), np.asarray(seats, np.int8)
  mbb = chips_array * 1000.0 / big_blind
  mean, low, high, sd = _mean_ci(mbb)
  by_seat = [_mean_ci(mbb[seats_array == seat]) for seat in (0, 1)]
  nan = float('nan')
  return AcpcResult(
    bot=bot,
    hands=len(chips_array),
    big_blind=big_blind,
    mbb_per_hand=mean,
    ci95_low=low,
    ci95_high=high,
    sd_mbb=sd,
    seat_mbb=(by_seat[0][0], by_seat[1][0]),
    seat_ci95=((by_seat[0][1], by_seat[0][2]), (by_seat[1][1], by_seat[1][2])),
    seconds=seconds,
    decisions=len(think),
    think_median=statistics.median(think) if think else nan,
    think_max=max(think) if think else nan,
    fallbacks=fallbacks,
    chips=chips_array,
    seats=seats_array,
  )


def _mean_ci(values: np.ndarray) -> tuple[float, float, float, float]:
  """`match._mean_ci`: (mean, low, high, sd) of the normal 95% interval; all nan without values."""
  return match._mean_ci(values) if len(values) else (float('nan'),) * 4


# The connection.


class _Connection:
  """Lines from and to the dealer over one TCP socket."""

  def __init__(self, host: str, port: int, connect_timeout: float):
    try:
      self._socket = socket.create_connection((host, port), timeout=connect_timeout)
    except OSError as error:
      raise ProtocolError(f'cannot connect to the dealer at {host}:{port} ({_reason(error)})') from None
    self._socket.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    self._buffer = b''

  def send(self, line: str) -> None:
    try:
      self._socket.sendall(line.encode('ascii') + b'\r\n')
    except OSError as error:
      raise ProtocolError(f'cannot send to the dealer ({_reason(error)})') from None

  def read(self, timeout: float | None) -> str | None:
    """The next line without its end; None when the dealer has closed the connection; TimeoutError
    after `timeout` seconds without a whole line."""
    deadline = None if timeout is None else time.monotonic() + timeout
    while b'\n' not in self._buffer:
      if len(self._buffer) > MAX_LINE:
        raise ProtocolError(f'the dealer sent a line longer than {MAX_LINE} bytes')
      left = None if deadline is None else max(deadline - time.monotonic(), 0.0)
      if left == 0.0:
        raise TimeoutError
      self._socket.settimeout(left)
      try:
        data = self._socket.recv(65536)
      except TimeoutError:
        raise  # the caller's to judge: silence
      except ConnectionResetError:
        data = b''  # a close that left our last line unread: a close all the same
      except OSError as error:
        raise ProtocolError(f'the connection to the dealer failed ({_reason(error)})') from None
      if not data:
        if self._buffer.strip():
          raise ProtocolError(
            f'the dealer closed the connection in the middle of a line: {self._buffer[:120]!r}'
          )
        return None
      self._buffer += data
    line, _, self._buffer = self._buffer.partition(b'\n')
    try:
      return line.decode('ascii').rstrip('\r')
    except UnicodeDecodeError:
      raise ProtocolError(f'the dealer sent a line that is not ASCII: {line[:120]!r}') from None

  def close(self) -> None:
    self._socket.close()


def _reason(error: OSError) -> str:
  return error.strerror or str(error) or type(error).__name__


# The match.


class _Match:
  """Follows the dealer's states hand by hand (see the module) and answers at our turn."""

  def __init__(self, game: AcpcGame, seat, log: HandLog | None, t_response: float, warn):
    self.game = game
    self.seat = seat
    self.log = log
    self.t_response = t_response
    self.warn = warn
    self.number: int | None = None  # the current hand's number
    self.hand: TableHand | None = None
    self.position = 0
    self.tokens: list[str] = []  # the dealer's actions of this hand applied so far
    self.sent: tuple[int, str] | None = None  # (index in `tokens`, our action) awaiting the dealer's record
    self.done = True  # the current hand has finished (or none began)
    self.chips: list[int] = []
    self.seats: list[int] = []
    self.think: list[float] = []
    self.fallbacks = 0

  def on_state(self, state: MatchState, received: float) -> str | None:
    """Follows `state`; our action ('f', 'c', 'r<N>') where it is our turn, else None."""
    if self.number is None or state.hand != self.number:
      self._begin(state)
    elif self.done:
      raise ProtocolError(f'hand {state.hand} went on after it had ended: {_clip(state.text)!r}')
    elif state.position != self.position or state.holes[state.position] != self.hand.hole:
      raise ProtocolError(f'hand {state.hand}: our position or cards changed: {_clip(state.text)!r}')
    self._advance(state)
    hand = self.hand
    if hand.finished:
      self._finish(state)
      return None
    if hand.to_act != hand.seat:
      return None
    return self._decide(received)

  def _begin(self, state: MatchState) -> None:
    if not self.done:
      raise ProtocolError(f'hand {state.hand} began before hand {self.number} had ended')
    if self.number is not None and state.hand != self.number + 1:
      raise ProtocolError(f'hand {state.hand} came after hand {self.number}')
    hole = state.holes[state.position]
    if len(hole) != 2:
      raise ProtocolError(f'hand {state.hand}: the match state shows no hole cards of ours')
    self.number, self.position, self.done = state.hand, state.position, False
    self.tokens, self.sent = [], None
    game = self.game
    self.hand = TableHand(game.rules, game.stacks, game.seat(state.position), hole)

  def _advance(self, state: MatchState) -> None:
    """Applies the state's new actions to our hand, dealing the board as the streets come."""
    hand, number = self.hand, self.number
    flat = [(r, token) for r, tokens in enumerate(state.rounds) for token in tokens]
    if [token for _, token in flat[: len(self.tokens)]] != self.tokens:
      raise ProtocolError(
        f'hand {number}: the betting {state.betting!r} does not follow {"".join(self.tokens)!r} sent before'
      )
    for index, (street, token) in enumerate(flat[len(self.tokens) :], len(self.tokens)):
      self._deal(state)
      if hand.finished or street != hand.street:
        raise ProtocolError(f'hand {number}: the betting {state.betting!r} does not follow the rules here')
      if hand.to_act == hand.seat:
        if self.sent is None or self.sent[0] != index:
          raise ProtocolError(
            f'hand {number}: the dealer recorded an action of ours that we did not send ({token!r})'
          )
        if self.sent[1] != token:
          raise ProtocolError(
            f'hand {number}: the dealer recorded our action as {token!r}; we sent {self.sent[1]!r}'
          )
        self.sent = None
      kind, amount = self._from_acpc(token)
      try:
        hand.apply(kind, amount)
      except ValueError as error:
        raise ProtocolError(
          f"hand {number}: the dealer's action {token!r} is not legal here ({error})"
        ) from None
      self.tokens.append(token)
    self._deal(state)
    board = list(state.board)
    showdown_over = hand.finished and hand.folded is None
    expected_round = 3 if showdown_over else hand.street
    if hand.board != board or len(state.rounds) - 1 != expected_round or hand.cards_due:
      raise ProtocolError(
        f'hand {number}: the state does not follow ours (round {len(state.rounds) - 1}, board '
        f'{cards_text(board) or "-"}; ours {expected_round}, {cards_text(hand.board) or "-"})'
      )

  def _deal(self, state: MatchState) -> None:
    hand = self.hand
    while hand.cards_due and len(state.board) >= len(hand.board) + hand.cards_due:
      if list(state.board[: len(hand.board)]) != hand.board:
        break  # found by the check after the actions
      hand.deal(state.board[len(hand.board) : len(hand.board) + hand.cards_due])

  def _spent_before_round(self, seat: int) -> int:
    """Chips `seat` put in before this round: the dealer counts raises from there (no antes in ACPC)."""
    return self.hand.committed[seat] - self.hand.round_bet[seat]

  def _from_acpc(self, token: str) -> tuple[int, int]:
    if token == 'f':
      return nlhe.FOLD, 0
    if token == 'c':
      return nlhe.CALL, 0
    return nlhe.RAISE, int(token[1:]) - self._spent_before_round(self.hand.to_act)

  def _decide(self, received: float) -> str:
    """Asks the seat, checks its answer and returns it as the dealer's action."""
    hand, started = self.hand, time.monotonic()
    deadline = received + self.t_response - TRANSPORT_SECONDS
    try:
      kind, amount = self.seat.act(hand, deadline, hand_key=self.number)
    except Exception as error:  # noqa: BLE001 (the dealer gets an action whatever happened here)
      self.warn(f'hand {self.number}: the bot failed ({type(error).__name__}: {error}); checking or calling')
      kind, amount = None, 0
    options = hand.legal()
    round_actions = sum(1 for street, _, _ in hand.actions if street == hand.street)
    if kind == nlhe.RAISE and options.can_raise and round_actions + 2 > MAX_ROUND_ACTIONS:
      kind = nlhe.CALL  # the dealer allows no raise this late in a round
    if kind == nlhe.RAISE and options.can_raise and options.min_raise_to <= amount <= options.max_raise_to:
      token = f'r{int(amount) + self._spent_before_round(hand.seat)}'
    elif kind == nlhe.CALL or kind == nlhe.FOLD and options.can_fold:
      token = 'c' if kind == nlhe.CALL else 'f'
    else:
      if kind is not None:
        self.warn(
          f'hand {self.number}: the bot answered an illegal action ({kind}, {amount}); checking or calling'
        )
      self.fallbacks += 1
      token = 'c'
    self.think.append(time.monotonic() - started)
    self.sent = (len(self.tokens), token)
    return token

  def _finish(self, state: MatchState) -> None:
    """Scores the finished hand from its final state and logs it."""
    hand, number = self.hand, self.number
    other = state.holes[1 - self.position]
    showdown = hand.folded is None
    ranks = None
    if showdown:
      if len(other) != 2 or len(hand.board) != 5:
        raise ProtocolError(f'hand {number} ended in a showdown without both hands and the board shown')
      holes = [None, None]
      holes[hand.seat], holes[1 - hand.seat] = list(hand.hole), list(other)
      ranks = nlhe.showdown_ranks(nlhe.initial(np.array([holes]), np.array([hand.board])))[0]
    chips = hand.chips_won(ranks)[hand.seat]
    self.done = True
    self.chips.append(chips)
    self.seats.append(hand.seat)
    if self.log is not None:
      self.log.write(
        {
          'hand': number,
          'position': self.position,
          'seat': hand.seat,
          'hole': cards_text(hand.hole),
          'opponent_hole': cards_text(other) if other else None,
          'board': cards_text(hand.board),
          'betting': state.betting,
          'showdown': showdown,
          'chips': chips,
          'state': state.text,
        }
      )


def play(
  host: str,
  port: int,
  seat,
  *,
  game: AcpcGame | None = None,
  log: HandLog | None = None,
  timeout: float = defaults.ACPC_STALL_SECONDS,
  t_response: float = defaults.ACPC_RESPONSE_SECONDS,
  connect_timeout: float = 30.0,
  on_hand=None,
  warn=None,
) -> AcpcResult:
  """Plays a match at the dealer at `host`:`port` until it closes the connection after a finished hand;
  returns our `AcpcResult`. `seat`: a `tables.seat.Seat` (anything with `act(hand, deadline,
  hand_key=)` answering a legal (kind, amount) of the `TableHand`); `game`: the dealer's game (default
  `DEFAULT_GAME`, checked); `log`: where each finished hand goes; `timeout`: seconds of silence from
  the dealer, once the match has begun, that end it; `t_response`: seconds an answer may take;
  `on_hand(hands_done)` after each hand; `warn(line)` for a seat's failures (default: stderr).
  Raises ProtocolError (one line) when the dealer's side breaks the match; the hands finished by then
  are in the log."""
  game = load_game() if game is None else game
  check_game(game)
  warn = warn or (lambda line: print(f'jaxcfr: {line}', file=sys.stderr, flush=True))
  table = _Match(game, seat, log, t_response, warn)
  started = time.monotonic()
  connection = _Connection(host, port, connect_timeout)
  try:
    connection.send(VERSION)
    while True:
      began = table.number is not None
      try:
        line = connection.read(timeout if began else None)
      except TimeoutError:
        where = f'in hand {table.number}' if not table.done else f'after hand {table.number}'
        raise ProtocolError(f'no message from the dealer for {timeout:g} s {where}') from None
      received = time.monotonic()
      if line is None:
        if not began:
          raise ProtocolError('the dealer closed the connection before the first hand')
        if not table.done:
          raise ProtocolError(f'the dealer closed the connection in the middle of hand {table.number}')
        break
      if line.startswith(('#', ';')):
        continue
      hands = len(table.chips)
      action = table.on_state(parse_state(line, game), received)
      if action is not None:
        connection.send(f'{line}:{action}')
      if on_hand is not None and len(table.chips) > hands:
        on_hand(len(table.chips))
  finally:
    connection.close()
  return summarise(
    getattr(getattr(seat, 'policy', None), 'name', type(seat).__name__), table.chips, table.seats,
    game.big_blind, time.monotonic() - started, table.think, table.fallbacks,
  )  # fmt: skip


def dealer_log(path: str) -> tuple[list[tuple[int, list[int], list[str]]], dict[str, float] | None]:
  """A dealer's `.log` file: its hands (hand number, chips won per position, player names per
  position) and its final `SCORE` (player name -> chips), None where the match did not finish."""
  hands, score = [], None
  with open(path, encoding='utf-8') as file:
    for line in file:
      line = line.rstrip('\n')
      if line.startswith('STATE:'):
        parts = line.split(':')
        hands.append((int(parts[1]), [round(float(v)) for v in parts[4].split('|')], parts[5].split('|')))
      elif line.startswith('SCORE:'):
        _, values, names = line.split(':')
        score = dict(zip(names.split('|'), map(float, values.split('|')), strict=True))
  return hands, score


def compare_logs(dealer: str, ours: str, name: str) -> dict:
  """Our `HandLog` at `ours` hand by hand against the dealer's log at `dealer`, where we played as
  `name`: {'hands', 'agree' (hands whose chips are the same), 'disagree' (the first few that are
  not, as (hand, dealer's, ours)), 'missing' (hands in one log only), 'score' (the dealer's final total
  for `name`, None if absent), 'total' (ours)}."""
  hands, score = dealer_log(dealer)
  theirs = {number: values[names.index(name)] for number, values, names in hands if name in names}
  mine = {record['hand']: record['chips'] for record in read_log(ours)}
  both = sorted(set(theirs) & set(mine))
  wrong = [(h, theirs[h], mine[h]) for h in both if theirs[h] != mine[h]]
  return {
    'hands': len(both),
    'agree': len(both) - len(wrong),
    'disagree': wrong[:10],
    'missing': sorted(set(theirs) ^ set(mine))[:10],
    'score': None if score is None else score.get(name),
    'total': sum(mine.values()),
  }


def default_header(bot: str, host: str, port: int, game: AcpcGame) -> dict:
  """What a `HandLog`'s first line says besides its format: the bot, the dealer, the game, the time."""
  return {
    'bot': bot,
    'dealer': f'{host}:{port}',
    'game': game.to_json(),
    'started': datetime.datetime.now(datetime.timezone.utc).isoformat(timespec='seconds'),
  }
