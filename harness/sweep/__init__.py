"""Sweeps: every problem × method × budget × replicate job of a sweep file, run on Dask.

spec            sweep files (TOML): parsing, validation, expansion   load_sweep(path) -> Sweep
grid            problems and methods expanded into grids             expand_problems, expand_methods
filters         the command line's --problem, --method, --budget     restrict(sweep, selection)
plan            jobs with stable ids and keys                        plan(sweep) -> [Job]
execute         what a worker runs                                   run_job(job_spec) -> record
driver          submit, stream results into the store, resume        run_sweep(...)
tune            the `tune` job kind and its [tune] table
tune_exact      the exact references of a tuning sweep
reference_kind  the `reference` job kind                             run_reference_sweep(...)

The cluster is harness.execution.cluster (connect), the export of a store
harness.analysis.export, the `sweep` and `export` commands harness.cli.
"""
