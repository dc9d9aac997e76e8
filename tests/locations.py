"""Where the tests find data outside the repository.

The third-party corpora live beside the repository, in ``../shared/corpora``;
``TINYTOOLS_CORPORA`` overrides the location. Tests take the ``corpora`` fixture
(tests/conftest.py), which skips them with a reason when the folder is absent;
modules that parametrize over corpus files read ``CORPORA`` at collection time.
A test that loops over a whole corpus loops over :func:`corpus_sample` of it.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import TypeVar

from hypothesis import settings

__all__ = ["CORPORA", "COMPAT_EVERY", "corpus_sample"]

T = TypeVar("T")

#: Under the "compat" hypothesis profile a corpus-wide loop takes every this-many-th item.
COMPAT_EVERY = 10

CORPORA = Path(
    os.environ.get(
        "TINYTOOLS_CORPORA", Path(__file__).resolve().parents[1].parent / "shared" / "corpora"
    )
)


def corpus_sample(items: Sequence[T]) -> Sequence[T]:
    """``items`` whole, or under the "compat" hypothesis profile (CI's older Pythons) every
    :data:`COMPAT_EVERY`-th of them, the first included: a deterministic sample. Those runs
    are there to find what differs between Python versions, which any item shows; the
    whole corpus is proved under "dev" and "ci" (tests/conftest.py has the profiles)."""
    if settings.get_current_profile_name() == "compat":
        return items[::COMPAT_EVERY]
    return items
