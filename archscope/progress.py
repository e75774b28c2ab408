"""The one progress bar of the long steps: `report`, `plan`, `make-checkpoint`, `profile`, and
reading a checkpoint.

It is drawn on stderr, so stdout stays the command's output (JSON, CSV, markdown, text) however
it is piped. It is drawn on a terminal only: a redirected stderr or a CI log would otherwise get
a line per refresh. ARCHSCOPE_PROGRESS=1 draws it anywhere, every step (a log that wants it,
the tests); ARCHSCOPE_PROGRESS=0 hides it on a terminal too.
"""

from __future__ import annotations

import os
import sys
from contextlib import contextmanager
from typing import Callable, Iterator

from tqdm import tqdm

ENV = "ARCHSCOPE_PROGRESS"
Tick = Callable[[str], None]


def _setting() -> bool | None:
    """True: forced on; False: forced off; None: on a terminal only (tqdm's own check)."""
    return {"1": True, "0": False}.get(os.environ.get(ENV, "").strip())


@contextmanager
def progress_bar(what: str, total: int | None = None, unit: str = "step",
                 shown: bool = True) -> Iterator[Tick]:
    """A bar named `what` (the command), over `total` steps (None: a counter without an end);
    yields tick(label), which counts one step done and shows `label` (what was just done)
    beside the bar. The bar is erased when the block ends; `shown=False` never draws it."""
    setting = _setting() if shown else False
    forced = setting is True
    with tqdm(total=total, desc=what, unit=unit, file=sys.stderr, leave=False,
              disable=None if setting is None else not setting, dynamic_ncols=True,
              # forced: every step drawn, however fast (a terminal redraws at most 10 times
              # a second, and a long step is drawn anyway)
              mininterval=0 if forced else 0.1, miniters=1 if forced else None) as bar:
        def tick(label: str = "") -> None:
            if label:
                bar.set_postfix_str(label, refresh=False)
            bar.update()

        yield tick
