"""Shared fixtures. Tests run with float64 available (`jax_enable_x64`); the
compiled games choose their dtype explicitly."""

import atexit
import functools
import os
import shutil
import sys
import tempfile

# tests/ mirrors the package (tests/core, tests/poker/..., tests/cli, tests/abstractions); the oracles
# and the CLI runner that tests in several folders import live in tests/oracles and tests/support.
TESTS = os.path.dirname(os.path.abspath(__file__))
SUPPORT_PATHS = [os.path.join(TESTS, 'oracles'), os.path.join(TESTS, 'support')]
for _path in reversed(SUPPORT_PATHS):
  if _path not in sys.path:
    sys.path.insert(0, _path)


def import_paths(test_file: str) -> list[str]:
  """What a subprocess of the test in `test_file` puts on sys.path to import as the test does: the
  test's folder, tests/ (conftest), the oracles and the support folder, and the repository."""
  return [os.path.dirname(os.path.abspath(test_file)), TESTS, *SUPPORT_PATHS, os.path.dirname(TESTS)]


# CLI runs in the tests (in-process and in subprocesses, which inherit the environment) keep their
# compiled programs in a cache of this test process's own, removed at exit, not in the user's. The
# tests themselves share it too (both pytest-xdist workers, and tests that compile the same program
# through different functions): the whole suite runs faster.
if 'JAXCFR_CACHE_DIR' not in os.environ:
  os.environ['JAXCFR_CACHE_DIR'] = tempfile.mkdtemp(prefix='jaxcfr-test-cache-')
  os.environ['JAXCFR_TEST_PROGRAMS'] = os.path.join(os.environ['JAXCFR_CACHE_DIR'], 'tests')
  # The native showdown kernel is built there too (once, a few seconds), not in the user's cache.
  os.environ.setdefault('JAXCFR_NATIVE_DIR', os.path.join(os.environ['JAXCFR_CACHE_DIR'], 'native'))
  atexit.register(shutil.rmtree, os.environ['JAXCFR_CACHE_DIR'], ignore_errors=True)

# The suite's pytest-xdist workers keep every core busy: large games walk in the process that compiles
# them (CLI subprocesses inherit it), not in extra interpreters that would only share those cores. The
# worker processes' walk is tested with an explicit `workers` (test_parallel_compile: the same arrays).
os.environ.setdefault('JAXCFR_COMPILE_WORKERS', '1')

# The suite compiles hundreds of programs and runs most of them briefly: XLA's CPU backend at LLVM
# optimisation level 0 makes the whole suite faster (tests check values, which the
# optimisation level does not change; speed is measured in experiments/). A level already set in
# XLA_FLAGS wins; subprocesses inherit the flag.
if '--xla_backend_optimization_level' not in os.environ.get('XLA_FLAGS', ''):
  os.environ['XLA_FLAGS'] = f'{os.environ.get("XLA_FLAGS", "")} --xla_backend_optimization_level=0'.strip()


def _xla_knows(flag: str) -> bool:
  """Whether the installed jaxlib has the XLA flag `flag` (XLA ends the process on a flag it does not
  know, so a flag is only passed where its name is in jaxlib's libraries)."""
  import glob
  import importlib.util
  import mmap

  spec = importlib.util.find_spec('jaxlib')
  if spec is None or spec.origin is None:
    return False
  for path in glob.glob(os.path.join(os.path.dirname(spec.origin), '**', '*.so'), recursive=True):
    with open(path, 'rb') as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as contents:
      if contents.find(flag.encode()) >= 0:
        return True
  return False


# The same for XLA's CPU fusion emitters: its older elemental emitters compile the suite's programs
# faster (docs/notes.md, "The test suite"), and the tests check values, which pass either way. A
# choice already in XLA_FLAGS wins.
_EMITTERS = 'xla_cpu_use_fusion_emitters'
if _EMITTERS not in os.environ.get('XLA_FLAGS', '') and _xla_knows(_EMITTERS):
  os.environ['XLA_FLAGS'] = f'{os.environ["XLA_FLAGS"]} --{_EMITTERS}=false'

import jax  # noqa: E402

jax.config.update('jax_enable_x64', True)

from jaxcfr import backend  # noqa: E402

if 'JAXCFR_TEST_PROGRAMS' in os.environ:  # never the user's own cache directory
  backend.enable_compilation_cache(os.environ['JAXCFR_TEST_PROGRAMS'])

import jax.numpy as jnp  # noqa: E402
import pytest  # noqa: E402

import jaxcfr  # noqa: E402
from jaxcfr import algorithms  # noqa: E402

# name -> factory of every full-width algorithm (the factories take traced hyper-parameters too).
FULL_WIDTH = {name: algorithms.REGISTRY[name].function() for name in algorithms.names(algorithms.FULL_WIDTH)}


def host_devices_env(count: int, **extra: str) -> dict[str, str]:
  """The environment of a subprocess on `count` forced CPU host devices: this one's, with the device
  count added to XLA_FLAGS (keeping the suite's flags), and `extra`."""
  flags = f'{os.environ.get("XLA_FLAGS", "")} --xla_force_host_platform_device_count={count}'.strip()
  return {**os.environ, 'XLA_FLAGS': flags, 'JAX_PLATFORMS': 'cpu', **extra}


@functools.cache
def compiled(spec: str, dtype: str = 'float64') -> jaxcfr.CompiledGame:
  """Compiles each (spec, dtype) once per test session."""
  return jaxcfr.compile_game(spec, dtype=jnp.dtype(dtype))


@pytest.fixture
def kuhn64():
  return compiled('kuhn')


@pytest.fixture
def leduc64():
  return compiled('leduc')


@functools.cache
def jitted_run(solver: jaxcfr.Solver):
  return jax.jit(lambda state, game, n: jaxcfr.run(solver, state, game, n))


def solve(solver: jaxcfr.Solver, game: jaxcfr.CompiledGame, iterations: int) -> jaxcfr.CFRState:
  return jitted_run(solver)(solver.init(game), game, iterations)


def pytest_collection_modifyitems(items):
  """Op-by-op (`without_jit`) chex variants check what their compiled twins check, at many times the
  cost: they run with -m slow."""
  for item in items:
    if item.name.endswith('__without_jit'):
      item.add_marker(pytest.mark.slow)
