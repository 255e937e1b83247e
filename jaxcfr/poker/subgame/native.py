"""The showdown sweep as a native XLA:CPU kernel, built from `showdown_sweep.cc` on first use.

XLA:CPU runs the array form of the sweep (`showdown.prefix_difference`: prefix sums over the hands by
strength and over each card's hands, then row gathers) as dozens of small operations per river board.
The kernel walks the hands once in order of strength with running sums per card, the way postflop
solvers do (the file says how), from the same `ShowdownTables`, and takes the trees' layout (a row
per showdown) as it is. River and turn iterations run faster with it than with the array form, with
the same values up to rounding (the tests hold both to a brute-force loop).

It is an XLA FFI handler (`jax.ffi`), compiled with the system's C++ compiler (`$CXX`, else `c++`)
against jaxlib's FFI headers, once per machine, source, jaxlib and compiler, into
`$JAXCFR_NATIVE_DIR` (default `$XDG_CACHE_HOME/jaxcfr/native`, else `~/.cache/jaxcfr/native`), and
loaded with ctypes. The build takes a few seconds; the library is written atomically and reused, and
processes that need it at once build it once (the others wait on a lock of its folder).
Without a compiler, with `JAXCFR_NO_NATIVE` set, off a CPU, or when the build fails (with one
warning), the showdowns take the array form: slower, not different.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import hashlib
import os
import platform
import shutil
import subprocess
import tempfile
import threading
import warnings

import jax
import jax.numpy as jnp
import numpy as np

TARGET = 'jaxcfr_showdown_difference'
SYMBOL = 'JaxcfrShowdownDifference'
SOURCE = os.path.join(os.path.dirname(__file__), 'showdown_sweep.cc')
DIRECTORY_ENV, OFF_ENV = 'JAXCFR_NATIVE_DIR', 'JAXCFR_NO_NATIVE'
FLAGS = ('-O3', '-std=c++17', '-shared', '-fPIC', '-pthread', '-w')
TUNED = ('-march=native',)  # tried first; dropped where the compiler refuses it
DTYPES = (jnp.float32, jnp.float64)


def directory() -> str:
  """Where the built library is kept: `$JAXCFR_NATIVE_DIR`, else `$XDG_CACHE_HOME/jaxcfr/native`,
  else `~/.cache/jaxcfr/native`."""
  base = os.environ.get('XDG_CACHE_HOME') or os.path.join(os.path.expanduser('~'), '.cache')
  return os.environ.get(DIRECTORY_ENV) or os.path.join(base, 'jaxcfr', 'native')


def available(dtype=jnp.float32) -> bool:
  """Whether showdowns of `dtype` take the native kernel: on a CPU backend, unless `JAXCFR_NO_NATIVE`
  is set, once the library is built and registered (the first call builds it)."""
  if os.environ.get(OFF_ENV) or jax.default_backend() != 'cpu':
    return False
  return jnp.dtype(dtype) in DTYPES and _registered()


def board_difference(order, weaker, not_stronger, card_order, card_weaker, reach: jax.Array) -> jax.Array:
  """`showdown.board_difference` by the kernel, the showdowns leading (the trees' layout): the tables'
  per-board arrays (`order`, `weaker`, `not_stronger` [..., H], `card_order` [..., 52 K], `card_weaker`
  [..., 2 H]) and the opponent's weights `reach` [..., M, H], float32 or float64 -> [..., M, H];
  leading axes are river boards (vmap adds them). The kernel turns a board's rows to hands leading
  itself (faster than XLA's transposes here)."""
  if not _registered():
    raise RuntimeError('the native showdown kernel could not be built here (see `native.available`)')
  del weaker  # the kernel finds each group's start as it walks
  per_card = card_order.shape[-1] // 52 + 1  # card_weaker holds card * (K + 1) + a count
  call = jax.ffi.ffi_call(TARGET, jax.ShapeDtypeStruct(reach.shape, reach.dtype), vmap_method='broadcast_all')
  return call(order, not_stronger, card_weaker, reach, per_card=np.int64(per_card))


_LOCK = threading.Lock()  # one build and one registration, whichever thread traces first


@functools.cache
def _registered() -> bool:
  if not hasattr(jax, 'ffi'):  # jax before 0.4.31
    return False
  with _LOCK:
    path = _library()
    if path is None:
      return False
    try:
      library = ctypes.cdll.LoadLibrary(path)
    except OSError as error:  # a library that is there but will not load (damaged, another system's)
      fall_back(f'the native showdown kernel {path} did not load ({error})')
      return False
    jax.ffi.register_ffi_target(TARGET, jax.ffi.pycapsule(getattr(library, SYMBOL)), platform='cpu')
  return True


def _library() -> str | None:
  """The built showdown kernel's path (built now if it is not there), or None where it cannot be built."""
  return library_path(SOURCE, 'the native showdown kernel', jax.ffi.include_dir())


def library_path(source_path: str, what: str, include: str | None = None) -> str | None:
  """The library built from `source_path` (against jaxlib's FFI headers in `include`, if given):
  its path, built now into `directory()` if not there yet, or None where it cannot be built (with
  one warning naming `what`)."""
  compiler = shutil.which(os.environ.get('CXX') or 'c++')
  if compiler is None:
    return None
  with open(source_path, 'rb') as source:
    code = source.read()
  identity = hashlib.sha256()
  for part in (
    code,
    (include or '').encode(),
    jax.__version__.encode(),
    compiler.encode(),
    _compiler_version(compiler),
  ):
    identity.update(part + b'\0')
  identity.update(_machine().encode())
  folder = directory()
  stem = os.path.splitext(os.path.basename(source_path))[0]
  path = os.path.join(folder, f'{stem}-{identity.hexdigest()[:20]}.so')
  if os.path.exists(path):
    return path
  try:
    os.makedirs(folder, exist_ok=True)
  except OSError as error:
    fall_back(f'cannot build {what} in {folder} ({error})')
    return None
  with _locked(folder):  # another process building into the folder: wait for it, then use its build
    if os.path.exists(path):
      return path
    return _build(compiler, source_path, include, folder, stem, path, what)


@contextlib.contextmanager
def _locked(folder: str):
  """Holds an exclusive lock on `folder` itself (no lock file is left behind); where the system has
  no such locks, goes on without one (two processes then both build, each writing atomically)."""
  try:
    import fcntl  # noqa: PLC0415 (not on Windows)

    handle = os.open(folder, os.O_RDONLY)
  except (ImportError, OSError):
    yield
    return
  try:
    with contextlib.suppress(OSError):
      fcntl.flock(handle, fcntl.LOCK_EX)
    yield
  finally:
    os.close(handle)  # releases the lock


def _build(compiler, source_path, include, folder, stem, path, what) -> str | None:
  """Compiles `source_path` into `path` (through a temporary file in `folder`): `path`, or None."""
  try:
    handle, scratch = tempfile.mkstemp(prefix=f'.{stem}-', suffix='.so', dir=folder)
    os.close(handle)
  except OSError as error:
    fall_back(f'cannot build {what} in {folder} ({error})')
    return None
  try:
    reason = ''
    headers = ['-I', include] if include else []
    for tuned in (TUNED, ()):
      command = [compiler, *FLAGS, *tuned, *headers, source_path, '-o', scratch]
      built = subprocess.run(command, capture_output=True, text=True, timeout=300, check=False)
      if built.returncode == 0:
        os.replace(scratch, path)  # atomic: a reader sees no library or the whole of it
        return path
      reason = (built.stderr.strip().splitlines() or [f'exit status {built.returncode}'])[-1]
    fall_back(f'{what} did not build ({reason})')
    return None
  except (OSError, subprocess.SubprocessError) as error:
    fall_back(f'{what} did not build ({error})')
    return None
  finally:
    if os.path.exists(scratch):
      os.remove(scratch)  # ours: the temporary file of a build that did not finish


def fall_back(reason: str) -> None:
  """The one warning of a native library that cannot serve: why, and that the array form takes over."""
  warnings.warn(f'jaxcfr: {reason}; the slower array form takes over', stacklevel=4)


def _compiler_version(compiler: str) -> bytes:
  try:
    return subprocess.run([compiler, '--version'], capture_output=True, timeout=30, check=False).stdout
  except (OSError, subprocess.SubprocessError):
    return b''


def _machine() -> str:
  """What `-march=native` depends on: the machine and, on Linux, the CPU's feature flags."""
  flags = ''
  try:
    with open('/proc/cpuinfo') as info:
      flags = next((line for line in info if line.startswith(('flags', 'Features'))), '')
  except OSError:
    pass
  return f'{platform.machine()} {flags.strip()}'
