#!/usr/bin/env node
// Offline type validation of every manifest under k8s/ against the Kubernetes API models (kubeconform is not
// available here, and there is no cluster to ask).
//
//   cd k8s && npm ci && node validate.mjs
//
// For every YAML document:
//   1. schema:  the kubernetes-models class of its apiVersion/kind (core API and prometheus-operator CRDs) runs
//               .validate(): types, required fields, enums, formats.
//   2. strict:  .validate() accepts unknown fields (the API schemas allow them), so a typo such as
//               `readOnlyRootFileSystem: true` would pass and be silently ignored by the cluster. The same documents
//               are therefore type-checked as TypeScript object literals against the models' interfaces, whose
//               excess-property check rejects every unknown field, at any depth. Kustomize patches are checked
//               against a deep-partial of their target type.
//   3. PromQL:  every PrometheusRule expression is parsed with Prometheus' own grammar (lezer-promql).
//   CloudNativePG's Cluster has no kubernetes-models package: it gets a minimal structural check (below).
// Then every kustomization is rendered with `kubectl kustomize` (or `kustomize build`) and the rendered documents
// go through 1-3 again. Without either tool the rendering is skipped with a notice; the files were still
// validated one by one. Exits 1 on any error.

import { execFileSync } from "node:child_process";
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { parseAllDocuments } from "yaml";
import ts from "typescript";
import { parser as promqlParser } from "@prometheus-io/lezer-promql";

const K8S_DIR = path.dirname(fileURLToPath(import.meta.url));
const errors = [];
let documentsChecked = 0;

function fail(where, message) {
  errors.push(`${where}: ${message}`);
}

// --- Which package models which API group ------------------------------------------------------------------------

/** Module specifier of the model of an apiVersion/kind, or null when no model package covers it. */
function modelModule(apiVersion, kind) {
  const group = apiVersion.includes("/") ? apiVersion.split("/")[0] : "";
  const coreGroup = group === "" || !group.includes(".") || group.endsWith(".k8s.io");
  if (coreGroup) return `kubernetes-models/${apiVersion}/${kind}`;
  if (group === "monitoring.coreos.com") return `@kubernetes-models/prometheus-operator/${apiVersion}/${kind}`;
  return null;
}

/** Kinds without a model package, with the structural check that stands in for one. */
const MINIMAL_CHECKS = {
  "postgresql.cnpg.io/v1/Cluster": checkCloudNativePgCluster,
};

// --- 1. schema ---------------------------------------------------------------------------------------------------

async function validateSchema(where, doc) {
  const key = `${doc.apiVersion}/${doc.kind}`;
  const module = modelModule(doc.apiVersion, doc.kind);
  if (module === null) {
    const minimal = MINIMAL_CHECKS[key];
    if (minimal) return minimal(where, doc);
    return fail(where, `no model for ${key}: add its package or a minimal check to validate.mjs`);
  }
  let Model;
  try {
    Model = (await import(module))[doc.kind];
  } catch (e) {
    return fail(where, `no model for ${key} (${module}): ${e.code ?? e.message}`);
  }
  try {
    new Model(doc).validate();
  } catch (e) {
    fail(where, `${key} schema: ${e.message}`);
  }
}

function checkCloudNativePgCluster(where, doc) {
  // No published model: check the fields this project relies on, with the types the operator's CRD declares.
  const spec = doc.spec ?? {};
  const expect = (ok, message) => ok || fail(where, `Cluster: ${message}`);
  expect(typeof doc.metadata?.name === "string", "metadata.name missing");
  expect(Number.isInteger(spec.instances) && spec.instances >= 1, "spec.instances must be an integer >= 1");
  expect(typeof spec.storage?.size === "string", "spec.storage.size must be a quantity string");
  const initdb = spec.bootstrap?.initdb;
  expect(typeof initdb?.database === "string", "spec.bootstrap.initdb.database missing");
  expect(typeof initdb?.owner === "string", "spec.bootstrap.initdb.owner missing");
  if (initdb?.secret !== undefined) expect(typeof initdb.secret.name === "string", "initdb.secret.name missing");
  for (const [name, value] of Object.entries(spec.postgresql?.parameters ?? {})) {
    // The CRD types parameters as map[string]string: an unquoted 400 is rejected by the API server.
    expect(typeof value === "string", `postgresql.parameters.${name} must be a string (quote it)`);
  }
  const sync = spec.postgresql?.synchronous;
  if (sync !== undefined) {
    expect(["any", "first"].includes(sync.method), "postgresql.synchronous.method must be any or first");
    expect(Number.isInteger(sync.number) && sync.number >= 1 && sync.number < spec.instances,
      "postgresql.synchronous.number must be between 1 and instances - 1");
  }
}

// --- 2. strict: unknown fields, through TypeScript's excess-property check --------------------------------------

const strictChecks = []; // { where, module, kind, literal, partial }

function queueStrict(where, doc, partial) {
  const module = modelModule(doc.apiVersion, doc.kind);
  if (module === null) return; // the minimal checks above are all there is for these
  strictChecks.push({ where, module, kind: doc.kind, literal: JSON.stringify(doc, null, 1), partial });
}

function runStrictChecks() {
  if (strictChecks.length === 0) return;
  const sources = new Map();
  strictChecks.forEach((check, i) => {
    const file = path.join(K8S_DIR, `__strict_${i}.ts`);
    const type = check.partial ? `DeepPartial<I${check.kind}>` : `I${check.kind}`;
    sources.set(file, {
      check,
      text: [
        `import type { I${check.kind} } from "${check.module}";`,
        "type DeepPartial<T> = T extends (infer U)[] ? DeepPartial<U>[] : T extends object ? { [K in keyof T]?: DeepPartial<T[K]> } : T;",
        `const document: ${type} = ${check.literal};`,
        "export default document;",
      ].join("\n"),
    });
  });
  const options = {
    noEmit: true, strict: true, skipLibCheck: true, types: [],
    target: ts.ScriptTarget.ES2022, module: ts.ModuleKind.NodeNext, moduleResolution: ts.ModuleResolutionKind.NodeNext,
  };
  const host = ts.createCompilerHost(options);
  const readFromDisk = host.getSourceFile.bind(host);
  const fileExistsOnDisk = host.fileExists.bind(host);
  host.getSourceFile = (file, language, ...rest) =>
    sources.has(file) ? ts.createSourceFile(file, sources.get(file).text, language) : readFromDisk(file, language, ...rest);
  host.fileExists = (file) => sources.has(file) || fileExistsOnDisk(file);
  const program = ts.createProgram([...sources.keys()], options, host);
  for (const diagnostic of ts.getPreEmitDiagnostics(program)) {
    const source = diagnostic.file && sources.get(diagnostic.file.fileName);
    const where = source ? source.check.where : "typescript";
    fail(where, `strict: ${ts.flattenDiagnosticMessageText(diagnostic.messageText, " ")}`);
  }
}

// --- 3. PromQL ---------------------------------------------------------------------------------------------------

function checkPromQl(where, doc) {
  for (const group of doc.spec?.groups ?? []) {
    for (const rule of group.rules ?? []) {
      const name = rule.alert ?? rule.record;
      const expr = String(rule.expr ?? "");
      const errorsAt = [];
      promqlParser.parse(expr).iterate({ enter: (node) => { if (node.type.isError) errorsAt.push(node.from); } });
      if (expr.trim() === "") fail(where, `rule ${name}: empty expr`);
      else if (errorsAt.length > 0) fail(where, `rule ${name}: PromQL syntax error at offset ${errorsAt[0]}: ${expr}`);
    }
  }
}

/** Grafana dashboards (ConfigMaps labelled grafana_dashboard): valid JSON, every panel target's PromQL parses. */
function checkDashboards(where, doc) {
  if (doc.kind !== "ConfigMap" || doc.metadata?.labels?.grafana_dashboard === undefined) return;
  for (const [file, text] of Object.entries(doc.data ?? {})) {
    let dashboard;
    try {
      dashboard = JSON.parse(text);
    } catch (e) {
      fail(where, `dashboard ${file}: not JSON: ${e.message}`);
      continue;
    }
    const panels = dashboard.panels ?? [];
    if (panels.length === 0) fail(where, `dashboard ${file}: no panels`);
    for (const panel of panels) {
      const targets = panel.targets ?? [];
      if (targets.length === 0) fail(where, `dashboard ${file}: panel "${panel.title}" has no query`);
      for (const target of targets) {
        const expr = String(target.expr ?? "");
        const errorsAt = [];
        promqlParser.parse(expr).iterate({ enter: (node) => { if (node.type.isError) errorsAt.push(node.from); } });
        if (expr.trim() === "") fail(where, `dashboard ${file}: panel "${panel.title}": empty expr`);
        else if (errorsAt.length > 0) fail(where, `dashboard ${file}: panel "${panel.title}": PromQL syntax error at offset ${errorsAt[0]}: ${expr}`);
      }
    }
  }
}

// --- Files, kustomizations, rendering ---------------------------------------------------------------------------

function yamlFiles(dir) {
  return readdirSync(dir).flatMap((name) => {
    const full = path.join(dir, name);
    if (name === "node_modules" || name.startsWith(".")) return [];
    if (statSync(full).isDirectory()) return yamlFiles(full);
    return /\.ya?ml$/.test(name) ? [full] : [];
  });
}

function parseDocuments(where, text) {
  const docs = [];
  parseAllDocuments(text, { uniqueKeys: true, prettyErrors: true }).forEach((document, i) => {
    for (const problem of [...document.errors, ...document.warnings]) fail(`${where}#${i}`, `YAML: ${problem.message}`);
    const value = document.toJS();
    if (value !== null && value !== undefined) docs.push({ where: `${where}#${i}`, doc: value });
  });
  return docs;
}

async function checkDocument(where, doc, partial) {
  documentsChecked++;
  if (typeof doc !== "object" || typeof doc.apiVersion !== "string" || typeof doc.kind !== "string") {
    return fail(where, "not a Kubernetes object (apiVersion and kind are required)");
  }
  if (!partial) await validateSchema(where, doc);
  queueStrict(where, doc, partial);
  if (doc.kind === "PrometheusRule") checkPromQl(where, doc);
  checkDashboards(where, doc);
}

function checkKustomization(where, dir, kustomization) {
  const entries = [
    ...(kustomization.resources ?? []),
    ...(kustomization.patches ?? []).filter((p) => p.path).map((p) => p.path),
  ];
  for (const entry of entries) {
    if (!existsSync(path.join(dir, entry))) fail(where, `refers to ${entry}, which does not exist`);
  }
  for (const image of kustomization.images ?? []) {
    if (typeof image.name !== "string") fail(where, "images[].name missing");
  }
}

function findRenderer() {
  for (const [command, args] of [["kubectl", ["kustomize"]], ["kustomize", ["build"]]]) {
    try {
      execFileSync(command, ["version", ...(command === "kubectl" ? ["--client"] : [])], { stdio: "ignore" });
      return { command, args };
    } catch {
      // not installed, try the next
    }
  }
  return null;
}

const files = yamlFiles(K8S_DIR).sort();
const kustomizationDirs = [];
const patchFiles = new Set();
for (const file of files) {
  if (path.basename(file) !== "kustomization.yaml") continue;
  const kustomization = parseDocuments(path.relative(K8S_DIR, file), readFileSync(file, "utf8"))[0]?.doc ?? {};
  checkKustomization(path.relative(K8S_DIR, file), path.dirname(file), kustomization);
  kustomizationDirs.push(path.dirname(file));
  for (const patch of kustomization.patches ?? []) {
    if (patch.path) patchFiles.add(path.resolve(path.dirname(file), patch.path));
  }
}

for (const file of files) {
  if (path.basename(file) === "kustomization.yaml") continue;
  const where = path.relative(K8S_DIR, file);
  for (const { where: docWhere, doc } of parseDocuments(where, readFileSync(file, "utf8"))) {
    await checkDocument(docWhere, doc, patchFiles.has(file));
  }
}

const renderer = findRenderer();
if (renderer === null) {
  console.log("NOTICE: neither kubectl nor kustomize is installed: kustomizations NOT rendered; "
    + "base and overlay files were validated one by one (overlay patches as partial documents).");
} else {
  for (const dir of kustomizationDirs) {
    const where = `rendered ${path.relative(K8S_DIR, dir)}`;
    let output;
    try {
      output = execFileSync(renderer.command, [...renderer.args, dir], { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
    } catch (e) {
      fail(where, `${renderer.command} ${renderer.args.join(" ")} failed: ${e.stderr || e.message}`);
      continue;
    }
    for (const { where: docWhere, doc } of parseDocuments(where, output)) {
      await checkDocument(`${docWhere} (${doc.kind}/${doc.metadata?.name})`, doc, false);
    }
  }
}

runStrictChecks();

for (const error of errors) console.error(`ERROR ${error}`);
console.log(`k8s validation: ${documentsChecked} documents from ${files.length} files`
  + `${renderer ? ` and ${kustomizationDirs.length} renderings (${renderer.command})` : ""}, ${errors.length} errors`);
process.exit(errors.length === 0 ? 0 : 1);
