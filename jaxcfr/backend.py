"""XLA compiler options that suit jaxcfr's programs on the current backend.

jaxcfr's solvers run many small array operations (Leduc's are a few thousand
numbers each). On CPUs, recent XLA versions hand reductions to YNNPACK
library calls, which cost several times more than XLA's own loops at these
sizes: keeping YNNPACK to matrix products makes a Leduc CFR+ iteration faster
(and the per-history passes most of all). Pass the options to
`jax.jit`:

    run = jax.jit(jaxcfr.run, static_argnums=0, compiler_options=jaxcfr.compiler_options())

They are empty on other backends and on XLA versions without the option.
"""

from __future__ import annotations

import functools
import os

import jax
import jax.numpy as jnp

CACHE_ENV, NO_CACHE_ENV = 'JAXCFR_CACHE_DIR', 'JAXCFR_NO_CACHE'
_CPU_OPTIONS = {'xla_cpu_experimental_ynn_fusion_type': 'LIBRARY_FUSION_TYPE_DOT'}
# Programs over large blocks that a CPU runs block by block (a blocked turn subgame): YNNPACK's
# default library fusions, and XLA:CPU's classic loop emitters instead of its fusion emitters (the
# iteration program compiles faster and runs a little faster; the exploitability check compiles much
# faster). A whole turn tree's iteration runs a little slower with them, so it keeps XLA's defaults.
_CPU_LARGE_BLOCK_OPTIONS = {'xla_cpu_use_fusion_emitters': False}


def compiler_options(game=None) -> dict[str, str]:
  """Options for `jax.jit(..., compiler_options=...)` on the default backend, for the programs of
  `game` (any game when None). A game whose arrays are large blocks (a turn subgame's [nodes,
  hands] arrays, thousands of numbers per node) says so with a true `large_blocks` attribute and
  keeps YNNPACK's reductions (a turn subgame's iteration runs faster with them), with
  XLA:CPU's classic emitters where it also has a true `classic_emitters` (a blocked turn tree:
  `_CPU_LARGE_BLOCK_OPTIONS`); a river subgame's `large_blocks` is false (it runs faster with
  YNNPACK kept to matrix products, as Leduc's tiny arrays)."""
  if jax.default_backend() != 'cpu':
    return {}
  if getattr(game, 'large_blocks', False):
    classic = getattr(game, 'classic_emitters', False) and _cpu_options_supported(True)
    return dict(_CPU_LARGE_BLOCK_OPTIONS) if classic else {}
  return dict(_CPU_OPTIONS) if _cpu_options_supported(False) else {}


def jit(fun, game=None, **kwargs):
  """`jax.jit(fun, **kwargs)` with `compiler_options(game)`."""
  return jax.jit(fun, compiler_options=compiler_options(game), **kwargs)


@functools.cache
def _cpu_options_supported(large_blocks: bool) -> bool:
  options = _CPU_LARGE_BLOCK_OPTIONS if large_blocks else _CPU_OPTIONS
  try:  # an XLA without the option refuses it when compiling, with an error
    jax.jit(jnp.sum, compiler_options=options).lower(jnp.zeros(2)).compile()
  except Exception:  # noqa: BLE001 (the error type differs between jax versions)
    return False
  return True


def cache_directory() -> str:
  """Where compiled programs are kept between runs: `$JAXCFR_CACHE_DIR`, else
  `$XDG_CACHE_HOME/jaxcfr/jax`, else `~/.cache/jaxcfr/jax`."""
  base = os.environ.get('XDG_CACHE_HOME') or os.path.join(os.path.expanduser('~'), '.cache')
  return os.environ.get(CACHE_ENV) or os.path.join(base, 'jaxcfr', 'jax')


def enable_compilation_cache(directory: str | None = None) -> str | None:
  """Turns on JAX's persistent compilation cache in `directory` (default
  `cache_directory()`), for every program however quick to compile, so that a second
  identical run loads its programs instead of compiling them. Returns the directory,
  or None when it cannot be created (the cache is then off: slower, not wrong)."""
  directory = directory or cache_directory()
  try:
    os.makedirs(directory, exist_ok=True)
  except OSError:
    return None
  jax.config.update('jax_compilation_cache_dir', directory)
  jax.config.update('jax_persistent_cache_min_compile_time_secs', 0.0)
  jax.config.update('jax_persistent_cache_min_entry_size_bytes', 0)
  return directory


def cores() -> int:
  """The CPU cores this process may run on (its affinity, as `taskset` sets it; elsewhere than Linux
  the machine's)."""
  try:
    return len(os.sched_getaffinity(0))
  except AttributeError:  # not on Linux
    return os.cpu_count() or 1
