"""Aggregated flop reports: one spot's tree solved on many flops; per flop its EVs, equities, the
exploitability reached and the acting player's action frequencies at the root (and at one more
flop decision), and the frequencies by texture. `jaxcfr report` is its command.

    spec = solving.SpotSpec('AhKd2c', 200, 900, (OOP, IP), '50%,a', 'a')   # the board: any flop
    report = flop_report.Report(spec, flops.subset(25), 'study/', target_pct=1.0)
    done = report.open()                                  # the flops solved before (a resumed report)
    for flop in report.to_solve(done): done[flop.board] = report.solve(flop)
    summary = report.write(done)

A report lives in its directory: `settings.json` (what makes two reports one: the spot, the solve,
the node, the flops), `solved/` (one JSON file per flop, written atomically as each finishes: a
stopped report run again solves only the rest), and when every flop is solved `flops.jsonl` and
`flops.csv` (one line per flop in the set's order), `summary.json` (the frequencies weighted over
the flops, overall and by texture), `report.png` and `report.html`. Nothing in them depends on the
time a solve took, so a stopped and resumed report writes the same files as an unstopped one.

A flop's frequencies are the acting player's range at the decision (its starting range, times its
own probabilities on the line there) times its average strategy, summed over hands
(`grid.frequencies`); the summary weighs each flop by its weight (`flops.Flop.weight`). On a CPU a
flop solves natively where the settings allow (`native_spot.usable`: not with `--compress`), else by
the array form.
"""

from __future__ import annotations

import csv
import dataclasses
import functools
import html
import io
import json
import os

import numpy as np

from jaxcfr import outputs
from jaxcfr.poker.rules import cards, ranges
from jaxcfr.poker.rules.cards import PokerInputError
from jaxcfr.poker.subgame import flops as flops_module
from jaxcfr.poker.subgame import grid, native_spot, solving

FORMAT = 'jaxcfr-flop-report'
SOLVED = 'solved'
FILES = ('settings.json', 'flops.jsonl', 'flops.csv', 'summary.json', 'report.png', 'report.html')
GROUPS = ('high', 'pairing', 'suits', 'connectedness')
# Spots of one tree on other flops share array shapes (`SpotSpec.build`'s `hands_multiple`), and so
# their compiled programs.
HANDS_MULTIPLE = 64


@dataclasses.dataclass
class Report:
  """A report of `spec`'s tree (its board replaced by each flop) over `flops` in `directory`."""

  spec: solving.SpotSpec
  flops: tuple
  directory: str
  target_pct: float | None = 1.0
  iterations: int | None = None
  algorithm: str = 'dcfr'
  eval_every: int = 10
  dtype: str = 'float32'
  compress: bool = False
  compact: bool = False
  node: str | None = None
  max_bytes: int | None = None
  threads: int = 1  # a native solve's (`native_spot`): each flop's turn cards over them
  programs: dict = dataclasses.field(default_factory=dict, repr=False)  # compiled once per shape
  trees: dict = dataclasses.field(default_factory=dict, repr=False)  # the tree built once (`SpotSpec.build`)

  def settings(self) -> dict:
    spot = dataclasses.asdict(self.spec)
    for key in ('board', 'num_ranks', 'num_suits'):
      spot.pop(key)
    return {
      'format': FORMAT,
      'spot': spot,
      'solve': {
        'algorithm': self.algorithm,
        'target_pct': self.target_pct,
        'iterations': self.iterations,
        'eval_every': self.eval_every,
        'dtype': self.dtype,
        'compress': self.compress,
        'compact': self.compact,
      },  # fmt: skip
      'node': self.node,
      'flops': [[flop.board, flop.weight] for flop in self.flops],
    }

  def check_memory(self) -> None:
    """`solving.MemoryLimitError` where some flop's tree does not fit `max_bytes`: before any solve."""
    if self.max_bytes is None:
      return
    import jax.numpy as jnp  # noqa: PLC0415

    _, counts = solving.shared_tree(self.spot(self.flops[0]).config(), self.trees)
    dtype = jnp.dtype(self.dtype)
    array_fit = functools.partial(
      solving.SpotSpec.fit, max_bytes=self.max_bytes, dtype=dtype,
      state_arrays=solving.state_arrays(self.algorithm), compact=self.compact, compress=self.compress,
      counts=counts,
    )  # fmt: skip

    def fit(spot, isomorphism=True):
      try:
        array_fit(spot, isomorphism=isomorphism)
      except solving.MemoryLimitError:  # the array form's estimate, larger than a native solve's
        if not native_spot.usable(self.algorithm, {}, dtype, None, self.compress):
          raise
        native_spot.check_memory(spot, self.max_bytes, dtype, self.threads, isomorphism, self.trees)

    # The flop with the most hands, every card solved, bounds them all: one check where it fits.
    deck = self.spec.deck()
    weights = [ranges.parse_range(text, deck) for text in self.spec.ranges]  # unchecked: a flop may empty one
    hands = [
      int(
        sum(ranges.range_on_board(w, deck, cards.parse_cards(flop.board)) > 0 for w in weights)
        .astype(bool)
        .sum()
      )
      for flop in self.flops
    ]
    try:
      fit(self.spot(self.flops[int(np.argmax(hands))]), isomorphism=False)
      return
    except PokerInputError:
      pass
    for flop in self.flops:
      try:
        fit(self.spot(flop))
      except solving.MemoryLimitError as error:
        raise solving.MemoryLimitError(f'flop {flop.board}: {error}') from None
      except PokerInputError:  # a range without hands on this flop: reported when its turn comes
        continue

  def spot(self, flop) -> solving.SpotSpec:
    return dataclasses.replace(self.spec, board=flop.board)

  def open(self, force: bool = False) -> dict:
    """Makes the directory, or takes up the report already there: {flop: record} of the flops solved.
    `outputs.OutputError` with one line for a directory that is not this report's (`force` starts
    over in one that holds another report of ours: its files alone are removed)."""
    path = self.directory
    settings = json.loads(json.dumps(self.settings()))  # as the file holds it (lists, not tuples)
    mine = os.path.join(path, 'settings.json')
    if not os.path.exists(path):
      parent = os.path.dirname(os.path.abspath(path))
      if not os.path.isdir(parent):
        raise outputs.OutputError(f'--out: directory {parent!r} does not exist')
      try:
        os.mkdir(path)
      except OSError as error:
        raise outputs.OutputError(f'--out: cannot make {path!r} ({error.strerror})') from None
    elif not os.path.isdir(path) or os.path.islink(path):
      raise outputs.OutputError(f'--out: {path!r} is not a directory')
    elif os.path.exists(mine):
      old = _read_ours(mine)
      if old is None:
        raise outputs.OutputError(f'--out: {path!r} holds a settings.json jaxcfr did not write; give another')
      if old != {'producer': 'jaxcfr', **settings}:
        differ = [key for key in settings if old.get(key) != settings[key]]
        if not force:
          raise outputs.OutputError(
            f'--out: {path!r} holds a report of other settings ({", ".join(differ)} differ); run its own '
            'command to resume it, give another directory, or --force to start it over'
          )
        self._remove_ours()
    elif os.listdir(path):
      raise outputs.OutputError(f'--out: {path!r} holds files of another kind; give a new or empty directory')
    os.makedirs(os.path.join(path, SOLVED), exist_ok=True)
    outputs.write_json(mine, settings, force=True, what='--out')
    return self._solved()

  def _remove_ours(self) -> None:
    for name in FILES:
      if os.path.exists(os.path.join(self.directory, name)):
        os.remove(os.path.join(self.directory, name))
    solved = os.path.join(self.directory, SOLVED)
    if os.path.isdir(solved):
      for name in os.listdir(solved):
        if name.endswith('.json') and outputs.is_ours(os.path.join(solved, name)):
          os.remove(os.path.join(solved, name))

  def _solved(self) -> dict:
    wanted = {flop.board for flop in self.flops}
    done = {}
    solved = os.path.join(self.directory, SOLVED)
    for name in sorted(os.listdir(solved)):
      board = name.removesuffix('.json')
      if board not in wanted:
        continue
      record = _read_ours(os.path.join(solved, name))
      if record is not None and record.get('format') == FORMAT + '-flop':
        record.pop('producer')
        record.pop('format')
        done[board] = record
    return done

  def to_solve(self, done: dict) -> list:
    return [flop for flop in self.flops if flop.board not in done]

  def solve(self, flop, on_progress=None) -> dict:
    """Solves one flop and keeps its record (`solved/FLOP.json`); `PokerInputError` for a spot that
    cannot be solved on it (a range without hands there)."""
    import jax.numpy as jnp  # noqa: PLC0415

    dtype = jnp.dtype(self.dtype)
    spot = self.spot(flop)
    if native_spot.usable(self.algorithm, {}, dtype, None, self.compress):  # each player's own hands
      result = native_spot.solve(
        spot, self.algorithm, target_pct=self.target_pct, iterations=self.iterations,
        eval_every=self.eval_every, dtype=dtype, trees=self.trees, threads=self.threads, first_street=True,
      )  # fmt: skip
      strategy = native_spot.strategy_arrays(result, spot)
    else:
      game = spot.build(
        dtype, self.max_bytes, solving.state_arrays(self.algorithm), self.compact, HANDS_MULTIPLE,
        self.compress, trees=self.trees,
      )  # fmt: skip
      result = solving.solve(
        game, self.algorithm, target_pct=self.target_pct, iterations=self.iterations,
        eval_every=self.eval_every, dtype=dtype, programs=self.programs, compress=self.compress,
        on_progress=on_progress,
      )  # fmt: skip
      strategy = solving.strategy_arrays(result, first_street=True)
    record = {**_flop_fields(flop), **_result_fields(result, strategy, self.node)}
    path = os.path.join(self.directory, SOLVED, f'{flop.board}.json')
    outputs.write_json(path, {'format': FORMAT + '-flop', **record}, force=True, what='--out')
    return record

  def write(self, done: dict) -> dict:
    """The report's files from the records of its solved flops (the set's order); the summary."""
    records = [done[flop.board] for flop in self.flops if flop.board in done]
    summary = summarize(records)
    lines = ''.join(json.dumps(record) + '\n' for record in records)
    self._write('flops.jsonl', lines)
    self._write('flops.csv', csv_text(records))
    self._write('summary.json', outputs.json_text({'format': FORMAT + '-summary', **summary}))
    figure_ = figure(records, summary)
    path = os.path.join(self.directory, 'report.png')
    outputs.write_png(path, figure_, force=True, what='--out')
    self._write('report.html', page(records, summary, self.settings()))
    return summary

  def _write(self, name: str, text: str) -> None:
    """`name` in the report's directory (ours: `open` checked it), replaced atomically."""
    path = os.path.join(self.directory, name)
    temporary = path + '.partial'
    with open(temporary, 'w', encoding='utf-8') as file:
      file.write(text)
    os.replace(temporary, path)


def _read_ours(path: str) -> dict | None:
  """The JSON object at `path` if jaxcfr wrote it (settings or a flop's record), else None."""
  if not outputs.is_ours(path):
    return None
  try:
    with open(path, encoding='utf-8') as file:
      return json.load(file)
  except (OSError, ValueError):
    return None


def _flop_fields(flop) -> dict:
  return {
    'flop': flop.board, 'weight': flop.weight, 'high': flop.high, 'pairing': flop.pairing,
    'suits': flop.suits, 'connectedness': flop.connectedness,
  }  # fmt: skip


def _result_fields(result, strategy: tuple[dict, dict], node: str | None) -> dict:
  metadata, arrays = strategy
  fields = {
    'ev': {'oop': result.ev[0], 'ip': result.ev[1]},
    'equity': {'oop': result.equity[0], 'ip': result.equity[1]},
    'exploitability_pct': result.exploitability_pct,
    'iterations': result.iterations,
    'root': decision_frequencies(metadata, arrays, None),
  }
  if node:
    fields['node'] = decision_frequencies(metadata, arrays, node)
  return fields


def decision_frequencies(metadata: dict, arrays: dict, node: str | None) -> dict:
  """{'node': path, 'player', 'frequencies': {action: share of the range at the node}}."""
  row = find_flop_node(metadata, node)
  total, mix, actions, _ = grid.cells(metadata, arrays, row)
  shares = grid.frequencies(total, mix)
  path = ','.join(grid.token(label) for label in metadata['nodes'][row]['line']) or 'root'
  return {
    'node': path,
    'player': metadata['nodes'][row]['player'],
    'frequencies': {action: float(share) for action, share in zip(actions, shares, strict=True)},
  }


def find_flop_node(metadata: dict, node: str | None) -> int:
  """The row of a flop decision (`grid.find_node` over the decisions before the turn card)."""
  try:
    return grid.find_node(metadata['nodes'], node)
  except PokerInputError as error:
    raise PokerInputError(
      f'{error} (a report follows flop decisions: actions before the turn card)'
    ) from None


def check_node(spec: solving.SpotSpec, node: str | None) -> None:
  """`PokerInputError` where `node` is not a flop decision of `spec`'s tree (before any solve)."""
  if not node:
    return
  from jaxcfr.poker.subgame import tree  # noqa: PLC0415

  nodes = tree.build(spec.config(), first_round_only=True)  # the flop's betting alone
  decisions = []
  for i, item in enumerate(nodes):
    if item.kind != tree.DECISION:
      continue
    line, at = [], i
    while nodes[at].parent >= 0:
      line.append(nodes[at].label)
      at = nodes[at].parent
    decisions.append({'line': line[::-1], 'actions': list(item.labels), 'player': item.player})
  nodes = decisions
  find_flop_node({'nodes': nodes}, node)


def csv_text(records: list[dict]) -> str:
  """One row per flop: its texture, EVs, equities, exploitability, and each action's frequency at
  the root ('root: bet 100') and at the node ('node: ...')."""
  buffer = io.StringIO()
  writer = csv.writer(buffer, lineterminator='\n')
  places = [key for key in ('root', 'node') if records and key in records[0]]
  actions = {key: list(records[0][key]['frequencies']) if records else [] for key in places}
  writer.writerow([
    'flop', 'weight', *GROUPS, 'ev_oop', 'ev_ip', 'equity_oop', 'equity_ip', 'exploitability_pct',
    'iterations', *(f'{key}: {action}' for key in places for action in actions[key]),
  ])  # fmt: skip
  for r in records:
    writer.writerow([
      r['flop'], r['weight'], *(r[g] for g in GROUPS), r['ev']['oop'], r['ev']['ip'], r['equity']['oop'],
      r['equity']['ip'], r['exploitability_pct'], r['iterations'],
      *(r[key]['frequencies'][action] for key in places for action in actions[key]),
    ])  # fmt: skip
  return buffer.getvalue()


def summarize(records: list[dict]) -> dict:
  """Weighted over the flops: EVs, equities, the frequencies at the root (and node), overall and per
  texture group (high card, pairing, suits, connectedness)."""
  if not records:
    return {'flops': 0}
  weights = np.array([r['weight'] for r in records], np.float64)
  places = [key for key in ('root', 'node') if key in records[0]]

  def mean(members) -> dict:
    w = weights[members] / weights[members].sum()
    chosen = [records[i] for i in np.flatnonzero(members)]
    weighted = lambda value: float(sum(x * value(r) for x, r in zip(w, chosen, strict=True)))  # noqa: E731
    out = {
      'flops': len(chosen),
      'weight': float(weights[members].sum()),
      'ev': {p: weighted(lambda r, p=p: r['ev'][p]) for p in ('oop', 'ip')},
      'equity': {p: weighted(lambda r, p=p: r['equity'][p]) for p in ('oop', 'ip')},
    }
    for key in places:
      actions = list(records[0][key]['frequencies'])
      out[key] = {a: weighted(lambda r, a=a, key=key: r[key]['frequencies'][a]) for a in actions}
    return out

  everything = np.ones(len(records), bool)
  summary = {
    'flops': len(records),
    'nodes': {key: {'node': records[0][key]['node'], 'player': records[0][key]['player']} for key in places},
    'overall': mean(everything),
    'exploitability_pct': {
      'mean': float(np.mean([r['exploitability_pct'] for r in records])),
      'max': float(np.max([r['exploitability_pct'] for r in records])),
    },
    'groups': {},
  }
  for group in GROUPS:
    values = [r[group] for r in records]
    order = _group_order(group, set(values))
    summary['groups'][group] = {v: mean(np.array([x == v for x in values])) for v in order}
  return summary


def _group_order(group: str, values: set) -> list:
  orders = {
    'high': list(reversed('23456789TJQKA')),
    'pairing': ['unpaired', 'paired', 'trips'],
    'suits': ['rainbow', 'two-tone', 'monotone'],
    'connectedness': list(reversed(flops_module.CONNECTEDNESS)),
  }
  return [v for v in orders[group] if v in values]


def figure(records: list[dict], summary: dict):
  """The root frequencies by flop (stacked bars in the set's order) above the weighted frequencies by
  texture group."""
  import matplotlib  # noqa: PLC0415

  matplotlib.use('Agg')
  from matplotlib.figure import Figure  # noqa: PLC0415

  actions = list(records[0]['root']['frequencies']) if records else []
  colours = grid.colours(actions)
  fig = Figure(figsize=(max(10, 0.22 * len(records)), 8), layout='constrained')
  top, bottom = fig.subfigures(2, 1, height_ratios=(1.1, 1))
  ax = top.subplots()
  x = np.arange(len(records))
  base = np.zeros(len(records))
  for action, colour in zip(actions, colours, strict=True):
    share = np.array([r['root']['frequencies'][action] for r in records])
    ax.bar(x, share, bottom=base, color=colour, width=0.9, label=action)
    base += share
  ax.set_xlim(-0.6, len(records) - 0.4)
  ax.set_ylim(0, 1)
  ax.set_ylabel('frequency')
  node = summary.get('nodes', {}).get('root', {})
  ax.set_title(f'{str(node.get("player", "")).upper()} at the root, by flop ({len(records)} flops)')
  if len(records) <= 120:
    ax.set_xticks(x, [r['flop'] for r in records], rotation=90, fontsize=7)
  else:
    ax.set_xticks([])
  if actions:
    ax.legend(loc='upper right', fontsize=8, ncol=len(actions))
  panels = bottom.subplots(1, len(GROUPS), sharey=True)
  for panel, group in zip(panels, GROUPS, strict=True):
    values = list(summary['groups'][group]) if records else []
    base = np.zeros(len(values))
    for action, colour in zip(actions, colours, strict=True):
      share = np.array([summary['groups'][group][v]['root'][action] for v in values])
      panel.bar(range(len(values)), share, bottom=base, color=colour, width=0.85)
      base += share
    panel.set_xticks(range(len(values)), values, rotation=45 if group != 'high' else 0, fontsize=8)
    panel.set_title(f'by {group} (weighted)', fontsize=9)
    panel.set_ylim(0, 1)
  return fig


def page(records: list[dict], summary: dict, settings: dict) -> str:
  """A self-contained HTML page: the settings, the weighted summary by texture, and one row per flop
  with its action bar (the explorer's colours)."""
  actions = list(records[0]['root']['frequencies']) if records else []
  colours = dict(zip(actions, grid.colours(actions), strict=True))

  def bar(freqs: dict) -> str:
    parts = ''.join(
      f'<span style="width:{100 * freqs[a]:.2f}%;background:{colours[a]}" title="{html.escape(a)} '
      f'{100 * freqs[a]:.1f}%"></span>'
      for a in actions
    )
    return f'<div class="bar">{parts}</div>'

  def cells(freqs: dict) -> str:
    return ''.join(f'<td>{100 * freqs[a]:.1f}</td>' for a in actions)

  heads = ''.join(f'<th>{html.escape(a)} %</th>' for a in actions)
  legend = ''.join(
    f'<span class="key"><span class="swatch" style="background:{colours[a]}"></span>{html.escape(a)}</span>'
    for a in actions
  )
  groups = []
  for group, values in summary.get('groups', {}).items():
    for value, row in values.items():
      groups.append(
        f'<tr><td>{group}</td><td>{html.escape(value)}</td><td>{row["flops"]}</td>'
        f'<td>{row["equity"]["oop"]:.3f}</td><td>{bar(row["root"])}</td>{cells(row["root"])}</tr>'
      )
  flop_rows = ''.join(
    f'<tr><td>{r["flop"]}</td><td>{r["weight"]:g}</td><td>{r["pairing"]}, {r["suits"]}, {r["connectedness"]}'
    f'</td><td>{r["ev"]["oop"]:.2f}</td><td>{r["ev"]["ip"]:.2f}</td><td>{r["equity"]["oop"]:.3f}</td>'
    f'<td>{r["exploitability_pct"]:.3f}</td><td>{bar(r["root"]["frequencies"])}</td>'
    f'{cells(r["root"]["frequencies"])}</tr>'
    for r in records
  )
  spot = settings['spot']
  title = html.escape(
    f'jaxcfr flop report: pot {spot["pot"]}, stack {spot["stack"]}, bets {spot["bets"]}, {len(records)} flops'
  )
  overall = summary.get('overall')
  head = (
    f'<p>OOP range <code>{html.escape(spot["ranges"][0])}</code>; IP range '
    f'<code>{html.escape(spot["ranges"][1])}</code>; raises {html.escape(spot["raises"])}; target '
    f'{settings["solve"]["target_pct"]}% of the pot.</p>'
  )
  if overall:
    head += (
      f'<p>Weighted over the flops: EV OOP {overall["ev"]["oop"]:.2f}, IP {overall["ev"]["ip"]:.2f}; '
      f'at the root {legend}</p>{bar(overall["root"])}'
    )
  return _PAGE.format(title=title, head=head, heads=heads, groups=''.join(groups), flops=flop_rows)


_PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{title}</title>
<style>
body {{ font-family: sans-serif; margin: 16px; color: #222; }}
table {{ border-collapse: collapse; margin: 12px 0; font-size: 13px; }}
td, th {{ padding: 2px 8px; border-bottom: 1px solid #ddd; text-align: right; }}
td:first-child, th:first-child {{ text-align: left; }}
.bar {{ display: flex; width: 240px; height: 14px; background: #e6e6e6; }}
.bar span {{ display: block; height: 100%; }}
.key {{ margin-right: 12px; }}
.swatch {{ display: inline-block; width: 12px; height: 12px; margin-right: 4px; vertical-align: middle; }}
</style></head><body>
<h2>{title}</h2>
{head}
<h3>By texture (weighted)</h3>
<table><tr><th>group</th><th>texture</th><th>flops</th><th>OOP equity</th><th>root</th>{heads}</tr>
{groups}</table>
<h3>By flop</h3>
<table><tr><th>flop</th><th>weight</th><th>texture</th><th>EV OOP</th><th>EV IP</th><th>OOP equity</th>
<th>exploitability %</th><th>root</th>{heads}</tr>
{flops}</table>
</body></html>
"""
