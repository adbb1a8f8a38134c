// Small DOM helpers shared by the pages: element building (never innerHTML with data),
// notices, toasts, badges, dates and dialogs.

import { explain } from "./errors.js";

export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs ?? {})) {
    if (value === false || value === null || value === undefined) continue;
    if (key === "class") el.className = value;
    else if (key === "text") el.textContent = value;
    else if (key.startsWith("on")) el.addEventListener(key.slice(2), value);
    else el.setAttribute(key, value === true ? "" : value);
  }
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

export const $ = (selector, root = document) => root.querySelector(selector);

export function clear(el) {
  el.replaceChildren();
  return el;
}

export function badge(text, tone = "neutral", title) {
  return h("span", { class: `badge badge-${tone}`, title }, text);
}

export function chip(text) {
  return h("code", { class: "chip" }, text);
}

// A notice inside `slot`: an API error explained in words, or a plain message.
export function notice(slot, tone, content, { title, focus = false } = {}) {
  let body;
  if (content instanceof Error) {
    const explained = explain(content);
    body = [
      h("p", { class: "notice-title" }, title ?? explained.summary),
      title ? h("p", {}, explained.summary) : null,
      explained.fields.length
        ? h("ul", { class: "notice-list" }, explained.fields.map((f) => h("li", {}, h("strong", {}, `${f.label}: `), f.message)))
        : null,
      h("p", { class: "notice-answer" }, h("span", { class: "sr-only" }, "The service answered: "), explained.answer),
    ];
  } else {
    body = [title ? h("p", { class: "notice-title" }, title) : null, typeof content === "string" ? h("p", {}, content) : content];
  }
  const role = tone === "danger" || tone === "warning" ? "alert" : "status";
  const el = h("div", { class: `notice notice-${tone}`, role, tabindex: "-1" }, body);
  clear(slot).append(el);
  if (focus) el.focus();
  return el;
}

// Text someone else chose (a name, a subject), set inside a sentence: isolated, so that a
// right-to-left override in it cannot reorder the words around it.
export function named(text) {
  return h("bdi", {}, text);
}

// The first character a person sees in `text` (a whole emoji or letter, never half of a
// surrogate pair), upper-cased; "?" when there is none.
const graphemes = new Intl.Segmenter(undefined, { granularity: "grapheme" });
export function initial(text) {
  const first = graphemes.segment(text ?? "")[Symbol.iterator]().next().value?.segment;
  return first ? first.toUpperCase() : "?";
}

// A toast of text and `named` parts.
export function toast(...parts) {
  const region = $("#toasts");
  const el = h("div", { class: "toast" }, parts);
  region.append(el);
  setTimeout(() => el.remove(), 5000);
}

const dateFormat = new Intl.DateTimeFormat("en-GB", { day: "numeric", month: "short", year: "numeric" });
const timeFormat = new Intl.DateTimeFormat("en-GB", { hour: "2-digit", minute: "2-digit" });
const relativeFormat = new Intl.RelativeTimeFormat("en", { numeric: "auto" });

export function date(iso) {
  const d = new Date(iso);
  return h("time", { datetime: iso, title: `${dateFormat.format(d)}, ${timeFormat.format(d)} (${d.toISOString()})`, class: "nowrap" }, dateFormat.format(d));
}

export function relative(iso, now = Date.now()) {
  const seconds = (new Date(iso).getTime() - now) / 1000;
  const units = [["year", 31536000], ["month", 2592000], ["day", 86400], ["hour", 3600], ["minute", 60]];
  for (const [unit, size] of units) {
    if (Math.abs(seconds) >= size) return relativeFormat.format(Math.round(seconds / size), unit);
  }
  return relativeFormat.format(Math.round(seconds), "second");
}

export function emptyRow(columns, title, text) {
  return h("tr", { class: "row-empty" }, h("td", { colspan: String(columns) },
    h("div", { class: "empty-state" }, h("p", { class: "empty-title" }, title), text ? h("p", { class: "muted" }, text) : null)));
}

// Opens a dialog; returns it. Focus goes to the element marked autofocus, or `focus`.
export function openDialog(dialog, focus) {
  if (!dialog.open) dialog.showModal();
  (focus ?? dialog.querySelector("[autofocus]"))?.focus();
  return dialog;
}

export function busy(button, on) {
  button.disabled = on;
  button.setAttribute("aria-busy", on ? "true" : "false");
}
