"""Small, valid files for the attachment tests: what a tool returning a chart or a report
would put in its ``ImageBlock`` or ``FileBlock``."""

from __future__ import annotations

import base64

#: A one-pixel PNG image (69 bytes).
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC"
)
#: The start of a PDF document (what the attachment checks read).
PDF = b"%PDF-1.7\n1 0 obj <<>> endobj\ntrailer <<>>\n%%EOF\n"


def b64(data: bytes) -> str:
    """``data`` as the base64 text a request carries."""
    return base64.b64encode(data).decode()
