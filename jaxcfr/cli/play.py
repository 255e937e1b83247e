"""`jaxcfr play`: a person plays heads-up no-limit hold'em against a bot in the terminal (the game loop
is `poker.play.play`).

    jaxcfr play --bot always-call --seed 1
    jaxcfr play --blueprint blueprint.npz [--abstraction tables/] [--hands 100] [--search]
    jaxcfr play --blueprint blueprint.npz --search --search-streets flop,turn,river

The bot is a baseline (`--bot NAME`, `poker.baselines.REGISTRY`) or a blueprint file (`--blueprint`,
read by `jaxcfr.poker.blueprint.load_policy` with its recorded tables or `--abstraction DIR`);
`--search` wraps it in `jaxcfr.poker.search.search_policy`. Bad input is one line and exit status 2.
Imports nothing heavy until it runs.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys

from jaxcfr.cli.match import positive, search_streets, warm_starts, whole_number
from jaxcfr.poker import defaults

DEFAULT_THINK_SECONDS = 1.0


class PlayError(ValueError):
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
    '--seed', type=whole_number(0), default=0, metavar='N', help='cards and bot seed (default 0)'
  )
  parser.add_argument(
    '--hands', type=whole_number(1), metavar='N', help='stop after N hands (default: until q)'
  )
  parser.add_argument('--search', action='store_true', help='the bot re-solves in real time')
  parser.add_argument(
    '--think-seconds', type=positive(float), metavar='S',
    help=f"the search bot's time per decision (with --search; default {DEFAULT_THINK_SECONDS:g})",
  )  # fmt: skip
  parser.add_argument(
    '--search-streets', type=search_streets, metavar='STREETS',
    help="where the search bot re-solves (with --search): 'turn,river' (default), or any of 'flop' "
    "(depth-limited), 'turn', 'river', comma-separated",
  )  # fmt: skip
  parser.add_argument(
    '--search-warm-start', type=warm_starts, metavar='K|FLOP,RIVER',
    help="iterations of the blueprint's strategy that the search bot's flop and river re-solves start "
    'from (with --search; default: none)',
  )  # fmt: skip
  parser.add_argument(
    '--search-gadget', choices=defaults.GADGETS,
    help="re-solve the river safely against the blueprint (with --search; default: unsafe)",
  )  # fmt: skip
  parser.add_argument('--verbose', action='store_true', help="show the libraries' own log messages")
  parser.add_argument('--no-cache', action='store_true', help='do not use the persistent compilation cache')


def add_parser(commands) -> None:
  """Adds the `play` subcommand to the `jaxcfr` parser's subcommands."""
  parser = commands.add_parser(
    'play',
    help="play heads-up no-limit hold'em against a bot in the terminal",
    description="Play heads-up no-limit hold'em (blinds 50/100, stacks 20,000 every hand) against a "
    'blueprint or a baseline bot; pokerkit runs the hands. At the prompt: f fold, c check or call, '
    'b AMOUNT bet or raise to AMOUNT (your total for the betting round), a all-in, q quit, ? help. '
    'You are the button in odd hands, the big blind in even ones.',
  )
  add_arguments(parser)


def main(argv: list[str] | None = None, stdin=None, stdout=None) -> int:
  """`jaxcfr play ARGS` in this process with the given streams (default: the standard ones)."""
  parser = argparse.ArgumentParser(prog='jaxcfr play')
  add_arguments(parser)
  return run(parser.parse_args(argv), stdin=stdin, stdout=stdout)


def run(args, stdin=None, stdout=None) -> int:
  """Runs `jaxcfr play` for parsed `args`; one line on stderr and exit status 2 on bad input."""
  try:
    policy = make_bot(args)
  except PlayError as error:
    print(f'jaxcfr: error: {error}', file=sys.stderr)
    return 2
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
  """The bot's policy from parsed `args`; PlayError with one line on bad input."""
  if sys.version_info < (3, 11):
    raise PlayError('jaxcfr play needs Python 3.11 or later (its engine, pokerkit, does)')
  try:
    import pokerkit  # noqa: F401, PLC0415
  except ImportError:
    raise PlayError("jaxcfr play needs pokerkit, its engine: pip install 'pokerkit>=0.7'") from None
  if args.abstraction is not None and args.blueprint is None:
    raise PlayError('--abstraction goes with --blueprint')
  if args.think_seconds is not None and not args.search:
    raise PlayError('--think-seconds needs --search')
  if args.search_streets is not None and not args.search:
    raise PlayError('--search-streets needs --search')
  if args.search_warm_start is not None and not args.search:
    raise PlayError('--search-warm-start needs --search')
  if args.search_gadget is not None and not args.search:
    raise PlayError('--search-gadget needs --search')
  search = None
  if args.search:
    try:
      search = importlib.import_module('jaxcfr.poker.search.bot')
    except ImportError as error:
      if error.name not in (None, 'jaxcfr.poker.search.bot'):
        raise
      raise PlayError(
        '--search needs the search bot (jaxcfr.poker.search), which this version lacks'
      ) from None
  from jaxcfr.poker.eval import baselines  # noqa: PLC0415

  if args.bot is not None:
    if args.bot not in baselines.REGISTRY:
      raise PlayError(f'unknown bot {args.bot!r}; the baselines are {", ".join(baselines.REGISTRY)}')
    policy = baselines.REGISTRY[args.bot]()
  else:
    policy = _load_blueprint(args.blueprint, args.abstraction)
  if search is not None:
    think = DEFAULT_THINK_SECONDS if args.think_seconds is None else args.think_seconds
    try:
      options = {} if args.search_streets is None else {'streets': args.search_streets}
      if args.search_warm_start is not None:
        options['warm_start'] = args.search_warm_start
      if args.search_gadget is not None:
        options['gadget'] = args.search_gadget
      policy = search.search_policy(policy, think_seconds=think, seed=args.seed, **options)
    except ValueError as error:
      raise PlayError(f'--search: {error}') from None
  return policy


def _load_blueprint(path: str, tables: str | None):
  if not os.path.exists(path):
    raise PlayError(f'--blueprint {path!r}: no such file')
  if tables is not None and not os.path.isdir(tables):
    raise PlayError(f'--abstraction {tables!r}: no such directory')
  from jaxcfr.poker import blueprint  # noqa: PLC0415

  try:
    return blueprint.load_policy(path, tables)
  except (ValueError, OSError, KeyError) as error:  # BlueprintError is a ValueError
    raise PlayError(str(error)) from None
