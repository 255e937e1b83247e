"""Top-down and bottom-up passes over a `CompiledGame` (shapes as in `compiler`).

A policy is `[I, A]`: probabilities over action ids, zero on illegal actions.
Inside the passes, decision histories index their children by slot (see
`compiler`); `to_slots` and `to_actions` convert between the two layouts.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from jaxcfr.compiled import CompiledGame


def gather(values: jax.Array, index: jax.Array) -> jax.Array:
  """`values[index]` along axis 0 for indices the compiler guarantees in bounds
  (skips XLA's clamping, which costs measurably in these gather-bound passes)."""
  return values.at[index].get(mode='promise_in_bounds')


def segment_sum(values: jax.Array, rows: jax.Array, num_segments: int) -> jax.Array:
  """`[num_segments, ...]` sums of `values` (`[N, ...]`) by `rows` (`[N]` int); rows outside
  `[0, num_segments)` drop out. The same bits on every backend and every run.

  A scatter-add (`jax.ops.segment_sum`) is deterministic on CPUs, which run it as a loop
  over the rows in order, so CPUs keep it (the cheapest there). A GPU runs it with atomic adds
  that land in a varying order, changing float sums from run to run: every other backend takes
  `sorted_segment_sum`, whose order of additions is fixed by the data alone. Chosen when the
  program is lowered for its platform (`jax.lax.platform_dependent`).
  """
  if values.shape[0] == 0:
    return jnp.zeros((num_segments, *values.shape[1:]), values.dtype)
  return jax.lax.platform_dependent(
    values,
    rows,
    cpu=lambda values, rows: jax.ops.segment_sum(values, rows, num_segments),
    default=lambda values, rows: sorted_segment_sum(values, rows, num_segments),
  )


def sorted_segment_sum(values: jax.Array, rows: jax.Array, num_segments: int) -> jax.Array:
  """`segment_sum` with no scatter at all, deterministic on any backend: a stable sort by row, a
  segmented prefix sum (`associative_scan`, whose tree of additions depends only on N), and a
  gather of each segment's last entry."""
  if values.shape[0] == 0:
    return jnp.zeros((num_segments, *values.shape[1:]), values.dtype)
  order = jnp.argsort(rows, stable=True)
  rows, values = rows[order], values[order]
  starts = jnp.concatenate([jnp.ones((1,), bool), rows[1:] != rows[:-1]])  # [N]: first of its segment

  def combine(left, right):
    left_start, left_sum = left
    right_start, right_sum = right
    restart = right_start.reshape(right_start.shape + (1,) * (right_sum.ndim - right_start.ndim))
    return left_start | right_start, jnp.where(restart, right_sum, left_sum + right_sum)

  _, running = jax.lax.associative_scan(combine, (starts, values))  # [N, ...]: sums within each segment
  segments = jnp.arange(num_segments, dtype=rows.dtype)
  last = jnp.maximum(jnp.searchsorted(rows, segments, side='right') - 1, 0)  # [S]: each segment's last entry
  found = rows[last] == segments
  return jnp.where(found.reshape(found.shape + (1,) * (values.ndim - 1)), running[last], 0)


def to_slots(game: CompiledGame, values: jax.Array) -> jax.Array:
  """`[I, A, ...]` by action id -> `[I, L, ...]` by legal slot (0 past the legal ones)."""
  padded = jnp.concatenate([values, jnp.zeros_like(values[:, :1])], axis=1)
  index = game.legal_actions.reshape(game.legal_actions.shape + (1,) * (values.ndim - 2))
  return jnp.take_along_axis(padded, index, axis=1)


def to_actions(game: CompiledGame, values: jax.Array, rows: jax.Array | None = None) -> jax.Array:
  """`[I, L, ...]` by legal slot -> `[I, A, ...]` by action id (0 on illegal actions); with
  `rows` (`[N]` infoset indices), `[N, L, ...]` rows of those infosets -> `[N, A, ...]`."""
  padded = jnp.concatenate([values, jnp.zeros_like(values[:, :1])], axis=1)
  slots = game.action_slot if rows is None else game.action_slot[rows]
  index = slots.reshape(slots.shape + (1,) * (values.ndim - 2))
  return jnp.take_along_axis(padded, index, axis=1)


def transition_table(game: CompiledGame, policy: jax.Array) -> jax.Array:
  """`[I + 1 + C, width]`, the rows `CompiledGame.row` indexes: the policy by slot
  at each infoset, a zero row (terminals), the chance distributions."""
  slots = to_slots(game, policy)  # [I, L]
  chance = game.chance_table.astype(policy.dtype)  # [C, W_c]
  width = max(*game.widths, slots.shape[1], chance.shape[1])
  return jnp.concatenate(
    [
      jnp.pad(slots, ((0, 1), (0, width - slots.shape[1]))),
      jnp.pad(chance, ((0, 0), (0, width - chance.shape[1]))),
    ]
  )


def transition_probs(game: CompiledGame, policy: jax.Array) -> list[jax.Array]:
  """Per depth `[H_d, W_d]`: the policy's probabilities at decision histories
  (by slot), chance probabilities at chance histories, zeros at terminals."""
  table = transition_table(game, policy)
  return [gather(table[:, : game.widths[d]], game.row[d]) for d in range(game.num_depths)]


def top_down(game: CompiledGame, factors: list[jax.Array], root: jax.Array) -> list[jax.Array]:
  """Reach products per depth.

  Args:
    factors: per depth `[H_d, W_d, K]`, the factor each edge multiplies K
      reach channels by.
    root: `[K]` reach of the root.

  Returns:
    per depth `[H_d, K]`.
  """
  reach = [root[None, :]]
  for d in range(1, game.num_depths):
    edges = reach[-1][:, None, :] * factors[d - 1]  # [H_{d-1}, W_{d-1}, K]
    reach.append(gather(edges.reshape(-1, edges.shape[-1]), game.parent[d]))
  return reach


def child_values(game: CompiledGame, d: int, values_below: jax.Array) -> jax.Array:
  """`[H_d, W_d, ...]` values of each child of depth d (zero where absent)."""
  padded = jnp.concatenate([values_below, jnp.zeros_like(values_below[:1])])
  return gather(padded, game.child[d])


def expected_values(game: CompiledGame, policy: jax.Array) -> jax.Array:
  """`[P]` expected utility of each player when everyone plays `policy`."""
  probs = transition_probs(game, policy)
  return jnp.stack([player_values(game, probs, p)[0] for p in range(game.num_players)])


def player_values(game: CompiledGame, probs: list[jax.Array], player: int) -> jax.Array:
  """`[H_0]` value of the root for `player` under per-depth transition `probs`
  (one scalar per history: faster on CPU than a `[H_d, P]` pass)."""
  values = game.utility[-1][:, player]
  for d in reversed(range(game.num_depths - 1)):
    values = game.utility[d][:, player] + (probs[d] * child_values(game, d, values)).sum(-1)
  return values


def fit_columns(rows: jax.Array, num_actions: int) -> jax.Array:
  """`[H, W, ...]` cut or zero-padded to `[H, A, ...]`."""
  width = rows.shape[1]
  if width >= num_actions:
    return rows[:, :num_actions]
  return jnp.pad(rows, [(0, 0), (0, num_actions - width)] + [(0, 0)] * (rows.ndim - 2))


def depth_infoset_sums(game: CompiledGame, d: int, rows: jax.Array) -> jax.Array:
  """Sums `[H_d, ...]` rows over the histories of each infoset of depth d.

  Returns `[I_d, ...]` for the infosets `infoset_offsets[d]:infoset_offsets[d+1]`
  (needs `game.members`).
  """
  padded = jnp.concatenate([rows, jnp.zeros_like(rows[:1])])
  return gather(padded, game.members[d]).sum(axis=1)


def infoset_sums(game: CompiledGame, rows: dict[int, jax.Array], width: int) -> jax.Array:
  """`[I, width, ...]` sums over each infoset's histories of per-depth `[H_d, W_d, ...]` rows.

  Depths missing from `rows` contribute zeros; columns are cut or padded to
  `width`. A gather per depth when the game has `members`, one segment-sum
  otherwise.
  """
  sample = next(iter(rows.values()))
  if game.members:
    blocks = []
    for d in range(game.num_depths):
      count = game.infoset_offsets[d + 1] - game.infoset_offsets[d]
      if d in rows:
        blocks.append(fit_columns(depth_infoset_sums(game, d, rows[d]), width))
      elif count:
        blocks.append(jnp.zeros((count, width, *sample.shape[2:]), sample.dtype))
    return jnp.concatenate(blocks)
  depths = sorted(rows)
  sums = jax.ops.segment_sum(
    jnp.concatenate([fit_columns(rows[d], width) for d in depths]),
    jnp.concatenate([game.row[d] for d in depths]),  # chance rows (> I) drop out
    num_segments=game.num_infosets + 1,
  )
  return sums[:-1]
