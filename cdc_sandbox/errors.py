"""Errors the sandbox reports to a user: what went wrong and what to do about it."""


class SandboxError(Exception):
    """A failure with a remedy. The CLI prints both and exits non-zero, without a traceback."""

    def __init__(self, message: str, hint: str = ""):
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return f"{self.message}\n  -> {self.hint}" if self.hint else self.message
