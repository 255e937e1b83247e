"""One progress rule for every command.

On a terminal, a live tqdm bar; anywhere else (a log file, a pipe) a few plain
lines: one at each tenth of `total` (at most one per `min_interval` seconds; with
the time left at the run's rate so far), one per `interval` seconds when the total
is unknown, and a final line with the count and the time taken once the work has
shown progress or lasted `min_interval` seconds (a quick run's own result says it
all); nothing at all with `quiet`.

    with Progress(total=1000, desc='cfr+', unit='it', quiet=args.quiet) as progress:
      for ...:
        progress.update(10)
        progress.set_postfix_str('exploitability 0.0123')

Imports nothing heavy (tqdm only when a terminal shows a bar).
"""

from __future__ import annotations

import sys
import time


class Progress:
  """Progress of `total` units (None: unknown) on `stream` (default: stderr at the
  time of the call); `initial` units are already done (a resumed run); `lines`: the plain lines
  over a known total (a line each 1 / `lines` of it; 10 by default)."""

  def __init__(
    self,
    total: int | None = None,
    desc: str = '',
    unit: str = 'it',
    quiet: bool = False,
    stream=None,
    *,
    initial: int = 0,
    leave: bool = True,
    interval: float = 30.0,
    min_interval: float = 10.0,
    lines: int = 10,
  ):
    self.total = total
    self.desc = desc
    self.unit = unit
    self.count = self._initial = initial
    self._stream = sys.stderr if stream is None else stream
    self._postfix = ''
    self._closed = quiet
    self._bar = None
    self._plain = False
    self._shown = False  # a plain line was written
    self._interval = interval
    self._min_interval = min_interval
    self._lines = lines  # plain lines over a known total: one per 1 / lines of it
    self._start = self._last = time.monotonic()
    self._tenths = self._tenth(initial)
    if quiet:
      return
    if _is_terminal(self._stream):
      from tqdm import tqdm  # noqa: PLC0415

      self._bar = tqdm(
        total=total, desc=desc, unit=unit, initial=initial, file=self._stream, leave=leave, smoothing=0.1
      )
    else:
      self._plain = True

  def __enter__(self) -> Progress:
    return self

  def __exit__(self, *exc) -> None:
    self.close()

  def update(self, n: int = 1) -> None:
    """Counts `n` more units done."""
    self.count += n
    if self._bar is not None:
      self._bar.update(n)
    elif self._plain and not self._closed:
      now = time.monotonic()
      if self.total:
        tenths = self._tenth(self.count)
        if tenths > self._tenths and tenths < self._lines and now - self._last >= self._min_interval:
          self._tenths = tenths
          self._line(now)
      elif now - self._last >= self._interval:
        self._line(now)

  def set_postfix_str(self, text: str) -> None:
    """A short status shown after the count (the bar's postfix, or the plain lines' tail)."""
    self._postfix = text
    if self._bar is not None:
      self._bar.set_postfix_str(text)

  def close(self) -> None:
    """Ends the bar, or writes the final plain line; idempotent."""
    if self._closed:
      return
    self._closed = True
    if self._bar is not None:
      self._bar.close()
    else:
      seconds = time.monotonic() - self._start
      if self._plain and (self._shown or seconds >= self._min_interval):  # a quick run's result says it all
        self._write(f'{self._prefix()}{self.count:,} {self.unit} done in {seconds:.1f} s{self._tail()}')

  def _tenth(self, count: int) -> int:
    return self._lines * count // self.total if self.total else 0

  def _line(self, now: float) -> None:
    self._last, self._shown = now, True
    seconds = now - self._start
    left = ''
    if self.total:
      progress = f'{self.count:,}/{self.total:,} {self.unit} ({100 * self.count // self.total}%)'
      done = self.count - self._initial
      if 0 < done and self.count < self.total:  # at this run's rate so far
        to_go = seconds / done * (self.total - self.count)
        left = f', about {to_go:.0f} s left' if to_go < 600 else f', about {to_go / 60:.0f} min left'
    else:
      progress = f'{self.count:,} {self.unit}'
    self._write(f'{self._prefix()}{progress}, {seconds:.0f} s{left}{self._tail()}')

  def _prefix(self) -> str:
    return f'{self.desc}: ' if self.desc else ''

  def _tail(self) -> str:
    return f', {self._postfix}' if self._postfix else ''

  def _write(self, line: str) -> None:
    try:
      self._stream.write(line + '\n')
      self._stream.flush()
    except (OSError, ValueError):  # a closed or broken stream: progress is not worth a crash
      pass


def _is_terminal(stream) -> bool:
  try:
    return bool(stream.isatty())
  except (AttributeError, ValueError, OSError):
    return False
