"""Builds the exact preflop all-in equity table shipped with the package (`jaxcfr.poker.pushfold.equity`),
by enumerating every five-card board once; prints progress and writes the file atomically.

    python experiments/build_preflop_equity.py [--out PATH]

Run it when the table's layout changes; `tests/poker/test_pushfold.py` checks the shipped file
against direct enumerations of single matchups.
"""

from __future__ import annotations

import argparse
import sys
import time

from jaxcfr.poker.pushfold import equity as preflop_equity


def main() -> int:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument(
    '--out', default=str(preflop_equity.EQUITY_FILE), help='where to write (default: the package file)'
  )
  args = parser.parse_args()
  start = time.perf_counter()
  last = [0.0]

  def progress(done: int, boards: int) -> None:
    now = time.perf_counter() - start
    if now - last[0] >= 30 or done == boards:
      last[0] = now
      print(f'{done:,} / {boards:,} boards, {now:.0f} s', file=sys.stderr, flush=True)

  table = preflop_equity.build_table(on_progress=progress)
  preflop_equity.save_table(table, args.out)
  print(f'wrote {args.out} in {time.perf_counter() - start:.0f} s')
  return 0


if __name__ == '__main__':
  sys.exit(main())
