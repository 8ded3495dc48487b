"""A CfgAutomaton state: the Earley chart and the lexer threads, and how a thread says where it is.

A thread is (lexeme index, origin set, code): a code >= 0 is a state of the
lexeme's DFA; the negative codes below mean the DFA is not (yet) in use. Shared
by the stepping (automaton.py) and the masks (automaton_masks.py); knows
nothing else.
"""

from __future__ import annotations

from .earley import Chart

Thread = tuple  # (lexeme index, origin set, dfa state, or -1 - i: i bytes into its literal)
# A new thread sits at its lexeme's start without touching the DFA: building it
# (lexeme.py, tens of ms) waits until a byte it can start with arrives or a mask
# needs it, so threads that die at the next byte of a token never pay for one.
# A lexeme that starts with a literal (a property key `"name":`) is read through
# that literal, and masked there, without its DFA (literal_runs.py): of an
# object's many key lexemes only the one taken is ever built.
# A lexeme `,` ws `"name":` ws is read through a head DFA shared by all such
# lexemes (heads.py), then its literal: threads in the head are HEAD - h.
AT_START = -1
HEAD = -(1 << 30)
STUCK = -(1 << 40)  # read its literal, but its DFA failed to build (empty language)


class CfgState:
    """A parser state (treat as immutable). Slotted, not a frozen dataclass: one is made
    per byte stepped, and a frozen dataclass's __init__ plus its __dict__ cost ~3x."""

    __slots__ = ("chart", "threads", "fresh")

    def __init__(self, chart: Chart, threads: tuple[Thread, ...], fresh: bool) -> None:
        self.chart = chart
        self.threads = threads
        self.fresh = fresh   # the last item set ends at the current byte (eos possible there)
