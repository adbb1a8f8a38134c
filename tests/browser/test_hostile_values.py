"""Values other people chose, on the pages in a real browser: markup in names stays text, a
right-to-left override in a name cannot rewrite the sentence around it, initials of names outside
the Basic Multilingual Plane are whole characters, and a revoked credential's row keeps to the
accessibility rules."""

from __future__ import annotations

from typing import Any

import pytest

from tests.browser.conftest import LiveServer, OpenPage, Service, accessibility

pytestmark = pytest.mark.browser

RLO = "\u202e"  # RIGHT-TO-LEFT OVERRIDE: what follows it is drawn reversed, to the paragraph's end
MARKUP = '<img src=x onerror="window.__pwned=1"><script>window.__pwned=2</script>'

# Where ``word`` is drawn relative to ``name`` in ``selector``'s text: "after" when it follows
# the name in reading order (to its right on the same line, or on a later line).
_ORDER = """([selector, name, word]) => {
  const root = document.querySelector(selector);
  const rect = (needle) => {
    const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      const at = node.data.indexOf(needle);
      if (at < 0) continue;
      const range = document.createRange();
      range.setStart(node, at);
      range.setEnd(node, at + needle.length);
      return range.getBoundingClientRect();
    }
    throw new Error(`${needle} is not in ${selector}`);
  };
  const n = rect(name), w = rect(word);
  const sameLine = Math.abs(n.top - w.top) < n.height / 2;
  return (sameLine ? w.left >= n.right - 0.5 : w.top > n.top) ? "after" : "before";
}"""


def _order(page: Any, selector: str, name: str, word: str) -> str:
    found: str = page.evaluate(_ORDER, [selector, name, word])
    return found


def test_a_right_to_left_override_in_a_name_stays_inside_the_name(
        open_page: OpenPage, service: Service, workspace: str) -> None:
    """An admin names a member or a credential with U+202E: the confirmation that says what
    is about to be removed, and the toast after it, still read in their own order."""
    service.member(workspace, "user:alice", "owner")
    service.member(workspace, f"user:{RLO}evil", "member")
    service.as_("user:alice").credential(workspace, f"{RLO}evil agent")
    page = open_page("user:alice")

    page.goto(f"/settings/w/{workspace}/members")
    page.get_by_role("button", name=f"Remove user:{RLO}evil").click()
    page.get_by_role("dialog", name="Remove member").wait_for()
    assert _order(page, "#remove-text", "evil", "from this workspace") == "after"
    page.get_by_role("button", name="Remove member").click()
    page.locator("#toasts .toast").wait_for()
    assert _order(page, "#toasts", "evil", "from") == "after"

    page.goto(f"/settings/w/{workspace}/agent-access")
    page.get_by_role("button", name=f"Revoke {RLO}evil agent").click()
    page.get_by_role("dialog", name="Revoke credential").wait_for()
    assert _order(page, "#revoke-text", "evil", "are refused") == "after"
    page.get_by_role("button", name="Revoke credential").click()
    page.locator("#toasts .toast").wait_for()
    assert _order(page, "#toasts", "evil", "Agents using it") == "after"


def test_markup_in_names_is_shown_as_text(open_page: OpenPage, service: Service,
                                         workspace: str) -> None:
    service.member(workspace, "user:alice", "owner")
    service.member(workspace, f"user:{MARKUP}", "member")
    service.as_("user:alice").credential(workspace, MARKUP[:100])
    page = open_page("user:alice")
    page.goto(f"/settings/w/{workspace}/members")
    page.locator("#member-rows .cell-main", has_text=MARKUP).wait_for()
    page.goto(f"/settings/w/{workspace}/agent-access")
    page.locator("#credential-rows .cell-main", has_text=MARKUP[:100]).wait_for()
    assert page.evaluate("window.__pwned") is None
    assert page.locator("#credential-rows img").count() == 0


def test_initials_are_whole_characters(open_page: OpenPage, service: Service,
                                       workspace: str) -> None:
    """A name that starts outside the Basic Multilingual Plane (an emoji, a mathematical
    letter) gets that character as its initial, not half of its UTF-16 surrogate pair."""
    service.member(workspace, "user:alice", "owner")
    service.member(workspace, "user:\U0001d49cda", "member")  # MATHEMATICAL SCRIPT CAPITAL A
    service.member(workspace, "user:\U0001f600eve", "admin")
    page = open_page("user:alice")
    page.goto(f"/settings/w/{workspace}/members")
    page.locator('#member-rows tr[data-member="user:alice"]').wait_for()
    initials = page.evaluate("""() => [...document.querySelectorAll('#member-rows .avatar')]
        .map((a) => [...a.textContent].map((c) => c.codePointAt(0)))""")
    assert sorted(initials) == sorted([[ord("A")], [0x1D49C], [0x1F600]])


def test_a_revoked_credential_keeps_to_the_accessibility_rules(
        open_page: OpenPage, service: Service, workspace: str) -> None:
    """The revoked row's button reads "Revoked": its accessible name says so too (label in
    name), while still naming the credential."""
    service.member(workspace, "user:alice", "owner")
    created = service.as_("user:alice").credential(workspace, "old exporter")
    gone = service.as_("user:alice").request(
        "DELETE", f"/api/w/{workspace}/agent-credentials/{created['id']}")
    assert gone.status_code == 204, gone.text
    page = open_page("user:alice")
    page.goto(f"/settings/w/{workspace}/agent-access")
    button = page.locator(f'button[data-credential="{created["id"]}"]')
    button.get_by_text("Revoked").wait_for()
    assert button.is_disabled()
    assert "old exporter" in (button.get_attribute("aria-label") or "")
    accessibility(page)


def test_a_subject_no_header_can_carry_is_refused_in_words(
        open_page: OpenPage, service: Service, workspace: str, dev_server: LiveServer) -> None:
    """Development mode sends the typed subject as a header, which holds Latin-1 characters
    only: "user:Łukasz" is refused where it is typed, not sent to fail as "the service could
    not be reached"; one stored before is asked for again."""
    service.member(workspace, "user:alice", "owner")
    page = open_page(None, url=dev_server.url)
    page.goto(f"/settings/w/{workspace}/members")
    page.get_by_text("Who are you?").wait_for()
    page.get_by_label("Act as").fill("user:Łukasz")
    page.get_by_role("button", name="Use subject").click()
    notice = page.locator("#notice")
    notice.get_by_text("Not a subject").wait_for()
    assert "Latin-1" in notice.inner_text() and "Ł" in notice.inner_text()
    assert page.get_by_label("Act as").get_attribute("aria-invalid") == "true"
    assert page.evaluate("localStorage.length") == 0

    page.evaluate("localStorage.setItem('context-service.settings.subject', 'user:Łukasz')")
    page.reload()
    page.get_by_text("Who are you?").wait_for()
    assert "could not be reached" not in notice.inner_text()



# (document width, viewport width, the table's scrolled width, its visible width)
_WIDTHS = """() => { const wrap = document.querySelector('.table-wrap');
  return [document.documentElement.scrollWidth, innerWidth,
          wrap.scrollWidth, wrap.clientWidth]; }"""


def _fits(page: Any) -> None:
    page_width, viewport, table_width, visible = page.evaluate(_WIDTHS)
    assert page_width <= viewport and table_width <= visible, (page_width, viewport,
                                                               table_width, visible)


def test_an_overlong_name_wraps_instead_of_pushing_the_page_sideways(
        open_page: OpenPage, service: Service, workspace: str) -> None:
    """One member with a 300-character name, one credential with a 100-character one (the
    API's limits, without a space to break at): every row's actions stay in view, and the
    removal dialog shows the whole name inside it."""
    long_member = "user:" + "x" * 300
    service.member(workspace, "user:alice", "owner")
    service.member(workspace, long_member, "member")
    service.as_("user:alice").credential(workspace, "y" * 100)
    page = open_page("user:alice")
    page.goto(f"/settings/w/{workspace}/members")
    page.locator(f'#member-rows tr[data-member="{long_member}"]').wait_for()
    _fits(page)
    page.get_by_role("button", name=f"Remove {long_member}").click()
    page.get_by_role("dialog", name="Remove member").wait_for()
    inside = page.evaluate("""() => {
        const dialog = document.querySelector('#remove-dialog').getBoundingClientRect();
        const name = document.querySelector('#remove-name').getBoundingClientRect();
        return name.left >= dialog.left && name.right <= dialog.right; }""")
    assert inside
    page.keyboard.press("Escape")

    page.goto(f"/settings/w/{workspace}/agent-access")
    page.get_by_role("button", name="Revoke " + "y" * 100).wait_for()
    _fits(page)
