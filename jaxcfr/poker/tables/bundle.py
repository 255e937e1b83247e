"""An exported bot's policy: the blueprint and its bucket tables as a container on Chipzen's smallest
tiers holds them, NumPy only (no JAX: an exported bot copies this file with the runtime).

The river table of a card abstraction has 123,156,254 entries, more than any tier's image holds. Its
buckets are percentiles of one number, a hand's exact river equity against a random opponent pair,
kept as the code 2 x wins + ties over the 990 pairs (0 .. 1,980): a bucket is `river_buckets[code]`,
one entry per code, and the code is worked out when a decision asks (`river_codes`: the board's
1,081 hands ranked once, each asked hole's wins and ties counted). The preflop, flop and turn tables
are kept as they are, the flop's and turn's as xz-compressed bytes (LZMA: about half of what zlib
leaves, which fits the turn table under the smallest tier's upload). `BundleTables` is the same
bucket function as the tables it was made from, checked when it is made
(`jaxcfr.poker.tables.export`), and carries their fingerprint, so the blueprint plays it as trained.

    policy = load_policy('bot/data')          # a `BlueprintPolicy` over `BundleTables`
"""

from __future__ import annotations

import dataclasses
import json
import lzma
import os

import numpy as np

from abstractions.indexing import HOLES
from abstractions.lookup import BucketTables
from abstractions.ranking import hand_rank
from jaxcfr.poker.blueprint.files import load_blueprint
from jaxcfr.poker.runtime.policy import BlueprintPolicy, check_fingerprint

TABLES_FILE = 'tables.npz'  # the preflop table and the river's buckets by code
PACKED_STREETS = ('flop', 'turn')  # each as `{street}.xz`: the table's bytes, LZMA-compressed
BLUEPRINT_FILE = 'blueprint.npz'
METADATA_FILE = 'bundle.json'
PUSH_FOLD_FILE = 'pushfold.npz'  # the push-or-fold equilibria of short stacks (`depth.PushFoldTable`)
FORMAT = 'jaxcfr-bot-bundle'
EQUITY_CODES = 1981  # river equity codes 0 .. 1,980 (2 x wins + ties over 990 opponent pairs)


@dataclasses.dataclass(frozen=True, eq=False)
class BundleTables(BucketTables):
  """`BucketTables` whose river buckets come from the equity code (`river_buckets` int [1,981]); the
  `river` field is an empty stand-in."""

  river_buckets: np.ndarray = None

  def bucket(self, street: str, hole, board=None) -> np.ndarray:
    if street != 'river':
      return super().bucket(street, hole, board)
    return self.river_buckets[river_codes(hole, board)].astype(np.int32)


def river_codes(hole, board) -> np.ndarray:
  """The river equity code int [...] (2 x wins + ties against the 990 opponent pairs that share no card
  with hole or board) of hole cards [..., 2] on boards [..., 5]: each distinct board's 1,326 pairs
  ranked once (`abstractions.ranking.hand_rank`), then each asked hole's wins and ties counted over
  the pairs left; 0 for a pair the board blocks (a range query asks every pair)."""
  hole, board = np.asarray(hole, np.int64), np.asarray(board, np.int64)
  shape = hole.shape[:-1]
  hole, board = hole.reshape(-1, 2), np.broadcast_to(board, (*shape, 5)).reshape(-1, 5)
  codes = np.zeros(len(hole), np.int64)
  boards, which = np.unique(board, axis=0, return_inverse=True)
  for b, cards in enumerate(boards):
    rows = np.flatnonzero(which.reshape(-1) == b)
    on_board = np.zeros(52, bool)
    on_board[cards] = True
    free = ~on_board[HOLES].any(1)  # [1,326] pairs that share no card with the board
    pairs = HOLES[free]  # [P, 2]
    values = hand_rank(np.concatenate([pairs, np.broadcast_to(cards, (len(pairs), 5))], 1))  # [P]
    asked = hole[rows]
    playable = ~on_board[asked].any(1)  # a range query's pairs that the board blocks: code 0
    asked = np.where(playable[:, None], asked, pairs[0])
    ours = hand_rank(np.concatenate([asked, np.broadcast_to(cards, (len(rows), 5))], 1))  # [n]
    live = ~(pairs[None, :, :, None] == asked[:, None, None, :]).any((2, 3))  # [n, P]
    wins = (live & (values[None] < ours[:, None])).sum(1)
    ties = (live & (values[None] == ours[:, None])).sum(1)
    codes[rows] = np.where(playable, 2 * wins + ties, 0)
  return codes.reshape(shape)


def save_bundle(directory: str, tables: BucketTables, river_buckets: np.ndarray, blueprint_path) -> None:
  """Writes `tables.npz` (the preflop table, the river's bucket by code), `flop.xz` and `turn.xz`
  (those tables' bytes, LZMA-compressed), `blueprint.npz` (the blueprint file's bytes; with several
  paths, the others as `blueprint-1.npz` ...) and `bundle.json` into `directory` (which exists)."""
  np.savez(os.path.join(directory, TABLES_FILE), preflop=tables.preflop, river_buckets=river_buckets)
  dtypes = {}
  for street in PACKED_STREETS:
    table = np.ascontiguousarray(getattr(tables, street))
    dtypes[street] = table.dtype.str
    with open(os.path.join(directory, f'{street}.xz'), 'wb') as f:
      f.write(lzma.compress(table.tobytes(), preset=9 | lzma.PRESET_EXTREME))
  paths = [blueprint_path] if isinstance(blueprint_path, str | os.PathLike) else list(blueprint_path)
  names = [BLUEPRINT_FILE] + [f'blueprint-{i}.npz' for i in range(1, len(paths))]
  for path, name in zip(paths, names, strict=True):
    with open(path, 'rb') as source, open(os.path.join(directory, name), 'wb') as target:
      target.write(source.read())
  metadata = {
    'format': FORMAT,
    'blueprints': names,
    'buckets': list(tables.buckets),
    'fingerprint': tables.fingerprint,
    'dtypes': dtypes,
  }
  with open(os.path.join(directory, METADATA_FILE), 'w') as f:
    json.dump(metadata, f)


def load_tables(directory: str) -> BundleTables:
  """The `BundleTables` that `save_bundle` wrote into `directory`."""
  with open(os.path.join(directory, METADATA_FILE)) as f:
    metadata = json.load(f)
  if metadata.get('format') != FORMAT:
    raise ValueError(
      f'{directory}: not a bot bundle ({METADATA_FILE} says format {metadata.get("format")!r})'
    )
  with np.load(os.path.join(directory, TABLES_FILE), allow_pickle=False) as data:
    arrays = {name: data[name] for name in ('preflop', 'river_buckets')}
  for street in PACKED_STREETS:
    with open(os.path.join(directory, f'{street}.xz'), 'rb') as f:
      arrays[street] = np.frombuffer(lzma.decompress(f.read()), np.dtype(metadata['dtypes'][street]))
  return BundleTables(
    **arrays, river=np.zeros(0, np.uint8), buckets=tuple(metadata['buckets']),
    fingerprint=metadata['fingerprint'],
  )  # fmt: skip


def load_policy(directory: str, name: str = 'exported blueprint') -> BlueprintPolicy:
  """The bundle in `directory` as the runtime's `BlueprintPolicy`."""
  blueprint, tables = load_blueprint(os.path.join(directory, BLUEPRINT_FILE)), load_tables(directory)
  check_fingerprint(blueprint, tables, os.path.join(directory, BLUEPRINT_FILE))
  return BlueprintPolicy(blueprint, tables, name)


def load_bot(directory: str, name: str = 'exported blueprint'):
  """The bundle's bot for every depth (`depth.DepthAware`): below the deepest of the push-or-fold
  equilibria it carries (`depth.PUSH_FOLD_BELOW` big blinds) those, above them its blueprint (of
  several, the one built nearest the effective stack); the blueprint alone where the bundle has no
  push-or-fold table (an export of an earlier version)."""
  from jaxcfr.poker.eval import depth  # noqa: PLC0415

  with open(os.path.join(directory, METADATA_FILE)) as f:
    names = json.load(f).get('blueprints', [BLUEPRINT_FILE])
  tables = load_tables(directory)
  policies = []
  for index, file in enumerate(names):
    blueprint = load_blueprint(os.path.join(directory, file))
    check_fingerprint(blueprint, tables, os.path.join(directory, file))
    policies.append(BlueprintPolicy(blueprint, tables, name if index == 0 else f'{name} ({file})'))
  path = os.path.join(directory, PUSH_FOLD_FILE)
  if not os.path.exists(path):
    return policies[0] if len(policies) == 1 else depth.DepthAware(policies, push_fold_below=0.0)
  table = depth.PushFoldTable.load(path)
  return depth.DepthAware(policies, float(table.stacks[-1]), depth.PushFoldPlayer(table.lookup))
