// Settings → Context sets → one set: collections, verified answers, definitions,
// instructions, required evidence and query templates, read-only.

import { call, seg } from "./api.js";
import { start, workspace } from "./shell.js";
import { $, badge, chip, clear, h, notice, relative } from "./ui.js";

const setId = document.body.dataset.setId ?? "";

function section(id, title, count, body) {
  return h("section", { class: "card card-padded", "aria-labelledby": id },
    h("div", { class: "section-head" }, h("h2", { id, class: "card-title" }, title), count === null ? null : h("span", { class: "count" }, String(count))),
    body);
}

function nothing(text) {
  return h("p", { class: "muted" }, text);
}

function answers(set) {
  const items = set.verifiedAnswers ?? [];
  return section("answers-title", "Verified answers", items.length, items.length ? h("ul", { class: "qa-list" }, items.map((a) =>
    h("li", { class: "qa" },
      h("p", { class: "qa-question" }, a.question),
      h("p", { class: "qa-answer" }, a.answer),
      h("div", { class: "qa-meta" }, h("span", { class: "mono cell-sub" }, a.id),
        a.citations?.length ? h("span", { class: "chips" }, h("span", { class: "cell-sub" }, "Cites"), a.citations.map(chip)) : null)))) : nothing("No verified answers."));
}

function definitions(set) {
  const items = set.definitions ?? [];
  return section("definitions-title", "Definitions", items.length, items.length ? h("dl", { class: "definitions" }, items.map((d) => [
    h("dt", {}, d.term, d.aliases?.length ? h("span", { class: "aliases" }, ` also ${d.aliases.join(", ")}`) : null),
    h("dd", {}, d.definition),
  ])) : nothing("No definitions."));
}

function instructions(set) {
  const items = set.instructions ?? [];
  return section("instructions-title", "Instructions", items.length, items.length ? h("ol", { class: "numbered" }, items.map((i) =>
    h("li", {}, h("p", {}, i.text), h("p", { class: "mono cell-sub" }, i.id)))) : nothing("No standing instructions."));
}

function evidence(set) {
  const items = set.requiredEvidence ?? [];
  return section("evidence-title", "Required evidence", items.length, items.length ? h("ul", { class: "evidence" }, items.map((e) =>
    h("li", {}, h("p", { class: "cell-main" }, e.description),
      h("p", { class: "cell-sub" }, "Query ", h("code", {}, e.query), " · ", h("span", { class: "mono" }, e.id))))) : nothing("No evidence is required in packs."));
}

async function main() {
  const current = await start();
  if (!current) return;
  try {
    const set = await call("GET", `/v1/namespaces/${seg(workspace)}/context-sets/${seg(setId)}`);
    document.title = `${set.name} · Context sets · Context Service`;
    $("#set-name").replaceChildren(set.name, " ", badge(set.status, set.status === "active" ? "success" : "neutral"));
    $("#set-description").textContent = set.description ?? "";
    $("#set-meta").replaceChildren(h("span", { class: "mono" }, set.id), ` · version ${set.version} · updated `, relative(set.updatedAt));
    clear($("#set-content")).append(
      section("collections-title", "Collections", set.collections.length, h("div", { class: "chips" }, set.collections.map(chip))),
      answers(set), definitions(set), instructions(set), evidence(set),
      section("templates-title", "Query templates", (set.queryTemplates ?? []).length,
        set.queryTemplates?.length ? h("div", { class: "chips" }, set.queryTemplates.map(chip)) : nothing("No query templates.")));
  } catch (err) {
    notice($("#notice"), "danger", err, { title: "This context set could not be read" });
  }
}

main();
