// Each function returns a value that cannot cross the boundary.
function cyclic(request) {
  const child = { metadata: { name: "c" } };
  child.metadata.self = child;
  return { children: [child] };
}

function fn(request) {
  return { children: [{}, {}, {}, { metadata: { name: function () {} } }] };
}

function nan(request) {
  return { status: { ratio: 0 / 0 } };
}

function infinity(request) {
  return { status: { values: [1, 2, Infinity] } };
}

function hugeBigInt(request) {
  return { status: { n: 2n ** 64n } };
}

function undefinedInArray(request) {
  return { children: [null, undefined] };
}

function symbol(request) {
  return { metadata: { labels: { "app.kubernetes.io/name": Symbol("x") } } };
}

function map(request) {
  return { data: new Map() };
}

function cyclicRequest(request) {
  request.parent.spec.self = request.parent;
  return request;
}

function deep(request) {
  let o = {};
  for (let i = 0; i < 300; i++) o = { o: o };
  return o;
}

function proxyFn(request) {
  return { children: [new Proxy(function () {}, {})] };
}
