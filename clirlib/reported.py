"""The numbers the paper reports (Tables 1-3), shipped as CSV with the package.

Transcribed from the paper; loss and encoder names use clirlib's keys
(``sosl``, ``3part_l2``, ``mse``, ``po``; ``avgpool``, ``cnn``, ``lstm``).
"""

from __future__ import annotations

import pandas as pd

from .metrics import METRIC_NAMES
from .paths import REPORTED_DIR

LOSS_NAMES = {"sosl": "SOSL", "3part_l2": "3Part_L2", "mse": "MSE", "po": "PO"}
ENCODER_NAMES = {"avgpool": "Average Pooling", "cnn": "DSSM-CNN", "lstm": "DSSM-LSTM"}


def table1() -> pd.DataFrame:
    """Table 1: queries, SR documents per query, documents, per language."""
    return pd.read_csv(REPORTED_DIR / "paper_table1.csv")


def table2(wide: bool = True) -> pd.DataFrame:
    """Table 2: four losses x four languages x seven metrics (eps = 1)."""
    return _load("paper_table2.csv", "loss", wide)


def table3(wide: bool = True) -> pd.DataFrame:
    """Table 3: average pooling vs DSSM-CNN vs DSSM-LSTM, all with SOSL."""
    return _load("paper_table3.csv", "encoder", wide)


def _load(name: str, key: str, wide: bool) -> pd.DataFrame:
    df = pd.read_csv(REPORTED_DIR / name)
    if not wide:
        return df
    out = df.pivot_table(index=["lang", key], columns="metric", values="value", sort=False)
    return out[list(METRIC_NAMES)].reset_index().rename_axis(columns=None)
