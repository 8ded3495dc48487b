"""Tokenizers, chat templates and incremental detokenization.

Wraps the `tokenizers` library (tokenizer.json): special tokens, end-of-sequence
ids, sandboxed jinja2 chat templates, and streaming decode that never splits a
UTF-8 character. Knows nothing about models or the engine.
"""

from deepinfer.tokenizer.chat import ChatTemplate, ChatTemplateError
from deepinfer.tokenizer.detokenizer import IncrementalDetokenizer
from deepinfer.tokenizer.tokenizer import Tokenizer

__all__ = ["ChatTemplate", "ChatTemplateError", "IncrementalDetokenizer", "Tokenizer"]
