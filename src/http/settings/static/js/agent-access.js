// Settings → Agent access: the workspace's credentials, create (token shown once), revoke.

import { ADMIN, call, seg } from "./api.js";
import { start, workspace } from "./shell.js";
import { $, badge, busy, chip, clear, date, emptyRow, h, named, notice, openDialog, relative, toast } from "./ui.js";

const base = `/api/w/${seg(workspace)}/agent-credentials`;
const LIMIT = 50;
const SOON = 7 * 86400 * 1000;
const RUNNERS = new Set(["owner", "admin", "member"]);
const state = { credentials: [], roles: null, sets: [], canManage: false };

// Why the creator's live role no longer carries the credential's scopes (text parts), or null.
function lostAuthority(credential) {
  if (!state.roles || credential.createdBy === ADMIN) return null;
  const role = state.roles.get(credential.createdBy);
  if (!role) return [named(credential.createdBy), " is no longer a member of this workspace"];
  if (credential.scopes.includes("queries:run") && !RUNNERS.has(role)) {
    return [named(credential.createdBy), ` (${role}) no longer holds queries:run`];
  }
  return null;
}

function statusCell(c) {
  const tones = { active: "success", expired: "neutral", revoked: "danger" };
  const cell = h("div", { class: "badges" }, badge(c.status, tones[c.status] ?? "neutral"));
  if (c.status === "active") {
    const lost = lostAuthority(c);
    if (new Date(c.expiresAt).getTime() - Date.now() < SOON) cell.append(badge("expires soon", "warning"));
    if (lost) cell.append(badge("authority lost", "warning"), h("span", { class: "cell-sub cell-reason" }, lost));
  }
  if (c.status === "revoked") {
    cell.append(h("span", { class: "cell-sub" }, c.revokedBy ? ["by ", named(c.revokedBy)] : "", " ", c.revokedAt ? relative(c.revokedAt) : ""));
  }
  return cell;
}

function row(c) {
  const revoke = h("button", {
    type: "button", class: "btn btn-small btn-danger-quiet", "data-credential": c.id,
    // the accessible name holds the visible text ("Revoked" once revoked: label in name)
    "aria-label": c.status === "revoked" ? `Revoke ${c.name}: already revoked` : `Revoke ${c.name}`,
    disabled: c.status === "revoked" || !state.canManage,
    title: c.status === "revoked" ? "Already revoked" : null,
    onclick: () => confirmRevoke(c),
  }, c.status === "revoked" ? "Revoked" : "Revoke");
  return h("tr", { class: c.status === "active" ? "" : "row-inactive", "data-id": c.id },
    h("td", {}, h("div", { class: "cell-main" }, c.name), h("div", { class: "cell-sub mono" }, c.id)),
    h("td", {}, h("div", { class: "chips" }, c.scopes.map(chip))),
    h("td", {}, c.contextSetId ? h("a", { href: `/settings/w/${seg(workspace)}/context-sets/${seg(c.contextSetId)}` }, c.contextSetId)
      : h("span", { class: "muted" }, "Any set")),
    h("td", {}, h("div", {}, date(c.createdAt)), h("div", { class: "cell-sub" }, "by ", named(c.createdBy))),
    h("td", {}, h("div", {}, date(c.expiresAt)), h("div", { class: "cell-sub" }, relative(c.expiresAt))),
    h("td", {}, statusCell(c)),
    h("td", { class: "cell-actions" }, revoke));
}

function render() {
  const items = state.credentials;
  const count = (status) => items.filter((c) => c.status === status).length;
  const active = count("active");
  $("#count-active").textContent = String(active);
  $("#count-expired").textContent = String(count("expired"));
  $("#count-revoked").textContent = String(count("revoked"));
  $("#count-lost").textContent = state.roles ? String(items.filter((c) => c.status === "active" && lostAuthority(c)).length) : "–";
  $("#limit-meter").value = Math.min(active, LIMIT);
  $("#limit-meter").classList.toggle("meter-full", active >= LIMIT);
  $("#limit-text").textContent = active >= LIMIT ? "limit reached" : `${LIMIT - active} more can be created`;
  $("#credentials-meta").textContent = `${items.length} in all · newest first`;
  const rows = clear($("#credential-rows"));
  if (!items.length) {
    rows.append(emptyRow(7, "No agent credentials yet", "Create one for each agent, with the narrowest scopes and the shortest lifetime it needs."));
  }
  for (const c of items) rows.append(row(c));
  if (active >= LIMIT) {
    notice($("#notice"), "warning", `This workspace has ${active} active credentials, the most it can hold. Revoke credentials you no longer need before creating new ones.`, { title: "Credential limit reached" });
  }
}

async function load() {
  const [credentials, members, sets] = await Promise.allSettled([
    call("GET", base),
    call("GET", `/v1/namespaces/${seg(workspace)}/members`),
    call("GET", `/v1/namespaces/${seg(workspace)}/context-sets`),
  ]);
  if (credentials.status === "rejected") {
    state.canManage = false;
    clear($("#credential-rows")).append(emptyRow(7, "Credentials are not available", "See the message above."));
    notice($("#notice"), "danger", credentials.reason, { title: "The credentials of this workspace could not be read" });
    $("#create-open").disabled = true;
    $("#create-reason").hidden = false;
    $("#create-reason").textContent = "Only owners and admins create agent credentials.";
    return;
  }
  state.canManage = true;
  state.credentials = credentials.value.items;
  state.roles = members.status === "fulfilled"
    ? new Map(members.value.items.map((m) => [`${m.subject.kind}:${m.subject.name}`, m.role])) : null;
  state.sets = sets.status === "fulfilled" ? sets.value.items.filter((s) => s.status === "active") : [];
  clear($("#notice"));
  render();
}

// --- create ---------------------------------------------------------------------------------
const FIELD_ERRORS = { "$.name": "#credential-name-error", "$.scopes": "#scopes-error", "$.expiresInDays": "#credential-days-error", "$.contextSetId": "#credential-set-error" };
const FIELD_INPUTS = { "$.name": "#credential-name", "$.scopes": 'input[name="scopes"]', "$.expiresInDays": "#credential-days", "$.contextSetId": "#credential-set" };

function clearFieldErrors() {
  for (const [path, selector] of Object.entries(FIELD_ERRORS)) {
    const el = $(selector);
    el.hidden = true;
    el.textContent = "";
    $(FIELD_INPUTS[path]).removeAttribute("aria-invalid");
  }
  clear($("#create-error"));
}

function previewExpiry() {
  const days = $("#credential-days").valueAsNumber;
  const out = $("#expiry-preview");
  if (Number.isInteger(days) && days >= 1 && days <= 365) {
    const at = new Date(Date.now() + days * 86400 * 1000);
    out.textContent = `Expires on ${new Intl.DateTimeFormat("en-GB", { dateStyle: "medium" }).format(at)}.`;
  } else out.textContent = "";
}

function openCreate() {
  const form = $("#create-form");
  form.reset();
  clearFieldErrors();
  const select = clear($("#credential-set"));
  select.append(h("option", { value: "" }, "None: any active set"));
  for (const s of state.sets) select.append(h("option", { value: s.id }, `${s.name} (${s.id})`));
  $("#create-step").hidden = false;
  $("#token-step").hidden = true;
  previewExpiry();
  openDialog($("#create-dialog"), $("#credential-name"));
}

function showFieldErrors(err) {
  const first = [];
  for (const detail of Array.isArray(err.details) ? err.details : []) {
    const key = detail.path.replace(/\[\d+\]$/, "");
    const target = FIELD_ERRORS[key];
    if (!target) continue;
    const el = $(target);
    el.hidden = false;
    el.textContent = detail.message.charAt(0).toUpperCase() + detail.message.slice(1) + ".";
    $(FIELD_INPUTS[key]).setAttribute("aria-invalid", "true");
    first.push(FIELD_INPUTS[key]);
  }
  return first[0];
}

async function submitCreate(event) {
  event.preventDefault();
  clearFieldErrors();
  const form = $("#create-form");
  const body = { name: $("#credential-name").value, scopes: [...form.querySelectorAll('input[name="scopes"]:checked')].map((i) => i.value) };
  const days = $("#credential-days").value.trim();
  if (days !== "") body.expiresInDays = Number(days);
  if ($("#credential-set").value) body.contextSetId = $("#credential-set").value;
  const submit = $("#create-submit");
  busy(submit, true);
  try {
    const created = await call("POST", base, body);
    showToken(created);
    load();
  } catch (err) {
    const shown = notice($("#create-error"), "danger", err);
    const field = err.code === "VALIDATION_ERROR" ? showFieldErrors(err) : null;
    (field ? $(field) : shown).focus();
  } finally {
    busy(submit, false);
  }
}

function showToken(created) {
  $("#create-step").hidden = true;
  $("#token-step").hidden = false;
  $("#token-value").value = created.token;
  $("#token-credential").replaceChildren(named(created.name), ` · ${created.scopes.join(", ")} · expires ${relative(created.expiresAt)}`);
  $("#token-copy-status").textContent = "";
  $("#token-example").textContent = `curl -X POST ${window.location.origin}/api/agent/v1/context-sets/list \\\n  -H "Authorization: Bearer $CONTEXT_SERVICE_TOKEN" -d '{}'`;
  $("#token-copy").focus();
}

async function copyToken() {
  const input = $("#token-value");
  const status = $("#token-copy-status");
  try {
    await navigator.clipboard.writeText(input.value);
    status.textContent = "Copied to the clipboard.";
  } catch {
    input.select();
    status.textContent = document.execCommand("copy") ? "Copied to the clipboard." : "Select the token and press Ctrl+C to copy it.";
  }
  $("#token-copy").textContent = "Copied";
}

function closeCreate() {
  $("#token-value").value = "";  // the token leaves the page with the dialog
  $("#token-copy").textContent = "Copy";
  const dialog = $("#create-dialog");
  if (dialog.open) dialog.close();
  $("#create-open").focus();
}

// --- revoke ---------------------------------------------------------------------------------
let revoking = null;

function confirmRevoke(credential) {
  revoking = credential;
  $("#revoke-name").textContent = credential.name;
  clear($("#revoke-error"));
  openDialog($("#revoke-dialog"));
}

async function revoke() {
  const button = $("#revoke-confirm");
  busy(button, true);
  try {
    await call("DELETE", `${base}/${seg(revoking.id)}`);
    $("#revoke-dialog").close();
    toast("Revoked “", named(revoking.name), "”. Agents using it are refused from now on.");
    await load();
    $("#create-open").focus();
  } catch (err) {
    notice($("#revoke-error"), "danger", err);
  } finally {
    busy(button, false);
  }
}

async function main() {
  $("#create-open").addEventListener("click", openCreate);
  $("#create-form").addEventListener("submit", submitCreate);
  $("#create-cancel").addEventListener("click", closeCreate);
  $("#credential-days").addEventListener("input", previewExpiry);
  $("#token-copy").addEventListener("click", copyToken);
  $("#token-value").addEventListener("focus", (e) => e.target.select());
  $("#token-done").addEventListener("click", closeCreate);
  $("#create-dialog").addEventListener("close", () => { $("#token-value").value = ""; });
  $("#revoke-cancel").addEventListener("click", () => $("#revoke-dialog").close());
  $("#revoke-confirm").addEventListener("click", revoke);
  const current = await start();
  if (!current) {
    clear($("#credential-rows")).append(emptyRow(7, "Nothing to show yet", ""));
    $("#create-open").disabled = true;
    return;
  }
  await load();
}

main();
