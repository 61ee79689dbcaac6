// Hooks exercised by TestCall: each function is one case.
var calls = 0; // module state: must read 1 in every call

function counter(request) {
  calls++;
  return { calls: calls };
}

function echo(request) {
  return request;
}

const arrow = (request) => ({ kind: "arrow", name: request.parent.metadata.name });

// Webhook-style code that edits its request in place before answering.
function mutate(request) {
  const parent = request.parent;
  parent.metadata.labels.injected = "yes";
  delete parent.metadata.name;
  parent.spec.tags.push("c");
  parent.spec.tags[0] = "A";
  parent.spec.extra = { added: true };
  request.parent.spec.replicas += 1;
  return { parent: request.parent };
}

// Views behave like plain objects and arrays.
function views(request) {
  const p = request.parent;
  const keys = Object.keys(p.metadata);
  const forIn = [];
  for (const k in p.metadata) forIn.push(k);
  const spread = { ...p.metadata.labels, more: 1 };
  const tags = [...p.spec.tags];
  return {
    keys: keys,
    forIn: forIn,
    spread: spread,
    tags: tags,
    mapped: p.spec.tags.map((t) => t.toUpperCase()),
    joined: p.spec.tags.join("+"),
    isArray: Array.isArray(p.spec.tags),
    json: JSON.stringify(p.metadata),
    same: request.parent === request.parent,
    has: "labels" in p.metadata && p.metadata.hasOwnProperty("name"),
    length: p.spec.tags.length,
    sliced: p.spec.tags.slice(1),
    entries: Object.entries(p.metadata.labels),
    ratio: p.spec.ratio,
    missing: p.spec.nothing === undefined,
  };
}

function numbers(request) {
  return { int: 3, neg: -7, float: 0.5, integralFloat: 6 / 2, big: 2 ** 53, bigint: 12n, nil: null, t: true, s: "x", dropped: undefined };
}

function dates(request) {
  return { at: new Date(0), now: Date.now() };
}

// Prototype and global pollution; readPollution must see none of it in a later call.
function pollute(request) {
  Object.prototype.polluted = "yes";
  Array.prototype.push = function () { return "hijacked"; };
  String.prototype.toUpperCase = function () { return "hijacked"; };
  globalThis.leaked = "yes";
  implicitGlobal = "yes";
  JSON.stringify = function () { return "hijacked"; };
  Object.freeze(Object.prototype);
  return { done: true };
}

function readPollution(request) {
  const a = [];
  a.push(1);
  return {
    polluted: ({}).polluted === undefined ? null : "polluted",
    push: a.length,
    upper: "x".toUpperCase(),
    leaked: typeof leaked,
    implicitGlobal: typeof implicitGlobal,
    json: JSON.stringify({ a: 1 }),
    frozen: Object.isFrozen(Object.prototype), // in every call: built-ins are frozen
  };
}

// What a Node webhook could reach must not exist.
function outside(request) {
  const out = {};
  for (const name of ["process", "fetch", "XMLHttpRequest", "setTimeout", "setInterval", "setImmediate", "queueMicrotask",
    "Deno", "Bun", "module", "exports", "__dirname", "Buffer", "eval", "Uint8Array", "ArrayBuffer", "DataView", "WebAssembly"]) {
    out[name] = typeof globalThis[name];
  }
  return out;
}

function requireStdlib(request) {
  return { same: require("strings") === strings, type: typeof require("strings") };
}

function requireFs(request) {
  return require("fs");
}

function evalCode(request) {
  return eval("1 + 1");
}

function functionCtor(request) {
  return (function () {}).constructor("return 1")();
}

function generatorCtor(request) {
  function* g() { yield 1; }
  return Object.getPrototypeOf(g).constructor("yield 2")().next().value;
}

function throwError(request) {
  return helper(request.parent);
}

function helper(parent) {
  throw new TypeError("bad parent " + parent.metadata.name);
}

function throwValue(request) {
  throw { code: 42, reason: "nope", list: [1, "two"] };
}

function throwString(request) {
  throw "plain string";
}

function callsUndefined(request) {
  return request.parent.nothing.deeper;
}

function useStdlib(request) {
  return strings.upper(request.parent.metadata.name, undefined);
}

function stdlibFails(request) {
  try {
    strings.fail("x");
  } catch (e) {
    return { caught: e instanceof Error, message: e.message };
  }
}

function logs(request) {
  console.log("hello", { a: 1 }, [2]);
  console.error("bad", 3);
  return null;
}

var notAFunction = 3;

function builtinNames(request) {
  return ["x".repeat.name, [].join.name, "x".padStart.name, Array.name, JSON.parse.name];
}

// Copy-on-write edge cases: delete and re-add, truncate and grow, sort in place.
function viewEdges(request) {
  const m = request.parent.metadata;
  delete m.name;
  m.name = "again";
  const tags = request.parent.spec.tags;
  tags.sort().reverse();
  const truncated = tags.slice();
  tags.length = 1;
  tags.length = 3;
  return {
    keys: Object.keys(m),
    name: m.name,
    tags: [tags[0], tags[1] === undefined, tags.length],
    reversed: truncated,
    spec: Object.keys(request.parent.spec),
  };
}
