"""Convergence plots: exploitability against iterations and against solve seconds, log-log.

    figure = jaxcfr.plots.convergence_figure({'dcfr': result.curve}, 'leduc')
    jaxcfr.outputs.write_png('leduc.png', figure)

Both axes carry several labelled ticks however narrow their range (a short
solve spans less than a decade of seconds).
"""

from __future__ import annotations


def convergence_figure(curves: dict[str, list[dict]], title: str = ''):
  """A matplotlib figure of `{label: [{iteration, seconds, exploitability}, ...]}`."""
  import matplotlib  # noqa: PLC0415

  matplotlib.use('Agg')
  import matplotlib.pyplot as plt  # noqa: PLC0415

  figure, panels = plt.subplots(1, 2, figsize=(10, 4))
  for axes, key, name in zip(panels, ('iteration', 'seconds'), ('iterations', 'solve seconds'), strict=True):
    xs, ys = [], []
    for label, curve in curves.items():
      points = [p for p in curve if p['exploitability'] > 0]  # log axes: positive values only
      x = [max(p[key], 1e-6) for p in points]
      y = [p['exploitability'] for p in points]
      axes.loglog(x, y, marker='.' if len(points) < 30 else None, label=label)
      xs += x
      ys += y
    axes.set_xlabel(name)
    axes.set_ylabel('exploitability')
    log_ticks(axes.xaxis, xs)
    log_ticks(axes.yaxis, ys)
    axes.grid(True, which='both', alpha=0.3)
    axes.legend()
  if title:
    figure.suptitle(title)
  figure.tight_layout()
  return figure


def log_ticks(axis, values) -> None:
  """Labelled ticks on a log axis however narrow its range: one per decade over wide ranges,
  1, 2, 5 per decade within two decades, every digit within a factor of 3 (where 1, 2, 5
  would leave a single tick)."""
  import matplotlib.ticker as ticker  # noqa: PLC0415

  if not values:
    return
  span = max(values) / max(min(values), 1e-300)
  subs = (1.0,) if span > 100 else (1.0, 2.0, 5.0) if span > 3 else tuple(float(s) for s in range(1, 10))
  axis.set_major_locator(ticker.LogLocator(base=10, subs=subs))
  axis.set_major_formatter(ticker.FuncFormatter(lambda value, _: _label(value)))
  axis.set_minor_formatter(ticker.NullFormatter())


def _label(value: float) -> str:
  """1,000 rather than 1e+03 for counts; three significant digits for the rest."""
  if 1 <= value < 1e7 and value == round(value):
    return f'{value:,.0f}'
  return f'{value:.3g}'


def close(figure) -> None:
  import matplotlib.pyplot as plt  # noqa: PLC0415

  plt.close(figure)
