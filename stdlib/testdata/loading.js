var k = require("k8s");
var s = require("strings");

function sync(request) {
  return {encode: require("json").encode([1, "a"]), name: k.name("A B"), upper: s.upper("x")};
}
