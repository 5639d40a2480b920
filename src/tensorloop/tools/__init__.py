"""What the command line shows, as Python: model summaries, drawings, traces, comparisons and
benchmarks, for notebooks and scripts as well as the ``tensorloop`` commands."""
