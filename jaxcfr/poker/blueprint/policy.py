"""The blueprint as a policy of the real game (`jaxcfr.poker.rules.nlhe.Policy`).

    policy = load_policy('blueprint.npz')      # the tables found where training read them (or tables=DIR)
    actions, probabilities = policy.strategy(state, holes)    # holes [B, K, 2]

`BlueprintPolicy` is the runtime's (`jaxcfr.poker.runtime.policy`, NumPy only, where the mapping of
real histories into the abstract tree and of abstract actions to real ones is described), the code an
exported bot runs: tables are looked up there, as `abstractions.lookup.BucketTables` or as an
`abstractions.Abstraction` (the same arrays); only another bucket function (`buckets`, `fingerprint`,
`buckets_of`, as the small games of the tests have) is looked up here, under jit. `NetworkPolicy`
plays a Deep CFR blueprint's strategy networks (JAX) on the same mapping.
"""

from __future__ import annotations

import collections
import functools

import jax
import jax.numpy as jnp
import numpy as np

import abstractions
from abstractions.lookup import BucketTables, load_tables
from jaxcfr.poker.blueprint import files
from jaxcfr.poker.rules import nlhe
from jaxcfr.poker.runtime import policy as runtime
from jaxcfr.poker.runtime.policy import (  # noqa: F401  (the runtime's names, where they always were)
  BOARD_BUCKETS,
  BOARD_SIZES,
  WALKS,
  _merged,
  _slot_sizes,
  translate_fraction,
  translation,
)


def load_policy(path: str, tables=None, *, name: str | None = None) -> BlueprintPolicy:
  """The blueprint file at `path` as a real-game policy (a Deep CFR file, whose strategy networks need
  no tables, as a `NetworkPolicy`).

  `tables`: the abstraction tables' directory (read as NumPy arrays, `abstractions.load_tables`), or
  a bucket function object (`buckets`, `fingerprint`, `buckets_of`); by default the directory recorded
  when the blueprint was trained. The tables must be the ones it was trained with (same fingerprint):
  `BlueprintError` with one line otherwise."""
  if files.read_metadata(path).get('format') == files.NETWORK_FORMAT:
    return NetworkPolicy(files.load_networks(path), name or f'deep-blueprint:{path}')
  blueprint = files.load_blueprint(path)
  if tables is None:
    tables = blueprint.metadata.get('abstraction_path')
    if not tables:
      raise files.BlueprintError(f'{path!r} records no abstraction tables; pass tables=DIR')
  if isinstance(tables, str):
    try:
      tables = load_tables(tables)
    except abstractions.AbstractionError as error:
      raise files.BlueprintError(f'the blueprint {path!r} needs its abstraction tables: {error}') from None
  runtime.check_fingerprint(blueprint, tables, path)
  return BlueprintPolicy(blueprint, tables, name or f'blueprint:{path}')


class BlueprintPolicy(runtime.BlueprintPolicy):
  """A blueprint and its bucket function as an `nlhe.Policy`: the runtime's policy
  (`jaxcfr.poker.runtime.policy.BlueprintPolicy`), which also takes an `abstractions.Abstraction`
  (its arrays looked up by the runtime's NumPy code) or any other bucket function with `buckets_of`
  (looked up under jit)."""

  def _tables_of(self, buckets) -> BucketTables | None:
    if isinstance(buckets, abstractions.Abstraction):
      return buckets.as_numpy()
    return super()._tables_of(buckets)

  def _street_buckets(self, street: int, hole: np.ndarray, board: np.ndarray) -> np.ndarray:
    if self.tables is not None:
      return super()._street_buckets(street, hole, board)
    n = len(hole)
    size = 1 << max(n - 1, 0).bit_length()  # padded to a power of two: few compiled shapes
    pad = np.concatenate([np.arange(n), np.zeros(size - n, np.int64)])
    found = _jitted_buckets(street, self.buckets, hole[pad].astype(np.int32), board[pad].astype(np.int32))
    return np.asarray(found)[:n]


class NetworkPolicy(BlueprintPolicy):
  """A Deep CFR blueprint (per-player strategy networks) as an `nlhe.Policy`: the same mapping of the
  real history into the abstract tree and of abstract actions to real ones as `BlueprintPolicy`; at the
  node, the acting player's strategy network on the features (`jaxcfr.poker.blueprint.features`) of each
  candidate hole pair with the visible board, the real street and chips, and the abstract node's
  betting history, batched over the hands to act and their candidates."""

  def __init__(self, blueprint: files.NetworkBlueprint, name: str = 'deep-blueprint'):
    from jaxcfr.poker.blueprint import features  # noqa: PLC0415

    self.blueprint = blueprint
    self.tree = tree = blueprint.tree
    self.name = name
    if tree.num_streets != 4 or tuple(blueprint.metadata['board_cards']) != (0, 3, 1, 1):
      raise files.BlueprintError("a real-game policy needs a blueprint of all four hold'em streets")
    self.history = features.history_table(tree) if blueprint.metadata['features']['history'] else None
    self.networks = [jax.tree.map(jnp.asarray, params) for params in blueprint.networks]
    self.weights = blueprint.weights  # SD-CFR: per player [S]; None for strategy networks
    self._sizes = _slot_sizes(tree)
    self._network = jax.jit(_network_probabilities, static_argnums=10)
    self.off_tree = 0
    self._walks = collections.deque(maxlen=WALKS)

  def forget_boards(self) -> None:
    """Nothing: a network keeps no boards."""

  def snapshot(self, state: nlhe.HandState) -> np.ndarray:
    """SD-CFR: the network each hand's players play, int [B, 2], drawn with probability proportional to
    its weight (iteration) from the low digits of the hand's first noise draw: the same network for a
    whole hand, whatever the query, as SD-CFR plays its average strategy."""
    u = np.modf(state.noise[:, 0] * 2**20)[0]
    return np.stack(
      [
        np.minimum(np.searchsorted(np.cumsum(w) / np.sum(w), u, side='right'), len(w) - 1)
        for w in self.weights
      ],
      -1,
    )

  def range_classes(self, state: nlhe.HandState) -> None:
    """None: a network answers each pair from its own features, no bucket stands for many."""
    return None

  def _probabilities(self, state: nlhe.HandState, holes: np.ndarray, row: np.ndarray) -> np.ndarray:
    batch, count = holes.shape[:2]
    out = np.zeros((batch, count, self.tree.num_actions), np.float32)
    single = self.weights is not None
    chosen = self.snapshot(state)[np.arange(batch), state.to_act] if single else np.zeros(batch, np.int64)
    for player, k in sorted({(int(p), int(k)) for p, k in zip(state.to_act, chosen, strict=True)}):
      index = np.flatnonzero((state.to_act == player) & (chosen == k))
      params = self.networks[player]
      if single:
        params = jax.tree.map(lambda x, k=k: x[k], params)
      size = 1 << max(len(index) - 1, 0).bit_length()  # padded to a power of two: few compiled shapes
      pad = np.concatenate([index, np.repeat(index[:1], size - len(index))])
      history = None if self.history is None else self.history[row[pad]]
      found = self._network(
        params, holes[pad].astype(np.int32), state.board[pad].astype(np.int32),
        BOARD_SIZES_ARRAY[state.street[pad]], state.street[pad].astype(np.int32),
        state.committed[pad].astype(np.float32), state.to_act[pad].astype(np.int32),
        float(state.rules.stack), history, self.tree.legal[row[pad]], single,
      )  # fmt: skip
      out[index] = np.asarray(found)[: len(index)]
    return out


BOARD_SIZES_ARRAY = np.array(BOARD_SIZES, np.int32)


def _network_probabilities(
  params, holes, board, shown, street, committed, player, stack, history, legal, single
):
  """Probabilities [n, K, A] for candidate holes [n, K, 2] of n hands: a strategy network's masked
  softmax, or (`single`) regret matching of an advantage network's predictions."""
  from jaxcfr import deep_cfr  # noqa: PLC0415
  from jaxcfr.poker.blueprint import features  # noqa: PLC0415

  x = features.encode(
    holes, board[:, None], shown[:, None], street[:, None], committed[:, None], player[:, None], stack,
    None if history is None else history[:, None],
  )  # fmt: skip
  outputs = deep_cfr.mlp_apply(params, x)
  if single:
    return deep_cfr.advantage_matching(outputs, legal[:, None, :])
  return deep_cfr.masked_softmax(outputs, legal[:, None, :])


@functools.partial(jax.jit, static_argnums=0)
def _jitted_buckets(street: int, buckets, hole: jax.Array, board: jax.Array) -> jax.Array:
  """int32 [n, K] buckets on `street` of holes [n, K, 2] with the visible board [n, BOARD_SIZES[street]]
  by a bucket function's `buckets_of`: the board padded with placeholder cards, which only later
  streets read."""
  filler = jnp.broadcast_to(
    jnp.arange(5 - board.shape[-1], dtype=board.dtype), (*board.shape[:1], 5 - board.shape[-1])
  )
  full = jnp.concatenate([board, filler], -1)
  return buckets.buckets_of(hole, jnp.broadcast_to(full[:, None, :], (*hole.shape[:2], 5)))[..., street]
