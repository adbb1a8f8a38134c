// The workspace picker: every workspace where the caller holds a role.

import { seg } from "./api.js";
import { start } from "./shell.js";
import { $, badge, clear, h, initial, named } from "./ui.js";

const LINKS = [["agent-access", "Agent access"], ["members", "Members"], ["context-sets", "Context sets"]];

function card(item) {
  const base = `/settings/w/${seg(item.namespace)}`;
  return h("li", { class: "ws-card" },
    h("div", { class: "ws-card-head" },
      h("span", { class: "ws-avatar ws-avatar-large", "aria-hidden": "true" }, initial(item.namespace)),
      h("div", {},
        h("h2", { class: "ws-card-title" }, h("a", { href: `${base}/agent-access` }, item.namespace)),
        badge(item.role, item.role === "owner" || item.role === "admin" ? "accent" : "neutral"))),
    h("ul", { class: "ws-card-links", "aria-label": `${item.namespace} settings` },
      LINKS.map(([path, label]) => h("li", {}, h("a", { href: `${base}/${path}` }, label)))));
}

async function main() {
  $("#open-form").addEventListener("submit", (event) => {
    event.preventDefault();
    const name = $("#open-name").value.trim();
    if (name) window.location.assign(`/settings/w/${seg(name)}/members`);
  });
  const current = await start();
  if (!current) return;
  const list = clear($("#workspaces"));
  if (!current.items.length) {
    list.append(h("li", { class: "ws-empty" },
      h("p", { class: "empty-title" }, named(current.subject), " is not a member of any workspace yet"),
      h("p", { class: "muted" }, "An owner of a workspace adds you on its Members page.")));
    return;
  }
  for (const item of current.items) list.append(card(item));
}

main();
