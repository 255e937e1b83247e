"""Exact evaluation of a policy as array code: best responses, NashConv,
exploitability and expected values. Every public function checks its
arguments (`checks`: a policy of the wrong shape fails with a message naming
both shapes; one of another float dtype is cast to the game's) and runs
jitted, so it is quick called eagerly and nests under a caller's `jit` or
`vmap`.

Conventions follow OpenSpiel: `nash_conv` is the sum over players of
(best-response value - on-policy value); `exploitability` is NashConv divided
by the number of players (NashConv / 2 for two players, in the game's own
utility units). For general-sum games NashConv is the meaningful number.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp

from jaxcfr import checks, sequence_form, tree
from jaxcfr.compiled import CompiledGame


def expected_values(game: CompiledGame, policy: jax.Array) -> jax.Array:
  """`[P]` expected utility of each player when all play `policy` (`[I, A]`)."""
  return _expected_values(game, checks.check_policy(game, policy))


def best_response_value(game: CompiledGame, policy: jax.Array, player: int) -> jax.Array:
  """`[]` value of `player`'s best response when the others play `policy`
  (over sequences when the game has a `sequence_form`, else over histories)."""
  return _best_response_value(game, checks.check_policy(game, policy), checks.check_player(game, player))


def best_response_policy(game: CompiledGame, policy: jax.Array, player: int) -> jax.Array:
  """`[I, A]`: `policy` with `player`'s rows replaced by a pure best response."""
  return _best_response_policy(game, checks.check_policy(game, policy), checks.check_player(game, player))


def best_response_values(game: CompiledGame, policy: jax.Array) -> jax.Array:
  """`[P]` best-response value of each player against the others' `policy`."""
  return _best_response_values(game, checks.check_policy(game, policy))


def nash_conv(game: CompiledGame, policy: jax.Array) -> jax.Array:
  """Sum over players of what a unilateral best response gains."""
  return _nash_conv(game, checks.check_policy(game, policy))


def exploitability(game: CompiledGame, policy: jax.Array) -> jax.Array:
  """NashConv / number of players (OpenSpiel's convention)."""
  return _nash_conv(game, checks.check_policy(game, policy)) / game.num_players


# The public functions above check their arguments, then call these jitted
# bodies: called eagerly, one evaluation compiles once per game shape (and
# player) and reuses the program, instead of dispatching hundreds of small
# operations one by one (far slower, even for Leduc); inside a
# caller's `jit` or `vmap` they nest as any jitted function does. The game is
# an argument (its sizes are static pytree fields), the player static.


@jax.jit
def _expected_values(game: CompiledGame, policy: jax.Array) -> jax.Array:
  if game.sequence_form is not None:
    return sequence_form.expected_values(game, policy)
  return tree.expected_values(game, policy)


@functools.partial(jax.jit, static_argnames='player')
def _best_response_value(game: CompiledGame, policy: jax.Array, player: int) -> jax.Array:
  if game.sequence_form is not None:
    return sequence_form.best_response_value(game, policy, player)
  value, _ = _best_response(game, policy, player)
  return value


@functools.partial(jax.jit, static_argnames='player')
def _best_response_policy(game: CompiledGame, policy: jax.Array, player: int) -> jax.Array:
  _, choice = _best_response(game, policy, player)
  rows = (game.infoset_player == player)[:, None]
  pure = jax.nn.one_hot(choice, game.num_actions, dtype=policy.dtype)
  return jnp.where(rows, pure, policy)


@jax.jit
def _best_response_values(game: CompiledGame, policy: jax.Array) -> jax.Array:
  return jnp.stack([_best_response_value(game, policy, p) for p in range(game.num_players)])


@jax.jit
def _nash_conv(game: CompiledGame, policy: jax.Array) -> jax.Array:
  return (_best_response_values(game, policy) - _expected_values(game, policy)).sum()


def _best_response(game: CompiledGame, policy: jax.Array, player: int) -> tuple[jax.Array, jax.Array]:
  """Best-response value of `player` and its action id per infoset (`[I]` int32).

  Bottom-up: at `player`'s infosets, Q(I, a) = sum over h in I of the
  opponents' and chance's reach of h times v(h.a), and every h in I takes
  the argmax. When an infoset spans several depths its Q is only complete
  after a whole pass, so the pass repeats with the previous pass's choices
  until the deepest own decisions have propagated to the root (one pass
  when every infoset lies at one depth).
  """
  probs = tree.transition_probs(game, policy)
  acting = [game.player[d] == player for d in range(game.num_depths)]
  factors = [jnp.where(a[:, None], 1, p)[..., None] for a, p in zip(acting, probs, strict=True)]
  reach = [r[:, 0] for r in tree.top_down(game, factors, jnp.ones((1,), policy.dtype))]
  num_infosets = game.num_infosets
  num_slots = game.legal_actions.shape[-1]
  width = max(*game.widths, num_slots)
  slot_legal = game.legal_actions < game.num_actions  # [I, L]
  legal = jnp.zeros((num_infosets + 1, width), bool).at[:-1, :num_slots].set(slot_legal)

  def one_pass(previous_choice):
    q = jnp.zeros((num_infosets + 1, width), policy.dtype)
    choice_ext = jnp.concatenate([previous_choice, jnp.zeros((1,), jnp.int32)])
    blocks = {}  # depth -> [I_d] choices (members path)
    values = game.utility[-1][:, player]
    for d in reversed(range(game.num_depths - 1)):
      below = tree.child_values(game, d, values)  # [H_d, W_d]
      on_policy = game.utility[d][:, player] + (probs[d] * below).sum(-1)
      if d not in game.player_depths[player]:
        values = on_policy
        continue
      w = game.widths[d]
      weighted = jnp.where(acting[d], reach[d], 0)[:, None] * below  # [H_d, W_d]
      if game.members:  # infosets of depth d are a block: Q by gather, choose here
        start, stop = game.infoset_offsets[d], game.infoset_offsets[d + 1]
        q_d = tree.depth_infoset_sums(game, d, weighted)  # [I_d, W_d]
        best = jnp.argmax(jnp.where(legal[start:stop, :w], q_d, -jnp.inf), axis=-1)
        taken = best[jnp.clip(game.row[d] - start, 0, stop - start - 1)]
        blocks[d] = best.astype(jnp.int32)
      else:
        q_d = jax.ops.segment_sum(weighted, game.row[d], num_infosets + 1)  # [I + 1, W_d]
        q = q.at[:, :w].add(q_d)
        if game.depth_consistent:
          taken = jnp.argmax(jnp.where(legal[:, :w], q_d, -jnp.inf), axis=-1)[game.row[d]]
        else:
          taken = choice_ext[game.row[d]]
      best_value = jnp.take_along_axis(below, jnp.minimum(taken, w - 1)[:, None], axis=-1)[:, 0]
      values = jnp.where(acting[d], best_value, on_policy)
    choice = jnp.argmax(jnp.where(legal, q, -jnp.inf), axis=-1)[:-1].astype(jnp.int32)
    if game.members:
      offsets = game.infoset_offsets
      choice = jnp.concatenate(
        [blocks.get(d, choice[offsets[d] : offsets[d + 1]]) for d in range(game.num_depths)]
      )
    return values[0], choice

  initial = jnp.zeros((num_infosets,), jnp.int32)  # slot 0 is always legal
  if game.depth_consistent:
    value, choice = one_pass(initial)
  else:
    # Infosets of own-sequence length k are exact after (max length - k + 1) passes.
    choice = jax.lax.fori_loop(0, game.num_depths, lambda _, c: one_pass(c)[1], initial)
    value, choice = one_pass(choice)
  action = jnp.take_along_axis(game.legal_actions, choice[:, None], axis=1)[:, 0]
  return value, action
