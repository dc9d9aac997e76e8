"""The engine: a batch of tool calls in, a ``DispatchResult`` out (``dispatch``,
``dispatch_sync``).

Read it in the order a batch flows (docs/concepts/pipeline.md draws it):

* ``api`` — the entry points, ``dispatch`` and ``dispatch_sync``, and the inline
  ``on_deferred`` resume;
* ``inputs`` — ``DispatchInputs``, what one dispatch was asked;
* ``state`` — one dispatch's state: the ``Run`` built from the inputs (``new_run``), its
  event ``Sink``, and its result; ``host_calls`` (the batch a host
  hands over, checked first) and ``tool_lists`` (a tool list made into a registry once);
* ``env`` — ``DispatchEnv``, what the hooks see of the batch;
* ``admit`` — every call admitted or answered before any tool runs;
* ``effects`` — the effect-ledger hook: the started rows written before tools run,
  settled as calls are answered;
* ``execute`` — run the admitted calls: one attempt path, an inline and an event-loop
  driver, the wrap hooks; with ``outcome`` (what a call's execution produced) and
  ``stops`` (why calls were cut off, and what their messages say);
* ``fold`` — an outcome into its message and event, cut to the byte limit;
* ``result`` — ``DispatchResult``, what dispatch returns;
* ``resume`` — deferred calls (``DeferredToolRequests``) and the host's decisions
  (``DeferredToolResults``).
"""
