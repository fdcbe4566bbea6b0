"""The run machinery, apart from the studies so that a study only describes its runs (configs)
and trains none itself: ``experiments`` turns a config into a record (the ``results/runs`` cache, else
the committed ``records/`` through ``shipped``; ``verify`` retrains a sample of those), ``grid_runs``
runs a grid and makes its table, ``executors`` and ``raycluster`` decide where runs execute (in
process, a pool, a Ray cluster). It sits above training and the systems, below the studies."""
