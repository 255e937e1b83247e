"""Policies on disk, keyed by information-state string.

The JSON format, readable by OpenSpiel users without jaxcfr:

    {"policy": {"<information state>": [[action_id, probability], ...], ...},
     "game": "leduc", "algorithm": "dcfr", "iterations": 1000, "version": "0.1.0", ...}

Only legal actions are listed. For native games the information-state
strings are OpenSpiel's for the games they mirror, so a file written for
`leduc` loads into OpenSpiel's `leduc_poker` and vice versa.
"""

from __future__ import annotations

import json
import os
import tempfile

import numpy as np

from jaxcfr.compiler import CompiledGame
from jaxcfr.games.base import GameError

FORMAT_VERSION = 1


def to_dict(game: CompiledGame, policy) -> dict[str, list[tuple[int, float]]]:
  """`{information state: [(action, probability), ...]}` over legal actions;
  also the mapping `pyspiel.exploitability` and `pyspiel.nash_conv` accept."""
  values = np.asarray(policy, np.float64)
  if values.shape != game.legal_mask.shape:
    raise ValueError(f'policy has shape {values.shape}; this game needs {game.legal_mask.shape}')
  legal = np.asarray(game.legal_mask)
  return {
    key: [(int(a), float(values[row, a])) for a in np.flatnonzero(legal[row])]
    for row, key in enumerate(game.infoset_keys)
  }


def from_dict(game: CompiledGame, mapping: dict) -> np.ndarray:
  """`[I, A]` policy of `game` from a `to_dict`-style mapping.

  Every information state of `game` must be present with probabilities on
  legal actions only that sum to one (to 1e-6); extra keys are an error too,
  since they mean the policy was made for another game.
  """
  keys = game.infoset_keys
  missing = [key for key in keys if key not in mapping]
  if missing:
    raise GameError(
      f'policy does not cover {len(missing)} of the {len(keys)} information states of {game.name} '
      f'(first: {missing[0]!r}); was it made for another game?'
    )
  extra = len(mapping) - len(keys)
  if extra > 0:
    raise GameError(f'policy has {extra} information states that {game.name} does not have')
  legal = np.asarray(game.legal_mask)
  policy = np.zeros(legal.shape)
  for row, key in enumerate(keys):
    for entry in mapping[key]:
      try:
        action, probability = int(entry[0]), float(entry[1])
      except (TypeError, ValueError, IndexError):
        raise GameError(f'policy entry {entry!r} at {key!r} is not [action, probability]') from None
      if not (0 <= action < legal.shape[1] and legal[row, action]):
        raise GameError(f'policy gives illegal action {action} at {key!r}')
      if not (0 <= probability <= 1 + 1e-9):
        raise GameError(f'policy gives probability {probability} to action {action} at {key!r}')
      policy[row, action] = probability
    total = policy[row].sum()
    if abs(total - 1) > 1e-6:
      raise GameError(f'policy probabilities at {key!r} sum to {total}, not 1')
  return policy


def save_json(path: str, compiled: CompiledGame, policy, **metadata) -> None:
  """Writes `policy` and `metadata` (e.g. `game=`, `algorithm=`, `iterations=`)
  as JSON, atomically (a temporary file in the same directory, renamed over
  `path`)."""
  payload = {'format': 'jaxcfr-policy', 'format_version': FORMAT_VERSION, **metadata}
  pairs = to_dict(compiled, policy)
  payload['policy'] = {key: [list(pair) for pair in actions] for key, actions in pairs.items()}
  text = json.dumps(payload)
  write_atomic(path, lambda file: file.write(text.encode()))


def load_json(path: str) -> tuple[dict, dict]:
  """`(mapping, metadata)` from a policy JSON file; `GameError` if unreadable."""
  try:
    with open(path, encoding='utf-8') as file:
      payload = json.load(file)
  except OSError as error:
    raise GameError(f'cannot read policy {path!r}: {error.strerror}') from None
  except (json.JSONDecodeError, UnicodeDecodeError) as error:
    raise GameError(f'policy {path!r} is not valid JSON: {error}') from None
  if not isinstance(payload, dict) or not isinstance(payload.get('policy'), dict):
    raise GameError(f'policy {path!r} has no "policy" object mapping information states to actions')
  mapping = payload.pop('policy')
  return mapping, payload


def write_atomic(path: str, write) -> None:
  """Writes through a temporary file in the same directory, then renames it
  over `path`, so a crash never leaves a half-written file."""
  directory = os.path.dirname(os.path.abspath(path))
  handle, temporary = tempfile.mkstemp(dir=directory, prefix='.jaxcfr-', suffix=os.path.splitext(path)[1])
  try:
    with os.fdopen(handle, 'wb') as file:
      write(file)
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(temporary, 0o666 & ~umask)  # mkstemp's 0600 would surprise; use the usual mode
    os.replace(temporary, path)
  except BaseException:
    if os.path.exists(temporary):
      os.unlink(temporary)
    raise
