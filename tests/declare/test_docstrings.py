"""Tests for `tinytools._declare.docstrings`."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tinytools._declare.docstrings import ParsedDocstring, parse_docstring

#: Section names the parser must know; the parser may know more.
SECTION_NAMES = frozenset(
    {
        "args",
        "arguments",
        "attributes",
        "example",
        "examples",
        "keyword args",
        "keyword arguments",
        "note",
        "notes",
        "other parameters",
        "parameters",
        "params",
        "raises",
        "references",
        "return",
        "returns",
        "see also",
        "todo",
        "warning",
        "warnings",
        "warns",
        "yields",
    }
)


def header_above_indented_text(description: str) -> str | None:
    """The first line of ``description`` that is a section header over indented text, if any."""
    lines = description.split("\n")
    for i, line in enumerate(lines):
        text = line.rstrip()
        if not text.endswith(":") or line[:1].isspace():
            continue
        if " ".join(text[:-1].split()).lower() not in SECTION_NAMES:
            continue
        following = next((later for later in lines[i + 1 :] if later.strip()), "")
        if following[:1].isspace():
            return line
    return None


class TestParsedDocstring:
    def test_params_are_read_only(self):
        """The params mapping cannot be changed after construction."""
        parsed = ParsedDocstring("Summary.", {"x": "The x."})

        with pytest.raises(TypeError):
            parsed.params["y"] = "The y."  # type: ignore[index]

    def test_params_are_copied(self):
        """Changing the mapping passed in does not change the parsed docstring."""
        params = {"x": "The x."}
        parsed = ParsedDocstring("Summary.", params)

        params["y"] = "The y."

        assert {"x": "The x."} == dict(parsed.params)

    def test_hashable_and_compared_by_params(self):
        """Instances hash, and two with different params are not equal."""
        one = ParsedDocstring("Summary.", {"x": "The x."})

        assert hash(one) == hash(ParsedDocstring("Summary.", {"x": "The x."}))
        assert one == ParsedDocstring("Summary.", {"x": "The x."})
        assert one != ParsedDocstring("Summary.", {"x": "Another x."})


class TestParseDocstring:
    @pytest.mark.parametrize("doc", [None, "", "   ", "\n\n  \t\n"])
    def test_no_docstring(self, doc):
        """A missing or blank docstring gives an empty description and no params."""
        assert ParsedDocstring("") == parse_docstring(doc)

    def test_summary_only(self):
        """A one-line docstring is the whole description."""
        assert ParsedDocstring("Add two numbers.") == parse_docstring("  Add two numbers.  ")

    def test_body_kept_as_written(self):
        """The body is dedented, lines within a paragraph are kept and paragraphs are separated."""
        doc = """Summary.

            First line of the body,
            second line.


            Second paragraph::

                code = 1
            """

        expected = (
            "Summary.\n\nFirst line of the body,\nsecond line.\n\n"
            "Second paragraph::\n\n    code = 1"
        )
        assert expected == parse_docstring(doc).description

    def test_prose_ending_with_colon_is_not_a_section(self):
        """A body line ending in ':' stays when its name is not a known section."""
        doc = """Summary.

            The options are as follows:

                - fast
                - slow

            Args:
                mode: Fast or slow.
            """

        expected = ParsedDocstring(
            "Summary.\n\nThe options are as follows:\n\n    - fast\n    - slow",
            {"mode": "Fast or slow."},
        )
        assert expected == parse_docstring(doc)

    def test_known_name_without_indented_text_is_prose(self):
        """A known name ending in ':' with no indented text beneath it is prose."""
        doc = """Summary.

            Note:
            this line is not indented.
            """

        assert "Summary.\n\nNote:\nthis line is not indented." == parse_docstring(doc).description

    def test_first_description_wins(self):
        """A parameter documented twice keeps its first description."""
        doc = """Summary.

            Args:
                x: First.
                x: Second.

            :param x: Third.
            """

        assert {"x": "First."} == dict(parse_docstring(doc).params)

    def test_mixed_google_summary_and_sphinx_fields(self):
        """Sphinx fields after a Google-style body are parsed."""
        doc = """Summary.

            Note:
                Be careful.

            :param x: The x.
            :returns: Nothing.
            """

        assert ParsedDocstring("Summary.", {"x": "The x."}) == parse_docstring(doc)

    def test_text_starting_after_opening_quotes(self):
        """Sections are found when the text starts on the line after the opening quotes."""
        doc = "\n    Summary.\n\n    Args:\n        x: The x.\n    "

        assert ParsedDocstring("Summary.", {"x": "The x."}) == parse_docstring(doc)

    def test_first_line_dedented(self):
        """The first line loses its indent even when cleandoc leaves it, as for later lines at 0."""
        doc = "\n  Summary.\nArgs:\n    x: The x."

        assert ParsedDocstring("Summary.", {"x": "The x."}) == parse_docstring(doc)


class TestGoogle:
    DOC = """Add numbers.

        Longer explanation.

        Args:
            a (int): The first
                number.

                It may be negative.
            b: The second number.
            *args: Extra numbers.
            **kwargs (dict[str, int], optional): Options.

        Keyword Args:
            strict (bool): Fail on overflow.

        Returns:
            int: The sum.

        Raises:
            OverflowError: Too big.

        Yields:
            Partial sums.

        Examples:
            >>> add(1, 2)
            3

        Notes:
            Uses Python integers.
        """

    def test_description(self):
        """Only the summary and body are in the description."""
        assert "Add numbers.\n\nLonger explanation." == parse_docstring(self.DOC).description

    def test_params(self):
        """Entries are joined, types and stars are dropped, and docstring order is kept."""
        expected = [
            ("a", "The first number.\n\nIt may be negative."),
            ("b", "The second number."),
            ("args", "Extra numbers."),
            ("kwargs", "Options."),
            ("strict", "Fail on overflow."),
        ]

        assert expected == list(parse_docstring(self.DOC).params.items())

    @pytest.mark.parametrize(
        "header",
        [
            "Arguments",
            "Parameters",
            "Params",
            "Keyword Arguments",
            "Other Parameters",
            "KEYWORD  args",
        ],
    )
    def test_parameter_section_names(self, header):
        """Every parameter section name yields params, whatever its case and spacing."""
        doc = f"Summary.\n\n{header}:\n    x: The x.\n"

        assert ParsedDocstring("Summary.", {"x": "The x."}) == parse_docstring(doc)

    def test_nested_type_and_text_on_next_line(self):
        """A type with nested brackets is dropped and text may start on the next line."""
        doc = """Summary.

            Args:
                pair (tuple(int, int)):
                    Two numbers.
            """

        assert {"pair": "Two numbers."} == dict(parse_docstring(doc).params)

    def test_badly_indented_line_continues_the_entry(self):
        """A line at entry indentation that is not an entry continues the entry above it."""
        doc = """Summary.

            Args:
                x: Wrapped at the
                wrong indentation.
            """

        assert {"x": "Wrapped at the wrong indentation."} == dict(parse_docstring(doc).params)

    def test_deeper_name_colon_lines_are_text(self):
        """Lines indented beyond the entries never start an entry, even as ``name: text``."""
        doc = """Summary.

            Args:
                mode: One of:

                    fast: quick.
                    slow: careful.
            """

        expected = {"mode": "One of:\n\nfast: quick. slow: careful."}
        assert expected == dict(parse_docstring(doc).params)

    def test_number_at_entry_indentation_is_not_a_name(self):
        """A line at entry indentation whose name is not an identifier continues the entry."""
        doc = """Summary.

            Args:
                x: The x, one of
                1: a number.
            """

        assert {"x": "The x, one of 1: a number."} == dict(parse_docstring(doc).params)

    def test_prose_after_section_is_a_new_paragraph(self):
        """Prose after a section that directly follows the summary starts a new paragraph."""
        doc = """Summary.
            Args:
                x: The x.

            More prose.
            """

        assert "Summary.\n\nMore prose." == parse_docstring(doc).description

    def test_prose_after_sections_kept(self):
        """Prose at the base indentation after a section is description again."""
        doc = """Summary.

            Args:
                x: The x.

            More prose.
            """

        assert "Summary.\n\nMore prose." == parse_docstring(doc).description

    def test_doctest_after_section_dropped(self):
        """A doctest block at the base indentation after a section is not description."""
        doc = """Summary.

            Args:
                x: The x.

            >>> f(1)
            2

                indented output
            """

        assert ParsedDocstring("Summary.", {"x": "The x."}) == parse_docstring(doc)


class TestNumpy:
    DOC = """Add numbers.

        Longer explanation.

        Parameters
        ----------
        a, b : int
            The numbers to add,
            in any order.

            Both are required.
        *args : int
            Extra numbers.
        flag

        Other Parameters
        ----------------
        strict : bool, optional
            Fail on overflow.

        Returns
        -------
        int
            The sum.

        Raises
        ------
        OverflowError
            Too big.

        Notes
        -----
        Uses Python integers.

        Examples
        --------
        >>> add(1, 2)
        3
        """

    def test_description(self):
        """Only the summary and body are in the description."""
        assert "Add numbers.\n\nLonger explanation." == parse_docstring(self.DOC).description

    def test_params(self):
        """Several names share a description, types are dropped, and order is kept."""
        both = "The numbers to add, in any order.\n\nBoth are required."
        expected = [
            ("a", both),
            ("b", both),
            ("args", "Extra numbers."),
            ("flag", ""),
            ("strict", "Fail on overflow."),
        ]

        assert expected == list(parse_docstring(self.DOC).params.items())

    def test_header_with_colon(self):
        """A title with a trailing colon is still a header."""
        doc = "Summary.\n\nParameters:\n-----------\nx : int\n    The x.\n"

        assert ParsedDocstring("Summary.", {"x": "The x."}) == parse_docstring(doc)

    def test_names_that_are_not_identifiers_skipped(self):
        """An entry whose name is not an identifier documents nothing."""
        doc = "Summary.\n\nParameters\n----------\nmy-x : int\n    The x.\ny\n    The y.\n"

        assert {"y": "The y."} == dict(parse_docstring(doc).params)

    @pytest.mark.parametrize("underline", ["--", "--- not dashes only"])
    def test_not_an_underline(self, underline):
        """Fewer than three dashes, or dashes followed by text, do not underline a title."""
        doc = f"Summary.\n\nNotes\n{underline}\nMore."

        assert f"Summary.\n\nNotes\n{underline}\nMore." == parse_docstring(doc).description

    def test_unknown_underlined_title_is_prose(self):
        """A heading that is not a known section name stays in the description."""
        doc = "Summary.\n\nDetails\n-------\nMore."

        assert "Summary.\n\nDetails\n-------\nMore." == parse_docstring(doc).description


class TestSphinx:
    DOC = """Add numbers.

        Longer explanation.

        :param a: The first
            number.
        :type a: int
        :param int b: The second number.
        :parameter c: The third.
        :arg d: The fourth.
        :argument e: The fifth.
        :key f: The sixth.
        :keyword \\*\\*g: The rest.
        :returns: The sum.
        :rtype: int
        :raises OverflowError: Too big.
        :meta private:

        >>> add(1, 2)
        3
        """

    def test_description(self):
        """Fields and the doctest after them are not description."""
        assert "Add numbers.\n\nLonger explanation." == parse_docstring(self.DOC).description

    def test_params(self):
        """Each parameter field is read, types and escaped stars are dropped."""
        expected = [
            ("a", "The first number."),
            ("b", "The second number."),
            ("c", "The third."),
            ("d", "The fourth."),
            ("e", "The fifth."),
            ("f", "The sixth."),
            ("g", "The rest."),
        ]

        assert expected == list(parse_docstring(self.DOC).params.items())

    def test_role_at_line_start_is_prose(self):
        """A line opening with a role such as :class: is not a field."""
        doc = "Summary.\n\n:class:`Tool` does the work."

        assert "Summary.\n\n:class:`Tool` does the work." == parse_docstring(doc).description


# Lines that look like parts of docstrings, so that generated text hits every branch.
DOC_LINES = st.one_of(
    st.sampled_from(
        [
            "",
            "Summary.",
            "Args:",
            "Returns:",
            "Examples:",
            "Keyword  ARGS :",
            "Parameters",
            "Notes",
            "----------",
            "x : int",
            "x, *y",
            "x (int): The x.",
            "**kw (dict(str, int)):",
            ":param x: The x.",
            ":param int y:",
            ":returns: Nothing.",
            ":class:`X` text",
            ">>> f()",
            "Some prose:",
        ]
    ),
    st.text(max_size=12),
)
INDENTED_LINES = st.tuples(st.sampled_from(["", " ", "    "]), DOC_LINES).map("".join)


class TestProperties:
    @given(st.text())
    def test_arbitrary_text(self, doc):
        """Any text parses, into a stripped description and stripped param texts."""
        parsed = parse_docstring(doc)

        assert parsed.description == parsed.description.strip()
        assert all(text == text.strip() for text in parsed.params.values())

    @given(st.lists(INDENTED_LINES, max_size=20).map("\n".join))
    def test_no_section_leaks(self, doc):
        """No section header over indented text and no parameter field stays in the description."""
        parsed = parse_docstring(doc)

        assert None is header_above_indented_text(parsed.description)
        assert not re.search(r"^:param[^\S\n][^:\n]*:(?!\S)", parsed.description, re.MULTILINE)
        assert all(name.isidentifier() for name in parsed.params)
