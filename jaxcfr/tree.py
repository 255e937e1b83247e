"""Top-down and bottom-up passes over a `CompiledGame` (shapes as in `compiler`).

A policy is `[I, A]`: probabilities over action ids, zero on illegal actions.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from jaxcfr.compiler import CompiledGame


def transition_probs(game: CompiledGame, policy: jax.Array) -> list[jax.Array]:
  """Per depth `[H_d, W_d]`: the policy's action probabilities at decision
  histories, chance probabilities at chance histories, zeros at terminals."""
  width = max(*game.widths, game.num_actions)
  table = jnp.zeros((game.num_infosets + 1, width), policy.dtype)  # last row: non-decision histories
  table = table.at[:-1, : game.num_actions].set(policy)
  return [
      game.chance_prob[d] + table[:, : game.widths[d]][game.infoset[d]] for d in range(game.num_depths)
  ]


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
    reach.append(edges.reshape(-1, edges.shape[-1])[game.parent[d]])
  return reach


def child_values(game: CompiledGame, d: int, values_below: jax.Array) -> jax.Array:
  """`[H_d, W_d, ...]` values of each child of depth d (zero where absent)."""
  return jnp.take(values_below, game.child[d], axis=0, mode='fill', fill_value=0)


def expected_values(game: CompiledGame, policy: jax.Array) -> jax.Array:
  """`[P]` expected utility of each player when everyone plays `policy`."""
  probs = transition_probs(game, policy)
  values = game.utility[-1]
  for d in reversed(range(game.num_depths - 1)):
    below = child_values(game, d, values)  # [H_d, W_d, P]
    values = game.utility[d] + jnp.einsum('hw,hwp->hp', probs[d], below)
  return values[0]
