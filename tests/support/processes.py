"""Runs one `jaxcfr` command as several real processes on localhost (`jaxcfr.distributed`), bounded in
time and cleaned up whatever happens.

    from processes import run_processes          # tests/support is on sys.path (conftest.py)
    runs = run_processes(['solve', 'kuhn', '--algorithm', 'es-mccfr', '--devices', '2'], count=2)
    runs[0].code, runs[0].out, runs[0].err

Each process gets `--coordinator 127.0.0.1:PORT --num-processes N --process-id I` (a port free when the
run starts), one CPU device, and its own stdout and stderr files.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from typing import NamedTuple


class Finished(NamedTuple):
  code: int | None  # None: still running when the time ran out (then killed)
  out: str
  err: str
  seconds: float  # from the start of the run to this process's exit


def free_port() -> int:
  with socket.socket() as probe:
    probe.bind(('127.0.0.1', 0))
    return probe.getsockname()[1]


def run_processes(
  args: Sequence[str],
  count: int = 2,
  *,
  timeout: float = 120,
  env: dict[str, str] | None = None,
  per_process: Callable[[int], Sequence[str]] | None = None,
  cwd: str | None = None,
  after_start: Callable[[list[subprocess.Popen], list[str]], None] | None = None,
) -> list[Finished]:
  """`python -m jaxcfr.cli ARGS --coordinator ... --process-id I` for I in 0..count-1, with
  `per_process(I)`'s arguments appended; each process is killed if it runs past `timeout` seconds.
  `after_start(processes, stdout_paths)` runs once all have started (a test that kills one)."""
  port = free_port()
  environment = {**(env if env is not None else os.environ), 'JAX_PLATFORMS': 'cpu'}
  flags = ' '.join(f for f in environment.get('XLA_FLAGS', '').split() if 'force_host_platform' not in f)
  environment['XLA_FLAGS'] = flags
  with tempfile.TemporaryDirectory(prefix='jaxcfr-processes-') as logs:
    processes, files, ended = [], [], [None] * count
    try:
      for i in range(count):
        command = [sys.executable, '-m', 'jaxcfr.cli', *args]
        command += [
          '--coordinator',
          f'127.0.0.1:{port}',
          '--num-processes',
          str(count),
          '--process-id',
          str(i),
        ]
        command += list(per_process(i)) if per_process else []
        out = open(os.path.join(logs, f'{i}.out'), 'w+')  # noqa: SIM115
        err = open(os.path.join(logs, f'{i}.err'), 'w+')  # noqa: SIM115
        files.append((out, err))
        processes.append(
          subprocess.Popen(
            command, stdout=out, stderr=err, stdin=subprocess.DEVNULL, env=environment, cwd=cwd,
            start_new_session=True,
          )
        )  # fmt: skip
      start = time.monotonic()
      if after_start is not None:
        after_start(processes, [out.name for out, _ in files])
      while any(e is None for e in ended) and time.monotonic() - start < timeout:
        for i, process in enumerate(processes):
          if ended[i] is None and process.poll() is not None:
            ended[i] = time.monotonic() - start
        time.sleep(0.05)
    finally:
      for process in processes:
        _kill(process)
    results = []
    for i, (out, err) in enumerate(files):
      out.seek(0)
      err.seek(0)
      code = processes[i].returncode if ended[i] is not None else None
      results.append(Finished(code, out.read(), err.read(), ended[i] if ended[i] is not None else timeout))
      out.close()
      err.close()
    return results


def _kill(process: subprocess.Popen) -> None:
  """Ends `process` and its group (JAX catches SIGTERM, so SIGKILL)."""
  if process.poll() is None:
    try:
      os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
      pass
  process.wait()
