"""Checks of what a user hands the public entry points, with one-line messages.

Shapes and dtypes are static, so every check here runs while a function is
traced: it raises the same `CheckError` eagerly and under `jit` or `vmap`
(where it sees the unbatched shapes), before XLA would fail with a shape
message deep in a trace. The comparisons are chex's; the messages are ours.

    check_policy(game, policy)       # [I, A] float -> the policy in the game's dtype
    check_player(game, player)       # a player index -> the same, as a Python int
    check_state(state, like)         # a state pytree against one of known shapes
"""

from __future__ import annotations

import operator

import chex
import jax
import jax.numpy as jnp
import numpy as np

from jaxcfr.compiled import CompiledGame


class CheckError(ValueError):
  """An argument whose structure, shape or dtype does not fit the game or the
  solver; the message names what was given and what was expected."""


def check_policy(game: CompiledGame, policy, what: str = 'policy') -> jax.Array:
  """`policy` as a `[I, A]` array of the game's float dtype, or a `CheckError`.

  A policy of another float dtype is cast to the game's (the game's dtype,
  chosen at `compile_game`, sets the precision of every evaluation; NumPy
  builds float64 by default); an integer or boolean policy is refused, as it
  is more likely action indices or a mask than probabilities.

  Args:
    game: the compiled game.
    policy: `[I, A]` probabilities by action id (an array, NumPy array or nested lists).
    what: how the message names the argument.
  """
  if not hasattr(policy, 'shape'):
    policy = jnp.asarray(policy)
  expected = (game.num_infosets, game.num_actions)
  shape = tuple(policy.shape)
  try:
    chex.assert_shape(policy, expected)
  except AssertionError:
    raise CheckError(
      f'{what} has shape {shape} but {game.name} needs {expected} ([num_infosets, num_actions])'
      + _shape_hint(shape, expected)
    ) from None
  dtype = jnp.result_type(policy)
  if not jnp.issubdtype(dtype, jnp.floating):
    raise CheckError(f'{what} has dtype {dtype}; a policy holds probabilities: pass a float array')
  return jnp.asarray(policy, game.dtype)


def check_player(game: CompiledGame, player) -> int:
  """`player` as a Python int in `0 .. P - 1`, or a `CheckError` (the player
  picks the program, so it cannot be a traced value)."""
  try:
    index = operator.index(player)
  except TypeError:
    raise CheckError(
      f'player must be a Python int from 0 to {game.num_players - 1}, got {_describe(player)}'
    ) from None
  if not 0 <= index < game.num_players:
    raise CheckError(f'player {index} is out of range: {game.name} has players 0 to {game.num_players - 1}')
  return index


def check_state(state, like, what: str = 'state') -> None:
  """Raises a `CheckError` naming the first field of `state` whose structure,
  shape or dtype differs from `like`'s.

  For a solver's training loop: `like` is a state of the shapes the solver
  gives this game, best found without allocating it,

      check_state(state, jax.eval_shape(solver.init, game))                 # full-width
      check_state(state, jax.eval_shape(lambda: solver.init(game, key)))    # sampled, deep

  so a state initialised for another game (or solver, or dtype) fails here
  with, for example, `state.cumulative_regret has shape (12, 2) but the
  solver's state for this game has (936, 3) (a state of another game?)`
  instead of inside the loop. Works on arrays and tracers (under `jit`) alike.

  Args:
    state: the state pytree handed in.
    like: a pytree of the expected structure whose leaves have `.shape` and
      `.dtype` (arrays or `jax.ShapeDtypeStruct`s).
    what: how the message names the argument.
  """
  try:
    chex.assert_trees_all_equal_structs(state, like)
  except AssertionError:
    raise CheckError(_structure_message(state, like, what)) from None
  try:
    chex.assert_trees_all_equal_shapes_and_dtypes(state, like)
  except AssertionError:
    pass
  else:
    return
  leaves = jax.tree_util.tree_flatten_with_path(state)[0]
  for (path, leaf), expected in zip(leaves, jax.tree_util.tree_leaves(like), strict=True):
    name = what + jax.tree_util.keystr(path)
    if np.shape(leaf) != tuple(expected.shape):
      raise CheckError(
        f"{name} has shape {np.shape(leaf)} but the solver's state for this game has "
        f'{tuple(expected.shape)} (a state of another game?)'
      )
    given, wanted = jnp.result_type(leaf), jnp.dtype(expected.dtype)
    if given != wanted:
      hint = ' (a game compiled with another dtype?)' if jnp.issubdtype(wanted, jnp.floating) else ''
      raise CheckError(f"{name} has dtype {given} but the solver's state for this game has {wanted}{hint}")
  raise CheckError(f"{what} does not match the solver's state for this game")  # not reached


def _shape_hint(shape: tuple, expected: tuple) -> str:
  if shape == expected[::-1]:
    return '; transposed?'
  if len(shape) > 2 and shape[-2:] == expected:
    return '; a batch of policies? jax.vmap over the leading axes'
  return ''


def _structure_message(state, like, what: str) -> str:
  """Names the node types when they differ at the root, else the first field
  present in one tree and not the other."""
  if type(state) is not type(like):
    return (
      f"{what} is a {_type_name(state)} but the solver's state is a {_type_name(like)} "
      '(a state of another solver?)'
    )
  given = [jax.tree_util.keystr(path) for path, _ in jax.tree_util.tree_flatten_with_path(state)[0]]
  wanted = [jax.tree_util.keystr(path) for path, _ in jax.tree_util.tree_flatten_with_path(like)[0]]
  for path in wanted:
    if path not in given:
      return f"{what}{path} is missing: the solver's state has it"
  for path in given:
    if path not in wanted:
      return f"{what}{path} is not part of the solver's state"
  return f"{what} does not have the structure of the solver's state ({_type_name(like)})"


def _type_name(tree) -> str:
  return type(tree).__name__


def _describe(value) -> str:
  if isinstance(value, jax.core.Tracer):
    return "a traced value (make it static: jax.jit(..., static_argnames='player'))"
  return repr(value)
