"""Claim verdicts are computed from the results (clirlib.claims) on tiny hand-made frames."""

import pandas as pd

from clirlib import claims
from clirlib.metrics import METRIC_NAMES


def frame(values: dict) -> pd.DataFrame:
    rows = [{"lang": lang, "loss": loss, **{m: v for m in METRIC_NAMES}} for (lang, loss), v in values.items()]
    return pd.DataFrame(rows)


def test_champion_everywhere_counts_cells():
    w = frame({("fr", "sosl"): 0.5, ("fr", "mse"): 0.4, ("it", "sosl"): 0.3, ("it", "mse"): 0.4})
    out = claims.champion_everywhere(w, "loss", "sosl", "SOSL best", "Table 2")
    # fr: SOSL wins all 7 metrics, it: loses all 7 -> 7 of 14
    assert out["verdict"] == "partly held" and "7 of 14" in out["ours"]


def test_smoothing_and_negatives_and_low_resource():
    best = pd.DataFrame([{"epsilon": e, **{m: (0.5 if e > 0 else 0.4) for m in METRIC_NAMES}}
                         for e in (0.0, 0.25, 1.0, 1.75, 2.0)])
    assert claims.smoothing_beats_cosine(best)["verdict"] == "held"  # 3 eps x 7 metrics all better
    fig5 = pd.DataFrame([{"n_nr": 20, **{m: 1.0 for m in METRIC_NAMES}},
                         {"n_nr": 100, **{m: 0.95 for m in METRIC_NAMES}, "P_mr@1": 0.7}])
    out = claims.robust_to_negatives(fig5)
    assert out["verdict"] == "held" and "P_mr@1 +30.0%" in out["ours"]  # (1 - 0.7) / 1
    w = frame({("fr", "sosl"): 0.5, ("it", "sosl"): 0.5, ("sw", "sosl"): 0.6, ("tl", "sosl"): 0.7})
    assert claims.low_resource_higher(w)["verdict"] == "held"
    w2 = frame({("fr", "mse"): 0.5, ("fr", "po"): 0.55})
    assert claims.mse_close_to_po(w2)["verdict"] == "not held"  # gap 0.05 > 0.02
