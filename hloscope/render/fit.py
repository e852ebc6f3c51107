"""Tables fitted to a terminal: the name column takes the room the figures leave.

rich shrinks every column of a table too wide for the terminal alike, cutting numbers
(`44.5…`); these helpers cut only the first column, the names, before rich lays the table
out. Piped output (`width` None) is never cut.
"""

from __future__ import annotations

from collections.abc import Sequence

from hloscope.render.format import ellipsis

__all__ = ["fit_names", "name_room"]

# Below this the names are not cut further: the table is let wider than the terminal.
MIN_NAME = 12


def name_room(
    headers: Sequence[str], rows: Sequence[Sequence[str]], width: int | None, *, gap: int = 1
) -> int | None:
    """The columns left for a table's first column in `width`, once every other column
    has the width of its widest header line or cell and `gap` columns before it; None
    when `width` is None (a pipe)."""
    if width is None:
        return None
    used = 0
    for i, header in enumerate(headers[1:], start=1):
        cells = [len(row[i]) for row in rows if len(row) > i]
        used += gap + max([*(len(line) for line in header.split("\n")), *cells])
    return max(MIN_NAME, width - used)


def fit_names(rows: list[list[str]], room: int | None) -> list[list[str]]:
    """`rows` with their first cell cut to `room` columns (an ellipsis at the end, where
    a kernel's words for its ops end: its own name stays); unchanged when `room` is
    None."""
    if room is None:
        return rows
    return [[ellipsis(row[0], room), *row[1:]] if row else row for row in rows]
