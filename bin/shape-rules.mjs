// The shape rules of ARCHITECTURE.md ("Dependency rules"), as pure functions over their
// inputs: bin/check-shape.mjs feeds them dependency-cruiser's modules and the production
// sources; bin/shape-rules.test.ts feeds them tiny synthetic ones.
//
// - No folder-level import cycle inside a top-level folder: each module counts for its
//   folder (a top-level folder's root files are a node of their own, `worker` beside
//   `worker/launch`), and every strongly connected component of more than one folder,
//   among the imports that stay inside one top-level folder, is a finding.
// - No production function longer than `maxFunctionLines` lines (declarations, methods,
//   accessors, constructors, function expressions and arrow functions, nested ones counted
//   on their own as well as in their outer function).
import { parseSync } from "@swc/core";

export const maxFunctionLines = 120;

/** Test code and benches: outside the production graph (the same paths as .dependency-cruiser.cjs). */
export const testCodePattern = /(\.test\.ts$|\.test-support\.ts$|^test-support\/|\/__fixtures__\/|\/fixtures\/|^bench\/)/;

/** Whether a path (relative to the checkout, `/`-separated) is production code. */
export function isProduction(path) {
  return !testCodePattern.test(path);
}

/** The folder a module counts for: its directory (`worker/launch/x.ts` → `worker/launch`, `worker/x.ts` → `worker`). */
export function folderOf(path) {
  const slash = path.lastIndexOf("/");
  return slash < 0 ? "." : path.slice(0, slash);
}

function topOf(folder) {
  const slash = folder.indexOf("/");
  return slash < 0 ? folder : folder.slice(0, slash);
}

/**
 * The folder graph: `from` folder → `to` folder → the module imports that make the edge,
 * for production imports between two folders of the same top-level folder.
 * @param {{ source: string; dependencies: { resolved: string }[] }[]} modules
 */
export function folderGraph(modules) {
  /** @type {Map<string, Map<string, string[]>>} */
  const graph = new Map();
  for (const module of modules) {
    if (!isProduction(module.source)) continue;
    const from = folderOf(module.source);
    for (const dependency of module.dependencies) {
      const target = dependency.resolved;
      if (!target || !isProduction(target)) continue;
      const to = folderOf(target);
      if (to === from || topOf(to) !== topOf(from) || topOf(from) === ".") continue;
      if (!graph.has(from)) graph.set(from, new Map());
      const edges = graph.get(from);
      if (!edges.has(to)) edges.set(to, []);
      const imports = edges.get(to);
      const edge = `${module.source} → ${target}`;
      if (!imports.includes(edge)) imports.push(edge);
    }
  }
  return graph;
}

/** Strongly connected components of a graph (Tarjan's algorithm, iterative), as sorted lists of nodes. */
export function stronglyConnected(graph) {
  const nodes = new Set(graph.keys());
  for (const edges of graph.values()) for (const to of edges.keys()) nodes.add(to);
  const index = new Map();
  const low = new Map();
  const onStack = new Set();
  const stack = [];
  const components = [];
  let next = 0;
  for (const root of [...nodes].sort()) {
    if (index.has(root)) continue;
    const work = [{ node: root, targets: [...(graph.get(root)?.keys() ?? [])].sort(), at: 0 }];
    index.set(root, next);
    low.set(root, next++);
    stack.push(root);
    onStack.add(root);
    while (work.length > 0) {
      const frame = work[work.length - 1];
      if (frame.at < frame.targets.length) {
        const to = frame.targets[frame.at++];
        if (!index.has(to)) {
          index.set(to, next);
          low.set(to, next++);
          stack.push(to);
          onStack.add(to);
          work.push({ node: to, targets: [...(graph.get(to)?.keys() ?? [])].sort(), at: 0 });
        } else if (onStack.has(to)) {
          low.set(frame.node, Math.min(low.get(frame.node), index.get(to)));
        }
        continue;
      }
      work.pop();
      if (work.length > 0) {
        const parent = work[work.length - 1].node;
        low.set(parent, Math.min(low.get(parent), low.get(frame.node)));
      }
      if (low.get(frame.node) === index.get(frame.node)) {
        const component = [];
        let member;
        do {
          member = stack.pop();
          onStack.delete(member);
          component.push(member);
        } while (member !== frame.node);
        components.push(component.sort());
      }
    }
  }
  return components;
}

/**
 * Every folder cycle: each strongly connected component of more than one folder, with the
 * folder edges inside it and the imports that form each edge.
 * @param {{ source: string; dependencies: { resolved: string }[] }[]} modules
 * @returns {{ folders: string[]; edges: { from: string; to: string; imports: string[] }[] }[]}
 */
export function folderCycles(modules) {
  const graph = folderGraph(modules);
  const cycles = [];
  for (const folders of stronglyConnected(graph)) {
    if (folders.length < 2) continue;
    const members = new Set(folders);
    const edges = [];
    for (const from of folders) {
      for (const [to, imports] of [...(graph.get(from) ?? new Map()).entries()].sort(([a], [b]) => a.localeCompare(b))) {
        if (members.has(to)) edges.push({ from, to, imports: [...imports].sort() });
      }
    }
    cycles.push({ folders, edges });
  }
  return cycles.sort((a, b) => a.folders[0].localeCompare(b.folders[0]));
}

const functionTypes = new Set([
  "FunctionDeclaration",
  "FunctionExpression",
  "ArrowFunctionExpression",
  "ClassMethod",
  "PrivateMethod",
  "Constructor",
  "MethodProperty",
  "GetterProperty",
  "SetterProperty",
]);

function keyName(key) {
  if (!key) return undefined;
  if (key.type === "Identifier") return key.value;
  if (key.type === "PrivateName") return `#${key.id?.value ?? key.value}`;
  if (key.type === "StringLiteral" || key.type === "NumericLiteral") return String(key.value);
  if (key.type === "Computed") return "[computed]";
  return undefined;
}

/** A readable name for a function node, from the node itself or where it stands. */
function functionName(node, parent, grandparent) {
  if (node.type === "Constructor") return "constructor";
  const own = keyName(node.identifier) ?? keyName(node.key);
  if (own) return own;
  if (parent?.type === "VariableDeclarator") return keyName(parent.id) ?? "(anonymous)";
  if (parent?.type === "KeyValueProperty" || parent?.type === "ClassProperty" || parent?.type === "PrivateProperty") {
    return keyName(parent.key) ?? "(anonymous)";
  }
  if (parent?.type === "AssignmentExpression") {
    const left = parent.left;
    if (left?.type === "MemberExpression") return keyName(left.property) ?? "(anonymous)";
    return keyName(left) ?? "(anonymous)";
  }
  if (parent?.type === "ExportDefaultExpression") return "default";
  // A callback: swc wraps call arguments as { spread, expression }.
  const call = parent && !parent.type && grandparent?.type === "CallExpression" ? grandparent : undefined;
  if (call) {
    const callee = call.callee;
    const calleeName = callee?.type === "MemberExpression" ? keyName(callee.property) : keyName(callee);
    return `(callback of ${calleeName ?? "a call"})`;
  }
  return "(anonymous)";
}

function lineStarts(bytes) {
  const starts = [0];
  for (let i = 0; i < bytes.length; i++) if (bytes[i] === 10) starts.push(i + 1);
  return starts;
}

function lineAt(starts, offset) {
  let lo = 0;
  let hi = starts.length - 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (starts[mid] <= offset) lo = mid;
    else hi = mid - 1;
  }
  return lo + 1;
}

/**
 * Every function in a source longer than `max` lines (first to last line, both counted).
 * @param {string} source TypeScript or JavaScript
 * @param {{ max?: number; tsx?: boolean }} [options]
 * @returns {{ name: string; line: number; lines: number }[]}
 */
export function longFunctions(source, options = {}) {
  const max = options.max ?? maxFunctionLines;
  // A shebang is blanked (same length); the leading `;` gives the file's first byte a
  // known span whatever offset swc starts this parse at.
  const text = source.startsWith("#!") ? `//${source.slice(2)}` : source;
  const module = parseSync(`;${text}`, { syntax: "typescript", tsx: options.tsx ?? false, comments: false });
  const base = module.body[0].span.start + 1;
  const starts = lineStarts(Buffer.from(text, "utf8"));
  const found = [];
  const visit = (node, parent, grandparent) => {
    if (Array.isArray(node)) {
      for (const item of node) visit(item, parent, grandparent);
      return;
    }
    if (!node || typeof node !== "object") return;
    if (functionTypes.has(node.type) && node.span) {
      const line = lineAt(starts, node.span.start - base);
      const lines = lineAt(starts, Math.max(node.span.start, node.span.end - 1) - base) - line + 1;
      if (lines > max) found.push({ name: functionName(node, parent, grandparent), line, lines });
    }
    for (const [key, value] of Object.entries(node)) {
      if (key === "span" || !value || typeof value !== "object") continue;
      visit(value, node, parent);
    }
  };
  visit(module.body, module, undefined);
  return found.sort((a, b) => a.line - b.line);
}

/** One line per cycle: its folders, then each edge with the imports that form it. */
export function formatCycle(cycle) {
  const edges = cycle.edges.map((edge) => `${edge.from} → ${edge.to} (${edge.imports.join(", ")})`);
  return `folder cycle ${cycle.folders.join(" ↔ ")}: ${edges.join("; ")}`;
}

/** One line per long function. */
export function formatLongFunction(file, found, max = maxFunctionLines) {
  return `long function ${file}:${found.line} ${found.name}: ${found.lines} lines (over ${max})`;
}
