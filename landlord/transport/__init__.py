"""The transport: how calls reach a landlord and how a server takes them, below leases and grants.

- both sides: :mod:`~landlord.transport.serializers` (msgpack in landlord's
  dialect, which landlord's own proxies speak; every serializer's parse errors named);
- the caller's side: :mod:`~landlord.transport.proxies` (one proxy per thread and
  URI, calls bounded in time, speaking landlord's serializer), :mod:`~landlord.transport.lanes` (calls to one
  peer in order, on bounded workers), :mod:`~landlord.transport.backoff` (when to
  try again), :mod:`~landlord.transport.verdicts` (a failure: a definite answer,
  or a reason to retry);
- the server's side: :mod:`~landlord.transport.framing` (a message gathered whole
  under its limits; pure), :mod:`~landlord.transport.frameserver` (the guarded
  server's gathering thread) with its parts: :mod:`~landlord.transport.admission`
  (which connections it takes, in all and per host),
  :mod:`~landlord.transport.workers` (how a whole message is served),
  :mod:`~landlord.transport.connection` (a connection as both sides share it),
  :mod:`~landlord.transport.refusals` (refusals counted, logged in bursts, told)
  and :mod:`~landlord.transport.budget` (the bytes of large messages; pure);
  :mod:`~landlord.transport.multiplex` (Pyro5's multiplex server,
  greeting a connection once it speaks), :mod:`~landlord.transport.httpserver`
  (the small HTTP server of health checks and metrics, bounding every client), :mod:`~landlord.transport.clients` (who
  a caller is counted as), :mod:`~landlord.transport.callbacks` (the URIs a
  server may call back), :mod:`~landlord.transport.addresses` (what a server
  advertises).

It may import only the basics (errors, clock, duration) and :mod:`landlord.tls`;
everything above it may import it. Inside, the guarded server's parts import
downwards only: frameserver, then admission and workers, then connection,
refusals and budget, then framing; serializers imports nothing of landlord's.
Loggers keep the names the modules had before they moved here
(``landlord.proxies``, ``landlord.frameserver``, ...); the guarded server's
parts log as ``landlord.frameserver``, as they did when they were its methods.
"""
