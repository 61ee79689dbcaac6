exports.spin = function () { for (;;) {} };
