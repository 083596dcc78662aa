"""Generate ``mcp_ref/types.py`` from the official MCP JSON Schema (revision 2025-11-25).

Usage::

    python spec_map/gen_types.py            # rewrite mcp_ref/types.py
    python spec_map/gen_types.py --check    # exit 1 if the committed file is stale
    python spec_map/gen_types.py --stdout   # print instead of writing

The schema is read from ``$MCP_SPEC_DIR/schema/2025-11-25/schema.json`` or, without that
variable, from ``<repo>/../shared/spec/...``.  The output is passed through
``ruff format`` (found next to the running interpreter or on ``PATH``).  This is a
development tool: nothing in ``mcp_ref`` imports it, and the spec is not needed at run time.

Theory of operation
-------------------
Every ``$defs`` entry becomes one Python name, spelled exactly as the definition:

* an object (``"type": "object"`` with ``properties``, or an ``allOf`` of objects, whose
  properties are merged) becomes a frozen, slotted, keyword-only attrs class;
* an ``anyOf``/``oneOf`` becomes a ``TypeAlias`` of the union of its members;
* a string ``enum`` becomes a ``Literal[...]`` alias; a primitive or a bare ``$ref``
  becomes a plain alias (``RequestId = str | int``, ``EmptyResult = Result``).

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
(``{"wire": "$schema"}``).

Classes are written in dependency order (each name defined before it is used), so the
annotations of :mod:`mcp_ref.types` are real objects and nothing is resolved at run time.
"""

from __future__ import annotations

import argparse
import json
import keyword
import os
import re
import shutil
import subprocess
import sys
import textwrap
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REVISION = "2025-11-25"
REPO = Path(__file__).resolve().parent.parent
OUTPUT = REPO / "mcp_ref" / "types.py"

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
}


def find_schema() -> Path:
    """Return the path of the 2025-11-25 schema.json (see the module docstring)."""
    env = os.environ.get("MCP_SPEC_DIR")
    base = Path(env) if env else REPO.parent / "shared" / "spec"
    return base / "schema" / REVISION / "schema.json"


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


@dataclass
class ClassDef:
    name: str
    doc: str
    fields: list[Field]
    deps: set[str]


@dataclass
class AliasDef:
    name: str
    value: str
    doc: str
    deps: set[str]


@dataclass
class Generator:
    defs: dict[str, Any]
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
            pyname = snake(wire)
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
            name, doc + f"\n\nSource: schema {REVISION}, {source}.", fields, deps
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
        if "anyOf" in schema or "oneOf" in schema:
            members = schema.get("anyOf") or schema.get("oneOf")
            deps: set[str] = set()
            value = " | ".join(self.annotation(m, name, "", deps) for m in members)
            doc = (
                desc
                or "One of: " + ", ".join(f":class:`{self.ref_name(m)}`" for m in members) + "."
            )
            self.items[name] = AliasDef(
                name, value, doc + f"\n\nSource: schema {REVISION}, ``$defs/{name}``.", deps
            )
        elif "$ref" in schema:
            target = self.ref_name(schema)
            doc = desc or f"The same shape as :class:`{target}`."
            self.items[name] = AliasDef(
                name, target, doc + f"\n\nSource: schema {REVISION}, ``$defs/{name}``.", {target}
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
                (desc or name) + f"\n\nSource: schema {REVISION}, ``$defs/{name}``.",
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

    def ordered(self) -> list[ClassDef | AliasDef]:
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
            for dep in sorted(self.items[name].deps):
                visit(dep)
            visiting.discard(name)
            done.add(name)
            out.append(self.items[name])

        for name in sorted(self.items):
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
    wire_meta = "" if camel(f.name) == f.wire else f', metadata={{"wire": {json.dumps(f.wire)}}}'
    if f.has_const and f.required:
        default = py_literal(f.const)
        ann = f.annotation
    elif f.required:
        default = None
        ann = f.annotation
    else:
        default = "None"
        ann = f.annotation if f.annotation.endswith("| None") else f"{f.annotation} | None"
    if wire_meta:
        value = "attrs.field(" + (f"default={default}" if default is not None else "") + wire_meta
        value = value.replace("(, ", "(") + ")"
        line = f"    {f.name}: {ann} = {value}\n"
    elif default is not None:
        line = f"    {f.name}: {ann} = {default}\n"
    else:
        line = f"    {f.name}: {ann}\n"
    return line + docstring(f.doc, "    ")


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
# Generated by spec_map/gen_types.py from the official MCP schema, revision {revision}.
# Regenerate with:  python spec_map/gen_types.py   (check with --check)
"""The typed messages of MCP: one name for every definition of the {revision} schema.

Theory of operation
-------------------
Each object definition of the official JSON Schema is a frozen, slotted, keyword-only
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

Nothing here validates or converts: :mod:`mcp_ref._convert` turns wire JSON into these
classes and back, strictly, once per message.  A field whose wire name the converter's
rule cannot rebuild carries it in attrs metadata (``metadata={{"wire": "$schema"}}``).

Source: the official MCP JSON Schema, revision {revision} (``schema.json``, ``$defs``).
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


def render(gen: Generator) -> str:
    items = gen.ordered()
    names = sorted((i.name for i in items), key=all_sort_key)
    out = HEADER.format(revision=REVISION)
    out += "\n__all__ = [\n" + "".join(f"    {json.dumps(n)},\n" for n in names) + "]\n"
    for item in items:
        out += render_class(item) if isinstance(item, ClassDef) else render_alias(item)
    return out


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


def generate(schema_path: Path | None = None) -> str:
    """Return the formatted source of ``mcp_ref/types.py`` for the given schema file."""
    path = schema_path or find_schema()
    defs = json.loads(path.read_text(encoding="utf-8"))["$defs"]
    gen = Generator(defs)
    gen.build()
    return ruff_format(render(gen))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--check", action="store_true", help="fail if types.py is stale")
    parser.add_argument("--stdout", action="store_true", help="print, do not write")
    parser.add_argument("--schema", type=Path, default=None, help="schema.json to read")
    args = parser.parse_args(argv)
    source = generate(args.schema)
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
