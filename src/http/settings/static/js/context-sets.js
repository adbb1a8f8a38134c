// Settings → Context sets: every set of the workspace, read-only.

import { call, seg } from "./api.js";
import { start, workspace } from "./shell.js";
import { $, badge, chip, clear, date, emptyRow, h, notice } from "./ui.js";

const plural = (n, one, many) => `${n} ${n === 1 ? one : many}`;

export function contents(set) {
  const parts = [
    [set.verifiedAnswers, "verified answer", "verified answers"],
    [set.definitions, "definition", "definitions"],
    [set.instructions, "instruction", "instructions"],
    [set.requiredEvidence, "required evidence", "required evidence"],
    [set.queryTemplates, "query template", "query templates"],
  ].filter(([items]) => items?.length).map(([items, one, many]) => plural(items.length, one, many));
  return parts.length ? parts.join(" · ") : "Collections only";
}

function row(set) {
  const shown = set.collections.slice(0, 3);
  return h("tr", { class: set.status === "active" ? "" : "row-inactive" },
    h("td", {}, h("a", { class: "cell-main", href: `/settings/w/${seg(workspace)}/context-sets/${seg(set.id)}` }, set.name),
      h("div", { class: "cell-sub mono" }, set.id)),
    h("td", {}, badge(set.status, set.status === "active" ? "success" : "neutral")),
    h("td", {}, `v${set.version}`),
    h("td", {}, h("div", { class: "chips" }, shown.map(chip),
      set.collections.length > shown.length ? h("span", { class: "cell-sub" }, `+${set.collections.length - shown.length} more`) : null)),
    h("td", { class: "cell-sub" }, contents(set)),
    h("td", {}, date(set.updatedAt)));
}

async function main() {
  const current = await start();
  const rows = $("#set-rows");
  if (!current) {
    clear(rows).append(emptyRow(6, "Nothing to show yet", ""));
    return;
  }
  try {
    const { items } = await call("GET", `/v1/namespaces/${seg(workspace)}/context-sets`);
    const active = items.filter((s) => s.status === "active").length;
    $("#sets-meta").textContent = `${plural(items.length, "set", "sets")} · ${active} active`;
    clear(rows);
    if (!items.length) rows.append(emptyRow(6, "No context sets yet", `Administrators create them with POST /v1/namespaces/${workspace}/context-sets.`));
    for (const set of items) rows.append(row(set));
  } catch (err) {
    notice($("#notice"), "danger", err, { title: "The context sets of this workspace could not be read" });
    clear(rows).append(emptyRow(6, "Context sets are not available", "See the message above."));
  }
}

main();
