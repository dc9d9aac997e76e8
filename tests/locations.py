"""Where the tests find data outside the repository.

The third-party corpora live beside the repository, in ``../shared/corpora``;
``TINYTOOLS_CORPORA`` overrides the location. Tests take the ``corpora`` fixture
(tests/conftest.py), which skips them with a reason when the folder is absent;
modules that parametrize over corpus files read ``CORPORA`` at collection time.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["CORPORA"]

CORPORA = Path(
    os.environ.get(
        "TINYTOOLS_CORPORA", Path(__file__).resolve().parents[1].parent / "shared" / "corpora"
    )
)
