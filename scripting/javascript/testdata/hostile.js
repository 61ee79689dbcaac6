// Hostile hooks: each must end in a *BudgetError while the process stays healthy.
function infiniteLoop(request) {
  for (;;) {}
}

function recurse(n) {
  return recurse(n + 1) + 1;
}

function deepRecursion(request) {
  return recurse(0);
}

function catchesBudget(request) {
  // A budget stop cannot be caught.
  for (;;) {
    try {
      for (;;) {}
    } catch (e) {}
  }
}

function stringBomb(request) {
  return "x".repeat(1 << 30);
}

function padBomb(request) {
  return "x".padStart(1 << 30, "y");
}

function arrayBomb(request) {
  return new Array(1 << 28);
}

function arrayCallBomb(request) {
  return Array(1 << 28);
}

function fillBomb(request) {
  const a = [];
  a.length = 1 << 28;
  return a.fill(0);
}

function joinBomb(request) {
  const s = "x".repeat(1 << 20);
  const a = [];
  for (let i = 0; i < 1024; i++) a.push(s);
  return a.join(",").length;
}

function replaceBomb(request) {
  const s = "x".repeat(1 << 14);
  const r = "y".repeat(1 << 14);
  return s.replace(/x/g, r).length;
}

function concatGrowth(request) {
  let s = "x";
  for (;;) s += s;
}

function pushGrowth(request) {
  const a = [];
  for (;;) a.push({ filler: "........................................" });
}

function millionChildren(request) {
  const children = [];
  for (let i = 0; i < 1000000; i++) children.push({ i: i });
  return { children: children };
}

function sharedFanout(request) {
  // Small in JavaScript (shared references), huge once converted.
  let a = [1, 2, 3, 4];
  for (let i = 0; i < 24; i++) a = [a, a];
  return { children: a };
}

function deepJSON(request) {
  return JSON.parse("[".repeat(100000) + "]".repeat(100000));
}

function catastrophicRegexp(request) {
  return /^(a+)+\1$/.test("a".repeat(5000) + "b");
}

function sparseFrom(request) {
  // Array.from makes its result with the (guarded) Array constructor of its receiver.
  const a = Array.from({ length: 1 << 22 });
  for (;;) {}
}

function catchesRefusal(request) {
  try {
    "x".repeat(1 << 30);
  } catch (e) {
    return "swallowed";
  }
}

function stringifyBomb(request) {
  // One JSON.stringify call writes every reference to the same string out in full.
  const s = "x".repeat(1 << 20);
  const a = [];
  for (let i = 0; i < 1024; i++) a.push(s);
  return JSON.stringify(a).length;
}

function localeBomb(request) {
  const s = "x".repeat(1 << 20);
  const a = [];
  for (let i = 0; i < 1024; i++) a.push(s);
  return a.toLocaleString().length;
}

function stringConcatBomb(request) {
  const s = "x".repeat(1 << 20);
  const a = [];
  for (let i = 0; i < 1024; i++) a.push(s);
  return "".concat.apply("", a).length;
}

function templateGrowth(request) {
  let s = "x";
  for (;;) s = `${s}${s}`;
}

function plusGrowth(request) {
  let s = "x";
  for (;;) s = s + s;
}

function objectGrowth(request) {
  // Objects decide what `+` concatenates: left to the watchdog.
  let s = "x";
  const o = {toString: function () { return s; }};
  for (;;) s = o + o;
}

function flatShared(request) {
  // A thousand references to one array of ten thousand: ten million elements in one call.
  const b = [];
  for (let i = 0; i < 10000; i++) b.push(i);
  const a = [];
  for (let i = 0; i < 1000; i++) a.push(b);
  return a.flat().length;
}

function concatShared(request) {
  const b = [];
  for (let i = 0; i < 10000; i++) b.push(i);
  const a = [];
  for (let i = 0; i < 1000; i++) a.push(b);
  return [].concat.apply([], a).length;
}

function splitBomb(request) {
  // Two million one-character pieces of a 2 MiB string.
  return "x".repeat(2 << 20).split("").length;
}

function splitRegexpBomb(request) {
  return "x".repeat(2 << 20).split(/(?:)/).length;
}

function sparseIndexOf(request) {
  // goja walks all four billion indices of a sparse array in one call.
  const a = [];
  a[2 ** 32 - 2] = 1;
  return a.indexOf(0);
}

function arrayLikeForEach(request) {
  Array.prototype.forEach.call({ length: 2 ** 53 - 1 }, function () {});
}

function sparseSort(request) {
  // goja sorts a sparse array through a slice as long as the array: 64 GiB.
  const a = [];
  a[2 ** 32 - 2] = 1;
  return a.sort().length;
}

function applyArrayLike(request) {
  return Math.max.apply(null, { length: 1 << 26 });
}

function concatSpreadable(request) {
  const o = { length: 1 << 26 };
  o[Symbol.isConcatSpreadable] = true;
  return [].concat(o).length;
}

// BigInt results are limited to MaxBigIntBits: each of these throws a RangeError.
function bigIntPower(request) {
  // goja folds literals as it compiles: this once asked for 128 GiB at compile time.
  return String(2n ** (2n ** 40n));
}

function bigIntShift(request) {
  return String(1n << 10000000000n);
}

function bigIntAsUintN(request) {
  // goja makes 2^bits before it reduces.
  return String(BigInt.asUintN(2 ** 40, -1n));
}

function bigIntSquaring(request) {
  const o = { valueOf: function () { return x; } };
  let x = 3n;
  for (;;) x = o * o;
}

function bigIntParse(request) {
  // Decimal text parses in quadratic time: seconds for 1 Mi digits, minutes for 16 Mi.
  return String(BigInt("7".repeat(1 << 20)));
}

function delegate(n) {
  return (function* g(n) {
    if (n > 0) yield* g(n - 1);
    else for (;;) {}
  })(n);
}

function deepDelegation(request) {
  // yield* nests on the Go stack, outside goja's call-stack limit.
  for (const x of delegate(100000)) {}
}

function spreadSparse(request) {
  // Spreading drives the array iterator in Go, a result object per index.
  const a = [];
  a[1 << 24] = 1;
  return [...a].length;
}

function spreadString(request) {
  return Array.from("x".repeat(4 << 20)).length;
}

function upperBomb(request) {
  // goja case-maps through Go strings: some 40 bytes per character of this.
  return "ß".repeat(4 << 20).toUpperCase().length;
}

function escapeBomb(request) {
  return encodeURIComponent("\u1234".repeat(8 << 20)).length;
}

function rawBomb(request) {
  const s = "x".repeat(1 << 20);
  const subs = [];
  for (let i = 0; i < 1000; i++) subs.push(s);
  return String.raw({ raw: { length: 1001 } }, ...subs).length;
}

function matchBomb(request) {
  // Four million matches: goja finds them all in one call before it builds the result.
  return "x".repeat(4 << 20).match(/x/g).length;
}

function replaceFnBomb(request) {
  // Four million matches found at once before the first call of the replacer.
  return "x".repeat(4 << 20).replace(/x/g, function () { return "y"; }).length;
}

function regexpPatternBomb(request) {
  // Compiling a 16 MiB pattern costs some 30 bytes a character.
  return new RegExp("a".repeat(16 << 20)).test("b");
}

function matchPatternBomb(request) {
  return "b".match("a".repeat(16 << 20));
}
