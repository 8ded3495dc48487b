"""Strings and numbers of a normalized JSON Schema -> IR.

Owns `minLength`/`maxLength`/`pattern`/`format` (a regular language over the
decoded characters, then JSON-encoded character by character), numeric bounds
and `multipleOf` (via json_numbers and json_decimals), and excluded values
(`_not_enum`, from `not: {enum}` and `oneOf`). Knows nothing about objects, arrays or refs.
"""

from __future__ import annotations


from deepinfer.constraints.regular import dfa_ops
from deepinfer.constraints import ir
from deepinfer.constraints.ir import CharClass, Expr, alt, literal, optional, repeat, seq

from .caps import CAP_NOTE, MATCHER_MAX_LENGTH
from .digits import bound_digits
from .formats import FORMAT_REGEXES, format_expr
from .decimals import number_text
from .numbers import MAX_ENUMERATED, NUMBER_TEXT, Bounds, RangeError, int_range, integer_bounds, integer_text, multiples_window, window_values
from .string_bounds import bound_text_length
from .pattern import PatternError, PatternSyntaxError, parse_pattern
from .not_in import not_in
from .order import META, NOT_PATTERN_AT
from .words import minus_words, words
from .refs import Node
from .text import ANY_CHAR, COUNTED_CHAR, DIGIT, encode_expr, quoted
from .lowering import Lowering


LONG_STRING = 128
# Non-integral numbers whose float is certainly non-integral. json.loads turns 1.00000000000000001,
# 9007199254740993.5 and 1.5e300 into integral floats (and 1e-400 into 0.0), which jsonschema's
# draft-06+ `type: integer` and every draft's `multipleOf` count as integers / multiples; so here a
# number is written without an exponent, with at most FRACTION_DIGITS significant digits (from the
# first non-zero digit to the last; zeros may follow) and, when its integer part is 0, at most
# LEADING_ZEROS zeros between the point and the first non-zero digit. A decimal of at most 15
# significant digits round-trips through a double (DBL_DIG): with |x| < 10**15 < 2**53 its float is
# integral only if the decimal is, and a fraction part >= 10**-16 is far from underflowing to 0.0.
# (LEADING_ZEROS keeps the DFA small: intersected with bounds it is state-eliminated back to IR.)
FRACTION_DIGITS = 15
LEADING_ZEROS = 15
_NONZERO = CharClass.of([(49, 57)])
FRACTIONAL = seq(optional(literal("-")), alt(
    # 0.(zeros)d...: the significant digits all lie in the fraction; past the first FRACTION_DIGITS
    # of them only zeros
    seq(literal("0."), repeat(literal("0"), 0, LEADING_ZEROS), _NONZERO,
        repeat(DIGIT, 0, FRACTION_DIGITS - 1), repeat(literal("0"))),
    # an integer part of k + 1 digits (k <= 13), then a fraction whose last non-zero digit is among
    # its first FRACTION_DIGITS - k - 1 digits
    *(seq(_NONZERO, repeat(DIGIT, k, k), literal("."), repeat(DIGIT, 0, FRACTION_DIGITS - k - 2), _NONZERO,
          repeat(literal("0"))) for k in range(FRACTION_DIGITS - 1))))
ASCII_CHAR = alt(CharClass.of([(0x20, 0x21), (0x23, 0x5B), (0x5D, 0x7E)]),
                 seq(literal("\\"), CharClass.of([(ord(c), ord(c)) for c in '"\\/bfnrt'])))


def lower_string(lw: Lowering, d: dict, node: Node) -> Expr:
    ptr = node.ptr
    lo = int(d.get("minLength", 0))
    hi = d.get("maxLength")
    hi = None if hi is None else int(hi)
    if hi is not None and hi < lo:
        return ir.NOTHING
    language = _string_language(lw, d, ptr)
    excluded = [v for v in d.get("_not_enum", []) if isinstance(v, str)]
    if language is None and not excluded:
        if _capped_by_matcher(lw, d, lo, hi):  # unbounded here: the matcher counts (json_caps)
            lw.note(f"{CAP_NOTE} {ptr or '/'}")
            return quoted(repeat(COUNTED_CHAR, lo, None))
        if hi is not None and hi > LONG_STRING:
            # counting every position of a byte automaton through multi-byte UTF-8 and \uXXXX
            # escapes costs ~9 states a character: past LONG_STRING characters, long strings
            # continue in printable ASCII with short escapes (sound, noted)
            lw.note(f"{ptr}/maxLength: characters after the first {LONG_STRING} of a string "
                    f"are printable ASCII or two-character escapes")
            parts = [repeat(COUNTED_CHAR, lo, LONG_STRING)] if lo <= LONG_STRING else []
            parts.append(seq(repeat(COUNTED_CHAR, LONG_STRING, LONG_STRING),
                             repeat(ASCII_CHAR, max(lo - LONG_STRING, 1), hi - LONG_STRING)))
            return quoted(alt(*parts))
        return quoted(repeat(COUNTED_CHAR, lo, hi))
    return quoted(encode_expr(_excluded_and_bounded(lw, language, excluded, lo, hi, ptr)))


def _excluded_and_bounded(lw: Lowering, language: Expr | None, excluded: list, lo: int, hi: int | None,
                          ptr: str) -> Expr:
    """A decoded string language (None: any string) minus the excluded values, within lo..hi
    characters (noted where the bound is not exact)."""
    if language is None:
        language = repeat(ANY_CHAR)
    if excluded:
        language = _minus_words(lw, language, excluded, ptr)
    if lo or hi is not None:
        language, exact = bound_text_length(lw, language, lo, hi, ptr)
        if not exact:
            lw.note(f"{ptr or '/'}: minLength/maxLength with this pattern are enforced with per-part "
                    f"length budgets (sound; some long valid strings are excluded)")
    return language


NAME_KEYS = frozenset({"type", "pattern", "_patterns", "format", "_not_patterns", "minLength", "maxLength",
                       "enum", "_not_enum"})


def names_language(lw: Lowering, n: dict, ptr: str) -> Expr | None:
    """The decoded names a normalized `propertyNames` schema allows (member names are strings:
    its string keywords decide), or None when it holds other keywords (the caller refuses)."""
    if "not" in n:  # `not` of a pattern or of values: the markers a negation would leave
        neg = lw.normalize(n["not"])
        neg_keys = {k for k in neg if k not in META} if isinstance(neg, dict) else {None}
        n = {k: v for k, v in n.items() if k != "not"}
        if neg_keys == {"pattern"}:
            n["_not_patterns"] = list(n.get("_not_patterns", [])) + [neg["pattern"]]
        elif neg_keys == {"enum"}:
            n["_not_enum"] = list(n.get("_not_enum", [])) + list(neg["enum"])
        else:
            return None
    keys = {k for k in n if k not in META}
    if not keys <= NAME_KEYS:
        return None
    if "type" in n and "string" not in n["type"]:
        return ir.NOTHING
    hi = n.get("maxLength")
    excluded = [v for v in n.get("_not_enum", []) if isinstance(v, str)]
    language = _excluded_and_bounded(lw, _string_language(lw, n, ptr), excluded, int(n.get("minLength", 0)),
                                     None if hi is None else int(hi), ptr)
    if "enum" in n:
        values = [v for v in n["enum"] if isinstance(v, str)]
        language = dfa_ops.to_ir(dfa_ops.intersect(dfa_ops.expr_dfa(language),
                                                   dfa_ops.expr_dfa(words(values))))
    return language


def _capped_by_matcher(lw: Lowering, d: dict, lo: int, hi: int | None) -> bool:
    """A long maxLength written by a node json_caps lets the matcher enforce (then every context
    the string can be in caps it at hi or less, and nothing there needs it longer)."""
    if hi is None or hi <= MATCHER_MAX_LENGTH or lo > MATCHER_MAX_LENGTH or not lw.capped:
        return False
    return any(isinstance(src.schema, dict) and (src.ptr, src.base) in lw.capped
               and src.schema.get("maxLength") == hi for src in d.get("_sources", ()))


def _string_language(lw: Lowering, d: dict, ptr: str) -> Expr | None:
    """The decoded-string language of `pattern`s (several after allOf), `format` and negated
    patterns (`_not_patterns`, from `not`); None when none constrains the string."""
    positives: list[tuple[str, Expr]] = []
    for p in ([d["pattern"]] if "pattern" in d else []) + list(d.get("_patterns", [])):
        try:
            positives.append(("pattern", parse_pattern(p)))
        except PatternSyntaxError as exc:
            raise lw.fail(f"{ptr}/pattern", f"{p!r}: {exc}") from None
        except PatternError as exc:
            lw.unsupported(f"{ptr}/pattern", "pattern", f"{p!r}: {exc}")
    fmt = d.get("format")
    if isinstance(fmt, str):
        known = format_expr(fmt)
        if known is None and lw.unknown_formats == "refuse":
            lw.unsupported(f"{ptr}/format", "format", f"unknown format {fmt!r} (known: {', '.join(FORMAT_REGEXES)})")
        elif known is None:
            lw.note(f"format {fmt!r} at {ptr}/format is not enforced (unknown format: annotation)")
        else:
            positives.append(("format", known))
    negatives = list(d.get("_not_patterns", []))
    if not negatives and len(positives) <= 1:
        return positives[0][1] if positives else None
    keyword = "not" if negatives else positives[-1][0]
    where, negated = f"{ptr}/{keyword}", None
    try:
        lang = dfa_ops.expr_dfa(positives[0][1] if positives else repeat(ANY_CHAR))
        for _, expr in positives[1:]:
            lang = dfa_ops.intersect(lang, dfa_ops.expr_dfa(expr))
        for negated in negatives:
            lang = dfa_ops.minus(lang, dfa_ops.expr_dfa(parse_pattern(negated, exact=True)))
        return dfa_ops.to_ir(lang)
    except (dfa_ops.DfaOpError, PatternError) as exc:
        if negated is not None:  # the negated pattern's own place (a `not`, another oneOf branch)
            where = d.get(NOT_PATTERN_AT, {}).get(negated, where)
            exc = f"{negated!r}: {exc}"
        lw.unsupported(where, keyword, f"intersecting string languages: {exc}")
        return positives[0][1] if positives else None


def _minus_words(lw: Lowering, language: Expr, words: list[str], ptr: str) -> Expr:
    """language minus a finite set of strings (exact when the language is 'any string')."""
    if language == repeat(ANY_CHAR):
        return not_in(words)
    try:
        return minus_words(language, words)
    except dfa_ops.DfaOpError as exc:  # a DFA leaf too big to take the words out of
        lw.unsupported(f"{ptr}/not", "not", f"excluding values from this pattern or format: {exc}")
        return language


def lower_number(lw: Lowering, d: dict, node: Node, integer: bool) -> Expr:
    """The number text of a `number`/`integer` sub-schema, within the digit limit when one is set."""
    numbers = _number_language(lw, d, node, integer)
    if lw.number_digits is None or numbers == ir.NOTHING:
        return numbers
    bounded, why = bound_digits(numbers, lw.number_digits)
    if why is not None:
        lw.note(f"{node.ptr or '/'}: numbers are not digit-bounded ({why})")
    return bounded


def _number_language(lw: Lowering, d: dict, node: Node, integer: bool) -> Expr:
    ptr = node.ptr
    bounds = _bounds(d)
    excluded = [v for v in d.get("_not_enum", []) if isinstance(v, (int, float)) and not isinstance(v, bool)]
    mult = d.get("multipleOf")
    if d.get("_not_multiple_of"):
        return _non_multiples(lw, d, bounds, mult, integer, excluded, ptr)
    if mult is not None and not integer:
        if isinstance(mult, (int, float)) and float(mult).is_integer() and mult > 0:
            integer = True  # a multiple of an integer: only integral numbers are generated
        else:
            lw.unsupported(f"{ptr}/multipleOf", "multipleOf",
                           f"multipleOf {mult!r} on non-integers (float division is not regular)")
            mult = None
    if integer and d.get("_not_integer"):  # ¬integer (a negated `type: integer`) leaves no integer
        return ir.NOTHING
    try:
        if integer:
            if excluded:
                return _integers_except(lw, bounds, mult, excluded, ptr)
            return integer_text(bounds, mult)
        if excluded:
            lw.unsupported(f"{ptr}/not", "not", "excluding values from non-integer numbers")
        if d.get("_not_integer"):
            return _fractional(lw, number_text(bounds), ptr)
        return number_text(bounds)
    except RangeError as exc:
        if mult is not None and integer and not excluded:
            try:
                window = multiples_window(bounds, mult)
            except RangeError:
                window = None
            if window is not None:
                lw.note(f"{ptr}/multipleOf: {exc}; the {MAX_ENUMERATED // 2} multiples nearest the "
                        f"bound are generated (sound, not exact)")
                return window
        keyword = exc.keyword or ("multipleOf" if mult is not None else "minimum")
        lw.unsupported(f"{ptr}/{keyword}", keyword, str(exc))
        return integer_text(bounds) if integer else number_text(Bounds())


def _non_multiples(lw: Lowering, d: dict, bounds: Bounds, mult, integer: bool, excluded, ptr: str) -> Expr:
    """`not: {multipleOf: m}` (integer m): integers of a window that are not multiples, and for
    numbers also the non-integers (never a multiple of an integer); sound, noted."""
    ms = [m for m in d["_not_multiple_of"] if isinstance(m, int) and not isinstance(m, bool) and m > 0]
    if len(ms) < len(d["_not_multiple_of"]):
        lw.unsupported(f"{ptr}/not", "not", "the negation of a non-integer multipleOf")
    step = mult if isinstance(mult, int) and not isinstance(mult, bool) and mult > 0 else 1
    if mult is not None and step == 1 and mult != 1:
        lw.unsupported(f"{ptr}/multipleOf", "multipleOf", f"multipleOf {mult!r} with a negated multipleOf")
    skip = {v for v in excluded if float(v).is_integer()}
    values = [v for v in window_values(bounds, step) if all(v % m for m in ms) and v not in skip]
    lw.note(f"{ptr or '/'}: numbers that are not multiples are generated from a window of "
            f"{MAX_ENUMERATED // 2} integers (and, for numbers, non-integers without exponent)")
    parts = [words(str(v) for v in values)] if values and not d.get("_not_integer") else []
    if not integer and mult is None and not excluded:
        parts.append(_fractional(lw, number_text(bounds), ptr))
    return alt(*parts) if parts else ir.NOTHING


def _fractional(lw: Lowering, numbers: Expr, ptr: str) -> Expr:
    """Numbers that are not integers, as floats: here FRACTIONAL's, written without an exponent,
    at most 15 significant digits, |x| >= 1e-16 (sound, noted). Left out: exponent forms such as
    1.5e-1, longer decimals such as 0.1234567890123456 or 12345678.123456789, and tiny ones such as
    0.00000000000000000123, because a decimal's float may be integral where the decimal is not
    (1.00000000000000001 and 9007199254740993.5 parse to 1.0 and 9007199254740994.0, 1e-400 to 0.0);
    in draft 4, integral decimals such as 1.0 (not integers there) are left out too."""
    lw.note(f"{ptr or '/'}: non-integer numbers are generated without an exponent, with at most "
            f"{FRACTION_DIGITS} significant digits and |x| >= 1e-{LEADING_ZEROS + 1} (their floats stay "
            f"non-integral)")
    if numbers == NUMBER_TEXT:
        return FRACTIONAL
    try:
        return dfa_ops.to_expr(dfa_ops.intersect(dfa_ops.expr_dfa(numbers), dfa_ops.expr_dfa(FRACTIONAL)))
    except dfa_ops.DfaOpError as exc:
        lw.unsupported(f"{ptr}/not", "not", f"non-integer numbers within bounds: {exc}")
        return numbers


def _integers_except(lw, bounds: Bounds, mult, excluded, ptr) -> Expr:
    if mult is not None:  # the multiples minus the excluded numerals
        multiples = integer_text(bounds, mult)
        try:
            return minus_words(multiples, sorted({str(int(v)) for v in excluded if float(v).is_integer()}))
        except dfa_ops.DfaOpError as exc:
            lw.unsupported(f"{ptr}/not", "not", f"excluding values together with multipleOf: {exc}")
            return multiples
    lo, hi = integer_bounds(bounds)
    points = sorted({int(v) for v in excluded if float(v).is_integer()})
    parts, start = [], lo
    for p in points:
        if (lo is not None and p < lo) or (hi is not None and p > hi):
            continue
        parts.append(int_range(start, p - 1))
        start = p + 1
    parts.append(int_range(start, hi))
    return alt(*parts)


def _bounds(d: dict) -> Bounds:
    lo, lo_excl, hi, hi_excl = None, False, None, False
    for key, excl in (("minimum", False), ("exclusiveMinimum", True)):
        v = d.get(key)
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            if lo is None or v > lo or (v == lo and excl):
                lo, lo_excl = v, excl
    for key, excl in (("maximum", False), ("exclusiveMaximum", True)):
        v = d.get(key)
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            if hi is None or v < hi or (v == hi and excl):
                hi, hi_excl = v, excl
    return Bounds(lo, lo_excl, hi, hi_excl)
