"""The blueprint file: a trained average strategy, compact, with what it was trained on.

A compressed NumPy archive (`.npz`) holding

    probabilities  uint8 [D, K, A]  the average strategy at each (decision row, bucket), in 255ths
                                    (rows renormalised when read; 0 on illegal actions)
    metadata       JSON             format 'jaxcfr-blueprint', the bet abstraction (and its preset's
                                    name), the rules, streets and deck, the tree's fingerprint and
                                    counts, the bucket counts and the abstraction tables' fingerprint
                                    (and where they were), and the run (iterations, traversals, ...)

`load_blueprint` rebuilds the betting tree from the metadata and checks it against the fingerprint,
so the probabilities are read with the tree they were trained on. Written atomically, never over a
file jaxcfr did not write (`jaxcfr.outputs`). Reading imports no JAX: the runtime
(`jaxcfr.poker.runtime`) reads blueprints with this module.
"""

from __future__ import annotations

import dataclasses
import json
import zipfile

import numpy as np

from abstractions.betting import NoLimitRules, rules_dict
from jaxcfr import outputs
from jaxcfr.poker.blueprint import tree as tree_lib
from jaxcfr.poker.rules.cards import Deck
from jaxcfr.poker.runtime import BlueprintError

FORMAT = 'jaxcfr-blueprint'
FORMAT_VERSION = 1
NETWORK_FORMAT = 'jaxcfr-network-blueprint'  # Deep CFR: strategy networks instead of probabilities
_LEVELS = 255


@dataclasses.dataclass(frozen=True, eq=False)
class Blueprint:
  """A blueprint read back: its tree, `[D, K, A]` probabilities and metadata."""

  tree: tree_lib.BettingTree
  probabilities: np.ndarray  # float32 [D, K, A], rows sum to 1 over legal actions
  metadata: dict

  @property
  def num_buckets(self) -> tuple[int, ...]:
    return tuple(self.metadata['buckets'])

  @property
  def deck(self) -> Deck:
    return Deck(*self.metadata['deck'])

  @property
  def board_cards(self) -> tuple[int, ...]:
    return tuple(self.metadata['board_cards'])

  @property
  def abstraction_fingerprint(self) -> str:
    return self.metadata['abstraction_fingerprint']


def quantise(policy: np.ndarray, legal: np.ndarray) -> np.ndarray:
  """`[D, K, A]` probabilities -> uint8 in 255ths, 0 where illegal."""
  values = np.where(legal[:, None, :], np.clip(np.asarray(policy, np.float64), 0, 1), 0)
  return np.round(values * _LEVELS).astype(np.uint8)


def dequantise(counts: np.ndarray, legal: np.ndarray) -> np.ndarray:
  """uint8 `[D, K, A]` -> float32 probabilities renormalised over legal actions (uniform where a row
  rounded to all zeros)."""
  values = np.where(legal[:, None, :], counts.astype(np.float64), 0)
  total = values.sum(-1, keepdims=True)
  uniform = np.broadcast_to(legal[:, None, :] / legal.sum(-1)[:, None, None], values.shape)
  return np.where(total > 0, values / np.where(total > 0, total, 1), uniform).astype(np.float32)


def metadata_for(
  tree: tree_lib.BettingTree,
  *,
  bets_name: str | None,
  deck: Deck,
  board_cards: tuple[int, ...],
  buckets: tuple[int, ...],
  abstraction_fingerprint: str,
  abstraction_path: str | None = None,
  **run,
) -> dict:
  """The blueprint's metadata (everything `load_blueprint` and `load_policy` check), plus `run`."""
  from jaxcfr.version import __version__  # noqa: PLC0415

  return {
    'format': FORMAT,
    'format_version': FORMAT_VERSION,
    'bets_preset': bets_name,
    'bets': tree_lib.describe_bets(tree.bets),
    'rules': rules_dict(tree.rules),
    'num_streets': tree.num_streets,
    'board_cards': list(board_cards),
    'deck': [deck.num_ranks, deck.num_suits],
    'tree_fingerprint': tree.fingerprint(),
    'tree': tree.counts(),
    'buckets': list(buckets),
    'abstraction_fingerprint': abstraction_fingerprint,
    'abstraction_path': abstraction_path,
    'version': __version__,
    **run,
  }


def save_blueprint(
  path: str, tree: tree_lib.BettingTree, policy, metadata: dict, *, force: bool = False, what: str = '--out'
) -> None:
  """Writes the `[D, K, A]` average strategy `policy` with `metadata` (from `metadata_for`)."""
  policy = np.asarray(policy)
  if policy.shape[0] != tree.num_decisions or policy.shape[2] != tree.num_actions:
    raise BlueprintError(
      f'the policy has shape {policy.shape}; the tree needs [{tree.num_decisions}, K, {tree.num_actions}]'
    )
  arrays = {
    'probabilities': quantise(policy, tree.legal),
    'metadata': np.frombuffer(json.dumps(metadata).encode(), np.uint8),
  }
  outputs.write_file(path, lambda file: np.savez_compressed(file, **arrays), force=force, what=what)


def read_metadata(path: str) -> dict:
  """The metadata of a blueprint file (tabular or network), without its arrays (`BlueprintError` if it
  is not one)."""
  return _read(path, probabilities=False, formats=(FORMAT, NETWORK_FORMAT))[1]


def _read(
  path: str, probabilities: bool = True, formats: tuple[str, ...] = (FORMAT,)
) -> tuple[np.ndarray | dict | None, dict]:
  """(the probabilities, or the network arrays by name, or None; metadata) of a blueprint file."""
  try:
    with np.load(path, allow_pickle=False) as archive:
      if 'metadata' not in archive.files:
        raise BlueprintError(f'{path!r} is not a blueprint written by jaxcfr (no metadata)')
      metadata = json.loads(archive['metadata'].tobytes().decode())
      network = isinstance(metadata, dict) and metadata.get('format') == NETWORK_FORMAT
      if not network and 'probabilities' not in archive.files:
        raise BlueprintError(f'{path!r} is not a blueprint written by jaxcfr (no probabilities and metadata)')
      counts = None
      if probabilities:
        counts = (
          {name: archive[name] for name in archive.files if name != 'metadata'}
          if network
          else archive['probabilities']
        )
  except FileNotFoundError:
    raise BlueprintError(f'blueprint {path!r} does not exist') from None
  except IsADirectoryError:
    raise BlueprintError(f'blueprint {path!r} is a directory, not a file') from None
  except (OSError, ValueError, EOFError, zipfile.BadZipFile, UnicodeDecodeError) as error:
    if isinstance(error, BlueprintError):
      raise
    raise BlueprintError(
      f'{path!r} is not a readable blueprint (.npz written by jaxcfr blueprint): {error}'
    ) from None
  if not isinstance(metadata, dict) or metadata.get('format') not in formats:
    kind = metadata.get('format') if isinstance(metadata, dict) else None
    raise BlueprintError(
      f'{path!r} is not a blueprint written by jaxcfr (format {" or ".join(map(repr, formats))}; '
      f'it has {kind!r})'
    )
  if metadata.get('format_version') != FORMAT_VERSION:
    raise BlueprintError(
      f'{path!r} is blueprint format version {metadata.get("format_version")}; '
      f'this jaxcfr reads version {FORMAT_VERSION}'
    )
  return counts, metadata


def load_blueprint(path: str) -> Blueprint:
  """Reads a blueprint file: its tree rebuilt and checked, its probabilities as float32."""
  counts, metadata = _read(path)
  tree = _tree_of(path, metadata)
  buckets = metadata.get('buckets')
  expected = (tree.num_decisions, max(buckets) if buckets else -1, tree.num_actions)
  if counts.dtype != np.uint8 or counts.shape != expected:
    raise BlueprintError(
      f'{path!r}: probabilities of shape {counts.shape} ({counts.dtype}); the tree needs {expected} uint8'
    )
  return Blueprint(tree, dequantise(counts, tree.legal), metadata)


@dataclasses.dataclass(frozen=True, eq=False)
class NetworkBlueprint:
  """A Deep CFR blueprint read back: its tree, per-player strategy networks (`deep_cfr.mlp_apply`
  parameters: lists of {'w', 'b'} float32 arrays) and metadata; or for SD-CFR, per player S advantage
  networks (each array with a leading axis S) and their weights."""

  tree: tree_lib.BettingTree
  networks: tuple[list[dict[str, np.ndarray]], ...]
  metadata: dict
  weights: tuple[np.ndarray, ...] | None = None  # SD-CFR: per player, the weight [S] of each network


def save_networks(
  path: str,
  tree: tree_lib.BettingTree,
  networks,
  metadata: dict,
  *,
  weights=None,
  force: bool = False,
  what: str = '--out',
) -> None:
  """Writes per-player networks (`networks[p]`: MLP parameters; with `weights[p]` [S], S networks
  stacked on a leading axis) with `metadata` (from `metadata_for`; its format is set to the network
  format) as `network/{player}/{layer}/{w,b}` (and `network/{player}/weight`)."""
  arrays = {
    f'network/{p}/{i}/{name}': np.asarray(layer[name], np.float32)
    for p, params in enumerate(networks)
    for i, layer in enumerate(params)
    for name in ('w', 'b')
  }
  for p, values in enumerate(weights or ()):
    arrays[f'network/{p}/weight'] = np.asarray(values, np.float32)
  metadata = {**metadata, 'format': NETWORK_FORMAT}
  arrays['metadata'] = np.frombuffer(json.dumps(metadata).encode(), np.uint8)
  outputs.write_file(path, lambda file: np.savez_compressed(file, **arrays), force=force, what=what)


def load_networks(path: str) -> NetworkBlueprint:
  """Reads a network blueprint: its tree rebuilt and checked, its networks' shapes checked."""
  arrays, metadata = _read(path, formats=(NETWORK_FORMAT,))
  tree = _tree_of(path, metadata)
  networks = []
  for p in range(2):
    layers, i = [], 0
    while f'network/{p}/{i}/w' in arrays:
      layers.append({'w': arrays[f'network/{p}/{i}/w'], 'b': arrays[f'network/{p}/{i}/b']})
      i += 1
    networks.append(layers)
  sizes = [int(metadata.get('features', {}).get('size', -1)), tree.num_actions]
  for layers in networks:
    if not layers or layers[0]['w'].shape[-2] != sizes[0] or layers[-1]['w'].shape[-1] != sizes[1]:
      raise BlueprintError(
        f"{path!r}: its networks do not map {sizes[0]} features to the tree's {sizes[1]} actions"
      )
  weights = None
  if 'network/0/weight' in arrays:
    weights = tuple(arrays[f'network/{p}/weight'] for p in range(2))
    for p, values in enumerate(weights):
      if not len(values) or any(layer['w'].shape[0] != len(values) for layer in networks[p]):
        raise BlueprintError(f'{path!r}: player {p} has {len(values)} network weights for its networks')
  return NetworkBlueprint(tree, tuple(networks), metadata, weights)


def _tree_of(path: str, metadata: dict) -> tree_lib.BettingTree:
  """The betting tree a blueprint's metadata describes, checked against its fingerprint."""
  try:
    rules = NoLimitRules(**metadata['rules'])
    bets = tree_lib.bets_from_json(metadata['bets'])
    tree = tree_lib.build_tree(bets, rules, int(metadata['num_streets']))
    Deck(*metadata['deck'])
  except (KeyError, TypeError, ValueError) as error:
    raise BlueprintError(f'{path!r}: its metadata does not describe a game ({error})') from None
  if tree.fingerprint() != metadata.get('tree_fingerprint'):
    raise BlueprintError(
      f'{path!r}: the betting tree rebuilt from its metadata does not match its fingerprint '
      '(written by another version of the tree builder?)'
    )
  return tree
