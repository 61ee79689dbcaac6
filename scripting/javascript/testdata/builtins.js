// Calls of the guarded built-ins (guard.go, guard_array.go) with ordinary arguments;
// TestGuardsMatchGoja runs every one here and in a plain goja Runtime.
var big = [];
for (var i = 0; i < 5000; i++) big.push("f" + i);
var bigText = big.join(",");

var exprs = {
  splitString: function () { return ["a,b,,c".split(","), "a,b,c".split(",", 2), "abc".split(""), "abc".split(), "a1b2".split(undefined, 0)]; },
  splitRegexp: function () { return ["a1b22c".split(/\d+/), "a1b2c".split(/(\d)/), "abc".split(/(?:)/, 2)]; },
  splitBig: function () {
    var all = bigText.split(","), some = bigText.split(",", 3), chars = bigText.slice(0, 3000).split("");
    return [all.length, all[4999], some, chars.length, bigText.split(/,/).length];
  },
  splitObject: function () { var sep = {toString: function () { return "-"; }}; return "a-b".split(sep); },
  flat: function () { var a = [1, [2, [3, [4]]], , 5]; return [a.flat(), a.flat(2), a.flat(Infinity), a.flat(0), [[]].flat()]; },
  concatArrays: function () { var a = [1, 2], b = [3, [4]]; return [a.concat(b, 5, "x"), [].concat(), a.concat([[6]])]; },
  concatStrings: function () { var o = {toString: function () { return "o"; }}; return ["a".concat("b", 1, null, o), "é".concat("😀"), "".concat()]; },
  repeatPad: function () { return ["ab".repeat(3), "1".padStart(4, "0"), "x".padEnd(3)]; },
  join: function () { return [[1, [2, 3], null, undefined].join("-"), String([1, 2]), [1, , 2].join("-"), [[1, , 2], , 3].join()]; },
  stringifySpace: function () { return JSON.stringify({a: [1, {b: "é\u0007"}], c: null}, null, "\t"); },
  stringifyReplacer: function () {
    return [JSON.stringify({a: 1, b: [1, 2], c: {d: 3}}, function (k, v) { return k === "d" ? undefined : v; }),
      JSON.stringify({b: 1, a: 2, c: {a: 3, b: 4}}, ["a", "c"]), JSON.stringify([new Date(0), {toJSON: function () { return 7; }}])];
  },
};
