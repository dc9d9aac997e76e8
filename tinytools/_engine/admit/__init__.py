"""Admission: every call of a batch admitted or answered before any tool runs.

``admission`` (one call in, one verdict out: the before-hook walk with its sync and
async drivers, name resolution, decoding, validation, deferral), ``discovery``
(discovery's ``tool_call`` unwrapped and ``tool_search`` answered, before anything else
looks at a call).
"""
