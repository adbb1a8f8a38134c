// Every error the API answers, in words: a sentence for the person, the fields at fault, and
// the API's own answer (status, code, message) beside it.

import { devMode } from "./api.js";

const FIELDS = {
  "$.name": "Name", "$.scopes": "Scopes", "$.expiresInDays": "Lifetime",
  "$.contextSetId": "Context set",
};

export function fieldLabel(path) {
  const base = path.replace(/\[\d+\]$/, "");
  return FIELDS[path] ?? FIELDS[base] ?? path;
}

const sentence = (text) => (text ? text.charAt(0).toUpperCase() + text.slice(1) : text);
const end = (text) => (/[.!?]$/.test(text) ? text : `${text}.`);

export function explain(err) {
  const message = err.message ?? "";
  const answer = err.status ? `${err.status} ${err.code}: ${message}` : message;
  const out = { summary: end(sentence(message || "the request failed")), fields: [], answer };
  const code = String(err.code ?? "");
  if (err.status === 0) {
    out.summary = "The service could not be reached. Check that it is running, then try again.";
  } else if (code === "AGENT_CREDENTIAL_LIMIT_REACHED") {
    const limit = err.details?.limit ?? 50;
    out.summary = `This workspace already has ${limit} active agent credentials, the most it can hold. Revoke one you no longer need, then create this one again.`;
  } else if (code === "VALIDATION_ERROR") {
    out.summary = "Some fields need attention.";
    out.fields = (Array.isArray(err.details) ? err.details : []).map((d) => ({
      path: d.path, label: fieldLabel(d.path), message: end(sentence(d.message)),
    }));
  } else if (/^csrf token/.test(message)) {
    out.summary = "This page's security token is missing or has expired. Reload the page, then try again.";
  } else if (message.startsWith("permission ")) {
    out.summary = `Your role in this workspace does not allow this: ${end(message)} Owners and admins manage agent credentials.`;
  } else if (/^scope .* is not held by your role$/.test(message)) {
    out.summary = `${end(sentence(message))} Ask an owner for a role that holds it.`;
  } else if (message === "workspace not found") {
    out.summary = "This workspace does not exist, or your role in it does not allow this.";
  } else if (message === "agent credential not found") {
    out.summary = "This credential does not exist in this workspace (it may have been created elsewhere).";
  } else if (message === "context set not found") {
    out.summary = "This context set does not exist in this workspace.";
  } else if (message === "route not found") {
    out.summary = "This service does not offer this feature yet.";
  } else if (code === "UNAUTHORIZED" || code === "unauthenticated") {
    out.summary = devMode
      ? "The service needs to know who you are: type a subject in the development bar above."
      : "Your identity did not reach the service (X-Context-Subject). Sign in through the gateway again.";
  } else if (message.includes("keeps at least one owner")) {
    out.summary = "A workspace keeps at least one owner: make someone else an owner first.";
  } else if (message.includes("only an owner can add, change or remove an owner")) {
    out.summary = "Only an owner can add, change or remove an owner.";
  } else if (message === "member requires a valid subject and role") {
    out.summary = "Type the member's name: a member needs a kind, a name and a role.";
  } else if (message === "workspace member not found") {
    out.summary = "This subject is no longer a member of the workspace.";
  } else if (err.status === 503) {
    out.summary = "The service is catching up with recent changes. Try again in a moment.";
  } else if (err.status === 429) {
    out.summary = "Too many requests. Wait a moment, then try again.";
  } else if (err.status >= 500) {
    out.summary = `The service failed: ${end(message)}`;
  }
  return out;
}
