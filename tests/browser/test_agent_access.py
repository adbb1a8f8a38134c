"""Settings → Agent access in a real browser: create a credential and read its token, the agent
API accepts it from a server-side client, revoke it on the page and the agent is refused; the
51st credential's refusal in words; keyboard-only use of the create form and its focus order."""

from __future__ import annotations

import re
from typing import Any

import pytest

from tests.browser.conftest import (
    ADMIN,
    OpenPage,
    Service,
    accessibility,
    focus_id,
    screenshot,
    tab_to,
)

pytestmark = pytest.mark.browser
TOKEN = re.compile(r"^bdk_[0-9a-f]{16}_[A-Za-z0-9_-]{43}$")


def _row(page: Any, name: str) -> Any:
    """The credentials table's row of the credential named ``name``."""
    return page.locator("#credential-rows tr", has=page.locator(".cell-main", has_text=name))


def _owner(service: Service, workspace: str, subject: str = "user:alice") -> None:
    service.member(workspace, subject, "owner")


def test_create_read_the_token_use_it_revoke_it(open_page: OpenPage, service: Service,
                                                workspace: str) -> None:
    _owner(service, workspace)
    service.as_("user:alice").credential(workspace, "nightly evals", expiresInDays=90)
    page = open_page("user:alice")
    page.goto(f"/settings/w/{workspace}/agent-access")
    _row(page, "nightly evals").wait_for()
    assert page.locator("#count-active").inner_text() == "1"
    screenshot(page, "agent-access")
    accessibility(page)

    page.get_by_role("button", name="Create credential").click()
    dialog = page.get_by_role("dialog", name="Create an agent credential")
    dialog.get_by_label("Name").fill("research agent")
    dialog.get_by_label("queries:run").check()
    dialog.get_by_label("Lifetime in days").fill("30")
    accessibility(page, "#create-dialog")
    dialog.get_by_role("button", name="Create credential").click()
    page.get_by_role("heading", name="Copy your new token").wait_for()
    assert page.get_by_text("This token will not be shown again.").is_visible()
    token = page.get_by_label("Token").input_value()
    assert TOKEN.match(token), token
    page.get_by_role("button", name="Copy").click()
    page.get_by_text("Copied to the clipboard.").wait_for()
    assert page.evaluate("navigator.clipboard.readText()") == token
    screenshot(page, "agent-access-token")
    accessibility(page, "#create-dialog")

    # the agent, from a server-side client, with the token read off the page
    answer = service.agent(token)
    assert answer.status_code == 200, answer.text
    assert answer.json() == {"items": []}
    # ... and from a browser it is refused, token or not
    refused = service.client.post("/api/agent/v1/context-sets/list", content=b"{}", headers={
        "Authorization": f"Bearer {token}", "Origin": service.url})
    assert refused.json()["code"] == "AGENT_BROWSER_REQUEST_REFUSED"

    page.get_by_role("button", name="I have stored the token").click()
    assert page.get_by_role("dialog").count() == 0
    assert page.locator("#token-value").input_value() == ""  # the token left the page
    assert token not in page.content()
    row = _row(page, "research agent")
    row.get_by_text("active", exact=True).wait_for()
    assert row.get_by_text("queries:run").is_visible()
    assert page.locator("#count-active").inner_text() == "2"

    row.get_by_role("button", name="Revoke research agent").click()
    confirm = page.get_by_role("dialog", name="Revoke credential")
    assert "research agent" in confirm.inner_text()
    screenshot(page, "agent-access-revoke")
    confirm.get_by_role("button", name="Revoke credential").click()
    row.get_by_text("revoked", exact=True).wait_for()
    assert row.get_by_role("button", name="Revoke research agent").is_disabled()
    assert page.locator("#count-revoked").inner_text() == "1"

    refused = service.agent(token)
    assert refused.status_code == 401
    assert refused.json() == {"code": "UNAUTHORIZED", "message": "agent credential is not valid"}


def test_the_51st_credential_is_refused_in_words(open_page: OpenPage, service: Service,
                                                 workspace: str) -> None:
    _owner(service, workspace)
    for i in range(50):
        service.as_("user:alice").credential(workspace, f"agent {i:02d}")
    page = open_page("user:alice")
    page.goto(f"/settings/w/{workspace}/agent-access")
    page.get_by_text("Credential limit reached").wait_for()
    assert page.locator("#count-active").inner_text() == "50"
    assert page.locator("#limit-text").inner_text() == "limit reached"
    page.get_by_role("button", name="Create credential").click()
    page.get_by_label("Name").fill("the 51st")
    page.get_by_role("dialog").get_by_role("button", name="Create credential").click()
    error = page.locator("#create-error")
    error.get_by_text("This workspace already has 50 active agent credentials").wait_for()
    assert "Revoke one you no longer need" in error.inner_text()
    assert ("409 AGENT_CREDENTIAL_LIMIT_REACHED: workspace already has 50 active agent "
            "credentials") in error.inner_text()
    assert page.evaluate("document.activeElement.closest('#create-error') !== null")
    screenshot(page, "agent-access-limit")
    accessibility(page, "#create-dialog")
    listed = service.as_("user:alice").request("GET", f"/api/w/{workspace}/agent-credentials")
    assert len(listed.json()["items"]) == 50


def test_keyboard_only_create_in_focus_order(open_page: OpenPage, service: Service,
                                             workspace: str) -> None:
    _owner(service, workspace)
    page = open_page("user:alice")
    page.goto(f"/settings/w/{workspace}/agent-access")
    page.get_by_text("No agent credentials yet").wait_for()
    page.keyboard.press("Tab")
    assert focus_id(page) == "a[Skip to content]"
    tab_to(page, "#create-open")
    page.keyboard.press("Enter")
    assert focus_id(page) == "#credential-name"
    page.keyboard.type("keyboard agent")
    order = [focus_id(page)]
    for _ in range(6):
        page.keyboard.press("Tab")
        order.append(focus_id(page))
    assert order == ["#credential-name", "input[context:read]", "input[queries:run]",
                     "#credential-days", "#credential-set", "#create-cancel", "#create-submit"]
    page.keyboard.press("Shift+Tab")
    page.keyboard.press("Shift+Tab")
    page.keyboard.press("Shift+Tab")
    assert focus_id(page) == "#credential-days"
    page.keyboard.press("Control+A")
    page.keyboard.type("400")
    page.keyboard.press("Enter")  # submits the form from the field
    page.locator("#credential-days-error").get_by_text("Must be between 1 and 365.").wait_for()
    assert focus_id(page) == "#credential-days"
    assert page.locator("#credential-days").get_attribute("aria-invalid") == "true"
    page.keyboard.press("Control+A")
    page.keyboard.type("7")
    page.keyboard.press("Shift+Tab")
    page.keyboard.press("Space")  # queries:run
    assert page.locator('input[value="queries:run"]').is_checked()
    page.keyboard.press("Tab")
    page.keyboard.press("Enter")
    page.get_by_role("heading", name="Copy your new token").wait_for()
    assert focus_id(page) == "#token-copy"
    page.keyboard.press("Enter")
    page.get_by_text("Copied to the clipboard.").wait_for()
    token = page.evaluate("navigator.clipboard.readText()")
    assert TOKEN.match(token)
    assert tab_to(page, "#token-done", limit=5)
    page.keyboard.press("Enter")
    assert page.get_by_role("dialog").count() == 0
    assert focus_id(page) == "#create-open"
    _row(page, "keyboard agent").wait_for()
    created = service.as_("user:alice").request("GET", f"/api/w/{workspace}/agent-credentials")
    [item] = created.json()["items"]
    assert item["name"] == "keyboard agent"
    assert item["scopes"] == ["context:read", "queries:run"]
    assert service.agent(token).status_code == 200


def test_validation_and_permission_errors_are_shown_in_words(
        open_page: OpenPage, service: Service, workspace: str) -> None:
    _owner(service, workspace)
    service.as_("user:alice").request("PUT", f"/v1/namespaces/{workspace}/members", {
        "subject": {"kind": "user", "name": "vic"}, "role": "viewer"})
    page = open_page("user:alice")
    page.goto(f"/settings/w/{workspace}/agent-access")
    page.get_by_role("button", name="Create credential").click()
    page.get_by_label("context:read").uncheck()
    page.get_by_label("Lifetime in days").fill("")
    page.get_by_role("dialog").get_by_role("button", name="Create credential").click()
    page.locator("#credential-name-error").get_by_text("Must not be blank.").wait_for()
    assert page.locator("#scopes-error").inner_text() == "Must not be empty."
    assert page.locator("#credential-days-error").inner_text() == "Is required."
    summary = page.locator("#create-error").inner_text()
    assert "Some fields need attention." in summary and "Lifetime: Is required." in summary
    assert "400 VALIDATION_ERROR: request validation failed" in summary
    assert focus_id(page) == "#credential-name"
    accessibility(page, "#create-dialog")

    viewer = open_page("user:vic")
    viewer.goto(f"/settings/w/{workspace}/agent-access")
    notice = viewer.locator("#notice")
    notice.get_by_text("Your role in this workspace does not allow this").wait_for()
    assert 'permission "agent_credential:manage" is required' in notice.inner_text()
    assert viewer.get_by_role("button", name="Create credential").is_disabled()
    assert viewer.get_by_text("Only owners and admins create agent credentials.").is_visible()
    screenshot(viewer, "agent-access-viewer")
    accessibility(viewer)


def test_lost_authority_and_expiry_are_visible(open_page: OpenPage, service: Service,
                                               workspace: str) -> None:
    _owner(service, workspace)
    service.member(workspace, "user:erin", "admin")
    service.as_("user:erin").credential(workspace, "erin's exporter",
                                        scopes=["context:read", "queries:run"], expiresInDays=3)
    service.as_(ADMIN).credential(workspace, "platform agent")
    service.as_("user:alice").request("PUT", f"/v1/namespaces/{workspace}/members", {
        "subject": {"kind": "user", "name": "erin"}, "role": "viewer"})
    page = open_page("user:alice")
    page.goto(f"/settings/w/{workspace}/agent-access")
    row = _row(page, "erin's exporter")
    row.get_by_text("authority lost").wait_for()
    assert "user:erin (viewer) no longer holds queries:run" in row.inner_text()
    assert row.get_by_text("expires soon").is_visible()
    platform = _row(page, "platform agent")
    assert "authority lost" not in platform.inner_text()  # the administrator keeps authority
    assert page.locator("#count-lost").inner_text() == "1"
