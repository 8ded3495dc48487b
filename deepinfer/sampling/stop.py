"""Stop strings over streamed text: where to cut, and what to hold back.

Works on decoded `str` text (the detokenizer never emits half a character), so
a cut never splits a character. While streaming, the tail of the text that
could still grow into a stop string is held back until it cannot.
"""

from __future__ import annotations


def find_stop(text: str, stops: list[str], start: int = 0) -> tuple[int, str] | None:
    """Earliest (index, stop string) of a stop string in text, searching from `start`."""
    best = None
    for stop in stops:
        index = text.find(stop, start)
        if index >= 0 and (best is None or index < best[0]):
            best = (index, stop)
    return best


def holdback(text: str, stops: list[str]) -> int:
    """Length of the longest suffix of text that is a proper prefix of some stop string."""
    longest = 0
    for stop in stops:
        for n in range(min(len(stop) - 1, len(text)), longest, -1):
            if text.endswith(stop[:n]):
                longest = n
                break
    return longest
