"""User-facing errors: bad input is reported as one clear line, never as a traceback."""


class InputError(ValueError):
    """Bad input from the user: names the field and says how to fix it.

    The command line turns it into exit code 2 and one line on stderr.
    """

    def __init__(self, field: str, problem: str, fix: str = ""):
        self.field = field
        message = f"{field}: {problem}"
        if fix:
            message += f" ({fix})"
        super().__init__(message)


# The exit codes of `python -m harness`, one meaning each for every command (docs/design.md,
# "Exit codes"). A result's status (ok, unreliable, failed, error, timeout) is data, not an
# error: the work that stored it finished, so it exits 0 unless --strict asks otherwise.
EXIT_OK = 0            # the work finished; every result is stored (or printed), whatever its status
EXIT_FLAGGED = 1       # --strict and a result not ok; check, compare: something flagged
EXIT_BAD_INPUT = 2     # an InputError: bad input, a store that cannot be opened or written
EXIT_CLUSTER = 3       # the Dask cluster could not finish (harness.execution.cluster.ClusterLost)
EXIT_INTERRUPTED = 130  # Ctrl-C (128 + SIGINT); every finished result stays stored
