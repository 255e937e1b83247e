"""`jaxcfr blueprint train|evaluate`: train a heads-up no-limit hold'em blueprint on abstraction
tables, and measure it.

    jaxcfr abstract --profile small --out tables/
    jaxcfr blueprint train --abstraction tables/ --bets small --seconds 3600 \\
      --checkpoint run/ --out blueprint.npz [--devices N] [--resume]
    jaxcfr blueprint train --algorithm tabular --abstraction tables/ --seconds 3600 --out mccfr.npz
    jaxcfr blueprint train --algorithm deep-cfr|sd-cfr --seconds 3600 --checkpoint run/ --out deep.npz
    jaxcfr blueprint evaluate blueprint.npz --lbr --hands 20000 --json lbr.json

Public chance sampling in vector form over sampled boards (`jaxcfr.poker.blueprint.vector`; or
external-sampling MCCFR over sampled deals, `jaxcfr.poker.blueprint.mccfr`, on the same tables; or
Deep CFR / SD-CFR, `jaxcfr.poker.blueprint.deep`, networks on card and chip features instead of
tables) through the library training loop: progress (iterations, traversals/s or boards/s, memory),
checkpoints and exact resume. Bad input (missing or mismatched tables, a checkpoint of another run,
an unwritable --out) is one line and exit status 2, before any training. Imports nothing heavy until it runs.
"""

from __future__ import annotations

import argparse

from jaxcfr import algorithms, outputs
from jaxcfr.cli import common, lbr
from jaxcfr.poker import defaults

# jaxcfr.poker.blueprint's (not imported: it needs JAX): tree.PRESETS, training's ALGORITHMS,
# SNAPSHOTS and KEEP_CHECKPOINTS, and vector's RULES and DEFAULT_RULE.
_PRESETS = ('small', 'default', 'short')
_ALGORITHMS = ('tabular', 'pcs', 'deep-cfr', 'sd-cfr')
_RULES = ('cfr', 'cfr+', 'lcfr', 'dcfr')
_DEFAULT_RULE = 'dcfr'
_SNAPSHOTS = 64
_KEEP = 3


def add_parser(commands) -> None:
  """Adds `blueprint` (with its `train` and `evaluate` subcommands) to the `jaxcfr` parser's
  subcommands."""
  parser = commands.add_parser(
    'blueprint',
    help="train a heads-up no-limit hold'em blueprint (MCCFR on card and bet abstractions)",
    description="Heads-up no-limit hold'em blueprints: external-sampling MCCFR over sampled deals, with "
    'the buckets of `jaxcfr abstract` tables and a bet abstraction preset.',
  )
  actions = parser.add_subparsers(dest='blueprint_command', required=True)
  _add_train(actions)
  evaluate = actions.add_parser(
    'evaluate',
    help='measure a blueprint: local best response (mbb/hand with a 95%% CI)',
    description=lbr.DESCRIPTION.replace('%', '%%'),
  )
  evaluate.add_argument('policy', metavar='BLUEPRINT', help='a blueprint file (or a baseline name)')
  evaluate.add_argument(
    '--lbr', action='store_true', required=True, help="local best response, the paper's main setting"
  )
  lbr.add_arguments(evaluate, policy=False)
  common.add_output_options(evaluate.add_argument_group('outputs'))


def _add_train(actions) -> None:
  train = actions.add_parser(
    'train',
    help='train a blueprint and write it',
    description='Train a blueprint (ACPC rules by default: blinds 50/100, stacks 20,000; --blinds and '
    '--stack for others) and write it as a compact file that jaxcfr.poker.blueprint.load_policy reads.',
  )
  common.add_game_options(train)
  train.add_argument(
    '--algorithm',
    choices=_ALGORITHMS,
    default='pcs',
    help='pcs: public chance sampling in vector form on bucket tables (every hole pair at once on each '
    'sampled board; the least exploitable blueprints at every budget measured); tabular: external-sampling '
    'MCCFR on the same tables; deep-cfr: Deep CFR, advantage and strategy networks on card and chip '
    'features (no tables); sd-cfr: Single Deep CFR, advantage networks only, a reservoir of them as the '
    'average (default pcs)',
  )
  train.add_argument(
    '--abstraction',
    metavar='DIR',
    help='tables written by `jaxcfr abstract` (tabular and pcs; required there)',
  )
  train.add_argument(
    '--bets',
    choices=_PRESETS,
    default='small',
    help='bet abstraction preset: small (3,746 nodes, for a CPU: 2.5x opens, 3x re-raises, 75%% pot bets, '
    'pot raises, all-in; raise caps 3/2/2/2) or default (121,852 nodes: 33/75/150%% pot bets, 75/150%% '
    'raises; caps 4/3/3/3) or short (for tens of big blinds: 2x opens, 3x re-raises, 33%% pot bets, pot '
    'raises, all-in; caps 3/2/2/2) (default small)',
  )
  count, seconds = common.positive_count, common.positive_seconds
  budget = train.add_argument_group('budget')
  budget.add_argument('--seconds', type=seconds, help='solving seconds')
  budget.add_argument('--iterations', type=count, help='total iterations (each: a batch per player)')
  budget.add_argument('--seed', type=common.seed, default=0, help='PRNG seed (default 0)')
  budget.add_argument('--devices', type=count, default=1, help='devices to split each batch over (default 1)')
  budget.add_argument(
    '--max-memory', type=common.non_negative_number, metavar='GIB',
    help='tabular and pcs: refuse to run (exit 2) if an iteration would need more than GIB GiB '
    "(default: the device's memory, on a CPU the host's available memory; 0: no limit)",
  )  # fmt: skip
  budget.add_argument('--dtype', default='float32', choices=('float32', 'float64'), help='default float32')
  refinements = train.add_argument_group('MCCFR (as es-mccfr; Pluribus refinements)')
  for parameter in algorithms.REGISTRY['es-mccfr'].hyperparameters:
    refinements.add_argument(
      parameter.cli_flag, dest=parameter.name, type=algorithms.argument_type(parameter),
      default=argparse.SUPPRESS, metavar='N' if parameter.kind == 'int' else 'X',
      help=f'{parameter.help} [default {parameter.shown()}]',
    )  # fmt: skip
  pcs = train.add_argument_group('public chance sampling (--algorithm pcs)')
  pcs.add_argument(
    '--boards',
    type=int,
    metavar='N',
    help='boards sampled per player per iteration [default: one a device, --boards-at-once x --devices]',
  )
  pcs.add_argument(
    '--boards-at-once', type=int, metavar='K',
    help='boards walked at a time on each device (vmapped; memory grows with K) [default 1]',
  )  # fmt: skip
  pcs.add_argument(
    '--regret-rule', choices=_RULES, metavar='RULE',
    help=f'regret rule, one of {", ".join(_RULES)} (DCFR with alpha 1.5, beta 0, gamma 2) '
    f'[default {_DEFAULT_RULE}]',
  )  # fmt: skip
  _add_deep_flags(train)
  saves = train.add_argument_group('checkpoints')
  saves.add_argument('--checkpoint', metavar='DIR', help='save the state to DIR as it runs (orbax)')
  saves.add_argument(
    '--checkpoint-seconds', type=seconds, metavar='S', help='save every S seconds (default 60)'
  )
  saves.add_argument('--keep-checkpoints', type=count, default=_KEEP, metavar='K', help='keep the last K')
  saves.add_argument('--resume', action='store_true', help='continue from the newest checkpoint in DIR')
  out = train.add_argument_group('outputs')
  out.add_argument('--out', required=True, metavar='PATH', help='the blueprint file to write (.npz)')
  common.add_output_options(out)
  common.add_process_options(train)


def _add_deep_flags(train) -> None:
  larger = defaults.DEEP_BLUEPRINT_ACCELERATOR
  deep = train.add_argument_group(
    'Deep CFR (--algorithm deep-cfr, or sd-cfr without the strategy networks; the defaults shown are a '
    f"2-core CPU's; on a GPU or TPU: {larger['traversals']:,} traversals, layers "
    f'{",".join(map(str, larger["advantage_layers"]))}, minibatches of {larger["advantage_batch_size"]:,})'
  )
  deep.add_argument(
    '--snapshots', type=common.positive_count, metavar='N',
    help=f'sd-cfr: advantage networks kept per player (uniform over iterations) [default {_SNAPSHOTS}]',
  )  # fmt: skip
  deep.add_argument(
    '--no-history', dest='history', action='store_false',
    help='features without the betting history (the 372 numbers of the seed layout only)',
  )  # fmt: skip
  for parameter in algorithms.REGISTRY['deep-cfr'].hyperparameters:
    default = parameter.shown(defaults.DEEP_BLUEPRINT[parameter.name]).replace('%', '%%')
    options = dict(
      dest=parameter.name, default=argparse.SUPPRESS, help=f'{parameter.help} [default {default}]'
    )
    if parameter.kind == 'bool':
      deep.add_argument(parameter.cli_flag, action=argparse.BooleanOptionalAction, **options)
    else:
      metavar = {'layers': 'W,W', 'batch': 'N', 'int': 'N'}.get(parameter.kind, 'X')
      deep.add_argument(
        parameter.cli_flag, type=algorithms.argument_type(parameter), metavar=metavar, **options
      )


def run(args) -> int:
  """Runs `jaxcfr blueprint train` or `evaluate`: checks the input and the outputs before any work."""
  if args.blueprint_command == 'evaluate':
    return lbr.run(args)
  from jaxcfr import checkpoints, progress  # noqa: PLC0415
  from jaxcfr.poker.blueprint import training  # noqa: PLC0415
  from jaxcfr.training import TrainingError  # noqa: PLC0415

  log = common.log_stream(args)
  unit = 'boards' if args.algorithm == 'pcs' else 'traversals'  # what an iteration's batch holds
  bars = []  # made at the first report, which knows where a resumed run starts

  def show(update) -> None:
    if not bars:
      bars.append(progress.Progress(args.iterations, 'blueprint', 'it', args.quiet, initial=update.start))
    if update.traversals_per_second is not None:
      bars[0].set_postfix_str(f'{_rate(update.traversals_per_second)} {unit}/s, {update.label}')
    bars[0].update(update.iteration - bars[0].count)

  with common.bad_input(ValueError, TrainingError, checkpoints.CheckpointError):  # BlueprintError too
    settings = _settings(args)
    training.check_settings(settings)
    outputs.check_file(args.out, '--out', force=args.force, suffixes=('.npz',))
    common.check_json(args)
    try:
      trained = training.train_blueprint(settings, on_progress=show, log=lambda line: print(line, file=log))
    finally:
      for bar in bars:
        bar.close()
  report = trained.report
  saved = report['checkpoints_saved']
  saved = f'; {saved} checkpoints, {report["checkpoint_seconds"]:.2f} s each (median)' if saved else ''
  rate, jit = report['traversals_per_second'], report['jit_seconds']
  print(
    f'{report["iterations"]:,} iterations, {report["traversals"]:,} {unit} in {report["seconds"]:.1f} s '
    f'({_rate(rate)} {unit}/s; compilation {jit:.1f} s{saved})',
    file=log,
  )
  save = lambda path: trained.save(path, force=args.force)  # noqa: E731
  return common.write_outputs(args, report, log, ('blueprint', args.out, save))


def _rate(per_second: float) -> str:
  """'15,100' or '0.382': whole numbers from 100 up, three significant digits below (boards/s)."""
  return f'{per_second:,.0f}' if per_second >= 100 else f'{per_second:.3g}'


def _settings(args):
  """The `BlueprintSettings` of parsed `args`: the hyper-parameter flags given, by name."""
  from jaxcfr.poker.blueprint import training  # noqa: PLC0415

  given = {
    parameter.name: getattr(args, parameter.name)
    for family in ('es-mccfr', 'deep-cfr')
    for parameter in algorithms.REGISTRY[family].hyperparameters
    if hasattr(args, parameter.name)
  }
  return training.BlueprintSettings(
    algorithm=args.algorithm, abstraction=args.abstraction, bets=args.bets, seconds=args.seconds,
    iterations=args.iterations, seed=args.seed, devices=args.devices, dtype=args.dtype, hyperparameters=given,
    snapshots=args.snapshots, history=args.history, boards=args.boards, boards_at_once=args.boards_at_once,
    regret_rule=args.regret_rule, max_bytes=None if args.max_memory is None else args.max_memory * 2**30,
    checkpoint=args.checkpoint,
    checkpoint_seconds=args.checkpoint_seconds, keep_checkpoints=args.keep_checkpoints, resume=args.resume,
    rules=common.game_rules(args),
  )  # fmt: skip
