"""`jaxcfr acpc`: a jaxcfr bot at an ACPC dealer's table (a thin face over `poker.tables.acpc`).

    jaxcfr acpc localhost 18791 --bot search:bp.npz --log hands.jsonl --json result.json
    jaxcfr acpc dealer.example.org 9000 --bot equity --game holdem.nolimit.2p.reverse_blinds.game

The game definition is checked, the outputs tried for writing and the bot compiled (two hands against
itself to the river) before it connects; it plays until the dealer closes the connection, then prints
our result. A fault of the dealer's side (a malformed line, a state that does not follow, a close in
the middle of a hand, silence) is one line and exit status 1; bad input one line and exit status 2.
Imports nothing heavy until it runs.
"""

from __future__ import annotations

import argparse
import sys

from jaxcfr import outputs
from jaxcfr.cli import common
from jaxcfr.poker import defaults

HELP = "play a jaxcfr bot at an ACPC dealer's table (protocol 2.0.0)"
DESCRIPTION = (
  "Connects a jaxcfr bot to an ACPC dealer (the Annual Computer Poker Competition's server) at HOST PORT "
  "and plays heads-up no-limit hold'em until the dealer ends the match; prints our chips and mbb/hand "
  'with a 95% CI. Exit status 1 when the dealer breaks the protocol, closes mid-hand or stalls.'
)


def port(text: str) -> int:
  """An argparse type: a TCP port, 1..65535."""
  value = common.whole_number(1)(text)
  if value > 65535:
    raise argparse.ArgumentTypeError(f'a TCP port is 1..65535, got {text}')
  return value


def add_parser(commands) -> None:
  """Adds the `acpc` subcommand to the `jaxcfr` parser's subcommands."""
  parser = commands.add_parser('acpc', help=HELP, description=DESCRIPTION)
  parser.add_argument('host', metavar='HOST', help="the dealer's host name or address")
  parser.add_argument('port', metavar='PORT', type=port, help='the port the dealer opened for this player')
  parser.add_argument(
    '--bot', required=True, metavar='SPEC',
    help=f'a baseline ({", ".join(defaults.BASELINES)}), a policy file, or search:FILE (the search bot)',
  )  # fmt: skip
  parser.add_argument(
    '--game', metavar='FILE',
    help="the dealer's game definition (default: heads-up no-limit, holdem.nolimit.2p.reverse_blinds.game)",
  )  # fmt: skip
  parser.add_argument('--log', metavar='FILE.jsonl', help='write each finished hand as a JSON line here')
  parser.add_argument('--seed', type=common.seed, default=0, help="the bot's sampling seed (default 0)")
  parser.add_argument(
    '--t-response', type=common.positive_seconds, default=defaults.ACPC_RESPONSE_SECONDS, metavar='S',
    help='seconds a decision may take, from the state to our answer (default '
    f'{defaults.ACPC_RESPONSE_SECONDS:g})',
  )  # fmt: skip
  parser.add_argument(
    '--timeout', type=common.positive_seconds, default=defaults.ACPC_STALL_SECONDS, metavar='S',
    help=f'seconds of silence from the dealer, once the match has begun, that end it (default '
    f'{defaults.ACPC_STALL_SECONDS:g})',
  )  # fmt: skip
  common.add_search_options(parser)
  common.add_output_options(parser)


def run(args) -> int:
  """Runs `jaxcfr acpc`: checks the input and outputs, compiles the bot, plays, reports and writes."""
  from jaxcfr.poker.tables import acpc  # noqa: PLC0415
  from jaxcfr.poker.tables.seat import Seat  # noqa: PLC0415

  log = common.log_stream(args)
  common.check_search_options(args, common.is_search(args.bot), 'applies to a search: bot only')
  if args.t_response <= acpc.TRANSPORT_SECONDS:
    raise common.UsageError(
      f'--t-response must be more than {acpc.TRANSPORT_SECONDS:g} s (the transport margin)'
    )
  with common.bad_input(acpc.GameError):
    game = acpc.load_game(_read_game(args.game))
  common.check_json(args)
  outputs.check_file(args.log, '--log', force=args.force, suffixes=('.jsonl',))
  policy = common.table_policy(args.bot, args, seed=args.seed)
  seat = Seat(policy, seed=args.seed)
  seconds = seat.warm_up()
  if not args.quiet:
    print(
      f'{policy.name}: compiled in {seconds:.1f} s; connecting to {args.host}:{args.port}',
      file=log,
      flush=True,
    )
  hand_log = None
  if args.log:
    hand_log = acpc.HandLog.create(
      args.log, acpc.default_header(policy.name, args.host, args.port, game), force=args.force
    )

  def every(done: int) -> None:
    if done % 1000 == 0 and not args.quiet:
      print(f'{done:,} hands', file=log, flush=True)

  try:
    result = acpc.play(
      args.host, args.port, seat, game=game, log=hand_log, timeout=args.timeout, t_response=args.t_response,
      on_hand=every,
    )  # fmt: skip
  except acpc.ProtocolError as error:
    print(f'jaxcfr: error: {error}', file=sys.stderr)
    return 1
  finally:
    seat.finish()
    if hand_log is not None:
      hand_log.close()
  _print(result, args, log)
  return common.write_outputs(
    args, {**result.to_json(), 'dealer': f'{args.host}:{args.port}', 'log': args.log}, log
  )


def _read_game(path: str | None) -> str | None:
  if path is None:
    return None
  try:
    with open(path, encoding='utf-8') as file:
      return file.read()
  except (OSError, UnicodeDecodeError) as error:
    reason = getattr(error, 'strerror', None) or str(error)
    raise common.UsageError(f'--game: cannot read {path!r} ({reason})') from None


def _print(result, args, log) -> None:
  def signed(value: float) -> str:
    return 'n/a' if value != value else f'{value:+.1f}'

  print(
    f'{result.bot} at {args.host}:{args.port}: {result.hands:,} hands in {result.seconds:.1f} s, '
    f'{result.total_chips:+,} chips\n'
    f'{result.bot}: {signed(result.mbb_per_hand)} mbb/hand, 95% CI [{signed(result.ci95_low)}, '
    f'{signed(result.ci95_high)}]\n'
    f'  as small blind {signed(result.seat_mbb[0])}, as big blind {signed(result.seat_mbb[1])}; '
    f'{result.decisions:,} decisions, think time median {1000 * result.think_median:.0f} ms, '
    f'max {1000 * result.think_max:.0f} ms; fallbacks {result.fallbacks}',
    file=log,
  )
  if args.log:
    print(f'hands logged to {args.log}', file=log)
