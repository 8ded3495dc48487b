"""The README's constraints example runs as written (doctest)."""

from __future__ import annotations

import doctest
import re
from pathlib import Path

README = Path(__file__).resolve().parents[2] / "README.md"


def test_readme_constraints_example():
    text = README.read_text(encoding="utf-8")
    section = text[text.index("<!-- section: constraints -->"):text.index("<!-- /section: constraints -->")]
    blocks = re.findall(r"```python\n(.*?)```", section, re.S)
    assert blocks, "the constraints section has no python example"
    for block in blocks:
        test = doctest.DocTestParser().get_doctest(block, {}, "README constraints", str(README), 0)
        runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE)
        runner.run(test)
        assert runner.summarize(verbose=False).failed == 0
