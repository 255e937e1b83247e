"""`jaxcfr abstract`: build and save the hold'em card-abstraction tables.

    jaxcfr abstract [--profile default|small] [--buckets 169,200,200,200] --out DIR [--force]
                    [--seed S] [--bins N] [--turn-rivers N] [--flop-turns N]
                    [--kmeans-sample N] [--kmeans-iterations N] [--quiet]

`--out` is checked before any building: it must not exist, or be an empty
directory, or (with `--force`) hold tables written by this command and nothing
else. Nothing else is ever removed or overwritten.

`run` raises `AbstractionError` (a ValueError) with one message for bad input, a refused or
unwritable `--out` included; `command`, which `jaxcfr abstract` runs, makes it one line and exit
status 2. Counts are checked as the other commands check theirs (`jaxcfr.cli.common`).
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time

from abstractions.tables import PROFILES, AbstractionError, BuildSettings, build_tables, check_output, save
from jaxcfr.cli import common
from jaxcfr.outputs import OutputError

# Sampling that brings each profile within its time budget: the default is exact but for the
# k-means fit sample; the small profile samples 8 river cards per turn board and 12 turn cards
# per flop board (errors stated in the metadata) and uses 25 histogram bins, which halves the
# k-means assignment of the 14M turn classes.
PROFILE_SETTINGS = {
  'default': {
    'bins': 50,
    'turn_rivers': 48,
    'flop_turns': 49,
    'kmeans_sample': 100_000,
    'kmeans_iterations': 20,
  },
  'small': {'bins': 25, 'turn_rivers': 8, 'flop_turns': 12, 'kmeans_sample': 20_000, 'kmeans_iterations': 10},
}


def parse_buckets(text: str) -> tuple[int, int, int, int]:
  """'169,200,200,200' -> (169, 200, 200, 200); four positive integers."""
  parts = text.split(',')
  try:
    values = tuple(int(p) for p in parts)
  except ValueError:
    raise AbstractionError(f'--buckets expects four comma-separated integers, got {text!r}') from None
  if len(values) != 4 or min(values) < 1:
    raise AbstractionError(
      f'--buckets expects four positive integers (preflop,flop,turn,river), got {text!r}'
    )
  return values


def add_parser(subparsers) -> argparse.ArgumentParser:
  """Registers the `abstract` subcommand on an argparse subparsers object."""
  parser = subparsers.add_parser('abstract', help="build hold'em card-abstraction tables")
  parser.add_argument(
    '--profile', choices=sorted(PROFILES), default='default', help='bucket sizes and sampling'
  )
  parser.add_argument('--buckets', help='bucket sizes preflop,flop,turn,river (default: from the profile)')
  parser.add_argument('--out', required=True, metavar='DIR', help='directory to write (atomically)')
  parser.add_argument(
    '--force', action='store_true', help='replace tables an earlier `jaxcfr abstract` wrote at --out'
  )
  count = common.positive_count
  parser.add_argument('--seed', type=common.seed, default=0, help='seed of k-means++ and of the samples')
  parser.add_argument(
    '--bins', type=common.whole_number(2), help='equity histogram bins (default 50, small 25)'
  )
  parser.add_argument('--turn-rivers', type=count, help='river cards sampled per turn board (48 = exact)')
  parser.add_argument('--flop-turns', type=count, help='turn cards sampled per flop board (49 = exact)')
  parser.add_argument('--kmeans-sample', type=count, help='classes drawn to fit each k-means')
  parser.add_argument('--kmeans-iterations', type=common.whole_number(0), help='k-means iterations')
  parser.add_argument('--quiet', action='store_true', help='no progress output')
  return parser


def settings_from_args(args: argparse.Namespace) -> BuildSettings:
  defaults = PROFILE_SETTINGS[args.profile]
  pick = lambda name: defaults[name] if getattr(args, name) is None else getattr(args, name)
  return BuildSettings(
    buckets=parse_buckets(args.buckets) if args.buckets else PROFILES[args.profile],
    seed=args.seed,
    bins=pick('bins'),
    turn_rivers=pick('turn_rivers'),
    flop_turns=pick('flop_turns'),
    kmeans_sample=pick('kmeans_sample'),
    kmeans_iterations=pick('kmeans_iterations'),
  )


def command(args: argparse.Namespace) -> int:
  """`jaxcfr abstract`: `run`, with bad input as one line and exit status 2."""
  with common.bad_input(AbstractionError):
    return run(args)


def run(args: argparse.Namespace) -> int:
  """Checks --out, builds and saves the tables; returns the exit status (0)."""
  settings = settings_from_args(args)
  try:
    check_output(args.out, '--out', force=args.force)
  except OutputError as error:
    raise AbstractionError(str(error)) from None
  start = time.perf_counter()
  tables, metadata = build_tables(settings, quiet=args.quiet)
  metadata['profile'] = args.profile
  try:
    fingerprint = save(tables, metadata, args.out, force=args.force, what='--out')
  except OutputError as error:
    raise AbstractionError(str(error)) from None
  if not args.quiet:
    sizes = ','.join(str(b) for b in settings.buckets)
    print(
      f'wrote {args.out}: buckets {sizes}, fingerprint {fingerprint[:16]}, '
      f'{time.perf_counter() - start:.0f} s ({dataclasses.asdict(settings)})',
      file=sys.stderr,
    )
  return 0
