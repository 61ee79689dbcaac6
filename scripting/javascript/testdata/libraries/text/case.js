const s = require("strings");
module.exports = { upper: (x) => s.upper(x) };
