"""`jaxcfr report`: one spot's tree solved on many flops, an aggregated flop report (a thin face over
`poker.subgame.flop_report`).

    jaxcfr report --flops 25 --pot 200 --stack 900 --oop-range OOP --ip-range IP \\
      --bets 50%,a --raises a --target 1 --out study/

Imports nothing heavy until it runs.
"""

from __future__ import annotations

import sys

from jaxcfr.cli import common, subgame

HELP = "solve one spot's tree on many flops: frequencies by flop and by texture (an aggregated report)"
DESCRIPTION = (
  "Solve one heads-up no-limit hold'em spot on many flops (the 1,755 flops distinct under suit "
  'relabelling, a subset standing for them, or a file) and report per flop the EVs, equities, '
  "exploitability and the acting player's action frequencies at the root (and at --node), weighted "
  'by texture. Files in --out DIR: flops.jsonl, flops.csv, summary.json, report.png, report.html; '
  'a stopped report run again with the same command solves only the flops not yet solved.'
)


def add_parser(commands) -> None:
  """Adds the `report` subcommand to the `jaxcfr` parser's subcommands."""
  parser = commands.add_parser('report', help=HELP, description=DESCRIPTION)
  spot = parser.add_argument_group('the spot (each required)')
  spot.add_argument(
    '--flops', required=True, metavar='SET',
    help="'all' (1,755 flops, each weighted by the flops it stands for), a count N (N flops chosen to "
    "stand for all; see docs/poker/reports.md), or a file of flops, one a line, each with an optional "
    "weight after it ('Qs8h3c 12')",
  )  # fmt: skip
  spot.add_argument('--pot', type=common.positive_count, required=True, help='the pot on the flop, chips')
  spot.add_argument('--stack', type=common.positive_count, required=True, help='the effective stack, chips')
  spot.add_argument('--oop-range', required=True, help="e.g. '66+,A8s+,A5s-A4s,AJo+,KQo,QTs+:0.5'")
  spot.add_argument('--ip-range', required=True, help='the in-position range')
  subgame.add_size_options(parser)
  subgame.add_solve_options(parser)
  out = parser.add_argument_group('outputs')
  out.add_argument(
    '--out', required=True, metavar='DIR',
    help='the report directory: made if absent, resumed if it holds this report; one holding a report of '
    'other settings is refused, or started over with --force (which removes only that report\'s files)',
  )  # fmt: skip
  out.add_argument(
    '--node', metavar='PATH',
    help="a flop decision whose frequencies the report adds, e.g. 'x,b100' (x check, c call, bN bet, "
    'rN raise, a all-in; default: the root alone)',
  )  # fmt: skip
  common.add_output_options(out)  # --json: the summary; --force: also starts over an --out of other settings


def run(args) -> int:
  """Runs `jaxcfr report`: checks everything, then solves the flops not yet solved, then writes."""
  from jaxcfr import outputs, progress  # noqa: PLC0415
  from jaxcfr.poker.rules import ranges  # noqa: PLC0415
  from jaxcfr.poker.subgame import flop_report, flops, solving  # noqa: PLC0415
  from jaxcfr.poker.subgame import tree as tree_module  # noqa: PLC0415
  from jaxcfr.training import TrainingError  # noqa: PLC0415

  log = common.log_stream(args)
  with common.bad_input(ValueError, TrainingError):  # PokerInputError and OutputError are ValueErrors
    common.check_json(args)
    chosen = flops.flop_set(args.flops)
    spec = solving.SpotSpec(
      chosen[0].board, args.pot, args.stack, (args.oop_range, args.ip_range), args.bets, args.raises,
      args.donk, args.raise_cap, args.force_all_in, args.add_all_in, args.merge,
    )  # fmt: skip
    if args.print_tree:
      print('\n'.join(tree_module.betting_lines(spec.config())))
      return 0
    for text in spec.ranges:  # a bad range is one line before any solve
      ranges.parse_range(text)
    flop_report.check_node(spec, args.node)
    report = flop_report.Report(
      spec, chosen, args.out, target_pct=args.target or None, iterations=args.iterations,
      algorithm=args.algorithm, eval_every=args.eval_every, dtype=args.dtype, compress=args.compress,
      compact=args.compact, node=args.node, max_bytes=int(args.max_memory * 2**30) or None,
      threads=subgame.solve_threads(args),
    )  # fmt: skip
    report.check_memory()
    done = report.open(force=args.force)
  left = report.to_solve(done)
  if done:
    print(
      f'{args.out}: {len(done):,} of {len(chosen):,} flops solved before; solving the other {len(left):,}',
      file=log,
    )
  bad = []
  # A report runs for hours: in a log, a line a flop up to 100 flops, else a hundredth's (no more often
  # than `Progress`'s min_interval), with the time left.
  with progress.Progress(
    total=len(chosen), initial=len(done), desc='flops', unit='flop', quiet=args.quiet,
    lines=min(len(chosen), 100),
  ) as bar:  # fmt: skip
    try:
      for flop in left:
        number = chosen.index(flop) + 1
        try:
          done[flop.board] = record = report.solve(flop)
        except (ValueError, TrainingError) as error:
          if isinstance(error, outputs.OutputError):
            raise
          bad.append(flop.board)
          print(f'jaxcfr: error: flop {number} ({flop.board}): {error}', file=sys.stderr)
          bar.update(1)
          continue
        bar.set_postfix_str(f'{flop.board}: exploitability {record["exploitability_pct"]:.2f}% pot')
        bar.update(1)
    except KeyboardInterrupt:
      bar.close()
      print(
        f'jaxcfr: stopped with {len(done):,} of {len(chosen):,} flops solved (kept in {args.out}); the same '
        'command solves the rest',
        file=sys.stderr,
      )
      return 130
    except outputs.OutputError as error:
      return common.fail(error)
  with common.bad_input(ValueError):
    summary = report.write(done)
    _print(summary, len(chosen), bad, log)
    print(
      f'report written to {args.out} (flops.jsonl, flops.csv, summary.json, report.png, report.html)',
      file=log,
    )
    if args.json:
      outputs.write_json(args.json, {'format': flop_report.FORMAT + '-summary', **summary}, force=args.force)
  return 2 if bad else 0


def _print(summary: dict, total: int, bad: list, log) -> None:
  if not summary.get('flops'):
    print('no flop solved', file=log)
    return
  overall = summary['overall']
  root = ', '.join(f'{action} {100 * share:.1f}%' for action, share in overall['root'].items())
  who = summary['nodes']['root']['player'].upper()
  print(
    f'{summary["flops"]:,} of {total:,} flops (weighted): EV OOP {overall["ev"]["oop"]:.2f}, IP '
    f'{overall["ev"]["ip"]:.2f}; equity OOP {100 * overall["equity"]["oop"]:.2f}%; exploitability '
    f'mean {summary["exploitability_pct"]["mean"]:.3f}%, max {summary["exploitability_pct"]["max"]:.3f}% '
    'of the pot\n'
    f'{who} at the root: {root}',
    file=log,
  )
  if 'node' in overall:
    node = summary['nodes']['node']
    shares = ', '.join(f'{action} {100 * share:.1f}%' for action, share in overall['node'].items())
    print(f'{node["player"].upper()} at {node["node"]}: {shares}', file=log)
  if bad:
    print(f'{len(bad)} flops not solved: {", ".join(bad[:10])}{" ..." if len(bad) > 10 else ""}', file=log)
