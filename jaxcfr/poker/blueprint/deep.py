"""Deep CFR (Brown et al. 2019) on the blueprint's abstract game: networks of hold'em features instead of
a bucket table, over sampled deals.

Each update t, for player 0 and then player 1 (the traverser p):

1. `traversals` deals (two hole pairs, the whole board) are drawn, and both players' advantage networks
   are queried on the features (`jaxcfr.poker.blueprint.features`) of every (decision row, deal) pair in one
   batched pass: the first layer splits into a card part (per seat, street and deal) and a node part
   (per row: street, chips, betting history), added before the ReLU, so the `[D, B, F]` inputs are
   never built. Regret matching of the predicted advantages (`deep_cfr.advantage_matching`; uniform
   before a network's first training) gives each row's strategy.
2. The same dense external-sampling pass as the tabular trainer (`mccfr.walk`) gives p's instant
   regrets at the rows it reaches; they enter p's advantage reservoir as `(key, t, regret / stack)`,
   and the opponent's strategies at the rows it reaches enter its strategy reservoir as
   `(key, t, sigma)`. A key is int32 `[8]`: the decision row and the seven cards (the acting player's
   hole pair, then the board), from which the features are rebuilt when a minibatch is drawn: 40 + 4A
   bytes a sample instead of 4 x 420.
3. p's advantage network (warm-started, or re-initialised with `reinitialize`) takes `advantage_steps`
   Adam steps on minibatches of its reservoir, the squared error weighted by the iteration
   (`deep_cfr.minibatch_loss` and `deep_cfr.fit`, the tested Deep CFR code).

The average strategy (`average_policy`): Deep CFR's strategy network per player, trained from scratch
on its strategy reservoir (masked softmax, t-weighted squared error), which the blueprint file holds;
or with `single` (SD-CFR), a reservoir of each player's advantage networks, played one network a hand
drawn by weight (SD-CFR's way of playing its average). The real-game policy of choice is Deep CFR's:
a query is one network evaluation whatever the number of iterations (LBR asks for all 1,326 hands at
every decision), and LBR's range queries see the average strategy itself, where with SD-CFR they see
the hand's sampled network (LBR then measures the sampled networks, not their average).

Reservoirs use Algorithm R (`deep_cfr.reservoir_add`); the state is a pytree of fixed-size arrays, so
`jaxcfr.train` checkpoints and resumes it bit-identically.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import NamedTuple

import jax
import jax.flatten_util
import jax.numpy as jnp
import numpy as np
import optax

from jaxcfr import algorithms, deep_cfr
from jaxcfr.poker import defaults
from jaxcfr.poker.blueprint import features as features_lib
from jaxcfr.poker.blueprint import mccfr
from jaxcfr.poker.blueprint.game import BlueprintGame, deal, showdown
from jaxcfr.poker.blueprint.tree import BettingTree
from jaxcfr.protocol import Solver

NAME = 'blueprint-deep-cfr'
SD_NAME = 'blueprint-sd-cfr'
KEY_WIDTH = 8  # row, hole pair, five board slots

DEFAULTS = dict(defaults.DEEP_BLUEPRINT)  # sized for a CPU of a few cores


def default_hyperparameters(backend: str | None = None) -> dict:
  """The defaults for `backend` (JAX's default backend if None): `DEFAULTS` on a CPU, the larger
  `defaults.DEEP_BLUEPRINT_ACCELERATOR` on a GPU or TPU."""
  backend = backend or jax.default_backend()
  return dict(DEFAULTS if backend == 'cpu' else defaults.DEEP_BLUEPRINT_ACCELERATOR)


@jax.tree_util.register_dataclass
@dataclasses.dataclass(frozen=True)
class NoBuckets:
  """The bucket function of a game whose policy needs none (networks see the cards): one bucket."""

  buckets: tuple[int, ...] = dataclasses.field(default=(1, 1, 1, 1), metadata={'static': True})
  fingerprint: str = dataclasses.field(default='none', metadata={'static': True})

  def buckets_of(self, hole: jax.Array, board: jax.Array) -> jax.Array:
    return jnp.zeros((*jnp.shape(hole)[:-1], 4), jnp.int32)


@jax.tree_util.register_dataclass
@dataclasses.dataclass(frozen=True)
class Nodes:
  """What the features need of each decision row (device arrays, a pytree)."""

  committed: jax.Array  # float32 [D, 2]
  shown: jax.Array  # int32 [D]: board cards visible on the row's street
  history: jax.Array  # float32 [D, 48] (or [D, 0] without the history option)
  seat_rows: tuple[jax.Array, jax.Array]  # int32: the decision rows of player 0, of player 1
  stack: float = dataclasses.field(metadata={'static': True})


def nodes_of(tree: BettingTree, board_cards: tuple[int, ...], history: bool = True) -> Nodes:
  """The rows' chips, visible board sizes and betting histories (host -> device)."""
  visible = np.cumsum(board_cards)
  decisions = tree.decisions
  table = features_lib.history_table(tree) if history else np.zeros((len(decisions), 0), np.float32)
  return Nodes(
    jnp.asarray(tree.committed[decisions], jnp.float32),
    jnp.asarray(visible[tree.street[decisions]], jnp.int32),
    jnp.asarray(table),
    tuple(jnp.asarray(np.flatnonzero(tree.player[decisions] == p), jnp.int32) for p in range(2)),
    float(tree.rules.stack),
  )


def row_features(game: BlueprintGame, nodes: Nodes, rows, hole, board) -> jax.Array:
  """Features `[..., F]` of decision rows `rows [...]` for the acting player's `hole [..., 2]` and the
  deal's `board [..., 5]` (cards past the row's street are hidden)."""
  board = _five(board)
  return features_lib.encode(
    hole, board, nodes.shown[rows], game.street[rows], nodes.committed[rows], game.player[rows],
    nodes.stack, nodes.history[rows] if nodes.history.shape[-1] else None,
  )  # fmt: skip


def _five(board: jax.Array) -> jax.Array:
  """Board `[..., n]` padded to five slots (short games deal fewer; padded slots are never shown)."""
  pad = 5 - board.shape[-1]
  return jnp.concatenate([board, jnp.zeros((*board.shape[:-1], pad), board.dtype)], -1) if pad else board


class DeepBlueprintState(NamedTuple):
  iteration: jax.Array  # [] int32: updates completed
  advantage_params: tuple  # per player: MLP parameters
  advantage_buffers: tuple  # per player: deep_cfr.Reservoir keyed by int32 [8]
  strategy_buffers: tuple  # per player (Deep CFR; empty for SD-CFR)
  snapshots: tuple  # per player (SD-CFR; empty for Deep CFR): a reservoir of its networks, keyed by iteration
  advantage_loss: jax.Array  # [2]: mean loss over the last tenth of each player's latest training
  key: jax.Array


def deep_blueprint_solver(
  nodes: Nodes, *, single: bool = False, snapshots: int = 64, **hyperparameters
) -> Solver:
  """Deep CFR on a `BlueprintGame` (see the module docstring); `nodes` from `nodes_of(tree, ...)`.
  Hyper-parameters: `DEFAULTS`' names (those of `deep-cfr`; defaults by backend,
  `default_hyperparameters`), validated by the registry's schema.

  `single`: Single Deep CFR (Steinberger 2019) instead: no strategy reservoirs nor networks; each
  player keeps a uniform reservoir of `snapshots` of its advantage networks (Algorithm R over the
  iterations, `deep_cfr.reservoir_add` on the flattened parameters, weighted by their iteration), and
  the average policy is their t-weighted mixture (`average_policy` returns the reservoirs; the
  real-game policy samples one network per hand with probability proportional to t, as SD-CFR plays)."""
  deep = _config(nodes, single, snapshots, hyperparameters)
  if single:
    return Solver(
      functools.partial(init, deep),
      functools.partial(update, deep),
      current_policy,
      network_snapshots,
      SD_NAME,
      {**deep.hyperparameters, 'snapshots': snapshots},
    )
  return Solver(
    functools.partial(init, deep),
    functools.partial(update, deep),
    current_policy,
    functools.partial(strategy_networks, deep),
    NAME,
    deep.hyperparameters,
    costly_policy=True,
  )


# The solver's passes. Those that take a `DeepBlueprintConfig` first are bound to it by
# `deep_blueprint_solver`.


class DeepBlueprintConfig(NamedTuple):
  """What the passes read besides the state and the game."""

  hyperparameters: dict  # validated (`DEFAULTS`' names; SD-CFR's without the strategy network's)
  optimizer: optax.GradientTransformation  # Adam at the learning rate, for every network
  nodes: Nodes  # the decision rows' node features (`nodes_of`)
  width: int  # the networks' input width: the hold'em features and the node's history
  single: bool  # SD-CFR: reservoirs of advantage networks instead of strategy networks
  snapshots: int  # SD-CFR: the networks each player's reservoir keeps


def _config(nodes: Nodes, single: bool, snapshots: int, hyperparameters: dict) -> DeepBlueprintConfig:
  """The validated hyper-parameters (defaults by backend for the rest) and what the passes derive
  from them."""
  defaults = {
    k: v for k, v in default_hyperparameters().items() if not (single and k.startswith('strategy_'))
  }
  unknown = set(hyperparameters) - set(defaults)
  if unknown:
    raise ValueError(
      f'unknown {"SD-CFR" if single else "Deep CFR"} hyper-parameters: {", ".join(sorted(unknown))}'
    )
  if isinstance(snapshots, bool) or not isinstance(snapshots, int) or snapshots < 1:
    raise ValueError(f'snapshots must be a positive integer, got {snapshots!r}')
  config = algorithms.REGISTRY['sd-cfr' if single else 'deep-cfr'].resolve(**{**defaults, **hyperparameters})
  for name in ('advantage_batch_size', 'strategy_batch_size'):
    if config.get(name, 0) is None:
      raise ValueError(f"{name} must be a number on hold'em (its reservoir has no infoset to aggregate by)")
  width = features_lib.SIZE + nodes.history.shape[-1]
  return DeepBlueprintConfig(config, optax.adam(config['learning_rate']), nodes, width, single, snapshots)


def init(deep: DeepBlueprintConfig, game: BlueprintGame, key: jax.Array | None = None) -> DeepBlueprintState:
  if key is None:
    raise ValueError('Deep CFR draws deals and initialises networks from a key: init(game, key)')
  config = deep.hyperparameters
  key, init_key = jax.random.split(key)
  params = tuple(
    deep_cfr.mlp_init(k, _sizes(deep, game, config['advantage_layers'])) for k in jax.random.split(init_key)
  )

  def buffers(capacity):
    empty = game.num_decisions
    return tuple(deep_cfr.reservoir_init(capacity, game.num_actions, empty, KEY_WIDTH) for _ in range(2))

  size = jax.flatten_util.ravel_pytree(params[0])[0].shape[0]
  return DeepBlueprintState(
    jnp.zeros((), jnp.int32),
    params,
    buffers(config['advantage_capacity']),
    () if deep.single else buffers(config['strategy_capacity']),
    tuple(deep_cfr.reservoir_init(deep.snapshots, size, -1) for _ in range(2)) if deep.single else (),
    jnp.zeros((2,), jnp.float32),
    key,
  )


def update(deep: DeepBlueprintConfig, state: DeepBlueprintState, game: BlueprintGame) -> DeepBlueprintState:
  """Update t: player 0, then player 1, traverses, stores its samples and trains its advantage network
  (`_player_update`)."""
  t = state.iteration + 1
  weight = t.astype(jnp.float32)
  key, *player_keys = jax.random.split(state.key, 3)
  for p in range(2):
    state = _player_update(deep, state, game, p, player_keys[p], t, weight)
  return state._replace(iteration=t, key=key)


def _player_update(
  deep: DeepBlueprintConfig, state: DeepBlueprintState, game: BlueprintGame, p: int, key, t, weight
):
  """Player p's part of update t (weight: t as float32): its deals and walk under the current networks,
  its regrets into its advantage reservoir and the opponent's strategies into the opponent's strategy
  reservoir (Deep CFR), its advantage network's training, and (SD-CFR) the network into its reservoir."""
  config, nodes, batch = deep.hyperparameters, deep.nodes, deep.hyperparameters['traversals']
  deal_key, walk_key, regret_key, strategy_key, init_key, train_key, snapshot_key = jax.random.split(key, 7)
  hole, board = deal(game, deal_key, batch)
  trained = jnp.stack([t > 1, (t > 1) | (p > 0)])
  sigma = network_strategy(game, nodes, state.advantage_params, hole, board, trained)  # [D, B, A]
  draws = jax.random.uniform(walk_key, (game.num_decisions, batch), jnp.float32)
  instant, reach = mccfr.walk(game, sigma, showdown(hole, board), draws, p)
  keys = deal_keys(game, hole, board)  # [D, B, 8]
  own = game.player == p  # [D]
  flat = lambda x: x.reshape(-1, *x.shape[2:])  # noqa: E731
  buffer = deep_cfr.reservoir_add(
    state.advantage_buffers[p], regret_key, flat(keys), weight, flat(instant) / nodes.stack,
    flat(reach & own[:, None]),
  )  # fmt: skip
  strategy = state.strategy_buffers
  if not deep.single:
    q = 1 - p
    kept = deep_cfr.reservoir_add(
      strategy[q], strategy_key, flat(keys), weight, flat(sigma), flat(reach & ~own[:, None])
    )
    strategy = deep_cfr._replace(strategy, q, kept)
  start = state.advantage_params[p]
  if config['reinitialize']:
    start = deep_cfr.mlp_init(init_key, _sizes(deep, game, config['advantage_layers']))
  loss = deep_cfr.minibatch_loss(
    _predictor(nodes, game), buffer, config['advantage_batch_size'], deep_cfr.advantage_loss, t
  )
  new, value = deep_cfr.fit(deep.optimizer, start, loss, train_key, config['advantage_steps'])
  losses = state.advantage_loss.at[p].set(value)
  kept_networks = state.snapshots
  if deep.single:  # iteration t's network joins p's reservoir of networks
    vector = jax.flatten_util.ravel_pytree(new)[0][None]
    snapshot = deep_cfr.reservoir_add(kept_networks[p], snapshot_key, t[None], weight, vector, True)
    kept_networks = deep_cfr._replace(kept_networks, p, snapshot)
  return state._replace(
    advantage_params=deep_cfr._replace(state.advantage_params, p, new),
    advantage_buffers=deep_cfr._replace(state.advantage_buffers, p, buffer),
    strategy_buffers=strategy,
    snapshots=kept_networks,
    advantage_loss=losses,
  )


def strategy_networks(deep: DeepBlueprintConfig, state: DeepBlueprintState, game: BlueprintGame):
  """Each player's strategy network, trained from scratch on its strategy reservoir: a tuple of
  parameters. Pure: its keys derive from `state.key` without consuming it."""
  config = deep.hyperparameters
  keys = jax.random.split(jax.random.fold_in(state.key, 1))
  t = jnp.maximum(state.iteration, 1)
  out = []
  for key, buffer in zip(keys, state.strategy_buffers, strict=True):
    init_key, train_key = jax.random.split(key)
    start = deep_cfr.mlp_init(init_key, _sizes(deep, game, config['strategy_layers']))
    loss = deep_cfr.minibatch_loss(
      _predictor(deep.nodes, game), buffer, config['strategy_batch_size'], deep_cfr.strategy_loss, t
    )
    out.append(deep_cfr.fit(deep.optimizer, start, loss, train_key, config['strategy_steps'])[0])
  return tuple(out)


def current_policy(state: DeepBlueprintState, game: BlueprintGame):
  return state.advantage_params


def network_snapshots(state: DeepBlueprintState, game: BlueprintGame):
  """Each player's reservoir of advantage networks (SD-CFR's average policy, as `unravel_snapshots`
  reads it)."""
  return state.snapshots


def _sizes(deep: DeepBlueprintConfig, game: BlueprintGame, layers) -> tuple[int, ...]:
  return (deep.width, *layers, game.num_actions)


def _predictor(nodes: Nodes, game: BlueprintGame):
  """`predict(params, keys) -> (outputs, legal mask, valid)` of reservoir keys [N, 8] (`deal_keys`)."""

  def predict(params, keys):
    rows = jnp.minimum(keys[:, 0], game.num_decisions - 1)
    x = row_features(game, nodes, rows, keys[:, 1:3], keys[:, 3:])
    return deep_cfr.mlp_apply(params, x), game.legal_mask[rows], keys[:, 0] < game.num_decisions

  return predict


def unravel_snapshots(buffer: deep_cfr.Reservoir, layers: tuple[int, ...]) -> tuple[list, np.ndarray]:
  """The networks an SD-CFR snapshot reservoir holds: (MLP parameters of `layers` (sizes, inputs to
  outputs) with a leading axis over the filled slots, their weights (iterations) [S])."""
  filled = int(deep_cfr.reservoir_size(buffer))
  template = deep_cfr.mlp_init(jax.random.key(0), layers)
  unravel = jax.flatten_util.ravel_pytree(template)[1]
  params = jax.vmap(unravel)(jnp.asarray(buffer.target[:filled]))
  return jax.tree.map(np.asarray, params), np.asarray(buffer.weight[:filled])


def deal_keys(game: BlueprintGame, hole: jax.Array, board: jax.Array) -> jax.Array:
  """int32 `[D, B, 8]`: (row, the acting player's hole pair, the board in five slots) per row and deal."""
  batch = hole.shape[0]
  rows = jnp.broadcast_to(
    jnp.arange(game.num_decisions, dtype=jnp.int32)[:, None, None], (game.num_decisions, batch, 1)
  )
  acting = jnp.moveaxis(hole, 1, 0)[game.player].astype(jnp.int32)  # [D, B, 2]
  five = jnp.broadcast_to(_five(board).astype(jnp.int32), (game.num_decisions, batch, 5))
  return jnp.concatenate([rows, acting, five], -1)


def network_strategy(game: BlueprintGame, nodes: Nodes, params, hole, board, trained) -> jax.Array:
  """`[D, B, A]`: regret matching of each row's player's advantage network on the features of every
  (row, deal): uniform for a player whose network is untrained (`trained` bool [2])."""
  legal = game.legal_mask[:, None, :]
  uniform = legal / legal.sum(-1, keepdims=True)
  advantages = network_outputs(game, nodes, params, hole, board)
  sigma = deep_cfr.advantage_matching(advantages, legal)
  return jnp.where(trained[game.player][:, None, None], sigma, uniform).astype(jnp.float32)


def network_outputs(game: BlueprintGame, nodes: Nodes, params, hole, board) -> jax.Array:
  """`[D, B, A]`: each row's player's network (`params[p]`) on the features of every (row, deal), the
  first layer split into a card part and a node part (the same sums as `mlp_apply` on the features)."""
  board = _five(board)
  batch = hole.shape[0]
  streets = len(game.board_cards)
  shown = np.cumsum(game.board_cards)
  out = jnp.zeros((game.num_decisions, batch, game.num_actions), jnp.float32)
  for p in range(2):
    index = nodes.seat_rows[p]  # [n]
    if not index.shape[0]:
      continue
    first, *rest = params[p]
    w_cards, w_nodes = first['w'][: features_lib.STREET], first['w'][features_lib.STREET :]
    zeros = jnp.zeros((batch,), jnp.int32)
    cards = jnp.stack([
      features_lib.encode(hole[:, p], board, zeros + shown[s], 0, jnp.zeros((batch, 2)), 0, 1.0)
      for s in range(streets)
    ])[..., : features_lib.STREET] @ w_cards  # [S, B, H]: the card part per street and deal  # fmt: skip
    x = row_features(game, nodes, index, jnp.zeros((2,), jnp.int32), jnp.zeros((5,), jnp.int32))
    node_part = x[:, features_lib.STREET :] @ w_nodes + first['b']  # [n, H]
    first_layer = cards[game.street[index]] + node_part[:, None, :]  # [n, B, H]
    out = out.at[index].set(deep_cfr.mlp_apply(rest, jax.nn.relu(first_layer)) if rest else first_layer)
  return out


def strategy_probabilities(params, x: jax.Array, legal: jax.Array) -> jax.Array:
  """`[..., A]` masked-softmax policy of a strategy network on features `x [..., F]`."""
  return deep_cfr.masked_softmax(deep_cfr.mlp_apply(params, x), legal)


def tabulate(game: BlueprintGame, nodes: Nodes, params, hole, board, advantages: bool = False) -> jax.Array:
  """`[D, K, A]` policy of per-player strategy networks (or with `advantages`, regret matching of
  advantage networks) at every (row, bucket) of the deals given (all deals of a small lossless game:
  each bucket's cards then give its features), uniform at cells no deal reaches. For exact evaluation
  on the history-compiled twin (`game.evaluate_profile`)."""
  legal = game.legal_mask
  table = jnp.broadcast_to((legal / legal.sum(-1, keepdims=True))[:, None, :],
                           (game.num_decisions, game.max_buckets, game.num_actions))  # fmt: skip
  from jaxcfr.poker.blueprint.game import deal_buckets  # noqa: PLC0415

  buckets = deal_buckets(game, hole, board)  # [M, 2, S]
  rows = jnp.arange(game.num_decisions)
  for p in range(2):
    x = row_features(game, nodes, rows[:, None], jnp.moveaxis(hole, 1, 0)[p][None], _five(board)[None])
    if advantages:
      probabilities = deep_cfr.advantage_matching(deep_cfr.mlp_apply(params[p], x), legal[:, None, :])
    else:
      probabilities = strategy_probabilities(params[p], x, legal[:, None, :])  # [D, M, A]
    cell = buckets[:, p][:, game.street].T  # [D, M]
    mine = (game.player == p)[:, None]
    where = jnp.where(mine, cell, game.max_buckets)  # other rows drop out
    table = table.at[rows[:, None], where].set(probabilities, mode='drop')
  return table
