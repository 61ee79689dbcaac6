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
  matchGlobal: function () {
    return ["a1b22c333".match(/\d+/g), "abc".match(/x/g), "abc".match(/(?:)/g), "a😀b".match(/(?:)/gu),
      "a😀b".match(/(?:)/g).length, "aXbX".match(/x/gi), "ab".match(/(a)|(b)/g), "no".match(/o/)[0],
      "a-b".match("-"), bigText.match(/f4999/g)];
  },
  replaceGlobal: function () {
    var re = /(\d)(?<rest>\d*)/g;
    return ["a1b22c333".replace(re, "[$1|$2|$<rest>|$&|$`|$'|$$|$3|$01|$10]"),
      "a1b22".replace(re, function (m, d, rest, pos, s, groups) { return "<" + [m, d, rest, pos, s.length, groups.rest].join(",") + ">"; }),
      "abc".replace(/(?:)/g, "-"), "a😀b".replace(/(?:)/gu, "-"), "aXbx".replaceAll(/x/gi, "y"),
      "no match".replace(/z/g, "y"), "keep lastIndex".replace(/e/, "E"), bigText.replace(/f4999/g, "last").slice(-8)];
  },
  replaceLastIndex: function () { var re = /a/g; re.lastIndex = 2; var r = "aaa".replace(re, "b"); return [r, re.lastIndex]; },
  instanceOfGuarded: function () {
    class A extends Array {}
    var a = new A();
    return [[] instanceof Array, a instanceof A, a instanceof Array, Array.isArray(a), /x/ instanceof RegExp,
      ({}) instanceof Array, Array.from([1]) instanceof Array, new Array(2) instanceof Array,
      [].constructor === Array, Array.prototype.constructor === Array, /x/.constructor === RegExp,
      [1, 2].map(function (x) { return x; }).constructor === Array, a.map(function (x) { return x; }) instanceof A];
  },
  regexpConstructor: function () {
    var a = new RegExp("a+", "g"), b = RegExp("b"), c = new RegExp(/x/g, "i");
    class R extends RegExp {}
    var r = new R("z");
    return [String(a), String(b), String(c), a instanceof RegExp, r instanceof RegExp, r instanceof R,
      RegExp.prototype.constructor === RegExp, "xaay".replace(a, "-"), "abc".search("b"),
      Array.from("abcb".matchAll("b"), function (m) { return m.index; }), "a.b".match(".")[0]];
  },
  matchLastIndex: function () { var re = /a/g; re.lastIndex = 3; var m = "aaa".match(re); return [m, re.lastIndex]; },
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
  walks: function () {
    var a = [3, 1, , 2], like = {length: 3, 0: "b", 2: "a"}, ap = Array.prototype, r = [];
    r.push(a.indexOf(2), a.lastIndexOf(3), a.includes(undefined), a.slice(1, 3), a.slice(-2));
    r.push(ap.indexOf.call(like, "a"), ap.includes.call("abc", "b"), ap.map.call(like, function (x) { return x + "!"; }));
    r.push(a.filter(function (x) { return x > 1; }), a.some(function (x) { return x > 2; }), a.every(function (x) { return x > 0; }));
    r.push(a.reduce(function (s, x) { return s + x; }, 0), a.reduceRight(function (s, x) { return s + x; }, ""));
    r.push(a.find(function (x) { return x < 3; }), a.findIndex(function (x) { return x === undefined; }), a.findLast(function (x) { return x; }), a.findLastIndex(function (x) { return x > 5; }));
    var seen = []; a.forEach(function (x, i) { seen.push(i); }); r.push(seen);
    r.push([1, [2], 3].flatMap(function (x) { return [x, x]; }), [1, 2, 3].toLocaleString());
    r.push(a.toReversed(), a.toSorted(), a.toSpliced(1, 1, "x"), a.with(0, 9), [1, 2, 3, 4, 5].copyWithin(0, 3));
    return r;
  },
  mutations: function () {
    var a = [5, 1, 4], b = [1, 2, 3, 4], like = {length: 2, 0: "x", 1: "y"}, ap = Array.prototype;
    var r = [a.sort(), a.sort(function (x, y) { return y - x; }), a.reverse(), b.splice(1, 2, "a", "b", "c"), b];
    r.push(b.unshift(0), b.shift(), b, ap.reverse.call(like), ap.shift.call(like), like, ap.sort.call({length: 2, 0: "b", 1: "a"}));
    var sparse = [, 3, , 1]; sparse.sort(); r.push(sparse.length, 1 in sparse, 3 in sparse, sparse[0]);
    return r;
  },
  lists: function () {
    function f() { return Array.prototype.slice.call(arguments); }
    var like = {length: 3, 0: 1, 2: 3}, spread = {length: 2, 0: "a", 1: "b"};
    spread[Symbol.isConcatSpreadable] = true;
    return [f.apply(null, [1, 2]), f.apply(null, like), f.apply(null), Reflect.apply(f, null, like),
      Reflect.construct(Array, [3]).length, Reflect.construct(Date, [0]).getTime(), Array.from(like), Array.from("ab"),
      Array.from({length: 2}, function (x, i) { return i * 2; }), [0].concat(spread, [1], "c"), [].concat({length: 1, 0: 1})];
  },
  arities: function () {
    var ap = Array.prototype;
    return [ap.indexOf.length, ap.splice.length, ap.reduce.length, ap.join.length, ap.fill.length, ap.indexOf.name,
      Function.prototype.apply.length, Reflect.apply.length, Reflect.construct.length, Array.from.length, "".repeat.length];
  },
  arith: function () {
    var o = {valueOf: function () { return 3; }}, b = {valueOf: function () { return 5n; }}, x = 2, y = -0, r = [];
    r.push(x * 3.5, x * y, Object.is(x * y, -0), "3" * "4", o * o, null * x, x * undefined, [2] * [3], true * x);
    r.push(x ** 10, x ** -1, (-8) ** (1 / 3), NaN ** y, x ** o, o ** x);
    r.push(x << 3, -x >> 1, x << 33, 1 << -1, o << x, x >> o, 2 ** 31 << 1);
    var z = 3; z *= x; z **= x; z <<= x; z >>= 1; r.push(z);
    r.push(String(5n * 7n), String(b * b), String(2n ** 64n), String((-3n) ** 3n), String(1n << 70n), String(-(2n ** 80n) >> 3n), String(5n >> -3n));
    var big = 12345678901234567890n; big *= big; big **= 2n; big <<= 3n; big >>= 2n; r.push(String(big));
    function err(f) { try { f(); } catch (e) { return e.name; } }
    r.push(err(function () { return 1n * x; }), err(function () { return 2n ** -1n; }), err(function () { return x ** 1n; }),
      err(function () { return 1n >>> 1n; }), err(function () { return Symbol() * 2; }));
    r.push(String(BigInt("0x1f")), String(BigInt(" 12 ")), String(BigInt(true)), err(function () { return BigInt("1.5"); }),
      String(BigInt.asIntN(8, 255n)), String(BigInt.asUintN(8, -1n)), String(BigInt.asIntN(64, "-5")), err(function () { return BigInt.asIntN(8, 1); }),
      String(BigInt.asIntN(1e9, "123")), String(BigInt.asUintN(1e9, 7n)), err(function () { return BigInt.asIntN(-1, 1n); }),
      (1n).constructor === BigInt, typeof BigInt.prototype.toString, BigInt.name, BigInt.length);
    return r;
  },
  iterators: function () {
    function* inner() { var got = yield 1; yield got; return "r"; }
    function* outer() { var r = yield* inner(); yield r; try { yield 4; } finally { yield 5; } }
    var g = outer(), r = [g.next(), g.next("sent"), g.next(), g.next(), g.return(9), g.next(), g.next()];
    var t = outer(); t.next();
    function err(f) { try { return f(); } catch (e) { return String(e); } }
    r.push(err(function () { return t.throw("boom"); }), t.next());
    var sparse = [1, , 3], it = sparse[Symbol.iterator]();
    r.push([...sparse], [..."a😀b"], Array.from("xy"), Math.max(...[1, 5, 2]), it.next(), it.next(), it.next(), it.next());
    r.push(g.next.name, g.next.length, it.next.name, ""[Symbol.iterator]().next.length, [...new Set([1, 1, 2])], [...new Map([[1, 2]])]);
    return r;
  },
  strings: function () {
    var o = {toString: function () { return "Ab"; }};
    return ["aBc".toUpperCase(), "ß ﬃ İ".toUpperCase(), "İ Σ".toLowerCase(), "x".toLocaleUpperCase(), "Y".toLocaleLowerCase(),
      String.prototype.toUpperCase.call(o), String.prototype.toLowerCase.call(5), escape("a b+é\u1234"), escape(o),
      encodeURI("http://x/a b?q=é#f"), encodeURIComponent("a/b c😀"), encodeURIComponent(12), escape(), 
      String.raw`a\n${1}b${"c"}`, String.raw({raw: ["x", "y", "z"]}, 1, 2, 3), String.raw({raw: {length: 2, 0: "p"}}, o),
      String.raw({raw: "abc"}, "-", "+"), String.raw({raw: []}), "".toUpperCase.length, escape.length, String.raw.length];
  },
};
