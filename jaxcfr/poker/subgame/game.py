"""A hold'em subgame as a game the CFR family solves: the public tree times a vector over hands.

`Subgame` joins the structure of a public tree (`PublicTree`, the same for every spot of one bet
sizing and stack-to-pot shape) and one spot's cards and ranges (`Spot`). It follows the game
protocol of `CompiledGame` where the solvers and the training loop look: an "infoset" is a
(decision node, hand) pair, so regrets and strategies are `[D * H, A]` arrays (`[D, H, A]` in
memory order), `player_regrets` is the vector-CFR pass, and `evaluate_profile` the exact best
response. So every full-width algorithm of the registry (CFR+, DCFR, PCFR+, ...), `jaxcfr.run` and
`jaxcfr.train` serve it unchanged.

Values are per deal: the hands are dealt with probability proportional to w0(h0) w1(h1) over
disjoint pairs, then the board's missing cards uniformly. A player's payoff is what they win from
the other, counting the starting pot as put in half by each (zero-sum): the winner of a showdown
gets pot / 2 + the other's chips put in since, a folder loses theirs.

Shapes: N nodes (+ 1 padding node), D decision nodes, K chance nodes, C cards a chance node deals,
F fold nodes, S showdown nodes, R river boards, H hands, A the most actions.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib

import jax
import jax.numpy as jnp
import numpy as np

from jaxcfr.poker.rules import cards as cards_module
from jaxcfr.poker.rules import ranges as ranges_module
from jaxcfr.poker.subgame import blocked, showdown
from jaxcfr.poker.subgame import isomorphism as isomorphism_module
from jaxcfr.poker.subgame.tree import (
  BOARD_SIZE,
  CHANCE,
  DECISION,
  FOLD,
  SHOWDOWN,
  NodeTable,
  TreeConfig,
  build,
)


class TreeInfo:
  """Host-side description of a public tree (its config, nodes with labels, the river boards'
  deck positions); compares by its shape, so spots of one tree shape share compiled programs."""

  def __init__(
    self, config: TreeConfig, nodes, river_keys, decisions, groups, shape_key: tuple, showdowns_in_order=False
  ):
    self.config = config
    self.showdowns_in_order = showdowns_in_order  # one river board, its showdowns in its slots' order
    self.groups = groups  # per depth the counts of the six groups of nodes (`GROUPS`), padding included
    self.nodes = nodes  # as `tree.build` returns them (breadth-first)
    self.river_keys = river_keys  # [R] tuples of deck positions dealt before each river board
    self.decisions = decisions  # [D] the node (in `nodes`) of each decision row, -1 for padding
    self.fingerprint = hashlib.sha256(repr(shape_key).encode()).hexdigest()[:16]
    self.name = f'subgame({config.pot}, {config.stack}, street {config.street})'

  def line(self, node: int) -> tuple[str, ...]:
    """The labels of the actions and deals from the root to `node` (an index into `nodes`)."""
    labels = []
    while self.nodes[node].parent >= 0:
      labels.append(self.nodes[node].label)
      node = self.nodes[node].parent
    return tuple(labels[::-1])

  def __eq__(self, other):
    return isinstance(other, TreeInfo) and self.fingerprint == other.fingerprint

  def __hash__(self):
    return hash(self.fingerprint)


@dataclasses.dataclass(frozen=True)
class PublicTree:
  """The public tree's structure as per-depth arrays (a pytree; the sizes are static).

  The nodes of each depth are ordered by kind: decision nodes, chance nodes, fold nodes, showdown
  nodes (`level_sizes`), so that a depth's values are one concatenation and no pass scatters; the
  nodes that chance deals into come first among the decision nodes and last among the showdown
  nodes (`GROUPS`), so that the rest, the rows the solver keeps state for, are one slice
  (`edge_bounds`). A child is named by its position in the next depth; that depth's size pads.
  """

  parent: tuple[jax.Array, ...]  # per depth [n_d] int32: position of the parent in depth d - 1
  slot: tuple[jax.Array, ...]  # per depth [n_d] int32: the action leading here (decision parents)
  parent_player: tuple[jax.Array, ...]  # per depth [n_d] int32: the parent's actor, 2 if chance
  edge_card: tuple[jax.Array, ...]  # per depth [n_d] int32: the deck position dealt on the way in, C if none
  children: tuple[jax.Array, ...]  # per depth [m_d, A] int32: decision nodes' children, n_{d+1} pads
  chance_children: tuple[jax.Array, ...]  # per depth [k_d, C] int32: chance nodes' children, n_{d+1} pads
  decision_player: jax.Array  # [D] int32, decision rows in depth order
  legal: jax.Array  # [D, A, 1] bool
  chance_weight: jax.Array  # [K]: 1 / the cards that can come given both hands
  fold_player: jax.Array  # [F] int32: who folded (fold nodes in depth order)
  fold_amount: jax.Array  # [F]: what the folder loses (pot / 2 + chips put in since the start)
  fold_dealt: jax.Array  # [F, 2] int32: deck positions dealt before the fold, C pads
  showdown_source: jax.Array  # [R * M] int32: the showdown (in depth order) at each (board, slot); S pads
  showdown_slot: jax.Array  # [S] int32: each showdown's (board, slot) position, board * M + slot
  showdown_grouped_amount: jax.Array  # [R, 1, M]: what the loser of each showdown loses, 0 for padding
  level_sizes: tuple[tuple[int, int, int, int], ...]  # per depth: decision, chance, fold, showdown nodes
  edge_bounds: tuple[tuple[int, int], ...]  # per depth: [start, stop) of the rows the solver keeps state for
  info: TreeInfo
  # Per depth d >= 1, where the tree is built `by_actor`: its edge rows as runs (length, actor 0 or 1)
  # of the player whose action leads into them (padding counts as OOP's), so that the solver can keep
  # each player's edges over that player's hands only (`Spot.hand_split`); else None.
  edge_runs: tuple[tuple[tuple[int, int], ...], ...] | None = None

  @property
  def num_nodes(self) -> int:
    return sum(map(sum, self.level_sizes))

  @property
  def num_decisions(self) -> int:
    return self.decision_player.shape[0]

  @property
  def num_actions(self) -> int:
    return self.legal.shape[1]


jax.tree_util.register_dataclass(
  PublicTree,
  data_fields=[
    'parent',
    'slot',
    'parent_player',
    'edge_card',
    'children',
    'chance_children',
    'decision_player',
    'legal',
    'chance_weight',
    'fold_player',
    'fold_amount',
    'fold_dealt',
    'showdown_source',
    'showdown_slot',
    'showdown_grouped_amount',
  ],
  meta_fields=['level_sizes', 'edge_bounds', 'info', 'edge_runs'],
)


@dataclasses.dataclass(frozen=True)
class Spot:
  """One spot's cards and ranges on a tree (batch these with `jax.vmap` over a leading axis)."""

  board: jax.Array  # [B] int32: the starting board's cards
  hands: jax.Array  # [H, 2] int32: the hole pairs the board leaves in HOLES order (or see `hand_split`)
  ranges: jax.Array  # [2, H]: OOP's and IP's weights
  remaining: jax.Array  # [C] int32: the cards left in the deck, by position
  card_mask: jax.Array  # [C + 1, H] bool: False where a hand holds the card at that position (row C: True)
  tables: showdown.ShowdownTables  # per river board
  river_mask: jax.Array  # [R, H] bool: False where a river board holds a card of the hand
  # (H0, H1) where the hands are those of the two ranges (`make_spot`'s `range_hands`), ordered so
  # that OOP's are the first H0 and IP's the last H1; else None.
  hand_split: tuple[int, int] | None = None


jax.tree_util.register_dataclass(
  Spot,
  data_fields=['board', 'hands', 'ranges', 'remaining', 'card_mask', 'tables', 'river_mask'],
  meta_fields=['hand_split'],
)


@dataclasses.dataclass(frozen=True)
class Lock:
  """Strategies fixed at some decisions for some hands (`locking.lock`), in the two layouts that read
  them: the solver's edges and the locked decision rows."""

  edges: tuple  # per depth of the solver's state layout (`solver.state_shapes`) the locked probability
  # of the action into each edge for each hand, NaN where the hand is free there; None for a depth
  # without a lock
  index: jax.Array  # [K] int32: the decision rows with a locked hand
  rows: jax.Array  # [K, A, H]: their locked probabilities, NaN where a hand is free (0 on padding actions)


jax.tree_util.register_dataclass(Lock, data_fields=['edges', 'index', 'rows'], meta_fields=[])


@dataclasses.dataclass(frozen=True)
class Subgame:
  """A public tree and a spot: the game the solvers take."""

  tree: PublicTree
  spot: Spot
  blocks: object = None  # blocked.Blocks of a turn tree (its river part solved card by card), or None
  lock: Lock | None = None  # node locking (`locking.lock`), or None: nothing locked

  num_players = 2

  @property
  def large_blocks(self) -> bool:
    """For `backend.compiler_options`: turn and flop trees run faster with YNNPACK's reductions (a
    blocked turn iteration and a whole one alike), a river tree's small arrays with YNNPACK kept to
    matrix products."""
    return self.tree.info.config.street != 3

  # For `training.train`: the iterations' program takes the state donated (its next state in the same
  # buffers), so that a flop's state, gigabytes, is in memory once.
  donate_state = True

  @property
  def classic_emitters(self) -> bool:
    """For `backend.compiler_options`: a blocked turn tree compiles faster and runs a little faster
    with XLA:CPU's classic emitters; a whole one runs a little slower with them."""
    return self.blocks is not None

  @property
  def dtype(self):
    return self.spot.ranges.dtype

  @property
  def num_hands(self) -> int:
    return self.spot.hands.shape[-2]

  @property
  def name(self) -> str:
    return self.tree.info.name

  @property
  def info(self) -> TreeInfo:
    return self.tree.info

  @property
  def num_infosets(self) -> int:
    return self.tree.num_decisions * self.num_hands

  @property
  def num_histories(self) -> int:
    return self.tree.num_nodes

  def evaluate_profile(self, policy: jax.Array) -> tuple[jax.Array, jax.Array]:
    """(NashConv, [2] expected values per deal) of `policy` `[D, A, H]` (`jaxcfr.train` calls this).
    With a lock, the NashConv of the locked game: each best response keeps the locked strategies."""
    reach = reach_probabilities(self, policy)  # one forward pass serves both
    values = per_deal_values(self, policy, reach)
    return (per_deal_values(self, policy, reach, best_response=True) - values).sum(), values


jax.tree_util.register_dataclass(Subgame, data_fields=['tree', 'spot', 'blocks', 'lock'], meta_fields=[])


# Building.

# The groups a depth's nodes are ordered in. Kinds first (decision, chance, fold, showdown nodes), and
# within the decision and showdown nodes those that a chance node deals into apart, at the two ends:
# the nodes between them are the ones below a decision (and chance nodes), whose rows the solver's
# per-edge state keeps (`PublicTree.edge_bounds`); on a turn tree the river roots are a tenth of the
# nodes and hold no regret or average.
GROUPS = (
  'decision below chance',
  'decision',
  'chance',
  'fold',
  'showdown',
  'showdown below chance',
)
_KIND_OF_GROUP = (DECISION, DECISION, CHANCE, FOLD, SHOWDOWN, SHOWDOWN)


def _kinds(groups) -> tuple[int, int, int, int]:
  """A depth's decision, chance, fold and showdown counts from its six group counts."""
  return (groups[0] + groups[1], groups[2], groups[3], groups[4] + groups[5])


def _edge_bounds(groups) -> tuple[int, int]:
  """[start, stop) of a depth's rows that have an edge in the solver's state."""
  return groups[0], sum(groups) - groups[5]


@dataclasses.dataclass(frozen=True)
class TreeShape:
  """What fixes a public tree's array shapes (and so its compiled programs): per depth the counts of
  its six groups of nodes (`GROUPS`), the most actions, and the showdowns per river board."""

  groups: tuple[tuple[int, int, int, int, int, int], ...]
  width: int
  slots_per_board: int

  @property
  def level_sizes(self) -> tuple[tuple[int, int, int, int], ...]:
    """Per depth the counts of decision, chance, fold and showdown nodes."""
    return tuple(_kinds(groups) for groups in self.groups)

  def union(self, other: TreeShape) -> TreeShape:
    """The smallest shape that holds both (elementwise maxima)."""
    depth = max(len(self.groups), len(other.groups))
    pad = lambda groups: groups + ((0,) * len(GROUPS),) * (depth - len(groups))
    levels = tuple(tuple(map(max, a, b)) for a, b in zip(pad(self.groups), pad(other.groups), strict=True))
    return TreeShape(levels, max(self.width, other.width), max(self.slots_per_board, other.slots_per_board))

  def covers(self, other: TreeShape) -> bool:
    return self.union(other) == self


def tree_shape(config: TreeConfig) -> TreeShape:
  """The shape of the tree of `config` without padding."""
  tree = build_tree(config)
  return TreeShape(tree.info.groups, tree.num_actions, tree.showdown_grouped_amount.shape[-1])


def envelope(configs) -> TreeShape:
  """One shape that holds the trees of all `configs` (e.g. a bet sizing at every stack-to-pot ratio a
  bot will meet), so that one compiled program serves all of their spots."""
  shapes = [tree_shape(config) for config in configs]
  if not shapes:
    raise ValueError('envelope needs at least one tree configuration')
  total = shapes[0]
  for shape in shapes[1:]:
    total = total.union(shape)
  return total


def build_tree(config: TreeConfig, dtype=jnp.float32, shape: TreeShape | None = None) -> PublicTree:
  """The arrays of the public tree of `config` (host work, once per sizing and shape).

  With a `shape` (see `envelope`) the arrays are padded to it with nodes that weigh nothing, so that
  trees of other pots and stacks share one compiled program; the values are unchanged.
  """
  return tree_arrays(config, build(config), dtype, shape)


def tree_arrays(
  config: TreeConfig, nodes, dtype=jnp.float32, shape: TreeShape | None = None, by_actor: bool = False
) -> PublicTree:
  """`build_tree` of a list of nodes (`tree.build`'s, or a part of them re-indexed: a forest whose
  roots have no parent, chance nodes without children). `by_actor`: each group's nodes ordered by
  the player whose action leads into them, and `PublicTree.edge_runs` set."""
  deck_left = config.deck_size - BOARD_SIZE[config.street]
  by_depth, groups, width, river_keys, slots_per_board = _grouped(nodes, shape)
  if by_actor:
    actor = lambda i: nodes[nodes[i].parent].player if nodes[i].parent >= 0 else 2  # noqa: E731
    by_depth = [[sorted(members, key=actor) for members in depth_groups] for depth_groups in by_depth]
  rows_of, sizes, position = _row_order(by_depth, groups)
  levels, decisions, folds, showdowns, chance_weight = _levels(config, nodes, rows_of, sizes, position, width)
  half = config.pot / 2

  def dealt(i):
    return [deck_left] * 2 if i == _NONE else list(nodes[i].dealt) + [deck_left] * (2 - len(nodes[i].dealt))

  as_int = lambda rows: tuple(jnp.asarray(np.asarray(r, np.int32).reshape(np.shape(r))) for r in rows)
  legal = np.zeros((len(decisions), width, 1), bool)
  legal[:, 0] = True  # padding rows keep one action, so that no policy divides by zero
  for r, i in enumerate(decisions):
    if i != _NONE:
      legal[r, : len(nodes[i].children)] = True
  source, grouped_amount, slot = _showdown_layout(nodes, showdowns, river_keys, slots_per_board, half)
  # One river board whose showdowns fill its slots in depth order (an unpadded river tree, a turn tree's
  # block): the showdown values need no gathers between the two layouts.
  in_order = len(source) == 1 and bool(np.array_equal(slot, np.arange(source.size)))
  chance_width = deck_left  # a chance node deals every card left: the street and the deck set its width
  shape_key = (
    config.street,
    config.deck_size,
    tuple(groups),
    width,
    chance_width,
    slots_per_board,
    len(river_keys),
    in_order,
  )
  return PublicTree(
    parent=as_int(levels['parent']),
    slot=as_int(levels['slot']),
    parent_player=as_int(levels['parent_player']),
    edge_card=as_int(levels['edge_card']),
    children=as_int(levels['children']),
    chance_children=as_int(levels['chance_children']),
    decision_player=jnp.asarray(
      np.array([nodes[i].player if i != _NONE else 2 for i in decisions], np.int32)
    ),
    legal=jnp.asarray(legal),
    chance_weight=jnp.asarray(np.array(chance_weight), dtype),
    fold_player=jnp.asarray(np.array([nodes[i].player if i != _NONE else 2 for i in folds], np.int32)),
    fold_amount=jnp.asarray(
      np.array([half + nodes[i].added[nodes[i].player] if i != _NONE else 0.0 for i in folds]), dtype
    ),
    fold_dealt=jnp.asarray(np.array([dealt(i) for i in folds], np.int32).reshape(-1, 2)),
    showdown_source=jnp.asarray(source.reshape(-1)),
    showdown_slot=jnp.asarray(slot),
    showdown_grouped_amount=jnp.asarray(grouped_amount[:, None, :], dtype),
    level_sizes=tuple(sizes),
    edge_bounds=tuple(map(_edge_bounds, groups)),
    info=TreeInfo(config, nodes, river_keys, decisions, tuple(groups), shape_key, in_order),
    edge_runs=_edge_runs(levels['parent_player'], groups) if by_actor else None,
  )


def _edge_runs(parent_player, groups) -> tuple:
  """`PublicTree.edge_runs` of per-depth parent players (row order) and group counts."""
  runs = []
  for players, counts in zip(parent_player[1:], groups[1:], strict=True):
    start, stop = _edge_bounds(counts)
    depth_runs = []
    for player in (int(p == 1) for p in players[start:stop]):
      if depth_runs and depth_runs[-1][1] == player:
        depth_runs[-1][0] += 1
      else:
        depth_runs.append([1, player])
    runs.append(tuple(map(tuple, depth_runs)))
  return tuple(runs)


_NONE = -1  # the padding marker in `tree_arrays`' host lists of nodes


def _grouped(nodes, shape: TreeShape | None):
  """(per depth and group (`GROUPS`) the nodes, per depth the groups' sizes, the widest decision, the
  river boards' keys, the most showdowns on one river board): `shape`'s sizes where it pads the tree."""
  depth = [0] * len(nodes)
  for i, node in enumerate(nodes):
    depth[i] = depth[node.parent] + 1 if node.parent >= 0 else 0
  num_depths = max(depth) + 1 if shape is None else max(max(depth) + 1, len(shape.groups))
  by_depth = [[[] for _ in GROUPS] for _ in range(num_depths)]  # [depth][group] -> nodes
  for i, node in enumerate(nodes):
    dealt_into = node.parent >= 0 and nodes[node.parent].kind == CHANCE
    group = {DECISION: 0 if dealt_into else 1, CHANCE: 2, FOLD: 3, SHOWDOWN: 5 if dealt_into else 4}[
      node.kind
    ]
    by_depth[depth[i]][group].append(i)
  groups = [tuple(len(members) for members in depth_groups) for depth_groups in by_depth]
  width = max(
    (len(nodes[i].children) for depth_groups in by_depth for g in (0, 1) for i in depth_groups[g]), default=1
  )
  river_keys = sorted({tuple(sorted(n.dealt)) for n in nodes if n.kind == SHOWDOWN})
  board_row = {key: r for r, key in enumerate(river_keys)}
  per_board = np.bincount([board_row[tuple(sorted(n.dealt))] for n in nodes if n.kind == SHOWDOWN])
  slots_per_board = max(1, int(per_board.max(initial=0)))
  if shape is not None:
    own = TreeShape(tuple(groups), width, slots_per_board)
    if not shape.covers(own):
      raise ValueError('the tree does not fit the shape it is padded to (build the shape with `envelope`)')
    groups, width, slots_per_board = list(shape.groups), shape.width, shape.slots_per_board
  return by_depth, groups, width, river_keys, slots_per_board


def _row_order(by_depth, groups):
  """(per depth and kind the nodes in row order, each group followed by its padding; per depth the
  kinds' sizes; each node's row in its depth)."""
  rows_of = []
  for depth_groups, counts in zip(by_depth, groups, strict=True):
    kinds = [[] for _ in range(4)]
    for group, (members, count) in enumerate(zip(depth_groups, counts, strict=True)):
      kinds[_KIND_OF_GROUP[group]] += members + [_NONE] * (count - len(members))
    rows_of.append(kinds)
  sizes = [_kinds(counts) for counts in groups]
  position = {}
  for kinds in rows_of:
    for j, i in enumerate(i for members in kinds for i in members):
      if i != _NONE:
        position[i] = j
  return rows_of, sizes, position


def _levels(config: TreeConfig, nodes, rows_of, sizes, position, width: int):
  """(the per-depth host arrays of `PublicTree`'s per-depth fields, by name; the decision, fold and
  showdown nodes in depth order; the chance nodes' weights)."""
  deck_left = config.deck_size - BOARD_SIZE[config.street]
  chance_width = deck_left  # a chance node deals every card left
  levels = {
    name: [] for name in ('parent', 'slot', 'parent_player', 'edge_card', 'children', 'chance_children')
  }
  decisions, folds, showdowns, chance_weight = [], [], [], []
  for d, (kinds, counts) in enumerate(zip(rows_of, sizes, strict=True)):
    following = sum(sizes[d + 1]) if d + 1 < len(sizes) else 0
    members = [i for group in kinds for i in group]
    parents = [nodes[i].parent if i != _NONE else _NONE for i in members]
    levels['parent'].append([position[p] if p >= 0 else 0 for p in parents])
    levels['slot'].append([nodes[i].slot if i != _NONE else 0 for i in members])
    levels['parent_player'].append(
      [nodes[p].player if p >= 0 and nodes[p].kind == DECISION else 2 for p in parents]
    )
    levels['edge_card'].append(
      [
        nodes[i].dealt[-1] if p >= 0 and nodes[p].kind == CHANCE else deck_left
        for i, p in zip(members, parents, strict=True)
      ]
    )
    children = np.full((counts[DECISION], width), following, np.int32)
    for row, i in enumerate(kinds[DECISION]):
      if i != _NONE:
        children[row, : len(nodes[i].children)] = [position[c] for c in nodes[i].children]
    chance_children = np.full((counts[CHANCE], chance_width), following, np.int32)
    for row, i in enumerate(kinds[CHANCE]):
      if i != _NONE:
        chance_children[row, : len(nodes[i].children)] = [position[c] for c in nodes[i].children]
    levels['children'].append(children)
    levels['chance_children'].append(chance_children)
    decisions += kinds[DECISION]
    chance_weight += [
      1 / (config.deck_size - BOARD_SIZE[nodes[i].street] - 4) if i != _NONE else 0.0 for i in kinds[CHANCE]
    ]
    folds += kinds[FOLD]
    showdowns += kinds[SHOWDOWN]
  return levels, decisions, folds, showdowns, chance_weight


def _showdown_layout(nodes, showdowns, river_keys, slots_per_board: int, half: float):
  """Showdowns grouped by river board, `slots_per_board` slots per board (the board-major layout of the
  sweep): (the showdown (in depth order) at each [board, slot], what its loser loses [board, slot],
  each showdown's board * slots + slot). Padding showdowns read and write the extra zero row at the end
  of either layout."""
  board_row = {key: r for r, key in enumerate(river_keys)}
  source = np.full((max(1, len(river_keys)), slots_per_board), len(showdowns), np.int32)
  grouped_amount = np.zeros(source.shape)
  slot = np.full(len(showdowns), source.size, np.int32)
  used = np.zeros(len(source), int)
  for s, i in enumerate(showdowns):
    if i == _NONE:
      continue
    b = board_row[tuple(sorted(nodes[i].dealt))]
    source[b, used[b]], grouped_amount[b, used[b]] = s, half + nodes[i].added[0]
    slot[s] = b * slots_per_board + used[b]
    used[b] += 1
  return source, grouped_amount, slot


def river_boards(tree: PublicTree, board: tuple[int, ...], remaining: np.ndarray) -> np.ndarray:
  """[R, 5] the river boards of the tree's showdown rows, for a starting board."""
  keys = tree.info.river_keys
  return np.array([list(board) + [int(remaining[k]) for k in key] for key in keys], np.int32)


MATRIX_BYTES = 2**31  # the largest sign matrix `showdown='auto'` builds (per spot)


def showdown_method(num_boards: int, num_hands: int, dtype) -> str:
  """'matrix' (a masked matrix product per river board) on GPUs and TPUs when the [R, H, H] matrix
  fits `MATRIX_BYTES`, else 'sweep' (the O(H) sorted sweep, what a CPU runs faster)."""
  size = num_boards * num_hands * num_hands * jnp.dtype(dtype).itemsize
  return 'matrix' if jax.default_backend() != 'cpu' and size <= MATRIX_BYTES else 'sweep'


def make_spot(
  tree: PublicTree,
  board,
  ranges,
  deck=cards_module.FULL_DECK,
  dtype=jnp.float32,
  showdown_by: str = 'auto',
  range_hands: bool = False,
  hands_multiple: int = 0,
) -> Spot:
  """The spot arrays: `board` card ids, `ranges` two [1326] weight arrays (OOP, IP) in HOLES order.

  `showdown_by`: 'sweep', 'matrix' or 'auto' (`showdown_method`); both give the same values. With
  `range_hands`, the hands are those in either range only (the hands of weight 0 in both change no
  value: their reach is 0, and what they would play weighs nothing), so that every array of the
  solve spans fewer hands, OOP's alone first, then both players', then IP's alone (each in HOLES
  order; `Spot.hand_split`); else every hole pair the board leaves, in HOLES order. With
  `hands_multiple` too, hands of weight 0 that the board leaves follow, up to a multiple of it, so
  that spots on other boards share array shapes (and compiled programs); `hand_split` is then None
  (no per-player layout).
  """
  board = tuple(int(c) for c in board)
  config = tree.info.config
  if len(board) != BOARD_SIZE[config.street]:
    raise cards_module.PokerInputError(
      f'the tree starts on the {("flop", "turn", "river")[config.street - 1]}, which has '
      f'{BOARD_SIZE[config.street]} board cards; got {len(board)}'
    )
  if deck.size != config.deck_size:
    raise ValueError(f'the tree was built for a deck of {config.deck_size} cards, the spot has {deck.size}')
  hands = cards_module.hands(deck, board)
  weights = np.stack([ranges_module.range_on_board(w, deck, board) for w in ranges])
  split = None
  if range_hands:  # OOP's alone, both players', IP's alone
    oop, ip = weights > 0
    order = np.concatenate([np.flatnonzero(oop & ~ip), np.flatnonzero(oop & ip), np.flatnonzero(ip & ~oop)])
    split = (int(oop.sum()), int(ip.sum()))
    if hands_multiple:
      padded = min(len(hands), -(-len(order) // hands_multiple) * hands_multiple)
      order = np.concatenate([order, np.flatnonzero(~(oop | ip))[: padded - len(order)]])
      split = None
    hands, weights = hands[order], weights[:, order]
  remaining = np.array([c for c in deck.cards if c not in board], np.int32)
  card_mask = np.ones((len(remaining) + 1, len(hands)), bool)
  card_mask[:-1] = ~(hands[None, :, :] == remaining[:, None, None]).any(-1)
  boards = river_boards(tree, board, remaining)
  if showdown_by == 'auto':
    showdown_by = showdown_method(len(boards), len(hands), dtype)
  if showdown_by not in ('sweep', 'matrix'):
    raise ValueError(f"showdown_by is 'sweep', 'matrix' or 'auto', got {showdown_by!r}")
  # Padded hands come with padded per-card lists: one shape for spots of one tree on other boards.
  width_multiple = 32 if hands_multiple else 1
  tables = showdown.showdown_tables(hands, boards, dtype if showdown_by == 'matrix' else None, width_multiple)
  river_mask = ~(hands[None, :, :, None] == boards[:, None, None, :]).any(axis=(-1, -2))
  arrays = np.array(board, np.int32), hands, weights.astype(dtype), remaining, card_mask, river_mask
  board, hands, weights, remaining, card_mask, river_mask = jax.device_put(arrays)  # one call
  return Spot(board, hands, weights, remaining, card_mask, tables, river_mask, split)


def build_subgame(
  config: TreeConfig,
  board,
  ranges,
  deck=cards_module.FULL_DECK,
  dtype=jnp.float32,
  shape: TreeShape | None = None,
  showdown_by: str = 'auto',
  blocks: bool | None = None,
  range_hands: bool = False,
  nodes=None,
  per_player: bool = False,
  devices: int | None = None,
  hands_multiple: int = 0,
  isomorphism: bool = True,
  trees: dict | None = None,
) -> Subgame:
  """Builds a tree and a spot in one go (`build_tree` once and `make_spot` per spot to share it;
  `showdown_by` and `range_hands` as in `make_spot`; `nodes`: `tree.build(config)`'s, if at hand;
  `per_player` with `range_hands`: the solver keeps each player's edges over that player's hands
  alone (`solver.packed`: less memory, more time); `hands_multiple` (without `per_player`) as in
  `make_spot`.
  With `blocks` (by default on a CPU) a turn or flop tree without a `shape` comes with its
  `blocked.Blocks`, so that the solver runs the part below each deal one card at a time: faster
  iterations on a CPU, where the whole tree's passes stream its arrays through memory (a GPU wants a
  turn tree's whole arrays), and on a flop tree passes that hold one turn card's arrays at a time
  (so flop trees come in blocks by default on every backend). A turn tree's river cards, or a flop
  tree's turn cards, are split over `devices` (default: all local devices; on a CPU,
  `--xla_force_host_platform_device_count` host devices run on as many cores), padded to a multiple
  of them (`blocked.Blocks.padding`). With
  `isomorphism`, where the board and both ranges leave suits interchangeable, the blocks of the first
  deal are one per class of its cards (`isomorphism`: the same results, fewer blocks to run).
  `trees`: a dict the caller keeps across spots of one tree on other boards, in which the tree's
  arrays are made once (a river tree's are kept anyway, the last few configs' in this module)."""
  nodes = build(config) if nodes is None else nodes
  arrays = functools.partial(tree_arrays, by_actor=range_hands and per_player)
  if blocks is None:
    blocks = jax.default_backend() == 'cpu' or config.street == 1
  by_actor = range_hands and per_player
  key = ('arrays', config, jnp.dtype(dtype), by_actor)
  if shape is None and trees is not None:
    if key not in trees:
      trees[key] = arrays(config, nodes, dtype)
      trees['table', key] = NodeTable(nodes)
    tree = trees[key]
    tree.info.nodes = nodes  # the blocks are cut from its nodes
  elif shape is None and (config.street == 3 or not blocks):  # no blocks made from its nodes
    tree = _tree_arrays(config, jnp.dtype(dtype), by_actor, lambda: nodes)
  else:
    tree = arrays(config, nodes, dtype, shape)
  devices = jax.local_device_count() if devices is None else devices
  if per_player and hands_multiple:
    raise ValueError('per_player keeps each player its own hands: it takes no hands_multiple')
  spot = make_spot(tree, board, ranges, deck, dtype, showdown_by, range_hands, hands_multiple)
  parts = None
  if blocks and shape is None:
    symmetry = None
    if isomorphism and config.street < 3:  # a river tree deals no card
      symmetry = isomorphism_module.symmetry(
        board, np.asarray(spot.hands), np.asarray(spot.ranges), deck.num_suits
      )
    cache = None if trees is None else trees.setdefault(('blocks', key), {})
    parts = blocked.build_blocks(tree, arrays, dtype, devices, symmetry, np.asarray(spot.remaining), cache)
  # The labels stay, the Python objects go.
  tree.info.nodes = NodeTable(nodes) if trees is None or shape is not None else trees['table', key]
  return Subgame(tree, spot, parts)


class _TreeCache(dict):
  """The last few trees' arrays by (config, dtype, by_actor): a study's spots share their tree."""

  def __call__(self, config, dtype, by_actor: bool, nodes) -> PublicTree:
    key = (config, dtype, by_actor)
    if key not in self:
      if len(self) >= 4:
        del self[next(iter(self))]
      self[key] = tree_arrays(config, nodes(), dtype, by_actor=by_actor)
    return self[key]


_tree_arrays = _TreeCache()


# The passes. Policies, regrets: [D, A, H]; reach: per depth [n_d, 2, H]; values: per depth [n_d, H].


def take(x: jax.Array, index: jax.Array) -> jax.Array:
  """x[index] along the first axis, for indices known to be in bounds: on XLA:CPU faster than
  indexing, which checks every index and fills the rows out of bounds."""
  return jnp.take(x, index, axis=0, mode='clip')


def take_padded(x: jax.Array, index: jax.Array) -> jax.Array:
  """`take` where the index `len(x)` (the trees' padding slot) reads a row of zeros."""
  return take(jnp.concatenate([x, jnp.zeros_like(x[:1])]), index)


def _rows(tree: PublicTree, kind: int) -> list[tuple[int, int]]:
  """[start, stop) of each depth's nodes of `kind` (DECISION, CHANCE, FOLD or SHOWDOWN) in the list of
  that kind's nodes: the decision rows, the chance rows, the fold or the showdown nodes."""
  bounds, start = [], 0
  for sizes in tree.level_sizes:
    bounds.append((start, start + sizes[kind]))
    start += sizes[kind]
  return bounds


def policy_edges(tree: PublicTree, policy: jax.Array) -> list[jax.Array]:
  """Per depth d >= 1 [n_d, H]: the probability `policy` [D, A, H] gives the action into each node
  (1 below chance nodes); its rows in `edge_bounds` (`solver.edge_rows`) invert `solver.decision_rows`."""
  edges, start = [], 0
  for d in range(1, len(tree.level_sizes)):
    rows = tree.level_sizes[d - 1][DECISION]
    from_decision = tree.parent_player[d] < 2
    if not rows:
      edges.append(jnp.ones((tree.parent[d].shape[0], policy.shape[2]), policy.dtype))
      continue
    parent = jnp.where(from_decision, tree.parent[d], 0)
    step = policy[start : start + rows][parent, tree.slot[d]]  # [n_d, H]
    edges.append(jnp.where(from_decision[:, None], step, 1))
    start += rows
  return edges


def reach_probabilities(game: Subgame, policy: jax.Array) -> list[jax.Array]:
  """Per depth [n_d, 2, H]: each player's reach (range, own strategy, card removal) at each node."""
  tree, spot = game.tree, game.spot
  reach = [spot.ranges[None]]
  for d, step in enumerate(policy_edges(tree, policy), 1):  # step [n, H]: 1 below chance nodes
    acting = (tree.parent_player[d][:, None] == jnp.arange(2))[..., None]  # [n, 2, 1]
    child = take(reach[-1], tree.parent[d]) * take(spot.card_mask, tree.edge_card[d])[:, None, :]
    reach.append(jnp.where(acting, child * step[:, None, :], child))
  return reach


def kind_rows(tree: PublicTree, per_depth, kind: int) -> jax.Array:
  """The rows of the nodes of `kind` (CHANCE, FOLD or SHOWDOWN) of per-depth arrays `per_depth` (per
  depth [n_d, ...]), in that kind's row order: [K, F or S, ...]."""
  parts = []
  for sizes, rows in zip(tree.level_sizes, per_depth, strict=True):
    start = sum(sizes[:kind])
    parts.append(rows[start : start + sizes[kind]])
  return jnp.concatenate(parts)


def _terminal_reach(tree: PublicTree, reach: list[jax.Array], player: int, kind: int) -> jax.Array:
  """[F or S, H]: the reach of `player` at every fold (kind 2) or showdown (kind 3) node."""
  return kind_rows(tree, [r[:, player] for r in reach], kind)


def terminal_values(game: Subgame, reach: list[jax.Array], player: int) -> tuple[jax.Array, jax.Array]:
  """`player`'s counterfactual values at the fold nodes [F, H] and the showdown nodes [S, H]."""
  tree, spot = game.tree, game.spot
  mask = lambda dealt: spot.card_mask[dealt[:, 0]] * spot.card_mask[dealt[:, 1]]  # own hands the cards leave
  opponent = _terminal_reach(tree, reach, 1 - player, FOLD)
  sign = jnp.where(tree.fold_player == player, -1, 1).astype(opponent.dtype)
  mass = showdown.compatible_mass(spot.hands, opponent, showdown.card_hands(spot.tables))
  folds = (sign * tree.fold_amount)[:, None] * mass * mask(tree.fold_dealt)
  opponent = _terminal_reach(tree, reach, 1 - player, SHOWDOWN)  # [S, H]
  if opponent.shape[0] and tree.info.showdowns_in_order:
    difference = showdown.one_board_difference(spot.tables, opponent)  # [S, H]
    amount = tree.showdown_grouped_amount[0].T  # [S, 1]
    showdowns = difference * amount * spot.river_mask[0][None]
  elif opponent.shape[0]:
    boards, _, slots = tree.showdown_grouped_amount.shape
    padded = jnp.concatenate([opponent, jnp.zeros_like(opponent[:1])])
    # The board's cards block the own hands that hold them (`spot.river_mask`).
    grouped = showdown.showdown_values(
      spot.tables,
      padded,
      tree.showdown_source.reshape(boards, slots),
      tree.showdown_grouped_amount,
      spot.river_mask,
    )  # [R, M, H]
    flat = grouped.reshape(boards * slots, -1)
    showdowns = take_padded(flat, tree.showdown_slot)
  else:
    showdowns = opponent
  return folds, showdowns


def counterfactual_values(
  game: Subgame, policy: jax.Array, reach: list[jax.Array], player: int, best_response: bool = False
) -> tuple[jax.Array, jax.Array | None]:
  """`player`'s counterfactual values, bottom-up: ([H] at the root, [D, A, H] regrets on its rows).

  With `best_response`, `player` takes the best action at each of its nodes (no regrets then), but
  for the hands a lock fixes there (`Subgame.lock`), which play their locked strategy.
  """
  tree = game.tree
  locked = locked_rows(game) if best_response else None  # [D, A, H], NaN where free
  folds, showdowns = terminal_values(game, reach, player)
  rows, chance_rows = _rows(tree, DECISION), _rows(tree, CHANCE)
  fold_rows, showdown_rows = _rows(tree, FOLD), _rows(tree, SHOWDOWN)
  below = None  # [n_{d+1} + 1, H]: the next depth's values and a zero row for padding
  regrets = []
  for d in reversed(range(len(tree.level_sizes))):
    parts = []
    start, stop = rows[d]
    if stop > start:
      children = take(below, tree.children[d])  # [m, A, H]
      legal = tree.legal[start:stop]
      own = (tree.decision_player[start:stop] == player)[:, None, None]
      if best_response:
        mine = jnp.where(legal, children, -jnp.inf).max(1)
        if locked is not None:
          fixed = locked[start:stop]
          mine = jnp.where(jnp.isnan(fixed[:, 0]), mine, (jnp.nan_to_num(fixed) * children).sum(1))
      else:
        mine = (policy[start:stop] * children).sum(1)
      value = jnp.where(own[:, 0], mine, children.sum(1))  # the opponent's strategy is in its reach
      parts.append(value)
      if not best_response:
        regrets.append(jnp.where(own & legal, children - value[:, None], 0))
    a, b = chance_rows[d]
    if b > a:
      parts.append(take(below, tree.chance_children[d]).sum(1) * tree.chance_weight[a:b, None])
    a, b = fold_rows[d]
    parts.append(folds[a:b])
    a, b = showdown_rows[d]
    parts.append(showdowns[a:b])
    below = jnp.concatenate([*parts, jnp.zeros((1, game.num_hands), folds.dtype)])  # one copy per depth
  regret = jnp.concatenate(regrets[::-1]) if regrets else None
  return below[0], regret


def locked_rows(game: Subgame) -> jax.Array | None:
  """[D, A, H]: the locked probabilities laid out by decision node (`Subgame.lock`), NaN where a hand
  is free (and on the padding actions of a locked hand, 0); None where nothing is locked."""
  if game.lock is None:
    return None
  shape = (game.tree.num_decisions, game.tree.num_actions, game.num_hands)
  return jnp.full(shape, jnp.nan, game.dtype).at[game.lock.index].set(game.lock.rows)


def own_reach(tree: PublicTree, reach: list[jax.Array], player: int) -> jax.Array:
  """[D, H]: `player`'s reach at every decision node."""
  return jnp.concatenate([r[: sizes[0], player] for sizes, r in zip(tree.level_sizes, reach, strict=True)])


def normalizer(game: Subgame) -> jax.Array:
  """Z: [] the total weight of the deals (sum over disjoint hand pairs of w0 w1)."""
  ranges = game.spot.ranges
  return (ranges[0] * showdown.compatible_mass(game.spot.hands, ranges[1:])[0]).sum()


def per_deal_values(game: Subgame, policy: jax.Array, reach=None, best_response: bool = False) -> jax.Array:
  """[2] each player's payoff per deal under `policy` [D, A, H] (with `best_response`: each player's
  best response to the other's part of it); `reach` from `reach_probabilities`, if already at hand."""
  reach = reach_probabilities(game, policy) if reach is None else reach
  values = [counterfactual_values(game, policy, reach, p, best_response)[0] for p in range(2)]
  return jnp.stack([(game.spot.ranges[p] * values[p]).sum() for p in range(2)]) / normalizer(game)


def expected_values(game: Subgame, policy: jax.Array) -> jax.Array:
  """[2] each player's expected payoff per deal under `policy` [D, A, H]."""
  return per_deal_values(game, policy)


def best_response_values(game: Subgame, policy: jax.Array) -> jax.Array:
  """[2] each player's best-response payoff per deal against the other's part of `policy`."""
  return per_deal_values(game, policy, best_response=True)
