// Calls to the management routes (/v1/..., /api/w/...): the page's CSRF token on every
// state-changing request and, in development mode only, the typed X-Context-Subject.

const SUBJECT_KEY = "context-service.settings.subject";
const csrfToken = document.querySelector('meta[name="csrf-token"]')?.content ?? "";
export const devMode = document.body.dataset.devSubject === "true";
export const ADMIN = "service:context-service-admin";

export class ApiError extends Error {
  constructor(status, code, message, details) {
    super(message);
    this.status = status;
    this.code = code;
    this.details = details;
  }
}

// A character the X-Context-Subject header cannot carry (fetch refuses a header value outside
// Latin-1), or null.
export function unsendable(subject) {
  return [...subject].find((c) => c.codePointAt(0) > 0xff) ?? null;
}

// The subject typed in development mode; one the header cannot carry counts as none, so the
// page asks again rather than failing every call as unreachable.
export function devSubject() {
  const stored = devMode ? (localStorage.getItem(SUBJECT_KEY) ?? "").trim() : "";
  return unsendable(stored) === null ? stored : "";
}

export function setDevSubject(value) {
  localStorage.setItem(SUBJECT_KEY, value.trim());
}

export const seg = (value) => encodeURIComponent(value);

export async function call(method, path, body) {
  const headers = { Accept: "application/json" };
  if (method !== "GET") headers["X-CSRF-Token"] = csrfToken;
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const subject = devSubject();
  if (subject) headers["X-Context-Subject"] = subject;
  let response;
  try {
    response = await fetch(path, {
      method, headers, credentials: "same-origin", cache: "no-store",
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  } catch {
    throw new ApiError(0, "NETWORK", "the service could not be reached", null);
  }
  if (response.status === 204) return null;
  const text = await response.text();
  let data = null;
  try { data = text ? JSON.parse(text) : null; } catch { data = null; }
  if (!response.ok) {
    const code = data?.code ?? data?.error ?? `HTTP_${response.status}`;
    throw new ApiError(response.status, code, data?.message ?? text.slice(0, 200) ?? "", data?.details ?? null);
  }
  return data;
}

// The caller and its workspaces (GET /v1/workspaces), read once per page.
let sessionPromise = null;
export function session() {
  sessionPromise ??= call("GET", "/v1/workspaces").then((data) => {
    const subject = `${data.subject.kind}:${data.subject.name}`;
    const roles = new Map(data.items.map((w) => [w.namespace, w.role]));
    return {
      subject, items: data.items, isAdmin: subject === ADMIN,
      roleIn: (ws) => (subject === ADMIN ? "owner" : roles.get(ws) ?? null),
    };
  });
  return sessionPromise;
}
