"""CFR-family solvers over a public tree: every hand of a player updated at once.

The regret rules are the full-width family's (`solvers.regret_rule`: CFR+, DCFR, PCFR+, ...); what
differs is the layout. Regrets and the average strategy's weights are kept per **edge**: the row of
a node below a decision holds the regret and the accumulated reach of the action that leads to it,
`[e_d, H]` per depth d (hands last, dense along them): the depth's rows in `PublicTree.edge_bounds`,
which leave out the nodes that chance deals into (they have no action, so nothing to keep). That
layout has no padding to the widest node, and a player's half-iteration is one top-down pass
(strategies by regret matching over each node's children, both players' reaches, the average's
increments) and one bottom-up pass (values, and the regret update of each depth's edges as soon as
the depth above has its values), so XLA fuses each depth's work into a few loops over arrays that
stay in cache. Updates alternate between the players, as the full-width family's do by default.

A turn tree built on a CPU comes in blocks (`blocked.Blocks`): its river subtrees are the same under
every river card, so the solver runs them one card at a time (`over_blocks`: a loop that updates the
blocks' state in place, `BLOCKS_PER_STEP` cards per step), between the turn street's passes, so
that a block's arrays stay in cache from its top-down pass to its bottom-up pass. Same numbers as the
whole tree's passes, other order.

    solver = subgame_solver('dcfr')
    state = solver.init(game)
    state = jax.jit(lambda s, g: jaxcfr.run(solver, s, g, 100))(state, game)
    policy = solver.average_policy(state, game)        # [D, A, H]

The returned `Solver` follows the protocol, so `jaxcfr.train` runs it with budgets, progress,
checkpoints and exploitability checks; its policies come out in the `[D, A, H]` layout of the
decision nodes that `subgame` evaluates. Its checks read the state (`evaluate_average`, the
protocol's optional entry): the same numbers as `Subgame.evaluate_profile` of the laid-out average,
without laying it out, and block by block on a blocked turn tree.

The passes are module-level functions of the algorithm's `SolverConfig` (its regret rule, the
average's discount, alternating or simultaneous updates): `init`, `update`, `current_policy`,
`average_policy`, `warm_start`, and `step` (an iteration that also returns the root values, which
safe re-solving, `resolving`, builds on); `build` binds them into a `Solver`.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxcfr import algorithms, solvers
from jaxcfr.poker import defaults
from jaxcfr.poker.subgame import blocked
from jaxcfr.poker.subgame import game as subgame_module
from jaxcfr.poker.subgame.game import PublicTree, Subgame, policy_edges, take, take_padded
from jaxcfr.poker.subgame.tree import CHANCE, DECISION, FOLD, SHOWDOWN
from jaxcfr.protocol import Solver


class SubgameState(NamedTuple):
  """Solver state over a public tree, per depth d = 1 .. L - 1 (the root has no edge); on a blocked turn
  tree (`blocked.Blocks`) per depth of its upper part, then per depth of its forest `[R, e_d, H]`
  (`state_shapes`; `state_to_rows` lays either out as `[D, A, H]`)."""

  iteration: jax.Array  # [] int32: iterations completed
  cumulative_regret: tuple[jax.Array, ...]  # per depth [e_d, H]: of the action into each node
  cumulative_policy: tuple[jax.Array, ...]  # per depth [e_d, H]: weighted sum of the acting player's reach
  rule_state: Any  # the regret rule's own state per depth (PCFR+'s prediction [e_d, H]) or ()


def match(regret: jax.Array, legal: jax.Array) -> jax.Array:
  """Regret matching over the action axis: [D, A, H] positive regret normalised; uniform over the
  legal actions (legal [D, A, 1]) where none is positive."""
  return normalize(jnp.maximum(regret, 0), legal)


def normalize(weights: jax.Array, legal: jax.Array) -> jax.Array:
  """[D, A, H] weights normalised over the legal actions; uniform where they sum to 0."""
  weights = jnp.where(legal, weights, 0)
  total = weights.sum(1, keepdims=True)
  uniform = (legal / legal.sum(1, keepdims=True)).astype(weights.dtype)
  return jnp.where(total > 0, weights / jnp.where(total > 0, total, 1), uniform)


def decision_rows(tree: PublicTree, edges) -> jax.Array:
  """[D, A, H]: per-edge arrays (per depth d >= 1, [e_d, H]: the rows in `tree.edge_bounds`) laid out
  by decision node and action (0 on the padding actions)."""
  rows = []
  for d, sizes in enumerate(tree.level_sizes[:-1]):
    if sizes[DECISION]:  # edges[d]: the edges into depth d + 1; padding children read the zero row
      rows.append(take_padded(edges[d], tree.children[d] - tree.edge_bounds[d + 1][0]))
  return jnp.concatenate(rows)


def edge_rows(tree: PublicTree, nodes) -> list[jax.Array]:
  """Per depth d >= 1 the rows in `tree.edge_bounds` of per-node arrays (per depth d >= 1, [n_d, ...])."""
  return [x[slice(*bounds)] for x, bounds in zip(nodes, tree.edge_bounds[1:], strict=True)]


def all_rows(tree: PublicTree, edge: jax.Array, depth: int) -> jax.Array:
  """[n_d, H]: edge probabilities `edge` [e_d, H] of `depth` over all its nodes (1 into the nodes that
  chance deals into)."""
  start, stop = tree.edge_bounds[depth]
  return jnp.pad(edge, ((start, sum(tree.level_sizes[depth]) - stop), (0, 0)), constant_values=1)


# River cards per step of a blocked turn tree's loop (`over_blocks`): one, the fastest of the counts
# measured (1 to 4) on CPUs.
BLOCKS_PER_STEP = 1
# River cards per step inside a flop tree's turn cards (vmapped): about this many river nodes a
# step (`_nested_step`). On the example flop (307 river nodes a card) 4 cards a step were the fastest
# of 1, 3, 4 and 16; on a check/all-in flop (13) a whole turn card's rivers at once.
NESTED_STEP_NODES = 1300


def _nested_step(forest: PublicTree, blocks: int) -> int:
  """River cards per step in a flop tree's turn card: `NESTED_STEP_NODES` river nodes a step."""
  return max(1, min(blocks, NESTED_STEP_NODES // forest.num_nodes))


def over_blocks(one_block, parts, inputs, value_shape, dtype, per_step: int | None = None):
  """Runs `one_block((its state parts, *its inputs)) -> (its new state parts, its root values)` over
  the blocks, `BLOCKS_PER_STEP` at a time: `parts` holds every block's state parts (leading axis: the
  blocks), `inputs` the other per-block arrays (its last entry the block cards). Returns (the updated
  parts, the root values summed over the blocks [value_shape] of `dtype`); `parts` may be empty.

  A `fori_loop` that carries the parts and writes each step's blocks back in place: a `lax.map` would
  fill new stacked outputs with zeros and copy into them every half-iteration."""
  per_step = per_step or BLOCKS_PER_STEP
  steps, rest = divmod(inputs[-1].shape[0], per_step)

  def run(start, size, parts, summed):
    if size == 1:  # one block: no batch axis
      pick = lambda x: jax.lax.dynamic_index_in_dim(x, start, keepdims=False)
      new, values = one_block((jax.tree.map(pick, parts), *jax.tree.map(pick, inputs)))
      put = lambda x, y: jax.lax.dynamic_update_index_in_dim(x, y, start, 0)
      return jax.tree.map(put, parts, new), summed + values
    pick = lambda x: jax.lax.dynamic_slice_in_dim(x, start, size)
    new, values = jax.vmap(one_block)((jax.tree.map(pick, parts), *jax.tree.map(pick, inputs)))
    put = lambda x, y: jax.lax.dynamic_update_slice_in_dim(x, y, start, 0)
    return jax.tree.map(put, parts, new), summed + values.sum(0)

  summed = jnp.zeros(value_shape, dtype)
  step = lambda i, carry: run(i * per_step, per_step, *carry)
  parts, summed = jax.lax.fori_loop(0, steps, step, (parts, summed))
  if rest:
    parts, summed = run(steps * per_step, rest, parts, summed)
  return parts, summed


def part_blocks(part, one_block, parts, inputs, value_shape, dtype, per_step: int | None = None):
  """`over_blocks` over the blocks of `part` (a `blocked.Blocks`); where its blocks are split over
  devices (`part.shards` > 1), each device runs its share of them (on a CPU, host devices: one core
  each), and the root values are summed across the devices."""
  if part.shards == 1:
    return over_blocks(one_block, parts, inputs, value_shape, dtype, per_step)
  mesh = jax.sharding.Mesh(np.array(jax.local_devices()[: part.shards]), ('blocks',))

  def share(parts, inputs):
    parts, summed = over_blocks(one_block, parts, inputs, value_shape, dtype, per_step)
    return parts, jax.lax.psum(summed, 'blocks')

  blocks = jax.sharding.PartitionSpec('blocks')
  # check_vma off: the loop's running sum starts as zeros on every device and becomes per-device.
  shard = jax.shard_map(
    share, mesh=mesh, in_specs=blocks, out_specs=(blocks, jax.sharding.PartitionSpec()), check_vma=False
  )
  return shard(parts, inputs)


def _dealt_mask(spot, card: jax.Array) -> jax.Array:
  """[H] bool: the hands that do not hold a block's card (a deck position); none for a padding block
  (card -1, `blocked.Blocks.padding`), so that nothing reaches it."""
  return spot.card_mask[jnp.maximum(card, 0)] & (card >= 0)


def _sum_axis1(x: jax.Array) -> jax.Array:
  """x.sum(1), as unrolled additions where axis 1 is short (a node's children): XLA:CPU hands
  reductions to a library call, which costs more than its own fused loop at a few terms."""
  if x.shape[1] > 8:
    return x.sum(1)
  total = x[:, 0]
  for i in range(1, x.shape[1]):
    total = total + x[:, i]
  return total


def _top_down(tree: PublicTree, edge: list[jax.Array], root: jax.Array, card_mask: jax.Array | None) -> list:
  """Per depth [n_d, P, H]: the first P players' reaches (both, or OOP's alone) from the reaches at
  depth 0 `root` [n_0, P, H], with the edges' probabilities `edge` (per depth d >= 1 [n_d, H]) and the
  cards dealt on the way (None: a tree in which chance deals nothing, such as a blocked tree's parts)."""
  reach = [root]
  for d in range(1, len(tree.level_sizes)):
    actor = tree.parent_player[d]  # [n_d]
    step = jnp.where((actor[:, None] == jnp.arange(root.shape[1]))[..., None], edge[d - 1][:, None, :], 1)
    if card_mask is not None:
      step = take(card_mask, tree.edge_card[d])[:, None, :] * step
    reach.append(take(reach[-1], tree.parent[d]) * step)
  return reach


def state_shapes(game: Subgame) -> list[tuple[int, ...]]:
  """The shapes of the solver's per-depth state arrays: per depth of the tree [e_d, H]; on a blocked
  tree, those of its upper part, then the forest's per depth [R, e_d, H] (nested: [T, R, e_d, H]).
  Where each player's edges keep that player's hands only (`packed`), a depth's [e_d, H] is one flat
  [L_d] row instead (`_pack`)."""
  return _part_shapes(game.tree if game.blocks is None else game.blocks, game.num_hands, game.spot.hand_split)


def _part_shapes(part, hands: int, split) -> list[tuple[int, ...]]:
  if not isinstance(part, blocked.Blocks):
    if not packed(part, split):
      return [(stop - start, hands) for start, stop in part.edge_bounds[1:]]
    return [(_packed_size(runs, split),) for runs in part.edge_runs]
  upper = _part_shapes(part.upper, hands, split)
  return upper + [(part.num_blocks, *shape) for shape in _part_shapes(part.forest, hands, split)]


# Each player's edges over that player's hands only. With the hands of the two ranges ordered OOP's
# alone, both players', IP's alone (`Spot.hand_split` = (H0, H1)), OOP's hands are the first H0 and
# IP's the last H1; a tree built `by_actor` has each depth's edge rows in runs of one actor
# (`PublicTree.edge_runs`). A depth's state is then one flat row: OOP's runs' [n, H0] blocks, then
# IP's [n, H1], which the passes unpack to [e_d, H] (zeros on the other player's hands, whose values
# weigh nothing) as they start on a part and pack as they end. On a flop spot the state is most of
# the memory, and a player's own range is a fraction of the two; the copies cost time (`jaxcfr
# subgame --compact` asks for this layout, or a spot that would not fit `--max-memory` without it).


def packed(tree: PublicTree, split) -> bool:
  """Whether `tree`'s state keeps each player's edges over that player's hands (`_pack`)."""
  return tree.edge_runs is not None and split is not None


def _packed_size(runs, split) -> int:
  return sum(length * split[actor] for length, actor in runs)


def _pack(runs, split, hands: int, x: jax.Array) -> jax.Array:
  """[..., L]: a depth's state [..., e_d, H] with each run of edges over its actor's hands."""
  pieces, row = ([], []), 0
  for length, actor in runs:
    rows = x[..., row : row + length, :]
    pieces[actor].append(rows[..., : split[0]] if actor == 0 else rows[..., hands - split[1] :])
    row += length
  lead = x.shape[:-2]
  return jnp.concatenate([p.reshape(*lead, -1) for p in pieces[0] + pieces[1]], axis=-1)


def _unpack(runs, split, hands: int, flat: jax.Array) -> jax.Array:
  """The inverse of `_pack`: [..., e_d, H], zeros on the hands outside each run's actor's."""
  lead = flat.shape[:-1]
  start = [0, sum(length * split[0] for length, actor in runs if actor == 0)]
  rows = []
  for length, actor in runs:
    width = split[actor]
    piece = flat[..., start[actor] : start[actor] + length * width].reshape(*lead, length, width)
    start[actor] += length * width
    pad = (0, hands - width) if actor == 0 else (hands - width, 0)
    rows.append(jnp.pad(piece, [(0, 0)] * (len(lead) + 1) + [pad]))
  return jnp.concatenate(rows, axis=-2)


def _unpacked(tree: PublicTree, spot, per_depth) -> list:
  """A tree's per-depth state (arrays, or pytrees of them: rule states) as [..., e_d, H] arrays, in
  floats where it is kept in 16 bits (`Quantized`)."""
  unpacked = _per_depth(_unpack, tree, spot, per_depth)
  return [jax.tree.map(_dequantize, x, is_leaf=_is_quantized) for x in unpacked]


def _packed(tree: PublicTree, spot, per_depth) -> list:
  """The inverse of `_unpacked`."""
  return _per_depth(_pack, tree, spot, per_depth)


def _per_depth(function, tree: PublicTree, spot, per_depth) -> list:
  """`function(runs, split, hands, x)` (`_pack` or `_unpack`) on every array of each depth's state,
  where the tree's state is packed (else the state as it is)."""
  if not packed(tree, spot.hand_split):
    return list(per_depth)
  hands = spot.hands.shape[0]
  apply = lambda runs, y: _on_values(lambda v: function(runs, spot.hand_split, hands, v), y)  # noqa: E731
  one = lambda runs, x: jax.tree.map(lambda y: apply(runs, y), x, is_leaf=_is_quantized)  # noqa: E731
  return [one(runs, x) for runs, x in zip(tree.edge_runs, per_depth, strict=True)]


# 16-bit state (`SolverConfig.compress`, `jaxcfr subgame --compress`): the regrets as int16 and the
# average's weights as uint16, each edge's row scaled by its largest magnitude over the hands (the
# step of one unit: that magnitude over the type's largest value), rounded to the nearest step.
# postflop-solver's compression does the same per node; a row per edge keeps more bits where an
# action's numbers are small beside its siblings'. The passes decode a part's state as they unpack it
# and encode it as they pack it; PCFR+'s prediction stays in the float type.


@dataclasses.dataclass(frozen=True)
class Quantized:
  """A depth's state array in 16 bits: `values` (int16 regrets or uint16 weights) in the state's
  layout (`state_shapes`), `scale` [..., e_d] (the float type) the value of one unit on each edge."""

  values: jax.Array
  scale: jax.Array


jax.tree_util.register_dataclass(Quantized, data_fields=['values', 'scale'], meta_fields=[])


def _is_quantized(x) -> bool:
  return isinstance(x, Quantized)


def _quantize(x: jax.Array, like: Quantized, kept: jax.Array | None = None) -> Quantized:
  """`x` [..., e_d, H] (floats, unpacked) in `like`'s integer type and float type, one scale per edge:
  the largest magnitude over the hands it keeps (`kept` [e_d, H], None: all)."""
  info = jnp.iinfo(like.values.dtype)
  magnitude = jnp.abs(x) if kept is None else jnp.where(kept, jnp.abs(x), 0)
  top = magnitude.max(-1)
  scale = (top / info.max).astype(like.scale.dtype)
  safe = jnp.where(top > 0, top, 1)
  inverse = jnp.where(top > 0, info.max / safe, 0)  # then a product per number, not a division
  units = jnp.round(x * inverse[..., None])
  return Quantized(jnp.clip(units, info.min, info.max).astype(like.values.dtype), scale)


def _dequantize(x):
  """Floats [..., e_d, H] of a `Quantized` whose values are unpacked (other arrays as they are)."""
  if not _is_quantized(x):
    return x
  return x.values.astype(x.scale.dtype) * x.scale[..., None]


def _on_values(function, x):
  """`function` on an array, or on a `Quantized`'s values (its scales kept)."""
  return Quantized(function(x.values), x.scale) if _is_quantized(x) else function(x)


def _stored(tree: PublicTree, spot, per_depth, like) -> tuple:
  """The inverse of `_unpacked` on the state: per-depth floats [..., e_d, H] packed, and encoded in 16
  bits where the state they replace (`like`, as stored) is."""
  coded = []
  for d, (x, old) in enumerate(zip(per_depth, like, strict=True)):
    kept = _kept_hands(tree, spot, d)
    encode = lambda x, old, kept=kept: _quantize(x, old, kept) if _is_quantized(old) else x  # noqa: E731
    coded.append(jax.tree.map(encode, x, old, is_leaf=_is_quantized))
  return tuple(_packed(tree, spot, coded))


def _kept_hands(tree: PublicTree, spot, d: int) -> jax.Array | None:
  """[e_d, H] the hands that depth d + 1's packed state keeps on each edge (its actor's), or None
  where the state keeps every hand: the scales then ignore numbers that packing drops."""
  if not packed(tree, spot.hand_split):
    return None
  actor = np.concatenate([np.full(length, a, np.int8) for length, a in tree.edge_runs[d]])
  hands, (oop, ip) = spot.hands.shape[0], spot.hand_split
  index = np.arange(hands)
  return jnp.asarray(np.where(actor[:, None] == 0, index < oop, index >= hands - ip))


def _depth_trees(part) -> list:
  """(tree, its depth d - 1) of each depth of a part's state (`state_shapes`' order): a blocked tree's
  upper part, then its forest's (nested alike)."""
  if not isinstance(part, blocked.Blocks):
    return [(part, d) for d in range(len(part.level_sizes) - 1)]
  return _depth_trees(part.upper) + _depth_trees(part.forest)


def _edge_counts(part) -> list[tuple[int, ...]]:
  """Per depth of a part's state its edges' shape: [e_d], with the blocks' axes in front."""
  if not isinstance(part, blocked.Blocks):
    return [(stop - start,) for start, stop in part.edge_bounds[1:]]
  return _edge_counts(part.upper) + [(part.num_blocks, *shape) for shape in _edge_counts(part.forest)]


def decoded(game: Subgame, per_depth) -> list:
  """The state arrays `per_depth` in floats, in their own layout (`state_shapes`): a 16-bit array's
  values times its edges' scales (packed alike where the layout is)."""
  part = game.tree if game.blocks is None else game.blocks
  out = []
  for (tree, d), x in zip(_depth_trees(part), per_depth, strict=True):
    if _is_quantized(x):
      scale = jnp.broadcast_to(x.scale[..., None], (*x.scale.shape, game.num_hands))
      if packed(tree, game.spot.hand_split):
        scale = _pack(tree.edge_runs[d], game.spot.hand_split, game.num_hands, scale)
      x = x.values.astype(x.scale.dtype) * scale
    out.append(x)
  return out


def state_to_rows(game: Subgame, edges) -> jax.Array:
  """[D, A, H]: per-edge state arrays `edges` (`game`'s layout: `state_shapes`) laid out by the whole
  tree's decision nodes and actions, as `decision_rows` (0 on the padding actions)."""
  if game.blocks is None:
    return decision_rows(game.tree, _unpacked(game.tree, game.spot, edges))
  rows = _part_rows(game.blocks, game.spot, list(edges), game.tree.num_actions)
  rows = take_padded(rows, game.blocks.decision_source)
  merged = game.blocks.merged
  if merged is None:
    return rows
  # A merged card's rows are its solved card's with the hands relabelled (`isomorphism`).
  pull = take(merged.pulls, merged.decision_pull)[:, None, :]  # [D, 1, H]
  return jnp.take_along_axis(rows, pull, axis=2)


def _part_rows(part, spot, edges: list, width: int) -> jax.Array:
  """[the part's decision rows in its layout, width, H] of its state arrays `edges`."""
  if not isinstance(part, blocked.Blocks):
    rows = decision_rows(part, _unpacked(part, spot, edges))
    return jnp.pad(rows, ((0, 0), (0, width - rows.shape[1]), (0, 0)))
  split = len(part.upper.level_sizes) - 1
  upper = _part_rows(part.upper, spot, edges[:split], width)
  forest = jax.vmap(lambda e: _part_rows(part.forest, spot, e, width))(edges[split:])
  return jnp.concatenate([upper, forest.reshape(-1, *forest.shape[2:])])


def rows_to_state(game: Subgame, policy: jax.Array) -> list[jax.Array]:
  """The inverse of `state_to_rows`: per-action arrays `policy` [D, A, H] (a policy, regrets) in the
  solver's per-edge layout for `game` (`state_shapes`)."""
  if game.blocks is None:
    return _packed(game.tree, game.spot, edge_rows(game.tree, policy_edges(game.tree, policy)))
  blocks = game.blocks
  real = blocks.num_rows - blocks.padding * blocks.forest_rows
  source = blocks.decision_source
  if blocks.merged is not None:  # the rows of the solved cards (a merged card's rows map to theirs)
    source = jnp.where(blocks.merged.decision_pull == 0, source, blocks.num_rows + 1)
  layout = jnp.argsort(source)[:real]  # the whole tree's row of each layout row
  rows = take(policy, layout)
  rows = jnp.pad(rows, ((0, blocks.num_rows - real),) + ((0, 0),) * (rows.ndim - 1))  # padding blocks
  return _part_state(blocks, game.spot, rows)


def _part_state(part, spot, rows: jax.Array) -> list[jax.Array]:
  """A part's state arrays of per-action arrays `rows` [its decision rows in its layout, A, H]."""
  if not isinstance(part, blocked.Blocks):
    return _packed(part, spot, edge_rows(part, policy_edges(part, rows[:, : part.num_actions])))
  upper = _part_state(part.upper, spot, rows[: part.upper_rows])
  forest = rows[part.upper_rows :].reshape(part.num_blocks, part.forest_rows, *rows.shape[1:])
  return upper + list(jax.vmap(lambda r: _part_state(part.forest, spot, r))(forest))


def _edge_strategy(tree: PublicTree, weights: jax.Array, depth: int) -> jax.Array:
  """[e_d, H]: the probability of the action into each node of `depth` (>= 1) with an edge, from
  non-negative `weights` [e_d, H] normalised over each decision node's children (uniform over its legal
  actions where they sum to 0); 1 into the children of chance nodes."""
  start = sum(sizes[DECISION] for sizes in tree.level_sizes[: depth - 1])
  rows = tree.level_sizes[depth - 1][DECISION]
  first, stop = tree.edge_bounds[depth]
  from_decision = tree.parent_player[depth][first:stop] < 2  # [e_d]
  if not rows:
    return jnp.ones_like(weights)
  weights = jnp.where(from_decision[:, None], weights, 0)
  total = _sum_axis1(take_padded(weights, tree.children[depth - 1] - first))  # [m, H]
  legal = tree.legal[start : start + rows, :, 0].sum(1).astype(weights.dtype)  # [m]
  parent = jnp.where(from_decision, tree.parent[depth][first:stop], 0)
  total = take(total, parent)
  strategy = jnp.where(total > 0, weights / jnp.where(total > 0, total, 1), (1 / legal)[parent][:, None])
  return jnp.where(from_decision[:, None], strategy, 1)


def _block_terminals(forest: PublicTree, spot, board, mask: jax.Array):
  """`terminal_values(reach, player)` of one river block of a blocked tree: the showdowns on river
  `board` (a row of the spot's tables), and the own hands that hold a card dealt on the way (`mask`
  [H] 0) worth 0 at the folds (the showdowns' tables already leave them out)."""
  tables = jax.tree.map(lambda x: jax.lax.dynamic_index_in_dim(x, board, keepdims=True), spot.tables)
  one = dataclasses.replace(spot, tables=tables, river_mask=mask[None])

  def values(reach, player):
    folds, showdowns = subgame_module.terminal_values(Subgame(forest, one), reach, player)
    return folds * mask, showdowns

  return values


def _upper_terminals(upper: PublicTree, spot, mask):
  """`terminal_values(reach, player)` of a blocked tree's upper part (folds only: its showdowns come
  after a deal), the own hands that hold a card dealt above (`mask` [H] 0, or None) worth 0."""

  def values(reach, player):
    folds, showdowns = subgame_module.terminal_values(Subgame(upper, spot), reach, player)
    return (folds if mask is None else folds * mask), showdowns

  return values


def _block_cards(blocks) -> tuple:
  """The per-block card arrays `_part_half` and `_evaluate_part` take for the top level's blocks:
  (cards [R], river boards [R], the nested forest's (cards [R, R'], boards [R, R']) or ())."""
  forest = blocks.forest
  inner = (forest.block_card, forest.block_board, ()) if isinstance(forest, blocked.Blocks) else ()
  return blocks.block_card, blocks.block_board, inner


def _average_edges(tree: PublicTree, weights, lock=None) -> list[jax.Array]:
  """Per depth [n_d, H]: the average strategy's probability of the action into each node, from the
  average's weights (per depth [e_d, H]); what `normalize` gives on the `[D, A, H]` rows; the locked
  probabilities where `lock` (per depth [e_d, H] or None, as `_edges_of` takes it) has them."""
  lock = lock or [None] * len(weights)
  return [
    all_rows(tree, _lock_edges(_edge_strategy(tree, w, d), fixed), d)
    for d, (w, fixed) in enumerate(zip(weights, lock, strict=True), 1)
  ]


def _lock_rows(tree: PublicTree, lock) -> list | None:
  """Per depth [n_d, H] or None: a lock's edges (per depth [e_d, H], NaN where free, or None) over all
  of the depth's nodes, as `_evaluation_pass` takes them."""
  if lock is None:
    return None
  return [None if fixed is None else all_rows(tree, fixed, d) for d, fixed in enumerate(lock, 1)]


def _other_rows(tree: PublicTree, d: int, below, folds, showdowns, chance) -> list[jax.Array]:
  """A bottom-up pass's values at depth d after its decision nodes', in row order [n, ..., H]: its
  chance nodes' (`chance`'s rows [K, ..., H], or None: the weighted sum of their children in `below`,
  the next depth's values), then its rows of the fold and showdown values `folds` [F, ..., H] and
  `showdowns` [S, ..., H]."""
  sizes = tree.level_sizes[d]
  start = lambda kind: sum(s[kind] for s in tree.level_sizes[:d])
  parts = []
  if sizes[CHANCE]:
    a = start(CHANCE)
    if chance is None:
      weight = tree.chance_weight[a : a + sizes[CHANCE]].reshape((-1,) + (1,) * (below.ndim - 1))
      parts.append(take_padded(below, tree.chance_children[d]).sum(1) * weight)
    else:
      parts.append(chance[a : a + sizes[CHANCE]])
  for values, kind in ((folds, FOLD), (showdowns, SHOWDOWN)):
    a = start(kind)
    parts.append(values[a : a + sizes[kind]])
  return parts


def _evaluation_pass(tree: PublicTree, edge, player: int, folds, showdowns, chance, lock=None) -> jax.Array:
  """[n_0, 2, H]: `player`'s counterfactual values at depth 0 when it plays the edges' strategy
  `edge` (per depth [n_d, H]) and when it best responds (the max over its legal actions; the locked
  strategy for the hands `lock` fixes, per depth [n_d, H] NaN where free, or None), from one
  bottom-up pass; the opponent's strategy is in the reaches behind `folds` [F, H] and `showdowns`
  [S, H]. `chance` ([K, 2, H] the values of the chance nodes, or None: from their children)."""
  both = lambda rows: jnp.broadcast_to(rows[:, None], (rows.shape[0], 2, rows.shape[1]))
  folds, showdowns = both(folds), both(showdowns)  # the same under the average and a best response
  below = None  # [n_{d+1}, 2, H]
  for d in reversed(range(len(tree.level_sizes))):
    sizes = tree.level_sizes[d]
    parts = []
    if sizes[DECISION]:
      start = sum(s[DECISION] for s in tree.level_sizes[:d])
      own = (tree.parent_player[d + 1] == player)[:, None]
      played = _sum_axis1(take_padded(jnp.where(own, edge[d] * below[:, 0], below[:, 0]), tree.children[d]))
      children = take_padded(below[:, 1], tree.children[d])  # [m, A, H]
      legal = tree.legal[start : start + sizes[DECISION]]  # [m, A, 1]
      own_row = (tree.decision_player[start : start + sizes[DECISION]] == player)[:, None]
      best = jnp.where(legal, children, -jnp.inf).max(1)
      if lock is not None and lock[d] is not None:
        # [m, A, H]: 0 where free (NaN in the lock, or a packed lock's other player's hands) and padding
        fixed = jnp.nan_to_num(take_padded(lock[d], tree.children[d]))
        best = jnp.where(_sum_axis1(fixed) > 0, _sum_axis1(fixed * children), best)
      best = jnp.where(own_row, best, _sum_axis1(children))
      parts.append(jnp.stack([played, best], 1))
    below = jnp.concatenate(parts + _other_rows(tree, d, below, folds, showdowns, chance))
  return below


def evaluate_average(weights, game: Subgame) -> tuple[jax.Array, jax.Array]:
  """(NashConv, [2] each player's expected payoff per deal) of the average strategy whose weights
  are `weights` (the state's `cumulative_policy`, in `game`'s layout: `state_shapes`): the same
  numbers as `game.evaluate_profile` of the `[D, A, H]` average policy, without laying it out. One
  top-down pass and one bottom-up pass per player, which carries its values under the average and
  as a best response together; on a blocked turn tree, block by block."""
  spot = game.spot
  players = jnp.arange(2)  # the two players' passes as one, vmapped: one traced body to compile
  if game.blocks is None:
    tree = game.tree
    lock = None if game.lock is None else _unpacked(tree, spot, game.lock.edges)
    edge = _average_edges(tree, _unpacked(tree, spot, weights), lock)
    reach = _top_down(tree, edge, spot.ranges[None], spot.card_mask)

    def root(player):
      terminals = subgame_module.terminal_values(game, reach, player)
      return _evaluation_pass(tree, edge, player, *terminals, None, _lock_rows(tree, lock))[0]

    roots = jax.vmap(root)(players)
  else:
    lock = None if game.lock is None else list(game.lock.edges)
    root = _evaluate_part(
      game.blocks, spot, list(weights), lock, spot.ranges[None], None, _block_cards(game.blocks)
    )
    roots = root[:, 0]
  values = (spot.ranges[:, None] * roots).sum(-1) / subgame_module.normalizer(game)  # [2, 2]
  return (values[:, 1] - values[:, 0]).sum(), values[:, 0]


def _evaluate_part(part, spot, weights: list, lock, root_reach, mask, cards) -> jax.Array:
  """[players, n_0, 2, H]: each player's values at the part's depth 0 under the average and as a best
  response (`_evaluation_pass`), from both players' reaches there `root_reach` [n_0, 2, H]; `mask` [H]
  the hands the cards dealt above leave (None: none dealt), `cards` as `_block_cards` gives them (a
  river forest: its board); `lock` the part's share of `Subgame.lock` (or None)."""
  players = jnp.arange(2)
  if not isinstance(part, blocked.Blocks):  # a river forest
    lock = None if lock is None else _unpacked(part, spot, lock)
    edge = _average_edges(part, _unpacked(part, spot, weights), lock)
    reach = _top_down(part, edge, root_reach, None)
    terminals = _block_terminals(part, spot, cards, mask)
    fixed = _lock_rows(part, lock)
    return jax.vmap(lambda p: _evaluation_pass(part, edge, p, *terminals(reach, p), None, fixed))(players)
  upper, forest = part.upper, part.forest
  split = len(upper.level_sizes) - 1
  upper_lock = forest_lock = None
  if lock is not None:
    upper_lock, forest_lock = _unpacked(upper, spot, lock[:split]), tuple(lock[split:])
  edge = _average_edges(upper, _unpacked(upper, spot, weights[:split]), upper_lock)
  reach = _top_down(upper, edge, root_reach, None)  # its chance nodes are leaves
  chance_reach = subgame_module.kind_rows(upper, reach, CHANCE)  # [K, 2, H]
  block_cards, block_boards, inner = cards

  def one_block(args):
    (), block_weights, block_lock, board, inner, mates, card = args
    card_mask = _dealt_mask(spot, card)
    block_mask = card_mask if mask is None else mask * card_mask
    nested = inner if isinstance(forest, blocked.Blocks) else board
    root = take(chance_reach, part.root_chance) * card_mask
    block_lock = None if block_lock is None else list(block_lock)
    values = _evaluate_part(forest, spot, list(block_weights), block_lock, root, block_mask, nested)
    return (), _with_mates(values, mates)

  shape = (2, chance_reach.shape[0], 2, spot.hands.shape[0])  # [players, n_0, 2, H]
  inputs = (tuple(weights[split:]), forest_lock, block_boards, inner, _mates(part), block_cards)
  per_step = None if mask is None else _nested_step(forest, part.num_blocks // part.shards)
  _, summed = part_blocks(part, one_block, (), inputs, shape, spot.ranges.dtype, per_step)
  terminals = _upper_terminals(upper, spot, mask)

  def root(player, summed):
    chance = take(summed, part.chance_root) * upper.chance_weight[:, None, None]
    return _evaluation_pass(
      upper, edge, player, *terminals(reach, player), chance, _lock_rows(upper, upper_lock)
    )

  return jax.vmap(root)(players, summed)


def _evaluate_state(state: SubgameState, game: Subgame) -> tuple[jax.Array, jax.Array]:
  """`Solver.evaluate_average` of the subgame solvers (one function, so that jit's cache serves every
  solver built for a tree shape)."""
  return evaluate_average(state.cumulative_policy, game)


# The solver's passes. Those that read the algorithm take its `SolverConfig` first; `build` binds them.


@dataclasses.dataclass(frozen=True)
class SolverConfig:
  """What the passes read besides the state and the game: the full-width algorithm's regret rule, the
  power that discounts the average's weights, and the players that update together."""

  rule: solvers.RegretTransform  # `solvers.regret_rule`'s: CFR+, DCFR, PCFR+, ...
  power: Any  # each iteration t scales the average's weights by ((t - 1) / t)^power
  groups: tuple[tuple[int, ...], ...]  # ((0,), (1,)) alternating updates; ((0, 1),) simultaneous
  compress: bool = False  # regrets and the average's weights kept in 16 bits (`Quantized`)


def solver_config(algorithm: str, hyperparameters: dict) -> tuple[SolverConfig, dict]:
  """(`algorithm`'s config, its hyper-parameters as the solver reports them): validated by the
  registry, defaults from `defaults.SUBGAME_HYPERPARAMETERS`, else the registry's."""
  entry = algorithms.get(algorithm)
  if entry.family != algorithms.FULL_WIDTH:
    full_width = ', '.join(algorithms.names(algorithms.FULL_WIDTH))
    raise ValueError(f'a subgame is solved by a full-width algorithm ({full_width}); got {algorithm!r}')
  resolved = entry.resolve(**{**defaults.SUBGAME_HYPERPARAMETERS.get(entry.name, {}), **hyperparameters})
  alternating = resolved.pop('alternating')
  rule, power = solvers.regret_rule(algorithm, **resolved)
  groups = ((0,), (1,)) if alternating else ((0, 1),)
  return SolverConfig(rule, power, groups), {'alternating': alternating, **resolved}


def init(config: SolverConfig, game: Subgame, key: jax.Array | None = None) -> SubgameState:
  del key  # nothing is sampled
  shapes = state_shapes(game)
  if not config.compress:
    zeros = tuple(jnp.zeros(shape, game.dtype) for shape in shapes)
    return SubgameState(jnp.zeros((), jnp.int32), zeros, zeros, tuple(config.rule.init(z) for z in zeros))
  # The float zeros one depth at a time: the rule's state (none for DCFR) alone keeps them.
  rule_states = tuple(config.rule.init(jnp.zeros(shape, game.dtype)) for shape in shapes)
  edges = _edge_counts(game.tree if game.blocks is None else game.blocks)
  coded = lambda kind: tuple(  # noqa: E731
    Quantized(jnp.zeros(shape, kind), jnp.zeros(e, game.dtype))
    for shape, e in zip(shapes, edges, strict=True)
  )
  return SubgameState(jnp.zeros((), jnp.int32), coded(jnp.int16), coded(jnp.uint16), rule_states)


def current_policy(config: SolverConfig, state: SubgameState, game: Subgame) -> jax.Array:
  positive = [
    jnp.maximum(config.rule.matched_regret(regret, rule_state), 0)
    for regret, rule_state in zip(decoded(game, state.cumulative_regret), state.rule_state, strict=True)
  ]
  return locked(game, match(state_to_rows(game, positive), game.tree.legal))


def average_policy(state: SubgameState, game: Subgame) -> jax.Array:
  return locked(game, normalize(state_to_rows(game, state.cumulative_policy), game.tree.legal))


def locked(game: Subgame, policy: jax.Array) -> jax.Array:
  """`policy` [D, A, H] with the locked hands' strategies where the game has a lock (`Subgame.lock`):
  they are what the solver plays, also where a hand's reach is 0 and its average has no weight."""
  lock = game.lock
  if lock is None:
    return policy
  fixed = jnp.where(jnp.isnan(lock.rows[:, :1]), take(policy, lock.index), lock.rows)
  return policy.at[lock.index].set(fixed)


def lock_to_rows(game: Subgame) -> jax.Array:
  """[D, A, H]: the game's lock (`Subgame.lock`) laid out by decision node, NaN where a hand is free
  (0 on the padding actions)."""
  shapes = state_shapes(game)
  per_depth = [
    _free(shape, game.dtype) if x is None else x for x, shape in zip(game.lock.edges, shapes, strict=True)
  ]
  return _free_where_unset(state_to_rows(game, per_depth))


def _free(shape, dtype) -> jax.Array:
  return jnp.full(shape, jnp.nan, dtype)


def _free_where_unset(rows: jax.Array) -> jax.Array:
  """Laid-out lock rows [D, A, H] with NaN on every action of a hand that is free: NaN in the state,
  or 0 on all its actions (a packed state's other player's hands, which it does not keep)."""
  free = jnp.isnan(rows[:, :1]) | (jnp.nan_to_num(rows).sum(1, keepdims=True) <= 0)
  return jnp.where(free, jnp.nan, rows)


def average_root(state: SubgameState, game: Subgame) -> jax.Array:
  """[A, H]: `average_policy`'s root row, laying out the upper part alone on a blocked tree."""
  if game.blocks is None:
    return average_policy(state, game)[0]
  return average_upper(state, game, jnp.zeros(1, jnp.int32))[0]


def average_upper(state: SubgameState, game: Subgame, rows: jax.Array) -> jax.Array:
  """[N, A, H]: `average_policy`'s decision rows `rows` [N] of a blocked tree's upper street (the
  street above its first deal), laying out the upper part alone."""
  upper = game.blocks.upper
  split = len(upper.level_sizes) - 1
  laid_out = _part_rows(upper, game.spot, list(state.cumulative_policy[:split]), game.tree.num_actions)
  # The upper street's decisions are the layout's first rows (`blocked.Blocks.decision_source`).
  policy = normalize(take(laid_out, game.blocks.decision_source[rows]), game.tree.legal[rows])
  if game.lock is None:
    return policy
  here = game.lock.index[None, :] == rows[:, None]  # [N, K]
  fixed = jnp.where(here.any(1)[:, None, None], game.lock.rows[jnp.argmax(here, 1)], jnp.nan)  # [N, A, H]
  return jnp.where(jnp.isnan(fixed[:, :1]), policy, fixed)


def update(config: SolverConfig, state: SubgameState, game: Subgame) -> SubgameState:
  return step(config, state, game, None)[0]


def warm_start(
  config: SolverConfig, state: SubgameState, game: Subgame, policy: jax.Array, iterations
) -> SubgameState:
  """`iterations` updates in which both players play `policy` [D, A, H] (see `subgame_warm_start`)."""
  played = rows_to_state(game, policy)
  return jax.lax.fori_loop(0, iterations, lambda _, s: step(config, s, game, played)[0], state)


def step(config: SolverConfig, state: SubgameState, game: Subgame, played) -> tuple[SubgameState, jax.Array]:
  """One iteration, and each player's counterfactual values at the root [2, H] in it (those of its
  own update's pass); `played` (per depth [e_d, H] edge probabilities in the state's layout, or
  None) replaces the strategy that regret matching gives, for warm starts."""
  if game.blocks is not None:
    return blocked_step(config, state, game, played)
  tree, spot = game.tree, game.spot
  t, keep = _clock(config, state, spot)
  parts = tuple(_unpacked(tree, spot, x) for x in state[1:])
  played = None if played is None else _unpacked(tree, spot, played)
  lock = None if game.lock is None else _unpacked(tree, spot, game.lock.edges)
  folds_of = functools.partial(subgame_module.terminal_values, game)
  roots = [None, None]
  for players in config.groups:
    edge = _edges_of(config, tree, parts[0], parts[2], played, lock)
    reach = _top_down(tree, edge, spot.ranges[None], spot.card_mask)
    first = players == config.groups[0]
    values = half(config, tree, edge, reach, players, first, folds_of, None, parts, t, keep)
    for player, value in zip(players, values, strict=True):
      roots[player] = value[0]
  stored = (_stored(tree, spot, x, old) for x, old in zip(parts, state[1:], strict=True))
  return SubgameState(t, *stored), jnp.stack(roots)


def blocked_step(
  config: SolverConfig, state: SubgameState, game: Subgame, played
) -> tuple[SubgameState, jax.Array]:
  """`step` on a blocked tree: its upper street's passes, and between them the part below its
  deals one block (card) at a time (`over_blocks`, `_part_half`; nested on a flop tree)."""
  blocks, spot = game.blocks, game.spot
  t, keep = _clock(config, state, spot)
  parts = tuple(list(x) for x in state[1:])
  played = None if played is None else list(played)
  lock = None if game.lock is None else list(game.lock.edges)
  roots = [None, None]
  for players in config.groups:
    first = players == config.groups[0]
    # The second half of alternating updates (IP's) needs OOP's reach alone: the weights took both
    # players' reaches in the first.
    slots = 1 if players == (1,) else 2
    step_of = functools.partial(_part_half, config, spot, players, first, t, keep)
    parts, values = step_of(
      blocks, spot.ranges[None, :slots], None, parts, played, lock, _block_cards(blocks)
    )
    if blocks.merged is not None:
      parts = _symmetric_upper(blocks, spot, parts)
    for player, value in zip(players, values, strict=True):
      roots[player] = value[0]
  return SubgameState(t, *(tuple(x) for x in parts)), jnp.stack(roots)


def _symmetric_upper(blocks, spot, parts) -> tuple:
  """The state `parts` (regrets, weights, rule states) with the upper street's averaged over the
  spot's suit permutations (`isomorphism`): the merged cards' blocks stand in for the solved ones' on
  the assumption that the strategies above the deal treat mirrored hands alike, which exact
  arithmetic keeps and rounding, through regret matching at zero regrets, would not."""
  upper, pulls = blocks.upper, blocks.merged.pulls
  split = len(upper.level_sizes) - 1

  def mean(x):
    return sum(jnp.take(x, pulls[p], axis=-1) for p in range(pulls.shape[0])) / pulls.shape[0]

  out = []
  for per_depth in parts:
    floats = [jax.tree.map(mean, x) for x in _unpacked(upper, spot, per_depth[:split])]
    out.append(list(_stored(upper, spot, floats, per_depth[:split])) + list(per_depth[split:]))
  return tuple(out)


def _part_half(
  config: SolverConfig, spot, players, first, t, keep, part, root_reach, mask, parts, played, lock, cards
):
  """`half` on a part of a blocked tree: a river forest (one block), or a `Blocks` (its upper street,
  and between that street's passes its forest block by block). `root_reach` [n_0, slots, H] the
  reaches at its depth 0, `mask` [H] the hands that the cards dealt above leave (None: none), `parts`
  (regrets, weights, rule states) per depth in its layout, `played` its played edges or None, `lock`
  its part of `Subgame.lock` or None, `cards`
  as `_block_cards` gives them (a river forest: its board). Returns (its new parts, the values at its
  depth 0 [players, n_0, H])."""
  half_of = functools.partial(_part_half, config, spot, players, first, t, keep)
  if not isinstance(part, blocked.Blocks):  # a river forest
    stored = parts
    parts = tuple(_unpacked(part, spot, x) for x in parts)
    played = None if played is None else _unpacked(part, spot, played)
    lock = None if lock is None else _unpacked(part, spot, lock)
    edge = _edges_of(config, part, parts[0], parts[2], played, lock)
    reach = _top_down(part, edge, root_reach, None)
    folds_of = _block_terminals(part, spot, cards, mask)
    values = half(config, part, edge, reach, players, first, folds_of, None, parts, t, keep)
    parts = tuple(_stored(part, spot, x, old) for x, old in zip(parts, stored, strict=True))
    return parts, jnp.stack(values)
  upper, forest = part.upper, part.forest
  split = len(upper.level_sizes) - 1
  upper_parts = tuple(_unpacked(upper, spot, x[:split]) for x in parts)
  forest_parts = tuple(tuple(x[split:]) for x in parts)
  upper_played = forest_played = None
  if played is not None:
    upper_played, forest_played = _unpacked(upper, spot, played[:split]), tuple(played[split:])
  upper_lock = forest_lock = None
  if lock is not None:
    upper_lock, forest_lock = _unpacked(upper, spot, lock[:split]), tuple(lock[split:])
  edge = _edges_of(config, upper, upper_parts[0], upper_parts[2], upper_played, upper_lock)
  reach = _top_down(upper, edge, root_reach, None)  # its chance nodes are leaves
  chance_reach = subgame_module.kind_rows(upper, reach, CHANCE)  # [K, slots, H] in chance-row order
  block_cards, block_boards, inner = cards

  def one_block(args):
    block_parts, block_played, block_lock, board, inner, mates, card = args
    card_mask = _dealt_mask(spot, card)  # the hands that do not hold the block's card
    block_mask = card_mask if mask is None else mask * card_mask
    nested = inner if isinstance(forest, blocked.Blocks) else board
    root = take(chance_reach, part.root_chance) * card_mask
    new, values = half_of(forest, root, block_mask, block_parts, block_played, block_lock, nested)
    return new, _with_mates(values, mates)

  shape = (len(players), chance_reach.shape[0], spot.hands.shape[0])  # [players, n_0, H]
  inputs = (forest_played, forest_lock, block_boards, inner, _mates(part), block_cards)  # per block
  per_step = None if mask is None else _nested_step(forest, part.num_blocks // part.shards)
  dtype = spot.ranges.dtype
  forest_parts, summed = part_blocks(part, one_block, forest_parts, inputs, shape, dtype, per_step)
  chance = functools.partial(_chance_values, part, players, summed)
  upper_folds = _upper_terminals(upper, spot, mask)
  values = half(config, upper, edge, reach, players, first, upper_folds, chance, upper_parts, t, keep)
  parts = tuple(
    _stored(upper, spot, u, old[:split]) + tuple(f)
    for u, f, old in zip(upper_parts, forest_parts, parts, strict=True)
  )
  return parts, jnp.stack(values)


def _mates(part) -> tuple | None:
  """Per block of `part` (its blocks' axis first) the pulls and weights of the cards that suit
  isomorphism merged into it (`isomorphism.Merged`), or None where none were."""
  merged = part.merged
  return None if merged is None else (merged.block_mates, merged.mate_weight)


def _with_mates(values: jax.Array, mates) -> jax.Array:
  """A block's root values [..., H] plus those of the cards merged into it (`_mates`: pulls [M, H],
  weights [M]): each the block's values with the hands relabelled by its suit permutation."""
  if mates is None:
    return values
  pulls, weights = mates
  total = values
  for m in range(pulls.shape[0]):
    total = total + weights[m] * jnp.take(values, pulls[m], axis=-1)
  return total


def _chance_values(blocks, players, summed, player) -> jax.Array:
  """[K, H]: `player`'s values at the upper part's chance nodes, from the blocks' root values summed
  over the blocks `summed` [players, n_0, H]."""
  return take(summed[players.index(player)], blocks.chance_root) * blocks.upper.chance_weight[:, None]


def _clock(config: SolverConfig, state: SubgameState, spot) -> tuple[jax.Array, jax.Array]:
  """(this iteration's number t, the factor ((t - 1) / t)^power that discounts the average's weights)."""
  t = state.iteration + 1
  dtype = spot.ranges.dtype
  return t, jnp.power((t - 1).astype(dtype) / t.astype(dtype), jnp.asarray(config.power, dtype))


def _edges_of(
  config: SolverConfig, tree: PublicTree, regrets, rule_states, played, lock=None
) -> list[jax.Array]:
  """Per depth [n_d, H]: the strategy's probability of the action into each node (`played` or
  regret matching), the locked probabilities where `lock` (per depth [e_d, H], NaN where free, or
  None) has them."""
  if played is None:
    played = [
      _edge_strategy(tree, jnp.maximum(config.rule.matched_regret(regret, rule_state), 0), d + 1)
      for d, (regret, rule_state) in enumerate(zip(regrets, rule_states, strict=True))
    ]
  if lock is not None:
    played = [_lock_edges(e, fixed) for e, fixed in zip(played, lock, strict=True)]
  return [all_rows(tree, e, d) for d, e in enumerate(played, 1)]


def _lock_edges(edges: jax.Array, fixed: jax.Array | None) -> jax.Array:
  """Edge probabilities [e_d, H] with the locked ones of `fixed` (NaN where free; None: none)."""
  return edges if fixed is None else jnp.where(jnp.isnan(fixed), edges, fixed)


def half(
  config: SolverConfig, tree: PublicTree, edge, reach, players, first, folds_of, chance, parts, t, keep
):
  """A half-iteration's work on one tree below its reaches' top depth: the average's weights (in the
  first half), then per player in `players` the values bottom-up and the regret updates (all at once
  after the players' passes where they update together). `parts` = (regrets, weights, rule states) per
  depth, updated in place; `chance` (or None) gives a player's chance nodes' values [K, H]; returns the
  values at depth 0 per player [n_0, H]."""
  regrets, weights, rule_states = parts
  edge_actor, edge_parent = edge_rows(tree, tree.parent_player[1:]), edge_rows(tree, tree.parent[1:])
  if first:
    _add_reach(tree, reach, edge_actor, weights, keep)
  instant = [jnp.zeros_like(w) for w in weights] if len(players) > 1 else None  # simultaneous updates
  roots = []
  for player in players:
    folds, showdowns = folds_of(reach, player)
    below = None  # [n_{d+1}, H] the next depth's values
    chance_values = None if chance is None else chance(player)
    for d in reversed(range(len(tree.level_sizes))):
      sizes = tree.level_sizes[d]
      value_parts = []
      if sizes[DECISION]:
        own = (tree.parent_player[d + 1] == player)[:, None]
        weighted = jnp.where(own, edge[d] * below, below)  # the opponent's strategy is in its reach
        value_parts.append(_sum_axis1(take_padded(weighted, tree.children[d])))
      value = jnp.concatenate(value_parts + _other_rows(tree, d, below, folds, showdowns, chance_values))
      if d + 1 < len(tree.level_sizes):
        mine = (edge_actor[d] == player)[:, None]
        parent = jnp.where(edge_actor[d] < 2, edge_parent[d], 0)
        regret = jnp.where(mine, below[slice(*tree.edge_bounds[d + 1])] - take(value, parent), 0)
        if instant is None:
          cumulative, _, rule_state = config.rule.update(regrets[d], regret, rule_states[d], t)
          on = functools.partial(jnp.where, mine)
          regrets[d] = on(cumulative, regrets[d])
          rule_states[d] = jax.tree.map(on, rule_state, rule_states[d])
        else:
          instant[d] = instant[d] + regret
      below = value
    roots.append(below)
  if instant is not None:
    for d, regret in enumerate(instant):
      cumulative, _, rule_state = config.rule.update(regrets[d], regret, rule_states[d], t)
      on = functools.partial(jnp.where, (edge_actor[d] < 2)[:, None])
      regrets[d] = on(cumulative, regrets[d])
      rule_states[d] = jax.tree.map(on, rule_state, rule_states[d])
  return roots


def _add_reach(tree: PublicTree, reach, edge_actor, weights: list, keep) -> None:
  """The average's weights (per depth [e_d, H], updated in place) discounted by `keep`, plus the acting
  player's reach of each edge (`reach` per depth [n_d, 2, H]: both players' edges, as a player's own
  reach is the same in both halves of an iteration)."""
  for d in range(1, len(tree.level_sizes)):
    kept, kept_actor = reach[d][slice(*tree.edge_bounds[d])], edge_actor[d - 1]
    own = jnp.where(kept_actor[:, None] == 0, kept[:, 0], kept[:, 1])
    weights[d - 1] = jnp.where((kept_actor < 2)[:, None], weights[d - 1] * keep + own, weights[d - 1])


# The solvers.


def subgame_solver(
  algorithm: str = defaults.ALGORITHM, *, compress: bool = False, **hyperparameters
) -> Solver:
  """The public-tree solver of a full-width algorithm of the registry (validated hyper-parameters,
  defaults for the rest: `defaults.SUBGAME_HYPERPARAMETERS`, else the registry's), e.g.
  `subgame_solver('dcfr', alpha=1.5)`; `compress` keeps the regrets and the average's weights in 16
  bits (`Quantized`: half the state of float32, a quarter of float64)."""
  return build(algorithm, hyperparameters, compress)[1]


def subgame_warm_start(algorithm: str = defaults.ALGORITHM, **hyperparameters):
  """`warm_start(state, game, policy, iterations) -> state` for `subgame_solver(algorithm,
  **hyperparameters)`: `iterations` updates in which both players play `policy` [D, A, H] (a warm
  start's strategy, e.g. the blueprint's) instead of their regret-matched strategies. From `init`,
  the state is then the one the algorithm would hold had it played `policy` that many times: the
  regrets of `policy` against itself, accumulated and discounted by the algorithm's rule, and the
  average strategy `policy` (strategy-based warm starting, Brown & Sandholm 2016). Jittable, the
  count may be traced."""
  config, _ = build(algorithm, hyperparameters)
  return functools.partial(warm_start, config)


def build(algorithm: str, hyperparameters: dict, compress: bool = False) -> tuple[SolverConfig, Solver]:
  """(`algorithm`'s config, its solver: the passes bound to the config); see `subgame_solver`."""
  config, resolved = solver_config(algorithm, hyperparameters)
  config = dataclasses.replace(config, compress=compress)
  solver = Solver(
    functools.partial(init, config),
    functools.partial(update, config),
    functools.partial(current_policy, config),
    average_policy,
    name=algorithm,
    hyperparameters=resolved,
    evaluate_average=_evaluate_state,
  )
  return config, solver
