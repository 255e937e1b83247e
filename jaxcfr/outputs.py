"""Writing output files and directories without ever clobbering a user's data.

One rule for every output of every command: a path is written only if nothing is
there, or if what is there was written by jaxcfr and the caller passed `force`.
A user's file or directory is never deleted or overwritten, with or without
`force`. Everything is checked before any work (so a bad path fails in a second,
not after an hour of solving) and re-checked just before the final rename.

    from jaxcfr import outputs

    # Before any work, for each output option (None and '-' pass):
    outputs.check_file(args.json, '--json', force=args.force, suffixes=('.json',))
    outputs.check_file(args.plot, '--plot', force=args.force, suffixes=('.png',))
    # ... the work ...
    try:
      outputs.write_json(args.json, result, force=args.force, what='--json')  # '-': stdout
      outputs.write_png(args.plot, figure, force=args.force, what='--plot')
    except outputs.OutputError as error:
      ...  # print the result (so it is not lost), then the one-line message; exit 2

Every failure is an `OutputError` (a ValueError) with one line for the user that
names the option and the path and says what to do, for example

    --json: 'out.json' exists; pass --force to replace it
    --json: 'notes.txt' exists and was not written by jaxcfr; choose another path
    --json: cannot write '/proc/x.json': cannot create a file in '/proc' (No such file or directory)

(messages for a `what` that is not an option, such as 'policy', say `force=True`).

How jaxcfr's outputs are recognised (`is_ours`), by content, reading little:

- JSON: an object whose first key is `"producer": "jaxcfr"` (`json_text` puts it
  there) or `"format": "jaxcfr-..."` (policies, checkpoint and table metadata);
- PNG: a tEXt chunk `Software=jaxcfr` before the image data (`write_png`);
- zip / `.npz`: a `metadata.npy` entry holding a JSON object with
  `"format": "jaxcfr-..."` (`policies.save_npz`).

Directories (the abstraction tables) are ours when the caller's `is_ours_dir`
says so, and are replaced only if they hold nothing but the files the caller
names; only those files are removed (`check_directory`, `write_directory`).

Imports nothing heavy (no JAX, no NumPy).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
import struct
import sys
import tempfile
import zipfile
from collections.abc import Callable, Collection

PRODUCER = 'jaxcfr'
_PNG_SIGNATURE = b'\x89PNG\r\n\x1a\n'
_ZIP_SIGNATURE = b'PK\x03\x04'
_NPY_SIGNATURE = b'\x93NUMPY'
_JSON_MARKER = re.compile(rb'\A(?:\xef\xbb\xbf)?\s*\{\s*"(?:producer"\s*:\s*"jaxcfr"|format"\s*:\s*"jaxcfr-)')
_SNIFF_BYTES = 4096
_MAX_METADATA_BYTES = 1 << 24


class OutputError(ValueError):
  """An output path that cannot or must not be written: one line for the user."""


# Recognising our own outputs.


def is_ours(path: str | os.PathLike) -> bool:
  """Whether the regular file at `path` was written by jaxcfr (JSON, PNG or .npz
  carrying jaxcfr's marker); False for anything else, unreadable files included."""
  try:
    with open(path, 'rb') as file:
      head = file.read(_SNIFF_BYTES)
      if head.startswith(_PNG_SIGNATURE):
        file.seek(len(_PNG_SIGNATURE))
        return _png_is_ours(file)
  except OSError:
    return False
  if head.startswith(_ZIP_SIGNATURE):
    return _zip_is_ours(path)
  return _JSON_MARKER.match(head) is not None


def _png_is_ours(file) -> bool:
  """Walks the chunks before the image data, reading only text chunks."""
  while True:
    header = file.read(8)
    if len(header) < 8:
      return False
    length, kind = struct.unpack('>I4s', header)
    if kind in (b'IDAT', b'IEND'):
      return False
    if kind == b'tEXt' and length <= _SNIFF_BYTES:
      keyword, _, text = file.read(length).partition(b'\0')
      if keyword == b'Software' and text == PRODUCER.encode():
        return True
      file.seek(4, os.SEEK_CUR)  # the CRC
    else:
      file.seek(length + 4, os.SEEK_CUR)


def _zip_is_ours(path) -> bool:
  """A .npz whose `metadata.npy` entry (a uint8 array of JSON text) says jaxcfr."""
  try:
    with zipfile.ZipFile(path) as archive:
      info = archive.getinfo('metadata.npy')
      if info.file_size > _MAX_METADATA_BYTES:
        return False
      data = archive.read(info)
  except (OSError, KeyError, zipfile.BadZipFile, RuntimeError, ValueError, EOFError):
    return False
  if not data.startswith(_NPY_SIGNATURE) or len(data) < 10:
    return False
  # .npy: magic, version (major, minor), header length (2 bytes in 1.0, 4 after), header, data.
  if data[6] == 1:
    start = 10 + struct.unpack('<H', data[8:10])[0]
  else:
    start = 12 + struct.unpack('<I', data[8:12])[0]
  try:
    metadata = json.loads(data[start:].decode())
  except (UnicodeDecodeError, json.JSONDecodeError):
    return False
  return isinstance(metadata, dict) and str(metadata.get('format', '')).startswith(PRODUCER + '-')


# Checks before any work.


def check_file(
  path: str | os.PathLike | None, what: str, *, force: bool = False, suffixes: Collection[str] = ()
) -> None:
  """Refuses, with an `OutputError`, a file output that could not or must not be
  written; call it for every output before any work. `None` and '-' (stdout) pass.

  Refused: a name not ending in one of `suffixes` (when given, e.g. ('.json',)), a
  missing parent directory, a directory, a link or anything but a regular file at
  `path`, a parent where no file can be created (probed by creating and removing
  one: permission bits do not tell, e.g. for root or on /proc), and an existing
  file unless `force` is set and the file was written by jaxcfr (`is_ours`).
  """
  if path is None or path == '-':
    return
  path = os.fspath(path)
  if not path:
    raise OutputError(f'{what}: the path is empty')
  if suffixes and not path.lower().endswith(tuple(s.lower() for s in suffixes)):
    kinds = ' or '.join(s.lstrip('.').upper() for s in suffixes)
    raise OutputError(f'{what}: {path!r} must name a {kinds} file (ending in {" or ".join(suffixes)})')
  if path.endswith(('/', os.sep)):
    raise OutputError(f'{what}: {path!r} names a directory; give a file path')
  parent = _parent(path)
  if not os.path.isdir(parent):
    raise OutputError(f'{what}: directory {parent!r} does not exist')
  _check_existing_file(path, what, force)
  _probe(parent, path, what)


def check_directory(
  path: str | os.PathLike | None,
  what: str,
  *,
  force: bool = False,
  is_ours_dir: Callable[[str], bool],
  files: Collection[str],
) -> None:
  """Refuses, with an `OutputError`, a directory output that could not or must not
  be written; call it before any work. `None` passes.

  Nothing there, or an empty directory, is fine. An existing directory is replaced
  only with `force`, only if `is_ours_dir(path)` says jaxcfr wrote it, and only if
  it holds nothing but `files` (the names jaxcfr writes there). A file, a link or
  any other directory is refused, as is a parent where nothing can be created.
  """
  if path is None:
    return
  path = os.fspath(path)
  if not path:
    raise OutputError(f'{what}: the path is empty')
  parent = _parent(path)
  if not os.path.isdir(parent):
    raise OutputError(f'{what}: directory {parent!r} does not exist')
  _check_existing_directory(path, what, force, is_ours_dir, files)
  _probe(parent, path, what)


def _parent(path: str) -> str:
  return os.path.dirname(os.path.abspath(path))


def _hint(what: str) -> str:
  return '--force' if what.startswith('-') else 'force=True'


def _mode(path: str, what: str) -> int | None:
  """`path`'s mode (not following a link), or None when nothing is there."""
  try:
    return os.lstat(path).st_mode
  except FileNotFoundError:
    return None
  except OSError as error:
    raise OutputError(f'{what}: cannot inspect {path!r} ({_reason(error)})') from None


def _check_existing_file(path: str, what: str, force: bool) -> bool:
  """Refuses what must not be replaced; True if a file of ours is there (to replace)."""
  mode = _mode(path, what)
  if mode is None:
    return False
  if stat.S_ISDIR(mode):
    raise OutputError(f'{what}: {path!r} is a directory; give a file path')
  if stat.S_ISLNK(mode):
    raise OutputError(f'{what}: {path!r} is a symbolic link; choose another path')
  if not stat.S_ISREG(mode):
    raise OutputError(f'{what}: {path!r} is not a regular file; choose another path')
  if not is_ours(path):
    raise OutputError(f'{what}: {path!r} exists and was not written by jaxcfr; choose another path')
  if not force:
    raise OutputError(f'{what}: {path!r} exists; pass {_hint(what)} to replace it')
  return True


def _check_existing_directory(path: str, what: str, force: bool, is_ours_dir, files) -> bool:
  """Refuses what must not be replaced; True if a non-empty directory of ours is there."""
  mode = _mode(path, what)
  if mode is None:
    return False
  if stat.S_ISLNK(mode):
    raise OutputError(f'{what}: {path!r} is a symbolic link; choose another path')
  if not stat.S_ISDIR(mode):
    raise OutputError(
      f'{what}: {path!r} exists and is not a directory written by jaxcfr; choose another path'
    )
  try:
    entries = sorted(os.listdir(path))
  except OSError as error:
    raise OutputError(f'{what}: cannot list {path!r} ({_reason(error)}); choose another path') from None
  if not entries:
    return False
  if not is_ours_dir(path):
    raise OutputError(
      f'{what}: {path!r} exists and is not a directory written by jaxcfr; choose another path'
    )
  others = [name for name in entries if name not in files]
  if others:
    shown = ', '.join(others[:3]) + (', ...' if len(others) > 3 else '')
    raise OutputError(
      f'{what}: {path!r} also holds files jaxcfr did not write ({shown}); choose another path'
    )
  if not force:
    raise OutputError(f'{what}: {path!r} exists; pass {_hint(what)} to replace it')
  return True


def _probe(parent: str, path: str, what: str) -> None:
  """Creates and removes a file in `parent`: the only reliable test that it can be written."""
  try:
    handle, probe = tempfile.mkstemp(dir=parent, prefix='.jaxcfr-probe-')
  except OSError as error:
    raise OutputError(
      f'{what}: cannot write {path!r}: cannot create a file in {parent!r} ({_reason(error)})'
    ) from None
  os.close(handle)
  os.unlink(probe)


def _reason(error: OSError) -> str:
  return error.strerror or str(error)


# Writing.


def write_file(
  path: str | os.PathLike, write: Callable, *, force: bool = False, what: str = 'output'
) -> None:
  """Writes a file atomically: `write(file)` fills a temporary file (binary) in the
  same directory, which then takes the place of `path` with the usual mode (0666
  less the umask). `path` is checked again as in `check_file` just before: where
  nothing is there the file is hard-linked into place (which cannot replace a file
  that appears in between), else our own file is renamed over. '-' writes to stdout.

  Any OS failure (no space, no permission, ...) raises `OutputError` with one line;
  nothing is left behind and an existing file at `path` is untouched.
  """
  path = os.fspath(path)
  if path == '-':
    try:
      write(sys.stdout.buffer)
      sys.stdout.flush()
    except OSError as error:
      raise OutputError(f'{what}: cannot write to stdout ({_reason(error)})') from None
    return
  parent = _parent(path)
  try:
    handle, temporary = tempfile.mkstemp(dir=parent, prefix='.jaxcfr-', suffix=os.path.splitext(path)[1])
  except OSError as error:
    raise OutputError(
      f'{what}: cannot write {path!r}: cannot create a file in {parent!r} ({_reason(error)})'
    ) from None
  try:
    with os.fdopen(handle, 'wb') as file:
      write(file)
    os.chmod(temporary, 0o666 & ~_umask())  # mkstemp's 0600 would surprise
    if _check_existing_file(path, what, force) or not _link(temporary, path, what, force):
      os.replace(temporary, path)
  except OSError as error:
    _remove(temporary)
    raise OutputError(f'{what}: cannot write {path!r} ({_reason(error)})') from None
  except BaseException:
    _remove(temporary)
    raise


def json_text(payload: dict) -> str:
  """`payload` as indented JSON with `"producer": "jaxcfr"` as its first key (the mark
  `is_ours` looks for), ending in a newline."""
  return (
    json.dumps({'producer': PRODUCER, **{k: v for k, v in payload.items() if k != 'producer'}}, indent=2)
    + '\n'
  )


def write_json(path: str | os.PathLike, payload: dict, *, force: bool = False, what: str = '--json') -> None:
  """Writes `json_text(payload)` to `path` with `write_file`, or to stdout for '-'."""
  text = json_text(payload)
  if os.fspath(path) == '-':
    try:
      sys.stdout.write(text)
      sys.stdout.flush()
    except OSError as error:
      raise OutputError(f'{what}: cannot write to stdout ({_reason(error)})') from None
    return
  write_file(path, lambda file: file.write(text.encode()), force=force, what=what)


def write_png(
  path: str | os.PathLike, figure, *, force: bool = False, what: str = '--plot', dpi: int = 100
) -> None:
  """Saves a matplotlib `figure` as PNG with `write_file`, marked Software=jaxcfr."""
  write_file(
    path,
    lambda file: figure.savefig(file, format='png', dpi=dpi, metadata={'Software': PRODUCER}),
    force=force,
    what=what,
  )


def write_directory(
  path: str | os.PathLike,
  write: Callable[[str], None],
  *,
  force: bool = False,
  what: str = 'output',
  is_ours_dir: Callable[[str], bool],
  files: Collection[str],
) -> None:
  """Writes a directory atomically: `write(staging)` fills a new directory beside
  `path`, which is then renamed to `path`. An existing directory is re-checked as
  in `check_directory`; if replaced, only its `files` are removed (a file that
  appeared there meanwhile is kept, and the message says where). Any OS failure
  raises `OutputError`; the staging directory is removed and `path` is untouched.
  """
  path = os.fspath(path)
  parent = _parent(path)
  try:
    staging = tempfile.mkdtemp(dir=parent, prefix='.jaxcfr-')
  except OSError as error:
    raise OutputError(
      f'{what}: cannot write {path!r}: cannot create a directory in {parent!r} ({_reason(error)})'
    ) from None
  try:
    os.chmod(staging, 0o777 & ~_umask())  # mkdtemp makes it private
    write(staging)
    if _check_existing_directory(path, what, force, is_ours_dir, files):
      _replace_directory(staging, path, parent, what, files)
    else:
      os.replace(staging, path)  # onto nothing or an empty directory
  except OSError as error:
    shutil.rmtree(staging, ignore_errors=True)
    raise OutputError(f'{what}: cannot write {path!r} ({_reason(error)})') from None
  except BaseException:
    shutil.rmtree(staging, ignore_errors=True)
    raise


def _replace_directory(staging: str, path: str, parent: str, what: str, files: Collection[str]) -> None:
  holder = tempfile.mkdtemp(dir=parent, prefix='.jaxcfr-old-')
  old = os.path.join(holder, 'old')
  try:
    os.rename(path, old)
  except BaseException:
    os.rmdir(holder)
    raise
  try:
    os.rename(staging, path)
  except BaseException:
    os.rename(old, path)
    os.rmdir(holder)
    raise
  for name in files:
    try:
      os.unlink(os.path.join(old, name))
    except FileNotFoundError:
      pass
  try:
    os.rmdir(old)
  except OSError:
    raise OutputError(
      f'{what}: {path!r} was written; files that appeared in the old directory meanwhile are kept in {old!r}'
    ) from None
  os.rmdir(holder)


def _link(temporary: str, path: str, what: str, force: bool) -> bool:
  """Puts `temporary` at `path` only if nothing is there (a hard link cannot replace a
  file that appeared since the check); False where that must be left to a rename."""
  try:
    os.link(temporary, path)
  except FileExistsError:  # something appeared meanwhile: refused unless ours and forced
    _check_existing_file(path, what, force)
    return False
  except OSError:  # a file system without hard links
    return False
  os.unlink(temporary)
  return True


def _remove(path: str) -> None:
  try:
    os.unlink(path)
  except FileNotFoundError:
    pass


def _umask() -> int:
  umask = os.umask(0)
  os.umask(umask)
  return umask
