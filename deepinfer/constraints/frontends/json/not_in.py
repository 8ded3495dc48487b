"""The front end's name for constraints/not_in.py (the complement of a set of names).

The module moved out of frontends/ so that the back end (cfg/not_in_dfa.py) can read
`words_of` without importing a front end; json_objects and json_scalars import from here.
"""

from deepinfer.constraints.regular.not_in import encoded_not_in, not_in, words_of
