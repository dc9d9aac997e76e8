"""The threads and event loops the engine runs tools on (no engine logic lives here).

``threads`` (the tool thread pool) over ``baton`` (the caller/worker hand-off, compiled
in ``_baton.c`` when built); ``loop`` (``dispatch_sync``'s reused asyncio loop);
``tasks`` (a batch's asyncio tasks); ``wakeup`` (waking a loop's task from any thread);
``detect`` (which event loop runs, and a tool written for the other one); ``contexts``
(running a coroutine's steps in a ``contextvars`` context).
"""
