// The sync logic of BenchmarkSync: a parent with a template → n ConfigMaps.
function sync(request) {
  var children = build(request);
  return {status: {replicas: children.length}, children: children};
}

function build(request) {
  var parent = request.parent;
  var meta = parent.metadata;
  var spec = parent.spec;
  var tmpl = spec.template;
  var name = meta.name;
  var children = [];
  for (var i = 0; i < spec.replicas; i++) {
    var labels = Object.assign({}, tmpl.labels);
    labels["app.kubernetes.io/instance"] = name;
    labels["index"] = String(i);
    children.push({
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: {name: name + "-" + i, namespace: meta.namespace, labels: labels},
      data: {image: tmpl.image, command: tmpl.command, index: String(i)},
    });
  }
  return children;
}

// BenchmarkSyncParts: the same work with only a count to convert, and no work at all.
function execution(request) {
  return {replicas: build(request).length};
}

function overhead(request) {
  return {};
}
