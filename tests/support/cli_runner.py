"""Runs `jaxcfr ARGS` as a fresh process per call without paying Python's and JAX's start each time.

Starting `python -m jaxcfr.cli` (importing JAX) costs more than most of the CLI tests' own work
(bad input fails before any). One server process per test process imports the CLI once, starts no
JAX backend, and forks a child for every call: the child has a fresh process of its own (its own
JAX backend, configuration and files, its exit status, and its stdout and stderr captured at the
file-descriptor level), as `python -m jaxcfr.cli ARGS` would, run from the caller's working
directory. `JAXCFR_TEST_CLI_SUBPROCESS=1` runs every call as a plain subprocess instead.

    from cli_runner import run_cli               # tests/support is on sys.path (conftest.py)
    code, out, err = run_cli('solve', 'kuhn', '--iterations', '10', '--json', '-')
"""

from __future__ import annotations

import atexit
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading

# The server: reads one JSON request per line ({"args", "cwd", "env", "out", "err"}), forks, and
# answers one JSON line {"code"} once the child has exited. The child runs the CLI the way `python -m
# jaxcfr.cli` does: `sys.exit(main())`, an uncaught exception printed with its traceback (status 1),
# atexit handlers run.
_SERVER = r"""
import atexit, json, os, sys, traceback
import jaxcfr.cli
import abstractions, jaxcfr.cli.abstract  # what jaxcfr.cli imports only when it builds its parser

def child(request):
  os.chdir(request['cwd'])
  os.environ.clear()
  os.environ.update(request['env'])
  for fd, path in ((1, request['out']), (2, request['err'])):
    target = os.open(path, os.O_WRONLY | os.O_TRUNC)
    os.dup2(target, fd)
    os.close(target)
  nothing = os.open(os.devnull, os.O_RDONLY)
  os.dup2(nothing, 0)
  os.close(nothing)
  sys.stdin = open(0, closefd=False)
  sys.argv = [jaxcfr.cli.__file__, *request['args']]
  try:
    code = jaxcfr.cli.main(request['args'])
  except SystemExit as stop:
    code = stop.code
  except BaseException:
    traceback.print_exc()
    code = 1
  if code is not None and not isinstance(code, int):
    print(code, file=sys.stderr)
    code = 1
  try:
    atexit._run_exitfuncs()
    sys.stdout.flush()
    sys.stderr.flush()
  finally:
    os._exit(code or 0)

for line in sys.stdin:
  request = json.loads(line)
  pid = os.fork()
  if pid == 0:
    child(request)
  _, status = os.waitpid(pid, 0)
  code = os.waitstatus_to_exitcode(status)
  sys.stdout.write(json.dumps({'code': code}) + '\n')
  sys.stdout.flush()
"""

_lock = threading.Lock()
_server: subprocess.Popen | None = None
_server_env: dict[str, str] | None = None


def _start(env: dict[str, str]) -> subprocess.Popen:
  global _server, _server_env
  _server = subprocess.Popen(  # a process group of its own: a timeout kills it with the call's child
    [sys.executable, '-c', _SERVER],
    stdin=subprocess.PIPE,
    stdout=subprocess.PIPE,
    text=True,
    env=env,
    start_new_session=True,
  )
  _server_env = dict(env)
  atexit.register(_stop, _server)
  return _server


def _stop(server: subprocess.Popen) -> None:
  if server.poll() is None:
    server.stdin.close()
    try:
      server.wait(timeout=30)
    except subprocess.TimeoutExpired:
      _kill(server)


def run_cli(*args) -> tuple[int, str, str]:
  """(exit status, stdout, stderr) of `jaxcfr ARGS` in a fresh process on the CPU."""
  return run(list(args), {**os.environ, 'JAX_PLATFORMS': 'cpu'}, timeout=300)


def run(args: list[str], env: dict[str, str], timeout: float) -> tuple[int, str, str]:
  """(exit status, stdout, stderr) of `jaxcfr ARGS` in a fresh process with environment `env`."""
  if os.environ.get('JAXCFR_TEST_CLI_SUBPROCESS') == '1' or not hasattr(os, 'fork'):
    return _subprocess(args, env, timeout)
  with _lock:
    server = _server
    if server is None or server.poll() is not None or _settled(_server_env) != _settled(env):
      if server is not None:
        _stop(server)
      server = _start(env)
    with tempfile.TemporaryDirectory(prefix='jaxcfr-cli-') as directory:
      out, err = os.path.join(directory, 'out'), os.path.join(directory, 'err')
      for path in (out, err):
        open(path, 'w').close()
      request = {'args': [str(arg) for arg in args], 'cwd': os.getcwd(), 'env': env, 'out': out, 'err': err}
      server.stdin.write(json.dumps(request) + '\n')
      server.stdin.flush()
      answer = _read_answer(server, timeout)
      with open(out) as stdout, open(err) as stderr:
        return answer['code'], stdout.read(), stderr.read()


def _settled(env: dict[str, str] | None) -> dict[str, str] | None:
  """`env` without what pytest changes at every test (the child gets the caller's whole environment;
  another change starts a new server, since JAX reads some variables when it is imported)."""
  return env if env is None else {key: value for key, value in env.items() if key != 'PYTEST_CURRENT_TEST'}


def _read_answer(server: subprocess.Popen, timeout: float) -> dict:
  """The server's answer line, or the server and the call killed (and an error raised) after
  `timeout` seconds."""
  timer = threading.Timer(timeout, _kill, [server])
  timer.start()
  try:
    line = server.stdout.readline()
  finally:
    timer.cancel()
  if not line:
    raise RuntimeError(f'the CLI test server stopped (status {server.poll()}); a call ran over {timeout} s?')
  return json.loads(line)


def _kill(server: subprocess.Popen) -> None:
  try:
    os.killpg(server.pid, signal.SIGKILL)
  except ProcessLookupError:
    pass


def _subprocess(args: list[str], env: dict[str, str], timeout: float) -> tuple[int, str, str]:
  process = subprocess.run(
    [sys.executable, '-m', 'jaxcfr.cli', *map(str, args)],
    capture_output=True,
    text=True,
    timeout=timeout,
    env=env,
  )
  return process.returncode, process.stdout, process.stderr
