"""pytest's set-up for ``tests/`` and for the nbval run over ``notebooks/``: their
hand-checked numbers, the shipped ``records/ci`` and the committed notebook outputs are CPU
results, so the paper's ranker trains on the CPU here even where a GPU is present
(``CLIRLIB_DEVICE``, ``clirlib.env``; a value the user sets wins). ``tests/test_device.py``
checks the GPU path itself where there is one."""

import os

from clirlib import env

#: ``CLIRLIB_DEVICE`` as the user set it before this file ran (None: unset).
USER_DEVICE = os.environ.get(env.DEVICE)
env.set_default(env.DEVICE, "cpu")
