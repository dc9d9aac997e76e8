"""A stand-in for transformers, which xgrammar's package imports (see ``_any_name``)."""

from _any_name import __getattr__ as __getattr__
