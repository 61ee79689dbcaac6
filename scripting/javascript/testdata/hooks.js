// Well-behaved hooks and the error cases of the test table, one function each.
var COUNTER = [0];
var LIMITS = { max: 3 };
let calls = 0;

function sync(request) {
  var parent = request.parent;
  return {
    name: parent.metadata.name,
    labels: parent.metadata.labels,
    replicas: parent.spec.replicas,
    ratio: parent.spec.ratio,
    tags: parent.spec.tags.map(function (t) { return t; }),
    empty: null,
    ok: true,
    skipped: undefined,
    float3: 3.0,
    big: 9007199254740993n,
    when: new Date(Date.UTC(2024, 4, 1, 12, 0, 0)),
  };
}

function bump_counter(request) {
  // Module state is made anew for every call: the counter always starts at zero.
  COUNTER.push(1);
  calls++;
  LIMITS.max = 100;
  return { length: COUNTER.length, calls: calls, max: LIMITS.max };
}

function mutate_request(request) {
  var labels = request.parent.metadata.labels;
  labels.added = "yes";
  request.parent.spec.tags.push("extra");
  request.parent.spec.replicas += 1;
  request["new"] = { x: 1 };
  delete request.parent.spec.ratio;
  return {
    labels: request.parent.metadata.labels,
    tags: request.parent.spec.tags,
    replicas: request.parent.spec.replicas,
    keys: Object.keys(request).sort(),
    spec: request.parent.spec,
  };
}

function read_views(request) {
  var parent = request.parent;
  var keys = [];
  for (var k in parent.metadata) keys.push(k);
  var copy = Object.assign({}, parent.metadata.labels);
  var spread = { ...parent.spec, extra: 1 };
  return {
    json: JSON.stringify(parent.metadata),
    keys: keys,
    same: parent.metadata === request.parent.metadata,
    is_array: Array.isArray(parent.spec.tags),
    joined: parent.spec.tags.join("+"),
    spread_tags: [...parent.spec.tags, "c"],
    mapped: parent.spec.tags.map(function (t) { return t.toUpperCase(); }),
    copy: copy,
    spread: spread,
    has: "labels" in parent.metadata,
    has_own: Object.prototype.hasOwnProperty.call(parent.metadata, "name"),
    entries: Object.entries(parent.metadata.labels),
    missing: parent.nothing === undefined,
    length: parent.spec.tags.length,
  };
}

function helper_fail(x) {
  throw new Error("bad value: " + x);
}

function runtime_fail(request) {
  helper_fail(42);
}

function runtime_type_error(request) {
  return request.parent.metadata.missing.name;
}

function throws_object(request) {
  throw { code: 42, reason: "nope" };
}

function throws_string(request) {
  throw "plain";
}

var NOT_A_FUNCTION = 1;

async function async_hook(request) {
  var v = await Promise.resolve(request.parent.metadata.name);
  return { name: v };
}

async function async_reject(request) {
  throw new RangeError("rejected");
}

function never_settles(request) {
  return new Promise(function () {});
}

function returns_function(request) {
  return { children: [{ metadata: { name: sync } }] };
}

function returns_nan(request) {
  return { status: { ratio: NaN } };
}

function returns_inf(request) {
  return { spec: [1.5, Infinity] };
}

function returns_huge_number(request) {
  return { children: [{}, {}, { spec: { replicas: 1e300 } }] };
}

function returns_huge_bigint(request) {
  return { n: 2n ** 70n };
}

function returns_undefined_element(request) {
  return { items: [1, undefined] };
}

function returns_hole(request) {
  var a = [1];
  a[2] = 3;
  return { items: a };
}

function returns_symbol(request) {
  return { labels: { s: Symbol("x") } };
}

function returns_map(request) {
  return { data: new Map() };
}

function returns_undefined(request) {}

function returns_cycle(request) {
  var x = { a: 1 };
  x.self = x;
  return x;
}

function returns_million_children(request) {
  return { children: new Array(1000000).fill({ name: "c" }) };
}

function returns_request_parent(request) {
  return { copy: request.parent };
}

function returns_odd_keys(request) {
  return { labels: { "app.kubernetes.io/name": function () {} } };
}
