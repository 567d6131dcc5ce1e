"""The console driven in a real headless Chromium (Debian's, through Playwright; no browser is
downloaded), against a cluster whose group is three confluent-kafka consumers.

``FAKEBROKER_SCREENSHOTS=docs/images`` writes the pictures the dev-server guide shows."""

from __future__ import annotations

import os
import shutil
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, ShareConsumer

from fakebroker.cluster import FakeCluster
from fakebroker.http import ControlEndpoint

playwright = pytest.importorskip("playwright.sync_api", reason="pip install playwright (scripts/setup.sh does)")

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
# as Debian's Chromium runs headless here: no sandbox as root, no background calls to Google
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
TOPIC, GROUP = "orders", "orders-app"


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    if not Path(CHROMIUM).exists():
        pytest.fail(f"no Chromium at {CHROMIUM}: install Debian's chromium (scripts/setup.sh does)")
    with playwright.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        yield browser
        browser.close()


class Worker:
    """A confluent-kafka consumer of the group in a thread; ``reading`` pauses and resumes it
    (a paused one still polls, so it stays in the group, but drops what it gets back)."""

    def __init__(self, cluster: FakeCluster, index: int, group: str = GROUP, kip848: bool = False):
        config = {
            "bootstrap.servers": cluster.bootstrap_servers,
            "group.id": group,
            "client.id": f"worker-{index}",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
        if kip848:
            config["group.protocol"] = "consumer"
        else:
            config |= {"heartbeat.interval.ms": 200, "session.timeout.ms": 6000}
        self.consumer = Consumer(config)
        self.reading = threading.Event()
        self.reading.set()
        self.done = threading.Event()
        self.read = 0
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self) -> None:
        self.consumer.subscribe([TOPIC])
        while not self.done.is_set():
            if not self.reading.is_set():
                self.consumer.pause(self.consumer.assignment())
                time.sleep(0.05)
                self.consumer.poll(0.05)
                continue
            self.consumer.resume(self.consumer.assignment())
            message = self.consumer.poll(0.05)
            if message is not None and not message.error():
                self.read += 1
                self.consumer.commit(message, asynchronous=False)
                time.sleep(0.01)  # work per record: lag falls over seconds, more than a busy page skips
        self.consumer.close()

    def stop(self) -> None:
        self.done.set()
        self.thread.join(15)


@pytest.fixture
def setup() -> Iterator[tuple[FakeCluster, ControlEndpoint, list[Worker]]]:
    with FakeCluster(brokers=3, topics={TOPIC: 6}).run_in_thread() as cluster, ControlEndpoint(cluster) as control:
        produce(cluster, 60)
        workers = [Worker(cluster, i) for i in range(3)]
        try:
            yield cluster, control, workers
        finally:
            for w in workers:
                w.stop()


def produce(cluster: FakeCluster, count: int) -> None:
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "linger.ms": 5})
    for i in range(count):
        producer.produce(TOPIC, str(i).encode(), partition=i % 6)
    assert producer.flush(10) == 0


def open_console(browser, control: ControlEndpoint):
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(control.console_url)
    assert page.url == control.url + "/"  # the token left the address bar
    page.get_by_test_id("connection").filter(has_text="live").wait_for(timeout=5000)
    return page, errors


def text(page, test_id: str) -> str:
    return page.get_by_test_id(test_id).inner_text().strip()


def wait_text(page, test_id: str, want: str, timeout_s: float) -> float:
    """Seconds until the element shows ``want``."""
    start = time.monotonic()
    page.wait_for_function(
        "([id, want]) => { const e = document.querySelector(`[data-testid='${id}']`); "
        "return e && e.textContent.trim() === want; }",
        arg=[test_id, want],
        timeout=timeout_s * 1000,
    )
    return time.monotonic() - start


def snap(page, name: str) -> None:
    folder = os.environ.get("FAKEBROKER_SCREENSHOTS")
    if folder:
        Path(folder).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(folder) / f"console-{name}.png"), full_page=False)


def wait_2_2_2(page) -> None:
    for i in range(3):
        wait_text(page, f"count-{i}", "2", 15)
    for p in range(6):  # each partition held by exactly one member
        marks = [text(page, f"cell-{TOPIC}-{p}-{i}") for i in range(3)]
        assert sorted(marks) == ["", "", "●"], (p, marks)


def test_the_page_refuses_without_the_token_and_loads_with_it(browser):
    with FakeCluster().run_in_thread() as cluster, ControlEndpoint(cluster) as control:
        page = browser.new_page()
        answer = page.goto(control.url + "/")
        assert answer.status == 401 and "needs the endpoint's token" in page.inner_text("body")
        answer = page.goto(control.url + "/?token=not-it")
        assert answer.status == 401
        page, errors = open_console(browser, control)
        assert text(page, "broker-0").startswith("Broker 0")
        status = page.evaluate("fetch('/brokers').then(r => r.status)")  # the API on the cookie
        assert status == 200
        assert errors == []


def test_a_group_of_three_shows_its_2_2_2_assignment(browser, setup):
    cluster, control, workers = setup
    page, errors = open_console(browser, control)
    wait_2_2_2(page)
    assert text(page, "group-state") == "Stable"
    assert {text(page, f"member-{i}").split()[0] for i in range(3)} == {"worker-0", "worker-1", "worker-2"}
    assert text(page, "group-coordinator") == str(cluster.group(GROUP).coordinator)
    page.get_by_test_id("timeline").wait_for()
    snap(page, "group")
    assert errors == []


def test_stopping_the_coordinator_moves_the_group_and_a_member_leaving_rebalances_it(browser, setup):
    cluster, control, workers = setup
    page, errors = open_console(browser, control)
    wait_2_2_2(page)
    before = cluster.group(GROUP)
    generation = text(page, "group-generation")
    page.get_by_test_id(f"stop-broker-{before.coordinator}").click()
    # the click returns once the page has sent its request, not once the endpoint has acted on it
    wait_until(lambda: cluster.group(GROUP).coordinator != before.coordinator)
    moved = cluster.group(GROUP).coordinator
    # within a second the page shows the group on its new coordinator; as on Kafka, a
    # coordinator move keeps the generation (the members heartbeat on to the new one)
    assert wait_text(page, "group-coordinator", str(moved), 1.0) < 1.0
    assert text(page, "group-state") == "Stable" and text(page, "group-generation") == generation
    page.get_by_test_id(f"start-broker-{before.coordinator}").wait_for(timeout=1000)
    snap(page, "coordinator-moved")
    workers[2].stop()  # leaves the group: the other two rebalance to 3/3
    wait_text(page, "group-generation", str(int(generation) + 1), 10)
    wait_text(page, "count-0", "3", 5)
    wait_text(page, "count-1", "3", 5)
    assert errors == []


def test_a_fault_added_from_the_form_fires_and_shows_in_the_event_stream(browser, setup):
    cluster, control, workers = setup
    page, errors = open_console(browser, control)
    wait_2_2_2(page)
    form = page.get_by_test_id("fault-form")
    form.locator("input[name=api]").fill("Heartbeat")
    form.locator("input[name=error]").fill("REBALANCE_IN_PROGRES")  # misspelt: the endpoint's own message
    page.get_by_test_id("add-fault").click()
    page.get_by_test_id("fault-error").wait_for(timeout=3000)
    assert "REBALANCE_IN_PROGRESS" in text(page, "fault-error")  # did you mean
    assert cluster.faults.list() == []
    form.locator("input[name=error]").fill("REBALANCE_IN_PROGRESS")
    form.locator("input[name=group]").fill(GROUP)
    form.locator("input[name=times]").fill("1")
    page.get_by_test_id("add-fault").click()
    (rule,) = wait_rules(cluster)
    assert rule.to_dict()["api"] == ["Heartbeat"] and rule.to_dict()["times"] == 1
    wait_text(page, f"fired-{rule.id}", "1", 10)  # the next heartbeat got the error
    page.get_by_test_id("filter-kind").select_option("fault_fired")
    fired = page.get_by_test_id("event-list").locator("tr[data-kind=fault_fired]")
    fired.first.wait_for(timeout=3000)
    assert f"rule={rule.id}" in fired.first.inner_text() and "Heartbeat" in fired.first.inner_text()
    snap(page, "fault")
    assert errors == []


def wait_rules(cluster: FakeCluster, timeout_s: float = 5.0) -> list:
    deadline = time.monotonic() + timeout_s
    while not cluster.faults.list() and time.monotonic() < deadline:
        time.sleep(0.05)
    return cluster.faults.list()


def test_lag_falls_as_the_consumers_read(browser, setup):
    cluster, control, workers = setup
    page, errors = open_console(browser, control)
    wait_2_2_2(page)
    # the first 60 committed (the page shows 0 before any commit as well: no offsets, no lag)
    deadline = time.monotonic() + 10
    while sum(cluster.committed(GROUP).values()) < 60 and time.monotonic() < deadline:
        time.sleep(0.05)
    wait_text(page, "total-lag", "0", 10)
    for w in workers:
        w.reading.clear()
    time.sleep(0.3)
    produce(cluster, 1200)
    wait_text(page, "total-lag", "1200", 5)
    snap(page, "lag")
    seen = [1200]
    for w in workers:
        w.reading.set()
    deadline = time.monotonic() + 30
    while seen[-1] > 0 and time.monotonic() < deadline:
        time.sleep(0.1)
        seen.append(int(text(page, "total-lag")))
    assert seen[-1] == 0, seen
    assert len(set(seen)) > 2, seen  # the page showed it falling, not jumping to 0
    assert all(a >= b for a, b in zip(seen, seen[1:])), seen
    assert errors == []


def test_consumer_and_share_groups_show_and_churn_runs_from_the_page(browser):
    """A KIP-848 group (its epoch, 3/3) and a share group side by side; a churn block on the
    consumer group run from its form."""
    with FakeCluster(brokers=3, topics={TOPIC: 6}).run_in_thread() as cluster, ControlEndpoint(cluster) as control:
        produce(cluster, 60)
        workers = [Worker(cluster, i, "kip848-app", kip848=True) for i in range(2)]
        sharer = ShareConsumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": "share-app"})
        sharer.subscribe([TOPIC])
        stop = threading.Event()
        polling = threading.Thread(target=lambda: [sharer.poll(0.1) for _ in iter(stop.is_set, True)], daemon=True)
        polling.start()
        try:
            page, errors = open_console(browser, control)
            page.get_by_test_id("group-kip848-app").click()
            wait_text(page, "count-0", "3", 20)
            wait_text(page, "count-1", "3", 5)
            assert text(page, "group-state") == "Stable" and "consumer" in text(page, "group-detail")
            page.get_by_test_id("group-share-app").wait_for(timeout=20_000)
            page.get_by_test_id("group-share-app").click()
            page.get_by_test_id("group-detail").filter(has_text="share").wait_for(timeout=5000)
            wait_text(page, "group-state", "Stable", 10)
            page.get_by_test_id("group-kip848-app").click()
            churn = page.locator("form.churn")
            churn.get_by_label("coordinator_failover_storm").check()
            churn.locator("input[type=number]").first.fill("1")
            churn.get_by_role("button", name="Run").click()
            page.get_by_test_id("notice").filter(has_text="churn kip848-app: done").wait_for(timeout=60_000)
            assert any(e.kind == "group_loaded" and e.group == "kip848-app" for e in cluster.events)
            snap(page, "kip848")
            assert errors == []
        finally:
            stop.set()
            polling.join(5)
            sharer.close()
            for w in workers:
                w.stop()


def test_the_other_actions_are_the_endpoints_calls(browser):
    """Advance virtual time, move a leader, cut and heal a client, create a topic, restart a
    broker: each from the page, each seen in the cluster."""
    with (
        FakeCluster(brokers=2, topics={TOPIC: 2}, virtual_time=True).run_in_thread() as cluster,
        ControlEndpoint(cluster) as control,
    ):
        page, errors = open_console(browser, control)
        before = cluster.clock.now_ms()
        page.get_by_test_id("clock").locator("input").fill("30")
        page.get_by_test_id("advance-clock").click()
        wait_until(lambda: cluster.clock.now_ms() >= before + 30_000)
        leader = cluster.describe_topic(TOPIC).partitions[0].leader
        page.get_by_test_id(f"leader-{TOPIC}-0").select_option(str(1 - leader))
        wait_until(lambda: cluster.describe_topic(TOPIC).partitions[0].leader == 1 - leader)
        page.get_by_placeholder("client id or glob").fill("svc-*")
        page.get_by_role("button", name="Cut").click()
        page.get_by_test_id("cuts").wait_for(timeout=3000)
        assert cluster.cuts() == [("svc-*", None)]
        page.get_by_test_id("cuts").get_by_role("button", name="Heal").click()
        wait_until(lambda: cluster.cuts() == [])
        page.get_by_placeholder("new topic").fill("payments")
        page.get_by_role("button", name="Create").click()
        page.get_by_test_id("topic-payments").wait_for(timeout=3000)
        assert len(cluster.describe_topic("payments").partitions) == 3
        page.get_by_placeholder("new topic").fill("payments")
        page.get_by_role("button", name="Create").click()  # the endpoint's refusal is shown
        page.get_by_test_id("notice").filter(has_text="already exists").wait_for(timeout=3000)
        assert errors == []


def wait_until(check, timeout_s: float = 5.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)
