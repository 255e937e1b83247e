"""How much device memory a compiled game and a solver state take.

    jaxcfr.memory.nbytes(game)          # every array of the CompiledGame, in bytes
    jaxcfr.memory.accounting(game, state)
    # {'game_bytes': 751628, 'bytes_per_history': 79.5, 'state_bytes': 33700}  (Leduc, DCFR)

Bytes are the arrays' logical sizes (`nbytes` of every leaf): an array
replicated over several devices counts once.

On a CPU, `jax.device_put` of a NumPy array whose data starts on a 64-byte
boundary keeps that memory as the device array's instead of copying it
(other arrays are copied, and a GPU always copies). `aligned` makes such
arrays, so that the compiler and the game cache hold one copy of a game on
the host, not two.
"""

from __future__ import annotations

import jax
import numpy as np

__all__ = [
  'ALIGNMENT', 'accounting', 'aligned', 'available_bytes', 'describe', 'empty_aligned', 'format_bytes',
  'nbytes', 'program_bytes', 'release_freed',
]  # fmt: skip

ALIGNMENT = 64  # bytes: what XLA's CPU client needs to use a host buffer in place


def release_freed() -> bool:
  """Hands the memory that the C heap holds freed back to the system (glibc's `malloc_trim`; XLA's
  compiler frees hundreds of megabytes after a large program, which glibc otherwise keeps, so that a
  process's resident memory stays at its compile peak). False where the C library has no such call."""
  import ctypes  # noqa: PLC0415
  import ctypes.util  # noqa: PLC0415

  name = ctypes.util.find_library('c')
  try:
    trim = ctypes.CDLL(name).malloc_trim if name else None
  except (OSError, AttributeError):
    return False
  if trim is None:
    return False
  trim(0)
  return True


def nbytes(tree) -> int:
  """The sum of `nbytes` over the array leaves of `tree` (other leaves count 0)."""
  return sum(int(getattr(leaf, 'nbytes', 0)) for leaf in jax.tree.leaves(tree))


def empty_aligned(shape, dtype) -> np.ndarray:
  """An uninitialised array whose data starts on an `ALIGNMENT`-byte boundary."""
  dtype = np.dtype(dtype)
  shape = (int(shape),) if isinstance(shape, int | np.integer) else tuple(int(n) for n in shape)
  size = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
  raw = np.empty(size + ALIGNMENT, np.uint8)
  offset = -raw.ctypes.data % ALIGNMENT
  return raw[offset : offset + size].view(dtype).reshape(shape)


def aligned(array, dtype=None, copy: bool = True) -> np.ndarray:
  """`array` as `dtype` (default its own) in `ALIGNMENT`-aligned memory: a new array, unless
  `copy=False` and it already is one (then the caller hands it over: nothing may write to it
  once it backs a device array)."""
  array = np.asarray(array)
  dtype = array.dtype if dtype is None else np.dtype(dtype)
  if not copy and array.dtype == dtype and array.flags.c_contiguous and array.ctypes.data % ALIGNMENT == 0:
    return array
  result = empty_aligned(array.shape, dtype)
  result[...] = array
  return result


def accounting(game, state=None) -> dict:
  """`game_bytes`, `bytes_per_history` (game bytes / histories) and, given a solver state,
  `state_bytes`, as `jaxcfr solve --json` reports them."""
  game_bytes = nbytes(game)
  report = {'game_bytes': game_bytes, 'bytes_per_history': game_bytes / max(game.num_histories, 1)}
  if state is not None:
    report['state_bytes'] = nbytes(state)
  return report


def describe(report: dict) -> str:
  """One line for people: 'memory: game 752 kB (79.5 bytes/history), solver state 33.7 kB'."""
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


def available_bytes(device: jax.Device | None = None) -> int | None:
  """The memory a program on `device` (default: the first) can take: an accelerator's limit, or on a
  CPU the host's available memory (`MemAvailable` of /proc/meminfo); None where neither says."""
  device = device or jax.devices()[0]
  if device.platform != 'cpu':
    stats = device.memory_stats() or {}
    return stats.get('bytes_limit')
  try:
    with open('/proc/meminfo') as meminfo:
      for line in meminfo:
        if line.startswith('MemAvailable:'):
          return int(line.split()[1]) * 1024
  except OSError:
    pass
  return None


def program_bytes(compiled) -> int | None:
  """The peak memory of a compiled program by XLA's own account (`memory_analysis()`): its arguments,
  outputs and temporaries, less the outputs that reuse an argument's buffer; None where the backend
  does not say."""
  analysis = getattr(compiled, 'memory_analysis', lambda: None)()
  if analysis is None:
    return None
  return (
    analysis.argument_size_in_bytes
    + analysis.output_size_in_bytes
    + analysis.temp_size_in_bytes
    - analysis.alias_size_in_bytes
  )
