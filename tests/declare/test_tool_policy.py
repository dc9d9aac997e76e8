"""Tests for `tinytools._declare.tool_policy`."""

from __future__ import annotations

import copy
import pickle
from collections.abc import Callable, Mapping
from typing import Any, get_args

import attrs
import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tinytools._declare.tool_policy import (
    ReplayMode,
    SandboxMode,
    ToolAccess,
    ToolPolicy,
    ToolRuntime,
    ToolSideEffects,
    WorkspaceAccess,
)


def key_by_path(arguments: Mapping[str, object]) -> str:
    """An idempotency key function, as a tool author would write one."""
    return str(arguments["path"])


redact_segments = st.from_regex(r"[^.$\[\]\s]+", fullmatch=True)
redact_entries = redact_segments | st.lists(redact_segments, min_size=1, max_size=3).map(
    lambda path: "$." + ".".join(path)
)
side_effects = st.builds(
    ToolSideEffects, **{field.name: st.booleans() for field in attrs.fields(ToolSideEffects)}
)
runtimes = st.builds(
    ToolRuntime,
    sandbox=st.sampled_from(get_args(SandboxMode)),
    timeout=st.none()
    | st.integers(min_value=1, max_value=10**30)
    | st.floats(min_value=0, exclude_min=True, allow_infinity=False),
    max_retries=st.integers(min_value=0),
    idempotent=st.booleans(),
    max_result_bytes=st.none() | st.integers(min_value=1),
    replay=st.sampled_from(get_args(ReplayMode)),
    blocking=st.booleans(),
    idempotency_key=st.sampled_from([None, key_by_path]),
)
accesses = st.builds(
    ToolAccess,
    workspace=st.sampled_from(get_args(WorkspaceAccess)),
    trusted_roots=st.lists(st.text()),
    credentials=st.lists(st.text()),
    approval_required=st.booleans(),
    background_safe=st.booleans(),
)
policies = st.builds(
    ToolPolicy,
    classified=st.booleans(),
    side_effects=side_effects,
    runtime=runtimes,
    access=accesses,
    redact=st.lists(redact_entries),
)


class TestDefaults:
    def test_unclassified(self) -> None:
        """A policy nobody has stated is unclassified, so strict enforcement can refuse it."""
        assert ToolPolicy().classified is False

    def test_encoding(self) -> None:
        """The default policy encodes every field of every part, with the documented defaults."""
        expected = {
            "classified": False,
            "side_effects": {
                "read_only": False,
                "writes_files": False,
                "network": False,
                "installs_dependencies": False,
                "destructive": False,
                "external_service": False,
                "payment": False,
            },
            "runtime": {
                "sandbox": "inherit",
                "timeout": None,
                "max_retries": 0,
                "idempotent": False,
                "max_result_bytes": None,
                "replay": "never",
                "blocking": False,
                "coerce": False,
            },
            "access": {
                "workspace": "none",
                "trusted_roots": [],
                "credentials": [],
                "approval_required": False,
                "background_safe": False,
            },
            "redact": [],
        }

        assert expected == msgspec.json.decode(msgspec.json.encode(ToolPolicy()))


class TestReadOnly:
    def test_read_only(self) -> None:
        """`read_only()` classifies the tool as reading only, idempotent and safe to replay."""
        expected = ToolPolicy(
            classified=True,
            side_effects=ToolSideEffects(read_only=True),
            runtime=ToolRuntime(idempotent=True, replay="safe"),
        )

        assert expected == ToolPolicy.read_only()


class TestClassified:
    def test_builder(self) -> None:
        """`ToolPolicy.classified()` is classified with every part at its default."""
        assert ToolPolicy(classified=True) == ToolPolicy.classified()

    def test_flag(self) -> None:
        """On an instance, `classified` is the flag, not the builder."""
        expected = (True, False)

        assert expected == (ToolPolicy.classified().classified, ToolPolicy().classified)

    def test_design_example(self) -> None:
        """The documented chain classifies the tool and requires approval."""
        expected = ToolPolicy(classified=True, access=ToolAccess(approval_required=True))

        assert expected == ToolPolicy.classified().with_access(approval_required=True)

    @pytest.mark.parametrize(
        "duplicate", [copy.copy, copy.deepcopy, lambda p: pickle.loads(pickle.dumps(p))]
    )
    def test_copies_keep_flag(self, duplicate: Callable[[ToolPolicy], ToolPolicy]) -> None:
        """Copying and pickling set the flag through the class attribute and keep it."""
        policy = ToolPolicy.classified()

        assert policy == duplicate(policy)


class TestWithParts:
    @pytest.mark.parametrize(
        ("build", "expected"),
        [
            (
                lambda p: p.with_side_effects(network=True, payment=True),
                ToolPolicy(side_effects=ToolSideEffects(network=True, payment=True)),
            ),
            (
                lambda p: p.with_runtime(sandbox="required", timeout=2.5, max_retries=3),
                ToolPolicy(runtime=ToolRuntime(sandbox="required", timeout=2.5, max_retries=3)),
            ),
            (
                lambda p: p.with_access(workspace="scoped", trusted_roots=["/srv"]),
                ToolPolicy(access=ToolAccess(workspace="scoped", trusted_roots=("/srv",))),
            ),
        ],
    )
    def test_changes_named_fields(
        self, build: Callable[[ToolPolicy], ToolPolicy], expected: ToolPolicy
    ) -> None:
        """Each builder changes only the named fields of its own part."""
        assert expected == build(ToolPolicy())

    def test_original_unchanged(self) -> None:
        """Builders return a new policy and leave the original as it was."""
        original = ToolPolicy.read_only()

        original.with_side_effects(read_only=False).with_runtime(timeout=1).with_access(
            background_safe=True
        )

        assert ToolPolicy.read_only() == original

    def test_does_not_classify(self) -> None:
        """Refining one part of an unclassified policy leaves it unclassified."""
        policy = ToolPolicy().with_side_effects(read_only=True).with_access(background_safe=True)

        assert policy.classified is False

    @pytest.mark.parametrize(
        ("build", "message"),
        [
            (
                lambda p: p.with_access(aproval_required=True),
                "ToolAccess has no field 'aproval_required'; valid fields: approval_required, "
                "background_safe, credentials, trusted_roots, workspace",
            ),
            (
                lambda p: p.with_runtime(read_only=True),
                "ToolRuntime has no field 'read_only'; valid fields: blocking, coerce, "
                "idempotency_key, idempotent, max_result_bytes, max_retries, replay, sandbox, "
                "timeout",
            ),
            (
                lambda p: p.with_side_effects(sandbox=True, network=True),
                "ToolSideEffects has no field 'sandbox'; valid fields: destructive, ",
            ),
        ],
    )
    def test_unknown_field(self, build: Callable[[ToolPolicy], ToolPolicy], message: str) -> None:
        """A name that is not a field of the part raises TypeError listing the valid names."""
        with pytest.raises(TypeError) as info:
            build(ToolPolicy())

        assert str(info.value).startswith(message)

    def test_validates(self) -> None:
        """Values passed to a builder are validated like constructor arguments."""
        with pytest.raises(ValueError, match="max_retries must be an int >= 0"):
            ToolPolicy().with_runtime(max_retries=-1)


class TestValidation:
    @pytest.mark.parametrize(
        ("cls", "fields", "error", "message"),
        [
            (ToolRuntime, {"timeout": -1}, ValueError, "timeout must be a finite number"),
            (ToolRuntime, {"timeout": 0}, ValueError, "or None for no limit; got 0"),
            (ToolRuntime, {"timeout": float("inf")}, ValueError, "got inf"),
            (ToolRuntime, {"timeout": float("nan")}, ValueError, "got nan"),
            (ToolRuntime, {"timeout": "5"}, ValueError, "got '5'"),
            # past float range: no clock can add it (an OverflowError before)
            (ToolRuntime, {"timeout": 10**400}, ValueError, "timeout must be a finite number"),
            (ToolRuntime, {"max_retries": -1}, ValueError, "(0 means no retries); got -1"),
            (ToolRuntime, {"max_retries": 1.0}, ValueError, "max_retries must be an int"),
            (ToolRuntime, {"max_result_bytes": -1}, ValueError, "or None for no limit; got -1"),
            (ToolRuntime, {"max_result_bytes": 0}, ValueError, "max_result_bytes must be"),
            (
                ToolRuntime,
                {"sandbox": "on"},
                ValueError,
                "sandbox must be one of 'inherit', 'disabled', 'required'; got 'on'",
            ),
            (ToolRuntime, {"replay": "always"}, ValueError, "replay must be one of 'never'"),
            (ToolRuntime, {"idempotency_key": "path"}, TypeError, "idempotency_key must be"),
            (ToolAccess, {"workspace": "all"}, ValueError, "workspace must be one of 'none'"),
            (ToolAccess, {"trusted_roots": "/srv"}, TypeError, "sequence of strings"),
            (ToolAccess, {"credentials": [1]}, TypeError, "credentials must be a sequence"),
            (ToolSideEffects, {"read_only": "yes"}, TypeError, "read_only must be True or"),
            (ToolPolicy, {"classified": 1}, TypeError, "classified must be True or False"),
            (ToolPolicy, {"runtime": {}}, TypeError, "runtime must be a ToolRuntime; got {}"),
            (ToolPolicy, {"redact": "password"}, TypeError, "redact must be a sequence"),
        ],
    )
    def test_rejects(
        self,
        cls: Callable[..., object],
        fields: dict[str, Any],
        error: type[Exception],
        message: str,
    ) -> None:
        """Invalid values are rejected with a message naming the field and what to pass."""
        with pytest.raises(error) as info:
            cls(**fields)

        assert message in str(info.value)

    def test_lists_become_tuples(self) -> None:
        """Sequence fields accept lists and store tuples."""
        access = ToolAccess(trusted_roots=["/srv"], credentials=["GITHUB_TOKEN"])
        policy = ToolPolicy(redact=["password"])

        expected = (("/srv",), ("GITHUB_TOKEN",), ("password",))

        assert expected == (access.trusted_roots, access.credentials, policy.redact)

    def test_timeout_stored_as_float(self) -> None:
        """An int timeout is stored as the float JSON decoding would give back."""
        timeout = ToolRuntime(timeout=3).timeout
        expected = (3.0, float)

        assert expected == (timeout, type(timeout))

    @given(entries=st.lists(redact_entries))
    def test_redact_accepts(self, entries: list[str]) -> None:
        """Argument names and `$`-rooted dotted paths are valid redaction entries."""
        assert tuple(entries) == ToolPolicy(redact=entries).redact

    @pytest.mark.parametrize(
        "entry", ["", "$", "$.", "$a", "a.b", "$.auth..token", "$.items[0]", " password", "a b"]
    )
    def test_redact_rejects(self, entry: str) -> None:
        """Anything but a plain name or a `$`-rooted dotted path is rejected."""
        with pytest.raises(ValueError, match=r"redact must be argument names such as 'password'"):
            ToolPolicy(redact=["password", entry])


class TestJson:
    @given(policy=policies)
    def test_round_trip(self, policy: ToolPolicy) -> None:
        """Encoding then decoding any policy gives an equal policy."""
        assert policy == msgspec.json.decode(msgspec.json.encode(policy), type=ToolPolicy)

    @given(policy=policies)
    def test_convert_round_trip(self, policy: ToolPolicy) -> None:
        """`msgspec.convert` of the builtins form also gives an equal policy."""
        assert policy == msgspec.convert(msgspec.to_builtins(policy), ToolPolicy)

    def test_missing_fields_default(self) -> None:
        """Fields absent from the JSON take their defaults."""
        data = b'{"classified": true, "runtime": {"replay": "safe"}}'

        expected = ToolPolicy.classified().with_runtime(replay="safe")

        assert expected == msgspec.json.decode(data, type=ToolPolicy)

    @pytest.mark.parametrize(
        ("data", "message"),
        [
            (b'{"runtime": {"max_retries": -1}}', "max_retries must be an int >= 0"),
            (b'{"runtime": {"timeout": 0}}', "timeout must be a finite number"),
            (b'{"access": {"workspace": "all"}}', "Invalid enum value 'all'"),
            (b'{"redact": ["a b"]}', "redact must be argument names"),
            (b'{"classified": "yes"}', "Expected `bool`, got `str`"),
        ],
    )
    def test_decode_validates(self, data: bytes, message: str) -> None:
        """Decoding runs the same validation as construction."""
        with pytest.raises(msgspec.ValidationError, match=message):
            msgspec.json.decode(data, type=ToolPolicy)


class TestIdempotencyKey:
    def test_stored(self) -> None:
        """The key function given to `with_runtime` is what the runtime exposes."""
        policy = ToolPolicy.read_only().with_runtime(idempotency_key=key_by_path)

        assert key_by_path is policy.runtime.idempotency_key

    def test_not_encoded(self) -> None:
        """The key function is left out of the JSON."""
        policy = ToolPolicy.read_only()

        with_key = policy.with_runtime(idempotency_key=key_by_path)

        assert msgspec.json.encode(policy) == msgspec.json.encode(with_key)

    def test_not_compared(self) -> None:
        """Policies differing only in their key function are equal and hash alike."""
        with_key = ToolRuntime(idempotency_key=key_by_path)

        assert (ToolRuntime(), hash(ToolRuntime())) == (with_key, hash(with_key))

    def test_decoded_has_none(self) -> None:
        """A decoded policy has no key function."""
        policy = ToolPolicy().with_runtime(idempotency_key=key_by_path)

        decoded = msgspec.json.decode(msgspec.json.encode(policy), type=ToolPolicy)

        assert decoded.runtime.idempotency_key is None
