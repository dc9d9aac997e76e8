"""A sibling module, imported relatively by ``tools``."""

NOON = "12:00"
