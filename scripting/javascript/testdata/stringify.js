// JSON.stringify behind its guard: each function returns what JSON.stringify made.
function plain() {
  return JSON.stringify({b: 1, a: [1, "x", null, true, 1.5], c: {d: "q\"\n\u0001é"}});
}

function skipped() {
  return JSON.stringify({a: undefined, f: function () {}, b: [undefined, function () {}]});
}

function replacerFunction() {
  return JSON.stringify({a: 1, b: "x", c: {d: 2}}, function (k, v) {
    return typeof v === "number" ? v * 10 : v;
  });
}

function replacerThis() {
  return JSON.stringify({a: 1, b: 2}, function (k, v) {
    return k === "a" ? Object.keys(this).join() : v;
  });
}

function propertyList() {
  return JSON.stringify({a: 1, b: 2, c: {a: 3, z: 4}, d: [{a: 5, y: 6}]}, ["c", "a", "d", "c", 7]);
}

function indented() {
  return JSON.stringify({a: [1, {b: 2}]}, null, 2);
}

function indentedString() {
  return JSON.stringify({a: [1]}, null, new String("--"));
}

function toJSON() {
  return JSON.stringify({d: {toJSON: function (k) { return "key:" + k; }}, t: new Date(0)});
}

function wrappers() {
  return JSON.stringify([new String("s"), new Number(3), new Boolean(false)]);
}

function topLevel() {
  return [JSON.stringify("x"), JSON.stringify(undefined) === undefined, JSON.stringify(null)].join(" ");
}

function shared() {
  const s = {x: 1};
  return JSON.stringify([s, s]) + " " + JSON.stringify([s, s], ["x"]);
}

function cycle() {
  const o = {};
  o.self = o;
  try { JSON.stringify(o); } catch (e) { return e instanceof TypeError; }
  return false;
}

function cycleListed() {
  const o = {};
  o.a = o;
  try { JSON.stringify(o, ["a"]); } catch (e) { return e instanceof TypeError; }
  return false;
}

function deep() {
  let o = {};
  for (let i = 0; i < 100000; i++) o = {a: o};
  try { JSON.stringify(o); } catch (e) { return String(e); }
  return "no error";
}
