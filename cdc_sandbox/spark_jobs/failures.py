"""A failure's cause in one line: the deepest exception Spark, py4j and Python wrapped, with its own message.

A batch that fails inside Spark reaches Python as py4j's `An error occurred while calling o82.save`, or as a
StreamingQueryException whose text holds a Python traceback, a Java stack and several `Caused by:` lines. What went
wrong is the innermost Java exception; everything else is how it travelled.
"""

from __future__ import annotations

import re

# `org.apache.hudi.exception.MissingSchemaFieldException: Schema validation ...`, also after `Caused by: ` or py4j's
# `: ` prefix.
JAVA_EXCEPTION = re.compile(r"^(?:Caused by: |: )?((?:[a-z_$][\w$]*\.)+[A-Z][\w$]*(?:Exception|Error)):(?: (.*))?$")
# Exceptions that only carry another one.
WRAPPERS = ("py4j.", "org.apache.spark.api.python.PythonException", "java.util.concurrent.ExecutionException",
            "org.apache.spark.sql.streaming.StreamingQueryException", "java.lang.reflect.InvocationTargetException",
            "org.apache.hudi.exception.HoodieUpsertException", "org.apache.spark.SparkException")


def cause_line(failure: BaseException | str) -> str:
    """The innermost exception the failure carries, as `Class: message` (its message's first line); the failure's
    own first line where it carries none."""
    text = failure if isinstance(failure, str) else _text(failure)
    found = [(line.startswith("Caused by: "), match) for line in text.splitlines()
             if (match := JAVA_EXCEPTION.match(line.strip()))]
    causes = [match for caused, match in found if caused and not match.group(1).startswith(WRAPPERS)]
    named = causes[-1:] or [match for _, match in found if not match.group(1).startswith(WRAPPERS)][:1]
    if named:
        name, message = named[0].group(1), (named[0].group(2) or "").strip()
        return f"{name}: {message}" if message else name
    raised = [line for line in _python_raises(text.splitlines()) if not line.startswith("py4j.")]
    if raised:
        return raised[-1]
    first = next((line.strip() for line in text.splitlines() if line.strip()), "")
    return first or type(failure).__name__


def _python_raises(lines: list[str]) -> list[str]:
    """The `Class: message` line ending each Python traceback in the text (the job's own code raising)."""
    raised, inside = [], False
    for line in lines:
        if line.strip().endswith("Traceback (most recent call last):"):  # also after py4j's "Return Message: "
            inside = True
        elif inside and line and not line[0].isspace():
            raised.append(line.strip())
            inside = False
    return raised


def _text(failure: BaseException) -> str:
    """The failure's text with the chain of Java causes py4j can reach (a Java stack lists only the first few)."""
    parts = [str(failure)]
    java = getattr(failure, "java_exception", None) or getattr(failure, "_origin", None)
    try:
        while java is not None:
            parts.append(f"Caused by: {java.toString()}")
            java = java.getCause()
    except Exception:  # noqa: BLE001 - a JVM already gone: the text alone must do
        pass
    return "\n".join(parts)
