"""The one build step pyproject.toml cannot declare stably: the optional C scanner.

``tinytools/_relaxed_speedups.c`` is the relaxed-JSON scanner of ``tinytools/_relaxed.py``,
compiled. It is optional: without a C compiler the install still succeeds and
``tinytools.repair`` uses the pure-Python scanner, which gives the same answers.
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "tinytools._relaxed_speedups",
            sources=["tinytools/_relaxed_speedups.c"],
            optional=True,
        )
    ]
)
