// Sums the rewrite of guard_add.go turns into $metascript$add calls, each in a function of
// its own; TestAddMatchesGoja runs every one here and in a plain goja Runtime.
var exprs = {
  strings: function () { var a = "ab", b = "cd"; return a + b; },
  unicode: function () { var a = "é", b = "😀"; return a + b + (b + a); },
  stringNumber: function () { var a = "n", b = 1.5, c = -0, d = 1e21, e = NaN; return [a + b, a + c, a + d, a + e, b + a]; },
  stringOthers: function () { var a = "v", b = true, c = null, d; return [a + b, a + c, a + d, c + a, d + a]; },
  numbers: function () { var a = 9007199254740991, b = 2, c = 0.1, d = 0.2; return [a + b, c + d, a + c, -a + -b]; },
  numberOthers: function () { var a = 1, b = true, c = null, d; return [a + b, a + c, a + d, b + c, c + c]; },
  objects: function () {
    var o = {valueOf: function () { return 42; }}, p = {toString: function () { return "p"; }}, s = "s";
    return [o + s, s + o, o + o, p + s, [1, 2] + s, s + {}, new Date(0) + s === String(new Date(0)) + s];
  },
  bigints: function () { var a = 1n, b = 2n, s = "s"; return [String(a + b), a + s, s + b]; },
  mixedBigint: function () { var a = 1n, b = 1; try { return a + b; } catch (e) { return e.name; } },
  symbol: function () { var a = Symbol("x"), s = "s"; try { return a + s; } catch (e) { return e.name; } },
  compound: function () {
    var s = "a", t = "b", o = {p: "x"}, k = "p";
    s += t; s += s; o.p += s; o[k] += t;
    return [s, o.p];
  },
  compoundThis: function () { var o = {p: "q", f: function (x) { this.p += x; return this.p; }}; return o.f(o.p); },
  compoundConst: function () { const c = "c"; var t = "t"; try { c += t; } catch (e) { return e.name; } return c; },
  compoundTDZ: function () { var t = "t"; try { l += t; } catch (e) { return e.name; } let l = "l"; return l; },
  evaluationOrder: function () {
    var log = [];
    var a = function () { log.push("a"); return "A"; }, b = function () { log.push("b"); return "B"; };
    var r = a() + b();
    return log.join() + r;
  },
  arrow: function () { var f = (x, y) => x + y; return f("1", "2") + f(1, 2); },
  getterOnce: function () {
    var n = 0, o = {get p() { n++; return "g"; }, set p(v) {}};
    var t = "t";
    o.p += t;
    return n;
  },
};

function symbolSum(request) {
  var a = Symbol("q"), s = "s";
  return a + s;
}
