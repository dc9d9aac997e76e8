"""The one build step pyproject.toml cannot declare stably: the optional C speedups.

``tinytools/_relaxed_speedups.c`` is the relaxed-JSON scanner of ``tinytools/_relaxed.py``,
compiled; ``tinytools/_runtime/_baton.c`` is the caller/tool-thread hand-off of
``tinytools/_runtime/baton.py``, compiled; ``tinytools/_runtime/_contexts.c`` steps a
coroutine in a ``contextvars`` context (``tinytools/_runtime/contexts.py``), compiled. All
are optional: without a C compiler the install still succeeds and the pure-Python twins give
the same answers (more slowly).
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "tinytools._relaxed_speedups",
            sources=["tinytools/_relaxed_speedups.c"],
            optional=True,
        ),
        Extension(
            "tinytools._runtime._baton",
            sources=["tinytools/_runtime/_baton.c"],
            optional=True,
        ),
        Extension(
            "tinytools._runtime._contexts",
            sources=["tinytools/_runtime/_contexts.c"],
            optional=True,
        ),
    ]
)
