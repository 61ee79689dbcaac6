const a = require("lib:cycle/a");
