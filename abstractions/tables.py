"""Building, saving and loading the card-abstraction lookup tables.

Per street a table maps the canonical (suit-isomorphism) index of (hole, board)
to a bucket: preflop by the 169 grid classes, flop and turn by EMD k-means on
equity histograms, river by equity percentiles. Percentile buckets are cut between
distinct equity values (`clustering.percentile_thresholds`): river equities are
multiples of 1/1980 and single values hold more than 1/200 of all deals, so every
bucket is non-empty (whenever there are at least as many distinct values as buckets)
and a higher equity never gets a lower bucket. Features, all against one
uniformly random opponent hand:

- river: exact equity of every class (per distinct board, every hole pair, from
  sorts with card-removal corrections), as an exact code k / 1980;
- turn: histogram over the 46 river cards of the river equity (exact), or over a
  sample of `turn_rivers` river cards per board; expected hand strength (EHS)
  and EHS^2 are the mean and mean square of the same values;
- flop: histogram over the 47 turn cards of the turn EHS (exact), or over a sample
  of `flop_turns` turn cards per board;
- preflop: the flop EHS averaged over all flops: exact equity.

Every distinct board (1,755 flops, 16,432 turns, 134,459 rivers up to suits) is
visited once with all hole pairs; a (hole, board) pair stands for `weight` real
deals (the size of the board's class), which weights percentiles and k-means.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import math
import os
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np

from abstractions import clustering, lookup
from abstractions.evaluator import JAX, materialise
from abstractions.features import HOLES, board_equities
from abstractions.indexing import STREETS
from abstractions.isomorphism import HandIndexer, hand_indexer, preflop_class
from abstractions.lookup import (
  FORMAT,
  FORMAT_VERSION,
  METADATA_FILE,
  TABLE_FILES,
  TABLES_FILE,
  AbstractionError,
  fingerprint,
  is_table_directory,
  load_tables,
)
from abstractions.lookup import check_tables as _check  # `save`'s check (the tests of the CLI lift it)
from jaxcfr import outputs
from jaxcfr.progress import Progress

PROFILES = {'default': (169, 200, 200, 200), 'small': (8, 12, 12, 8)}
EQUITY_STEPS = 1980  # river equities are (wins + ties / 2) / 990: multiples of 1 / 1980


@dataclasses.dataclass(frozen=True)
class BuildSettings:
  """What a build depends on; saved with the tables.

  buckets: per street (preflop, flop, turn, river); preflop 169 is lossless.
  bins: equal-width bins of the flop and turn equity histograms.
  turn_rivers: river cards sampled per turn board for the turn histograms (48 or
    more: all 46 per hand, exact).
  flop_turns: turn cards sampled per flop board for the flop histograms (49 or more:
    all 47 per hand, exact); the preflop equity averages the same samples.
  kmeans_sample: classes drawn (with probability proportional to their number of
    deals) to fit each k-means; every class is then assigned to its nearest centre.
  """

  buckets: tuple[int, int, int, int] = PROFILES['default']
  seed: int = 0
  bins: int = 50
  turn_rivers: int = 48
  flop_turns: int = 49
  kmeans_sample: int = 100_000
  kmeans_iterations: int = 20

  def __post_init__(self):
    if len(self.buckets) != 4 or any(int(b) < 1 for b in self.buckets):
      raise AbstractionError(
        f'buckets must be four positive sizes (preflop, flop, turn, river), got {self.buckets}'
      )
    if self.buckets[0] > 169:
      raise AbstractionError(f'at most 169 preflop buckets (the lossless classes), got {self.buckets[0]}')
    if max(self.buckets) > 65535:
      raise AbstractionError(f'at most 65,535 buckets per street, got {max(self.buckets)}')
    if (
      self.bins < 2
      or self.turn_rivers < 1
      or self.flop_turns < 1
      or self.kmeans_sample < 1
      or self.kmeans_iterations < 0
    ):
      raise AbstractionError(
        'bins >= 2, turn_rivers >= 1, flop_turns >= 1, kmeans_sample >= 1 and kmeans_iterations >= 0 '
        'are needed'
      )


def _version() -> str:
  from importlib import metadata  # noqa: PLC0415

  try:
    return metadata.version('jaxcfr')
  except metadata.PackageNotFoundError:
    return 'unknown'


def board_classes(num_cards: int) -> tuple[np.ndarray, np.ndarray]:
  """One board per suit-isomorphism class of `num_cards` board cards and the class sizes.

  Returns (boards int32 [M, num_cards], weights int64 [M]).
  """
  boards = np.fromiter(
    itertools.chain.from_iterable(itertools.combinations(range(52), num_cards)), np.int32
  ).reshape(-1, num_cards)
  classes = np.asarray(jax.jit(HandIndexer((num_cards,)).index)(boards))
  first = np.unique(classes, return_index=True)[1]
  return boards[first], np.bincount(classes)


def _batches(total: int, size: int, description: str, quiet: bool, unit: str = 'board'):
  """Slices of `size` over `total` items, with progress by jaxcfr's one rule."""
  with Progress(total=total, desc=description, unit=unit, quiet=quiet) as progress:
    for start in range(0, total, size):
      yield slice(start, min(start + size, total))
      progress.update(min(size, total - start))


def _padded(array: np.ndarray, part: slice, size: int) -> jax.Array:
  """Rows `part` of `array`, padded to `size` rows by repeating the last (one compiled shape for all
  batches); callers keep the first `part.stop - part.start` rows of the results."""
  block = array[part]
  if len(block) < size:
    block = np.concatenate([block, np.repeat(block[-1:], size - len(block), axis=0)])
  return jnp.asarray(block)


def _off_board(boards: np.ndarray, sample: int, rng: np.random.Generator) -> np.ndarray:
  """The 52 - n cards off each board [M, n], in order, or `sample` of them drawn per board: [M, C]."""
  free = np.ones((len(boards), 52), bool)
  free[np.arange(len(boards))[:, None], boards] = False
  cards = np.nonzero(free)[1].reshape(len(boards), -1).astype(np.int32)
  if sample >= cards.shape[1]:
    return cards
  return np.array([rng.choice(row, sample, replace=False) for row in cards], np.int32)


def _deals(boards: jax.Array, extra: jax.Array | None = None) -> tuple[jax.Array, jax.Array]:
  """All hole pairs (and one more card each) on boards [B, n]: cards [B, H, (C,) 2 + n (+ 1)], valid mask."""
  holes = jnp.asarray(HOLES)
  num_boards = boards.shape[0]
  if extra is None:
    cards = jnp.concatenate(
      [
        jnp.broadcast_to(holes, (num_boards, *holes.shape)),
        jnp.broadcast_to(boards[:, None], (num_boards, len(HOLES), boards.shape[1])),
      ],
      axis=-1,
    )
    return cards, ~(cards[..., :2, None] == cards[..., None, 2:]).any(axis=(-1, -2))
  deals, valid = _deals(boards)  # [B, H, 2 + n]
  shape = (*deals.shape[:2], extra.shape[-1])
  cards = jnp.concatenate(
    [
      jnp.broadcast_to(deals[:, :, None], (*shape, deals.shape[-1])),
      jnp.broadcast_to(extra[:, None, :, None], (*shape, 1)),
    ],
    axis=-1,
  )  # [B, H, C, 2 + n + 1]
  return cards, valid[:, :, None] & ~(cards[..., :-1] == cards[..., -1:]).any(axis=-1)


def _histogram(values: jax.Array, valid: jax.Array, bins: int) -> jax.Array:
  """Counts [..., bins] uint8 of values [..., S] in [0, 1] where valid, equal-width bins."""
  which = jnp.minimum((values * bins).astype(jnp.int32), bins - 1)
  one_hot = (which[..., None] == jnp.arange(bins)) & valid[..., None]
  return jnp.sum(one_hot, axis=-2, dtype=jnp.int32).astype(jnp.uint8)


@jax.jit
def _river_batch(boards):
  """Per board [B, 5]: every pair's river class [B, H], equity code [B, H] and validity."""
  equity, valid = board_equities(boards)
  cards, _ = _deals(boards)
  index = hand_indexer('river').index(cards)
  return index, jnp.round(equity * EQUITY_STEPS).astype(jnp.uint16), valid


def river_equity_codes(quiet: bool = False, weights: bool = False):
  """Every river class with its equity code (2 x wins + ties against the 990 opponent pairs, the
  river table's feature), board class by board class (all 134,459, in batches of 256): yields (class
  int [N], code uint16 [N]) and, with `weights`, each pair's deals (its board class's size) float [N]."""
  boards5, weights5 = board_classes(5)
  for part in _batches(len(boards5), 256, 'river equity', quiet):
    n = part.stop - part.start
    index, code, valid = (np.asarray(x)[:n] for x in _river_batch(_padded(boards5, part, 256)))
    found = index[valid], code[valid]  # each mask applied once: the host side is per board
    yield (*found, np.repeat(weights5[part], valid.sum(1)).astype(np.float64)) if weights else found


def _features_batch(street: str, bins: int):
  """A jitted function: (boards [B, n], next cards [B, C], values of the next street's classes)
  -> (class [B, H], histogram [B, H, bins], EHS [B, H], EHS^2 [B, H], valid [B, H])."""
  this, following = hand_indexer(street), hand_indexer(STREETS[STREETS.index(street) + 1])

  @jax.jit
  def batch(boards, next_cards, table):
    deals, valid = _deals(boards)
    cards, next_valid = _deals(boards, next_cards)  # [B, H, C, 2 + n + 1]
    index = materialise(following.index(cards))
    values = table[index]
    if values.dtype == jnp.uint16:
      values = values.astype(jnp.float32) / EQUITY_STEPS
    count = jnp.maximum(jnp.sum(next_valid, axis=-1), 1)
    ehs = jnp.sum(jnp.where(next_valid, values, 0.0), axis=-1) / count
    ehs2 = jnp.sum(jnp.where(next_valid, values**2, 0.0), axis=-1) / count
    return this.index(deals), _histogram(values, next_valid, bins), ehs, ehs2, valid

  return batch


def _kmeans_buckets(
  histograms: np.ndarray,
  weights: np.ndarray,
  k: int,
  settings: BuildSettings,
  salt: int,
  quiet: bool,
  name: str,
) -> np.ndarray:
  """EMD k-means fitted on a weighted sample of classes, then every class assigned: buckets [N]."""
  rng = np.random.default_rng([settings.seed, salt])
  n = len(histograms)
  size = min(settings.kmeans_sample, n)
  sample = rng.choice(n, size=size, replace=size > n, p=weights / weights.sum())
  start = time.perf_counter()
  fit = jax.jit(clustering.kmeans, static_argnums=(2, 3))(
    jax.random.key(settings.seed * 1_000_003 + salt),
    histograms[sample].astype(np.float32),
    k,
    settings.kmeans_iterations,
    np.ones(size, np.float32),  # an argument, not a constant XLA would try to fold
  )
  centres = fit.centres
  _log(
    quiet,
    f'{name}: k-means on {size:,} classes, mean EMD {float(fit.objectives[-1]):.4f}, '
    f'{time.perf_counter() - start:.1f} s',
  )
  assign = jax.jit(lambda h: clustering.assign(clustering.cdf(h), centres)[0])
  buckets = np.empty(n, np.uint16)
  chunk = 1 << 16
  for part in _batches(n, chunk, f'{name} assign', quiet, unit='class'):
    block = histograms[part]
    if len(block) < chunk:
      block = np.concatenate([block, np.ones((chunk - len(block), block.shape[1]), block.dtype)])
    buckets[part] = np.asarray(assign(block))[: part.stop - part.start]
  return buckets


def _log(quiet: bool, message: str) -> None:
  if not quiet:
    print(message, file=sys.stderr, flush=True)


def build_tables(
  settings: BuildSettings = BuildSettings(), quiet: bool = False
) -> tuple[dict[str, np.ndarray], dict]:
  """Builds the four bucket tables (NumPy, by canonical index) and their metadata."""
  started = time.perf_counter()
  timings = {}
  k_preflop, k_flop, k_turn, k_river = (int(b) for b in settings.buckets)
  river_size, turn_size, flop_size = (hand_indexer(s).size for s in ('river', 'turn', 'flop'))

  # River: exact equity of every class, as a code k / 1980, and its weighted distribution.
  t = time.perf_counter()
  river_code = np.zeros(river_size, np.uint16)
  seen = np.zeros(river_size, bool)
  mass = np.zeros(EQUITY_STEPS + 1)
  for index, code, weight in river_equity_codes(quiet, weights=True):
    river_code[index] = code
    seen[index] = True
    mass += np.bincount(code, weights=weight, minlength=EQUITY_STEPS + 1)
  if not seen.all():
    raise AssertionError(f'{(~seen).sum()} river classes were not reached')
  del seen
  thresholds = clustering.percentile_thresholds(np.arange(EQUITY_STEPS + 1), mass, k_river)
  # By a lookup over the 1,981 codes: far cheaper than a search for each of the 123M classes.
  river = np.searchsorted(thresholds, np.arange(EQUITY_STEPS + 1), side='left').astype(np.uint16)[river_code]
  timings['river'] = time.perf_counter() - t

  # Turn: histograms of river equity over the river cards.
  t = time.perf_counter()
  boards4, weights4 = board_classes(4)
  off_board = _off_board(boards4, settings.turn_rivers, np.random.default_rng([settings.seed, 4]))
  turn_hist = np.zeros((turn_size, settings.bins), np.uint8)
  turn_ehs = np.zeros(turn_size, np.float32)
  visits, visit_weights = [], []  # classes reached and their boards' weights: one bincount at the end
  batch = _features_batch('turn', settings.bins)
  river_table = jnp.asarray(river_code)
  size = 16 * 48 // off_board.shape[1]  # boards per batch: about 16 x 48 runouts
  for part in _batches(len(boards4), size, 'turn histograms', quiet):
    n = part.stop - part.start
    index, hist, ehs, _, valid = (
      np.asarray(x)[:n]
      for x in batch(_padded(boards4, part, size), _padded(off_board, part, size), river_table)
    )
    index = index[valid]
    turn_hist[index] = hist[valid]
    turn_ehs[index] = ehs[valid]
    visits.append(index)
    visit_weights.append(np.repeat(weights4[part].astype(np.uint8), valid.sum(1)))
  del river_table, river_code
  turn_weight = np.bincount(
    np.concatenate(visits), weights=np.concatenate(visit_weights), minlength=turn_size
  ).astype(np.float64)
  del visits, visit_weights
  timings['turn features'] = time.perf_counter() - t

  # Flop: histograms of turn EHS over the 47 turn cards; preflop equity on the way.
  t = time.perf_counter()
  boards3, weights3 = board_classes(3)
  off_board = _off_board(boards3, settings.flop_turns, np.random.default_rng([settings.seed, 3]))
  flop_hist = np.zeros((flop_size, settings.bins), np.uint8)
  flop_weight = np.zeros(flop_size)
  preflop_sum = np.zeros(169)
  preflop_weight = np.zeros(169)
  hole_class = np.asarray(preflop_class(HOLES))
  batch = _features_batch('flop', settings.bins)
  turn_table = jnp.asarray(turn_ehs)
  size = 16 * 49 // off_board.shape[1]
  for part in _batches(len(boards3), size, 'flop histograms', quiet):
    n = part.stop - part.start
    index, hist, ehs, _, valid = (
      np.asarray(x)[:n]
      for x in batch(_padded(boards3, part, size), _padded(off_board, part, size), turn_table)
    )
    index = index[valid]
    flop_hist[index] = hist[valid]
    weight = np.broadcast_to(weights3[part, None], valid.shape)
    flop_weight += np.bincount(index, weights=weight[valid], minlength=flop_size)
    classes = np.broadcast_to(hole_class, valid.shape)
    preflop_sum += np.bincount(classes[valid], weights=(weight * ehs)[valid], minlength=169)
    preflop_weight += np.bincount(classes[valid], weights=weight[valid], minlength=169)
  del turn_table
  preflop_equity = preflop_sum / preflop_weight
  timings['flop features'] = time.perf_counter() - t

  t = time.perf_counter()
  if k_preflop == 169:
    preflop = np.arange(169, dtype=np.uint16)
  else:
    combos = np.bincount(hole_class, minlength=169)
    preflop = np.searchsorted(
      clustering.percentile_thresholds(preflop_equity, combos, k_preflop), preflop_equity, side='left'
    )
    preflop = preflop.astype(np.uint16)
  flop = _kmeans_buckets(flop_hist, flop_weight, k_flop, settings, 3, quiet, 'flop')
  timings['flop k-means'] = time.perf_counter() - t
  t = time.perf_counter()
  turn = _kmeans_buckets(turn_hist, turn_weight, k_turn, settings, 4, quiet, 'turn')
  timings['turn k-means'] = time.perf_counter() - t

  tables = {'preflop': preflop, 'flop': flop, 'turn': turn, 'river': river}
  tables = {
    name: table.astype(np.uint8 if int(table.max()) < 256 else np.uint16) for name, table in tables.items()
  }
  metadata = {
    'format': FORMAT,
    'format_version': FORMAT_VERSION,
    'version': _version(),
    'buckets': list(settings.buckets),
    'settings': dataclasses.asdict(settings),
    'sampling': {
      'river': 'exact equity of every class against all 990 opponent pairs',
      'turn': 'exact histogram over all 46 river cards'
      if settings.turn_rivers >= 48
      else f'{settings.turn_rivers} of the 48 off-board river cards sampled per turn board; '
      f'EHS standard error <= {0.5 / math.sqrt(max(settings.turn_rivers - 2, 1)):.3f} per hand',
      'flop': 'exact histogram over all 47 turn cards of the turn EHS'
      if settings.flop_turns >= 49
      else f'{settings.flop_turns} of the 49 off-board turn cards sampled per flop board; '
      f'EHS standard error <= {0.5 / math.sqrt(max(settings.flop_turns - 2, 1)):.3f} per hand '
      '(the preflop equity averages these samples over all flops)',
      'kmeans': f'fitted on {settings.kmeans_sample:,} classes drawn by weight; all classes assigned',
    },
    'preflop_equity': [round(float(x), 6) for x in preflop_equity],
    'classes': {street: hand_indexer(street).size for street in STREETS},
    'seconds': {name: round(seconds, 2) for name, seconds in timings.items()}
    | {'total': round(time.perf_counter() - started, 2)},
  }
  return tables, metadata


def save(
  tables: dict[str, np.ndarray],
  metadata: dict,
  out: str | os.PathLike,
  *,
  force: bool = False,
  what: str = 'tables directory',
) -> str:
  """Writes tables.npz and metadata.json into directory `out` atomically (a staging
  directory beside it, then a rename); returns the fingerprint.

  `out` must not exist, or be empty, or (with `force`) hold tables saved here and
  nothing else; only those two files of the old tables are removed. Anything else
  raises `jaxcfr.outputs.OutputError` and is left as it was, as does any failure
  to write (`what` names `out` in the message, e.g. '--out').
  """
  _check(tables, metadata['buckets'])
  metadata = {
    'format': FORMAT,
    'format_version': FORMAT_VERSION,
    **{key: value for key, value in metadata.items() if key not in ('format', 'format_version')},
    'fingerprint': fingerprint(tables),
  }

  def write(staging: str) -> None:
    np.savez(os.path.join(staging, TABLES_FILE), **{street: tables[street] for street in STREETS})
    with open(os.path.join(staging, METADATA_FILE), 'w') as f:
      json.dump(metadata, f, indent=1)

  outputs.write_directory(
    out, write, force=force, what=what, is_ours_dir=is_table_directory, files=TABLE_FILES
  )
  return metadata['fingerprint']


def check_output(out: str | os.PathLike, what: str = 'tables directory', *, force: bool = False) -> None:
  """Refuses, before any building, an `out` that `save` would refuse (see `save`) or
  could not write (`jaxcfr.outputs.OutputError` with one message)."""
  outputs.check_directory(out, what, force=force, is_ours_dir=is_table_directory, files=TABLE_FILES)


@jax.tree_util.register_dataclass
@dataclasses.dataclass(frozen=True)
class Abstraction:
  """Bucket lookup tables, usable inside jitted code.

  Tables by canonical index: preflop [169] (by `preflop_class`), flop [1,286,792],
  turn [13,960,050], river [123,156,254]. `buckets` are the street sizes.
  """

  preflop: jax.Array
  flop: jax.Array
  turn: jax.Array
  river: jax.Array
  buckets: tuple[int, int, int, int] = dataclasses.field(metadata={'static': True})
  fingerprint: str = dataclasses.field(metadata={'static': True})

  def bucket(self, street: str, hole: jax.Array, board: jax.Array | None = None) -> jax.Array:
    """Bucket int32 [...] of hole cards [..., 2] with the street's board [..., 0|3|4|5]."""
    return lookup.bucket(self, street, hole, board, JAX)

  def as_numpy(self) -> lookup.BucketTables:
    """The same tables as NumPy arrays (views of the JAX arrays' host buffers where JAX keeps them on
    the CPU), for the lookup that imports no JAX."""
    return lookup.BucketTables(
      **{s: np.asarray(getattr(self, s)) for s in STREETS}, buckets=self.buckets, fingerprint=self.fingerprint
    )

  def buckets_of(self, hole: jax.Array, board: jax.Array) -> jax.Array:
    """Buckets int32 [..., 4] on each street (preflop, flop, turn, river) of hole [..., 2], board [..., 5]."""
    board = jnp.asarray(board)
    lengths = {'preflop': 0, 'flop': 3, 'turn': 4, 'river': 5}
    return jnp.stack([self.bucket(s, hole, board[..., : lengths[s]]) for s in STREETS], axis=-1)


def load(directory: str | os.PathLike, verify: bool = True) -> Abstraction:
  """Loads tables saved by `save` (or `jaxcfr abstract`) as an `Abstraction` (`lookup.load_tables`,
  then the arrays as JAX arrays).

  Raises AbstractionError on missing, corrupt or mismatched tables. With `verify`
  the fingerprint of the tables is recomputed and compared.
  """
  tables = load_tables(directory, verify)
  return Abstraction(
    **{s: jnp.asarray(getattr(tables, s)) for s in STREETS},
    buckets=tables.buckets,
    fingerprint=tables.fingerprint,
  )
