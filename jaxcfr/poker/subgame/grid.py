"""The range grid of a subgame strategy: the 13 x 13 hand classes of one decision, each cell split
by the frequencies of the actions, as postflop solvers show a strategy.

    metadata, arrays = solving.load_strategy('strategy.npz')     # or solving.strategy_arrays(result)
    row = grid.find_node(metadata['nodes'], 'b120,c,Qh')         # None or '': the root
    weights, mix, actions, combos = grid.cells(metadata, arrays, row)   # [13, 13], [13, 13, A]
    outputs.write_png('grid.png', grid.figure(metadata, arrays, row))

A cell's mix is its hands' action probabilities weighted by the acting player's range at the node:
the starting range times the player's own probabilities of the actions on the line that leads there
(hands that hold a card dealt on the line have no weight). Row and column run from the ace down;
suited classes are above the diagonal, offsuit below, pairs on it.
"""

from __future__ import annotations

import numpy as np

from jaxcfr.poker.rules import cards, ranges
from jaxcfr.poker.rules.cards import PokerInputError
from jaxcfr.poker.subgame import tree


def token(label: str) -> str:
  """An action or deal label as a node path writes it: 'x', 'c', 'f', 'b120', 'r300', 'a900', 'Qh'."""
  return label.split()[1] if label.startswith('deal ') else tree.action_token(label)


def find_node(nodes: list[dict], path: str | None) -> int:
  """The row of the decision node that the action path `path` leads to ('b120,c,Qh': actions and
  dealt cards from the root, commas between; 'a' alone is the all-in); `PokerInputError` naming
  what may follow where the path leaves the tree."""
  wanted = [part.strip() for part in (path or '').split(',') if part.strip()]
  lines = {tuple(token(label) for label in node['line']): row for row, node in enumerate(nodes)}
  line: tuple[str, ...] = ()
  for step in wanted:
    following = sorted(
      {key[len(line)] for key in lines if len(key) > len(line) and key[: len(line)] == line},
      key=str.lower,
    )
    match = [t for t in following if t.lower() == step.lower() or (step.lower() == 'a' and t[0] == 'a')]
    if not match:
      where = ','.join(line) or 'the root'
      here = nodes[lines[line]]['actions'] if line in lines else []
      if any(step.lower() == token(action).lower() for action in here):
        raise PokerInputError(f'--node {path!r}: {step!r} after {where} leads to no further decision')
      raise PokerInputError(
        f'--node {path!r}: no {step!r} after {where}; the decisions there go on with {", ".join(following)}'
      )
    line = (*line, match[0])
  if line not in lines:
    raise PokerInputError(f'--node {path!r} stops between a decision and its cards; add a dealt card')
  return lines[line]


def line_rows(nodes: list[dict]) -> dict[tuple[str, ...], int]:
  """{line of labels: row} of the decision nodes."""
  return {tuple(node['line']): row for row, node in enumerate(nodes)}


def reach(metadata: dict, arrays: dict, row: int, rows: dict | None = None) -> np.ndarray:
  """The acting player's range at decision `row`, `[H]` (`rows`: `line_rows` of the nodes, where a
  caller has it)."""
  nodes = metadata['nodes']
  node = nodes[row]
  player = 0 if node['player'] == 'oop' else 1
  weights = np.asarray(arrays['ranges'][player], np.float64).copy()
  hands = np.asarray(arrays['hands'])
  rows = line_rows(nodes) if rows is None else rows
  line = node['line']
  for depth, label in enumerate(line):
    if label.startswith('deal '):
      card = cards.parse_card(label.split()[1])
      weights[(hands == card).any(axis=1)] = 0.0
      continue
    parent = rows.get(tuple(line[:depth]))
    if parent is not None and nodes[parent]['player'] == node['player']:
      action = nodes[parent]['actions'].index(label)
      weights *= np.asarray(arrays['probabilities'][parent, action], np.float64)
  return weights


def cells(
  metadata: dict, arrays: dict, row: int, rows: dict | None = None
) -> tuple[np.ndarray, np.ndarray, list[str], np.ndarray]:
  """(weights `[13, 13]` of each class in the range at the node, action mix `[13, 13, A]` of each
  class weighted by it (0 where the class has no weight), the node's action labels, and the combos
  of each class the board leaves `[13, 13]`); row and column 0 are the aces."""
  actions = metadata['nodes'][row]['actions']
  weights = reach(metadata, arrays, row, rows)
  classes = ranges.class_of_hands(np.asarray(arrays['hands']))
  # Class 13 * i + j: suited with ranks i > j, offsuit with i < j; aces first puts suited classes
  # above the diagonal and offsuit ones below.
  grid_row, grid_col = 12 - classes // 13, 12 - classes % 13
  policy = np.asarray(arrays['probabilities'][row, : len(actions)], np.float64)  # [A, H]
  total = np.zeros((13, 13))
  combos = np.zeros((13, 13))
  mix = np.zeros((13, 13, len(actions)))
  np.add.at(total, (grid_row, grid_col), weights)
  np.add.at(combos, (grid_row, grid_col), 1.0)
  np.add.at(mix, (grid_row, grid_col), (policy * weights).T)
  with np.errstate(invalid='ignore', divide='ignore'):
    mix = np.where(total[..., None] > 0, mix / total[..., None], 0.0)
  return total, mix, list(actions), combos


def heights(total: np.ndarray, combos: np.ndarray) -> np.ndarray:
  """`[13, 13]` the share of each class's combos in the range (0 where the board leaves none)."""
  return np.where(combos > 0, np.minimum(total / np.maximum(combos, 1), 1.0), 0.0)


def frequencies(total: np.ndarray, mix: np.ndarray) -> np.ndarray:
  """`[A]` each action's frequency over the whole range at the node."""
  return (mix * total[..., None]).sum((0, 1)) / max(total.sum(), 1e-300)


def class_name(row: int, col: int) -> str:
  high, low = cards.RANKS[12 - min(row, col)], cards.RANKS[12 - max(row, col)]
  return high * 2 if row == col else high + low + ('s' if row < col else 'o')


def colours(actions: list[str]) -> list[str]:
  """Each action's colour ('#rrggbb'), for the picture and the explorer page alike: fold blue, check
  and call green, bets and raises from orange to dark red by size."""
  import matplotlib  # noqa: PLC0415
  import matplotlib.colors  # noqa: PLC0415

  aggressive = [a for a in actions if a.split()[0] in ('bet', 'raise', 'all-in')]
  reds = matplotlib.colormaps['OrRd'](np.linspace(0.45, 0.95, max(len(aggressive), 1)))
  colours = []
  for action in actions:
    kind = action.split()[0]
    if kind == 'fold':
      colours.append('#4a7bd0')
    elif kind in ('check', 'call'):
      colours.append('#5bb55b')
    else:
      colours.append(matplotlib.colors.to_hex(reds[aggressive.index(action)]))
  return colours


def figure(metadata: dict, arrays: dict, row: int, title: str | None = None):
  """The grid as a matplotlib figure: each cell's width split by its action mix, empty cells grey,
  the filled height the share of the class's combos in the range at the node (weights of 0 to 1)."""
  import matplotlib  # noqa: PLC0415

  matplotlib.use('Agg')
  import matplotlib.pyplot as plt  # noqa: PLC0415
  from matplotlib.patches import Patch, Rectangle  # noqa: PLC0415

  total, mix, actions, combos = cells(metadata, arrays, row)
  palette, filled = colours(actions), heights(total, combos)
  fig, axes = plt.subplots(figsize=(8.4, 9.0))
  for r in range(13):
    for c in range(13):
      axes.add_patch(Rectangle((c, 12 - r), 1, 1, facecolor='#e6e6e6', edgecolor='white', lw=1.5))
      if total[r, c] > 0:
        left = float(c)
        for share, colour in zip(mix[r, c], palette, strict=True):
          axes.add_patch(Rectangle((left, 12 - r), share, filled[r, c], facecolor=colour, lw=0))
          left += share
      axes.text(c + 0.5, 12 - r + 0.5, class_name(r, c), ha='center', va='center', fontsize=8)
  axes.set_xlim(0, 13)
  axes.set_ylim(0, 13)
  axes.set_aspect('equal')
  axes.axis('off')
  node = metadata['nodes'][row]
  line = ', '.join(node['line']) or 'the root'
  legend = [
    Patch(facecolor=colour, label=f'{action} {100 * share:.0f}%')
    for action, colour, share in zip(actions, palette, frequencies(total, mix), strict=True)
  ]
  axes.legend(handles=legend, loc='upper center', bbox_to_anchor=(0.5, 0.0), ncol=min(len(actions), 4))
  board = ' '.join(metadata.get('board', []))
  player = node['player'].upper()
  axes.set_title(title or f'{player} to act after {line}\nboard {board}, pot {metadata["pot"]}')
  fig.tight_layout()
  return fig
