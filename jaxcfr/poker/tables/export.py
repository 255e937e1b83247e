"""`jaxcfr bot export`: a blueprint as a bot directory that Chipzen's upload path takes, NumPy only.

    report = export_bot('blueprint.npz', 'bot/', tier='pro')      # writes bot/ atomically

The directory (`LAYOUT`): `bot.py` (the entry point: a `chipzen.Bot` subclass, `python -u bot.py`
connects to `CHIPZEN_WS_URL` with `CHIPZEN_TOKEN` as the platform sets them), `runtime/` (this
repository's runtime files at their paths, `RUNTIME_MODULES` and `TABLE_MODULES`, with empty package
`__init__.py` stand-ins: NumPy, no JAX), `data/` (the blueprint file and the bucket tables as a
`bundle`: plain arrays, no pickle), `requirements.txt` (numpy and the SDK, the platform's allowed
packages), a `Dockerfile` (the SDK's container contract: `python -u` as the entry point, a non-root
user, nothing written outside /tmp), and a `README.md`.

Tiers (`TIERS`, Chipzen's DEV-MANUAL 7.2): the export refuses, before writing anything, a bot whose
compressed size is over the tier's upload limit less `MARGIN`; memory and decision time are measured
by `experiments/export_tiers.py` on the tier's share of a core.
"""

from __future__ import annotations

import dataclasses
import io
import os
import textwrap
import zipfile

import numpy as np

from jaxcfr import outputs
from jaxcfr.poker.eval import depth
from jaxcfr.poker.runtime import RUNTIME_MODULES, copy_runtime
from jaxcfr.poker.tables import bundle


@dataclasses.dataclass(frozen=True)
class Tier:
  """A Chipzen tier's limits."""

  name: str
  upload_mb: float  # the compressed upload
  cores: float
  memory_mb: int
  decision_ms: int  # the decision clock in ranked play
  tmp_mb: int


TIERS = {
  'free': Tier('free', 5, 0.5, 256, 500, 10),
  'pro': Tier('pro', 25, 1, 512, 1000, 50),
  'elite': Tier('elite', 100, 2, 1024, 2000, 200),
}
IMAGE_MB = 100  # the decompressed image, at every tier
MARGIN = 0.25  # every figure within 75% of its limit
# The tables' own files beside the runtime's: the table hand, the seat, the Chipzen adapter, the
# bundle, and what they read (the match engine's strategy checks, the defaults).
TABLE_MODULES = (
  'jaxcfr/poker/defaults.py',
  'jaxcfr/poker/eval/depth.py',
  'jaxcfr/poker/rules/ranges.py',
  'jaxcfr/poker/rules/translation.py',
  'jaxcfr/poker/eval/match.py',
  'jaxcfr/poker/tables/hand.py',
  'jaxcfr/poker/tables/seat.py',
  'jaxcfr/poker/tables/chipzen.py',
  'jaxcfr/poker/tables/bundle.py',
)
EXPORT_FILES = ('bot.py', 'requirements.txt', 'Dockerfile', 'README.md', 'runtime', 'data')
SDK_REQUIREMENT = 'chipzen-bot==0.6.0'
# python:3.11-alpine (musl) and a numpy musllinux wheel: the smallest official Python base that pip
# serves numpy to without a compiler.
BASE_IMAGE = 'python:3.11-alpine'


class ExportError(ValueError):
  """A blueprint that cannot be exported for the tier: one line."""


@dataclasses.dataclass
class ExportReport:
  directory: str
  tier: str
  files: int
  uncompressed_bytes: int
  compressed_bytes: int
  limit_bytes: int

  def to_json(self) -> dict:
    return dataclasses.asdict(self)


def export_bot(blueprint_path, out: str, tier: str, tables, *, force: bool = False) -> ExportReport:
  """Writes the bot directory `out` (see the module) for `tier` from the blueprint file at
  `blueprint_path` (or several of one abstraction, trained at different depths) and its abstraction
  tables (`abstractions.lookup.BucketTables`) with their river buckets by equity code (`river_buckets`
  int [1,981]: `export.river_buckets`)."""
  if tier not in TIERS:
    raise ExportError(f'unknown tier {tier!r}; one of {", ".join(TIERS)}')
  limit = int(TIERS[tier].upload_mb * 2**20 * (1 - MARGIN))
  river = tables.river_buckets
  sizes = {}

  def write(staging: str) -> None:
    data = os.path.join(staging, 'data')
    os.makedirs(data)
    bundle.save_bundle(data, tables, river, blueprint_path)
    depth.solved_table().save(os.path.join(data, bundle.PUSH_FOLD_FILE))
    copy_runtime(os.path.join(staging, 'runtime'), (*RUNTIME_MODULES, *TABLE_MODULES))
    files = {'bot.py': BOT_PY, 'requirements.txt': f'numpy>=1.24\n{SDK_REQUIREMENT}\n',
             'Dockerfile': DOCKERFILE, 'README.md': readme(tier)}  # fmt: skip
    for name, text in files.items():
      with open(os.path.join(staging, name), 'w') as f:
        f.write(text)
    sizes.update(measure(staging))
    if sizes['compressed_bytes'] > limit:
      raise ExportError(
        f'the bot is {sizes["compressed_bytes"] / 2**20:.1f} MB compressed; the {tier} tier takes '
        f'{TIERS[tier].upload_mb:g} MB, {limit / 2**20:.2f} MB with the {MARGIN:.0%} margin'
      )

  outputs.write_directory(
    out, write, force=force, what='--out', is_ours_dir=is_bot_directory, files=EXPORT_FILES
  )
  return ExportReport(out, tier, **sizes, limit_bytes=limit)


def check_same_abstraction(paths, tables) -> None:
  """ExportError unless every blueprint file of `paths` was trained on `tables` (one bundle holds one
  card abstraction)."""
  from jaxcfr.poker.blueprint import files  # noqa: PLC0415

  for path in paths:
    if files.read_metadata(path).get('abstraction_fingerprint') != tables.fingerprint:
      raise ExportError(
        f'{path!r} was not trained on the tables of {paths[0]!r}: one bot holds one abstraction'
      )


def measure(directory: str) -> dict:
  """Files, bytes on disk and bytes of the directory zipped (deflate, level 9) as an upload is."""
  total, count, buffer = 0, 0, io.BytesIO()
  with zipfile.ZipFile(buffer, 'w', zipfile.ZIP_DEFLATED, compresslevel=9) as archive:
    for root, _, names in os.walk(directory):
      for name in sorted(names):
        path = os.path.join(root, name)
        total += os.path.getsize(path)
        count += 1
        archive.write(path, os.path.relpath(path, directory))
  return {'files': count, 'uncompressed_bytes': total, 'compressed_bytes': len(buffer.getvalue())}


def is_bot_directory(directory: str) -> bool:
  """Whether `directory` holds a bot this module exported (its bundle's marker)."""
  try:
    with open(os.path.join(directory, 'data', bundle.METADATA_FILE), encoding='utf-8') as f:
      return bundle.FORMAT in f.read(4096)
  except (OSError, UnicodeDecodeError):
    return False


def bundle_tables(
  blueprint_path: str, tables_dir: str | None = None, *, quiet: bool = False, checks: int = 20_000
):
  """The blueprint's abstraction tables (`tables_dir`, default where it was trained) as
  `bundle.BundleTables`: the river's bucket of every equity code read off the river table over every
  river class (`river_buckets`), then the bundle's buckets checked against the tables' on `checks`
  random deals of each street. ExportError with one line where that cannot be."""
  from abstractions import lookup  # noqa: PLC0415
  from abstractions.tables import river_equity_codes  # noqa: PLC0415 (JAX: only when exporting)
  from jaxcfr.poker.blueprint import files  # noqa: PLC0415

  metadata = files.read_metadata(blueprint_path)
  tables_dir = tables_dir or metadata.get('abstraction_path')
  if not tables_dir:
    raise ExportError(f'{blueprint_path!r} records no abstraction tables; give --tables DIR')
  tables = lookup.load_tables(tables_dir)
  if tables.fingerprint != metadata.get('abstraction_fingerprint', tables.fingerprint):
    raise ExportError(f'{blueprint_path!r} was not trained on the tables in {tables_dir}')
  river = river_buckets(tables, river_equity_codes(quiet=quiet))
  packed = bundle.BundleTables(
    preflop=tables.preflop, flop=tables.flop, turn=tables.turn, river=np.zeros(0, np.uint8),
    buckets=tables.buckets, fingerprint=tables.fingerprint, river_buckets=river,
  )  # fmt: skip
  check_same_buckets(packed, tables, checks)
  return packed


def check_same_buckets(packed, tables, count: int, seed: int = 0) -> None:
  """ExportError unless `packed` and `tables` give every one of `count` random deals per street the
  same bucket."""
  rng = np.random.default_rng(seed)
  cards = np.argsort(rng.random((count, 52)), 1)[:, :7]
  for street, shown in zip(('preflop', 'flop', 'turn', 'river'), (0, 3, 4, 5), strict=True):
    board = cards[:, 2 : 2 + shown] if shown else None
    if not np.array_equal(
      packed.bucket(street, cards[:, :2], board), tables.bucket(street, cards[:, :2], board)
    ):
      raise ExportError(f'the packed tables disagree with the tables on the {street}')


def river_buckets(tables, batches) -> np.ndarray:
  """The river bucket int [1,981] of each equity code, from batches of (river class, code) int [N]
  arrays that cover every river class: ExportError if one code has two buckets (the tables' river is
  not equity percentiles) or higher codes get lower buckets; codes no hand has take their
  neighbours'."""
  low = np.full(bundle.EQUITY_CODES, np.iinfo(np.int64).max)
  high = np.full(bundle.EQUITY_CODES, -1)
  for classes, codes in batches:
    buckets = np.asarray(tables.river)[classes].astype(np.int64)
    np.minimum.at(low, codes, buckets)
    np.maximum.at(high, codes, buckets)
  seen = high >= 0
  if np.any(low[seen] != high[seen]):
    raise ExportError("the tables' river buckets are not equity percentiles: one equity in two buckets")
  found = np.flatnonzero(seen)
  if np.any(np.diff(high[found]) < 0):
    raise ExportError("the tables' river buckets are not equity percentiles: not rising with the equity")
  return high[found][np.minimum(np.searchsorted(found, np.arange(bundle.EQUITY_CODES)), len(found) - 1)]


def readme(tier: str) -> str:
  limits = TIERS[tier]
  return textwrap.dedent(f"""\
    # A jaxcfr bot for Chipzen ({tier} tier)

    Exported by `jaxcfr bot export`: a jaxcfr blueprint (`data/blueprint.npz`) and its card abstraction
    (`data/tables.npz`: plain arrays), played by jaxcfr's NumPy runtime (`runtime/`, no JAX).

    - `bot.py` is the entry point: `python -u bot.py` connects to `CHIPZEN_WS_URL` with `CHIPZEN_TOKEN`
      (the platform sets both) and plays until the match ends.
    - Check it: `chipzen-sdk validate . --check-connectivity` in an environment with `requirements.txt`.
    - The {tier} tier: {limits.upload_mb:g} MB upload, {limits.cores:g} core, {limits.memory_mb} MB memory,
      {limits.decision_ms} ms a decision. Decisions are answered well inside the clock: the runtime
      answers from the blueprint in milliseconds.
    - `Dockerfile`: {BASE_IMAGE}, numpy and the SDK, a non-root user, `python -u bot.py`; the bot
      writes nothing (the root filesystem may be read-only).
    """)


BOT_PY = '''\
"""A jaxcfr blueprint at Chipzen's tables (exported by `jaxcfr bot export`; NumPy only)."""

import asyncio
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, 'runtime'))

from chipzen import Action, Bot, run_bot  # noqa: E402

from jaxcfr.poker.tables.bundle import load_bot  # noqa: E402
from jaxcfr.poker.tables.chipzen import ChipzenSeat  # noqa: E402
from jaxcfr.poker.tables.seat import Seat  # noqa: E402


class JaxcfrBot(Bot):
  """The exported blueprint, and push or fold at short stacks (`ChipzenSeat`: every answer valid, inside
  the match's clock)."""

  def __init__(self, seed: int = 0):
    seat = Seat(load_bot(os.path.join(HERE, 'data')), seed=seed)  # push or fold when stacks run short
    seat.warm_up()  # the lookup tables the runtime makes on first use, made before the first hand
    self.seat = ChipzenSeat(seat)

  def on_match_start(self, match_info: dict) -> None:
    self.seat.match_start(match_info)

  def decide(self, state):
    name, amount = self.seat.decide(state)
    return Action(action=name, amount=amount)


if __name__ == '__main__':
  asyncio.run(run_bot(os.environ['CHIPZEN_WS_URL'], JaxcfrBot(), token=os.environ.get('CHIPZEN_TOKEN')))
'''

DOCKERFILE = f"""\
# The SDK's container contract: python -u as the entry point, a non-root user, nothing written outside
# /tmp. Two stages keep the image under the 100 MB decompressed cap: the packages are installed into
# /deps and pruned (numpy's tests, type stubs, f2py and distutils), and the final image drops pip,
# setuptools and the parts of the standard library a bot never imports.
FROM {BASE_IMAGE} AS deps
COPY requirements.txt /
RUN pip install --no-cache-dir --target /deps -r /requirements.txt \\
 && find /deps -depth \\( -name tests -o -name __pycache__ -o -name '*.pyi' -o -name f2py \\
      -o -name distutils \\) -exec rm -rf {{}} +

FROM {BASE_IMAGE}
RUN pip uninstall -y -q pip setuptools; \\
    cd /usr/local/lib/python3.11 && rm -rf ensurepip idlelib tkinter lib2to3 pydoc_data turtledemo test \\
 && adduser -D -u 10001 bot
COPY --from=deps /deps /deps
WORKDIR /bot
COPY bot.py README.md ./
COPY runtime ./runtime
COPY data ./data
USER bot
ENV PYTHONPATH=/deps PYTHONDONTWRITEBYTECODE=1 TMPDIR=/tmp OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1
ENTRYPOINT ["python", "-u", "bot.py"]
"""
