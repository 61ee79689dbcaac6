// @ts-check
/// <reference path="../metascript.d.ts" />

// A CompositeController's sync hook with editor types: one ConfigMap per entry of the
// parent's spec.files, a Ready condition and an Event when a file is too large. The JSDoc
// types below are all it takes; the engine runs the file as it is.

var MAX_BYTES = 1 << 20;

/**
 * The ConfigMap that holds one file of parent.
 * @param {metascript.KubernetesObject} parent
 * @param {string} name
 * @param {string} content
 * @returns {metascript.KubernetesObject}
 */
function configMap(parent, name, content) {
  return {
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: {
      name: k8s.name([parent.metadata.name, name]),
      labels: {"app.kubernetes.io/instance": parent.metadata.name},
      annotations: {"example.metascript.dev/sha256": hash.sha256(content)},
    },
    data: {[name]: content},
  };
}

/** @type {metascript.CompositeControllerSync} */
function sync(request) {
  var parent = request.parent;
  /** @type {{ [name: string]: string }} */
  var files = parent.spec.files || {};
  /** @type {metascript.KubernetesObject[]} */
  var children = [];
  /** @type {metascript.Event[]} */
  var events = [];
  Object.keys(files).sort().forEach(function (name) {
    if (strings.length(files[name]) > MAX_BYTES) {
      events.push({type: "Warning", reason: "FileTooLarge", message: name + " is over " + MAX_BYTES + " characters"});
      return;
    }
    children.push(configMap(parent, name, files[name]));
  });
  var observed = request.children["ConfigMap.v1"];
  var missing = children.filter(function (c) { return !(c.metadata.name in observed); }).length;
  var conditions = k8s.set_condition(parent.status || {}, {
    type: "Ready",
    status: missing === 0 ? "True" : "False",
    reason: missing === 0 ? "ConfigMapsReady" : "ConfigMapsPending",
    message: missing + " of " + children.length + " ConfigMaps still to be created",
  }).status.conditions;
  log.debug("synced", {parent: parent.metadata.name, files: children.length});
  return {
    status: {files: children.length, conditions: conditions},
    children: children,
    events: events,
  };
}

/** @type {metascript.CompositeControllerFinalize} */
function finalize(request) {
  var left = Object.keys(request.children["ConfigMap.v1"]).length;
  return {children: [], finalized: left === 0};
}
