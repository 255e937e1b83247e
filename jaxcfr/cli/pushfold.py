"""`jaxcfr pushfold`: the heads-up push-or-fold equilibrium at one depth, and the chart of the largest
stack at which each hand pushes or calls (a face over `jaxcfr.poker.pushfold`; no JAX).

    jaxcfr pushfold --stack 10
    jaxcfr pushfold --stack 8 --ante 0.125 --json pushfold.json
    jaxcfr pushfold --stack 15 --chart-max 50 --chart-step 0.5

Grids are 13 x 13 over the ranks, ace first: the pairs on the diagonal, suited hands above it (row
the higher rank), offsuit hands below.
"""

from __future__ import annotations

import sys

from jaxcfr.cli import common
from jaxcfr.poker import defaults

HELP = 'solve heads-up push-or-fold at a stack depth; print the ranges and the Nash chart'
DESCRIPTION = (
  'The small blind pushes all-in or folds, the big blind calls or folds: the exact equilibrium at the '
  'effective stack (big blinds, before the blinds and antes) with card removal, its exploitability from '
  'exact best responses, and the chart of the largest stack at which each hand pushes or calls.'
)


def add_parser(commands) -> None:
  """Adds the `pushfold` subcommand to the `jaxcfr` parser's subcommands."""
  parser = commands.add_parser('pushfold', help=HELP, description=DESCRIPTION)
  parser.add_argument(
    '--stack', type=common.number(unit=' of big blinds'), required=True,
    help='effective stack in big blinds, before the blinds and antes are posted (at least 1)',
  )  # fmt: skip
  parser.add_argument(
    '--ante', type=common.number(positive=False, unit=' of big blinds'), default=0.0,
    help='ante per player in big blinds (default 0; at most 1)',
  )  # fmt: skip
  parser.add_argument(
    '--small-blind', type=common.number(unit=' of big blinds'), default=defaults.PUSH_FOLD_SMALL_BLIND,
    help=f'the small blind in big blinds (default {defaults.PUSH_FOLD_SMALL_BLIND})',
  )  # fmt: skip
  parser.add_argument(
    '--chart-max', type=common.number(unit=' of big blinds'), default=defaults.PUSH_FOLD_CHART_MAX,
    help=f"the chart's deepest stack in big blinds (default {defaults.PUSH_FOLD_CHART_MAX:g})",
  )  # fmt: skip
  parser.add_argument(
    '--chart-step', type=common.number(unit=' of big blinds'), default=defaults.PUSH_FOLD_CHART_STEP,
    help=f"the chart's grid of stacks in big blinds (default {defaults.PUSH_FOLD_CHART_STEP:g})",
  )  # fmt: skip
  parser.add_argument('--no-chart', action='store_true', help='the equilibrium at --stack only')
  parser.add_argument('--quiet', action='store_true', help='no progress output')
  common.add_output_options(parser, quiet=False)


def _grid(values, cell) -> list[str]:
  """13 lines of a 13 x 13 grid (see the module) of per-class `values` [169], each written by `cell`."""
  from jaxcfr.poker.rules.cards import RANKS  # noqa: PLC0415

  order = range(12, -1, -1)  # ace first
  lines = ['    ' + ''.join(f'{RANKS[j]:>6}' for j in order)]
  for i in order:  # HAND_CLASSES[13 * i + j]: suited (right of the diagonal) when i > j, offsuit when i < j
    lines.append(f'{RANKS[i]:>4}' + ''.join(f'{cell(values[13 * i + j]):>6}' for j in order))
  return lines


def run(args) -> int:
  """Runs `jaxcfr pushfold`: checks the input, solves, prints and writes."""
  from jaxcfr.poker import pushfold  # noqa: PLC0415
  from jaxcfr.poker.rules import ranges  # noqa: PLC0415

  log = common.log_stream(args)
  with common.bad_input(ValueError):
    pushfold.check_depth(args.stack, args.ante, args.small_blind)
    if not args.no_chart:
      pushfold.check_depth(args.chart_max, args.ante, args.small_blind)
  common.check_json(args)
  solution = pushfold.solve(args.stack, args.ante, args.small_blind)
  share = lambda strategy: float(strategy @ pushfold.equity.COMBOS) / 1326
  percent = lambda p: f'{100 * p:.0f}' if p > 0 else '.'
  print(
    f'push or fold at {args.stack:g} bb (ante {args.ante:g} bb, small blind {args.small_blind:g} bb): the '
    f'small blind pushes {100 * share(solution.push):.1f}% of hands, the big blind calls '
    f'{100 * share(solution.call):.1f}%; the small blind wins {solution.value:+.4f} bb/hand; '
    f'exploitability {max(solution.exploitability, 0.0):.1e} bb/hand',
    file=log,
  )
  for title, strategy in (
    ('small blind, push (%)', solution.push),
    ('big blind, call a push (%)', solution.call),
  ):
    print(f'\n{title}', file=log)
    print('\n'.join(_grid(strategy, percent)), file=log)
  report = {
    'stack_bb': args.stack,
    'ante_bb': args.ante,
    'small_blind_bb': args.small_blind,
    'value_bb': solution.value,
    'exploitability_bb': solution.exploitability,
    'push_share': share(solution.push),
    'call_share': share(solution.call),
    'push': dict(zip(ranges.HAND_CLASSES, solution.push.tolist(), strict=True)),
    'call': dict(zip(ranges.HAND_CLASSES, solution.call.tolist(), strict=True)),
  }
  if not args.no_chart:
    chart = _chart(args)
    deepest = chart.stacks[-1]
    largest = lambda bb: '.' if bb == 0 else f'{bb:g}+' if bb == deepest else f'{bb:g}'
    for title, stacks, gaps in (
      ('small blind pushes', chart.push, chart.push_gaps),
      ('big blind calls a push', chart.call, chart.call_gaps),
    ):
      print(f'\nthe largest stack (bb) at which the {title} (at least half the time)', file=log)
      print('\n'.join(_grid(stacks, largest)), file=log)
      if gaps:
        names = ', '.join(ranges.HAND_CLASSES[k] for k in gaps)
        print(f'with gaps (folding at some smaller stack): {names}', file=log)
    report['chart'] = {
      'stacks_bb': [float(chart.stacks[0]), float(deepest), args.chart_step],
      'push_up_to_bb': dict(zip(ranges.HAND_CLASSES, chart.push.tolist(), strict=True)),
      'call_up_to_bb': dict(zip(ranges.HAND_CLASSES, chart.call.tolist(), strict=True)),
      'push_gaps': [ranges.HAND_CLASSES[k] for k in chart.push_gaps],
      'call_gaps': [ranges.HAND_CLASSES[k] for k in chart.call_gaps],
    }
  return common.write_outputs(args, report, log)


def _chart(args):
  """The chart over 1 .. --chart-max, with a progress line on stderr unless --quiet."""
  from jaxcfr.poker import pushfold  # noqa: PLC0415

  def progress(done: int, total: int) -> None:
    if not args.quiet and (done % 50 == 0 or done == total):
      print(f'chart: {done} / {total} stacks solved', file=sys.stderr, flush=True)

  return pushfold.chart(args.chart_max, args.chart_step, args.ante, args.small_blind, on_progress=progress)
