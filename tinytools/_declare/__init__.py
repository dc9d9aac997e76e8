"""Declaration: a function or a hand-written schema in, an immutable ``Tool`` out.

In the order a tool is built: ``decorate`` (``@tool``), ``introspect`` (signature →
parameters), ``docstrings`` (parameter descriptions), ``schema`` (parameters → JSON
schema and the generated Struct), ``signature_patterns``, ``pattern_classes`` and
``patterns`` (``pattern`` constraints matched by RE2), ``schema_check`` and
``schema_dialect`` (a hand-written schema checked against its meta-schema, and what of
it is enforced), ``spec`` (``Tool``), ``tool_policy`` (``ToolPolicy``), ``tool_format``
(``ToolFormat``), ``exposure`` (``ExposureExplanation``), ``registry`` (``Registry``)
and ``foreign`` (BFCL's schema dialect). A tool's arguments are checked by ``validate``
(the two validators), over ``decode`` (raw JSON text), ``json_values`` (what JSON can
carry) and ``messages`` (what the model reads when they are refused); ``coerce`` reads
numbers and booleans sent as strings, when a policy opts in; ``models`` lets a pydantic
model stand as a parameter type (its schema, its validation) without importing pydantic.
"""
