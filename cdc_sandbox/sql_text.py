"""SQL text split into its statements, for the sandbox's own fixture scripts and a first reading of a DDL file."""

from __future__ import annotations

import re

# Lines the client reads, never sent to the server: psql's meta-commands (`\connect`, pg_dump's `\restrict`) and
# the mysql client's DELIMITER.
CLIENT_COMMAND = re.compile(r"^[ \t]*(?:\\|delimiter[ \t]).*$", re.IGNORECASE | re.MULTILINE)


def without_client_commands(text: str) -> str:
    """The file's text with its client commands blanked (each line keeps its number)."""
    return CLIENT_COMMAND.sub("", text)


def statements(text: str) -> list[tuple[int, str]]:
    """The statements of a SQL file with the line each begins on: split at semicolons outside quotes, comments and
    Postgres dollar quoting."""
    found, current, start, line = [], [], None, 1
    i, quote = 0, None
    while i < len(text):
        char = text[i]
        if quote is None and text.startswith("--", i):
            end = text.find("\n", i)
            i = len(text) if end < 0 else end
            continue
        if quote is None and text.startswith("/*", i):
            end = text.find("*/", i)
            skipped = text[i:len(text) if end < 0 else end + 2]
            line += skipped.count("\n")
            i += len(skipped)
            continue
        if quote is None and char == "$":
            tag_end = text.find("$", i + 1)
            tag = text[i:tag_end + 1] if tag_end > 0 else ""
            if tag and (tag == "$$" or tag[1:-1].isidentifier()):
                quote = tag
        elif quote is None and char in "'\"`":
            quote = char
        elif quote is not None and text.startswith(quote, i) and (len(quote) > 1 or char == quote):
            current.append(quote)
            i += len(quote)
            quote = None
            continue
        if quote is None and char == ";":
            if "".join(current).strip():
                found.append((start, "".join(current).strip()))
            current, start = [], None
        else:
            if start is None and not char.isspace():
                start = line
            current.append(char)
        line += char == "\n"
        i += 1
    if "".join(current).strip():
        found.append((start, "".join(current).strip()))
    return found
