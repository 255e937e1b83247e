"""`jaxcfr chipzen run`: a jaxcfr bot at Chipzen's tables through the `chipzen-bot` SDK (an optional
extra: `pip install 'jaxcfr[chipzen]'`), a thin face over `poker.tables.chipzen`; `jaxcfr bot export`:
a blueprint as a directory for Chipzen's upload path (`poker.tables.export`).

    jaxcfr chipzen run --bot search:bp.npz --bot-id UUID       # the External API lobby
    jaxcfr chipzen run --bot bp.npz --url ws://HOST/ws/match/ID/bot --token T   # one match socket

The bot is compiled (two hands against itself to the river) before it connects, so that its first
decisions are as quick as the rest; every decision answers inside the match's `turn_timeout_ms` less a
margin (`poker.tables.seat`).

    jaxcfr bot export blueprint.npz --out bot/ --tier pro     # bot.py, runtime/, data/, Dockerfile, ...

Imports nothing heavy until it runs.
"""

from __future__ import annotations

import asyncio
import os
import statistics

from jaxcfr.cli import common

HELP = "play a jaxcfr bot at Chipzen's tables (the chipzen-bot SDK)"
DESCRIPTION = (
  "Connects a jaxcfr bot to Chipzen (heads-up no-limit hold'em at the table's blinds, ante and stacks) "
  'through the chipzen-bot SDK: by default the External API lobby (the SDK finds the bot id and token '
  'in chipzen.toml or the environment), or one match socket with --url. The bot compiles before it '
  "connects and answers every decision inside the match's clock."
)


EXPORT_HELP = "write a blueprint as a bot directory for Chipzen's upload path (NumPy only)"
EXPORT_DESCRIPTION = (
  "Writes a directory that Chipzen's upload path takes: bot.py (a chipzen.Bot), jaxcfr's NumPy runtime, "
  "the blueprint and its card abstraction as plain arrays (the river's buckets by equity, computed when "
  "a decision asks), requirements.txt, a Dockerfile and a README; refuses a bot over the tier's upload "
  'size less a 25%% margin, before writing anything.'
)


def add_parser(commands) -> None:
  """Adds `chipzen run` and `bot export` to the `jaxcfr` parser's subcommands."""
  bot = commands.add_parser('bot', help=EXPORT_HELP, description=EXPORT_DESCRIPTION)
  bot_actions = bot.add_subparsers(dest='bot_command', required=True)
  export = bot_actions.add_parser('export', help=EXPORT_HELP, description=EXPORT_DESCRIPTION)
  export.add_argument(
    'blueprint', metavar='BLUEPRINT', nargs='+',
    help='a blueprint file (jaxcfr blueprint train), or several of one abstraction trained at different '
    'depths (--stack): the bot plays the one nearest the effective stack',
  )  # fmt: skip
  export.add_argument('--out', required=True, metavar='DIR', help='the bot directory to write (new or empty)')
  export.add_argument(
    '--tier', choices=('free', 'pro', 'elite'), default='pro', help='the Chipzen tier (default pro)'
  )
  export.add_argument(
    '--tables', metavar='DIR', help='its abstraction tables (default: where it was trained)'
  )
  export.add_argument('--json', metavar='PATH', help='write the sizes as JSON (- for stdout)')
  export.add_argument('--quiet', action='store_true', help='no progress output')
  bot.set_defaults(verbose=False, no_cache=False, force=False)
  parser = commands.add_parser('chipzen', help=HELP, description=DESCRIPTION)
  actions = parser.add_subparsers(dest='chipzen_command', required=True)
  run = actions.add_parser('run', help='play matches on Chipzen', description=DESCRIPTION)
  run.add_argument('--bot', required=True, metavar='SPEC', help='a policy as `jaxcfr match` takes it')
  run.add_argument('--bot-id', help="the External API bot's id (default: chipzen.toml)")
  run.add_argument(
    '--env', choices=('prod', 'staging', 'local'), help='the Chipzen environment (SDK default)'
  )
  run.add_argument(
    '--url', help='a match socket (ws://.../ws/match/ID/...) instead of the lobby (default $CHIPZEN_WS_URL)'
  )
  run.add_argument('--token', help='the API token (default: $CHIPZEN_TOKEN or chipzen.toml)')
  run.add_argument('--max-matches', type=common.positive_count, help='stop after N matches (lobby)')
  run.add_argument('--seed', type=common.seed, default=0, help="the bot's sampling seed (default 0)")
  common.add_search_options(run)
  parser.set_defaults(quiet=False, verbose=False, no_cache=False)


def run(args) -> int:
  """Runs `jaxcfr chipzen run`: resolves and compiles the bot, then plays."""
  from jaxcfr.poker.tables import chipzen  # noqa: PLC0415
  from jaxcfr.poker.tables.seat import Seat  # noqa: PLC0415

  common.check_search_options(args, common.is_search(args.bot), 'applies to a search: bot only')
  with common.bad_input(chipzen.ChipzenError):
    sdk = chipzen.sdk()
  url = args.url or os.environ.get('CHIPZEN_WS_URL')
  token = args.token or os.environ.get('CHIPZEN_TOKEN')
  policy = common.table_policy(args.bot, args, seed=args.seed)
  seat = Seat(policy, seed=args.seed)
  print(f'{policy.name}: compiled in {seat.warm_up():.1f} s', flush=True)
  table = chipzen.ChipzenSeat(seat)
  bot = chipzen.bot_class()(table)
  try:
    with common.bad_input(ValueError):  # the SDK's own word on a missing token, bot id or url
      if url:
        asyncio.run(sdk.run_bot(url, bot, token=token))
      else:
        asyncio.run(
          sdk.run_external_bot(
            bot, bot_id=args.bot_id, env=args.env, token=token, max_matches=args.max_matches
          )
        )
  finally:
    seat.finish()
  _summary(table, seat)
  return 0


def export(args) -> int:
  """Runs `jaxcfr bot export`: checks, reads the blueprint and tables, writes the directory."""
  from jaxcfr import outputs  # noqa: PLC0415
  from jaxcfr.poker.tables import export as exporting  # noqa: PLC0415

  common.check_json(args)
  outputs.check_directory(
    args.out, '--out', is_ours_dir=exporting.is_bot_directory, files=exporting.EXPORT_FILES
  )
  with common.bad_input(ValueError):
    tables = exporting.bundle_tables(args.blueprint[0], args.tables, quiet=args.quiet)
    exporting.check_same_abstraction(args.blueprint, tables)
    report = exporting.export_bot(args.blueprint, args.out, args.tier, tables)
  log = common.log_stream(args)
  tier = exporting.TIERS[args.tier]
  print(
    f'{args.out}: {report.files} files, {report.uncompressed_bytes / 2**20:.2f} MB, '
    f'{report.compressed_bytes / 2**20:.2f} MB compressed (the {args.tier} tier takes {tier.upload_mb:g} MB; '
    f'{report.limit_bytes / 2**20:.2f} MB with the margin)',
    file=log,
  )
  return common.write_outputs(args, report.to_json(), log)


def _summary(table, seat) -> None:
  times = {}
  for phase, seconds, _ in table.decisions:
    times.setdefault(phase, []).append(seconds)
  streets = ', '.join(
    f'{phase} {1000 * statistics.median(t):.0f} ms ({len(t)})' for phase, t in times.items()
  )
  print(
    f'{len(table.decisions)} decisions; think time, median (count): {streets or "none"}; answered by '
    f'{dict(seat.counts)}; faults {table.faults}'
  )
