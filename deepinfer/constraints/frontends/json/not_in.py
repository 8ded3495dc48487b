"""The front end's name for regular/not_in.py (the complement of a set of names).

The module sits in the regular stage so that the back end (cfg/not_in_dfa.py) can read
`words_of` without importing a front end; additional.py and scalars.py import from here.
"""

from deepinfer.constraints.regular.not_in import encoded_not_in, not_in, words_of
