"""The workspace picker, development mode, the read-only context-set pages and the 404 page in a
real browser, with a bound credential's set shown on Agent access."""

from __future__ import annotations

import pytest

from tests.browser.conftest import (
    LiveServer,
    OpenPage,
    Service,
    accessibility,
    focus_id,
    screenshot,
    tab_to,
)

pytestmark = pytest.mark.browser

FINANCE = {
    "id": "finance", "name": "Finance answers",
    "description": "What agents may state about the company's finances, and how.",
    "collections": ["company-facts", "board-minutes"],
    "verifiedAnswers": [{"id": "current-cfo", "question": "Who is our CFO?",
                         "answer": "Priya Raman has been CFO since 1 July 2024.",
                         "citations": ["company-facts/cfo-2024"]}],
    "definitions": [{"term": "ARR", "definition": "Annual recurring revenue, in EUR.",
                     "aliases": ["annual recurring revenue"]}],
    "instructions": [{"id": "currency", "text": "State amounts with their currency."}],
    "requiredEvidence": [{"id": "cfo-appointment", "description": "The CFO appointment minute",
                          "query": "CFO appointment board"}],
}


def test_workspace_picker_and_switcher(open_page: OpenPage, service: Service,
                                       workspace: str) -> None:
    other = workspace + "-b"
    service.member(workspace, "user:alice", "owner")
    service.member(other, "user:alice", "viewer")
    page = open_page("user:alice")
    page.goto("/settings")
    cards = page.locator("#workspaces .ws-card")
    cards.filter(has_text=other).wait_for()
    assert cards.count() == 2
    assert "alice" in page.locator("#identity").inner_text()
    screenshot(page, "workspaces")
    accessibility(page)

    page.get_by_role("link", name=workspace, exact=True).click()
    page.wait_for_url(f"**/settings/w/{workspace}/agent-access")
    page.get_by_role("link", name="Members").click()
    page.wait_for_url(f"**/settings/w/{workspace}/members")
    assert page.get_by_role("link", name="Members").get_attribute("aria-current") == "page"
    # the switcher, by keyboard: it keeps the page and changes the workspace
    page.locator(".switcher-button").focus()
    page.keyboard.press("Enter")
    menu = page.locator("#workspace-list")
    menu.get_by_role("link", name=other).wait_for()
    assert "viewer" in menu.inner_text()
    accessibility(page)
    page.keyboard.press("Escape")
    assert not page.locator("#workspace-switcher").evaluate("d => d.open")
    page.keyboard.press("Enter")
    tab_to(page, f"a[{other[0].upper()}{other}viewer]", limit=5)
    page.keyboard.press("Enter")
    page.wait_for_url(f"**/settings/w/{other}/members")
    # filled in when the page's own read of /v1/workspaces answers: wait for it, then compare
    page.locator("#switcher-role", has_text="viewer").wait_for()
    assert page.locator("#switcher-role").inner_text() == "viewer"

    page.goto("/settings/nothing")
    page.get_by_role("heading", name="Page not found").wait_for()
    screenshot(page, "not-found")
    accessibility(page)


def test_no_workspaces_yet(open_page: OpenPage, service: Service) -> None:
    page = open_page("user:newcomer")
    page.goto("/settings")
    page.get_by_text("user:newcomer is not a member of any workspace yet").wait_for()
    accessibility(page)


def test_context_sets_list_and_read(open_page: OpenPage, service: Service,
                                    workspace: str) -> None:
    service.member(workspace, "user:alice", "owner")
    for body in (FINANCE, {"id": "support", "name": "Support", "collections": ["tickets"]}):
        resp = service.as_("user:alice").request(
            "POST", f"/v1/namespaces/{workspace}/context-sets", body)
        assert resp.status_code == 201, resp.text
    archived = service.as_("user:alice").request(
        "DELETE", f"/v1/namespaces/{workspace}/context-sets/support")
    assert archived.status_code == 204
    created = service.as_("user:alice").credential(workspace, "cfo bot", contextSetId="finance")

    page = open_page("user:alice")
    page.goto(f"/settings/w/{workspace}/context-sets")
    rows = page.locator("#set-rows tr")
    rows.filter(has_text="Finance answers").wait_for()
    assert rows.count() == 2
    assert "archived" in rows.nth(1).inner_text() and "active" in rows.nth(0).inner_text()
    assert "1 verified answer · 1 definition · 1 instruction · 1 required evidence" in \
        rows.nth(0).inner_text()
    screenshot(page, "context-sets")
    accessibility(page)

    page.get_by_role("link", name="Finance answers").click()
    page.get_by_role("heading", name="Verified answers").wait_for()
    text = page.locator("#set-content").inner_text()
    for expected in ("company-facts", "board-minutes", "Who is our CFO?",
                     "Priya Raman has been CFO since 1 July 2024.", "company-facts/cfo-2024",
                     "ARR", "annual recurring revenue", "Annual recurring revenue, in EUR.",
                     "State amounts with their currency.", "The CFO appointment minute",
                     "CFO appointment board", "No query templates."):
        assert expected in text, expected
    assert "version 1" in page.locator("#set-meta").inner_text()
    screenshot(page, "context-set")
    accessibility(page)

    # Agent access names the set of a bound credential and offers active sets only
    page.goto(f"/settings/w/{workspace}/agent-access")
    row = page.locator("#credential-rows tr", has=page.get_by_text("cfo bot"))
    row.get_by_role("link", name="finance").wait_for()
    page.get_by_role("button", name="Create credential").click()
    options = page.locator("#credential-set option").all_inner_texts()
    assert options == ["None: any active set", "Finance answers (finance)"]
    page.get_by_label("Name").fill("bound agent")
    page.get_by_label("Context set", exact=True).select_option("finance")
    page.get_by_role("dialog").get_by_role("button", name="Create credential").click()
    token = page.get_by_label("Token")
    token.wait_for()
    answer = service.agent(token.input_value())
    assert [s["id"] for s in answer.json()["items"]] == ["finance"]
    assert created["contextSetId"] == "finance"

    page.goto(f"/settings/w/{workspace}/context-sets/missing")
    page.locator("#notice").get_by_text("This context set does not exist").wait_for()


def test_development_mode_sends_the_typed_subject(open_page: OpenPage, service: Service,
                                                  workspace: str, dev_server: LiveServer) -> None:
    service.member(workspace, "user:alice", "owner")
    page = open_page(None, url=dev_server.url)  # no gateway: nobody adds the header
    page.goto(f"/settings/w/{workspace}/members")
    bar = page.get_by_role("region", name="Development mode")
    assert "X-Context-Subject" in bar.inner_text()
    page.get_by_text("Who are you?").wait_for()
    assert focus_id(page) == "#dev-subject"
    page.keyboard.type("alice")
    page.keyboard.press("Enter")
    page.get_by_text("Not a subject").wait_for()
    page.get_by_label("Act as").fill("user:alice")
    page.get_by_role("button", name="Use subject").click()
    page.locator('#member-rows tr[data-member="user:alice"]').wait_for()
    assert "alice" in page.locator("#identity").inner_text()
    screenshot(page, "development-mode")
    accessibility(page)
    # the production pages never show the bar
    plain = open_page("user:alice")
    plain.goto(f"/settings/w/{workspace}/members")
    assert plain.get_by_role("region", name="Development mode").count() == 0
