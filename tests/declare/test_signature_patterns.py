"""Tests for `msgspec.Meta(pattern=...)` on signature-built tools: matched by RE2 in time
linear in the model's text (never by msgspec's backtracking `re`), wherever the pattern sits
in a parameter's type, with msgspec's own error words and paths."""

import dataclasses
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Annotated, Generic, NamedTuple, TypeVar

import attrs
import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tinytools import Tool, ToolArgumentsError, ToolCall, ToolDefinitionError, dispatch_sync, tool
from tinytools._declare.validate import StructValidator

if sys.version_info >= (3, 11):
    from typing import NotRequired, TypedDict
else:
    from typing_extensions import NotRequired, TypedDict

Code = Annotated[str, msgspec.Meta(pattern="^[A-Z]{3}$")]


class Tree(msgspec.Struct):
    name: Code
    children: "list[Tree]" = []


T = TypeVar("T")


class Box(msgspec.Struct, Generic[T]):
    label: Code
    item: T


class IntBox(Box[int]):
    """Not generic itself: msgspec reads `item` as `int` (a rebuilt class would read `T`,
    any value, and pass `"nope"` to a function that declared an `int`)."""


@dataclasses.dataclass
class Pair(Generic[T]):
    label: Code
    item: T


@dataclasses.dataclass
class IntPair(Pair[int]):
    pass


def refusal(t: Tool[..., object], arguments: object) -> str:
    with pytest.raises(ToolArgumentsError) as caught:
        t.validate(arguments if isinstance(arguments, str) else json.dumps(arguments))
    return str(caught.value).split(" Expected arguments", 1)[0]


class TestHostileText:
    def test_backtracking_patterns_answer_every_call(self) -> None:
        """A pattern Python's `re` needs about 2**5000 steps for, wherever it sits in a
        parameter's type, answers the call at once with the path of the value. The calls
        run in a child process, so a hang fails this test at its deadline instead of
        freezing the suite."""
        code = textwrap.dedent(
            """
            import dataclasses, json, sys
            from typing import Annotated, NamedTuple, Optional
            import attrs, msgspec
            from tinytools import ToolCall, dispatch_sync, tool
            if sys.version_info >= (3, 11):
                from typing import TypedDict
            else:
                from typing_extensions import TypedDict

            Evil = Annotated[str, msgspec.Meta(pattern=r"^(a+)+$")]

            @dataclasses.dataclass
            class Dc:
                s: Evil

            @attrs.define
            class At:
                s: Evil

            class St(msgspec.Struct, rename="camel"):
                inner_list: list[Dc]

            class Td(TypedDict):
                s: Evil

            class Nt(NamedTuple):
                n: int
                s: Evil

            @tool
            def evil(
                plain: Optional[Evil] = None,
                items: Optional[list[Evil]] = None,
                keys: Optional[dict[Evil, int]] = None,
                values: Optional[dict[str, Evil]] = None,
                pair: Optional[tuple[int, Evil]] = None,
                dc: Optional[Dc] = None,
                at: Optional[At] = None,
                st: Optional[St] = None,
                td: Optional[Td] = None,
                nt: Optional[Nt] = None,
            ) -> str:
                '''A tool whose patterns Python's re backtracks on.'''
                return "ran"

            text = "a" * 5000 + "!"
            places = {
                "$.plain": {"plain": text},
                "$.items[1]": {"items": ["a", text]},
                "key` in `$.keys": {"keys": {text: 1}},
                "$.values[...]": {"values": {"k": text}},
                "$.pair[1]": {"pair": [1, text]},
                "$.dc.s": {"dc": {"s": text}},
                "$.at.s": {"at": {"s": text}},
                "$.st.innerList[0].s": {"st": {"innerList": [{"s": text}]}},
                "$.td.s": {"td": {"s": text}},
                "$.nt[1]": {"nt": [1, text]},
            }
            for path, arguments in places.items():
                call = ToolCall("1", "evil", json.dumps(arguments))
                (message,) = dispatch_sync([call], [evil]).messages
                assert message.is_error, path
                assert f"at `{path}`: Expected `string` matching regex" in message.content, (
                    path, message.content[:200])
            print("answered")
            """
        )
        try:
            out = subprocess.run(
                [sys.executable, "-c", code], capture_output=True, text=True, timeout=300
            )
        except subprocess.TimeoutExpired:
            pytest.fail("a msgspec.Meta pattern backtracked on model text: dispatch hung")
        assert out.returncode == 0, out.stderr
        assert out.stdout.strip() == "answered"


class TestMessages:
    def test_an_ordinary_mismatch_reads_as_before(self) -> None:
        @tool
        def convert(source: Code, target: Code) -> str:
            """Convert a currency."""
            return source + target

        assert refusal(convert, {"source": "EUR", "target": "usd"}) == (
            "Invalid arguments for tool `convert` at `$.target`: "
            "Expected `string` matching regex '^[A-Z]{3}$'."
        )
        (message,) = dispatch_sync(
            [ToolCall("1", "convert", '{"source": "E", "target": "USD"}')], [convert]
        ).messages
        assert "at `$.source`: Expected `string` matching regex '^[A-Z]{3}$'" in message.content

    def test_length_bounds_come_first_as_in_msgspec(self) -> None:
        @tool
        def name(n: Annotated[str, msgspec.Meta(pattern="^[a-z]+$", max_length=3)]) -> str:
            """Doc."""
            return n

        assert refusal(name, {"n": "ABCD"}).endswith("Expected `string` of length <= 3.")
        assert refusal(name, {"n": "ABC"}).endswith("matching regex '^[a-z]+$'.")

    def test_the_schema_still_carries_the_pattern(self) -> None:
        @tool
        def convert(source: Code, pairs: dict[Code, list[Code]]) -> str:
            """Convert."""
            return source

        properties = convert.parameters["properties"]
        assert isinstance(properties, dict)
        assert properties["source"] == {"type": "string", "pattern": "^[A-Z]{3}$"}
        assert properties["pairs"]["propertyNames"] == {"pattern": "^[A-Z]{3}$"}
        assert properties["pairs"]["additionalProperties"]["items"]["pattern"] == "^[A-Z]{3}$"

    def test_dict_arguments_are_matched_too(self) -> None:
        @tool
        def convert(source: Code) -> str:
            """Convert."""
            return source

        with pytest.raises(ToolArgumentsError, match=r"at `\$\.source`"):
            convert.validate({"source": "a" * 10_000})
        assert convert.validate({"source": "EUR"}) == {"source": "EUR"}


class TestEcmaMeaning:
    """The pattern means what the advertised schema tells the model (ECMA-262)."""

    def test_dollar_ends_the_text(self) -> None:
        @tool
        def word(w: Annotated[str, msgspec.Meta(pattern="^[a-z]+$")]) -> str:
            """Doc."""
            return w

        assert word.validate('{"w": "abc"}') == {"w": "abc"}
        with pytest.raises(ToolArgumentsError, match="matching regex"):
            word.validate('{"w": "abc\\n"}')  # Python's `re.search` accepted it

    def test_digits_are_ascii(self) -> None:
        @tool
        def pin(p: Annotated[str, msgspec.Meta(pattern=r"^\d{4}$")]) -> str:
            """Doc."""
            return p

        assert pin.validate('{"p": "1234"}') == {"p": "1234"}
        with pytest.raises(ToolArgumentsError):
            pin.validate('{"p": "\u0661\u0662\u0663\u0664"}')  # Arabic-Indic digits

    def test_python_anchors_read_as_json_schema_anchors(self) -> None:
        r"""`\A` and `\Z` work as in Python, and the model is shown `^` and `$`."""

        @tool
        def word(w: Annotated[str, msgspec.Meta(pattern=r"\A[a-z]+\Z")]) -> str:
            """Doc."""
            return w

        properties = word.parameters["properties"]
        assert isinstance(properties, dict)
        assert properties["w"]["pattern"] == "^[a-z]+$"
        assert word.validate('{"w": "abc"}') == {"w": "abc"}
        assert refusal(word, {"w": "abc\n"}).endswith("matching regex '^[a-z]+$'.")

    @pytest.mark.parametrize("pattern", ["^a{,3}$", "^[ab]{,}$"])
    def test_a_count_from_nothing_is_refused_at_build(self, pattern: str) -> None:
        """Python's `re` reads `a{,3}` as `a{0,3}`, ECMA-262 (the schema the model reads)
        and RE2 as the text `a{,3}`: the author meant the count, so the tool is refused
        with the spelling that works, never built to mean something else."""
        with pytest.raises(ToolDefinitionError, match=r"write `\{0,"):

            @tool
            def f(v: Annotated[str, msgspec.Meta(pattern=pattern)]) -> str:
                """Doc."""
                return v

        @tool
        def g(v: Annotated[str, msgspec.Meta(pattern=r"^[{,3}]\{,3}a{0,3}$")]) -> str:
            """Doc."""
            return v

        assert g.validate('{"v": "{{,3}aa"}') == {"v": "{{,3}aa"}

    @pytest.mark.parametrize("pattern", ["^(?=.*[0-9])", r"(a)\1", "(?<!x)y"])
    def test_a_pattern_re2_cannot_run_is_refused_at_build(self, pattern: str) -> None:
        with pytest.raises(ToolDefinitionError, match="cannot be matched in time linear"):

            @tool
            def f(v: Annotated[str, msgspec.Meta(pattern=pattern)]) -> str:
                """Doc."""
                return v


class TestUserClasses:
    def test_classes_arrive_as_the_users_own(self) -> None:
        @dataclasses.dataclass(frozen=True)
        class Leg:
            origin: Code
            stops: int = 0

        @attrs.frozen
        class Fare:
            currency: Code

        class Trip(msgspec.Struct, frozen=True):
            legs: list[Leg]
            fare: Fare | None = None

        class Seat(NamedTuple):
            row: int
            cabin: Code = "ECO"

        @tool
        def book(trip: Trip, seat: Seat) -> str:
            """Book a trip."""
            return "ok"

        args = book.validate(
            '{"trip": {"legs": [{"origin": "CDG"}], "fare": {"currency": "EUR"}}, "seat": [3]}'
        )
        assert args == {
            "trip": Trip(legs=[Leg("CDG")], fare=Fare("EUR")),
            "seat": Seat(3, "ECO"),
        }
        trip = args["trip"]
        assert type(trip) is Trip
        assert type(trip.legs[0]) is Leg  # type: ignore[attr-defined]
        assert type(trip.fare) is Fare  # type: ignore[attr-defined]
        assert type(args["seat"]) is Seat
        assert refusal(book, {"trip": {"legs": [{"origin": "x"}]}, "seat": [1]}).endswith(
            "at `$.trip.legs[0].origin`: Expected `string` matching regex '^[A-Z]{3}$'."
        )

    def test_post_init_and_validators_still_run(self) -> None:
        @dataclasses.dataclass
        class Span:
            unit: Code
            low: int
            high: int

            def __post_init__(self) -> None:
                if self.low > self.high:
                    raise ValueError("low must not exceed high")

        @attrs.define
        class Tagged:
            tag: Code
            weight: int = attrs.field(validator=attrs.validators.ge(0))

        @tool
        def measure(spans: list[Span], tagged: Tagged | None = None) -> str:
            """Doc."""
            return "ok"

        assert refusal(measure, {"spans": [{"unit": "KMH", "low": 2, "high": 1}]}).endswith(
            "at `$.spans[0]`: low must not exceed high."
        )
        with pytest.raises(ToolArgumentsError, match=r"at `\$\.tagged`"):
            measure.validate({"spans": [], "tagged": {"tag": "ABC", "weight": -1}})

    def test_typeddict_fields(self) -> None:
        class Address(TypedDict):
            country: Code
            zip: NotRequired[Annotated[str, msgspec.Meta(pattern="^[0-9]{5}$")]]

        @tool
        def ship(to: Address) -> str:
            """Doc."""
            return "ok"

        assert ship.validate('{"to": {"country": "FRA"}}') == {"to": {"country": "FRA"}}
        with pytest.raises(ToolArgumentsError, match="Object missing required field `country`"):
            ship.validate('{"to": {}}')
        assert refusal(ship, {"to": {"country": "FRA", "zip": "7500"}}).endswith(
            "at `$.to.zip`: Expected `string` matching regex '^[0-9]{5}$'."
        )

    def test_defaults_are_not_matched(self) -> None:
        """msgspec never checks a default against its pattern; neither does tinytools."""

        @dataclasses.dataclass
        class Box:
            label: Code = "none"

        @tool
        def pack(box: Box, label: Code = "none") -> str:
            """Doc."""
            return "ok"

        assert pack.validate('{"box": {}}') == {"box": Box(), "label": "none"}

    def test_tagged_unions_of_structs(self) -> None:
        class Card(msgspec.Struct, tag=True):
            last4: Annotated[str, msgspec.Meta(pattern="^[0-9]{4}$")]

        class Bank(msgspec.Struct, tag=True):
            iban: Annotated[str, msgspec.Meta(pattern="^[A-Z]{2}[0-9]+$")]

        @tool
        def pay(method: Card | Bank) -> str:
            """Doc."""
            return "ok"

        assert pay.validate('{"method": {"type": "Bank", "iban": "FR76"}}') == {
            "method": Bank("FR76")
        }
        assert refusal(pay, {"method": {"type": "Card", "last4": "12"}}).endswith(
            "at `$.method.last4`: Expected `string` matching regex '^[0-9]{4}$'."
        )

    def test_patterns_msgspec_would_keep_are_refused_at_build(self) -> None:
        """A pattern inside a recursive or generic class cannot be taken out of msgspec's
        hands: the tool is refused, with what to do, rather than left to `re`."""

        for annotation in (Tree, Box[int], IntBox, IntPair):
            with pytest.raises(
                ToolDefinitionError,
                match=r"generic or recursive class.*drop the pattern from that class and check "
                r"the value in the function",
            ):

                @tool
                def f(v: annotation) -> str:  # type: ignore[valid-type]
                    """Doc."""
                    return "ok"


# --- ordinary patterns agree with msgspec's `re` ---------------------------------------------

#: Patterns that mean the same in Python's `re` and ECMA-262 for texts without a newline.
ORDINARY = (r"^[a-z]+$", r"^(ab)*c?$", r"b{2,3}", r"^[^-]*-[0-9]{1,3}$", r"a|bc", r"^\w+$")
TEXTS = st.text("abc-019 _Z", max_size=8)


@dataclasses.dataclass
class _Dc:
    s: Annotated[str, msgspec.Meta(pattern=r"^[a-c]*$")]


class _St(msgspec.Struct):
    s: Annotated[str, msgspec.Meta(pattern=r"-[0-9]")]
    more: list[Annotated[str, msgspec.Meta(pattern=r"^a")]] = []


@given(st.data())
def test_ordinary_patterns_agree_with_msgspecs_re(data: st.DataObject) -> None:
    """Where ECMA-262 and Python agree, every answer — the arguments or the error text —
    is the one msgspec's own pattern check (Python's `re`) gives."""
    pattern = data.draw(st.sampled_from(ORDINARY))
    P = Annotated[str, msgspec.Meta(pattern=pattern)]

    def fn(
        p: P, items: list[P], keys: dict[P, int], dc: _Dc | None = None, st_: _St | None = None
    ) -> str:
        """Doc."""
        return "ok"

    t = tool(fn)
    arguments = {
        "p": data.draw(TEXTS),
        "items": data.draw(st.lists(TEXTS, max_size=3)),
        "keys": data.draw(st.dictionaries(TEXTS, st.integers(0, 3), max_size=3)),
        "dc": data.draw(st.none() | st.builds(dict, s=TEXTS)),
        "st_": data.draw(st.none() | st.builds(dict, s=TEXTS, more=st.lists(TEXTS, max_size=2))),
    }
    raw = json.dumps(arguments)
    before = StructValidator(t._validator._struct)  # type: ignore[union-attr]  # msgspec + re
    outcomes = []
    for check in (lambda: t.validate(raw), lambda: before.validate("fn", raw)):
        try:
            outcomes.append(check())
        except ToolArgumentsError as error:
            outcomes.append(str(error).split(" Expected arguments", 1)[0])
    assert outcomes[0] == outcomes[1]


@pytest.mark.skipif(sys.version_info < (3, 12), reason="`type` aliases arrived in Python 3.12")
def test_type_alias_values_are_matched() -> None:
    namespace: dict[str, object] = {}
    exec(  # the `type` statement is a syntax error before 3.12
        "from typing import Annotated\n"
        "import msgspec\n"
        'type Evil = Annotated[str, msgspec.Meta(pattern="^(a+)+$")]\n'
        "type Evils = list[Evil]\n",
        namespace,
    )
    Evils = namespace["Evils"]

    @tool
    def f(words: Evils) -> str:  # type: ignore[valid-type]
        """Doc."""
        return "ok"

    assert f.validate('{"words": ["aa"]}') == {"words": ["aa"]}
    assert refusal(f, {"words": ["a", "a" * 5000 + "!"]}).endswith(
        "at `$.words[1]`: Expected `string` matching regex '^(a+)+$'."
    )


class TestDefaultsAsMsgspecMakesThem:
    """A default is never matched, however it is made (msgspec never checks one), and a
    default msgspec takes from a user's class is taken as msgspec takes it."""

    def test_copied_and_factory_defaults_are_not_matched(self) -> None:
        @dataclasses.dataclass
        class Leg:
            origin: Code
            via: list[Code] = dataclasses.field(default_factory=lambda: ["any"])

        class Fare(msgspec.Struct):
            currency: Code
            extra: list[Code] = msgspec.field(default_factory=lambda: ["none"])

        @attrs.define
        class Seat:
            cabin: Code
            notes: list[Code] = attrs.Factory(lambda: ["window"])

        @tool
        def book(leg: Leg, fare: Fare, seat: Seat, tags: list[Code] = ["n/a"]) -> str:  # noqa: B006
            """Doc."""
            return "ok"

        args = book.validate(
            '{"leg": {"origin": "CDG"}, "fare": {"currency": "EUR"}, "seat": {"cabin": "ECO"}}'
        )
        assert args == {
            "leg": Leg("CDG", ["any"]),
            "fare": Fare("EUR", ["none"]),
            "seat": Seat("ECO", ["window"]),
            "tags": ["n/a"],
        }
        args["tags"].append("x")  # type: ignore[attr-defined]
        given = {"leg": {"origin": "CDG"}, "fare": {"currency": "EUR"}, "seat": {"cabin": "ECO"}}
        assert book.validate(given)["tags"] == ["n/a"]  # a fresh copy each call
        assert refusal(book, {**given, "tags": ["n/a"]}).endswith(
            "at `$.tags[0]`: Expected `string` matching regex '^[A-Z]{3}$'."
        )

    def test_an_attrs_class_with_a_list_default(self) -> None:
        """msgspec takes an attrs class's list default as it is (the very object)."""
        shared = ["EUR"]

        @attrs.define
        class Wallet:
            owner: Code
            currencies: list[str] = shared

        @tool
        def pay(wallet: Wallet) -> str:
            """Doc."""
            return "ok"

        wallet = pay.validate('{"wallet": {"owner": "ANN"}}')["wallet"]
        assert wallet == Wallet("ANN")
        assert wallet.currencies is shared  # type: ignore[attr-defined]
        assert refusal(pay, {"wallet": {"owner": "ann"}}).endswith(
            "at `$.wallet.owner`: Expected `string` matching regex '^[A-Z]{3}$'."
        )

    def test_attrs_fields_typed_through_attr_ib(self) -> None:
        """`attr.ib(type=...)` carries no annotation; msgspec reads its `type`, and so
        does the rewrite (the tool was refused as if the class were generic)."""
        import attr

        @attr.s
        class Code2:
            value = attr.ib(type=Code)

        @tool
        def f(c: Code2) -> str:
            """Doc."""
            return "ok"

        assert f.validate('{"c": {"value": "ABC"}}') == {"c": Code2("ABC")}
        assert refusal(f, {"c": {"value": "a" * 5000 + "!"}}).endswith(
            "at `$.c.value`: Expected `string` matching regex '^[A-Z]{3}$'."
        )


def test_a_schema_that_only_names_a_pattern_decodes_as_before() -> None:
    """A parameter called `pattern` (or a default or enum value "pattern") holds no
    pattern: msgspec decodes straight into the arguments struct, nothing runs after."""

    @tool
    def grep(pattern: str, flags: list[str] = ["pattern"]) -> str:  # noqa: B006
        """Doc."""
        return pattern

    validator = grep._validator
    assert isinstance(validator, StructValidator)
    assert validator._decode_struct is validator._struct
    assert grep.validate('{"pattern": "(a+)+$"}') == {"pattern": "(a+)+$", "flags": ["pattern"]}


def test_without_re2_the_tool_says_what_to_install(tmp_path: Path) -> None:
    """A tool with a pattern cannot be built without RE2 (installed with `--no-deps`): a
    ToolDefinitionError naming the package, not a bare ImportError from inside tinytools."""
    (tmp_path / "re2.py").write_text("raise ImportError('no re2 here')\n")
    code = textwrap.dedent(
        """
        from typing import Annotated
        import msgspec
        from tinytools import ToolDefinitionError, tool
        try:
            @tool
            def f(v: Annotated[str, msgspec.Meta(pattern="^a$")]) -> str:
                '''Doc.'''
                return v
        except ToolDefinitionError as error:
            print(error)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(tmp_path)},
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "install google-re2" in done.stdout
