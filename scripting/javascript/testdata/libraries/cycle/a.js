const b = require("lib:cycle/b");
