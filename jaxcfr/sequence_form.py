"""Counterfactual regrets over sequences instead of histories (perfect recall).

A player's *edge* is one of its (infoset, action) pairs, numbered
`infoset * A + action`; E = I * A stands for the empty sequence. Under perfect
recall every infoset I of player p has one *parent edge* (p's last action
before reaching I, or E), and so does every terminal z, for every player. The
realization weight x(e) of an edge is the product of its player's policy
along its chain of parent edges; with it, the counterfactual value of player
p's edge (I, a) is

    q(I, a) = sum over terminals z whose last p-edge is (I, a) of
                chance reach(z) * u_p(z) * prod over players j != p of x(last j-edge of z)
              + sum over p's infosets J whose parent edge is (I, a) of v(J),
    v(J) = sum over b of policy(J, b) * q(J, b),

computed bottom-up over p's own decision levels (4 for each Leduc player),
against the 12 depths a pass over histories takes. That, and the few small
gathers each level needs, makes one regret computation several times cheaper
on CPUs, where each array operation costs a fixed overhead. The same pass
with a max over legal actions in place of the policy's average gives p's best
response value, and the expected values are one sum over terminals.

Only integer structure is stored: utilities and chance probabilities are read
from the `CompiledGame` on every call, so a game rebuilt with other payoffs
(`game.replace(utility=...)`) or a `vmap`ped batch of games stays consistent.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxcfr import memory, tree
from jaxcfr.compiled import Level, SequenceForm
from jaxcfr.games import base

# Padded tables may hold at most this multiple of their entries (plus a constant);
# beyond, the game keeps to the passes over histories.
_MAX_PADDING = 32
# The cost of one more gather in a pass, in gathered entries: what splitting a level's terminals
# into buckets of similar width must save in padding (the fixed cost of one more operation).
_OVERHEAD = 4096


def realization(form: SequenceForm, policy: jax.Array) -> jax.Array:
  """`[E + 1]` realization weight of every edge under `policy` (`[I, A]`); 1 at E: an
  infoset's policy times the product along its chain of parent edges."""
  flat = jnp.concatenate([policy.reshape(-1), jnp.ones((1,), policy.dtype)])
  above = tree.gather(flat, form.ancestors).prod(-1)  # [I]: the weight of each infoset's parent edge
  return jnp.concatenate([(policy * above[:, None]).reshape(-1), jnp.ones((1,), policy.dtype)])


def player_regrets(game, policy: jax.Array, player: int) -> tuple[jax.Array, jax.Array]:
  """`solvers.player_regrets` for a game with a `sequence_form`."""
  form = game.sequence_form
  x = realization(form, policy)
  terminal = _terminal_values(form, x, _chance(game) * _utility(game, player), player)
  levels = _bottom_up(
    form, terminal, player, lambda level, q: (tree.gather(policy, level.infosets) * q).sum(-1)
  )
  blocks = [q - v[:, None] for q, v in levels] + [jnp.zeros((1, policy.shape[1]), policy.dtype)]
  regret = jnp.where(game.legal_mask, tree.gather(jnp.concatenate(blocks), form.position[player]), 0)
  # Sum over the histories h of I of own reach (the same for every h, by perfect recall).
  own = tree.gather(x, form.parent_edge) * form.history_count.astype(policy.dtype)
  reach_policy = jnp.where(game.infoset_player == player, own, 0)[:, None] * policy
  return regret, reach_policy


def best_response_value(game, policy: jax.Array, player: int) -> jax.Array:
  """`[]` `evaluation.best_response_value` for a game with a `sequence_form`:
  the same pass as the regrets, with a max over legal actions for the policy's
  average."""
  form = game.sequence_form

  def best(level, q):
    return jnp.where(tree.gather(game.legal_mask, level.infosets), q, -jnp.inf).max(-1)

  x = realization(form, policy)
  terminal = _terminal_values(form, x, _chance(game) * _utility(game, player), player)
  levels = _bottom_up(form, terminal, player, best)
  first = levels[-1][1].sum() if levels else 0  # the last level is the first decision of `player`
  # Plus the terminals `player` reaches without acting.
  never_acts = form.terminal_edges[:, player] == game.legal_mask.size  # E: the empty sequence
  return first + jnp.where(never_acts, terminal[:-1], 0).sum()


def expected_values(game, policy: jax.Array) -> jax.Array:
  """`[P]` `evaluation.expected_values` for a game with a `sequence_form`."""
  form = game.sequence_form
  reach = _chance(game) * tree.gather(realization(form, policy), form.terminal_edges).prod(-1)  # [Z]
  utility = tree.gather(jnp.concatenate(game.utility), form.terminal_history)  # [Z, P]
  return (reach[:, None] * utility).sum(0)


def _chance(game) -> jax.Array:
  """`[Z]` chance's reach of each terminal."""
  table = jnp.concatenate([game.chance_table.reshape(-1), jnp.ones((1,), game.chance_table.dtype)])
  return tree.gather(table, game.sequence_form.terminal_chance).prod(-1)


def _utility(game, player: int) -> jax.Array:
  """`[Z]` `player`'s utility at each terminal."""
  return tree.gather(jnp.concatenate(game.utility)[:, player], game.sequence_form.terminal_history)


def _terminal_values(form, x: jax.Array, weight: jax.Array, player: int) -> jax.Array:
  """`[Z + 1]` each terminal's `weight` (chance reach times `player`'s utility) times the
  other players' realization weights there, then a 0 that padding reads."""
  edges = form.terminal_edges
  value = weight
  for other in range(edges.shape[1]):
    if other != player:
      value = value * tree.gather(x, edges[:, other])
  # Computed once for all levels: XLA's CPU backend runs gathers fused into a reduction slowly.
  return jax.lax.optimization_barrier(jnp.concatenate([value, jnp.zeros((1,), x.dtype)]))


def _bottom_up(form, terminal: jax.Array, player: int, choose) -> list[tuple[jax.Array, jax.Array]]:
  """Per level of `player`, deepest first: counterfactual values `q` (`[N, A]`)
  of its edges given the terminals' values (`[Z + 1]`, `_terminal_values`), and
  `choose(level, q)` (`[N]`), the infosets' values that the level above reads."""
  values = jnp.zeros((1,), terminal.dtype)  # position 0 reads zero
  levels = []
  for level in form.levels[player]:
    shape = level.children.shape[:2]  # [N, A]
    sums = [tree.gather(terminal, table).sum(-1) for table in level.terminals]  # [n_k] per bucket
    if not sums:
      own = jnp.zeros(shape, terminal.dtype)
    elif level.cells is None:  # one table, one row per edge in order
      own = sums[0].reshape(shape)
    else:
      own = tree.gather(jnp.concatenate([*sums, jnp.zeros((1,), terminal.dtype)]), level.cells).reshape(shape)
    q = own + tree.gather(values, level.children).sum(-1)  # [N, A]
    v = choose(level, q)
    levels.append((q, v))
    values = jnp.concatenate([values, v])
  return levels


# Host side: the structure, from the compiler's per-depth NumPy arrays.


def build(row, player, parent, widths, legal_actions, infoset_player, num_actions, num_players, chance_shape):
  """The `SequenceForm` of a compiled tree (per-depth `row`, `player`, `parent`
  and `widths` as in `CompiledGame`, NumPy), or None when the game lacks perfect
  recall or the padded tables would be too large."""
  num_infosets = len(infoset_player)
  paths = _paths(
    row, player, parent, widths, legal_actions, num_infosets, num_actions, num_players, chance_shape
  )
  if paths is None:
    return None
  parent_edge, history_count, terminal_history, terminal_sequence, terminal_chance = paths
  num_terminals = len(terminal_sequence)
  level, ancestors = _own_levels(parent_edge, num_infosets, num_actions)
  levels, positions = [], []
  padded, limit = 0, _MAX_PADDING * num_players * (num_terminals + num_infosets) + 4096
  for p in range(num_players):
    tables = _player_tables(
      p, infoset_player, level, parent_edge, terminal_sequence, num_actions, limit - padded
    )
    if tables is None:
      return None
    player_levels, position, size = tables
    padded += size
    levels.append(player_levels)
    positions.append(_int32(position))
  return SequenceForm(
    ancestors=_int32(ancestors),
    parent_edge=_int32(parent_edge),
    history_count=_int32(history_count),
    terminal_history=_int32(terminal_history),
    terminal_edges=_int32(terminal_sequence.reshape(num_terminals, num_players)),
    terminal_chance=_int32(terminal_chance),
    levels=tuple(levels),
    position=tuple(positions),
  )


def _paths(row, player, parent, widths, legal_actions, num_infosets, num_actions, num_players, chance_shape):
  """One walk down the depths, following each history's path: (each infoset's parent edge [I], its
  histories [I], and per terminal its history [T], each player's last edge [T, P] and the chance-table
  entries on its path [T, K] (padded with the table's size)), or None without perfect recall."""
  edges = num_infosets * num_actions  # E
  chance_pad = chance_shape[0] * chance_shape[1]
  starts = np.concatenate([[0], np.cumsum([len(r) for r in row])])
  sequence = np.full((1, num_players), edges, np.int32)  # [H_d, P]: last edge of each player
  # [H_d, K]: the chance-table entries on the path so far, packed to the left (chance_pad after them).
  chance_path = np.zeros((1, 0), np.int32)
  chance_count = np.zeros(1, np.int32)  # [H_d]: how many
  parent_edge = np.full(num_infosets, -1, np.int64)
  history_count = np.zeros(num_infosets, np.int64)
  terminal_history, terminal_sequence, terminal_chance = [], [], []
  for d, (row_d, player_d) in enumerate(zip(row, player, strict=True)):
    decision = np.nonzero(player_d >= 0)[0]
    infoset = row_d[decision]
    own = sequence[decision, player_d[decision]]
    known = parent_edge[infoset]
    parent_edge[infoset] = own
    if np.any((known >= 0) & (known != own)) or np.any(parent_edge[infoset] != own):
      return None  # two histories of one infoset differ in their player's own past: imperfect recall
    history_count += np.bincount(infoset, minlength=num_infosets)
    terminal = np.nonzero(player_d == base.TERMINAL_PLAYER)[0]
    terminal_history.append((starts[d] + terminal).astype(np.int32))
    terminal_sequence.append(sequence[terminal])
    terminal_chance.append(chance_path[terminal])
    if d + 1 == len(row):
      break
    up, slot = np.divmod(parent[d + 1], np.int32(widths[d]))  # [H_{d+1}]: parent index and slot
    sequence = sequence[up]
    acts = np.nonzero(player_d[up] >= 0)[0]
    infoset = row_d[up[acts]]
    sequence[acts, player_d[up[acts]]] = infoset * num_actions + legal_actions[infoset, slot[acts]]
    chance_path, chance_count = chance_path[up], chance_count[up]
    chance = np.nonzero(player_d[up] == base.CHANCE_PLAYER)[0]
    if len(chance):
      if chance_count[chance].max() == chance_path.shape[1]:
        chance_path = np.pad(chance_path, ((0, 0), (0, 1)), constant_values=chance_pad)
      distribution = row_d[up[chance]] - num_infosets - 1
      chance_path[chance, chance_count[chance]] = distribution * chance_shape[1] + slot[chance]
      chance_count[chance] += 1
  del sequence, chance_path, chance_count
  if np.any(parent_edge < 0):
    return None
  width = max(c.shape[1] for c in terminal_chance)
  terminal_chance = np.concatenate(
    [np.pad(c, ((0, 0), (0, width - c.shape[1])), constant_values=chance_pad) for c in terminal_chance]
  )
  return (
    parent_edge, history_count, np.concatenate(terminal_history), np.concatenate(terminal_sequence),
    terminal_chance,
  )  # fmt: skip


def _own_levels(parent_edge, num_infosets: int, num_actions: int):
  """(each infoset's own decision level [I]: 0 after the empty sequence, else one more than its
  parent's; its ancestors [I, depth - 1]: its parent edge, then that edge's infoset's parent edge, ...,
  E past the first)."""
  edges = num_infosets * num_actions
  parent_infoset = np.where(parent_edge < edges, parent_edge // num_actions, -1)
  level = np.zeros(num_infosets, np.int64)
  for _ in range(num_infosets + 1):
    updated = np.where(parent_infoset >= 0, level[parent_infoset] + 1, 0)
    if np.array_equal(updated, level):
      break
    level = updated
  depth = int(level.max(initial=0)) + 1
  ancestors = [parent_edge][: depth - 1]
  edge_parent = np.concatenate([parent_edge, [edges]])  # by infoset; the last entry maps E to E
  for _ in range(depth - 2):
    previous = ancestors[-1]
    ancestors.append(
      np.where(previous < edges, edge_parent[np.minimum(previous // num_actions, num_infosets)], edges)
    )
  ancestors = np.stack(ancestors, axis=1) if ancestors else np.zeros((num_infosets, 0), np.int64)
  return level, ancestors


def _player_tables(
  p: int, infoset_player, level, parent_edge, terminal_sequence, num_actions: int, room: int
):
  """(Player p's `Level`s (bottom up), each infoset's position in p's order (level, row), the entries
  of their padded tables), or None as soon as those entries exceed `room`."""
  num_infosets, num_terminals = len(infoset_player), len(terminal_sequence)
  edges = num_infosets * num_actions
  depth = int(level.max(initial=0)) + 1
  mine = infoset_player == p
  order = [np.nonzero(mine & (level == k))[0] for k in reversed(range(depth))]
  order = [infosets for infosets in order if len(infosets)]
  flat_order = np.concatenate(order) if order else np.zeros(0, np.int64)
  position = np.full(num_infosets, len(flat_order), np.int64)
  position[flat_order] = np.arange(len(flat_order))
  # Terminals by their last p-edge, numbered in p's order (level, row, action): each level's are
  # one run of `cell`, sorted (stably: by terminal within an edge).
  own_edge = terminal_sequence[:, p]
  terminals = np.nonzero(own_edge < edges)[0].astype(np.int32)
  cell = position[own_edge[terminals] // num_actions] * num_actions + own_edge[terminals] % num_actions
  order_by_cell = np.argsort(cell, kind='stable')
  cell, terminals = cell[order_by_cell], terminals[order_by_cell]
  del order_by_cell
  # And p's infosets by their parent edge.
  children = np.nonzero(mine & (parent_edge < edges))[0]
  player_levels, first, size = [], 0, 0  # `first`: the level's first row in p's order
  for infosets in order:
    row_of = np.full(num_infosets, -1, np.int64)
    row_of[infosets] = np.arange(len(infosets))
    num_cells = len(infosets) * num_actions
    run = slice(*np.searchsorted(cell, [first * num_actions, first * num_actions + num_cells]))
    tables, cells = _bucketed(cell[run] - first * num_actions, terminals[run], num_cells, num_terminals)
    child_table = _grouped(parent_edge[children], 1 + position[children], row_of, num_actions, len(infosets))
    first += len(infosets)
    size += sum(table.size for table in tables) + child_table.size
    if size > room:
      return None
    player_levels.append(
      Level(
        infosets=_int32(infosets),
        children=_int32(child_table),
        terminals=tuple(_int32(table) for table in tables),
        cells=None if cells is None else _int32(cells),
      )
    )
  return tuple(player_levels), position, size


def _int32(array) -> jax.Array:
  """On the device, converted on the host (`jnp.asarray` would compile a program per shape) into
  aligned memory, which a CPU uses in place (`memory.aligned`)."""
  return jax.device_put(memory.aligned(array, np.int32, copy=False))


def _grouped(edge, item, row_of, num_actions, num_rows):
  """`[num_rows, A, M]` table of the `item`s grouped by their edge (`infoset * A + action`, kept
  where `row_of[infoset] >= 0`) in order, 0 elsewhere."""
  infoset, action = edge // num_actions, edge % num_actions
  keep = np.nonzero(row_of[infoset] >= 0)[0]
  cell = row_of[infoset[keep]] * num_actions + action[keep]
  counts = np.bincount(cell, minlength=num_rows * num_actions)
  order = np.argsort(cell, kind='stable')
  rank = np.arange(len(order)) - np.repeat(np.cumsum(counts) - counts, counts)
  table = np.zeros((num_rows * num_actions, max(int(counts.max(initial=0)), 1)), np.int32)
  table[cell[order], rank] = item[keep][order]
  return table.reshape(num_rows, num_actions, -1)


def _bucketed(cell, item, num_cells, padding):
  """The `item`s (terminals) grouped by their `cell` (an edge: `row * A + action`; sorted), in
  buckets of edges with similar counts so that padding stays small: per bucket k a `[n_k, w_k]`
  table (`padding` fills), and `[num_cells]` cells: where each edge's row is in the buckets' rows
  one after the other (their total, which reads a 0, for an edge in none). One table of every
  edge in order and None for the cells when that costs about as much (small levels)."""
  if not len(cell):
    return [], None
  counts = np.bincount(cell, minlength=num_cells)
  rank = np.arange(len(cell)) - np.repeat(np.cumsum(counts) - counts, counts)  # within its edge
  widths = _widths(counts)
  if widths is None:
    table = np.full((num_cells, int(counts.max())), padding, np.int32)
    table[cell, rank] = item
    return [table], None
  bucket = np.searchsorted(widths, counts)  # [cells]: the narrowest bucket wide enough
  bucket[counts == 0] = len(widths)
  cells = np.empty(num_cells, np.int64)
  tables, offset = [], 0
  row = np.empty(num_cells, np.int64)  # a cell's row in its bucket's table
  for k, width in enumerate(widths):
    members = np.nonzero(bucket == k)[0]
    row[members] = np.arange(len(members))
    cells[members] = offset + np.arange(len(members))
    offset += len(members)
    tables.append(np.full((len(members), int(width)), padding, np.int32))
  cells[counts == 0] = offset
  which = bucket[cell]
  for k, table in enumerate(tables):
    mine = which == k
    table[row[cell[mine]], rank[mine]] = item[mine]
  return tables, cells


def _widths(counts: np.ndarray) -> np.ndarray | None:
  """The bucket widths (ascending) that minimise the padded entries plus `_OVERHEAD` for each
  bucket (its gather) and for the gather that puts the edges in order; None when one table of
  every edge padded to the widest costs no more. A dynamic program over candidate widths: the
  edges' distinct counts, or a grid 5% apart when there are many."""
  positive = np.sort(counts[counts > 0])
  candidates = np.unique(positive)
  if len(candidates) > 256:
    steps = int(np.ceil(np.log(candidates[-1] / candidates[0]) / np.log(1.05))) + 1
    grid = np.ceil(candidates[0] * 1.05 ** np.arange(steps)).astype(np.int64)
    candidates = np.unique(np.append(grid[grid < candidates[-1]], candidates[-1]))
  below = np.searchsorted(positive, candidates, side='right')  # edges that fit each candidate
  cost = np.zeros(len(candidates) + 1)  # cost[j + 1]: the best buckets for the edges up to candidate j
  start = np.zeros(len(candidates), np.int64)
  fitted = np.concatenate([[0], below])
  for j, width in enumerate(candidates):
    options = cost[: j + 1] + (below[j] - fitted[: j + 1]) * width + _OVERHEAD
    start[j] = np.argmin(options)
    cost[j + 1] = options[start[j]]
  single = len(counts) * candidates[-1] + _OVERHEAD
  if single <= cost[-1] + _OVERHEAD + len(counts):
    return None
  widths, j = [], len(candidates) - 1
  while j >= 0:
    widths.append(candidates[j])
    j = start[j] - 1
  return np.asarray(widths[::-1])
