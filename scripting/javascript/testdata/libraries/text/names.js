const c = require("lib:text/case");
let loaded = 0;
loaded++;
exports.SUFFIX = "-child";
exports.childName = function (parent) { return c.upper(parent.metadata.name) + exports.SUFFIX; };
exports.loads = function () { return loaded; };
