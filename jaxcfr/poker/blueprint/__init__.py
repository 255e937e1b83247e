"""Heads-up no-limit hold'em blueprints: the abstract game, its MCCFR trainer, the file and the policy.

    from jaxcfr.poker import blueprint
    tree = blueprint.build_tree('small')                        # the abstract betting tree (host)
    game = blueprint.make_game(tree.bets, abstractions.load('tables/'), tree=tree)
    result = jaxcfr.train(game, blueprint.blueprint_solver(batch_size=1024), seconds=60, evaluate=False)
    run = blueprint.train_blueprint(blueprint.BlueprintSettings(abstraction='tables/', seconds=60),
                                    out='blueprint.npz')       # all of `jaxcfr blueprint train`
    policy = blueprint.load_policy('blueprint.npz')             # a jaxcfr.poker.rules.nlhe.Policy

Modules: `tree` (the abstract betting tree and the bet presets), `game` (the abstract game: deck,
streets, bucket functions, the history-compiled twin of small games), `mccfr` (external-sampling MCCFR
over sampled deals), `vector` (public chance sampling in vector form: every hand at once on each
sampled board), `deep` (Deep CFR and SD-CFR on the same game: networks of the hold'em features
of `features`), `files` (the blueprint files), `policy` (the blueprint in the real game),
`training` (the whole run of `jaxcfr blueprint train`: `train_blueprint`; its front end is
`jaxcfr.cli.blueprint`).
"""

import importlib

_HOMES = {
  'BettingTree': 'tree',
  'PRESETS': 'tree',
  'build_tree': 'tree',
  'BlueprintGame': 'game',
  'LosslessBuckets': 'game',
  'lossless_buckets': 'game',
  'make_game': 'game',
  'BlueprintState': 'mccfr',
  'blueprint_solver': 'mccfr',
  'VectorState': 'vector',
  'vector_solver': 'vector',
  'Blueprint': 'files',
  'BlueprintError': 'files',
  'load_blueprint': 'files',
  'save_blueprint': 'files',
  'BlueprintPolicy': 'policy',
  'NetworkPolicy': 'policy',
  'load_policy': 'policy',
  'NetworkBlueprint': 'files',
  'load_networks': 'files',
  'save_networks': 'files',
  'deep_blueprint_solver': 'deep',
  'BlueprintRun': 'training',
  'BlueprintSettings': 'training',
  'train_blueprint': 'training',
}


def __getattr__(name: str):
  if name not in _HOMES:
    raise AttributeError(f'module {__name__!r} has no attribute {name!r}')
  return getattr(importlib.import_module(f'jaxcfr.poker.blueprint.{_HOMES[name]}'), name)


__all__ = sorted(_HOMES)
