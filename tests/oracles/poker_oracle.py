"""An independent oracle for hold'em subgame solving: OpenSpiel's `universal_poker`.

The oracle states a river or turn spot (board, pot, chips behind, both players' ranges over
hole-card pairs) as a `universal_poker` game with the fcpa betting abstraction, compiles it
through jaxcfr's OpenSpiel bridge and reports game values and exploitabilities, so tests can
compare jaxcfr's own public-tree subgame solver against it.

What `universal_poker` does with the subgame parameters (OpenSpiel 2.0.2, read from its source
and checked at run time; `tests/poker/subgame/test_poker_oracle.py` checks the parts we rely on):

- `potSize=P` sets both players' spent chips to P / 2 (P must be even). It does not touch the
  state's `maxSpent`, which stays the largest blind, so the blinds must be `P/2 P/2` or the
  betting is wrong (e.g. fold is offered before any bet). `stack` is each player's total chips
  including the P / 2 already in the pot: chips behind = stack - P / 2.
- `boardCards` is a card string, two characters a card, rank '23456789TJQKA' then suit 'cdhs'
  (e.g. '7s6h5d4c3c'); the round is advanced past the rounds those cards fill. We use one
  round per remaining street: a river spot is `numRounds=1, numBoardCards=5`, a turn spot
  `numRounds=2, numBoardCards=4 1`; `firstPlayer=1 ...` makes player 0 (out of position) act
  first on every street.
- `numRanks`/`numSuits` keep the lowest ranks (deuce upward) and the first suits of 'cdhs'.
  Chance action ids index that deck in the order 2c 2d 2h 2s 3c ... (for 4 suits: our card id).
- `handReaches` (2 x 1326 space-separated weights, player 0's first, hands indexed by rank then
  by suit in 'shdc' order, see `hand_reaches_string`) replaces the card-by-card deal with one
  chance node of all 270725 * 6 ordered pairs of disjoint hands of the full deck, weighted
  w0(h0) w1(h1), zero where a card is on the board, normalised: P(h0, h1) is proportional to
  w0(h0) w1(h1) over pairs disjoint from each other and the board. It only works with the
  52-card deck (a CHECK fails for any other), and 1.6M outcomes are too many to compile, so
  the spots here deal the same distribution themselves: `Spot`'s root is one chance node over
  the pairs of positive weight, each child the pyspiel state after dealing those four cards.
- Utilities are chips won: at a fold the folder loses what it spent (P / 2 plus its bets), at a
  showdown the loser loses what it spent and a tie returns 0; so a checked-down showdown is
  worth +P / 2 to the winner.
- fcpa: action ids 0 fold, 1 check/call, 2 pot, 3 all-in. Fold only when facing a bet. Pot
  raises to maxSpent + (to call + pot), i.e. a bet of the pot, or a raise of the pot after
  calling. Pot is offered when that is at most the all-in amount; all-in (raise to the whole
  stack) is offered when it differs from the pot raise: where the pot raise is exactly all-in
  it is action 2 and there is no action 3; where it exceeds the stack only all-in (3) is left.
  No raise cap other than the stacks. After an all-in call the remaining cards are dealt with
  no betting.

Information-state strings look like
`[Round 1][Player: 0][Pot: 300][Money: 200 200][Private: 2s2h][Public: 7s6h5d4c3c][Sequences: r150c|]`:
the round (0 = the spot's first street), the acting player, the pot, chips behind, the acting
player's hole cards, the board and the ACPC betting per round ('c' check/call, 'f' fold, 'rN'
raise to N total chips spent), rounds separated by '|'. `parse_information_state` reads them.
"""

from __future__ import annotations

import dataclasses
import itertools
import re
from collections.abc import Callable, Sequence

import numpy as np
import pyspiel

RANKS = '23456789TJQKA'
SUITS = 'cdhs'
FOLD, CALL, POT, ALL_IN = 0, 1, 2, 3
ACTION_LETTERS = 'fcpa'  # by action id
HOLES = tuple(itertools.combinations(range(52), 2))  # abstractions.HOLES order
_HOLE_INDEX = {pair: index for index, pair in enumerate(HOLES)}


def card_string(card: int) -> str:
  return RANKS[card // 4] + SUITS[card % 4]


def cards_string(cards: Sequence[int]) -> str:
  return ''.join(card_string(card) for card in cards)


def parse_cards(text: str) -> tuple[int, ...]:
  """Card ids (4 * rank + suit) of a card string such as '7s6h5d'."""
  if len(text) % 2:
    raise ValueError(f'odd-length card string {text!r}')
  return tuple(4 * RANKS.index(text[i]) + SUITS.index(text[i + 1]) for i in range(0, len(text), 2))


def hole_index(hole: Sequence[int]) -> int:
  """Position of a hole pair (either order) in `HOLES`."""
  low, high = sorted(hole)
  return _HOLE_INDEX[(low, high)]


def deck(num_ranks: int, num_suits: int) -> tuple[int, ...]:
  """The short deck's card ids: the lowest `num_ranks` ranks, the first `num_suits` suits."""
  return tuple(4 * rank + suit for rank in range(num_ranks) for suit in range(num_suits))


def hand_reaches_string(ranges: tuple[np.ndarray, np.ndarray]) -> str:
  """`handReaches` for the 52-card deck from two [1326] ranges in `HOLES` order.

  OpenSpiel indexes hands (GetHoleCardsReachIndex) by cards numbered rank * 4 + (3 - suit),
  i.e. suits in 'shdc' order, as the upper triangle of a 52 x 52 matrix: the pair i < j is
  entry i * (2 * 52 - i - 3) / 2 + j - 1."""
  values = []
  for weights in ranges:
    weights = np.asarray(weights, np.float64)
    if weights.shape != (len(HOLES),):
      raise ValueError(f'a range has {len(HOLES)} weights, got shape {weights.shape}')
    reordered = np.zeros(len(HOLES))
    for index, (a, b) in enumerate(HOLES):
      i, j = sorted(4 * (card // 4) + 3 - card % 4 for card in (a, b))
      reordered[i * (2 * 52 - i - 3) // 2 + j - 1] = weights[index]
    values.extend(reordered)
  return ' '.join(repr(float(value)) for value in values)


def universal_poker_parameters(
  num_ranks: int, num_suits: int, board: Sequence[int], pot: int, stack: int
) -> dict:
  """pyspiel parameters of the spot: `pot` chips in the middle (even), `stack` chips behind
  each player, `board` of 5 (river) or 4 (turn) or 3 (flop) cards; player 0 acts first."""
  if pot <= 0 or pot % 2:
    raise ValueError(f'pot must be even and positive, got {pot}')
  if len(board) not in (3, 4, 5):
    raise ValueError(f'board must have 3, 4 or 5 cards, got {len(board)}')
  cards = deck(num_ranks, num_suits)
  if any(card not in cards for card in board) or len(set(board)) != len(board):
    raise ValueError(f'board {cards_string(board)} is not distinct cards of the {num_ranks}x{num_suits} deck')
  streets = {5: '5', 4: '4 1', 3: '3 1 1'}[len(board)]
  rounds = len(streets.split())
  return {
    'betting': 'nolimit',
    'numPlayers': 2,
    'numRounds': rounds,
    'blind': f'{pot // 2} {pot // 2}',
    'firstPlayer': ' '.join(['1'] * rounds),
    'numSuits': num_suits,
    'numRanks': num_ranks,
    'numHoleCards': 2,
    'numBoardCards': streets,
    'stack': f'{pot // 2 + stack} {pot // 2 + stack}',
    'bettingAbstraction': 'fcpa',
    'potSize': pot,
    'boardCards': cards_string(board),
  }


class _DealState:
  """The spot's root: one chance node dealing (player 0's pair, player 1's pair)."""

  def __init__(self, spot: Spot):
    self.spot = spot

  def current_player(self) -> int:
    return pyspiel.PlayerId.CHANCE

  def is_terminal(self) -> bool:
    return False

  def is_chance_node(self) -> bool:
    return True

  def legal_actions(self) -> list[int]:
    return [action for action, _ in self.spot.deals]

  def chance_outcomes(self) -> list[tuple[int, float]]:
    return list(self.spot.deals)

  def child(self, action: int):
    h0, h1 = divmod(action, len(HOLES))
    state = self.spot.game.new_initial_state()
    for card in HOLES[h0] + HOLES[h1]:
      state.apply_action(self.spot.deal_action[card])
    return state

  def returns(self) -> list[float]:
    return [0.0, 0.0]

  def information_state_string(self, player: int) -> str:
    raise ValueError('the deal has no information state')


class Spot:
  """A `universal_poker` subgame with ranges, following jaxcfr's game protocol (compile it
  with `jaxcfr.compile_game(spot)`): the root deals both hole pairs at once, with
  P(h0, h1) proportional to ranges[0][h0] * ranges[1][h1] over pairs disjoint from each
  other and the board (zero-weight pairs are left out of the tree); below it every state is
  OpenSpiel's own. Deal action h0 * 1326 + h1 (`HOLES` positions)."""

  def __init__(
    self,
    num_ranks: int,
    num_suits: int,
    board: Sequence[int],
    pot: int,
    stack: int,
    ranges: tuple[np.ndarray, np.ndarray],
  ):
    self.num_ranks, self.num_suits = num_ranks, num_suits
    self.board, self.pot, self.stack = tuple(board), pot, stack
    self.parameters = universal_poker_parameters(num_ranks, num_suits, board, pot, stack)
    self.game = pyspiel.load_game('universal_poker', self.parameters)
    self.ranges = tuple(np.asarray(weights, np.float64) for weights in ranges)
    if len(self.ranges) != 2 or any(w.shape != (len(HOLES),) or (w < 0).any() for w in self.ranges):
      raise ValueError(f'ranges are two non-negative [{len(HOLES)}] arrays in HOLES order')
    root = self.game.new_initial_state()
    self.deal_action = {
      parse_cards(root.action_to_string(a).split('Deal ')[1])[0]: a for a in root.legal_actions()
    }
    live = [h for h, pair in enumerate(HOLES) if all(card in self.deal_action for card in pair)]
    weights = []
    for h0 in live:
      if self.ranges[0][h0] == 0:
        continue
      for h1 in live:
        if self.ranges[1][h1] and not set(HOLES[h0]) & set(HOLES[h1]):
          weights.append((h0 * len(HOLES) + h1, self.ranges[0][h0] * self.ranges[1][h1]))
    total = sum(w for _, w in weights)
    if not total:
      raise ValueError('the ranges leave no deal of positive probability')
    self.deals = tuple((action, w / total) for action, w in weights)

  def num_players(self) -> int:
    return 2

  def num_distinct_actions(self) -> int:
    return self.game.num_distinct_actions()

  def information_state_tensor_size(self) -> int:
    return 0

  def new_initial_state(self) -> _DealState:
    return _DealState(self)

  def __str__(self) -> str:
    return f'universal_poker spot {cards_string(self.board)} pot {self.pot} behind {self.stack}'


def full_range(num_ranks: int, num_suits: int, board: Sequence[int] = ()) -> np.ndarray:
  """[1326] weights: 1 on every pair of the short deck that avoids `board`, else 0."""
  cards = set(deck(num_ranks, num_suits)) - set(board)
  return np.array([float(a in cards and b in cards) for a, b in HOLES])


def universal_poker_spot(
  num_ranks: int,
  num_suits: int,
  board: tuple[int, ...],
  pot: int,
  stack: int,
  ranges: tuple[np.ndarray, np.ndarray],
) -> Spot:
  """The spot as a game for `jaxcfr.compile_game`; `spot.game` is the pyspiel game under it."""
  return Spot(num_ranks, num_suits, board, pot, stack, ranges)


@dataclasses.dataclass(frozen=True)
class InfoState:
  """An information-state string of a spot, read: the acting player, its hole pair (sorted
  card ids), its `HOLES` position, the board (sorted card ids, the spot's board plus any card
  dealt since) and the betting, one string of action letters ('fcpa', by OpenSpiel action id)
  per street, joined by '/': e.g. 'pc/c' is pot bet, call on the turn, check on the river."""

  player: int
  hole: tuple[int, int]
  hole_index: int
  board: tuple[int, ...]
  betting: str


_KEY = re.compile(
  r'\[Round (\d+)\]\[Player: (\d+)\]\[Pot: \d+\]\[Money: [\d ]+\]'
  r'\[Private: (\w*)\]\[Public: (\w*)\]\[Sequences: (.*)\]$'
)


def parse_information_state(key: str, pot: int, stack: int) -> InfoState:
  """Reads a spot's information-state string (`pot`, `stack`: the spot's, chips behind).
  A raise 'rN' is action 3 (all-in) when N is the whole stack and the pot raise was not
  exactly all-in, else action 2 (pot), as `universal_poker`'s fcpa offers them."""
  match = _KEY.match(key)
  if match is None:
    raise ValueError(f'not a universal_poker information state: {key!r}')
  _, player, private, public, sequences = match.groups()
  all_in = pot // 2 + stack
  spent = [pot // 2, pot // 2]
  streets = []
  for street in sequences.split('|'):
    letters, actor = [], 0
    for token in re.findall(r'[cf]|r\d+', street):
      if token == 'f':
        letters.append('f')
      elif token == 'c':
        letters.append('c')
        spent[actor] = max(spent)
      else:
        to = int(token[1:])
        pot_raise = 2 * max(spent) - spent[actor] + sum(spent)
        letters.append('a' if to == all_in and pot_raise != all_in else 'p')
        if letters[-1] == 'p' and to != pot_raise:
          raise ValueError(f'raise to {to} in {key!r} is neither pot ({pot_raise}) nor all-in ({all_in})')
        spent[actor] = to
      actor = 1 - actor
    streets.append(''.join(letters))
  hole = tuple(sorted(parse_cards(private)))
  return InfoState(int(player), hole, hole_index(hole), tuple(sorted(parse_cards(public))), '/'.join(streets))


def policy_array(compiled, spot: Spot, policy: Callable[[InfoState], Sequence[float]]) -> np.ndarray:
  """`[I, A]` policy of `compiled` (the compiled `spot`): row i is `policy(info)` for the
  parsed information state i, probabilities over action ids 0..3 (fold, call, pot, all-in);
  illegal actions must get zero, rows are normalised."""
  mask = np.asarray(compiled.legal_mask)
  rows = np.zeros(mask.shape)
  for row, key in enumerate(compiled.infoset_keys):
    values = np.asarray(policy(parse_information_state(key, spot.pot, spot.stack)), np.float64)
    if (values[~mask[row, : len(values)]] != 0).any():
      raise ValueError(f'policy puts weight on an illegal action at {key!r}: {values}')
    rows[row, : len(values)] = values
  total = rows.sum(1, keepdims=True)
  if (total <= 0).any():
    raise ValueError('policy gives a row with no weight')
  return rows / total


def uniform_policy(compiled) -> np.ndarray:
  mask = np.asarray(compiled.legal_mask, np.float64)
  return mask / mask.sum(1, keepdims=True)


def evaluate(compiled, policy) -> dict:
  """Exact values of a `[I, A]` policy on a compiled spot (jaxcfr's evaluation on the
  OpenSpiel tree): `values` [2] per player, `best_responses` [2] each player's best-response
  value against the other, `nash_conv`, `exploitability` (NashConv / 2), chips."""
  import jaxcfr  # noqa: PLC0415

  policy = np.asarray(policy, np.float64)
  return {
    'values': np.asarray(jaxcfr.expected_values(compiled, policy), np.float64),
    'best_responses': np.asarray(jaxcfr.best_response_values(compiled, policy), np.float64),
    'nash_conv': float(jaxcfr.nash_conv(compiled, policy)),
    'exploitability': float(jaxcfr.exploitability(compiled, policy)),
  }


def betting_tree(spot: Spot) -> list[tuple[str, str, tuple[int, int]]]:
  """The spot's public betting tree, read from OpenSpiel on one deal: (betting, kind,
  contributions) per node in depth-first order, betting as in `InfoState` ('/' once a card
  is dealt), kind 'p0' or 'p1' (who acts), 'fold' or 'showdown' (terminals), contributions
  each player's total chips in the pot (the spot's P / 2 included)."""
  root = spot.new_initial_state()
  state = root.child(root.legal_actions()[0])
  nodes = []

  def walk(state, betting: str):
    spent = tuple(int(x) for x in state.observation_tensor(0)[-2:])
    if state.is_terminal():
      folded = betting.endswith('f')
      nodes.append((betting, 'fold' if folded else 'showdown', spent))
    elif state.is_chance_node():
      walk(state.child(state.legal_actions()[0]), betting + '/')
    else:
      nodes.append((betting, f'p{state.current_player()}', spent))
      for action in state.legal_actions():
        walk(state.child(action), betting + ACTION_LETTERS[action])

  walk(state, '')
  return nodes


def oracle_values(spot: Spot, iterations: int = 200, compiled=None) -> dict:
  """OpenSpiel's numbers for a spot: `game_value` (player 0's value of the uniform policy),
  `uniform_exploitability` (NashConv / 2), `solved_value` / `solved_exploitability` of
  jaxcfr's CFR+ average policy after `iterations`, `tree` (`betting_tree`), `compiled`."""
  import jax  # noqa: PLC0415
  import jax.numpy as jnp  # noqa: PLC0415

  import jaxcfr  # noqa: PLC0415

  if compiled is None:
    compiled = jaxcfr.compile_game(spot, dtype=jnp.float64)
  uniform = evaluate(compiled, uniform_policy(compiled))
  solver = jaxcfr.make_solver('cfr+')
  state = jax.jit(jaxcfr.run, static_argnums=0)(solver, solver.init(compiled), compiled, iterations)
  solved = evaluate(compiled, solver.average_policy(state, compiled))
  return {
    'game_value': float(uniform['values'][0]),
    'uniform_exploitability': uniform['exploitability'],
    'solved_value': float(solved['values'][0]),
    'solved_exploitability': solved['exploitability'],
    'tree': betting_tree(spot),
    'compiled': compiled,
  }


def showdown_sign(spot: Spot, hole0: Sequence[int], hole1: Sequence[int]) -> int:
  """+1 / 0 / -1: player 0 wins / ties / loses the check-down of `spot` (river) by OpenSpiel."""
  state = spot.game.new_initial_state()
  for card in tuple(hole0) + tuple(hole1):
    state.apply_action(spot.deal_action[card])
  while not state.is_terminal():
    state.apply_action(CALL if not state.is_chance_node() else state.legal_actions()[0])
  return int(np.sign(state.returns()[0]))


def showdown_game(num_ranks: int, num_suits: int):
  """A one-street `universal_poker` game on the short deck that deals both hole pairs, then five
  board cards (chance action ids: positions in `deck`), then plays one betting round; checked
  down it returns +-1 or 0: OpenSpiel's showdown, for comparing hand rankings."""
  return pyspiel.load_game(
    'universal_poker',
    {
      'betting': 'nolimit',
      'numPlayers': 2,
      'numRounds': 1,
      'blind': '1 1',
      'firstPlayer': '1',
      'numSuits': num_suits,
      'numRanks': num_ranks,
      'numHoleCards': 2,
      'numBoardCards': '5',
      'stack': '100 100',
      'bettingAbstraction': 'fcpa',
    },
  )


def showdown_signs(num_ranks: int, num_suits: int, deals: np.ndarray) -> np.ndarray:
  """[N] +1 / 0 / -1 by OpenSpiel: does hole pair deals[:, 0:2] beat deals[:, 2:4] on the
  board deals[:, 4:9] (card ids of the short deck)?"""
  game = showdown_game(num_ranks, num_suits)
  action = {card: position for position, card in enumerate(deck(num_ranks, num_suits))}
  signs = np.zeros(len(deals), np.int64)
  for row, cards in enumerate(np.asarray(deals)):
    state = game.new_initial_state()
    for card in cards:
      state.apply_action(action[int(card)])
    state.apply_action(CALL)
    state.apply_action(CALL)
    signs[row] = np.sign(state.returns()[0])
  return signs


def random_deals(num_ranks: int, num_suits: int, count: int, seed: int = 0) -> np.ndarray:
  """[count, 9] distinct card ids of the short deck: two hole pairs, then a board."""
  cards = np.array(deck(num_ranks, num_suits))
  rng = np.random.default_rng(seed)
  return np.stack([rng.choice(cards, 9, replace=False) for _ in range(count)])


def all_deals(num_ranks: int, num_suits: int) -> np.ndarray:
  """[N, 9]: every board of the short deck with every unordered pair of disjoint hole pairs
  off it (5x3: 1,891,890 rows), laid out as `random_deals`."""
  cards = deck(num_ranks, num_suits)
  rows = []
  for board in itertools.combinations(cards, 5):
    pairs = list(itertools.combinations([card for card in cards if card not in board], 2))
    for i, first in enumerate(pairs):
      rows.extend(first + second + board for second in pairs[i + 1 :] if not set(first) & set(second))
  return np.array(rows, np.int32)
