"""How much device memory a compiled game and a solver state take.

    jaxcfr.memory.nbytes(game)          # every array of the CompiledGame, in bytes
    jaxcfr.memory.accounting(game, state)
    # {'game_bytes': 917268, 'bytes_per_history': 97.0, 'state_bytes': 44928}

Bytes are the arrays' logical sizes (`nbytes` of every leaf): an array
replicated over several devices counts once.
"""

from __future__ import annotations

import jax

__all__ = ['accounting', 'describe', 'format_bytes', 'nbytes']


def nbytes(tree) -> int:
  """The sum of `nbytes` over the array leaves of `tree` (other leaves count 0)."""
  return sum(int(getattr(leaf, 'nbytes', 0)) for leaf in jax.tree.leaves(tree))


def accounting(game, state=None) -> dict:
  """`game_bytes`, `bytes_per_history` (game bytes / histories) and, given a solver state,
  `state_bytes`, as `jaxcfr solve --json` reports them."""
  game_bytes = nbytes(game)
  report = {'game_bytes': game_bytes, 'bytes_per_history': game_bytes / max(game.num_histories, 1)}
  if state is not None:
    report['state_bytes'] = nbytes(state)
  return report


def describe(report: dict) -> str:
  """One line for people: 'memory: game 917 kB (97.0 bytes/history), solver state 44.9 kB'."""
  line = (
    f'memory: game {format_bytes(report["game_bytes"])} ({report["bytes_per_history"]:.1f} bytes/history)'
  )
  if 'state_bytes' in report:
    line += f', solver state {format_bytes(report["state_bytes"])}'
  return line


def format_bytes(count: int) -> str:
  """'917 kB', '2.41 GB': decimal units, three significant digits."""
  value = float(count)
  for unit in ('B', 'kB', 'MB', 'GB', 'TB'):  # noqa: B007 (the last unit reached is the one shown)
    if value < 999.5 or unit == 'TB':
      break
    value /= 1000
  return f'{int(value)} B' if unit == 'B' else f'{value:.3g} {unit}'
