"""The studies behind the notebooks: the paper's tables and figures as grids of runs, its claims
and their verdicts, the studies beyond the paper and the figure code. They describe runs and ask
``clirlib.runs`` for the records; only the front ends (notebooks, command line, bench) import them."""
