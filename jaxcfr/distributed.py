"""Several processes, one mesh: `jax.distributed` for jaxcfr's long runs.

One process per host (or several on one host, each with its own devices), the same
program in each. `initialize` starts JAX's distributed runtime before anything touches a
device; after it, `jax.devices()` lists every process's devices, and the meshes that
`--devices N` builds span them (N is the total device count). Every process reads the same
inputs and holds the same host copies (the compiled game, the seed); only the main process
(`is_main`: process 0) prints progress and writes outputs.

The layout comes from arguments (the CLI's `--coordinator HOST:PORT --num-processes N
--process-id I`), else from the environment:

    JAX_COORDINATOR_ADDRESS   HOST:PORT of process 0's coordinator (JAX's own variable)
    JAXCFR_NUM_PROCESSES      the number of processes
    JAXCFR_PROCESS_ID         this process's index, 0 to N - 1

A run is distributed when any of the three is given; what is missing,
`jax.distributed.initialize` detects on a cluster it knows (Slurm, Open MPI, Kubernetes).
A process count of 1 is an ordinary run.

On CPUs the collectives between processes run over gloo (TCP). Waits are bounded: the
processes must all connect within `timeout` seconds, and a process that stops answering (it
died, or its host did) is noticed within `heartbeat_timeout` seconds; the others then stop
with one message rather than hang (`DistributedError` where JAX raises one; where the
runtime itself aborts the process, its log says why).

Host arrays become global `jax.Array`s with `replicate` (every process passes the same
copy: `jax.make_array_from_process_local_data`) and `place` (each process places its
shards of the copy: `jax.make_array_from_callback`); typed PRNG keys go through their key
data.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Mapping
from typing import Any, NamedTuple, NoReturn

import jax
import numpy as np

COORDINATOR_ENV = 'JAX_COORDINATOR_ADDRESS'
NUM_PROCESSES_ENV = 'JAXCFR_NUM_PROCESSES'
PROCESS_ID_ENV = 'JAXCFR_PROCESS_ID'
TIMEOUT_ENV = 'JAXCFR_DISTRIBUTED_TIMEOUT'
TIMEOUT = 120  # seconds for every process to connect (default; TIMEOUT_ENV sets another)
HEARTBEAT_TIMEOUT = 30  # seconds of silence after which a process counts as dead


class DistributedError(RuntimeError):
  """The processes could not start or went on without one of them: one message that says why."""


class Layout(NamedTuple):
  """A process layout; None where JAX should detect it (a cluster's environment)."""

  coordinator: str | None  # HOST:PORT of process 0's coordinator
  num_processes: int | None
  process_id: int | None


def layout(
  coordinator: str | None = None,
  num_processes: int | None = None,
  process_id: int | None = None,
  environ: Mapping[str, str] | None = None,
) -> Layout | None:
  """The layout the arguments, else the environment, give; None for a one-process run."""
  environ = os.environ if environ is None else environ
  coordinator = coordinator or environ.get(COORDINATOR_ENV) or None
  if num_processes is None:
    num_processes = _whole(environ.get(NUM_PROCESSES_ENV), NUM_PROCESSES_ENV, 1)
  if process_id is None:
    process_id = _whole(environ.get(PROCESS_ID_ENV), PROCESS_ID_ENV, 0)
  if num_processes == 1 or (coordinator, num_processes, process_id) == (None, None, None):
    return None
  if num_processes is not None and process_id is not None and process_id >= num_processes:
    raise DistributedError(f'process id {process_id} is not below the process count {num_processes}')
  return Layout(coordinator, num_processes, process_id)


def initialize(
  coordinator: str | None = None,
  num_processes: int | None = None,
  process_id: int | None = None,
  *,
  timeout: int | None = None,
  heartbeat_timeout: int = HEARTBEAT_TIMEOUT,
) -> Layout | None:
  """Starts JAX's distributed runtime for the `layout` of the arguments and the environment
  (nothing for a one-process run), gloo collectives on CPUs; returns the layout. Call it
  before anything touches a device (compiling a game, `jax.devices()`). `timeout`: seconds for every
  process to connect (default `JAXCFR_DISTRIBUTED_TIMEOUT`, else 120)."""
  found = layout(coordinator, num_processes, process_id)
  if found is None or jax.distributed.is_initialized():
    return found
  if timeout is None:
    timeout = _whole(os.environ.get(TIMEOUT_ENV), TIMEOUT_ENV, 1) or TIMEOUT
  jax.config.update('jax_cpu_collectives_implementation', 'gloo')
  # JAX's runtime aborts the process (a long log) when its own deadline passes: ours comes first.
  who = (
    f'process {found.process_id} of {found.num_processes}' if found.process_id is not None else 'this process'
  )
  late = DistributedError(
    f'{who} waited {timeout} s for the others at the coordinator {found.coordinator or "(detected)"}; '
    'is every process started, with the same --coordinator and --num-processes?'
  )
  watchdog = threading.Timer(timeout, stop, (late,))
  watchdog.daemon = True
  watchdog.start()
  try:
    jax.distributed.initialize(
      found.coordinator,
      found.num_processes,
      found.process_id,
      initialization_timeout=int(timeout) + 10,
      heartbeat_timeout_seconds=int(heartbeat_timeout),
    )
  except ValueError as error:  # a part of the layout neither given nor detected
    raise DistributedError(
      f'{error} Give --coordinator HOST:PORT --num-processes N --process-id I (or {COORDINATOR_ENV}, '
      f'{NUM_PROCESSES_ENV}, {PROCESS_ID_ENV}), or run under a cluster manager JAX detects (Slurm)'
    ) from None
  except Exception as error:  # the runtime's own errors (a deadline passed, a refused connection)
    raise DistributedError(
      f'process {found.process_id} of {found.num_processes} could not join the coordinator at '
      f'{found.coordinator or "(detected)"} within {timeout} s: {first_line(error)}'
    ) from None
  finally:
    watchdog.cancel()
  # What JAX detected, from its runtime's state: jax.process_count() would start the backend.
  from jax._src import distributed as runtime  # noqa: PLC0415

  state = runtime.global_state
  return Layout(state.coordinator_address, state.num_processes, state.process_id)


def running() -> bool:
  """Whether this process is one of several (the distributed runtime started)."""
  return jax.distributed.is_initialized()


def stop(error: BaseException, code: int = 1) -> NoReturn:
  """Ends this process of a distributed run that cannot go on, with one line on stderr that says why
  (`error`'s own, or, for a runtime error, that the run stopped: a lost process).

  At once (`os._exit`): JAX's own shutdown waits at a barrier for every process, so a lost one would
  hold it until the heartbeat timeout and then abort it with a long log. Outputs are written
  atomically and checkpoints renamed into place when complete, so nothing is left half-written."""
  if not isinstance(error, runtime_errors()):
    message = str(error)
  else:
    message = (
      f'the run over {jax.process_count()} processes stopped (process {jax.process_index()}): another '
      f'process died or a collective between them failed: {first_line(error)}'
    )
  for stream in (sys.stdout, sys.stderr):
    try:
      stream.flush()
    except (OSError, ValueError):
      pass
  sys.stderr.write(f'jaxcfr: error: {message}\n')
  sys.stderr.flush()
  os._exit(code)


def is_main() -> bool:
  """Whether this is the process that prints and writes (process 0; any one-process run)."""
  return jax.process_index() == 0


def multi_process() -> bool:
  return jax.process_count() > 1


def runtime_errors() -> tuple[type[BaseException], ...]:
  """The errors a run over several processes stops with when one of them is lost (JAX's runtime errors)."""
  return (jax.errors.JaxRuntimeError,) if running() else ()


def mesh_devices(count: int) -> list[jax.Device]:
  """`count` devices for a 1-D mesh: the first `count` of `jax.devices()` on one process; over several,
  the first `count / processes` of each process, in process order (every process takes part)."""
  devices = jax.devices()
  processes = jax.process_count()
  if processes == 1 or count == 1:
    return devices[:count]
  if count % processes:
    raise ValueError(f'{count} devices cannot be split evenly over {processes} processes')
  per_process = count // processes
  chosen = []
  for process in range(processes):
    own = [device for device in devices if device.process_index == process]
    if len(own) < per_process:
      raise ValueError(
        f'process {process} has {len(own)} devices; {count} over {processes} processes needs {per_process}'
      )
    chosen.extend(own[:per_process])
  return chosen


def replicate(tree: Any, mesh: jax.sharding.Mesh) -> Any:
  """`tree`'s arrays as global arrays replicated over `mesh`; every process passes the same values.
  On one process, or traced, a `jax.device_put`."""
  sharding = jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec())
  if not multi_process() or any(isinstance(leaf, jax.core.Tracer) for leaf in jax.tree.leaves(tree)):
    return jax.device_put(tree, sharding)  # traced (`jax.eval_shape` of an init): only an annotation
  return jax.tree.map(lambda leaf: place(leaf, sharding), tree)


def place(leaf: Any, sharding: jax.sharding.Sharding) -> jax.Array:
  """The host array `leaf` (the same on every process) as a global array laid out by `sharding`:
  each process places its own shards. Typed PRNG keys travel as their key data."""
  if _is_key(leaf):
    return jax.random.wrap_key_data(
      place(jax.random.key_data(leaf), sharding), impl=jax.random.key_impl(leaf)
    )
  if isinstance(leaf, jax.Array) and leaf.sharding == sharding:
    return leaf
  host = to_host(leaf)
  if sharding.is_fully_replicated:
    return jax.make_array_from_process_local_data(sharding, host)
  return jax.make_array_from_callback(host.shape, sharding, lambda index: host[index])


def to_host(leaf: Any) -> np.ndarray:
  """A NumPy copy of `leaf` on every process: a fully replicated or local array as it is, a sharded
  global array gathered from every process (a collective: every process must call it)."""
  if isinstance(leaf, jax.Array) and not leaf.is_fully_addressable and not leaf.is_fully_replicated:
    from jax.experimental import multihost_utils  # noqa: PLC0415

    return np.asarray(multihost_utils.process_allgather(leaf, tiled=True))
  return np.asarray(leaf)


def _is_key(leaf) -> bool:
  return hasattr(leaf, 'dtype') and jax.dtypes.issubdtype(leaf.dtype, jax.dtypes.prng_key)


def _whole(text: str | None, name: str, low: int) -> int | None:
  if text is None or text.strip() == '':
    return None
  try:
    value = int(text)
  except ValueError:
    raise DistributedError(f'{name}={text!r} is not a whole number') from None
  if value < low:
    raise DistributedError(f'{name} must be at least {low}, got {text}')
  return value


def first_line(error: BaseException) -> str:
  """The gist of a runtime error (XLA's run to many lines)."""
  text = str(error).strip().split('\n')[0]
  return text[:300] + ('...' if len(text) > 300 else '')
