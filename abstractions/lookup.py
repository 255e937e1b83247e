"""The card-abstraction tables as saved (`tables.npz` and `metadata.json`), read with NumPy, and the
bucket lookup, written once against an array module (`abstractions.arrays`).

    tables = load_tables('tables/')          # `BucketTables`: NumPy arrays, this module imports no JAX
    tables.bucket('river', hole, board)      # hole [..., 2], board [..., 5] -> int32 [...]

`abstractions.load` reads the same files through `load_tables` and holds them as JAX arrays
(`abstractions.Abstraction`, whose `bucket` is this module's `bucket` on JAX arrays).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import re

import numpy as np

from abstractions.arrays import NUMPY, ArrayModule
from abstractions.indexing import STREETS, check_street, hand_indexer, preflop_class

FORMAT = 'jaxcfr-abstraction'  # metadata.json's "format": how a table directory is known as ours
FORMAT_VERSION = 1
_LEGACY_FORMAT = 1  # tables saved before the marker: "format": 1, with a fingerprint
TABLES_FILE = 'tables.npz'
METADATA_FILE = 'metadata.json'
TABLE_FILES = (TABLES_FILE, METADATA_FILE)  # all that a table directory holds


class AbstractionError(ValueError):
  """Missing, corrupt or mismatched abstraction tables, or bad build settings."""


def bucket(tables, street: str, hole, board=None, xp: ArrayModule = NUMPY):
  """Bucket int32 [...] of hole cards [..., 2] with the street's board [..., 0|3|4|5], from `tables`'
  arrays (`preflop` by `preflop_class`, the others by canonical index) as `xp` arrays."""
  hole = xp.asarray(hole)
  if street == 'preflop':
    return tables.preflop[preflop_class(hole, xp)].astype(np.int32)
  check_street(street)
  cards = xp.concatenate([hole, xp.asarray(board)], axis=-1)
  index = xp.materialise(hand_indexer(street).index(cards, xp))
  return xp.take(getattr(tables, street), index, mode='clip').astype(np.int32)


@dataclasses.dataclass(frozen=True, eq=False)
class BucketTables:
  """Bucket lookup tables as NumPy arrays (what `abstractions.Abstraction` holds as JAX arrays).

  Tables by canonical index: preflop [169] (by `preflop_class`), flop [1,286,792],
  turn [13,960,050], river [123,156,254], uint8 or uint16. `buckets` are the street sizes.
  """

  preflop: np.ndarray
  flop: np.ndarray
  turn: np.ndarray
  river: np.ndarray
  buckets: tuple[int, int, int, int]
  fingerprint: str

  def bucket(self, street: str, hole, board=None) -> np.ndarray:
    """Bucket int32 [...] of hole cards [..., 2] with the street's board [..., 0|3|4|5]."""
    return bucket(self, street, hole, board)


def load_tables(directory: str | os.PathLike, verify: bool = True) -> BucketTables:
  """Loads tables saved by `abstractions.save` (or `jaxcfr abstract`) as NumPy arrays.

  Raises AbstractionError on missing, corrupt or mismatched tables. With `verify`
  the fingerprint of the tables is recomputed and compared.
  """
  metadata = load_metadata(directory)
  path = os.path.join(directory, TABLES_FILE)
  try:
    with np.load(path, allow_pickle=False) as data:
      tables = {street: data[street] for street in STREETS}
  except (OSError, KeyError, ValueError, EOFError) as error:
    raise AbstractionError(f'cannot read {path}: {error}') from None
  buckets = metadata.get('buckets')
  if not isinstance(buckets, list) or len(buckets) != 4:
    raise AbstractionError(f'{directory}: metadata has no valid bucket sizes')
  check_tables(tables, buckets)
  if verify and fingerprint(tables) != metadata.get('fingerprint'):
    raise AbstractionError(f'{directory}: tables do not match the fingerprint in their metadata')
  return BucketTables(**tables, buckets=tuple(buckets), fingerprint=metadata['fingerprint'])


def load_metadata(directory: str | os.PathLike) -> dict:
  """The metadata saved with tables (sizes, seed, sampling, version, fingerprint, timings)."""
  path = os.path.join(directory, METADATA_FILE)
  try:
    with open(path) as f:
      metadata = json.load(f)
  except FileNotFoundError:
    raise AbstractionError(f'no abstraction tables in {directory} (missing {METADATA_FILE})') from None
  except (OSError, json.JSONDecodeError) as error:
    raise AbstractionError(f'cannot read {path}: {error}') from None
  if not isinstance(metadata, dict) or not (
    (metadata.get('format') == FORMAT and metadata.get('format_version') == FORMAT_VERSION)
    or metadata.get('format') == _LEGACY_FORMAT
  ):
    raise AbstractionError(f'{path}: not abstraction tables of format {FORMAT} {FORMAT_VERSION}')
  return metadata


def fingerprint(tables: dict[str, np.ndarray]) -> str:
  """SHA-256 over the tables' streets, dtypes, shapes and bytes."""
  digest = hashlib.sha256()
  for street in STREETS:
    table = np.ascontiguousarray(tables[street])
    digest.update(f'{street}:{table.dtype.str}:{table.shape}'.encode())
    digest.update(table.tobytes())
  return digest.hexdigest()


def check_tables(tables: dict[str, np.ndarray], buckets) -> None:
  """AbstractionError unless each street's table has its street's size and holds buckets below its count."""
  for street, k in zip(STREETS, buckets, strict=True):
    table = tables.get(street)
    expected = 169 if street == 'preflop' else hand_indexer(street).size
    if table is None or table.shape != (expected,):
      shape = None if table is None else table.shape
      raise AbstractionError(f'{street} table has shape {shape}, expected ({expected},)')
    if not np.issubdtype(table.dtype, np.integer) or table.min() < 0 or table.max() >= k:
      raise AbstractionError(f'{street} table holds values outside 0..{k - 1}')


def is_table_directory(directory: str | os.PathLike) -> bool:
  """Whether `directory`'s metadata.json says `save` wrote it: "format":
  "jaxcfr-abstraction", or, for tables saved before that marker, "format": 1 with
  four bucket sizes and a SHA-256 fingerprint (what `save` always wrote)."""
  try:
    with open(os.path.join(directory, METADATA_FILE), encoding='utf-8') as f:
      text = f.read(1 << 20)  # ours are a few kB; a large file is someone else's
      metadata = json.loads(text) if len(text) < 1 << 20 else None
  except (OSError, UnicodeDecodeError, json.JSONDecodeError, RecursionError):
    return False
  return isinstance(metadata, dict) and (
    metadata.get('format') == FORMAT or (metadata.get('format') == _LEGACY_FORMAT and _legacy(metadata))
  )


def _legacy(metadata: dict) -> bool:
  buckets, digest = metadata.get('buckets'), metadata.get('fingerprint')
  return (
    isinstance(buckets, list)
    and len(buckets) == 4
    and all(isinstance(b, int) for b in buckets)
    and isinstance(digest, str)
    and re.fullmatch('[0-9a-f]{64}', digest) is not None
  )
