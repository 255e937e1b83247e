"""Policies on disk, keyed by information-state string.

The JSON format, readable by OpenSpiel users without jaxcfr:

    {"format": "jaxcfr-policy", "format_version": 1,
     "game": "leduc", "algorithm": "dcfr", "iterations": 1000, "version": "0.1.0", ...,
     "policy": {"<information state>": [[action_id, probability], ...], ...}}

Only legal actions are listed. For native games the information-state
strings are OpenSpiel's for the games they mirror, so a file written for
`leduc` loads into OpenSpiel's `leduc_poker` and vice versa.

For large games (blueprints) `.npz` is the compact form: the `[I, A]`
probabilities and legal mask, the keys as UTF-8 bytes with offsets, and the
same metadata as JSON (in the `metadata` entry). `load_policy` reads either
into a `Blueprint`. The `"format": "jaxcfr-policy"` marker (the first key of the
JSON, and of the `.npz` metadata) is how `jaxcfr.outputs.is_ours` knows a policy
file may be replaced (`save(..., force=True)`); files without it never are.
"""

from __future__ import annotations

import dataclasses
import json
import os

import numpy as np

from jaxcfr import outputs
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
  return Blueprint.from_mapping(mapping).policy_for(game)


@dataclasses.dataclass(frozen=True, eq=False)
class Blueprint:
  """A saved policy keyed by information state, independent of any compiled game.

  `jaxcfr.load_policy(path)` returns one; `policy_for(game)` lays it out as the
  `[I, A]` array of a compiled game (checking that it covers exactly that game).
  """

  keys: tuple[str, ...]  # [K]: information-state strings
  probabilities: np.ndarray  # [K, A] float: action probabilities, 0 on illegal actions
  legal_mask: np.ndarray  # [K, A] bool: the actions the file lists
  metadata: dict  # what the writer recorded: game, algorithm, iterations, exploitability, ...

  def __len__(self) -> int:
    return len(self.keys)

  @classmethod
  def from_mapping(cls, mapping: dict, metadata: dict | None = None) -> Blueprint:
    """From `{key: [(action, probability), ...]}`, checking every entry."""
    keys = tuple(mapping)
    rows, actions, probabilities_listed = [], [], []
    for row, key in enumerate(keys):
      pairs = mapping[key]
      if not isinstance(pairs, (list, tuple)) or not pairs:
        raise GameError(f'policy at {key!r} is not a non-empty list of [action, probability] pairs')
      for entry in pairs:
        try:
          action, probability = int(entry[0]), float(entry[1])
        except (TypeError, ValueError, IndexError, KeyError):
          raise GameError(f'policy entry {entry!r} at {key!r} is not [action, probability]') from None
        if action < 0:
          raise GameError(f'policy gives negative action {action} at {key!r}')
        rows.append(row)
        actions.append(action)
        probabilities_listed.append(probability)
    num_actions = 1 + max(actions, default=0)
    probabilities = np.zeros((len(keys), num_actions))
    legal = np.zeros((len(keys), num_actions), bool)
    probabilities[rows, actions] = probabilities_listed
    legal[rows, actions] = True
    blueprint = cls(keys, probabilities, legal, dict(metadata or {}))
    blueprint.check()
    return blueprint

  def check(self) -> None:
    """Probabilities in [0, 1] on listed actions, summing to one per state."""
    if self.probabilities.shape != self.legal_mask.shape or self.probabilities.shape[0] != len(self.keys):
      raise GameError(
        f'policy arrays disagree: {len(self.keys)} keys, probabilities {self.probabilities.shape}, '
        f'legal mask {self.legal_mask.shape}'
      )
    if len(set(self.keys)) != len(self.keys):
      raise GameError('policy lists an information state twice')
    bad = np.argwhere(
      ~np.isfinite(self.probabilities) | (self.probabilities < 0) | (self.probabilities > 1 + 1e-6)
    )
    if len(bad):
      row, action = bad[0]
      raise GameError(
        f'policy gives probability {self.probabilities[row, action]} to action {action} at {self.keys[row]!r}'
      )
    if np.any(self.probabilities[~self.legal_mask] != 0):
      row, action = np.argwhere((self.probabilities != 0) & ~self.legal_mask)[0]
      raise GameError(f'policy gives probability to unlisted action {action} at {self.keys[row]!r}')
    totals = self.probabilities.sum(-1)
    off = np.flatnonzero(np.abs(totals - 1) > 1e-6)
    if len(off):
      raise GameError(f'policy probabilities at {self.keys[off[0]]!r} sum to {totals[off[0]]}, not 1')

  def to_dict(self) -> dict[str, list[tuple[int, float]]]:
    return {
      key: [(int(a), float(self.probabilities[row, a])) for a in np.flatnonzero(self.legal_mask[row])]
      for row, key in enumerate(self.keys)
    }

  def policy_for(self, game: CompiledGame) -> np.ndarray:
    """`[I, A]` float64 policy of `game`; `GameError` unless this policy covers exactly
    `game`'s information states with its legal actions."""
    index = {key: row for row, key in enumerate(self.keys)}
    keys = game.infoset_keys
    missing = [key for key in keys if key not in index]
    if missing:
      raise GameError(
        f'policy does not cover {len(missing)} of the {len(keys)} information states of {game.name} '
        f'(first: {missing[0]!r}); was it made for another game?'
      )
    extra = len(self.keys) - len(keys)
    if extra > 0:
      raise GameError(f'policy has {extra} information states that {game.name} does not have')
    rows = np.asarray([index[key] for key in keys], np.int64)
    legal = np.asarray(game.legal_mask)
    width = max(legal.shape[1], self.legal_mask.shape[1])
    game_legal = np.zeros((len(keys), width), bool)
    game_legal[:, : legal.shape[1]] = legal
    listed = np.zeros((len(keys), width), bool)
    listed[:, : self.legal_mask.shape[1]] = self.legal_mask[rows]
    wrong = np.argwhere(listed & ~game_legal)
    if len(wrong):
      row, action = wrong[0]
      raise GameError(f'policy gives illegal action {action} at {keys[row]!r}')
    policy = np.zeros((len(keys), width))
    policy[:, : self.probabilities.shape[1]] = self.probabilities[rows]
    return policy[:, : legal.shape[1]]


def _header(metadata: dict) -> dict:
  """The format marker first (what `outputs.is_ours` recognises), then `metadata`."""
  header = {'format': 'jaxcfr-policy', 'format_version': FORMAT_VERSION}
  header.update((key, value) for key, value in metadata.items() if key not in header)
  return header


def save_json(path: str, compiled: CompiledGame, policy, *, force: bool = False, **metadata) -> None:
  """Writes `policy` and `metadata` (e.g. `game=`, `algorithm=`, `iterations=`)
  as JSON, atomically with `outputs.write_file`: an existing file is replaced only
  with `force` and only if jaxcfr wrote it; `outputs.OutputError` otherwise."""
  payload = _header(metadata)
  pairs = to_dict(compiled, policy)
  payload['policy'] = {key: [list(pair) for pair in actions] for key, actions in pairs.items()}
  text = json.dumps(payload)
  outputs.write_file(path, lambda file: file.write(text.encode()), force=force, what='policy')


def load_json(path: str, *, invalid: str = 'is not valid JSON') -> tuple[dict, dict]:
  """`(mapping, metadata)` from a policy JSON file; `GameError` if unreadable
  (`invalid` says what a file that does not parse is)."""
  try:
    with open(path, encoding='utf-8') as file:
      payload = json.load(file)
  except OSError as error:
    raise GameError(f'cannot read policy {path!r}: {error.strerror}') from None
  except (json.JSONDecodeError, UnicodeDecodeError) as error:
    raise GameError(f'policy {path!r} {invalid}: {error}') from None
  if not isinstance(payload, dict) or not isinstance(payload.get('policy'), dict):
    raise GameError(f'policy {path!r} has no "policy" object mapping information states to actions')
  mapping = payload.pop('policy')
  return mapping, payload


def save_npz(path: str, compiled: CompiledGame, policy, *, force: bool = False, **metadata) -> None:
  """Writes `policy` compactly (for large games): a compressed NumPy archive with
  the `[I, A]` probabilities in their own dtype, the legal mask, the
  information-state keys as UTF-8 bytes with offsets, and `metadata` as JSON.
  Atomic like `save_json`."""
  values = np.asarray(policy)
  if values.shape != compiled.legal_mask.shape:
    raise ValueError(f'policy has shape {values.shape}; this game needs {compiled.legal_mask.shape}')
  encoded = [key.encode() for key in compiled.infoset_keys]
  offsets = np.cumsum([0] + [len(key) for key in encoded], dtype=np.int64)
  header = _header(metadata)
  arrays = {
    'probabilities': np.where(np.asarray(compiled.legal_mask), values, 0),
    'legal_mask': np.asarray(compiled.legal_mask),
    'key_bytes': np.frombuffer(b''.join(encoded), np.uint8),
    'key_offsets': offsets,
    'metadata': np.frombuffer(json.dumps(header).encode(), np.uint8),
  }
  outputs.write_file(path, lambda file: np.savez_compressed(file, **arrays), force=force, what='policy')


def save(path: str, compiled: CompiledGame, policy, *, force: bool = False, **metadata) -> None:
  """`save_npz` for paths ending in `.npz`, else `save_json`."""
  writer = save_npz if path.lower().endswith('.npz') else save_json
  writer(path, compiled, policy, force=force, **metadata)


def load_policy(path: str) -> Blueprint:
  """Reads a policy written by `jaxcfr solve --policy-out` (JSON or `.npz`),
  or any JSON file of the `to_dict` shape; `GameError` with one clear message
  if it is missing, unreadable or malformed. The format is told by the content
  (a zip archive is `.npz`), then by the extension."""
  try:
    with open(path, 'rb') as file:
      head = file.read(4)
  except OSError as error:
    raise GameError(f'cannot read policy {path!r}: {error.strerror}') from None
  if head.startswith(b'PK'):  # a zip archive, whatever its name
    return _load_npz(path)
  extension = os.path.splitext(path)[1].lower()
  if extension == '.npz':
    raise GameError(f'policy {path!r} is not a .npz archive (it is not a zip file); is it a jaxcfr policy?')
  invalid = 'is not valid JSON' if extension == '.json' else 'is not a .npz archive and not valid JSON'
  mapping, metadata = load_json(path, invalid=invalid)
  return Blueprint.from_mapping(mapping, metadata)


def _load_npz(path: str) -> Blueprint:
  import zipfile  # noqa: PLC0415

  try:
    with np.load(path, allow_pickle=False) as archive:
      arrays = {name: archive[name] for name in archive.files}
  except (OSError, ValueError, EOFError, zipfile.BadZipFile) as error:
    raise GameError(f'policy {path!r} is not a readable .npz archive: {error}') from None
  needed = {'probabilities', 'legal_mask', 'key_bytes', 'key_offsets', 'metadata'}
  if not needed <= set(arrays):
    raise GameError(f'policy {path!r} lacks {sorted(needed - set(arrays))}; is it a jaxcfr policy?')
  try:
    metadata = json.loads(arrays['metadata'].tobytes().decode())
    data, offsets = arrays['key_bytes'].tobytes(), arrays['key_offsets']
    keys = tuple(data[offsets[i] : offsets[i + 1]].decode() for i in range(len(offsets) - 1))
  except (UnicodeDecodeError, json.JSONDecodeError, IndexError, TypeError) as error:
    raise GameError(f'policy {path!r} has corrupt keys or metadata: {error}') from None
  blueprint = Blueprint(keys, arrays['probabilities'], arrays['legal_mask'].astype(bool), metadata)
  blueprint.check()
  return blueprint
