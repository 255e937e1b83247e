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
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
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
  return jax.sharding.SingleDeviceSharding(jax.devices('cpu')[0])


def _quiet_orbax() -> None:
  from absl import logging as absl_logging  # noqa: PLC0415

  absl_logging.set_verbosity(absl_logging.ERROR)
  logging.getLogger('absl').setLevel(logging.ERROR)


class Checkpointer:
  """Saves and restores one run's solver states in `directory` (keeping the last `keep`).

  Nothing is created or written until the first `save`, so opening a
  directory only to inspect or restore it leaves it untouched.
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
    target = self.directory if os.path.isdir(self.directory) else os.path.dirname(self.directory)
    if not os.access(target, os.W_OK | os.X_OK):
      raise CheckpointError(f'checkpoint directory {target!r} is not writable')

  def steps(self) -> list[int]:
    """Completed steps (iterations), oldest first; unfinished saves are ignored."""
    if not os.path.isdir(self.directory):
      return []
    try:
      names = os.listdir(self.directory)
    except OSError as error:
      raise CheckpointError(
        f'cannot read checkpoint directory {self.directory!r}: {error.strerror}'
      ) from None
    return sorted(int(name) for name in names if name.isdigit() and os.path.isdir(self._path(int(name))))

  def _path(self, step: int) -> str:
    return os.path.join(self.directory, str(step))

  def _manager(self, read_only: bool):
    import orbax.checkpoint as ocp  # noqa: PLC0415

    _quiet_orbax()
    options = ocp.CheckpointManagerOptions(
      max_to_keep=self.keep,
      create=not read_only,
      read_only=read_only,
      enable_async_checkpointing=False,
      cleanup_tmp_directories=not read_only,
    )
    return ocp.CheckpointManager(self.directory, options=options)

  def read_metadata(self, step: int) -> dict:
    import orbax.checkpoint as ocp  # noqa: PLC0415

    where = f'checkpoint {self._path(step)!r}'
    try:
      restored = self._manager(read_only=True).restore(
        step, args=ocp.args.Composite(metadata=ocp.args.JsonRestore())
      )
      metadata = restored.metadata
    except Exception as error:  # orbax raises many kinds; all mean the same to the user
      raise CheckpointError(f'{where} is unreadable or corrupt ({_first_line(error)})') from None
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

    `like` is a state of the right structure (e.g. `solver.init(game)`).
    """
    import orbax.checkpoint as ocp  # noqa: PLC0415

    steps = self.steps()
    if not steps:
      raise CheckpointError(f'no checkpoint in {self.directory!r}')
    step = steps[-1]
    where = f'checkpoint {self._path(step)!r}'
    hint = ''
    if len(steps) > 1:
      hint = f'; the previous step is {steps[-2]}: move {self._path(step)!r} aside to resume from it'
    try:
      metadata = self.read_metadata(step)
    except CheckpointError as error:
      raise CheckpointError(f'{error}{hint}') from None
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
    manager = self._manager(read_only=True)
    saved = {}
    # One array per call: when one read fails, no other read is left in flight (orbax
    # would close its event loop under them, and tensorstore would print a traceback each).
    for name, array in template.items():
      restore_args = {name: ocp.ArrayRestoreArgs(dtype=array.dtype, sharding=_host_sharding())}
      args = ocp.args.PyTreeRestore({name: array}, restore_args=restore_args, partial_restore=True)
      try:
        restored = manager.restore(step, args=ocp.args.Composite(state=args)).state[name]
      except Exception as error:
        raise CheckpointError(f'{where} is unreadable or corrupt ({_first_line(error)}){hint}') from None
      if restored.shape != array.shape:
        raise CheckpointError(
          f'{where} is corrupt: array {name} has shape {restored.shape}, not {array.shape}{hint}'
        )
      saved[name] = np.asarray(restored)
    if state_digest(saved) != metadata.get('state_sha256'):
      raise CheckpointError(f'{where} is corrupt: its arrays do not match their recorded checksum{hint}')
    return from_saveable(saved, like), metadata

  def save(self, step: int, state: Any, identity: dict, progress: dict, version: str) -> None:
    """Saves `state` as `step`, atomically; drops the oldest beyond `keep`."""
    import orbax.checkpoint as ocp  # noqa: PLC0415

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
      self._writer = self._manager(read_only=False)
    try:
      self._writer.save(
        step,
        args=ocp.args.Composite(state=ocp.args.PyTreeSave(saveable), metadata=ocp.args.JsonSave(metadata)),
        force=True,
      )
      self._writer.wait_until_finished()
    except OSError as error:
      raise CheckpointError(f'cannot write checkpoint to {self.directory!r}: {error.strerror}') from None

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
