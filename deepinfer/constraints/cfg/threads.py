"""How a CfgAutomaton thread says where it is in its lexeme.

A thread is (lexeme index, origin set, code): a code >= 0 is a state of the
lexeme's DFA; the negative codes below mean the DFA is not (yet) in use. Shared
by the stepping (automaton.py) and the masks (automaton_masks.py); knows
nothing else.
"""

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
