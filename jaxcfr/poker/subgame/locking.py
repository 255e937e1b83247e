"""Node locking: one player's strategy fixed at some decision nodes, for some or all of its hands, and
the rest of the spot solved against it ("what if my opponent never bluffs here").

    game = spec.build()
    game = locking.lock(game, locking.rows(game, ['b120=c:0.7,f:0.3', 'x,b120=r360:QQ+,AK;c:rest']))
    result = solving.solve(game)

A lock names a decision by its path of actions and dealt cards from the root, as `--node` does
('b120,c,Qh'; 'root' for the first decision; '*' stands for any dealt card, so 'x,x,*,b200' is that
decision after every turn card), and gives the acting player's strategy there in one of three forms:

    c:0.7,f:0.3                 a mix every hand plays (the probabilities sum to 1)
    r360:QQ+,AK;c:rest          per action the hands that take it, in range notation (a weight is
                                the probability: 'b120:AK:0.5;x:rest'); 'rest' the rest of each hand
                                (hands no action names stay free)
    saved.npz                   the decision's strategy in a strategy `--strategy-out` wrote (the
                                same line of actions; hands matched by their cards)

Locked hands play their locked strategy in every iteration (`solver`: the edge probabilities are
replaced before the passes use them), so the average strategy is the locked one there. The solve
converges to an equilibrium of the locked game, in which the locked hands have no choice; its
exploitability (`Subgame.evaluate_profile`, `solver.evaluate_average`) is that game's: each
player's best response keeps the locked strategies, so a player locked at every decision gains
nothing by deviating and the figure is the other player's gain alone.
"""

from __future__ import annotations

import dataclasses
import os
import re

import jax.numpy as jnp
import numpy as np

from jaxcfr.poker.rules import cards, ranges
from jaxcfr.poker.rules.cards import PokerInputError
from jaxcfr.poker.subgame import game as subgame_module
from jaxcfr.poker.subgame import grid, solving
from jaxcfr.poker.subgame.game import Subgame
from jaxcfr.poker.subgame.solver import lock_to_rows, rows_to_state

# A locked hand's probabilities may sum to 1 within this.
TOLERANCE = 1e-6
ROOT = 'root'
ANY_CARD = '*'
_MIX_ITEM = re.compile(r'^([A-Za-z]+\d*):(\d*\.?\d+(?:e-?\d+)?)$')


def lock(game: Subgame, locked_rows: np.ndarray) -> Subgame:
  """`game` with the strategies `locked_rows` [D, A, H] locked (`rows` builds them): NaN where a hand
  is free at a node, else its probabilities over the node's actions (0 on the others, summing to 1).
  A game with nothing locked comes back as it is."""
  locked_rows = np.asarray(locked_rows, np.float64)
  expected = (game.tree.num_decisions, game.tree.num_actions, game.num_hands)
  if locked_rows.shape != expected:
    raise ValueError(f'locked rows must have shape {expected}, got {locked_rows.shape}')
  fixed = ~np.isnan(locked_rows[:, 0])  # [D, H]
  if np.isnan(locked_rows).any(1)[fixed].any():
    raise ValueError('a locked hand has a probability for every action of its node (NaN: free)')
  legal = np.asarray(game.tree.legal)  # [D, A, 1]
  values = np.nan_to_num(locked_rows)
  if (values < 0).any() or (np.where(legal, 0, values) > 0).any():
    raise ValueError('locked probabilities are non-negative and 0 on the actions a node does not have')
  if (np.abs(values.sum(1) - 1)[fixed] > TOLERANCE).any():
    raise ValueError("a locked hand's probabilities sum to 1")
  if not fixed.any():
    return game
  edges = rows_to_state(game, jnp.asarray(locked_rows, game.dtype))
  per_depth = tuple(None if bool(jnp.isnan(x).all()) else x for x in edges)
  index = np.flatnonzero(fixed.any(1))
  rows = jnp.asarray(locked_rows[index], game.dtype)
  locked = dataclasses.replace(game, lock=subgame_module.Lock(per_depth, jnp.asarray(index, jnp.int32), rows))
  if game.blocks is not None and game.blocks.merged is not None:
    # Merged cards (suit isomorphism) keep one block per class: the locks must be the same on each.
    kept = np.asarray(lock_to_rows(locked), np.float64)
    same = np.isnan(kept) == np.isnan(locked_rows)
    if not (same.all() and np.allclose(np.nan_to_num(kept), np.nan_to_num(locked_rows), atol=TOLERANCE)):
      raise AsymmetricLock(
        'the locks differ between cards that suit isomorphism merged; build the spot with '
        'isomorphism=False to lock them apart'
      )
  return locked


class AsymmetricLock(ValueError):
  """Locks that tell apart the cards suit isomorphism merged (`lock`)."""


def rows(game: Subgame, specs, player: int | None = None) -> np.ndarray:
  """[D, A, H] the locks `specs` (texts 'NODE=SPEC', as the module says) on `game`, NaN where free;
  `PokerInputError` with one line naming what is wrong. A hand locked twice at one node is an error.
  `player`: every lock must be that player's decisions (None: either)."""
  tree, info = game.tree, game.tree.info
  out = np.full((tree.num_decisions, tree.num_actions, game.num_hands), np.nan)
  lines = solving.decision_lines(game)
  files = {}  # saved strategies read once
  for text in specs:
    node, sep, spec = str(text).partition('=')
    if not sep or not node.strip() or not spec.strip():
      raise PokerInputError(
        f"--lock {text!r}: write NODE=SPEC, e.g. 'b120=c:0.7,f:0.3' ('root' for the first)"
      )
    for row in _matching_rows(game, lines, node.strip(), text):
      labels = info.nodes[info.decisions[row]].labels
      actor = int(tree.decision_player[row])
      if player is not None and actor != player:
        raise PokerInputError(
          f'--lock {text!r}: {("OOP", "IP")[actor]} acts there, not {("OOP", "IP")[player]}'
        )
      hands_in_range = np.asarray(game.spot.ranges[actor]) > 0
      tokens = [grid.token(label) for label in labels]
      strategy = _strategy(game, lines[row], tokens, spec.strip(), text, files)  # [a, H]
      strategy[:, ~hands_in_range] = np.nan  # hands outside the actor's range weigh nothing
      fixed = ~np.isnan(strategy[0])
      if (fixed & ~np.isnan(out[row, 0])).any():
        raise PokerInputError(
          f'--lock {text!r}: some of its hands are already locked at {solving.node_path(lines[row])}'
        )
      out[row, : len(labels), fixed] = strategy[:, fixed].T
      out[row, len(labels) :, fixed] = 0.0
  return out


def _matching_rows(game: Subgame, lines: dict, node: str, text: str) -> list[int]:
  """The decision rows whose path matches `node` ('root', or tokens with '*' for any dealt card)."""
  wanted = [] if node.lower() == ROOT else [part.strip() for part in node.split(',')]
  if any(not part for part in wanted):
    raise PokerInputError(f'--lock {text!r}: an empty step in its node path')

  def same(step: str, token: str) -> bool:
    if step == ANY_CARD:
      return _is_card(token)
    return step.lower() == token.lower() or (step.lower() == 'a' and token[0] == 'a')

  found = [
    row
    for row, line in lines.items()
    if len(line) == len(wanted) and all(same(s, t) for s, t in zip(wanted, line, strict=True))
  ]
  if found:
    return found
  if ANY_CARD not in wanted:  # the path's own error: where it leaves the tree and what follows there
    info = game.tree.info
    nodes = [
      {
        'line': solving.named_line(game, info.decisions[row]),
        'actions': info.nodes[info.decisions[row]].labels,
      }
      for row in lines
    ]
    try:
      grid.find_node(nodes, node)
    except PokerInputError as error:
      raise PokerInputError(f'--lock {text!r}: {str(error).partition(": ")[2]}') from None
  raise PokerInputError(f'--lock {text!r}: no decision of the tree has the path {node!r}')


def _is_card(token: str) -> bool:
  return len(token) == 2 and token[0] in cards.RANKS and token[1] in cards.SUITS


def _strategy(game: Subgame, line: tuple, tokens: list[str], spec: str, text: str, files: dict) -> np.ndarray:
  """[a, H] a lock's probabilities at one decision (its path `line`, its actions `tokens`), NaN on the
  free hands; `files` the saved strategies read so far, by path."""
  hands = game.num_hands
  if spec.endswith('.npz'):
    return _saved(game, line, tokens, spec, text, files)
  items = [item.strip() for item in spec.split(',')]
  mix = [_MIX_ITEM.match(item) for item in items]
  if all(mix):
    probabilities = np.zeros(len(tokens))
    for match in mix:
      probabilities[_action(tokens, match.group(1), text)] += float(match.group(2))
    if abs(probabilities.sum() - 1) > TOLERANCE:
      raise PokerInputError(f'--lock {text!r}: the probabilities sum to {probabilities.sum():g}, not 1')
    return np.repeat(probabilities[:, None], hands, 1)
  per_action = np.zeros((len(tokens), hands))
  rest = None
  holes = _hole_positions(game)
  for part in (p.strip() for p in spec.split(';')):
    token, sep, hand_set = part.partition(':')
    if not sep or not hand_set.strip():
      raise PokerInputError(
        f"--lock {text!r}: {part!r} is not ACTION:RANGE (e.g. 'b120:QQ+,AK;x:rest') "
        "nor a mix ('x:0.7,b120:0.3')"
      )
    action = _action(tokens, token.strip(), text)
    if hand_set.strip().lower() == 'rest':
      if rest is not None:
        raise PokerInputError(f"--lock {text!r}: 'rest' given twice")
      rest = action
      continue
    try:
      weights = ranges.parse_range(hand_set)  # the spot's hands are in its deck
    except PokerInputError as error:
      raise PokerInputError(f'--lock {text!r}: {error}') from None
    per_action[action] += weights[holes]
  total = per_action.sum(0)
  if (total > 1 + TOLERANCE).any():
    raise PokerInputError(
      f'--lock {text!r}: {_hand(game, total > 1 + TOLERANCE)} is given more than all of it'
    )
  if rest is not None:
    per_action[rest] += 1 - total
    return per_action
  partial = (total > TOLERANCE) & (total < 1 - TOLERANCE)
  if partial.any():
    raise PokerInputError(
      f'--lock {text!r}: {_hand(game, partial)} is given {total[partial][0]:g} of its play; '
      "add ';ACTION:rest'"
    )
  per_action[:, total <= TOLERANCE] = np.nan  # hands no action names stay free
  return per_action


def _saved(game: Subgame, line: tuple, tokens: list[str], path: str, text: str, files: dict) -> np.ndarray:
  """[a, H] the decision's strategy in a saved strategy file (the same path; hands by their cards)."""
  if path not in files:
    if not os.path.exists(path):
      raise PokerInputError(f'--lock {text!r}: no file {path!r}')
    try:
      metadata, arrays = solving.load_strategy(path)
    except ValueError as error:
      raise PokerInputError(f'--lock {text!r}: {error}') from None
    lines = {
      tuple(grid.token(label) for label in node['line']): r for r, node in enumerate(metadata['nodes'])
    }
    files[path] = metadata, arrays, lines
  metadata, arrays, saved = files[path]
  if line not in saved:
    raise PokerInputError(f'--lock {text!r}: {path!r} has no decision at {solving.node_path(line)}')
  node = metadata['nodes'][saved[line]]
  if [grid.token(label) for label in node['actions']] != tokens:
    raise PokerInputError(
      f"--lock {text!r}: {path!r}'s actions at {solving.node_path(line)} are "
      f"{', '.join(map(grid.token, node['actions']))}, the spot's {', '.join(tokens)}"
    )
  index = {tuple(sorted(map(int, pair))): h for h, pair in enumerate(arrays['hands'])}
  out = np.full((len(tokens), game.num_hands), np.nan)
  player = 0 if node['player'] == 'oop' else 1
  for h, pair in enumerate(np.asarray(game.spot.hands)):
    source = index.get(tuple(sorted(map(int, pair))))
    if source is not None and arrays['ranges'][player, source] > 0:
      out[:, h] = arrays['probabilities'][saved[line], : len(tokens), source]
  out /= np.where(np.isnan(out), 1, out.sum(0, keepdims=True))  # float32 in the file: sums to 1 again
  return out


def _action(tokens: list[str], token: str, text: str) -> int:
  for a, own in enumerate(tokens):
    if token.lower() == own.lower() or (token.lower() == 'a' and own[0] == 'a'):
      return a
  raise PokerInputError(f'--lock {text!r}: no action {token!r} there; the node has {", ".join(tokens)}')


def _hole_positions(game: Subgame) -> np.ndarray:
  """[H] each hand's position in `HOLES` (the order range notation's weights come in)."""
  lookup = np.zeros((52, 52), np.int64)
  lookup[ranges.HOLES[:, 0], ranges.HOLES[:, 1]] = np.arange(len(ranges.HOLES))
  lookup[ranges.HOLES[:, 1], ranges.HOLES[:, 0]] = np.arange(len(ranges.HOLES))
  hands = np.asarray(game.spot.hands)
  return lookup[hands[:, 0], hands[:, 1]]


def _hand(game: Subgame, which: np.ndarray) -> str:
  return cards.hand_text(np.asarray(game.spot.hands)[np.flatnonzero(which)[0]])


# The locked decisions of a game as reports name them (`solving.report`'s `locked`).
summary = solving.locked_summary
