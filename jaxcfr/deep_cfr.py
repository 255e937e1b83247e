"""Deep CFR (Brown, Lerer, Gross, Sandholm 2019) and Single Deep CFR (Steinberger 2019) on a `CompiledGame`.

Each iteration t, for each player p in turn (the traverser):

1. `traversals` external-sampling traversals of the compiled game (the batched
   frontier code of `mccfr.traversal_samples`). Every player acts by the
   regret-matched policy of its advantage network, evaluated on the features
   of *all* infosets in one batched call (uniform before the network's first
   training). Where no predicted advantage is positive the policy takes the
   action with the highest one, as in the paper.
2. The traverser's sampled regrets `(I, t, r(I, .))` enter p's advantage
   reservoir; the next player's policies `(I, t, sigma(I))` at the histories
   it acts in enter that player's strategy reservoir (the paper's "opponent
   nodes"; with two players, the opponent).
3. p's advantage network is re-initialised (or warm-started) and trained with
   optax on minibatches drawn uniformly from its reservoir, the squared error
   over legal actions weighted by the iteration the sample came from (linear
   CFR weighting).

A reservoir stores infoset indices, not feature vectors: the features are a
fixed function of the infoset (`CompiledGame.features`), gathered when a
minibatch is drawn, so a buffer costs `4 + 4 + 4 * A` bytes per sample. The
networks still see only features, never an index. Reservoirs are fixed-size
device arrays updated inside the jitted update with Algorithm R.

The average strategy:
- Deep CFR (`deep_cfr`): a strategy network per player, trained from scratch on
  that player's strategy reservoir (masked softmax output, squared error
  weighted by t) whenever the policy is asked for (`average_policy`).
- Single Deep CFR (`sd_cfr`): the average of the advantage networks'
  policies, weighted by t. SD-CFR samples one stored network per game; on a
  compiled game the same mixture is the behavioural policy
  `sum_t t * reach_p^t(I) * sigma_p^t(I)` (normalised), which each update
  accumulates exactly in `average` right after training the network, so no
  network needs to be stored and the policy is exact.

Networks are plain MLPs (`mlp_init`/`mlp_apply`): their parameters are lists
of arrays, so states vmap, scan and checkpoint like any other pytree.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Callable
from typing import NamedTuple

import jax
import jax.numpy as jnp
import optax

from jaxcfr import algorithms, mccfr, solvers, tree
from jaxcfr.compiler import CompiledGame
from jaxcfr.protocol import Solver

# Networks.


def mlp_init(key: jax.Array, sizes: tuple[int, ...]) -> list[dict[str, jax.Array]]:
  """Parameters of an MLP with layer sizes `(inputs, hidden..., outputs)`: He-normal weights,
  zero biases, and a zero output layer (the untrained network predicts 0)."""
  params = []
  keys = jax.random.split(key, len(sizes) - 1)
  for i, (fan_in, fan_out) in enumerate(zip(sizes[:-1], sizes[1:], strict=True)):
    last = i == len(sizes) - 2
    scale = 0.0 if last else math.sqrt(2.0 / max(fan_in, 1))
    weight = scale * jax.random.normal(keys[i], (fan_in, fan_out), jnp.float32)
    params.append({'w': weight, 'b': jnp.zeros((fan_out,), jnp.float32)})
  return params


def mlp_apply(params: list[dict[str, jax.Array]], x: jax.Array) -> jax.Array:
  """`[..., inputs]` -> `[..., outputs]`; ReLU between layers."""
  for layer in params[:-1]:
    x = jax.nn.relu(x @ layer['w'] + layer['b'])
  return x @ params[-1]['w'] + params[-1]['b']


def advantage_matching(advantages: jax.Array, legal_mask: jax.Array) -> jax.Array:
  """`[..., A]` policy proportional to positive predicted advantages; where none is
  positive, all probability on the legal action with the highest advantage (Deep CFR)."""
  positive = jnp.where(legal_mask, jnp.maximum(advantages, 0), 0)
  total = positive.sum(-1, keepdims=True)
  best = jax.nn.one_hot(jnp.argmax(jnp.where(legal_mask, advantages, -jnp.inf), -1), advantages.shape[-1])
  return jnp.where(total > 0, positive / jnp.where(total > 0, total, 1), best)


def masked_softmax(logits: jax.Array, legal_mask: jax.Array) -> jax.Array:
  logits = jnp.where(legal_mask, logits, -jnp.inf)
  return jnp.where(legal_mask, jax.nn.softmax(logits, -1), 0)


# Reservoirs.


class Reservoir(NamedTuple):
  """A fixed-size uniform sample of a stream of `(infoset, weight, target)` items."""

  infoset: jax.Array  # [C] (or [C, k]) int32: the infoset (or key) of each kept item (I in empty slots)
  weight: jax.Array  # [C] float32: the iteration the item came from
  target: jax.Array  # [C, A] float32: sampled regrets or policy, by action id
  seen: jax.Array  # [] int32: items offered so far (saturates near 2**31: see `reservoir_add`)


def reservoir_init(
  capacity: int, num_actions: int, empty_row: int, key_width: int | None = None
) -> Reservoir:
  """An empty reservoir whose items are keyed by one int32 (an infoset index) or, with `key_width`, by
  int32 `[key_width]` (what a game without enumerable infosets needs to rebuild the features)."""
  shape = (capacity,) if key_width is None else (capacity, key_width)
  return Reservoir(
    jnp.full(shape, empty_row, jnp.int32),
    jnp.zeros((capacity,), jnp.float32),
    jnp.zeros((capacity, num_actions), jnp.float32),
    jnp.zeros((), jnp.int32),
  )


def reservoir_size(buffer: Reservoir) -> jax.Array:
  return jnp.minimum(buffer.seen, buffer.weight.shape[-1])


def reservoir_add(
  buffer: Reservoir, key: jax.Array, infoset: jax.Array, weight, target: jax.Array, valid: jax.Array
) -> Reservoir:
  """Offers the `valid` rows of a batch, in order, as Algorithm R would one at a time:
  item n (0-based, counting every item ever offered) takes slot n while the
  reservoir fills, then replaces a slot drawn uniformly from [0, n] if that is
  below the capacity C, so every item offered so far is kept with probability
  C / (n + 1). When two rows of the batch draw the same slot, the later wins.
  `seen` stops growing N short of int32's range (N rows per batch; Leduc with the defaults
  offers about 4,000 items per player per iteration, so after some 500,000 iterations), after
  which new items replace old ones with a fixed probability instead of a falling one."""
  capacity = buffer.weight.shape[0]
  valid = jnp.broadcast_to(valid, infoset.shape[:1])
  seen = jnp.minimum(buffer.seen, _INT32_MAX - infoset.shape[0])
  position = seen + jnp.cumsum(valid, dtype=jnp.int32) - 1  # n of each valid row
  draw = jax.random.randint(key, position.shape, 0, jnp.maximum(position + 1, 1))
  slot = jnp.where(position < capacity, position, draw)
  write = valid & (slot < capacity)
  slot = jnp.where(write, slot, capacity)
  last = jnp.full((capacity + 1,), -1, jnp.int32).at[slot].max(jnp.where(write, position, -1))
  slot = jnp.where(write & (last[slot] == position), slot, capacity)  # unique, or `capacity` (dropped)
  weight = jnp.broadcast_to(jnp.asarray(weight, jnp.float32), infoset.shape[:1])
  return Reservoir(
    buffer.infoset.at[slot].set(infoset.astype(jnp.int32), mode='drop'),
    buffer.weight.at[slot].set(weight, mode='drop'),
    buffer.target.at[slot].set(target.astype(jnp.float32), mode='drop'),
    seen + valid.sum(dtype=jnp.int32),
  )


_INT32_MAX = 2**31 - 1


# Solver.


class DeepCFRState(NamedTuple):
  iteration: jax.Array  # [] int32: iterations completed
  # Per player (tuples, not stacked arrays: updating one player's reservoir then touches only it).
  advantage_params: tuple  # MLP parameters
  advantage_buffers: tuple[Reservoir, ...]
  strategy_buffers: tuple[Reservoir, ...] | None  # None for SD-CFR
  average: jax.Array  # [I, A]: sum over iterations of t * own reach * advantage policy (SD-CFR)
  advantage_loss: jax.Array  # [P]: mean loss over the last tenth of each player's latest training
  key: jax.Array  # [] PRNG key the next update consumes


@dataclasses.dataclass(frozen=True, eq=False)
class DeepSolver(Solver):
  """The solver protocol (`init(game, key)`, `update`, `current_policy`,
  `average_policy`) plus Deep CFR's `strategy_networks(state, game) ->
  (per-player parameters, [P] losses)` (None for SD-CFR)."""

  strategy_networks: Callable[[DeepCFRState, CompiledGame], tuple[list, jax.Array]] | None = None


# The registry holds the schema (defaults, ranges, help): traversals per player per iteration,
# Adam steps per training, batch sizes (None: the whole reservoir each step, see `_train`),
# reservoir capacities per player (20 bytes a sample on Leduc), `reinitialize` (True: train
# from scratch each iteration, as in the paper; False: warm start), widths and learning rate.
DEFAULTS = algorithms.REGISTRY['deep-cfr'].defaults()


def deep_cfr(**hyperparameters) -> DeepSolver:
  """Deep CFR with a strategy network per player (see the module docstring and `DEFAULTS`)."""
  return _deep_solver(single=False, **hyperparameters)


def sd_cfr(**hyperparameters) -> DeepSolver:
  """Single Deep CFR: no strategy network; the policy is the t-weighted average of the
  advantage networks' policies, exact on the compiled game."""
  for name in ('strategy_layers', 'strategy_steps', 'strategy_batch_size', 'strategy_capacity'):
    if name in hyperparameters:
      raise ValueError(f'sd-cfr has no strategy network; {name} does not apply')
  return _deep_solver(single=True, **hyperparameters)


def _check(hyperparameters: dict) -> dict:
  """Every hyper-parameter's value, validated by the registry's schema (defaults for the rest)."""
  entry = algorithms.REGISTRY['deep-cfr']
  unknown = set(hyperparameters) - set(entry.defaults())
  if unknown:
    raise ValueError(f'unknown Deep CFR hyper-parameters: {", ".join(sorted(unknown))}')
  return entry.resolve(**hyperparameters)


def _deep_solver(single: bool, **hyperparameters) -> DeepSolver:
  config = _check(hyperparameters)
  if single:
    config = {k: v for k, v in config.items() if not k.startswith('strategy_')}
  deep = DeepConfig(config, optax.adam(config['learning_rate']), single)
  return DeepSolver(
    functools.partial(init, deep),
    functools.partial(update, deep),
    lambda state, game: current_policy(state, game),
    functools.partial(average_policy, deep),
    name='sd-cfr' if single else 'deep-cfr',
    hyperparameters=config,
    costly_policy=not single,  # each average policy trains the strategy networks
    strategy_networks=None if single else functools.partial(strategy_networks, deep),
  )


# The passes of Deep CFR and SD-CFR. Those that take a `DeepConfig` first are bound to it by `_deep_solver`.


class DeepConfig(NamedTuple):
  """What the passes read besides the state and the game."""

  hyperparameters: dict  # validated (`DEFAULTS`' names; SD-CFR's without the strategy network's)
  optimizer: optax.GradientTransformation  # Adam at the learning rate, for every network
  single: bool  # SD-CFR: the average is the advantage networks' (`average`), no strategy network


def init(deep: DeepConfig, game: CompiledGame, key: jax.Array | None = None) -> DeepCFRState:
  _check_game(game)
  if key is None:
    raise ValueError('Deep CFR samples traversals and initialises networks from a key: init(game, key)')
  config, players = deep.hyperparameters, game.num_players
  key, init_key = jax.random.split(key)
  sizes = _network_sizes(game, config['advantage_layers'])
  params = tuple(mlp_init(k, sizes) for k in jax.random.split(init_key, players))

  def buffers(capacity):
    return tuple(reservoir_init(capacity, game.num_actions, game.num_infosets) for _ in range(players))

  return DeepCFRState(
    iteration=jnp.zeros((), jnp.int32),
    advantage_params=params,
    advantage_buffers=buffers(config['advantage_capacity']),
    strategy_buffers=None if deep.single else buffers(config['strategy_capacity']),
    average=jnp.zeros(game.legal_mask.shape, game.dtype),
    advantage_loss=jnp.zeros((players,), jnp.float32),
    key=key,
  )


def current_policy(state: DeepCFRState, game: CompiledGame, trained=None) -> jax.Array:
  """`[I, A]`: each player's rows from its own advantage network (uniform where `trained` [P] is
  False)."""
  uniform = solvers.normalize_policy(jnp.zeros(game.legal_mask.shape, jnp.float32), game.legal_mask)
  policy = uniform
  for p in range(game.num_players):
    own = player_policy(state.advantage_params[p], game)
    if trained is not None:
      own = jnp.where(trained[p], own, uniform)
    policy = jnp.where((game.infoset_player == p)[:, None], own, policy)
  return policy.astype(game.dtype)


def player_policy(params, game: CompiledGame) -> jax.Array:
  """`[I, A]`: one advantage network's regret-matched policy on every infoset."""
  return advantage_matching(mlp_apply(params, game.features), game.legal_mask)


def update(deep: DeepConfig, state: DeepCFRState, game: CompiledGame) -> DeepCFRState:
  """Iteration t: each player in turn traverses, stores its samples and trains its advantage network
  (`_player_update`)."""
  t = state.iteration + 1
  key, *player_keys = jax.random.split(state.key, 1 + game.num_players)
  weight = t.astype(jnp.float32)
  for p in range(game.num_players):
    state = _player_update(deep, state, game, p, player_keys[p], t, weight)
  return state._replace(iteration=t, key=key)


def _player_update(deep: DeepConfig, state: DeepCFRState, game: CompiledGame, p: int, key, t, weight):
  """Player p's part of iteration t (weight: t as float32): its traversals under the current
  networks, its regrets into its advantage reservoir and the next player's policies into that
  player's strategy reservoir, its advantage network's training, and SD-CFR's average."""
  config, players = deep.hyperparameters, game.num_players
  traverse_key, regret_key, strategy_key, init_key, train_key = jax.random.split(key, 5)
  trained = (t > 1) | (jnp.arange(players) < p)
  policy = current_policy(state, game, trained)
  samples = mccfr.traversal_samples(
    game,
    policy,
    jnp.zeros_like(policy),
    traverse_key,
    p,
    config['traversals'],
    scheme='external',
    exploration=0.0,
    prune=jnp.asarray(False),
    prune_probability=0.0,
    threshold=jnp.zeros((), policy.dtype),
    no_prune_depths=(),
  )
  rows, targets, valid = _by_action(game, samples.regret_rows, samples.regret_values)
  buffer = reservoir_add(state.advantage_buffers[p], regret_key, rows, weight, targets, valid)
  strategy_buffers = state.strategy_buffers
  if strategy_buffers is not None and samples.average_rows.shape[0]:
    q = (p + 1) % players
    rows, targets, valid = _by_action(game, samples.average_rows, samples.average_values)
    kept = reservoir_add(strategy_buffers[q], strategy_key, rows, weight, targets, valid)
    strategy_buffers = _replace(strategy_buffers, q, kept)
  start = state.advantage_params[p]
  if config['reinitialize']:
    start = mlp_init(init_key, _network_sizes(game, config['advantage_layers']))
  new, loss = _train(
    deep.optimizer,
    start,
    buffer,
    game,
    train_key,
    config['advantage_steps'],
    config['advantage_batch_size'],
    advantage_loss,
    t,
  )
  losses = state.advantage_loss.at[p].set(loss)
  # SD-CFR's average: iteration t's network weighted by t and by p's own reach.
  own = jnp.where((game.infoset_player == p)[:, None], player_policy(new, game), policy)
  _, reach_policy = solvers.player_regrets(game, own.astype(game.dtype), p)
  return state._replace(
    advantage_params=_replace(state.advantage_params, p, new),
    advantage_buffers=_replace(state.advantage_buffers, p, buffer),
    strategy_buffers=strategy_buffers,
    average=state.average + t.astype(game.dtype) * reach_policy,
    advantage_loss=losses,
  )


def strategy_networks(deep: DeepConfig, state: DeepCFRState, game: CompiledGame) -> tuple[list, jax.Array]:
  """Each player's strategy network trained from scratch on its strategy reservoir:
  `(per-player parameters, [P] final losses)`. Pure: the keys derive from
  `state.key` without consuming it."""
  config = deep.hyperparameters
  sizes = _network_sizes(game, config['strategy_layers'])
  keys = jax.random.split(jax.random.fold_in(state.key, 1), game.num_players)
  t = jnp.maximum(state.iteration, 1)

  def one(key, buffer):
    init_key, train_key = jax.random.split(key)
    return _train(
      deep.optimizer,
      mlp_init(init_key, sizes),
      buffer,
      game,
      train_key,
      config['strategy_steps'],
      config['strategy_batch_size'],
      strategy_loss,
      t,
    )

  trained = [one(key, buffer) for key, buffer in zip(keys, state.strategy_buffers, strict=True)]
  return tuple(params for params, _ in trained), jnp.stack([loss for _, loss in trained])


def average_policy(deep: DeepConfig, state: DeepCFRState, game: CompiledGame) -> jax.Array:
  if deep.single:
    return solvers.normalize_policy(state.average, game.legal_mask)
  params, _ = strategy_networks(deep, state, game)
  return strategy_policy(params, game)


def _network_sizes(game: CompiledGame, layers) -> tuple[int, ...]:
  return (game.features.shape[-1], *layers, game.num_actions)


def _check_game(game: CompiledGame) -> None:
  if game.features.shape[-1] == 0:
    raise ValueError(f'{game.name} has no information-state features; Deep CFR needs them')
  if game.features.shape[0] != game.num_infosets:
    raise ValueError(f'features are {game.features.shape}, expected {game.num_infosets} rows')


def describe(state: DeepCFRState) -> str:
  """One line for progress displays: reservoir fill and the latest losses."""
  buffers = state.advantage_buffers
  size, loss = jax.device_get(([reservoir_size(b) for b in buffers], state.advantage_loss))
  return f'memory {min(size) / buffers[0].weight.shape[-1]:.0%} loss ' + ','.join(f'{x:.3g}' for x in loss)


def strategy_policy(params, game: CompiledGame) -> jax.Array:
  """`[I, A]`: each player's rows from its strategy network (`params[p]`)."""
  policy = jnp.zeros(game.legal_mask.shape, jnp.float32)
  for p in range(game.num_players):
    own = masked_softmax(mlp_apply(params[p], game.features), game.legal_mask)
    policy = jnp.where((game.infoset_player == p)[:, None], own, policy)
  return policy.astype(game.dtype)


def advantage_loss(predictions, targets, mask):
  """Squared error of predicted advantages over the legal actions, `[n, A]` -> `[n]`."""
  return jnp.where(mask, (predictions - targets) ** 2, 0).sum(-1)


def strategy_loss(logits, targets, mask):
  """Squared error of the masked-softmax policy over the legal actions, `[n, A]` -> `[n]`."""
  return jnp.where(mask, (masked_softmax(logits, mask) - targets) ** 2, 0).sum(-1)


def sample_loss(params, game: CompiledGame, buffer: Reservoir, index: jax.Array, loss_fn) -> jax.Array:
  """The loss on the reservoir items `index`: the mean of weight * loss_fn(network(features), target)."""
  return weighted_loss(_infoset_predictor(game, index.shape[0]), params, buffer, index, loss_fn)


def weighted_loss(predict, params, buffer: Reservoir, index: jax.Array, loss_fn) -> jax.Array:
  """The mean over the reservoir items `index` of weight * loss_fn(prediction, target, legal mask):
  `predict(params, keys) -> (predictions [n, A], legal mask [n, A], valid [n])` rebuilds each item's
  input from its key (invalid items, e.g. empty slots, weigh 0). Any game's Deep CFR shares it."""
  predictions, mask, valid = predict(params, buffer.infoset[index])
  weights = jnp.where(valid, buffer.weight[index], 0)
  return (weights * loss_fn(predictions, buffer.target[index], mask)).mean()


def _infoset_predictor(game: CompiledGame, batch: int):
  """`predict` for `weighted_loss` on a compiled game: features gathered by infoset index."""

  def predict(params, infosets):
    rows = jnp.minimum(infosets, game.num_infosets - 1)
    if game.num_infosets <= batch:  # the same predictions (and gradients) from fewer network rows
      predictions = _take_rows(mlp_apply(params, game.features), rows)
    else:
      predictions = mlp_apply(params, game.features[rows])
    return predictions, game.legal_mask[rows], infosets < game.num_infosets

  return predict


@jax.custom_vjp
def _take_rows(values: jax.Array, rows: jax.Array) -> jax.Array:
  """`values[rows]`, whose gradient sums the cotangents of repeated rows with `tree.segment_sum`
  (the gradient of a plain gather is a scatter-add: float atomics in a varying order on a GPU)."""
  return values[rows]


def _take_rows_forward(values, rows):
  return values[rows], (rows, values.shape[0])


def _take_rows_backward(residuals, cotangent):
  rows, num_rows = residuals
  return tree.segment_sum(cotangent, rows, num_rows), None


_take_rows.defvjp(_take_rows_forward, _take_rows_backward)


def reservoir_loss(game: CompiledGame, buffer: Reservoir, loss_fn) -> Callable:
  """The loss over the whole reservoir as a function of the parameters, normalised by the total weight.

  For a squared error, sum_i w_i |f(x_i) - y_i|^2 = sum_I W_I |f(x_I) - mean_I|^2 + const, where W_I and
  mean_I are the total weight and the weighted mean target of the items of infoset I: the features are
  a function of the infoset, so this has the same gradient as the item-by-item loss at a cost of one
  network row per infoset (I rows however many items the reservoir holds).
  """
  valid = buffer.infoset < game.num_infosets
  rows = jnp.where(valid, buffer.infoset, 0)
  weights = jnp.where(valid, buffer.weight, 0)
  # Deterministic sums (no scatter-add: the same bits on every backend).
  total = tree.segment_sum(weights, rows, game.num_infosets)  # [I]
  sums = tree.segment_sum(weights[:, None] * buffer.target, rows, game.num_infosets)  # [I, A]
  means = sums / jnp.maximum(total, 1e-30)[:, None]
  share = total / jnp.maximum(total.sum(), 1e-30)

  def loss(params):
    return (share * loss_fn(mlp_apply(params, game.features), means, game.legal_mask)).sum()

  return loss


def _train(optimizer, params, buffer: Reservoir, game: CompiledGame, key, steps, batch_size, loss_fn, t):
  """`steps` Adam steps on the t-weighted loss over `buffer`: with `batch_size` None, the
  whole reservoir each step (`reservoir_loss`); otherwise minibatches drawn uniformly from it,
  the weights scaled by 2 / t so that they average about 1. Returns `(params, mean loss over the
  last tenth of the steps)`."""
  if batch_size is None:
    whole = reservoir_loss(game, buffer, loss_fn)

    def loss(params, _):
      return whole(params)

  else:
    loss = minibatch_loss(_infoset_predictor(game, batch_size), buffer, batch_size, loss_fn, t)
  return fit(optimizer, params, loss, key, steps)


def minibatch_loss(predict, buffer: Reservoir, batch_size: int, loss_fn, t) -> Callable:
  """`loss(params, key)`: `weighted_loss` on `batch_size` items drawn uniformly from the filled part of
  `buffer`, the weights (iterations) scaled by 2 / t so that they average about 1."""
  size, scale = reservoir_size(buffer), 2.0 / jnp.asarray(t).astype(jnp.float32)

  def loss(params, key):
    index = jax.random.randint(key, (batch_size,), 0, jnp.maximum(size, 1))
    return scale * weighted_loss(predict, params, buffer, index, loss_fn)

  return loss


def fit(optimizer, params, loss, key, steps: int):
  """`steps` optimizer steps on `loss(params, key)`, a fresh optimizer state and one key per step:
  `(params, mean loss over the last tenth of the steps)`."""

  def step(carry, key):
    params, opt_state = carry
    value, grads = jax.value_and_grad(loss)(params, key)
    updates, opt_state = optimizer.update(grads, opt_state, params)
    return (optax.apply_updates(params, updates), opt_state), value

  (params, _), values = jax.lax.scan(step, (params, optimizer.init(params)), jax.random.split(key, steps))
  return params, values[-max(1, steps // 10) :].mean()


def _by_action(game: CompiledGame, rows: jax.Array, values: jax.Array):
  """Samples by legal slot `[N, L]` -> `(rows, [N, A] by action id, valid [N])`."""
  valid = rows < game.num_infosets
  rows = jnp.where(valid, rows, 0)
  return rows, tree.to_actions(game, values, rows), valid


def _replace(items: tuple, p: int, value) -> tuple:
  return (*items[:p], value, *items[p + 1 :])
