"""ir_facts' process-wide cache: only expressions without rule references are shared."""

from deepinfer.constraints import ir
from deepinfer.constraints.regular.facts import FactsCache


def test_rule_dependent_facts_are_not_shared_between_grammars():
    expr = ir.seq(ir.RuleRef("a"), ir.literal("x"))
    nullable_a = FactsCache({"a": ir.EMPTY}).of(expr)
    digit_a = FactsCache({"a": ir.CharClass.of([(ord("0"), ord("9"))])}).of(expr)
    assert nullable_a.first == 1 << ord("x")
    assert digit_a.first == sum(1 << b for b in range(ord("0"), ord("9") + 1))
    assert digit_a.states != nullable_a.states


def test_equal_closed_expressions_share_facts_across_caches():
    make = lambda: ir.seq(ir.literal("ab"), ir.repeat(ir.CharClass.of([(ord("c"), ord("d"))])))
    first = FactsCache({}).of(make())
    again = FactsCache({"unused": ir.literal("z")}).of(make())  # a distinct, equal object
    assert again == first
    assert not first.nullable and first.first == 1 << ord("a")
