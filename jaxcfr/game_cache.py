"""A disk cache of compiled games, so that a second run of the same game skips compilation.

Compiling walks every history of a game in Python (for a game of millions of
histories, a wait worth skipping). `load_or_compile`
keeps what it compiled in one compressed `.npz` per (game, dtype) and loads it
on the next run instead:

    game, seconds, hit = jaxcfr.game_cache.load_or_compile('openspiel:leduc_poker(players=3)')

An entry holds every array of the `CompiledGame`, its static fields, its
`GameInfo` (the information-state keys as UTF-8 bytes with offsets) and a JSON
header (`metadata.npy`, first key `"format": "jaxcfr-compiled-game"`) with the
entry's key and a SHA-256 of the arrays. The file name comes from the game's
canonical spec and the dtype; the header's key adds the library version,
`FORMAT_VERSION`, a digest of the library's source and, for OpenSpiel games,
OpenSpiel's version. An entry whose key differs (stale), whose arrays do not hash
to the recorded digest, or that cannot be read (truncated, not a zip) is never
used: one line on the log says so, the game is compiled and the entry replaced.

Entries live in `directory()`: `$JAXCFR_CACHE_DIR/games` when `JAXCFR_CACHE_DIR`
is set, else `$XDG_CACHE_HOME/jaxcfr/games`, else `~/.cache/jaxcfr/games` (beside
JAX's compiled programs, `backend.cache_directory()`). `JAXCFR_NO_CACHE=1` turns
both caches off. Only games given as spec strings are cached, and only those that
took at least `MIN_COMPILE_SECONDS` to compile are written (the built-in games
compile in milliseconds). Deleting the directory is always safe.
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import hashlib
import importlib.metadata
import json
import os
import pathlib
import re
import tempfile
import time
import zipfile
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np

from jaxcfr import backend, compiler, memory
from jaxcfr.compiled import CompiledGame, GameInfo, Level, SequenceForm
from jaxcfr.games import base, load_game
from jaxcfr.games.openspiel import OpenSpielGame
from jaxcfr.version import __version__

__all__ = [
  'FORMAT',
  'FORMAT_VERSION',
  'MIN_COMPILE_SECONDS',
  'CacheError',
  'cache_key',
  'canonical_spec',
  'directory',
  'enabled',
  'entry_path',
  'load',
  'load_or_compile',
  'save',
]

FORMAT = 'jaxcfr-compiled-game'
FORMAT_VERSION = 1  # raise when the layout of an entry changes
MIN_COMPILE_SECONDS = 1.0  # games that compile faster are not written to the cache
_TYPES = {cls.__name__: cls for cls in (CompiledGame, SequenceForm, Level)}
_METADATA = 'metadata'
_CHUNK = 1 << 20  # bytes inflated at a time


class CacheError(Exception):
  """An entry that must not be used; the message says why, in a few words."""


def directory() -> str:
  """Where compiled games are kept: `$JAXCFR_CACHE_DIR/games`, else
  `$XDG_CACHE_HOME/jaxcfr/games`, else `~/.cache/jaxcfr/games`."""
  if os.environ.get(backend.CACHE_ENV):
    return os.path.join(os.environ[backend.CACHE_ENV], 'games')
  return os.path.join(os.path.dirname(backend.cache_directory()), 'games')


def enabled() -> bool:
  """False when `JAXCFR_NO_CACHE` is set (to anything but '' or '0')."""
  return os.environ.get(backend.NO_CACHE_ENV, '') in ('', '0')


def load_or_compile(
  spec: str | base.Game,
  *,
  dtype=jnp.float32,
  max_histories: int | None = compiler.DEFAULT_MAX_HISTORIES,
  progress: Callable[[int, int], None] | None = None,
  cache: bool = True,
  log: Callable[[str], None] | None = None,
) -> tuple[CompiledGame, float, bool]:
  """`(game, seconds, hit)`: the compiled game of `spec`, loaded from the cache when an
  intact entry for this game, dtype and library is there (`hit`), else compiled with
  `compiler.timed_compile` (arguments as for `compile_game`) and, if that took at least
  `MIN_COMPILE_SECONDS` (or replaces a bad entry), saved for next time. `seconds` is the
  time to load or compile. `cache=False` (or `JAXCFR_NO_CACHE=1`) neither reads nor
  writes. Problems with the cache (a corrupt or stale entry, a directory that cannot be
  written) go to `log` as one line each and never fail the call."""
  log = log or (lambda message: None)
  dtype = jnp.dtype(dtype)
  usable = cache and enabled() and isinstance(spec, str)
  if usable and dtype == jnp.float64 and not jax.config.jax_enable_x64:
    usable = False  # compile_game raises the error for this
  if usable:
    game_object = load_game(spec)
    key = cache_key(game_object, dtype)
    path = entry_path(key)
    start, replace = time.perf_counter(), False
    try:
      game = load(path, key, name=str(game_object))
    except FileNotFoundError:
      pass
    except CacheError as error:
      log(f'cache entry for {key["game"]} ({dtype}) was {error}; recompiling')
      replace = True
    else:
      if max_histories is None or game.num_histories <= max_histories:
        return game, time.perf_counter() - start, True
    spec = game_object
  game, seconds = compiler.timed_compile(spec, dtype=dtype, max_histories=max_histories, progress=progress)
  if usable and (seconds >= MIN_COMPILE_SECONDS or replace):
    try:
      save(path, game, key)
    except (OSError, _Uncacheable) as error:
      log(f'could not cache the compiled {key["game"]} in {directory()} ({error}); continuing')
  return game, seconds, False


def canonical_spec(game: base.Game) -> str:
  """The spec that names `game` in the cache: OpenSpiel's own string for OpenSpiel games
  (so `openspiel:leduc_poker` and `openspiel:leduc_poker()` share an entry), else `str(game)`."""
  if isinstance(game, OpenSpielGame):
    return f'openspiel:{game.game}'
  return str(game)


def cache_key(game: base.Game, dtype) -> dict:
  """Everything an entry must match to be used (stored in its header)."""
  key = {
    'game': canonical_spec(game),
    'dtype': str(jnp.dtype(dtype)),
    'version': __version__,
    'format_version': FORMAT_VERSION,
    'source': _source_digest(),
  }
  if isinstance(game, OpenSpielGame):
    key['openspiel'] = importlib.metadata.version('open_spiel')
  return key


def entry_path(key: dict) -> str:
  """`<directory>/<readable game name>-<hash of game and dtype>.npz`: one entry per game and
  dtype, which a newer library replaces rather than adds to."""
  digest = hashlib.sha256(json.dumps([key['game'], key['dtype']]).encode()).hexdigest()[:16]
  readable = re.sub(r'[^A-Za-z0-9_.,=-]+', '_', key['game'])[:60]
  return os.path.join(directory(), f'{readable}-{key["dtype"]}-{digest}.npz')


def save(path: str, game: CompiledGame, key: dict) -> None:
  """Writes `game` to `path` atomically (a temporary file in the same directory, then a
  rename over any earlier entry)."""
  arrays: list[np.ndarray] = []
  structure = _encode(game, arrays)
  header = {'format': FORMAT, 'key': key, 'digest': _digest(arrays), 'structure': structure}
  contents = {f'a{i}': array for i, array in enumerate(arrays)}
  contents[_METADATA] = np.frombuffer(json.dumps(header).encode(), np.uint8)
  parent = os.path.dirname(path)
  os.makedirs(parent, exist_ok=True)
  handle, temporary = tempfile.mkstemp(dir=parent, prefix='.jaxcfr-', suffix='.npz.partial')
  try:
    # np.savez_compressed's zlib level 6 writes far slower than level 1 for a little less: level 1
    with (
      os.fdopen(handle, 'wb') as file,
      zipfile.ZipFile(file, 'w', zipfile.ZIP_DEFLATED, compresslevel=1) as archive,
    ):
      for name, array in contents.items():
        with archive.open(f'{name}.npy', 'w', force_zip64=True) as member:
          np.lib.format.write_array(member, array, allow_pickle=False)
    os.chmod(temporary, 0o644)
    os.replace(temporary, path)
  except BaseException:
    pathlib.Path(temporary).unlink(missing_ok=True)
    raise


def load(path: str, key: dict | None = None, name: str | None = None) -> CompiledGame:
  """The game saved at `path`, its arrays on the default device. `CacheError` if the entry
  is corrupt or truncated, or (given `key`) was made for another key; FileNotFoundError if
  there is none. `name` replaces the recorded game name (the same game spelled differently).

  Each array is inflated straight into aligned memory (`memory.aligned`), which a CPU device
  array then uses in place: a loaded game exists once on the host."""
  try:
    with zipfile.ZipFile(path) as archive:
      header = json.loads(bytes(_read_array(archive, _METADATA)).decode())
      if header.get('format') != FORMAT:
        raise CacheError('not a compiled game')
      if key is not None and header.get('key') != key:
        raise CacheError(f'stale (made for {_difference(header.get("key"), key)})')
      count = len(archive.namelist()) - 1
      arrays = [_read_array(archive, f'a{i}') for i in range(count)]
  except (FileNotFoundError, NotADirectoryError) as error:
    raise FileNotFoundError(path) from error
  except CacheError:
    raise
  except OSError as error:
    raise CacheError(f'unreadable ({error.strerror or type(error).__name__})') from None
  except Exception as error:  # noqa: BLE001 (BadZipFile, zlib.error, EOFError, ...: any unreadable entry)
    raise CacheError(f'corrupt or truncated ({type(error).__name__})') from None
  if _digest(arrays) != header.get('digest'):
    raise CacheError('corrupt (its arrays do not match their SHA-256)')
  try:
    game = _decode(header['structure'], arrays)
  except (KeyError, IndexError, TypeError, ValueError) as error:
    raise CacheError(f'corrupt ({type(error).__name__} in its structure)') from None
  if name is not None and name != game.info.name:
    game = game.replace(info=_game_info(name, game.info.infoset_keys, game.info.fingerprint))
  return jax.block_until_ready(game)


def _read_array(archive: zipfile.ZipFile, name: str) -> np.ndarray:
  """The `.npy` member `name` of `archive`, read into a new aligned array (its CRC checked)."""
  with archive.open(f'{name}.npy') as member:
    version = np.lib.format.read_magic(member)
    read_header = (
      np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
    )
    shape, fortran_order, dtype = read_header(member)
    if fortran_order or dtype.hasobject:
      raise ValueError('not a C-ordered array of numbers')
    array = memory.empty_aligned(shape, dtype)
    view, filled = memoryview(array.reshape(-1).view(np.uint8)), 0
    while filled < array.nbytes:
      read = member.readinto(view[filled : filled + _CHUNK])  # chunks: ZipExtFile inflates what is asked
      if not read:
        raise EOFError(f'{name} ends early')
      filled += read
    if member.read(1):  # also reads to the end, where zipfile checks the CRC
      raise ValueError(f'{name} is longer than its header says')
  return array


def _difference(found, wanted: dict) -> str:
  if not isinstance(found, dict):
    return 'an unknown key'
  fields = [f'{k} {found.get(k)!r}' for k in wanted if found.get(k) != wanted[k]]
  return ', '.join(fields) or 'another key'


class _Uncacheable(TypeError):
  """A field of a kind the cache cannot store (the game is then compiled every time)."""


def _encode(value, arrays: list):
  """A JSON description of `value` whose arrays are appended to `arrays` (by position)."""
  if isinstance(value, jax.Array | np.ndarray):
    arrays.append(np.asarray(value))
    return {'array': len(arrays) - 1}
  if value is None or isinstance(value, bool | int | float | str):
    return value
  if isinstance(value, tuple):
    return [_encode(v, arrays) for v in value]
  if isinstance(value, GameInfo):
    keys = [k.encode() for k in value.infoset_keys]
    fields = {k: v for k, v in vars(value).items() if k != 'infoset_keys'}
    if set(fields) != {'name', 'fingerprint'}:
      raise _Uncacheable(f'GameInfo has fields {sorted(fields)}')
    return {
      'type': 'GameInfo',
      **fields,
      'key_bytes': _encode(np.frombuffer(b''.join(keys), np.uint8), arrays),
      'key_offsets': _encode(np.cumsum([0] + [len(k) for k in keys], dtype=np.int64), arrays),
    }
  if type(value).__name__ in _TYPES and dataclasses.is_dataclass(value):
    fields = {f.name: _encode(getattr(value, f.name), arrays) for f in dataclasses.fields(value)}
    return {'type': type(value).__name__, 'fields': fields}
  raise _Uncacheable(f'cannot store a {type(value).__name__}')


def _decode(value, arrays: list):
  if isinstance(value, list):
    return tuple(_decode(v, arrays) for v in value)
  if not isinstance(value, dict):
    return value
  if 'array' in value:
    return jax.device_put(arrays[value['array']])
  if value['type'] == 'GameInfo':
    data = arrays[value['key_bytes']['array']].tobytes()
    offsets = arrays[value['key_offsets']['array']].tolist()
    keys = tuple(data[a:b].decode() for a, b in zip(offsets[:-1], offsets[1:], strict=True))
    return _game_info(value['name'], keys, value['fingerprint'])
  cls = _TYPES[value['type']]
  return cls(**{name: _decode(field, arrays) for name, field in value['fields'].items()})


def _game_info(name: str, infoset_keys: tuple[str, ...], fingerprint: str) -> GameInfo:
  """A `GameInfo` with a known fingerprint (its constructor computes one from the compiler's
  shape key, which the entry need not know)."""
  info = GameInfo.__new__(GameInfo)
  info.name, info.infoset_keys, info.fingerprint = name, infoset_keys, fingerprint
  return info


def _digest(arrays: list[np.ndarray]) -> str:
  """SHA-256 of the arrays' dtypes, shapes and bytes, in order."""
  digest = hashlib.sha256()
  for array in arrays:
    digest.update(f'{array.dtype.str}{array.shape};'.encode())
    digest.update(np.ascontiguousarray(array).data)
  return digest.hexdigest()


@functools.cache
def _source_digest() -> str:
  """SHA-256 of the source of the modules that compiling a game runs (this one, the compiler,
  the games, and whatever they import from jaxcfr, found by reading their imports): a change to
  the compiler or to a game's rules makes earlier entries stale, even without a new version."""
  root = pathlib.Path(__file__).parent
  digest = hashlib.sha256()
  for path in _compiling_sources(root):
    digest.update(str(path.relative_to(root)).encode() + b'\0' + path.read_bytes() + b'\0')
  return digest.hexdigest()[:16]


def _compiling_sources(root: pathlib.Path) -> list[pathlib.Path]:
  """The files of `jaxcfr.game_cache`, `jaxcfr.compiler`, `jaxcfr.games` and, transitively,
  every jaxcfr module they import (anywhere in a file), sorted."""
  package = root.name

  def files(module: str) -> list[pathlib.Path]:
    base = root.joinpath(*module.split('.')[1:])
    return [path for path in (base.with_suffix('.py'), base / '__init__.py') if path.is_file()]

  pending = [root / 'game_cache.py', *sorted((root / 'games').glob('*.py'))]
  seen: set[pathlib.Path] = set()
  while pending:
    path = pending.pop()
    if path in seen:
      continue
    seen.add(path)
    for node in ast.walk(ast.parse(path.read_bytes())):
      if isinstance(node, ast.Import):
        names = [alias.name for alias in node.names]
      elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
        names = [node.module, *(f'{node.module}.{alias.name}' for alias in node.names)]
      else:
        continue
      for name in names:
        if name.startswith(package + '.'):  # not the package's own __init__, which compiles nothing
          pending.extend(files(name))
  return sorted(seen)
