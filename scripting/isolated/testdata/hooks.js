// Hooks of the isolated tier's tests (pool_test.go).

function echo(request) {
  log.info("echo", {name: request.name});
  return {request: request, int: 5, float: 5.5, nothing: null};
}

function fail(request) { throw new Error("refused: " + request.name); }

function loop(request) { for (;;) {} }

function bomb(request) {
  // Past any process limit: the in-process budget is raised in the test.
  var out = [];
  for (var i = 0; ; i++) { out.push("x".repeat(1 << 20) + i); }
}

function escape(request) {
  var reached = [typeof process, typeof globalThis.os, typeof Deno, typeof fetch];
  try { require("child_process"); reached.push("child_process"); } catch (e) { reached.push(String(e)); }
  return reached;
}
