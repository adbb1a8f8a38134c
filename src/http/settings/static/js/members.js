// Settings → Members: list, add, change role, remove, with the workspace's rules (an admin
// cannot touch an owner; the last owner stays) shown as disabled actions with their reason.

import { call, seg } from "./api.js";
import { start, workspace } from "./shell.js";
import { $, badge, busy, clear, date, emptyRow, h, initial, named, notice, openDialog, toast } from "./ui.js";

const ROLES = ["owner", "admin", "member", "viewer"];
const path = `/v1/namespaces/${seg(workspace)}/members`;
const state = { members: [], me: null, actor: null };
const key = (m) => `${m.subject.kind}:${m.subject.name}`;
const isManager = (role) => role === "owner" || role === "admin";

// Why the actor may not change or remove `member`, or null when it may.
function reasonFor(member, owners) {
  if (!isManager(state.actor)) return "Only owners and admins can change members.";
  if (member.role === "owner" && state.actor !== "owner") return "Only an owner can change or remove an owner.";
  if (member.role === "owner" && owners === 1) return "A workspace keeps at least one owner: make someone else an owner first.";
  return null;
}

function roleSelect(member, reason, reasonId) {
  const select = h("select", {
    class: "select-compact", "aria-label": `Role of ${key(member)}`, disabled: Boolean(reason),
    "aria-describedby": reason ? reasonId : null,
  }, ROLES.map((r) => h("option", {
    value: r, selected: r === member.role,
    disabled: r === "owner" && member.role !== "owner" && state.actor !== "owner",
  }, r === "owner" && state.actor !== "owner" && member.role !== "owner" ? "owner (owners only)" : r)));
  const save = h("button", { type: "button", class: "btn btn-small btn-secondary", disabled: true, "aria-label": `Save role of ${key(member)}` }, "Save");
  select.addEventListener("change", () => { save.disabled = select.value === member.role; });
  save.addEventListener("click", () => setRole(member.subject, select.value, save));
  return h("div", { class: "role-edit" }, select, reason ? null : save);
}

function row(member, owners, index) {
  const reason = reasonFor(member, owners);
  const reasonId = `member-reason-${index}`;
  const me = key(member) === state.me;
  const remove = h("button", {
    type: "button", class: "btn btn-small btn-danger-quiet", disabled: Boolean(reason),
    "aria-label": `Remove ${key(member)}`, "aria-describedby": reason ? reasonId : null,
    onclick: () => confirmRemove(member),
  }, "Remove");
  return h("tr", { "data-member": key(member) },
    h("td", {}, h("div", { class: "member" },
      h("span", { class: "avatar avatar-small", "aria-hidden": "true" }, initial(member.subject.name)),
      h("div", {}, h("div", { class: "cell-main" }, member.subject.name, me ? badge("you", "accent") : null),
        h("div", { class: "cell-sub" }, member.subject.kind)))),
    h("td", {}, roleSelect(member, reason, reasonId),
      reason && isManager(state.actor) ? h("p", { class: "reason", id: reasonId }, reason) : null,
      reason && !isManager(state.actor) ? h("span", { class: "sr-only", id: reasonId }, reason) : null),
    h("td", {}, date(member.since)),
    h("td", { class: "cell-actions" }, remove));
}

function render() {
  const owners = state.members.filter((m) => m.role === "owner").length;
  $("#members-meta").textContent = `${state.members.length} ${state.members.length === 1 ? "member" : "members"} · ${owners} ${owners === 1 ? "owner" : "owners"}`;
  const rows = clear($("#member-rows"));
  if (!state.members.length) rows.append(emptyRow(4, "No members yet", "The bootstrap administrator adds the first owner."));
  state.members.forEach((m, i) => rows.append(row(m, owners, i)));
}

function formRules() {
  const manager = isManager(state.actor);
  for (const el of $("#add-form").elements) el.disabled = !manager;
  const reason = $("#member-role-reason");
  const ownerOption = $('#member-role option[value="owner"]');
  ownerOption.disabled = state.actor !== "owner";
  if (!manager) {
    reason.hidden = false;
    reason.textContent = "Only owners and admins add members.";
  } else if (state.actor !== "owner") {
    reason.hidden = false;
    reason.textContent = "Only an owner can add an owner.";
  } else reason.hidden = true;
}

async function load() {
  try {
    state.members = (await call("GET", path)).items;
    clear($("#notice"));
  } catch (err) {
    notice($("#notice"), "danger", err, { title: "The members of this workspace could not be read" });
    clear($("#member-rows")).append(emptyRow(4, "Members are not available", "See the message above."));
    return;
  }
  render();
}

async function setRole(subject, role, button) {
  busy(button, true);
  try {
    await call("PUT", path, { subject, role });
    toast(named(`${subject.kind}:${subject.name}`), ` is now ${role}.`);
    await refreshActor();
    await load();
  } catch (err) {
    notice($("#notice"), "danger", err, { title: "The role could not be changed", focus: true });
    busy(button, false);
  }
}

async function add(event) {
  event.preventDefault();
  const subject = { kind: $("#member-kind").value, name: $("#member-name").value.trim() };
  const role = $("#member-role").value;
  const button = $("#add-submit");
  busy(button, true);
  clear($("#add-error"));
  try {
    await call("PUT", path, { subject, role });
    toast(named(`${subject.kind}:${subject.name}`), ` now has the ${role} role in `, named(workspace), ".");
    $("#member-name").value = "";
    await load();
    $("#member-name").focus();
  } catch (err) {
    notice($("#add-error"), "danger", err, { focus: true });
  } finally {
    busy(button, false);
    formRules();
  }
}

let removing = null;

function confirmRemove(member) {
  removing = member;
  $("#remove-name").textContent = key(member) === state.me ? `yourself (${key(member)})` : key(member);
  clear($("#remove-error"));
  openDialog($("#remove-dialog"));
}

async function remove() {
  const button = $("#remove-confirm");
  busy(button, true);
  try {
    await call("DELETE", `${path}/${seg(key(removing))}`);
    $("#remove-dialog").close();
    toast("Removed ", named(key(removing)), " from ", named(workspace), ".");
    await refreshActor();
    await load();
    $("#member-name").focus();
  } catch (err) {
    notice($("#remove-error"), "danger", err);
  } finally {
    busy(button, false);
  }
}

// The actor's own role, read again after a change that may have touched it.
async function refreshActor() {
  if (state.me === null) return;
  const members = (await call("GET", path).catch(() => ({ items: [] }))).items;
  const mine = members.find((m) => key(m) === state.me);
  if (!state.isAdmin) state.actor = mine?.role ?? null;
  formRules();
}

async function main() {
  $("#add-form").addEventListener("submit", add);
  $("#remove-cancel").addEventListener("click", () => $("#remove-dialog").close());
  $("#remove-confirm").addEventListener("click", remove);
  const current = await start();
  if (!current) {
    for (const el of $("#add-form").elements) el.disabled = true;
    clear($("#member-rows")).append(emptyRow(4, "Nothing to show yet", ""));
    return;
  }
  state.me = current.subject;
  state.isAdmin = current.isAdmin;
  state.actor = current.roleIn(workspace);
  formRules();
  await load();
}

main();
