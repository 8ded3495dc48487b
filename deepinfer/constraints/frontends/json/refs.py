"""`$ref` resolution inside one JSON Schema document.

Owns base URIs (`$id`, draft-04 `id`), `$anchor`s and plain-name fragments,
JSON pointers (with `~0`/`~1` and percent escapes), and the well-known
meta-schemas (draft-04 ... 2020-12, from the `jsonschema-specifications`
package, offline). Everything else (network refs) is a RefError. Knows nothing
about IR or lowering.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urldefrag, urljoin

ROOT_URI = "urn:deepinfer:schema"
_VALUE_KEYWORDS = {"enum", "const", "default", "examples", "example"}


class RefError(ValueError):
    """A `$ref` that cannot be resolved within the document."""


@dataclass(frozen=True, eq=False)
class Node:
    """A sub-schema with where it lives: JSON pointer in its document and base URI."""

    schema: Any
    ptr: str
    base: str
    ref_alone: bool = False  # drafts 4-7: an `$id` next to `$ref` is ignored, as every sibling

    def child(self, *path) -> "Node":
        value = self.schema
        for key in path:
            value = value[key]
        if isinstance(value, Node):
            return value
        ptr = self.ptr + "".join("/" + _escape(str(k)) for k in path)
        return Node(value, ptr, _with_id(value, self.base, self.ref_alone), self.ref_alone)


def _escape(token: str) -> str:
    return token.replace("~", "~0").replace("/", "~1")


def _id_of(schema, ref_alone: bool = False) -> str | None:
    if isinstance(schema, dict) and not (ref_alone and "$ref" in schema):
        for key in ("$id", "id"):
            value = schema.get(key)
            if isinstance(value, str) and not value.startswith("#"):
                return value
    return None


def _with_id(schema, base: str, ref_alone: bool = False) -> str:
    ident = _id_of(schema, ref_alone)
    return urldefrag(urljoin(base, ident))[0] if ident else base


class Refs:
    """Resolves `$ref`s of one root schema (and of the meta-schemas it points to)."""

    def __init__(self, root, ref_alone: bool = False) -> None:
        """ref_alone: the document's draft ignores the siblings of `$ref` (drafts 4-7), its
        `$id` included (jsonschema's legacy id lookup skips a schema holding `$ref`)."""
        self.docs: dict[str, tuple[Any, str]] = {}  # uri -> (schema, pointer from its document root)
        self.anchors: dict[tuple[str, str], tuple[Any, str]] = {}
        self.ref_alone = ref_alone
        self.root = Node(root, "", _with_id(root, ROOT_URI, ref_alone), ref_alone)
        self.docs[ROOT_URI] = (root, "")
        self._index(root, self.root.base, "")

    def _index(self, schema, base: str, ptr: str) -> None:
        if isinstance(schema, dict):
            ident = _id_of(schema, self.ref_alone)
            if ident:
                base = urldefrag(urljoin(base, ident))[0]
                self.docs.setdefault(base, (schema, ptr))
            for key in ("$anchor", "$dynamicAnchor"):
                if isinstance(schema.get(key), str):
                    self.anchors[(base, schema[key])] = (schema, ptr)
            for key in ("$id", "id"):
                value = schema.get(key)
                if isinstance(value, str) and value.startswith("#") and len(value) > 1:
                    self.anchors[(base, value[1:])] = (schema, ptr)
            for key, value in schema.items():
                if key not in _VALUE_KEYWORDS and isinstance(value, (dict, list)):
                    self._index(value, base, f"{ptr}/{_escape(str(key))}")
        elif isinstance(schema, list):
            for i, value in enumerate(schema):
                self._index(value, base, f"{ptr}/{i}")

    def resolve(self, ref: str, base: str) -> Node:
        if not isinstance(ref, str):
            raise RefError(f"$ref must be a string, not {type(ref).__name__}")
        uri, fragment = urldefrag(urljoin(base, ref))
        uri = uri or base
        if uri not in self.docs:
            self._load_meta_schema(uri)
        if uri not in self.docs:
            raise RefError(f"$ref {ref!r} points outside the document ({uri})")
        doc, doc_ptr = self.docs[uri]
        fragment = unquote(fragment)
        if fragment and not fragment.startswith("/"):
            hit = self.anchors.get((uri, fragment))
            if hit is None:
                raise RefError(f"$ref {ref!r}: no anchor {fragment!r}")
            schema, ptr = hit
            return Node(schema, ptr, uri, self.ref_alone)
        node, ptr = doc, doc_ptr
        for token in fragment.split("/")[1:] if fragment else []:
            token = token.replace("~1", "/").replace("~0", "~")
            if isinstance(node, list) and token.isdigit() and int(token) < len(node):
                node = node[int(token)]
            elif isinstance(node, dict) and token in node:
                node = node[token]
            else:
                raise RefError(f"$ref {ref!r}: JSON pointer {fragment!r} does not resolve")
            ptr = f"{ptr}/{_escape(token)}"
            ident = _id_of(node, self.ref_alone)
            if ident:
                uri = urldefrag(urljoin(uri, ident))[0]
        return Node(node, ptr, uri, self.ref_alone)

    def _load_meta_schema(self, uri: str) -> None:
        try:
            from jsonschema_specifications import REGISTRY
        except ImportError:  # pragma: no cover
            return
        for candidate in (uri, uri + "#", uri.rstrip("#")):
            try:
                schema = REGISTRY.contents(candidate)
            except Exception:  # noqa: BLE001 - unknown URI
                continue
            self.docs[uri] = (schema, "")
            self._index(schema, uri, "")
            return
