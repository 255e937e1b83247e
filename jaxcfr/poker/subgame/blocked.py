"""Turn and flop trees in blocks: the subtrees below each chance card, one card at a time.

A turn tree's river part is the same forest of subtrees under every river card: the turn lines that
reach the river, each followed by the river's betting, differ from card to card only in the card.
`Blocks` holds that forest once (`forest`, as a `PublicTree` whose roots are the river roots of one
card), the street above it (`upper`, whose chance nodes are leaves), and the maps between them and
the whole tree. A flop tree nests: its `forest` is the turn part under one turn card, itself a
`Blocks` (the turn street and its river forest), so the solver runs the turn cards one at a time and,
inside each, the river cards one at a time. Over several devices a turn tree splits its river cards
and a flop tree its turn cards (`Blocks.shards`): the flop's 49 turn cards are padded to a multiple of
the devices with blocks that deal no card (`Blocks.padding`: no hand reaches them, so they add nothing
and learn nothing), each device then running whole turn cards. The solver then works block by block
(`solver.over_blocks`): a block's top-down pass, terminal values and bottom-up pass work on arrays of
a few hundred kilobytes to a few megabytes, which stay in a CPU's caches between the passes, where
the whole tree's depth-by-depth passes stream tens of megabytes through memory several times an
iteration; and on a flop only the solver's state spans the whole tree, the passes' reaches and
values one block's subtrees. The state is the same numbers, laid out per part: `upper`'s edges per
depth `[e_d, H]`, then the forest's per depth `[R, e_d, H]` (block b deals `block_card[b]`; nested,
`[T, R, e_d, H]`). Policies come out in the whole tree's `[D, A, H]` layout (`decision_source`).
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np

from jaxcfr.poker.subgame import isomorphism
from jaxcfr.poker.subgame.tree import CHANCE, DECISION, SHOWDOWN


@dataclasses.dataclass(frozen=True)
class Blocks:
  """A tree's (or a block's) two parts, and the maps between them and the whole tree (see the module).

  Card and board arrays have the blocks' axes in front: `[R]` at the top; in a nested `forest`
  (a flop tree's turn part) `[T, R]`, one row per block of the level above."""

  upper: object  # PublicTree: the street above the cards; its chance nodes (chance-row order) are leaves
  forest: object  # PublicTree or Blocks: one card's subtrees, its roots in `root_chance`'s order at depth 0
  root_chance: jax.Array  # [n_0] int32: the chance row (in `upper`) above each of the forest's roots
  chance_root: jax.Array  # [K] int32: the forest root below each chance row (the inverse)
  block_card: jax.Array  # [..., R] int32: each block's card (its deck position)
  block_board: jax.Array  # [..., R] int32: the river board (a row of the spot's tables) of each block
  # whose forest is the river's, else 0
  upper_rows: int  # decision rows of `upper`
  forest_rows: int  # decision rows of one block (nested: of all its parts)
  decision_source: jax.Array | None  # [D] int32 at the top: each whole-tree decision row's row in
  # the parts' layout (upper's rows, then the blocks', block-major, nested alike); the padding row
  # (the layout's size) for padding. None in a nested forest.
  shards: int = 1  # the devices the blocks are split over (a divisor of the block count;
  # `solver.part_blocks` runs each device's share on that device): a turn tree's, or a flop tree's
  # (its nested forest's then 1)
  padding: int = 0  # blocks at the end that deal no card (`block_card` -1; a flop tree's, to split
  # its turn cards evenly over `shards`): rows in the parts' layout, not in the whole tree
  # At the top, where suit isomorphism merges the deal's cards (`isomorphism`): an `isomorphism.Merged`
  # (the blocks are then the solved cards'); else None.
  merged: object = None

  @property
  def num_blocks(self) -> int:
    return self.block_card.shape[-1]

  @property
  def num_rows(self) -> int:
    return self.upper_rows + self.num_blocks * self.forest_rows


jax.tree_util.register_dataclass(
  Blocks,
  data_fields=[
    'upper',
    'forest',
    'root_chance',
    'chance_root',
    'block_card',
    'block_board',
    'decision_source',
    'merged',
  ],
  meta_fields=['upper_rows', 'forest_rows', 'shards', 'padding'],
)


def _copy(node, parent: int, children: list, dealt=None):
  return dataclasses.replace(
    node, parent=parent, children=children, dealt=node.dealt if dealt is None else dealt
  )


def build_blocks(
  tree,
  tree_arrays,
  dtype=jnp.float32,
  devices: int = 1,
  symmetry=None,
  remaining=None,
  cache: dict | None = None,
) -> Blocks | None:
  """The blocks of a turn or flop tree built without padding (`subgame.build_tree(config)`), whose
  parts `tree_arrays(config, nodes, dtype)` builds (`subgame.tree_arrays`, passed in: this module
  sits below `subgame`); None for other trees (a river tree is one block already) and for trees in
  which no decision follows a deal. A turn tree's river cards, or a flop tree's turn cards, are split
  over `devices`, padded to a multiple of them with blocks that deal nothing (`Blocks.shards`,
  `Blocks.padding`: suit isomorphism can leave an odd count). With a `symmetry`
  (`isomorphism.Symmetry` of the spot; the deck's card ids by position `remaining`), one block per
  class of the first deal's cards
  (`Blocks.merged`). `cache`: a dict kept across spots of this tree on other boards, where the tree's
  cut into parts (which the board does not change) is kept."""
  info = tree.info
  config, nodes = info.config, info.nodes
  if config.street == 3 or any(d < 0 for d in info.decisions) or not info.river_keys:
    return None
  if cache is None:
    built = _split(config, nodes, tree_arrays, dtype)
  else:
    if 'split' not in cache:
      cache['split'] = _split(config, nodes, tree_arrays, dtype)
    built = cache['split']
  if built is None:
    return None
  blocks, layout, firsts = built
  nested = isinstance(blocks.forest, Blocks)
  # The cards each block deals: [R, 1] on a turn tree, [T, R, 2] (turn, river) on a flop tree.
  dealt = np.array(_map_nested(lambda i: nodes[i].dealt, firsts), np.int32)
  first_cards = dealt[:, 0, 0] if nested else dealt[:, 0]  # deck positions
  first = np.arange(len(first_cards))  # each card's class: its first card (the one solved)
  pull = np.zeros(len(first_cards), np.int32)
  if symmetry is not None:
    first, pull = symmetry.classes(np.asarray(remaining)[first_cards])
  kept = [int(j) for j in np.flatnonzero(first == np.arange(len(first_cards)))]
  slot = np.zeros(len(first_cards), np.int64)
  slot[kept] = np.arange(len(kept))
  # A flop's turn cards over the devices: whole turn cards per device (one split for the iteration's
  # pass, not one per turn card), the count padded to a multiple of the devices.
  padding = -len(kept) % devices if devices > 1 else 0
  # The whole tree's padding decision row reads the row after the layout's (padding blocks' included).
  upper_rows, forest_rows = blocks.upper_rows, blocks.forest_rows
  rows = upper_rows + (len(kept) + padding) * forest_rows
  whole_row = {node: row for row, node in enumerate(info.decisions)}
  at = np.arange(len(layout))  # each layout row's row once the merged cards' blocks are gone
  block = np.maximum(at - upper_rows, 0) // forest_rows
  below = at >= upper_rows
  within = (at - upper_rows) % forest_rows  # the row's position in its block
  if nested and symmetry is not None:  # a merged turn card's river cards map to their images' blocks
    within = _nested_within(blocks.forest, within, block, first, pull, dealt, symmetry, remaining)
  at = np.where(below, upper_rows + slot[first[block]] * forest_rows + within, at)
  source = np.full(len(info.decisions), rows, np.int32)
  whole = np.array([whole_row[i] for i in layout], np.int64)
  source[whole] = at
  board_row = {key: r for r, key in enumerate(info.river_keys)}
  boards = np.apply_along_axis(lambda key: board_row[tuple(sorted(key.tolist()))], -1, dealt).astype(np.int32)
  merged = None
  if len(kept) < len(first_cards):
    decision_pull = np.zeros(len(info.decisions), np.int32)
    decision_pull[whole] = np.where(below, pull[block], 0)
    table, weight = isomorphism.mates(symmetry, first, pull, kept, padding)
    merged = isomorphism.Merged(
      jnp.asarray(symmetry.pulls),
      jnp.asarray(decision_pull),
      jnp.asarray(table),
      jnp.asarray(weight, dtype),
      cards=len(first_cards),
    )
  dealt, boards = dealt[kept], boards[kept]
  source = jnp.asarray(source)
  if nested:
    # A padding block repeats the first turn card's rivers (tables in bounds) and deals card -1.
    dealt = np.concatenate([dealt, np.repeat(dealt[:1], padding, 0)])
    boards = np.concatenate([boards, np.repeat(boards[:1], padding, 0)])
    forest = dataclasses.replace(
      blocks.forest,
      block_card=jnp.asarray(dealt[..., 1]),
      block_board=jnp.asarray(boards),
      shards=1,  # its river cards on the device of their turn card
    )
    cards = np.where(np.arange(len(dealt)) < len(dealt) - padding, dealt[:, 0, 0], -1)  # not a view of dealt
    return dataclasses.replace(
      blocks,
      forest=forest,
      block_card=jnp.asarray(cards),
      block_board=jnp.zeros(len(dealt), jnp.int32),
      decision_source=source,
      shards=devices if devices > 1 else 1,
      padding=padding,
      merged=merged,
    )
  # A turn tree's padding blocks repeat its first river card's board and deal card -1.
  cards = np.concatenate([dealt[:, 0], np.full(padding, -1, dealt.dtype)])
  boards = np.concatenate([boards, np.repeat(boards[:1], padding, 0)])
  return dataclasses.replace(
    blocks,
    block_card=jnp.asarray(cards),
    block_board=jnp.asarray(boards),
    decision_source=source,
    shards=devices if devices > 1 else 1,
    padding=padding,
    merged=merged,
  )


def _nested_within(forest: Blocks, within, block, first, pull, dealt, symmetry, remaining) -> np.ndarray:
  """The positions `within` (rows' positions in their turn card's block `block`) in the solved turn
  card's block: under a merged turn card sigma(c), river card r's rows stand for the rows of
  sigma^-1(r) under c (`isomorphism`); the turn street's rows keep their positions."""
  cards = np.asarray(remaining)
  position = {int(card): q for q, card in enumerate(cards)}
  rivers = dealt[..., 1]  # [T, R] deck positions
  image = np.tile(np.arange(rivers.shape[1]), (len(rivers), 1))  # [T, R]: the solved card's river block
  for j in np.flatnonzero(first != np.arange(len(first))):
    inverse = np.argsort(symmetry.permutations[pull[j]])
    where = {int(q): i for i, q in enumerate(rivers[first[j]])}
    moved = [position[isomorphism.move(int(c), inverse)] for c in cards[rivers[j]]]
    image[j] = [where[q] for q in moved]
  inner = np.maximum(within - forest.upper_rows, 0)
  river_rows = within >= forest.upper_rows
  mapped = forest.upper_rows + image[block, inner // forest.forest_rows] * forest.forest_rows
  return np.where(river_rows, mapped + inner % forest.forest_rows, within)


def _map_nested(function, nested):
  return [_map_nested(function, x) for x in nested] if isinstance(nested, list) else function(nested)


def _split(config, nodes, tree_arrays, dtype):
  """(the `Blocks` of the forest `nodes` (its roots have no parent; cards and boards left empty), the
  nodes (indices into `nodes`) of its decision rows in the parts' layout, the first root of each block
  (nested: per outer block a list)), or None where chance deals nothing or no decision follows a deal."""
  below = [False] * len(nodes)  # below a chance node
  depth = [0] * len(nodes)
  for i, node in enumerate(nodes):  # breadth-first: parents come first
    if node.parent >= 0:
      depth[i] = depth[node.parent] + 1
      below[i] = below[node.parent] or nodes[node.parent].kind == CHANCE
  upper_ids = [i for i in range(len(nodes)) if not below[i]]
  # Chance rows in `tree_arrays`' order: by depth, then in list order.
  chance_ids = sorted((i for i in upper_ids if nodes[i].kind == CHANCE), key=lambda i: (depth[i], i))
  if not chance_ids:
    return None
  widths = {len(nodes[k].children) for k in chance_ids}
  if len(widths) != 1:
    raise AssertionError('the chance nodes deal different numbers of cards')
  upper_index = {old: new for new, old in enumerate(upper_ids)}
  upper_nodes = [
    _copy(
      nodes[i],
      upper_index.get(nodes[i].parent, -1),
      [] if nodes[i].kind == CHANCE else [upper_index[c] for c in nodes[i].children],
    )
    for i in upper_ids
  ]
  upper = tree_arrays(config, upper_nodes, dtype)

  def forest_of(j: int) -> list[int]:
    """Block j's nodes: the j-th child of each chance node (in chance-row order), then breadth-first."""
    order = [nodes[k].children[j] for k in chance_ids]
    i = 0
    while i < len(order):
      order += nodes[order[i]].children
      i += 1
    return order

  blocks = [forest_of(j) for j in range(widths.pop())]
  first = blocks[0]
  num_roots = len(chance_ids)

  def signature(ids):  # the block's shape: kinds, actors, chips and action slots
    return [
      (nodes[i].kind, nodes[i].player, nodes[i].added, j >= num_roots and nodes[i].slot)
      for j, i in enumerate(ids)
    ]

  for ids in blocks[1:]:
    if signature(ids) != signature(first):  # the betting does not depend on the card
      raise AssertionError('the subtrees differ between the cards of one deal')
  index = {old: new for new, old in enumerate(first)}
  forest_nodes = [
    _copy(
      nodes[i], index[nodes[i].parent] if j >= num_roots else -1, [index[c] for c in nodes[i].children], ()
    )
    for j, i in enumerate(first)
  ]
  inner = _split(config, forest_nodes, tree_arrays, dtype)
  if inner is None:  # the forest deals nothing: a tree of its own
    forest = tree_arrays(config, forest_nodes, dtype)
    if not forest.info.decisions:  # every line that reaches the deal is all in: nothing to gain
      return None
    forest_layout, firsts = list(forest.info.decisions), [ids[0] for ids in blocks]
  else:
    forest, forest_layout, inner_firsts = inner
    firsts = [[ids[k] for k in inner_firsts] for ids in blocks]
  # The forest's depth-0 rows in its kinds' order (decision, chance, showdown roots; `game.GROUPS`).
  kind_order = {DECISION: 0, CHANCE: 1, SHOWDOWN: 2}
  root_chance = sorted(range(num_roots), key=lambda j: (kind_order[forest_nodes[j].kind], j))
  if any(forest_nodes[j].kind not in kind_order for j in root_chance):
    raise AssertionError('a root below a deal is neither a decision, a deal nor a showdown')
  layout = [upper_ids[i] for i in upper.info.decisions]
  layout += [ids[k] for ids in blocks for k in forest_layout]
  empty = jnp.zeros((0,), jnp.int32)
  as_int = lambda x: jnp.asarray(np.asarray(x, np.int32))
  parts = Blocks(
    upper=upper,
    forest=forest,
    root_chance=as_int(root_chance),
    chance_root=as_int(np.argsort(root_chance)),
    block_card=empty,
    block_board=empty,
    upper_rows=len(upper.info.decisions),
    forest_rows=len(forest_layout),
    decision_source=None,
  )
  return parts, layout, firsts
