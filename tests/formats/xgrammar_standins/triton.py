"""A stand-in for triton, which xgrammar's package imports (see ``_any_name``)."""

from _any_name import __getattr__ as __getattr__
