"""Settings → Members in a real browser: add, change role, remove; an admin cannot touch an
owner and the last owner stays, shown as disabled actions with the reason."""

from __future__ import annotations

from typing import Any

import pytest

from tests.browser.conftest import OpenPage, Service, accessibility, screenshot

pytestmark = pytest.mark.browser


def _row(page: Any, subject: str) -> Any:
    return page.locator(f'#member-rows tr[data-member="{subject}"]')


def _members(service: Service, workspace: str) -> dict[str, str]:
    listed = service.request("GET", f"/v1/namespaces/{workspace}/members").json()["items"]
    return {f"{m['subject']['kind']}:{m['subject']['name']}": m["role"] for m in listed}


def test_add_change_and_remove_a_member(open_page: OpenPage, service: Service,
                                        workspace: str) -> None:
    service.member(workspace, "user:alice", "owner")
    service.member(workspace, "agent:ci-bot", "member")
    page = open_page("user:alice")
    page.goto(f"/settings/w/{workspace}/members")
    _row(page, "user:alice").wait_for()
    assert "you" in _row(page, "user:alice").inner_text()

    page.get_by_label("Kind").select_option("user")
    page.get_by_label("Name").fill("bob")
    page.get_by_label("Role", exact=True).select_option("admin")
    page.get_by_role("button", name="Add member").click()
    _row(page, "user:bob").wait_for()
    page.get_by_text(f"user:bob now has the admin role in {workspace}.").wait_for()
    assert _members(service, workspace)["user:bob"] == "admin"

    bot = _row(page, "agent:ci-bot")
    save = bot.get_by_role("button", name="Save role of agent:ci-bot")
    assert save.is_disabled()
    bot.get_by_label("Role of agent:ci-bot", exact=True).select_option("viewer")
    save.click()
    page.get_by_text("agent:ci-bot is now viewer.").wait_for()
    assert _members(service, workspace)["agent:ci-bot"] == "viewer"
    screenshot(page, "members")
    accessibility(page)

    _row(page, "user:bob").get_by_role("button", name="Remove user:bob").click()
    dialog = page.get_by_role("dialog", name="Remove member")
    assert "user:bob" in dialog.inner_text()
    accessibility(page, "#remove-dialog")
    dialog.get_by_role("button", name="Remove member").click()
    _row(page, "user:bob").wait_for(state="detached")
    assert "user:bob" not in _members(service, workspace)

    # the last owner stays: nothing on the page offers to remove or demote alice
    alice = _row(page, "user:alice")
    assert alice.get_by_role("button", name="Remove user:alice").is_disabled()
    assert alice.get_by_label("Role of user:alice", exact=True).is_disabled()
    reason = "A workspace keeps at least one owner: make someone else an owner first."
    assert alice.get_by_text(reason).is_visible()
    described = alice.get_by_role("button", name="Remove user:alice").get_attribute(
        "aria-describedby")
    assert page.locator(f"#{described}").inner_text() == reason


def test_an_admin_cannot_touch_owners(open_page: OpenPage, service: Service,
                                      workspace: str) -> None:
    for subject, role in (("user:alice", "owner"), ("user:olga", "owner"),
                          ("user:adam", "admin"), ("user:mia", "member")):
        service.member(workspace, subject, role)
    page = open_page("user:adam")
    page.goto(f"/settings/w/{workspace}/members")
    _row(page, "user:mia").wait_for()
    reason = "Only an owner can change or remove an owner."
    for owner in ("user:alice", "user:olga"):
        row = _row(page, owner)
        assert row.get_by_role("button", name=f"Remove {owner}").is_disabled()
        assert row.get_by_label(f"Role of {owner}", exact=True).is_disabled()
        assert row.get_by_text(reason).is_visible()
    mia = _row(page, "user:mia")
    assert mia.get_by_role("button", name="Remove user:mia").is_enabled()
    assert mia.locator('option[value="owner"]').is_disabled()
    assert page.locator('#member-role option[value="owner"]').is_disabled()
    assert page.get_by_text("Only an owner can add an owner.").is_visible()
    screenshot(page, "members-admin")
    accessibility(page)

    # a refusal the page did not foresee is still shown in words
    page.get_by_label("Name").fill("   ")
    page.get_by_role("button", name="Add member").click()
    notice = page.locator("#add-error")
    notice.get_by_text("a member needs a kind, a name and a role").wait_for()
    assert "400 invalid_request: member requires a valid subject and role" in notice.inner_text()


def test_members_without_the_permission_see_why(open_page: OpenPage, service: Service,
                                                workspace: str) -> None:
    service.member(workspace, "user:alice", "owner")
    service.member(workspace, "user:vic", "viewer")
    page = open_page("user:vic")
    page.goto(f"/settings/w/{workspace}/members")
    _row(page, "user:alice").wait_for()
    assert page.get_by_text("Only owners and admins add members.").is_visible()
    assert page.get_by_role("button", name="Add member").is_disabled()
    assert _row(page, "user:alice").get_by_role("button", name="Remove user:alice").is_disabled()
    accessibility(page)

    stranger = open_page("user:nobody")
    stranger.goto(f"/settings/w/{workspace}/members")
    notice = stranger.locator("#notice")
    notice.get_by_text("This workspace does not exist, or your role in it").wait_for()
    assert "404 not_found: workspace not found" in notice.inner_text()
