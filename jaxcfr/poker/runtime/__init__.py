"""The runtime: a blueprint and its abstraction tables answering real hold'em states, with NumPy only.

    from abstractions.lookup import load_tables
    from jaxcfr.poker.blueprint.files import load_blueprint
    from jaxcfr.poker.runtime.policy import BlueprintPolicy, check_fingerprint

    blueprint, tables = load_blueprint('blueprint.npz'), load_tables('tables/')
    check_fingerprint(blueprint, tables, 'blueprint.npz')    # trained on these tables
    actions, probabilities = BlueprintPolicy(blueprint, tables).strategy(state, holes)

One implementation, not two: the library's blueprint policy (`jaxcfr.poker.blueprint.policy`) is this
one, and an exported bot copies these files (`RUNTIME_MODULES`, `copy_runtime`) and runs them in a
container that has NumPy and no JAX. Every module listed imports no JAX, and imports, of this
repository, only modules listed (the packages' `__init__.py` files excepted: the copy gets empty ones,
since `jaxcfr/__init__.py` and `abstractions/__init__.py` import JAX). The card arithmetic there
(`abstractions.indexing`, `ranking`, `lookup`) is the same code the library runs on JAX arrays.
"""

from __future__ import annotations

import os
import pathlib
import shutil

# The source files an export copies, relative to the repository root (the folder that holds `jaxcfr`
# and `abstractions`, in a checkout or in site-packages).
RUNTIME_MODULES = (
  'abstractions/arrays.py',
  'abstractions/betting.py',
  'abstractions/indexing.py',
  'abstractions/lookup.py',
  'abstractions/ranking.py',
  'jaxcfr/outputs.py',
  'jaxcfr/recent.py',
  'jaxcfr/poker/rules/cards.py',
  'jaxcfr/poker/rules/nlhe.py',
  'jaxcfr/poker/blueprint/files.py',
  'jaxcfr/poker/blueprint/tree.py',
  'jaxcfr/poker/runtime/__init__.py',
  'jaxcfr/poker/runtime/policy.py',
)
ROOT = pathlib.Path(__file__).resolve().parents[3]


class BlueprintError(ValueError):
  """A blueprint file, abstraction or request that cannot be used: one line for the user."""


def copy_runtime(directory: str | os.PathLike, modules: tuple[str, ...] = RUNTIME_MODULES) -> list[str]:
  """Copies `modules` (`RUNTIME_MODULES` and any files of this repository that import only those
  and each other) into `directory` (made if missing) at their paths, with an empty
  `__init__.py` in each package folder that has none listed, so that with `directory` alone on
  sys.path `import jaxcfr.poker.runtime.policy` imports NumPy and these files, and no JAX. Returns
  the paths written, relative to `directory`."""
  directory = pathlib.Path(directory)
  written = []
  for name in modules:
    (directory / name).parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(ROOT / name, directory / name)
    written.append(name)
  packages = {
    str(folder / '__init__.py')
    for name in modules
    for folder in pathlib.PurePosixPath(name).parents
    if folder.name
  }
  for name in sorted(packages - set(modules)):
    (directory / name).write_text('')
    written.append(name)
  return written
