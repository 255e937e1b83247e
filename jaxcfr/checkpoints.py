"""Solver checkpoints with orbax-checkpoint: periodic saves, the last K kept, exact resume.

A checkpoint directory holds one orbax step per save, numbered by iteration:

    DIR/200/state     the solver state pytree (any solver: regrets, averages,
                      iteration, PRNG keys as raw key data, network parameters, ...)
    DIR/200/metadata  JSON: format, the run's identity (game, fingerprints,
                      algorithm, hyper-parameters, dtype, seed, devices), library
                      version, progress (iteration, seconds, curve) and a SHA-256
                      of the state's bytes

orbax writes each step into a temporary directory and renames it when
complete, so a kill during a save leaves the earlier steps intact. Restoring
checks the identity against the current run and the checksum against the
restored arrays; any mismatch or corruption raises `CheckpointError` with one
message, and a failed restore never writes to the directory.

A directory that holds anything else (a user's files) is refused before any
work, so orbax's keep-last-K and its cleanup of unfinished saves only ever
delete steps saved here. orbax's log lines stay off stderr unless
`set_verbose(True)`.
"""

from __future__ import annotations

import errno
import hashlib
import json
import logging
import os
import re
import shutil
import tempfile
from typing import Any

import jax
import numpy as np

from jaxcfr.compiler import CompiledGame

FORMAT = 'jaxcfr-checkpoint'
FORMAT_VERSION = 1


class CheckpointError(ValueError):
  """A checkpoint directory cannot be used: one message that says why."""


def game_digest(game: CompiledGame) -> str:
  """SHA-256 (16 hex digits) of every array of `game`: changes with payoffs and
  chance probabilities too, which the shape fingerprint ignores."""
  digest = hashlib.sha256(game.info.fingerprint.encode())
  for leaf in jax.tree.leaves(game):
    array = np.asarray(leaf)
    digest.update(f'{array.dtype}{array.shape}'.encode())
    digest.update(np.ascontiguousarray(array).tobytes())
  return digest.hexdigest()[:16]


def state_digest(state: Any) -> str:
  """SHA-256 of the bytes, dtypes and shapes of every leaf of a saveable state."""
  digest = hashlib.sha256()
  for path, leaf in jax.tree_util.tree_leaves_with_path(state):
    array = np.asarray(leaf)
    digest.update(f'{jax.tree_util.keystr(path)}{array.dtype}{array.shape}'.encode())
    digest.update(np.ascontiguousarray(array).tobytes())
  return digest.hexdigest()


def _is_key(leaf) -> bool:
  return hasattr(leaf, 'dtype') and jax.dtypes.issubdtype(leaf.dtype, jax.dtypes.prng_key)


def to_saveable(state: Any) -> dict[str, np.ndarray]:
  """`{'leaf_000': array, ...}` in flattening order; typed PRNG keys become their
  raw key data (uint32), which orbax can store."""
  leaves = jax.tree.leaves(state)
  return {
    f'leaf_{i:03d}': np.asarray(jax.random.key_data(leaf) if _is_key(leaf) else leaf)
    for i, leaf in enumerate(leaves)
  }


def from_saveable(saved: dict[str, Any], like: Any) -> Any:
  """Inverse of `to_saveable`: `like` gives the structure and says which leaves were keys."""
  leaves, treedef = jax.tree.flatten(like)
  restored = []
  for i, template in enumerate(leaves):
    leaf = saved[f'leaf_{i:03d}']
    restored.append(
      jax.random.wrap_key_data(leaf, impl=jax.random.key_impl(template)) if _is_key(template) else leaf
    )
  return jax.tree.unflatten(treedef, restored)


def describe(state: Any) -> list[list]:
  """`[[path, dtype, shape], ...]` of a state's leaves as saved (keys as key data)."""
  saveable = to_saveable(state)
  paths = [jax.tree_util.keystr(path) for path, _ in jax.tree_util.tree_leaves_with_path(state)]
  return [
    [path, str(array.dtype), list(array.shape)] for path, array in zip(paths, saveable.values(), strict=True)
  ]


def _host_sharding():
  # This process's own CPU device: over several processes, jax.devices() lists the others' too.
  return jax.sharding.SingleDeviceSharding(jax.local_devices(backend='cpu')[0])


_verbose = False


def set_verbose(verbose: bool) -> None:
  """Whether orbax's own log lines reach stderr and checkpoint errors quote the
  storage library's message. Off by default: orbax logs as errors things it
  recovers from (an emptied `_CHECKPOINT_METADATA`), and every failure it raises
  becomes one `CheckpointError` message here anyway."""
  global _verbose
  _verbose = bool(verbose)


class _OrbaxLogFilter(logging.Filter):
  """Drops the records orbax logs through absl's logger unless verbose; other
  users of that logger in the process keep theirs."""

  def __init__(self, package: str):
    super().__init__()
    self.package = package + os.sep

  def filter(self, record: logging.LogRecord) -> bool:
    return _verbose or not record.pathname.startswith(self.package)


def _orbax():
  """`orbax.checkpoint`, its log filter installed (once)."""
  import orbax.checkpoint as ocp  # noqa: PLC0415

  logger = logging.getLogger('absl')
  if not any(isinstance(f, _OrbaxLogFilter) for f in logger.filters):
    logger.addFilter(_OrbaxLogFilter(os.path.dirname(os.path.dirname(ocp.__file__))))
  return ocp


# What a checkpoint directory may hold: the steps orbax wrote for us, each
# `DIR/<step>/{state,metadata,_CHECKPOINT_METADATA,commit_success.txt}`; saves a
# kill left unfinished, `DIR/<step>.orbax-checkpoint-tmp*/` (orbax removes them
# when it next writes) or emptied while orbax deleted them; and the probes of
# `check_writable`. Anything else is the user's: the directory is refused, so
# orbax never deletes it.
_STEP_ENTRIES = frozenset({'_CHECKPOINT_METADATA', 'commit_success.txt', 'metadata', 'state'})
_ITEMS = frozenset({'metadata', 'state'})
_TMP = '.orbax-checkpoint-tmp'
_PROBE = '.jaxcfr-probe-'


def _is_temporary(name: str, bases) -> bool:
  """`<base>.orbax-checkpoint-tmp...` for a base that `bases` accepts."""
  base, dot, rest = name.partition('.')
  return bases(base) and (dot + rest).startswith(_TMP)


def _kind(entry: os.DirEntry) -> str | None:
  """'step' for a finished step we wrote; 'ours' for an unfinished save, a step
  orbax was deleting, or a probe; None for anything else."""
  if entry.name.startswith(_PROBE):
    return 'ours'
  finished = entry.name.isdigit()
  if not (finished or _is_temporary(entry.name, str.isdigit)) or not entry.is_dir(follow_symlinks=False):
    return None
  try:
    names = os.listdir(entry.path)
  except OSError:
    return None
  if finished and not names:  # a kill while orbax deleted an old step; nothing to lose
    return 'ours'
  if all(name in _STEP_ENTRIES or _is_temporary(name, _ITEMS.__contains__) for name in names):
    return 'step' if finished else 'ours'
  return None


def _os_error(error: Exception) -> tuple[int, str] | None:
  """`(errno, text)` of the operating-system failure behind an orbax or
  tensorstore error (tensorstore writes it as `[os_error_code='28']`), if any."""
  if isinstance(error, OSError) and error.errno:
    return error.errno, error.strerror or os.strerror(error.errno)
  match = re.search(r"os_error_code='?(\d+)", str(error))
  if match:
    code = int(match.group(1))
    return code, os.strerror(code)
  return None


def _detail(error: Exception | None, detail: str) -> str:
  """` (detail)`, with the underlying message appended when verbose."""
  if _verbose and error is not None:
    detail = f'{detail}; {_first_line(error)}' if detail else _first_line(error)
  return f' ({detail})' if detail else ''


class _Unreadable(CheckpointError):
  """A step whose files cannot be read back: corrupt, truncated or not permitted."""


class Checkpointer:
  """Saves and restores one run's solver states in `directory` (keeping the last `keep`).

  The directory must be new, empty or hold only checkpoints: `check_writable`
  refuses one with other files, and nothing but the steps saved here is ever
  deleted. Only `check_writable` (a probe it removes) and `save` write, so
  opening a directory only to inspect or restore it leaves it untouched.
  """

  def __init__(self, directory: str, keep: int = 3):
    if keep < 1:
      raise CheckpointError(f'must keep at least one checkpoint, got {keep}')
    self.directory = os.path.abspath(directory)
    self.keep = keep
    self._writer = None
    if os.path.exists(self.directory) and not os.path.isdir(self.directory):
      raise CheckpointError(f'checkpoint path {directory!r} exists and is not a directory')
    parent = self.directory if os.path.isdir(self.directory) else os.path.dirname(self.directory)
    if not os.path.isdir(parent):
      raise CheckpointError(f'checkpoint directory {directory!r}: {parent!r} does not exist')

  def check_writable(self) -> None:
    """Refuses a directory that holds anything but our checkpoints, or that cannot
    be written: tried by creating and removing a probe (in the parent while the
    directory does not exist yet), since permission bits do not tell (root, /proc,
    read-only mounts). Call it before any work; `save` calls it too."""
    others = self._scan()[1]
    if others:
      shown = ', '.join(others[:3]) + (f' and {len(others) - 3} more' if len(others) > 3 else '')
      raise CheckpointError(
        f'checkpoint directory {self.directory!r} holds other files ({shown}); '
        'choose a new or empty directory'
      )
    target = self.directory if os.path.isdir(self.directory) else os.path.dirname(self.directory)
    probe = None
    try:
      probe = tempfile.mkdtemp(prefix=_PROBE, dir=target)
      with open(os.path.join(probe, 'probe'), 'wb') as file:
        file.write(b'\0')
    except OSError as error:
      raise CheckpointError(
        f'checkpoint directory {self.directory!r} is not writable: '
        f'cannot create files in {target!r} ({error.strerror or error})'
      ) from None
    finally:
      if probe is not None:
        shutil.rmtree(probe, ignore_errors=True)

  def steps(self) -> list[int]:
    """Completed steps (iterations), oldest first; unfinished saves and other files are ignored."""
    return self._scan()[0]

  def _scan(self) -> tuple[list[int], list[str]]:
    """`(steps, others)`: our finished steps, oldest first, and the names of the
    entries that are not ours (directories with a trailing '/')."""
    if not os.path.isdir(self.directory):
      return [], []
    try:
      with os.scandir(self.directory) as iterator:
        entries = list(iterator)
    except OSError as error:
      raise CheckpointError(
        f'cannot read checkpoint directory {self.directory!r}: {error.strerror}'
      ) from None
    steps, others = [], []
    for entry in entries:
      kind = _kind(entry)
      if kind == 'step':
        steps.append(int(entry.name))
      elif kind is None:
        others.append(entry.name + ('/' if entry.is_dir(follow_symlinks=False) else ''))
    return sorted(steps), sorted(others)

  def _path(self, step: int) -> str:
    return os.path.join(self.directory, str(step))

  def _manager(self, read_only: bool):
    ocp = _orbax()
    options = ocp.CheckpointManagerOptions(
      max_to_keep=None if read_only else self.keep,
      save_interval_steps=0 if read_only else 1,
      create=not read_only,
      read_only=read_only,
      enable_async_checkpointing=False,
      cleanup_tmp_directories=not read_only,
    )
    return ocp.CheckpointManager(self.directory, options=options)

  def _unreadable(self, step: int, error: Exception | None, detail: str) -> _Unreadable:
    """The error for `step` when its files cannot be read back; says 'corrupt or
    truncated' unless the system refused the read (permissions, I/O errors)."""
    os_error = _os_error(error) if error is not None else None
    if os_error is not None and os_error[0] != errno.ENOENT:
      return _Unreadable(f'checkpoint {self._path(step)!r} cannot be read ({os_error[1]})')
    return _Unreadable(f'checkpoint {self._path(step)!r} is corrupt or truncated{_detail(error, detail)}')

  def read_metadata(self, step: int, manager=None) -> dict:
    """The metadata of `step` (see the module docstring)."""
    ocp = _orbax()
    try:
      manager = manager or self._manager(read_only=True)
      metadata = manager.restore(step, args=ocp.args.Composite(metadata=ocp.args.JsonRestore())).metadata
    except Exception as error:  # orbax raises many kinds; all mean the same to the user
      raise self._unreadable(step, error, 'its metadata cannot be read') from None
    where = f'checkpoint {self._path(step)!r}'
    if not isinstance(metadata, dict) or metadata.get('format') != FORMAT:
      raise CheckpointError(f'{where} is not a jaxcfr checkpoint')
    if metadata.get('format_version') != FORMAT_VERSION:
      raise CheckpointError(
        f'{where} has format version {metadata.get("format_version")}; this jaxcfr reads {FORMAT_VERSION}'
      )
    return metadata

  def restore(self, like: Any, identity: dict) -> tuple[Any, dict]:
    """`(state, metadata)` of the newest step, after checking that it was made
    by a run with the same `identity` and that its arrays are intact.

    `like` is a state of the right structure (e.g. `solver.init(game)`). When the
    newest step is corrupt, the error names the newest older step that reads
    back intact (or says that none does); nothing is moved or deleted.
    """
    steps = self.steps()
    if not steps:
      raise CheckpointError(f'no checkpoint in {self.directory!r}')
    try:
      return self._restore(steps[-1], like, identity)
    except _Unreadable as error:
      failures = [str(error)]
    for step in reversed(steps[:-1]):
      try:
        self._restore(step, like, identity)
      except CheckpointError as error:
        failures.append(str(error))
        continue
      aside = ' and '.join(repr(self._path(s)) for s in reversed(steps) if s > step)
      also = ''
      if len(failures) > 1:
        also = '; ' + '; '.join(f.removeprefix('checkpoint ') for f in failures[1:])
      raise CheckpointError(
        f'{failures[0]}{also}; step {step} reads back intact: move {aside} aside to resume from it'
      ) from None
    if len(steps) == 1:
      raise CheckpointError(
        f'{failures[0]}, and it is the only checkpoint in {self.directory!r}; '
        'choose another directory to start afresh'
      ) from None
    listed = '; '.join(f.removeprefix('checkpoint ') for f in failures)
    raise CheckpointError(
      f'none of the {len(steps)} kept checkpoints in {self.directory!r} can be read: {listed}; '
      'choose another directory to start afresh'
    ) from None

  def _restore(self, step: int, like: Any, identity: dict) -> tuple[Any, dict]:
    ocp = _orbax()
    where = f'checkpoint {self._path(step)!r}'
    try:
      manager = self._manager(read_only=True)
    except Exception as error:
      raise self._unreadable(step, error, '') from None
    metadata = self.read_metadata(step, manager)
    differences = [
      f'{name} {metadata["identity"].get(name)!r} (this run: {value!r})'
      for name, value in identity.items()
      if _canonical(metadata.get('identity', {}).get(name)) != _canonical(value)
    ]
    if differences:
      raise CheckpointError(f'{where} belongs to another run: it has ' + '; '.join(differences))
    expected = describe(like)
    if metadata.get('leaves') != expected:
      raise CheckpointError(
        f'{where} holds a state of another structure (saved by another version or solver?); '
        f'expected {len(expected)} arrays {[tuple(x) for x in expected][:3]}...'
      )
    template = to_saveable(like)
    saved = {}
    # One array per call: when one read fails, no other read is left in flight (orbax
    # would close its event loop under them, and tensorstore would print a traceback each).
    for name, array in template.items():
      restore_args = {name: ocp.ArrayRestoreArgs(dtype=array.dtype, sharding=_host_sharding())}
      args = ocp.args.PyTreeRestore({name: array}, restore_args=restore_args, partial_restore=True)
      try:
        restored = manager.restore(step, args=ocp.args.Composite(state=args)).state[name]
      except Exception as error:
        raise self._unreadable(step, error, f'array {name} cannot be read') from None
      if restored.shape != array.shape:
        raise self._unreadable(step, None, f'array {name} has shape {restored.shape}, not {array.shape}')
      saved[name] = np.asarray(restored)
    if state_digest(saved) != metadata.get('state_sha256'):
      raise self._unreadable(step, None, 'its arrays do not match their recorded checksum')
    return from_saveable(saved, like), metadata

  def save(self, step: int, state: Any, identity: dict, progress: dict, version: str) -> None:
    """Saves `state` as `step`, atomically; drops the oldest of our steps beyond
    `keep`. Any failure to write raises `CheckpointError` (what and where)."""
    ocp = _orbax()
    saveable = to_saveable(state)
    metadata = {
      'format': FORMAT,
      'format_version': FORMAT_VERSION,
      'identity': _canonical(identity),
      'version': version,
      'state_sha256': state_digest(saveable),
      'leaves': describe(state),
      **_canonical(progress),
    }
    if self._writer is None:
      self.check_writable()
    try:
      if self._writer is None:
        self._writer = self._manager(read_only=False)
      self._writer.save(
        step,
        args=ocp.args.Composite(state=ocp.args.PyTreeSave(saveable), metadata=ocp.args.JsonSave(metadata)),
        force=True,
      )
      self._writer.wait_until_finished()
    except Exception as error:  # orbax raises many kinds; all mean the same to the user
      self._drop_writer()
      os_error = _os_error(error)
      reason = os_error[1] if os_error is not None else _first_line(error)
      raise CheckpointError(f'cannot write checkpoint {self._path(step)!r}: {reason}') from None

  def _drop_writer(self) -> None:
    writer, self._writer = self._writer, None
    if writer is not None:
      try:
        writer.close()
      except Exception:  # already failing: the first error is the one to report
        pass

  def close(self) -> None:
    if self._writer is not None:
      self._writer.close()
      self._writer = None


def _canonical(value):
  """The JSON round trip of `value`, so that tuples and lists, ints and floats compare as stored."""
  return json.loads(json.dumps(value))


def _first_line(error: Exception) -> str:
  """The gist of an orbax or tensorstore error, without its multi-kilobyte spec dump."""
  text = str(error).strip().split('\n')[0].split(' [tensorstore_spec')[0]
  if len(text) > 200:
    text = text[:200] + '...'
  return f'{type(error).__name__}: {text}' if text else type(error).__name__
