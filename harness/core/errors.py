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
