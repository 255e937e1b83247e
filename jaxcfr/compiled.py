"""The data types of a compiled game: `CompiledGame`, its host-side `GameInfo`,
and the `SequenceForm` structure it carries (shapes as in `compiler`).

Only data lives here, so that the modules that build these types
(`compiler`, `sequence_form`) and those that read them (`tree`, the solvers,
`evaluation`) import this module and not each other.
"""

from __future__ import annotations

import dataclasses
import hashlib

import jax


class GameInfo:
  """Host-side description of a compiled game; not traced.

  Compares equal for games of the same shape and information-state keys, so
  a batch of games that differ only in payoffs or chance probabilities
  shares one compiled program.
  """

  def __init__(self, name: str, infoset_keys: tuple[str, ...], shape_key: tuple):
    self.name = name
    self.infoset_keys = infoset_keys  # [I]
    digest = hashlib.sha256(repr(shape_key).encode())
    for key in infoset_keys:
      digest.update(key.encode())
      digest.update(b'\0')
    self.fingerprint = digest.hexdigest()[:16]

  def __eq__(self, other) -> bool:
    return isinstance(other, GameInfo) and self.fingerprint == other.fingerprint

  def __hash__(self) -> int:
    return hash(self.fingerprint)

  def __repr__(self) -> str:
    return f'GameInfo({self.name!r}, fingerprint={self.fingerprint})'


@dataclasses.dataclass(frozen=True)
class CompiledGame:
  """A game tree as depth-sliced arrays (a pytree; sizes are static).

  Per-depth fields are tuples with one array per depth `d = 0 .. D-1`.
  """

  # [H_d] int32: the row of the transition table (`tree.transition_probs`) a history reads: its
  # infoset at decision histories, I at terminals, I + 1 + c at chance histories whose outcome
  # distribution is `chance_table[c]`.
  row: tuple[jax.Array, ...]
  player: tuple[jax.Array, ...]  # [H_d] int32: actor, CHANCE_PLAYER or TERMINAL_PLAYER
  child: tuple[jax.Array, ...]  # [H_d, W_d] int32: child index in depth d + 1, H_{d+1} if none
  parent: tuple[jax.Array, ...]  # [H_d] int32: parent index * W_{d-1} + slot (0 at depth 0)
  utility: tuple[jax.Array, ...]  # [H_d, P]: returns at terminal histories, else 0
  infoset_player: jax.Array  # [I] int32
  legal_mask: jax.Array  # [I, A] bool
  chance_table: jax.Array  # [C, W_c]: the distinct chance distributions, by outcome position
  legal_actions: jax.Array  # [I, L] int32: the legal action ids in order (slots), A pads
  action_slot: jax.Array  # [I, A] int32: the slot of each legal action, L for illegal ones
  # [I, F] float32 whatever the game's dtype: each infoset's information-state tensor, from its
  # player's view (OpenSpiel's layout for the OpenSpiel twins); F = 0 for a game without one. The
  # input of learned policies (Deep CFR), which see these features, never the infoset index.
  features: jax.Array
  # Per depth [I_d, K_d] int32: the histories (index in depth d; H_d pads) of each infoset of depth
  # d, when every infoset lies at one depth and infosets are numbered depth by depth (then sums over
  # an infoset's histories are gathers, not scatters). Empty otherwise.
  members: tuple[jax.Array, ...]
  # The per-sequence structure the CFR-family solvers use (`sequence_form`); None for a game without
  # perfect recall (or one whose tables would pad badly), which the solvers handle history by history.
  sequence_form: SequenceForm | None
  # Static.
  num_players: int
  num_actions: int
  depth_sizes: tuple[int, ...]  # H_d
  widths: tuple[int, ...]  # W_d
  player_depths: tuple[tuple[int, ...], ...]  # per player, the depths where it acts
  depth_consistent: bool  # every infoset's histories share one depth
  infoset_offsets: tuple[int, ...]  # [D + 1]: infosets of depth d are offsets[d]:offsets[d+1] (with members)
  # Per player p, per depth d: the most depth-d histories one external-sampling traversal for p
  # visits (p's actions enumerated, chance and opponents sampled): sampled MCCFR's frontier widths.
  sampled_widths: tuple[tuple[int, ...], ...]
  chance_depths: tuple[int, ...]  # depths that hold chance histories
  info: GameInfo

  @property
  def num_infosets(self) -> int:
    return self.infoset_player.shape[-1]

  @property
  def num_features(self) -> int:
    return self.features.shape[-1]

  @property
  def num_histories(self) -> int:
    return sum(self.depth_sizes)

  @property
  def num_depths(self) -> int:
    return len(self.depth_sizes)

  @property
  def dtype(self):
    return self.utility[0].dtype

  @property
  def name(self) -> str:
    return self.info.name

  @property
  def infoset_keys(self) -> tuple[str, ...]:
    return self.info.infoset_keys

  def replace(self, **changes) -> CompiledGame:
    return dataclasses.replace(self, **changes)


_DATA_FIELDS = (
  'row',
  'player',
  'child',
  'parent',
  'utility',
  'infoset_player',
  'legal_mask',
  'chance_table',
  'legal_actions',
  'action_slot',
  'features',
  'members',
  'sequence_form',
)
_META_FIELDS = (
  'num_players',
  'num_actions',
  'depth_sizes',
  'widths',
  'player_depths',
  'depth_consistent',
  'infoset_offsets',
  'sampled_widths',
  'chance_depths',
  'info',
)
jax.tree_util.register_dataclass(CompiledGame, data_fields=list(_DATA_FIELDS), meta_fields=list(_META_FIELDS))


@dataclasses.dataclass(frozen=True)
class Level:
  """The infosets of one player at one own-decision level (N of them), in a `SequenceForm`.

  An edge's terminals (those whose last edge of this player is (I, a)) are a row of one of the
  `terminals` tables, which group edges of similar counts so that little is padded; `cells`
  says which row holds each edge's sum once the tables' sums are put one after the other.
  """

  infosets: jax.Array  # [N] int32
  children: jax.Array  # [N, A, C] int32: 1 + value position of the infosets (I, a) leads to; 0 pads
  terminals: tuple[jax.Array, ...]  # per bucket k [n_k, w_k] int32: an edge's terminals; Z pads
  # [N * A] int32: row of edge (I, a) (flat: row * A + a) among the buckets' rows in order; their
  # total (reading 0) for an edge without terminals. None: one table whose rows are the N * A edges.
  cells: jax.Array | None


@dataclasses.dataclass(frozen=True)
class SequenceForm:
  """Integer structure for the passes over sequences; part of a `CompiledGame`
  (`sequence_form` builds it and explains edges E, terminals Z and levels).

  A player's levels run deepest first; its infosets' values are numbered in
  that order, which `position` inverts.
  """

  ancestors: jax.Array  # [I, K] int32: each infoset's parent edge, then that one's, ... (E pads)
  parent_edge: jax.Array  # [I] int32
  history_count: jax.Array  # [I] int32: histories in each infoset
  terminal_history: jax.Array  # [Z] int32: index of each terminal among all histories (depth by depth)
  terminal_edges: jax.Array  # [Z, P] int32: each player's last edge before each terminal (E: none)
  # [Z, K_c] int32: the chance-table entries (flat) along its path, then C * W_c pads
  terminal_chance: jax.Array
  levels: tuple[tuple[Level, ...], ...]  # per player, deepest level first
  position: tuple[jax.Array, ...]  # per player [I] int32: row in its levels' order; N_p for other players


for _cls in (Level, SequenceForm):
  jax.tree_util.register_dataclass(
    _cls, data_fields=[f.name for f in dataclasses.fields(_cls)], meta_fields=[]
  )
