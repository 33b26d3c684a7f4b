"""Sweeps: every problem × method × budget × replicate job of a sweep file, run on Dask.

spec     sweep files (TOML): parsing, validation, expansion       load_sweep(path) -> Sweep
plan     jobs with stable ids and keys                             plan(sweep) -> [Job]
execute  what a worker runs                                        run_job(job_spec) -> record
cluster  a local cluster or an existing scheduler (TLS)            connect(...)
driver   submit, stream results into the store, resume             run_sweep(...)
export   the store as CSV or Parquet                               export(store, out)
cli      the `sweep` and `export` commands
"""
