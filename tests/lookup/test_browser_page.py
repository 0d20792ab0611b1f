"""The lookup browser page in a real browser: headless Chromium (Debian's ``chromium`` and
``chromium-driver``) driven by Selenium, against ``python -m lookup serve --http-port 0`` in a process
of its own, with a registrant process that is killed.

Skipped when Selenium, chromium or chromedriver is missing, unless ``LANDLORD_REQUIRE_BROWSER=1``
(CI), which makes their absence a failure. One browser for the module; each test loads the page once.
Set ``LOOKUP_BROWSER_SCREENSHOT=PATH`` to save the page with a few registrations (docs/img/lookup-browser.png).
"""

from __future__ import annotations

import os
import pathlib
import re
import shutil
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from etcd_fixtures import ReplicaGroup, cluster, etcd_cluster  # noqa: F401  (fixtures)
from lookup_processes import LookupProcess

from landlord import LeaseDeniedError, UnknownLeaseError
from landlord.testing import ChildProcess, free_port
from landlord.testing.etcd import EtcdCluster
from lookup import Comment, Location, Name, ServiceInfo, ServiceItem, locate
from lookup.browser import LEASE_PREFIX_SHOWN, BrowserServer
from lookup.browser.terms import TermFeed
from lookup.discovery.unicast import LOOKUP_OBJECT_ID
from lookup.service.replicated import ReplicatedLookupService

CHROMIUM, CHROMEDRIVER = shutil.which("chromium"), shutil.which("chromedriver")
REQUIRED = os.environ.get("LANDLORD_REQUIRE_BROWSER") == "1"
TOKEN = "the operators' admin token, for the page"
GREETER_SERVICE = pathlib.Path(__file__).resolve().parent.parent / "multihost" / "mh_service.py"
GREETER_LEASE = 2.0  # seconds: the killed registrant's term
HOSTILE = "<script>window.pwned=1</script><img src=x onerror=\"window.pwned=2\">"
# names a stranger's DNS points at this machine, as a DNS-rebinding page's name is
REBOUND_RULES = "MAP rebound.test 127.0.0.1, MAP public.test 127.0.0.1"

try:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service as DriverService
    from selenium.webdriver.common.by import By
except ImportError:  # pragma: no cover (CI installs the test extra)
    webdriver = None

MISSING = [what for what, found in (("selenium (pip)", webdriver), ("chromium (apt)", CHROMIUM),
                                    ("chromedriver (apt: chromium-driver)", CHROMEDRIVER)) if not found]
if MISSING and REQUIRED:
    raise RuntimeError(f"LANDLORD_REQUIRE_BROWSER=1, but {', '.join(MISSING)} missing")
pytestmark = pytest.mark.skipif(bool(MISSING), reason=f"no real browser here: {', '.join(MISSING)} missing "
                                                      "(set LANDLORD_REQUIRE_BROWSER=1 to fail instead)")


class Served:
    """``lookup serve`` with the page and an admin token, its page's address, and a proxy of it."""

    def __init__(self, process: LookupProcess, port: int, url: str) -> None:
        self.process = process
        self.port = port
        self.url = url
        self.lookup = locate("127.0.0.1", port)

    def register(self, *types: str, attributes: tuple[Any, ...] = (), lease: float = 60) -> Any:
        return self.lookup.register(ServiceItem(None, f"PYRO:quotes@127.0.0.1:{self.port}", types or ("acme.Quotes",),
                                                attributes), lease)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    token_file = tmp_path_factory.mktemp("browser") / "admin-token"
    token_file.write_text(TOKEN + "\n")
    port = free_port()
    with LookupProcess("serve", "--port", str(port), "--no-announce", "--http-port", "0",
                       "--admin-token-file", str(token_file)) as process:
        url = process.wait_for(r"^lookup browser at (http://\S+)").group(1)
        process.wait_for("^lookup service at ")
        served = Served(process, port, url)
        yield served
        served.lookup._pyroRelease()


@pytest.fixture(scope="module")
def driver() -> Iterator[Any]:
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                     "--window-size=1400,500", f"--host-resolver-rules={REBOUND_RULES}"):
        options.add_argument(argument)
    browser = webdriver.Chrome(service=DriverService(CHROMEDRIVER), options=options)
    yield browser
    browser.quit()


def wait_until(condition: Callable[[], Any], timeout: float) -> float | None:
    """Seconds until ``condition()`` was true, or ``None``: not within ``timeout``."""
    started = time.monotonic()
    while not condition():
        if time.monotonic() - started > timeout:
            return None
        time.sleep(0.02)
    return time.monotonic() - started


@pytest.fixture
def page(served: Served, driver: Any) -> Any:
    """The page, loaded once and streaming."""
    driver.get(served.url)
    assert wait_until(lambda: driver.find_element(By.ID, "status").text == "live", 5) is not None
    driver.execute_script("window.loadedOnce = true")  # gone if the page reloads
    return driver


def rows(driver: Any, service_id: str) -> list[Any]:
    return driver.find_elements(By.CSS_SELECTOR, f'tr[data-service-id="{service_id}"]')


def cell(driver: Any, service_id: str, name: str) -> str:
    [row] = rows(driver, service_id)
    return str(row.find_element(By.CSS_SELECTOR, f"td.{name}").text)


def test_a_registration_appears_without_a_reload_within_a_second(served: Served, page: Any) -> None:
    registration = served.register("acme.Appearing", attributes=(Name("appearing"),))
    took = wait_until(lambda: rows(page, registration.service_id), 1.0)
    assert took is not None, "the registration did not appear within 1 s"
    assert page.execute_script("return window.loadedOnce") is True
    assert cell(page, registration.service_id, "types") == "acme.Appearing"
    assert cell(page, registration.service_id, "address") == f"PYRO:quotes@127.0.0.1:{served.port}"
    registration.lease.cancel()
    assert wait_until(lambda: not rows(page, registration.service_id), 1.0) is not None


def test_the_countdown_moves(served: Served, page: Any) -> None:
    registration = served.register(attributes=(Name("counting"),), lease=30)
    assert wait_until(lambda: rows(page, registration.service_id), 1.0) is not None
    first = float(cell(page, registration.service_id, "left").removesuffix(" s"))
    assert 25 < first <= 30
    assert wait_until(lambda: float(cell(page, registration.service_id, "left").removesuffix(" s")) < first - 0.3,
                      2.0) is not None
    registration.lease.cancel()


def test_a_killed_service_disappears_within_its_term_and_a_second(served: Served, page: Any) -> None:
    lookup_uri = f"PYRO:lookup.LookupService@127.0.0.1:{served.port}"
    with ChildProcess(str(GREETER_SERVICE), lookup_uri, "--host", "127.0.0.1", "--lease", str(GREETER_LEASE),
                      stdin=True) as greeter:
        service_id = greeter.expect("registered ").split()[0]
        assert wait_until(lambda: rows(page, service_id), 1.0) is not None
        greeter.kill()
        killed = time.monotonic()
    gone = wait_until(lambda: not rows(page, service_id), GREETER_LEASE + 1.0)
    assert gone is not None, f"still shown {time.monotonic() - killed:.1f} s after its registrant was killed"


def test_a_hostile_attribute_renders_as_text_and_runs_nothing(served: Served, page: Any) -> None:
    registration = served.register("acme.Hostile", attributes=(Name(HOSTILE), Comment(HOSTILE)))
    assert wait_until(lambda: rows(page, registration.service_id), 1.0) is not None
    shown = cell(page, registration.service_id, "attributes")
    assert shown.count(HOSTILE) == 2
    assert page.execute_script("return window.pwned === undefined")
    assert page.find_elements(By.CSS_SELECTOR, "#registrations img, #registrations script") == []
    registration.lease.cancel()


def test_the_filters_show_only_matching_registrations(served: Served, page: Any) -> None:
    quotes = served.register("acme.Quotes", attributes=(Location(floor="3", room="12", building="north"),))
    trades = served.register("acme.Trades", attributes=(Name("trades"),))
    assert wait_until(lambda: rows(page, quotes.service_id) and rows(page, trades.service_id), 1.0) is not None
    page.find_element(By.ID, "type-filter").send_keys("quotes")
    assert rows(page, quotes.service_id)[0].is_displayed() and not rows(page, trades.service_id)[0].is_displayed()
    page.find_element(By.ID, "type-filter").clear()
    page.find_element(By.ID, "attribute-filter").send_keys("trades")
    assert wait_until(lambda: not rows(page, quotes.service_id)[0].is_displayed(), 1.0) is not None
    assert rows(page, trades.service_id)[0].is_displayed()
    quotes.lease.cancel(), trades.lease.cancel()


def evict_from_the_page(page: Any, prefix: str, token: str | None) -> int:
    """POST /evict from the page's own script, as its button would; the status."""
    return int(page.execute_async_script("""
        const [prefix, token, done] = arguments;
        const headers = {"Content-Type": "application/json"};
        if (token !== null) headers["X-Admin-Token"] = token;
        fetch("/evict", {method: "POST", headers: headers, body: JSON.stringify({lease: prefix})})
            .then((response) => done(response.status), () => done(-1));
    """, prefix, token))


def test_evict_ends_a_lease_only_with_the_admin_token(served: Served, page: Any) -> None:
    registration = served.register("acme.Evicted", attributes=(Name("evicted"),))
    prefix = registration.lease.cookie[:LEASE_PREFIX_SHOWN]
    assert wait_until(lambda: rows(page, registration.service_id), 1.0) is not None
    assert page.find_elements(By.CSS_SELECTOR, "button.evict") == []  # no token, no buttons
    assert evict_from_the_page(page, prefix, None) == 403
    assert evict_from_the_page(page, prefix, "a wrong token, long enough to be one") == 403
    registration.lease.renew(60)  # still its lease
    assert rows(page, registration.service_id)

    page.find_element(By.ID, "token").send_keys("a wrong token, long enough to be one")
    page.find_element(By.ID, "token-use").click()
    assert wait_until(lambda: page.find_element(By.ID, "admin-status").text == "token refused", 2) is not None
    assert page.find_elements(By.CSS_SELECTOR, "button.evict") == []

    page.find_element(By.ID, "token").send_keys(TOKEN)
    page.find_element(By.ID, "token-use").click()
    assert wait_until(lambda: page.find_elements(By.CSS_SELECTOR, "button.evict"), 2) is not None
    assert page.find_element(By.ID, "token").get_attribute("value") == ""  # kept in the script's memory only
    assert TOKEN not in page.execute_script("return document.cookie + JSON.stringify(localStorage) "
                                            "+ JSON.stringify(sessionStorage) + document.body.innerHTML")
    assert cell(page, registration.service_id, "lease") == prefix
    [row] = rows(page, registration.service_id)
    row.find_element(By.CSS_SELECTOR, "button.evict").click()
    assert wait_until(lambda: not rows(page, registration.service_id), 2) is not None
    with pytest.raises((LeaseDeniedError, UnknownLeaseError)):
        registration.lease.renew(60)
    assert re.fullmatch(r"evicted \S+", page.find_element(By.ID, "admin-status").text)


def test_a_few_registrations_shown_and_saved_for_the_docs(served: Served, page: Any) -> None:
    made = [
        served.register("acme.quotes.QuoteService", attributes=(
            Name("acme.quotes"), ServiceInfo(name="Quotes", manufacturer="Acme", vendor="Acme",
                                             version="2.1", model="", serial_number=""))),
        served.register("acme.trades.TradeService", "acme.audit.Audited",
                        attributes=(Name("acme.trades"), Location(floor="3", room="12", building="north"))),
        served.register("acme.reports.ReportService", attributes=(Name("acme.reports"), Comment("nightly")),
                        lease=20),
    ]
    assert wait_until(lambda: all(rows(page, each.service_id) for each in made), 1.0) is not None
    page.find_element(By.ID, "token").send_keys(TOKEN)
    page.find_element(By.ID, "token-use").click()
    assert wait_until(lambda: len(page.find_elements(By.CSS_SELECTOR, "button.evict")) >= 3, 2) is not None
    target = os.environ.get("LOOKUP_BROWSER_SCREENSHOT")
    if target:
        assert page.save_screenshot(target)
    for each in made:
        each.lease.cancel()


def page_port(served: Served) -> int:
    return int(served.url.rstrip("/").rsplit(":", 1)[1])


def test_a_rebound_name_gets_neither_the_page_nor_the_stream_nor_an_eviction(served: Served, driver: Any) -> None:
    registration = served.register("acme.Rebound", attributes=(Name("rebound"),))
    driver.get(f"http://rebound.test:{page_port(served)}/")
    assert "this page answers at localhost or an IP address only" in driver.find_element(By.TAG_NAME, "body").text
    assert driver.find_elements(By.ID, "registrations") == []
    # the rebinding page's own script, same-origin as far as the browser knows, with the token even
    assert driver.execute_async_script("""
        const done = arguments[0];
        fetch("/events").then((response) => done(response.status), () => done(-1));
    """) == 421
    prefix = registration.lease.cookie[:LEASE_PREFIX_SHOWN]
    assert evict_from_the_page(driver, prefix, TOKEN) == 421
    registration.lease.renew(60)  # still its lease
    registration.lease.cancel()


def test_a_page_off_loopback_is_read_only_and_offers_no_token_form(tmp_path: pathlib.Path, driver: Any) -> None:
    token_file = tmp_path / "admin-token"
    token_file.write_text(TOKEN + "\n")
    with LookupProcess("serve", "--port", str(free_port()), "--no-announce", "--http-host", "0.0.0.0",
                       "--http-port", "0", "--admin-token-file", str(token_file)) as process:
        port = process.wait_for(r"^lookup browser at http://0\.0\.0\.0:(\d+)/").group(1)
        process.wait_for("^lookup service at ")
        driver.get(f"http://public.test:{port}/")  # any name: the page off loopback answers it
        assert wait_until(lambda: driver.find_element(By.ID, "status").text == "live", 5) is not None
        assert not driver.find_element(By.ID, "token-form").is_displayed()
        assert driver.find_element(By.ID, "admin-status").text == (
            "read-only here: the admin token is taken at localhost only")
        driver.get(f"http://127.0.0.1:{port}/")  # at loopback the form is offered, and the server refuses it
        assert wait_until(lambda: driver.find_element(By.ID, "status").text == "live", 5) is not None
        driver.find_element(By.ID, "token").send_keys(TOKEN)
        driver.find_element(By.ID, "token-use").click()
        assert wait_until(lambda: driver.find_element(By.ID, "admin-status").text == "token refused", 2) is not None
        assert driver.find_elements(By.CSS_SELECTOR, "button.evict") == []


def test_a_replicas_page_names_the_leader_and_follows_a_failover_without_a_reload(cluster: EtcdCluster,
                                                                                  driver: Any) -> None:
    pages: dict[int, BrowserServer] = {}

    def make(client: Any, name: str, uris: list[str]) -> ReplicatedLookupService:
        replica = ReplicatedLookupService(client, group=name, replicas=uris, max_lease=60)
        pages[id(replica)] = BrowserServer(TermFeed(replica)).start()  # before the replica starts
        return replica

    group = ReplicaGroup(cluster, make, object_id=LOOKUP_OBJECT_ID).start()
    try:
        leader = group.leader()
        group.wait_named(leader)
        registration = leader.register(ServiceItem(None, "PYRO:quotes@127.0.0.1:9", ("acme.Quotes",), ()), 60)
        watched = group.followers(leader)[0]
        driver.get(pages[id(watched)].url)

        def status() -> str:
            return str(driver.find_element(By.ID, "status").text)

        assert wait_until(lambda: status() == f"not leading; the leader is {leader.uri}", 5) is not None, status()
        assert not rows(driver, registration.service_id)
        driver.execute_script("window.loadedOnce = true")  # gone if the page reloads
        leader.close()
        successor = group.leader(excluding=leader)
        if successor is watched:  # the page it shows turns into the leader's, live
            assert wait_until(lambda: rows(driver, registration.service_id), 5) is not None
            assert status() == "live"
        else:
            assert wait_until(lambda: status() == f"not leading; the leader is {successor.uri}", 5) is not None
        assert driver.execute_script("return window.loadedOnce") is True
    finally:
        group.close()
        for page in pages.values():
            page.close()
