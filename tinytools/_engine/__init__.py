"""The engine: a batch of tool calls in, a ``DispatchResult`` out (``dispatch``,
``dispatch_sync``).

Read it in the order a batch flows (docs/concepts/pipeline.md draws it): ``execute``
(run the admitted calls: one attempt path, an inline and an event-loop driver, the wrap
hooks), with ``outcome`` (what a call's execution produced) and ``stops`` (why calls
were cut off, and what their messages say).
"""
