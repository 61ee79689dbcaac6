// Hooks exercised by TestIsolation: each attack tries to leave state on the Runtime it ran
// on; observe fingerprints that state and must read the same before and after every attack.

// intrinsics lists the built-in objects a hook can reach, by name.
function intrinsics() {
  const getProto = Object.getPrototypeOf;
  const list = {
    Object, Function, Array, String, Number, Boolean, Symbol, Date, RegExp, Error, TypeError, RangeError,
    SyntaxError, JSON, Math, Reflect, Promise, Map, Set, WeakMap, WeakSet, Proxy, BigInt,
    ArrayIterator: getProto([][Symbol.iterator]()),
    MapIterator: getProto(new Map()[Symbol.iterator]()),
    StringIterator: getProto(""[Symbol.iterator]()),
    Iterator: getProto(getProto([][Symbol.iterator]())),
    GeneratorFunction: getProto(function* () {}),
    Generator: getProto(function* () {}).prototype,
    AsyncFunction: getProto(async function () {}),
    ThrowTypeError: Object.getOwnPropertyDescriptor((function () { "use strict"; return arguments; })(), "callee").get,
  };
  for (const name of Object.keys(list)) {
    const p = list[name].prototype;
    if ((typeof p === "object" || typeof p === "function") && p !== null) list[name + ".prototype"] = p;
  }
  return list;
}

// describeObject lists an object's own properties with the type of each value or accessor,
// its prototype's name and whether it is frozen.
function describeObject(o, names) {
  const parts = [];
  for (const k of Reflect.ownKeys(o)) {
    const d = Object.getOwnPropertyDescriptor(o, k);
    const what = "value" in d ? typeof d.value + (d.writable ? "w" : "") : "get:" + typeof d.get + ",set:" + typeof d.set;
    parts.push(String(k) + "=" + what + (d.enumerable ? "e" : "") + (d.configurable ? "c" : ""));
  }
  parts.sort();
  const proto = Object.getPrototypeOf(o);
  return parts.join(" ") + " proto=" + (proto === null ? "null" : names.get(proto) || "other") +
    " frozen=" + Object.isFrozen(o) + " extensible=" + Object.isExtensible(o);
}

function observe(request) {
  const list = intrinsics();
  const names = new Map();
  for (const name of Object.keys(list)) names.set(list[name], name);
  const shapes = {};
  for (const name of Object.keys(list)) shapes[name] = describeObject(list[name], names);
  const a = [];
  a.push(1, 2);
  return {
    shapes: shapes,
    behaviour: {
      polluted: [({}).polluted, [].polluted, "".polluted, (function () {}).polluted, (0).polluted].map(String),
      push: a.length,
      upper: "x".toUpperCase(),
      json: JSON.stringify({ a: [1, "b"] }),
      keys: Object.keys({ a: 1, b: 2 }),
      string: String({}) + String([1, 2]) + String(new Error("m")) + String(new TypeError("t")),
      regexp: /a(b)/.exec("ab")[1] + "aXb".replace(/X/, "-") + typeof RegExp.$1 + typeof RegExp.lastMatch,
      math: Math.max(1, 2) + Math.abs(-3),
      symbol: String(Symbol.keyFor(Symbol.for("k"))) + String(Symbol.keyFor(Symbol.iterator)),
      leaked: [typeof leaked, typeof implicitLeak, typeof fromJob, typeof fromAsync, typeof JSON, typeof Object].join(","),
      errorHooks: typeof Error.prepareStackTrace + typeof Error.captureStackTrace + typeof Error.stackTraceLimit,
      date: new Date(0).toJSON(),
      spread: [...new Set([1, 1, 2])].length,
    },
  };
}

// attempt runs f and reports whether it threw, so that one refused write does not stop the
// attempts after it.
function attempt(f) {
  try {
    f();
    return "ok";
  } catch (e) {
    return "threw";
  }
}

function attackPrototypes(request) {
  const f = function () { return "hijacked"; };
  return [
    () => { Object.prototype.polluted = 1; },
    () => { Object.prototype.toString = f; },
    () => { Object.prototype.hasOwnProperty = f; },
    () => { Array.prototype.push = f; },
    () => { Array.prototype.polluted = 1; },
    () => { String.prototype.toUpperCase = f; },
    () => { Number.prototype.polluted = 1; },
    () => { Function.prototype.call = f; },
    () => { Function.prototype.polluted = 1; },
    () => { Error.prototype.name = "Hijacked"; },
    () => { Error.prototype.toString = f; },
    () => { TypeError.prototype.message = "hijacked"; },
    () => { Promise.prototype.then = f; },
    () => { RegExp.prototype.exec = f; },
    () => { Date.prototype.toJSON = f; },
    () => { Math.max = f; },
    () => { JSON.stringify = f; },
    () => { Object.keys = f; },
    () => { Array.prototype[Symbol.iterator] = f; },
    () => { Set.prototype[Symbol.iterator] = f; },
    () => { delete Array.prototype.map; },
    () => { delete Object.prototype.toString; },
    () => { Object.freeze(Object.prototype); },
  ].map(attempt);
}

function attackProtoChain(request) {
  // A recursive merge of parsed JSON, the classic prototype-pollution gadget.
  function merge(target, source) {
    for (const k in source) {
      if (typeof source[k] === "object" && source[k] !== null) {
        if (typeof target[k] !== "object" || target[k] === null) target[k] = {};
        merge(target[k], source[k]);
      } else {
        target[k] = source[k];
      }
    }
    return target;
  }
  return [
    () => { ({}).__proto__.polluted = 1; },
    () => { [].__proto__.__proto__.polluted = 1; },
    () => { merge({}, JSON.parse('{"__proto__": {"polluted": 1}}')); },
    () => { merge({}, JSON.parse('{"constructor": {"prototype": {"polluted": 1}}}')); },
    () => { Object.setPrototypeOf(Array.prototype, { polluted: 1 }); },
    () => { Object.prototype.__proto__ = { polluted: 1 }; },
    () => { Object.assign(Object.prototype, { polluted: 1 }); },
    () => { Object.setPrototypeOf(Function.prototype, null); },
  ].map(attempt);
}

function attackDefine(request) {
  return [
    () => { Object.defineProperty(Array.prototype, "polluted", { value: 1 }); },
    () => { Object.defineProperty(Object.prototype, "toString", { value: () => "hijacked" }); },
    () => { Object.defineProperty(Object.prototype, "polluted", { get() { return 1; } }); },
    () => { Object.defineProperties(String.prototype, { polluted: { value: 1 } }); },
    () => { if (Reflect.defineProperty(Object.prototype, "polluted", { value: 1 })) throw 0; },
    () => { if (Reflect.set(Array.prototype, "polluted", 1)) throw 0; },
    () => { if (Reflect.deleteProperty(JSON, "stringify")) throw 0; },
    () => { Object.defineProperty(Object.getOwnPropertyDescriptor(Object.prototype, "toString").get, "polluted", { value: 1 }); },
  ].map(attempt);
}

function attackHidden(request) {
  const getProto = Object.getPrototypeOf;
  const f = function () { return "hijacked"; };
  return [
    () => { getProto([][Symbol.iterator]()).next = f; },
    () => { getProto(getProto([][Symbol.iterator]())).polluted = 1; },
    () => { getProto(new Map()[Symbol.iterator]()).next = f; },
    () => { getProto(function* () {}).prototype.next = f; },
    () => { getProto(function* () {}).polluted = 1; },
    () => { getProto(async function () {}).polluted = 1; },
    () => { Object.getOwnPropertyDescriptor((function () { "use strict"; return arguments; })(), "callee").get.polluted = 1; },
    () => { Object.getOwnPropertyDescriptor(Object.prototype, "toString").get.polluted = 1; },
    () => { (function () {}).constructor.polluted = 1; },
    () => { [].constructor.polluted = 1; },
    () => { Array.polluted = 1; },
    () => { Array.from.polluted = 1; },
    () => { [].push.polluted = 1; },
    () => { "".repeat.polluted = 1; },
    () => { JSON.parse.polluted = 1; },
    () => { Symbol.for.polluted = 1; },
  ].map(attempt);
}

function attackGlobals(request) {
  globalThis.leaked = 1;
  implicitLeak = 1;
  delete globalThis.JSON;
  globalThis.Object = null;
  return "done";
}

function attackSymbols(request) {
  const s = Symbol.for("leak");
  return [Symbol.keyFor(s), Symbol.for("leak") === s, String(Symbol.keyFor(Symbol("local")))];
}

// Leaves promise jobs behind: one queued by a getter while the result is converted, and
// work after an await of an already resolved promise.
function attackJobs(request) {
  (async function () {
    await null;
    globalThis.fromAsync = 1;
  })();
  return {
    get value() {
      Promise.resolve().then(function () {
        globalThis.fromJob = 1;
      });
      return 1;
    },
  };
}

function attackStatics(request) {
  /(x)(y)/.exec("xy");
  "abc".match(/b/);
  return [
    () => { Error.prepareStackTrace = () => "hijacked"; },
    () => { Error.stackTraceLimit = 0; },
    () => { RegExp.lastIndex = 5; },
    () => { Array.prototype.push.call(Array.prototype, 1); },
    () => { Array.prototype.fill.call(Array.prototype, 1, 0, 1); },
    () => { Array.prototype.length = 3; },
    () => { Date.prototype.setTime.call(Date.prototype, 0); },
    () => { Map.prototype.set.call(Map.prototype, 1, 2); },
  ].map(attempt);
}

// Writes that a frozen built-in would refuse but ordinary code relies on: they must work.
function overrides(request) {
  "use strict";
  class MyError extends Error {
    constructor(m) {
      super(m);
      this.name = "MyError";
    }
  }
  function Legacy() {}
  Legacy.prototype.toString = function () { return "legacy"; };
  Legacy.prototype.constructor = Legacy;
  const dict = {};
  for (const k of ["constructor", "toString", "valueOf", "hasOwnProperty", "name"]) dict[k] = k.length;
  const e = new MyError("boom");
  return {
    error: String(e),
    errorName: e.name,
    legacy: String(new Legacy()),
    dict: dict,
    inherited: Object.prototype.hasOwnProperty.call(dict, "toString"),
    strictRefusal: attempt(() => { Array.prototype.polluted = 1; }),
    builtinRefusal: attempt(() => { Object.prototype.toString = null; }),
  };
}
