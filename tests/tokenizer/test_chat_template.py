"""Chat templates render like transformers' apply_chat_template, inside a sandbox."""

from __future__ import annotations

import json
import shutil

import pytest

from deepinfer.tokenizer import ChatTemplate, ChatTemplateError, Tokenizer

transformers = pytest.importorskip("transformers")

CONVERSATIONS = [
    [{"role": "user", "content": "Hello!"}],
    [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Name a prime. <b>&</b> é 😀"}],
    [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "Hello."},
     {"role": "user", "content": "again"}],
    [{"role": "user", "content": "x"}, {"role": "assistant", "content": None, "tool_calls": []}],
]
TOOLS = [{"type": "function", "function": {"name": "get_weather", "description": "Weather <now>",
                                            "parameters": {"type": "object",
                                                           "properties": {"city": {"type": "string"}}}}}]


@pytest.mark.parametrize("fixture", ["tiny_dir", "smollm2_dir"])
def test_rendering_matches_transformers(fixture, request):
    directory = request.getfixturevalue(fixture)
    ours = Tokenizer.from_pretrained(directory)
    reference = transformers.AutoTokenizer.from_pretrained(str(directory))
    for messages in CONVERSATIONS:
        for add_generation_prompt in (True, False):
            try:
                expected = reference.apply_chat_template(messages, tokenize=False,
                                                         add_generation_prompt=add_generation_prompt)
            except Exception:  # the template rejects this conversation: so must we, as a user error
                with pytest.raises(ChatTemplateError):
                    ours.apply_chat_template(messages, add_generation_prompt=add_generation_prompt)
                continue
            assert ours.apply_chat_template(messages, add_generation_prompt=add_generation_prompt) == expected
    expected = reference.apply_chat_template(CONVERSATIONS[1], tools=TOOLS, tokenize=False,
                                             add_generation_prompt=True)
    assert ours.apply_chat_template(CONVERSATIONS[1], tools=TOOLS) == expected


def test_tools_reach_the_template_as_json(tiny_dir):
    text = Tokenizer.from_pretrained(tiny_dir).apply_chat_template(CONVERSATIONS[0], tools=TOOLS)
    assert json.dumps(TOOLS[0]) in text  # tojson: no HTML escaping of <now>, non-ASCII kept
    assert text.endswith("<|im_start|>assistant\n")


def test_chat_template_jinja_file_wins(tmp_path, tiny_dir):
    shutil.copytree(tiny_dir, tmp_path / "m")
    (tmp_path / "m" / "chat_template.jinja").write_text(
        "{% for m in messages %}[{{ m.role }}]{{ m.content }}{% endfor %}{{ eos_token }}")
    tok = Tokenizer.from_pretrained(tmp_path / "m")
    assert tok.apply_chat_template([{"role": "user", "content": "a"}]) == "[user]a<|im_end|>"


def _render(source, **kwargs):
    return ChatTemplate(source, {"bos_token": "<s>"}).render([{"role": "user", "content": "hi"}], **kwargs)


def test_sandbox_blocks_python_internals():
    with pytest.raises(ChatTemplateError):
        _render("{{ messages.__class__.__mro__[1].__subclasses__() }}")
    with pytest.raises(ChatTemplateError):
        _render("{% set x = messages.append(1) %}")  # immutable sandbox: no mutation of inputs


def test_raise_exception_becomes_a_user_error_with_its_message():
    with pytest.raises(ChatTemplateError, match="roles must alternate"):
        _render("{{ raise_exception('roles must alternate') }}")


def test_helpers_available_to_templates():
    assert _render("{{ bos_token }}{{ messages[0].content | tojson }}") == '<s>"hi"'
    assert _render("{{ {'a': '<é>'} | tojson(indent=1) }}") == '{\n "a": "<é>"\n}'
    year = _render("{{ strftime_now('%Y') }}")
    assert year.isdigit() and len(year) == 4
    assert _render("{{ extra }}", extra="passed through") == "passed through"
    assert _render("{% for m in messages %}{% if loop.first %}{% break %}{% endif %}{% endfor %}ok") == "ok"


def test_syntax_error_reports_the_line():
    with pytest.raises(ChatTemplateError, match="line 2"):
        _render("ok\n{% if %}")


def test_model_without_template(tmp_path, tiny_dir):
    shutil.copytree(tiny_dir, tmp_path / "m")
    config = json.loads((tmp_path / "m" / "tokenizer_config.json").read_text())
    del config["chat_template"]
    (tmp_path / "m" / "tokenizer_config.json").write_text(json.dumps(config))
    with pytest.raises(ChatTemplateError, match="has no chat template"):
        Tokenizer.from_pretrained(tmp_path / "m").apply_chat_template([{"role": "user", "content": "x"}])
