"""Generate ``mcp_ref/types.py`` from the official MCP JSON Schemas of every revision.

Usage::

    python spec_map/gen_types.py            # rewrite mcp_ref/types.py
    python spec_map/gen_types.py --check    # exit 1 if the committed file is stale
    python spec_map/gen_types.py --stdout   # print instead of writing

The schemas are read from ``tests/vendor/schema/<revision>/schema.json`` (the copies the
tests read; ``--schema-dir DIR`` reads ``DIR/<revision>/schema.json`` instead), for the
five revisions of :data:`REVISIONS`, 2024-11-05 to 2026-07-28.  The output is passed
through ``ruff format`` (found next to the running interpreter or on ``PATH``).  This is
a development tool: nothing in ``mcp_ref`` imports it, and the spec is not needed at run
time.

Theory of operation
-------------------
Each revision's schema is read on its own first.  Every ``$defs`` (before 2025-11-25:
``definitions``) entry becomes one Python name, spelled exactly as the definition:

* an object (``"type": "object"`` with ``properties``, or an ``allOf`` of objects, whose
  properties are merged) becomes a frozen, slotted, keyword-only attrs class;
* an ``anyOf``/``oneOf`` becomes a ``TypeAlias`` of the union of its members;
* a string ``enum`` becomes a ``Literal[...]`` alias; a primitive or a bare ``$ref``
  becomes a plain alias (``RequestId = str | int``, ``EmptyResult = Result``);
* the recursive JSON values of 2026-07-28 (``JSONValue``, ``JSONObject``, ``JSONArray``)
  become ``Any``, ``dict[str, Any]`` and ``list[Any]`` (:data:`JSON_VALUES`).

Properties map to fields (``protocolVersion`` -> ``protocol_version``): ``string`` ->
``str``, ``integer`` -> ``int``, ``number`` -> ``float``, ``boolean`` -> ``bool``,
``array`` -> ``list[...]``, ``{}`` -> ``Any``, ``const`` -> ``Literal[value]`` with that
default, ``enum`` -> ``Literal[...]``.  ``_meta`` is always ``meta: dict[str, Any] | None``.
An inline object with named properties becomes its own class ``<Parent><Field>``; an
object without named properties (a map) becomes ``dict[str, V]``, and so do the two
free-form JSON Schemas listed in ``FREE_FORM``.  Required properties are required
fields; optional ones default to ``None``.  Every class ends with ``extra``, the JSON
keys it does not know.  A wire name that the converter's rule (snake_case -> camelCase,
``meta`` -> ``_meta``) cannot rebuild is stored in the field's attrs metadata
(``{"wire": "$schema"}``); a reserved ``_meta`` key is named after its last segment
(``io.modelcontextprotocol/protocolVersion`` -> ``protocol_version``).

Then the revisions are merged into one model (:func:`merge`), by these rules:

1. **One name, one item.**  A name several revisions define is generated once.  An
   older revision's inline object named ``<Parent><Field>`` is the same class as another
   revision's ``$defs`` entry of that name (2024-11-05's inline ``CallToolRequest.params``
   is ``CallToolRequestParams``).
2. **Whose shape.**  The item takes the shape of the first revision of
   :data:`BASE_ORDER` that defines the name: the newest handshake-era revision
   (2025-11-25, then older ones), and 2026-07-28 only for what it alone defines.  So the
   types, and which fields are required, are exactly those mcp-ref read before
   2026-07-28 existed, and today's code and converter are unchanged.
3. **Fields.**  A class has the union of its revisions' properties; a property the base
   revision lacks is added as an optional field (``Result.result_type``).  Where two
   revisions type one property differently, the base revision's type is kept and the
   field's docstring names the other.  A field is required (no default) only if every
   revision of its class requires it; otherwise it is optional and its metadata's
   ``required_in`` lists the revisions that do (``CreateMessageRequest.id``: the
   handshake revisions, not 2026-07-28, whose input requests have no id; the
   converter's view of the handshake era still requires it).
4. **Incompatible kinds.**  Where one revision defines a name as an object and another
   as a union or alias (``EnumSchema`` in 2025-06-18 and 2025-11-25;
   ``ClientNotification`` in 2026-07-28), the base revision's kind wins; the other
   revision is not credited with the name and the docstring says so.
5. **Unions** keep the base revision's members and gain the classes a *later* revision
   adds (``ClientRequest`` gains ``DiscoverRequest``); members only older revisions had
   (batches, ``JSONRPCError``) are not added, as the base revision replaced them.
6. **Envelope (older schemas).**  Before 2025-11-25 (:data:`ENVELOPED`) a request or
   notification definition lists only ``method`` and ``params``, the base
   ``JSONRPCRequest``/``Request`` definitions giving every message ``jsonrpc``, ``id``
   and ``params._meta``.  Those fields are counted as allowed in those revisions.
7. **Reachable only.**  An item is written if a ``$defs`` name of some revision reaches
   it: an older revision's inline class that the base shape no longer uses is dropped
   (2024-11-05's ``TextContentAnnotations``, ``ListToolsRequestParams``).  Where the
   field it typed now has one class with all its properties (``Annotations``,
   ``PaginatedRequestParams``), that class and those fields are credited to the older
   revision instead (:func:`_adopt`); otherwise the field's docstring names the dropped
   type.

What each piece's revisions are is written beside it: every field's attrs metadata has
``"revisions"`` (a tuple constant such as ``SINCE_2025_06_18``, named by
:func:`span_name`) and, when rule 3 applies, ``"required_in"``; ``DEFINED_IN`` maps every
name to its revisions, and each docstring says them in words, with a note wherever a
revision's shape disagrees.  ``mcp_ref/_revisions.py`` reads these records;
``tests/test_types_revisions.py`` checks them against every vendored schema.

Classes are written in dependency order (each name defined before it is used), so the
annotations of :mod:`mcp_ref.types` are real objects and nothing is resolved at run time.
"""

from __future__ import annotations

import argparse
import json
import keyword
import re
import shutil
import subprocess
import sys
import textwrap
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REVISIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28")
"""Every revision whose schema is read, oldest first."""
NEWEST_HANDSHAKE = "2025-11-25"
BASE_ORDER = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05", "2026-07-28")
"""Whose shape a name takes when revisions disagree: the first that defines it."""
ENVELOPED = "2025-11-25"
"""The first revision whose request and notification definitions include ``jsonrpc``
and ``id`` (older ones leave them to ``JSONRPCRequest`` / ``JSONRPCNotification``)."""
REPO = Path(__file__).resolve().parent.parent
OUTPUT = REPO / "mcp_ref" / "types.py"
SCHEMA_DIR = REPO / "tests" / "vendor" / "schema"

# JSON values (2026-07-28): recursive aliases, kept as plain JSON (not looked into).
JSON_VALUES = {
    "JSONValue": ("Any", "Any JSON value (not checked by the converter)."),
    "JSONObject": ("dict[str, Any]", "A JSON object (its values are not checked)."),
    "JSONArray": ("list[Any]", "A JSON array (its items are not checked)."),
}

# Objects that are JSON Schemas written by tool authors: kept as plain dicts, not classes.
FREE_FORM = {("Tool", "inputSchema"), ("Tool", "outputSchema")}

WIDTH = 92  # docstring text width (the line limit is 100; leave room for indentation)

# Docstrings for properties the schema leaves undescribed, by property name.
FALLBACK_DOCS = {
    "id": "The JSON-RPC request id (a string or an integer, kept exactly as sent).",
    "params": "The parameters of this message.",
    "default": "The default value offered to the user.",
    "title": "A human-readable title shown for this field.",
    "description": "A human-readable description of this field.",
    "maximum": "The largest value allowed.",
    "minimum": "The smallest value allowed.",
    "maxLength": "The longest string allowed, in characters.",
    "minLength": "The shortest string allowed, in characters.",
    "format": "The string format expected (a JSON Schema ``format``).",
    "enum": "The allowed values.",
    "messages": "The messages, in conversation order.",
    "stopSequences": "Sequences that stop generation when the model produces them.",
    "temperature": "The sampling temperature the server asks for.",
    "content": "The content of this message.",
    "role": "Who the message is from.",
    "version": "The version of the implementation (free-form string).",
    "capabilities": "The capabilities this side declares.",
    "clientInfo": "Name and version of the client implementation.",
    "serverInfo": "Name and version of the server implementation.",
    "error": "The error object.",
    "result": "The result object.",
    "method": "The method name.",
    "task": "The task.",
    "ref": "What is being completed: a prompt or a resource template.",
    "resource": "The contents of the embedded resource.",
    "completion": "The completion values.",
    "contents": "The contents of the resource (text or binary).",
    "$schema": "The JSON Schema dialect this schema is written in (a URI).",
    "data": "Extra information about the error.",
    "elicitations": "The URL-mode elicitations to complete before retrying the request.",
    "form": "Present if the client supports form-mode elicitation.",
    "url": "Present if the client supports URL-mode elicitation.",
    "prompts": "The prompts on this page of the list.",
    "resources": "The resources on this page of the list.",
    "resourceTemplates": "The resource templates on this page of the list.",
    "roots": "The roots the client exposes.",
    "tasks": "The tasks on this page of the list.",
    "tools": "The tools on this page of the list.",
    "properties": "The fields of the form, by name: each a primitive JSON Schema.",
    "required": "The names of the fields the user must fill in.",
    "type": 'The kind of number asked for: ``"integer"`` or ``"number"``.',
    "annotations": "Optional annotations for the client.",
    "requestState": (
        "Opaque state that the server returns with an ``input_required`` result and the "
        "client sends back unchanged when it retries the request."
    ),
}


def find_schemas(schema_dir: Path | None = None) -> dict[str, Path]:
    """The schema.json of every revision in :data:`REVISIONS`: under ``schema_dir``
    (``<dir>/<revision>/schema.json``), else the copies vendored in ``tests/vendor/schema``
    (the ones the tests read)."""
    base = schema_dir or SCHEMA_DIR
    return {rev: base / rev / "schema.json" for rev in REVISIONS}


# --- naming ----------------------------------------------------------------------------


def snake(name: str) -> str:
    """``protocolVersion`` -> ``protocol_version``; ``_meta`` -> ``meta``; ``$schema`` -> ``schema``."""
    name = name.lstrip("_$")
    name = re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", name)
    name = re.sub(r"(?<=[A-Z])([A-Z][a-z])", r"_\1", name)
    return name.lower()


def camel(name: str) -> str:
    """The converter's rule (mirrored in mcp_ref/_convert.py): ``meta`` -> ``_meta``,
    ``protocol_version`` -> ``protocolVersion``."""
    if name == "meta":
        return "_meta"
    first, *rest = name.split("_")
    return first + "".join(p[:1].upper() + p[1:] for p in rest)


def pascal(name: str) -> str:
    """``inputSchema`` -> ``InputSchema``; ``_meta`` -> ``Meta``."""
    name = name.lstrip("_$")
    return name[:1].upper() + name[1:]


# --- model -----------------------------------------------------------------------------


@dataclass
class Field:
    name: str
    wire: str
    annotation: str
    required: bool
    const: Any = None
    has_const: bool = False
    doc: str = ""
    revisions: tuple[str, ...] = ()
    """The revisions whose schema has this property (filled in by :func:`merge`)."""
    required_in: tuple[str, ...] | None = None
    """The revisions that require it, when that differs from what the field says."""
    conflicts: dict[str, list[str]] = field(default_factory=dict)
    origin: str = ""
    """The revision whose type the field has (set by :func:`merge`)."""
    required_revs: list[str] = field(default_factory=list)
    """The revisions that require it (set by :func:`merge`)."""
    """Other revisions' annotations of this property, when they differ: {annotation:
    [revision, ...]} (written into the docstring by :func:`merge`)."""


@dataclass
class ClassDef:
    name: str
    doc: str
    fields: list[Field]
    deps: set[str]
    revisions: tuple[str, ...] = ()
    notes: list[str] = field(default_factory=list)


@dataclass
class AliasDef:
    name: str
    value: str
    doc: str
    deps: set[str]
    revisions: tuple[str, ...] = ()


@dataclass
class Generator:
    defs: dict[str, Any]
    revision: str = NEWEST_HANDSHAKE
    items: dict[str, ClassDef | AliasDef] = field(default_factory=dict)
    union_aliases: dict[frozenset[str], str] = field(default_factory=dict)

    # -- schema helpers --

    def resolve(self, schema: dict[str, Any]) -> dict[str, Any]:
        """Follow ``$ref`` (and merge ``allOf``) down to an object schema."""
        if "$ref" in schema:
            return self.resolve(self.defs[schema["$ref"].rsplit("/", 1)[1]])
        if "allOf" in schema:
            merged: dict[str, Any] = {"type": "object", "properties": {}, "required": []}
            for part in schema["allOf"]:
                sub = self.resolve(part)
                merged["properties"].update(sub.get("properties", {}))
                for r in sub.get("required", []):
                    if r not in merged["required"]:
                        merged["required"].append(r)
            if "description" in schema:
                merged["description"] = schema["description"]
            return merged
        return schema

    @staticmethod
    def ref_name(schema: dict[str, Any]) -> str:
        return str(schema["$ref"].rsplit("/", 1)[1])

    def is_object_class(self, schema: dict[str, Any]) -> bool:
        if "allOf" in schema:
            return True
        return schema.get("type") == "object" and (
            bool(schema.get("properties")) or schema.get("additionalProperties") == {}
        )

    # -- types --

    def annotation(self, schema: dict[str, Any], owner: str, prop: str, deps: set[str]) -> str:
        """The Python annotation of ``schema`` (a property ``prop`` of class ``owner``)."""
        if "$ref" in schema:
            name = self.ref_name(schema)
            deps.add(name)
            return name
        if "const" in schema:
            return f"Literal[{py_literal(schema['const'])}]"
        if "enum" in schema:
            return "Literal[" + ", ".join(py_literal(v) for v in schema["enum"]) + "]"
        for key in ("anyOf", "oneOf"):
            if key in schema:
                members = schema[key]
                refs = frozenset(self.ref_name(m) for m in members if "$ref" in m)
                named = self.union_aliases.get(refs)
                rest = [m for m in members if "$ref" not in m]
                parts: list[str] = []
                if named is not None and len(refs) > 1:
                    deps.add(named)
                    parts.append(named)
                else:
                    parts.extend(
                        self.annotation(m, owner, prop, deps) for m in members if "$ref" in m
                    )
                parts.extend(self.annotation(m, owner, prop, deps) for m in rest)
                return " | ".join(parts)
        if "allOf" in schema:
            return self.inline_class(schema, owner, prop, deps)
        typ = schema.get("type")
        if isinstance(typ, list):
            return " | ".join(self.annotation({"type": t}, owner, prop, deps) for t in typ)
        if typ == "string":
            return "str"
        if typ == "integer":
            return "int"
        if typ == "number":
            return "float"
        if typ == "boolean":
            return "bool"
        if typ == "null":
            return "None"
        if typ == "array":
            items = schema.get("items")
            inner = self.annotation(items, owner, prop, deps) if items else "Any"
            return f"list[{inner}]"
        if typ == "object":
            if schema.get("properties") and (owner, prop) not in FREE_FORM:
                return self.inline_class(schema, owner, prop, deps)
            extra = schema.get("additionalProperties")
            if (
                isinstance(extra, dict)
                and extra
                and (extra.get("type") or extra.get("$ref") or extra.get("anyOf"))
            ):
                return f"dict[str, {self.annotation(extra, owner, prop, deps)}]"
            return "dict[str, Any]"
        if not schema or set(schema) <= {"description"}:
            return "Any"
        raise ValueError(f"{owner}.{prop}: cannot type {schema!r}")

    def inline_class(self, schema: dict[str, Any], owner: str, prop: str, deps: set[str]) -> str:
        name = owner + pascal(prop)
        if name in self.defs:
            raise ValueError(f"inline class {name} collides with a $defs entry")
        if name in self.items:
            raise ValueError(f"inline class {name} defined twice")
        obj = self.resolve(schema)
        what = f"The inline ``{prop}`` object of :class:`{owner}`."
        desc = schema.get("description") or obj.get("description") or ""
        doc = what + ("\n\n" + desc if desc else "")
        self.add_class(name, obj, doc, source=f"``$defs/{self.root}``, property ``{prop}``")
        deps.add(name)
        return name

    # -- definitions --

    root: str = ""

    def add_class(self, name: str, obj: dict[str, Any], doc: str, source: str) -> None:
        deps: set[str] = set()
        required = set(obj.get("required", []))
        fields: list[Field] = []
        for wire, prop in obj.get("properties", {}).items():
            # A reserved ``_meta`` key (``io.modelcontextprotocol/protocolVersion``) is
            # named after its last segment; its wire name goes in the metadata.
            pyname = snake(wire.rsplit("/", 1)[-1])
            if (
                keyword.iskeyword(pyname)
                or pyname == "extra"
                or (pyname == "meta" and wire != "_meta")
            ):
                raise ValueError(f"{name}.{wire}: unusable field name {pyname!r}")
            if wire == "_meta":
                ann = "dict[str, Any]"
            else:
                ann = self.annotation(prop, name, wire, deps)
            f = Field(pyname, wire, ann, wire in required, doc=self.field_doc(prop, wire, name))
            if "const" in prop:
                f.has_const = True
                f.const = prop["const"]
            fields.append(f)
        names = [f.name for f in fields]
        if len(set(names)) != len(names):
            raise ValueError(f"{name}: two properties map to one field name")
        self.items[name] = ClassDef(
            name, doc + f"\n\nSource: schema {self.revision}, {source}.", fields, deps
        )

    def field_doc(self, prop: dict[str, Any], wire: str, owner: str) -> str:
        doc = prop.get("description", "")
        if not doc:
            if "const" in prop:
                doc = f"Always ``{json.dumps(prop['const'])}``."
                if wire == "jsonrpc":
                    doc = 'The JSON-RPC version: always ``"2.0"``.'
                elif wire == "method":
                    doc = f"The method name: always ``{json.dumps(prop['const'])}``."
                elif wire == "code":
                    doc = f"The error code: always ``{json.dumps(prop['const'])}``."
                elif wire == "type":
                    doc = f"The kind of object: always ``{json.dumps(prop['const'])}``."
            elif "$ref" in prop and wire not in FALLBACK_DOCS:
                target = self.defs[self.ref_name(prop)]
                doc = (
                    first_paragraph(target.get("description", ""))
                    or f"A ``{self.ref_name(prop)}``."
                )
            else:
                doc = FALLBACK_DOCS.get(wire, f"The ``{wire}`` property.")
        if wire == "_meta":
            doc += "\n\nKept as a plain dict; written as ``_meta`` on the wire."
        limits = []
        for key in ("minimum", "maximum"):
            if key in prop:
                limits.append(f"{key} {prop[key]}")
        if limits:
            doc += f" ({', '.join(limits)}; not enforced by the converter.)"
        return doc

    def add_definition(self, name: str, schema: dict[str, Any]) -> None:
        self.root = name
        desc = schema.get("description", "")
        if name in JSON_VALUES:
            value, what = JSON_VALUES[name]
            self.items[name] = AliasDef(
                name, value, f"{what}\n\nSource: schema {self.revision}, ``$defs/{name}``.", set()
            )
        elif "anyOf" in schema or "oneOf" in schema:
            members = schema.get("anyOf") or schema.get("oneOf")
            deps: set[str] = set()
            value = " | ".join(self.annotation(m, name, "", deps) for m in members)
            doc = (
                desc
                or "One of: " + ", ".join(f":class:`{self.ref_name(m)}`" for m in members) + "."
            )
            self.items[name] = AliasDef(
                name, value, doc + f"\n\nSource: schema {self.revision}, ``$defs/{name}``.", deps
            )
        elif "$ref" in schema:
            target = self.ref_name(schema)
            doc = desc or f"The same shape as :class:`{target}`."
            self.items[name] = AliasDef(
                name,
                target,
                doc + f"\n\nSource: schema {self.revision}, ``$defs/{name}``.",
                {target},
            )
        elif self.is_object_class(schema):
            obj = self.resolve(schema)
            if not desc:
                desc = (
                    f"The ``{name}`` object of the MCP schema (the schema gives it no description)."
                )
            self.add_class(name, obj, desc, source=f"``$defs/{name}``")
        else:
            deps = set()
            value = self.annotation(schema, name, "", deps)
            self.items[name] = AliasDef(
                name,
                value,
                (desc or name) + f"\n\nSource: schema {self.revision}, ``$defs/{name}``.",
                deps,
            )

    def build(self) -> None:
        for name, schema in self.defs.items():
            for key in ("anyOf", "oneOf"):
                if key in schema and all("$ref" in m for m in schema[key]):
                    self.union_aliases.setdefault(
                        frozenset(self.ref_name(m) for m in schema[key]), name
                    )
        for name, schema in self.defs.items():
            self.add_definition(name, schema)


# --- every revision in one model ---------------------------------------------------------

_IDENT = re.compile(r"[A-Za-z_]\w*")


def span_name(revisions: tuple[str, ...]) -> str:
    """The name of the constant in mcp_ref/types.py that holds ``revisions``:
    ``ALL_REVISIONS``, ``SINCE_2025_06_18``, ``UNTIL_2025_11_25``, ``ONLY_2026_07_28``,
    ``FROM_2025_03_26_TO_2025_06_18``, or ``IN_<a>_AND_<b>...`` for a set with gaps."""
    idx = [REVISIONS.index(r) for r in revisions]
    tag = [r.replace("-", "_") for r in revisions]
    if idx != list(range(idx[0], idx[-1] + 1)):
        return "IN_" + "_AND_".join(tag)
    if len(idx) == len(REVISIONS):
        return "ALL_REVISIONS"
    if len(idx) == 1:
        return f"ONLY_{tag[0]}"
    if idx[-1] == len(REVISIONS) - 1:
        return f"SINCE_{tag[0]}"
    if idx[0] == 0:
        return f"UNTIL_{tag[-1]}"
    return f"FROM_{tag[0]}_TO_{tag[-1]}"


def span_text(revisions: tuple[str, ...]) -> str:
    """``revisions`` in words, for docstrings."""
    name = span_name(revisions)
    if name == "ALL_REVISIONS":
        return f"every revision ({REVISIONS[0]} to {REVISIONS[-1]})"
    if name.startswith(("SINCE_", "UNTIL_", "FROM_")) and len(revisions) > 1:
        return f"{revisions[0]} to {revisions[-1]}"
    return ", ".join(revisions)


def _is_bare_union(value: str) -> bool:
    return all(_IDENT.fullmatch(part) for part in value.split(" | "))


def merge(
    per_revision: dict[str, dict[str, ClassDef | AliasDef]], roots: set[str]
) -> dict[str, ClassDef | AliasDef]:
    """One item per name over every revision (the rules are the module docstring's):
    the shape of the first revision of :data:`BASE_ORDER` that defines the name, the
    fields other revisions add (optional), every field's revisions, and only the items
    reachable from a ``$defs`` name of some revision (``roots``)."""
    names = sorted(set().union(*per_revision.values()))
    merged: dict[str, ClassDef | AliasDef] = {}
    # Before ENVELOPED, a request's or notification's params list no ``_meta``: the
    # base Request/Notification definitions give it to every message's params.
    meta_params = {
        r: {
            f.annotation.removesuffix(" | None")
            for item in per_revision[r].values()
            if isinstance(item, ClassDef) and any(g.wire == "method" for g in item.fields)
            for f in item.fields
            if f.wire == "params"
        }
        for r in REVISIONS[: REVISIONS.index(ENVELOPED)]
    }
    for name in names:
        present = [r for r in REVISIONS if name in per_revision[r]]
        base_rev = next(r for r in BASE_ORDER if r in present)
        base = per_revision[base_rev][name]
        same = [r for r in present if type(per_revision[r][name]) is type(base)]
        other = [r for r in present if r not in same]
        notes = [
            f"Revision {r} defines ``{name}`` with another kind of shape (an object where "
            "this is a union or alias, or the reverse); that shape is not generated."
            for r in other
        ]
        if isinstance(base, AliasDef):
            item: ClassDef | AliasDef = _merge_alias(
                name, base, base_rev, per_revision, same, notes
            )
        else:
            enveloped = {r for r, params in meta_params.items() if name in params}
            item = _merge_class(name, base, base_rev, per_revision, same, notes, enveloped)
        item.revisions = tuple(same)
        merged[name] = item
    # Dependencies from the annotations themselves (fields and members other revisions
    # added bring theirs), then only what a $defs name reaches.
    for item in merged.values():
        text = (
            item.value
            if isinstance(item, AliasDef)
            else " ".join(f.annotation for f in item.fields)
        )
        item.deps = {n for n in _IDENT.findall(text) if n in merged and n != item.name}
    keep: set[str] = set()
    todo = [n for n in roots if n in merged]
    while todo:
        n = todo.pop()
        if n not in keep:
            keep.add(n)
            todo.extend(merged[n].deps)
    kept = {n: merged[n] for n in sorted(keep)}
    _adopt(kept, per_revision, meta_params)
    for item in kept.values():
        if isinstance(item, ClassDef):
            _finish(item, kept)
    return kept


def _adopt(
    kept: dict[str, ClassDef | AliasDef],
    per_revision: dict[str, dict[str, ClassDef | AliasDef]],
    meta_params: dict[str, set[str]],
) -> None:
    """Rule 7's exception: where an older revision typed a field with an inline object
    that is not generated (2024-11-05's ``ListToolsRequest.params``), and the field's
    generated type is one class with every property of that object
    (``PaginatedRequestParams``), that class and those fields are credited to the
    older revision too (with ``_meta`` for a message's params, rule 6)."""
    for item in kept.values():
        if not isinstance(item, ClassDef):
            continue
        for f in item.fields:
            target = kept.get(f.annotation.removesuffix(" | None"))
            if not isinstance(target, ClassDef):
                continue
            for ann, revs in list(f.conflicts.items()):
                for r in list(revs):
                    inline = per_revision[r].get(ann)
                    if ann in kept or not isinstance(inline, ClassDef):
                        continue
                    own = {g.wire: g for g in inline.fields}
                    if not set(own) <= {g.wire for g in target.fields}:
                        continue
                    with_meta = ann in meta_params.get(r, ())
                    for g in target.fields:
                        if g.wire in own or (g.wire == "_meta" and with_meta):
                            g.revisions = _sorted_revisions({*g.revisions, r})
                            if g.wire in own and own[g.wire].required:
                                g.required_revs.append(r)
                    target.revisions = _sorted_revisions({*target.revisions, r})
                    revs.remove(r)
                if not revs:
                    del f.conflicts[ann]


def _sorted_revisions(revisions: set[str]) -> tuple[str, ...]:
    return tuple(r for r in REVISIONS if r in revisions)


def _finish(item: ClassDef, kept: dict[str, ClassDef | AliasDef]) -> None:
    """Each field's ``required_in`` and the notes of rules 3 and 4, into the docstrings,
    once the revisions are final."""
    for f in item.fields:
        required = set(f.required_revs)
        # Rule 3: a field is a required one only where every revision of the class
        # requires it (CreateMessageRequest.id is not: a 2026-07-28 input request has none).
        f.required = f.required and required >= set(item.revisions)
        if required != (set(f.revisions) if f.required else set()):
            f.required_in = _sorted_revisions(required)
        for ann, revs in f.conflicts.items():
            gone = [x for x in _IDENT.findall(ann) if x not in kept and x[:1].isupper()]
            gone = [x for x in gone if x not in ("Any", "Literal", "None")]
            what = " (an inline object there, not generated here)" if gone else ""
            f.doc += (
                f"\n\n{'Revisions' if len(revs) > 1 else 'Revision'} {', '.join(revs)} "
                f"{'type' if len(revs) > 1 else 'types'} it ``{ann}``{what}; this field "
                f"keeps the type of revision {f.origin}."
            )
    item.doc += f"\n\nRevisions: {span_text(item.revisions)}."
    if item.notes:
        item.doc += "\n\n" + "\n".join(f"- {n}" for n in item.notes)


def _plain(annotation: str) -> str:
    """An annotation with the JSON value aliases spelled out, to compare two."""
    for name, (value, _) in JSON_VALUES.items():
        annotation = re.sub(rf"\b{name}\b", value, annotation)
    return annotation


def _merge_alias(
    name: str,
    base: AliasDef,
    base_rev: str,
    per_revision: dict[str, dict[str, ClassDef | AliasDef]],
    same: list[str],
    notes: list[str],
) -> AliasDef:
    value = base.value
    later = REVISIONS[REVISIONS.index(base_rev) + 1 :]
    if _is_bare_union(value):
        members = value.split(" | ")
        for r in later:
            alias = per_revision[r].get(name)
            if r in same and isinstance(alias, AliasDef) and _is_bare_union(alias.value):
                for member in alias.value.split(" | "):
                    if member not in members and isinstance(per_revision[r][member], ClassDef):
                        members.append(member)
                        notes.append(f"``{member}`` is a member in revision {r}.")
        value = " | ".join(members)
    for r in same:
        alias = per_revision[r][name]
        assert isinstance(alias, AliasDef)
        if alias.value != base.value and not (
            _is_bare_union(alias.value) and _is_bare_union(value)
        ):
            notes.append(f"Revision {r} defines it as ``{alias.value}``; not generated.")
    doc = base.doc + f"\n\nRevisions: {span_text(tuple(same))}."
    if notes:
        doc += "\n\n" + "\n".join(f"- {n}" for n in notes)
    return AliasDef(name, value, doc, set())


def _merge_class(
    name: str,
    base: ClassDef,
    base_rev: str,
    per_revision: dict[str, dict[str, ClassDef | AliasDef]],
    same: list[str],
    notes: list[str],
    meta_in: set[str],
) -> ClassDef:
    by_rev = {r: per_revision[r][name] for r in same}
    wires = {r: {f.wire: f for f in c.fields} for r, c in by_rev.items() if isinstance(c, ClassDef)}
    fields = [Field(**{**vars(f), "conflicts": {}, "required_revs": []}) for f in base.fields]
    by_wire = {f.wire: f for f in fields}
    for f in fields:
        f.origin = base_rev
    for r in BASE_ORDER:
        for f in (wires.get(r) or {}).values():
            if f.wire not in by_wire:
                added = Field(**{**vars(f), "conflicts": {}, "required_revs": []})
                added.required = False
                fields.append(added)
                by_wire[f.wire] = added
                added.origin = r
    has_method = {r for r, w in wires.items() if "method" in w}
    for f in fields:
        allowed: list[str] = []
        required: list[str] = []
        for r in same:
            own = wires[r].get(f.wire)
            if own is None and f.wire in ("jsonrpc", "id") and r in has_method:
                if REVISIONS.index(r) < REVISIONS.index(ENVELOPED):
                    own = f  # the envelope of an older revision's request/notification
            if own is None and f.wire == "_meta" and r in meta_in:
                own = f  # an older revision's params: _meta comes from Request/Notification
            if own is None:
                continue
            allowed.append(r)
            if own.required:
                required.append(r)
            if _plain(own.annotation) != _plain(f.annotation) and f.wire != "_meta":
                f.conflicts.setdefault(own.annotation, []).append(r)
        f.revisions = tuple(allowed)
        f.required_revs = required
    return ClassDef(name, base.doc, fields, set(), notes=notes)


def ordered(items: dict[str, ClassDef | AliasDef]) -> list[ClassDef | AliasDef]:
    """All items in dependency order, ties broken by name."""
    done: set[str] = set()
    out: list[ClassDef | AliasDef] = []
    visiting: set[str] = set()

    def visit(name: str) -> None:
        if name in done:
            return
        if name in visiting:
            raise ValueError(f"dependency cycle through {name}")
        visiting.add(name)
        for dep in sorted(items[name].deps):
            visit(dep)
        visiting.discard(name)
        done.add(name)
        out.append(items[name])

    for name in sorted(items):
        visit(name)
    return out


# --- rendering -------------------------------------------------------------------------


def py_literal(value: Any) -> str:
    if isinstance(value, str):
        return json.dumps(value)
    return repr(value)


def first_paragraph(text: str) -> str:
    return text.strip().split("\n\n", 1)[0].replace("\n", " ")


def wrap(text: str, indent: str) -> list[str]:
    """Wrap ``text`` (Markdown-ish, paragraphs and lists kept) to WIDTH columns."""
    text = text.replace("\\", "\\\\").replace('"""', '\\"\\"\\"').strip()
    out: list[str] = []
    for line in text.split("\n"):
        if not line.strip():
            out.append("")
            continue
        lead = re.match(r"\s*(?:[-*] |\d+\. )?", line)
        hang = " " * (len(lead.group(0)) if lead else 0)
        out.extend(
            textwrap.wrap(
                line,
                WIDTH - len(indent),
                subsequent_indent=hang,
                break_long_words=False,
                break_on_hyphens=False,
            )
            or [""]
        )
    return out


def docstring(text: str, indent: str) -> str:
    lines = wrap(text, indent)
    if len(lines) == 1 and len(lines[0]) + len(indent) + 6 <= 100:
        return f'{indent}"""{lines[0]}"""\n'
    body = "\n".join((indent + ln) if ln else "" for ln in lines)
    return f'{indent}"""{body[len(indent) :]}\n{indent}"""\n'


def render_field(f: Field) -> str:
    meta = [f'"revisions": {span_name(f.revisions)}']
    if f.required_in is not None:
        meta.append(f'"required_in": {span_name(f.required_in) if f.required_in else "()"}')
    if camel(f.name) != f.wire:
        meta.append(f'"wire": {json.dumps(f.wire)}')
    metadata = "metadata={" + ", ".join(meta) + "}"
    if f.has_const and f.required:
        default: str | None = py_literal(f.const)
        ann = f.annotation
    elif f.required:
        default = None
        ann = f.annotation
    else:
        default = "None"
        ann = f.annotation if f.annotation.endswith("| None") else f"{f.annotation} | None"
    value = (
        "attrs.field(" + (f"default={default}, " if default is not None else "") + metadata + ")"
    )
    return f"    {f.name}: {ann} = {value}\n" + docstring(f.doc, "    ")


EXTRA_FIELD = (
    "    extra: dict[str, Any] = attrs.field(factory=dict)\n"
    '    """JSON keys this class does not know, with their values: kept on receive and\n'
    '    written back, at the top level of this object, on send."""\n'
)


def render_class(c: ClassDef) -> str:
    def order(f: Field) -> int:
        if f.wire == "_meta":
            return 3
        if f.has_const and f.required:
            return 0
        return 1 if f.required else 2

    fields = sorted(c.fields, key=order)
    seen: set[str] = set()
    for f in fields:
        used = set(re.findall(r"[A-Za-z_]\w*", f.annotation))
        if used & seen:
            raise ValueError(f"{c.name}.{f.name}: annotation uses a name shadowed by a field")
        seen.add(f.name)
    out = "\n\n@attrs.frozen(kw_only=True)\n" + f"class {c.name}:\n" + docstring(c.doc, "    ")
    for f in fields:
        out += "\n" + render_field(f)
    out += "\n" + EXTRA_FIELD
    return out


def render_alias(a: AliasDef) -> str:
    return f"\n\n{a.name}: TypeAlias = {a.value}\n" + docstring(a.doc, "")


HEADER = '''\
# GENERATED FILE: do not edit by hand.
# Generated by spec_map/gen_types.py from the official MCP schemas, revisions
# {first} to {last} (the copies in tests/vendor/schema).
# Regenerate with:  python spec_map/gen_types.py   (check with --check)
"""The typed messages of MCP: one name for every definition of every revision's schema.

Theory of operation
-------------------
Each object definition of the official JSON Schemas is a frozen, slotted, keyword-only
attrs class named exactly as the definition, with a docstring under every field taken
from the schema.  Field names are the snake_case of the JSON property names
(``protocolVersion`` -> ``protocol_version``, ``_meta`` -> ``meta``).  Required
properties are required fields; optional ones default to ``None`` (and are left out of
the JSON when ``None``).  Constant properties (``type: "text"``, ``method:
"tools/call"``) are ``Literal`` fields whose default is that constant, so
``TextContent(text="hi")`` is complete.  ``_meta`` stays a plain ``dict``.  The last
field of every class, ``extra``, holds the JSON keys the class does not know, so a
message from a newer peer round-trips unchanged.

Unions (``ContentBlock``, ``ServerResult``, ...) are ``TypeAlias`` unions, string enums
are ``Literal`` aliases (``Role``, ``LoggingLevel``), and ``RequestId``,
``ProgressToken`` and ``Cursor`` are plain aliases.  An inline object with named
properties is a class named ``<Parent><Field>`` (``ServerCapabilitiesTools``,
``CancelTaskRequestParams``); free-form objects (tool input/output JSON Schemas,
``arguments``, ``structuredContent``, ``experimental``) are ``dict[str, Any]``.

One model serves every revision.  A name defined by several revisions is one class (or
alias) with the fields of all of them: the types are those of the newest handshake-era
revision that defines it ({handshake}), a field is required only where every revision of
its class requires it, and the fields only some revisions have are optional.  Every
field says in its attrs metadata which revisions allow it (``metadata={{"revisions":
SINCE_2025_06_18}}``, one of the tuples below), and ``"required_in"`` when the
revisions that require it are not simply all of those (``Result.result_type``: allowed
and required in 2026-07-28 only); :data:`DEFINED_IN` gives each name's revisions, and
each docstring says them in words, with where a revision's shape disagrees.
:mod:`mcp_ref._revisions` answers "which revisions allow this class or field" from
these; :mod:`mcp_ref._convert` reads them to convert the messages of one era.

Nothing here validates or converts: :mod:`mcp_ref._convert` turns wire JSON into these
classes and back, strictly, once per message.  A field whose wire name the converter's
rule cannot rebuild carries it in attrs metadata (``"wire": "$schema"``).

Source: the official MCP JSON Schemas, revisions {first} to {last} (``schema.json``,
``$defs`` or ``definitions``).
"""

from typing import Any, Literal, TypeAlias

import attrs
'''


def all_sort_key(name: str) -> tuple[int, str]:
    # ruff's RUF022 "isort-style": SCREAMING_CASE, then CamelCase, then the rest.
    if name.isupper():
        return (0, name)
    if name[:1].isupper():
        return (1, name)
    return (2, name)


def render(items: dict[str, ClassDef | AliasDef]) -> str:
    ordered_items = ordered(items)
    spans: set[tuple[str, ...]] = {i.revisions for i in ordered_items}
    for item in ordered_items:
        if isinstance(item, ClassDef):
            spans |= {f.revisions for f in item.fields}
            spans |= {f.required_in for f in item.fields if f.required_in}
    spans_sorted = sorted(spans, key=lambda s: (REVISIONS.index(s[0]), -len(s), s))
    span_names = [span_name(s) for s in spans_sorted]
    names = sorted([*span_names, "DEFINED_IN", *(i.name for i in ordered_items)], key=all_sort_key)
    out = HEADER.format(first=REVISIONS[0], last=REVISIONS[-1], handshake=NEWEST_HANDSHAKE)
    out += "\n__all__ = [\n" + "".join(f"    {json.dumps(n)},\n" for n in names) + "]\n"
    out += "\n# The sets of revisions that fields and definitions name, oldest revision first.\n"
    for span, const in zip(spans_sorted, span_names, strict=True):
        out += f"\n{const}: tuple[str, ...] = {py_tuple(span)}\n"
        out += docstring(f"Revisions {span_text(span)}.", "")
    for item in ordered_items:
        out += render_class(item) if isinstance(item, ClassDef) else render_alias(item)
    out += "\n\nDEFINED_IN: dict[str, tuple[str, ...]] = {\n"
    out += "".join(f"    {json.dumps(i.name)}: {span_name(i.revisions)},\n" for i in ordered_items)
    out += "}\n"
    out += docstring(
        "The revisions whose schema defines each name of this module with the shape "
        "generated here (a revision that gives a name another kind of shape is left out, "
        "and named in that definition's docstring).",
        "",
    )
    return out


def py_tuple(values: tuple[str, ...]) -> str:
    return "(" + ", ".join(json.dumps(v) for v in values) + ("," if len(values) == 1 else "") + ")"


def ruff_format(source: str) -> str:
    ruff = Path(sys.executable).parent / "ruff"
    exe = str(ruff) if ruff.exists() else shutil.which("ruff")
    if exe is None:
        raise SystemExit("ruff not found: install it (it is in the test extras)")
    done = subprocess.run(
        [exe, "format", "--stdin-filename", str(OUTPUT), "-"],
        input=source,
        capture_output=True,
        text=True,
        cwd=REPO,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"ruff format failed:\n{done.stderr}")
    return done.stdout


def load_defs(path: Path) -> dict[str, Any]:
    """The definitions of one schema.json (``$defs`` from 2025-11-25, ``definitions``
    before)."""
    schema = json.loads(path.read_text(encoding="utf-8"))
    defs: dict[str, Any] = schema.get("$defs") or schema["definitions"]
    return defs


def build(schema_dir: Path | None = None) -> dict[str, ClassDef | AliasDef]:
    """Every revision's items (one :class:`Generator` each), merged (:func:`merge`)."""
    per_revision: dict[str, dict[str, ClassDef | AliasDef]] = {}
    roots: set[str] = set()
    for rev, path in find_schemas(schema_dir).items():
        defs = load_defs(path)
        gen = Generator(defs, rev)
        gen.build()
        per_revision[rev] = gen.items
        roots |= set(defs)
    return merge(per_revision, roots)


def generate(schema_dir: Path | None = None) -> str:
    """Return the formatted source of ``mcp_ref/types.py`` for the schemas under
    ``schema_dir`` (``<dir>/<revision>/schema.json``; default: the vendored copies)."""
    return ruff_format(render(build(schema_dir)))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--check", action="store_true", help="fail if types.py is stale")
    parser.add_argument("--stdout", action="store_true", help="print, do not write")
    parser.add_argument(
        "--schema-dir",
        type=Path,
        default=None,
        help="folder of <revision>/schema.json (default: tests/vendor/schema)",
    )
    args = parser.parse_args(argv)
    source = generate(args.schema_dir)
    if args.stdout:
        sys.stdout.write(source)
    elif args.check:
        current = OUTPUT.read_text(encoding="utf-8") if OUTPUT.exists() else ""
        if current != source:
            print(f"{OUTPUT} is stale: run python spec_map/gen_types.py", file=sys.stderr)
            return 1
    else:
        OUTPUT.write_text(source, encoding="utf-8")
        print(f"wrote {OUTPUT}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
