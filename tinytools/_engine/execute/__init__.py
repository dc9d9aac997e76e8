"""One call's execution: its attempts, where they run, and the wraps around them."""
