"""RFC 6570 URI templates: expansion (the RFC's own examples) and matching back."""

from __future__ import annotations

import string

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcp_ref.server import UriTemplate, UriTemplateError
from mcp_ref.server._uritemplate import MAX_URI_LENGTH

# RFC 6570 section 3.2, the variables of its examples.
VARS = {
    "count": ["one", "two", "three"],
    "dom": ["example", "com"],
    "dub": "me/too",
    "hello": "Hello World!",
    "half": "50%",
    "var": "value",
    "who": "fred",
    "base": "http://example.com/home/",
    "path": "/foo/bar",
    "list": ["red", "green", "blue"],
    "keys": {"semi": ";", "dot": ".", "comma": ","},
    "v": "6",
    "x": "1024",
    "y": "768",
    "empty": "",
    "empty_keys": {},
    "undef": None,
}

# (template, expansion) pairs from RFC 6570 sections 3.2.2 to 3.2.9.
RFC_EXAMPLES = [
    ("{var}", "value"),
    ("{hello}", "Hello%20World%21"),
    ("{half}", "50%25"),
    ("O{empty}X", "OX"),
    ("O{undef}X", "OX"),
    ("{x,y}", "1024,768"),
    ("{x,hello,y}", "1024,Hello%20World%21,768"),
    ("?{x,empty}", "?1024,"),
    ("?{x,undef}", "?1024"),
    ("?{undef,y}", "?768"),
    ("{var:3}", "val"),
    ("{var:30}", "value"),
    ("{list}", "red,green,blue"),
    ("{list*}", "red,green,blue"),
    ("{keys}", "semi,%3B,dot,.,comma,%2C"),
    ("{keys*}", "semi=%3B,dot=.,comma=%2C"),
    ("{+var}", "value"),
    ("{+hello}", "Hello%20World!"),
    ("{+half}", "50%25"),
    ("{base}index", "http%3A%2F%2Fexample.com%2Fhome%2Findex"),
    ("{+base}index", "http://example.com/home/index"),
    ("O{+empty}X", "OX"),
    ("O{+undef}X", "OX"),
    ("{+path}/here", "/foo/bar/here"),
    ("here?ref={+path}", "here?ref=/foo/bar"),
    ("up{+path}{var}/here", "up/foo/barvalue/here"),
    ("{+x,hello,y}", "1024,Hello%20World!,768"),
    ("{+path,x}/here", "/foo/bar,1024/here"),
    ("{+path:6}/here", "/foo/b/here"),
    ("{+list}", "red,green,blue"),
    ("{+list*}", "red,green,blue"),
    ("{+keys}", "semi,;,dot,.,comma,,"),
    ("{+keys*}", "semi=;,dot=.,comma=,"),
    ("{#var}", "#value"),
    ("{#hello}", "#Hello%20World!"),
    ("{#half}", "#50%25"),
    ("foo{#empty}", "foo#"),
    ("foo{#undef}", "foo"),
    ("{#x,hello,y}", "#1024,Hello%20World!,768"),
    ("{#path,x}/here", "#/foo/bar,1024/here"),
    ("{#path:6}/here", "#/foo/b/here"),
    ("{#list}", "#red,green,blue"),
    ("{#list*}", "#red,green,blue"),
    ("{#keys}", "#semi,;,dot,.,comma,,"),
    ("{#keys*}", "#semi=;,dot=.,comma=,"),
    ("{.who}", ".fred"),
    ("{.who,who}", ".fred.fred"),
    ("{.half,who}", ".50%25.fred"),
    ("www{.dom*}", "www.example.com"),
    ("X{.var}", "X.value"),
    ("X{.empty}", "X."),
    ("X{.undef}", "X"),
    ("X{.var:3}", "X.val"),
    ("X{.list}", "X.red,green,blue"),
    ("X{.list*}", "X.red.green.blue"),
    ("X{.keys}", "X.semi,%3B,dot,.,comma,%2C"),
    ("X{.keys*}", "X.semi=%3B.dot=..comma=%2C"),
    ("X{.empty_keys}", "X"),
    ("X{.empty_keys*}", "X"),
    ("{/who}", "/fred"),
    ("{/who,who}", "/fred/fred"),
    ("{/half,who}", "/50%25/fred"),
    ("{/who,dub}", "/fred/me%2Ftoo"),
    ("{/var}", "/value"),
    ("{/var,empty}", "/value/"),
    ("{/var,undef}", "/value"),
    ("{/var,x}/here", "/value/1024/here"),
    ("{/var:1,var}", "/v/value"),
    ("{/list}", "/red,green,blue"),
    ("{/list*}", "/red/green/blue"),
    ("{/list*,path:4}", "/red/green/blue/%2Ffoo"),
    ("{/keys}", "/semi,%3B,dot,.,comma,%2C"),
    ("{/keys*}", "/semi=%3B/dot=./comma=%2C"),
    ("{;who}", ";who=fred"),
    ("{;half}", ";half=50%25"),
    ("{;empty}", ";empty"),
    ("{;v,empty,who}", ";v=6;empty;who=fred"),
    ("{;v,bar,who}", ";v=6;who=fred"),
    ("{;x,y}", ";x=1024;y=768"),
    ("{;x,y,empty}", ";x=1024;y=768;empty"),
    ("{;x,y,undef}", ";x=1024;y=768"),
    ("{;hello:5}", ";hello=Hello"),
    ("{;list}", ";list=red,green,blue"),
    ("{;list*}", ";list=red;list=green;list=blue"),
    ("{;keys}", ";keys=semi,%3B,dot,.,comma,%2C"),
    ("{;keys*}", ";semi=%3B;dot=.;comma=%2C"),
    ("{?who}", "?who=fred"),
    ("{?half}", "?half=50%25"),
    ("{?x,y}", "?x=1024&y=768"),
    ("{?x,y,empty}", "?x=1024&y=768&empty="),
    ("{?x,y,undef}", "?x=1024&y=768"),
    ("{?var:3}", "?var=val"),
    ("{?list}", "?list=red,green,blue"),
    ("{?list*}", "?list=red&list=green&list=blue"),
    ("{?keys}", "?keys=semi,%3B,dot,.,comma,%2C"),
    ("{?keys*}", "?semi=%3B&dot=.&comma=%2C"),
    ("{&who}", "&who=fred"),
    ("{&half}", "&half=50%25"),
    ("?fixed=yes{&x}", "?fixed=yes&x=1024"),
    ("{&x,y,empty}", "&x=1024&y=768&empty="),
    ("{&var:3}", "&var=val"),
    ("{&list}", "&list=red,green,blue"),
    ("{&list*}", "&list=red&list=green&list=blue"),
    ("{&keys}", "&keys=semi,%3B,dot,.,comma,%2C"),
    ("{&keys*}", "&semi=%3B&dot=.&comma=%2C"),
]


@pytest.mark.parametrize(("template", "expected"), RFC_EXAMPLES)
def test_expansion_matches_rfc_examples(template: str, expected: str) -> None:
    assert UriTemplate(template).expand(VARS) == expected


# Where a value holds its own separator unencoded ("." in a label, "," or "=" in a
# reserved expansion), the split is ambiguous (see the module docstring): matching still
# succeeds but reads different values.
AMBIGUOUS = {"X{.keys*}"}


@pytest.mark.parametrize(("template", "expected"), RFC_EXAMPLES)
def test_every_rfc_example_is_matched_by_its_template(template: str, expected: str) -> None:
    """Matching reads back something that expands to the same URI (the values
    themselves may be ambiguous, see the cases below)."""
    tpl = UriTemplate(template)
    if template in AMBIGUOUS:
        assert tpl.match(expected) is not None
        return
    values = tpl.match(expected)
    assert values is not None, f"{template} did not match {expected}"
    assert tpl.expand(values) == expected


# Cases where matching recovers exactly the values (no ambiguity).
EXACT = [
    ("test://template/{id}/data", "test://template/123/data", {"id": "123"}),
    ("{var}", "value", {"var": "value"}),
    ("{hello}", "Hello%20World%21", {"hello": "Hello World!"}),
    ("{x,y}", "1024,768", {"x": "1024", "y": "768"}),
    ("{+path}/here", "/foo/bar/here", {"path": "/foo/bar"}),
    ("here?ref={+path}", "here?ref=/foo/bar", {"path": "/foo/bar"}),
    ("X{#var}", "X#value", {"var": "value"}),
    ("X{.x,y}", "X.1024.768", {"x": "1024", "y": "768"}),
    ("{/var,x}/here", "/value/1024/here", {"var": "value", "x": "1024"}),
    ("{;x,y,empty}", ";x=1024;y=768;empty", {"x": "1024", "y": "768", "empty": ""}),
    ("{?x,y,empty}", "?x=1024&y=768&empty=", {"x": "1024", "y": "768", "empty": ""}),
    ("?fixed=yes{&x}", "?fixed=yes&x=1024", {"x": "1024"}),
    ("{?y,x}", "?x=1024&y=768", {"x": "1024", "y": "768"}),  # any order
    ("{list}", "red,green,blue", {"list": ["red", "green", "blue"]}),
    ("X{.list*}", "X.red.green.blue", {"list": ["red", "green", "blue"]}),
    (
        "{/list*,path:4}",
        "/red/green/blue/%2Ffoo",
        {"list": ["red", "green", "blue"], "path": "/foo"},
    ),
    ("{?list*}", "?list=red&list=green&list=blue", {"list": ["red", "green", "blue"]}),
    ("{?keys*}", "?semi=%3B&dot=.&comma=%2C", {"keys": {"semi": ";", "dot": ".", "comma": ","}}),
    ("{/keys*}", "/semi=%3B/dot=./comma=%2C", {"keys": {"semi": ";", "dot": ".", "comma": ","}}),
    ("{keys*}", "semi=%3B,dot=.,comma=%2C", {"keys": {"semi": ";", "dot": ".", "comma": ","}}),
    ("file:///{+path}{?q}", "file:///a/b?q=1", {"path": "a/b", "q": "1"}),
    ("O{undef}X", "OX", {}),
]


@pytest.mark.parametrize(("template", "uri", "values"), EXACT)
def test_match_reads_values_back(template: str, uri: str, values: dict[str, object]) -> None:
    assert UriTemplate(template).match(uri) == values


@pytest.mark.parametrize(
    ("template", "uri"),
    [
        ("test://template/{id}/data", "test://template/123/other"),
        ("test://template/{id}/data", "test://template/1/2/data"),  # "/" is not in {id}
        ("test://template/{id}/data", "test://other/123/data"),
        ("{?x}", "?y=1"),  # unknown name
        ("{?x}", "?x=1&x=2"),  # a non-exploded variable with two values
        ("{.who,who}", ".a.b"),  # one variable read two ways
        ("{var:3}", "value"),  # longer than the prefix
        ("{/x}", "x"),  # the "/" is missing
    ],
)
def test_match_refuses(template: str, uri: str) -> None:
    assert UriTemplate(template).match(uri) is None


def test_documented_ambiguities() -> None:
    # A one-item list expands like a string, and comes back as one.
    assert UriTemplate("{list}").match("red") == {"list": "red"}
    # {.x,y} against more labels than variables: the last variable takes the rest.
    assert UriTemplate("X{.x,y}").match("X.a.b.c") == {"x": "a", "y": "b.c"}
    # Reserved expansion: the earliest split wins.
    assert UriTemplate("{+a}/{+b}").match("x/y/z") == {"a": "x", "b": "y/z"}
    # A dict that is not exploded comes back as a flat list.
    assert UriTemplate("{keys}").match("a,1,b,2") == {"keys": ["a", "1", "b", "2"]}


@pytest.mark.parametrize(
    "bad",
    ["{", "}", "a{b", "{}", "{=x}", "{x y}", "{x:0}", "{x:10000}", "{x*:3}", "a b{x}", "{a{b}}"],
)
def test_invalid_templates_raise_with_position(bad: str) -> None:
    with pytest.raises(UriTemplateError, match=r"position|allowed|unmatched|unclosed"):
        UriTemplate(bad)


def test_variables_and_literal() -> None:
    tpl = UriTemplate("test://{a}/{+b}{?c,a}")
    assert tpl.variables == ("a", "b", "c")
    assert not tpl.is_literal
    assert UriTemplate("test://static").is_literal
    assert UriTemplate("test://{a}") == UriTemplate("test://{a}")
    assert len({UriTemplate("x{a}"), UriTemplate("x{a}")}) == 1


def test_long_uris_are_refused_without_matching() -> None:
    tpl = UriTemplate("test://{+rest}")
    assert tpl.match("test://" + "a" * (MAX_URI_LENGTH - 7)) is not None
    assert tpl.match("test://" + "a" * MAX_URI_LENGTH) is None


def test_ambiguous_neighbours_lower_the_length_limit() -> None:
    """{a}{b}{c} backtracks polynomially on a URI that does not match: such templates
    accept shorter URIs, so the worst case stays bounded."""
    tpl = UriTemplate("{a}{b}{c}{d}/end")
    assert tpl.match("xyz/end") is not None
    assert tpl._max_length < 100
    assert tpl.match("x" * 5000 + "!") is None  # refused by length, at once


_SAFE = st.text(alphabet=string.ascii_letters + string.digits + " /?#&=,.;%:é", max_size=12)


@given(st.dictionaries(st.sampled_from(["a", "b"]), _SAFE.map(lambda v: v.replace(",", ""))))
def test_strings_round_trip(values: dict[str, str]) -> None:
    """With literals between the expressions, every non-empty string value comes back
    exactly ("," is left out: an unencoded comma reads as a list)."""
    for template in ("test://x/{a}/y/{b}", "test://x{?a,b}", "test://x{/a}/y{;b}"):
        tpl = UriTemplate(template)
        got = tpl.match(tpl.expand(values))
        assert got is not None
        assert {k: v for k, v in got.items() if v} == {k: v for k, v in values.items() if v}
