"""The CSRF token across tabs: a settings page opened from a link on another site (a chat
message, a mail, a portal elsewhere) keeps the browser's token, so the settings tabs already
open keep working."""

from __future__ import annotations

import pytest

from tests.browser.conftest import LiveServer, OpenPage, Service

pytestmark = pytest.mark.browser


def test_a_link_from_another_site_leaves_open_tabs_working(
        open_page: OpenPage, service: Service, workspace: str, server: LiveServer) -> None:
    service.member(workspace, "user:alice", "owner")
    page = open_page("user:alice")
    page.goto(f"/settings/w/{workspace}/agent-access")
    page.get_by_text("No agent credentials yet").wait_for()
    # another site (localhost is not 127.0.0.1) links to the Members page; alice follows it
    elsewhere = page.context.new_page()
    elsewhere.goto(f"http://localhost:{server.port}/settings/nothing")
    elsewhere.evaluate("""(href) => { const link = document.createElement('a');
        link.href = href; link.id = 'out'; link.textContent = 'members';
        document.body.append(link); }""", f"{server.url}/settings/w/{workspace}/members")
    elsewhere.click("#out")
    elsewhere.wait_for_url(f"{server.url}/settings/w/{workspace}/members")
    elsewhere.locator('#member-rows tr[data-member="user:alice"]').wait_for()

    page.get_by_role("button", name="Create credential").click()
    page.get_by_label("Name").fill("after the link")
    page.get_by_role("dialog").get_by_role("button", name="Create credential").click()
    page.get_by_role("heading", name="Copy your new token").wait_for()
    assert page.locator("#create-error").inner_text() == ""
