"""The JSON Schema walk offers everything the keyword modules may ask of it (lowering.Lowering),
and its dispatch table lowers every JSON type."""

import typing

from deepinfer.constraints.frontends.json.keywords import KEYWORDS
from deepinfer.constraints.frontends.json.lowerer import Lowerer
from deepinfer.constraints.frontends.json.lowering import Lowering
from deepinfer.constraints.frontends.json.merge import TYPES
from deepinfer.constraints.frontends.json.text import Whitespace


def protocol_members(proto) -> set[str]:
    names = set(typing.get_type_hints(proto)) | {n for n, v in vars(proto).items()
                                                  if callable(v) and not n.startswith("_")}
    return names


def test_the_walk_has_every_member_of_the_lowering_protocol():
    walk = Lowerer({"type": "string"}, Whitespace("default"), True, None, KEYWORDS)
    members = protocol_members(Lowering)
    assert {"lower", "valid", "unsupported", "ws", "capped"} <= members
    missing = sorted(name for name in members if not hasattr(walk, name))
    assert missing == []


def test_the_dispatch_table_lowers_every_json_type():
    assert set(KEYWORDS.by_type) == set(TYPES)
    walk = Lowerer({"type": "null"}, Whitespace("compact"), True, None, KEYWORDS)
    assert str(walk.grammar()) == 'start ::= "null"'
