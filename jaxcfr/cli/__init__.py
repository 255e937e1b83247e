"""The `jaxcfr` command line (contract in the README): the parser of every command and the dispatch.

    jaxcfr games [--json PATH|-]
    jaxcfr solve GAME [--algorithm A] [--iterations N] [--seconds S] [hyper-parameter flags] ...
    jaxcfr evaluate GAME --policy PATH [--dtype D] [--json PATH|-]
    jaxcfr subgame --board B --pot P --stack S --oop-range R --ip-range R [...]  (one hold'em spot)
    jaxcfr subgame show STRATEGY.npz --plot PNG [--node PATH] | --html FILE.html  (a saved strategy)
    jaxcfr report --flops all|N|FILE --pot P --stack S --oop-range R --ip-range R --out DIR  (many flops)
    jaxcfr abstract [--profile default|small] --out DIR  (see abstractions/)
    jaxcfr blueprint train --abstraction DIR [--bets small|default] --seconds S --out PATH  (hold'em)
    jaxcfr blueprint evaluate BLUEPRINT --lbr --hands N [--seed S] [--batch B] [--json PATH|-]
    jaxcfr match A B --hands N [--seed S] [--no-duplicate] [--batch B] [--json PATH|-]
    jaxcfr play --blueprint FILE | --bot NAME [--seed S] [--hands N] [--search]  (hold'em in the terminal)
    jaxcfr acpc HOST PORT --bot SPEC [--game FILE] [--log FILE.jsonl]  (a bot at an ACPC dealer's table)
    jaxcfr chipzen run --bot SPEC [--bot-id ID | --url URL] [--token T]  (a bot at Chipzen's tables)
    jaxcfr bot export BLUEPRINT --out DIR [--tier free|pro|elite]  (a bot directory for Chipzen's upload)
    jaxcfr pushfold --stack BB [--ante A] [--json PATH|-]  (heads-up push-or-fold, solved exactly)

One module per command family (`solve`: games, solve and evaluate; `subgame`, `abstract`,
`blueprint`, `match`, `lbr`, `play`), and `common` for what they share: argument types, the output
options and tail, the search options and policy specs. The work is library code, which each command
imports when it runs, so that building the parser stays light. Bad input ends in one message on
stderr and exit status 2; outputs are checked before any work and written atomically, and nothing
that jaxcfr did not write is replaced.
"""

from __future__ import annotations

import argparse
import os
import sys
import textwrap

from jaxcfr import outputs
from jaxcfr.cli import acpc, blueprint, chipzen, common, match, play, pushfold, report, solve, subgame
from jaxcfr.cli.common import UsageError
from jaxcfr.version import __version__

__all__ = ['UsageError', 'build_parser', 'main']


class _Formatter(argparse.HelpFormatter):
  def _split_lines(self, text, width):  # keep names such as os-mccfr whole
    return textwrap.wrap(text, width, break_on_hyphens=False)


class _Parser(argparse.ArgumentParser):
  """Prints one error line and where help is, not the whole usage block."""

  def __init__(self, *args, **kwargs):
    super().__init__(*args, formatter_class=_Formatter, **kwargs)

  def error(self, message):
    self.exit(2, f"{self.prog}: error: {message}\nsee '{self.prog} --help'\n")


def _abstract():
  """`jaxcfr.cli.abstract`, or None: the hold'em abstraction tools ship beside jaxcfr, which never
  needs them."""
  try:
    from jaxcfr.cli import abstract  # noqa: PLC0415
  except ImportError:
    return None
  return abstract


def build_parser() -> argparse.ArgumentParser:
  parser = _Parser(prog='jaxcfr', description='Solve imperfect-information games with CFR.')
  parser.add_argument('--version', action='version', version=f'jaxcfr {__version__}')
  commands = parser.add_subparsers(dest='command', required=True)
  solve.add_parsers(commands)
  for family in (subgame, report, blueprint, match, play, pushfold, acpc, chipzen, _abstract()):
    if family is not None:
      family.add_parser(commands)
  return parser


def _commands() -> dict:
  """Each command's `run(args) -> exit status`."""
  abstract = _abstract()
  runs = {'games': solve.games, 'solve': solve.solve, 'evaluate': solve.evaluate, 'subgame': subgame.run}
  runs['report'] = report.run
  runs.update(blueprint=blueprint.run, match=match.run, play=play.run, acpc=acpc.run, chipzen=chipzen.run)
  runs.update(bot=chipzen.export, pushfold=pushfold.run)
  return {**runs, 'abstract': abstract.command} if abstract is not None else runs


def main(argv: list[str] | None = None) -> int:
  argv = sys.argv[1:] if argv is None else list(argv)
  if argv[:2] == ['subgame', 'show']:  # a saved strategy's grid: no spot flags, no JAX
    try:
      return subgame.show(argv[2:], _Parser)
    except (UsageError, outputs.OutputError) as error:
      return common.fail(error)
  args = build_parser().parse_args(argv)
  try:
    if args.command not in ('games', 'abstract', 'pushfold'):  # pushfold: NumPy and SciPy only
      _start_jax(args)
    return _commands()[args.command](args)
  except (UsageError, outputs.OutputError) as error:
    if _distributed() is not None and _distributed().running():  # the others stop when this one has gone
      _distributed().stop(error, 2)
    return common.fail(error)
  except _distributed_errors() as error:  # a process that did not join, or one lost on the way
    _distributed().stop(error)  # one message, then out at once: JAX's shutdown would wait for the lost one
  except KeyboardInterrupt:
    print('jaxcfr: interrupted', file=sys.stderr)
    return 130
  except BrokenPipeError:  # the reader of stdout went (`| head`): stop quietly, as other tools do
    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no second error at exit
    return 141


def _start_jax(args) -> None:
  """The distributed runtime (several processes), host devices, float64, the persistent compilation
  cache and quiet logs, before JAX starts; on a process other than the first, no outputs."""
  processes = _start_processes(args)
  flags = os.environ.get('XLA_FLAGS', '')
  devices = getattr(args, 'devices', 1)
  if processes > 1 and devices % processes:
    raise UsageError(f'--devices {devices} must be a multiple of the process count {processes}')
  local = devices // processes  # each process's share of --devices
  if args.command in ('subgame', 'report') and not _backend_started():
    # Their turn and flop solves split their river cards over host devices, one core each: XLA's own
    # threads on top of them only contend.
    from jaxcfr import backend  # noqa: PLC0415

    local = args.threads or backend.cores()
    if 'xla_cpu_multi_thread_eigen' not in flags:
      flags = f'{flags} --xla_cpu_multi_thread_eigen=false'.strip()
      os.environ['XLA_FLAGS'] = flags
  if local > 1 and 'xla_force_host_platform_device_count' not in flags:
    # On a CPU, N host devices run N traversal shards on N threads (cores); other backends ignore
    # this. It takes effect if no JAX backend has started yet (importing jax starts none).
    os.environ['XLA_FLAGS'] = f'{flags} --xla_force_host_platform_device_count={local}'.strip()
  import jax  # noqa: PLC0415

  from jaxcfr import backend, checkpoints  # noqa: PLC0415

  checkpoints.set_verbose(args.verbose)
  if getattr(args, 'dtype', None) == 'float64':  # evaluate's default dtype is decided when the policy is read
    jax.config.update('jax_enable_x64', True)
  if not args.no_cache and os.environ.get(backend.NO_CACHE_ENV, '') in ('', '0'):
    backend.enable_compilation_cache()


def _backend_started() -> bool:
  """Whether JAX's backend has started in this process (a caller's, as in the tests): XLA_FLAGS set
  now would not take effect, and would reach the subprocesses it starts."""
  bridge = sys.modules.get('jax._src.xla_bridge')
  return bool(bridge and getattr(bridge, 'backends_are_initialized', lambda: False)())


def _start_processes(args) -> int:
  """Joins the other processes of a distributed run (`jaxcfr.distributed`: flags, else the environment);
  returns the process count. A process other than the first then writes nothing: no progress, and
  no --json, --policy-out, --plot (the first writes them; all take part in --checkpoint saves)."""
  if not hasattr(args, 'coordinator'):
    return 1
  from jaxcfr import distributed  # noqa: PLC0415

  layout = distributed.initialize(args.coordinator, args.num_processes, args.process_id)
  if layout is None:
    return 1
  if layout.process_id != 0:
    args.quiet = True
    for name in ('json', 'policy_out', 'plot', 'out'):
      if getattr(args, name, None) is not None:
        setattr(args, name, None)
    sys.stdout = open(os.devnull, 'w')  # noqa: SIM115 (for the rest of the process)
  return layout.num_processes


def _distributed():
  """`jaxcfr.distributed` if this run imported it (else None: no JAX started)."""
  return sys.modules.get('jaxcfr.distributed')


def _distributed_errors() -> tuple[type[BaseException], ...]:
  """`DistributedError`, and the runtime's errors once the processes run (a lost peer)."""
  distributed = _distributed()
  return () if distributed is None else (distributed.DistributedError, *distributed.runtime_errors())


if __name__ == '__main__':
  sys.exit(main())
