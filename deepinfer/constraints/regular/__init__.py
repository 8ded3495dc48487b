"""The regular back end: byte NFAs, minimized DFAs, and their token masks over a vocabulary.

Owns the Thompson construction (`nfa`), subset construction and minimization (`dfa`,
`minimize`), boolean operations on DFAs (`dfa_ops`), whole-vocabulary token masks of DFA
states (`masks`, `chains`) and the token automaton that walks one DFA (`automaton`).
Knows the IR; knows no front end and nothing of the context-free back end.
"""
