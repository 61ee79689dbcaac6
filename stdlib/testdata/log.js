function sync(request) {
  log.info("syncing", {parent: request.parent.metadata.name, replicas: 3});
  log.debug("details", {b: 1, a: [true]});
  log.warn("slow", {ms: 12.5, step: "apply"});
  log.error("failed");
  for (var i = 0; i < 30; i++) {
    log.info("burst", {i: i});
  }
  return {logged: true};
}
