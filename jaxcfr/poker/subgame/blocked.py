"""A turn tree in blocks: its river subtrees, one river card at a time.

A turn tree's river part is the same forest of subtrees under every river card: the turn lines that
reach the river, each followed by the river's betting, differ from card to card only in the card.
`Blocks` holds that forest once (`forest`, as a `PublicTree` whose roots are the river roots of one
card), the turn street above it (`upper`, whose chance nodes are leaves), and the maps between them
and the whole tree. The solver then runs the river part block by block (`solver.BLOCKS_PER_STEP`
cards per step): a block's top-down pass, terminal values and bottom-up pass work on arrays of a
few hundred kilobytes to a few megabytes, which stay in a CPU's caches between the passes, where the
whole tree's depth-by-depth passes stream tens of megabytes through memory several times an
iteration. The solver's state is the same numbers, laid out per part: `upper`'s edges per depth
`[e_d, H]`, then the forest's per depth `[R, e_d, H]` (block b holds river card `block_card[b]`).
Policies come out in the whole tree's `[D, A, H]` layout (`decision_source`).
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np

from jaxcfr.poker.subgame.tree import CHANCE, DECISION, SHOWDOWN


@dataclasses.dataclass(frozen=True)
class Blocks:
  """A turn tree's two parts and the maps between them and the whole tree (see the module)."""

  upper: object  # PublicTree: the turn street; its chance nodes (in its chance rows' order) are leaves
  forest: object  # PublicTree: one river card's subtrees, its roots in `root_chance`'s order at depth 0
  root_chance: jax.Array  # [n_0] int32: the chance row (in `upper`) above each of the forest's roots
  chance_root: jax.Array  # [K] int32: the forest root below each chance row (the inverse)
  block_card: jax.Array  # [R] int32: each block's river card (its deck position; the trees' board order)
  upper_decisions: jax.Array  # [D_u] int32: each of `upper`'s decision rows as a row of the whole tree
  forest_decisions: jax.Array  # [R, D_f] int32: each block's decision rows as rows of the whole tree
  decision_source: jax.Array  # [D] int32: each whole-tree decision row in (upper's rows, then the
  # blocks' rows, block-major); D_u + R * D_f (a zero row) for padding


jax.tree_util.register_dataclass(
  Blocks,
  data_fields=[
    'upper',
    'forest',
    'root_chance',
    'chance_root',
    'block_card',
    'upper_decisions',
    'forest_decisions',
    'decision_source',
  ],
  meta_fields=[],
)


def _copy(node, parent: int, children: list, dealt=None):
  return dataclasses.replace(
    node, parent=parent, children=children, dealt=node.dealt if dealt is None else dealt
  )


def build_blocks(tree, tree_arrays, dtype=jnp.float32) -> Blocks | None:
  """The blocks of a turn tree built without padding (`subgame.build_tree(config)`), whose parts
  `tree_arrays(config, nodes, dtype)` builds (`subgame.tree_arrays`, passed in: this module sits
  below `subgame`); None for other trees (a river tree is one block already; a flop tree's blocks
  would be its river boards, not built here)."""
  info = tree.info
  config, nodes = info.config, info.nodes
  if config.street != 2 or any(d < 0 for d in info.decisions) or not info.river_keys:
    return None
  if any(len(key) != 1 for key in info.river_keys):  # a block per river card
    return None
  cards = [key[0] for key in info.river_keys]
  below = [False] * len(nodes)  # below a chance node
  depth = [0] * len(nodes)
  for i, node in enumerate(nodes):  # breadth-first: parents come first
    if node.parent >= 0:
      depth[i] = depth[node.parent] + 1
      below[i] = below[node.parent] or nodes[node.parent].kind == CHANCE
  upper_ids = [i for i in range(len(nodes)) if not below[i]]
  upper_index = {old: new for new, old in enumerate(upper_ids)}
  upper_nodes = [
    _copy(
      nodes[i],
      upper_index.get(nodes[i].parent, -1),
      [] if nodes[i].kind == CHANCE else [upper_index[c] for c in nodes[i].children],
    )
    for i in upper_ids
  ]
  # Chance rows in `tree_arrays`' order: by depth, then in list order.
  chance_ids = sorted((i for i in upper_ids if nodes[i].kind == CHANCE), key=lambda i: (depth[i], i))
  upper = tree_arrays(config, upper_nodes, dtype)

  def forest_of(card: int) -> list[int]:
    """Block `card`'s nodes (whole-tree ids): its roots in chance-row order, then breadth-first."""
    order = [next(c for c in nodes[k].children if nodes[c].dealt[-1] == card) for k in chance_ids]
    i = 0
    while i < len(order):
      order += nodes[order[i]].children
      i += 1
    return order

  blocks = [forest_of(card) for card in cards]
  first = blocks[0]
  num_roots = len(chance_ids)

  def signature(ids):  # a root's slot is its card's place among the chance node's children
    return [
      (nodes[i].kind, nodes[i].player, nodes[i].added, j >= num_roots and nodes[i].slot)
      for j, i in enumerate(ids)
    ]

  for ids in blocks[1:]:
    if signature(ids) != signature(first):  # the river's betting does not depend on the card
      raise AssertionError('the river subtrees differ between river cards')
  index = {old: new for new, old in enumerate(first)}
  forest_nodes = [
    _copy(
      nodes[i], index[nodes[i].parent] if j >= num_roots else -1, [index[c] for c in nodes[i].children], ()
    )
    for j, i in enumerate(first)
  ]
  forest = tree_arrays(config, forest_nodes, dtype)
  if not forest.info.decisions:  # every line that reaches the river is all in: nothing to gain
    return None
  # The forest's depth-0 rows: decision roots, then showdown roots (its kinds' order).
  root_chance = [j for j in range(num_roots) if nodes[first[j]].kind == DECISION]
  root_chance += [j for j in range(num_roots) if nodes[first[j]].kind == SHOWDOWN]
  if len(root_chance) != num_roots:
    raise AssertionError('a river root is neither a decision nor a showdown')
  chance_root = np.argsort(root_chance)
  whole_row = {node: row for row, node in enumerate(info.decisions)}
  upper_decisions = [whole_row[upper_ids[i]] for i in upper.info.decisions]
  forest_decisions = [[whole_row[ids[i]] for i in forest.info.decisions] for ids in blocks]
  d_u, d_f = len(upper_decisions), len(forest.info.decisions)
  source = np.full(len(info.decisions), d_u + len(blocks) * d_f, np.int32)
  source[upper_decisions] = np.arange(d_u)
  source[np.asarray(forest_decisions, np.int64).reshape(-1)] = d_u + np.arange(len(blocks) * d_f)
  as_int = lambda x: jnp.asarray(np.asarray(x, np.int32))
  return Blocks(
    upper=upper,
    forest=forest,
    root_chance=as_int(root_chance),
    chance_root=as_int(chance_root),
    block_card=as_int(cards),
    upper_decisions=as_int(upper_decisions),
    forest_decisions=as_int(np.asarray(forest_decisions).reshape(len(blocks), d_f)),
    decision_source=as_int(source),
  )
