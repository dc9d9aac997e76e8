"""A package for the command line's target tests (tests/test_cli_target.py)."""
