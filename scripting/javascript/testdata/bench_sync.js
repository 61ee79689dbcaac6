// The sync logic of BenchmarkSync: a parent with a template → n ConfigMaps.
function sync(request) {
  const parent = request.parent;
  const meta = parent.metadata;
  const spec = parent.spec;
  const tmpl = spec.template;
  const name = meta.name;
  const children = [];
  for (let i = 0; i < spec.replicas; i++) {
    const labels = Object.assign({}, tmpl.labels);
    labels["app.kubernetes.io/instance"] = name;
    labels.index = String(i);
    children.push({
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: { name: name + "-" + i, namespace: meta.namespace, labels: labels },
      data: { image: tmpl.image, command: tmpl.command, index: String(i) },
    });
  }
  return { status: { replicas: children.length }, children: children };
}
