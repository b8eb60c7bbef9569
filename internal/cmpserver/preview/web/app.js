// strata cmp preview: the parameters form drawn from the plugin's
// announcement, as Argo CD's UI draws it, and the render of its values.
// Every URL is relative: the page lives under /TOKEN/.

const $ = (id) => document.getElementById(id);
const page = (crypto.randomUUID && crypto.randomUUID()) || String(Math.random()).slice(2);
let announcements = [];
let controller = null;
let timer = null;

function el(tag, attrs = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "text") e.textContent = v;
    else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v === true ? "" : v);
  }
  for (const c of children) if (c) e.append(c);
  return e;
}

const collection = (a) => a.collectionType || "string";
const itemType = (a) => a.itemType || "string";

// An input for one item of the announcement's itemType.
function itemInput(a, id, value, label) {
  const t = itemType(a);
  if (t === "boolean") {
    const box = el("input", { type: "checkbox", role: "switch", id, "aria-label": label });
    box.checked = value === "true";
    return box;
  }
  const input = el("input", { type: t === "number" ? "number" : "text", id, "aria-label": label, step: t === "number" ? "any" : null });
  input.value = value ?? "";
  return input;
}

const itemValue = (input) => (input.type === "checkbox" ? String(input.checked) : input.value);

function removeButton(label, row) {
  return el("button", { type: "button", "aria-label": "Remove " + label, text: "×", onclick: () => { row.remove(); schedule(); } });
}

function arrayRow(a, i, list, value) {
  const label = (a.title || a.name) + " item";
  const row = el("div", { class: "row" });
  row.append(itemInput(a, `param-${i}-item-${list.children.length}`, value, label), removeButton(label, row));
  list.append(row);
}

function mapRow(list, label, key, value, a) {
  const row = el("div", { class: "row" });
  const k = el("input", { type: "text", "aria-label": label + " key", class: "key", placeholder: "key" });
  k.value = key ?? "";
  row.append(k, a ? itemInput(a, null, value, label + " value") : Object.assign(el("input", { type: "text", "aria-label": label + " value", placeholder: "value" }), { value: value ?? "" }), removeButton(label + " entry", row));
  list.append(row);
}

function field(a, i) {
  const label = a.title || a.name;
  const id = `param-${i}`;
  const box = el("div", { class: "field", "data-param": a.name, "data-collection": collection(a) });
  const help = a.tooltip ? el("p", { class: "help", id: id + "-help", text: a.tooltip }) : null;
  const err = el("p", { class: "field-error", id: id + "-error", role: "alert", hidden: true });
  const described = [help && help.id, err.id].filter(Boolean).join(" ");
  const head = collection(a) === "string" ? el("label", { for: id }) : el("label", { id: id + "-label" });
  head.append(label);
  if (a.title && a.title !== a.name) head.append(el("code", { class: "name", text: a.name }));
  if (a.required) head.append(el("span", { class: "req", "aria-label": "required", title: "required", text: "*" }));
  box.append(head);
  if (help) box.append(help);
  if (collection(a) === "string") {
    const input = itemInput(a, id, a.string ?? "", null);
    input.removeAttribute("aria-label");
    input.setAttribute("aria-describedby", described);
    if (a.required) input.setAttribute("aria-required", "true");
    box.append(itemType(a) === "boolean" ? el("span", { class: "switch" }, input, el("span", { text: "on" })) : input);
    if (a.string) box.append(el("p", { class: "default", text: "default: " + a.string }));
  } else if (collection(a) === "array") {
    const list = el("div", { class: "rows", role: "group", "aria-labelledby": id + "-label", "aria-describedby": described });
    for (const v of a.array || []) arrayRow(a, i, list, v);
    box.append(list, el("button", { type: "button", text: "Add item", "aria-label": "Add an item to " + label, onclick: () => { arrayRow(a, i, list, ""); list.lastChild.firstChild.focus(); schedule(); } }));
    if (a.array && a.array.length) box.append(el("p", { class: "default", text: "default: " + JSON.stringify(a.array) }));
  } else {
    const list = el("div", { class: "rows", role: "group", "aria-labelledby": id + "-label", "aria-describedby": described });
    for (const [k, v] of Object.entries(a.map || {}).sort()) mapRow(list, label, k, v, a);
    box.append(list, el("button", { type: "button", text: "Add entry", "aria-label": "Add an entry to " + label, onclick: () => { mapRow(list, label, "", "", a); list.lastChild.firstChild.focus(); schedule(); } }));
    if (a.map && Object.keys(a.map).length) box.append(el("p", { class: "default", text: "default: " + JSON.stringify(a.map) }));
  }
  box.append(err);
  return box;
}

// The value a field holds now, in the parameter's field.
function valueOf(a, box) {
  const rows = [...box.querySelectorAll(".rows > .row")];
  switch (collection(a)) {
    case "array": return rows.map((r) => itemValue(r.querySelector("input")));
    case "map": {
      const m = {};
      for (const r of rows) { const [k, v] = r.querySelectorAll("input"); if (k.value !== "") m[k.value] = itemValue(v); }
      return m;
    }
    default: return itemValue(box.querySelector("input"));
  }
}

const same = (x, y) => JSON.stringify(x) === JSON.stringify(y);

// The parameters to send: those whose value is not the announced default.
function parameters() {
  const out = [];
  announcements.forEach((a, i) => {
    const box = $("fields").children[i];
    const v = valueOf(a, box);
    switch (collection(a)) {
      case "array": if (!same(v, a.array || [])) out.push({ name: a.name, array: v }); break;
      case "map": {
        const sorted = (m) => Object.fromEntries(Object.entries(m).sort());
        if (!same(sorted(v), sorted(a.map || {}))) out.push({ name: a.name, map: v });
        break;
      }
      default: {
        const def = a.string ?? (itemType(a) === "boolean" ? "false" : "");
        if (v !== def) out.push({ name: a.name, string: v });
      }
    }
  });
  return out;
}

function env() {
  return [...$("env-rows").children].map((r) => r.querySelectorAll("input")).filter(([k]) => k.value !== "").map(([k, v]) => ({ name: k.value, value: v.value }));
}

function schedule() {
  clearTimeout(timer);
  timer = setTimeout(render, 300);
}

function setStatus(text) { $("status").textContent = text; }

// setValue puts a parameter's value v into its field.
function setValue(a, box, i, v) {
  const list = box.querySelector(".rows");
  switch (collection(a)) {
    case "array": list.replaceChildren(); for (const x of v || []) arrayRow(a, i, list, x); break;
    case "map": list.replaceChildren(); for (const [k, x] of Object.entries(v || {}).sort()) mapRow(list, a.title || a.name, k, x, a); break;
    default: { const input = box.querySelector("input"); if (input.type === "checkbox") input.checked = v === "true"; else input.value = v ?? ""; }
  }
}

// load reads the announcement and draws the form; keep carries the
// values set so far over to the parameters of the same name and kind.
async function load(keep = false) {
  const saved = keep ? parameters() : [];
  setStatus("Reading the announcement…");
  const r = await fetch("api/announcement");
  if (!r.ok) { setStatus(`announcement: HTTP ${r.status}: ${await r.text()}`); return; }
  const ann = await r.json();
  $("plugin-name").textContent = ann.plugin;
  const next = ann.announcements || [];
  if (keep && same(next, announcements)) { render(); return; }
  announcements = next;
  const fields = $("fields");
  fields.replaceChildren(...announcements.map(field));
  if (!announcements.length) fields.append(el("p", { class: "help", text: "The plugin announces no parameters." }));
  for (const p of saved) {
    const i = announcements.findIndex((a) => a.name === p.name);
    if (i < 0) continue;
    const a = announcements[i];
    const v = collection(a) === "array" ? p.array : collection(a) === "map" ? p.map : p.string;
    if (v !== undefined) setValue(a, fields.children[i], i, v);
  }
  showError(ann.error, "announcement");
  render();
}

// watch polls the app directory's state and, when a file changed, reads
// the announcement again (keeping the values set) and renders again.
let version = null;
async function watch() {
  if (document.visibilityState === "visible") {
    try {
      const r = await fetch("api/state");
      if (r.ok) {
        const v = (await r.json()).version;
        if (version !== null && v !== version) { version = v; await load(true); }
        version = v;
      }
    } catch { /* the preview stopped; the status line says so at the next render */ }
  }
  setTimeout(watch, 2000);
}

function showError(e, what) {
  const box = $("error");
  for (const f of document.querySelectorAll(".field")) { f.classList.remove("invalid"); const p = f.querySelector(".field-error"); p.hidden = true; p.textContent = ""; }
  if (!e) { box.hidden = true; box.replaceChildren(); return; }
  box.hidden = false;
  box.replaceChildren(el("strong", { text: `The ${what} failed` + (e.parameter ? ` (parameter ${e.parameter})` : "") + ": " }), el("span", { id: "error-message", text: e.message }));
  if (e.stderr) box.append(el("h3", { text: "stderr" }), el("pre", { id: "error-stderr", tabindex: 0, text: e.stderr }));
}

function fieldProblem(name, message) {
  const box = [...document.querySelectorAll(".field")].find((f) => f.dataset.param === name);
  if (!box) return;
  box.classList.add("invalid");
  const p = box.querySelector(".field-error");
  p.hidden = false;
  p.textContent = p.textContent ? p.textContent + "\n" + message : message;
}

async function render() {
  clearTimeout(timer);
  if (controller) controller.abort();
  controller = new AbortController();
  const mine = controller;
  setStatus("Rendering…");
  let res;
  try {
    const r = await fetch("api/render", { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ page, parameters: parameters(), env: env() }), signal: mine.signal });
    if (r.status === 409) return; // a newer render took over
    if (!r.ok) { setStatus(`render: HTTP ${r.status}: ${await r.text()}`); return; }
    res = await r.json();
  } catch (e) {
    if (e.name !== "AbortError") setStatus("render: " + e.message);
    return;
  }
  if (mine !== controller) return;
  $("plugin-block").textContent = res.plugin;
  $("command").textContent = res.command;
  $("parameters-file-box").hidden = !res.parametersFile;
  $("parameters-file").textContent = res.parametersFile || "";
  showError(res.error, "render");
  for (const p of res.problems || []) fieldProblem(p.parameter, p.message);
  if (res.error && res.error.parameter) fieldProblem(res.error.parameter, res.error.message + (res.error.stderr ? "\n" + res.error.stderr.trim() : ""));
  if (res.error) { setStatus("The render failed; the manifests below are the last good render."); return; }
  showManifests(res.manifests || "", res.resources || []);
  showDiff(res.diff || "");
  $("values-box").hidden = !res.values;
  $("values").textContent = res.values || "";
  setStatus(`Rendered ${res.resources.length} resource${res.resources.length === 1 ? "" : "s"} at ${new Date().toLocaleTimeString()}.`);
}

function showManifests(text, resources) {
  const lines = text.split("\n");
  const list = $("resources");
  const out = $("manifests");
  list.replaceChildren();
  out.replaceChildren();
  $("resource-count").textContent = `(${resources.length})`;
  resources.forEach((r, i) => {
    const end = i + 1 < resources.length ? resources[i + 1].line - 1 : lines.length;
    const title = `${r.kind || "?"} ${r.namespace ? r.namespace + "/" : ""}${r.name || "?"}`;
    list.append(el("li", {}, el("a", { href: `#res-${i}`, text: title })));
    out.append(el("section", { id: `res-${i}`, "aria-label": title }, el("h3", { text: title }), el("pre", { tabindex: 0, class: "manifest", text: lines.slice(r.line - 1, end).join("\n") })));
  });
}

function showDiff(diff) {
  const pre = $("diff");
  pre.replaceChildren();
  if (!diff) { pre.textContent = "(the same manifests as with the defaults)"; return; }
  for (const [i, line] of diff.split("\n").entries()) {
    const cls = i < 2 || line.startsWith("@@") ? "hunk" : line.startsWith("+") ? "add" : line.startsWith("-") ? "del" : null;
    pre.append(cls ? el("span", { class: cls, text: line }) : line + "\n");
  }
}

async function copy(id, button) {
  const text = $(id).textContent;
  try {
    await navigator.clipboard.writeText(text);
    button.textContent = "Copied";
  } catch {
    const range = document.createRange();
    range.selectNodeContents($(id));
    getSelection().removeAllRanges();
    getSelection().addRange(range);
    button.textContent = "Selected: press Ctrl+C";
  }
  setTimeout(() => { button.textContent = button.dataset.label; }, 1500);
}

for (const b of document.querySelectorAll("[data-copy]")) {
  b.dataset.label = b.textContent;
  b.addEventListener("click", () => copy(b.dataset.copy, b));
}
$("form").addEventListener("input", schedule);
$("form").addEventListener("change", schedule);
$("form").addEventListener("submit", (e) => { e.preventDefault(); render(); });
$("env-add").addEventListener("click", () => { mapRow($("env-rows"), "env", "", "", null); $("env-rows").lastChild.firstChild.focus(); });
$("reload").addEventListener("click", () => load(true));
$("reset").addEventListener("click", () => load(false));
load();
watch();
