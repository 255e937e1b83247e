"""`jaxcfr play`: a person plays heads-up no-limit hold'em against a bot in the terminal (the game loop
is `poker.play.play`).

    jaxcfr play --bot always-call --seed 1
    jaxcfr play --blueprint blueprint.npz [--abstraction tables/] [--hands 100] [--search]
    jaxcfr play --blueprint blueprint.npz --search --think-seconds 1 --search-streets turn,river

The bot is a baseline (`--bot NAME`, `poker.baselines.REGISTRY`) or a blueprint file (`--blueprint`,
with its recorded tables or `--abstraction DIR`); `--search` wraps it in the search bot. The bot is
made as `jaxcfr match` makes its policies (`jaxcfr.cli.common.resolve_policy`): `--blueprint X
--search` is the policy spec search:X. Bad input is one line and exit status 2. Imports nothing heavy
until it runs.
"""

from __future__ import annotations

import argparse
import os
import sys

from jaxcfr.cli import common
from jaxcfr.poker import defaults


class PlayError(common.UsageError):
  """Bad command-line input: one line, exit status 2."""


def add_arguments(parser) -> None:
  """Adds `jaxcfr play`'s arguments to `parser`."""
  names = ', '.join(defaults.BASELINES)
  bot = parser.add_mutually_exclusive_group(required=True)
  bot.add_argument('--blueprint', metavar='FILE', help='a blueprint file (jaxcfr blueprint train --out)')
  bot.add_argument('--bot', metavar='NAME', help=f'a baseline bot instead: {names}')
  parser.add_argument(
    '--abstraction', metavar='DIR', help="the blueprint's tables (default: the directory it recorded)"
  )
  parser.add_argument(
    '--seed', type=common.seed, default=0, metavar='N', help='cards and bot seed (default 0)'
  )
  parser.add_argument(
    '--hands', type=common.positive_count, metavar='N', help='stop after N hands (default: until q)'
  )
  parser.add_argument('--search', action='store_true', help='the bot re-solves in real time (the search bot)')
  common.add_search_options(parser.add_argument_group('the search bot (with --search)'))
  parser.add_argument('--verbose', action='store_true', help="show the libraries' own log messages")
  parser.add_argument('--no-cache', action='store_true', help='do not use the persistent compilation cache')


HELP = "play heads-up no-limit hold'em against a bot in the terminal"
DESCRIPTION = (
  "Play heads-up no-limit hold'em (blinds 50/100, stacks 20,000 every hand) against a blueprint or a "
  'baseline bot; pokerkit runs the hands. At the prompt: f fold, c check or call, b AMOUNT bet or '
  'raise to AMOUNT (your total for the betting round), a all-in, q quit, ? help. You are the button '
  'in odd hands, the big blind in even ones.'
)


def add_parser(commands) -> None:
  """Adds the `play` subcommand to the `jaxcfr` parser's subcommands."""
  add_arguments(commands.add_parser('play', help=HELP, description=DESCRIPTION))


def main(argv: list[str] | None = None, stdin=None, stdout=None) -> int:
  """`jaxcfr play ARGS` in this process with the given streams (default: the standard ones)."""
  parser = argparse.ArgumentParser(prog='jaxcfr play')
  add_arguments(parser)
  return run(parser.parse_args(argv), stdin=stdin, stdout=stdout)


def run(args, stdin=None, stdout=None) -> int:
  """Runs `jaxcfr play` for parsed `args`; one line on stderr and exit status 2 on bad input."""
  try:
    policy = make_bot(args)
  except common.UsageError as error:
    return common.fail(error)
  from jaxcfr.poker import play  # noqa: PLC0415

  try:
    play.play(
      policy,
      seed=args.seed,
      hands=args.hands,
      stdin=sys.stdin if stdin is None else stdin,
      stdout=sys.stdout if stdout is None else stdout,
    )
  except KeyboardInterrupt:
    print('\njaxcfr: interrupted', file=sys.stderr)
    return 130
  return 0


def make_bot(args):
  """The bot's policy from parsed `args`; `UsageError` with one line on bad input."""
  if sys.version_info < (3, 11):
    raise PlayError('jaxcfr play needs Python 3.11 or later (its engine, pokerkit, does)')
  try:
    import pokerkit  # noqa: F401, PLC0415
  except ImportError:
    raise PlayError("jaxcfr play needs pokerkit, its engine: pip install 'pokerkit>=0.7'") from None
  if args.abstraction is not None and args.blueprint is None:
    raise PlayError('--abstraction goes with --blueprint')
  common.check_search_options(args, args.search, 'needs --search')
  if args.bot is not None:
    if args.bot not in defaults.BASELINES:
      raise PlayError(f'unknown bot {args.bot!r}; the baselines are {", ".join(defaults.BASELINES)}')
    spec = args.bot
  else:
    if not os.path.exists(args.blueprint):
      raise PlayError(f'--blueprint {args.blueprint!r}: no such file')
    if args.abstraction is not None and not os.path.isdir(args.abstraction):
      raise PlayError(f'--abstraction {args.abstraction!r}: no such directory')
    spec = common.plain_path(args.blueprint)
  spec = f'search:{spec}' if args.search else spec
  return common.resolve_policy(spec, args, seed=args.seed, tables=args.abstraction)
