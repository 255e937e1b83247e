"""The public tree of a heads-up no-limit hold'em subgame, built on the host once per bet sizing.

A node is a public state: the betting so far and the board. Private cards are not in the tree; the
solver keeps a vector over hands at every node. Player 0 is out of position (OOP, first to act on
every street), player 1 in position (IP). The subgame starts at the beginning of a street (flop,
turn or river) with a pot `pot` (both players are taken to have put in half of it) and `stack`
chips behind each (the effective stack); it ends at a fold or a showdown.

Bet sizes use postflop-solver's syntax, one list per street for the first bet of a round and one
for raises, comma-separated:

    '60%'  a fraction of the pot (after calling, for a raise: raise by 60% of the pot after the call)
    '2.5x' a raise to 2.5 times the opponent's bet (raises only)
    'e'    the geometric size: equal pot fractions on every remaining street put the stacks in
    'a'    all-in

Amounts are whole chips, rounded half up as postflop-solver rounds them. A size at or above the stack
is the all-in; a bet that would leave at most `force_all_in` times the pot (once called) behind
becomes the all-in; equal amounts merge. Two more options have postflop-solver's meaning (0 turns
each off): `add_all_in` adds the all-in where it is at most that many times the pot after a call
(raise increment for a raise), and `merge` drops a size close to a larger one, as PioSOLVER does:
from the largest down, a size of y times the pot after the call is dropped when (1 + x) / (1 + y)
< 1 + merge for x the last size kept. A
raise adds at least the last bet or raise of the round (and at least `min_increment` chips, 1 by
default; the real game's big blind where amounts must be legal there). `raise_cap`
limits bets plus raises per round (None: only the stacks do). `donk` sizes replace OOP's first
bet of the turn or river when IP bet or raised last on the street before (a donk bet).

A subgame may also start in the middle of its first round (`RoundStart`: the chips each player has
put in this round, who acts, the bets and raises so far, whether each has acted), as a bot re-solving
at its own decision does: `pot` is then the pot when the round began (equal shares, as every earlier
round ended level) and `stack` what each had behind then; the opponent's actual bet is the root's
facing bet, whatever its size.

Chance nodes deal the turn and river cards, one child per card left in the deck (no suit
isomorphism: a spot keeps its exact cards, and boards like Td9d6hQc have no interchangeable suits
worth merging for a turn solve; the cost is at most a factor of a few on monotone-free boards).
After an all-in is called before the river, chance nodes deal the rest of the board, then the
showdown.

Arrays are in breadth-first order, so the nodes of each depth are contiguous (`levels`); the
solver works depth by depth. Shapes: N nodes, D decision nodes, K chance nodes, C cards a chance
node deals, F fold nodes, S showdown nodes, A the most actions at a decision node.
"""

from __future__ import annotations

import collections
import collections.abc
import dataclasses
import functools
import itertools
import math
import re

import numpy as np

from jaxcfr.poker.rules.cards import PokerInputError

BOARD_SIZE = {1: 3, 2: 4, 3: 5}  # cards on the board at each street
DECISION, CHANCE, FOLD, SHOWDOWN = 0, 1, 2, 3
LEAF = 4  # `build(..., first_round_only=True)`: the first round is over and the hand goes on


@dataclasses.dataclass(frozen=True)
class Size:
  """One bet size: kind 'pot' (fraction of the pot), 'x' (times the opponent's bet), 'e'
  (geometric over the remaining streets) or 'a' (all-in)."""

  kind: str
  value: float = 0.0

  def __str__(self):
    if self.kind == 'pot':
      return f'{self.value * 100:g}%'
    if self.kind == 'x':
      return f'{self.value:g}x'
    return self.kind


def parse_sizes(text: str, what: str = 'bets', raises: bool = False) -> tuple[Size, ...]:
  """'60%,e,a' -> sizes; 'Nx' only where `raises`. An empty text means no bets."""
  sizes = []
  for item in (part.strip().lower() for part in str(text).split(',')):
    if not item:
      continue
    if item in ('a', 'allin', 'all-in'):
      sizes.append(Size('a'))
    elif item == 'e':
      sizes.append(Size('e'))
    elif match := re.fullmatch(r'(\d+(?:\.\d*)?|\.\d+)%', item):
      fraction = float(match.group(1)) / 100
      if fraction <= 0:
        raise PokerInputError(f'{what} {text!r}: {item!r} is not a size (a pot fraction must be above 0%)')
      sizes.append(Size('pot', fraction))
    elif match := re.fullmatch(r'(\d+(?:\.\d*)?|\.\d+)x', item):
      if not raises:
        raise PokerInputError(
          f"{what} {text!r}: {item!r} is a raise size; a first bet takes '60%', 'e' or 'a'"
        )
      multiple = float(match.group(1))
      if multiple <= 1:
        raise PokerInputError(f'{what} {text!r}: {item!r} is not a size (a raise multiple must be above 1x)')
      sizes.append(Size('x', multiple))
    else:
      raise PokerInputError(
        f'{what} {text!r}: {item!r} is not a size '
        "(e.g. '60%' of the pot, '2.5x' a raise, 'e' geometric, 'a' all-in)"
      )
  return tuple(dict.fromkeys(sizes))


@dataclasses.dataclass(frozen=True)
class StreetSizes:
  """The sizes of one street: first bets, raises, and OOP's donk bets (None: its usual bets)."""

  bets: tuple[Size, ...]
  raises: tuple[Size, ...]
  donk: tuple[Size, ...] | None = None


def street_sizes(bets: str = '60%,e,a', raises: str = '2.5x', donk: str | None = None) -> StreetSizes:
  return StreetSizes(
    parse_sizes(bets, 'bets'),
    parse_sizes(raises, 'raises', raises=True),
    None if donk is None else parse_sizes(donk, 'donk'),
  )


@dataclasses.dataclass(frozen=True)
class RoundStart:
  """The first round of a subgame as it stands at the root, when it is partly played: chips each player
  (OOP, IP) has put in this round, the player to act, bets and raises so far this round, the largest
  bet or raise increment so far (0: none), and whether each player has acted since the last bet."""

  round_bet: tuple[int, int] = (0, 0)
  to_act: int = 0
  raises: int = 0
  last_increment: int = 0
  acted: tuple[bool, bool] = (False, False)

  def __post_init__(self):
    if self.to_act not in (0, 1):
      raise PokerInputError(f'the player to act is 0 (OOP) or 1 (IP), got {self.to_act!r}')
    if min(self.round_bet) < 0 or self.raises < 0 or self.last_increment < 0:
      raise PokerInputError(f'a round start has no negative amounts, got {self}')
    player, other = self.to_act, 1 - self.to_act
    if self.round_bet[player] > self.round_bet[other] or (
      self.acted[player] and self.round_bet[player] == self.round_bet[other]
    ):
      raise PokerInputError(
        f'the round is over or the player to act is not the one facing the action: {self}'
      )


@dataclasses.dataclass(frozen=True)
class TreeConfig:
  """What shapes a public tree: the starting street, pot and stack, and the bet sizing.

  `sizes` holds one `StreetSizes` per street from the flop (index 0 = flop, 1 = turn, 2 = river).
  """

  street: int  # 1 flop, 2 turn, 3 river
  pot: int
  stack: int
  sizes: tuple[StreetSizes, StreetSizes, StreetSizes] = (street_sizes(),) * 3
  raise_cap: int | None = None
  force_all_in: float = 0.15
  deck_size: int = 52
  start: RoundStart | None = None  # the first round partly played (None: it begins at the root)
  min_increment: int = 1  # the smallest raise increment (the real game's big blind)
  add_all_in: float = 0.0  # postflop-solver's add_allin_threshold (0: never added)
  merge: float = 0.0  # postflop-solver's merging_threshold (0: no merging)

  def __post_init__(self):
    if self.street not in (1, 2, 3):
      raise PokerInputError(
        f'a subgame starts on the flop, turn or river (street 1, 2 or 3), got {self.street}'
      )
    if not (isinstance(self.pot, int | np.integer) and self.pot > 0):
      raise PokerInputError(f'the pot must be a positive number of chips, got {self.pot!r}')
    if not (isinstance(self.stack, int | np.integer) and self.stack > 0):
      raise PokerInputError(f'the stack must be a positive number of chips, got {self.stack!r}')
    if self.raise_cap is not None and self.raise_cap < 0:
      raise PokerInputError(f'the raise cap must be 0 or more, got {self.raise_cap}')
    if not 0 <= self.force_all_in < 10:
      raise PokerInputError(f'force_all_in must be in [0, 10), got {self.force_all_in}')
    if not 0 <= self.add_all_in < 100:
      raise PokerInputError(f'add_all_in must be in [0, 100), got {self.add_all_in}')
    if not 0 <= self.merge < 10:
      raise PokerInputError(f'merge must be in [0, 10), got {self.merge}')
    if not (isinstance(self.min_increment, int | np.integer) and self.min_increment >= 1):
      raise PokerInputError(
        f'the minimum raise increment must be a whole number >= 1, got {self.min_increment!r}'
      )
    if self.start is not None and max(self.start.round_bet) > self.stack:
      raise PokerInputError(f'the round start puts in more than the stack: {self.start}')


@dataclasses.dataclass
class _Round:
  """The betting state while the tree is built (chips added in this subgame, per player)."""

  street: int
  added: list  # [2] chips each has put in since the subgame began
  round_bet: list  # [2] chips each has put in this round
  to_act: int
  raises: int = 0
  last_increment: int = 0
  acted: list = dataclasses.field(default_factory=lambda: [False, False])
  ip_aggressor: bool = False  # IP bet or raised last on the street before (a donk bet may follow)
  last_aggressor: int = -1  # who bet or raised last on this street


@dataclasses.dataclass
class _Node:
  kind: int
  player: int  # acting player (decision), folder (fold), -1 otherwise
  added: tuple  # [2] chips put in since the subgame began
  street: int
  dealt: tuple  # positions in the deck-less-board of the cards dealt since the subgame began
  parent: int = -1
  slot: int = 0
  label: str = ''
  children: list = dataclasses.field(default_factory=list)
  labels: list = dataclasses.field(default_factory=list)


class NodeTable(collections.abc.Sequence):
  """`build`'s nodes kept as arrays: `table[i]` is node i, a `_Node` made when asked for (its
  `children` and `labels` as lists). A flop tree's 700,000 nodes take about 25 MB so, against about
  320 MB as Python objects, which a solve would hold beside its state for the labels alone."""

  def __init__(self, nodes: list[_Node]):
    count = len(nodes)
    columns = np.array(
      [
        (x.kind, x.player, x.street, x.parent, x.slot, *x.added, len(x.dealt), len(x.children)) for x in nodes
      ],
      np.int64,
    ).reshape(count, 9)
    self.kind, self.player, self.street = (columns[:, i].astype(np.int8) for i in range(3))
    self.parent, self.slot = columns[:, 3].astype(np.int32), columns[:, 4].astype(np.int32)
    self.added = columns[:, 5:7].copy()
    self.dealt_count, self.num_children = columns[:, 7].astype(np.int8), columns[:, 8].astype(np.int32)
    self.dealt = np.full((count, int(self.dealt_count.max(initial=0))), -1, np.int16)
    flat = np.fromiter(itertools.chain.from_iterable(x.dealt for x in nodes), np.int16)
    row = np.repeat(np.arange(count), self.dealt_count)
    starts = np.cumsum(self.dealt_count, dtype=np.int64) - self.dealt_count
    self.dealt[row, np.arange(len(flat)) - starts[row]] = flat
    names = {}
    self.label = np.fromiter((names.setdefault(x.label, len(names)) for x in nodes), np.int32, count)
    self.names = list(names)
    # A node's children are added together (`_add`), so they are consecutive: first and count.
    child = np.flatnonzero(self.parent >= 0)  # node j is child number slot[j] of its parent
    eldest = child[self.slot[child] == 0]
    self.first_child = np.zeros(count, np.int32)
    self.first_child[self.parent[eldest]] = eldest
    consecutive = (child - self.slot[child] == self.first_child[self.parent[child]]).all()
    if not consecutive or (np.bincount(self.parent[child], minlength=count) != self.num_children).any():
      raise AssertionError("a node's children are not consecutive")

  def __len__(self) -> int:
    return len(self.kind)

  def __getitem__(self, index):
    if isinstance(index, slice):
      return [self[i] for i in range(*index.indices(len(self)))]
    i = range(len(self))[index]
    children = list(range(self.first_child[i], self.first_child[i] + self.num_children[i]))
    return _Node(
      int(self.kind[i]), int(self.player[i]), tuple(int(a) for a in self.added[i]), int(self.street[i]),
      tuple(int(c) for c in self.dealt[i, : self.dealt_count[i]]), int(self.parent[i]), int(self.slot[i]),
      self.names[self.label[i]], children, [self.names[self.label[c]] for c in children],
    )  # fmt: skip


def _amounts(config: TreeConfig, state: _Round) -> list[tuple[str, int]]:
  """(label, raise-to amount of this round) of the player to act's bets or raises, deduplicated."""
  player, other = state.to_act, 1 - state.to_act
  pot = config.pot + sum(state.added)
  to_call = max(state.round_bet) - state.round_bet[player]
  behind = config.stack - state.added[player]
  behind_other = config.stack - state.added[other]
  if behind <= to_call or behind_other == 0:
    return []
  if config.raise_cap is not None and state.raises >= config.raise_cap:
    return []
  street = config.sizes[state.street - 1]
  facing = max(state.round_bet)
  if facing > 0:
    sizes = street.raises
  elif player == 0 and state.ip_aggressor and street.donk is not None:
    sizes = street.donk
  else:
    sizes = street.bets
  pot_after_call = pot + to_call
  all_in_to = state.round_bet[player] + min(behind, to_call + behind_other)
  lowest = facing + max(state.last_increment, config.min_increment)
  streets_left = 4 - state.street
  amounts = set()
  for size in sizes:
    if size.kind == 'a':
      amount = all_in_to
    elif size.kind == 'x':
      if facing == 0:
        continue
      amount = _round(size.value * facing)
    else:
      if size.kind == 'e':
        behind_after_call = min(behind - to_call, behind_other)
        # A geometric raise spreads over the streets left less the raises so far (postflop-solver's).
        streets = max(streets_left - state.raises + 1, 1) if facing else streets_left
        fraction = ((1 + 2 * behind_after_call / pot_after_call) ** (1 / streets) - 1) / 2
      else:
        fraction = size.value
      amount = facing + _round(fraction * pot_after_call)
    amount = max(amount, lowest)
    # Left behind once called, against the pot then: at or below the threshold, go all-in.
    pot_if_called = pot_after_call + 2 * (amount - facing)
    if amount >= all_in_to or all_in_to - amount <= _round(config.force_all_in * pot_if_called):
      amount = all_in_to
    amounts.add(amount)
  if config.add_all_in and all_in_to - facing <= _round(config.add_all_in * pot_after_call):
    amounts.add(all_in_to)
  kept = _merged(sorted(amounts), facing, pot_after_call, config.merge) if config.merge else sorted(amounts)
  return [(f'{"all-in" if a == all_in_to else ("raise" if facing else "bet")} {a}', a) for a in kept]


def _round(x: float) -> int:
  """Half up, as postflop-solver's (Rust's) `round` rounds the positive amounts here."""
  return math.floor(x + 0.5)


def _merged(amounts: list[int], facing: int, pot: int, threshold: float) -> list[int]:
  """`amounts` (ascending) less those close to a larger kept one, postflop-solver's rule: from the
  largest down, keep an amount whose size y (increment over `facing`, in pots) satisfies
  y < (x - threshold) / (1 + threshold) for x the last kept size."""
  kept, last = [], None
  for amount in reversed(amounts):
    size = (amount - facing) / pot
    if last is None or size < (last - threshold) / (1 + threshold) * (1 - 1e-12):
      kept.append(amount)
      last = size
  return kept[::-1]


def _actions(config: TreeConfig, state: _Round) -> list[tuple[str, str, int]]:
  """(kind, label, amount) of the legal abstract actions of the player to act."""
  player = state.to_act
  to_call = max(state.round_bet) - state.round_bet[player]
  actions = []
  if to_call > 0:
    behind = config.stack - state.added[player]
    actions.append(('fold', 'fold', 0))
    actions.append(('call', 'call', state.round_bet[player] + min(to_call, behind)))
  else:
    actions.append(('check', 'check', 0))
  actions += [('bet', label, amount) for label, amount in _amounts(config, state)]
  return actions


def _after(config: TreeConfig, state: _Round, kind: str, amount: int):
  """The state after an action, or ('fold' | 'showdown' | 'deal', state) when the round ends."""
  player, other = state.to_act, 1 - state.to_act
  state = dataclasses.replace(
    state, added=list(state.added), round_bet=list(state.round_bet), acted=list(state.acted)
  )
  state.acted[player] = True
  if kind == 'fold':
    return 'fold', state
  if kind in ('call', 'bet'):
    state.added[player] += amount - state.round_bet[player]
    previous = max(state.round_bet)
    state.round_bet[player] = amount
    if kind == 'bet':
      state.raises += 1
      state.last_increment = max(state.last_increment, amount - previous)
      state.acted[other] = False
      state.last_aggressor = player
  state.to_act = other
  closed = all(state.acted) and state.round_bet[0] == state.round_bet[1]
  if kind == 'call':
    closed = True
  if not closed:
    return 'act', state
  all_in = config.stack - state.added[0] == 0 or config.stack - state.added[1] == 0
  if state.street == 3:
    return 'showdown', state
  return ('runout' if all_in else 'deal'), state


def _add(nodes, states, queue, index, kind, player, child_state, label, street=None, dealt=None, added=None):
  """Appends a child of node `index`; decision and chance children are queued for expansion."""
  node = nodes[index]
  nodes.append(
    _Node(
      kind,
      player,
      tuple(added if added is not None else child_state.added),
      node.street if street is None else street,
      node.dealt if dealt is None else dealt,
      parent=index,
      slot=len(node.children),
      label=label,
    )
  )
  child = len(nodes) - 1
  node.children.append(child)
  node.labels.append(label)
  if kind in (DECISION, CHANCE):
    states[child] = child_state
    queue.append(child)


def root_round(config: TreeConfig) -> _Round:
  """The betting state at the root: a fresh round, or `config.start`'s."""
  start = config.start
  if start is None:
    return _Round(config.street, [0, 0], [0, 0], 0)
  return _Round(
    config.street,
    list(start.round_bet),
    list(start.round_bet),
    start.to_act,
    raises=start.raises,
    last_increment=start.last_increment,
    acted=list(start.acted),
    last_aggressor=-1 if start.raises == 0 else int(start.round_bet[1] > start.round_bet[0]),
  )


def root_actions(config: TreeConfig) -> list[tuple[str, str, int]]:
  """(kind 'fold' | 'check' | 'call' | 'bet', label, this round's total after the action) of the root's
  actions, in the order of its children."""
  return _actions(config, root_round(config))


def build(config: TreeConfig, first_round_only: bool = False) -> list[_Node]:
  """The public tree's nodes in breadth-first order (children listed by position).

  `first_round_only`: the tree stops where the first betting round ends and the hand goes on (a
  `LEAF` node: a call or checks before the river, an all-in called before the river), as a
  depth-limited search wants (`depth_limited`)."""
  deck_left = config.deck_size - BOARD_SIZE[config.street]
  root = root_round(config)
  nodes = [_Node(DECISION, root.to_act, tuple(root.added), config.street, ())]
  states = {0: root}
  queue = collections.deque([0])
  while queue:
    index = queue.popleft()
    node, state = nodes[index], states.pop(index)

    add = functools.partial(_add, nodes, states, queue, index)

    if node.kind == CHANCE:
      for position in range(deck_left):
        if position in node.dealt:
          continue
        dealt = node.dealt + (position,)
        street = node.street + 1
        if state is None:  # an all-in runout: deal on to the river, then the showdown
          kind = SHOWDOWN if street == 3 else CHANCE
          add(kind, -1, None, f'deal {position}', street, dealt, node.added)
        else:
          child_state = _Round(street, list(state.added), [0, 0], 0, ip_aggressor=state.last_aggressor == 1)
          add(DECISION, 0, child_state, f'deal {position}', street, dealt)
      continue
    for kind, label, amount in _actions(config, state):
      outcome, after = _after(config, state, kind, amount)
      if outcome == 'fold':
        add(FOLD, state.to_act, after, label)
      elif outcome == 'showdown':
        add(SHOWDOWN, -1, after, label)
      elif outcome == 'act':
        add(DECISION, after.to_act, after, label)
      elif first_round_only:  # 'deal' or 'runout': the round is over, the hand is not
        add(LEAF, -1, after, label)
      elif outcome == 'deal':
        add(CHANCE, -1, after, label)
      else:  # all-in and called before the river
        add(CHANCE, -1, None, label, added=after.added)
  return nodes


def levels(nodes: list[_Node]) -> list[tuple[int, int]]:
  """[start, stop) node ranges of each depth (the nodes are in breadth-first order)."""
  depth = np.zeros(len(nodes), np.int32)
  for i, node in enumerate(nodes[1:], 1):
    depth[i] = depth[node.parent] + 1
  bounds = np.flatnonzero(np.diff(depth)) + 1
  starts = [0, *bounds.tolist()]
  stops = [*bounds.tolist(), len(nodes)]
  return list(zip(starts, stops, strict=True))


def describe(config: TreeConfig, nodes: list[_Node] | None = None) -> dict:
  """Counts of a tree's nodes by kind (for sizing and reports); `nodes`: the tree's, if built."""
  nodes = build(config) if nodes is None else nodes
  kinds = collections.Counter(node.kind for node in nodes)
  edges = collections.Counter(node.player for node in nodes if node.kind == DECISION for _ in node.children)
  return {
    'nodes': len(nodes),
    'decision_nodes': kinds[DECISION],
    'chance_nodes': kinds[CHANCE],
    'fold_nodes': kinds[FOLD],
    'showdown_nodes': kinds[SHOWDOWN],
    'depth': len(levels(nodes)),
    'max_actions': max(len(n.children) for n in nodes if n.kind == DECISION),
    'edges': [edges[0], edges[1]],  # the actions of each player's decision nodes
  }


ACTION_LETTERS = {'check': 'x', 'call': 'c', 'fold': 'f', 'bet': 'b', 'raise': 'r', 'all-in': 'a'}


def action_token(label: str) -> str:
  """An action's label as a short token: 'x' check, 'c' call, 'f' fold, 'b120' bet, 'r300' raise,
  'a900' all-in (the amount: the chips the player has put in this round after it)."""
  kind, *amount = label.split()
  return ACTION_LETTERS[kind] + ''.join(amount)


def betting_lines(config: TreeConfig) -> list[str]:
  """The betting tree, one decision node a line in depth-first order: the line of actions that
  leads to it, ':' and its actions (X check, C call, F fold, B<n> bet, R<n> raise, A<n> all-in, n
  the chips the player has put in this round after it). Chance nodes are left out, as the betting
  after every card is the same: this is postflop-solver's action tree, printed by
  `experiments/postflop_solver_peer` (`print-tree`) in the same form."""
  nodes = build(dataclasses.replace(config, deck_size=BOARD_SIZE[3]))  # one card a chance node
  lines = []

  def walk(index: int, path: list[str]) -> None:
    node = nodes[index]
    if node.kind == CHANCE:
      walk(node.children[0], path)
    elif node.kind == DECISION:
      tokens = [action_token(label).upper() for label in node.labels]
      lines.append(f'{" ".join(path)}: {" ".join(tokens)}')
      for child, name in zip(node.children, tokens, strict=True):
        walk(child, [*path, name])

  walk(0, [])
  return lines
