"""Units of speculative decoding: the n-gram proposer, text and prompt lookups, the length scheduler."""

from deepinfer.engine.speculation.drafts import SOURCE_OWN, SOURCE_POOL, NgramProposer
from deepinfer.engine.speculation.draft_lengths import choose_lengths
from deepinfer.engine.speculation.step_cost import PriorCost


def test_own_context_longest_suffix_most_recent_occurrence():
    p = NgramProposer(max_ngram=3)
    p.observe("a", [1, 2, 3, 9, 1, 2, 3, 8, 7], [1, 2, 3])
    assert p.propose("a", 9).tokens == [8, 7, 1, 2, 3]
    draft = p.propose("a", 3)
    assert (draft.tokens, draft.source, draft.ngram) == ([8, 7, 1], SOURCE_OWN, 3)
    assert p.propose("a", 2).tokens == [8, 7]
    p.observe("a", [1, 2, 3, 9, 1, 2, 3, 8, 7], [1, 2, 3, 4])  # no earlier "3 4", "2 3 4"; "4" unseen
    assert p.propose("a", 5) is None


def test_pool_shares_outputs_of_other_sequences_and_forgets_them():
    p = NgramProposer(max_ngram=2, pool_tokens=6)
    p.observe("a", [50], [5, 6, 7, 8, 9])
    p.observe("b", [60], [5])
    draft = p.propose("b", 4)
    assert (draft.tokens, draft.source, draft.ngram) == ([6, 7, 8, 9], SOURCE_POOL, 1)
    p.release("a")                    # finished: still shared
    assert p.propose("b", 4).tokens == [6, 7, 8, 9]
    p.observe("c", [70], [1, 2, 3, 4])
    p.release("c")                    # 5 + 4 tokens > 6: "a" is dropped
    assert p.propose("b", 4) is None
    p.pool.clear()
    p.observe("d", [70], [1])
    assert p.propose("d", 4) is None


def test_own_match_wins_over_pool_at_equal_length():
    p = NgramProposer(max_ngram=2)
    p.observe("a", [0], [4, 5, 6])
    p.observe("b", [4, 9], [4])
    assert p.propose("b", 3).tokens == [9, 4]


def test_choose_lengths_admits_by_survival_until_theta_drops():
    # tau = 2, B = 2, overhead 2 rows: a row is worth adding iff a > tau / (B + overhead)
    lengths = choose_lengths([[0.9, 0.8, 0.1], [0.95, 0.2]], base_tokens=2, base_tau=2.0, cost=2.0,
                             budget=100)
    # 0.95: 2/4 -> yes (tau 2.95); 0.9: 2.95/5 -> yes (3.85); 0.8: 3.85/6 -> yes (4.65); 0.2: 4.65/7 -> no
    assert lengths == [2, 1]
    assert choose_lengths([[0.9, 0.8]], 1, 1.0, 1000.0, budget=1) == [1]
    assert choose_lengths([[0.0]], 1, 1.0, 1000.0, budget=10) == [0]


def _sorted_choose_lengths(survival, base_tokens, base_tau, overhead_rows, budget):
    """The reference: sort every candidate first, admit greedily (what select_lengths replaces)."""
    candidates = sorted(((a, r, j) for r, row in enumerate(survival) for j, a in enumerate(row, 1) if a > 0),
                        key=lambda c: (-c[0], c[1], c[2]))
    lengths, tokens, tau = [0] * len(survival), base_tokens, base_tau
    for a, r, j in candidates:
        if budget <= 0 or (tau + a) * (overhead_rows + tokens) <= tau * (overhead_rows + tokens + 1):
            break
        lengths[r], tokens, tau, budget = j, tokens + 1, tau + a, budget - 1
    return lengths


def test_lazy_selection_equals_sorting_every_candidate_and_asks_only_what_it_needs():
    """select_lengths over rows asked on demand, some refusing a candidate when it would be admitted
    (a draft token the constraint refuses: the row ends there), gives the lengths of sorting
    every candidate of the rows cut before their refused token."""
    import random
    from deepinfer.engine.speculation.draft_lengths import LOOKAHEAD, select_lengths
    rng = random.Random(1)

    class Row:
        def __init__(self, survival, refuse_at):
            self.survival, self.refuse_at, self.j, self.peeked, self.taken_tries = survival, refuse_at, 0, 0, 0

        def peek(self):
            self.peeked = max(self.peeked, self.j + 1)
            return self.survival[self.j] if self.j < len(self.survival) else 0.0

        def take(self):
            self.taken_tries += 1
            if self.j + 1 == self.refuse_at:
                return False
            self.j += 1
            return True
    for trial in range(600):
        survival = []
        for _ in range(rng.randrange(0, 9)):
            a, row = 1.0, []
            for _ in range(rng.randrange(0, 8)):
                # ties across and within rows (forced tokens keep a; repeated confidences)
                a *= rng.choice([1.0, 1.0, 0.5, 0.75, 2 / 3, rng.random()])
                row.append(a)
            survival.append(row)
        refuse = [rng.choice([0, 0, rng.randrange(1, 9)]) for _ in survival]   # 0: never
        args = (rng.randrange(0, 40), float(rng.randrange(1, 9)), rng.choice([1.0, 5.0, 100.0, 1e6]),
                rng.randrange(0, 30))
        rows = [Row(row, at) for row, at in zip(survival, refuse)]
        base_tokens, tau, overhead, budget = args
        lengths = select_lengths(rows, base_tokens, tau, PriorCost(overhead), budget)
        cut = [row[:at - 1] if at else row for row, at in zip(survival, refuse)]
        assert lengths == _sorted_choose_lengths(cut, *args)
        if not any(refuse):
            assert lengths == choose_lengths(survival, *args)
        # a row is asked for its next survival only after admitting the one before, and at most
        # LOOKAHEAD candidates past the chosen ones are admitted (then dropped)
        extra = [max(0, r.taken_tries - (n + 1)) for r, n in zip(rows, lengths)]
        assert all(r.peeked <= r.taken_tries + 1 for r in rows) and sum(extra) <= LOOKAHEAD


TEXTS = {1: '{"a": ', 2: '"x', 3: '",', 4: "\n ", 5: ' "b', 6: '":', 7: ' 1', 8: 'yz",', 9: ' "c', 10: '"'}


def test_text_pool_matches_the_longest_suffix_at_token_boundaries_newest_first():
    from deepinfer.engine.speculation.text_drafts import TextPool, TextStream
    pool = TextPool(TEXTS.__getitem__, min_chars=1, max_chars=4, pool_tokens=4)
    a, b = TextStream(), TextStream()
    pool.extend(a, [3, 4, 5, 3, 9])          # `",` `\n ` ` "b` `",` ` "c`
    assert pool.lookup('\n  q",', 2) == ([9], 2)  # the newest `",` on a line indented alike
    assert pool.lookup('q",', 2) == ([4, 5], 2)     # the unindented one
    pool.extend(b, [8, 7])                   # `yz",` ` 1`
    assert pool.lookup('q",', 2) == ([7], 2)
    assert pool.lookup('z",', 2) == ([7], 3)  # longest match
    assert pool.lookup('a\n ', 3) == ([5, 3, 9], 2)
    assert pool.lookup('zzz', 2) is None
    pool.retire(a)
    pool.retire(b)                           # 5 + 2 tokens > 4: a is dropped
    assert pool.lookup('a\n ', 3) is None and pool.lookup('q",', 1) == ([7], 2)


def test_forced_lead_continues_with_the_text_after_it():
    from deepinfer.engine.speculation.drafts import SOURCE_FORCED
    p = NgramProposer(max_ngram=2, token_text=TEXTS.__getitem__)
    p.observe("a", [0], [1, 5, 6, 7, 3])     # ` "b` `":` ` 1` ...
    p.observe("b", [0], [1, 9])              # ` "c`: the constraint forces `":` next
    draft = p.after_text("b", [6], '":', 3)
    assert (draft.tokens, draft.source) == ([6, 7, 3], SOURCE_FORCED)
    assert p.after_text("b", [6], '":', 1).tokens == [6]
    assert NgramProposer().after_text("x", [6], '":', 4).tokens == [6]   # no text pool: the lead alone


# prompt lookup on characters: a tiny word-level "tokenizer" (ids <-> texts)
WORDS = {20: "Record", 21: " Ada", 22: " Lovelace", 23: " is", 24: " a", 25: " poet", 26: ".",
         30: "a", 31: '{"name": "', 32: "Ad", 33: "ace", 34: "velace"}


def encode(text: str) -> list[int]:
    """Greedy longest-match over WORDS (stands in for the tokenizer's encode)."""
    by_text, ids = {v: k for k, v in WORDS.items()}, []
    while text:
        piece = max((t for t in by_text if text.startswith(t)), key=len)
        ids.append(by_text[piece])
        text = text[len(piece):]
    return ids


def test_prompt_text_continues_at_token_boundaries_and_re_encodes_a_cut_token():
    from deepinfer.engine.speculation.prompt_drafts import PromptText
    prompt = PromptText.build([20, 21, 22, 23, 24, 25, 26], WORDS.__getitem__)
    assert prompt.text == "Record Ada Lovelace is a poet."
    assert prompt.lookup('{"name": "Ada', 3, encode) == ([22, 23, 24], 4)   # ` Ada` ends a token
    assert prompt.lookup('x Ad', 3, encode) == ([30, 22, 23], 3)            # inside " Ada": "a" re-encoded
    assert prompt.lookup('x Lovel', 2, encode) == ([33, 23], 6)             # "ace" re-encoded, then " is"
    assert prompt.lookup('": "Lo', 2, encode) == ([34, 23], 3)             # `"` stands for a word start
    assert prompt.lookup('yAd', 2, encode) == ([30, 22], 2)
    assert prompt.lookup("poet.", 3, encode) is None                         # nothing follows
    assert prompt.lookup("zzz", 3, encode) is None and prompt.lookup("Ada", 0, encode) is None


def test_continue_text_prefers_the_outputs_then_the_prompt():
    from deepinfer.engine.speculation.drafts import SOURCE_PROMPT, SOURCE_TEXT
    texts = {**TEXTS, **WORDS}
    p = NgramProposer(max_ngram=2, token_text=texts.__getitem__, encode=encode)
    p.observe("a", [20, 21, 22, 23], [31, 32])                     # prompt "Record Ada Lovelace is"; output `{"name": "Ad`
    draft = p.continue_text("a", "", 4)
    assert (draft.tokens, draft.source) == ([30, 22, 23], SOURCE_PROMPT)
    assert p.continue_text("a", "a", 4).tokens == [22, 23]         # text the caller drafted counts
    p.observe("b", [20], [3, 4, 5])                                # another output: `",` `\n ` ` "b`
    p.observe("a", [20, 21, 22, 23], [31, 32, 30, 22, 3])          # ... `a Lovelace",`
    draft = p.continue_text("a", "", 2)
    assert (draft.tokens, draft.source) == ([4, 5], SOURCE_TEXT)   # what followed `",` in the outputs
    assert NgramProposer(token_text=texts.__getitem__).continue_text("a", "", 3) is None  # unknown key


def test_schema_skeleton_text_follows_declaration_order_and_structure():
    from deepinfer.engine.speculation.schema_drafts import skeleton_text
    schema = {"type": "object", "$defs": {"tag": {"enum": ["a", "b"]}},
              "properties": {"name": {"type": "string"}, "age": {"type": ["integer", "null"]},
                             "ok": {"type": "boolean"}, "tags": {"type": "array", "items": {"$ref": "#/$defs/tag"}},
                             "one": {"type": "array", "items": {"type": "integer"}, "maxItems": 1},
                             "pair": {"prefixItems": [{"const": 1}, {"type": "number"}]},
                             "any": {"anyOf": [{"type": "object", "properties": {"x": {"type": "string"}}}, {}]}}}
    assert skeleton_text(schema) == (
        '{\n  "name": "",\n  "age": 0,\n  "ok": false,\n  "tags": [\n    "a",\n    "a"\n  ],\n  "one": [\n    0\n  ],'
        '\n  "pair": [\n    1,\n    0\n  ],'
        '\n  "any": {\n    "x": ""\n  }\n}')
    assert skeleton_text({"type": "string"}) is None and skeleton_text(True) is None
    recursive = {"type": "object", "properties": {"child": {"$ref": "#"}}}
    assert skeleton_text(recursive).count('"child"') == 4           # property + $ref per level, MAX_DEPTH 6
    assert skeleton_text({"type": "array", "items": {"$ref": "#/nowhere"}}) == "[\n  null,\n  null\n]"


def test_add_text_joins_the_text_pool_as_a_finished_output():
    texts = {**TEXTS, **WORDS}
    p = NgramProposer(token_text=texts.__getitem__, encode=encode)
    p.add_text([3, 4, 5])                                        # `",` `\n ` ` "b`
    p.observe("a", [20], [2, 3])                                 # `"x` `",`
    assert p.continue_text("a", "", 2).tokens == [4, 5]


def test_text_suffixes_match_only_on_lines_indented_alike():
    from deepinfer.engine.speculation.text_drafts import TextPool, TextStream, line_indent
    texts = {1: "{\n  \"a\": \"x\",", 2: "\n  \"", 3: "[\n    \"y\",", 4: "\n    \"", 5: "z"}
    pool = TextPool(texts.__getitem__, min_chars=2, max_chars=4)
    stream = TextStream()
    pool.extend(stream, [1, 2, 5, 3, 4, 5])
    assert line_indent('[\n    "q",') == 4 and line_indent("ab") == 0
    assert stream.indent == line_indent(stream.text) == 4
    other = TextStream()                                  # kept token by token = rescanned
    for token, piece in enumerate(["{", "\n ", " ", "\t\"a", " ", "b\n", "  ", "\n", " x"]):
        other.append(token, piece)
        assert other.indent == line_indent(other.text), other.text
    assert pool.lookup('{\n  "b": 1,\n  "c",', 2) == ([2, 5], 2)      # member level: `\n  "`
    assert pool.lookup('[\n    "p",', 2) == ([4, 5], 2)               # item level, although newer `",` exist


def test_ngram_index_fast_paths_register_what_the_token_loop_registers():
    """`extend` of a long run (per n, zipped slices) and `extend_output` (own and output index at
    once) must leave the same n-gram -> position maps as one token at a time."""
    import random
    from deepinfer.engine.speculation.drafts import DraftPool, NgramIndex

    def loop(index, new, pool=None):
        for token in new:
            end = len(index.tokens)
            for n in range(1, min(index.max_ngram, end) + 1):
                index.last[tuple(index.tokens[end - n:end])] = end
                if pool is not None:
                    pool.entries[tuple(index.tokens[end - n:end])] = (index, end)
            index.tokens.append(token)
    rng = random.Random(3)
    for _ in range(200):
        m = rng.randrange(1, 6)
        fast, fast_out, slow, slow_out = NgramIndex(m), NgramIndex(m), NgramIndex(m), NgramIndex(m)
        fast_pool, slow_pool = DraftPool(), DraftPool()
        prompt = [rng.randrange(4) for _ in range(rng.choice([0, 2, 17, 40]))]
        fast.extend(prompt)
        loop(slow, prompt)
        for _ in range(rng.randrange(1, 8)):
            new = [rng.randrange(4) for _ in range(rng.choice([0, 1, 2, 5, 20]))]
            if len(new) > 16:
                fast_out.extend(new, fast_pool)
                fast.extend(new)
            else:
                fast.extend_output(new, fast_out, fast_pool)
            loop(slow, new)
            loop(slow_out, new, slow_pool)
        assert (fast.tokens, fast.last, fast_out.tokens, fast_out.last) == \
            (slow.tokens, slow.last, slow_out.tokens, slow_out.last)
        assert {k: v[1] for k, v in fast_pool.entries.items()} == {k: v[1] for k, v in slow_pool.entries.items()}
        assert all(v[0] is fast_out for v in fast_pool.entries.values())


def test_prompt_lookup_bisection_equals_trying_every_length():
    """PromptText.lookup skips the suffix lengths not found in the prompt by bisection; it must
    return what trying every length from the longest down returns."""
    import random
    from deepinfer.engine.speculation.prompt_drafts import PromptText

    def every_length(prompt, text, limit, encode, min_chars, max_chars):
        for n in range(min(max_chars, len(text)), min_chars - 1, -1):
            at = prompt.text.rfind(text[-n:])
            if at < 0 and text[-n] == '"':
                at = prompt.text.rfind(" " + text[-n + 1:] if n > 1 else " ")
            if at >= 0 and (tokens := prompt._tokens_from(at + n, limit, encode)):
                return tokens, n
        return None
    rng = random.Random(0)
    encode = lambda t: [ord(c) for c in t]  # noqa: E731
    for _ in range(3000):
        pieces = [rng.choice(["a", "b", " ", '"', "c", "ab", " a", "ca"]) for _ in range(rng.randrange(0, 30))]
        prompt = PromptText.build(list(range(len(pieces))), lambda i: pieces[i])
        text = "".join(rng.choice('ab "c') for _ in range(rng.randrange(0, 30)))
        limit, (lo, hi) = rng.randrange(0, 5), rng.choice([(2, 24), (1, 5), (3, 8)])
        assert prompt.lookup(text, limit, encode, lo, hi) == every_length(prompt, text, limit, encode, lo, hi)
