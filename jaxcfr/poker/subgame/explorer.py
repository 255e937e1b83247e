"""A tree explorer for a subgame strategy: one self-contained HTML page (data and script inline, no
network) where a user clicks through actions and dealt cards and sees each decision's range grid and
action frequencies.

    metadata, arrays = solving.load_strategy('strategy.npz')   # or solving.strategy_arrays(result)
    outputs.write_file('spot.html', lambda f: f.write(explorer.page(metadata, arrays).encode()))

Every decision node's grid is computed here (`grid.cells`) and stored in the page, rounded to three
decimals; a spot with more than `MAX_NODES` decisions keeps the first `MAX_NODES` in breadth-first
order (the root's streets), and the page says so.
"""

from __future__ import annotations

import html
import json

import numpy as np

from jaxcfr.poker.subgame import grid

MAX_NODES = 4000


def data(metadata: dict, arrays: dict) -> dict:
  """What the page holds: per decision node its player, path of tokens, actions, overall action
  frequencies, colours (the picture's), the grid (height share and action mix per cell) and the
  count of hands locked there (the page marks locked decisions)."""
  nodes = metadata['nodes']
  order = sorted(range(len(nodes)), key=lambda row: len(nodes[row]['line']))[:MAX_NODES]
  rows = grid.line_rows(nodes)
  out = []
  for row in order:
    node = nodes[row]
    total, mix, actions, combos = grid.cells(metadata, arrays, row, rows)
    share = np.where(combos > 0, grid.heights(total, combos), -1.0)  # -1: no combos
    out.append(
      {
        'player': node['player'],
        'path': [grid.token(label) for label in node['line']],
        'actions': actions,
        'tokens': [grid.token(label) for label in actions],
        'colours': grid.colours(actions),
        'overall': np.round(grid.frequencies(total, mix), 3).tolist(),
        'share': np.round(share, 3).tolist(),
        'mix': np.round(mix, 3).tolist(),
        'locked': int(node.get('locked', 0)),  # hands whose strategy a lock fixed (`locking`)
      }
    )
  return {
    'board': metadata.get('board', []),
    'pot': metadata.get('pot'),
    'stack': metadata.get('stack'),
    'exploitability_pct': metadata.get('exploitability_pct'),
    'truncated': len(nodes) > MAX_NODES,
    'classes': [[grid.class_name(r, c) for c in range(13)] for r in range(13)],
    'nodes': out,
  }


def page(metadata: dict, arrays: dict) -> str:
  """The page's HTML."""
  payload = json.dumps(data(metadata, arrays), separators=(',', ':')).replace('</', '<\\/')
  title = html.escape(f'jaxcfr subgame: {" ".join(metadata.get("board", []))}, pot {metadata.get("pot")}')
  return _PAGE.replace('__TITLE__', title).replace('__DATA__', payload)


_PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>__TITLE__</title>
<style>
body { font-family: sans-serif; margin: 16px; color: #222; }
#grid { display: grid; grid-template-columns: repeat(13, 46px); gap: 2px; margin: 12px 0; }
.cell { width: 46px; height: 38px; background: #e6e6e6; position: relative; font-size: 11px; }
.cell span { position: absolute; inset: 0; display: flex; align-items: center; justify-content: center; }
.cell .fill { position: absolute; left: 0; right: 0; bottom: 0; }
button { margin: 2px; padding: 4px 8px; cursor: pointer; }
button:disabled { cursor: default; opacity: 0.5; }
#actions span.freq { display: inline-block; margin-right: 12px; }
.swatch { display: inline-block; width: 12px; height: 12px; margin-right: 4px; vertical-align: middle; }
</style></head><body>
<h2 id="title">__TITLE__</h2>
<div id="path"></div>
<div id="where"></div>
<div id="grid"></div>
<div id="actions"></div>
<div id="next"></div>
<p id="note"></p>
<script id="data" type="application/json">__DATA__</script>
<script>
const DATA = JSON.parse(document.getElementById('data').textContent);
const byPath = new Map(DATA.nodes.map((node, i) => [node.path.join(','), i]));
let path = [];
function following(prefix) {  // the tokens after `prefix` on the way to some decision
  const key = prefix.join(','), out = new Set();
  for (const node of DATA.nodes) {
    if (node.path.length > prefix.length && node.path.slice(0, prefix.length).join(',') === key)
      out.add(node.path[prefix.length]);
  }
  return [...out];
}
function go(newPath) { path = newPath; render(); }
function button(label, onClick, id) {
  const b = document.createElement('button');
  b.textContent = label; b.onclick = onClick; if (id) b.id = id;
  return b;
}
function render() {
  const crumbs = document.getElementById('path');
  crumbs.replaceChildren(button('root', () => go([]), 'back-root'));
  path.forEach((t, i) => crumbs.append(' > ', button(t, () => go(path.slice(0, i + 1)))));
  const index = byPath.get(path.join(','));
  const gridDiv = document.getElementById('grid'), actions = document.getElementById('actions');
  const next = document.getElementById('next'), where = document.getElementById('where');
  gridDiv.replaceChildren(); actions.replaceChildren(); next.replaceChildren();
  if (index === undefined) {  // a chance point: the cards that lead on
    where.textContent = 'deal a card:';
    for (const card of following(path)) next.append(button(card, () => go([...path, card]), 'card-' + card));
    return;
  }
  const node = DATA.nodes[index];
  where.textContent = `${node.player.toUpperCase()} to act`;
  if (node.locked) {
    const mark = document.createElement('strong'); mark.id = 'locked';
    mark.textContent = ` (locked: ${node.locked} hands play a fixed strategy)`; where.append(mark);
  }
  gridDiv.dataset.node = index;
  for (let r = 0; r < 13; r++) for (let c = 0; c < 13; c++) {
    const cell = document.createElement('div'), name = DATA.classes[r][c];
    cell.className = 'cell'; cell.id = 'cell-' + name;
    const share = node.share[r][c];
    if (share > 0) {
      const fill = document.createElement('div'); fill.className = 'fill';
      fill.style.height = (100 * share) + '%';
      let at = 0; const stops = [];
      node.mix[r][c].forEach((p, a) => {
        const col = node.colours[a];
        stops.push(`${col} ${100 * at}%`, `${col} ${100 * (at + p)}%`); at += p;
      });
      fill.style.background = `linear-gradient(to right, ${stops.join(', ')})`;
      cell.append(fill);
      const mixText = node.actions.map((a, i) => `${a} ${(100 * node.mix[r][c][i]).toFixed(1)}%`);
      cell.title = name + ': ' + mixText.join(', ');
    }
    const label = document.createElement('span'); label.textContent = name; cell.append(label);
    gridDiv.append(cell);
  }
  const after = new Set(following(path));
  node.actions.forEach((action, a) => {
    const f = document.createElement('span'); f.className = 'freq';
    const sw = document.createElement('span'); sw.className = 'swatch';
    sw.style.background = node.colours[a];
    f.append(sw, `${action} ${(100 * node.overall[a]).toFixed(1)}%`); actions.append(f);
    const b = button(action, () => go([...path, node.tokens[a]]), 'action-' + node.tokens[a]);
    b.disabled = !after.has(node.tokens[a]);
    if (b.disabled) b.title = 'the hand ends here';
    next.append(b);
  });
}
const note = [];
if (DATA.exploitability_pct != null)
  note.push(`exploitability ${DATA.exploitability_pct.toFixed(3)}% of the pot`);
const lockedNodes = DATA.nodes.filter((node) => node.locked).length;
if (lockedNodes) note.push(`${lockedNodes} decision${lockedNodes > 1 ? 's' : ''} locked`);
if (DATA.truncated) note.push(`the first ${DATA.nodes.length} decisions only`);
document.getElementById('note').textContent = note.join('; ');
render();
</script></body></html>
"""
