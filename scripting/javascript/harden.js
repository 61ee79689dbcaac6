// Run once on every pooled Runtime before its first call (see pool.go): freezes every object
// reachable from the intrinsics, so that nothing a call does to them survives into the next.
// Evaluates to a function of one argument, an array of extra roots (objects made in Go).
(function harden(extraRoots) {
  "use strict";
  const getProto = Object.getPrototypeOf;
  const gopd = Object.getOwnPropertyDescriptor;
  const defineProperty = Object.defineProperty;
  const freeze = Object.freeze;
  const ownKeys = Reflect.ownKeys;
  const ReadOnly = TypeError;

  // Assigning to an object whose prototype chain holds a non-writable property of that name
  // fails (the "override mistake"), so freezing Object.prototype would break `d[name] = v` on
  // a dictionary when name is "constructor" or "toString", and freezing Error.prototype would
  // break `this.name = ...` in an Error subclass. The properties ordinary code assigns on
  // objects that inherit them become accessors whose setter defines an own property on the
  // receiver, as assignment would if they were writable; read through the getter they keep
  // their value. Each accessor is two function objects kept alive by every pooled Runtime, so
  // the list stays short: every property of Object.prototype, and those code sets when it
  // subclasses Error or names a function.
  const objectProto = Object.prototype;
  const errorProto = Error.prototype;
  const functionProto = Function.prototype;
  const errorKeys = ["constructor", "name", "message", "toString"];
  const functionKeys = ["constructor", "toString"];
  const noKeys = [];
  function overridable(o, keys) {
    if (o === objectProto) return keys;
    if (o === errorProto || getProto(o) === errorProto) return errorKeys;
    if (o === functionProto) return functionKeys;
    return noKeys;
  }
  function enableOverride(obj, key) {
    const d = gopd(obj, key);
    if (d === undefined || !("value" in d) || !d.writable) {
      return;
    }
    const value = d.value;
    const accessors = {
      get() {
        return value;
      },
      set(v) {
        if (this === obj) {
          throw new ReadOnly("Cannot assign to read only property '" + String(key) + "' of a built-in object");
        }
        if ((typeof this !== "object" && typeof this !== "function") || this === null) {
          return;
        }
        defineProperty(this, key, { value: v, writable: true, enumerable: true, configurable: true });
      },
    };
    defineProperty(obj, key, { get: accessors.get, set: accessors.set, enumerable: d.enumerable, configurable: false });
  }

  const roots = [
    globalThis,
    extraRoots,
    // Intrinsics that no global names.
    getProto(function* () {}),
    getProto(async function () {}),
    getProto([][Symbol.iterator]()),
    getProto(new Map()[Symbol.iterator]()),
    getProto(new Set()[Symbol.iterator]()),
    getProto(""[Symbol.iterator]()),
    getProto(/x/[Symbol.matchAll]("")),
    gopd((function () { "use strict"; return arguments; })(), "callee").get,
  ];
  const seen = new Set();
  const stack = roots;
  let count = 0;
  while (stack.length > 0) {
    const o = stack.pop();
    if ((typeof o !== "object" && typeof o !== "function") || o === null || seen.has(o)) {
      continue;
    }
    seen.add(o);
    count++;
    const keys = ownKeys(o);
    const override = overridable(o, keys);
    for (let i = 0; i < override.length; i++) {
      enableOverride(o, override[i]);
    }
    stack.push(getProto(o));
    for (let i = 0; i < keys.length; i++) {
      const d = gopd(o, keys[i]);
      if ("value" in d) {
        stack.push(d.value);
      } else {
        stack.push(d.get, d.set);
      }
    }
    freeze(o);
  }
  return count;
})
