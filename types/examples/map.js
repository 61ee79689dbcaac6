// @ts-check
/// <reference path="../metascript.d.ts" />

// A MapController's hooks with editor types: a copy of every selected Secret as a
// ConfigMap of its keys' hashes, kept a day after the Secret goes.

/** @type {metascript.MapControllerMap} */
function map(request) {
  var secret = request.input;
  /** @type {{ [key: string]: string }} */
  var data = {};
  Object.keys(secret.data || {}).forEach(function (key) {
    data[key] = hash.short(secret.data[key], 16);
  });
  return {
    outputs: [{
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: {name: secret.metadata.name + "-hashes", namespace: secret.metadata.namespace},
      data: data,
    }],
  };
}

/** @type {metascript.MapControllerTombstone} */
function tombstone(request) {
  var kept = request.outputs["ConfigMap.v1"];
  var outputs = Object.keys(kept)
    .filter(function (key) { return time.since(kept[key].metadata.creationTimestamp || time.now()) < time.DAY; })
    .map(function (key) { return {apiVersion: "v1", kind: "ConfigMap", metadata: {name: kept[key].metadata.name}}; });
  return {outputs: outputs, resyncAfterSeconds: outputs.length > 0 ? time.HOUR : null};
}
