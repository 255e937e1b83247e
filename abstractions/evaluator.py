"""The 5-, 6- and 7-card hold'em hand evaluator on JAX arrays: `abstractions.ranking`'s (where the
method is described), the same code run on JAX arrays, so that it works under jit and vmap; and `JAX`,
the array module (`abstractions.arrays`) that runs the card arithmetic on JAX arrays.

Card ids are `4 * rank + suit` (rank 0 = deuce ... 12 = ace), as in phevaluator.
`hand_rank` returns one of the 7,462 distinct five-card hand values, 0 = 7-5-4-3-2
offsuit ... 7461 = royal flush, so it equals `7462 - phevaluator.evaluate_cards`.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from abstractions import ranking
from abstractions.arrays import ArrayModule
from abstractions.ranking import CATEGORY_STARTS


def hand_rank(cards: jax.Array) -> jax.Array:
  """Strength of the best five-card hand within each row of cards [..., 5|6|7].

  Returns int32 [...] in 0..7461, higher is stronger, equal is a tie. The cards of
  a row must be distinct ids in 0..51. Pure JAX: works under jit and vmap.
  """
  return ranking.hand_rank(cards, JAX)


def materialise(tree):
  """Returns `tree` unchanged, computed into memory before its consumers run.

  XLA:CPU fuses index arithmetic into the gather that consumes it, and the fused
  loop runs scalar, far slower than computing the indices vectorised first. A
  while loop whose trip count the compiler cannot see (zero at run time) keeps the
  two apart; on other backends it costs one scalar test.
  """
  leaves = jax.tree.leaves(tree)
  if not leaves or leaves[0].size == 0:
    return tree
  start = leaves[0].reshape(-1)[0] >> 31  # 0 for the non-negative indices used here
  body = lambda s: (s[0] + 1, jax.tree.map(lambda x: jnp.where(s[0] > 0, x + 1, x), s[1]))
  return jax.lax.while_loop(lambda s: s[0] < 0, body, (start, tree))[1]


JAX = ArrayModule(jnp, jax.lax.population_count, jax.lax.div, materialise, tables=False)


def hand_category(rank: jax.Array) -> jax.Array:
  """Category 0 (high card) .. 8 (straight flush) of hand values [...] from `hand_rank`."""
  return (jnp.searchsorted(jnp.asarray(CATEGORY_STARTS[1:]), rank, side='right')).astype(jnp.int32)
