"""The lookup browser: a live web page of a lookup service's registrations
(``lookup serve --http-port PORT``; see docs/lookup.md).

Its modules, top down. Each may import only those below it, lookup's values
and service (never the clients nor the command line), landlord's public
modules and the standard library:

* :mod:`lookup.browser.http`: the HTTP server (:class:`~lookup.browser.http.BrowserServer`,
  and :func:`~lookup.browser.http.page_at`, what ``serve(page=...)`` starts), its hostile-proof bounds;
* :mod:`lookup.browser.terms`: on a replica, the feed of the term it leads, or its state as a follower;
* :mod:`lookup.browser.feed`: the registration changes, watched in-process and fanned out to page clients;
* :mod:`lookup.browser.page`: the page's HTML, script and style (imports nothing).

Nothing below :mod:`lookup.browser` (the service, the clients) imports it: the
command line hands :func:`~lookup.browser.http.page_at` to the server.
"""

from __future__ import annotations

from .feed import LEASE_PREFIX_SHOWN, BrowserFeed, FeedLimits, Subscription
from .http import DEFAULT_HTTP_HOST, TOKEN_HEADER, BrowserServer, PageLimits, PageStarter, page_at

__all__ = ["BrowserFeed", "BrowserServer", "FeedLimits", "PageLimits", "PageStarter", "Subscription", "page_at",
           "DEFAULT_HTTP_HOST", "LEASE_PREFIX_SHOWN", "TOKEN_HEADER"]
