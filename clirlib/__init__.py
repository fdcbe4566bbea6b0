"""clirlib: a reproducible companion to "Cross-Lingual Document Retrieval with Smooth
Learning" (Liu, Zhang, Goldwasser, Wang).

Modules, one per concept of the paper:

- ``similarity``  smooth cosine similarity r_eps (Section 3.3, Eq. 1)
- ``losses``      SOSL (Section 3.4, Eq. 2) and the baselines MSE, PO, 3Part_L2 (Section 5.1)
- ``encoders``    average pooling (Section 3.2), DSSM-CNN and DSSM-LSTM (Section 5.1)
- ``metrics``     the seven ranking metrics of Tables 2 and 3
- ``data``        the embedded WikiCLIR-like benchmark and the real WikiCLIR / Polyglot loaders
- ``train``       the training loop of Section 5 (Adam, batch 128, clipping)
- ``runs``, ``studies``: the run machinery (cached runner, executors); the notebooks' studies
- ``paths``, ``determinism``, ``reported``: where things live, seeds, the paper's numbers

docs/equations.md maps every equation of the paper, MDL and HIKE to its function.
"""

__version__ = "0.1.0"
