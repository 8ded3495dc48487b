"""docs/constraints.md's examples run as written (doctest)."""

from __future__ import annotations

import doctest
import re
from pathlib import Path

PAGE = Path(__file__).resolve().parents[2] / "docs" / "constraints.md"


def test_constraints_page_examples():
    blocks = [b for b in re.findall(r"```python\n(.*?)```", PAGE.read_text(encoding="utf-8"), re.S) if ">>>" in b]
    assert len(blocks) >= 2, "docs/constraints.md lost its doctest examples"
    for i, block in enumerate(blocks):
        test = doctest.DocTestParser().get_doctest(block, {}, f"constraints.md example {i}", str(PAGE), 0)
        runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE)
        runner.run(test)
        assert runner.summarize(verbose=False).failed == 0
