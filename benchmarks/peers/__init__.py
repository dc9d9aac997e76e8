"""One module per peer library; each imports its library at import time, so import it lazily."""
