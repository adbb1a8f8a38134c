// What every settings page shares: the development-mode subject bar, who is signed in, and
// the workspace switcher. `start()` resolves to the session, or null when it could not be read
// (the reason is then shown in the page's notice slot).

import { devMode, devSubject, seg, session, setDevSubject, unsendable } from "./api.js";
import { $, clear, h, initial, named, notice } from "./ui.js";

export const workspace = document.body.dataset.workspace ?? "";
const SUBJECT = /^(user|agent|workload|service):\S.*$/;

function devBar() {
  const form = $("#dev-subject-form");
  if (!form) return;
  const input = $("#dev-subject");
  input.value = devSubject();
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const value = input.value.trim();
    const bad = unsendable(value);
    const why = !SUBJECT.test(value)
      ? "A subject is kind:name with kind user, agent, workload or service, for example user:alice."
      : bad && [named(bad), " cannot be sent: the X-Context-Subject header carries Latin-1 characters only."];
    if (why) {
      input.setAttribute("aria-invalid", "true");
      notice($("#notice") ?? form, "danger", h("p", {}, why), { title: "Not a subject" });
      input.focus();
      return;
    }
    input.removeAttribute("aria-invalid");
    setDevSubject(value);
    window.location.reload();
  });
}

function identity(current) {
  const box = $("#identity");
  if (!box) return;
  const [kind, ...rest] = current.subject.split(":");
  const name = rest.join(":");
  const role = workspace ? current.roleIn(workspace) : null;
  clear(box).append(
    h("span", { class: "avatar", "aria-hidden": "true" }, initial(name)),
    h("span", { class: "identity-text" },
      h("span", { class: "identity-name" }, h("span", { class: "sr-only" }, "Signed in as "), name),
      h("span", { class: "identity-kind" }, role ? `${kind} · ${role}` : kind)),
  );
}

function switcher(current) {
  const details = $("#workspace-switcher");
  if (!details) return;
  const role = current.roleIn(workspace);
  $("#switcher-role").textContent = role ?? "";
  const list = clear($("#workspace-list"));
  const page = window.location.pathname.split("/")[4] ?? "agent-access";
  if (!current.items.length) list.append(h("li", { class: "menu-empty" }, "No workspaces yet"));
  for (const item of current.items) {
    const here = item.namespace === workspace;
    list.append(h("li", {}, h("a", {
      class: "menu-item", href: `/settings/w/${seg(item.namespace)}/${page}`,
      "aria-current": here ? "true" : null,
    }, h("span", { class: "ws-avatar ws-avatar-small", "aria-hidden": "true" }, initial(item.namespace)),
    h("span", { class: "menu-item-name" }, item.namespace), h("span", { class: "menu-item-role" }, item.role))));
  }
  document.addEventListener("click", (event) => {
    if (details.open && !details.contains(event.target)) details.open = false;
  });
  details.addEventListener("keydown", (event) => {
    if (event.key === "Escape" && details.open) {
      details.open = false;
      details.querySelector("summary").focus();
    }
  });
}

export async function start() {
  devBar();
  if (devMode && !devSubject()) {
    const slot = $("#notice");
    if (slot) notice(slot, "info", "Type the subject to act as (for example user:alice) in the development bar above, then choose Use subject.", { title: "Who are you?" });
    $("#dev-subject")?.focus();
    return null;
  }
  try {
    const current = await session();
    identity(current);
    switcher(current);
    return current;
  } catch (err) {
    const slot = $("#notice");
    if (slot) notice(slot, "danger", err, { title: "Your workspaces could not be read" });
    return null;
  }
}
